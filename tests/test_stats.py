"""repro.core.stats against hand-computed values, edge cases and a few hypothesis properties."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.core import stats
from repro.ground.runtime import ReproError


def exact_tail(k: int, n: int, p: Fraction) -> Fraction:
    """P[X ≥ k], X ~ Bin(n, p), in exact rational arithmetic."""
    return sum((math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1)), Fraction(0))


# --------------------------------------------------------------------------- binomial + Bonferroni


def test_bonferroni_by_hand():
    # Bin(10, 1/10): P[X ≥ 3] = 1 − (0.9^10 + 10·0.1·0.9^9 + 45·0.01·0.9^8) = 0.0701908264
    assert stats.bonferroni_binomial_p(3, 10, 10) == pytest.approx(10 * 0.0701908264, rel=1e-9)
    # Bin(4, 1/2): P[X ≥ 4] = 1/16, times V = 2 → 1/8
    assert stats.bonferroni_binomial_p(4, 4, 2) == pytest.approx(0.125, rel=1e-12)


@pytest.mark.parametrize("k,n,V", [(1, 5, 3), (2, 7, 4), (5, 9, 6), (6, 6, 11), (3, 20, 50)])
def test_bonferroni_matches_exact_fractions(k, n, V):
    expected = min(Fraction(1), V * exact_tail(k, n, Fraction(1, V)))
    assert stats.bonferroni_binomial_p(k, n, V) == pytest.approx(float(expected), rel=1e-9)
    assert stats.bonferroni_binomial_log10_p(k, n, V) == pytest.approx(math.log10(expected), rel=1e-9, abs=1e-12)


def test_bonferroni_edges():
    assert stats.bonferroni_binomial_p(0, 100, 1000) == 1.0  # X ≥ 0 always
    assert stats.bonferroni_binomial_log10_p(0, 100, 1000) == 0.0
    assert stats.bonferroni_binomial_p(1, 100, 1000) == 1.0  # V · P[X ≥ 1] ≈ 95 → capped at 1
    assert stats.bonferroni_binomial_p(101, 100, 1000) == 0.0  # impossible count
    with pytest.raises(ReproError):
        stats.bonferroni_binomial_p(1, 10, 0)


def test_log10_tail_far_beyond_float_range():
    # All n of n draws on one token out of V: P = V · V^-n exactly; float64 p underflows.
    n, V = 200, 8000
    expected = math.log10(V) - n * math.log10(V)  # ≈ −776.7
    assert stats.bonferroni_binomial_log10_p(n, n, V) == pytest.approx(expected, rel=1e-10)
    assert stats.bonferroni_binomial_p(n, n, V) == 0.0
    # the log-space sum agrees with scipy where scipy still has the value
    k, n = 40, 1000
    direct = math.log10(stats.scipy.stats.binom.sf(k - 1, n, 1 / V))
    assert stats.binomial_log10_sf(k, n, 1 / V) == pytest.approx(direct, rel=1e-9)


def test_log10_tail_continuous_across_switch():
    # around the point where the implementation switches to the log-space sum (sf ≈ 1e-280)
    n, V = 10_000, 10_000
    vals = [stats.binomial_log10_sf(k, n, 1 / V) for k in range(80, 140)]
    steps = np.diff(vals)
    assert np.all(steps < 0)
    assert np.max(np.abs(np.diff(steps))) < 0.05  # smooth: no jump at the switch


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), V=st.integers(2, 500), data=st.data())
def test_bonferroni_monotone_in_k(n, V, data):
    k = data.draw(st.integers(0, n))
    p_k = stats.bonferroni_binomial_p(k, n, V)
    p_k1 = stats.bonferroni_binomial_p(k + 1, n, V)
    assert 0.0 <= p_k1 <= p_k <= 1.0


def test_top1_preference():
    ids = np.array([7] * 30 + list(range(10)) * 2)
    r = stats.top1_preference(ids, vocab_size=100)
    assert (r.token, r.count, r.n) == (7, 32, 50)
    assert r.freq == pytest.approx(32 / 50)
    assert r.uniform_freq == pytest.approx(0.01)
    assert r.p == pytest.approx(stats.bonferroni_binomial_p(32, 50, 100))
    assert r.log10_p == pytest.approx(math.log10(r.p))
    # ties go to the smallest id; torch tensors are accepted
    torch = pytest.importorskip("torch")
    assert stats.top1_preference(torch.tensor([3, 1, 3, 1]), 4).token == 1
    with pytest.raises(ReproError):
        stats.top1_preference([0, 5], vocab_size=5)


# --------------------------------------------------------------------------- tests of location / rank


def test_kendall_tau_by_hand():
    # (1,2,3) vs (1,3,2): pairs (1,2) C, (1,3) C, (2,3) D → τ = (2 − 1)/3
    tau, p = stats.kendall_tau([1, 2, 3], [1, 3, 2])
    assert tau == pytest.approx(1 / 3)
    assert 0 < p <= 1
    assert stats.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]).statistic == pytest.approx(-1.0)
    # n = 5, perfectly concordant: exact two-sided p = 2/5! = 1/60
    r = stats.kendall_tau(range(5), range(5))
    assert r.statistic == pytest.approx(1.0)
    assert r.p == pytest.approx(2 / 120)


def test_welch_t_by_hand():
    a, b = [1.0, 2.0, 3.0, 4.0], [0.0, 0.5, 1.0]
    va, vb = np.var(a, ddof=1), np.var(b, ddof=1)
    t = (np.mean(a) - np.mean(b)) / math.sqrt(va / 4 + vb / 3)
    dof = (va / 4 + vb / 3) ** 2 / ((va / 4) ** 2 / 3 + (vb / 3) ** 2 / 2)
    r = stats.one_sided_t(a, b)
    assert r.statistic == pytest.approx(t)
    assert r.p == pytest.approx(stats.scipy.stats.t.sf(t, dof))
    # symmetric: swapping samples flips the sign; the "less" p of (b, a) equals the "greater" p
    r2 = stats.one_sided_t(b, a, alternative="less")
    assert r2.statistic == pytest.approx(-t) and r2.p == pytest.approx(r.p)


def test_mann_whitney_by_hand():
    # every a exceeds every b: U_a = n_a · n_b = 9; exact one-sided p = 1 / C(6, 3) = 0.05
    r = stats.mann_whitney_u([4, 5, 6], [1, 2, 3])
    assert r.statistic == 9.0
    assert r.p == pytest.approx(1 / 20)
    assert stats.mann_whitney_u([1, 2, 3], [4, 5, 6]).p == pytest.approx(1.0)


# --------------------------------------------------------------------------- intervals


def test_binomial_ci_wilson_by_hand():
    k, n, z = 7, 20, stats.scipy.stats.norm.ppf(0.975)
    ph = k / n
    centre = (ph + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n))
    ci = stats.binomial_ci(k, n)
    assert ci.method == "wilson" and ci.estimate == pytest.approx(0.35)
    assert (ci.low, ci.high) == (pytest.approx(centre - half), pytest.approx(centre + half))


def test_binomial_ci_edges():
    ci0 = stats.binomial_ci(0, 10, method="exact")
    assert ci0.low == 0.0
    assert ci0.high == pytest.approx(1 - 0.025 ** (1 / 10))  # Clopper–Pearson upper at k = 0
    ci_n = stats.binomial_ci(10, 10, method="exact")
    assert ci_n.high == 1.0 and ci_n.low == pytest.approx(0.025 ** (1 / 10))
    # symmetric: k and n − k give mirrored intervals
    a, b = stats.binomial_ci(3, 11), stats.binomial_ci(8, 11)
    assert a.low == pytest.approx(1 - b.high) and a.high == pytest.approx(1 - b.low)
    with pytest.raises(ReproError):
        stats.binomial_ci(11, 10)


def test_mean_sem():
    m, s = stats.mean_sem([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5
    assert s == pytest.approx(math.sqrt(5 / 3) / 2)  # sample var 5/3, n = 4
    m1, s1 = stats.mean_sem([3.0])
    assert m1 == 3.0 and math.isnan(s1)


def test_bootstrap_ci_seeded_and_covers_mean():
    x = np.random.default_rng(0).normal(1.0, 1.0, size=200)
    a = stats.bootstrap_ci(x, np.mean, n_resamples=999, seed=3)
    b = stats.bootstrap_ci(x, np.mean, n_resamples=999, seed=3)
    assert a == b
    assert a[0] < x.mean() < a[1]
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert a[1] - a[0] == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_loglog_slope_exact_power_law():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    r = stats.loglog_slope(x, 3.0 * x**-0.5)
    assert r.slope == pytest.approx(-0.5)
    assert r.stderr == pytest.approx(0.0, abs=1e-12)
    assert r.intercept == pytest.approx(math.log(3.0))
    slope, stderr, (lo, hi) = r  # unpacks like (slope, stderr, ci95)
    assert lo <= slope <= hi


def test_loglog_slope_ci_by_hand():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    y = np.exp(np.array([0.1, 0.9, 2.2, 2.8, 4.1]))
    lx, ly = np.log(x), np.log(y)
    b = np.polyfit(lx, ly, 1)[0]
    resid = ly - np.polyval(np.polyfit(lx, ly, 1), lx)
    se = math.sqrt(resid @ resid / 3 / ((lx - lx.mean()) ** 2).sum())
    r = stats.loglog_slope(x, y)
    assert r.slope == pytest.approx(b) and r.stderr == pytest.approx(se)
    half = stats.scipy.stats.t.ppf(0.975, 3) * se
    assert r.ci95 == (pytest.approx(b - half), pytest.approx(b + half))
    with pytest.raises(ReproError):
        stats.loglog_slope([1, 2, 0], [1, 2, 3])


def test_power_paired_t_matches_simulation():
    """Closed-form power of the one-sided paired t-test against 4,000 simulated experiments."""
    from scipy import stats as sps

    from repro.core.stats import n_for_power, power_paired_t

    rng = np.random.default_rng(0)
    n, effect, sd = 5, 0.8, 1.0
    x = rng.normal(effect, sd, size=(4000, n))
    sim = np.mean(sps.ttest_1samp(x, 0.0, axis=1, alternative="greater").pvalue <= 0.05)
    p = power_paired_t(effect, sd, n)
    assert abs(p - sim) < 3 * np.sqrt(p * (1 - p) / 4000) + 0.005
    n80 = n_for_power(lambda k: power_paired_t(effect, sd, max(k, 2)))
    assert power_paired_t(effect, sd, n80) >= 0.8 > power_paired_t(effect, sd, n80 - 1)


def test_power_threshold_and_binomial():
    from repro.core.stats import power_binomial_excess, power_threshold

    assert power_threshold(1.0, 1.0, 0.1) == pytest.approx(0.5)
    assert power_threshold(0.2, 0.5, 0.1, "le") == pytest.approx(1 - power_threshold(0.2, 0.5, 0.1, "ge"))
    assert power_threshold(0.2, 0.5, 0.1, "le") > 0.99
    assert power_binomial_excess(100, 0.05, 0.05) <= 0.05 + 1e-9  # size of the test
    assert power_binomial_excess(400, 0.05, 0.15) > 0.99


def test_a_power_that_cannot_vary_with_the_noise_is_refused():
    """Issue 46: power_threshold(measured, bar, se=0) was SK-2's power — a step function of the
    measurement that failed (0 whenever the test fails). It is refused; a noise-free quantity goes
    through deterministic_power with a declared effect."""
    from repro.core.stats import deterministic_power, power_threshold
    from repro.ground.runtime import ReproError

    for se in (0.0, -1.0, float("nan")):
        with pytest.raises(ReproError, match="step function"):
            power_threshold(0.3, 0.5, se)
    assert deterministic_power(58.5, 10.0) == 1.0 and deterministic_power(5.0, 10.0) == 0.0
    assert deterministic_power(0.02, 0.05, "le") == 1.0
    # the power varies with the noise it is given
    assert power_threshold(0.6, 0.5, 0.05) > power_threshold(0.6, 0.5, 0.2) > 0.5


def test_holm_by_hand():
    from repro.core.stats import holm

    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 × (4, 3, 2, 1) = 0.02, 0.03, 0.06, 0.04 → running max 0.02, 0.03, 0.06, 0.06
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]  # 0.5·2 = 1, then the running maximum
    assert holm([]).size == 0


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_holm_is_between_raw_and_bonferroni(p):
    from repro.core.stats import holm

    a = holm(p)
    raw = np.asarray(p)
    assert np.all(a >= raw - 1e-12) and np.all(a <= np.minimum(1.0, raw * len(p)) + 1e-12)


def test_sd_upper_bound_covers_the_true_sd_at_its_level():
    """The 95% upper bound on σ from n normal draws lies above σ in 95% of samples (20,000
    simulated samples: Monte-Carlo se 0.0015, so ±0.006 is 4 se); the plug-in sd only ≈ 50–60%."""
    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 2.0, size=(20_000, 3))
    sd = x.std(axis=1, ddof=1)
    upper = np.array([stats.sd_upper_bound(s, 3) for s in sd])
    assert abs(float(np.mean(upper >= 2.0)) - 0.95) < 0.006
    assert float(np.mean(sd >= 2.0)) < 0.6  # the plug-in sd lies above σ in only about half
    assert stats.sd_upper_bound(1.0, 3) == pytest.approx(4.4154, abs=1e-4)
    for n, sd_ in ((1, 1.0), (3, float("nan")), (3, -1.0)):
        with pytest.raises(ReproError, match="needs n ≥ 2"):
            stats.sd_upper_bound(sd_, n)


def test_blocked_f_by_hand_and_blocks_removed():
    """The randomised-block F: a table whose rows differ by a constant per block gives the same F
    as the table without the offsets (blocks removed); a hand-computed 3 × 3 case."""
    x = np.array([[1.0, 2.0, 4.0], [2.0, 2.5, 5.5], [0.0, 1.5, 3.5]])
    r = stats.blocked_f(x)
    # grand mean 2.444…, treatment means (1, 2, 4.333…), block means (2.333…, 3.333…, 1.666…)
    ss_t = 3 * sum((m - x.mean()) ** 2 for m in x.mean(0))
    ss_e = float(((x - x.mean(1, keepdims=True) - x.mean(0, keepdims=True) + x.mean()) ** 2).sum())
    assert (r.df_treatments, r.df_error) == (2, 4)
    assert r.statistic == pytest.approx((ss_t / 2) / (ss_e / 4)) and r.ms_error == pytest.approx(ss_e / 4)
    shifted = stats.blocked_f(x + np.array([[10.0], [-3.0], [7.0]]))
    assert shifted.statistic == pytest.approx(r.statistic) and shifted.p == pytest.approx(r.p)
    with pytest.raises(ReproError, match="blocks × treatments"):
        stats.blocked_f(np.ones((1, 4)))


def test_blocked_f_level_and_power_match_simulation():
    """Under no treatment effect (large block effects) the F rejects at its level; under a declared
    layout its rejection rate matches `power_blocked_f` (3 Monte-Carlo se at 3,000 replicates)."""
    g = np.random.default_rng(1)
    reps = 3000
    null = np.mean([stats.blocked_f(g.normal(size=(6, 4)) + 5 * g.normal(size=(6, 1))).p <= 0.05 for _ in range(reps)])
    assert abs(null - 0.05) < 3 * math.sqrt(0.05 * 0.95 / reps)
    mu = np.array([-0.5, 0.5, 0.0, 0.0])
    hit = np.mean(
        [stats.blocked_f(g.normal(size=(10, 4)) + mu + g.normal(size=(10, 1))).p <= 0.05 for _ in range(reps)]
    )
    want = stats.power_blocked_f(mu, 1.0, 10)
    assert abs(hit - want) < 3 * math.sqrt(want * (1 - want) / reps)
    assert stats.power_blocked_f(mu + 3.0, 1.0, 10) == pytest.approx(want)  # any offset
    assert stats.power_blocked_f(np.zeros(4), 1.0, 10) == pytest.approx(0.05)


def test_either_way_names_the_95_percent_size():
    """`stats.either_way`: the smallest n at power 0.95 in words, or "more than n_max"."""
    from repro.core.stats import either_way, n_for_power, power_paired_t

    def at(k: int) -> float:
        return power_paired_t(0.5, 1.0, max(k, 2))

    n95 = n_for_power(at, target=0.95)
    assert n95 > n_for_power(at) and at(n95) >= 0.95 > at(n95 - 1)
    assert either_way(at, "paired seeds") == f"{n95:,} paired seeds"
    assert either_way(lambda k: 0.9, "seeds", n_max=64) == "more than 64 seeds"
