"""The cross-fitted alignment of `repro seedprint-eval`: it finds a descendant whose hidden
dimensions were relabelled, and it does not manufacture a match between unrelated responses."""

from __future__ import annotations

import json

import pytest
import torch

from repro.ground.runtime import ReproError
from repro.seedprint import algorithm as sp
from repro.seedprint.evaluation import aligned_algorithm_one


def _responses(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    bias = torch.randn(d, generator=g) * 2.0  # per-dimension offsets: the init-induced bias of 001 §5
    return torch.randn(n, d, generator=g) + bias


def test_alignment_recovers_a_permuted_descendant_and_rejects_unrelated():
    n, d = 400, 64  # m = 16: the Gaussian null keeps ≈ m²/d = 4 identity dims, enough for the U test
    fa = _responses(n, d, 0)
    perm = torch.randperm(d, generator=torch.Generator().manual_seed(1))
    noise = torch.randn(n, d, generator=torch.Generator().manual_seed(2))
    fb = (fa + 0.5 * noise)[:, perm]  # a descendant whose dimensions were relabelled
    assert not sp.algorithm_one(fa, fb, m=16, null_trials=3).same_lineage  # dimension by dimension: defeated
    assert aligned_algorithm_one(fa, fb, m=16, null_trials=3, seed=0).same_lineage
    hits = sum(
        aligned_algorithm_one(
            _responses(n, d, 10 + i), _responses(n, d, 50 + i), m=16, null_trials=3, seed=0
        ).same_lineage
        for i in range(10)
    )
    assert hits <= 1  # α = 0.01 per pair: 10 unrelated pairs give at most one false alarm by chance (p ≈ 0.004)


def _shared_structure(n: int, d: int, seed: int, z: torch.Tensor) -> torch.Tensor:
    """Responses of a model that learned the same features z (n, r) as another, in a basis of its
    own (a random mixing of z into the d dimensions) plus its own per-dimension noise: the
    "trained, unrelated" case, where a rotation-invariant comparison sees a match."""
    g = torch.Generator().manual_seed(seed)
    return z @ torch.randn(z.shape[1], d, generator=g) + 0.5 * torch.randn(n, d, generator=g)


def test_matched_test_sees_through_a_relabelled_rescaled_basis():
    """A descendant whose dimensions were permuted, sign-flipped and rescaled is found at the
    smallest p the rotations allow; Algorithm 1 dimension by dimension is defeated (the control)."""
    n, d = 400, 32
    fa = _responses(n, d, 0)
    g = torch.Generator().manual_seed(1)
    perm, scale = torch.randperm(d, generator=g), torch.exp(torch.randn(d, generator=g))
    sign = torch.where(torch.rand(d, generator=g) < 0.5, -1.0, 1.0)
    fb = ((fa + 0.7 * torch.randn(n, d, generator=g)) * scale * sign)[:, perm]
    r = sp.matched_test(fa, fb, rotations=99, seed=0)
    assert r.same_lineage and r.p == 0.01 and r.statistic > r.null.max()
    assert not sp.algorithm_one(fa, fb, m=8, null_trials=3).same_lineage


def test_matched_test_is_calibrated_where_models_share_learned_features():
    """Unrelated models that learned the same features in bases of their own: the matching still
    finds some of that likeness after whitening (every pair's statistic lies above all of those of
    independent responses — the null SP-6 calibrates on untrained inits — so a threshold set there
    would call every pair related: the negative control), but the rotation null goes through the
    same whitening and matching, so false alarms stay at α: ≤ 2 of 40 pairs (P ≥ 3 | Bin(40, 0.01)
    ≈ 0.008)."""
    n, d, r = 300, 24, 6
    alarms, stats_ = 0, []
    for i in range(40):
        z = torch.randn(n, r, generator=torch.Generator().manual_seed(100 + i))
        res = sp.matched_test(
            _shared_structure(n, d, 200 + i, z), _shared_structure(n, d, 300 + i, z), rotations=99, seed=i
        )
        alarms += res.same_lineage
        stats_.append(res.statistic)
    assert alarms <= 2
    independent = [
        sp.matched_test(_responses(n, d, 400 + i), _responses(n, d, 500 + i), rotations=99).statistic for i in range(10)
    ]
    assert min(stats_) > max(independent)


def test_matched_test_refuses_what_it_cannot_decide():
    fa = _responses(50, 8, 0)
    with pytest.raises(ReproError, match="rotations"):
        sp.matched_test(fa, fa, rotations=50)  # p ≥ 1/51 > 0.01
    with pytest.raises(ReproError, match="one shape"):
        sp.matched_test(fa, fa[:, :4])


def test_operating_table_quick_end_to_end(tmp_path, capsys, monkeypatch):
    """`repro seedprint-eval --quick` (the one command, at toy sizes): every row and mode filled
    with k ≤ n, pair counts as the design gives them (seeds → descendants, pairs of seeds and of
    untrained inits → unrelated), Wilson intervals around the rates; the printed table, the written
    JSON and markdown agree; `calibration` pools a group's rows; --quick never overwrites the
    committed table. While it works it says so on stderr (issue 65: the full table's pairs were
    read for 7.5 min in silence): here a line per pair (the heartbeat's interval set to 0), up to
    19 of 19 (2 seeds × 7 descendants and rewrites, 1 + 1 trained pairs, C(3, 2) untrained)."""
    from repro.ground import progress
    from repro.harness.cli import main
    from repro.seedprint import evaluation as ev

    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    assert main(["seedprint-eval", "--quick", "--untrained", "3", "--trained", "0", "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "repro: seedprint-eval: 1/19 pairs read" in err and "repro: seedprint-eval: 19/19 pairs read" in err, err
    table = json.loads((tmp_path / "seedprint_operating_table.json").read_text())
    assert table["profile"] == "quick"
    rows = {r["kind"]: r for r in table["rows"]}
    assert rows["init → trained"]["alg1-hidden"]["n"] == 2
    assert rows["untrained inits, different seeds"]["alg1-hidden"]["n"] == 3  # C(3, 2)
    assert rows["trained, different seeds, same data order"]["released-hidden"]["n"] == 1
    assert {r["group"] for r in table["rows"]} == {"descendant", "rewritten descendant", "unrelated"}
    for r in table["rows"]:
        for mode in ev.MODES:
            x = r[mode]
            assert 0 <= x["k"] <= x["n"] and x["wilson95"][0] <= x["rate"] <= x["wilson95"][1]
    md = (tmp_path / "seedprint_operating_table.md").read_text()
    assert "| unrelated | untrained inits, different seeds |" in md and md.strip() in out
    cal = ev.calibration("alg1-hidden", table)
    un = cal["groups"]["unrelated"]
    assert un["n"] == sum(r["alg1-hidden"]["n"] for r in table["rows"] if r["group"] == "unrelated")
    assert ev.calibration("no-such-mode", table) is None
    with pytest.raises(ReproError, match="--quick builds toy models at its own sizes"):
        ev.main_table(quick=True, save=True, out=str(tmp_path))


def test_calibration_lines_quote_the_committed_table():
    """The CLI's account: the committed table (when present) gives every group of the default
    mode with its counts; a missing table or mode says so instead of inventing a rate."""
    from repro.seedprint import evaluation as ev

    table = {
        "modes": ["alg1-hidden"],
        "sizes": {"alpha": 0.01, "lineage": {"n_layer": 4}},
        "provenance": {"git_commit": "abc", "date": "2026-11-25"},
        "rows": [
            {"group": "descendant", "kind": "a", "alg1-hidden": {"k": 4, "n": 4, "rate": 1.0, "wilson95": [0.5, 1.0]}},
            {"group": "unrelated", "kind": "b", "alg1-hidden": {"k": 0, "n": 6, "rate": 0.0, "wilson95": [0, 0.4]}},
            {"group": "unrelated", "kind": "c", "alg1-hidden": {"k": 2, "n": 6, "rate": 2 / 6, "wilson95": [0, 0.7]}},
            # a rate over α by chance (the matched test in a float32 run): no alarm
            {
                "group": "unrelated",
                "kind": "f",
                "alg1-hidden": {"k": 5, "n": 378, "rate": 5 / 378, "wilson95": [0.006, 0.031]},
            },
        ],
    }
    lines = ev.calibration_lines(ev.calibration("alg1-hidden", table))
    assert any("false alarms on unrelated pairs: 7/390" in x for x in lines)
    assert any("detected on true descendants: 4/4" in x for x in lines)
    assert "no operating table" in ev.calibration_lines(None)[0]
    alarm = [x for x in lines if x.startswith("  false alarms above α on:")]
    assert len(alarm) == 1 and alarm[0].startswith("  false alarms above α on: c (2/6, binomial p 0.0015")  # ≫ α
    assert " f (" not in alarm[0]  # 5/378: binomial p 0.33 against α, at α within its noise
    assert not any("cannot see through" in x for x in lines)  # no rewritten row missed
    table["rows"].append(
        {
            "group": "rewritten descendant",
            "kind": "d → e, basis permuted",
            "alg1-hidden": {"k": 0, "n": 4, "rate": 0.0, "wilson95": [0, 0.5]},
        }
    )
    lines = ev.calibration_lines(ev.calibration("alg1-hidden", table))
    assert any(x == "  cannot see through: basis permuted (a descendant changed so is called unrelated)" for x in lines)
    assert ev.cli_mode("paper", "hidden") == "alg1-hidden" and ev.cli_mode("released", "logits") == "released-logits"
    assert ev.cli_mode("paper", "hidden", aligned=True) == "aligned-hidden"
    assert ev.cli_mode("paper", "hidden", matched=True) == "matched-hidden"
    # a column re-measured on its own quotes its own commit, date and note (the released test's)
    table["provenance"]["per_mode"] = {"alg1-hidden": {"git_commit": "def", "date": "2026-12-02", "note": "fewer"}}
    lines = ev.calibration_lines(ev.calibration("alg1-hidden", table))
    assert "measured by repro seedprint-eval at def, 2026-12-02" in lines[0] and lines[1] == "  (fewer)"


def test_pretrained_movement_is_reported_and_bad_finetune_options_refused(tmp_path):
    """How far each pretrained fine-tune moved its model is a line of the markdown; the
    fine-tune options need --pretrained and sane values, refused before any model is built."""
    from repro.seedprint import evaluation as ev

    table = {
        "modes": [],
        "rows": [],
        "sizes": {
            "alpha": 0.01,
            "lineage": {"n_layer": 4, "d_model": 128, "steps": 300},
            "n": 1000,
            "length": 32,
            "m": 32,
        },
        "pretrained_movement": {
            "smollm2-135m": {
                "finetune_steps": 200,
                "finetune_lr": 3e-4,
                "tokens": 51200,
                "heldout_windows": 64,
                "heldout_nll_before": 2.917,
                "heldout_nll_after": 2.5,
                "nll_drop": 0.417,
                "nll_drop_95": [0.38, 0.45],
                "rel_weight_change": 0.0123,
            }
        },
    }
    md = ev.markdown(table)
    assert "smollm2-135m's fine-tune (200 steps, lr 0.0003, 51,200 code tokens" in md
    assert "drop 0.417, 95% CI [0.380, 0.450] over 64 windows), ‖Δθ‖/‖θ‖ = 0.0123." in md
    for kw, msg in (
        (dict(finetune_steps=50), "add --pretrained"),
        (dict(pretrained=True, finetune_steps=0), "at least 1"),
        (dict(pretrained=True, finetune_lr=-1.0), "positive"),
    ):
        with pytest.raises(ReproError, match=msg):
            ev.main_table("ci", out=str(tmp_path), **kw)
