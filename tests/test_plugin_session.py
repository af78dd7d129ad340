"""The claims plugin's run state and what pytest shows of it: the state on a registered session
object, the claim IDs collection saw (an xdist worker's through its workeroutput, never a scan of
the source), context records that compare nothing, and contradicted / inconclusive as their own
statuses on pytest's terminal line."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from repro.harness import baseline, compare, plugin, session, writers
from repro.harness.claim import Claim

CONFTEST = 'pytest_plugins = ("repro.harness.plugin",)\n'

VERDICT_TESTS = """
import pytest

@pytest.mark.claim("BB-4")
def test_reproduced(claim):
    claim.record("a context number", 2.0)
    claim.check("ratio", 40.0, 10.0, compare="ge", why="stated")

@pytest.mark.claim("BB-6")
def test_contradicted(claim):
    claim.power(0.97, effect="the source's 58.5x", basis="source: Table 3", test="ratio ≥ 10",
                sample="8 seeds", method="closed form", decide="any size", covers=("ratio",), edge=0.0)
    claim.not_reproduced("measured 1.2")
    claim.check("ratio", 1.2, 10.0, compare="ge", why="stated")

@pytest.mark.claim("BB-5")
def test_inconclusive(claim):
    claim.not_reproduced("measured 1.2, no power recorded")
    claim.check("ratio", 1.2, 10.0, compare="ge", why="stated")

@pytest.mark.xfail(strict=True, reason="not a claim test")
def test_plain_xfail():
    assert False
"""


def _project(pytester: pytest.Pytester, **files: str) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    for name, text in files.items():
        (pytester.path / "claims" / f"{name}.py").write_text(text)
    return pytester


def _verdicts(pytester: pytest.Pytester, where: str = "") -> dict[str, str]:
    data = json.loads((pytester.path / "artifacts" / where / "claims.json").read_text())
    return {c["id"]: c["verdict"] for c in data["claims"]}


def test_the_run_state_lives_on_a_registered_session_object(pytester: pytest.Pytester):
    """Each run's state is its own object, registered with the run's plugin manager (as
    pytest-xdist's DSession is), not a module global or stash keys."""
    pytester.makeconftest(CONFTEST)
    first, second = pytester.parseconfigure(), pytester.parseconfigure()
    assert isinstance(session.of(first), session.ClaimsSession) and session.of(first).config is first
    assert session.of(second) is not session.of(first)
    for module in (plugin, session):
        assert not any(isinstance(v, pytest.StashKey) for v in vars(module).values())


def test_contradicted_and_inconclusive_are_their_own_statuses(pytester: pytest.Pytester):
    """A claim test's strict xfail shows its verdict — "C" / CONTRADICTED at power ≥ 0.8 and size ≤
    0.05, "I" / INCONCLUSIVE otherwise — in the progress line, the verbose line and the short
    summary; a plain xfail stays "x" / XFAIL; the counts still call them xfailed. The same under
    xdist, where the controller reads the verdict from the workers' reports."""
    _project(pytester, test_v=VERDICT_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--baseline", "off", "-rx")
    result.assert_outcomes(passed=1, xfailed=3)
    result.stdout.fnmatch_lines(
        [
            "now running claims/test_v.py::test_reproduced (BB-4)",
            "claims/test_v.py .*",
            "now running claims/test_v.py::test_contradicted (BB-6)",
            "claims/test_v.py C*",
            "now running claims/test_v.py::test_inconclusive (BB-5)",
            "claims/test_v.py Ix*",  # the plain xfail is no claim test: no line of its own
            "CONTRADICTED claims/test_v.py::test_contradicted - measured 1.2",
            "INCONCLUSIVE claims/test_v.py::test_inconclusive - measured 1.2, no power recorded",
            "XFAIL claims/test_v.py::test_plain_xfail - not a claim test",
        ]
    )
    assert _verdicts(pytester)["BB-6"] == "contradicted" and _verdicts(pytester)["BB-5"] == "inconclusive at this scale"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-v", "--baseline", "off")
    result.assert_outcomes(passed=1, xfailed=3)
    result.stdout.fnmatch_lines_random(
        ["*CONTRADICTED claims/test_v.py::test_contradicted*", "*INCONCLUSIVE claims/test_v.py::test_inconclusive*"]
    )


ENCODED = """
import pytest

TEXT = 'a claim marker in a string is not a test: @pytest.mark.claim("BB-1")'

@pytest.mark.claim("BB-4")
def test_reproduced(claim):
    claim.record("a context number", 2.0)

@pytest.mark.claim("BB-6")
def test_other(claim):
    pass
"""

OTHER_FILE = """
import pytest

@pytest.mark.claim("BB-7")
def test_elsewhere(claim):
    pass
"""


def test_claim_ids_come_from_collection_and_from_workers(pytester: pytest.Pytester):
    """A claim carried by a collected test but deselected (-k) reads "not run", one no test carries
    "not yet encoded" — under xdist too, where only the workers collect and hand the IDs to the
    controller in their workeroutput. An ID in a file's text but on no test is not encoded. A run
    given one file did not look at the others: their claims read "not run"."""
    _project(pytester, test_claims=ENCODED, test_other=OTHER_FILE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-k", "test_reproduced")
    result.assert_outcomes(passed=1)
    verdicts = _verdicts(pytester, "selection/k-test_reproduced")
    assert verdicts["BB-4"] == "reproduced"
    assert verdicts["BB-6"] == "not run" and verdicts["BB-7"] == "not run"
    assert verdicts["BB-1"] == "not yet encoded" and verdicts["SK-1"] == "not yet encoded"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "claims/test_other.py")
    result.assert_outcomes(passed=1)
    verdicts = _verdicts(pytester, "selection/test_other")
    assert verdicts["BB-7"] == "reproduced" and verdicts["BB-4"] == "not run" and verdicts["BB-1"] == "not run"


class _Item:
    """What `Claim` reads of a pytest item, for a test of one claim ID."""

    def __init__(self, claim_id: str) -> None:
        self.nodeid = "claims/test_x.py::test_x"
        self.user_properties: list = []
        self.fixturenames = ()
        self.config = SimpleNamespace(getoption=lambda name: None)
        self._mark = pytest.mark.claim(claim_id).mark

    def iter_markers(self, name: str):
        return iter([self._mark] if name == "claim" else [])

    def get_closest_marker(self, name: str):
        return None


BASELINES = baseline.keys(baseline.ROOT)


@pytest.mark.parametrize("key", BASELINES)
def test_context_records_compare_nothing_and_the_baselines_stay_clean(key: str, tmp_path: Path):
    """`claim.record(name, value)` compares nothing (compare "none", shown as "(context)", not
    "— ±0.0"); with a threshold it is "abs" as before. The committed baselines, written when a
    context record said "abs", compared with the same records as `claim.record` writes them now:
    no verdict change, drift, move, lost or one-sided record, either way round (a baseline written
    since holds "none" already, and the same holds)."""
    base = baseline.load_set(key, baseline.ROOT)
    assert any(r["role"] == "context" and r["compare"] in ("abs", "none") for c in base["claims"] for r in c["records"])
    new = json.loads(json.dumps(base))
    for c in new["claims"]:
        claim = Claim(_Item(c["id"]), tmp_path)
        for i, r in enumerate(c["records"]):
            if r["role"] != "context":
                continue
            rec = claim.record(
                r["name"], r["measured"], unit=r["unit"], dtype=r["dtype"], source=r["source"], key=r["key"]
            ).to_dict()
            assert rec["compare"] == "none" and rec["within"] is None and writers._tol(rec) == "(context)"
            c["records"][i] = rec
    for a, b in ((base, new), (new, base)):
        result = compare.compare(a, b)
        assert not (result.verdicts or result.drifts or result.moved or result.lost or result.only_a or result.only_b)
        assert not result.regressed
    with_threshold = Claim(_Item("BB-4"), tmp_path).record("x", 1.0, expected=1.0, tol=0.1, why="stated")
    assert with_threshold.compare == "abs" and with_threshold.within is True
