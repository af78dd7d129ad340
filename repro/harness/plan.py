"""What a profile will cost before any GPU hour is spent: `repro plan --profile paper`.

For every experiment row of `repro.harness.profiles` the jobs it runs — each topic's planners
(``PLANNERS`` of ``repro/<topic>/sizes.py``, collected here) turn its rows into
`repro.core.cost.Job`s: models trained or probed, their parameter counts, tokens trained and
evaluated, FLOPs, peak memory per device (the formulas: `repro.core.cost`) — then an estimated
time on a stated device and the resources the profile needs that are missing, one line each.

Time on one device (`plan_device`): a CPU at the rate of a float32 (the dtype policy's) matmul
timed now × `CPU_UTILISATION` (80%, fitted on whole ci runs: FLOPs only); a GPU `repro plan`
knows by name (`GPUS`: one H100 SXM is `plan()`'s default) by the time model of
`repro.core.cost.job_seconds`: FLOPs at its datasheet's dense bfloat16 (or float32) peak × 40%,
memory-bound bytes at its bandwidth, its host's draws, copies, dispatches and pretrained loads at
`GPU_HOST`'s rates, each fitted on one measured paper row; another GPU at its measured matmul
rates. Each GPU row's estimate stands beside the device times measured in results/
(`repro.harness.calibration`: measured / estimate, within 2× for every measured row) — an
estimate to plan with, checked where a measurement exists. `repro plan` plans for the device
the run would use (`--device auto`).

Resources (`repro.harness.plan_corpus`): the corpus each training job reads — the run's
`--corpus` (`plan(corpus=...)`) or the corpus a claim fixes (stdlib-code) — against its tokens,
and the vocabulary of the suite's Brown BPE against every row's `vocab_size`; memory per device
against every job's peak.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from repro.core import cost
from repro.core.cost import RUN, Job, Planner
from repro.ground.errors import ReproError
from repro.ground.runtime import DEVICES
from repro.harness import calibration, plan_corpus, profiles, topics
from repro.harness.plan_corpus import vocab_lines
from repro.harness.profiles import SIZES, Profile, get_profile

# GPUs `repro plan --device NAME` knows by name (the datasheets, SXM parts): dense bfloat16 peak
# TFLOP/s and memory per device. A name here inside torch's name of the local GPU (lower case)
# gives that GPU these figures; any other GPU is measured.
GPUS = {
    "h100": {
        "label": "NVIDIA H100 SXM",
        "tflops": 989.0,
        "memory_gib": 80.0,
        "tflops_fp32": 67.0,
        "bandwidth_gbs": 3350,
    },
    "h200": {
        "label": "NVIDIA H200 SXM",
        "tflops": 989.0,
        "memory_gib": 139.0,
        "tflops_fp32": 67.0,
        "bandwidth_gbs": 4800,
    },
    "a100": {
        "label": "NVIDIA A100 SXM 80GB",
        "tflops": 312.0,
        "memory_gib": 80.0,
        "tflops_fp32": 19.5,
        "bandwidth_gbs": 2039,
    },
}
DEFAULT_UTILISATION = 0.4  # model-FLOPs utilisation of a GPU's rate
# the fraction of a GPU's datasheet bandwidth its memory-bound kernels reach (an elementwise
# kernel on tensors of megabytes streams at 80–90% of it; eager chains of small ones less)
BANDWIDTH_UTILISATION = 0.8
# The host a lent GPU comes with (a 16-core Intel Xeon with AMX, the same in every results/
# session), each rate fitted on one measured paper row (`repro.harness.calibration.refit`;
# tests/test_plan_calibration.py refits them from device_times.json) and checked on the others:
# float32 normals a CPU generator draws per second — bb_4 on an H100 (2.74e9 weights and inputs of
# 48 MLP stacks drawn on the host in 19.9 s, 0.4 s of float32 FLOPs); host seconds per dispatched
# torch op — RS-7 on an H100 (20,000 steps of two attention-only models, 5.6e6 ops counted by
# `cost.train_step_dispatches`, in 110.9 s); the seconds a claim file's first test on a pretrained
# model spends on it before its work (the GGUF dequantised, the model read, the corpus tokenised
# for it, the GPU's start: not timed apart) — RS-8 on an H200 (35.5 s against 6.6 s of work).
# Host-to-device copies of pageable memory: not measured; 10 GB/s, a third of PCIe 5.0 x16's
# 32 GB/s a direction.
GPU_HOST = {"host_normals_per_s": 1.41e8, "dispatch_s": 1.98e-5, "h2d_gbs": 10.0, "load_s": 29.0}
# ... and of a CPU's measured matmul rate: a float32-forced ci run on 2 cores took 30–32 min where
# its FLOPs at that CPU's measured matmul rate (0.15 TFLOP/s) come to 25 min
CPU_UTILISATION = 0.8


def budget_flops(profile: str) -> float | None:
    """The FLOPs of the plan's model that `profile`'s wall-time budget buys on the reference CPU
    (`profiles.BUDGET_S` seconds at `profiles.REFERENCE_CPU_TFLOPS` × CPU_UTILISATION): what its
    planned FLOPs must fit, on any machine (None: no budget)."""
    seconds = profiles.BUDGET_S.get(profile)
    return None if seconds is None else seconds * profiles.REFERENCE_CPU_TFLOPS * 1e12 * CPU_UTILISATION


# the matmul `matmul_tflops` times on a device not in GPUS: (n × n) @ (n × n), best of PROBE_REPEATS
# after a warm-up. 1024 on a CPU: ≈ 2 GFLOP, tens of ms on 2 cores; a GPU needs 8192 to be busy.
PROBE_N = {"cpu": 1024, "cuda": 8192}
PROBE_REPEATS = 3


def _planners() -> dict[str, Planner]:
    found: dict[str, Planner] = {}
    for topic in topics.PACKAGES:
        found.update(importlib.import_module(f"repro.{topic}.sizes").PLANNERS)
    return {**{exp: found[exp] for exp in SIZES if exp in found}, **found}  # in the rows' order


# experiment -> its jobs under a profile: every topic's planners, one per row of profiles.SIZES
# (tests/test_plan.py checks it; a row without a planner is listed as "not costed"). Each job
# carries, beside its FLOPs, the host- and launch-bound work the FLOPs do not see (`cost.Job`'s
# time-model fields: on an H100 at paper bb_4_2 took 118 s and RS-7's induction seeds 111 s for
# well under a second of FLOPs each).
PLANNERS: dict[str, Planner] = _planners()


# --------------------------------------------------------------------------- the device


@dataclass(frozen=True)
class Device:
    """The one device a plan's times and memory are for (`plan_device`), with its host's rates
    (`rates`: what `cost.job_seconds` divides each kind of work by)."""

    name: str  # what `--device` names: "cpu", "cuda", or a key of GPUS
    label: str  # what it is: the CPU model and its torch threads, or the GPU's name
    tflops: float  # the peak the times divide by (before utilisation)
    memory_gib: float  # memory per device, which every job's peak is checked against
    rate: str  # where `tflops` comes from: a datasheet, a matmul timed now, or --tflops
    utilisation: float = DEFAULT_UTILISATION  # the fraction of `tflops` a run's model FLOPs reach
    tflops_fp32: float | None = None  # float32 peak (None: `tflops`, a CPU's one rate)
    bandwidth_gbs: float = math.inf  # device memory (inf on a CPU: its FLOP rate was fitted on whole runs)
    gpu: str | None = None  # the GPUS key this device is (its measured times: repro.harness.calibration)
    host: dict[str, float] = field(default_factory=dict)  # GPU_HOST's rates on a GPU; none on a CPU

    def rates(self) -> cost.Rates:
        return cost.Rates(
            self.tflops,
            self.tflops_fp32 or self.tflops,
            self.utilisation,
            self.bandwidth_gbs,
            BANDWIDTH_UTILISATION,
            **self.host,
        )


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
    memory = props.total_memory / 2**30
    if known:
        g = GPUS[known]
        rate = f"the {known} datasheet's dense bfloat16 peak"
        return Device(
            "cuda",
            props.name,
            g["tflops"],
            memory,
            rate,
            DEFAULT_UTILISATION,
            g["tflops_fp32"],
            g["bandwidth_gbs"],
            known,
            dict(GPU_HOST),
        )
    tflops, rate = matmul_tflops("cuda") if measure else (0.0, "")
    fp32 = matmul_tflops("cuda", torch.float32)[0] if measure else 0.0
    # an unknown GPU's bandwidth is not measured: the H100's, as a guess the line says
    return Device(
        "cuda",
        props.name,
        tflops,
        memory,
        rate + "; bandwidth assumed an H100's",
        DEFAULT_UTILISATION,
        fp32,
        GPUS["h100"]["bandwidth_gbs"],
        None,
        dict(GPU_HOST),
    )


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
        rate = "the datasheet's dense bfloat16 peak"
        dev = Device(
            name,
            g["label"],
            g["tflops"],
            g["memory_gib"],
            rate,
            DEFAULT_UTILISATION,
            g["tflops_fp32"],
            g["bandwidth_gbs"],
            name,
            dict(GPU_HOST),
        )
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
    if tflops is not None:  # float32 keeps its ratio to the given peak
        ratio = (dev.tflops_fp32 or dev.tflops) / dev.tflops if dev.tflops else 1.0
        fp32 = tflops * ratio if dev.tflops_fp32 else None
        dev = replace(dev, tflops=tflops, tflops_fp32=fp32, rate="as given (--tflops)")
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
    calibration: list[calibration.Match] = field(default_factory=list)  # the device's measured times

    @property
    def total_flops(self) -> float:
        return sum(j.flops for j in self.jobs)

    def rates(self) -> cost.Rates:
        """The device's rates (`Device.rates`); a bare rate: FLOPs only."""
        if self.device is None:
            return cost.Rates(self.tflops, self.tflops, self.utilisation)
        return replace(self.device, tflops=self.tflops, utilisation=self.utilisation).rates()

    def terms(self, job: Job) -> dict[str, float]:
        """The job's seconds by term and in all (`cost.job_seconds`)."""
        return cost.job_seconds(job, self.rates())

    def seconds(self, job: Job | None = None) -> float:
        """The time model's seconds of `job` (default: every job, one after another)."""
        if job is None:
            return sum(self.seconds(j) for j in self.jobs)
        return self.terms(job)["total"]

    def flop_seconds(self, job: Job | None = None) -> float:
        """The FLOP model's seconds: FLOPs at the policy dtype's peak × utilisation, nothing else."""
        f = self.total_flops if job is None else job.flops
        return f / (self.tflops * 1e12 * self.utilisation)

    def measured(self, job: Job) -> list[calibration.Match]:
        """The device's measurements that timed this job (alone, or with the jobs after it)."""
        return [m for m in self.calibration if job in m.jobs]

    def to_dict(self) -> dict[str, Any]:
        device = asdict(self.device) if self.device else None
        if device:
            device = {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in device.items()}
        return {
            "profile": self.profile,
            "corpus": self.corpus,
            "tflops": self.tflops,
            "utilisation": self.utilisation,
            "device": device,
            "jobs": [
                {
                    **asdict(j),
                    "flops": j.flops,
                    "memory_bytes": j.memory_bytes,
                    "seconds": self.seconds(j),
                    "terms": self.terms(j),
                    "flop_seconds": self.flop_seconds(j),
                    "measured": [
                        {
                            "seconds": m.measurement.seconds,
                            "how": m.measurement.how,
                            "ratio": m.ratio,
                            "source": m.measurement.source,
                            "jobs_timed": len(m.jobs),
                        }
                        for m in self.measured(j)
                    ],
                }
                for j in self.jobs
            ],
            "total_flops": self.total_flops,
            "total_seconds": self.seconds(),
            "total_flop_seconds": self.flop_seconds(),
            "calibration": [m.to_dict() for m in self.calibration],
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
    out.calibration = calibration.matches(out.jobs, device.gpu, prof.name, out.rates())
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


def job_claims(job: Job) -> list[str]:
    """The claim IDs a job's `claims` names, a range "CS-3…CS-6" read in catalogue order."""
    from repro.harness.catalogue import CATALOGUE

    order = list(CATALOGUE)
    out: list[str] = []
    for part in (c.strip() for c in job.claims.split(",")):
        if "…" in part:
            a, b = (x.strip() for x in part.split("…"))
            if a in order and b in order:
                out += order[order.index(a) : order.index(b) + 1]
                continue
            out += [a, b]
        elif part:
            out.append(part)
    return out


def for_claims(p: Plan, claim_ids: list[str]) -> Plan:
    """The part of a plan that the given claims need (`pytest claims/ --plan -k ...`, a decide
    chunk): the jobs whose claims include one of them (a job names every claim whose tests read
    its fixture), and the missing resources of those jobs' experiments (and the vocabulary, when
    it could not be checked)."""
    wanted = set(claim_ids)
    jobs = [j for j in p.jobs if wanted & set(job_claims(j))]
    experiments = {j.experiment for j in jobs}
    missing = [m for m in p.missing if m.split(" ", 1)[0] in experiments]
    vocab_missing, checked = vocab_lines(get_profile(p.profile), experiments)
    missing += [m for m in vocab_missing if m.startswith("vocabulary")]  # not checked: no Brown fixture
    timed = [m for m in p.calibration if all(j in jobs for j in m.jobs)]
    return Plan(p.profile, p.tflops, p.utilisation, jobs, missing, p.not_costed, p.corpus, checked, p.device, timed)


def device_line(p: Plan) -> str:
    """Which device the times and memory are for, at what rate and whence the rate."""
    if p.device is None:
        return f"one device at {p.tflops:g} TFLOP/s × {p.utilisation:.0%} utilisation"
    d = p.device
    line = (
        f"one {d.name} device, {d.label}, at {p.tflops:.3g} TFLOP/s ({d.rate}) × {p.utilisation:.0%} utilisation, "
        f"{d.memory_gib:.0f} GiB memory"
    )
    if not d.host:
        return line + " (FLOPs only: the CPU's rate was fitted on whole runs)"
    r = p.rates()
    return (
        f"{line}; float32 at {r.tflops_fp32:.3g} TFLOP/s, memory-bound work at {r.bandwidth_gbs:g} GB/s × "
        f"{r.bandwidth_utilisation:.0%}, host draws {r.host_normals_per_s:.3g} normals/s, copies {r.h2d_gbs:g} GB/s, "
        f"{r.dispatch_s * 1e6:.0f} µs per dispatched op, {r.load_s:.0f} s per pretrained model's first load"
    )


def bound(terms: dict[str, float]) -> str:
    """The term that sets a job's time: host, dispatch, or the device's compute or memory."""
    device = terms["compute"] + terms["memory"]
    if terms["host"] >= max(device, terms["dispatch"]):
        return "host"
    if terms["dispatch"] > device:
        return "dispatch"
    return "memory" if terms["memory"] > terms["compute"] else "compute"


def lines(p: Plan) -> list[str]:
    sec = calibration.seconds_text
    out = [
        f"plan for profile {p.profile!r} on corpus {p.corpus!r}: {device_line(p)}",
        f"{'experiment':<15} {'claims':<22} {'kind':<5} {'models':>6} {'params':>9} {'tokens/model':>13} "
        f"{'PFLOP':>10} {'peak GiB':>8} {'FLOP est':>9} {'estimate':>9} {'bound':<8} {'measured':>13}  what",
    ]
    for j in p.jobs:
        terms = p.terms(j)
        meas = [m for m in p.measured(j) if m.jobs[0] == j]  # shown on the first row a measurement timed
        shown = ""
        if meas:
            m = meas[0]
            sign = {"alone": "", "shared": "≤", "stopped": "≥"}[m.measurement.how]
            rows = f" ({len(m.jobs)} rows)" if len(m.jobs) > 1 else ""
            shown = f"{sign}{sec(m.measurement.seconds)} ×{m.ratio:.2g}{rows}" + (
                f" +{len(meas) - 1}" if len(meas) > 1 else ""
            )
        out.append(
            f"{j.experiment:<15} {j.claims:<22} {j.kind:<5} {j.models:>6} {j.params / 1e6:>8.1f}M "
            f"{j.tokens:>13,} {j.flops / 1e15:>10.3g} {j.memory_bytes / 2**30:>8.1f} {sec(p.flop_seconds(j)):>9} "
            f"{sec(terms['total']):>9} {bound(terms):<8} {shown:>13}  {j.what}"
        )
    eight = "" if p.device and p.device.name == "cpu" else f" ({sec(p.seconds() / 8)} on 8 at the same utilisation)"
    out.append(
        f"total: {p.total_flops / 1e15:.4g} PFLOP ≈ {sec(p.seconds())} on one device{eight}; the FLOP model alone "
        f"{sec(p.flop_seconds())}"
    )
    if p.calibration:
        gpu = p.device.gpu if p.device else "?"
        out.append(
            f"measured on {gpu} at {p.profile} (repro/harness/device_times.json; 'measured' above: seconds × "
            f"measured/estimate of the rows timed, on the first; ≤ beside other runs, ≥ stopped by a limit; +n more):"
        )
        out += [f"  {m.line()}" for m in p.calibration]
    if p.not_costed:
        out.append("not costed (no planner in repro/<topic>/sizes.py): " + ", ".join(p.not_costed))
    out += p.checked
    out.append(f"missing or too small: {len(p.missing)}")
    out += [f"  - {m}" for m in p.missing]
    return out
