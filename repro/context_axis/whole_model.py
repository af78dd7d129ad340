"""Context-axis mode for transformers causal LMs (004 §2.2): the same weights, no new
parameters, run causal or with the context axis — Llama, GPT-2 and Gemma families, including
the embedded SmolLM2 (CA-4).

Every non-causal mode runs the model's own modules through one AttentionInterface function
(`repro_context_axis`) whose mask comes from a context variable set for the duration of one
call; the model's attention implementation is restored afterwards. Four ways to the diagonal
logits h_{t,t} (004 Fig 2), all exact:

- `prefix_oracle`: slice t is a bidirectional pass over x[0..t] (see `repro.context_axis.kernels`); S
  forward passes of lengths 1 … S. The reference the others are tested against.
- `masked_logits`: the source's own formulation — B·S rows (one per slice) of the whole
  sequence, each with its slice of Algorithm 1's mask. Optional `segment` applies Fig 4's
  state reuse to every layer's input (forward pre-hooks): the reference for segment mode.
- `full_axis_logits`: slices grouped in buckets, each padded to its longest prefix with the
  keys beyond a slice's prefix masked (the `trimmed` kernel at model level); on CUDA by default
  `packed_axis_logits`, all slices packed into one forward through FlexAttention
  (`gpu_kernels`; `full_axis_kernel` names the path). Trainable.
- `segment_logits(k)`: 004 §2.3 at model level through the KV cache. In slice c only tokens
  c−k+1 … c are recomputed (bidirectionally among themselves, over the cache of all earlier
  tokens); afterwards token c−k+1 is final — its state in slice c = t+k−1 is what every deeper
  slice reuses — and stays in the cache. k = 1 is causal decoding with a KV cache; k ≥ S the
  full axis. S forward passes of ≤ k tokens: states O(S·k).

`ContextAxisLM` wraps a model for training (`repro.core.train.train`) with `train_mode` "causal" or
"full" and §1's stochastic axis drop (a whole batch trained causally with probability p), and
evaluates under any `inference` mode ("causal", "full", "segment:k").
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from repro.context_axis import gpu_kernels
from repro.context_axis.kernels import allowed, segment_reuse, upper_zeroed
from repro.core import lens, scoring, train
from repro.core.models.attention import SDPA
from repro.ground.runtime import ReproError

ATTENTION = "repro_context_axis"
_MASK: contextvars.ContextVar[torch.Tensor | None] = contextvars.ContextVar("repro_context_axis_mask", default=None)


def _attention(module: nn.Module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """AttentionInterface function: SDPA under the mask of the current call (`_MASK`: True =
    may attend, broadcastable to (rows, 1, L_q, L_k); None = every key visible; a
    `gpu_kernels.PackedAttention`: packed slices, each attending within itself). The model's
    own mask (causal, sliding window) is ignored on purpose."""
    mask = _MASK.get()
    if isinstance(mask, gpu_kernels.PackedAttention):  # all slices packed in one row: attention within each
        return mask(query, key, value, scaling).transpose(1, 2).contiguous(), None
    if torch.is_grad_enabled() and query.requires_grad and query.device.type == "cpu":
        # explicit softmax attention: on CPU the fused kernel's backward under a mask was ≈ 10×
        # its forward, half a CA-8 training step (NOTES); the short rows here fit in memory
        if key.shape[1] != query.shape[1]:
            rep = query.shape[1] // key.shape[1]
            key, value = key.repeat_interleave(rep, dim=1), value.repeat_interleave(rep, dim=1)
        scores = (query @ key.transpose(-1, -2)) * (scaling if scaling is not None else query.shape[-1] ** -0.5)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.softmax(scores, dim=-1).to(value.dtype) @ value
    else:
        out = F.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=mask,
            dropout_p=0.0,
            is_causal=False,
            scale=scaling,
            enable_gqa=key.shape[1] != query.shape[1],
        )
    return out.transpose(1, 2).contiguous(), None


@contextlib.contextmanager
def attention_mask(model: nn.Module, mask: torch.Tensor | None) -> Iterator[nn.Module]:
    """Run an HF model's attention layers under `mask` (see `_attention`), restoring its
    attention implementation afterwards."""
    from transformers import AttentionInterface

    if not hasattr(model, "set_attn_implementation"):
        raise ReproError(
            f"context-axis mode needs a transformers model (AttentionInterface); got {type(model).__name__}"
        )
    from repro.core.models.hf import attn_implementation

    AttentionInterface.register(ATTENTION, _attention)
    token = _MASK.set(mask)
    try:
        with attn_implementation(model, ATTENTION):
            yield model
    finally:
        _MASK.reset(token)


def bidirectional(model: nn.Module):
    """Every attention layer unmasked (own weights, restored afterwards)."""
    return attention_mask(model, None)


def lm_head(model: nn.Module, h: torch.Tensor) -> torch.Tensor:
    """Final-normed hidden states → logits, with Gemma's final soft-capping where configured
    (`lens.unembed`, the one unembedding)."""
    return lens.unembed(model, h, normed=True)


def _hidden(model: nn.Module, ids: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    """Final-normed hidden states of the base model (B, L, d)."""
    return model.base_model(input_ids=ids, **kwargs).last_hidden_state


def causal_logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids=ids, use_cache=False).logits


def prefix_oracle(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Diagonal logits of the full context axis: position t's logits are the last position's of
    a bidirectional pass over ids[:, :t+1]. ids (B, S) → (B, S, V)."""
    out = []
    with bidirectional(model):
        for t in range(ids.shape[1]):
            out.append(_hidden(model, ids[:, : t + 1], use_cache=False)[:, -1])
    return lm_head(model, torch.stack(out, dim=1))


def _layers(model: nn.Module) -> nn.ModuleList:
    from repro.core.lens import arch_map

    return model.get_submodule(arch_map(model).layers)


def masked_logits(
    model: nn.Module, ids: torch.Tensor, segment: int | None = None, zero_upper: bool = False, future: int = 0
) -> torch.Tensor:
    """004 §2.1–2.2 as written: the input gets a context axis (B, S) → (B·S, S), slice c runs
    under Algorithm 1's mask (query i sees key j iff j ≤ max(i, c)), the diagonal is read out.
    `segment` = k applies Fig 4's reuse (`segment_reuse`) to every layer's input states;
    `zero_upper` sets Fig 3's strictly upper part (positions t > c of slice c) to zero there.
    `future` > 0 breaks the mask on purpose (`allowed`: slice c also sees keys c+1 … c+future),
    a negative control. Memory S× a causal pass: a reference for small S."""
    B, S = ids.shape
    rows = ids.repeat_interleave(S, dim=0)  # row b·S + c: slice c of sample b
    mask = allowed(S, ids.device, future)[None].expand(B, S, S, S).reshape(B * S, 1, S, S)
    handles = []
    if segment is not None or zero_upper:

        def reuse(module, args, kwargs):
            h = (args[0] if args else kwargs["hidden_states"]).unflatten(0, (B, S))
            if segment is not None:
                h = segment_reuse(h, segment)
            if zero_upper:
                h = upper_zeroed(h)
            h = h.flatten(0, 1)
            return ((h, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": h})

        handles = [layer.register_forward_pre_hook(reuse, with_kwargs=True) for layer in _layers(model)]
    try:
        with attention_mask(model, mask):
            h = _hidden(model, rows, use_cache=False).unflatten(0, (B, S))  # (B, C, S, d)
    finally:
        for hd in handles:
            hd.remove()
    diag = torch.diagonal(h, dim1=1, dim2=2).movedim(-1, 1)  # (B, S, d)
    return lm_head(model, diag)


FULL_AXIS = ("bucketed", *gpu_kernels.PACKED)


def full_axis_kernel(model: nn.Module, ids: torch.Tensor) -> str:
    """The path `full_axis_logits` takes by default ("auto"): on CUDA, where torch.compile builds
    FlexAttention and the model is not in float64 (FlexAttention has none on CUDA), "flex" —
    every slice packed into one forward (`packed_axis_logits`); elsewhere "bucketed", the CPU's
    (and the claims') path."""
    dtype = next(model.parameters()).dtype
    cuda = ids.device.type == "cuda" and dtype != torch.float64 and gpu_kernels.compiler_ready(ids.device)
    return "flex" if cuda else "bucketed"


def full_axis_logits(model: nn.Module, ids: torch.Tensor, bucket: int = 8, kernel: str = "auto") -> torch.Tensor:
    """The full context axis. "bucketed": slices c0 … c0+bucket−1 run together over the prefix
    ids[:, :c0+bucket], each slice's keys beyond its own prefix masked (queries there are
    wasted work, never read). "flex" / "jagged": `packed_axis_logits`, all slices in one
    forward. "auto": `full_axis_kernel`'s choice (bucketed on the CPU). Exact; differentiable
    (CA-8 trains through it)."""
    if kernel == "auto":
        kernel = full_axis_kernel(model, ids)
    if kernel not in FULL_AXIS:
        raise ReproError(f"full-axis logits run one of auto, {', '.join(FULL_AXIS)}; not {kernel!r}")
    if kernel != "bucketed":
        return packed_axis_logits(model, ids, kernel)
    B, S = ids.shape
    out = []
    for c0 in range(0, S, bucket):
        c = torch.arange(c0, min(S, c0 + bucket), device=ids.device)  # (n,)
        L, n = int(c[-1]) + 1, len(c)
        rows = ids[:, None, :L].expand(B, n, L).reshape(B * n, L)
        keys = torch.arange(L, device=ids.device)[None, :] <= c[:, None]  # (n, L)
        mask = keys[None].expand(B, n, L).reshape(B * n, 1, 1, L)
        with attention_mask(model, mask):
            h = _hidden(model, rows, use_cache=False)  # (B·n, L, d)
        out.append(h.unflatten(0, (B, n))[:, torch.arange(n), c])  # (B, n, d): position c of slice c
    return lm_head(model, torch.cat(out, dim=1))


def packed_axis_logits(model: nn.Module, ids: torch.Tensor, how: str = "flex") -> torch.Tensor:
    """The full context axis in one forward: sample b's S slices packed as one row of S(S+1)/2
    tokens (slice c = ids[b, :c+1], its positions 0 … c: `gpu_kernels.packed_slices`), every
    attention layer within each slice, bidirectionally (`gpu_kernels.PackedAttention`, `how`
    "flex" or "jagged"), the diagonal read at each slice's last token. Exact; differentiable;
    no work past a slice's prefix outside attention's edge tiles."""
    S = ids.shape[1]
    lay = gpu_kernels.packed_slices(S, str(ids.device))
    rows = ids[:, lay.pos]  # (B, N): slice c's tokens x[0..c]
    with attention_mask(model, gpu_kernels.PackedAttention(S, how)):
        h = _hidden(model, rows, position_ids=lay.pos[None].expand_as(rows), use_cache=False)
    return lm_head(model, h[:, lay.last])


def segment_logits(model: nn.Module, ids: torch.Tensor, k: int) -> torch.Tensor:
    """Segment-level context axis with segment size k through the KV cache (module docstring):
    exact with respect to `masked_logits(model, ids, segment=k)`."""
    from transformers import DynamicCache

    if int(k) < 1:
        raise ReproError(f"segment size must be ≥ 1, got {k}")
    B, S = ids.shape
    cache = DynamicCache()
    out = []
    with bidirectional(model):
        for c in range(S):
            lo = max(0, c - k + 1)
            pos = torch.arange(lo, c + 1, device=ids.device)[None].expand(B, -1)
            h = _hidden(model, ids[:, lo : c + 1], position_ids=pos, past_key_values=cache, use_cache=True)
            out.append(h[:, -1])
            drop = (c + 1) - max(0, c - k + 2)  # keep the final tokens 0 … c−k+1
            if drop:
                cache.crop(-drop)
    return lm_head(model, torch.stack(out, dim=1))


MODES = ("causal", "full", "segment:k", "masked")


def parse_mode(mode: str) -> tuple[str, int | None]:
    """ "causal" | "full" | "masked" | "segment:k" (k ≥ 1) → (name, k)."""
    if mode in ("causal", "full", "masked"):
        return mode, None
    if isinstance(mode, str) and mode.startswith("segment:"):
        try:
            k = int(mode.split(":", 1)[1])
        except ValueError:
            k = 0
        if k >= 1:
            return "segment", k
    raise ReproError(f"unknown context-axis mode {mode!r}: one of {', '.join(MODES)} (segment:4, …)")


def logits(model: nn.Module, ids: torch.Tensor, mode: str = "full") -> torch.Tensor:
    """Diagonal logits (B, S, V) of `model` on ids (B, S) under `mode` (`parse_mode`)."""
    name, k = parse_mode(mode)
    if name == "causal":
        return causal_logits(model, ids)
    if name == "full":
        return full_axis_logits(model, ids)
    if name == "masked":
        return masked_logits(model, ids)
    return segment_logits(model, ids, k)


# --------------------------------------------------------------------------- training wrapper


@dataclasses.dataclass(frozen=True)
class ContextAxisConfig:
    """What a `ContextAxisLM` trains as (part of the checkpoint key; `inference` is not)."""

    train_mode: str = "full"  # "causal" (the baseline) or "full"
    axis_drop: float = 0.0  # §1: probability that a training batch runs causal instead
    drop_seed: int = 0  # the axis-drop draws: their own generator, replayable (`drop_draws`)
    bucket: int = 8
    base: dict = dataclasses.field(default_factory=dict)  # the wrapped model's config

    def __post_init__(self) -> None:
        if self.train_mode not in ("causal", "full"):
            raise ReproError(f"ContextAxisConfig.train_mode must be 'causal' or 'full' (got {self.train_mode!r})")
        if not 0.0 <= self.axis_drop <= 1.0:
            raise ReproError(f"ContextAxisConfig.axis_drop must be in [0, 1] (got {self.axis_drop})")


class ContextAxisLM(nn.Module):
    """An HF causal LM trained causal or with the context axis, evaluated under `inference`.

    forward(input_ids) → .logits (B, S, V): in training, `config.train_mode`, each call
    (one batch) drawing whether the axis is dropped from the wrapper's own generator (seeded
    by `drop_seed`: `drop_draws(n)` replays the first n, e.g. for a model loaded from the
    cache); in eval, `self.inference`. "full" runs `full_axis_logits`' default path (on CUDA all
    slices packed in one forward, `full_axis_kernel`). The wrapped model's state dict is the
    wrapper's under the prefix `model.`."""

    def __init__(
        self,
        model: nn.Module,
        train_mode: str = "full",
        axis_drop: float = 0.0,
        bucket: int = 8,
        inference: str = "causal",
        drop_seed: int = 0,
    ) -> None:
        super().__init__()
        if not hasattr(model, "set_attn_implementation"):
            raise ReproError(
                "ContextAxisLM wraps a transformers causal LM (it runs through the AttentionInterface); "
                f"got {type(model).__name__}"
            )
        self.model = model
        self.config = ContextAxisConfig(
            train_mode, float(axis_drop), int(drop_seed), int(bucket), model.config.to_dict()
        )
        parse_mode(inference)
        self.inference = inference
        self._drops = self._generator()
        self.dropped = 0  # training batches run causally by axis drop (in this process)

    def _generator(self) -> torch.Generator:
        from repro.ground.runtime import derive_seed

        return torch.Generator().manual_seed(derive_seed("axis-drop", self.config.drop_seed))

    def _draw(self, g: torch.Generator) -> bool:
        return (
            self.config.train_mode == "full"
            and self.config.axis_drop > 0
            and float(torch.rand((), generator=g)) < self.config.axis_drop
        )

    def drop_draws(self, n: int) -> list[bool]:
        """The first n training batches' axis-drop decisions (True: trained causally)."""
        g = self._generator()
        return [self._draw(g) for _ in range(n)]

    def forward(self, input_ids: torch.Tensor, **_: Any) -> SimpleNamespace:
        if self.training:
            mode = self.config.train_mode
            if self._draw(self._drops):
                mode = "causal"
                self.dropped += 1
        else:
            mode = self.inference
        if mode == "full":
            return SimpleNamespace(logits=full_axis_logits(self.model, input_ids, self.config.bucket))
        return SimpleNamespace(logits=logits(self.model, input_ids, mode))


# --------------------------------------------------------------------------- CA-8


def build_lm(
    model: dict, seq_len: int, seed: int, *, train_mode: str, axis_drop: float = 0.0, bucket: int = 8
) -> ContextAxisLM:
    """A llama-style LM (`repro.core.models.hf.build_model`, `model` = n_layer / n_head / d_model /
    vocab_size) in a ContextAxisLM. The weights depend only on `model` and `seed`: every
    variant of one seed starts from the same initial weights."""
    from repro.core.models.hf import build_model

    m = build_model("llama", seed=seed, n_positions=seq_len, attn_implementation=SDPA, **model)
    return ContextAxisLM(m, train_mode=train_mode, axis_drop=axis_drop, bucket=bucket, drop_seed=seed)


def build_for_job(
    seed: int, *, model: dict, seq_len: int, train_mode: str, axis_drop: float = 0.0, bucket: int = 8
) -> ContextAxisLM:
    """`build_lm` from JSON-able arguments: the model factory of a training job in another
    process (repro.core.launch), on the CPU."""
    return build_lm(model, seq_len, seed, train_mode=train_mode, axis_drop=axis_drop, bucket=bucket)


def lm_job(
    model: dict,
    cfg,
    seed: int,
    *,
    train_mode: str,
    axis_drop: float = 0.0,
    bucket: int = 8,
    corpus: str,
    data_identity: dict | None = None,
) -> dict:
    """`train_lm`'s run as a JSON-able job (repro.core.launch; `corpus`: where its train and
    val tokens come from): the same checkpoint key, so `train_lm` then loads what the job wrote."""
    from repro.core import launch

    return launch.job(
        "repro.context_axis.whole_model:build_for_job",
        {
            "model": dict(model),
            "seq_len": cfg.seq_len,
            "train_mode": train_mode,
            "axis_drop": axis_drop,
            "bucket": bucket,
        },
        cfg.replace(model_seed=seed),
        corpus=corpus,
        data_identity=data_identity,
    )


def train_lm(
    model: dict,
    cfg,
    seed: int,
    *,
    train_mode: str,
    axis_drop: float = 0.0,
    bucket: int = 8,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    data_identity: dict | None = None,
    device: torch.device | str = "cpu",
):
    """Train (or load from the checkpoint cache) one CA-8 variant on `device`; `cfg` a
    TrainConfig whose data_seed fixes the data order shared by all variants."""

    return train.train(
        lambda s: build_lm(model, cfg.seq_len, s, train_mode=train_mode, axis_drop=axis_drop, bucket=bucket).to(device),
        cfg.replace(model_seed=seed),
        train_tokens=train_tokens,
        val_tokens=val_tokens,
        data_identity=data_identity,
        progress=False,
    )


@torch.no_grad()
def window_nll(lm: ContextAxisLM, windows: torch.Tensor, mode: str, batch: int = 64) -> torch.Tensor:
    """Mean next-token NLL (nats) of each window (n, T+1) under inference `mode`, float32: (n,)."""
    lm.eval()
    before = lm.inference
    lm.inference = mode
    try:
        return scoring.window_nll(lambda x: lm(x).logits, windows, batch, windows.device).mean(1)
    finally:
        lm.inference = before
