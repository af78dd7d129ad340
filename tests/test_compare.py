"""`repro compare`: verdict changes, drift in each record's own noise, exit statuses."""

from __future__ import annotations

import copy
import json

import pytest

from repro.ground.runtime import ReproError
from repro.harness import compare as cmp
from repro.harness.cli import main


def _run(**over) -> dict:
    base = {
        "schema": 1,
        "run": {
            "profile": "ci",
            "device": "cpu",
            "dtype_policy": {"auto": "bfloat16"},
            "test_durations_s": {"claims/t.py::a": 2.0, "claims/t.py::b": 4.0},
        },
        "claims": [
            {
                "id": "BB-4",
                "verdict": "reproduced",
                "tests": [{"nodeid": "claims/t.py::a"}],
                "records": [
                    {"name": "rho", "measured": 0.318, "expected": 0.318, "tol": 0.02, "compare": "abs"},
                    {"name": "ctx", "measured": "8 × 64", "expected": None, "tol": None, "compare": "abs"},
                ],
            },
            {
                "id": "BB-6",
                "verdict": "not reproduced",
                "tests": [{"nodeid": "claims/t.py::b"}],
                "records": [
                    {"name": "slope", "measured": -0.49, "expected": -0.5, "tol": 0.1, "compare": "rel"},
                    {"name": "p", "measured": 0.2, "expected": 0.01, "tol": 0.0, "compare": "le"},
                ],
            },
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
    b["claims"][0]["records"][0]["measured"] = 0.318 + 0.05  # 2.5 × its tolerance 0.02: within k = 3
    b["claims"][1]["records"][0]["measured"] = -0.49 + 0.2  # rel tol 0.1 × |−0.5| = 0.05: 4 scales
    b["claims"][1]["records"][1]["measured"] = 0.5  # no noise scale: listed, never drift
    c = cmp.compare(_run(), b)
    assert [d["name"] for d in c.drifts] == ["slope"] and c.drifts[0]["z"] == pytest.approx(4.0)
    assert {d["name"] for d in c.moved} == {"rho", "p"}
    assert c.regressed
    assert not cmp.compare(_run(), b, k=5).regressed  # the threshold is k


def test_a_record_computed_in_another_dtype_is_listed_not_drift():
    """A baseline entry measured in float32 standing in for a bfloat16 configuration (a claim whose
    test changed before a bf16-native machine re-recorded it): the number is listed as moved, never
    a drift; the same move in one dtype drifts."""
    a, b = _run(), _run()
    b["claims"][1]["records"][0]["measured"] = -0.49 + 0.2  # 4 noise scales
    a["claims"][1]["records"][0]["dtype"], b["claims"][1]["records"][0]["dtype"] = "float32", "bfloat16"
    c = cmp.compare(a, b)
    assert not c.drifts and not c.regressed
    assert [(d["name"], d["dtypes"]) for d in c.moved] == [("slope", ["float32", "bfloat16"])]
    b["claims"][1]["records"][0]["dtype"] = "float32"
    assert [d["name"] for d in cmp.compare(a, b).drifts] == ["slope"]


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
    assert c.only_b == [{"claim": "BB-4", "key": "new", "name": "new", "role": "context"}]
    assert c.only_a == [{"claim": "BB-6", "key": "p", "name": "p", "role": "context"}]
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
    a["claims"][0]["records"].append(
        {"name": "per seed", "measured": seeds, "expected": 2.8, "tol": 0.01, "compare": "abs"}
    )
    shifted["claims"][0]["records"].append(
        {**a["claims"][0]["records"][-1], "measured": [v + 0.02 + 0.001 * i for i, v in enumerate(seeds)]}
    )
    noisy["claims"][0]["records"].append(
        {**a["claims"][0]["records"][-1], "measured": [v + d for v, d in zip(seeds, [0.02, -0.03, 0.01, -0.01, 0.005])]}
    )
    tiny["claims"][0]["records"].append(
        {**a["claims"][0]["records"][-1], "measured": [v + 1e-6 * (1 + 0.1 * i) for i, v in enumerate(seeds)]}
    )
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
    row = {
        "name": "max |Δ| — control: one future key",
        "measured": 0.135,
        "expected": 1e-9,
        "tol": 1e-9,
        "compare": "le",
        "role": "control",
    }
    a["claims"][0]["records"].append(dict(row))
    b["claims"][0]["records"].append({**row, "measured": 0.131})
    c = cmp.compare(a, b)
    assert not c.drifts and [m["name"] for m in c.moved] == [row["name"]] and not c.regressed
    for run in (a, b):
        run["claims"][0]["records"][-1]["role"] = "check"
    assert cmp.compare(a, b).drifts


# --------------------------------------------------------------------------- stable keys


def _asserted(name: str, value: float, **extra) -> dict:
    return {"name": name, "measured": value, "expected": 0.5, "tol": 0.01, "compare": "abs", "role": "check", **extra}


def _two_models_run(second: float) -> dict:
    """CA-4's shape: two models' checks under one claim with the same label."""
    run = _run()
    run["claims"][0]["records"] = [_asserted("Δ NLL full − causal", 0.5), _asserted("Δ NLL full − causal", second)]
    return run


def test_a_repeated_label_is_compared_not_dropped():
    """Two records of one claim with one label (CA-4's two models): moving the second one's
    asserted value by 500 noise scales is a drift. Negative control: the first-wins matching of
    before (the second record dropped) would have seen nothing."""
    c = cmp.compare(_two_models_run(0.5), _two_models_run(0.5 + 500 * 0.01))
    assert c.regressed and [d["key"] for d in c.drifts] == ["Δ NLL full − causal #2"]
    assert c.drifts[0]["z"] == pytest.approx(500.0)
    first_wins = {
        (cl["id"], r["name"]): r for cl in _two_models_run(0.5 + 5)["claims"] for r in reversed(cl["records"])
    }
    assert first_wins[("BB-4", "Δ NLL full − causal")]["measured"] == 0.5  # what the old matching compared


def test_a_label_that_embeds_a_measured_value_keeps_its_key():
    """BB-3's count in its label: the value moves, the record stays linked (a drift, not an
    unlinked 'A only / B only' pair)."""
    a, b = _run(), _run()
    a["claims"][0]["records"][0] = _asserted("distinct direction tokens over 12 seeds (3 found)", 0.5)
    b["claims"][0]["records"][0] = _asserted("distinct direction tokens over 12 seeds (9 found)", 0.9)
    c = cmp.compare(a, b)
    assert not c.only_a and not c.only_b
    assert [d["name"] for d in c.drifts] == ["distinct direction tokens over 12 seeds (9 found)"]
    # an explicit key wins over the label
    a["claims"][0]["records"][0]["key"] = b["claims"][0]["records"][0]["key"] = "winner"
    b["claims"][0]["records"][0]["name"] = "favourite is W_out"
    assert [d["key"] for d in cmp.compare(a, b).drifts] == ["winner"]


def test_a_lost_asserted_record_is_a_regression():
    a, b = _run(), _run()
    a["claims"][0]["records"].append(_asserted("extra check", 0.5))
    c = cmp.compare(a, b)
    assert c.regressed and [r["name"] for r in c.lost] == ["extra check"]
    assert "asserted records lost" in "\n".join(cmp.lines(c))
    b["claims"][0]["verdict"] = "not run"  # a claim the second run did not select loses nothing
    assert not cmp.compare(a, b).lost


def test_a_claim_run_in_part_is_listed_not_a_regression():
    """`pytest claims/ -k <one test of a claim>` against the baseline: the tests it did not run
    cannot have lost their records, and the claim's verdict over part of its tests is not its verdict."""
    a, b = _run(), _run()
    a["claims"][0]["tests"] = [
        {"nodeid": "claims/t.py::a", "outcome": "passed"},
        {"nodeid": "claims/t.py::a2", "outcome": "xfailed"},
    ]
    a["claims"][0]["verdict"] = "partly reproduced"
    a["claims"][0]["records"].append(_asserted("a2's check", 0.5))
    b["claims"][0]["tests"] = [{"nodeid": "claims/t.py::a", "outcome": "passed"}]
    c = cmp.compare(a, b)
    assert c.partial == [{"claim": "BB-4", "ran": 1, "of": 2}] and not c.lost and not c.regressed
    assert "BB-4     1 of 2 tests" in "\n".join(cmp.lines(c))
    b["claims"][0]["tests"].append({"nodeid": "claims/t.py::a2", "outcome": "failed"})  # both ran: compared
    c = cmp.compare(a, b)
    assert not c.partial and c.lost and c.regressed


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda d: d.__setitem__("claims", {"BB-4": {}}),
        lambda d: d["claims"][0].pop("records"),
        lambda d: d["claims"][0]["records"][0].pop("name"),
        lambda d: d["claims"].__setitem__(0, "BB-4"),
        lambda d: d.__setitem__("run", []),
    ],
    ids=["claims-a-dict", "claim-without-records", "record-without-name", "claim-not-an-object", "run-not-an-object"],
)
def test_a_schema_problem_is_one_line_and_exit_2(tmp_path, capsys, corrupt):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_run()))
    bad = _run()
    corrupt(bad)
    b.write_text(json.dumps(bad))
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("repro: error:") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_side_by_side_gives_a_column_per_model(tmp_path, capsys):
    """`repro side-by-side`: the embedded run's two models and a --model run's one, a row per
    claim with the source's numbers; a test without a model counts for every model of its run."""
    embedded = {
        "schema": 2,
        "run": {"models": {"smollm2-135m": {}, "gemma3-270m": {}}},
        "claims": [
            {
                "id": "SF-1",
                "verdict": "partly reproduced",
                "source_values": "σ1/σ2 ≫ 1",
                "records": [],
                "tests": [
                    {"nodeid": "claims/t.py::test_x[smollm2-135m]", "verdict": "reproduced", "power": None},
                    {
                        "nodeid": "claims/t.py::test_x[gemma3-270m]",
                        "verdict": "contradicted",
                        "power": 0.97,
                        "size": 0.03,
                    },
                ],
            },
            {
                "id": "BB-4",
                "verdict": "reproduced",
                "source_values": "Prop 2",
                "records": [],
                "tests": [{"nodeid": "claims/t.py::test_rand", "verdict": "reproduced", "power": None}],
            },
        ],
    }
    mine = {
        "schema": 2,
        "run": {"model": "/models/my-qwen"},
        "claims": [
            {
                "id": "SF-1",
                "verdict": "inconclusive at this scale",
                "source_values": "σ1/σ2 ≫ 1",
                "records": [],
                "tests": [
                    {
                        "nodeid": "claims/t.py::test_x[/models/my-qwen]",
                        "verdict": "inconclusive at this scale",
                        "power": 0.3,
                    }
                ],
            },
            {"id": "BB-4", "verdict": "not run", "source_values": "Prop 2", "records": [], "tests": []},
        ],
    }
    a, b = tmp_path / "a" / "claims.json", tmp_path / "b" / "claims.json"
    for path, data in ((a, embedded), (b, mine)):
        path.parent.mkdir()
        path.write_text(json.dumps(data))
    assert main(["side-by-side", str(a), str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| claim | source's numbers | smollm2-135m (a) | gemma3-270m (a) | /models/my-qwen (b) |"
    assert out[2] == (
        "| SF-1 | σ1/σ2 ≫ 1 | reproduced | contradicted (power 0.97, size 0.03) "
        "| inconclusive at this scale (power 0.3) |"
    )
    assert out[3] == "| BB-4 | Prop 2 | reproduced | reproduced | — |"


def test_a_claim_not_run_is_not_counted_as_a_verdict_change():
    """A selection (`--claim BB-4`) against a full baseline: the claims it did not run are named
    apart, never counted as verdict changes nor regressions."""
    b = _run()
    b["claims"][1]["verdict"] = "not run"
    b["claims"][0]["verdict"] = "partly reproduced"
    c = cmp.compare(_run(), b)
    text = cmp.lines(c, "base", "sel")
    assert "verdict changes: 1" in text
    assert "  not run in sel (not compared): BB-6" in text
    assert not any(v["regression"] for v in c.verdicts if v["claim"] == "BB-6")
    # a claim A did not run that fails in B is a change, and a regression, never hidden as "not run"
    a, b = _run(), _run()
    a["claims"][1]["verdict"] = "not run"
    b["claims"][1]["verdict"] = "failed"
    c = cmp.compare(a, b)
    text = cmp.lines(c)
    assert c.regressed and "verdict changes: 1" in text
    assert any("not run -> failed  REGRESSION" in ln for ln in text)


# --------------------------------------------------------------------------- a real claims.json
# (issue 65 item 2: each case below passed `repro compare` with exit 0 before)

REAL = "ci-cpu-float32"  # the committed baseline (its topic files joined: repro/<topic>/baselines/)


@pytest.fixture(scope="module")
def real_run() -> dict:
    from repro.harness import baseline

    data = baseline.load_set(REAL, baseline.ROOT)
    assert data is not None, f"no committed baseline {REAL}"
    return data


def _real(real_run: dict) -> dict:
    return copy.deepcopy(real_run)


def _find(run: dict, claim: str, key: str) -> dict:
    (cl,) = [c for c in run["claims"] if c["id"] == claim]
    (rec,) = [r for r in cl["records"] if r["key"] == key]
    return rec


def _record_lines(c: cmp.Comparison, claim: str) -> list[str]:
    """The text lines about one claim's records (not its wall time)."""
    return [ln for ln in cmp.lines(c) if ln.lstrip().startswith(claim) and " -> " in ln]


RS1_EXACT = ("RS-1", "terms for a #-layer × #-head model #2")  # 1 + L·H + L for 24 × 16: 409, tol 0


def test_the_real_baseline_compares_clean_with_itself(real_run):
    c = cmp.compare(_real(real_run), _real(real_run))
    assert not (c.regressed or c.verdicts or c.drifts or c.moved or c.lost or c.only_a or c.only_b)


def test_an_exact_check_that_moves_is_a_regression(real_run, tmp_path, capsys):
    """RS-1's term count (tol 0, its test's expectation moved with it, so the check still passes):
    409 -> 500 is no move "within its noise" but a drift, exit 1, and its line names the key."""
    b = _real(real_run)
    rec = _find(b, *RS1_EXACT)
    assert (rec["role"], rec["compare"], rec["tol"], rec["measured"]) == ("check", "abs", 0.0, 409)
    rec["measured"] = rec["expected"] = 500
    c = cmp.compare(_real(real_run), b)
    assert c.regressed and [(d["claim"], d["key"], d["exact"]) for d in c.drifts] == [("RS-1", RS1_EXACT[1], True)]
    assert not c.moved
    (line,) = _record_lines(c, "RS-1")
    assert RS1_EXACT[1] in line and "409 -> 500" in line and "exact" in line
    a_path, b_path = tmp_path / "a.json", tmp_path / "b.json"
    a_path.write_text(json.dumps(real_run))
    b_path.write_text(json.dumps(b))
    assert main(["compare", str(a_path), str(b_path)]) == 1
    assert "REGRESSED" in capsys.readouterr().out


def test_an_exact_check_in_json_is_strict_json(real_run, capsys, tmp_path):
    """--json of an exact check's drift: z is infinite, written "inf" (not the non-standard
    Infinity token json.dumps would write), and the row carries its key."""
    b = _real(real_run)
    _find(b, *RS1_EXACT)["measured"] = 500
    a_path, b_path = tmp_path / "a.json", tmp_path / "b.json"
    a_path.write_text(json.dumps(real_run))
    b_path.write_text(json.dumps(b))
    assert main(["compare", str(a_path), str(b_path), "--json"]) == 1
    out = json.loads(capsys.readouterr().out, parse_constant=lambda t: pytest.fail(f"non-standard JSON {t}"))
    assert out["regressed"] and out["drifts"][0]["key"] == RS1_EXACT[1] and out["drifts"][0]["z"] == "inf"


def test_one_sided_thresholds_controls_and_context_still_never_drift(real_run):
    """What stays as it was: a check against a one-sided threshold at 0 (its value moves on its
    side), an exact control (its check's tolerance, and it must only stay rejected) and a context
    number move, listed, no regression."""
    a, b = _real(real_run), _real(real_run)
    kinds = {
        "one-sided check": lambda r: r["role"] == "check" and r["compare"] in ("ge", "le") and not r["tol"],
        "exact control": lambda r: r["role"] == "control" and r["compare"] == "abs" and not r["tol"],
        "context": lambda r: r["role"] == "context",
    }
    moved, per_kind = [], dict.fromkeys(kinds, 0)
    for c in b["claims"]:
        for r in c["records"]:
            kind = next((k for k, hit in kinds.items() if hit(r)), None)
            if kind and isinstance(r["measured"], (int, float)) and per_kind[kind] < 20:
                r["measured"] = r["measured"] * 1.5 + 1
                moved.append((c["id"], r["key"]))
                per_kind[kind] += 1
    assert min(per_kind.values()) >= 2, per_kind
    c = cmp.compare(a, b)
    assert not c.regressed and not c.drifts and {(m["claim"], m["key"]) for m in c.moved} == set(moved)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), None, "n/a", True, [0.1, 0.2, 0.3]])
@pytest.mark.parametrize(
    "role, key", [("check", "max |segment k = # − causal| (logits) [gemma3-270m]"), ("control", None), ("power", None)]
)
def test_an_asserted_record_that_loses_its_number_is_a_regression(real_run, tmp_path, role, key, value):
    """A check, a control or a power whose number became NaN, inf, null, a bool, a string or a
    list: exit 1 (it passed as "moved" before), listed with the lost records, its line naming the
    key and what the value became; the file round-trips through JSON (NaN as Python writes it)."""
    a, b = _real(real_run), _real(real_run)
    (cl,) = [c for c in b["claims"] if c["id"] == "CA-4"]
    rec = next(r for r in cl["records"] if r["role"] == role and (key is None or r["key"] == key))
    assert isinstance(rec["measured"], float)
    rec["measured"] = value
    a_path, b_path = tmp_path / "a.json", tmp_path / "b.json"
    a_path.write_text(json.dumps(a))
    b_path.write_text(json.dumps(b))
    assert main(["compare", str(a_path), str(b_path)]) == 1
    c = cmp.compare(cmp.load(a_path), cmp.load(b_path))
    assert [(r["claim"], r["key"], r["role"]) for r in c.lost] == [("CA-4", rec["key"], role)]
    assert not c.moved and not c.drifts
    (line,) = _record_lines(c, "CA-4")
    assert rec["key"] in line and c.lost[0]["why"] in line
    # the other way round (a number where the baseline had none) loses nothing; a number where
    # the baseline had a list of them does (a per-item record lost its items)
    assert bool(cmp.compare(cmp.load(b_path), cmp.load(a_path)).lost) is isinstance(value, list)


@pytest.mark.parametrize("value", [{"mean": 0.5}, [0.1, {"x": 1}]], ids=["a-dict", "a-list-holding-a-dict"])
def test_a_measured_value_of_an_impossible_type_is_a_schema_error(real_run, tmp_path, capsys, value):
    b = _real(real_run)
    _find(b, *RS1_EXACT)["measured"] = value
    a_path, b_path = tmp_path / "a.json", tmp_path / "b.json"
    a_path.write_text(json.dumps(real_run))
    b_path.write_text(json.dumps(b))
    assert main(["compare", str(a_path), str(b_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("repro: error:") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "'measured' is" in err and "terms for a 24-layer" in err


def test_a_drifted_per_model_record_names_its_model(real_run):
    """CA-4 records the same check for each model under one label: the drift line names which
    (the key carries the test's parameter), as --json did."""
    b = _real(real_run)
    key = "max |segment k = # − causal| (logits) [gemma3-270m]"
    rec = _find(b, "CA-4", key)
    rec["measured"] += 10 * rec["tol"]  # 10 noise scales
    c = cmp.compare(_real(real_run), b)
    assert [d["key"] for d in c.drifts] == [key]
    (line,) = _record_lines(c, "CA-4")
    assert "[gemma3-270m]" in line and "10.0 ×" in line
    # a lost one names its model too
    (cl,) = [c for c in b["claims"] if c["id"] == "CA-4"]
    cl["records"].remove(rec)
    c = cmp.compare(_real(real_run), b)
    (line,) = [ln for ln in cmp.lines(c) if ln.lstrip().startswith("CA-4") and "[check]" in ln]
    assert "[gemma3-270m]" in line and c.regressed


def test_compare_takes_a_committed_baseline_by_its_key(real_run, tmp_path, monkeypatch, capsys):
    """`repro compare ci-cpu-float32 artifacts/claims.json`: A is the committed baseline of that
    configuration, its topic files joined (repro/<topic>/baselines/); a key that names none is
    one line, exit 2."""
    monkeypatch.delenv("REPRO_BASELINES", raising=False)
    b = _real(real_run)
    b_path = tmp_path / "b.json"
    b_path.write_text(json.dumps(b))
    assert main(["compare", REAL, str(b_path)]) == 0
    _find(b, *RS1_EXACT)["measured"] = 500
    b_path.write_text(json.dumps(b))
    assert main(["compare", REAL, str(b_path)]) == 1
    capsys.readouterr()
    assert main(["compare", "ci-cpu-float99", str(b_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "a baseline's key" in err
