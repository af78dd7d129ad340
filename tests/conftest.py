"""Shared fixtures of the unit tests."""

from __future__ import annotations

import numpy.fft  # noqa: F401  (see below)
import pytest
import torch

# Loaded here, before any in-process pytester run: pytester restores sys.modules afterwards,
# dropping what the inner run imported first, and numpy.fft's C extension cannot be loaded a
# second time in one process ("cannot load module more than once per process"): seen when an
# xdist worker ran tests/test_plugin.py before tests/test_fingerprint_baselines.py.


@pytest.fixture(scope="module")
def one_thread():
    """Tiny matmuls (≈ 200 × 32) run fastest on one thread: on a busy 2-core machine OpenMP's
    thread team made each one ~1000× slower (15 ms vs 18 µs, measured). Restored afterwards.
    Use with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(autouse=True)
def measure_afresh(monkeypatch):
    """Unit tests run the experiment functions themselves: a cached measurement
    (repro.core.memo) would let "same seed, same result" pass without computing anything."""
    monkeypatch.setenv("REPRO_MEMO", "0")


@pytest.fixture(autouse=True)
def scratch_baselines(tmp_path_factory, monkeypatch):
    """Scratch claims runs (the plugin's tests) compare against an empty baseline directory,
    never against the committed baselines of the real claims."""
    monkeypatch.setenv("REPRO_BASELINES", str(tmp_path_factory.mktemp("baselines")))
