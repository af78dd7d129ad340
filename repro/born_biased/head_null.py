"""The head's own null of 001 §3's preference test (App B.2): each token's argmax rate when the
final states are independent isotropic vectors, and the distribution of the top count of N
predictions under those rates — App B.2's Bonferroni p with each token's own rate, its quantiles,
expectation, critical count and the power of the top-count test at a favourite's rate.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import scipy.special
import scipy.stats

# The null of 001 App B.2 is exact uniformity over the vocabulary. A model whose blocks contract
# nothing is not uniform: its final states are independent isotropic vectors, and a token whose
# head row is longer wins the argmax more often. `gaussian_argmax_rates` gives each token's win
# probability under that null from the head alone (probe.head_logit_scales), treating the logits
# as independent Gaussians with those scales (the rows of a random head are nearly orthogonal).
# Checked against the real thing — 20,000 isotropic states through the ci heads (d = 768,
# |V| = 50,257; ≈ 70 s, so not in the claims run): the tokens drawn have mean formula rate
# 1.196/|V| (RoPE GPT-2) and 1.186/|V| (LLaMA), where the formula predicts Σq² = 1.195/|V| and
# 1.192/|V|; their collision rates are 1.17× and 1.18× uniform's. `null_top_log10_p` is App B.2's
# Bonferroni formula with each token's own null rate in place of 1/|V| (it *is* App B.2's
# formula for uniform rates).


def gaussian_argmax_rates(scales, *, n_grid: int = 2001, n_points: int = 257) -> np.ndarray:
    """P(v = argmax_u z_u) for independent z_u ~ N(0, scales_u²), by quadrature:
    q_v = ∫ φ(y/σ_v)/σ_v · Π_{u≠v} Φ(y/σ_u) dy. The product runs over a fine histogram of the
    scales, q is evaluated on a grid of scales and interpolated (q depends on σ_v alone), then
    renormalised to sum to 1. Equal scales give exactly 1/V."""
    s = np.asarray(scales, dtype=float).reshape(-1)
    if s.size == 0 or not np.all(np.isfinite(s)) or s.min() <= 0:
        raise ValueError("gaussian_argmax_rates needs positive, finite scales")
    # models that share a head (001 footnote 2: the embedding and head are fixed across seeds)
    # share its rates: computed once
    key = (hashlib.sha1(s.tobytes()).hexdigest(), n_grid, n_points)
    if key not in _RATES_CACHE:
        if len(_RATES_CACHE) >= 8:
            _RATES_CACHE.pop(next(iter(_RATES_CACHE)))
        _RATES_CACHE[key] = _gaussian_argmax_rates(s, n_grid, n_points)
    return _RATES_CACHE[key].copy()


_RATES_CACHE: dict[tuple, np.ndarray] = {}


def _gaussian_argmax_rates(s: np.ndarray, n_grid: int, n_points: int) -> np.ndarray:
    V = s.size
    s = s / s.mean()
    if s.max() - s.min() < 1e-12:
        return np.full(V, 1.0 / V)
    edges = np.linspace(s.min(), s.max(), min(1024, V) + 1)
    which = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, len(edges) - 2)
    counts = np.bincount(which, minlength=len(edges) - 1)
    keep = counts > 0
    centers = np.bincount(which, weights=s, minlength=len(edges) - 1)[keep] / counts[keep]  # each bin's mean scale
    counts = counts[keep]
    y = np.linspace(-9.0 * s.max(), 9.0 * s.max(), n_grid)
    log_f = np.zeros_like(y)
    for chunk in np.array_split(np.arange(len(centers)), max(1, len(centers) // 256)):
        log_f += (counts[chunk, None] * scipy.stats.norm.logcdf(y[None, :] / centers[chunk, None])).sum(0)
    t = np.linspace(s.min(), s.max(), n_points)
    z = y[None, :] / t[:, None]
    integrand = scipy.stats.norm.pdf(z) / t[:, None] * np.exp(log_f[None, :] - scipy.stats.norm.logcdf(z))
    q_t = np.trapezoid(integrand, y, axis=1)
    q = np.interp(s, t, q_t)
    return q / q.sum()


_LN10 = math.log(10.0)


def null_top_log10_p(k: int, n: int, rates) -> float:
    """log10 of min(1, Σ_v P[Bin(n, q_v) ≥ k]): 001 App B.2's Bonferroni p of a top count k among
    n predictions, with token v's null rate q_v (`rates`) instead of 1/|V|. Deep tails are summed
    in log space, so it does not underflow."""
    k, n = int(k), int(n)
    q = np.asarray(rates, dtype=float).reshape(-1)
    if k <= 0:
        return 0.0
    if k > n:
        return -math.inf
    q = q[q > 0]
    sf = scipy.stats.binom.sf(k - 1, n, q)
    deep = sf < 1e-280
    logs = [np.log(sf[~deep])] if (~deep).any() else []
    if deep.any():
        j = k + np.arange(64)
        j = j[j <= n]
        logs.append(scipy.special.logsumexp(scipy.stats.binom.logpmf(j[None, :], n, q[deep, None]), axis=1))
    total = scipy.special.logsumexp(np.concatenate(logs)) / _LN10
    return float(min(0.0, total))


def null_top_count_cdf(k: int, n: int, rates) -> float:
    """P[top count ≤ k] under the null rates, treating token counts as independent
    (Poissonisation; multinomial counts are slightly negatively associated)."""
    q = np.asarray(rates, dtype=float).reshape(-1)
    return float(np.exp(scipy.stats.binom.logcdf(int(k), int(n), q).sum()))


def null_top_count_quantile(n: int, rates, level: float) -> int:
    """The smallest k with P[top count ≤ k] ≥ level under the null rates."""
    k = 0
    while null_top_count_cdf(k, n, rates) < level:
        k += 1
    return k


def expected_top_count(n: int, rates) -> float:
    """E[top count] of n draws from the null rates: Σ_k P[top > k] (Poissonised, as above).
    With uniform rates this is 001 Fig 1a's random baseline for the rank-1 bar."""
    total, k = 0.0, 0
    while True:
        tail = 1.0 - null_top_count_cdf(k, n, rates)
        if tail < 1e-12:
            return total
        total += tail
        k += 1


def critical_top_count(n: int, rates, log10_alpha: float) -> int:
    """The smallest top count whose `null_top_log10_p` is ≤ log10_alpha (n + 1 if none is)."""
    q_max = float(np.max(rates))
    lo, hi = 1, min(n + 1, int(4 * n * q_max) + 32)  # a start above the null's reach; doubled if not
    while hi <= n and null_top_log10_p(hi, n, rates) > log10_alpha:
        lo, hi = hi, min(n + 1, 2 * hi)
    while lo < hi:  # null_top_log10_p falls with k
        mid = (lo + hi) // 2
        if null_top_log10_p(mid, n, rates) <= log10_alpha:
            hi = mid
        else:
            lo = mid + 1
    return lo


def top_count_power(n: int, rates, p1: float, log10_alpha: float) -> float:
    """P[the top count reaches the critical count] when one token has rate p1 (the source's
    favourite) and the others follow the null rates: 1 − P[Bin(n, p1) < k*]·P[null top < k*]."""
    k = critical_top_count(n, rates, log10_alpha)
    if k > n:
        return 0.0
    miss = scipy.stats.binom.cdf(k - 1, n, p1) * null_top_count_cdf(k - 1, n, rates)
    return float(1.0 - miss)
