"""Committed baselines of the claims run: one claims.json per configuration
that changes numerics, under repro/harness/baselines/<profile>-<device>-<dtype>.json.

The key is what moves measured values by itself: the profile's sizes, the device type, the
dtype the policy chose ("auto" → bfloat16 on CPUs where it is native and measured fast, float32 elsewhere; see
repro.ground.runtime.resolve_dtype), and a `--corpus` other than brown (`-corpus-<name>`: the
default's key is unchanged). A baseline keeps everything of claims.json outside "run" plus
the run fields `repro compare` reads (profile, device, dtype policy, per-test durations), so
the same comparison works against it.

Written only by an explicit command, never by a claims run or CI:

    repro baseline update artifacts/claims.json      # prints the comparison it replaces
    repro baseline show                               # which baselines exist, and their keys
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from repro.ground.runtime import ReproError, atomic_write_json

DIR = Path(__file__).resolve().parent / "baselines"
DIR_ENV = "REPRO_BASELINES"  # another directory of baselines (the plugin's own tests use a scratch one)


def baseline_dir() -> Path:
    return Path(os.environ[DIR_ENV]) if os.environ.get(DIR_ENV) else DIR


RUN_FIELDS = (
    "profile",
    "device",
    "dtype_policy",
    "corpus",
    "torch_threads",
    "xdist_workers",
    "packages",
    "models",
    "git_commit",
    "test_durations_s",
)


def key_of(run: dict[str, Any]) -> str:
    """'<profile>-<device type>-<dtype>' of a claims.json's "run", and '-corpus-<name>' after it
    for a run whose `--corpus` is not the default (brown): every claim that reads text reads it,
    so its numbers are another configuration's (a directory is named by its own name); and
    '-model-<name>' for a `--model` run: a model's numbers are compared only with a baseline of
    that model, committed by hand, never with the embedded models'."""
    device = str(run.get("device", "cpu")).split(":")[0]
    dtype = (run.get("dtype_policy") or {}).get("auto")
    if not run.get("profile") or not dtype:
        raise ReproError(
            "this claims.json records no profile or dtype policy (written before the dtype policy "
            "existed?): run the claims again"
        )
    key = f"{run['profile']}-{device}-{dtype}"
    corpus = str(run.get("corpus") or "brown")
    if corpus != "brown":
        key += f"-corpus-{_label(corpus)}"
    if run.get("model"):  # --model: that model's own configuration, never compared with the embedded models'
        key += f"-model-{_label(str(run['model']))}"
    return key


def _label(spec: str) -> str:
    """A corpus or model as a file-name part: a path by its own name (the same on every machine),
    a hub id (owner/name, not a local path) with '/' as '--'."""
    hub_id = re.fullmatch(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*", spec) and not Path(spec).expanduser().exists()
    name = spec.replace("/", "--") if hub_id else (Path(spec.rstrip("/\\")).name or spec)
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:40] or "dir"


def path_for(run: dict[str, Any], root: Path | None = None) -> Path:
    return (root or baseline_dir()) / f"{key_of(run)}.json"


def strip(data: dict[str, Any]) -> dict[str, Any]:
    """What a baseline keeps of a claims.json."""
    run = {k: data["run"][k] for k in RUN_FIELDS if k in data.get("run", {})}
    return {**{k: v for k, v in data.items() if k != "run"}, "run": run}


def load_for(run: dict[str, Any], root: Path | None = None) -> dict[str, Any] | None:
    from repro.harness import compare

    path = path_for(run, root)
    return compare.load(path) if path.exists() else None


def update(data: dict[str, Any], root: Path | None = None) -> tuple[Path, list[str]]:
    """Write `data` as the baseline of its configuration; return the path and the comparison
    lines against the baseline it replaces (or a line saying there was none)."""
    from repro.harness import compare

    target = path_for(data["run"], root)
    old = compare.load(target) if target.exists() else None
    new = strip(data)
    lines = (
        [f"new baseline {target.name} (none before)"]
        if old is None
        else compare.lines(compare.compare(old, new), f"{target.name} (committed)", "the new baseline")
    )
    atomic_write_json(target, new)
    return target, lines
