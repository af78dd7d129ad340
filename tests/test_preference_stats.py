"""repro.born_biased's §3 statistics: the head's own null (`head_null`: argmax rates of isotropic
states, the top count's distribution under them), the powers of the preference tests
(`preference_power`) and BB-1.3's held-out favourite (`preference_stats`), against closed forms,
simulation and hand values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from repro.born_biased import head_null, preference_power, preference_stats
from repro.core import stats

# --------------------------------------------------------------------------- the head's own null and the powers


def test_gaussian_argmax_rates_equal_scales_are_uniform():
    np.testing.assert_allclose(head_null.gaussian_argmax_rates(np.full(17, 3.0)), np.full(17, 1 / 17))
    with pytest.raises(ValueError):
        head_null.gaussian_argmax_rates([1.0, 0.0])


def test_gaussian_argmax_rates_two_variables_closed_form():
    # two independent zero-mean Gaussians: each wins half the time, whatever the scales
    np.testing.assert_allclose(head_null.gaussian_argmax_rates([1.0, 3.0]), [0.5, 0.5], atol=1e-6)


def test_gaussian_argmax_rates_match_monte_carlo():
    """V = 200 independent Gaussians with scales spread ±10%: 400,000 draws, each rate within
    5 binomial SEs of its count (SE = √(q(1−q)/n) ≈ 2.2e-4 at q = 1/200), and the long-scale
    tokens clearly favoured."""
    rng = np.random.default_rng(0)
    s = 1 + 0.1 * rng.standard_normal(200)
    q = head_null.gaussian_argmax_rates(s)
    n = 400_000
    wins = np.concatenate([np.argmax(rng.standard_normal((50_000, 200)) * s, axis=1) for _ in range(n // 50_000)])
    freq = np.bincount(wins, minlength=200) / n
    se = np.sqrt(q * (1 - q) / n)
    assert np.all(np.abs(freq - q) < 5 * se + 1e-12)
    assert q[np.argmax(s)] > 3 * q[np.argmin(s)]


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 30), st.integers(1, 2000), st.integers(10, 60000))
def test_null_top_log10_p_with_uniform_rates_is_app_b2(k, n, V):
    assume(k <= n)
    assert head_null.null_top_log10_p(k, n, np.full(V, 1 / V)) == pytest.approx(
        stats.bonferroni_binomial_log10_p(k, n, V), abs=1e-9
    )


def test_null_top_log10_p_deep_tail_does_not_underflow():
    V = 50257
    a = head_null.null_top_log10_p(700, 10_000, np.full(V, 1 / V))
    assert a == pytest.approx(stats.bonferroni_binomial_log10_p(700, 10_000, V), abs=1e-6)
    q = np.full(V, 1 / V)
    q[:10] *= 5
    q /= q.sum()
    assert head_null.null_top_log10_p(700, 10_000, q) > a  # a more concentrated null: a larger p


def test_top_count_distribution_helpers():
    V, n = 1000, 50
    q = np.full(V, 1 / V)
    # E[top count] of uniform draws against simulation (4,000 runs: SE ≈ 0.01)
    rng = np.random.default_rng(1)
    sim = np.mean([np.bincount(rng.integers(0, V, n)).max() for _ in range(4000)])
    assert head_null.expected_top_count(n, q) == pytest.approx(sim, abs=0.05)
    k99 = head_null.null_top_count_quantile(n, q, 0.99)
    assert head_null.null_top_count_cdf(k99, n, q) >= 0.99 > head_null.null_top_count_cdf(k99 - 1, n, q)
    k = head_null.critical_top_count(n, q, math.log10(0.05))
    assert head_null.null_top_log10_p(k, n, q) <= math.log10(0.05) < head_null.null_top_log10_p(k - 1, n, q)
    # power: ~α with no favourite, → 1 for a strong one
    assert head_null.top_count_power(n, q, 1 / V, math.log10(0.05)) < 0.05
    assert head_null.top_count_power(n, q, 0.3, math.log10(0.05)) > 0.99


def test_power_pooled_share_against_simulation():
    rng = np.random.default_rng(2)
    for fa, fb in ((0.03, 0.02), (0.02, 0.02)):
        a, b = rng.binomial(800, fa, 20000), rng.binomial(800, fb, 20000)
        p = scipy.stats.binom.sf(a - 1, a + b, 0.5)
        sim = np.mean(np.where(a + b == 0, False, p < 0.05))
        assert preference_power.power_pooled_share(800, fa, 800, fb, 0.05) == pytest.approx(sim, abs=0.015)


def test_power_at_most_share_against_simulation():
    """BB-1.1's "far weaker" power (k fixed, the other count binomial) against a simulation of the
    same test, at a weak and a strong setting."""
    rng = np.random.default_rng(3)
    for k, n, f in ((13, 2400, 0.015), (13, 2400, 0.03), (40, 60000, 0.027)):
        g = rng.binomial(n, f, 20000)
        sim = np.mean(scipy.stats.binom.cdf(k, k + g, 1 / 3) < 0.01)
        assert preference_power.power_at_most_share(k, n, f, 1 / 3, 0.01) == pytest.approx(sim, abs=0.015)
    assert preference_power.power_at_most_share(40, 60000, 0.027, 1 / 3, 0.01) > 0.99


def test_wilson_covers_matches_stats_binomial_ci():
    for k in range(31):
        ci = stats.binomial_ci(k, 30)
        for v in (0.1, 0.5, 0.76):
            assert bool(preference_power.wilson_covers(np.array([k]), 30, v)[0]) == (ci.low <= v <= ci.high)


def test_mode_agreement_power_limits():
    # a favourite far ahead of every other token: the mode is always it, power = interval coverage
    rc = np.zeros((30, 5))
    rc[:, 0] = 200
    p = preference_power.mode_agreement_power(rc, 256, 50_000, 0.76, sims=2000)
    cover = scipy.stats.binom.pmf(np.arange(31), 30, 0.76) @ preference_power.wilson_covers(np.arange(31), 30, 0.76)
    assert p == pytest.approx(cover, abs=0.03)
    # no favourite at all (every model's top counts tied at 1): the mode is a random token
    flat = np.ones((30, 5))
    assert preference_power.mode_agreement_power(flat, 256, 50_000, 0.76, sims=500) < 0.05


# --------------------------------------------------------------------------- BB-1.3's held-out favourite


def test_held_out_favourite_by_hand():
    a = np.array([3, 3, 1, 3, 2, 1, 3, 0])  # first half chooses 3 (3 of 4); held-out half: 2, 1, 3, 0
    b = np.array([0, 0, 0, 0, 3, 3, 1, 1])  # the other model on the same sequences
    fav = preference_stats.held_out_favourite(a, b, vocab_size=4)
    assert (fav.token, fav.n_held) == (3, 4)
    assert fav.own == pytest.approx(0.25) and fav.other == pytest.approx(0.5)
    with pytest.raises(ValueError):
        preference_stats.held_out_favourite(a, b[:-1], 4)


def test_held_out_favourite_removes_the_winners_curse():
    """Uniform draws (no favourite): chosen and counted on the same draws the top token's frequency
    sits far above 1/V (the winner's curse); counted on the held-out half it is unbiased. 2,000
    replicates of N = 200 over V = 50: the held-out mean's SE is ≈ √(0.02·0.98/100/2000) ≈ 3e-4,
    so 5 SE ≈ 0.0016."""
    rng = np.random.default_rng(7)
    V, N = 50, 200
    held, same = [], []
    for _ in range(2000):
        a, b = rng.integers(0, V, N), rng.integers(0, V, N)
        held.append(preference_stats.held_out_favourite(a, b, V).own)
        same.append(np.bincount(a, minlength=V).max() / N)
    assert abs(np.mean(held) - 1 / V) < 0.0016
    assert np.mean(same) > 2 / V


def test_held_out_power_matches_simulation():
    """held_out_power against 4,000 simulated held-out checks: V = 200 tokens, a favourite at 5%
    (the last id, so np.argmax's lowest-index tie-break loses every tie, as the closed form
    counts them), the others uniform, N = 120. Tolerance: 4 SE (≈ 0.031) + 0.02 for the
    Poissonised top count (token counts treated as independent)."""
    rng = np.random.default_rng(11)
    V, N, rate, other = 200, 120, 0.05, 1 / 200
    probs = np.full(V, (1 - rate) / (V - 1))
    probs[-1] = rate
    null_rates = probs.copy()
    null_rates[-1] = 0.0
    hits = 0
    for _ in range(4000):
        a = rng.choice(V, N, p=probs)
        b = np.where(rng.random(N) < other, V - 1, rng.integers(0, V - 1, N))
        f = preference_stats.held_out_favourite(a, b, V)
        hits += f.token == V - 1 and (f.own - f.other) * f.n_held >= 1
    sim, se = hits / 4000, math.sqrt(0.25 / 4000)
    assert abs(preference_power.held_out_power(N, rate, null_rates, other) - sim) < 4 * se + 0.02


def test_pair_agreement_by_hand():
    assert preference_stats.pair_agreement([1, 1, 1]) == 1.0
    assert preference_stats.pair_agreement([1, 2, 3, 4]) == 0.0
    assert preference_stats.pair_agreement(np.array([5, 5, 7])) == pytest.approx(1 / 3)


def test_the_size_effect_is_the_sources_at_its_step_and_less_at_a_smaller_one():
    """BB-1.2's declared size effect: Table 1(c)/(a)'s ratio over the source's step in weights
    (nano → 1.2B, ≈ 14.2×), carried log-linearly to ours; never beyond the source's ratio."""
    from repro.born_biased import catalogue

    step = preference_stats.source_scale_step(catalogue.number("BB-1.2", "size_step"))
    assert step == pytest.approx(24 * 2048**2 / (12 * 768**2))
    r = 1.44
    assert preference_power.size_effect(r, step, step) == pytest.approx(r)
    assert preference_power.size_effect(r, 10 * step, step) == pytest.approx(r)  # not extrapolated
    assert preference_power.size_effect(r, 1.0, step) == 1.0
    assert 1.0 < preference_power.size_effect(r, 3.0, step) < preference_power.size_effect(r, 6.0, step) < r
    assert preference_power.size_effect(r, 3.0, step) == pytest.approx(r ** (math.log(3) / math.log(step)))
