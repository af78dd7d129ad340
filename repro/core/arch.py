"""Where things live inside a decoder, per architecture: the layer map, the final norm and the
unembedding matrix, and a block's norms and output projections as linear maps.

`arch_map` gives the dotted paths of a model's embedding, blocks, final norm, LM head and each
block's sub-modules (HF families by `config.model_type`, the tiny decoder by class); `resolve`
follows one. Gemma scales its embeddings by √d inside its embedding module, and its final
logits may be soft-capped (`softcap_attr`). `frozen_norm` and `out_proj_weight` read a norm and
an output projection as the linear maps the decompositions need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from repro.ground.errors import ReproError

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
    from repro.core.models.tiny import TinyDecoder  # lazy: keeps `import repro.core.arch` light

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
        f"{supported}. Add an ArchMap for it in repro/core/arch.py."
    )


# --------------------------------------------------------------------------- final norm and unembedding


def text_config(model: nn.Module) -> Any:
    """The model's config, or its text config for a multimodal one (Gemma 3): where the final
    logit soft-cap is read."""
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
            raise ReproError(f"{name} has no eps attribute; add it to repro.core.arch.frozen_norm")
        gain = f32(module.weight)
        if name.startswith("Gemma"):  # Gemma's RMSNorm scales by (1 + weight); weight is 0 at init
            gain = 1.0 + gain
        return FrozenNorm("rmsnorm", gain, None, float(eps), centre=False)
    raise ReproError(
        f"cannot freeze a {name}: supported are LayerNorm, RMSNorm (torch, Llama, Gemma) "
        "and Identity; add it to repro.core.arch.frozen_norm"
    )


def out_proj_weight(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(W (d_out, d_in), bias or None) of a Linear or GPT-2 Conv1D (which stores W transposed)."""
    w = module.weight.detach()
    if type(module).__name__ == "Conv1D":  # y = x @ W + b, W: (d_in, d_out)
        w = w.t()
    b = getattr(module, "bias", None)
    return w, None if b is None else b.detach()
