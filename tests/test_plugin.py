"""The claims plugin end to end, in a scratch project run by pytester in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.harness.catalogue import CATALOGUE

CONFTEST = 'pytest_plugins = ("repro.harness.plugin",)\n'

CLAIM_TESTS = """
import pytest
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

@pytest.mark.claim("BB-4")
@pytest.mark.parametrize("x", [1.0, 2.0])
def test_reproduced(claim, x):
    claim.record("value", x * 0.5, expected=x * 0.5, tol=0.01, why="exact arithmetic")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, x])
    claim.figure(fig, f"line-x{x}")
    claim.table("a table", ["a", "b"], [[1, x]])

@pytest.mark.claim("BB-6")
@pytest.mark.xfail(strict=True, raises=AssertionError, reason="measured 3, source 2")
def test_not_reproduced(claim):
    claim.record("value", 3.0, expected=2.0, tol=0.1, why="stated")
    assert 3.0 == pytest.approx(2.0, abs=0.1)

@pytest.mark.claim("BB-4.2")
def test_skipped(claim):
    pytest.skip("needs a GPU for the paper profile")

@pytest.mark.claim("BB-5")
def test_regression(claim):
    claim.record("value", 1.0, expected=0.0, tol=0.1, why="stated")
    assert False, "regressed"
"""


@pytest.fixture
def project(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_claims.py").write_text(CLAIM_TESTS)
    return pytester


def _load(pytester: pytest.Pytester, where: str = "") -> dict:
    return json.loads((pytester.path / "artifacts" / where / "claims.json").read_text())


def _row(md: str, claim_id: str) -> str:
    """The summary table's row of a claim in report.md."""
    return next(line for line in md.splitlines() if line.startswith(f"| {claim_id} |"))


def test_report_files_and_verdicts(project: pytest.Pytester):
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, xfailed=1, skipped=1, failed=1)
    data = _load(project)
    by_id = {c["id"]: c for c in data["claims"]}
    assert list(by_id) == list(CATALOGUE), "every catalogue ID, in catalogue order"
    assert by_id["BB-4"]["verdict"] == "reproduced"
    assert by_id["BB-6"]["verdict"] == "inconclusive at this scale"  # no power recorded
    assert by_id["BB-4.2"]["verdict"] == "skipped"
    assert by_id["BB-5"]["verdict"] == "failed"
    assert by_id["BB-1"]["verdict"] == "not yet encoded"
    assert by_id["BB-6"]["records"][0]["measured"] == 3.0
    assert by_id["BB-6"]["records"][0]["within"] is False
    assert "needs a GPU" in by_id["BB-4.2"]["reasons"][0]
    assert len(by_id["BB-4"]["records"]) == 2 and len(by_id["BB-4"]["figures"]) == 2
    for fig in by_id["BB-4"]["figures"]:
        assert (project.path / "artifacts" / fig).stat().st_size > 0
    assert data["summary"]["not yet encoded"] == len(CATALOGUE) - 4
    assert data["run"]["profile"] == "ci" and data["run"]["packages"]["torch"]
    md = (project.path / "artifacts" / "report.md").read_text()
    assert "| reproduced |" in _row(md, "BB-4") and "![BB-4](figures/BB-4_line-x1.0.png)" in md
    assert "#### SF-7 — not yet encoded" in md
    result.stdout.fnmatch_lines(["*claims*", "BB-4 *reproduced*", "*not yet encoded (*"])


def test_deselected_claims_read_not_run(project: pytest.Pytester):
    """A selection's run writes to artifacts/selection/<what>/ and leaves the full run's report as
    it was (a one-claim run must not overwrite the full report)."""
    project.runpytest_subprocess("-p", "no:cacheprovider")
    full = (project.path / "artifacts" / "claims.json").read_bytes()
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-k", "test_reproduced")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*the last full run's report stays at*artifacts/report.md*"])
    assert (project.path / "artifacts" / "claims.json").read_bytes() == full
    by_id = {c["id"]: c for c in _load(project, "selection/k-test_reproduced")["claims"]}
    assert by_id["BB-4"]["verdict"] == "reproduced"
    assert by_id["BB-6"]["verdict"] == "not run"
    assert by_id["BB-1"]["verdict"] == "not yet encoded"
    assert (project.path / "artifacts" / "selection" / "k-test_reproduced" / "figures" / "BB-4_line-x1.0.png").exists()
    history = (project.path / "artifacts" / "history.jsonl").read_text().splitlines()
    assert len(history) == 4 + 1  # both runs kept: the full run's four decided claims, the selection's one


def test_xdist_gives_the_same_claims(project: pytest.Pytester):
    project.runpytest_subprocess("-p", "no:cacheprovider")
    serial = _load(project)
    project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    parallel = _load(project)
    assert parallel["run"]["xdist_workers"] == 2
    assert parallel["claims"] == serial["claims"]
    # what `make claims` runs: groups keep a module's tests on one worker; node IDs stay plain
    project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup")
    grouped = _load(project)
    assert grouped["claims"] == serial["claims"]
    assert not any("@" in n for n in grouped["run"]["test_durations_s"])


def test_xdist_groups_follow_modules_and_models():
    from repro.harness.collection import plain_nodeid

    assert (
        plain_nodeid("claims/test_x.py::test_a[gemma3-270m]@spectral_filters[gemma3-270m]")
        == "claims/test_x.py::test_a[gemma3-270m]"
    )
    assert plain_nodeid("claims/test_x.py::test_a@born_biased-probes") == "claims/test_x.py::test_a"
    assert plain_nodeid("claims/test_x.py::test_a[1.0]") == "claims/test_x.py::test_a[1.0]"


def test_claim_tests_carry_their_xdist_group(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_grp.py").write_text(
        "import pytest\n"
        "@pytest.mark.claim('BB-4')\n"
        "def test_a(claim, model_name):\n    pass\n"
        "@pytest.mark.claim('BB-6')\ndef test_b(claim):\n    pass\n"
        "@pytest.mark.claim('BB-5')\n@pytest.mark.xdist_group('mine')\ndef test_c(claim):\n    pass\n"
    )
    items, _ = pytester.inline_genitems("claims", "-p", "no:cacheprovider")
    from repro.harness.collection import xdist_group_of

    assert [xdist_group_of(i) for i in items] == ["grp[smollm2-135m]", "grp[gemma3-270m]", "grp", "mine"]


def test_unknown_claim_id_is_a_collection_error(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile('import pytest\n@pytest.mark.claim("BB-44")\ndef test_x(claim):\n    pass\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown claim ID*BB-44*"])
    assert not (pytester.path / "artifacts").exists()


def test_claim_marker_takes_ids_only(pytester: pytest.Pytester):
    """The source and section live in the catalogue; a marker argument nothing reads is refused."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile('import pytest\n@pytest.mark.claim("BB-6", source="001 §4")\ndef test_x(claim):\n    pass\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*claim takes claim IDs only, not source*"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--profile", "huge"], "*invalid choice: 'huge'*"),
        (["--device", "tpu"], "*invalid choice: 'tpu'*"),
        (["--model", "no-such-model"], "*--model no-such-model: unknown model 'no-such-model'*"),
        (["--model=/etc"], "*--model /etc: cannot load a model from directory /etc*"),  # '=': /etc is no rootdir
        (["--claim", "SK-9"], "*--claim: unknown claim ID 'SK-9'*"),
        (["--corpus", "no-such-corpus"], "*--corpus 'no-such-corpus' is unknown*"),
        (["--train-procs", "0"], "*--train-procs must be >= 1, got 0*"),
        (["--corpus", "./no/such/dir"], "*--corpus ./no/such/dir: no such directory*"),
    ],
)
def test_bad_options_give_one_clear_message(project: pytest.Pytester, args, message):
    result = project.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, 2)
    result.stderr.fnmatch_lines([message])
    assert not (project.path / "artifacts").exists()


def test_cuda_requested_without_gpu(project: pytest.Pytester):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--device", "cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--device cuda was asked for but torch sees no CUDA GPU*"])


def test_tolerance_without_reason_is_refused(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        'import pytest\n@pytest.mark.claim("BB-4")\ndef test_x(claim):\n'
        '    claim.record("v", 1.0, expected=1.0, tol=0.1)\n'
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*a tolerance needs its reason*"])


def test_unit_test_runs_leave_reports_alone(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("def test_plain():\n    assert True\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert not (pytester.path / "artifacts").exists()


def test_not_reproduced_from_inside_a_test_is_strict(pytester: pytest.Pytester):
    """claim.not_reproduced(reason): the failing assertion reads xfailed ("not reproduced"), a
    pass is a strict XPASS failure, and an error other than AssertionError stays a failure."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("""
import pytest

@pytest.mark.claim("BB-6")
def test_expected_failure(claim):
    claim.record("value", 3.0, expected=2.0, tol=0.1, why="stated")
    claim.not_reproduced("measured 3, source 2")
    assert 3.0 == pytest.approx(2.0, abs=0.1)

@pytest.mark.claim("BB-4")
def test_passes_anyway(claim):
    claim.not_reproduced("stale verdict")

@pytest.mark.claim("BB-5")
def test_crashes(claim):
    claim.not_reproduced("measured x")
    raise RuntimeError("a bug, not a verdict")
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(xfailed=1, failed=2)
    by_id = {c["id"]: c for c in _load(pytester)["claims"]}
    assert by_id["BB-6"]["verdict"] == "inconclusive at this scale"
    assert by_id["BB-4"]["verdict"] == "failed" and by_id["BB-5"]["verdict"] == "failed"


CHECK_TESTS = """
import pytest

@pytest.mark.claim("BB-4")
def test_check_with_a_rejected_control(claim):
    claim.check("ratio", 40.0, 10.0, compare="ge", source=58.5, why="an order of magnitude",
                control=1.1, control_name="same norms, no contraction")

@pytest.mark.claim("BB-4.1")
def test_control_that_passes_fails_the_claim(claim):
    claim.not_reproduced("even a strict xfail does not absorb a control that passes")
    claim.check("ratio", 40.0, 10.0, compare="ge", why="stated", control=12.0, control_name="a weak null")

@pytest.mark.claim("BB-6")
def test_contradicted(claim):
    claim.power(0.97, effect="the source's 58.5x", effect_value=58.5, basis="source: Table 3", test="ratio ≥ 10",
                sample="8 seeds", method="closed form", decide="any size", covers=("ratio",), edge=0.0)
    claim.not_reproduced("measured 1.2")
    claim.check("ratio", 1.2, 10.0, compare="ge", source=58.5, why="stated")

@pytest.mark.claim("BB-5")
def test_inconclusive(claim):
    claim.power(0.31, effect="a 2-nat step", basis="interest: the least step worth reporting", test="step ≥ 1 nat",
                sample="200 prompts", method="200 simulations", decide="n_seq = 1600",
                decide_either="n_seq = 2600", covers=("ratio",), edge=0.0)
    claim.not_reproduced("measured 1.2")
    claim.check("ratio", 1.2, 10.0, compare="ge", why="stated")

@pytest.mark.claim("BB-3")
def test_power_below_the_size_bar(claim):
    claim.power(0.9, effect="the source's 58.5x", basis="source: Table 3", test="ratio ≥ 10", sample="8 seeds",
                method="closed form", decide="12 seeds", covers=("ratio",), edge=0.0)
    claim.not_reproduced("measured 1.2")
    claim.check("ratio", 1.2, 10.0, compare="ge", why="stated")

@pytest.mark.claim("BB-2.1")
def test_observed_power(claim):
    claim.power(0.0, effect="the measured ratio", effect_value=1.2, basis="source: Table 3", test="ratio ≥ 10",
                sample="8 seeds", method="step function", decide="never", covers=("ratio",), edge=0.0)
    claim.not_reproduced("measured 1.2")
    claim.check("ratio", 1.2, 10.0, compare="ge", why="stated")

@pytest.mark.claim("BB-7")
def test_shown_equals_asserted(claim):
    claim.check("p", 0.2, 0.05, compare="le", why="conventional alpha")
"""


def test_check_controls_and_power_verdicts(pytester: pytest.Pytester):
    """claim.check records and asserts in one call (source and threshold are two fields); a
    control that passes the same assertion fails the claim even inside a strict xfail; a strict
    xfail reads contradicted with recorded power >= 0.8, inconclusive below; the asserted row is
    the one that failed."""
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_checks.py").write_text(CHECK_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, xfailed=3, failed=3)
    by_id = {c["id"]: c for c in _load(pytester)["claims"]}
    ok = by_id["BB-4"]
    assert ok["verdict"] == "reproduced" and ok["controls"] == [
        {
            "name": "ratio — control: same norms, no contraction",
            "key": "ratio — control: same norms, no contraction",
            "rejected": True,
            "margin": 0.89,
        }
    ]
    check = [r for r in ok["records"] if r["role"] == "check"][0]
    assert (check["source"], check["expected"], check["compare"], check["within"]) == (58.5, 10.0, "ge", True)
    assert by_id["BB-4.1"]["verdict"] == "failed"
    assert by_id["BB-4.1"]["controls"][0]["rejected"] is False
    assert "cannot tell the effect from its absence" in by_id["BB-4.1"]["tests"][0]["reason"]
    assert by_id["BB-6"]["verdict"] == "contradicted" and by_id["BB-6"]["power"] == 0.97
    assert by_id["BB-6"]["size"] == pytest.approx(0.03)
    assert by_id["BB-5"]["verdict"] == "inconclusive at this scale" and by_id["BB-5"]["power"] == 0.31
    power = [r for r in by_id["BB-5"]["records"] if r["role"] == "power"][0]
    assert "n_seq = 1600" in power["why"] and power["power"]["decide"] == "n_seq = 1600"
    assert (
        power["power"]["decide_either"] == "n_seq = 2600"
        and "95% power (a miss then reads contradicted) at: n_seq = 2600" in power["why"]
    )
    assert by_id["BB-5"]["tests"][0]["undecided"].endswith("95% (decides either way) at n_seq = 2600")
    assert power["power"]["basis"].startswith("interest") and power["power"]["size"] == pytest.approx(0.69)
    # power 0.9 at the source's effect: a true claim fails this test 10% of the time, more than 0.05
    assert by_id["BB-3"]["verdict"] == "inconclusive at this scale" and by_id["BB-3"]["size"] == pytest.approx(0.1)
    # a power whose effect is the run's own measurement is refused by the plugin
    assert by_id["BB-2.1"]["verdict"] == "failed"
    assert "observed power" in by_id["BB-2.1"]["tests"][0]["reason"]
    assert by_id["BB-7"]["verdict"] == "failed"
    assert "BB-7 p: 0.2 ≤ 0.05 does not hold" in by_id["BB-7"]["tests"][0]["reason"]
    md = (pytester.path / "artifacts" / "report.md").read_text()
    assert "| reproduced |" in _row(md, "BB-4") and "1/1 rejected (margin 0.89)" in md
    assert "control rejected (margin 0.89)" in md
    assert "| contradicted |" in _row(md, "BB-6")
    result.stdout.fnmatch_lines(["BB-5 *inconclusive at this scale*power 0.31*"])


def test_check_refuses_a_threshold_without_reason(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        'import pytest\n@pytest.mark.claim("BB-4")\ndef test_x(claim):\n'
        '    claim.check("x", 1.0, 0.5, compare="ge", why="")\n'
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*say why this threshold*"])


def test_not_reproduced_if_and_model_name_parametrisation(pytester: pytest.Pytester):
    """claim.not_reproduced_if(table, key, measured): only listed keys become strict xfails,
    with the measured numbers in the reason; `model_name` runs once per embedded model, or
    only for --model."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("""
import pytest

KNOWN = {("BB-6", "gemma3-270m"): "known to differ"}

@pytest.mark.claim("BB-6")
def test_per_model(claim, model_name):
    claim.not_reproduced_if(KNOWN, ("BB-6", model_name), "x = 3")
    assert model_name != "gemma3-270m"
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rx")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*gemma3-270m: known to differ Measured: x = 3*"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--model", "smollm2-135m")
    result.assert_outcomes(passed=1)


DTYPE_TESTS = """
import pytest

@pytest.mark.claim("BB-4")
def test_plain(claim):
    claim.record("plain", 1.0)

@pytest.mark.claim("BB-6")
@pytest.mark.policy_dtype
def test_policy(claim):
    claim.record("policy", 1.0)
    claim.record("named", 1.0, dtype="float64")
"""


@pytest.mark.parametrize("forced", ["float32", "bfloat16"])
def test_records_say_their_dtype_and_run_says_the_policy(pytester: pytest.Pytester, monkeypatch, forced):
    """Every record names its dtype (float32 unless the test is marked policy_dtype,
    then what the policy chose); "run" holds the policy's choice and the CPU facts behind it;
    the report and the terminal show per-claim wall time and the run against its budget."""
    monkeypatch.setenv("REPRO_DTYPE", forced)
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_d.py").write_text(DTYPE_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    data = _load(pytester)
    recs = {r["name"]: r["dtype"] for c in data["claims"] for r in c["records"]}
    assert recs == {"plain": "float32", "policy": forced, "named": "float64"}
    pol = data["run"]["dtype_policy"]
    assert pol["auto"] == forced and pol["override"] == forced
    assert isinstance(pol["cpu"]["native_bf16"], bool) and "flags" in pol["cpu"]
    assert data["run"]["budget_s"] == 1800
    # the budget's seconds are the reference CPU's: a CPU run times its own rate to scale them
    assert data["run"]["budget_reference_tflops"] == 0.15 and data["run"]["cpu_matmul_tflops"] > 0
    md = (pytester.path / "artifacts" / "report.md").read_text()
    assert "TFLOP/s against the budget's reference CPU's 0.15" in md
    assert (
        "of the ci budget of 1.8e+03 s" in md
        or "of the ci budget of 1800 s" in md
        and f'"auto" resolves to {forced}' in md
    )
    assert "| claim | states | verdict | decided by" in md and "| wall s |" in md
    result.stdout.fnmatch_lines(["*wall s*", "BB-4 *reproduced *[0-9].[0-9]*", "wall time * of the ci budget*"])


CORPUS_TESTS = """
import pytest

@pytest.mark.claim("BB-4")
def test_reads_the_option(claim, corpus_name):
    claim.corpus(corpus_name)
    claim.record("plain", 1.0)

@pytest.mark.claim("BB-4")
def test_reads_a_shift_too(claim, corpus_name):
    claim.corpus(corpus_name, shift="stdlib-code")
    claim.corpus(corpus_name)  # stated twice: named once

@pytest.mark.claim("BB-6")
def test_fixed_text(claim):
    claim.corpus("the source's prompts")

@pytest.mark.claim("BB-5")
def test_no_text(claim):
    claim.record("weights only", 1.0)

@pytest.mark.claim("BB-4.2")
def test_unnamed(claim):
    with pytest.raises(ValueError, match="name the corpus read"):
        claim.corpus("")
    with pytest.raises(ValueError, match="not among this test's claim markers"):
        claim.corpus("brown", claim_id="BB-1")
"""


def test_claims_record_the_corpus_they_read(pytester: pytest.Pytester):
    """Each claim's entry in claims.json says what its tests read (`claim.corpus`:
    the --corpus value through the corpus_name fixture, plus any fixed shift), null when none read
    text; run.corpus stays the option's value; report.md shows both. A run with another --corpus
    (a directory) reads that one, and its baseline key says so."""
    from repro.harness import baseline

    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_c.py").write_text(CORPUS_TESTS)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--baseline", "off").assert_outcomes(passed=5)
    data = _load(pytester)
    by_id = {c["id"]: c for c in data["claims"]}
    assert data["run"]["corpus"] == "brown"
    assert by_id["BB-4"]["corpus"] == "brown; shift: stdlib-code"
    assert by_id["BB-6"]["corpus"] == "the source's prompts"
    assert by_id["BB-5"]["corpus"] is None and by_id["BB-4.2"]["corpus"] is None
    assert by_id["BB-1"]["corpus"] is None  # not encoded
    md = (pytester.path / "artifacts" / "report.md").read_text()
    assert "Corpus (`--corpus`): brown;" in md
    assert "Text read: brown; shift: stdlib-code." in md and "Text read: the source's prompts." in md
    assert md.count("Text read:") == 2
    assert baseline.key_of(data["run"]).endswith(
        "-" + data["run"]["dtype_policy"]["auto"]
    )  # the default's key: unchanged

    corpus = pytester.path / "corpora" / "my texts"
    corpus.mkdir(parents=True)
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--baseline", "off", f"--corpus={corpus}", "-k", "option"
    ).assert_outcomes(passed=1)
    data = _load(pytester, "selection/k-option")
    assert data["run"]["corpus"] == str(corpus)
    assert {c["id"]: c["corpus"] for c in data["claims"]}["BB-4"] == str(corpus)
    assert baseline.key_of(data["run"]).endswith("-corpus-my-texts")


def test_bad_repro_dtype_stops_the_run(project: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("REPRO_DTYPE", "fp16")
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*REPRO_DTYPE='fp16' is unknown; choose one of auto, float32, bfloat16*"])


def test_run_compares_itself_with_the_committed_baseline(project: pytest.Pytester, monkeypatch, tmp_path):
    """No baseline → one line, nothing compared; a baseline from the same run →
    no regression; a baseline whose record differs beyond 3 noise scales → the run fails with a
    line naming the record; --baseline warn reports without failing; updating the baseline
    turns it green again."""
    import os

    from repro.harness import baseline

    base_dir = os.environ["REPRO_BASELINES"]
    first = project.runpytest_subprocess("-p", "no:cacheprovider")
    assert first.ret == pytest.ExitCode.TESTS_FAILED  # BB-5 is the scratch project's planted regression
    first.stdout.fnmatch_lines(["no committed baseline for ci-cpu-*: nothing compared*"])
    (project.path / "claims" / "test_claims.py").write_text(CLAIM_TESTS.split('@pytest.mark.claim("BB-5")')[0])
    clean = project.runpytest_subprocess("-p", "no:cacheprovider")
    assert clean.ret == pytest.ExitCode.OK
    data = _load(project)
    target, _ = baseline.update(data, root=Path(base_dir))
    assert target.name.startswith("ci-cpu-") and "test_durations_s" in json.loads(target.read_text())["run"]
    same = project.runpytest_subprocess("-p", "no:cacheprovider")
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["against the committed baseline: no regression*"])
    # a deliberate drift: the baseline's BB-4 value 0.5 → 0.4 is 10 tolerances (0.01) away
    moved = json.loads(target.read_text())
    rec = next(c for c in moved["claims"] if c["id"] == "BB-4")["records"][0]
    rec["measured"] = rec["measured"] - 0.1
    target.write_text(json.dumps(moved))
    red = project.runpytest_subprocess("-p", "no:cacheprovider")
    assert red.ret == pytest.ExitCode.TESTS_FAILED
    red.stdout.fnmatch_lines(["REGRESSED against the baseline: BB-4 'value': 0.4 -> 0.5 (10.0 noise scales)*"])
    md = (project.path / "artifacts" / "report.md").read_text()
    assert "REGRESSED" in md
    assert "| reproduced |" in _row(md, "BB-4") and "| 1 drifted |" in _row(md, "BB-4")  # the one-row-per-claim summary
    assert "| value | — | 0.5 ±0.01 | 0.4 DRIFT 10.0× | 0.5 |" in md  # source · threshold · baseline · measured
    warn = project.runpytest_subprocess("-p", "no:cacheprovider", "--baseline", "warn")
    assert warn.ret == pytest.ExitCode.OK
    baseline.update(_load(project), root=Path(base_dir))
    assert project.runpytest_subprocess("-p", "no:cacheprovider").ret == pytest.ExitCode.OK


def test_history_lines_and_trend_figure(project: pytest.Pytester):
    """Each claims run appends one line per decided claim to artifacts/history.jsonl; `repro
    history CLAIM` prints them and draws a trend figure; bad input gets one line."""
    from repro.harness import cli

    for _ in range(2):
        project.runpytest_subprocess("-p", "no:cacheprovider", "--baseline", "off")
    art = project.path / "artifacts"
    rows = [json.loads(x) for x in (art / "history.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 4 and {r["claim"] for r in rows} == {"BB-4", "BB-6", "BB-4.2", "BB-5"}
    assert all(
        {"commit", "date", "profile", "device", "dtype", "verdict", "headline", "wall_s"} <= set(r) for r in rows
    )
    assert cli.main(["history", "BB-4", "--artifacts", str(art)]) == 0
    assert (art / "figures" / "history_BB-4.png").stat().st_size > 0
    assert cli.main(["history", "BB-44", "--artifacts", str(art)]) == 2
    assert cli.main(["history", "BB-4", "--artifacts", str(project.path / "nowhere")]) == 2


def test_workers_pin_one_gpu_each():
    from repro.harness.options import gpu_for_worker

    assert [gpu_for_worker(f"gw{i}", 4) for i in range(6)] == [0, 1, 2, 3, 0, 1]
    assert gpu_for_worker("gw2", 0) is None


def test_plan_costs_the_selected_claims_and_runs_nothing(project: pytest.Pytester):
    """`pytest claims/ --plan`: the plan of the selected claims' topics, no test run (the scratch
    BB-5 test would fail if it ran), no artifacts, exit 0. The control: the same selection
    without --plan runs that test and fails."""
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--plan", "--profile", "paper", "-k", "regression")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*plan (paper profile; nothing was run)*",
            "claims selected: 1 (BB-5)",
            "plan for profile 'paper'*",
            "total: * PFLOP*",
        ]
    )
    assert "CS-3" not in result.stdout.str()  # other topics' jobs are left out
    assert not (project.path / "artifacts" / "claims.json").exists()
    control = project.runpytest_subprocess("-p", "no:cacheprovider", "--baseline", "off", "-k", "regression")
    control.assert_outcomes(failed=1)
