"""`repro scorecard`: the latest deciding verdict per claim and scale; a failed run replaces nothing."""

from __future__ import annotations

import json
from pathlib import Path

from repro.harness import cli, scorecard
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
    assert card["decide"] == {"CA-8": ("reproduced", "cpu-a"), "SP-6": ("partly reproduced", "cpu-b")}
    assert card["ci"]["SK-1"] == ("reproduced", "baseline")  # the --model run did not replace it
    assert notes == ["run cpu-q ran --model qwen2.5-coder-1.5b (not counted)"]


def test_the_latest_deciding_verdict_wins_and_a_failed_run_is_a_note(tmp_path: Path):
    runs = [
        _run(tmp_path / "baselines" / "ci.json", "ci", {"SK-1": "reproduced", "SK-2": "inconclusive at this scale"}),
        _run(tmp_path / "h100-a" / "claims.json", "paper", {"SK-1": "contradicted", "SK-2": "not run"}),
        _run(tmp_path / "h100-b" / "claims.json", "paper", {"SK-1": "failed"}),
    ]
    card, notes = scorecard.collect(runs)
    assert card["ci"]["SK-1"] == ("reproduced", "baseline")
    assert card["paper"]["SK-1"] == ("contradicted", "h100-a")  # the failed later run did not replace it
    assert "SK-2" not in card["paper"] and notes == ["SK-1 at paper: run h100-b ended failed (not counted)"]
    table = scorecard.markdown(card)
    assert table[0] == "| claim | ci | paper |" and len(table) == 2 + len(CLAIMS)
    assert "| SK-1 | reproduced (baseline) | contradicted (h100-a) |" in table
    assert "| SK-3 | — | — |" in table
    assert scorecard.counts(card, "ci") == {"reproduced": 1, "inconclusive": 1}


def test_the_command_prints_the_table_and_draws_the_figure(tmp_path: Path, capsys):
    run = _run(tmp_path / "r" / "claims.json", "ci", {"BB-1": "reproduced"})
    assert cli.main(["scorecard", str(run), "--figure", str(tmp_path / "card.png")]) == 0
    out = capsys.readouterr().out
    assert "| BB-1 | reproduced (r) |" in out and "ci: 1 reproduced" in out
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
    assert card["ci"]["SP-6"] == ("partly reproduced", "cpu-2026-11-28-a")  # the later run, despite its folder name
