"""The committed baselines (repro/harness/baselines/) meet issue 19's bar for a verdict.

Each baseline is a whole claims run of one configuration, so what it says holds for the suite
as committed: every claim has a verdict from the current set; every *reproduced* claim ran at
least one negative control and the control was rejected; every *contradicted* claim recorded a
power ≥ 0.8 at a declared effect and a family-wise size ≤ 0.05; every power record states its effect,
basis, test, sample, method, sizes for 80% and size; every *inconclusive* claim recorded its power and the sizes
at which it would reach 80% (or says why no power is computable). `audit` is run on a doctored
baseline too, so the assertion is shown able to fail.
"""

from __future__ import annotations

import copy
import json

import pytest

from repro.harness import baseline, report

BASELINES = sorted(baseline.DIR.glob("*.json"))
DECIDED = (report.REPRODUCED, report.PARTLY, report.CONTRADICTED, report.INCONCLUSIVE)


def audit(data: dict) -> list[str]:
    """What keeps a baseline's verdicts from meaning what they say, one line per problem."""
    problems = []
    for c in data["claims"]:
        cid, verdict, records = c["id"], c["verdict"], c["records"]
        if verdict not in DECIDED:
            problems.append(f"{cid}: verdict {verdict!r} (a baseline holds decided claims only)")
            continue
        controls = [r for r in records if r.get("role") == "control"]
        powers = [r for r in records if r.get("role") == "power"]
        if verdict in (report.REPRODUCED, report.PARTLY):
            if not controls:
                problems.append(f"{cid}: {verdict} without a negative control")
            elif any(r.get("within") is not False for r in controls):
                problems.append(f"{cid}: a negative control passed the claim's assertion")
        if verdict == report.CONTRADICTED and not any(
            isinstance(r["measured"], (int, float)) and r["measured"] >= report.POWER_ENOUGH for r in powers
        ):
            problems.append(f"{cid}: contradicted without a recorded power >= {report.POWER_ENOUGH}")
        if verdict == report.CONTRADICTED and not (
            isinstance(c.get("size"), (int, float)) and c["size"] <= report.SIZE_ENOUGH + 1e-12
        ):
            problems.append(f"{cid}: contradicted without a family-wise size <= {report.SIZE_ENOUGH}")
        for r in powers:
            d = r.get("power") or {}
            missing = [
                f for f in ("effect", "basis", "test", "sample", "method", "decide", "size") if d.get(f) in (None, "")
            ]
            if missing:
                problems.append(f"{cid}: a power record without its declaration ({', '.join(missing)})")
        if verdict in (report.INCONCLUSIVE, report.PARTLY) and any(t.get("outcome") == "xfailed" for t in c["tests"]):
            if not powers and not any("no power" in (t.get("reason") or "").lower() for t in c["tests"]):
                problems.append(f"{cid}: {verdict} without a recorded power (or the reason none is computable)")
            elif powers and not any(
                "80% power at" in (r.get("why") or "") or r["measured"] >= report.POWER_ENOUGH for r in powers
            ):
                problems.append(f"{cid}: its power record does not say at which sizes it would reach 80%")
    return problems


def test_a_baseline_is_committed():
    assert BASELINES, f"no baseline under {baseline.DIR}: `repro baseline update artifacts/claims.json`"


@pytest.mark.parametrize("path", BASELINES, ids=[p.stem for p in BASELINES])
def test_baseline_verdicts_mean_what_they_say(path):
    data = json.loads(path.read_text("utf-8"))
    assert data["schema"] == report.SCHEMA_VERSION
    assert {c["id"] for c in data["claims"]} == set(report.CATALOGUE), "a baseline covers every catalogue claim"
    assert audit(data) == []


@pytest.mark.parametrize("path", BASELINES[:1], ids=[p.stem for p in BASELINES[:1]])
def test_audit_rejects_a_doctored_baseline(path):
    """Negative controls of the audit itself: the same function on baselines that break each rule."""
    data = json.loads(path.read_text("utf-8"))
    by_verdict = {c["verdict"]: i for i, c in enumerate(data["claims"])}
    i = by_verdict[report.REPRODUCED]
    no_control = copy.deepcopy(data)
    no_control["claims"][i]["records"] = [r for r in no_control["claims"][i]["records"] if r.get("role") != "control"]
    assert any("without a negative control" in p for p in audit(no_control))
    passed_control = copy.deepcopy(data)
    for r in passed_control["claims"][i]["records"]:
        if r.get("role") == "control":
            r["within"] = True
    assert any("control passed" in p for p in audit(passed_control))
    j = by_verdict.get(report.CONTRADICTED)
    if j is not None:
        weak = copy.deepcopy(data)
        for r in weak["claims"][j]["records"]:
            if r.get("role") == "power":
                r["measured"] = 0.5
        assert any("contradicted without" in p for p in audit(weak))
        loose = copy.deepcopy(data)
        loose["claims"][j]["size"] = 0.2  # power 0.8: a true claim read as contradicted one time in five
        assert any("family-wise size" in p for p in audit(loose))
    undeclared = copy.deepcopy(data)
    k = next(i for i, c in enumerate(undeclared["claims"]) if any(r.get("role") == "power" for r in c["records"]))
    for r in undeclared["claims"][k]["records"]:
        if r.get("role") == "power":
            r["power"] = None
    assert any("without its declaration" in p for p in audit(undeclared))
    failed = copy.deepcopy(data)
    failed["claims"][0]["verdict"] = report.FAILED
    assert audit(failed)
