"""The `run` part of claims.json: what a claims run ran on and with (commit, profile, device, the
dtype policy's choice and the CPU facts behind it, packages, the embedded models' pinned files,
the selection, the corpus) and its times."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from repro.ground.runtime import cpu_capability, dtype_name, dtype_override, resolve_device, resolve_dtype
from repro.harness.options import selection_label
from repro.harness.profiles import BUDGET_S, REFERENCE_CPU_TFLOPS, get_profile

PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "accelerate",
    "gguf",
    "datasets",
    "numpy",
    "scipy",
    "matplotlib",
    "pytest",
    "pytest-xdist",
    "hypothesis",
)


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _model_provenance() -> dict[str, dict[str, str]]:
    from repro.core.models.embedded import EMBEDDED_MODELS
    from repro.ground import resources

    return {
        name: {"fixture": m.fixture, "sha256": resources.EMBEDDED_FIXTURES[m.fixture].sha256}
        for name, m in EMBEDDED_MODELS.items()
    }


def run_metadata(config: pytest.Config, start: float, durations: dict[str, float]) -> dict[str, Any]:
    """claims.json's `run`: the run started at `start` (a time.time()); `durations`: seconds per
    claim test's node ID."""
    import torch

    root = config.rootpath
    prof = get_profile(config.getoption("--profile"))
    device = resolve_device(config.getoption("--device"))
    return {
        "git_commit": _git(root, "rev-parse", "--short=12", "HEAD"),
        "git_dirty": bool(_git(root, "status", "--porcelain", "--untracked-files=no")),
        "profile": prof.name,
        "profile_sizes": prof.as_dict(),
        "device": str(device),
        # what "auto" meant in this run and the CPU facts that decided it (runtime.resolve_dtype)
        "dtype_policy": {
            "auto": dtype_name(resolve_dtype("auto", device)),
            "override": dtype_override(),
            "cpu": cpu_capability(),
        },
        "model": config.getoption("--model"),
        # what the run selected (None: every claim): -k/-m/--claim/a file; its artifacts sit under selection/
        "selection": selection_label(config),
        "corpus": config.getoption("--corpus"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        # the pinned files of the embedded models (sha256 verified whenever they are loaded)
        "models": _model_provenance(),
        "packages": _versions(),
        "xdist_workers": getattr(config.option, "numprocesses", None),
        "pytest_args": list(config.invocation_params.args),
        "started": _dt.datetime.fromtimestamp(start, _dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": round(time.time() - start, 2),
        "budget_s": BUDGET_S.get(prof.name),
        # a CPU run with a budget: this CPU's float32 matmul rate, timed at the run's end, and the
        # reference CPU's the budget's seconds are for (the report scales the wall time by them)
        **_cpu_rate(device, BUDGET_S.get(prof.name)),
        "test_durations_s": {n: round(d, 3) for n, d in sorted(durations.items())},
    }


def _cpu_rate(device: Any, budget: Any) -> dict[str, float]:
    """{"cpu_matmul_tflops", "budget_reference_tflops"} of a CPU run under a budget, else {}."""
    if budget is None or str(device) != "cpu":
        return {}
    import torch

    from repro.harness.plan import matmul_tflops

    return {
        "cpu_matmul_tflops": round(matmul_tflops("cpu", torch.float32)[0], 4),
        "budget_reference_tflops": REFERENCE_CPU_TFLOPS,
    }
