"""Training on N processes through torchrun: 2 gloo processes on this CPU reach the
same loss curve as one process (same global batch), the claim side loads the checkpoint rank 0
wrote, and a rank that fails or hangs ends in one ReproError within a timeout."""

from __future__ import annotations

import shutil
import uuid

import pytest

from repro.causal_shift import experiments as cs
from repro.core import launch, token_streams, train
from repro.ground.runtime import ReproError

# the suite's Brown BPE at the vocabulary the unit tests already cache (tests/test_train.py)
TINY = dict(vocab_size=4096, d_model=32, n_layer=2, n_head=2, max_len=32)


def _setup(tag: str = ""):
    tc = cs.gpt2_style(**TINY)
    cfg = train.TrainConfig(
        steps=12,
        batch_size=8,
        seq_len=32,
        lr=3e-3,
        warmup_steps=2,
        eval_every=12,
        eval_batches=2,
        vocab_size=4096,
        autocast=None,
    )
    tr, va, ident = token_streams.corpus_tokens("brown", 4096)
    return tc, cfg, tr, va, {**ident, "test": tag}


def test_two_gloo_processes_train_like_one():
    # a fresh cache key per run (the data identity carries a random tag), removed at the end
    tc, cfg, tr, va, ident = _setup(uuid.uuid4().hex)
    v = cs.Variant("baseline")
    one = train.train(
        lambda s: cs.build(tc, v, s),
        cfg.replace(model_seed=0),
        train_tokens=tr,
        val_tokens=va,
        model_config=cs.job_model_config(tc, v),
        data_identity=ident,
        cache=False,
        progress=False,
    )
    two = cs.train_variant(tc, cfg, v, 0, train_tokens=tr, val_tokens=va, data_identity=ident, procs=2)
    try:
        assert not two.trained and two.checkpoint.exists()  # the claim side loaded what rank 0 wrote
        assert one.key == two.key
        # same global batch, gradients averaged by all-reduce: the curves agree to float32 reduction
        # order (measured max difference ≈ 1e-6; 1e-4 leaves room for other BLAS builds)
        assert two.losses == pytest.approx(one.losses, abs=1e-4)
        assert two.final_val_loss == pytest.approx(one.final_val_loss, abs=1e-4)
    finally:
        shutil.rmtree(two.checkpoint, ignore_errors=True)


# a failing rank ends the group at once (the generous timeout is never reached); a hung one is
# killed at the (short) timeout
@pytest.mark.parametrize("mode, message, timeout", [("1", "failed", 300), ("1:hang", "timed out", 15)])
def test_a_failed_or_hung_rank_is_one_clear_error(monkeypatch, mode, message, timeout):
    monkeypatch.setenv(launch.FAIL_ENV, mode)
    # this run's ranks inherit a tag, so ranks of a test running beside it (xdist) are not counted
    tag = f"REPRO_TEST_RUN={uuid.uuid4().hex}"
    monkeypatch.setenv(*tag.split("="))
    tc, cfg, *_ = _setup()
    job = launch.job(
        "repro.causal_shift.experiments:build_for_job", {"tiny": {**vars(tc)}, "variant": {"name": "baseline"}}, cfg
    )
    with pytest.raises(ReproError, match=message):
        launch.run(job, 2, timeout=timeout)
    import subprocess

    found = subprocess.run(["pgrep", "-f", "repro.core.launch /tmp/repro-job"], capture_output=True, text=True).stdout
    left = [pid for pid in found.split() if tag in _environ(pid)]
    assert not left, f"ranks left behind: {left}"


def _environ(pid: str) -> str:
    """A process's environment as text ("" once it has gone)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().replace(b"\0", b"\n").decode(errors="replace")
    except OSError:
        return ""


def test_bad_factory_and_procs():
    with pytest.raises(ReproError, match="not importable"):
        launch.job(
            "repro.nowhere:f", {}, train.TrainConfig(steps=1, batch_size=1, seq_len=4, warmup_steps=0, vocab_size=8)
        )
    with pytest.raises(ReproError, match="train-procs"):
        launch.run({}, 0)


def test_pool_trains_side_by_side_and_the_caller_loads():
    """Two independent jobs in the training pool (one process and one torch thread each): the
    caller's train_variant then loads both (cache hits under the one-process key), with the
    losses of a one-thread run in this process; a second pool call finds nothing to do."""
    import torch

    tc, cfg, tr, va, ident = _setup(uuid.uuid4().hex)
    variants = [(cs.Variant("baseline"), 0), (cs.Variant("cut@0", "cut", 0, 0.5), 1)]
    jobs = [cs.variant_job(tc, cfg, v, s, data_identity=ident) for v, s in variants]
    assert launch.pool(jobs, workers=2) == 2
    loaded = [cs.train_variant(tc, cfg, v, s, train_tokens=tr, val_tokens=va, data_identity=ident) for v, s in variants]
    try:
        assert all(not r.trained for r in loaded)
        assert launch.pool(jobs, workers=2) == 0
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            here = train.train(
                lambda s: cs.build(tc, variants[1][0], s),
                cfg.replace(model_seed=1),
                train_tokens=tr,
                val_tokens=va,
                model_config=cs.job_model_config(tc, variants[1][0]),
                data_identity=ident,
                cache=False,
                progress=False,
            )
        finally:
            torch.set_num_threads(threads)
        assert here.key == loaded[1].key
        assert loaded[1].losses == pytest.approx(here.losses, abs=1e-6)
    finally:
        for r in loaded:
            shutil.rmtree(r.checkpoint, ignore_errors=True)


def test_pooled_workers_see_the_callers_environment_at_the_pools_start(monkeypatch):
    """The pool's workers are forked from one fork server per process (`launch.PRELOAD` imported
    once); each still sees the caller's environment as it is when its pool starts (a REPRO_CACHE
    set after the server started, say), and runs one torch thread. Control: a worker of the same
    server without `_worker_init` sees the server's environment, not the caller's."""
    import os

    import torch

    def pool(init, args=()):
        return launch._context().Pool(1, initializer=init, initargs=args)

    with pool(launch._one_thread) as p:
        p.apply(os.getenv, ("PATH",))  # the fork server runs from here on
    monkeypatch.setenv("REPRO_TEST_POOL_ENV", uuid.uuid4().hex)
    with pool(launch._worker_init, (dict(os.environ),)) as p:
        assert p.apply(os.getenv, ("REPRO_TEST_POOL_ENV",)) == os.environ["REPRO_TEST_POOL_ENV"]
        assert p.apply(torch.get_num_threads) == 1
    with pool(launch._one_thread) as p:
        assert p.apply(os.getenv, ("REPRO_TEST_POOL_ENV",)) is None


def test_the_pool_says_what_it_is_doing(monkeypatch, caplog):
    """Issue 65: a claim whose models train in the pool is not silent — a line when the pool
    starts (jobs, processes), one as jobs finish (done of total, elapsed, about how long is left;
    at most one per POOL_EVERY_S, here every tick), and what it took, on `repro.progress`, the
    logger the claims plugin shows on pytest's terminal."""
    import logging

    from repro.ground import progress

    tc, cfg, tr, va, ident = _setup(uuid.uuid4().hex)
    jobs = [cs.variant_job(tc, cfg, cs.Variant("baseline"), s, data_identity=ident) for s in (0, 1)]
    monkeypatch.setattr(launch, "POOL_EVERY_S", 0)
    with caplog.at_level(logging.INFO, logger=progress.LOGGER):
        assert launch.pool(jobs, workers=2) == 2
    lines = [r.getMessage() for r in caplog.records if r.name == progress.LOGGER]
    try:
        assert lines[0] == "training pool: 2 job(s) on 2 process(es), one torch thread each"
        done = [ln for ln in lines if "jobs done" in ln and "(last: " in ln]
        assert [ln.split(": ")[1].split(" ")[0] for ln in done] == ["1/2", "2/2"]
        assert "elapsed" in done[0] and "left" in done[0] and "seed " in done[0]
        assert lines[-1].startswith("training pool: 2 job(s) trained in ")
    finally:
        for s in (0, 1):
            base = cs.Variant("baseline")
            r = cs.train_variant(tc, cfg, base, s, train_tokens=tr, val_tokens=va, data_identity=ident)
            shutil.rmtree(r.checkpoint, ignore_errors=True)


def test_pool_with_one_thread_does_nothing_and_a_failed_job_is_one_clear_error():
    tc, cfg, tr, va, ident = _setup(uuid.uuid4().hex)
    good = cs.variant_job(tc, cfg, cs.Variant("baseline"), 0, data_identity=ident)
    assert launch.pool([good], workers=1) == 0  # the caller trains in-process
    bad = {**good, "factory_kwargs": {**good["factory_kwargs"], "variant": {"name": "x", "mode": "nonsense"}}}
    with pytest.raises(ReproError, match="training job .* failed"):
        launch.pool([bad], workers=2)


def test_a_job_that_fails_in_the_pool_is_one_clear_error():
    tc, cfg, tr, va, ident = _setup(uuid.uuid4().hex)
    blows_up = cs.variant_job(tc, cfg.replace(lr=1e12, grad_clip=None), cs.Variant("baseline"), 0, data_identity=ident)
    with pytest.raises(ReproError, match="failed in the training pool: ReproError: training diverged"):
        launch.pool([blows_up], workers=2)


def test_pool_processes_fill_every_core_in_the_last_round():
    """`launch.processes`: one process per core when the jobs divide evenly; otherwise the fewest
    processes ≥ cores (≤ 2·cores + 1) whose last round still has a job for every core, so equal
    jobs finish in n/cores job-lengths under the OS's sharing (13 on 2 cores: 6.5, not 7 rounds)."""
    from repro.core.launch import processes

    assert processes(13, 2) == 5 and processes(5, 2) == 3 and processes(3, 2) == 3 and processes(7, 2) == 4
    assert processes(2, 2) == 2 and processes(4, 2) == 2 and processes(1, 2) == 1 and processes(13, 16) == 13

    def makespan(n: int, cores: int, w: int) -> float:  # equal jobs of length 1, processor sharing
        t, left = 0.0, n
        while left:
            k = min(w, left)
            t += k / min(k, cores)  # k jobs of 1 core-unit on min(k, cores) cores
            left -= k
        return t

    for n in range(1, 30):
        for cores in (2, 3, 4):
            w = processes(n, cores)
            assert makespan(n, cores, w) <= makespan(n, cores, min(n, cores)) + 1e-9
            assert cores <= w <= 2 * cores + 1 or w == n <= cores


def test_a_job_with_its_own_token_streams_pools_under_the_in_process_key():
    """RS-7's induction models train on generated sequences, not a corpus: the job names the
    function that makes its streams (`tokens`), and `train_induction` then loads what the pool
    wrote (a cache hit under the key of an in-process run)."""
    from repro.residual_stream import induction

    cfg = induction.InductionConfig(
        n_train_seq=64,
        n_eval_seq=8,
        steps=6,
        warmup_steps=2,
        curve_every=3,
        batch_size=8,
        data_seed=uuid.uuid4().int % 10**6,
    )  # a fresh key per run
    jobs = [induction.train_job(cfg, n_layer, 0) for n_layer in (1, 2)]
    assert launch.pool(jobs, workers=2) == 2
    runs = [induction.train_induction(cfg, n_layer, 0) for n_layer in (1, 2)]
    try:
        assert not any(r.trained for r in runs)
        assert launch.pool(jobs, workers=2) == 0
    finally:
        for r in runs:
            shutil.rmtree(r.result.checkpoint, ignore_errors=True)
    with pytest.raises(ReproError, match="not importable"):
        launch.job(
            "repro.residual_stream.induction:build_for_job",
            {},
            induction.train_config(cfg, 0),
            tokens=("repro.nowhere:streams", {}),
        )


def test_train_jobs_dispatches_to_the_pool_or_to_torchrun_per_job(monkeypatch):
    """`launch.train_jobs`, the one dispatch every topic calls before loading its models: with one
    process, the pool on a CPU (unless the topic trains in-process: pooled=False) and nothing on a
    GPU; with N > 1, `run(job, N)` for each job not cached yet, one after the other, never the pool."""
    calls = []
    monkeypatch.setattr(launch, "pool", lambda jobs: calls.append(("pool", [j["id"] for j in jobs])) or len(jobs))
    monkeypatch.setattr(launch, "run", lambda job, procs: calls.append(("run", job["id"], procs)))
    monkeypatch.setattr(launch, "cached", lambda job: job["id"] == "b")
    jobs = [{"id": "a"}, {"id": "b"}, {"id": "c"}]

    assert launch.train_jobs(jobs, 1, "cpu") == 3 and calls == [("pool", ["a", "b", "c"])]
    calls.clear()
    assert launch.train_jobs(jobs) == 3 and calls == [("pool", ["a", "b", "c"])]  # defaults: 1 process, CPU
    calls.clear()
    assert launch.train_jobs(jobs, 1, "cpu", pooled=False) == 0 and calls == []
    assert launch.train_jobs(jobs, 1, "cuda") == 0 and calls == []
    assert launch.train_jobs(jobs, 1, "cuda:1") == 0 and calls == []
    for device in ("cpu", "cuda"):
        for pooled in (True, False):
            calls.clear()
            assert launch.train_jobs(jobs, 2, device, pooled=pooled) == 2
            assert calls == [("run", "a", 2), ("run", "c", 2)]  # "b" is cached: not launched
    with pytest.raises(ReproError, match="train-procs must be >= 1"):
        launch.train_jobs(jobs, 0)

    def broken(job):
        raise ValueError("no such corpus")

    monkeypatch.setattr(launch, "cached", broken)
    monkeypatch.setattr(launch, "_name", lambda job: job["id"])
    with pytest.raises(ReproError, match="training job a failed before its launch on 2 processes: ValueError"):
        launch.train_jobs(jobs, 2)


def test_rs7_induction_models_train_on_two_gloo_processes_and_the_study_loads_them(monkeypatch):
    """--train-procs reaches RS-7: `induction_study(procs=2)` trains each model under torchrun
    (2 gloo processes), and its in-process `train_induction` then loads the checkpoints (no second
    training), with the loss curve of a one-process run (same global batch; tolerance as above)."""
    from repro.residual_stream import induction, study

    launched, real_run = [], launch.run
    monkeypatch.setattr(launch, "run", lambda job, procs: launched.append(procs) or real_run(job, procs))
    monkeypatch.setattr(launch, "pool", lambda *a, **k: pytest.fail("--train-procs 2 must not use the pool"))
    s = {
        "config": dict(
            n_train_seq=64,
            n_eval_seq=8,
            steps=6,
            warmup_steps=2,
            curve_every=3,
            batch_size=8,
            data_seed=uuid.uuid4().int % 10**6,
        ),  # a fresh key per run
        "seeds": [0],
    }
    st = study.induction_study(s, procs=2)
    try:
        assert launched == [2, 2]  # each model on its own torchrun of 2 processes
        assert sorted(st.runs) == [(1, 0), (2, 0)]
        assert not any(r.trained for r in st.runs.values())  # loaded what rank 0 wrote
        cfg = st.cfg
        one = train.train(
            lambda seed: induction.build_model(cfg, 2, seed),
            induction.train_config(cfg, 0),
            train_tokens=induction.train_stream(cfg),
            val_tokens=induction.eval_data(cfg).tokens.reshape(-1),
            cache=False,
            progress=False,
        )
        two = st.runs[(2, 0)].result
        assert one.key == two.key
        assert two.losses == pytest.approx(one.losses, abs=1e-4)
        assert two.final_val_loss == pytest.approx(one.final_val_loss, abs=1e-4)
        assert launch.train_jobs([induction.train_job(cfg, n, 0) for n in (1, 2)], 2) == 0  # all cached now
    finally:
        for r in st.runs.values():
            shutil.rmtree(r.result.checkpoint, ignore_errors=True)


def test_a_ca8_job_has_the_key_of_train_lm():
    """CA-8's models as launch jobs (`whole_model.lm_job`, for --train-procs): the job names the
    checkpoint an in-process `train_lm` writes, so `train_lm` loads what torchrun trained (checked
    in-process here: cheap; the 2-process run of such a job matched one process to 1e-6)."""
    from repro.context_axis import whole_model

    model = dict(n_layer=1, n_head=2, d_model=32, vocab_size=4096)
    cfg = train.TrainConfig(
        steps=2,
        batch_size=2,
        seq_len=8,
        lr=1e-3,
        warmup_steps=1,
        eval_every=2,
        eval_batches=1,
        vocab_size=4096,
        autocast=None,
    )
    tr, va, ident = token_streams.corpus_tokens("brown", 4096)
    ident = {**ident, "test": uuid.uuid4().hex}  # a fresh key per run
    setup = dict(train_mode="full", axis_drop=0.5, bucket=4)
    job = whole_model.lm_job(model, cfg, 3, corpus="brown", data_identity=ident, **setup)
    assert not launch.cached(job)
    r = whole_model.train_lm(model, cfg, 3, train_tokens=tr, val_tokens=va, data_identity=ident, **setup)
    try:
        assert r.trained and launch.cached(job)
        assert launch.train_jobs([job], 2) == 0  # nothing left to launch
    finally:
        shutil.rmtree(r.checkpoint, ignore_errors=True)


def test_sinks_trio_refuses_train_procs_under_accelerate_launch(monkeypatch):
    """SK-2/3's paper profile trains under `accelerate launch`; --train-procs N there would start
    one torchrun per rank: one clear error instead."""
    from types import SimpleNamespace

    from repro.harness import profiles
    from repro.sinks import trio

    monkeypatch.setattr(trio, "accelerator_for", lambda name: SimpleNamespace(num_processes=2))
    monkeypatch.setattr(launch, "train_jobs", lambda *a, **k: pytest.fail("nothing may train"))
    with pytest.raises(ReproError, match="--train-procs 2 under `accelerate launch`"):
        trio.train_trio(profiles.get_profile("ci").sizes("sinks"), "ci", "brown", procs=2)


class _Stop(Exception):
    pass


@pytest.mark.parametrize("procs", [1, 3])
def test_every_training_topic_hands_its_jobs_and_procs_to_train_jobs(monkeypatch, procs):
    """--train-procs reaches every training claim's trainer: CS's variants, SK's trio, SP's lineage,
    RS-7's induction models and CA-8's grid each call `launch.train_jobs(jobs, procs, device)` before
    loading (stopped there: nothing trains); pooled on a CPU with one process, except CA-8, whose
    one-process models always trained in-process."""
    from repro.causal_shift import study as cs_study
    from repro.context_axis import experiments as ca
    from repro.harness import profiles
    from repro.residual_stream import study as rs_study
    from repro.seedprint.lineage import Lineage, LineageConfig
    from repro.sinks import trio

    seen = {}

    def spy(jobs, procs_, device="cpu", *, pooled=True):
        seen["call"] = ([j["factory"] for j in jobs], procs_, str(device), pooled)
        raise _Stop

    monkeypatch.setattr(launch, "train_jobs", spy)
    ci = profiles.get_profile("ci")
    lab = Lineage(LineageConfig(), procs=procs)
    topics = {
        "causal_shift": (
            lambda: cs_study.train_runs(ci.sizes("causal_shift"), procs=procs),
            "repro.causal_shift.experiments:build_for_job",
            20,  # §IV's 13 variants, CS-4's sweep on seeds 1–2 (6) and CS-5's null (the gate on shuffled tokens)
            True,
        ),
        "sinks": (
            lambda: trio.train_trio(ci.sizes("sinks"), "ci", "brown", procs=procs),
            "repro.sinks.experiments:build_for_job",
            3,
            True,
        ),
        "seedprint": (
            lambda: lab.pretrain([lab.base_job(0), lab.base_job(1)]),
            "repro.seedprint.lineage:init_for_job",
            2,
            True,
        ),
        "residual_stream": (
            lambda: rs_study.induction_study(ci.sizes("residual_stream")["induction"], procs=procs),
            "repro.residual_stream.induction:build_for_job",
            2 * len(ci.sizes("residual_stream")["induction"]["seeds"]),
            True,
        ),
        "context_axis": (
            lambda: ca.ca8_experiment(ci.sizes("context_axis"), procs=procs),
            "repro.context_axis.whole_model:build_for_job",
            3 * len(ci.sizes("context_axis")["seeds"]),
            False,
        ),
    }
    for name, (call, factory, n_jobs, pooled) in topics.items():
        seen.clear()
        with pytest.raises(_Stop):
            call()
        assert seen["call"] == ([factory] * n_jobs, procs, "cpu", pooled), name


def test_sp5_finetunes_say_that_train_procs_does_not_reach_them():
    """SP-5's fine-tunes start from a pretrained model loaded in the test process (whatever --model
    names), not from a launch job: with --train-procs N > 1 they train here, and say so (one warning),
    rather than ignore the option in silence; with one process, no warning."""
    import warnings

    from repro.seedprint import study

    ps = {"n": 10, "length": 8, "m": 4}
    with pytest.warns(UserWarning, match="--train-procs 2 does not reach SP-5's fine-tunes"):
        study.finetune_descendants(lambda name: pytest.fail("nothing to load"), [], ps, "cpu", 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        study.finetune_descendants(lambda name: pytest.fail("nothing to load"), [], ps, "cpu")
