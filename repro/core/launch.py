"""Training jobs on N processes through torchrun: data-parallel, standard tools only.

A training job is what `repro.core.train.train` receives — a model factory (an importable
``module:function`` called with the seed and keyword arguments), a TrainConfig, the corpus its
token streams come from, and the labels of its cache key — written as JSON so another process
can run it. `run(job, procs=N)` launches

    torchrun --standalone --nproc_per_node N -m repro.core.launch JOB.json

Each rank builds the same model, `accelerate.Accelerator` (gloo on CPU, NCCL on GPUs) wraps it
in DistributedDataParallel, every step's global batch is split across ranks (`train._loop`
takes starts[step, rank::world]) and gradients are all-reduced, so N processes train on the same
global batch as one; rank 0 writes the checkpoint atomically under the same cache key as a
one-process run, and the caller then loads it with `train.train(...)` (a cache hit). A rank
that fails makes torchrun end the group; a job that hangs is killed after `timeout` seconds;
either way the claim gets one ReproError with the job's last output lines.

Independent jobs on one machine's CPU cores (`pool(jobs)`): each job in a process of its own
on one torch thread (forked from a fork server that imported torch and transformers once per
run: `PRELOAD`), on as many cores as this process has torch threads (more processes than
cores where the jobs do not divide evenly: `processes`); each writes its
checkpoint under the key of a one-process run, and the caller loads it with `train.train`
(a cache hit). On a 2-core CPU in float32 a CS model (4 × 128, 300 steps of 16 × 64 tokens)
took 40 s on one thread beside another job against 25 s alone on both cores (1.25× the
throughput: small matmuls do not use a second core well); SP's LLaMA models, whose steps scale
to two threads, 50 s against 28 s (no gain on 2 cores, a large one on more). A pooled job always
runs on one thread, on any machine, so its numbers do not depend on how many cores trained it.

`train_jobs(jobs, procs, device)` is the one dispatch the topics call before loading their
models: `run` for each job with ``--train-procs N`` > 1, `pool` on a CPU otherwise.

Several nodes: the same module under torchrun's rendezvous options, e.g. on each node
``torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint HOST:29400 -m
repro.core.launch JOB.json`` (untested here: one machine).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from repro.core import token_streams, train
from repro.core.checkpoints import checkpoint_dir
from repro.ground import progress
from repro.ground.progress import Heartbeat
from repro.ground.runtime import ReproError

FAIL_ENV = "REPRO_LAUNCH_FAIL_RANK"  # tests: this rank raises ("3") or hangs ("3:hang") at start


def job(
    factory: str,
    factory_kwargs: dict[str, Any],
    cfg: train.TrainConfig,
    *,
    corpus: str = "brown",
    model_config: dict | None = None,
    data_identity: dict | None = None,
    init_checkpoint: Any = None,
    tokens: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A JSON-able training job (see the module docstring); `init_checkpoint`: continue from a
    cached checkpoint (a TrainResult or its directory), as `train.train` does. `tokens`: where
    the token streams come from when they are not a corpus's — ``("module:function", kwargs)``,
    the function returning (train_tokens, val_tokens) (e.g. RS-7's generated sequences); the
    run's key then has `data_identity` as its labels, as an in-process run with those streams."""
    _factory(factory)  # fail early on a bad name
    if tokens is not None:
        _factory(tokens[0])
    return _with_checkpoint(
        {
            "factory": factory,
            "factory_kwargs": factory_kwargs,
            "train_config": dataclasses.asdict(cfg),
            "corpus": corpus,
            "model_config": model_config,
            "data_identity": data_identity,
            "init_checkpoint": init_checkpoint,
            "tokens": None if tokens is None else {"factory": tokens[0], "kwargs": tokens[1]},
        }
    )


def _streams(job: dict[str, Any], vocab_size: int) -> tuple[Any, Any, dict | None]:
    """(train_tokens, val_tokens, data_identity) of a job: its `tokens` factory's streams, or its
    corpus under the Brown BPE (`token_streams.corpus_tokens`, whose identity labels the key)."""
    src = job.get("tokens")
    if src is None:
        tr, va, ident = token_streams.corpus_tokens(job["corpus"], vocab_size)
        return tr, va, job["data_identity"] or ident
    tr, va = _factory(src["factory"])(**src["kwargs"])
    return tr, va, job["data_identity"]


def _factory(name: str):
    module, _, fn = name.partition(":")
    try:
        return getattr(importlib.import_module(module), fn)
    except (ImportError, AttributeError) as err:
        raise ReproError(f"training job factory {name!r} is not importable as module:function ({err})") from None


def _config(job: dict[str, Any]) -> train.TrainConfig:
    raw = dict(job["train_config"])
    for k, v in raw.items():
        if isinstance(v, list):
            raw[k] = tuple(v)
    return train.TrainConfig(**raw)


def execute(job: dict[str, Any], accelerator: Any = None) -> train.TrainResult:
    """Run a job in this process (under torchrun: this rank), through `train.train`."""
    cfg = _config(job)
    tr, va, ident = _streams(job, cfg.vocab_size)
    fn = _factory(job["factory"])
    kwargs = job["factory_kwargs"]
    return train.train(
        lambda seed: fn(seed, **kwargs),
        cfg,
        train_tokens=tr,
        val_tokens=va,
        model_config=job["model_config"],
        data_identity=ident,
        init_checkpoint=job.get("init_checkpoint"),
        accelerator=accelerator,
        progress=False,
    )


def run(job: dict[str, Any], procs: int, *, timeout: float = 1800.0) -> None:
    """Train `job` on `procs` processes with torchrun; returns when rank 0 has written the
    checkpoint (then `execute(job)` in the caller loads it). Raises ReproError on failure or
    timeout, with the job's last output lines."""
    if procs < 1:
        raise ReproError(f"--train-procs must be >= 1, got {procs}")
    with tempfile.TemporaryDirectory(prefix="repro-job-") as tmp:
        spec = Path(tmp) / "job.json"
        spec.write_text(json.dumps(job, default=str))
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={procs}",
            "-m",
            "repro.core.launch",
            str(spec),
        ]
        env = {
            **os.environ,
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // procs))),
        }
        # its own process group: on a timeout the ranks go too, not only torchrun
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # SIGTERM first: torchrun stops its workers (they run in process groups of their own);
            # then SIGKILL whatever is left of torchrun's group
            proc.terminate()
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            tail = "\n".join((err or "").splitlines()[-5:])
            raise ReproError(
                f"training job on {procs} processes timed out after {timeout:.0f} s (a rank hung?); last lines:\n{tail}"
            ) from None
        done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        errs = [ln for ln in lines if "Error" in ln or "error" in ln]
        tail = "\n".join((errs or lines)[-6:])
        raise ReproError(f"training job on {procs} processes failed (torchrun exit {done.returncode}):\n{tail}")


def _with_checkpoint(job: dict[str, Any]) -> dict[str, Any]:
    """The job's `init_checkpoint` (a TrainResult or a path) as a path string: JSON-able."""
    ckpt = job.get("init_checkpoint")
    if ckpt is None or isinstance(ckpt, str):
        return job
    return {**job, "init_checkpoint": str(checkpoint_dir(ckpt))}


def cached(job: dict[str, Any]) -> bool:
    """Whether `execute(job)` would load a finished checkpoint instead of training."""
    cfg = _config(job)
    tr, va, ident = _streams(job, cfg.vocab_size)
    model = _factory(job["factory"])(cfg.model_seed, **job["factory_kwargs"])
    return train.is_cached(
        model,
        cfg,
        tr,
        va,
        model_config=job["model_config"],
        data_identity=ident,
        init_checkpoint=job.get("init_checkpoint"),
    )


def _name(job: dict[str, Any]) -> str:
    kwargs = json.dumps(job["factory_kwargs"], default=str)[:120]
    return f"{job['factory']} (seed {job['train_config']['model_seed']}, {kwargs})"


# What every pooled job imports from outside the suite (torch, transformers and the model classes
# the topics train): ≈ 3.5 s of a worker's 4.4-s start on a 2-core VM, once per
# worker under "spawn" — 18 workers in a claims run. The pool's workers are forked from one fork
# server that imported these once (`_context`); repro's own modules are imported in each worker,
# after `_worker_init` has put the caller's environment back (REPRO_CACHE, REPRO_DTYPE, … as the
# caller sees them when the pool starts, as "spawn" had them).
PRELOAD = (
    "torch",
    "numpy",
    "scipy.stats",
    "transformers",
    "transformers.models.llama.modeling_llama",
    "transformers.models.gpt_neox.modeling_gpt_neox",
    "transformers.models.gpt2.modeling_gpt2",
    "safetensors.torch",
)


def _context():
    """The pool's process start method: a fork server that preloads PRELOAD (its first use in a
    process starts it; later pools fork from the same server)."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows: spawn, as before
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def _worker_init(env: dict[str, str]) -> None:
    """A pooled worker: the caller's environment at the pool's start (a forked worker would have
    the fork server's; its working directory and sys.path multiprocessing sends itself), one torch
    thread."""
    os.environ.clear()
    os.environ.update(env)
    _one_thread()


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def _pool_execute(job: dict[str, Any]) -> str:
    return str(execute(job).checkpoint)


def processes(n_jobs: int, cores: int) -> int:
    """How many one-thread jobs of about equal length to run at once on `cores` cores. One per
    core leaves a core idle for the whole last round when the jobs do not divide evenly (13 jobs on
    2 cores: 7 rounds, the last alone); the OS shares the cores among more processes than cores
    (each job's numbers do not depend on it: one thread each), so the fewest processes ≥ `cores`
    (at most 2·cores + 1, for memory) whose last round still fills every core finish in
    n_jobs / cores job-lengths: 13 jobs on 2 cores → 5 processes (6.5 rounds), 5 → 3, 3 → 3."""
    if n_jobs <= cores:
        return max(n_jobs, 1)
    for w in range(cores, min(n_jobs, 2 * cores + 1) + 1):
        if n_jobs % w == 0 or n_jobs % w >= cores:
            return w
    return cores


def pool(jobs: list[dict[str, Any]], *, workers: int | None = None, timeout: float = 3600.0) -> int:
    """Train the jobs that are not cached yet, each in a process of its own on one torch thread,
    on `workers` cores (default: this process's torch threads; see the module docstring), as
    many processes at once as `processes` says.
    Returns how many were trained; 0 when `workers` < 2 (the caller trains them in-process, on
    its own threads). Raises ReproError naming the job that failed, or on a timeout (the pool
    is terminated: no process is left behind). Says on `repro.progress` when it starts, how
    many jobs are done as they finish (`POOL_EVERY_S`), and what the pool took."""
    import torch

    workers = torch.get_num_threads() if workers is None else int(workers)
    if workers < 2:
        return 0
    todo = []
    for j in map(_with_checkpoint, jobs):
        try:
            if not cached(j):
                todo.append(j)
        except Exception as err:
            raise ReproError(
                f"training job {_name(j)} failed before the training pool started: {type(err).__name__}: {err}"
            ) from None
    if not todo:
        return 0
    n_procs = processes(len(todo), workers)
    progress.log.info("training pool: %d job(s) on %d process(es), one torch thread each", len(todo), n_procs)
    beat = Heartbeat("training pool", len(todo), unit="jobs done", every_s=POOL_EVERY_S)
    with _context().Pool(n_procs, initializer=_worker_init, initargs=(dict(os.environ),)) as procs:
        pending = [(j, procs.apply_async(_pool_execute, (j,))) for j in todo]
        _await(procs, pending, timeout, beat)
    progress.log.info("training pool: %d job(s) trained in %s", len(todo), beat.elapsed())
    return len(todo)


#: the pool's progress lines: at most one per this many seconds (`progress.Heartbeat`), whether a
#: job finished or the pool is still on its first ones (a 9-minute pool shows ~18 lines)
POOL_EVERY_S = progress.EVERY_S


def _await(procs: Any, pending: list[tuple[dict[str, Any], Any]], timeout: float, beat: Heartbeat) -> None:
    """Wait for the pool's jobs in whatever order they finish, a progress line (`beat`) as they do
    and while none has; a job that fails ends the pool (terminated) with one ReproError naming it;
    `timeout` seconds with no job finishing is a ReproError naming the oldest job still running."""
    import time

    left, done, since = list(pending), 0, time.monotonic()
    while left:
        finished = [(j, r) for j, r in left if r.ready()]
        for j, result in finished:
            try:
                result.get(0)
            except Exception as err:
                procs.terminate()
                raise ReproError(
                    f"training job {_name(j)} failed in the training pool: {type(err).__name__}: {err}"
                ) from None
            done, since = done + 1, time.monotonic()
            beat.tick(done, note=f"last: {j['factory'].rsplit(':', 1)[-1]}, seed {j['train_config']['model_seed']}")
        gone = {id(r) for _, r in finished}
        left = [(j, r) for j, r in left if id(r) not in gone]
        if not left:
            return
        if not finished:
            if time.monotonic() - since > timeout:
                procs.terminate()
                oldest = _name(left[0][0])
                raise ReproError(f"training job {oldest} timed out after {timeout:.0f} s in the training pool")
            left[0][1].wait(min(1.0, timeout))
            beat.tick(done)


def train_jobs(jobs: list[dict[str, Any]], procs: int = 1, device: Any = "cpu", *, pooled: bool = True) -> int:
    """Train a claim's jobs before its in-process `train.train` calls, which then load their
    checkpoints (cache hits under the one-process keys) — the one dispatch every topic uses:

    - `procs` > 1 (``--train-procs N``): each job not cached yet, one after the other, on `procs`
      processes under torchrun (`run`); the jobs must not need each other's checkpoints (a
      continual training's job is built once its base is trained);
    - `procs` == 1 on a CPU, where `pooled`: the jobs side by side in the training pool (`pool`);
    - otherwise nothing: the caller trains in-process, one by one.

    `pooled=False` is for a topic whose one-process runs have always trained in-process (their
    numbers came from the caller's threads, not the pool's one). Returns how many jobs trained here."""
    import torch

    if procs < 1:
        raise ReproError(f"--train-procs must be >= 1, got {procs}")
    if procs == 1:
        return pool(jobs) if pooled and torch.device(device).type == "cpu" else 0
    n = 0
    for j in map(_with_checkpoint, jobs):
        try:
            done = cached(j)
        except Exception as err:
            raise ReproError(
                f"training job {_name(j)} failed before its launch on {procs} processes: {type(err).__name__}: {err}"
            ) from None
        if not done:
            run(j, procs)
            n += 1
    return n


def _main(argv: list[str]) -> int:
    import time

    from accelerate import Accelerator

    from repro.ground.runtime import resolve_autocast

    if len(argv) != 1:
        print("usage: torchrun --nproc_per_node N -m repro.core.launch JOB.json", file=sys.stderr)
        return 2
    job_ = json.loads(Path(argv[0]).read_text())
    rank = int(os.environ.get("RANK", "0"))
    fail = os.environ.get(FAIL_ENV, "")
    if fail.split(":")[0] == str(rank):
        if fail.endswith(":hang"):
            time.sleep(10**6)
        raise RuntimeError(f"rank {rank} failed on purpose ({FAIL_ENV})")
    mixed = resolve_autocast(_config(job_).autocast, "cuda" if os.environ.get("CUDA_VISIBLE_DEVICES") else "cpu")
    accelerator = Accelerator(cpu=not _cuda(), mixed_precision="bf16" if mixed == "bfloat16" else "no")
    result = execute(job_, accelerator)
    if accelerator.is_main_process:
        print(f"checkpoint: {result.checkpoint}")
    return 0


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
