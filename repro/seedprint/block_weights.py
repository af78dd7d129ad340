"""Each block's attention and MLP weights, read the same way across model families, for the
weight-based fingerprints of `fingerprint_baselines` (001 App B.3.2: Intrinsic, ICS).

Families: Llama-like (`q/k/v/o_proj`, `gate/up/down_proj`: Llama, Mistral, Qwen, Gemma 1–3,
SmolLM2), GPT-2 (fused Conv1D `c_attn` of shape (d, 3d), split in thirds) and GPT-NeoX
(`query_key_value` rows per head [q | k | v], as GPTNeoXAttention views them). Every matrix in
nn.Linear layout (out_features, in_features), of the model's own dtype and device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from repro.core.lens import arch_map, resolve
from repro.ground.runtime import ReproError


@dataclass(frozen=True)
class BlockWeights:
    """One block's projections in nn.Linear layout (out_features, in_features), as views of
    the model's weights where the layout allows (never written to)."""

    q: torch.Tensor  # (H·hd, d)
    k: torch.Tensor  # (H_kv·hd, d)
    v: torch.Tensor  # (H_kv·hd, d)
    o: torch.Tensor  # (d, H·hd)
    up: torch.Tensor  # (d_ff, d)
    down: torch.Tensor  # (d, d_ff)
    gate: torch.Tensor | None  # (d_ff, d) for gated MLPs
    n_heads: int
    n_kv_heads: int
    head_dim: int


def _text_config(model: nn.Module) -> Any:
    cfg = getattr(model, "config", None)
    if cfg is not None and hasattr(cfg, "get_text_config"):
        return cfg.get_text_config()
    return cfg


def _n_heads(model: nn.Module) -> int:
    cfg = _text_config(model)
    for attr in ("num_attention_heads", "n_head"):
        h = getattr(cfg, attr, None)
        if h:
            return int(h)
    raise ReproError(f"{type(model).__name__}: its config names no number of attention heads")


def _heads(q: torch.Tensor, k: torch.Tensor, n_heads: int, what: str) -> tuple[int, int]:
    if q.shape[0] % n_heads:
        raise ReproError(f"{what}: W_Q has {q.shape[0]} rows, not a multiple of {n_heads} heads")
    head_dim = q.shape[0] // n_heads
    if k.shape[0] % head_dim or n_heads % (k.shape[0] // head_dim):
        raise ReproError(
            f"{what}: W_K's {k.shape[0]} rows are not a whole number of key/value "
            f"heads of size {head_dim} dividing {n_heads} query heads"
        )
    return head_dim, k.shape[0] // head_dim


def block_weights(model: nn.Module) -> list[BlockWeights]:
    """Per block, W_Q/W_K/W_V/W_O and the MLP matrices in nn.Linear layout (see BlockWeights).

    GPT-2's Conv1D weights are (in, out) and are transposed; its fused `c_attn` (d, 3d) is split
    into thirds; GPT-NeoX's `query_key_value` (3d, d) holds, per head, q, k, v rows in turn."""
    amap = arch_map(model)
    n_heads = _n_heads(model)
    out: list[BlockWeights] = []
    for i, block in enumerate(amap.blocks(model)):
        what = f"{type(model).__name__} block {i}"
        gate = None
        if amap.family == "gpt2":
            w = block.attn.c_attn.weight  # (d, 3d): x @ w
            d = w.shape[0]
            q, k, v = (w[:, j * d : (j + 1) * d].T for j in range(3))
            o = block.attn.c_proj.weight.T
            up, down = block.mlp.c_fc.weight.T, block.mlp.c_proj.weight.T
        elif amap.family == "gpt_neox":
            w = block.attention.query_key_value.weight  # (3·H·hs, d)
            d = w.shape[1]
            if w.shape[0] % (3 * n_heads):
                raise ReproError(f"{what}: query_key_value has {w.shape[0]} rows, not 3·{n_heads}·head_size")
            hs = w.shape[0] // (3 * n_heads)
            per_head = w.view(n_heads, 3, hs, d)
            q, k, v = (per_head[:, j].reshape(n_heads * hs, d) for j in range(3))
            o = block.attention.dense.weight
            up, down = block.mlp.dense_h_to_4h.weight, block.mlp.dense_4h_to_h.weight
        else:
            attn = resolve(block, amap.attn) if amap.attn else None
            mlp = resolve(block, amap.mlp) if amap.mlp else None
            names = ("q_proj", "k_proj", "v_proj", "o_proj")
            if (
                attn is None
                or mlp is None
                or not all(hasattr(attn, n) for n in names)
                or not (hasattr(mlp, "up_proj") and hasattr(mlp, "down_proj"))
            ):
                raise ReproError(
                    f"{what}: weight-based fingerprints need q/k/v/o_proj and up/down_proj "
                    f"(Llama-like), GPT-2 or GPT-NeoX blocks; family {amap.family!r} has neither"
                )
            q, k, v, o = (getattr(attn, n).weight for n in names)
            up, down = mlp.up_proj.weight, mlp.down_proj.weight
            gate = mlp.gate_proj.weight if hasattr(mlp, "gate_proj") else None
        head_dim, n_kv = _heads(q, k, n_heads, what)
        out.append(
            BlockWeights(
                q.detach(),
                k.detach(),
                v.detach(),
                o.detach(),
                up.detach(),
                down.detach(),
                None if gate is None else gate.detach(),
                n_heads,
                n_kv,
                head_dim,
            )
        )
    if not out:
        raise ReproError(f"{type(model).__name__} has no blocks")
    return out
