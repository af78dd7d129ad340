"""What a profile will cost before any GPU hour is spent: `repro plan --profile paper`.

For every experiment row of `repro.harness.profiles` the jobs it runs — each topic's planners
(``PLANNERS`` of ``repro/<topic>/sizes.py``, collected here) turn its rows into
`repro.core.cost.Job`s: models trained or probed, their parameter counts, tokens trained and
evaluated, FLOPs, peak memory per device (the formulas: `repro.core.cost`) — then an estimated
time on a stated device and the resources the profile needs that are missing, one line each.

Time = FLOPs / (peak × utilisation) on one device (`plan_device`): a CPU at the rate of a
float32 (the dtype policy's) matmul timed now, a GPU `repro plan` knows by name at its
datasheet's dense bfloat16 peak (`GPUS`: one H100 SXM, 989 TFLOP/s, is `plan()`'s default),
another GPU at its measured matmul rate; 40% model-FLOPs utilisation of a GPU's rate, 80% of a
CPU's measured one (`CPU_UTILISATION`) — an estimate to plan with, not a measurement. `repro
plan` plans for the device the run would use (`--device auto`).

Resources (`repro.harness.plan_corpus`): the corpus each training job reads — the run's
`--corpus` (`plan(corpus=...)`) or the corpus a claim fixes (stdlib-code) — against its tokens,
and the vocabulary of the suite's Brown BPE against every row's `vocab_size`; memory per device
against every job's peak.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from repro.core.cost import RUN, Job, Planner
from repro.ground.errors import ReproError
from repro.ground.runtime import DEVICES
from repro.harness import plan_corpus
from repro.harness.plan_corpus import vocab_lines
from repro.harness.profiles import SIZE_TOPICS, SIZES, Profile, get_profile

# GPUs `repro plan --device NAME` knows by name (the datasheets, SXM parts): dense bfloat16 peak
# TFLOP/s and memory per device. A name here inside torch's name of the local GPU (lower case)
# gives that GPU these figures; any other GPU is measured.
GPUS = {
    "h100": {"label": "NVIDIA H100 SXM", "tflops": 989.0, "memory_gib": 80.0},
    "h200": {"label": "NVIDIA H200 SXM", "tflops": 989.0, "memory_gib": 139.0},
    "a100": {"label": "NVIDIA A100 SXM 80GB", "tflops": 312.0, "memory_gib": 80.0},
}
DEFAULT_UTILISATION = 0.4  # model-FLOPs utilisation of a GPU's rate
# ... and of a CPU's measured matmul rate: a float32-forced ci run on 2 cores took 30–32 min where
# its FLOPs at that CPU's measured matmul rate (0.15 TFLOP/s) come to 25 min
CPU_UTILISATION = 0.8
# the matmul `matmul_tflops` times on a device not in GPUS: (n × n) @ (n × n), best of PROBE_REPEATS
# after a warm-up. 1024 on a CPU: ≈ 2 GFLOP, tens of ms on 2 cores; a GPU needs 8192 to be busy.
PROBE_N = {"cpu": 1024, "cuda": 8192}
PROBE_REPEATS = 3


def _planners() -> dict[str, Planner]:
    found: dict[str, Planner] = {}
    for topic in SIZE_TOPICS:
        found.update(importlib.import_module(f"repro.{topic}.sizes").PLANNERS)
    return {**{exp: found[exp] for exp in SIZES if exp in found}, **found}  # in the rows' order


# experiment -> its jobs under a profile: every topic's planners, one per row of profiles.SIZES
# (tests/test_plan.py checks it; a row without a planner is listed as "not costed"). The FLOPs do
# not see launch- and CPU-bound work (the rows' notes say where it dominates: on an H100 at the
# paper profile bb_4_2 took 118 s and RS-7's induction seeds 111 s for well under a second of
# FLOPs each).
PLANNERS: dict[str, Planner] = _planners()


# --------------------------------------------------------------------------- the device


@dataclass(frozen=True)
class Device:
    """The one device a plan's times and memory are for (`plan_device`)."""

    name: str  # what `--device` names: "cpu", "cuda", or a key of GPUS
    label: str  # what it is: the CPU model and its torch threads, or the GPU's name
    tflops: float  # the peak the times divide by (before utilisation)
    memory_gib: float  # memory per device, which every job's peak is checked against
    rate: str  # where `tflops` comes from: a datasheet, a matmul timed now, or --tflops
    utilisation: float = DEFAULT_UTILISATION  # the fraction of `tflops` a run's model FLOPs reach


def device_names() -> tuple[str, ...]:
    """What `repro plan --device` takes: auto, cpu, cuda (the suite's device choices) and the GPUS."""
    return (*DEVICES, *GPUS)


def matmul_tflops(device: str = "cpu", dtype: Any = None) -> tuple[float, str]:
    """(TFLOP/s, what was timed) of one (n × n) @ (n × n) matmul on `device` in `dtype` (default: the
    dtype policy's there, what the run would compute in), n = PROBE_N[device], best of
    PROBE_REPEATS after a warm-up: a fraction of a second on a CPU, so `repro plan` stays fast."""
    import time

    import torch

    from repro.ground.runtime import dtype_name, generator, resolve_dtype

    n = PROBE_N[device]
    dtype = resolve_dtype("auto", device) if dtype is None else dtype
    g = generator(0)
    a, b = (torch.randn(n, n, generator=g).to(device=device, dtype=dtype) for _ in range(2))
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    best = float("inf")
    with torch.no_grad():
        for i in range(PROBE_REPEATS + 1):  # the first call picks its kernel: not timed
            sync()
            start = time.perf_counter()
            a @ b
            sync()
            best = best if i == 0 else min(best, time.perf_counter() - start)
    what = f"a {dtype_name(dtype)} ({n}×{n})@({n}×{n}) matmul timed now, best of {PROBE_REPEATS}"
    return 2.0 * n**3 / best / 1e12, what


def _physical_memory_gib() -> float:
    """This machine's RAM, GiB: what a CPU run's jobs must fit in."""
    import os

    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def _local_cpu(measure: bool) -> Device:
    import torch

    from repro.ground.runtime import cpu_capability

    cpu = cpu_capability()
    tflops, rate = matmul_tflops("cpu") if measure else (0.0, "")
    return Device(
        "cpu",
        f"{cpu['cpu'] or cpu['machine']} ({torch.get_num_threads()} torch threads)",
        tflops,
        _physical_memory_gib(),
        rate,
        CPU_UTILISATION,
    )


def _local_gpu(measure: bool) -> Device:
    """The first CUDA GPU: a GPUS entry's datasheet rate where its name is in torch's name of the
    GPU, else its matmul rate timed now; its own memory."""
    import torch

    props = torch.cuda.get_device_properties(0)
    known = next((k for k in GPUS if k in props.name.lower()), None)
    if known:
        tflops, rate = GPUS[known]["tflops"], f"the {known} datasheet's dense bfloat16 peak"
    else:
        tflops, rate = matmul_tflops("cuda") if measure else (0.0, "")
    return Device("cuda", props.name, tflops, props.total_memory / 2**30, rate)


def plan_device(name: str = "auto", *, tflops: float | None = None, memory_gib: float | None = None) -> Device:
    """The device to plan for: `name` one of `device_names()` — auto (the GPU when torch sees one,
    else this CPU), cpu, cuda (this machine's), or a GPUS entry by name (its datasheet figures,
    whatever this machine has). `tflops` / `memory_gib` replace the device's own (nothing is
    timed when `tflops` is given). Its utilisation: CPU_UTILISATION of a CPU's measured rate,
    DEFAULT_UTILISATION of a GPU's."""
    if name not in device_names():
        raise ReproError(f"unknown plan device {name!r}; choose one of {', '.join(device_names())}")
    if name in GPUS:
        g = GPUS[name]
        dev = Device(name, g["label"], g["tflops"], g["memory_gib"], "the datasheet's dense bfloat16 peak")
    else:
        import torch

        if name == "auto":
            name = "cuda" if torch.cuda.is_available() else "cpu"
        if name == "cuda" and not torch.cuda.is_available():
            raise ReproError(
                "repro plan --device cuda: torch sees no CUDA GPU here; name one (--device "
                f"{' / '.join(GPUS)}) to plan for it"
            )
        dev = (_local_gpu if name == "cuda" else _local_cpu)(measure=tflops is None)
    if tflops is not None:
        dev = replace(dev, tflops=tflops, rate="as given (--tflops)")
    if memory_gib is not None:
        dev = replace(dev, memory_gib=memory_gib)
    return dev


@dataclass
class Plan:
    profile: str
    tflops: float
    utilisation: float
    jobs: list[Job] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    not_costed: list[str] = field(default_factory=list)
    corpus: str = "brown"
    checked: list[str] = field(default_factory=list)  # resources checked and sufficient, one line each
    device: Device | None = None  # what `tflops` and the memory check are for (None: a bare rate)

    @property
    def total_flops(self) -> float:
        return sum(j.flops for j in self.jobs)

    def seconds(self, job: Job | None = None) -> float:
        f = self.total_flops if job is None else job.flops
        return f / (self.tflops * 1e12 * self.utilisation)

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "corpus": self.corpus,
            "tflops": self.tflops,
            "utilisation": self.utilisation,
            "device": asdict(self.device) if self.device else None,
            "jobs": [
                {**asdict(j), "flops": j.flops, "memory_bytes": j.memory_bytes, "seconds": self.seconds(j)}
                for j in self.jobs
            ],
            "total_flops": self.total_flops,
            "total_seconds": self.seconds(),
            "missing": self.missing,
            "checked": self.checked,
            "not_costed": self.not_costed,
        }


def plan(
    profile: str | Profile = "paper",
    *,
    tflops: float | None = None,
    utilisation: float | None = None,
    device_memory_gib: float | None = None,
    corpus: str = "brown",
    device: str | Device = "h100",
) -> Plan:
    """The plan of a profile for a run on `corpus` (what `--corpus` accepts: a ReproError names a
    bad one) on `device` (a `plan_device` name or a Device; default one H100 SXM, `repro plan`'s
    default is the device the run would use; `tflops` / `device_memory_gib` / `utilisation` replace
    its figures): every row's jobs, then what is missing or too small — the corpus each training
    job reads, memory per device, the Brown BPE's vocabulary."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    if (tflops is not None and tflops <= 0) or (utilisation is not None and not 0 < utilisation <= 1):
        raise ReproError(f"--tflops must be > 0 and --utilisation in (0, 1] (got {tflops}, {utilisation})")
    if isinstance(device, str):
        device = plan_device(device, tflops=tflops, memory_gib=device_memory_gib)
    else:
        device = replace(device, tflops=tflops or device.tflops, memory_gib=device_memory_gib or device.memory_gib)
    device = replace(device, utilisation=utilisation or device.utilisation)
    out = Plan(prof.name, device.tflops, device.utilisation, corpus=corpus, device=device)
    for key in SIZES:
        if key in PLANNERS:
            out.jobs += PLANNERS[key](prof)
        else:
            out.not_costed.append(key)
    out.missing += _job_lines(out.jobs, corpus, device.memory_gib)
    missing, checked = vocab_lines(prof)
    out.missing += missing
    out.checked += checked
    return out


def _job_lines(jobs: list[Job], corpus: str, device_memory_gib: float) -> list[str]:
    """Each job's corpus (the run's `corpus` for RUN, now written in) and memory per device, one
    line per shortfall. Each corpus is read once (`corpus_train_tokens`), the run's first: a bad
    one is an error whatever the jobs."""
    sizes = {corpus: plan_corpus.corpus_train_tokens(corpus)}
    out = []
    for j in jobs:
        fixed = j.corpus != RUN
        j.corpus = corpus if j.corpus == RUN else j.corpus
        if j.kind == "train" and j.corpus:
            if j.corpus not in sizes:
                sizes[j.corpus] = plan_corpus.corpus_train_tokens(j.corpus)
            if j.tokens > sizes[j.corpus][0]:
                out.append(_corpus_line(j, *sizes[j.corpus], fixed=fixed))
        if j.memory_bytes > device_memory_gib * 2**30:
            out.append(_memory_line(j, device_memory_gib))
    return out


def _memory_line(j: Job, device_memory_gib: float) -> str:
    fix = (
        "smaller micro-batches with gradient accumulation, or activation recomputation"
        if j.kind == "train"
        else "pass the sequences in batches"
    )
    return (
        f"{j.experiment} ({j.what}): ≈ {j.memory_bytes / 2**30:.0f} GiB per device at batch {j.batch} × {j.T} "
        f"(over {device_memory_gib:.0f} GiB): {fix}"
    )


def _corpus_line(j: Job, have: int, how: str, *, fixed: bool) -> str:
    head = (
        f"{j.experiment} ({j.claims}; {j.what}): trains on {j.tokens:,} tokens per model; {j.corpus} has "
        f"{how}{have:,} ({j.tokens / have:,.0f} epochs)."
    )
    if fixed:
        return (
            head + f" The claim fixes {j.corpus} (its shifted domain): `--corpus` does not change it, so the "
            "run repeats it that often, or the topic needs a larger corpus of that domain"
        )
    return (
        head + f" Needs a corpus of ≥ {j.tokens:,} tokens: pass `--corpus DIR` (a directory of text files or a "
        "saved datasets directory)"
    )


def too_big(experiment: str, profile: str | Profile, device_bytes: float) -> str | None:
    """One line saying which training job of `experiment` needs more memory per device than
    `device_bytes` (the plan's estimate: weights, Adam state and activations at the row's batch),
    or None when every one fits."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    for j in PLANNERS[experiment](prof) if experiment in PLANNERS else []:
        if j.kind == "train" and j.memory_bytes > device_bytes:
            return (
                f"{j.claims} ({j.what}) at profile {prof.name!r} needs ≈ {j.memory_bytes / 2**30:.0f} GiB per "
                f"device at batch {j.batch} × {j.T} (`repro plan --profile {prof.name}`); this device has "
                f"{device_bytes / 2**30:.0f} GiB: train it with smaller micro-batches and gradient accumulation "
                "or activation recomputation (not built yet), or run a smaller profile"
            )
    return None


def require_fits(experiment: str, profile: str | Profile, device: Any) -> None:
    """Refuse to start a training job that cannot fit the CUDA device it was given (one
    `ReproError` before any step, instead of an out-of-memory error mid-fixture that keeps the
    memory held for the tests after it: the paper's SK trio on an 80 GB H100). CPUs
    are not checked: the plan's memory is per accelerator."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return
    msg = too_big(experiment, profile, torch.cuda.get_device_properties(dev).total_memory)
    if msg:
        raise ReproError(msg)


def for_claims(p: Plan, claim_ids: list[str]) -> Plan:
    """The part of a plan that the given claims need (`pytest claims/ --plan -k ...`): the jobs of
    their topics (the ID's two-letter prefix: a topic's claims share its models), and the missing
    resources of those jobs' experiments (and the vocabulary, when it could not be checked)."""
    topics = {cid.split("-")[0] for cid in claim_ids}
    jobs = [j for j in p.jobs if any(c.strip().split("-")[0] in topics for c in j.claims.replace("…", ",").split(","))]
    experiments = {j.experiment for j in jobs}
    missing = [m for m in p.missing if m.split(" ", 1)[0] in experiments]
    vocab_missing, checked = vocab_lines(get_profile(p.profile), experiments)
    missing += [m for m in vocab_missing if m.startswith("vocabulary")]  # not checked: no Brown fixture
    return Plan(p.profile, p.tflops, p.utilisation, jobs, missing, p.not_costed, p.corpus, checked, p.device)


def device_line(p: Plan) -> str:
    """Which device the times and memory are for, at what rate and whence the rate."""
    if p.device is None:
        return f"one device at {p.tflops:g} TFLOP/s × {p.utilisation:.0%} utilisation"
    d = p.device
    return (
        f"one {d.name} device, {d.label}, at {p.tflops:.3g} TFLOP/s ({d.rate}) × {p.utilisation:.0%} utilisation, "
        f"{d.memory_gib:.0f} GiB memory"
    )


def lines(p: Plan) -> list[str]:
    out = [
        f"plan for profile {p.profile!r} on corpus {p.corpus!r}: {device_line(p)}",
        f"{'experiment':<15} {'claims':<22} {'kind':<5} {'models':>6} {'params':>9} {'tokens/model':>13} "
        f"{'PFLOP':>10} {'peak GiB':>8} {'hours':>8}  what",
    ]
    for j in p.jobs:
        out.append(
            f"{j.experiment:<15} {j.claims:<22} {j.kind:<5} {j.models:>6} {j.params / 1e6:>8.1f}M "
            f"{j.tokens:>13,} {j.flops / 1e15:>10.3g} {j.memory_bytes / 2**30:>8.1f} {p.seconds(j) / 3600:>8.3g}  "
            f"{j.what}"
        )
    eight = (
        "" if p.device and p.device.name == "cpu" else f" ({p.seconds() / 3600 / 8:.3g} on 8 at the same utilisation)"
    )
    out.append(f"total: {p.total_flops / 1e15:.4g} PFLOP ≈ {p.seconds() / 3600:.3g} hours on one device{eight}")
    if p.not_costed:
        out.append("not costed (no planner in repro/<topic>/sizes.py): " + ", ".join(p.not_costed))
    out += p.checked
    out.append(f"missing or too small: {len(p.missing)}")
    out += [f"  - {m}" for m in p.missing]
    return out
