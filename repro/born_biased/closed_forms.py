"""001 ("Transformers Are Born Biased") App A in closed form: the arc-cosine map of a ReLU layer
and Prop 2's recurrence (App A.1), Attn0∘MLP0 of Prop 4 (App A.2), Prop 5's intra-sequence limit
and its approximation (App A.3), and Prop 5 at finite T by exact enumeration of the causal running
mean, extrapolated to T → ∞ (`prop5_depths`, what BB-5's every-depth test compares).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def arccos_map(rho: float) -> float:
    """One ReLU layer's correlation map (App A.1, Eq 3): ρ ↦ (√(1−ρ²) + (π − arccos ρ)·ρ)/π."""
    rho = min(max(rho, -1.0), 1.0)
    return (math.sqrt(1.0 - rho * rho) + (math.pi - math.acos(rho)) * rho) / math.pi


def relu_recurrence(n_layer: int, rho0: float = 0.0) -> list[float]:
    """ρ̄_1 … ρ̄_L of Prop 2 for stacked ReLU MLP0 blocks from independent inputs (ρ̄_0 = 0)."""
    out, rho = [], rho0
    for _ in range(n_layer):
        rho = arccos_map(rho)
        out.append(rho)
    return out


def attn0_after_mlp0(T: int, rho1: float = 1 / math.pi) -> float:
    """Prop 4, Case II (App A.2): Attn0∘MLP0 inter-sequence similarity T·ρ₁/(T·ρ₁ + 1 − ρ₁) = T/(T+π−1)."""
    return T * rho1 / (T * rho1 + 1.0 - rho1)


def prop5_limit(L: int) -> float:
    """Prop 5 closed form (App A.3): ρ̄′(L) = (L−2)!/(2L−4)! Σ_{k=0}^{L−2} (L−2+k)!/k! (2/3)^{L−1−k}.

    The source derives it for N = L−1 applications of the running mean; NOTES.md measured that it
    matches Monte Carlo of L−1 uniform causal averagings (the "L" counts the input as a layer).
    """
    if L < 2:
        raise ValueError("Prop 5's closed form needs L ≥ 2")
    n = L - 2
    pre = math.factorial(n) / math.factorial(2 * n)
    return pre * sum(math.factorial(n + k) / math.factorial(k) * (2 / 3) ** (L - 1 - k) for k in range(n + 1))


def prop5_approx(T: int, L: int) -> float:
    """Prop 5's approximation E ρ̄′(T, L) ≈ 1 − (1 − 1/T)/L², stated accurate for L ≥ 3."""
    return 1.0 - (1.0 - 1.0 / T) / L**2


# --------------------------------------------------------------------------- Prop 5 at finite T (App A.3)


def attn0_exact(T: int, n_avg: int) -> tuple[float, float]:
    """Exact infinite-width intra-sequence similarity after `n_avg` causal running means (Attn0,
    Definition 3) of i.i.d. isotropic inputs at finite T, by enumerating the T×T covariance:
    with M the averaging matrix (M_ij = 1/i, j ≤ i), Σ = Mᵏ Mᵏᵀ and ρ_ij = Σ_ij / √(Σ_ii Σ_jj).
    Returns (mean over pairs i ≠ j, mean over all T² pairs as in A.3's ρ̄′(T, L))."""
    if T < 2 or n_avg < 0:
        raise ValueError(f"attn0_exact needs T >= 2 and n_avg >= 0, got T={T}, n_avg={n_avg}")
    M = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    A = np.linalg.matrix_power(M, n_avg)
    C = A @ A.T
    s = np.sqrt(np.diag(C))
    R = C / np.outer(s, s)
    return float((R.sum() - T) / (T * (T - 1))), float(R.mean())


def attn0_exact_depths(T: int, n_max: int) -> np.ndarray:
    """`attn0_exact(T, n)[0]` for n = 1 … n_max at once, in O(T²) per averaging: the rows a_i of
    Mⁿ are updated by a running mean, and the mean of ρ_ij = ⟨a_i, a_j⟩/(‖a_i‖‖a_j‖) over i ≠ j is
    (‖Σ_i a_i/‖a_i‖‖² − T) / (T(T−1)), so the T×T covariance is never formed (T = 2048 in seconds)."""
    if T < 2 or n_max < 1:
        raise ValueError(f"attn0_exact_depths needs T >= 2 and n_max >= 1, got T={T}, n_max={n_max}")
    A = np.eye(T)
    counts = np.arange(1, T + 1, dtype=float)[:, None]
    out = np.empty(n_max)
    for n in range(n_max):
        np.cumsum(A, axis=0, out=A)
        A /= counts
        v = (A / np.sqrt(np.einsum("ij,ij->i", A, A))[:, None]).sum(0)
        out[n] = (v @ v - T) / (T * (T - 1))
    return out


@dataclass(frozen=True)
class Extrapolation:
    """A T → ∞ limit from values at T, 2T, 4T whose differences shrink geometrically."""

    limit: float  # Aitken's Δ²: x₃ + d₂·r/(1 − r), r = d₂/d₁
    ratio: float  # r: how much the step shrinks per doubling of T (2^−½ for a T^−½ approach)
    last_step: float  # d₂ = x(4T) − x(2T)


def extrapolate_doublings(x1: float, x2: float, x3: float) -> Extrapolation:
    """Aitken's Δ² extrapolation of a sequence at T, 2T, 4T: exact for x(T) = a + b·T^−c. Only
    meaningful when 0 < ratio < 1 (a geometric approach); the caller judges the ratio."""
    d1, d2 = x2 - x1, x3 - x2
    if d1 == 0:
        return Extrapolation(float(x3), 0.0, float(d2))
    r = d2 / d1
    limit = x3 + d2 * r / (1 - r) if r < 1 else math.nan
    return Extrapolation(float(limit), float(r), float(d2))


# Prop 5's closed form ρ̄′(L) is the T → ∞ limit of the mean intra-sequence cosine after L−1
# averagings, and finite T approaches it slowly — the steps shrink like T^−1 after one averaging,
# T^−½ after three, and ever more slowly with depth (exact enumeration: after three averagings,
# whose limit is ρ̄′(4) = 0.938, 0.951 / 0.945 / 0.941 at T = 128 / 512 / 2048). So the closed form
# is compared with exact enumeration (infinite width; the Monte Carlo at T = 512 matches it, see
# BB-5's indexing test) at T = 256 … 2048, extrapolated to T → ∞ by Aitken's Δ² — only at depths
# where the approach has turned geometric (the step shrinks by ≤ 0.9 per doubling of T in both
# triplets; beyond, the remaining correction exceeds nine last steps and no extrapolation from
# these T is trustworthy).
ENUM_T = (256, 512, 1024, 2048)
GEOMETRIC = 0.9


@dataclass(frozen=True)
class Prop5Depth:
    """Prop 5 at one depth L (the input counted as a layer: L−1 averagings), `prop5_depths`."""

    L: int
    closed_form: float  # ρ̄′(L)
    approx: float  # the source's approximation 1 − 1/L² (T → ∞)
    exact: tuple[float, ...]  # exact enumeration after L−1 averagings, at each of ENUM_T
    first: Extrapolation  # from ENUM_T[:3]
    last: Extrapolation  # from ENUM_T[1:]: the limit compared
    other_indexing: Extrapolation  # L averagings (the other indexing), from ENUM_T[1:]

    @property
    def reached(self) -> bool:
        """The approach has turned geometric in both triplets: the extrapolation is trusted."""
        return 0 < self.first.ratio <= GEOMETRIC and 0 < self.last.ratio <= GEOMETRIC

    @property
    def shift(self) -> float:
        """The extrapolation's own shift between the two triplets."""
        return abs(self.last.limit - self.first.limit)


def prop5_depths(n_max: int) -> list[Prop5Depth]:
    """001 App A.3, Prop 5 at L = 3 … n_max: the closed form, the source's approximation and the
    exact enumeration at ENUM_T extrapolated to T → ∞ (module comment above)."""
    exact = {T: attn0_exact_depths(T, n_max) for T in ENUM_T}
    depths = []
    for L in range(3, n_max + 1):
        n = L - 1  # averagings
        x = [exact[T][n - 1] for T in ENUM_T]
        a, b = extrapolate_doublings(*x[:3]), extrapolate_doublings(*x[1:])
        other = extrapolate_doublings(*[exact[T][L - 1] for T in ENUM_T[1:]])
        depths.append(Prop5Depth(L, prop5_limit(L), prop5_approx(10**12, L), tuple(x), a, b, other))
    return depths
