"""Verdict rules and record comparisons of repro.harness.report."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro.harness import report
from repro.harness.report import Record, verdict_of


def _outcome(outcome: str, power: float | None = None) -> report.TestOutcome:
    recs = [] if power is None else [Record("BB-1", "power at the source's effect", power, 0.8, None, "m",
                                            compare="ge", role="power").to_dict()]
    return report.TestOutcome("t", ["BB-1"], outcome, records=recs)


@pytest.mark.parametrize(
    "outcomes, verdict",
    [
        ([], report.NOT_ENCODED),
        ([("passed",), ("passed",)], report.REPRODUCED),
        ([("passed",), ("skipped",)], report.REPRODUCED),
        ([("xfailed",)], report.INCONCLUSIVE),  # no power recorded: cannot say "contradicted"
        ([("xfailed", 0.5)], report.INCONCLUSIVE),
        ([("xfailed", 0.8)], report.CONTRADICTED),
        ([("xfailed", 0.95), ("xfailed", 0.3)], report.CONTRADICTED),  # one setting had the power
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
    t.records.append(Record("BB-1", "power at the source's effect", 0.7, 0.8, None, "m", compare="ge",
                            role="power").to_dict())
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
    """Issue 20 item 5: `claim.corpus` entries of a claim's tests, merged (each name once), as
    claims.json's per-claim "corpus" and report.md's "Text read" line; null / no line without."""
    from repro.harness.catalogue import CATALOGUE

    assert report.corpus_text([]) is None
    assert report.corpus_text([{"claims": ["SK-3"], "read": "brown", "shift": None},
                               {"claims": ["SK-3"], "read": "brown", "shift": "stdlib-code"}]) == "brown; shift: stdlib-code"
    assert report.corpus_text([{"read": "a", "shift": None}, {"read": "b", "shift": None}]) == "a, b"
    t1 = report.TestOutcome("claims/t.py::a", ["SK-3"], "passed",
                            corpora=[{"claims": ["SK-3"], "read": "wikitext-2", "shift": "stdlib-code"}])
    t2 = report.TestOutcome("claims/t.py::b", ["SK-1"], "passed")
    results = report.build_results([t1, t2])
    by_id = {c["id"]: c for c in report.to_json(results, {"corpus": "wikitext-2"})["claims"]}
    assert by_id["SK-3"]["corpus"] == "wikitext-2; shift: stdlib-code" and by_id["SK-1"]["corpus"] is None
    assert set(by_id) == set(CATALOGUE)
    md = report.to_markdown(results, {"corpus": "wikitext-2"})
    assert "Corpus (`--corpus`): wikitext-2;" in md and md.count("Text read: ") == 1
    assert "Text read: wikitext-2; shift: stdlib-code." in md.split("#### SK-3")[1].split("####")[0]
    # an entry names the claims it is for: another claim's test does not lend it its corpus
    t3 = report.TestOutcome("claims/t.py::c", ["SK-1", "SK-2"], "passed",
                            corpora=[{"claims": ["SK-2"], "read": "brown", "shift": None}])
    got = {r.spec.id: r.corpus() for r in report.build_results([t3])}
    assert got["SK-2"] == "brown" and got["SK-1"] is None
