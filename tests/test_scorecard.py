"""`repro scorecard`: the latest deciding verdict per claim and scale; a failed run replaces nothing."""

from __future__ import annotations

import json
from pathlib import Path

from repro.harness import cli, scorecard
from repro.harness import report as reporting
from repro.harness.catalogue import CLAIMS


def _run(path: Path, profile: str, verdicts: dict[str, str], model: str | None = None) -> Path:
    claims = [{"id": cid, "verdict": v} for cid, v in verdicts.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run": {"profile": profile, "model": model}, "claims": claims}))
    return path


def test_decide_chunks_share_one_scale_and_a_users_model_is_only_a_note(tmp_path: Path):
    runs = [
        _run(tmp_path / "baselines" / "ci.json", "ci", {"SK-1": "reproduced", "CA-8": "inconclusive at this scale"}),
        _run(tmp_path / "cpu-a" / "claims.json", "decide-ca8", {"CA-8": "reproduced"}),
        _run(tmp_path / "cpu-b" / "claims.json", "decide-sp-null", {"SP-6": "partly reproduced"}),
        _run(tmp_path / "cpu-q" / "claims.json", "ci", {"SK-1": "contradicted"}, model="qwen2.5-coder-1.5b"),
    ]
    card, notes = scorecard.collect(runs)
    assert set(card) == {"ci", "decide"}
    assert _cells(card["decide"]) == {"CA-8": ("reproduced", "cpu-a"), "SP-6": ("partly reproduced", "cpu-b")}
    assert _cells(card["ci"])["SK-1"] == ("reproduced", "baseline")  # the --model run did not replace it
    assert notes == ["run cpu-q ran --model qwen2.5-coder-1.5b (not counted)"]


def _cells(scale: dict) -> dict:
    return {cid: (c.verdict, c.run) for cid, c in scale.items()}


def test_the_latest_deciding_verdict_wins_and_a_failed_run_is_a_note(tmp_path: Path):
    runs = [
        _run(tmp_path / "baselines" / "ci.json", "ci", {"SK-1": "reproduced", "SK-2": "inconclusive at this scale"}),
        _run(tmp_path / "h100-a" / "claims.json", "paper", {"SK-1": "contradicted", "SK-2": "not run"}),
        _run(tmp_path / "h100-b" / "claims.json", "paper", {"SK-1": "failed"}),
    ]
    card, notes = scorecard.collect(runs)
    assert _cells(card["ci"])["SK-1"] == ("reproduced", "baseline")
    assert _cells(card["paper"])["SK-1"] == ("contradicted", "h100-a")  # the failed later run did not replace it
    assert "SK-2" not in card["paper"] and notes == ["SK-1 at paper: run h100-b ended failed"]
    table = scorecard.markdown(card)
    assert table[0] == "| claim | record | why | ci | paper |" and len(table) == 2 + len(CLAIMS)
    assert any(
        ln.startswith("| SK-1 | contradicted | scales disagree: ci reproduced, paper contradicted") for ln in table
    )
    assert "| SK-3 | — | no run judged under the current rules covers its models | — | — |" in table
    assert scorecard.counts(card, "ci") == {"reproduced": 1, "inconclusive": 1}


def test_the_command_prints_the_table_and_draws_the_figure(tmp_path: Path, capsys):
    run = _run(tmp_path / "r" / "claims.json", "ci", {"BB-1": "reproduced"})
    assert cli.main(["scorecard", str(run), "--figure", str(tmp_path / "card.png")]) == 0
    out = capsys.readouterr().out
    assert "| BB-1 | reproduced | ci, the largest scale" in out and "ci: 1 reproduced" in out
    assert "| reproduced (r) |" in out and "record: " in out
    assert (tmp_path / "card.png").stat().st_size > 0


def test_a_missing_or_foreign_file_is_one_line(tmp_path: Path, capsys):
    assert cli.main(["scorecard", str(tmp_path / "nope.json")]) == 2
    assert "nope.json: no such file" in capsys.readouterr().err
    (tmp_path / "x.json").write_text('{"x": 1}')
    assert cli.main(["scorecard", str(tmp_path / "x.json")]) == 2
    assert "not a claims.json" in capsys.readouterr().err


def test_results_are_read_in_the_order_their_runs_started(tmp_path: Path):
    """Folder names date runs by day only: two runs of one day are ordered by `run.started`."""
    for folder, started, verdict in (
        ("cpu-2026-11-28-a", "T09", "partly reproduced"),
        ("cpu-2026-11-28-b", "T05", "reproduced"),
    ):
        path = tmp_path / "results" / folder / "claims.json"
        path.parent.mkdir(parents=True)
        path.write_text(
            json.dumps(
                {
                    "run": {"profile": "ci", "started": "2026-11-28" + started},
                    "claims": [{"id": "SP-6", "verdict": verdict}],
                }
            )
        )
    card, _ = scorecard.collect(scorecard.default_runs(tmp_path))
    assert _cells(card["ci"])["SP-6"] == (
        "partly reproduced",
        "cpu-2026-11-28-a",
    )  # the later run, despite its folder name


def _stored(path: Path, profile: str, *, covers: bool, test: bool = True, basis: str = "source: Fig 2") -> Path:
    """A stored run of CS-1 on both models: each test failed its check with a power at the edge."""
    tests, records = [], []
    for model in ("gemma3-270m", "smollm2-135m"):
        name = f"test_switch[{model}]"
        tests.append({"nodeid": f"claims/test_causal_shift.py::{name}", "outcome": "xfailed", "reason": ""})
        decl = {"basis": basis, "edge": 0.0, "size": 0.02, "size_method": "sim", "size_at": "the bar"}
        if covers:
            decl["covers"] = ["switch layer"]
        check = {"claim": "CS-1", "name": f"{model}: switch layer / L", "role": "check", "within": False}
        power = {"claim": "CS-1", "name": "power", "role": "power", "measured": 0.98, "power": decl}
        for r in (check, power):
            records.append(r | ({"test": name} if test else {}))
    claims = [{"id": "CS-1", "verdict": "contradicted", "tests": tests, "records": records}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run": {"profile": profile}, "claims": claims}))
    return path


def test_cells_are_rejudged_from_their_records_and_old_runs_read_pre_rules(tmp_path: Path):
    """Issue 64 item 4: a stored cell is re-derived under the current rules (a budget power cannot
    contradict: "inconclusive (was contradicted)"); a run whose powers name no checks is
    "pre-rules", never decided, and the record column skips it; each cell names its models."""
    card, _ = scorecard.collect(
        [
            _stored(tmp_path / "baselines" / "ci.json", "ci", covers=True),
            _stored(tmp_path / "cpu-d" / "claims.json", "decide-cs", covers=True, basis="budget: our curve"),
            _stored(tmp_path / "h100" / "claims.json", "paper", covers=False),
        ]
    )
    ci, decide, paper = card["ci"]["CS-1"], card["decide"]["CS-1"], card["paper"]["CS-1"]
    assert (ci.verdict, ci.rules, ci.models) == ("contradicted", True, ("smollm2-135m", "gemma3-270m"))
    assert (decide.verdict, decide.written) == (reporting.INCONCLUSIVE, "contradicted")
    assert decide.shown() == "inconclusive (was contradicted) (cpu-d, smollm2+gemma3)"
    assert (paper.verdict, paper.rules) == (scorecard.PRE_RULES, False)
    verdict, why = scorecard.record("CS-1", card, ci.models)
    assert verdict == reporting.INCONCLUSIVE and why.startswith("scales disagree: ci contradicted, decide inconclusive")
    assert "paper pre-rules" in why


def test_a_run_that_covers_fewer_models_is_not_the_record(tmp_path: Path):
    ci = _stored(tmp_path / "baselines" / "ci.json", "ci", covers=True)
    paper = _stored(tmp_path / "h200" / "claims.json", "paper", covers=True)
    data = json.loads(paper.read_text())
    c = data["claims"][0]
    c["tests"] = c["tests"][1:]  # SmolLM2 only
    c["records"] = [r for r in c["records"] if "smollm2" in r["test"]]
    paper.write_text(json.dumps(data))
    card, _ = scorecard.collect([ci, paper])
    verdict, why = scorecard.record("CS-1", card, card["ci"]["CS-1"].models)
    assert verdict == "contradicted" and why.startswith("ci, the largest scale")
