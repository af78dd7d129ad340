"""repro.harness.bench: the peak-memory probe sees torch allocations and not the setup's."""

from __future__ import annotations

import pytest

from repro.ground.runtime import ReproError
from repro.harness.bench import InterleavedCeiling, peak_memory_above, time_matmul


def test_peak_memory_counts_the_run_not_the_setup():
    setup = "import torch\nbig = torch.ones(50_000_000)\ndel big\nx = torch.ones(1000)"  # a 200 MB setup peak
    above = peak_memory_above(setup, "y = torch.ones(25_000_000)")  # 100 MB
    assert 90e6 <= above <= 130e6


def test_peak_memory_reports_a_failing_run():
    with pytest.raises(ReproError, match="subprocess failed"):
        peak_memory_above("import torch", "raise ValueError('boom')")


def test_matmul_rate_is_positive():
    r = time_matmul()
    assert r["gflop_per_s"] > 0 and r["best_gflop_per_s"] >= r["gflop_per_s"]


def test_interleaved_ceiling_times_a_matmul_at_each_setup_and_refuses_to_report_before_one():
    c = InterleavedCeiling(reps=2, warmup=0)
    with pytest.raises(ReproError, match="no matmul timed yet"):
        _ = c.gflop_per_s  # a property: reading it raises
    c.setup()
    c.setup()
    assert len(c.seconds) == 4 and c.gflop_per_s > 0
