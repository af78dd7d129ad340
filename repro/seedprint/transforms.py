"""Function-preserving changes to a transformer's weights: the model computes the
same logits, yet the weights — and the hidden states a fingerprint reads — change.

The residual stream has no preferred basis. These transformations rewrite a model in place:

- `permute_residual(model, perm)`: relabel the d residual dimensions everywhere — the token
  (and position) embeddings, every weight that reads the stream (its input axis), every weight
  that writes it (its output axis, and its bias), every norm's gain and bias over d. LayerNorm
  and RMSNorm are invariant to a permutation of their axis, so the logits do not change, but a
  hidden state's dimension i now sits at perm⁻¹(i).
- `permute_mlp_hidden(model, layer, perm)`: reorder one block's MLP hidden units (the up/gate
  rows and the down columns, with biases).
- `permute_heads(model, layer, perm)`: reorder one block's key-value groups together with their
  query heads (the q/k/v output rows and the output projection's input columns, by head blocks).
- `scale_into_norm(model, layer, scales)`: multiply the gain (and bias) of the norm in front of
  a block's attention by per-dimension `scales` and divide the columns of the q/k/v projections
  that read it by the same scales: the product is unchanged, the norm's output is not.

Architectures: Llama (SmolLM2), Gemma 3 (its norms' gain is 1 + w) and GPT-NeoX (rope-gpt2),
by their transformers module names, and GPT-2 (whose Conv1D stores weights input-first). Tied
embeddings are permuted once. Each function is tested to preserve the logits to float tolerance
(tests/test_transforms.py).
"""

from __future__ import annotations

import torch
from torch import nn

from repro.ground.runtime import ReproError

# (suffix of a parameter name, axis of d_model that reads or writes the stream), per family;
# GPT-2's Conv1D weights are (in, out)
_RESIDUAL_AXES: dict[str, list[tuple[str, int]]] = {
    "llama": [
        ("embed_tokens.weight", 1),
        ("lm_head.weight", 1),
        ("q_proj.weight", 1),
        ("k_proj.weight", 1),
        ("v_proj.weight", 1),
        ("o_proj.weight", 0),
        ("gate_proj.weight", 1),
        ("up_proj.weight", 1),
        ("down_proj.weight", 0),
        ("layernorm.weight", 0),
        ("norm.weight", 0),
    ],
    "gpt2": [
        ("wte.weight", 1),
        ("wpe.weight", 1),
        ("lm_head.weight", 1),
        ("c_attn.weight", 0),
        ("attn.c_proj.weight", 1),
        ("attn.c_proj.bias", 0),
        ("c_fc.weight", 0),
        ("mlp.c_proj.weight", 1),
        ("mlp.c_proj.bias", 0),
        ("ln_1.weight", 0),
        ("ln_1.bias", 0),
        ("ln_2.weight", 0),
        ("ln_2.bias", 0),
        ("ln_f.weight", 0),
        ("ln_f.bias", 0),
    ],
    "gpt_neox": [
        ("embed_in.weight", 1),
        ("embed_out.weight", 1),
        ("query_key_value.weight", 1),
        ("attention.dense.weight", 0),
        ("attention.dense.bias", 0),
        ("dense_h_to_4h.weight", 1),
        ("dense_4h_to_h.weight", 0),
        ("dense_4h_to_h.bias", 0),
        ("layernorm.weight", 0),
        ("layernorm.bias", 0),
        ("layer_norm.weight", 0),
        ("layer_norm.bias", 0),
    ],
}
_FAMILY = {
    "llama": "llama",
    "gemma3_text": "llama",
    "gemma3": "llama",
    "gemma": "llama",
    "gemma2": "llama",
    "qwen2": "llama",
    "mistral": "llama",
    "gpt2": "gpt2",
    "gpt_neox": "gpt_neox",
}


def family(model: nn.Module) -> str:
    mt = getattr(getattr(model, "config", None), "model_type", None)
    if mt not in _FAMILY:
        raise ReproError(f"function-preserving transforms know {sorted(_FAMILY)}, not model_type {mt!r}")
    return _FAMILY[mt]


def _d(model: nn.Module) -> int:
    c = model.config
    return int(getattr(c, "hidden_size", None) or c.n_embd)


def _check_perm(perm: torch.Tensor, n: int, what: str) -> torch.Tensor:
    perm = torch.as_tensor(perm, dtype=torch.long)
    if perm.shape != (n,) or not torch.equal(perm.sort().values, torch.arange(n)):
        raise ReproError(f"{what}: a permutation of {n} indices is needed, got shape {tuple(perm.shape)}")
    return perm


def _is_gemma(model: nn.Module) -> bool:
    return str(getattr(model.config, "model_type", "")).startswith("gemma")


@torch.no_grad()
def permute_residual(model: nn.Module, perm: torch.Tensor) -> nn.Module:
    """Relabel the residual stream's dimensions: new dimension j holds old dimension perm[j]."""
    fam, d = family(model), _d(model)
    perm = _check_perm(perm, d, "permute_residual")
    rules = _RESIDUAL_AXES[fam]
    seen: set[int] = set()
    for name, p in model.named_parameters(remove_duplicate=False):
        if p.data_ptr() in seen:
            continue
        axes = [ax for suffix, ax in rules if name.endswith(suffix)]
        if fam == "llama" and (name.endswith("q_norm.weight") or name.endswith("k_norm.weight")):
            continue  # Gemma 3's per-head norms act on head_dim, not on the stream
        if not axes:
            continue
        ax = axes[0]
        if p.shape[ax] != d:
            raise ReproError(f"permute_residual: {name} has {p.shape[ax]} ≠ d = {d} along axis {ax}")
        p.copy_(p.index_select(ax, perm.to(p.device)))
        seen.add(p.data_ptr())
    return model


def _block(model: nn.Module, layer: int) -> nn.Module:
    fam = family(model)
    blocks = {
        "llama": lambda m: m.model.layers,
        "gpt2": lambda m: m.transformer.h,
        "gpt_neox": lambda m: m.gpt_neox.layers,
    }[fam](model)
    if not 0 <= layer < len(blocks):
        raise ReproError(f"layer {layer} out of range: the model has {len(blocks)} blocks")
    return blocks[layer]


@torch.no_grad()
def permute_mlp_hidden(model: nn.Module, layer: int, perm: torch.Tensor) -> nn.Module:
    """Reorder block `layer`'s MLP hidden units."""
    fam, b = family(model), _block(model, layer)
    if fam == "llama":
        up, gate, down = b.mlp.up_proj, b.mlp.gate_proj, b.mlp.down_proj
        perm = _check_perm(perm, up.weight.shape[0], "permute_mlp_hidden")
        for lin in (up, gate):
            lin.weight.copy_(lin.weight[perm])
            if lin.bias is not None:
                lin.bias.copy_(lin.bias[perm])
        down.weight.copy_(down.weight[:, perm])
    elif fam == "gpt2":
        fc, proj = b.mlp.c_fc, b.mlp.c_proj  # Conv1D: (in, out)
        perm = _check_perm(perm, fc.weight.shape[1], "permute_mlp_hidden")
        fc.weight.copy_(fc.weight[:, perm])
        fc.bias.copy_(fc.bias[perm])
        proj.weight.copy_(proj.weight[perm])
    else:
        up, down = b.mlp.dense_h_to_4h, b.mlp.dense_4h_to_h
        perm = _check_perm(perm, up.weight.shape[0], "permute_mlp_hidden")
        up.weight.copy_(up.weight[perm])
        up.bias.copy_(up.bias[perm])
        down.weight.copy_(down.weight[:, perm])
    return model


def _head_rows(perm: torch.Tensor, hd: int) -> torch.Tensor:
    return (perm[:, None] * hd + torch.arange(hd)[None, :]).reshape(-1)


@torch.no_grad()
def permute_heads(model: nn.Module, layer: int, perm: torch.Tensor) -> nn.Module:
    """Reorder block `layer`'s key-value groups, each with its query heads (with one key-value
    group per head — no grouped-query attention — this reorders the heads)."""
    fam, b, c = family(model), _block(model, layer), model.config
    H = int(getattr(c, "num_attention_heads", None) or c.n_head)
    hd = int(getattr(c, "head_dim", None) or _d(model) // H)
    if fam == "llama":
        G = int(getattr(c, "num_key_value_heads", None) or H)
        perm = _check_perm(perm, G, "permute_heads (key-value groups)")
        per = H // G
        q_heads = (perm[:, None] * per + torch.arange(per)[None, :]).reshape(-1)
        a = b.self_attn
        a.q_proj.weight.copy_(a.q_proj.weight[_head_rows(q_heads, hd)])
        for lin in (a.k_proj, a.v_proj):
            lin.weight.copy_(lin.weight[_head_rows(perm, hd)])
        for lin in (a.q_proj, a.k_proj, a.v_proj):
            if lin.bias is not None:
                raise ReproError("permute_heads: q/k/v biases are not handled")
        a.o_proj.weight.copy_(a.o_proj.weight[:, _head_rows(q_heads, hd)])
        return model
    perm = _check_perm(perm, H, "permute_heads")
    rows = _head_rows(perm, hd)
    d = _d(model)
    if fam == "gpt2":
        a = b.attn  # c_attn: (d, 3d) = [q | k | v], each H heads of hd
        cols = torch.cat([rows + i * d for i in range(3)])
        a.c_attn.weight.copy_(a.c_attn.weight[:, cols])
        a.c_attn.bias.copy_(a.c_attn.bias[cols])
        a.c_proj.weight.copy_(a.c_proj.weight[rows])
        return model
    a = b.attention  # query_key_value: (3d, d), per head [q_h | k_h | v_h]
    qkv = (perm[:, None] * 3 * hd + torch.arange(3 * hd)[None, :]).reshape(-1)
    a.query_key_value.weight.copy_(a.query_key_value.weight[qkv])
    a.query_key_value.bias.copy_(a.query_key_value.bias[qkv])
    a.dense.weight.copy_(a.dense.weight[:, rows])
    return model


@torch.no_grad()
def scale_into_norm(model: nn.Module, layer: int, scales: torch.Tensor) -> nn.Module:
    """Fold per-dimension `scales` (d,) into the norm in front of block `layer`'s attention and
    out of the q/k/v projections that read it."""
    fam, b, d = family(model), _block(model, layer), _d(model)
    s = torch.as_tensor(scales, dtype=torch.float32)
    if s.shape != (d,) or not bool((s > 0).all()):
        raise ReproError(f"scale_into_norm: {d} positive scales are needed")
    if fam == "llama":
        norm, readers = b.input_layernorm, [b.self_attn.q_proj, b.self_attn.k_proj, b.self_attn.v_proj]
    elif fam == "gpt2":
        norm, readers = b.ln_1, [b.attn.c_attn]
    else:
        norm, readers = b.input_layernorm, [b.attention.query_key_value]
    s = s.to(norm.weight.device, norm.weight.dtype)
    if fam == "llama" and _is_gemma(model):
        norm.weight.copy_((1.0 + norm.weight) * s - 1.0)  # Gemma's RMSNorm multiplies by (1 + w)
    else:
        norm.weight.mul_(s)
        if getattr(norm, "bias", None) is not None:
            norm.bias.mul_(s)
    for lin in readers:
        if fam == "gpt2":
            lin.weight.div_(s[:, None])  # Conv1D (in, out)
        else:
            lin.weight.div_(s[None, :])
    return model
