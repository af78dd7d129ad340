"""A run on a researcher's own model (`--model DIR`, issue 51 items 1–2): its own configuration
(own artifacts folder, no comparison with the embedded models' baseline) and verdicts from the same
machinery — a failing check reads contradicted or inconclusive by the power recorded on that model,
never "failed"; a control that passes still fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

CONFTEST = 'pytest_plugins = ("repro.harness.plugin",)\n'

TESTS = """
import pytest

@pytest.mark.claim("BB-6")
def test_holds(claim, model_name):
    claim.check("ratio", 20.0, 10.0, compare="ge", why="stated", control=1.0, control_name="a null")

@pytest.mark.claim("BB-5")
def test_fails_with_power(claim, model_name):
    claim.power(0.97, effect="the source's 10x (stated)", basis="source: Table 1", test="ratio ≥ 10",
                sample="4 seeds", method="closed form", decide="any size", covers=("ratio",), edge=0.0)
    claim.check("ratio", 2.0, 10.0, compare="ge", why="stated")

@pytest.mark.claim("BB-4")
def test_fails_without_power(claim, model_name):
    claim.check("ratio", 2.0, 10.0, compare="ge", why="stated")

@pytest.mark.claim("SF-1")
def test_needs_a_tied_model(claim, model_name):
    from repro.ground.errors import NotApplicable
    raise NotApplicable("my-qwen does not tie its input and output embeddings")

@pytest.mark.claim("RS-2")
def test_needs_a_gain(claim, model_name):
    claim.applies(False, "the final-norm gain is constant")
    claim.check("gain std", 0.0, 0.01, compare="ge", why="stated")

@pytest.mark.claim("BB-7")
def test_control_passes(claim, model_name):
    claim.check("ratio", 20.0, 10.0, compare="ge", why="stated", control=12.0, control_name="a weak null")
"""


def test_a_users_model_is_its_own_configuration(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_mine.py").write_text(TESTS)
    model = pytester.path / "my-qwen"
    model.mkdir()
    (model / "config.json").write_text("{}")  # enough for --model's check; these tests load nothing
    # a committed baseline of the embedded models' configuration, which this run must not be compared with
    embedded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--model", "smollm2-135m", "--baseline", "off")
    assert embedded.ret == pytest.ExitCode.TESTS_FAILED  # embedded model: failing checks are regressions
    from repro.harness import baseline

    data = json.loads((pytester.path / "artifacts" / "model-smollm2-135m" / "claims.json").read_text())
    baseline.update(data, root=Path(os.environ["REPRO_BASELINES"]))
    data["run"]["model"] = None
    baseline.update(data, root=Path(os.environ["REPRO_BASELINES"]))  # as if the full embedded run's

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--model", str(model))
    out = result.stdout.str()
    assert "REGRESSED" not in out
    result.stdout.fnmatch_lines(["no committed baseline for ci-cpu-*-model-my-qwen: nothing compared*"])
    result.assert_outcomes(passed=1, xfailed=2, failed=1, skipped=2)  # no "xpassed": a pass is a pass
    by_id = {
        c["id"]: c
        for c in json.loads((pytester.path / "artifacts" / "model-my-qwen" / "claims.json").read_text())["claims"]
    }
    assert by_id["BB-6"]["verdict"] == "reproduced"
    assert by_id["BB-5"]["verdict"] == "contradicted" and by_id["BB-5"]["power"] == 0.97
    assert by_id["BB-4"]["verdict"] == "inconclusive at this scale"
    assert by_id["BB-7"]["verdict"] == "failed"  # a control that passes keeps "failed"
    assert by_id["SF-1"]["verdict"] == by_id["RS-2"]["verdict"] == "not applicable"
    assert by_id["SF-1"]["tests"][0]["reason"] == "not applicable: my-qwen does not tie its input and output embeddings"
    # the embedded models' report was not touched by the model's run
    assert not (pytester.path / "artifacts" / "claims.json").exists()


CHUNK_TESTS = """
import pytest

@pytest.mark.claim("BB-6")
def test_holds(claim):
    claim.check("ratio", 20.0, 10.0, compare="ge", why="stated", control=1.0, control_name="a null")

@pytest.mark.claim("BB-5")
def test_fails_with_power(claim):
    claim.power(0.97, effect="the source's 10x (stated)", basis="source: Table 1", test="ratio ≥ 10",
                sample="4 seeds", method="closed form", decide="any size", size=0.03, size_method="closed form",
                size_at="the bar", covers=("ratio",))
    claim.check("ratio", 2.0, 10.0, compare="ge", why="stated")

@pytest.mark.claim("BB-4")
def test_fails_without_power(claim):
    claim.check("ratio", 2.0, 10.0, compare="ge", why="stated")

@pytest.mark.claim("BB-7")
def test_control_passes(claim):
    claim.check("ratio", 20.0, 10.0, compare="ge", why="stated", control=12.0, control_name="a weak null")

@pytest.mark.claim("BB-3")
def test_decided_at_ci_holds_here(claim):
    # ci's recorded expectation (a strict xfail from an earlier measurement) is the chunk's question
    claim.not_reproduced_if({("BB-3", "m"): "too few probes at ci."}, ("BB-3", "m"), "ratio 20")
    claim.check("ratio", 20.0, 10.0, compare="ge", why="stated", control=1.0, control_name="a null")
"""


def test_a_decide_chunk_reads_a_failing_check_by_its_power(pytester: pytest.Pytester):
    """A decide chunk is sized to decide its claims, so none has a recorded expectation there: a
    failing check reads contradicted (power ≥ 0.8, size ≤ 0.05) or inconclusive, as on a user's model,
    never "failed"; a control that passes still fails; a check that holds where ci recorded a strict
    xfail reads reproduced, not XPASS (SF-9's SmolLM2 half in decide-sf, 2026-11-29). Under ci the
    same checks are failures and that pass an XPASS."""
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("claims")
    (pytester.path / "claims" / "test_chunk.py").write_text(CHUNK_TESTS)
    ci = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--baseline", "off")
    ci.assert_outcomes(passed=1, failed=4)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--profile", "decide-ca8", "--baseline", "off", "--artifacts", "chunk"
    )
    result.assert_outcomes(passed=2, xfailed=2, failed=1)
    by_id = {c["id"]: c for c in json.loads((pytester.path / "chunk" / "claims.json").read_text())["claims"]}
    assert by_id["BB-6"]["verdict"] == "reproduced"
    assert by_id["BB-5"]["verdict"] == "contradicted"
    assert by_id["BB-4"]["verdict"] == "inconclusive at this scale"
    assert by_id["BB-7"]["verdict"] == "failed"
    assert by_id["BB-3"]["verdict"] == "reproduced"
