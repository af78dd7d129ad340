"""A small, readable decoder for the ablations no library has (001 §4, §6.2.1).

nanoGPT in spirit: the whole model is in this file, top to bottom, with tensor shapes in the
comments (B batch, T positions, d width, H heads, D = d/H head size, F MLP width, V vocab).
It covers what the HF classes cannot express:

- ``block="mlp"`` / ``"attn"``: MLP-only and attention-only stacks (001 §4.1, Table 2);
- ``norm="none"``, ``residual=False``, ``activation="relu"|"tanh"``: a stack of MLP0 blocks,
  Y = φ(X W_up) W_down (001 Definition 1);
- ``attention="uniform"`` + ``value_identity=True`` (+ no norm, no residual): a stack of Attn0
  blocks, o_i = (1/i) Σ_{j≤i} x_j, the causal running mean (001 Definition 3);
- ``agg_scale="amplify"|"attenuate"``: o_i·√i or o_i·√(i/T), T = max_len, on the aggregated
  attention output before W_O (001 §6.2.1), positions i = 1..T;
- ``residual_alpha``: x ← α·x + F(Norm(x)) for each sub-layer (1.0 = standard);
- ``norm_position="post"``: the original (Vaswani et al. 2017) post-norm sub-layer
  x ← Norm(α·x + F(x)) instead of pre-norm x ← α·x + F(Norm(x)) (002 "Pre-Norm vs Post-Norm").

Hook points (plain ``register_forward_hook`` works on all of them):
``blocks[l].ln_1 / .attn / .ln_2 / .mlp`` (norms are ``nn.Identity`` when ``norm="none"``),
two ``nn.Identity`` modules on the aggregated attention output, shape (B, T, H, D), in this
order: A·V → ``blocks[l].attn.agg_unscaled`` → ×s_i (``agg_scale``) → ``blocks[l].attn.agg`` →
W_O. So ``agg`` sees exactly what enters W_O (the scaled õ_i of 001 §6.2.1, which is the raw
o = A·V of 001 Eq. 2 when ``agg_scale="none"``) and ``agg_unscaled`` always sees the raw o; a
hook that returns a tensor replaces it. Also ``blocks[l].mlp.act`` (input (B, T, F)).

Outputs (`TinyOutput`): ``hidden_states`` has n_layer+1 entries — the block input (embeddings,
plus learned positions), then the output of each block; the **last one is before the final
norm**. (HF transformers 5.x differs: its last hidden state is *after* the final norm.) The
final-normed state is ``last_hidden_state`` (always returned), which is what the LM head sees.

Init: 001 App B.1 via `repro.core.models.hf.init_gpt_style_` (same code as the HF models): linear and
embedding weights N(0, init_std²), W_O and W_down N(0, (init_std/√(2L))²), biases 0, norms 1.
With no generator, a generator seeded with 0 is used, so construction is deterministic.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers.modeling_outputs import ModelOutput

from repro.core.models.attention import sdpa
from repro.ground.errors import ReproError
from repro.ground.runtime import generator as make_generator

BLOCKS = ("full", "attn", "mlp")
NORMS = ("layernorm", "rmsnorm", "none")
ACTIVATIONS = ("gelu", "relu", "tanh", "swiglu")
ATTENTIONS = ("softmax", "uniform")
POSITIONS = ("rope", "learned", "none")
AGG_SCALES = ("none", "amplify", "attenuate")
NORM_POSITIONS = ("pre", "post")


class TinyConfigError(ReproError, ValueError):
    """An invalid `TinyConfig` (a ValueError, and a user-facing ReproError)."""


# --------------------------------------------------------------------------- config


class _class_or_instance_method:
    """Bind `f(cls, instance_or_None, ...)`: callable on the class and on an instance."""

    def __init__(self, f):
        self.f = f
        functools.update_wrapper(self, f)

    def __get__(self, obj, cls):
        return functools.partial(self.f, cls, obj)


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int = 256  # 0: no embedding / LM head (feed inputs_embeds)
    d_model: int = 128
    n_layer: int = 4
    n_head: int = 4
    d_ff: int | None = None  # None: 4·d_model
    max_len: int = 1024
    block: str = "full"  # "full" | "attn" (attention-only) | "mlp" (MLP-only)
    norm: str = "layernorm"  # "layernorm" | "rmsnorm" | "none"
    activation: str = "gelu"  # "gelu" (exact) | "relu" | "tanh" | "swiglu"
    residual: bool = True
    attention: str = "softmax"  # "softmax" | "uniform" (Attn0: causal running mean)
    value_identity: bool = False  # Attn0's W_V = W_O = I: skip both projections
    positions: str = "rope"  # "rope" | "learned" | "none"
    agg_scale: str = "none"  # "none" | "amplify" (o_i·√i) | "attenuate" (o_i·√(i/max_len))
    residual_alpha: float = 1.0  # x ← α·x + F(Norm(x))
    norm_position: str = "pre"  # "pre": x ← α·x + F(Norm(x)); "post": x ← Norm(α·x + F(x))
    tie_embeddings: bool = True
    init_std: float = 0.02  # App B.1; W_O and W_down get init_std/√(2·n_layer)
    bias: bool = True  # biases of linear layers and LayerNorm
    final_norm: bool = True
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        choices = {
            "block": BLOCKS,
            "norm": NORMS,
            "activation": ACTIVATIONS,
            "attention": ATTENTIONS,
            "positions": POSITIONS,
            "agg_scale": AGG_SCALES,
            "norm_position": NORM_POSITIONS,
        }
        for field, allowed in choices.items():
            value = getattr(self, field)
            if value not in allowed:
                raise TinyConfigError(f"TinyConfig.{field}={value!r} is not one of {', '.join(map(repr, allowed))}")
        for field in ("d_model", "n_layer", "max_len"):
            if int(getattr(self, field)) < 1:
                raise TinyConfigError(f"TinyConfig.{field} must be >= 1, got {getattr(self, field)!r}")
        if self.vocab_size < 0:
            raise TinyConfigError(f"TinyConfig.vocab_size must be >= 0, got {self.vocab_size}")
        if self.d_ff is not None and self.d_ff < 1:
            raise TinyConfigError(f"TinyConfig.d_ff must be >= 1 or None, got {self.d_ff}")
        if self.init_std <= 0:
            raise TinyConfigError(f"TinyConfig.init_std must be > 0, got {self.init_std}")
        if self.block != "mlp":
            if self.n_head < 1 or self.d_model % self.n_head:
                raise TinyConfigError(f"TinyConfig.d_model={self.d_model} must be divisible by n_head={self.n_head}")
            if self.positions == "rope" and (self.d_model // self.n_head) % 2:
                raise TinyConfigError(
                    f"rotary positions need an even head size; d_model/n_head = {self.d_model // self.n_head}"
                )

    @property
    def ff_width(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @_class_or_instance_method
    def merged(cls, self: "TinyConfig | None", **overrides) -> "TinyConfig":
        """A copy with `overrides` applied and validated; unknown keys are an error.

        ``TinyConfig.merged(...)`` starts from the defaults, ``cfg.merged(...)`` from ``cfg``.
        """
        base = self if self is not None else cls()
        fields = [f.name for f in dataclasses.fields(base)]
        unknown = sorted(set(overrides) - set(fields))
        if unknown:
            raise TinyConfigError(f"unknown TinyConfig field(s) {unknown}; fields are {', '.join(fields)}")
        return dataclasses.replace(base, **overrides)

    @classmethod
    def mlp0_stack(cls, **overrides) -> "TinyConfig":
        """A stack of MLP0 blocks (001 Def. 1): no norm, no residual, ReLU, no final norm."""
        base = dict(
            block="mlp",
            norm="none",
            residual=False,
            activation="relu",
            final_norm=False,
            positions="none",
            vocab_size=0,
            bias=False,
        )
        return cls(**{**base, **overrides})

    @classmethod
    def attn0_stack(cls, **overrides) -> "TinyConfig":
        """A stack of Attn0 blocks (001 Def. 3): uniform causal mean, W_V = W_O = I."""
        base = dict(
            block="attn",
            attention="uniform",
            value_identity=True,
            norm="none",
            residual=False,
            final_norm=False,
            positions="none",
            vocab_size=0,
            bias=False,
        )
        return cls(**{**base, **overrides})


@dataclass
class TinyOutput(ModelOutput):
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None  # (B, T or logits_to_keep, V); None if V = 0
    last_hidden_state: torch.Tensor | None = None  # (B, T, d), after the final norm
    hidden_states: tuple[torch.Tensor, ...] | None = None  # n_layer+1 × (B, T, d), last BEFORE final norm
    attentions: tuple[torch.Tensor, ...] | None = None  # per attention block, (B, H, T, T)


# --------------------------------------------------------------------------- pieces


def _norm(config: TinyConfig) -> nn.Module:
    if config.norm == "layernorm":
        return nn.LayerNorm(config.d_model, eps=config.norm_eps, bias=config.bias)
    if config.norm == "rmsnorm":
        return nn.RMSNorm(config.d_model, eps=config.norm_eps)
    return nn.Identity()


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


POSITION_SCALINGS = ("baseline", "amplification", "attenuation")
_AGG_SCALINGS = {"amplify": "amplification", "attenuate": "attenuation"}  # TinyConfig.agg_scale's names


def position_scale(kind: str, positions: torch.Tensor, T: int | None = None) -> torch.Tensor:
    """The factor of 001 §6.2.1 for 1-based query positions i: 1 (baseline), √i
    (amplification) or √(i/T) (attenuation, T the maximum context). Float tensor of the shape
    of `positions`. The one definition: the tiny decoder's `agg_scale` and the HF variants of
    `repro.sinks` both read it."""
    i = positions.float()
    if kind == "baseline":
        return torch.ones_like(i)
    if kind == "amplification":
        return i.sqrt()
    if kind == "attenuation":
        if T is None or int(T) < 1:
            raise ReproError("positional attenuation needs the maximum context length T ≥ 1")
        return (i / int(T)).sqrt()
    raise ReproError(f"unknown positional scaling {kind!r}; choose one of {', '.join(POSITION_SCALINGS)}")


def agg_scale_factors(mode: str, T: int, max_len: int, *, device=None, dtype=torch.float32) -> torch.Tensor | None:
    """(T,) factors s_i for positions i = 1..T (001 §6.2.1): √i, √(i/max_len), or None."""
    if mode == "none":
        return None
    return position_scale(_AGG_SCALINGS[mode], torch.arange(1, T + 1, device=device), max_len).to(dtype)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        if config.attention == "softmax":
            self.q_proj = nn.Linear(d, d, bias=config.bias)
            self.k_proj = nn.Linear(d, d, bias=config.bias)
        if not config.value_identity:
            self.v_proj = nn.Linear(d, d, bias=config.bias)
            self.o_proj = nn.Linear(d, d, bias=config.bias)
        self.agg_unscaled = nn.Identity()  # hook point: o = A·V, (B, T, H, D)
        self.agg = nn.Identity()  # hook point: o after agg_scale, what enters W_O

    @property
    def attends_by_sdpa(self) -> bool:
        """Softmax attention runs through `sdpa` (repro.core.attention_kind, the checkpoint key)."""
        return self.config.attention == "softmax"

    def forward(
        self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        cfg = self.config
        B, T, d = x.shape
        H, D = cfg.n_head, cfg.head_dim
        v = x if cfg.value_identity else self.v_proj(x)  # (B, T, d)
        v = v.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        weights = None
        if cfg.attention == "uniform":
            # Attn0: o_i = (1/i) Σ_{j≤i} v_j — a causal running mean, computed as a prefix sum.
            counts = torch.arange(1, T + 1, device=x.device, dtype=v.dtype).view(1, 1, T, 1)
            o = v.cumsum(dim=2) / counts  # (B, H, T, D)
            if need_weights:
                A = torch.tril(torch.ones(T, T, device=x.device, dtype=v.dtype)) / counts.view(T, 1)
                weights = A.expand(B, H, T, T)  # (B, H, T, T)
        else:
            q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
            k = self.k_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
            if rope is not None:
                cos, sin = rope  # (T, D) each
                q = q * cos + _rotate_half(q) * sin
                k = k * cos + _rotate_half(k) * sin
            if need_weights:
                scores = (q @ k.transpose(-2, -1)) / math.sqrt(D)  # (B, H, T, T)
                mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
                scores = scores.masked_fill(~mask, float("-inf"))
                weights = scores.softmax(dim=-1)
                o = weights @ v  # (B, H, T, D)
            else:
                o = sdpa(q, k, v, is_causal=True)  # (B, H, T, D)
        o = self.agg_unscaled(o.transpose(1, 2))  # (B, T, H, D), hook point
        scale = agg_scale_factors(cfg.agg_scale, T, cfg.max_len, device=x.device, dtype=o.dtype)
        if scale is not None:
            o = o * scale.view(1, T, 1, 1)  # o_i · s_i (001 §6.2.1)
        o = self.agg(o)  # (B, T, H, D), hook point
        o = o.reshape(B, T, d)  # (B, T, d)
        out = o if cfg.value_identity else self.o_proj(o)  # (B, T, d)
        return out, weights


class MLP(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        d, Fw = config.d_model, config.ff_width
        self.swiglu = config.activation == "swiglu"
        if self.swiglu:
            self.gate_proj = nn.Linear(d, Fw, bias=config.bias)
        self.up_proj = nn.Linear(d, Fw, bias=config.bias)
        self.act = {"gelu": nn.GELU(), "relu": nn.ReLU(), "tanh": nn.Tanh(), "swiglu": nn.SiLU()}[config.activation]
        self.down_proj = nn.Linear(Fw, d, bias=config.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d)
        if self.swiglu:
            h = self.act(self.gate_proj(x)) * self.up_proj(x)  # (B, T, F)
        else:
            h = self.act(self.up_proj(x))  # (B, T, F)
        return self.down_proj(h)  # (B, T, d)


class Block(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        if config.block in ("full", "attn"):
            self.ln_1 = _norm(config)
            self.attn = CausalSelfAttention(config)
        if config.block in ("full", "mlp"):
            self.ln_2 = _norm(config)
            self.mlp = MLP(config)

    def _add(self, x: torch.Tensor, fx: torch.Tensor) -> torch.Tensor:
        return self.config.residual_alpha * x + fx if self.config.residual else fx

    def forward(self, x, rope, need_weights=False):  # x: (B, T, d)
        weights = None
        if self.config.norm_position == "post":  # Norm after the residual add
            if hasattr(self, "attn"):
                a, weights = self.attn(x, rope, need_weights)
                x = self.ln_1(self._add(x, a))
            if hasattr(self, "mlp"):
                x = self.ln_2(self._add(x, self.mlp(x)))
            return x, weights
        if hasattr(self, "attn"):
            a, weights = self.attn(self.ln_1(x), rope, need_weights)
            x = self._add(x, a)
        if hasattr(self, "mlp"):
            x = self._add(x, self.mlp(self.ln_2(x)))
        return x, weights


# --------------------------------------------------------------------------- model


def _skip_torch_init():
    """Skip torch's default (kaiming) init while building: it is overwritten by App B.1 anyway,
    and it would draw from torch's global RNG, which experiments never touch."""
    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # pragma: no cover - other transformers layouts
        return contextlib.nullcontext()
    return no_init_weights()


class TinyDecoder(nn.Module):
    def __init__(self, config: TinyConfig | None = None, generator: torch.Generator | None = None, init: bool = True):
        """`init=False`: leave the parameters uninitialised (torch.empty), for a caller that
        overwrites every one of them at once (RS-3's `xavier_init_`: the App B.1 draws it would
        replace were half of RS-3's CPU time at paper size)."""
        super().__init__()
        self.config = config = config if config is not None else TinyConfig()
        with _skip_torch_init():
            self._build(config)
        if init:
            from repro.core.models.hf import init_gpt_style_

            init_gpt_style_(
                self, config.n_layer, generator if generator is not None else make_generator(0), std=config.init_std
            )
        self.eval()

    def _build(self, config: TinyConfig) -> None:
        d = config.d_model
        if config.vocab_size > 0:
            self.wte = nn.Embedding(config.vocab_size, d)
        if config.positions == "learned":
            self.wpe = nn.Embedding(config.max_len, d)
        if config.positions == "rope" and config.block != "mlp":
            D = config.head_dim
            inv_freq = 1.0 / config.rope_theta ** (torch.arange(0, D, 2, dtype=torch.float32) / D)
            angles = torch.outer(torch.arange(config.max_len, dtype=torch.float32), inv_freq)  # (max_len, D/2)
            angles = torch.cat((angles, angles), dim=-1)  # (max_len, D)
            self.register_buffer("rope_cos", angles.cos(), persistent=False)
            self.register_buffer("rope_sin", angles.sin(), persistent=False)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = _norm(config) if config.final_norm else nn.Identity()
        if config.vocab_size > 0:
            self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
            if config.tie_embeddings:
                self.lm_head.weight = self.wte.weight

    def get_input_embeddings(self) -> nn.Module | None:
        return getattr(self, "wte", None)

    def get_output_embeddings(self) -> nn.Module | None:
        return getattr(self, "lm_head", None)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        *,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        logits_to_keep: int = 0,
    ) -> TinyOutput:
        cfg = self.config
        if (input_ids is None) == (inputs_embeds is None):
            raise ReproError("TinyDecoder: pass exactly one of input_ids and inputs_embeds")
        if input_ids is not None:
            if cfg.vocab_size == 0:
                raise ReproError("TinyDecoder with vocab_size=0 has no embedding; pass inputs_embeds")
            x = self.wte(input_ids)  # (B, T, d)
        else:
            x = inputs_embeds  # (B, T, d)
        B, T, _ = x.shape
        if T > cfg.max_len:
            raise ReproError(f"TinyDecoder: sequence length {T} exceeds max_len={cfg.max_len}")
        if cfg.positions == "learned":
            x = x + self.wpe(torch.arange(T, device=x.device))  # (B, T, d)
        rope = None
        if hasattr(self, "rope_cos"):
            rope = (self.rope_cos[:T].to(x.dtype), self.rope_sin[:T].to(x.dtype))  # (T, D) each

        hidden = [x]
        attentions = []
        for block in self.blocks:
            x, weights = block(x, rope, output_attentions)
            hidden.append(x)
            if weights is not None:
                attentions.append(weights)
        h = self.ln_f(x)  # (B, T, d)

        logits = loss = None
        if hasattr(self, "lm_head"):
            kept = h if logits_to_keep == 0 else h[:, -logits_to_keep:]
            logits = self.lm_head(kept)  # (B, T', V)
        if labels is not None:
            if logits is None or logits_to_keep != 0:
                raise ReproError("TinyDecoder: labels need an LM head and logits_to_keep=0")
            # HF convention: labels are aligned with input_ids; position t predicts labels[t+1].
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.size(-1)).float(), labels[:, 1:].reshape(-1), ignore_index=-100
            )
        return TinyOutput(
            loss=loss,
            logits=logits,
            last_hidden_state=h,
            hidden_states=tuple(hidden) if output_hidden_states else None,
            attentions=tuple(attentions) if output_attentions else None,
        )
