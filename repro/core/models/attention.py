"""Scaled-dot-product attention in the precision the dtype policy gives attention.

One rule for every model the suite trains (`runtime.attention_in_float32`): on a CPU,
attention that would run in bfloat16 — bf16 inputs, or a bf16 autocast around it — is
computed in float32 and cast back to its inputs' dtype; the projections around it stay in
the autocast's dtype. bf16 SDPA's backward is 3–7× slower than float32's on CPU, so this
takes ≈ 15% off a tiny-model training step, and float32 attention is at least as accurate.

- `sdpa(q, k, v, ...)`: `torch.nn.functional.scaled_dot_product_attention` under that rule
  (`repro.core.models.tiny.TinyDecoder`).
- `hf_sdpa`: the same for transformers models, wrapping transformers' own SDPA attention
  function; registered as ``SDPA = "repro_sdpa"`` in the AttentionInterface and the
  AttentionMaskInterface (`register()`), so `build_model(..., attn_implementation=SDPA)`
  or `model.set_attn_implementation(SDPA)` uses it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from repro.core.attention_kind import SDPA
from repro.ground.runtime import attention_in_float32, autocast_off


def _upcast(query: torch.Tensor) -> bool:
    """Would this attention run below float32 (half-width inputs, or float32 ones under an autocast)?"""
    lowered = query.dtype.itemsize < 4 or (
        query.dtype == torch.float32 and torch.is_autocast_enabled(query.device.type)
    )
    return lowered and attention_in_float32(query.device)


def _f32(mask: torch.Tensor | None) -> torch.Tensor | None:
    return mask.float() if mask is not None and mask.is_floating_point() else mask


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kwargs) -> torch.Tensor:
    """F.scaled_dot_product_attention(q, k, v, **kwargs) in float32 where the rule says so,
    returned in q's dtype; q, k, v: (B, H, T, D)."""
    if not _upcast(q):
        return F.scaled_dot_product_attention(q, k, v, **kwargs)
    if "attn_mask" in kwargs:
        kwargs["attn_mask"] = _f32(kwargs["attn_mask"])
    with autocast_off(q.device):
        out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), **kwargs)
    return out.to(q.dtype)


def hf_sdpa(module, query, key, value, attention_mask, **kwargs):
    """AttentionInterface function: transformers' SDPA attention under the rule above."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if not _upcast(query):
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    if isinstance(kwargs.get("position_bias"), torch.Tensor):  # T5-style additive biases go along
        kwargs["position_bias"] = _f32(kwargs["position_bias"])
    with autocast_off(query.device):
        out, weights = sdpa_attention_forward(
            module, query.float(), key.float(), value.float(), _f32(attention_mask), **kwargs
        )
    return out.to(query.dtype), weights


def register() -> None:
    """Register `hf_sdpa` as SDPA with SDPA's mask function (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(SDPA, hf_sdpa)
    ALL_MASK_ATTENTION_FUNCTIONS.register(SDPA, sdpa_mask)
