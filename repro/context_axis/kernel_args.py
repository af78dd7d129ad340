"""The arguments every context-axis kernel takes (004 §2.1's states): q, k, v of shape
(B, H, C, S, d) with C = S slices, and `out` "full" or "diagonal".

Checked here for both kernel modules — `kernels` (the single-layer kernels and `attend`, which
dispatches to `gpu_kernels` too) and `gpu_kernels` (the one-launch GPU kernels) — so that
neither imports the other for it.
"""

from __future__ import annotations

import torch

from repro.ground.runtime import ReproError


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    if q.dim() != 5 or q.shape != k.shape or q.shape[:-1] != v.shape[:-1] or q.shape[2] != q.shape[3]:
        raise ReproError(
            "context-axis kernels take q, k, v of shape (B, H, C, S, d) with C = S slices; got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )


def check_out(out: str) -> None:
    if out not in ("full", "diagonal"):
        raise ReproError(f"context-axis kernels return out='full' or 'diagonal', not {out!r}")
