"""The claims plugin: options, the `claim` marker and fixture, record collection, report writing.

Data flow (works the same under `pytest -n N`):
  test ── claim.record()/figure()/table() ──> item.user_properties
       ── pytest's TestReport (serialised by xdist) ──> controller's pytest_runtest_logreport
       ── pytest_sessionfinish (controller only) ──> artifacts/claims.json, report.md
Figures are PNG files written (atomically) by whichever process ran the test; only their
paths travel. Artifacts are written only when the run contained claim tests, so running
`pytest tests/` never overwrites a claims report.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

import pytest

from repro.ground.runtime import (
    DEVICES,
    MissingFixture,
    NotApplicable,
    ReproError,
    atomic_path,
    atomic_write_json,
    atomic_write_text,
    cpu_capability,
    dtype_name,
    dtype_override,
    resolve_device,
    resolve_dtype,
)
from repro.harness import catalogue
from repro.harness import report as reporting
from repro.harness.profiles import BUDGET_S, PROFILES, Profile, get_profile

PROP_CLAIMS = "repro_claims"
PROP_RECORD = "repro_record"
PROP_FIGURE = "repro_figure"
PROP_TABLE = "repro_table"
PROP_CORPUS = "repro_corpus"

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

_outcomes_key = pytest.StashKey[dict]()
_static_run_key = pytest.StashKey[tuple]()
_results_key = pytest.StashKey[tuple]()
_start_key = pytest.StashKey[float]()
_baseline_key = pytest.StashKey[tuple]()  # (committed baseline, compare.Comparison) when there is one


# --------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("repro", "repro claims")
    group.addoption(
        "--profile",
        choices=PROFILES,
        default="ci",
        help="experiment sizes: ci (2 CPU cores, minutes), long (ci, but claims that need more training than CI "
        "affords get it; still a CPU) or paper (the source's sizes, GPU)",
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
        "(repro/harness/baselines/): check (default) fails the run on a verdict regression or a record "
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


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _artifacts_dir(config: pytest.Config) -> Path:
    """Where this run writes: --artifacts if given; else artifacts/ for a run of every claim on the
    embedded models, artifacts/model-<name>/ under --model, and .../selection/<what>/ for a run of
    some claims (`selection_label`), so a one-claim run never replaces the full run's report. The
    same answer in the controller and in every xdist worker (it reads the command line only)."""
    opt = config.getoption("--artifacts")
    if opt is not None:
        path = Path(opt)
        return path if path.is_absolute() else config.invocation_params.dir / path
    out = config.rootpath / "artifacts"
    model = config.getoption("--model")
    if model:
        out = out / f"model-{_slug(Path(model.rstrip('/')).name or model)}"
    label = selection_label(config)
    return out if label is None else out / "selection" / label


def _slug(text: str, limit: int = 48) -> str:
    import hashlib

    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-.") or "run"
    if len(slug) > limit:
        slug = slug[: limit - 9].rstrip("-.") + "-" + hashlib.sha1(text.encode()).hexdigest()[:8]
    return slug


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
    return _slug("_".join(parts)) if parts else None


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
    from repro.core.data import CORPORA, is_local_corpus

    if name in CORPORA:
        return
    if is_local_corpus(name):
        if not Path(name).expanduser().is_dir():
            raise pytest.UsageError(f"--corpus {name}: no such directory")
        return
    raise pytest.UsageError(
        f"--corpus {name!r} is unknown; choose one of {', '.join(CORPORA)}, or a directory of text files"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "claim(*ids): see pyproject.toml")
    config.addinivalue_line(
        "markers",
        "xdist_group(name): tests that share fixtures run on one xdist worker "
        "(registered here too, for runs with -p no:xdist)",
    )
    config.addinivalue_line(
        "markers",
        "policy_dtype: the test's experiment computes (or trains) in the dtype "
        "policy's choice (runtime.resolve_dtype('auto')); its records say so",
    )
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
    config.stash[_outcomes_key] = {}
    config.stash[_start_key] = time.time()
    if _is_worker(config):
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


def gpu_for_worker(worker_id: str, n_gpus: int) -> int | None:
    """The GPU an xdist worker ("gw3") pins itself to: its index modulo the GPU count; None
    without GPUs."""
    if n_gpus < 1:
        return None
    digits = re.sub(r"\D", "", worker_id)
    return int(digits or 0) % n_gpus


# --------------------------------------------------------------------------- collection


def _claim_ids(item: pytest.Item) -> list[str]:
    ids: list[str] = []
    for mark in item.iter_markers("claim"):
        ids.extend(str(a) for a in mark.args)
    return sorted(set(ids), key=ids.index)


# Under `pytest -n N --dist loadgroup` (what `make claims` runs), tests that share expensive
# module fixtures must land on one worker, or each worker builds them again. A claim test's
# group: its `xdist_group` marker if it has one (born_biased splits its probes this way), else
# its module, split per pretrained model for tests parametrised by `model_name` (a module's
# per-model fixtures are per model anyway). Groups known to be long go first, so that the last
# group a worker picks up is a short one.
LONG_GROUPS = (
    "spectral_filters[gemma3-270m]",
    "born_biased-probes",
    "causal_shift",
    "seedprint",
    "sinks",
    "context_axis",
    "spectral_filters[smollm2-135m]",
)
_GROUP_SUFFIX = re.compile(r"@[\w.\[\]-]+$")


def xdist_group_of(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    group = item.path.stem.removeprefix("test_")
    params = getattr(getattr(item, "callspec", None), "params", {})
    return f"{group}[{params['model_name']}]" if "model_name" in params else group


def plain_nodeid(nodeid: str) -> str:
    """A node ID without the '@group' suffix xdist's loadgroup appends to it."""
    return _GROUP_SUFFIX.sub("", nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Unknown claim IDs stop the run at collection, with the closest known IDs suggested.
    Claim tests get their xdist group (see LONG_GROUPS) before xdist reads the markers."""
    problems = []
    for item in items:
        ids = _claim_ids(item)
        marks = list(item.iter_markers("claim"))
        if marks and not ids:
            problems.append(f"{item.nodeid}: @pytest.mark.claim needs at least one claim ID")
        for mark in marks:
            if mark.kwargs:  # the source and section live in the catalogue, once
                problems.append(
                    f"{item.nodeid}: @pytest.mark.claim takes claim IDs only, not "
                    f"{', '.join(sorted(mark.kwargs))} (the catalogue holds each claim's source)"
                )
        for cid in ids:
            try:
                catalogue.get(cid)
            except KeyError as err:
                problems.append(f"{item.nodeid}: {err.args[0]}")
        if {"pretrained", "model_name", "model_names"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.pretrained)  # `-m pretrained`: the claims a --model run is about
        if ids:
            # `-k SK-1` selects by claim ID: the IDs are keywords of the item (substring match, as -k does)
            item.extra_keyword_matches.update(ids)
            item.user_properties.append((PROP_CLAIMS, ids))
            if item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))
    if problems:
        raise pytest.UsageError("bad claim marker(s):\n  " + "\n  ".join(problems))
    _select_claims(config, items)
    if config.getoption("dist", "no") == "loadgroup":
        rank = {g: i for i, g in enumerate(LONG_GROUPS)}
        items.sort(key=lambda it: rank.get(xdist_group_of(it), len(rank)) if _claim_ids(it) else len(rank) + 1)


def _select_claims(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--claim ID[,ID…]: keep the tests that carry one of the IDs (exact; 'CA-' selects a topic),
    deselect the rest. An unknown ID is a usage error with the closest IDs; an ID no collected
    test carries says so."""
    wanted = [w.strip() for w in (config.getoption("--claim") or "").split(",") if w.strip()]
    if not wanted:
        return
    for w in wanted:
        if not w.endswith("-"):
            try:
                catalogue.get(w)
            except KeyError as err:
                raise pytest.UsageError(f"--claim: {err.args[0]}") from None
        elif not any(cid.startswith(w) for cid in catalogue.CATALOGUE):
            raise pytest.UsageError(
                f"--claim {w}: no claim ID starts with {w!r} (topics: {', '.join(catalogue.TOPICS)})"
            )

    def chosen(item: pytest.Item) -> bool:
        return any(cid == w or (w.endswith("-") and cid.startswith(w)) for cid in _claim_ids(item) for w in wanted)

    keep = [it for it in items if chosen(it)]
    if not keep:
        raise pytest.UsageError(
            f"--claim {','.join(wanted)}: no collected test carries "
            f"{'it' if len(wanted) == 1 else 'them'} (not yet encoded, or outside the paths given)"
        )
    drop = [it for it in items if not chosen(it)]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


_plan_key = pytest.StashKey[list]()


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_plan(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """--plan: cost the collected claims (repro.harness.plan, restricted to their topics) on the
    run's --corpus and deselect every test, so nothing runs."""
    if not config.getoption("--plan") or _is_worker(config):
        return
    from repro.harness import plan as planning

    ids = sorted({cid for it in items for cid in _claim_ids(it)})
    try:
        full = planning.plan(
            config.getoption("--profile"),
            corpus=config.getoption("--corpus"),
            device=planning.plan_device(config.getoption("--device")),
        )
    except ReproError as err:  # e.g. a --corpus directory without train documents
        raise pytest.UsageError(str(err)) from None
    config.stash[_plan_key] = [f"claims selected: {len(ids)} ({', '.join(ids)})"] + planning.lines(
        planning.for_claims(full, ids)
    )
    config.hook.pytest_deselected(items=list(items))
    items[:] = []


# --------------------------------------------------------------------------- fixtures


_NO_CONTROL = object()


class ControlPassed(Exception):
    """A negative control passed a claim's assertion (not an AssertionError on purpose: a strict
    xfail must not absorb it)."""


class Claim:
    """Handle given to a claim test: record numbers, figures and tables for the report."""

    def __init__(self, item: pytest.Item, artifacts: Path) -> None:
        self.item = item
        self.ids = _claim_ids(item)
        self.figures_dir = artifacts / "figures"
        # the dtype the test's numbers were computed (or their models trained) in, stamped on
        # every record: float32 unless the test is marked `policy_dtype` (its experiment runs in
        # what runtime.resolve_dtype("auto") chose) or sets another (e.g. "float64")
        self.dtype = "float32"
        if item.get_closest_marker("policy_dtype") is not None:
            device = resolve_device(item.config.getoption("--device"))
            self.dtype = dtype_name(resolve_dtype("auto", device))
        if not self.ids:
            raise pytest.UsageError(f"{item.nodeid} uses the `claim` fixture without @pytest.mark.claim")
        self.users_model = users_model(item)

    def _id(self, claim_id: str | None) -> str:
        if claim_id is None:
            return self.ids[0]
        if claim_id not in self.ids:
            raise ValueError(f"{claim_id} is not among this test's claim markers {self.ids}")
        return claim_id

    def record(
        self,
        name: str,
        measured: Any,
        expected: Any = None,
        tol: float | None = None,
        why: str = "",
        *,
        compare: str = "abs",
        unit: str = "",
        claim_id: str | None = None,
        dtype: str | None = None,
        source: Any = None,
        role: str = "context",
        key: str | None = None,
        power: dict | None = None,
    ) -> reporting.Record:
        """Record one number for the report, not asserted (context; asserting goes through
        `check`). `expected`/`tol`/`compare`: a threshold to show beside it; `source`: the
        source's number. `why` says where a tolerance comes from (required with a tol).
        `dtype`: what it was computed in (default: `self.dtype`). `key`: the record's identity
        across runs, needed only when the label carries a measured *word* (which matrix, which
        token); numbers in a label are masked by the default key (`report.key_of_label`)."""
        if tol is not None and not why:
            raise ValueError(f"record {name!r}: a tolerance needs its reason (why=...)")
        rec = reporting.Record(
            self._id(claim_id),
            name,
            measured,
            expected,
            tol,
            why,
            compare,
            unit,
            dtype=str(dtype or self.dtype).removeprefix("torch."),
            source=source,
            role=role,
            key=key,
            power=power,
        )
        self.item.user_properties.append((PROP_RECORD, rec.to_dict()))
        return rec

    def check(
        self,
        name: str,
        measured: Any,
        threshold: Any = None,
        *,
        compare: str,
        why: str,
        tol: float = 0.0,
        source: Any = None,
        control: Any = _NO_CONTROL,
        control_name: str = "",
        unit: str = "",
        claim_id: str | None = None,
        dtype: str | None = None,
        key: str | None = None,
    ) -> reporting.Record:
        """Record *and assert* one comparison, so the row a reader sees is the one that decided
        the test: `measured` against our `threshold` (compare "ge" / "le" / "abs" / "rel", with
        `tol`; "true" for a condition), `source` the source's own number (shown, not used),
        `why` the threshold's reason.

        `control`: the same quantity measured on a negative control (an input or model where
        the effect must be absent, named by `control_name`). It goes through the same comparison
        and must be *rejected*; if it passes, the assertion cannot tell the effect from its
        absence and the test fails (`ControlPassed`, not an AssertionError: a strict xfail does
        not absorb it). The assertion is an explicit raise, so it holds under `python -O` and
        `--assert=plain` too; the plugin also fails any test that passed with a failed check on
        record (`pytest_runtest_makereport`)."""
        if not why:
            raise ValueError(f"check {name!r}: say why this threshold (why=...)")
        if compare not in ("ge", "le", "abs", "rel", "true"):
            raise ValueError(f"check {name!r}: compare must be ge, le, abs, rel or true, not {compare!r}")
        if compare != "true" and threshold is None:
            raise ValueError(f"check {name!r}: compare {compare!r} needs a threshold")
        if control is not _NO_CONTROL:
            if not control_name:
                raise ValueError(f"check {name!r}: name the control (control_name=...)")
            ctl = self.record(
                f"{name} — control: {control_name}",
                control,
                threshold,
                tol,
                why,
                compare=compare,
                unit=unit,
                claim_id=claim_id,
                dtype=dtype,
                source=None,
                role="control",
                key=None if key is None else f"{key} — control",
            )
            if ctl.within is not False:
                raise ControlPassed(
                    f"{self._id(claim_id)} {name}: the negative control ({control_name}) passes the "
                    f"same assertion ({ctl.shown()}): this test cannot tell the effect from its absence"
                )
        rec = self.record(
            name,
            measured,
            threshold,
            tol,
            why,
            compare=compare,
            unit=unit,
            claim_id=claim_id,
            dtype=dtype,
            source=source,
            role="check",
            key=key,
        )
        if rec.within is not True:
            raise AssertionError(f"{rec.claim} {name}: {rec.shown()} does not hold ({why})")
        return rec

    def power(
        self,
        value: float,
        *,
        effect: str,
        basis: str,
        test: str,
        sample: str,
        method: str,
        decide: str,
        effect_value: float | None = None,
        size: float | None = None,
        size_method: str = "",
        direction_p: float | None = None,
        claim_id: str | None = None,
    ) -> reporting.Record:
        """Record the test's power at a *declared* effect: the probability that this test, at this
        run's sizes, passes when the claim holds with `effect` (stated in words, with its number;
        `effect_value` the number alone where there is one). Never observed power: the effect may not
        be this run's measurement (the plugin fails a test whose power effect equals one of its
        checks' measured values).

        `basis` says where the effect comes from (`reporting.POWER_BASES`): "source: <table/figure>"
        (the source's number), "interest: <reason>" (a smallest effect of interest we name, e.g. a
        threshold the source does not give), "budget: <model>" (the effect expected at *our*
        training budget, e.g. fitted to our own measured trajectory, with its uncertainty).
        `test`: the test whose power this is (e.g. "one-sided paired t at α = 0.05"); `sample`: what
        it is run on (e.g. "8 seeds", "400 prompts"); `method`: how the power was computed (closed
        form, or a simulation with its replicate count); `decide`: the sizes at which it reaches 80%.

        `size`: the family-wise size of reading *contradicted* — the probability that this test is
        not reproduced although the claim holds. By default 1 − power (the declared effect is the
        boundary of the claim: a true claim at that effect fails with probability 1 − power); a test
        whose contradiction rests on its own rule (e.g. Holm over a family of pairs) passes it with
        `size_method`. `direction_p`: for an effect of interest we invented, the p-value of the effect
        in the claimed direction; when it is ≤ `reporting.SIZE_ENOUGH` the invented bar alone cannot
        contradict the claim (the test reads inconclusive). A strict xfail reads *contradicted* only
        with power ≥ POWER_ENOUGH and size ≤ SIZE_ENOUGH (report.TestOutcome.verdict)."""
        if not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"power must lie in [0, 1], got {value}")
        kind = basis.split(":", 1)[0].strip()
        if kind not in reporting.POWER_BASES or (kind != "source" and not basis.split(":", 1)[1:]):
            raise ValueError(
                f"power basis {basis!r}: one of 'source: <where>', 'interest: <reason>', 'budget: <model>'"
            )
        for name, text in (
            ("effect", effect),
            ("test", test),
            ("sample", sample),
            ("method", method),
            ("decide", decide),
        ):
            if not str(text).strip():
                raise ValueError(
                    f"power: state the {name} (a power record says effect, basis, test, sample, method "
                    "and the sizes for 80%)"
                )
        if size is None:
            size, size_method = (
                1.0 - float(value),
                size_method or "1 − power: a true claim at the declared effect fails with that probability",
            )
        elif not size_method:
            raise ValueError("power: a size given explicitly needs its size_method")
        detail = {
            "effect": effect,
            "effect_value": None if effect_value is None else float(effect_value),
            "basis": basis,
            "test": test,
            "sample": sample,
            "method": method,
            "decide": decide,
            "size": float(size),
            "size_method": size_method,
            "direction_p": None if direction_p is None else float(direction_p),
        }
        why = f"at the declared effect ({effect}; {basis}); {test} on {sample}; {method}; 80% power at: {decide}"
        return self.record(
            "power at the declared effect",
            float(value),
            reporting.POWER_ENOUGH,
            None,
            why,
            compare="ge",
            claim_id=claim_id,
            role="power",
            key="power at the source's effect",
            power=detail,
        )

    def figure(self, fig: Any, name: str, *, claim_id: str | None = None) -> Path:
        """Save a matplotlib figure as artifacts/figures/<ID>_<name>.png (atomic) and close it."""
        import matplotlib.pyplot as plt

        cid = self._id(claim_id)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{cid}_{name}").strip("-")
        path = self.figures_dir / f"{stem}.png"
        with atomic_path(path) as tmp:
            # no timestamps / software strings in the PNG: identical runs give identical files
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
        plt.close(fig)
        self.item.user_properties.append((PROP_FIGURE, f"figures/{path.name}"))
        return path

    def not_reproduced(self, reason: str) -> None:
        """Mark this test a strict xfail (DESIGN "Verdicts") from inside the test, once the
        measurement that decides it is known (e.g. only at the `ci` profile): an
        AssertionError is the expected outcome, anything else fails, and a pass is an XPASS
        failure that makes someone update the verdict. On a user's model (`users_model`) the
        recorded expectations do not apply: nothing is marked."""
        if self.users_model is not None:
            return
        self.item.add_marker(pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason))

    def not_reproduced_if(self, known: dict, key: tuple, measured: str) -> None:
        """`not_reproduced` when `key` (e.g. (claim ID, model name) or (claim ID, profile name))
        is in `known`, a test module's table of verdicts decided from earlier measurements (not
        from this run's numbers, so the test still fails if the behaviour changes the other way),
        with this run's `measured` numbers appended to the stated reason."""
        reason = known.get(key)
        if reason:
            self.not_reproduced(f"{key[-1]}: {reason} Measured: {measured}")

    def applies(self, holds: bool, reason: str) -> None:
        """A precondition of the claim on the run's model (e.g. a final-norm gain that differs from
        1, or the claim tests nothing): on a user's model (`users_model`) that lacks it, the claim is
        not applicable for `reason`; on the embedded models the test's own check asserts it."""
        if not holds and self.users_model is not None:
            self.not_applicable(reason)

    def not_applicable(self, reason: str) -> None:
        """End the test: the claim does not apply to this run's model (it lacks what the claim is
        about: a final-norm gain, a first token to sink on, an architecture the layer map knows…).
        The claim reads "not applicable: <reason>" — not a failure, not a skip for a missing
        resource."""
        pytest.skip(reporting.NOT_APPLICABLE_PREFIX + reason)

    def corpus(self, read: str, *, shift: str | None = None, claim_id: str | None = None) -> None:
        """State the text this test's numbers read (issue 20, item 5): `read` the corpus the run's
        `--corpus` gave it (the `corpus_name` fixture, "brown" by default), or a fixed text the claim
        names (e.g. the source's own prompts); `shift` a second corpus the claim reads on purpose
        whatever `--corpus` says (the shifted domain, e.g. "stdlib-code"). claims.json gives each
        claim the union over its tests as `"corpus": "brown; shift: stdlib-code"` (null: no text
        read: random tokens, Gaussian inputs or weights only). Applies to every claim ID of the
        test unless `claim_id` names one."""
        if not read:
            raise ValueError("claim.corpus: name the corpus read (e.g. the corpus_name fixture's value)")
        ids = self.ids if claim_id is None else [self._id(claim_id)]
        self.item.user_properties.append(
            (PROP_CORPUS, {"claims": list(ids), "read": str(read), "shift": None if shift is None else str(shift)})
        )

    def table(self, title: str, columns: list[str], rows: list[list[Any]], *, claim_id: str | None = None) -> None:
        """A table for the report (e.g. the source's Table 3 next to ours)."""
        payload = {
            "claim": self._id(claim_id),
            "title": title,
            "columns": list(columns),
            "rows": [reporting._plain(list(r)) for r in rows],
        }
        self.item.user_properties.append((PROP_TABLE, payload))


@pytest.fixture
def claim(request: pytest.FixtureRequest) -> Claim:
    return Claim(request.node, _artifacts_dir(request.config))


@pytest.fixture(scope="session")
def profile(pytestconfig: pytest.Config) -> Profile:
    return get_profile(pytestconfig.getoption("--profile"))


@pytest.fixture(scope="session")
def device(pytestconfig: pytest.Config):
    return resolve_device(pytestconfig.getoption("--device"))


@pytest.fixture(scope="session")
def corpus_name(pytestconfig: pytest.Config) -> str:
    """--corpus: the text every claim that reads text reads (evaluation windows, training streams,
    token counts); a claim's deliberately shifted corpus (stdlib-code) stays fixed. A test states
    what it read with `claim.corpus(corpus_name, shift=...)`."""
    return pytestconfig.getoption("--corpus")


@pytest.fixture(scope="session")
def train_procs(pytestconfig: pytest.Config) -> int:
    """--train-procs: processes a claim's training job runs on (repro.core.launch)."""
    return pytestconfig.getoption("--train-procs")


def _run_models(config: pytest.Config) -> list[str]:
    """The run's pretrained models: --model, else every embedded model."""
    from repro.core.models.pretrained import EMBEDDED_MODELS

    chosen = config.getoption("--model")
    return [chosen] if chosen else list(EMBEDDED_MODELS)


@pytest.fixture(scope="session")
def model_names(pytestconfig: pytest.Config) -> list[str]:
    """Models for claims on pretrained models: --model, else both embedded models."""
    return _run_models(pytestconfig)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes `model_name` runs once per pretrained model of the run (--model, else
    every embedded model), module-scoped: a module's per-model fixtures are built once each."""
    if "model_name" in metafunc.fixturenames:
        metafunc.parametrize("model_name", _run_models(metafunc.config), scope="module")


@pytest.fixture(scope="session")
def pretrained(device):
    """`pretrained(name)` -> (model, tokenizer), loaded once per session; a hub model that cannot be
    reached skips the test with the reason (DESIGN.md: skipped only for a missing resource)."""
    from repro.core.models.pretrained import EMBEDDED_MODELS, load_pretrained

    loaded: dict[str, Any] = {}

    def get(name: str):
        if name not in loaded:
            try:
                loaded[name] = load_pretrained(name, device=device)
            except ReproError as err:
                if name in EMBEDDED_MODELS and not isinstance(err, MissingFixture):
                    raise
                pytest.skip(str(err))
        return loaded[name]

    return get


_prepare_key = pytest.StashKey[Any]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """A cold run's embedded models are dequantised in a background process from the start
    (`pretrained.prepare_in_background`), when a selected test reads the `pretrained` fixture
    (once per run: not in an xdist worker but the first, not under --plan)."""
    config = session.config
    if config.getoption("--plan") or getattr(config, "workerinput", {}).get("workerid", "gw0") != "gw0":
        return
    if not any("pretrained" in getattr(item, "fixturenames", ()) for item in session.items):
        return
    from repro.core.models.pretrained import prepare_in_background

    try:
        config.stash[_prepare_key] = prepare_in_background(_run_models(config))
    except ReproError as err:  # e.g. a cache path that cannot be used: one line, not an internal error
        raise pytest.UsageError(str(err)) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop a background model build still running when the run ends (an interrupted run, or one
    whose tests never loaded the model): its writes are atomic, the next run starts it again."""
    proc = config.stash.get(_prepare_key, None)
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


# --------------------------------------------------------------------------- user-facing errors


def _fault(err: ReproError) -> None:
    """A ReproError in a claim test: a fixture that was never fetched is a missing resource
    (skipped, with the command that fetches it); a model that lacks what the claim is about is
    `NotApplicable` (the claim reads "not applicable"); anything else is one line, failed."""
    if isinstance(err, MissingFixture):
        pytest.skip(str(err))
    if isinstance(err, NotApplicable):
        pytest.skip(reporting.NOT_APPLICABLE_PREFIX + str(err))
    pytest.fail(f"ReproError: {err}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    try:
        return (yield)
    except ReproError as err:
        _fault(err)


def users_model(item: pytest.Item) -> str | None:
    """The run's `--model` when it is one the suite has no recorded expectation for (not an
    embedded model) and the test reads it (parametrised by `model_name`, or taking `model_names` /
    `pretrained`); None otherwise."""
    model = item.config.getoption("--model")
    if model is None or not {"model_name", "model_names", "pretrained"} & set(getattr(item, "fixturenames", ())):
        return None
    from repro.core.models.pretrained import EMBEDDED_MODELS

    return None if model in EMBEDDED_MODELS else str(model)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """ReproError → one line (`_fault`). On a user's model a failing check is not a regression but
    the claim's answer for that model: its AssertionError reads as an xfail, whose verdict —
    contradicted or inconclusive — comes from the power the test recorded on that model's data. A
    control that passes, or any other error, still fails."""
    try:
        return (yield)
    except ReproError as err:
        _fault(err)
    except AssertionError as err:
        model = users_model(item)
        if model is None:
            raise
        pytest.xfail(f"{model} (no recorded expectation): {_first_line(str(err))}")


def observed_power(records: Iterable[dict]) -> str | None:
    """Why a test's power is observed power (its declared effect is one of its own checks' measured
    values, so the power is a function of the measurement that decided the test), or None."""
    recs = list(records)
    measured = [
        (r["name"], r["measured"])
        for r in recs
        if r.get("role") == "check"
        and isinstance(r.get("measured"), (int, float))
        and not isinstance(r.get("measured"), bool)
    ]
    for r in recs:
        eff = (r.get("power") or {}).get("effect_value")
        if r.get("role") != "power" or eff is None:
            continue
        for name, m in measured:
            if math.isclose(eff, m, rel_tol=1e-9, abs_tol=1e-12):
                return (
                    f"{r['claim']}: the power's effect ({reporting.fmt(eff)}) is this run's measurement '{name}': "
                    "observed power (0 whenever the test fails) cannot decide a verdict; declare the effect"
                )
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """The harness's cross-check: a claim test that passed while one of its asserted records
    (`claim.check`) does not hold is a failure of the harness, whatever the assertion mode
    (`python -O`, `--assert=plain`) or whatever caught the check's AssertionError."""
    rep = yield
    if rep.when == "call":
        observed = observed_power(r for k, r in item.user_properties if k == PROP_RECORD)
        if observed:
            rep.outcome = "failed"
            rep.longrepr = f"harness: {observed}"
            if hasattr(rep, "wasxfail"):  # a strict xfail does not absorb it
                del rep.wasxfail
            return rep
    if rep.when == "call" and rep.passed:  # a non-strict xfail that passed (a user's model) too
        bad = [
            r
            for k, r in item.user_properties
            if k == PROP_RECORD and r.get("role") == "check" and r.get("within") is not True
        ]
        if bad:
            r = bad[0]
            rep.outcome = "failed"
            rep.longrepr = (
                f"harness: the test passed, but its asserted record {r['claim']} '{r['name']}' does not "
                f"hold (measured {reporting.fmt(r['measured'])} vs {r['compare']} "
                f"{reporting.fmt(r['expected'])}): an assertion was skipped or a check's AssertionError "
                "was caught"
            )
    return rep


# --------------------------------------------------------------------------- collecting outcomes


def _skip_reason(rep: pytest.TestReport) -> str:
    lr = rep.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2]).removeprefix("Skipped: ")
    return str(lr or "")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    rep = report
    props = dict((k, v) for k, v in rep.user_properties if k == PROP_CLAIMS)
    if PROP_CLAIMS not in props:
        return
    config = _CONFIG.get("config")
    if config is None or _is_worker(config):
        return
    outcomes: dict[str, reporting.TestOutcome] = config.stash[_outcomes_key]
    nodeid = plain_nodeid(rep.nodeid)
    t = outcomes.get(nodeid)
    if t is None:
        t = outcomes[nodeid] = reporting.TestOutcome(nodeid, list(props[PROP_CLAIMS]), "passed")
    t.duration += rep.duration
    wasxfail = getattr(rep, "wasxfail", None)
    if rep.when == "call" or (rep.when == "setup" and not rep.passed):
        if rep.failed:
            t.outcome = "failed" if rep.when == "call" else "error"
            t.reason = _first_line(rep.longreprtext)
        elif rep.skipped and wasxfail is not None:
            t.outcome, t.reason = "xfailed", str(wasxfail)
        elif rep.skipped:
            t.outcome, t.reason = "skipped", _skip_reason(rep)
        elif wasxfail is not None:
            t.outcome, t.reason = "xpassed", str(wasxfail)
        else:
            t.outcome = "passed"
        t.records = [v for k, v in rep.user_properties if k == PROP_RECORD]
        t.figures = [v for k, v in rep.user_properties if k == PROP_FIGURE]
        t.tables = [v for k, v in rep.user_properties if k == PROP_TABLE]
        t.corpora = [v for k, v in rep.user_properties if k == PROP_CORPUS]
    elif rep.when == "teardown" and rep.failed:
        t.outcome, t.reason = "error", _first_line(rep.longreprtext)
    if rep.when == "teardown":
        _write_partial(config)


PARTIAL = "claims.partial.json"


def _write_partial(config: pytest.Config) -> None:
    """After each claim test, what the run has decided so far, as claims.json's schema with
    `run.partial` set, in artifacts/claims.partial.json (atomic). A run killed from outside (a
    time limit, a lost machine: the first H100 session lost a whole model's results that way,
    2026-11-25) leaves it behind; a run that ends writes claims.json and removes it. The run
    fields that cannot change during a run (git, packages, models) are read once."""
    outcomes = config.stash[_outcomes_key]
    static = config.stash.get(_static_run_key, None)
    if static is None:
        static = config.stash[_static_run_key] = (
            run_metadata(config, {}),
            encoded_claim_ids(config.rootpath / "claims"),
        )
    run_static, encoded = static
    run = {
        **run_static,
        "wall_time_s": round(time.time() - config.stash[_start_key], 2),
        "test_durations_s": {n: round(t.duration, 3) for n, t in sorted(outcomes.items())},
        "partial": f"written after {len(outcomes)} claim tests; the run had not ended",
    }
    out = _artifacts_dir(config)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / PARTIAL, reporting.to_json(reporting.build_results(outcomes.values(), encoded), run))


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("E ")]
    return (errs[0][2:].strip() if errs else (lines[-1] if lines else ""))[:300]


# pytest_runtest_logreport receives no config; keep a handle to the live one.
_CONFIG: dict[str, pytest.Config] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG["config"] = session.config


# --------------------------------------------------------------------------- writing artifacts


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


def run_metadata(config: pytest.Config, outcomes: dict[str, reporting.TestOutcome]) -> dict[str, Any]:
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
        "started": _dt.datetime.fromtimestamp(config.stash[_start_key], _dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": round(time.time() - config.stash[_start_key], 2),
        "budget_s": BUDGET_S.get(prof.name),
        "test_durations_s": {n: round(t.duration, 3) for n, t in sorted(outcomes.items())},
    }


def _model_provenance() -> dict[str, dict[str, str]]:
    from repro.core.models.pretrained import EMBEDDED_MODELS
    from repro.ground import resources

    return {
        name: {"fixture": m.fixture, "sha256": resources.EMBEDDED_FIXTURES[m.fixture].sha256}
        for name, m in EMBEDDED_MODELS.items()
    }


_MARK_RE = re.compile(r"mark\.claim\(([^)]*)\)")


def encoded_claim_ids(claims_dir: Path) -> set[str]:
    """IDs carried by some `@pytest.mark.claim(...)` in claims/ — read from the source, because
    under xdist the controller never collects, and -k/-m deselect before we would see them."""
    ids: set[str] = set()
    for path in sorted(claims_dir.glob("**/*.py")):
        for args in _MARK_RE.findall(path.read_text("utf-8")):
            ids.update(i for i in re.findall(r"[\"']([A-Z]{2}-[0-9A-Za-z.]+)[\"']", args) if i in catalogue.CATALOGUE)
    return ids


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if config.getoption("--plan") and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK  # a plan is the whole job of a --plan run
    if _is_worker(config) or _outcomes_key not in config.stash:
        return
    outcomes = config.stash[_outcomes_key]
    if not outcomes:
        return  # no claim tests ran (e.g. `pytest tests/`): leave any existing report alone
    results = reporting.build_results(outcomes.values(), encoded_claim_ids(config.rootpath / "claims"))
    run = run_metadata(config, outcomes)
    out = _artifacts_dir(config)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    data = reporting.to_json(results, run)
    atomic_write_json(out / "claims.json", data)
    (out / PARTIAL).unlink(missing_ok=True)
    history = (out if config.getoption("--artifacts") is not None else config.rootpath / "artifacts") / "history.jsonl"
    _append_history(history, reporting.history_rows(results, run))
    against = _against_baseline(config, data)
    base, comparison = config.stash.get(_baseline_key, (None, None))
    md = reporting.to_markdown(results, run, base=base, comparison=comparison)
    if against is not None:
        md += "\n## Against the committed baseline\n\n```\n" + "\n".join(against[1]) + "\n```\n"
    atomic_write_text(out / "report.md", md)
    config.stash[_results_key] = (results, run, against)
    if (
        against is not None
        and against[0]
        and config.getoption("--baseline") == "check"
        and session.exitstatus == pytest.ExitCode.OK
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _append_history(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append this run's per-claim lines to artifacts/history.jsonl in one write (`repro history`)."""
    if not rows:
        return
    import json

    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def _against_baseline(config: pytest.Config, data: dict[str, Any]) -> tuple[bool, list[str]] | None:
    """(regressed, lines) against the committed baseline of this run's configuration; None when
    --baseline off. A configuration without a baseline compares nothing and says so."""
    if config.getoption("--baseline") == "off":
        return None
    from repro.harness import baseline, compare

    try:
        base = baseline.load_for(data["run"])
    except ReproError as err:
        return False, [f"baseline: {err}"]
    name = baseline.path_for(data["run"]).name
    if base is None:
        return False, [
            f"no committed baseline for {name.removesuffix('.json')}: nothing compared "
            "(`repro baseline update artifacts/claims.json` writes one)"
        ]
    result = compare.compare(base, data)
    config.stash[_baseline_key] = (base, result)
    lines = compare.lines(result, f"repro/harness/baselines/{name}", "this run")
    if result.regressed:
        worst = (
            [f"{v['claim']}: verdict {v['a']} -> {v['b']}" for v in result.verdicts if v["regression"]]
            + [
                f"{d['claim']} '{d['name']}': {d['a']:.4g} -> {d['b']:.4g} "
                + (f"(paired p {d['paired']['p']:.2g})" if d.get("paired") else f"({d['z']:.1f} noise scales)")
                for d in result.drifts
            ]
            + [f"{r['claim']} '{r['name']}': {r['role']} record lost" for r in result.lost]
        )
        lines.insert(
            0,
            "REGRESSED against the baseline: "
            + "; ".join(worst)
            + " — if intended, `repro baseline update artifacts/claims.json` in the same commit",
        )
    return result.regressed, lines


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and config.getoption("keyword", ""):
        terminalreporter.write_line(
            f'-k {config.getoption("keyword")!r} selected no test. Claim IDs are keywords (`-k SK-1`, `-k "BB-4 or CA-"`); '
            "`--claim ID[,ID…]` selects exact IDs; `repro plan` lists the claims.",
            yellow=True,
        )
    planned = config.stash.get(_plan_key, None)
    if planned is not None:
        terminalreporter.section(f"plan ({config.getoption('--profile')} profile; nothing was run)")
        for line in planned:
            terminalreporter.write_line(line)
        return
    stashed = config.stash.get(_results_key, None)
    if not stashed:
        return
    results, run, against = stashed
    tr = terminalreporter
    tr.section("claims")
    for line in reporting.terminal_lines(results, width=tr._tw.fullwidth, run=run):
        tr.write_line(line)
    if against is not None:
        regressed, lines = against
        head = [ln for ln in lines if ln.startswith(("REGRESSED", "no committed", "baseline:"))]
        counts = [ln for ln in lines if ln.startswith(("verdict changes", "records drifted", "asserted records lost"))]
        for line in head + counts:
            tr.write_line(line, red=regressed, bold=regressed)
        if not head and not regressed:
            tr.write_line("against the committed baseline: no regression (details at the end of report.md)")
    tr.write_line(f"written: {_artifacts_dir(config) / 'claims.json'}, {_artifacts_dir(config) / 'report.md'}")
    if config.getoption("--artifacts") is None and selection_label(config) is not None:
        tr.write_line(
            f"(a selection of claims: the last full run's report stays at "
            f"{_artifacts_dir(config).parent.parent / 'report.md'})"
        )
