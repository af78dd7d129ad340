"""Helpers shared by the pytest-benchmark suites in benchmarks/: the in-run dense-matmul
ceiling, mean seconds from a benchmark fixture, and peak memory measured in a fresh process."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import torch

from repro.ground.runtime import ReproError, generator

# dense-matmul reference: one MLP up-projection of 2048 tokens at d = 768
MM_M, MM_K, MM_N = 2048, 768, 3072
MM_WARMUP, MM_REPS = 2, 7


def _operands(dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = generator(0)
    a = torch.randn(MM_M, MM_K, generator=g).to(device=device, dtype=dtype)
    b = torch.randn(MM_K, MM_N, generator=g).to(device=device, dtype=dtype)
    return a, b


def _matmul_seconds(a: torch.Tensor, b: torch.Tensor, warmup: int, reps: int) -> list[float]:
    sync = torch.cuda.synchronize if a.device.type == "cuda" else (lambda: None)
    with torch.no_grad():
        for _ in range(warmup):
            torch.matmul(a, b)
        times = []
        for _ in range(reps):
            sync()
            t0 = time.perf_counter()
            torch.matmul(a, b)
            sync()
            times.append(time.perf_counter() - t0)
    return times


_FLOP = 2.0 * MM_M * MM_K * MM_N


def time_matmul(dtype: torch.dtype = torch.float32, device: str = "cpu") -> dict[str, float]:
    """FLOP/s of a dense (2048×768)@(768×3072) matmul in `dtype` on `device`, timed now: the
    median of MM_REPS after MM_WARMUP warm-ups (and its best)."""
    times = _matmul_seconds(*_operands(dtype, device), MM_WARMUP, MM_REPS)
    return dict(
        gflop_per_s=_FLOP / statistics.median(times) / 1e9,
        best_gflop_per_s=_FLOP / min(times) / 1e9,
        shape=f"({MM_M}x{MM_K})@({MM_K}x{MM_N})",
        reps=MM_REPS,
    )


class InterleavedCeiling:
    """The dense-matmul rate of `time_matmul`, timed between a benchmark's rounds: pass `setup`
    to ``benchmark.pedantic(fn, setup=…)`` (untimed; it runs before every round, warm-up
    included) and read `gflop_per_s`, the median over the rounds. A ceiling timed once at the
    start of a run drifted from the kernel's machine state on this shared VM: measured seconds
    to a minute apart, a kernel's fraction of it read 0.52–0.72 in five runs of the same code;
    timed in between, kernel and ceiling share each moment."""

    def __init__(self, dtype: torch.dtype = torch.float32, device: str = "cpu", warmup: int = 1, reps: int = 2):
        self.a, self.b = _operands(dtype, device)
        self.warmup, self.reps = warmup, reps
        self.seconds: list[float] = []

    def setup(self) -> None:
        self.seconds += _matmul_seconds(self.a, self.b, self.warmup, self.reps)

    @property
    def gflop_per_s(self) -> float:
        if not self.seconds:
            raise ReproError("no matmul timed yet: pass InterleavedCeiling.setup to benchmark.pedantic")
        return _FLOP / statistics.median(self.seconds) / 1e9


def mean_seconds(benchmark) -> float | None:
    """Mean seconds per call from pytest-benchmark's stats; None when benchmarking is disabled
    (``--benchmark-disable`` runs the function once and records nothing)."""
    stats = getattr(benchmark, "stats", None)
    if stats is None:
        return None
    return float(stats.stats.mean)


_PEAK = r"""
import gc, json, re, resource, sys, torch
torch.set_num_threads({threads})
setup, run = {setup!r}, {run!r}
ns = {{}}
exec(setup, ns)
gc.collect()

def status(field):
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+) kB", f.read()).group(1))

try:  # Linux ≥ 4.0: reset the high-water mark, so imports and setup temporaries do not count
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = status("VmRSS")
    exec(run, ns)
    after = status("VmHWM")
except OSError:  # elsewhere: the lifetime peak (an underestimate when setup peaked higher)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    exec(run, ns)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"above_kib": after - before, "before_kib": before}}))
"""


def peak_memory_above(setup: str, run: str, threads: int | None = None, timeout: float = 300) -> int:
    """Peak resident memory (bytes) that `run` adds above what `setup` left, measured in a
    fresh Python process (tracemalloc does not see torch's allocations): on Linux the peak RSS
    (VmHWM, reset after setup through /proc/self/clear_refs) minus the RSS before `run`. CPU
    only."""
    code = _PEAK.format(setup=setup, run=run, threads=threads or torch.get_num_threads())
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise ReproError(f"peak-memory subprocess failed: {proc.stderr.strip()[-500:]}")
    return int(json.loads(proc.stdout.strip().splitlines()[-1])["above_kib"]) * 1024
