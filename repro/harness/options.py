"""The claims plugin's command-line options and what follows from them alone: their checks, where
the run writes (`artifacts_dir`, `selection_label`), whether its collection covers every claim
file, the pretrained models it runs on, and the GPU an xdist worker pins itself to.

Everything here reads the command line only, so the controller and every xdist worker reach the
same answers.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from repro.ground.runtime import DEVICES, ReproError, dtype_override, resolve_device
from repro.harness.profiles import ALL_PROFILES, get_profile


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("repro", "repro claims")
    group.addoption(
        "--profile",
        choices=ALL_PROFILES,
        default="ci",
        help="experiment sizes: ci (2 CPU cores, minutes), long (ci, but claims that need more training than CI "
        "affords get it; still a CPU), paper (the source's sizes, GPU), or a decide chunk decide-<name> (the "
        "sizes that would decide claims inconclusive at ci: `repro plan --profile decide` lists them)",
    )
    group.addoption(
        "--device", choices=DEVICES, default="auto", help="auto (cuda if available), cpu, or cuda (an error if no GPU)"
    )
    group.addoption(
        "--model",
        default=None,
        help="pretrained model for claims on real models: an embedded name "
        "(smollm2-135m, gemma3-270m), a local path, or a Hugging Face hub id",
    )
    group.addoption(
        "--corpus",
        default="brown",
        help="text corpus of every claim that reads text (windows, training streams; a claim's shifted "
        "corpus stays fixed): brown, stdlib-code, a datasets corpus (online), or a "
        "local directory of text files / a saved datasets directory",
    )
    group.addoption(
        "--baseline",
        choices=("check", "warn", "off"),
        default="check",
        help="compare the run with the committed baseline of its profile, device and dtype "
        "(repro/<topic>/baselines/): check (default) fails the run on a verdict regression or a record "
        "drifted beyond 3 noise scales, warn only reports, off skips it",
    )
    group.addoption(
        "--train-procs",
        type=int,
        default=1,
        metavar="N",
        help="train the claims' models on N processes with torchrun (data-parallel, gloo on CPU, NCCL on "
        "GPUs; repro.core.launch), one job after the other; default 1: in the test process (on a CPU, "
        "independent models side by side in the training pool). Reaches CS-3…6, SK-2/3, SeedPrint's "
        "lineage, RS-7 and CA-8; not SP-5's fine-tunes of pretrained models (a warning says so)",
    )
    group.addoption(
        "--plan",
        action="store_true",
        help="collect the selected claims, print what they will cost at --profile (models, parameters, "
        "tokens, FLOPs, memory, hours on the run's --device, missing resources: `repro plan`) and run "
        "nothing",
    )
    group.addoption(
        "--artifacts",
        default=None,
        metavar="DIR",
        help="where claims.json, report.md and figures/ go (default: <rootdir>/artifacts for a run of "
        "every claim; artifacts/selection/<what>/ for a run of some (-k, -m, --claim, a file), "
        "artifacts/model-<name>/ for --model: a partial run never overwrites the full report)",
    )
    group.addoption(
        "--claim",
        default=None,
        metavar="ID[,ID…]",
        help="run only these claims: exact IDs (SK-1,BB-4.2) or a topic prefix ending in '-' (CA-); "
        "`-k SK-1` works too, as a substring of the IDs (BB-1 also selects BB-1.1)",
    )


def check_options(config: pytest.Config) -> None:
    """Every option that can be wrong is a usage error at start-up, in one line: the device and
    profile, REPRO_DTYPE, --model, --corpus and --train-procs."""
    try:
        resolve_device(config.getoption("--device"))
        get_profile(config.getoption("--profile"))
        dtype_override()  # a misspelt REPRO_DTYPE stops the run here, with one line
    except ReproError as err:
        raise pytest.UsageError(str(err)) from None
    _check_model_option(config.getoption("--model"))
    _check_corpus_option(config.getoption("--corpus"))
    if config.getoption("--train-procs") < 1:
        raise pytest.UsageError(f"--train-procs must be >= 1, got {config.getoption('--train-procs')}")


def _check_model_option(name: str | None) -> None:
    """--model must name something a model can be loaded from (checked without loading): a wrong
    path is a usage error at once, never a run of skipped claims."""
    if name is None:
        return
    from repro.core.models.pretrained import model_spec_problem

    problem = model_spec_problem(name)
    if problem:
        raise pytest.UsageError(f"--model {name}: {problem}")


def _check_corpus_option(name: str) -> None:
    from repro.core.data import corpus_problem

    problem = corpus_problem(name)
    if problem:
        raise pytest.UsageError(problem)


def is_worker(config: pytest.Config) -> bool:
    """Is this process an xdist worker (not the controller, not a run without xdist)?"""
    return hasattr(config, "workerinput")


def artifacts_dir(config: pytest.Config) -> Path:
    """Where this run writes: --artifacts if given; else artifacts/ for a run of every claim on the
    embedded models, artifacts/model-<name>/ under --model, and .../selection/<what>/ for a run of
    some claims (`selection_label`), so a one-claim run never replaces the full run's report."""
    opt = config.getoption("--artifacts")
    if opt is not None:
        path = Path(opt)
        return path if path.is_absolute() else config.invocation_params.dir / path
    out = config.rootpath / "artifacts"
    model = config.getoption("--model")
    if model:
        out = out / f"model-{slug(Path(model.rstrip('/')).name or model)}"
    label = selection_label(config)
    return out if label is None else out / "selection" / label


def slug(text: str, limit: int = 48) -> str:
    """`text` as a file name: runs of other characters become '-'; a long one is cut and ends in a
    hash of the whole, so two long texts stay apart."""
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-.") or "run"
    if len(name) > limit:
        name = name[: limit - 9].rstrip("-.") + "-" + hashlib.sha1(text.encode()).hexdigest()[:8]
    return name


def selection_label(config: pytest.Config) -> str | None:
    """None for a run of every claim (`pytest claims/`, no -k/-m/--claim/--deselect/--lf, no file
    or node argument); else a short name of what was selected, e.g. 'k-SK-1', 'test_sinks'."""
    parts = []
    if config.getoption("--claim"):
        parts.append("claim-" + config.getoption("--claim"))
    if config.getoption("keyword", ""):
        parts.append("k-" + config.getoption("keyword"))
    if config.getoption("markexpr", ""):
        parts.append("m-" + config.getoption("markexpr"))
    if config.getoption("deselect", None):
        parts.append("deselect")
    if config.getoption("lf", False):
        parts.append("last-failed")
    claims_dir = (config.rootpath / "claims").resolve()
    for arg in config.args:
        path = Path(arg.split("::")[0])
        path = path if path.is_absolute() else config.invocation_params.dir / path
        if "::" in arg or path.resolve() != claims_dir:
            if path.resolve() == config.rootpath.resolve() and "::" not in arg:
                continue
            parts.append(Path(arg.split("::")[0]).stem + ("-" + arg.split("::", 1)[1] if "::" in arg else ""))
    return slug("_".join(parts)) if parts else None


def collects_every_claim_file(config: pytest.Config) -> bool:
    """Does this run's collection see every file of claims/? Only then can a claim ID that no
    collected test carries read "not yet encoded"; a run given a file or node (or --lf, --ignore)
    did not look at the other files, so their claims read "not run". -k, -m, --claim and
    --deselect select after collection and leave it whole."""
    if config.getoption("lf", False) or config.getoption("ignore", None) or config.getoption("ignore_glob", None):
        return False
    claims_dir = (config.rootpath / "claims").resolve()
    for arg in config.args:
        if "::" in arg:
            continue
        path = Path(arg)
        path = (path if path.is_absolute() else config.invocation_params.dir / path).resolve()
        if path == claims_dir or path in claims_dir.parents:
            return True
    return False


def run_models(config: pytest.Config) -> list[str]:
    """The run's pretrained models: --model, else every embedded model."""
    from repro.core.models.embedded import EMBEDDED_MODELS

    chosen = config.getoption("--model")
    return [chosen] if chosen else list(EMBEDDED_MODELS)


def users_model(item: pytest.Item) -> str | None:
    """The run's `--model` when it is one the suite has no recorded expectation for (not an
    embedded model) and the test reads it (parametrised by `model_name`, or taking `model_names` /
    `pretrained`); None otherwise."""
    model = item.config.getoption("--model")
    if model is None or not {"model_name", "model_names", "pretrained"} & set(getattr(item, "fixturenames", ())):
        return None
    from repro.core.models.embedded import EMBEDDED_MODELS

    return None if model in EMBEDDED_MODELS else str(model)


def decide_chunk(item: pytest.Item) -> str | None:
    """The run's profile when it is a decide chunk (`decide-<chunk>`): a run sized to decide the
    claims its chunk names, so none of them has a recorded expectation there; None otherwise."""
    from repro.ground.sizes import DECIDE_PREFIX

    profile = str(item.config.getoption("--profile") or "")
    return profile if profile.startswith(DECIDE_PREFIX) else None


def gpu_for_worker(worker_id: str, n_gpus: int) -> int | None:
    """The GPU an xdist worker ("gw3") pins itself to: its index modulo the GPU count; None
    without GPUs."""
    if n_gpus < 1:
        return None
    digits = re.sub(r"\D", "", worker_id)
    return int(digits or 0) % n_gpus


def pin_worker(config: pytest.Config) -> None:
    """An xdist worker's share of the machine: its slice of the CPU threads and, on a machine with
    GPUs, one GPU (`gpu_for_worker`)."""
    # xdist workers share the cores: torch's default (all cores per process) oversubscribes
    # them and every op then waits on the others (measured: 11 s vs 0.9 s per forward pass).
    import torch

    workers = int(config.workerinput.get("workercount", 1))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))
    # on a machine with N GPUs, `pytest claims/ -n N --dist loadgroup` gives worker gwK the
    # GPU K mod N: "cuda" (no index) then means that GPU for every tensor of the worker
    gpu = gpu_for_worker(config.workerinput.get("workerid", "gw0"), torch.cuda.device_count())
    if gpu is not None:
        torch.cuda.set_device(gpu)
