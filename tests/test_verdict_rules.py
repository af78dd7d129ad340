"""The verdict rules (`repro.harness.rules`, issue 64 item 2), each on a synthetic record set that read
otherwise under the rules before them (a test-level power that stood for every check, budget
effects, sizes at the declared effect, plug-in sds, nulls that could not serve, passes that only
failed to reject a null): the comment on each case says what it read then."""

from __future__ import annotations

import pytest

from repro.core.readings import ALL_CHECKS, Control, Power, Reading
from repro.harness import report
from repro.harness.report import Record

SOURCE = dict(
    effect="the source's effect",
    basis="source: Table 1",
    test="one-sided t",
    sample="8 seeds",
    method="closed form",
    decide="12 seeds",
)


def _check(name: str, holds: bool, **kw) -> dict:
    return Record("BB-1", name, 3.0 if holds else 1.0, 2.0, None, "bar", compare="ge", role="check", **kw).to_dict()


def _power(value: float, covers, **kw) -> dict:
    p = Power(value, tuple(covers), **(SOURCE | kw))
    return Record(
        "BB-1", "power at the declared effect", p.value, 0.8, None, "m", compare="ge", role="power", power=p.to_dict()
    ).to_dict()


def _verdict(outcome: str, *records: dict) -> tuple[str, str | None]:
    t = report.TestOutcome("claims/t.py::test_x", ["BB-1"], outcome, records=list(records))
    return t.verdict(), t.undecided()


def test_a_qualifying_power_on_the_failing_check_contradicts():
    v, why = _verdict("xfailed", _check("a", True), _check("b", False), _power(0.97, ["b"], edge=0.0))
    assert (v, why) == (report.CONTRADICTED, None)


def test_a_power_of_another_check_does_not_cover_the_one_that_failed():
    # before: contradicted (one power per test stood for every check; the unmodelled one counted as power 1)
    v, why = _verdict("xfailed", _check("b", False), _power(0.97, ["a"], edge=0.0))
    assert v == report.INCONCLUSIVE and "no power covers the failing check 'b'" in why


def test_a_power_for_all_checks_covers_each():
    assert _verdict("xfailed", _check("b", False), _power(0.97, [ALL_CHECKS], edge=0.0))[0] == report.CONTRADICTED


def test_a_check_named_with_a_model_prefix_is_covered_by_its_stem():
    v, _ = _verdict("xfailed", _check("smollm2-135m: NLL increase", False), _power(0.97, ["NLL increase"], edge=0.0))
    assert v == report.CONTRADICTED


@pytest.mark.parametrize(
    "declared, reason",
    [
        # before: contradicted (a budget effect fitted to our trajectory was allowed to contradict)
        (dict(basis="budget: our loss curve", edge=0.0), "sizing only"),
        (dict(edge=0.0, fitted=True), "fitted to this run's data"),
        # before: contradicted at 1 − power = 0.03, although the claim's edge lies 0.05 inside
        (dict(edge=0.05), "not at the claim's edge (distance 0.05)"),
        (dict(), "not at the claim's edge (distance not stated)"),
        # before: contradicted (CA-8: a plug-in sd from 6 seeds)
        (dict(edge=0.0, sd="plug-in"), "plug-in estimate"),
    ],
)
def test_a_covering_power_that_cannot_support_contradicted(declared, reason):
    v, why = _verdict("xfailed", _check("b", False), _power(0.97, ["b"], **declared))
    assert v == report.INCONCLUSIVE and reason in why


def test_an_explicit_size_taken_at_the_edge_stands_for_a_power_elsewhere():
    p = _power(0.99, ["b"], edge=0.1, size=0.02, size_method="simulation at the bar", size_at="the bar ln 1.05")
    assert _verdict("xfailed", _check("b", False), p)[0] == report.CONTRADICTED


def test_the_family_wise_size_is_the_union_over_the_failing_checks():
    # before: the test's size was its largest power's (0.03): contradicted; two checks at 0.03 each can
    # each contradict a true claim, so the chance is up to 0.06
    recs = [_check("a", False), _check("b", False), _power(0.97, ["a"], edge=0.0), _power(0.97, ["b"], edge=0.0)]
    v, why = _verdict("xfailed", *recs)
    assert v == report.INCONCLUSIVE and "family-wise size 0.06 > 0.05" in why
    t = report.TestOutcome("t", ["BB-1"], "xfailed", records=recs[:1] + recs[2:])
    assert (t.verdict(), t.size()) == (report.CONTRADICTED, pytest.approx(0.03))


def test_a_null_that_cannot_serve_cannot_tell():
    # before: contradicted (SF-4 on Gemma: the null's own validity check missed, the power stood)
    ctl = Record("BB-1", "b — control: other tokens", 1.0, 2.0, None, "bar", compare="ge", role="control", valid=False)
    v, why = _verdict("xfailed", ctl.to_dict(), _check("b", True), _power(0.99, ["b"], edge=0.0))
    assert v == report.INCONCLUSIVE and why.startswith("cannot tell")


def test_a_pass_that_only_fails_to_reject_a_null_needs_power_against_an_alternative():
    ok = _check("false-positive rate ≤ 0.05", True, not_rejected=True)
    # before: reproduced (SP-6's trained-pairs rate passed through a bootstrap that could not fail)
    v, why = _verdict("passed", ok)
    assert v == report.INCONCLUSIVE and "passes only by not rejecting a null" in why
    weak = _power(0.6, ["false-positive rate"], edge=0.0, against="a rate of 5α = 0.05")
    assert _verdict("passed", ok, weak)[0] == report.INCONCLUSIVE
    no_alt = _power(0.9, ["false-positive rate"], edge=0.0)
    assert _verdict("passed", ok, no_alt)[0] == report.INCONCLUSIVE
    strong = _power(0.9, ["false-positive rate"], edge=0.0, against="a rate of 5α = 0.05")
    assert _verdict("passed", ok, strong) == (report.REPRODUCED, None)


def test_an_ordinary_pass_needs_no_power():
    assert _verdict("passed", _check("a", True))[0] == report.REPRODUCED


def test_a_power_states_what_the_rules_need():
    with pytest.raises(ValueError, match="basis"):
        Power(0.9, ("a",), **(SOURCE | dict(basis="guess")))
    with pytest.raises(ValueError, match="sd"):
        Power(0.9, ("a",), sd="eyeballed", **SOURCE)
    with pytest.raises(ValueError, match="size_method and size_at"):
        Power(0.9, ("a",), size=0.01, size_method="sim", **SOURCE)
    with pytest.raises(ValueError, match="invalid_why"):
        Control("null", 1.0, valid=False)
    p = Power(0.9, "a", edge=0.0, **SOURCE)
    assert p.covers == ("a",) and p.to_dict()["size"] == pytest.approx(0.1)
    assert Power.from_record(0.9, p.to_dict()) == p
    assert Reading("a", 1.0, 2.0, "ge", "bar").not_rejected is False


def test_the_scan_finds_no_claim_object_under_a_topic_outside_the_allowance():
    """Issue 64 item 1: every claim.check / record / power lives in claims/ (the harness judges what
    it can see). Topics still migrating are listed in ALLOWED, which may only shrink."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "repro"
    found = set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root.parent).as_posix()
        if rel.startswith("repro/harness/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            uses = (
                isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "claim"
            ) or (isinstance(node, ast.arg) and node.arg == "claim")
            if uses:
                found.add(rel)
    assert found <= ALLOWED, f"a `claim` parameter or call under a topic: {sorted(found - ALLOWED)}"
    stale = ALLOWED - found
    assert not stale, f"remove from ALLOWED (migrated): {sorted(stale)}"


#: modules under repro/ that still take the roof's `claim` (issue 64 item 1: empty since the SeedPrint
#: verdicts hand Steps)
ALLOWED: set[str] = set()
