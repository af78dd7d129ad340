"""repro.born_biased.closed_forms (001 App A), the cosine helpers and BB-5's stacks of
repro.born_biased.init_bias, and the Bonferroni p of repro.core.stats (001 App B.2), against brute
force, numerical integration and hand values.

Tolerances: cosine helpers run in float64, so brute force and the library agree to ~1e-15 per
pair; 1e-12 leaves room for the summation order. Quadrature targets 1e-11 absolute error, so
1e-8 is loose. The Monte-Carlo check uses 5 standard errors (see its comment).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.stats
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from repro.born_biased import ablation_study
from repro.born_biased import closed_forms as cf
from repro.born_biased import init_bias as ib
from repro.core import stats
from repro.core.data import gaussian_inputs
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.ground.runtime import generator

FAST = settings(max_examples=30, deadline=None)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _brute_pairs(x: np.ndarray) -> list[float]:
    """Cosines of all distinct pairs i < j of rows of x (N, d), by the definition."""
    return [_cos(x[i], x[j]) for i in range(len(x)) for j in range(i + 1, len(x))]


def _rows(min_n: int = 2, max_n: int = 8, max_d: int = 6):
    """(N, d) float64 arrays whose rows are clearly non-zero (normalize's eps never matters)."""
    shape = st.tuples(st.integers(min_n, max_n), st.integers(1, max_d))
    elems = st.floats(-100, 100, allow_nan=False, allow_subnormal=False)
    return hnp.arrays(np.float64, shape, elements=elems).filter(lambda a: np.linalg.norm(a, axis=-1).min() > 1e-3)


# --------------------------------------------------------------------------- mean_pairwise_cosine


def test_mean_pairwise_cosine_known_inputs():
    row = torch.tensor([[1.0, -2.0, 3.0]])
    assert ib.mean_pairwise_cosine(row.repeat(5, 1)) == pytest.approx(1.0, abs=1e-12)
    assert ib.mean_pairwise_cosine(torch.eye(6)) == pytest.approx(0.0, abs=1e-12)
    # orthonormal but not the standard basis: a random rotation's rows
    q, _ = torch.linalg.qr(torch.randn(8, 8, generator=generator(0), dtype=torch.float64))
    assert ib.mean_pairwise_cosine(q) == pytest.approx(0.0, abs=1e-12)
    a, b = torch.tensor([3.0, 4.0]), torch.tensor([4.0, 3.0])  # cos = 24/25
    assert ib.mean_pairwise_cosine(torch.stack([a, b])) == pytest.approx(24 / 25, abs=1e-12)
    assert ib.mean_pairwise_cosine(torch.stack([a, -a])) == pytest.approx(-1.0, abs=1e-12)


@FAST
@given(x=_rows())
def test_mean_pairwise_cosine_is_brute_force_mean(x):
    assert ib.mean_pairwise_cosine(torch.from_numpy(x)) == pytest.approx(np.mean(_brute_pairs(x)), abs=1e-12)


@FAST
@given(x=_rows(), data=st.data())
def test_mean_pairwise_cosine_ignores_positive_row_scale(x, data):
    scale = data.draw(hnp.arrays(np.float64, (len(x), 1), elements=st.floats(1e-3, 1e3)))
    assert ib.mean_pairwise_cosine(torch.from_numpy(x * scale)) == pytest.approx(
        ib.mean_pairwise_cosine(torch.from_numpy(x)), abs=1e-12
    )


def test_mean_pairwise_cosine_accepts_float32_and_bfloat16():
    x = torch.randn(10, 16, generator=generator(1))
    ref = np.mean(_brute_pairs(x.double().numpy()))
    assert ib.mean_pairwise_cosine(x) == pytest.approx(ref, abs=1e-12)  # computed in float64 inside
    xb = x.bfloat16()  # the cast loses precision, not the helper: compare to the cast input
    assert ib.mean_pairwise_cosine(xb) == pytest.approx(np.mean(_brute_pairs(xb.double().numpy())), abs=1e-12)


# --------------------------------------------------------------------------- intra_sequence_cosine, pairwise std


@FAST
@given(n=st.integers(1, 4), T=st.integers(2, 7), d=st.integers(1, 5), seed=st.integers(0, 2**31))
def test_intra_sequence_cosine_brute_force(n, T, d, seed):
    x = np.random.default_rng(seed).normal(size=(n, T, d))
    off, full = ib.intra_sequence_cosine(torch.from_numpy(x))
    assert off.shape == full.shape == (n,)
    for s in range(n):
        # all T² ordered pairs, diagonal included (cos = 1 there)
        allpairs = [_cos(x[s, i], x[s, j]) for i in range(T) for j in range(T)]
        assert off[s] == pytest.approx(np.mean(_brute_pairs(x[s])), abs=1e-12)
        assert full[s] == pytest.approx(np.mean(allpairs), abs=1e-12)
    np.testing.assert_allclose(full, 1 / T + (T - 1) / T * off, atol=1e-12)


@FAST
@given(x=_rows(min_n=3))
def test_pairwise_cosine_std_brute_force(x):
    # torch's .std() is the sample std (ddof = 1) over the N(N−1)/2 pairs
    assert ablation_study.pairwise_cosine_std(torch.from_numpy(x)) == pytest.approx(
        np.std(_brute_pairs(x), ddof=1), abs=1e-12
    )


def test_pairwise_cosine_std_of_identical_rows_is_zero():
    assert ablation_study.pairwise_cosine_std(torch.ones(4, 3)) == pytest.approx(0.0, abs=1e-12)


# --------------------------------------------------------------------------- Bonferroni binomial p (App B.2)


def _exact_log10_bonferroni(k: int, n: int, V: int) -> float:
    """log10 min(1, V·P[X ≥ k]), X ~ Bin(n, 1/V), from V·Σ_{j≥k} C(n,j)(V−1)^{n−j} / V^n in
    Python integers: log10 of a big int is exact to float rounding (abs error ~1e-13 here)."""
    if k <= 0:
        return 0.0
    num = sum(math.comb(n, j) * (V - 1) ** (n - j) for j in range(k, n + 1))
    return min(0.0, math.log10(num) - (n - 1) * math.log10(V)) if num else -math.inf


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 2000), V=st.integers(2, 60_000), data=st.data())
def test_bonferroni_matches_scipy(n, V, data):
    k = data.draw(st.integers(0, n))
    sf = float(scipy.stats.binom.sf(k - 1, n, 1 / V))
    p, log10_p = stats.bonferroni_binomial_p(k, n, V), stats.bonferroni_binomial_log10_p(k, n, V)
    assert 0.0 <= p <= 1.0 and log10_p <= 0.0 and math.isfinite(log10_p)
    if sf >= 1e-280:
        # the library's own range for scipy's sf, so rel 1e-9 is loose. Not used as an oracle
        # below ~1e-290: measured against exact integers, scipy 1.17's binom.sf is off by up to
        # 0.04 in log10 between 1e-291 and 1e-308 and returns 0.0 above the float64 minimum
        expected = min(1.0, V * sf)
        assert p == pytest.approx(expected, rel=1e-9)
        assert log10_p == pytest.approx(math.log10(expected), abs=1e-9)
    else:  # the log-space branch: checked against exact integers in the next two tests
        assert log10_p < math.log10(V) - 280 + 1e-9


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 150), V=st.integers(2, 60_000), data=st.data())
def test_bonferroni_matches_exact_integers(n, V, data):
    # small n keeps the integers small; k up to n reaches p ≈ V^(1−n), down to ~1e-700
    k = data.draw(st.integers(0, n))
    exact = _exact_log10_bonferroni(k, n, V)
    log10_p = stats.bonferroni_binomial_log10_p(k, n, V)
    assert log10_p == pytest.approx(exact, rel=1e-12, abs=1e-9)
    if exact > -290:  # p itself is a normal float64 (10**x loses ~|x|·2e-16 relative)
        assert stats.bonferroni_binomial_p(k, n, V) == pytest.approx(10**exact, rel=1e-9)


@pytest.mark.parametrize("k,n,V", [(3, 10, 10), (10, 100, 50), (120, 2000, 10_000), (500, 1000, 50_000)])
def test_bonferroni_log10_exact_big_integers(k, n, V):
    exact = _exact_log10_bonferroni(k, n, V)
    got = stats.bonferroni_binomial_log10_p(k, n, V)
    assert math.isfinite(got)
    assert got == pytest.approx(exact, rel=1e-12, abs=1e-12)
    # (120, 2000, 10⁴): tail ≈ 1e-284, past the library's switch to a log-space sum at 1e-280;
    # (500, 1000, 5·10⁴): log10 p ≈ −2045, far beyond float64, where p itself underflows
    if exact < -330:
        assert stats.bonferroni_binomial_p(k, n, V) == 0.0


@FAST
@given(ids=st.lists(st.integers(0, 19), min_size=1, max_size=200))
def test_top1_preference_consistent_with_bonferroni(ids):
    V = 20
    r = stats.top1_preference(np.array(ids), V)
    counts = np.bincount(ids, minlength=V)
    assert r.count == counts.max() and r.token == int(np.flatnonzero(counts == counts.max())[0])
    assert r.n == len(ids) and r.freq == pytest.approx(r.count / r.n)
    assert r.p == stats.bonferroni_binomial_p(r.count, r.n, V)
    assert r.log10_p == stats.bonferroni_binomial_log10_p(r.count, r.n, V)


# --------------------------------------------------------------------------- ReLU correlation map (Prop 2)


def _relu_kernel_by_quadrature(rho: float) -> float:
    """E[relu(U1) relu(U2)] / E[relu(U)²] for standard normals with corr ρ, U2 = ρU1 + sZ.

    The integrand is smooth on the region U1 > 0, U2 > 0, so quadrature with the kink as an
    integration limit converges fast; ±12 truncates a tail of mass < 1e-30."""
    s = math.sqrt(1 - rho * rho)

    def phi(z: float) -> float:  # plain math: scipy.stats.norm.pdf's per-call overhead is 100×
        return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    num, _ = scipy.integrate.dblquad(
        lambda z2, z1: z1 * (rho * z1 + s * z2) * phi(z1) * phi(z2),
        0.0,
        12.0,
        lambda z1: -rho * z1 / s,
        lambda z1: 12.0,
        epsabs=1e-11,
        epsrel=1e-11,
    )
    den, _ = scipy.integrate.quad(lambda z: z * z * phi(z), 0.0, 12.0, epsabs=1e-12)  # = 1/2
    return num / den


@pytest.mark.parametrize("rho", [-0.5, 0.0, 0.2, 1 / math.pi, 0.5, 0.8, 0.95])
def test_arccos_map_matches_quadrature(rho):
    assert cf.arccos_map(rho) == pytest.approx(_relu_kernel_by_quadrature(rho), abs=1e-8)


def test_arccos_map_endpoints():
    assert cf.arccos_map(0.0) == pytest.approx(1 / math.pi, abs=1e-15)
    assert cf.arccos_map(1.0) == pytest.approx(1.0, abs=1e-15)  # identical inputs stay identical
    assert cf.arccos_map(-1.0) == pytest.approx(0.0, abs=1e-15)  # relu(u)·relu(−u) = 0
    assert cf.arccos_map(1.0 + 1e-12) == cf.arccos_map(1.0)  # rounding past ±1 is clamped


@FAST
@given(rho=st.floats(0.0, 1.0), eps=st.floats(1e-6, 0.1))
def test_arccos_map_increases_correlation_monotonically(rho, eps):
    assert rho - 1e-15 <= cf.arccos_map(rho) <= 1.0
    assert cf.arccos_map(min(rho + eps, 1.0)) >= cf.arccos_map(rho)


def test_relu_recurrence():
    assert cf.relu_recurrence(1) == [pytest.approx(1 / math.pi, abs=1e-15)]
    r = cf.relu_recurrence(50)
    assert len(r) == 50 and r[1] == pytest.approx(cf.arccos_map(1 / math.pi), abs=1e-15)
    assert all(a < b < 1.0 for a, b in zip(r, r[1:]))  # strictly increasing, below the fixed point 1
    assert 1 - r[-1] < 0.02  # and approaching it (1 − ρ̄_50 ≈ 0.012)
    assert cf.relu_recurrence(2, rho0=0.5) == [cf.arccos_map(0.5), cf.arccos_map(cf.arccos_map(0.5))]


# --------------------------------------------------------------------------- Attn0 ∘ MLP0 (Prop 4)


def _mean_of_equicorrelated(T: int, rho: float) -> float:
    """Correlation of the means of two length-T blocks of unit-variance variables, every pair of
    which (within and across blocks) has correlation ρ: A C Aᵀ with C the 2T×2T covariance."""
    C = np.full((2 * T, 2 * T), rho) + (1 - rho) * np.eye(2 * T)
    A = np.zeros((2, 2 * T))
    A[0, :T] = A[1, T:] = 1 / T
    S = A @ C @ A.T
    return float(S[0, 1] / math.sqrt(S[0, 0] * S[1, 1]))


@FAST
@given(T=st.integers(1, 300), rho=st.floats(0.0, 1.0))
def test_attn0_after_mlp0_covariance_algebra(T, rho):
    assume(rho > 1e-6)  # ρ = 0 is 0/0 in the covariance algebra
    assert cf.attn0_after_mlp0(T, rho) == pytest.approx(_mean_of_equicorrelated(T, rho), abs=1e-12)
    assert cf.attn0_after_mlp0(T) == pytest.approx(T / (T + math.pi - 1), abs=1e-14)


# --------------------------------------------------------------------------- Attn0 stacks (Prop 5)


def test_attn0_exact_no_averaging():
    off, full = cf.attn0_exact(7, 0)  # i.i.d. positions: orthogonal in the infinite-width limit
    assert off == pytest.approx(0.0, abs=1e-15) and full == pytest.approx(1 / 7, abs=1e-15)


def test_attn0_exact_one_average_brute_force():
    # one running mean: Σ_ij = min(i,j)/(ij), Σ_ii = 1/i, so ρ_ij = √(min(i,j)/max(i,j))
    T = 6
    rho = [math.sqrt(min(i, j) / max(i, j)) for i in range(1, T + 1) for j in range(1, T + 1) if i != j]
    off, full = cf.attn0_exact(T, 1)
    assert off == pytest.approx(np.mean(rho), abs=1e-14)
    assert full == pytest.approx((sum(rho) + T) / T**2, abs=1e-14)


def test_attn0_exact_T2_by_hand():
    # M = [[1, 0], [½, ½]]: rows of M are (1, 0) and (½, ½) → cos = 1/√2
    off, full = cf.attn0_exact(2, 1)
    assert off == pytest.approx(1 / math.sqrt(2), abs=1e-15)
    assert full == pytest.approx((1 + 1 / math.sqrt(2)) / 2, abs=1e-15)
    # M² = [[1, 0], [¾, ¼]] → cos = ¾ / √(9/16 + 1/16) = 3/√10
    assert cf.attn0_exact(2, 2)[0] == pytest.approx(3 / math.sqrt(10), abs=1e-15)


@FAST
@given(T=st.integers(2, 40), n_avg=st.integers(0, 6))
def test_attn0_exact_full_vs_offdiag_and_monotone(T, n_avg):
    off, full = cf.attn0_exact(T, n_avg)
    assert full == pytest.approx(1 / T + (T - 1) / T * off, abs=1e-12)
    assert 0.0 <= off < 1.0
    assert cf.attn0_exact(T, n_avg + 1)[0] > off  # each running mean makes positions more alike


def test_attn0_exact_rejects_bad_arguments():
    for T, n in ((1, 1), (4, -1)):
        with pytest.raises(ValueError):
            cf.attn0_exact(T, n)


def test_prop5_limit_by_hand():
    assert cf.prop5_limit(2) == pytest.approx(2 / 3, abs=1e-15)  # n=0: (2/3)^1
    assert cf.prop5_limit(3) == pytest.approx(8 / 9, abs=1e-15)  # n=1: ½·(4/9 + 2·2/3)
    vals = [cf.prop5_limit(L) for L in range(2, 40)]
    assert all(a < b < 1 for a, b in zip(vals, vals[1:]))
    with pytest.raises(ValueError):
        cf.prop5_limit(1)


@pytest.mark.parametrize("L", [2, 3])
def test_attn0_exact_approaches_prop5_limit(L):
    # Prop 5 is the T → ∞ limit of L−1 running means; the finite-T gap shrinks with T
    # (measured: L=2 gap 0.0039 → 0.0006, L=3 gap 0.0115 → 0.0025 from T=64 to T=512)
    gaps = [abs(cf.attn0_exact(T, L - 1)[0] - cf.prop5_limit(L)) for T in (64, 128, 256, 512)]
    assert all(a > b for a, b in zip(gaps, gaps[1:]))
    assert gaps[-1] < 0.006


def test_prop5_approx():
    # 1 − (1 − 1/T)/L² is the all-pairs mean 1/T + (1 − 1/T)·ρ with off-diagonal ρ = 1 − 1/L²
    for T, L in ((1, 3), (8, 3), (100, 5)):
        assert cf.prop5_approx(T, L) == pytest.approx(1 / T + (1 - 1 / T) * (1 - 1 / L**2), abs=1e-15)
    assert cf.prop5_approx(1, 4) == 1.0  # one position: only the diagonal
    # stated accurate for L ≥ 3: at T → ∞ it is exact for L = 3 and within 0.006 of the closed
    # form up to L = 11 (largest gap 0.0058 at L = 10); at L = 2 it is off by 1/12
    assert cf.prop5_approx(10**9, 3) == pytest.approx(cf.prop5_limit(3), abs=1e-8)
    assert all(abs(cf.prop5_approx(10**9, L) - cf.prop5_limit(L)) < 0.006 for L in range(3, 12))
    assert cf.prop5_approx(10**9, 2) - cf.prop5_limit(2) == pytest.approx(1 / 12, abs=1e-8)
    # and it tracks the exact finite-T value (all-pairs mean) for L = 3: within 0.003 at T = 512
    assert cf.prop5_approx(512, 3) == pytest.approx(cf.attn0_exact(512, 2)[1], abs=0.003)


def test_attn0_stack_monte_carlo_matches_exact():
    """TinyDecoder's Attn0 stack on i.i.d. Gaussian inputs vs attn0_exact, T = 8, d = 2048.

    Per sequence the off-diagonal mean cosine is a finite-d estimate of the infinite-width value
    (bias O(1/d) ≈ 5e-4 at most); the N = 64 sequences are independent, so their mean has SE =
    std/√N. Tolerance: 5 SE + 1/d."""
    T, d, N, L = 8, 2048, 64, 3
    model = TinyDecoder(TinyConfig.attn0_stack(d_model=d, n_layer=L, max_len=T, n_head=1))
    x = torch.randn(N, T, d, generator=generator(11), dtype=torch.float64).float()
    with torch.no_grad():
        hs = model(inputs_embeds=x, output_hidden_states=True).hidden_states
    # the block is exactly the causal running mean (no weights at all)
    torch.testing.assert_close(hs[1], x.cumsum(1) / torch.arange(1, T + 1).view(1, T, 1))
    for n_avg in range(1, L + 1):
        off, full = ib.intra_sequence_cosine(hs[n_avg])
        exact_off, exact_full = cf.attn0_exact(T, n_avg)
        se = off.std(ddof=1) / math.sqrt(N)
        assert 0 < se < 0.01
        assert abs(off.mean() - exact_off) < 5 * se + 1 / d, (n_avg, off.mean(), exact_off, se)
        assert abs(full.mean() - exact_full) < 5 * se + 1 / d


def test_no_averaging_null_is_the_stack_with_identity_attention():
    """BB-5's null (`_no_averaging_cosines`): the same ATTN_STACK model with every attention map
    replaced by the identity, oracle-checked through the model's own forward with its aggregated
    output (hook point `agg_unscaled`) replaced by the value vectors v = W_V LN(x). Float64, so the
    two paths agree to rounding."""
    T, d, H, L, N = 6, 16, 2, 3, 5
    cfg = TinyConfig.merged(**ib.ATTN_STACK, d_model=d, n_head=H, n_layer=L, max_len=T)
    model = TinyDecoder(cfg, generator(3)).double()
    x = torch.randn(N, T, d, generator=generator(4), dtype=torch.float64)
    values, handles = {}, []
    for blk in model.blocks:
        handles.append(blk.attn.v_proj.register_forward_hook(lambda m, i, o, blk=blk: values.__setitem__(blk, o)))
        handles.append(blk.attn.agg_unscaled.register_forward_hook(lambda m, i, o, blk=blk: values[blk].view(o.shape)))
    with torch.no_grad():
        hs = model(inputs_embeds=x, output_hidden_states=True).hidden_states
    for h in handles:
        h.remove()
    off, absn = ib._no_averaging_cosines(model, x)
    assert off.shape == (L, N) and absn.shape == (N,)
    for l in range(L):
        np.testing.assert_allclose(off[l], ib.intra_sequence_cosine(hs[l + 1])[0], rtol=0, atol=1e-12)
    z = torch.nn.functional.normalize(hs[-1], dim=-1)
    brute = [
        float(np.mean([abs(_cos(z[n, i].numpy(), z[n, j].numpy())) for i in range(T) for j in range(T) if i != j]))
        for n in range(N)
    ]
    np.testing.assert_allclose(absn, brute, rtol=0, atol=1e-12)
    with pytest.raises(ValueError):
        ib._no_averaging_cosines(TinyDecoder(cfg.merged(residual=True)), x.float())


# --------------------------------------------------------------------------- Prop 5: exact depths, extrapolation


def test_attn0_exact_depths_matches_attn0_exact():
    for T in (2, 5, 33):
        fast = cf.attn0_exact_depths(T, 6)
        slow = [cf.attn0_exact(T, n)[0] for n in range(1, 7)]
        np.testing.assert_allclose(fast, slow, atol=1e-12)
    with pytest.raises(ValueError):
        cf.attn0_exact_depths(1, 3)


def test_extrapolate_doublings_recovers_a_power_law_limit():
    # exact for a + b·T^−c: three doublings determine it
    for a, b, c in ((0.9, -0.3, 0.5), (0.5, 0.2, 1.0), (0.98, 0.05, 0.3)):
        x = [a + b * T**-c for T in (256, 512, 1024)]
        e = cf.extrapolate_doublings(*x)
        assert e.limit == pytest.approx(a, abs=1e-12)
        assert e.ratio == pytest.approx(2**-c, rel=1e-12)
    assert math.isnan(cf.extrapolate_doublings(0.0, 1.0, 3.0).limit)  # growing steps: no limit


def test_extrapolated_enumeration_reaches_prop5_limit_at_shallow_depth():
    # after 2–4 averagings the finite-T approach is geometric by T = 1024; the extrapolated
    # limit is the closed form to ≤ 5e-4 (measured: 6e-5, 1.9e-4, 7e-5)
    x = {T: cf.attn0_exact_depths(T, 4) for T in (256, 512, 1024, 2048)}
    for n in (2, 3, 4):
        e = cf.extrapolate_doublings(*(x[T][n - 1] for T in (512, 1024, 2048)))
        assert 0 < e.ratio < 0.9
        assert e.limit == pytest.approx(cf.prop5_limit(n + 1), abs=5e-4)


def test_gelu_asymmetry():
    rng = np.random.default_rng(3)
    small, wide = rng.normal(0, 0.011, 200_000), rng.normal(0, 0.55, 200_000)
    assert ib.gelu_asymmetry(small) == pytest.approx(0.015, abs=0.002)  # linear: no asymmetry
    assert ib.gelu_asymmetry(wide) == pytest.approx(0.618, abs=0.01)
    assert ib.gelu_asymmetry(rng.normal(0, 100, 200_000)) == pytest.approx(1.0, abs=0.01)  # → ReLU's
    # odd inputs' symmetry does not matter: it is a property of the input's magnitude
    assert ib.gelu_asymmetry(np.abs(wide)) == pytest.approx(ib.gelu_asymmetry(wide), abs=1e-12)


def test_bb5_stack_in_chunks_equals_one_pass(monkeypatch):
    """BB-5's per-sequence cosines do not depend on how many sequences share a pass (the chunking
    that keeps paper sizes in memory); control: other inputs give other cosines."""
    cfg = TinyConfig.merged(**ib.ATTN_STACK, d_model=16, n_head=2, n_layer=3, max_len=8)
    model = ib.tiny_decoder(cfg, 0, "cpu")
    x = gaussian_inputs(10, 8, 16, generator(1))
    off1, full1 = ib._stack_cosines(model, x)
    monkeypatch.setattr(ib, "BB5_CHUNK", 3)
    off3, full3 = ib._stack_cosines(model, x)
    assert off1.shape == off3.shape == (3, 10)
    np.testing.assert_allclose(off3, off1, rtol=0, atol=1e-9)
    np.testing.assert_allclose(full3, full1, rtol=0, atol=1e-9)
    other, _ = ib._stack_cosines(model, gaussian_inputs(10, 8, 16, generator(2)))
    assert np.abs(other - off1).max() > 1e-3


def test_prop5_depths_are_the_enumeration_extrapolated():
    """BB-5's reading of Prop 5 (`closed_forms.prop5_depths`): at each depth L, the exact enumeration
    after L−1 averagings at ENUM_T, its two Aitken triplets and the other indexing (L averagings)."""
    depths = cf.prop5_depths(5)
    exact = {T: cf.attn0_exact_depths(T, 5) for T in cf.ENUM_T}
    assert [d.L for d in depths] == [3, 4, 5]
    for d in depths:
        x = [exact[T][d.L - 2] for T in cf.ENUM_T]
        assert d.exact == tuple(x) and d.closed_form == cf.prop5_limit(d.L)
        assert d.last == cf.extrapolate_doublings(*x[1:]) and d.first == cf.extrapolate_doublings(*x[:3])
        assert d.other_indexing == cf.extrapolate_doublings(*(exact[T][d.L - 1] for T in cf.ENUM_T[1:]))
        assert d.shift == abs(d.last.limit - d.first.limit)
    assert depths[0].reached  # L = 3 (two averagings) has turned geometric by T = 256
