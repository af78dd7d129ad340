"""Verdict rules and record comparisons of repro.harness.report, and what repro.harness.writers shows of them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro.core import stats
from repro.harness import report, writers
from repro.harness.report import Record, verdict_of


def _outcome(outcome: str, power: float | None = None, **declared) -> report.TestOutcome:
    """A test outcome with one check (failing for an xfail) and one power record that covers it at
    the claim's edge from the source (`rules`: what "contradicted" needs); `declared` overrides
    Claim.power's declaration (size, basis, direction_p …) when the test is about it."""
    measured = 1.0 if outcome == "xfailed" else 3.0
    check = Record("BB-1", "the check", measured, 2.0, None, "m", compare="ge", role="check")
    recs = [check.to_dict()]
    if power is not None:
        decl = {"covers": ["the check"], "basis": "source: Table 1", "edge": 0.0, "sd": "none"} | declared
        recs.append(
            Record(
                "BB-1", "power at the source's effect", power, 0.8, None, "m", compare="ge", role="power", power=decl
            ).to_dict()
        )
    return report.TestOutcome("t", ["BB-1"], outcome, records=recs)


@pytest.mark.parametrize(
    "outcomes, verdict",
    [
        ([], report.NOT_ENCODED),
        ([("passed",), ("passed",)], report.REPRODUCED),
        ([("passed",), ("skipped",)], report.REPRODUCED),
        ([("xfailed",)], report.INCONCLUSIVE),  # no power recorded: cannot say "contradicted"
        ([("xfailed", 0.5)], report.INCONCLUSIVE),
        # power ≥ 0.8 is not enough: a true claim at the declared effect would fail this test 20% of
        # the time (size 1 − power = 0.2 > 0.05)
        ([("xfailed", 0.8)], report.INCONCLUSIVE),
        ([("xfailed", 0.95)], report.CONTRADICTED),
        ([("xfailed", 0.96), ("xfailed", 0.3)], report.CONTRADICTED),  # one setting had the power
        ([("passed",), ("xfailed", 0.99)], report.PARTLY),
        ([("skipped",), ("skipped",)], report.SKIPPED),
        ([("passed",), ("failed",)], report.FAILED),
        ([("xfailed", 0.99), ("error",)], report.FAILED),
    ],
)
def test_verdicts(outcomes, verdict):
    assert verdict_of(_outcome(*o).verdict() for o in outcomes) == verdict


def test_a_contradicted_claim_shows_the_power_that_contradicted_it():
    """SF-7: contradicted on one model at power 0.995, inconclusive on the other at 0.795 — the
    claim's power is the 0.995 its verdict rests on (the legend: contradicted means ≥ 0.8)."""
    spec = report.CATALOGUE["SF-7"]
    tests = [_outcome("xfailed", 0.995), _outcome("xfailed", 0.795)]
    verdict = verdict_of(t.verdict() for t in tests)
    assert verdict == report.CONTRADICTED
    assert report.ClaimResult(spec, verdict, tests).power() == 0.995
    inconclusive = [_outcome("xfailed", 0.5), _outcome("xfailed", 0.3)]
    assert report.ClaimResult(spec, report.INCONCLUSIVE, inconclusive).power() == 0.3
    partly = [_outcome("passed", 0.9), _outcome("xfailed", 0.99)]
    assert report.ClaimResult(spec, report.PARTLY, partly).power() == 0.9


def test_power_is_the_smallest_recorded():
    t = _outcome("xfailed", 0.9)
    t.records.append(
        Record("BB-1", "power at the source's effect", 0.7, 0.8, None, "m", compare="ge", role="power").to_dict()
    )
    assert t.power() == 0.7 and t.verdict() == report.INCONCLUSIVE


def test_source_and_threshold_are_two_fields():
    r = Record("BB-1", "ratio", 40.0, 10.0, 0.0, "why", compare="ge", source=58.5, role="check")
    assert r.within is True and r.source == 58.5 and r.expected == 10.0
    assert r.shown() == "40 ≥ 10"
    assert Record("BB-1", "cond", True, compare="true").within is True
    assert Record("BB-1", "cond", False, compare="true").within is False
    with pytest.raises(ValueError):
        Record("BB-1", "x", 1.0, role="verdict")


def test_record_comparisons():
    assert Record("BB-4", "x", 0.31, 1 / math.pi, 0.01, "why").within is True
    assert Record("BB-4", "x", 0.30, 1 / math.pi, 0.01, "why").within is False
    assert Record("BB-4", "x", 1.05, 1.0, 0.1, "why", compare="rel").within is True
    assert Record("BB-4", "x", 0.5, 1.0, 0.0, "why", compare="le").within is True
    assert Record("BB-4", "x", 0.5, 1.0, 0.0, "why", compare="ge").within is False
    assert Record("BB-4", "x", float("nan"), 1.0, 0.1, "why").within is False
    assert Record("BB-4", "x", "text", None).within is None
    with pytest.raises(ValueError):
        Record("BB-4", "x", 1.0, compare="approx")


def test_record_converts_numpy_and_torch_scalars():
    import numpy as np
    import torch

    rec = Record("BB-4", "x", np.float32(0.5), torch.tensor(0.5), 0.1, "why")
    assert type(rec.measured) is float and type(rec.expected) is float and rec.within


@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_fmt_never_crashes(x):
    assert isinstance(report.fmt(x), str)


def test_a_claim_says_the_text_its_tests_read():
    """`claim.corpus` entries of a claim's tests, merged (each name once), as
    claims.json's per-claim "corpus" and report.md's "Text read" line; null / no line without."""
    from repro.harness.catalogue import CATALOGUE

    assert report.corpus_text([]) is None
    assert (
        report.corpus_text(
            [
                {"claims": ["SK-3"], "read": "brown", "shift": None},
                {"claims": ["SK-3"], "read": "brown", "shift": "stdlib-code"},
            ]
        )
        == "brown; shift: stdlib-code"
    )
    assert report.corpus_text([{"read": "a", "shift": None}, {"read": "b", "shift": None}]) == "a, b"
    t1 = report.TestOutcome(
        "claims/t.py::a",
        ["SK-3"],
        "passed",
        corpora=[{"claims": ["SK-3"], "read": "wikitext-2", "shift": "stdlib-code"}],
    )
    t2 = report.TestOutcome("claims/t.py::b", ["SK-1"], "passed")
    results = report.build_results([t1, t2])
    by_id = {c["id"]: c for c in writers.to_json(results, {"corpus": "wikitext-2"})["claims"]}
    assert by_id["SK-3"]["corpus"] == "wikitext-2; shift: stdlib-code" and by_id["SK-1"]["corpus"] is None
    assert set(by_id) == set(CATALOGUE)
    md = writers.to_markdown(results, {"corpus": "wikitext-2"})
    assert "Corpus (`--corpus`): wikitext-2;" in md and md.count("Text read: ") == 1
    assert "Text read: wikitext-2; shift: stdlib-code." in md.split("#### SK-3")[1].split("####")[0]
    # an entry names the claims it is for: another claim's test does not lend it its corpus
    t3 = report.TestOutcome(
        "claims/t.py::c", ["SK-1", "SK-2"], "passed", corpora=[{"claims": ["SK-2"], "read": "brown", "shift": None}]
    )
    got = {r.spec.id: r.corpus() for r in report.build_results([t3])}
    assert got["SK-2"] == "brown" and got["SK-1"] is None


def _check(name: str, measured: float, threshold: float, claim: str = "CS-1") -> dict:
    return Record(claim, name, measured, threshold, None, "stated", compare="ge", role="check").to_dict()


def test_the_headline_is_the_check_that_decided():
    """CS-1 read "contradicted" with a passing check as its headline (`1 vs ≥ 0.5`) and the failing
    one 25 lines down: the headline of a claim that is not reproduced is its failing
    check, and the terminal line and the summary row show its number first."""
    ok, bad = _check("top-5 input match at the embeddings", 1.0, 0.5), _check("switch layer / L", 0.167, 0.5)
    declared = {"covers": ["switch layer / L"], "basis": "source: Fig 2", "edge": 0.0, "size": 0.03}
    power = Record(
        "CS-1", "power at the source's effect", 0.97, 0.8, None, "m", compare="ge", role="power", power=declared
    ).to_dict()
    xfailed = report.TestOutcome("claims/t.py::test_switch", ["CS-1"], "xfailed", records=[power, ok, bad])
    [result] = [r for r in report.build_results([xfailed]) if r.spec.id == "CS-1"]
    assert result.verdict == report.CONTRADICTED
    assert writers.headline(result)["name"] == "switch layer / L"
    line = next(ln for ln in writers.terminal_lines(report.build_results([xfailed]), width=80) if ln.startswith("CS-1"))
    assert "0.167 vs ≥ 0.5 ✗" in line  # the number survives the cut
    row = next(
        ln for ln in writers.to_markdown(report.build_results([xfailed]), {}).splitlines() if ln.startswith("| CS-1 |")
    )
    assert "0.167 vs ≥ 0.5 ✗ — switch layer / L" in row
    assert writers.short_statement(result.spec.statement) in row  # what the claim states, in short
    # a reproduced claim keeps its first asserted check
    passed = report.TestOutcome("claims/t.py::test_switch", ["CS-1"], "passed", records=[ok])
    [result] = [r for r in report.build_results([passed]) if r.spec.id == "CS-1"]
    assert writers.headline(result)["name"] == "top-5 input match at the embeddings"


def test_record_keys_are_unique_and_mask_numbers():
    recs = [
        {"name": "seed 3: Kendall p"},
        {"name": "seed 4: Kendall p"},
        {"name": "after ℓ* = 5", "key": "step"},
        {"name": "other", "key": "step"},
    ]
    assert report.record_keys(recs) == ["seed #: Kendall p", "seed #: Kendall p #2", "step", "step #2"]
    assert report.key_of_label("({n} tokens)".format(n=1_024)) == report.key_of_label("(2048 tokens)")


def test_a_parametrized_tests_records_are_keyed_by_their_parameter_not_their_order():
    """Two models' 'state dict unchanged' are told apart by the model, so a run of one model alone
    pairs with the same model's record in a run of both; a label that names its model already
    keeps its key."""
    both = [{"name": "state dict unchanged"}, {"name": "state dict unchanged"}, {"name": "gemma3-270m: NLL"}]
    params = ["gemma3-270m", "smollm2-135m", "gemma3-270m"]
    keys = report.record_keys(both, params)
    assert keys == ["state dict unchanged [gemma3-270m]", "state dict unchanged [smollm2-135m]", "gemma3-270m: NLL"]
    assert report.record_keys(both[1:2], params[1:2]) == [keys[1]]  # the same key without the other model
    assert report.test_param("claims/t.py::test_x[smollm2-135m]") == "smollm2-135m"
    assert report.test_param("claims/t.py::test_x") == ""
    power = {"name": "power", "key": "power at the source's effect [test_x[smollm2-135m]]"}
    assert report.record_keys([power], ["smollm2-135m"]) == [power["key"]]


@pytest.mark.parametrize(
    "compare, measured, threshold, tol, margin",
    [
        ("ge", 5.0, 10.0, 0.0, 0.5),  # a control at 5 against ≥ 10: half the threshold short of passing
        ("ge", 12.0, 10.0, 0.0, -0.2),  # passes by 0.2 thresholds
        ("le", 0.2, 0.05, 0.0, 3.0),
        ("abs", 1.3, 1.0, 0.1, 2.0),  # 0.3 from 1.0 with tol 0.1: two tolerances outside
        ("rel", 1.5, 1.0, 0.25, 1.0),
    ],
)
def test_margin_is_the_distance_from_passing_in_threshold_units(compare, measured, threshold, tol, margin):
    rec = Record("BB-4", "x", measured, threshold, tol, "stated", compare=compare, role="control")
    assert rec.margin == pytest.approx(margin) and (rec.margin > 0) == (rec.within is False)


def test_not_applicable_is_its_own_verdict():
    """`claim.not_applicable(reason)` (a skip whose reason says so) reads "not applicable", never
    "failed" or "skipped"; beside a decided model it does not change that model's verdict."""
    na = report.TestOutcome("t[gpt2]", ["SF-1"], "skipped", reason="not applicable: no final-norm gain")
    ok = report.TestOutcome("t[qwen2]", ["SF-1"], "passed")
    assert na.verdict() == report.NOT_APPLICABLE
    assert verdict_of([na.verdict()]) == report.NOT_APPLICABLE
    assert verdict_of([na.verdict(), ok.verdict()]) == report.REPRODUCED
    assert verdict_of([na.verdict(), report.SKIPPED]) == report.SKIPPED  # a missing resource says more


@pytest.mark.parametrize(
    "power, declared, verdict",
    [
        # a family of pair tests corrected by Holm: the contradiction has its own size, ≤ 0.05
        (0.88, {"size": 0.05, "size_method": "Holm at 0.05"}, report.CONTRADICTED),
        (0.88, {"size": 0.12, "size_method": "union bound"}, report.INCONCLUSIVE),
        # the power alone is not enough, nor the size alone
        (0.7, {"size": 0.01, "size_method": "Holm"}, report.INCONCLUSIVE),
        # an invented bar cannot contradict an effect significant in the claimed direction
        (
            0.99,
            {"size": 0.01, "size_method": "1 − power", "basis": "interest: our 0.2 sd", "direction_p": 7e-8},
            report.INCONCLUSIVE,
        ),
        (
            0.99,
            {"size": 0.01, "size_method": "1 − power", "basis": "interest: our 0.2 sd", "direction_p": 0.3},
            report.CONTRADICTED,
        ),
        # the source's own number: its significance in the claimed direction does not shield it
        (
            0.99,
            {"size": 0.01, "size_method": "1 − power", "basis": "source: Table 7", "direction_p": 7e-8},
            report.CONTRADICTED,
        ),
    ],
)
def test_contradicted_needs_power_and_family_wise_size(power, declared, verdict):
    t = _outcome("xfailed", power, **declared)
    assert t.verdict() == verdict
    assert t.size() == declared["size"]
    # an inconclusive one says which bar it missed; a contradicted one says nothing
    assert (t.undecided() is None) == (verdict == report.CONTRADICTED)


def test_an_inconclusive_test_says_why_it_is_not_contradicted():
    assert _outcome("xfailed").undecided() == (
        "no power recorded at a declared effect; no power covers the failing check 'the check'"
    )
    assert _outcome("xfailed", 0.7, size=0.01).undecided() == "'the check': power 0.7 < 0.8"
    assert _outcome("xfailed", 0.88, size=0.12).undecided() == "family-wise size 0.12 > 0.05"
    shielded = _outcome("xfailed", 0.99, size=0.01, basis="interest: our 0.2 sd", direction_p=7e-8).undecided()
    assert shielded.startswith("the bar is ours (interest: our 0.2 sd)") and "p = 7.00e-08" in shielded
    assert _outcome("passed", 0.99).undecided() is None
    r = report.ClaimResult(report.CATALOGUE["SF-9"], report.INCONCLUSIVE, [_outcome("xfailed", 0.48, size=0.52)])
    assert writers.to_json([r], {})["claims"][0]["tests"][0]["undecided"] == "'the check': power 0.48 < 0.8"
    assert "- not contradicted (`t`): 'the check': power 0.48 < 0.8" in writers.to_markdown([r], {})


def test_an_inconclusive_test_names_the_sizes_that_would_decide_it_either_way():
    """An underpowered strict xfail says where its weakest power record reaches 80% and, with a size
    of 1 − power, EITHER_WAY (0.95): at 80% a miss still cannot read contradicted."""
    t = _outcome("xfailed", 0.3, size=0.7, decide="40 seeds", decide_either="66 seeds")
    assert t.undecided() == (
        "'the check': power 0.3 < 0.8; 80% power at 40 seeds, 95% (decides either way) at 66 seeds"
    )
    assert _outcome("xfailed", 0.3, size=0.7, decide="40 seeds").undecided().endswith("80% power at 40 seeds")
    assert report.EITHER_WAY == pytest.approx(1 - report.SIZE_ENOUGH) == stats.EITHER_WAY


def test_the_claims_size_is_that_of_the_tests_that_contradicted_it():
    spec = report.CATALOGUE["SF-7"]
    tests = [_outcome("xfailed", 0.995), _outcome("xfailed", 0.5)]
    r = report.ClaimResult(spec, verdict_of(t.verdict() for t in tests), tests)
    assert r.verdict == report.CONTRADICTED and r.size() == pytest.approx(0.005)
    data = writers.to_json([r], {})
    assert data["claims"][0]["size"] == pytest.approx(0.005)
    assert [t["size"] for t in data["claims"][0]["tests"]] == [pytest.approx(0.005), pytest.approx(0.5)]


def test_a_power_key_names_its_test_so_a_test_added_between_shifts_no_pairing():
    from repro.harness.claim import power_key

    before = [{"name": "power at the declared effect", "key": power_key(t)} for t in ("test_a", "test_c")]
    after = [{"name": "power at the declared effect", "key": power_key(t)} for t in ("test_a", "test_b", "test_c")]
    kb, ka = report.record_keys(before), report.record_keys(after)
    assert kb[1] == ka[2] == "power at the source's effect [test_c]"  # test_c's power stays test_c's
    assert len(set(ka)) == 3


def test_a_noise_free_check_on_a_bar_of_ours_is_shielded_as_a_sampled_one():
    """SF-1/2/4/10's checks read fixed weights: noise-free. A missed bar of ours whose value lies
    beyond its null in the claimed direction shields the test, as a significant sampled effect does
    (`spectral_filters.noise_free.deterministic`); a missed source bar, or a value at or short of its
    null, does not."""
    from repro.spectral_filters import noise_free as power

    def verdict(values):
        p = power.sf2_power_record("m", 4, values)
        rec = p.to_dict() | {"covers": ["all checks"]}  # the synthetic test's one failing check
        return p.direction_p, _outcome("xfailed", p.value, **rec).verdict()

    ratio, w2 = "largest U-dark share / chance", "U-dark share of the most dark-writing early W_2"
    # 1.4× chance against a random basis's 1.0×: the effect is there, only our 3× says it is small
    assert verdict({ratio: (1.4, 1.0), w2: (0.6, 0.05)}) == (0.0, report.INCONCLUSIVE)
    # at its null (a random basis reads as much): no effect to shield, contradicted
    assert verdict({ratio: (1.0, 1.0), w2: (0.6, 0.05)}) == (None, report.CONTRADICTED)
    # one missed check without a null: no shield
    assert verdict({ratio: (1.4, None), w2: (0.6, 0.05)}) == (None, report.CONTRADICTED)
    # nothing missed: nothing to shield
    assert verdict({ratio: (4.0, 1.0), w2: (0.6, 0.05)})[0] is None
    # a missed source bar is never shielded (SF-4's ℓ*/L), whatever the other checks
    kw = power.sf4_power_record(100, 3, {"ℓ*/L": (0.7, None), "token 0's norm / the median other token's": (3.0, 1.0)})
    assert kw.direction_p is None
    with pytest.raises(ValueError, match="undeclared"):
        power.sf2_power_record("m", 4, {"no such check": (1.0, 0.0)})


def test_a_claim_reads_contradicted_only_under_the_union_bound_of_its_tests_sizes():
    """Any test that reads contradicted makes the claim read so, so the claim's family-wise size is
    the sum of those tests' sizes: two tests at 0.03 each are 0.06 together, inconclusive."""
    a = _outcome("xfailed", 0.99, size=0.03, size_method="1 − power")
    b = _outcome("xfailed", 0.99, size=0.03, size_method="1 − power")
    c = _outcome("xfailed", 0.99, size=0.01, size_method="1 − power")
    weak = _outcome("xfailed", 0.5, size=0.5, size_method="1 − power")  # cannot contradict: not counted
    assert all(t.verdict() == report.CONTRADICTED for t in (a, b, c))
    pairs = lambda ts: [(t.verdict(), t.size()) for t in ts]  # noqa: E731
    assert report.union_size(pairs([a, b])) == pytest.approx(0.06)
    assert report.claim_verdict(pairs([a, b])) == report.INCONCLUSIVE
    assert report.claim_verdict(pairs([a, c, weak])) == report.CONTRADICTED
    r = report.ClaimResult(report.CATALOGUE["SF-7"], report.claim_verdict(pairs([a, c, weak])), [a, c, weak])
    assert r.size() == pytest.approx(0.04)
    assert report.union_size(pairs([weak])) is None
