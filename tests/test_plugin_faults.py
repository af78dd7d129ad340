"""Runs cut short and runs that say what they do: a killed run's partial file, an interrupted run
(SIGINT) that says so in claims.json, report.md and the baseline line, the selection message when
no full report exists, the "now running" and progress lines on pytest's terminal, and the
background model build limited to the models the run selects (issue 65, "Faults and
interruptions"). Each in a scratch project run in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from repro.ground.errors import ReproError
from repro.harness import session as claims_session

CONFTEST = 'pytest_plugins = ("repro.harness.plugin",)\n'


def _project(pytester: pytest.Pytester, text: str) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_claims.py").write_text(text)
    return pytester


def _load(pytester: pytest.Pytester, where: str = "", name: str = "claims.json") -> dict:
    return json.loads((pytester.path / "artifacts" / where / name).read_text())


def test_a_killed_run_leaves_what_it_decided(pytester: pytest.Pytester):
    """After each claim test the run so far is in artifacts/claims.partial.json (run.partial set):
    a process killed mid-run (os._exit: no sessionfinish) keeps the claims decided before it; a run
    that ends writes claims.json and removes the partial file."""
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_claims.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.claim('BB-4')\ndef test_a(claim):\n    claim.check('v', 1.0, 1.0, compare='abs', why='exact')\n"
        "@pytest.mark.claim('BB-6')\ndef test_b(claim):\n    os._exit(3)\n"
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider")
    art = pytester.path / "artifacts"
    assert not (art / "claims.json").exists()
    data = json.loads((art / "claims.partial.json").read_text())
    assert "partial" in data["run"] and data["run"]["profile"] == "ci"
    verdicts = {c["id"]: c["verdict"] for c in data["claims"]}
    assert verdicts["BB-4"] == "reproduced" and verdicts["BB-6"] == "not run"
    # a run that ends: claims.json, no partial file
    (pytester.path / "claims" / "test_claims.py").write_text(
        "import pytest\n@pytest.mark.claim('BB-4')\ndef test_a(claim):\n"
        "    claim.check('v', 1.0, 1.0, compare='abs', why='exact')\n"
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert (art / "claims.json").exists() and not (art / "claims.partial.json").exists()
    assert "partial" not in _load(pytester)["run"]


INTERRUPTIBLE = """
import os, pathlib, time, pytest

@pytest.mark.claim("BB-4")
def test_first(claim):
    claim.check("v", 1.0, 1.0, compare="abs", why="exact")

@pytest.mark.claim("BB-6")
def test_long(claim):
    claim.check("v", 1.0, 1.0, compare="abs", why="exact")
    if os.environ.get("SCRATCH_SLOW"):
        pathlib.Path("started").write_text("x")
        time.sleep(300)

@pytest.mark.claim("BB-5")
def test_after(claim):
    claim.check("v", 1.0, 1.0, compare="abs", why="exact")

@pytest.mark.claim("BB-7")
def test_unselected(claim):
    claim.check("v", 1.0, 1.0, compare="abs", why="exact")
"""


def test_sigint_marks_the_run_and_the_cut_short_claims_interrupted(pytester: pytest.Pytester):
    """A real SIGINT while a claim test runs: claims.json has run.interrupted, the claim cut short
    and the one never reached read "interrupted" (not "not run", which the unselected claim keeps;
    not "reproduced", although the cut-short test had passed its setup and a check), report.md says
    so in its first lines, and the baseline line compares nothing instead of "no regression" —
    against a baseline the same run, finished, matches."""
    from repro.harness import baseline

    _project(pytester, INTERRUPTIBLE)
    args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-k", "not unselected"]
    done = pytester.runpytest_subprocess(*args)
    done.assert_outcomes(passed=3)
    baseline.update(_load(pytester, "selection/k-not-unselected"), root=Path(os.environ["REPRO_BASELINES"]))
    assert "no regression" in pytester.runpytest_subprocess(*args).stdout.str()  # the control: finished, compared

    env = {**os.environ, "SCRATCH_SLOW": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *args],
        cwd=pytester.path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 180
    while not (pytester.path / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the scratch run ended before its long test"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out

    data = _load(pytester, "selection/k-not-unselected")
    verdicts = {c["id"]: c["verdict"] for c in data["claims"]}
    assert data["run"]["interrupted"] is True and "KeyboardInterrupt" in data["run"]["interrupted_by"]
    assert data["run"]["interrupted_tests"] == ["claims/test_claims.py::test_after", "claims/test_claims.py::test_long"]
    assert verdicts["BB-4"] == "reproduced"  # it finished before the interrupt
    assert verdicts["BB-6"] == "interrupted" and verdicts["BB-5"] == "interrupted"
    assert verdicts["BB-7"] == "not run"  # deselected: not the run's doing
    assert data["summary"]["interrupted"] == 2
    md = (pytester.path / "artifacts" / "selection" / "k-not-unselected" / "report.md").read_text()
    assert md.splitlines()[2].startswith("**INTERRUPTED**: this run was interrupted (KeyboardInterrupt)")
    assert "#### BB-6 — interrupted" in md and "`claims/test_claims.py::test_long` finished" in md
    assert "no regression" not in out
    assert "baseline: not compared: the run was interrupted (KeyboardInterrupt) with 2 selected claim tests" in out
    assert not (pytester.path / "artifacts" / "selection" / "k-not-unselected" / "claims.partial.json").exists()
    # `repro compare` names the cut-short run and compares only what finished; it is no baseline
    from repro.harness import compare

    finished = baseline.load_set(baseline.key_of(data["run"]), Path(os.environ["REPRO_BASELINES"]))
    c = compare.compare(finished, data)
    shown = compare.lines(c, "finished", "cut short")
    assert not c.regressed and "cut short was cut short (interrupted (KeyboardInterrupt))" in shown[3]
    assert "  interrupted (not compared): BB-5, BB-6" in shown and "verdict changes: 0" in shown
    with pytest.raises(ReproError, match="cut short .*a baseline is a finished run"):
        baseline.update(data, root=Path(os.environ["REPRO_BASELINES"]))


def test_a_keyboard_interrupt_in_a_fixture_reads_interrupted(pytester: pytest.Pytester):
    """Cut short in a module fixture's set-up (where a long claim spends its minutes), with no
    claim test finished at all: the run still writes its report, every selected claim interrupted."""
    _project(
        pytester,
        "import pytest\n"
        "@pytest.fixture(scope='module')\ndef study():\n    raise KeyboardInterrupt\n"
        "@pytest.mark.claim('BB-4')\ndef test_a(claim, study):\n    pass\n"
        "@pytest.mark.claim('BB-6')\ndef test_b(claim, study):\n    pass\n",
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    data = _load(pytester)
    verdicts = {c["id"]: c["verdict"] for c in data["claims"]}
    assert data["run"]["interrupted"] is True
    assert verdicts["BB-4"] == verdicts["BB-6"] == "interrupted" and verdicts["BB-5"] == "not yet encoded"
    assert not (pytester.path / "artifacts" / "history.jsonl").exists()  # nothing decided: no history line


def test_selection_message_says_when_no_full_report_exists(pytester: pytest.Pytester):
    """A selection run with no earlier full run does not point at a report that is not there; after
    a full run it does."""
    _project(pytester, INTERRUPTIBLE)
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--baseline", "off", "--claim", "BB-4")
    first.assert_outcomes(passed=1)
    full = pytester.path / "artifacts" / "report.md"
    assert not full.exists()
    assert "the last full run's report stays at" not in first.stdout.str()
    first.stdout.fnmatch_lines([f"(a selection of claims: no full run's report exists yet; a full run writes {full})"])
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--baseline", "off").assert_outcomes(passed=4)
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--baseline", "off", "--claim", "BB-4")
    again.stdout.fnmatch_lines([f"(a selection of claims: the last full run's report stays at {full})"])


PROGRESS = """
import pytest
from repro.ground.progress import Heartbeat

@pytest.mark.claim("BB-4")
def test_trains(claim):
    beat = Heartbeat("train", 4, every_s=0)
    for step in range(1, 5):
        beat.tick(step, "loss 1.000")
    claim.check("v", 1.0, 1.0, compare="abs", why="exact")

def test_plain():
    pass
"""


def test_claim_tests_say_what_is_running_and_how_far_it_got(pytester: pytest.Pytester):
    """Before each claim test, "now running <nodeid> (IDs)" on pytest's terminal; while it runs,
    the `repro.progress` lines (a training loop's heartbeat) through capture; under -q neither."""
    _project(pytester, PROGRESS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--baseline", "off")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "now running claims/test_claims.py::test_trains (BB-4)",
            "claims/test_claims.py ",
            "  … train: 1/4 steps, 0s elapsed*",
            "  … train: 4/4 steps, 0s elapsed, ~0s left (loss 1.000)",
            "claims/test_claims.py ..*",
        ]
    )
    assert "now running claims/test_claims.py::test_plain" not in result.stdout.str()  # not a claim test
    quiet = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--baseline", "off", "-q")
    assert "now running" not in quiet.stdout.str() and "train: " not in quiet.stdout.str()


MODELS = """
import json, pytest
from repro.harness import session

@pytest.mark.claim("BB-4")
def test_per_model(claim, model_name, pretrained, request):
    proc = session.of(request.config)._prepare
    with open("prepared.json", "a") as fh:
        fh.write(json.dumps(None if proc is None else proc.args[3:]) + "\\n")
"""


def test_only_the_models_a_run_selects_are_built_in_the_background(pytester: pytest.Pytester, tmp_path, monkeypatch):
    """A run of SmolLM2's tests alone starts the background build of SmolLM2 only (here on an empty
    cache, where it stops at the missing fixture), and leaves no temporary folder in models/."""
    _project(pytester, MODELS)
    cache = tmp_path / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(cache))
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--baseline", "off", "-k", "smollm2")
    prepared = [json.loads(x) for x in (pytester.path / "prepared.json").read_text().splitlines()]
    assert prepared == [["smollm2-135m"]]
    models = cache / "models"
    assert not models.exists() or not [p.name for p in models.iterdir() if p.name.endswith(".tmp")]


def _item(fixturenames, params=None):
    return SimpleNamespace(fixturenames=fixturenames, callspec=SimpleNamespace(params=params or {}))


def test_selected_models_reads_each_tests_own_model():
    models = ["smollm2-135m", "gemma3-270m"]
    sel = claims_session.selected_models
    assert sel([_item(["claim"])], models) == []  # no pretrained model read: nothing to build
    assert sel([_item(["pretrained", "model_name"], {"model_name": "gemma3-270m"})], models) == ["gemma3-270m"]
    assert sel([_item(["pretrained", "model_names"])], models) == models  # a test over every model
