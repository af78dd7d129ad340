"""Where things live inside a decoder, forward hooks that read them, and the logit lens.

Shared by the causal-shift, residual-stream and spectral-filter claims. Everything is read
with plain forward hooks (no model surgery): registered for one forward pass and always
removed in a `finally`, so a capture leaves the model exactly as it found it.

Residual stream convention (used everywhere in the suite): for a model with L blocks,
`residual[:, l]` is the input of block l (l = 0 is the embedding output, after Gemma's √d
scaling, which happens inside Gemma's embedding module) and `residual[:, L]` is the output of
the last block, i.e. the final state *before* the final norm. transformers 5.x's
`output_hidden_states` agrees on the first L entries, but its last entry is *after* the final
norm — so the logit lens here is built from hooked pre-norm states, and applies the final
norm exactly once (nostalgebraist 2020, "interpreting GPT: the logit lens").

Additive decomposition: `attn_out` and `mlp_out` are what each block adds to the stream
(for Gemma 2/3 that is the output of the post-attention / post-feed-forward norm), so for
sequential blocks residual[l+1] = residual[l] + attn_out[l] + mlp_out[l], and the same holds
for GPT-NeoX's parallel residual.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from repro.core import memo
from repro.ground.runtime import NotApplicable, ReproError

# --------------------------------------------------------------------------- architecture map


@dataclass(frozen=True)
class ArchMap:
    """Dotted paths: `embed`, `layers`, `final_norm`, `lm_head` from the model root; the rest
    from one block. `attn` returns (output, weights) in transformers 5.x (weights only
    under eager attention). `attn_resid` / `mlp_resid` are the modules whose outputs are
    added to the residual stream; `attn_out_proj`'s *input* is the concatenation of the heads'
    outputs (per-head analyses)."""

    family: str
    embed: str
    layers: str
    final_norm: str | None
    lm_head: str
    attn: str | None  # None: the blocks have no such sub-module (tiny ablations)
    attn_out_proj: str | None
    mlp: str | None
    attn_norm: str | None
    mlp_norm: str | None
    attn_resid: str | None
    mlp_resid: str | None
    parallel_residual: bool = False
    embed_scaled_inside: bool = False  # Gemma: the embedding module multiplies by √d itself
    softcap_attr: str | None = None  # config attribute holding the final logit soft-cap

    def blocks(self, model: nn.Module) -> list[nn.Module]:
        return list(resolve(model, self.layers))


def resolve(root: nn.Module, path: str | None) -> Any:
    """Follow a dotted path (`model.layers`, `attn.c_proj`); None or '' is the root itself."""
    obj: Any = root
    for part in (path or "").split("."):
        if not part:
            continue
        if not hasattr(obj, part):
            raise ReproError(f"{type(root).__name__} has no sub-module {path!r} (missing {part!r})")
        obj = getattr(obj, part)
    return obj


def _llama(prefix: str = "model", family: str = "llama") -> ArchMap:
    return ArchMap(
        family,
        f"{prefix}.embed_tokens",
        f"{prefix}.layers",
        f"{prefix}.norm",
        "lm_head",
        attn="self_attn",
        attn_out_proj="self_attn.o_proj",
        mlp="mlp",
        attn_norm="input_layernorm",
        mlp_norm="post_attention_layernorm",
        attn_resid="self_attn",
        mlp_resid="mlp",
    )


def _gemma(prefix: str = "model", family: str = "gemma3") -> ArchMap:
    """Gemma 2/3: sandwich norms — the post-attention / post-feed-forward norms' outputs are
    what is added to the stream; embeddings are scaled by √d inside the embedding module."""
    return ArchMap(
        family,
        f"{prefix}.embed_tokens",
        f"{prefix}.layers",
        f"{prefix}.norm",
        "lm_head",
        attn="self_attn",
        attn_out_proj="self_attn.o_proj",
        mlp="mlp",
        attn_norm="input_layernorm",
        mlp_norm="pre_feedforward_layernorm",
        attn_resid="post_attention_layernorm",
        mlp_resid="post_feedforward_layernorm",
        embed_scaled_inside=True,
        softcap_attr="final_logit_softcapping",
    )


_GPT2 = ArchMap(
    "gpt2",
    "transformer.wte",
    "transformer.h",
    "transformer.ln_f",
    "lm_head",
    attn="attn",
    attn_out_proj="attn.c_proj",
    mlp="mlp",
    attn_norm="ln_1",
    mlp_norm="ln_2",
    attn_resid="attn",
    mlp_resid="mlp",
)

_BY_MODEL_TYPE: dict[str, ArchMap] = {
    "gpt2": _GPT2,
    **{t: _llama(family=t) for t in ("llama", "mistral", "qwen2", "qwen3", "smollm3", "olmo", "olmo2")},
    # Gemma 1: plain pre-norm blocks (no sandwich norms); like Gemma 2/3 it scales embeddings
    # by √d inside its embedding module (transformers 5.x), and its final logits are not capped.
    "gemma": ArchMap(
        "gemma",
        "model.embed_tokens",
        "model.layers",
        "model.norm",
        "lm_head",
        attn="self_attn",
        attn_out_proj="self_attn.o_proj",
        mlp="mlp",
        attn_norm="input_layernorm",
        mlp_norm="post_attention_layernorm",
        attn_resid="self_attn",
        mlp_resid="mlp",
        embed_scaled_inside=True,
    ),
    "gemma2": _gemma(family="gemma2"),
    "gemma3_text": _gemma(family="gemma3"),
    "gemma3": _gemma(prefix="model.language_model", family="gemma3"),
}


def _gpt_neox(model: nn.Module) -> ArchMap:
    parallel = bool(getattr(model.config, "use_parallel_residual", True))
    head = "embed_out" if hasattr(model, "embed_out") else "lm_head"  # renamed in transformers 5
    return ArchMap(
        "gpt_neox",
        "gpt_neox.embed_in",
        "gpt_neox.layers",
        "gpt_neox.final_layer_norm",
        head,
        attn="attention",
        attn_out_proj="attention.dense",
        mlp="mlp",
        attn_norm="input_layernorm",
        mlp_norm="post_attention_layernorm",
        attn_resid="attention",
        mlp_resid="mlp",
        parallel_residual=parallel,
    )


def _tiny(model: nn.Module) -> ArchMap:
    """repro.core.models.tiny.TinyDecoder: `wte`, `blocks[i]` with `ln_1`/`attn`/`ln_2`/`mlp`,
    `ln_f` (nn.Identity without a final norm), `lm_head`. Attention-only and MLP-only stacks
    lack one of the sub-layers, and Attn0 (value_identity) has no W_O: those entries are None."""
    block = model.blocks[0]
    has_attn, has_mlp = hasattr(block, "attn"), hasattr(block, "mlp")
    has_wo = has_attn and hasattr(block.attn, "o_proj")
    return ArchMap(
        "tiny",
        embed="wte",
        layers="blocks",
        final_norm="ln_f",
        lm_head="lm_head",
        attn="attn" if has_attn else None,
        attn_out_proj="attn.o_proj" if has_wo else None,
        mlp="mlp" if has_mlp else None,
        attn_norm="ln_1" if has_attn else None,
        mlp_norm="ln_2" if has_mlp else None,
        attn_resid="attn" if has_attn else None,
        mlp_resid="mlp" if has_mlp else None,
    )


def arch_map(model: nn.Module) -> ArchMap:
    """The ArchMap of a model: by class for the tiny decoder, by `config.model_type` for HF
    models. Unknown architectures raise ReproError naming what is supported."""
    from repro.core.models.tiny import TinyDecoder  # lazy: keeps `import repro.core.lens` light

    if isinstance(model, TinyDecoder):
        return _tiny(model)
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type == "gpt_neox":
        return _gpt_neox(model)
    if model_type in _BY_MODEL_TYPE:
        return _BY_MODEL_TYPE[model_type]
    supported = ", ".join(sorted([*_BY_MODEL_TYPE, "gpt_neox", "TinyDecoder"]))
    raise ReproError(
        f"no layer map for {type(model).__name__} (model_type={model_type!r}); supported: "
        f"{supported}. Add an ArchMap for it in repro/core/lens.py."
    )


# --------------------------------------------------------------------------- unembedding


def _config(model: nn.Module) -> Any:
    cfg = getattr(model, "config", None)
    if cfg is not None and hasattr(cfg, "get_text_config"):
        return cfg.get_text_config()
    return cfg


def final_norm(model: nn.Module, amap: ArchMap | None = None) -> nn.Module:
    """The model's final norm module (nn.Identity when the model has none)."""
    amap = amap or arch_map(model)
    if amap.final_norm is None:
        return nn.Identity()
    mod = resolve(model, amap.final_norm)
    return mod if mod is not None else nn.Identity()


def unembedding(model: nn.Module, amap: ArchMap | None = None) -> torch.Tensor:
    """W_U as a (V, d) matrix (the LM head's weight; the embedding itself when tied)."""
    amap = amap or arch_map(model)
    head = resolve(model, amap.lm_head)
    return head.weight


def unembed(
    model: nn.Module,
    h: torch.Tensor,
    *,
    normed: bool = False,
    amap: ArchMap | None = None,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Logits of residual states h (..., d): final norm (unless `normed`), LM head, then the
    model's final logit soft-cap if its config has one (Gemma 2: cap·tanh(z/cap)).

    `compute_dtype` (e.g. torch.float32 for a bfloat16 model): run the LM head's matmul in that
    dtype, on a cast copy of its weight, instead of through the module."""
    amap = amap or arch_map(model)
    if not normed:
        h = final_norm(model, amap)(h)
    head = resolve(model, amap.lm_head)
    if compute_dtype is None:
        logits = head(h)
    else:
        bias = getattr(head, "bias", None)
        logits = torch.nn.functional.linear(
            h.to(compute_dtype), head.weight.to(compute_dtype), None if bias is None else bias.to(compute_dtype)
        )
    cap = getattr(_config(model), amap.softcap_attr, None) if amap.softcap_attr else None
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def logit_lens(
    model: nn.Module,
    hidden_states: torch.Tensor | Sequence[torch.Tensor],
    *,
    last_is_normed: bool = False,
    layer_dim: int = 1,
) -> torch.Tensor | list[torch.Tensor]:
    """Logits read off every layer's residual state with the model's own final norm and head.

    `hidden_states` is either a tensor whose `layer_dim` indexes layers (a Capture's
    `residual`, shape (B, L+1, T, d) → (B, L+1, T, V)) or a sequence of (…, d) tensors (→ a
    list). The states must be pre-norm; if you pass transformers' `output_hidden_states`
    tuple, whose last entry is already normalised, set `last_is_normed=True` so it is not
    normalised twice. Run it under torch.no_grad() unless you need gradients (V is large).
    """
    amap = arch_map(model)
    if isinstance(hidden_states, torch.Tensor):
        if not last_is_normed:
            return unembed(model, hidden_states, amap=amap)
        n = hidden_states.shape[layer_dim]
        head = unembed(model, hidden_states.narrow(layer_dim, 0, n - 1), amap=amap)
        last = unembed(model, hidden_states.narrow(layer_dim, n - 1, 1), normed=True, amap=amap)
        return torch.cat([head, last], dim=layer_dim)
    states = list(hidden_states)
    return [unembed(model, h, normed=last_is_normed and i == len(states) - 1, amap=amap) for i, h in enumerate(states)]


# --------------------------------------------------------------------------- norms frozen, projections as matrices


@dataclass
class FrozenNorm:
    """A norm with its per-token scale frozen: norm(x) = gain ⊙ C(x)·scale + bias, linear in x.

    gain, bias: (d,) or None (1 and 0); centre: LayerNorm's mean subtraction C (RMSNorm: none).
    """

    kind: str  # "layernorm" | "rmsnorm" | "identity"
    gain: torch.Tensor | None
    bias: torch.Tensor | None
    eps: float
    centre: bool

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        """(…, 1) per-token scale the norm applies to C(x): 1/√(var + eps) or 1/√(mean x² + eps)."""
        if self.kind == "identity":
            return torch.ones_like(x[..., :1])
        xc = x - x.mean(-1, keepdim=True) if self.centre else x
        return torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + self.eps)

    def linear(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """gain ⊙ C(x)·scale, without the bias: the map each term goes through."""
        if self.centre:
            x = x - x.mean(-1, keepdim=True)
        x = x * scale
        return x * self.gain if self.gain is not None else x

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x, self.scale(x))
        return y + self.bias if self.bias is not None else y


def frozen_norm(module: nn.Module) -> FrozenNorm:
    """The FrozenNorm of nn.LayerNorm, nn.RMSNorm, Llama-style RMSNorm (gain·x/rms), Gemma's
    RMSNorm ((1 + w)·x/rms) or nn.Identity. Tests check each against the module itself."""
    name = type(module).__name__
    f32 = lambda t: None if t is None else t.detach().float()  # noqa: E731
    if isinstance(module, nn.Identity):
        return FrozenNorm("identity", None, None, 0.0, centre=False)
    if isinstance(module, nn.LayerNorm) or name in ("LayerNorm",):
        return FrozenNorm("layernorm", f32(module.weight), f32(module.bias), float(module.eps), centre=True)
    if isinstance(module, nn.RMSNorm):
        eps = module.eps if module.eps is not None else torch.finfo(torch.float32).eps
        return FrozenNorm("rmsnorm", f32(module.weight), None, float(eps), centre=False)
    if "RMSNorm" in name and hasattr(module, "weight"):
        eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
        if eps is None:
            raise ReproError(f"{name} has no eps attribute; add it to repro.core.lens.frozen_norm")
        gain = f32(module.weight)
        if name.startswith("Gemma"):  # Gemma's RMSNorm scales by (1 + weight); weight is 0 at init
            gain = 1.0 + gain
        return FrozenNorm("rmsnorm", gain, None, float(eps), centre=False)
    raise ReproError(
        f"cannot freeze a {name}: supported are LayerNorm, RMSNorm (torch, Llama, Gemma) "
        "and Identity; add it to repro.core.lens.frozen_norm"
    )


def out_proj_weight(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(W (d_out, d_in), bias or None) of a Linear or GPT-2 Conv1D (which stores W transposed)."""
    w = module.weight.detach()
    if type(module).__name__ == "Conv1D":  # y = x @ W + b, W: (d_in, d_out)
        w = w.t()
    b = getattr(module, "bias", None)
    return w, None if b is None else b.detach()


# --------------------------------------------------------------------------- hooks


# module name → (path inside a block, "in" | "out"): what a capture records per layer.
MODULE_ALIASES: dict[str, tuple[str, str]] = {
    "attn_out": ("attn_resid", "out"),  # attention's contribution to the residual stream
    "mlp_out": ("mlp_resid", "out"),  # MLP's contribution to the residual stream
    "attn_in": ("attn_norm", "out"),  # normalised input of attention
    "mlp_in": ("mlp_norm", "out"),  # normalised input of the MLP
    "attn_heads": ("attn_out_proj", "in"),  # concatenated per-head outputs, before W_O
}


@dataclass
class Capture:
    """What one `hooks`/`capture` session recorded. Per-layer tensors are detached copies;
    several forward passes inside one session are concatenated along the batch dimension.

    residual: (B, L+1, T, d) — block inputs, then the last block's (pre-norm) output.
    modules: name → list of L per-layer tensors (e.g. "attn_out" (B, T, d)).
    attentions: L tensors (B, H, T, T) of attention probabilities (eager attention only).
    final_normed: (B, T, d) — the final norm's output (with `final_norm=True`).
    output: the model's return value from the last forward pass.
    With `positions`, T is the number of positions kept.
    """

    residual: torch.Tensor | None = None
    modules: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    attentions: list[torch.Tensor] | None = None
    final_normed: torch.Tensor | None = None
    output: Any = None

    @property
    def logits(self) -> torch.Tensor | None:
        return getattr(self.output, "logits", None)


def _first_tensor(x: Any) -> torch.Tensor | None:
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)) and x and isinstance(x[0], torch.Tensor):
        return x[0]
    return None


class _Recorder:
    def __init__(self, n_layers: int, device: torch.device | str | None, positions: torch.Tensor | None = None):
        self.n = n_layers
        self.device = device
        self.positions = positions
        self.store: dict[str, list[list[torch.Tensor]]] = {}

    def put(self, key: str, layer: int, t: torch.Tensor | None) -> None:
        if t is None:
            return
        t = t.detach()
        if self.positions is not None:  # a new tensor of the kept positions only
            t = t.index_select(1, self.positions.to(t.device))
            t = t.to(self.device) if self.device is not None else t
        else:
            t = t.to(self.device, copy=True) if self.device is not None else t.clone()
        self.store.setdefault(key, [[] for _ in range(self.n)])[layer].append(t)

    def per_layer(self, key: str, expect: int) -> list[torch.Tensor] | None:
        runs = self.store.get(key)
        if runs is None:
            return None
        out = []
        for layer, chunks in enumerate(runs[:expect]):
            if not chunks:
                raise ReproError(f"capture of {key!r} saw nothing at layer {layer}")
            try:
                out.append(chunks[0] if len(chunks) == 1 else torch.cat(chunks, dim=0))
            except RuntimeError as e:
                raise ReproError(
                    f"forward passes in one capture of {key!r} have different shapes "
                    f"({[tuple(c.shape) for c in chunks]}); capture them separately"
                ) from e
        return out


@contextlib.contextmanager
def hooks(
    model: nn.Module,
    *,
    residual: bool = True,
    modules: Sequence[str] | None = None,
    attentions: bool = False,
    final_norm: bool = False,
    positions: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> Iterator[Capture]:
    """Register forward hooks, yield a Capture that is filled when the `with` block exits.

    `modules`: aliases from MODULE_ALIASES or any dotted path inside a block (its output is
    recorded); None means ("attn_out", "mlp_out"), those the blocks have. `attentions`: the
    attention modules' probabilities — needs eager attention (HF) or, for the tiny decoder,
    a forward pass with output_attentions=True (`capture` passes it). `final_norm`: the final
    norm's output too (the last block's output where the model has no final norm).
    `positions`: (P,) sequence positions — every recorded state keeps only these (dim 1), so a
    long batch costs P, not T, per state (e.g. the preference probe's last tokens).
    `device`: where captured copies go (e.g. "cpu" while the model runs on a GPU).
    The hooks are removed in a `finally`, also when the forward pass raises.
    """
    if positions is not None and attentions:
        raise ReproError("hooks: `positions` keeps sequence positions of states, not of attention maps")
    amap = arch_map(model)
    if modules is None:
        modules = [m for m, attr in (("attn_out", amap.attn_resid), ("mlp_out", amap.mlp_resid)) if attr]
    modules = list(dict.fromkeys(modules))  # a name asked for twice is hooked once
    if attentions and amap.attn is None:
        raise ReproError(f"{amap.family} blocks have no attention: no attention maps to capture")
    blocks = amap.blocks(model)
    n_layers = len(blocks)
    rec = _Recorder(n_layers + 1, device, positions)
    cap = Capture()
    handles: list[torch.utils.hooks.RemovableHandle] = []

    def resid_in(layer: int):
        def hook(_mod, args, kwargs):
            h = args[0] if args else kwargs.get("hidden_states")
            rec.put("residual", layer, _first_tensor(h))

        return hook

    def last_out(_mod, _args, output):
        rec.put("residual", n_layers, _first_tensor(output))

    def out_hook(key: str, layer: int):
        return lambda _m, _a, output: rec.put(key, layer, _first_tensor(output))

    def in_hook(key: str, layer: int):
        def hook(_mod, args, kwargs):
            rec.put(key, layer, _first_tensor(args[0] if args else kwargs.get("hidden_states")))

        return hook

    def attn_hook(layer: int):
        def hook(_mod, _args, output):
            w = output[1] if isinstance(output, (tuple, list)) and len(output) > 1 else None
            if not isinstance(w, torch.Tensor):
                raise ReproError(
                    f"{type(model).__name__} returned no attention weights at layer {layer}: "
                    "attention maps need eager attention — build the model with "
                    "attn_implementation='eager' (or call model.set_attn_implementation('eager')), "
                    "and run the forward pass with output_attentions=True"
                )
            rec.put("attentions", layer, w)

        return hook

    try:
        for i, block in enumerate(blocks):
            if residual:
                handles.append(block.register_forward_pre_hook(resid_in(i), with_kwargs=True))
            for name in modules:
                attr, where = MODULE_ALIASES.get(name, (None, "out"))
                path = getattr(amap, attr) if attr else name
                if path is None:
                    raise ReproError(f"{amap.family} blocks have no {name!r} module")
                mod = resolve(block, path)
                if where == "in":
                    handles.append(mod.register_forward_pre_hook(in_hook(name, i), with_kwargs=True))
                else:
                    handles.append(mod.register_forward_hook(out_hook(name, i)))
            if attentions:
                handles.append(resolve(block, amap.attn).register_forward_hook(attn_hook(i)))
        if residual:
            handles.append(blocks[-1].register_forward_hook(last_out))
        if final_norm:
            norm = resolve(model, amap.final_norm) if amap.final_norm is not None else None
            handles.append(
                (norm if norm is not None else blocks[-1]).register_forward_hook(
                    lambda _m, _a, output: rec.put("final", 0, _first_tensor(output))
                )
            )
        yield cap
    finally:
        for h in handles:
            h.remove()

    if residual and "residual" in rec.store:
        cap.residual = torch.stack(rec.per_layer("residual", n_layers + 1), dim=1)
    for name in modules:
        got = rec.per_layer(name, n_layers)
        if got is not None:
            cap.modules[name] = got
    if attentions:
        cap.attentions = rec.per_layer("attentions", n_layers)
    if final_norm:
        cap.final_normed = rec.per_layer("final", 1)[0] if "final" in rec.store else None


def capture(
    model: nn.Module,
    input_ids: torch.Tensor,
    *,
    residual: bool = True,
    modules: Sequence[str] | None = None,
    attentions: bool = False,
    device: torch.device | str | None = None,
    **forward_kwargs: Any,
) -> Capture:
    """One forward pass under torch.no_grad() with hooks; returns residual states, module
    outputs, attention maps and the model output. Extra keyword arguments go to the model
    (e.g. attention_mask, or logits_to_keep=1 to skip full-vocabulary logits)."""
    if input_ids.dim() == 1:
        input_ids = input_ids.unsqueeze(0)
    if attentions:
        forward_kwargs.setdefault("output_attentions", True)
    with hooks(model, residual=residual, modules=modules, attentions=attentions, device=device) as cap:
        with torch.no_grad():
            cap.output = model(input_ids=input_ids, **forward_kwargs)
    return cap


# --------------------------------------------------------------------------- lens read-outs


def target_ranks(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Rank of each target token under `logits` (…, V): 1 = the top prediction; ties count
    against the target (rank = 1 + #tokens with a strictly larger logit)."""
    picked = logits.gather(-1, targets.unsqueeze(-1))
    return (logits > picked).sum(-1) + 1


@torch.no_grad()
def logit_lens_ranks(model: nn.Module, residual: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """002 "Logit Lens": rank of the correct next token read off every layer.

    residual (B, L+1, T, d): pre-norm states (a Capture's `residual`); targets (B, T) the next
    tokens. Returns (L+1, B, T) ranks, one layer at a time (the vocabulary can be large)."""
    return torch.stack(
        [target_ranks(unembed(model, residual[:, l]).float(), targets) for l in range(residual.shape[1])]
    )


class _KLToLogits(torch.autograd.Function):
    """KL(p ‖ softmax(z)) per row = Σ p log p − p·z + logsumexp(z), with the gradient
    softmax(z) − p written in place: two passes over the (…, V) logits forward and one backward,
    where log_softmax → difference → product → sum and its autograd made about eight (the tuned
    lens's step is dominated by such passes over (L, tokens, V) tensors: 1.75 s → 0.75 s for 30 ×
    128 × 49,152 on 2 cores, equal to float rounding)."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, log_p: torch.Tensor) -> torch.Tensor:
        p = log_p.exp()
        lse = torch.logsumexp(z, -1)
        kl = (p * log_p).sum(-1) - torch.einsum("...nv,nv->...n", z, p) + lse
        ctx.save_for_backward(z, p, lse)
        return kl

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        z, p, lse = ctx.saved_tensors
        return (z - lse.unsqueeze(-1)).exp_().sub_(p).mul_(g.unsqueeze(-1)), None


def kl_to_logits(log_p: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """KL(p ‖ softmax(z)) in nats per row: `log_p` (n, V) log-probabilities of the reference,
    `z` (…, n, V) float32 logits (any leading dims, e.g. layers); returns (…, n)."""
    return _KLToLogits.apply(z, log_p)


class TunedLens(nn.Module):
    """Belrose et al. (2023), "Eliciting Latent Predictions from Transformers with the Tuned
    Lens", as 002 "Common Confusions" describes it: one affine translator per layer,
    h ↦ A_l h + b_l, initialised to the identity (A = I, b = 0: the logit lens), then decoded
    with the model's own final norm and unembedding (frozen). Layers 0 … L−1 get a translator;
    layer L is the model's output itself."""

    def __init__(self, n_layers: int, d_model: int):
        super().__init__()
        self.weight = nn.Parameter(torch.eye(d_model).repeat(n_layers, 1, 1))  # (L, d, d)
        self.bias = nn.Parameter(torch.zeros(n_layers, d_model))  # (L, d)

    def forward(self, h: torch.Tensor, layer: int | None = None) -> torch.Tensor:
        """Translate states: h (N, d) of one `layer`, or h (L, N, d) of every layer (layer=None)."""
        if layer is not None:
            return h @ self.weight[layer].T + self.bias[layer]
        return torch.baddbmm(self.bias.unsqueeze(1), h, self.weight.transpose(1, 2))  # (L, N, d)


@contextlib.contextmanager
def _frozen(model: nn.Module) -> Iterator[None]:
    """Freeze the model's parameters for the duration (restores requires_grad afterwards)."""
    saved = [(p, p.requires_grad) for p in model.parameters()]
    for p, _ in saved:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in saved:
            p.requires_grad_(flag)


@memo.cached("tuned-lens", ignore=("progress",))
def fit_tuned_lens(
    model: nn.Module,
    residual: torch.Tensor,
    *,
    steps: int = 100,
    batch_tokens: int = 128,
    lr: float = 1e-3,
    seed: int = 0,
    autocast: str | None = "auto",
    progress: bool = False,
) -> tuple[TunedLens, list[float]]:
    """Train a TunedLens on KL(final ‖ lens) over the tokens of `residual` (N, L+1, d), all
    layers at once: each step draws `batch_tokens` tokens (seeded) and sums the per-layer mean
    KLs. Adam; the vocabulary matmuls run under `autocast` — "auto": the dtype policy
    (runtime.resolve_dtype; bfloat16 with native bf16, ~2.5× faster on such a CPU), None:
    float32; the KL itself is computed in float32. Returns the lens and the per-step loss."""
    from repro.ground.runtime import autocast as policy_autocast
    from repro.ground.runtime import generator

    if residual.dim() != 3:
        raise ReproError(f"fit_tuned_lens wants residual states (N tokens, L+1, d), got {tuple(residual.shape)}")
    N, L1, d = residual.shape
    L = L1 - 1
    lens = TunedLens(L, d).to(residual.device)
    opt = torch.optim.Adam(lens.parameters(), lr=lr)
    g = generator(seed)
    amp = policy_autocast(autocast, residual.device)
    losses: list[float] = []
    it = range(steps)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="tuned lens", leave=False)
    with _frozen(model):
        for _ in it:
            idx = torch.randint(0, N, (batch_tokens,), generator=g)
            h = residual[idx].float()  # (n, L+1, d)
            with torch.no_grad(), amp:
                log_p = unembed(model, h[:, L]).float().log_softmax(-1)  # (n, V)
            x = h[:, :L].transpose(0, 1)  # (L, n, d)
            with amp:
                logits = unembed(model, lens(x))  # (L, n, V)
            loss = kl_to_logits(log_p, logits.float()).mean(-1).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()) / L)
    return lens.eval(), losses


@torch.no_grad()
def lens_kl(model: nn.Module, residual: torch.Tensor, lens: TunedLens | None = None, chunk: int = 256) -> torch.Tensor:
    """KL(final ‖ lens_l) per layer l = 0 … L−1 and token, (L, N) float32 nats, for the tokens of
    `residual` (N, L+1, d): the logit lens when `lens` is None, else the tuned lens."""
    N, L1, _ = residual.shape
    L = L1 - 1
    out = torch.empty(L, N)
    for start in range(0, N, chunk):
        h = residual[start : start + chunk].float()
        log_p = unembed(model, h[:, L]).float().log_softmax(-1)
        for l in range(L):
            x = h[:, l] if lens is None else lens(h[:, l], l)
            out[l, start : start + h.shape[0]] = kl_to_logits(log_p, unembed(model, x).float())
    return out


# --------------------------------------------------------------------------- tied-dictionary decoding (000 §III)


def input_embeddings(model: nn.Module, amap: ArchMap | None = None) -> torch.Tensor:
    """W_e (V, d) as the residual stream receives it (Gemma's √d scale included), detached."""
    amap = amap or arch_map(model)
    emb = resolve(model, amap.embed)
    W = emb.weight.detach()
    if amap.embed_scaled_inside:
        W = W * emb.embed_scale.to(W.dtype)
    return W


def is_tied(model: nn.Module, amap: ArchMap | None = None) -> bool:
    """Whether the LM head and the input embedding share one matrix."""
    amap = amap or arch_map(model)
    head = resolve(model, amap.lm_head).weight
    emb = resolve(model, amap.embed).weight
    return head.data_ptr() == emb.data_ptr() or (head.shape == emb.shape and torch.equal(head, emb))


def tied_dictionary(model: nn.Module) -> torch.Tensor:
    """The shared token dictionary (V, d) of a tied-embedding model (000 §III); a clear error
    for untied models, whose hidden states have no single dictionary to be decoded in."""
    amap = arch_map(model)
    if not is_tied(model, amap):
        raise NotApplicable(
            f"{type(model).__name__} does not tie its input and output embeddings: "
            "000 §III decodes hidden states in one shared dictionary (use a tied model)"
        )
    return input_embeddings(model, amap)


@torch.no_grad()
def nearest_tokens(
    h: torch.Tensor,
    dictionary: torch.Tensor,
    k: int = 5,
    *,
    metric: str = "dot",
    chunk: int = 512,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The k dictionary entries nearest to each state: h (N, d) → (N, k) ids, nearest first.
    metric "dot": the largest ⟨h, e_v⟩ — with h the final-normed state and a tied dictionary
    this is the logit lens's top-k (000 §III); "cosine": the smallest angle (Voronoi cells on
    the unit sphere). `compute_dtype` (e.g. bfloat16 on CPU) for the (N, V) matmul."""
    if metric not in ("dot", "cosine"):
        raise ReproError(f"metric must be 'dot' or 'cosine', got {metric!r}")
    norm = (lambda t: torch.nn.functional.normalize(t, dim=-1)) if metric == "cosine" else (lambda t: t)  # noqa: E731
    D = norm(dictionary.float())
    if compute_dtype is not None:
        D = D.to(compute_dtype)
    out = torch.empty(h.shape[0], k, dtype=torch.long, device=h.device)
    for s in range(0, h.shape[0], chunk):
        x = norm(h[s : s + chunk].float()).to(D.dtype)
        out[s : s + chunk] = (x @ D.T).topk(k, dim=-1).indices
    return out


def top_k_match(decoded: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(N, k) decoded ids, (N,) reference ids → (N,) bool: the reference is among the k."""
    return (decoded == ids.unsqueeze(-1)).any(-1)


def cosine_to(h: torch.Tensor, dictionary: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Cosine between each state h (N, d) and the dictionary row of its id (N,)."""
    return torch.nn.functional.cosine_similarity(h.float(), dictionary[ids].float(), dim=-1)


def axis_projection(h: torch.Tensor, e_in: torch.Tensor, e_out: torch.Tensor) -> torch.Tensor:
    """Normalised projection of each state on its input→output axis (000 §III, Fig 3): with
    every vector scaled to unit length (hidden states and embeddings live at different scales),
    t = ⟨ĥ − ê_in, ê_out − ê_in⟩ / ‖ê_out − ê_in‖², so t = 0 at the input token's embedding and
    1 at the output token's. Tokens whose input and output are the same token give NaN."""
    n = torch.nn.functional.normalize
    x, a, b = n(h.float(), dim=-1), n(e_in.float(), dim=-1), n(e_out.float(), dim=-1)
    axis = b - a
    den = (axis * axis).sum(-1)
    t = ((x - a) * axis).sum(-1) / den
    return t.masked_fill(den < 1e-12, float("nan"))


def token_logits(
    model: nn.Module, h: torch.Tensor, ids: torch.Tensor, *, normed: bool = False, amap: ArchMap | None = None
) -> torch.Tensor:
    """The logits `unembed` gives states h (N, d) for one token each, ids (N,) → (N,) float32,
    without the (N, V) matmul: final norm (unless `normed`), the LM head's row (and bias) of each
    id, the model's final soft-cap if it has one."""
    amap = amap or arch_map(model)
    if not normed:
        h = final_norm(model, amap)(h)
    head = resolve(model, amap.lm_head)
    z = (h.float() * head.weight[ids].float()).sum(-1)
    bias = getattr(head, "bias", None)
    if bias is not None:
        z = z + bias[ids].float()
    cap = getattr(_config(model), amap.softcap_attr, None) if amap.softcap_attr else None
    if cap:
        z = torch.tanh(z / cap) * cap
    return z


def axis_preference(
    model: nn.Module, h: torch.Tensor, in_ids: torch.Tensor, out_ids: torch.Tensor, *, normed: bool = False
) -> torch.Tensor:
    """Position of each state on its input→output axis as the logit lens reads it (000 §III,
    Fig 3's projection, 0: the input token, 1: the output token): σ(z_out − z_in), the logit
    lens's probability of the output token against the input token, where z_out − z_in =
    ⟨norm(h), u_out − u_in⟩ is the (un-normalised) projection of the lens-space state on the
    axis between the two tokens' unembedding rows. A state that decodes as the input token scores
    ≈ 0, one that decodes as the output token ≈ 1, one indifferent between them 0.5; the model's
    own last layer scores its own preference for the target over repeating the input, so the
    whole 0 … 1 range is within a model's reach — unlike `axis_projection`, whose unit vectors
    put the output end at cos(h, e_out) = 1, which no layer of a real model approaches.
    h (N, d) pre-norm states (`normed`: already through the final norm), ids (N,) → (N,)
    float32; NaN where the input and output token are the same."""
    amap = arch_map(model)
    if not normed:
        h = final_norm(model, amap)(h)
    z_out = token_logits(model, h, out_ids, normed=True, amap=amap)
    z_in = token_logits(model, h, in_ids, normed=True, amap=amap)
    return torch.sigmoid(z_out - z_in).masked_fill(in_ids == out_ids, float("nan"))
