"""A loop of small torch ops split over Python threads, each thread on one intra-op thread.

An eager loop of many small ops (the context-axis `trimmed` kernel: 2,048 per call at S = 512)
runs every op on torch's intra-op team, a fork and a join per op. On a 2-core VM, float32,
S = 512, in several scripts alternating the two, that loop's median call took 0.41–0.47 s from
script to script; two Python threads, each running half the slices on one intra-op thread,
0.40–0.41 s: no barrier per op, and one thread's softmax, copies and page faults overlap the
other's matmuls (torch releases the GIL inside an op). Why the one loop varies more was not
measured; waiting at barriers for a vCPU the hypervisor holds back is the likely reason.

torch's own switch, `torch.set_num_threads`, is process-wide (it also switches MKL's dynamic
thread adjustment off for the whole process), so each worker sets its own count through the
per-thread C APIs of the OpenMP runtime and MKL that torch links: `omp_set_num_threads` sets the
calling thread's nthreads-var (a per-thread ICV in OpenMP), `MKL_Set_Num_Threads_Local` the calling
thread's MKL count. Both end with the worker thread; the caller's settings are never touched.
Where either is missing (another platform, a build without OpenMP or MKL, a torch whose CPU
library is not found), `workers()` is 1 and callers run their loop in the calling thread.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from typing import Callable, Iterable, Sequence, TypeVar

import torch

T = TypeVar("T")


@functools.lru_cache(maxsize=None)
def _per_thread_setters() -> tuple[Callable[[int], object], Callable[[int], object]] | None:
    """(omp_set_num_threads, MKL_Set_Num_Threads_Local) through torch's CPU library (MKL is linked
    into it; the OpenMP call resolves to the libgomp it loads), or None."""
    for name in (os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"), "libtorch_cpu.so"):
        try:
            lib = ctypes.CDLL(name)
            omp, mkl = lib.omp_set_num_threads, lib.MKL_Set_Num_Threads_Local
            break
        except (OSError, AttributeError):  # not there (conda keeps it elsewhere) or without the symbols
            continue
    else:
        return None
    omp.argtypes, omp.restype = [ctypes.c_int], None
    mkl.argtypes, mkl.restype = [ctypes.c_int], ctypes.c_int
    return omp, mkl


def workers() -> int:
    """How many single-threaded workers `run_split` uses: torch's intra-op thread count where
    each thread's count can be set, else 1 (run in the calling thread). Measured with 2 only (2
    workers beat 3 or 4 on a 2-core VM); callers cap it where more is unmeasured."""
    return torch.get_num_threads() if _per_thread_setters() is not None else 1


def single_threaded() -> None:
    """Make the calling thread run torch ops on one intra-op thread (OpenMP and MKL), for the
    rest of its life. Call first in a fresh worker thread."""
    setters = _per_thread_setters()
    if setters is None:
        return
    # ATen sets a new thread's OpenMP count on its first parallel op (lazy, per thread): let it
    # happen now, so it does not undo ours later
    torch.get_num_threads()
    omp, mkl = setters
    omp(1)
    mkl(1)


def splittable(*tensors: torch.Tensor | None) -> bool:
    """Whether a loop over `tensors` may move to worker threads and still do what it does in the
    calling thread. Much of torch's state is per thread and is not carried over: dispatch and
    function modes (FlopCounterMode — the cost claims count FLOPs this way — FakeTensorMode, a
    default device, …), functorch transforms (vmap, grad), autocast, the profiler (the workers'
    ops would be missing from its trace). Also no autograd recording, reverse or forward (dual
    tensors): several threads writing in place into one output would race on its history or its
    tangent. Tensor subclasses stay in the caller's thread too. Where torch's private probes are
    missing: False."""
    ts = [t for t in tensors if t is not None]
    if any(type(t) is not torch.Tensor for t in ts):
        return False
    if torch.is_grad_enabled() and any(t.requires_grad for t in ts):
        return False
    if any(torch.is_autocast_enabled(t.device.type) for t in ts):
        return False
    if any(torch.autograd.forward_ad.unpack_dual(t).tangent is not None for t in ts):
        return False
    try:
        modes = torch._C._len_torch_dispatch_stack() + torch._C._len_torch_function_stack()
        level = torch._C._functorch.maybe_current_level()
        profiling = torch.autograd.profiler._is_profiler_enabled
    except AttributeError:
        return False
    return modes == 0 and level is None and not profiling


def balanced(weights: Sequence[float], n: int) -> list[list[int]]:
    """Indices 0 … len(weights)−1 in `n` parts of near-equal total weight (heaviest first, each
    to the lightest part so far)."""
    parts: list[list[int]] = [[] for _ in range(max(1, n))]
    load = [0.0] * len(parts)
    for i in sorted(range(len(weights)), key=lambda j: -weights[j]):
        p = load.index(min(load))
        parts[p].append(i)
        load[p] += weights[i]
    return [p for p in parts if p]


def run_split(fn: Callable[[T], object], parts: Iterable[T]) -> None:
    """fn(part) for every part, each on its own single-threaded worker thread, all at once; the
    first exception a worker raised is raised here after all have finished. Grad mode and
    inference mode are the caller's (both are per thread in torch); the rest of torch's
    per-thread state is not carried over: callers split only where `splittable`."""
    grad, inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()
    errors: list[BaseException] = []

    def work(part: T) -> None:
        try:
            single_threaded()
            with torch.inference_mode(inference), torch.set_grad_enabled(grad):
                fn(part)
        except BaseException as e:  # re-raised in the caller
            errors.append(e)

    threads = [threading.Thread(target=work, args=(p,), daemon=True) for p in parts]
    try:
        for t in threads:
            t.start()
    finally:  # also on Ctrl-C: no worker is left writing into the caller's output
        for t in threads:
            if t.ident is not None:
                t.join()
    if errors:
        if len(errors) > 1:
            errors[0].add_note(f"run_split: {len(errors) - 1} more worker(s) failed too")
        raise errors[0]
