"""Attention sinks (001 §4.4 Eq 2, §6.2): sink metrics, positional amplification /
attenuation, and the attention-output statistics behind them — for any transformers model
that routes attention through the AttentionInterface (Llama, GPT-2, Gemma, …).

Metrics (001 §6.2.1, after Gu et al. 2024). With A^{i,k}_{l,h} the attention query i pays to
key k in head h of layer l (0-based positions here; the source counts from 1):

- ``form="source"``: α^k_{l,h} = (1/T)·Σ_{i} A^{i,k}_{l,h}, the mean over all T queries (001's
  equation; queries before k contribute 0);
- ``form="gu"``: α^k_{l,h} = (1/(T−k))·Σ_{i≥k} A^{i,k}_{l,h}, the mean over the queries that
  can see key k (Gu et al.'s definition and code).
For the first token (k = 0), the sink the claims are about, the two forms coincide; they
differ for later keys. A head is a sink head when α > ε (001: ε = 0.25; Gu et al.: 0.3); the
sink rate is the share of sink heads, per layer or model-wide.

Attention maps come from each model's own eager attention (`eager_attention_forward` of its
modelling module) under `record_attention`, which keeps only the columns of the keys asked
for (never the L·H·T² maps), so long sequences on real models stay cheap in memory.

Positional scaling (001 §6.2.1): o_i = Σ_j A_{ij} v_j is multiplied, before the output
projection, by √i (``"amplification"``) or √(i/T) (``"attenuation"``, T the maximum context),
i the 1-based position of the query (from ``position_ids``, so a KV cache or an offset is
handled). `apply_positional_scaling` stores the variant in the model's config (so it is part
of a checkpoint's key and survives `save_pretrained`) and switches the model to the
`repro_positional` attention function. That name is registered in the AttentionInterface
*and* the AttentionMaskInterface: a function registered without a mask function gets
attention_mask=None from transformers, and an eager computation under None is not causal —
the silent failure tests/test_sinks.py guards against.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from repro.core.models.attention import SDPA, hf_sdpa
from repro.core.models.tiny import POSITION_SCALINGS, position_scale
from repro.ground.runtime import ReproError

FORMS = ("source", "gu")
EPSILON = {"source": 0.25, "gu": 0.3}  # 001 §6.2.1; Gu et al. 2024 §3.2 and their code
SCALINGS = POSITION_SCALINGS  # 001 §6.2.1's three variants; the factors: `position_scale` (core)
POSITIONAL = "repro_positional"  # fused SDPA (training, scoring)
POSITIONAL_EAGER = "repro_positional_eager"  # the model's eager attention (maps, recording)
CONFIG_KIND = "positional_scaling"
CONFIG_T = "positional_scaling_T"

# --------------------------------------------------------------------------- metrics


def column_importance(col: torch.Tensor, k: int = 0, form: str = "source") -> torch.Tensor:
    """α^k from the attention column of key k: `col` (..., T) holds A^{i,k} for queries
    i = 0 … T−1 (zeros before k under a causal mask). Returns (...)."""
    if form not in FORMS:
        raise ReproError(f"unknown sink-metric form {form!r}; choose one of {', '.join(FORMS)}")
    T = col.shape[-1]
    if not 0 <= k < T:
        raise ReproError(f"key position k={k} outside a sequence of {T} tokens")
    if form == "source":
        return col.sum(-1) / T
    return col[..., k:].sum(-1) / (T - k)


def importance(attn: torch.Tensor, k: int = 0, form: str = "source") -> torch.Tensor:
    """α^k per head from attention maps `attn` (..., T_q, T_k), rows = queries, each row a
    distribution over keys: e.g. (L, H, T, T) → (L, H)."""
    if attn.dim() < 2 or attn.shape[-1] != attn.shape[-2]:
        raise ReproError(f"attention maps must end in (T, T) (queries × keys); got shape {tuple(attn.shape)}")
    if not 0 <= k < attn.shape[-1]:
        raise ReproError(f"key position k={k} outside a sequence of {attn.shape[-1]} tokens")
    return column_importance(attn[..., :, k], k, form)


def sink_heads(alpha: torch.Tensor, eps: float) -> torch.Tensor:
    """Boolean: α > ε (strict, as in the source's indicator)."""
    return alpha > eps


def sink_rate(alpha: torch.Tensor, eps: float, per_layer: bool = False) -> torch.Tensor:
    """Share of sink heads. `alpha` (..., L, H) → (...) model-wide, or (..., L) per layer."""
    heads = sink_heads(alpha, eps).float()
    return heads.mean(-1) if per_layer else heads.mean((-2, -1))


# --------------------------------------------------------------------------- positional scaling


def _query_positions(query: torch.Tensor, key: torch.Tensor, kwargs: dict[str, Any]) -> torch.Tensor:
    """1-based positions of the queries, (B or 1, q): position_ids + 1 where the model passes
    them (Llama, Gemma: also right under a KV cache), else the queries are the last q of the
    k keys (no padding, no gaps)."""
    pos = kwargs.get("position_ids")
    q = query.shape[2]
    if isinstance(pos, torch.Tensor) and pos.shape[-1] == q:
        return pos.reshape(-1, q) + 1
    start = key.shape[2] - q
    return (torch.arange(start, start + q, device=query.device) + 1)[None]


@dataclass
class _Recorder:
    keys: tuple[int, ...]
    columns: list[torch.Tensor]  # per attention call (layer order): (B, H, T_q, len(keys))
    outputs: list[torch.Tensor]  # per call: attention outputs after scaling (B, T_q, H, d)
    keep_outputs: bool
    stop_after: int | None = None  # the forward ends after this attention call (0-based)

    def select(self, weights: torch.Tensor) -> torch.Tensor:
        """The recorded key columns of `weights` (B, H, T_q, T_k): a view where the keys are
        0, 1, …, n − 1 (SK-1 records every column: a gather would copy 2 GB per batch at paper)."""
        if self.keys == tuple(range(len(self.keys))):
            return weights[..., : len(self.keys)]
        return weights[..., list(self.keys)]


class _StopForward(Exception):
    """Raised after the attention call `_Recorder.stop_after`; `record_attention` absorbs it."""


_RECORD: contextvars.ContextVar[_Recorder | None] = contextvars.ContextVar("repro_sinks_record", default=None)


def _eager_for(module: nn.Module):
    fn = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
    if fn is None:
        raise ReproError(
            f"{type(module).__name__} has no eager_attention_forward in its module; "
            "attention maps need a transformers model with eager attention"
        )
    return fn


def _scaled(
    module: nn.Module, out: torch.Tensor, query: torch.Tensor, key: torch.Tensor, kwargs: dict[str, Any]
) -> torch.Tensor:
    cfg = getattr(module, "config", None)
    kind = getattr(cfg, CONFIG_KIND, None) or "baseline"
    if kind == "baseline":
        return out
    pos = _query_positions(query, key, kwargs)  # (B|1, q)
    scale = position_scale(kind, pos, getattr(cfg, CONFIG_T, None)).to(out.dtype)
    return out * scale[:, :, None, None]  # out (B, q, H, d)


def _positional_sdpa(module, query, key, value, attention_mask, **kwargs):
    """AttentionInterface function: the model's SDPA attention, its output scaled by position."""
    out, _ = hf_sdpa(module, query, key, value, attention_mask, **kwargs)
    return _scaled(module, out, query, key, kwargs), None


def _positional_eager(module, query, key, value, attention_mask, **kwargs):
    """AttentionInterface function: the model's own eager attention (maps available), scaled
    by position; under `record_attention` it keeps the asked-for key columns."""
    out, weights = _eager_for(module)(module, query, key, value, attention_mask, **kwargs)
    out = _scaled(module, out, query, key, kwargs)
    rec = _RECORD.get()
    if rec is not None:
        rec.columns.append(rec.select(weights).detach())
        if rec.keep_outputs:
            rec.outputs.append(out.detach())
        if rec.stop_after is not None and len(rec.columns) > rec.stop_after:
            raise _StopForward
    return out, weights


def register() -> None:
    """Register both functions and their mask functions (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask, sdpa_mask

    AttentionInterface.register(POSITIONAL, _positional_sdpa)
    AttentionInterface.register(POSITIONAL_EAGER, _positional_eager)
    # SDPA's mask may be None (then sdpa_attention_forward runs is_causal=True); the eager
    # function always gets a materialised additive causal (and sliding-window) mask
    ALL_MASK_ATTENTION_FUNCTIONS.register(POSITIONAL, sdpa_mask)
    ALL_MASK_ATTENTION_FUNCTIONS.register(POSITIONAL_EAGER, eager_mask)


def _check_hf(model: nn.Module, what: str) -> None:
    if not hasattr(model, "set_attn_implementation") or not hasattr(model, "config"):
        raise ReproError(
            f"{what} needs a transformers model that routes attention through the "
            f"AttentionInterface; got {type(model).__name__}"
        )


def apply_positional_scaling(model: nn.Module, kind: str, T: int | None = None) -> nn.Module:
    """Make `model` one of 001 §6.2.1's variants in place (no new parameters): ``"baseline"``
    (unchanged computation), ``"amplification"`` or ``"attenuation"`` (T: the maximum context
    length; default the model's max_position_embeddings)."""
    _check_hf(model, "positional scaling")
    if kind not in SCALINGS:
        raise ReproError(f"unknown positional scaling {kind!r}; choose one of {', '.join(SCALINGS)}")
    if kind == "attenuation":
        T = int(T or getattr(model.config, "max_position_embeddings", 0) or 0)
        position_scale(kind, torch.ones(1), T)  # validates T
    register()
    setattr(model.config, CONFIG_KIND, kind)
    setattr(model.config, CONFIG_T, int(T) if T else None)
    model.set_attn_implementation(POSITIONAL)
    return model


def scaling_of(model: nn.Module) -> str:
    return getattr(getattr(model, "config", None), CONFIG_KIND, None) or "baseline"


class record_attention(contextlib.AbstractContextManager):
    """Run `model` on its eager attention (with its positional scaling, if any), recording per
    attention call the attention columns of `keys` and, with `outputs`, the (scaled)
    attention outputs; the attention implementation is restored afterwards. `stop_after`: the
    forward inside the block ends once attention call `stop_after` (0-based, layer order) is
    recorded — the rest of the model (that layer's MLP, later layers, the head) never runs and
    the block goes on after the `with`; nothing the forward returns exists then.

    A class, not a generator context manager: the stopping exception's traceback holds the
    forward's frames (at SK-1's paper size, ≈ 6 GB of attention maps and activations per batch).
    Under Python 3.12, `contextlib.contextmanager` keeps an absorbed exception in a reference
    cycle until the next garbage collection (CPython gh-129280), and on an H200 SK-1's process
    grew to 120 GiB and ran out of memory. Here the traceback is dropped on exit,
    so everything is freed as the `with` ends, on every Python."""

    def __init__(
        self, model: nn.Module, keys: tuple[int, ...] = (0,), outputs: bool = False, stop_after: int | None = None
    ) -> None:
        _check_hf(model, "recording attention")
        if stop_after is not None and stop_after < 0:
            raise ReproError(f"stop_after counts attention calls from 0; got {stop_after}")
        register()
        from repro.core.models.hf import attn_implementation

        self._rec = _Recorder(tuple(int(k) for k in keys), [], [], outputs, stop_after)
        self._impl = attn_implementation(model, POSITIONAL_EAGER)
        self._token: contextvars.Token | None = None

    def __enter__(self) -> _Recorder:
        self._token = _RECORD.set(self._rec)
        try:
            self._impl.__enter__()
        except BaseException:
            _RECORD.reset(self._token)
            raise
        return self._rec

    def __exit__(self, typ, exc, tb) -> bool:
        try:
            # the restore needs no exception (it is a `finally`); passing it on would put it
            # through a generator's throw() — the cycle this class avoids
            self._impl.__exit__(None, None, None)
        finally:
            _RECORD.reset(self._token)
        if isinstance(exc, _StopForward):
            traceback.clear_frames(tb)  # the finished forward's frames let go of their tensors
            exc.__traceback__ = None
            return True
        return False


def base_of(model: nn.Module) -> nn.Module:
    """The decoder body of a transformers model (its `base_model`: no LM head), or `model` itself."""
    return getattr(model, "base_model", model)


@torch.no_grad()
def first_token_importance(
    model: nn.Module, ids: torch.Tensor, *, k: int = 0, batch: int = 8
) -> dict[str, torch.Tensor]:
    """α^k per sequence, layer and head for both forms: ids (n, T) → {form: (n, L, H)}, on the
    CPU (ids go to the model's device). The base model only (no LM head: logits are not needed)."""
    out: dict[str, list[torch.Tensor]] = {f: [] for f in FORMS}
    device = next(model.parameters()).device
    for chunk in ids.split(batch):
        with record_attention(model, keys=(k,)) as rec:
            base_of(model)(input_ids=chunk.to(device), use_cache=False)
        if not rec.columns:
            raise ReproError(f"{type(model).__name__} ran no attention through the AttentionInterface")
        cols = torch.stack([c[..., 0] for c in rec.columns], dim=1)  # (b, L, H, T)
        for f in FORMS:
            out[f].append(column_importance(cols, k, f))
    return {f: torch.cat(v).cpu() for f, v in out.items()}


@dataclass(frozen=True)
class SinkCurve:
    """Sink rates of one model over sequence lengths (001 Fig 12): per form and length, the
    per-sequence model-wide rates (n,) at that form's ε, and the per-head α (n, L, H)."""

    lengths: tuple[int, ...]
    rates: dict[str, dict[int, torch.Tensor]]
    alpha: dict[str, dict[int, torch.Tensor]]
    eps: dict[str, float]

    def mean(self, form: str, length: int) -> float:
        return float(self.rates[form][length].mean())

    def row(self, form: str) -> list[float]:
        return [self.mean(form, n) for n in self.lengths]


def sink_curve(
    model: nn.Module, windows: dict[int, torch.Tensor], eps: dict[str, float] | None = None, batch: int = 8
) -> SinkCurve:
    """Per-sequence sink rates at each length: `windows` maps length → ids (n, length)."""
    eps = dict(EPSILON if eps is None else eps)
    rates: dict[str, dict[int, torch.Tensor]] = {f: {} for f in FORMS}
    alpha: dict[str, dict[int, torch.Tensor]] = {f: {} for f in FORMS}
    for n, ids in sorted(windows.items()):
        a = first_token_importance(model, ids, batch=batch)
        for f in FORMS:
            alpha[f][n] = a[f]
            rates[f][n] = sink_rate(a[f], eps[f])
    return SinkCurve(tuple(sorted(windows)), rates, alpha, eps)


# --------------------------------------------------------------------------- the trained comparison


def nano_llama(
    kind: str,
    model: dict[str, Any],
    context: int,
    seed: int,
    device: torch.device | str = "cpu",
    build_layers: int | None = None,
) -> nn.Module:
    """001 §6.2.1's Nano LLaMA-2 (B.4.1: RMSNorm, SwiGLU, RoPE, untied; B.4.2: GPT-2 init) at
    `model` sizes (n_layer, n_head, d_model, vocab_size, optional d_ff) with maximum context
    `context` (the T of attenuation), as variant `kind`, on `device` (drawn on the CPU: the same
    weights everywhere). The scaling has no parameters: one seed gives the same initial weights
    for all three variants. `build_layers`: only the first layers (`hf.build_model`), with the
    weights the full model's have."""
    from repro.core.models.hf import build_model

    m = build_model(
        "llama", seed=seed, n_positions=context, attn_implementation=SDPA, build_layers=build_layers, **model
    )
    return apply_positional_scaling(m, kind, context).to(device)


def build_for_job(seed: int, *, kind: str, model: dict[str, Any], context: int) -> nn.Module:
    """`nano_llama` from JSON-able arguments: the model factory of a training job in another
    process (repro.core.launch), on the CPU."""
    return nano_llama(kind, model, context, seed)


def variant_job(
    kind: str, model: dict[str, Any], cfg: Any, seed: int, *, corpus: str, data_identity: dict | None
) -> dict[str, Any]:
    """`train_variant`'s run as a JSON-able job (repro.core.launch.train_jobs): the same checkpoint
    key, so `train_variant` then loads what the job wrote."""
    from repro.core import launch

    return launch.job(
        "repro.sinks.experiments:build_for_job",
        {"kind": kind, "model": dict(model), "context": cfg.seq_len},
        cfg.replace(model_seed=seed),
        corpus=corpus,
        data_identity=data_identity,
    )


def train_variant(
    kind: str,
    model: dict[str, Any],
    cfg: Any,
    seed: int,
    *,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    data_identity: dict | None = None,
    accelerator: Any = None,
    device: torch.device | str = "cpu",
):
    """Train (or load from the checkpoint cache) one variant through `repro.core.train.train`, the
    model on `device`; the variant is in the model's config, hence in the cache key (the device is
    not). `cfg.data_seed` fixes the data order, shared by all variants."""
    from repro.core import train

    return train.train(
        lambda s: nano_llama(kind, model, cfg.seq_len, s, device),
        cfg.replace(model_seed=seed),
        train_tokens=train_tokens,
        val_tokens=val_tokens,
        data_identity=data_identity,
        accelerator=accelerator,
        progress=False,
    )


# --------------------------------------------------------------------------- Eq 2 at init (SK-1's profiles: init_std)


@torch.no_grad()
def attention_outputs(model: nn.Module, embeds: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """001 Eq 2 / Fig 9: the attention output of attention layer `layer` after value
    aggregation and any positional scaling, before the output projection, with `embeds`
    (n, T, d) fed as inputs_embeds: (n, T, H·d_head)."""
    with record_attention(model, outputs=True) as rec:
        base_of(model)(inputs_embeds=embeds, use_cache=False)
    if not -len(rec.outputs) <= layer < len(rec.outputs):
        raise ReproError(f"layer {layer} outside the model's {len(rec.outputs)} attention layers")
    return rec.outputs[layer].flatten(2)


# --------------------------------------------------------------------------- SK-3's perplexity ratio


def ratio_bound(d: torch.Tensor) -> tuple[float, float, float]:
    """SK-3 (001 §6.2.2, Table 7): exp(mean d), exp(upper one-sided 95% t bound of mean d) and
    the sd of d for per-window NLL differences d: the perplexity ratio, its upper confidence
    bound, the noise."""
    import math

    from repro.core.stats import t_quantile

    x = d.double().numpy()
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    return math.exp(mean), math.exp(mean + t_quantile(0.95, len(x) - 1) * sd / math.sqrt(len(x))), sd


def ratio_bound_power(log_effect, sds, n: int, margin: float, effect_sd=0.0) -> float:
    """Power of SK-3's assertion: P(on every held-out set, exp(upper one-sided 95% t bound of
    the mean per-window NLL difference) ≤ `margin`) with n windows per set, when the true mean
    difference is `log_effect` nats (one number for every set, or one per set) and the per-window
    sd on each set is in `sds` (normal approximation of the mean, sets independent).
    `effect_sd` (one number or one per set): the uncertainty of the effect itself (e.g. a budget
    model's fit), added in quadrature to the mean's standard error."""
    import math

    from scipy import stats as sps

    from repro.core.stats import power_threshold

    n = max(int(n), 2)
    k = len(sds)
    effects = [float(log_effect)] * k if np.ndim(log_effect) == 0 else [float(e) for e in log_effect]
    spreads = [float(effect_sd)] * k if np.ndim(effect_sd) == 0 else [float(e) for e in effect_sd]
    if len(effects) != k or len(spreads) != k:
        raise ReproError(f"ratio_bound_power: {k} sets but {len(effects)} effects and {len(spreads)} effect sds")
    t = float(sps.t.ppf(0.95, n - 1))
    out = 1.0
    for sd, eff, esd in zip(sds, effects, spreads):
        se = float(sd) / math.sqrt(n)
        out *= power_threshold(eff, math.log(margin) - t * se, math.sqrt(se**2 + esd**2), "le")
    return out


def expected_uniform_importance(T: int) -> float:
    """α¹ under uniform causal attention (the init regime of Eq 2): (1/T)·Σ_i 1/i = H_T / T —
    the level a head reaches with no sink at all (0.07 at T = 64, 0.21 at T = 16)."""
    return sum(1.0 / i for i in range(1, T + 1)) / T


# --------------------------------------------------------------------------- SK-4: a pretrained model


@dataclass(frozen=True)
class PretrainedSinks:
    """SK-4: a pretrained model's sink curve on <bos>-led test windows, its heads (L, H), and the
    negative control: a random-init twin's model-wide sink rate (source form) at one length."""

    curve: SinkCurve
    heads: tuple[int, int]
    control_length: int
    control_rate: float


def pretrained_sinks(model: nn.Module, tok, name: str, p: dict[str, Any], corpus: str = "brown") -> PretrainedSinks:
    """`PretrainedSinks` of `model` (`name`, for the messages) on test windows of `corpus` at
    `p`'s lengths (`p`: the profile's `pretrained` row). The control at one length only: a single
    length's rate bounds the minimum over lengths from above, so the full assertion rejects the
    twin whenever this does (at a small fraction of the cost of the model's curve). T = 64:
    uniform attention gives α¹ = H_T/T ≈ 0.07 there, well below ε; at T = 32 (≈ 0.13) a random
    model's heads can cross ε by chance."""
    from repro.core import data
    from repro.core.models.hf import random_init_twin

    windows = {
        n: data.bos_windows(tok, "test", p["n_seq"], n, who=f"--model {name}: SK-4", corpus=corpus)
        for n in p["lengths"]
    }
    curve = sink_curve(model, windows, batch=p["batch"])
    L, H = curve.alpha["source"][curve.lengths[0]].shape[1:]
    n_ctl = 64 if 64 in windows else max(windows)
    twin = random_init_twin(model)
    twin_rate = sink_curve(twin, {n_ctl: windows[n_ctl]}, batch=p["batch"]).mean("source", n_ctl)
    del twin
    return PretrainedSinks(curve, (L, H), n_ctl, twin_rate)
