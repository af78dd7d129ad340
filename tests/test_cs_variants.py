"""000 §IV's variant groups: a profile trains the groups its `causal_shift.variants` names, so a
decide chunk trains only what its claim reads (decide-cs-seeds: CS-4's baseline and the cut at every
layer per seed; decide-cs-gate: CS-5's gate), and a claim reading an untrained group is told so."""

from __future__ import annotations

import pytest
import torch

from repro.causal_shift import study
from repro.core import launch
from repro.harness import profiles


class _Stop(Exception):
    pass


def _jobs(monkeypatch, profile: str) -> list[dict]:
    seen: dict = {}

    def spy(jobs, procs, device="cpu", *, pooled=True):
        seen["jobs"] = jobs
        raise _Stop

    monkeypatch.setattr(launch, "train_jobs", spy)
    with pytest.raises(_Stop):
        study.train_runs(profiles.get_profile(profile).sizes("causal_shift"), profile=profile)
    return seen["jobs"]


@pytest.mark.parametrize(
    "profile, n, modes",
    [
        ("ci", 3 + 4 + 2 + 2 * 3 + 3 + 1 + 1, {"none", "cut", "learned"}),
        ("decide-cs-seeds", 38 + 4 + 37 + 37 * 3 + 38 * 4, {"none", "cut"}),
        ("decide-cs-gate", 6, {"learned"}),  # CS5_PREREG: a gate and its null per seed, 3 seeds
    ],
)
def test_a_profile_trains_the_groups_it_names(monkeypatch, profile, n, modes):
    jobs = _jobs(monkeypatch, profile)
    assert len(jobs) == n
    assert {j["factory_kwargs"]["variant"]["mode"] for j in jobs} == modes
    seeds = profiles.get_profile(profile).sizes("causal_shift")["seeds"]
    if profile != "decide-cs-gate":  # CS-4's pairs: the cut at layer 0 for every seed, seed 0's from the sweep
        jobs = [j for j in jobs if j["factory_kwargs"]["variant"]["alpha"] != study.FAINT_ALPHA]  # the null aside
        first = [j["train_config"]["model_seed"] for j in jobs if j["factory_kwargs"]["variant"]["name"] == "cut@0"]
        assert sorted(first) == sorted(seeds)
        # CS-4's placement: every (seed, layer) cut once, so the sweep per seed is complete
        cuts = [
            (j["train_config"]["model_seed"], j["factory_kwargs"]["variant"]["layer"])
            for j in jobs
            if j["factory_kwargs"]["variant"]["mode"] == "cut" and j["factory_kwargs"]["variant"]["alpha"] > 0
        ]
        L = profiles.get_profile(profile).sizes("causal_shift")["model"]["n_layer"]
        assert sorted(cuts) == sorted((s, l) for s in seeds for l in range(L))


def test_the_plan_counts_the_same_trainings():
    from repro.causal_shift.sizes import PLANNERS

    for profile, n in (("ci", 20), ("decide-cs-seeds", 342), ("decide-cs-gate", 6)):
        job = PLANNERS["causal_shift"](profiles.get_profile(profile))[0]
        assert job.models == n, (profile, job)


def test_a_claim_reading_an_untrained_group_is_told_which():
    runs = study.Runs(None, None, None, None, None, None, object(), None, 2, "decide-cs-gate")
    runs.need("gate")  # trained: nothing raised
    assert runs.trained == ["gate"]
    with pytest.raises(study.NotTrained, match=r"decide-cs-gate profile trains only gate .* reads baseline, cuts"):
        runs.need("baseline", "cuts", "gate")


def test_the_sweep_table_is_seeds_by_layers():
    """`Runs.sweep_table`: seed 0's row from `cuts`, the others' from `first_cut` and `sweep` in
    (seed, layer) order, as `train_runs` lists them."""

    class R:
        def __init__(self, v):
            self.history = [{"val_loss": v}]

    L, n = 3, 3
    cuts = [R(0 * 10 + l) for l in range(L)]
    first = [cuts[0], *[R(s * 10) for s in range(1, n)]]
    sweep = [R(s * 10 + l) for s in range(1, n) for l in range(1, L)]
    runs = study.Runs(None, None, [], cuts, first, None, None, None, 1, "ci", None, sweep)
    assert runs.sweep_table().tolist() == [[s * 10 + l for l in range(L)] for s in range(n)]


def test_the_faint_null_is_the_sweep_with_a_faint_cut(monkeypatch):
    """CS-4's faint null: the sweep again — every (seed, layer) cell, from the seed's initial weights
    on the one data order — with α = FAINT_ALPHA, read back as a (seeds, layers) table."""
    sizes = profiles.get_profile("decide-cs-seeds").sizes("causal_shift")
    seeds, L = sizes["seeds"], sizes["model"]["n_layer"]
    jobs = _jobs(monkeypatch, "decide-cs-seeds")
    null = [j for j in jobs if j["factory_kwargs"]["variant"]["alpha"] == study.FAINT_ALPHA]
    assert 0.99 < study.FAINT_ALPHA < 1.0
    assert [(j["train_config"]["model_seed"], j["factory_kwargs"]["variant"]["layer"]) for j in null] == [
        (s, l) for s in seeds for l in range(L)
    ]
    assert {j["factory_kwargs"]["variant"]["mode"] for j in null} == {"cut"}
    sweep = [j for j in jobs if j["factory_kwargs"]["variant"]["alpha"] == sizes["cut_alpha"]]
    assert {j["train_config"]["data_seed"] for j in null} == {j["train_config"]["data_seed"] for j in sweep} == {0}

    class R:
        def __init__(self, v):
            self.history = [{"val_loss": v}]

    class TC:
        n_layer = 3

    cells = [R(s * 10 + l) for s in range(2) for l in range(3)]
    runs = study.Runs(TC(), None, None, None, None, None, None, None, 1, "ci", None, None, cells)
    assert runs.null_table().tolist() == [[0, 1, 2], [10, 11, 12]]
    with pytest.raises(study.NotTrained, match="reads faint_null"):
        study.Runs(TC(), None, None, None, None, None, None, None, 1, "ci").null_table()


def test_the_sweep_needs_the_cuts_it_completes():
    sizes = dict(profiles.get_profile("ci").sizes("causal_shift"), variants=("baseline", "sweep"))
    with pytest.raises(study.ReproError, match="'sweep' completes"):
        study.train_runs(sizes)


def test_an_unknown_group_is_one_clear_error():
    sizes = dict(profiles.get_profile("ci").sizes("causal_shift"), variants=("baseline", "gates"))
    with pytest.raises(study.ReproError, match="unknown groups .*'gates'"):
        study.train_runs(sizes)


def test_the_gate_null_trains_on_runs_of_repeated_tokens(monkeypatch):
    """CS-5's null: the gate's job, on runs of the corpus's tokens (shuffled, each repeated a
    geometric number of times; a job of its own with the streams' factory and the runs in its
    key's labels); the other jobs read the corpus."""
    from repro.causal_shift.sizes import CS5_PREREG
    from repro.core import token_streams

    jobs = _jobs(monkeypatch, "decide-cs-gate")
    gates, nulls = jobs[:3], jobs[3:]
    for js in (gates, nulls):  # the pre-registered seeds, each with the same gate
        assert [j["train_config"]["model_seed"] for j in js] == list(CS5_PREREG["seeds"])
    gate, null = gates[0], nulls[0]
    assert gate["tokens"] is None and gate["data_identity"].get("token_order") is None
    assert null["tokens"]["factory"] == "repro.core.token_streams:repeated_streams"
    assert null["data_identity"]["token_order"] == "runs of shuffled tokens (mean length 4, seed 0)"
    assert null["factory_kwargs"] == gate["factory_kwargs"] and null["train_config"] == gate["train_config"]
    tr, va, _ = token_streams.corpus_tokens("brown", 4096)
    r_tr, r_va = token_streams.repeated_streams(**null["tokens"]["kwargs"])
    for a, b in ((tr, r_tr), (va, r_va)):
        assert a.shape == b.shape and set(b.unique().tolist()) <= set(a.unique().tolist())
        # the next token repeats the current one at ≈ 1 − 1/4 of the positions (plus chance
        # repeats of frequent tokens); in the corpus and its shuffle almost never
        same = (b[1:] == b[:-1]).float().mean().item()
        assert 0.74 < same < 0.80 and (a[1:] == a[:-1]).float().mean().item() < 0.05
    again, _ = token_streams.repeated_streams(**null["tokens"]["kwargs"])
    assert torch.equal(again, r_tr)  # the same runs every time
    with pytest.raises(token_streams.ReproError, match="mean_run must exceed 1"):
        token_streams.repeated_corpus_tokens("brown", 4096, mean_run=1)


def test_cs5_prereg_reads_late_mass_per_seed_against_the_null():
    """CS-5's pre-registered test (sizes.CS5_PREREG): every gate seed's late mass ≥ bar + margin and
    the smallest above the largest null by ≥ margin; the exact permutation p is 1/20 when the three
    gates sit above the three nulls; the wrong number of runs is one clear error."""
    import numpy as np

    from repro.causal_shift.sizes import CS5_PREREG

    assert study.late_mass(np.array([0.1, 0.2, 0.3, 0.4])) == pytest.approx(0.7)
    assert study.late_mass(np.array([0.2, 0.2, 0.2, 0.2, 0.2])) == pytest.approx(0.4)  # l ≥ 5/2: layers 3, 4
    late, flat = np.array([0.05, 0.05, 0.1, 0.8]), np.array([0.25, 0.25, 0.25, 0.25])
    checks = lambda rs: {r.name: r.measured >= r.threshold for r in rs if r.compare == "ge"}  # noqa: E731
    rows = study.gate_prereg([late] * 3, [flat] * 3, CS5_PREREG)
    assert all(checks(rows).values()) and len(checks(rows)) == 2
    assert {r.name: r.measured for r in rows}["one-sided exact permutation p, gate seeds above null seeds"] == 0.05
    # a gate at 0.55 late mass clears the bar, not bar + margin; a null as late as the gates fails the second
    edge = np.array([0.225, 0.225, 0.275, 0.275])
    assert list(checks(study.gate_prereg([late, late, edge], [flat] * 3, CS5_PREREG)).values()) == [False, False]
    assert list(checks(study.gate_prereg([late] * 3, [flat, flat, late], CS5_PREREG)).values()) == [True, False]
    assert study.permutation_p([0.9, 0.8, 0.7], [0.1, 0.95, 0.2]) > 0.05
    with pytest.raises(study.ReproError, match="reads 3 gates and as many nulls"):
        study.gate_prereg([late], [flat], CS5_PREREG)
