"""One claims run's state, as a plugin object registered for the run (`ClaimsSession`): the claim
IDs collection saw, each claim test's outcome, and the files written from them.

Data flow (the same under `pytest -n N`):
  test ── claim.record()/figure()/table() ──> item.user_properties
       ── pytest's TestReport (serialised by xdist) ──> the controller's pytest_runtest_logreport
       ── after each claim test ──> artifacts/claims.partial.json
       ── pytest_sessionfinish (controller only) ──> artifacts/claims.json, report.md, history.jsonl
  collection ── the claim IDs of every collected test (before -k / -m / --claim deselect) ──>
       this process's session, or, from an xdist worker, its `workeroutput` ──> the controller's
       pytest_testnodedown
Figures are PNG files written (atomically) by whichever process ran the test; only their paths
travel. Artifacts are written only when the run contained claim tests, so running `pytest tests/`
never overwrites a claims report.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable

import pytest

from repro.ground import progress
from repro.ground.cache import atomic_write_text
from repro.ground.runtime import ReproError, atomic_write_json
from repro.harness import catalogue, collection, writers
from repro.harness import report as reporting
from repro.harness.claim import PROP_CLAIMS, PROP_CORPUS, PROP_FIGURE, PROP_RECORD, PROP_TABLE
from repro.harness.options import artifacts_dir, collects_every_claim_file, is_worker, run_models, selection_label
from repro.harness.provenance import run_metadata

NAME = "repro-claims-session"  # the name it is registered under (`of`)
WORKER_CLAIM_IDS = "repro_claim_ids"  # its key in an xdist worker's workeroutput
PARTIAL = "claims.partial.json"


def of(config: pytest.Config) -> ClaimsSession:
    """The run's session object (registered by the plugin's pytest_configure)."""
    return config.pluginmanager.get_plugin(NAME)


def first_line(text: str) -> str:
    """The line of a failure's text that says what failed: its first 'E ' line, else its last."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("E ")]
    return (errs[0][2:].strip() if errs else (lines[-1] if lines else ""))[:300]


def _skip_reason(rep: pytest.TestReport) -> str:
    lr = rep.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2]).removeprefix("Skipped: ")
    return str(lr or "")


class ClaimsSession:
    """A claims run's state. Registered in every process of the run: where a process collects
    (a run without xdist, each xdist worker) it notes the claim IDs collection saw; an xdist worker
    hands them to the controller in its `workeroutput`; the controller (or the single process)
    gathers the claim tests' outcomes from their reports and writes the artifacts."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker = is_worker(config)
        self.start = time.time()
        self.outcomes: dict[str, reporting.TestOutcome] = {}  # by node ID
        self.claim_ids_seen: set[str] = set()  # on collected claim tests, this process's or the workers'
        self.collection_seen = False  # whether those IDs are known yet (under xdist: a worker reported)
        self.whole_collection = collects_every_claim_file(config)
        self.plan_lines: list[str] | None = None  # --plan: what the plan printed
        self.baseline: tuple[dict[str, Any] | None, Any] = (None, None)  # (committed baseline, comparison)
        self.written: tuple[list[reporting.ClaimResult], dict[str, Any], Any] | None = None
        self._run_static: dict[str, Any] | None = None
        self._prepare: subprocess.Popen | None = None  # the background model build
        # the claim tests selected to run (node ID -> claim IDs; known where this process collects,
        # not in an xdist controller) and those whose outcome is final: what an interrupt cut short
        self.selected: dict[str, list[str]] = {}
        self.finished: set[str] = set()
        self.interrupted: str | None = None  # why the run was cut short (pytest_keyboard_interrupt)
        self._progress: _TerminalLines | None = None  # repro.progress lines onto the terminal

    # ----------------------------------------------------------------------- progress

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Show `repro.progress` (a training loop's and a model build's progress lines) on
        pytest's terminal while a test runs, as pytest's live logging does, capture suspended for
        the line; not under -q, nor in an xdist worker (its terminal is the controller's)."""
        if self.worker or self.config.get_verbosity() < 0:
            return
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        if tr is None:
            return
        self._progress = _TerminalLines(tr, capman)
        logger = logging.getLogger(progress.LOGGER)
        logger.addHandler(self._progress)
        logger.setLevel(logging.INFO)

    # ----------------------------------------------------------------------- collection

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Unknown claim IDs stop the run at collection, with the closest known IDs suggested.
        Claim tests get their keywords and xdist group before xdist reads the markers; the IDs
        collection saw are noted before anything is deselected."""
        collection.prepare(items, PROP_CLAIMS)
        self.claim_ids_seen.update(cid for it in items for cid in collection.claim_ids(it))
        self.collection_seen = True
        collection.select_claims(config, items)
        if config.getoption("dist", "no") == "loadgroup":
            from repro.harness import baseline

            collection.order_groups(items, baseline.durations(baseline.REFERENCE_KEY))

    @pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_plan(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """--plan: cost the collected claims (repro.harness.plan, restricted to their topics) on the
        run's --corpus and deselect every test, so nothing runs."""
        if not config.getoption("--plan") or self.worker:
            return
        from repro.harness import plan as planning

        ids = sorted({cid for it in items for cid in collection.claim_ids(it)})
        try:
            full = planning.plan(
                config.getoption("--profile"),
                corpus=config.getoption("--corpus"),
                device=planning.plan_device(config.getoption("--device")),
            )
        except ReproError as err:  # e.g. a --corpus directory without train documents
            raise pytest.UsageError(str(err)) from None
        self.plan_lines = [f"claims selected: {len(ids)} ({', '.join(ids)})"] + planning.lines(
            planning.for_claims(full, ids)
        )
        config.hook.pytest_deselected(items=list(items))
        items[:] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """A cold run's embedded models are dequantised in a background process from the start
        (`gguf_cache.prepare_in_background`), when a selected test reads the `pretrained` fixture
        (once per run: not in an xdist worker but the first, not under --plan)."""
        config = self.config
        self.selected = {
            collection.plain_nodeid(it.nodeid): collection.claim_ids(it)
            for it in session.items
            if collection.claim_ids(it)
        }
        if config.getoption("--plan") or getattr(config, "workerinput", {}).get("workerid", "gw0") != "gw0":
            return
        models = selected_models(session.items, run_models(config))
        if not models:
            return
        from repro.core.models.gguf_cache import prepare_in_background

        try:
            self._prepare = prepare_in_background(models)
        except ReproError as err:  # e.g. a cache path that cannot be used: one line, not an internal error
            raise pytest.UsageError(str(err)) from None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """An xdist worker finished: the claim IDs its collection saw (its `workeroutput`)."""
        ids = getattr(node, "workeroutput", {}).get(WORKER_CLAIM_IDS)
        if ids is not None:
            self.claim_ids_seen.update(ids)
            self.collection_seen = True

    def encoded(self) -> set[str]:
        """The claim IDs some claim test carries, which a run that did not select them reports as
        "not run" rather than "not yet encoded": those collection saw. Where the run cannot tell —
        its collection left out files of claims/ (`collects_every_claim_file`), or no xdist worker
        has reported yet (a partial file) — every catalogue ID counts: undecided reads "not run"."""
        if self.collection_seen and self.whole_collection:
            return set(self.claim_ids_seen)
        return self.claim_ids_seen | set(catalogue.CATALOGUE)

    # ----------------------------------------------------------------------- outcomes

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        """Before each claim test, a line naming it ("now running <nodeid> (IDs)"), through
        pytest's terminal reporter: a claim may work for minutes before its letter appears, and
        the line tells work from a hang. Not under -q (nor -v, whose line names the test already),
        nor under xdist (whose workers' lines interleave)."""
        config = self.config
        tr = config.pluginmanager.get_plugin("terminalreporter")
        ids = self.selected.get(nodeid)
        if tr is None or not ids or config.get_verbosity() != 0 or config.pluginmanager.has_plugin("dsession"):
            return
        tw = tr._tw
        if tr.currentfspath is not None and getattr(tr, "_show_progress_info", False):
            tr._write_progress_information_filling_space()  # the previous line's "[ 40%]"
        if tw.width_of_current_line:
            tw.line()
        tw.write(f"now running {nodeid} ({', '.join(ids)})")
        tr.currentfspath = None  # pytest ends the line and starts the test's own: "claims/x.py "
        if self._progress is not None:
            self._progress.prefix = nodeid.split("::")[0] + " "

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rep = report
        props = dict((k, v) for k, v in rep.user_properties if k == PROP_CLAIMS)
        if PROP_CLAIMS not in props or self.worker:
            return
        nodeid = collection.plain_nodeid(rep.nodeid)
        t = self.outcomes.get(nodeid)
        if t is None:
            t = self.outcomes[nodeid] = reporting.TestOutcome(nodeid, list(props[PROP_CLAIMS]), "passed")
        t.duration += rep.duration
        wasxfail = getattr(rep, "wasxfail", None)
        if rep.when == "call" or (rep.when == "setup" and not rep.passed):
            self.finished.add(nodeid)
            if rep.failed:
                t.outcome = "failed" if rep.when == "call" else "error"
                t.reason = first_line(rep.longreprtext)
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
            t.outcome, t.reason = "error", first_line(rep.longreprtext)
        if rep.when == "teardown":
            self._write_partial()

    def _durations(self) -> dict[str, float]:
        return {n: t.duration for n, t in self.outcomes.items()}

    def _write_partial(self) -> None:
        """After each claim test, what the run has decided so far, as claims.json's schema with
        `run.partial` set, in artifacts/claims.partial.json (atomic). A run killed from outside (a
        time limit, a lost machine) leaves it behind; a run that ends writes claims.json and
        removes it. The run fields that cannot change during a run (git, packages, models) are
        read once."""
        if self._run_static is None:
            self._run_static = run_metadata(self.config, self.start, {})
        run = {
            **self._run_static,
            "wall_time_s": round(time.time() - self.start, 2),
            "test_durations_s": {n: round(d, 3) for n, d in sorted(self._durations().items())},
            "partial": f"written after {len(self.outcomes)} claim tests; the run had not ended",
        }
        out = artifacts_dir(self.config)
        out.mkdir(parents=True, exist_ok=True)
        results = reporting.build_results(self.outcomes.values(), self.encoded())
        atomic_write_json(out / PARTIAL, writers.to_json(results, run))

    # ----------------------------------------------------------------------- an interrupted run

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo) -> None:
        """SIGINT (or a KeyboardInterrupt raised in a test): the run ends now; what it had not
        finished reads "interrupted", not "not run" (pytest_sessionfinish)."""
        self.interrupted = f"interrupted ({excinfo.typename})"

    def cut_short(self) -> list[str]:
        """The claim tests the run selected (or started) but did not finish: empty unless the run was
        interrupted. Under xdist the controller knows only the tests that started."""
        if self.interrupted is None:
            return []
        return sorted((set(self.selected) | set(self.outcomes)) - self.finished)

    def _results(self) -> list[reporting.ClaimResult]:
        """The claims' results from the tests that finished; after an interrupt, every claim with a
        selected test that did not finish reads `report.INTERRUPTED` (a failure already seen stays
        "failed": it is decided whatever the rest would have said)."""
        cut = self.cut_short()
        done = [t for n, t in self.outcomes.items() if n not in cut]
        results = reporting.build_results(done, self.encoded())
        ids = {cid for n in cut for cid in (self.selected.get(n) or self.outcomes[n].claim_ids)}
        for r in results:
            if r.spec.id in ids and r.verdict != reporting.FAILED:
                r.verdict = reporting.INTERRUPTED
        return results

    # ----------------------------------------------------------------------- the end of the run

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = self.config
        if config.getoption("--plan") and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # a plan is the whole job of a --plan run
        if self.worker:
            if self.collection_seen:  # to the controller, through xdist's channel (pytest_testnodedown)
                config.workeroutput[WORKER_CLAIM_IDS] = sorted(self.claim_ids_seen)
            return
        if session.shouldstop and self.interrupted is None and self.cut_short_by_stop(session):
            self.interrupted = f"stopped early ({session.shouldstop})"
        if not self.outcomes and not self.cut_short():
            return  # no claim tests ran (e.g. `pytest tests/`): leave any existing report alone
        results = self._results()
        run = run_metadata(config, self.start, self._durations())
        if self.interrupted is not None:
            cut = self.cut_short()
            run["interrupted"] = True
            run["interrupted_by"] = self.interrupted
            run["interrupted_tests"] = cut
            by_claim: dict[str, list[str]] = {}
            for n in cut:
                for cid in self.selected.get(n) or self.outcomes[n].claim_ids:
                    by_claim.setdefault(cid, []).append(n)
            run["interrupted_claims"] = by_claim
        out = artifacts_dir(config)
        (out / "figures").mkdir(parents=True, exist_ok=True)
        data = writers.to_json(results, run)
        atomic_write_json(out / "claims.json", data)
        (out / PARTIAL).unlink(missing_ok=True)
        history = (
            out if config.getoption("--artifacts") is not None else config.rootpath / "artifacts"
        ) / "history.jsonl"
        _append_history(history, writers.history_rows(results, run))
        against = self._against_baseline(data)
        base, comparison = self.baseline
        md = writers.to_markdown(results, run, base=base, comparison=comparison)
        if against is not None:
            md += "\n## Against the committed baseline\n\n```\n" + "\n".join(against[1]) + "\n```\n"
        atomic_write_text(out / "report.md", md)
        self.written = (results, run, against)
        if (
            against is not None
            and against[0]
            and config.getoption("--baseline") == "check"
            and session.exitstatus == pytest.ExitCode.OK
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def cut_short_by_stop(self, session: pytest.Session) -> bool:
        """`-x` / `--maxfail` stopped the run (session.shouldstop) before every selected test ran."""
        return bool(set(self.selected) - self.finished)

    def _against_baseline(self, data: dict[str, Any]) -> tuple[bool, list[str]] | None:
        """(regressed, lines) against the committed baseline of this run's configuration; None when
        --baseline off. A configuration without a baseline compares nothing and says so; nor does an
        interrupted run (what it did not finish is no evidence either way)."""
        if self.config.getoption("--baseline") == "off":
            return None
        if data["run"].get("interrupted"):
            n = len(data["run"].get("interrupted_tests") or [])
            return False, [
                f"baseline: not compared: the run was {self.interrupted} with {n} selected claim "
                f"test{'s' if n != 1 else ''} unfinished; an interrupted run shows neither a regression nor "
                "its absence (run it to the end to compare)"
            ]
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
        self.baseline = (base, result)
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

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int) -> None:
        config, tr = self.config, terminalreporter
        if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and config.getoption("keyword", ""):
            tr.write_line(
                f"-k {config.getoption('keyword')!r} selected no test. Claim IDs are keywords (`-k SK-1`, "
                '`-k "BB-4 or CA-"`); `--claim ID[,ID…]` selects exact IDs; `repro plan` lists the claims.',
                yellow=True,
            )
        if self.plan_lines is not None:
            tr.section(f"plan ({config.getoption('--profile')} profile; nothing was run)")
            for line in self.plan_lines:
                tr.write_line(line)
            return
        if not self.written:
            return
        results, run, against = self.written
        tr.section("claims")
        for line in writers.terminal_lines(results, width=tr._tw.fullwidth, run=run):
            tr.write_line(line)
        if against is not None:
            regressed, lines = against
            head = [ln for ln in lines if ln.startswith(("REGRESSED", "no committed", "baseline:"))]
            counts = [
                ln
                for ln in lines
                if ln.startswith(("verdict changes", "  not run in", "records drifted", "asserted records lost"))
            ]
            for line in head + counts:
                tr.write_line(line, red=regressed, bold=regressed)
            if not head and not regressed:
                tr.write_line("against the committed baseline: no regression (details at the end of report.md)")
        out = artifacts_dir(config)
        tr.write_line(f"written: {out / 'claims.json'}, {out / 'report.md'}")
        if config.getoption("--artifacts") is None and selection_label(config) is not None:
            full = out.parent.parent / "report.md"
            if full.exists():
                tr.write_line(f"(a selection of claims: the last full run's report stays at {full})")
            else:
                tr.write_line(f"(a selection of claims: no full run's report exists yet; a full run writes {full})")

    def pytest_unconfigure(self) -> None:
        """Stop a background model build still running when the run ends (an interrupted run, or one
        whose tests never loaded the model): its writes are atomic, the next run starts it again."""
        if self._progress is not None:
            logger = logging.getLogger(progress.LOGGER)
            logger.removeHandler(self._progress)
            logger.setLevel(logging.NOTSET)
            self._progress = None
        proc = self._prepare
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


class _TerminalLines(logging.Handler):
    """A logging handler that writes each record as a line on pytest's terminal, with output
    capture suspended for it (what pytest's live-log handler does)."""

    def __init__(self, tr: Any, capman: Any) -> None:
        super().__init__(logging.INFO)
        self.tr, self.capman = tr, capman
        self.prefix = ""  # the running claim test's file, as pytest's line shows it

    def emit(self, record: logging.LogRecord) -> None:
        try:
            ctx = self.capman.global_and_fixture_disabled() if self.capman is not None else contextlib.nullcontext()
            with ctx:
                tw = self.tr._tw
                if tw.width_of_current_line:
                    tw.line()
                tw.line("  … " + record.getMessage())
                tw.write(self.prefix)  # the test's letter then follows its file's name, as before
        except Exception:  # a progress line must never fail a test
            self.handleError(record)


def selected_models(items: Iterable[pytest.Item], models: list[str]) -> list[str]:
    """The run's pretrained models (`models`, in order) that its selected tests read: a test
    parametrised by `model_name` reads its own; one that reads `pretrained` without it (a test over
    `model_names`) reads them all. What `prepare_in_background` builds: a run of SmolLM2's tests
    alone never starts Gemma's build."""
    wanted: set[str] = set()
    for item in items:
        if "pretrained" not in getattr(item, "fixturenames", ()):
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "model_name" in params:
            wanted.add(str(params["model_name"]))
        else:
            return list(models)
    return [m for m in models if m in wanted]


def _append_history(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append this run's per-claim lines to artifacts/history.jsonl in one write (`repro history`)."""
    if not rows:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
