"""The SP claims' statistics outside the models: `study.Calibration`'s model-level bootstrap of a
false-positive rate (001 App B.3.1's null, pairs sharing models) and its power against 5α,
`verdicts`' decisions on a pair and on a family of unrelated pairs (Holm at family-wise α, its
control swapped in; the source's per-pair rule) and `null_verdicts`' rate tests, read from what
they hand the claim file (`repro.core.readings`: Readings, Controls, Powers; nothing under
`repro/` takes the harness's `claim`)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import norm

from repro.core import stats
from repro.core.readings import Power, Reading
from repro.seedprint import null_verdicts, verdicts
from repro.seedprint.study import BOOT_REPLICATES, Calibration


def _checks(steps: verdicts.Steps) -> list[tuple]:
    """The asserted (Reading, Control | None) pairs of a helper's steps."""
    return [st for st in steps if isinstance(st, tuple)]


def _records(steps: verdicts.Steps) -> list[Reading]:
    """The recorded (not asserted) Readings of a helper's steps."""
    return [st for st in steps if isinstance(st, Reading)]


def _row(pair: str, p_t: float, p_u: float, same: bool = False) -> dict:
    return dict(pair=pair, p_t=p_t, p_u=p_u, same=same, p_released=0.5)


# --------------------------------------------------------------------------- calibration: model-level bootstrap


def _cal_rows(n_models: int, flagged: set[int]) -> list[dict]:
    pairs = itertools.combinations([f"m{i}" for i in range(n_models)], 2)
    return [
        dict(a=a, b=b, p_t=0.5, p_u=1e-4 if i in flagged else 0.5, p_released=0.5) for i, (a, b) in enumerate(pairs)
    ]


def test_model_bootstrap_p_bounds_and_determinism():
    none = Calibration("none", _cal_rows(6, set()))
    assert none.boot_p("p_u") == 1.0  # every resampled rate is 0
    every = Calibration("all", _cal_rows(6, set(range(15))))
    assert every.boot_p("p_u") == pytest.approx(1 / (1 + BOOT_REPLICATES), rel=0.05)  # no replicate at or below α
    some = Calibration("some", _cal_rows(7, {0, 5}))
    assert some.boot_p("p_u") == some.boot_p("p_u")  # seeded
    assert 0.0 < some.boot_p("p_u") <= 1.0


def test_model_bootstrap_is_wider_than_the_binomial_when_flags_share_a_model():
    """Two flagged pairs among 21 of 7 models: the binomial test treats the pairs as independent;
    resampling the models, the flags go with their models, so the evidence of an excess is weaker."""
    c = Calibration("shared", _cal_rows(7, {0, 1}))  # (m0, m1) and (m0, m2): both through m0
    assert c.binom_p("p_u") < 0.05 < c.boot_p("p_u")
    assert c.binom_p_below("p_u") > 0.5  # the lower side: 2 of 21 is not "too few"


# --------------------------------------------------------------------------- verdicts


def test_check_pair_asks_a_match_of_one_lineage_and_none_of_two():
    same, other = _row("a vs b", 1e-5, 2e-4, same=True), _row("a vs c", 0.4, 0.6)
    (r1, _), (r2, c2) = verdicts.check_pair(same, control=other, source=(1e-9, 1e-8))
    (r3, c3), _ = verdicts.check_pair(other)
    assert (r1.name, r1.measured, r1.threshold, r1.compare, r1.source) == (
        "a vs b: Alg. 1 t-test p",
        1e-5,
        0.01,
        "le",
        1e-9,
    )
    assert (r2.name, r2.measured, c2.measured, c2.name) == (
        "a vs b: Alg. 1 U-test p",
        2e-4,
        0.6,
        "a vs c (different lineage)",
    )
    assert c2.valid  # a pair of the other lineage can always serve
    assert (r3.name, r3.measured, r3.compare, r3.why) == ("a vs c: Alg. 1 t-test p", 0.4, "ge", verdicts.WHY_DIFFERENT)
    assert c3 is None and r3.source is None


def test_no_false_positive_is_holm_over_both_tests_of_every_pair():
    rows = [_row("x", 0.3, 0.02), _row("y", 0.004, 0.8)]
    ctl = _row("z", 1e-6, 1e-7, same=True)
    steps = verdicts.check_no_false_positive(rows, [ctl, ctl], [(0.5, 0.4), (0.6, 0.7)])
    checks, records = _checks(steps), _records(steps)
    # each raw p is recorded just before its Holm-adjusted check
    assert [type(st).__name__ for st in steps] == ["Reading", "tuple"] * 4
    adjusted = stats.holm([0.3, 0.02, 0.004, 0.8])
    assert [r.measured for r, _ in checks] == pytest.approx(list(adjusted))
    assert [r.measured for r in records] == [0.3, 0.02, 0.004, 0.8]  # the raw p's, beside them
    assert [r.source for r in records] == [0.5, 0.4, 0.6, 0.7]
    assert checks[2][0].name == "y: Alg. 1 t-test p, Holm over 4 tests" and checks[2][0].threshold == 0.01
    # the control takes each test's place in turn: y's t-test replaced by z's
    assert checks[2][1].measured == pytest.approx(stats.holm([0.3, 0.02, 1e-6, 0.8])[2])
    assert verdicts.flagged_pairs(rows) == "y (t 0.004, U 0.8)"
    assert verdicts.flagged_pairs(rows[:1]) == "none"


def test_the_fpr_family_is_holm_over_each_kind_and_test():
    cal = Calibration("some", _cal_rows(7, {0, 5}))
    ctl = null_verdicts.rate_control(Calibration("all", _cal_rows(6, set(range(15)))), 2, "a test")
    checks = null_verdicts.fpr_checks([cal], ctl)
    ps = [cal.boot_p("p_t"), cal.boot_p("p_u")]
    assert [r.measured for r, _ in checks] == pytest.approx(list(stats.holm(ps)))
    assert all(r.not_rejected and r.compare == "ge" for r, _ in checks)  # a pass only fails to reject
    assert checks[1][1].measured == pytest.approx(stats.holm([ps[0], ctl[0].boot_p("p_u")])[1])
    assert all(null_verdicts.RATE_CHECK in r.name for r, _ in checks)  # what fpr_power covers
    readings, rows = null_verdicts.fpr_table(cal)
    assert [r[1] for r in rows] == ["t-test", "U-test", "released variant"] and rows[1][2] == 2
    assert readings[1].measured == pytest.approx(2 / 21)


def test_the_rate_power_is_against_5_alpha_and_a_control_serves_only_where_it_can_be_seen():
    """Issue 64 (SP-6): the rate test passes by not rejecting "rate ≤ α", so its power is stated
    against a declared alternative (5α), simulated on the pairs' own models. On the zoo's 7 models
    (17 pairs) the bootstrap cannot see 5α — nor 0.2 (`test_the_model_level_bootstrap_…` below) — so
    neither the power nor the trained pairs as a control can carry a verdict; on 60 independent
    models (1,770 pairs) it can."""
    from repro.harness import rules

    assert null_verdicts.POWER_ENOUGH == rules.POWER_ENOUGH
    zoo = Calibration("trained × trained", _cal_rows(7, {0, 5})[:17])
    big = Calibration("60 inits", _cal_rows(60, set()))
    low, high = (null_verdicts.fpr_power([c]) for c in (zoo, big))
    assert low.value < 0.5 and high.value >= 0.8
    assert low.against and low.covers == (null_verdicts.RATE_CHECK,) and low.basis.startswith("interest:")
    assert low.size == 0.05 and low.effect_value == pytest.approx(0.05)
    assert zoo.power_against("p_u", 0.2, 0.025) < 0.5  # even 0.2 is seldom seen with 7 models
    assert zoo.power_against("p_u", 0.2, 0.025) == zoo.power_against("p_u", 0.2, 0.025)  # seeded
    _, ok, why = null_verdicts.rate_control(zoo, 2, "shows")
    assert not ok and "cannot show the excess" in why
    assert null_verdicts.rate_control(big, 2, "shows")[1]


def test_the_per_pair_rule_counts_a_flagged_pair_as_a_miss():
    """SP-3 (issue 64): the source's rule, p < 0.01 ⇒ same lineage, pair by pair — an unrelated
    pair at U p 0.0036 fails its check, where Holm over 12 tests (0.0036 × 12 = 0.043) let it pass;
    the power is Bonferroni's 1 − 2nα and a miss's size 2nα."""
    rows = [_row(f"p{i}", 0.5, 0.5) for i in range(5)] + [_row("base1000 vs base2000", 0.02, 0.0036)]
    holm = stats.holm([p for r in rows for p in (r["p_t"], r["p_u"])])
    assert min(holm) >= 0.01  # the old reading: no pair flagged
    checks = [c for r in rows for c in verdicts.check_pair(r)]
    failed = [(r.name, r.measured) for r, _ in checks if r.measured < r.threshold]
    assert failed == [("base1000 vs base2000: Alg. 1 U-test p", 0.0036)]
    power = verdicts.power_each_pair(len(rows), "six pairs", "source: Table 4c")
    assert isinstance(power, Power)
    assert power.value == pytest.approx(1 - 12 * 0.01) and power.size == pytest.approx(0.12)
    assert power.covers == ("Alg. 1",) and power.edge == 0.0
    # the power covers every pair's check (a check's name contains "Alg. 1")
    assert all(any(c in r.name for c in power.covers) for r, _ in checks)


def _simulated_level(rate: float, shared: bool, sims: int, seed: int) -> float:
    """Share of simulated calibrations whose model-level bootstrap p (`Calibration.boot_p`)
    falls under 0.05: 17 pairs of 7 models (the zoo's design), each flagged at `rate` —
    independently, or through a latent per-model effect that pairs sharing a model share
    (correlation 0.25 between such pairs, the marginal rate kept)."""
    from repro.seedprint.study import ALPHA, TESTS

    key = TESTS[0][0]
    pairs = list(itertools.combinations(range(7), 2))[:17]
    rng = np.random.default_rng(seed)
    rejected = 0
    for s in range(sims):
        if shared:
            z = rng.normal(0.0, 0.5, 7)
            flags = [z[a] + z[b] + rng.normal(0.0, 0.5**0.5) > norm.ppf(1.0 - rate) for a, b in pairs]
        else:
            flags = list(rng.random(len(pairs)) < rate)
        if any(flags):
            rows = [{"a": a, "b": b, **{k: 0.0 if f else 1.0 for k, _ in TESTS}} for (a, b), f in zip(pairs, flags)]
            rejected += Calibration(f"sim{s}", rows).boot_p(key, 200) < 0.05
    assert ALPHA == 0.01
    return rejected / sims


def test_the_model_level_bootstrap_holds_its_level_with_seven_models():
    """SP-3/SP-6's rate test with the zoo's 7 models and 17 pairs keeps its nominal 0.05 under
    the source's null (rate α = 0.01), pairs independent or sharing a per-model effect (1,000
    simulated calibrations each: a level of 0.05 would show ≈ 50 ± 7 rejections). Measured: no
    rejection at all — the test is conservative. The control that it can reject: a rate of 0.3
    (30 × α) is flagged in ≈ 23% of calibrations; a rate of 0.2 in ≈ 5%, so with 17 pairs it
    cannot tell a rate of 0.01 from one of 0.2: a pass says the rate is not gross, no more."""
    for shared in (False, True):
        assert _simulated_level(0.01, shared, 1000, seed=1) <= 0.05
    assert _simulated_level(0.3, False, 300, seed=2) > 0.1


# --------------------------------------------------------------------------- SP-6's "≈ α" bound


def test_the_binomial_upper_bound_is_exact_and_covers():
    """Clopper–Pearson's one-sided bound: 0 of 16 gives 1 − 0.05^(1/16); n of n gives 1; and over
    many draws at a true rate the bound falls below it at most 5% of the time."""
    assert stats.binomial_upper(0, 16) == pytest.approx(1 - 0.05 ** (1 / 16))
    assert stats.binomial_upper(5, 5) == 1.0
    rng = np.random.default_rng(0)
    for rate, n in ((0.01, 350), (0.1, 40)):
        ks = rng.binomial(n, rate, size=4000)
        miss = np.mean([stats.binomial_upper(int(k), n) < rate for k in ks])
        assert miss <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 4000), (rate, n, miss)
    with pytest.raises(stats.ReproError):
        stats.binomial_upper(3, 2)


def test_the_bound_has_no_power_with_few_pairs_and_reaches_80_percent_near_350():
    assert stats.power_binomial_bound(16, 0.01, null_verdicts.FPR_BOUND) == 0.0  # ci: no outcome clears 0.03
    assert stats.power_binomial_bound(36, 0.01, null_verdicts.FPR_BOUND) == 0.0  # the old paper: 72 inits
    assert stats.power_binomial_bound(350, 0.01, null_verdicts.FPR_BOUND) >= 0.8
    assert stats.power_binomial_bound(350, 0.05, null_verdicts.FPR_BOUND) < 0.05  # a rate above the bound rarely passes


def test_disjoint_pairs_share_no_model_and_the_bound_reads_only_them():
    rows = [dict(a=f"m{a}", b=f"m{b}", p_t=0.5, p_u=0.5) for a, b in itertools.combinations(range(6), 2)]
    rows[1]["p_t"] = 0.001  # (m0, m2): a false positive outside the disjoint pairs
    cal = Calibration("six inits", rows)
    pairs = [(r["a"], r["b"]) for r in cal.disjoint()]
    assert pairs == [("m0", "m1"), ("m2", "m3"), ("m4", "m5")]
    assert cal.upper("p_t") == (0, 3, pytest.approx(stats.binomial_upper(0, 3)))


def test_check_fpr_bound_asserts_both_tests_with_the_lineage_as_control():
    null = [dict(a=f"n{2 * i}", b=f"n{2 * i + 1}", p_t=0.5, p_u=0.5) for i in range(400)]
    lineage = [dict(a=f"l{2 * i}", b=f"l{2 * i + 1}", p_t=1e-9, p_u=1e-9) for i in range(4)]
    cal = Calibration("null", null)
    checks = null_verdicts.bound_checks(cal, Calibration("lineage", lineage))
    upper, lower = checks[0::2], checks[1::2]  # per test: the upper bound, then the low side
    assert [r.threshold for r, _ in upper] == [null_verdicts.FPR_BOUND] * 2 and [r.threshold for r, _ in lower] == [
        0.05
    ] * 2
    assert all(r.measured <= null_verdicts.FPR_BOUND for r, _ in upper)  # 0 of 400: bound 0.0075
    assert all(c.measured == 1.0 for _, c in upper)  # every lineage pair flagged: the bound fails
    assert all(c is None for _, c in lower)
    assert all(r.measured == pytest.approx((1 - null_verdicts.FPR_FLOOR) ** 400) for r, _ in lower)
    assert all(r.measured > 0.05 for r, _ in lower)
    p = null_verdicts.bound_power(cal)
    assert p.value >= 0.8 and p.effect_value == 0.01 and "disjoint pairs" in p.decide
    # its size is 1 − power (a rate of α fails that often), not the bound's 5% coverage; no edge is
    # stated, so a miss cannot read contradicted
    assert p.size is None and p.edge is None and p.decide_either.endswith("disjoint pairs")


def test_the_low_side_fails_only_on_evidence_of_a_rate_far_below_alpha():
    """SP-6 two-sided: 0 false positives of 1,500 independent pairs is significantly below α/3
    (p = e^-5), 0 of 400 is not; the power at α counts both sides and stays near the one-sided's."""
    assert (
        stats.binomial_below_p(0, 1500, null_verdicts.FPR_FLOOR)
        < 0.05
        < stats.binomial_below_p(0, 400, null_verdicts.FPR_FLOOR)
    )
    one = stats.power_binomial_bound(2000, 0.01, null_verdicts.FPR_BOUND)
    two = stats.power_binomial_bound(2000, 0.01, null_verdicts.FPR_BOUND, floor=null_verdicts.FPR_FLOOR)
    assert 0.95 < two <= one
    # a rate of α/10 fails the low side more often than not at 2,000 pairs; the one-sided bound never
    assert stats.power_binomial_bound(2000, 0.001, null_verdicts.FPR_BOUND, floor=null_verdicts.FPR_FLOOR) < 0.5


def test_a_descendant_without_its_real_null_ends_at_the_null_check():
    """Table 6 (SP-5) on a model whose profile trains no real null (a user's model, the ci sizes):
    the steps end at the failing "was built" check — the claim file's `claim.check` raises there —
    and building them does not read the missing null (the helpers hand every step at once)."""
    from repro.seedprint.study import Descendant

    d = Descendant(
        tokens=5120,
        nll_before=np.array([3.0, 3.1, 2.9]),
        nll_after=np.array([2.8, 2.7, 2.85]),
        rel_change=0.01,
        name="tiny",
        pair=_row("tiny vs its fine-tune", 1e-8, 1e-9, same=True),
        null=_row("tiny vs an init", 0.5, 0.6),
        trained_null=None,
    )
    (learned, _), (built, _) = steps = verdicts.check_descendant(d, built=False)
    assert len(steps) == 2 and built.compare == "true" and built.measured is False
    assert learned.compare == "ge" and learned.threshold == 0.0
    with_null = Descendant(**{**d.__dict__, "trained_null": _row("tiny vs a trained null", 0.4, 0.3)})
    assert len(verdicts.check_descendant(with_null, built=True)) == 2 + 2 * 2  # + both pairs' t and U
