"""Running claims by ID, and the harness's cross-check of passed tests.

The selection tests collect the real `claims/` directory (no test runs): what a newcomer types is
what is tested, including the README's own examples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _collect(*args: str) -> tuple[int, list[str], str]:
    """(exit status, selected node IDs, output) of `pytest claims/ --collect-only -q ARGS` run as
    the README runs it, from the repository root."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "claims/", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    ids = [ln for ln in proc.stdout.splitlines() if ln.startswith("claims/") and "::" in ln]
    return proc.returncode, ids, proc.stdout + proc.stderr


def _claim_ids_of(nodeids: list[str]) -> dict[str, set[str]]:
    """The claim IDs each collected test carries, read from the markers by pytest itself."""
    code = (
        "import sys, pytest\n"
        "class P:\n"
        "    def pytest_collection_finish(self, session):\n"
        "        for it in session.items:\n"
        "            ids = [a for m in it.iter_markers('claim') for a in m.args]\n"
        "            print('IDS', it.nodeid, ','.join(ids))\n"
        "pytest.main(['claims/', '--collect-only', '-q', '-p', 'no:cacheprovider'], plugins=[P()])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600).stdout
    table = {ln.split()[1]: set(ln.split()[2].split(",")) for ln in out.splitlines() if ln.startswith("IDS ")}
    return {n: table[n] for n in nodeids} if nodeids else table


@pytest.fixture(scope="module")
def all_ids() -> dict[str, set[str]]:
    return _claim_ids_of([])


def test_k_selects_a_claim_by_its_id(all_ids):
    """`pytest claims/ -k SK-1` selected 0 tests and exited 5 before the IDs were keywords."""
    code, selected, out = _collect("-k", "SK-1")
    assert code == 0, out
    expected = {n for n, ids in all_ids.items() if any("SK-1" in i for i in ids)}
    assert selected and set(selected) == expected
    # negative control: an ID no test carries selects nothing, with a hint naming the ID syntax
    code, selected, out = _collect("-k", "SK-99")
    assert code == 5 and not selected and "Claim IDs are keywords" in out


def test_readme_examples_select_what_they_say(all_ids):
    """The README's `-k "BB-4 or CA-"` and `make claims PYTEST_ARGS="-n 2 -k BB-4"` (its pytest
    part, collected only), and `--claim` with exact IDs."""
    code, selected, out = _collect("-k", "BB-4 or CA-")
    assert code == 0, out
    assert set(selected) == {n for n, ids in all_ids.items() if any("BB-4" in i or "CA-" in i for i in ids)}
    assert any("BB-4.1" in all_ids[n] for n in selected) and any("CA-1" in all_ids[n] for n in selected)
    code, selected, out = _collect("-k", "BB-4")
    assert code == 0 and selected and all(any("BB-4" in i for i in all_ids[n]) for n in selected)
    code, exact, out = _collect("--claim", "BB-4,SK-1")
    assert code == 0, out
    assert set(exact) == {n for n, ids in all_ids.items() if ids & {"BB-4", "SK-1"}}
    assert not any(all_ids[n] <= {"BB-4.1", "BB-4.2"} for n in exact)  # exact: BB-4.1's own tests are not picked


CONFTEST = 'pytest_plugins = ("repro.harness.plugin",)\n'

SWALLOWED = """
import pytest

@pytest.mark.claim("BB-4")
def test_swallowed_check(claim):
    try:
        claim.check("ratio", 1.0, 10.0, compare="ge", why="stated")
    except AssertionError:
        pass

@pytest.mark.claim("CA-1")
def test_plain_failing_check(claim):
    claim.check("max |difference|", 0.5, 1e-6, compare="le", why="float64 exactness")
"""


def test_a_passed_test_with_a_failed_check_fails_under_python_O(tmp_path: Path):
    """`python -O -m pytest --assert=plain`: a failing claim.check still fails its test (it raises
    explicitly), and a test that swallowed a check's AssertionError is failed by the harness's
    cross-check; neither claim reads "reproduced"."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "test_o.py").write_text(SWALLOWED)
    proc = subprocess.run(
        [
            sys.executable,
            "-O",
            "-m",
            "pytest",
            "--assert=plain",
            "-p",
            "no:cacheprovider",
            "--baseline",
            "off",
            "-p",
            "no:xdist",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 failed" in proc.stdout
    data = json.loads((tmp_path / "artifacts" / "claims.json").read_text())
    by_id = {c["id"]: c for c in data["claims"]}
    assert by_id["BB-4"]["verdict"] == "failed" and "harness: the test passed" in by_id["BB-4"]["tests"][0]["reason"]
    assert by_id["CA-1"]["verdict"] == "failed" and "does not hold" in by_id["CA-1"]["tests"][0]["reason"]


MISSING = """
import pytest
from repro.ground import resources

@pytest.mark.claim("RS-2")
def test_needs_a_fixture(claim):
    resources.fixture_path("smollm2-135m")
"""


def test_a_fixture_never_fetched_skips_its_claim(tmp_path: Path):
    """An empty cache without `repro fetch`: the claim reads "skipped" with the command that fetches
    the fixture, not "failed"."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "test_m.py").write_text(MISSING)
    env = {**__import__("os").environ, "REPRO_CACHE": str(tmp_path / "empty-cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--baseline", "off", "-p", "no:xdist"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [rs2] = [c for c in json.loads((tmp_path / "artifacts" / "claims.json").read_text())["claims"] if c["id"] == "RS-2"]
    assert rs2["verdict"] == "skipped" and "repro fetch smollm2-135m" in rs2["tests"][0]["reason"]
