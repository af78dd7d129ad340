"""Dark signals (003 §5, §7, App D): how much of a vector lies in the U-dark band, §7's
High-Mean Low-Variance (HMLV) tokens, per-head keys and value–output norms, and token 0's sink
vector across depth. The band itself is `spectral.Filters.dark`: the last 5% of W_u's spectrum.

- eq. (4)–(5): `udr`, `dark_fraction`, `key_dot_products`; §7: `received_attention`, `hmlv`,
  `hmlv_mean_threshold` (τ_μ calibrated to the source's share of pairs), `hmlv_contrast` and
  `matched_random_mask` (its negative control);
- App D: `head_keys`, `value_output_norms`, `value_output_ratios` (token 0's ‖h W_v W_o‖ over
  the median token's, per head) and `value_output_ratio_replicates` (their bootstrap);
- §5, Fig 9: `SinkProfile`, `sink_profile`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from repro.core import lens
from repro.ground.errors import NotApplicable
from repro.ground.runtime import ReproError, generator
from repro.spectral_filters import catalogue

# 003 §7: High-Mean Low-Variance received-attention thresholds (the catalogue's numbers)
HMLV_MEAN, HMLV_VAR = catalogue.number("SF-9", "thresholds")
HMLV_LAST = catalogue.number("SF-9", "skip_last")  # the last tokens of each sequence are ignored (§7)
# The length the HMLV thresholds were set for: ccnet-405's tokens per prompt (§4: 13,268 / 405 =
# 32.8 → 33). A token's mean received attention scales like 1/T (and its variance like 1/T²), so
# the thresholds apply as they stand only to prompts of about this length.
HMLV_PROMPT_LEN = round(catalogue.number("SF-9", "ccnet405")[1] / catalogue.number("SF-9", "ccnet405")[0])
# The share of token-layer pairs the source's thresholds mark HMLV (§7: 12,236 of 404,748 pairs,
# LLaMA-2 13B on ccnet-405, layers 4–39): the quantity `hmlv_mean_threshold` calibrates to.
HMLV_SHARE = catalogue.number("SF-9", "pairs_13b")[0] / catalogue.number("SF-9", "pairs_13b")[1]


# --------------------------------------------------------------------------- dark-signal metrics


def udr(h: torch.Tensor, dark: torch.Tensor) -> torch.Tensor:
    """Eq. (4): U-dark ratio ‖Φ_{u,20}h‖ / ‖(I − Φ_{u,20})h‖ over the last dimension."""
    hd = h.float() @ dark.to(h.device)
    return hd.norm(dim=-1) / (h.float() - hd).norm(dim=-1)


def dark_fraction(h: torch.Tensor, dark: torch.Tensor) -> torch.Tensor:
    """‖Φ h‖ / ‖h‖: the share of a vector's norm in the dark band (1 = entirely dark)."""
    return (h.float() @ dark.to(h.device)).norm(dim=-1) / h.float().norm(dim=-1)


def key_dot_products(keys: torch.Tensor) -> torch.Tensor:
    """Eq. (5) per token: (B, H, T, d_h) keys → (B, T) ⟨h_t W_k^h, h_0 W_k^h⟩ averaged over
    heads. kdp(l) is its mean over tokens (the caller picks which tokens)."""
    return (keys * keys[:, :, :1]).sum(-1).mean(1)


def received_attention(attn: torch.Tensor, skip_last: int = HMLV_LAST) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance of the attention each token s receives from the tokens t > s after it
    (003 §7), from head-averaged maps (B, H, T, T) → two (B, T) tensors; tokens with fewer
    than two followers (the last `skip_last`, which §7 ignores anyway) get NaN."""
    A = attn.float().mean(1)  # (B, T_query, T_key)
    T = A.shape[-1]
    after = torch.tril(torch.ones(T, T, dtype=torch.bool, device=A.device), diagonal=-1)  # query t > key s
    cnt = after.sum(0).float()  # followers per key position
    vals = A * after
    mean = vals.sum(1) / cnt.clamp_min(1)
    var = ((A - mean[:, None, :]) ** 2 * after).sum(1) / (cnt - 1).clamp_min(1)
    bad = cnt < 2
    if skip_last:
        bad = bad | (torch.arange(T, device=A.device) >= T - skip_last)
    mean = mean.masked_fill(bad, float("nan"))
    var = var.masked_fill(bad, float("nan"))
    return mean, var


def hmlv(mean: torch.Tensor, var: torch.Tensor, tau_mean: float = HMLV_MEAN, tau_var: float = HMLV_VAR) -> torch.Tensor:
    """High-Mean Low-Variance mask (003 §7): mean > τ_μ and var < τ_σ (the source's 0.018 and 0.01
    by default); token 0 excluded."""
    mask = (mean > tau_mean) & (var < tau_var)
    mask[..., 0] = False
    return mask


def hmlv_mean_threshold(
    mean: torch.Tensor, var: torch.Tensor, valid: torch.Tensor, share: float = HMLV_SHARE, tau_var: float = HMLV_VAR
) -> float:
    """τ_μ that marks `share` of the `valid` token-layer pairs HMLV (mean > τ_μ, var < τ_var),
    τ_σ kept at the source's. The source chose its thresholds by hand so that HMLV pairs are the
    few "attention bars" of its matrices (§7, footnote 5): 3.0% of LLaMA-2 13B's pairs. A small
    model spreads more attention off token 0, so the same 0.018 marks a large part of its pairs
    (43–48% on the embedded models); calibrating τ_μ to the source's share keeps HMLV what it
    meant, the most-attended few. Any shapes (one entry per pair); ties at τ_μ are left out."""
    v = valid & ~torch.isnan(mean) & ~torch.isnan(var)
    n = int(v.sum())
    k = round(share * n)
    cand = mean[v & (var < tau_var)].flatten().sort(descending=True).values
    if n == 0 or k < 1 or len(cand) <= k:
        raise ReproError(
            f"hmlv_mean_threshold: cannot mark {share:.2%} of {n} pairs HMLV ({len(cand)} have variance < {tau_var})"
        )
    return float(cand[k])


def hmlv_contrast(x: torch.Tensor, mask: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer's contrast between marked tokens and the population, per prompt (003 §7 with
    the prompt, not the token-layer pair, as the independent unit): x (B, T) a per-token
    metric (udr, kdp), `mask` (B, T) the marked tokens (HMLV), `valid` (B, T) the population.
    x is standardised over all valid tokens of the layer (so layers with different scales add
    up); returns per prompt the sum over its marked tokens of (z_t − mean z over the prompt's
    valid tokens), and how many marked tokens it has: two (B,) float64 tensors. Summing both
    over layers and dividing gives each prompt's mean contrast in population standard
    deviations (Cohen's d-like), 0 in expectation for tokens marked at random."""
    if x.shape != mask.shape or x.shape != valid.shape:
        raise ReproError(
            f"hmlv_contrast needs x, mask and valid of one shape, got {tuple(x.shape)}, "
            f"{tuple(mask.shape)}, {tuple(valid.shape)}"
        )
    mask = mask & valid
    z = x.double().masked_fill(~valid, 0.0)
    n = valid.sum()
    if int(n) < 2:
        raise ReproError("hmlv_contrast needs at least two valid tokens")
    mu = z.sum() / n
    sd = torch.sqrt(((z - mu) ** 2 * valid).sum() / (n - 1))
    z = (z - mu) / sd.clamp_min(1e-12)
    per_prompt = (z * valid).sum(1) / valid.sum(1).clamp_min(1)
    count = mask.sum(1).double()
    return ((z - per_prompt[:, None]) * mask).sum(1), count


def matched_random_mask(mask: torch.Tensor, valid: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """A mask with as many tokens per prompt as `mask` (B, T) marks among `valid`, drawn
    uniformly among the prompt's valid tokens: the HMLV selection with attention taken out."""
    k = (mask & valid).sum(1, keepdim=True)
    score = torch.rand(mask.shape, generator=g).to(mask.device).masked_fill(~valid, -1.0)
    rank = score.argsort(dim=1, descending=True).argsort(dim=1)  # 0 = the highest score
    return (rank < k) & valid


# --------------------------------------------------------------------------- per-head reads (§7, App D)


def _kv_heads(attn: nn.Module) -> tuple[int, int, int]:
    """(query heads H, key/value heads H_kv, head size d_h) of a Llama/Gemma attention module."""
    d_h = int(attn.head_dim)
    H = attn.q_proj.out_features // d_h
    H_kv = attn.k_proj.out_features // d_h
    return H, H_kv, d_h


def head_keys(attn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Keys h·W_k^h of normalised inputs x (B, T, d) → (B, H_kv, T, d_h), before the rotary
    embedding (eq. 5 compares h_t W_k with h_0 W_k) and after Gemma's per-head k_norm."""
    if not hasattr(attn, "k_proj"):
        raise NotApplicable(
            f"{type(attn).__name__}: per-head keys need separate q/k/v projections (a fused one, as "
            "GPT-2's c_attn, is not split here)"
        )
    _, H_kv, d_h = _kv_heads(attn)
    k = attn.k_proj(x).view(*x.shape[:-1], H_kv, d_h).transpose(1, 2)
    k_norm = getattr(attn, "k_norm", None)
    return k_norm(k) if k_norm is not None else k


def value_output_norms(attn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """‖x_t W_v^h W_o^h‖ for every head h and token t (003 App D, eq. 6): (B, H, T), from
    normalised inputs x (B, T, d); grouped-query heads share their group's W_v. On Gemma this
    is before the post-attention norm (a per-token scale over all heads together)."""
    if not hasattr(attn, "v_proj"):
        raise NotApplicable(
            f"{type(attn).__name__}: per-head values need separate q/k/v projections (a fused one, "
            "as GPT-2's c_attn, is not split here)"
        )
    H, H_kv, d_h = _kv_heads(attn)
    v = attn.v_proj(x).view(*x.shape[:-1], H_kv, d_h)  # (B, T, H_kv, d_h)
    v = v.repeat_interleave(H // H_kv, dim=2)  # (B, T, H, d_h)
    W_o = attn.o_proj.weight.view(-1, H, d_h)  # (d, H, d_h)
    return torch.einsum("bthe,dhe->bhtd", v, W_o).norm(dim=-1)


def _layer_value_output_norms(model: nn.Module, attn_inputs: list[torch.Tensor], layers: list[int]):
    """Each of `layers`' ‖x_t W_v W_o‖ (B, H, T) from its normalised attention input (no grad)."""
    blocks = lens.arch_map(model).blocks(model)
    with torch.no_grad():
        for layer in layers:
            attn = lens.resolve(blocks[layer], lens.arch_map(model).attn)
            yield value_output_norms(attn, attn_inputs[layer])


def _others(vo: torch.Tensor) -> torch.Tensor:
    """(H, n): every token's norm but token 0's, all prompts pooled, per head."""
    return vo[:, :, 1:].transpose(0, 1).reshape(vo.shape[1], -1)


def value_output_ratios(
    model: nn.Module, attn_inputs: list[torch.Tensor], layers: list[int], positions: tuple[int, ...]
) -> list[np.ndarray]:
    """003 App D, Fig 21: per layer and head, ‖x_p W_v W_o‖ of the token at each of `positions`
    (mean over prompts) over the median of every other token's but token 0's (all prompts
    pooled), from each block's normalised attention input `attn_inputs[layer]` (B, T, d).
    Returns one (len(layers), H) array per position: position 0 is the sink, another position
    its negative control."""
    ratios: list[list[np.ndarray]] = [[] for _ in positions]
    for vo in _layer_value_output_norms(model, attn_inputs, layers):
        others = _others(vo).median(-1).values
        for out, p in zip(ratios, positions):
            out.append((vo[:, :, p].mean(0) / others).cpu().numpy())
    return [np.stack(r) for r in ratios]


def value_output_ratio_replicates(
    model: nn.Module, attn_inputs: list[torch.Tensor], layers: list[int], *, n_boot: int = 200, seed: int = 0
) -> np.ndarray:
    """(n_boot, len(layers), H): token 0's `value_output_ratios` with the other tokens resampled
    with replacement (a bootstrap of the median it divides by, the ratio's one sampled part: token
    0's stream is the same in every prompt)."""
    if n_boot < 2:
        raise ReproError(f"value_output_ratio_replicates needs n_boot ≥ 2 (got {n_boot})")
    g = generator(seed)
    out = []
    for vo in _layer_value_output_norms(model, attn_inputs, layers):
        pool = _others(vo)  # (H, n)
        idx = torch.randint(0, pool.shape[1], (n_boot, pool.shape[1]), generator=g).to(pool.device)
        medians = pool[:, idx].median(-1).values  # (H, n_boot)
        out.append((vo[:, :, 0].mean(0)[:, None] / medians).T.cpu().numpy())  # (n_boot, H)
    return np.stack(out, 1)


# --------------------------------------------------------------------------- token 0's sink vector (§5, Fig 9)


@dataclass
class SinkProfile:
    """Token 0's residual stream across depth (003 Fig 9), from one sample (token 0's stream
    is the same in every sample that starts with the same token).

    norm, dark: (L+1,) norm and U-dark fraction of the stream entering block l (index L: the
    last block's output); mlp_norm/mlp_dark, attn_norm/attn_dark: (L,) the same for each
    block's MLP and attention contributions. `layer` (ℓ*): the block after which token 0's norm
    first reaches half its maximum (where the sink vector appears); `in_place`: the blocks whose
    input carries it (norm ≥ half the maximum), the layers §7 and App D read."""

    norm: torch.Tensor
    dark: torch.Tensor
    mlp_norm: torch.Tensor
    mlp_dark: torch.Tensor
    attn_norm: torch.Tensor
    attn_dark: torch.Tensor
    mlp_sum_norm: torch.Tensor  # (L,) ‖Σ_{i ≤ l} MLP_i‖: what the MLPs wrote up to block l

    @property
    def layer(self) -> int:
        above = (self.norm >= 0.5 * self.norm.max()).nonzero().flatten()
        return max(0, int(above[0]) - 1)  # 0 also when the embedding itself is already large

    @property
    def in_place(self) -> list[int]:
        L = len(self.mlp_norm)
        return [i for i in range(L) if self.norm[i] >= 0.5 * self.norm.max()]


def sink_profile(resid0: torch.Tensor, mlp0: torch.Tensor, attn0: torch.Tensor, dark: torch.Tensor) -> SinkProfile:
    """From token 0's streams: resid0 (L+1, d), block contributions mlp0, attn0 (L, d)."""
    r, m, a = resid0.float().cpu(), mlp0.float().cpu(), attn0.float().cpu()
    return SinkProfile(
        r.norm(dim=-1),
        dark_fraction(r, dark),
        m.norm(dim=-1),
        dark_fraction(m, dark),
        a.norm(dim=-1),
        dark_fraction(a, dark),
        m.cumsum(0).norm(dim=-1),
    )
