"""repro.ground.threads: a loop split over single-threaded worker threads leaves the caller's
thread settings as they were, runs every part once, and carries grad / inference mode and errors."""

from __future__ import annotations

import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.ground import threads


@given(weights=st.lists(st.integers(0, 1000), max_size=40), n=st.integers(1, 5))
@settings(max_examples=60, deadline=None)
def test_balanced_parts_cover_every_index_once_with_near_equal_loads(weights, n):
    parts = threads.balanced(weights, n)
    assert sorted(i for p in parts for i in p) == list(range(len(weights)))
    assert len(parts) <= n and all(parts)
    loads = [sum(weights[i] for i in p) for p in parts]
    if len(loads) == n:  # greedy heaviest-first: the spread is at most the heaviest single weight
        assert max(loads) - min(loads) <= max(weights)


def test_workers_are_single_threaded_and_the_caller_keeps_its_threads():
    if threads._per_thread_setters() is None:
        pytest.skip("this torch build exports no per-thread OpenMP / MKL setters: callers run one loop")
    import ctypes
    import os

    mkl_threads = ctypes.CDLL(
        os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    ).MKL_Get_Max_Threads

    def fresh_thread_count():  # what torch gives a thread started now (its process-wide setting)
        got = []
        t = threading.Thread(target=lambda: got.append(torch.get_num_threads()))
        t.start()
        t.join()
        return got[0]

    before = torch.get_num_threads(), mkl_threads(), fresh_thread_count()
    seen = {}

    def part(i):
        torch.ones(4).sum()  # a first op: ATen's lazy per-thread init must not undo the worker's count
        seen[i] = (threading.get_ident(), torch.get_num_threads(), mkl_threads())

    # as under xdist (harness.plugin): a process-wide count, which ATen's lazy init hands every new thread
    torch.set_num_threads(before[0])
    threads.run_split(part, [0, 1, 2])
    assert sorted(seen) == [0, 1, 2]
    assert threading.get_ident() not in {ident for ident, *_ in seen.values()}  # worker threads, not the caller
    assert all((omp, mkl) == (1, 1) for _, omp, mkl in seen.values())
    # OpenMP's and MKL's counts of this thread, and torch's process-wide count (which a worker
    # calling torch.set_num_threads(1) would have changed: the negative control, by hand)
    assert (torch.get_num_threads(), mkl_threads(), fresh_thread_count()) == before
    assert threads.workers() == before[0]


def test_grad_and_inference_mode_are_the_callers_and_errors_reach_the_caller():
    seen = []

    def part(_):
        seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))

    with torch.no_grad():
        threads.run_split(part, [0, 1])
    with torch.inference_mode():
        threads.run_split(part, [0])
    threads.run_split(part, [0])
    assert seen == [(False, False)] * 2 + [(False, True), (True, False)]

    def fails(i):
        if i == 1:
            raise ValueError("part 1")

    with pytest.raises(ValueError, match="part 1"):
        threads.run_split(fails, [0, 1, 2])


def test_splittable_only_plain_tensors_outside_recording():
    x = torch.ones(2, 3)
    assert threads.splittable(x, None, x)
    assert not threads.splittable(torch.nn.Parameter(x))  # a subclass stays in the caller's thread
    assert not threads.splittable(x.clone().requires_grad_(True))
    with torch.no_grad():
        assert threads.splittable(x.clone().requires_grad_(True))
