"""`repro compare`: verdict changes, drift in each record's own noise, exit statuses."""
from __future__ import annotations

import copy
import json

import pytest

from repro.harness import compare as cmp
from repro.harness.cli import main
from repro.harness.runtime import ReproError


def _run(**over) -> dict:
    base = {
        "schema": 1,
        "run": {"profile": "ci", "device": "cpu", "dtype_policy": {"auto": "bfloat16"},
                "test_durations_s": {"claims/t.py::a": 2.0, "claims/t.py::b": 4.0}},
        "claims": [
            {"id": "BB-4", "verdict": "reproduced", "tests": [{"nodeid": "claims/t.py::a"}],
             "records": [{"name": "rho", "measured": 0.318, "expected": 0.318, "tol": 0.02, "compare": "abs"},
                         {"name": "ctx", "measured": "8 × 64", "expected": None, "tol": None, "compare": "abs"}]},
            {"id": "BB-6", "verdict": "not reproduced", "tests": [{"nodeid": "claims/t.py::b"}],
             "records": [{"name": "slope", "measured": -0.49, "expected": -0.5, "tol": 0.1, "compare": "rel"},
                         {"name": "p", "measured": 0.2, "expected": 0.01, "tol": 0.0, "compare": "le"}]},
        ],
    }
    for k, v in over.items():
        base[k] = v
    return base


def test_identical_runs_compare_clean():
    c = cmp.compare(_run(), _run())
    assert not c.regressed and not c.verdicts and not c.drifts and not c.moved
    assert [w["ratio"] for w in c.wall] == [1.0, 1.0]


def test_drift_is_measured_in_the_records_own_noise():
    b = _run()
    b["claims"][0]["records"][0]["measured"] = 0.318 + 0.05   # 2.5 × its tolerance 0.02: within k = 3
    b["claims"][1]["records"][0]["measured"] = -0.49 + 0.2    # rel tol 0.1 × |−0.5| = 0.05: 4 scales
    b["claims"][1]["records"][1]["measured"] = 0.5             # no noise scale: listed, never drift
    c = cmp.compare(_run(), b)
    assert [d["name"] for d in c.drifts] == ["slope"] and c.drifts[0]["z"] == pytest.approx(4.0)
    assert {d["name"] for d in c.moved} == {"rho", "p"}
    assert c.regressed
    assert not cmp.compare(_run(), b, k=5).regressed  # the threshold is k


def test_verdict_regression_and_improvement():
    worse, better = _run(), _run()
    worse["claims"][0]["verdict"] = "partly reproduced"
    better["claims"][1]["verdict"] = "reproduced"
    assert cmp.compare(_run(), worse).verdicts[0]["regression"] is True
    c = cmp.compare(_run(), better)
    assert c.verdicts == [{"claim": "BB-6", "a": "not reproduced", "b": "reproduced", "regression": False}]
    assert not c.regressed


def test_new_vanished_records_wall_and_provenance():
    b = _run()
    b["claims"][0]["records"].append({"name": "new", "measured": 1.0, "expected": None, "tol": None, "compare": "abs"})
    del b["claims"][1]["records"][1]
    b["run"] = copy.deepcopy(b["run"])
    b["run"]["dtype_policy"] = {"auto": "float32"}
    b["run"]["test_durations_s"]["claims/t.py::a"] = 6.0
    c = cmp.compare(_run(), b)
    assert c.only_b == [{"claim": "BB-4", "name": "new"}] and c.only_a == [{"claim": "BB-6", "name": "p"}]
    assert c.wall[0]["ratio"] == 3.0
    assert c.provenance == [{"field": "dtype_policy", "a": {"auto": "bfloat16"}, "b": {"auto": "float32"}}]
    assert not c.regressed  # none of these alone is a regression
    text = "\n".join(cmp.lines(c))
    assert "dtype_policy" in text and "B only  BB-4" in text and "no regression" in text


def test_bad_input_is_refused():
    with pytest.raises(ReproError, match="schema versions differ"):
        cmp.compare(_run(), _run(schema=2))
    other = _run()
    other["run"] = {**other["run"], "profile": "paper"}
    with pytest.raises(ReproError, match="--allow-profile-change"):
        cmp.compare(_run(), other)
    assert cmp.compare(_run(), other, allow_profile_change=True).provenance[0]["field"] == "profile"


@pytest.mark.parametrize("change, status", [(None, 0), ("drift", 1), ("missing", 2), ("garbage", 2), ("profile", 2)])
def test_cli_exit_status(tmp_path, capsys, change, status):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_run()))
    run_b = _run()
    if change == "drift":
        run_b["claims"][0]["records"][0]["measured"] = 1.0
    if change == "profile":
        run_b["run"] = {**run_b["run"], "profile": "paper"}
    b.write_text("{not json" if change == "garbage" else json.dumps(run_b))
    args = ["compare", str(a), str(tmp_path / "nope.json" if change == "missing" else b)]
    assert main(args) == status
    out = capsys.readouterr()
    if status == 2:
        assert out.err.startswith("repro: error:") and len(out.err.strip().splitlines()) == 1
    else:
        assert main([*args, "--json"]) == status
        assert json.loads(capsys.readouterr().out)["regressed"] is (status == 1)


def test_a_run_on_another_corpus_is_another_configuration():
    """--corpus reaches every claim that reads text: a run on another corpus has its own baseline
    key (the default's is unchanged) and its corpus is listed as provenance; a claims.json or
    baseline that does not say read brown (the option's default)."""
    from repro.harness import baseline

    run = _run()["run"]
    assert baseline.key_of(run) == baseline.key_of({**run, "corpus": "brown"}) == "ci-cpu-bfloat16"
    assert baseline.key_of({**run, "corpus": "wikitext-2"}) == "ci-cpu-bfloat16-corpus-wikitext-2"
    assert baseline.key_of({**run, "corpus": "/data/my corpus/"}) == "ci-cpu-bfloat16-corpus-my-corpus"
    assert "corpus" in baseline.RUN_FIELDS
    other = _run()
    other["run"] = {**other["run"], "corpus": "wikitext-2"}
    assert cmp.compare(_run(), other).provenance == [{"field": "corpus", "a": "brown", "b": "wikitext-2"}]
    same = _run()
    same["run"] = {**same["run"], "corpus": "brown"}
    assert cmp.compare(_run(), same).provenance == []


def test_baseline_key_update_and_show(tmp_path, monkeypatch, capsys):
    from repro.harness import baseline

    monkeypatch.setenv("REPRO_BASELINES", str(tmp_path / "b"))
    run = _run()
    assert baseline.key_of(run["run"]) == "ci-cpu-bfloat16"
    src = tmp_path / "claims.json"
    src.write_text(json.dumps(run))
    assert main(["baseline", "update", str(src)]) == 0
    assert "new baseline ci-cpu-bfloat16.json (none before)" in capsys.readouterr().out
    run["claims"][0]["records"][0]["measured"] = 1.0
    src.write_text(json.dumps(run))
    assert main(["baseline", "update", str(src)]) == 0  # prints the drift it accepts
    assert "REGRESSED" in capsys.readouterr().out
    assert main(["baseline", "show"]) == 0 and "ci-cpu-bfloat16.json" in capsys.readouterr().out
    assert main(["baseline", "update"]) == 2
    old = {**_run(), "run": {"profile": "ci", "device": "cpu"}}  # written before the dtype policy
    src.write_text(json.dumps(old))
    assert main(["baseline", "update", str(src)]) == 2
    assert "records no profile or dtype policy" in capsys.readouterr().err


def test_per_item_records_use_a_paired_test():
    """Per-seed lists kept by both runs: a consistent shift beyond the record's noise scale is a
    drift by the paired t-test even when it is small next to the spread across seeds (which a
    difference of means would miss); noise that does not move consistently is listed, not a
    drift; so is a consistent shift below the noise scale (float error on another CPU), and any
    shift of a per-item record that states no noise scale (a context row, as for scalars)."""
    a, shifted, noisy, tiny = _run(), _run(), _run(), _run()
    seeds = [2.31, 2.95, 2.52, 3.40, 2.77]
    a["claims"][0]["records"].append({"name": "per seed", "measured": seeds, "expected": 2.8, "tol": 0.01,
                                      "compare": "abs"})
    shifted["claims"][0]["records"].append({**a["claims"][0]["records"][-1],
                                            "measured": [v + 0.02 + 0.001 * i for i, v in enumerate(seeds)]})
    noisy["claims"][0]["records"].append({**a["claims"][0]["records"][-1],
                                          "measured": [v + d for v, d in zip(seeds, [0.02, -0.03, 0.01, -0.01, 0.005])]})
    tiny["claims"][0]["records"].append({**a["claims"][0]["records"][-1],
                                         "measured": [v + 1e-6 * (1 + 0.1 * i) for i, v in enumerate(seeds)]})
    c = cmp.compare(a, shifted)
    assert [d["name"] for d in c.drifts] == ["per seed"] and c.drifts[0]["paired"]["p"] < 0.01 and c.regressed
    assert "paired t-test over 5 items" in "\n".join(cmp.lines(c))
    c = cmp.compare(a, noisy)
    assert not c.drifts and c.moved[0]["paired"]["p"] > 0.01
    c = cmp.compare(a, tiny)
    assert not c.drifts and c.moved[0]["paired"]["p"] < 0.01 and not c.regressed
    context = copy.deepcopy(a), copy.deepcopy(shifted)
    for run in context:
        run["claims"][0]["records"][-1].update(tol=None, expected=None, compare="none")
    c = cmp.compare(*context)
    assert not c.drifts and c.moved[0]["paired"]["p"] < 0.01


def test_a_negative_control_never_drifts():
    """A control carries its check's tolerance (here an exactness bound, 1e-9) but is measured
    far from it: its value moving (float error across CPUs or dtypes) is listed, not a drift;
    the same move on the check row itself is a drift."""
    a, b = _run(), _run()
    row = {"name": "max |Δ| — control: one future key", "measured": 0.135, "expected": 1e-9, "tol": 1e-9,
           "compare": "le", "role": "control"}
    a["claims"][0]["records"].append(dict(row))
    b["claims"][0]["records"].append({**row, "measured": 0.131})
    c = cmp.compare(a, b)
    assert not c.drifts and [m["name"] for m in c.moved] == [row["name"]] and not c.regressed
    for run in (a, b):
        run["claims"][0]["records"][-1]["role"] = "check"
    assert cmp.compare(a, b).drifts
