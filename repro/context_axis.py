"""The context axis (004, Choi: "Rethinking causal mask: proposing context axis to decoder
attention") — first part: Algorithm 1, single-layer attention kernels, and the exact per-prefix
oracle for whole models.

Semantics (004 §2.1–2.3). Every token has one state per context slice c = 0 … S−1. In slice c a
query at position i may attend key j iff j ≤ max(i, c) (Algorithm 1: masked iff j > i and
j > c). Restricted to positions ≤ c, slice c is therefore a *bidirectional* pass over x[0..c]
through every layer, and positions > c of slice c never influence positions ≤ c. The diagonal
read-out h_{t,t} (Fig 2) thus equals the last position of a bidirectional pass over x[0..t]:
`prefix_oracle` computes exactly that, for any HF model, through transformers'
AttentionInterface (no new parameters: CA-4). Positions > c of slice c (the strictly upper
triangle of Fig 3, i < j in the figure's (context i, time j) indexing) never reach the diagonal.

Kernels (one signature): q, k, v of shape (B, H, C, S, d) — per-slice states, C = S slices —
return (B, H, C, S, d). `naive` is the literal 5-D mask and softmax (reference, S ≤ 256);
`masked_sdpa` passes the (S, S, S) mask to scaled_dot_product_attention (the source's
formulation); `trimmed` computes each slice over its prefix only (positions ≤ c, no mask) and
leaves the upper triangle zero. `diagonal` reads h_{t,t}.

`segment_reuse` is Fig 4's state reuse as a reference (it still stores S² states). Left for
the next part of issue 9: memory-saving segment(k) kernels and a segment model mode,
stochastic axis drop, the claims file CA-1 … CA-8 and the benchmarks.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from repro.runtime import ReproError

KERNELS = ("naive", "masked_sdpa", "trimmed")
NAIVE_MAX_S = 256  # the literal (B, H, S, S, S) score tensor: 4·H·S³ bytes per sample


def algorithm1_mask(x: torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
    """004 Algorithm 1, line by line: M ∈ {0,1}^{B×1×S×S×S}, 1 = masked, M[b,0,c,i,j] = 1 iff
    j > max(i, c) or x[b, j] is padding."""
    if x.dim() != 2:
        raise ReproError(f"Algorithm 1 takes token ids (B, S), got shape {tuple(x.shape)}")
    B, S = x.shape
    # 2: padding mask P (B, 1, 1, S)
    P = (x == pad_id) if pad_id is not None else torch.zeros_like(x, dtype=torch.bool)
    P = P[:, None, None, :].to(torch.uint8)
    # 3: causal mask C[i, j] = 1 iff j > i; 4: context mask T, the same
    C = torch.triu(torch.ones(S, S, dtype=torch.uint8, device=x.device), diagonal=1)
    T = C.clone()
    # 5: align shapes C[None, :, :], T[:, None, :]
    C, T = C[None, :, :], T[:, None, :]
    # 6: elementwise product (S, S, S); 7: batch axis
    M1 = C * T
    M2 = M1[None, :, :, :]
    # 8: combine with the padding mask; 9: the head axis
    M = torch.maximum(M2, P)
    return M[:, None].bool()


def allowed(S: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(S, S, S) bool: slice c, query i may attend key j (j ≤ max(i, c))."""
    c = torch.arange(S, device=device)
    return c[None, None, :] <= torch.maximum(c[:, None, None], c[None, :, None])


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    if q.dim() != 5 or q.shape != k.shape or q.shape[:-1] != v.shape[:-1] or q.shape[2] != q.shape[3]:
        raise ReproError("context-axis kernels take q, k, v of shape (B, H, C, S, d) with C = S slices; got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")


def naive(q, k, v, pad: torch.Tensor | None = None) -> torch.Tensor:
    """The literal formulation: (B, H, S, S, S) scores, Algorithm 1's mask, softmax, @ v.
    `pad` (B, S) bool marks padding keys."""
    _check(q, k, v)
    S = q.shape[3]
    if S > NAIVE_MAX_S:
        raise ReproError(f"naive context-axis attention is a reference for S ≤ {NAIVE_MAX_S} (got {S}): "
                         f"its score tensor alone is {4 * q.shape[0] * q.shape[1] * S ** 3 / 2 ** 30:.1f} GiB")
    masked = ~allowed(S, q.device)[None, None]  # (1, 1, S, S, S)
    if pad is not None:
        masked = masked | pad[:, None, None, None, :]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(masked, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def masked_sdpa(q, k, v, pad: torch.Tensor | None = None) -> torch.Tensor:
    """The source's formulation through scaled_dot_product_attention: the (S, S, S) boolean mask
    broadcast over batch and heads (SDPA converts it to a float copy on every call; NOTES)."""
    _check(q, k, v)
    mask = allowed(q.shape[3], q.device)[None, None]
    if pad is not None:
        mask = mask & ~pad[:, None, None, None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def trimmed(q, k, v, pad: torch.Tensor | None = None) -> torch.Tensor:
    """Each slice c over its prefix 0 … c only, bidirectionally (no mask needed): exactly the
    entries that can reach the diagonal; positions > c are left zero (004 Fig 3)."""
    _check(q, k, v)
    out = q.new_zeros(*q.shape[:-1], v.shape[-1])
    S = q.shape[3]
    for c in range(S):
        m = None if pad is None else ~pad[:, None, None, :c + 1]
        out[:, :, c, :c + 1] = F.scaled_dot_product_attention(
            q[:, :, c, :c + 1], k[:, :, c, :c + 1], v[:, :, c, :c + 1], attn_mask=m)
    return out


def attend(q, k, v, kernel: str = "trimmed", pad: torch.Tensor | None = None) -> torch.Tensor:
    """Dispatch by name (KERNELS)."""
    fns = {"naive": naive, "masked_sdpa": masked_sdpa, "trimmed": trimmed}
    if kernel not in fns:
        raise ReproError(f"unknown context-axis kernel {kernel!r}: {', '.join(KERNELS)}")
    return fns[kernel](q, k, v, pad)


def diagonal(h: torch.Tensor) -> torch.Tensor:
    """h_{t,t} (004 Fig 2): (…, C, S, d) → (…, S, d)."""
    return torch.diagonal(h, dim1=-3, dim2=-2).movedim(-1, -2)


def upper_zeroed(h: torch.Tensor) -> torch.Tensor:
    """004 Fig 3: the strictly-upper part (positions t > c of slice c) set to zero."""
    S = h.shape[-2]
    keep = torch.tril(torch.ones(S, S, dtype=torch.bool, device=h.device))  # [c, t]: t ≤ c
    return h * keep[..., None]


def segment_reuse(h: torch.Tensor, k: int) -> torch.Tensor:
    """004 §2.3, Fig 4: with segment size k, token t is computed only in slices t … t+k−1;
    deeper slices c ≥ t+k reuse h_{t+k−1, t}. Applied to per-slice states (…, C, S, d) between
    layers. k = 1 leaves only diagonal states (exactly causal attention); k ≥ S changes nothing
    (the full axis). A reference formulation: it still stores all S² states."""
    if k < 1:
        raise ReproError(f"segment size must be ≥ 1, got {k}")
    S = h.shape[-2]
    if k >= S:
        return h
    c = torch.arange(S, device=h.device)[:, None]
    t = torch.arange(S, device=h.device)[None, :]
    src = torch.where(c >= t + k, t + k - 1, c)  # (C, S): which slice's state slot (c, t) holds
    return torch.gather(h, -3, src[..., None].expand(h.shape))


# --------------------------------------------------------------------------- whole models


def _bidirectional_sdpa(module: nn.Module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """An AttentionInterface function: scaled-dot-product attention with no mask at all (every
    position sees every other), for the prefix oracle. Grouped-query heads are expanded."""
    if key.shape[1] != query.shape[1]:
        rep = query.shape[1] // key.shape[1]
        key, value = key.repeat_interleave(rep, dim=1), value.repeat_interleave(rep, dim=1)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                         scale=scaling)
    return out.transpose(1, 2).contiguous(), None


_REGISTERED = "repro_bidirectional"


@contextlib.contextmanager
def bidirectional(model: nn.Module) -> Iterator[nn.Module]:
    """Run an HF model with every attention layer unmasked (its own weights, no new parameters),
    restoring its attention implementation afterwards."""
    from transformers import AttentionInterface

    AttentionInterface.register(_REGISTERED, _bidirectional_sdpa)
    before = model.config._attn_implementation
    model.set_attn_implementation(_REGISTERED)
    try:
        yield model
    finally:
        model.set_attn_implementation(before)


@torch.no_grad()
def prefix_oracle(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Diagonal logits of the full context axis for an HF causal LM: position t's logits are the
    last position's of a bidirectional pass over ids[:, :t+1] (see the module docstring).
    ids (B, S) → logits (B, S, V). Cost: S forward passes of lengths 1 … S."""
    B, S = ids.shape
    out = []
    with bidirectional(model):
        for t in range(S):
            out.append(model(input_ids=ids[:, :t + 1], logits_to_keep=1).logits[:, -1])
    return torch.stack(out, dim=1)
