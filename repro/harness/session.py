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

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from repro.ground.runtime import ReproError, atomic_write_json, atomic_write_text
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
            collection.order_groups(items)

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
        (`pretrained.prepare_in_background`), when a selected test reads the `pretrained` fixture
        (once per run: not in an xdist worker but the first, not under --plan)."""
        config = self.config
        if config.getoption("--plan") or getattr(config, "workerinput", {}).get("workerid", "gw0") != "gw0":
            return
        if not any("pretrained" in getattr(item, "fixturenames", ()) for item in session.items):
            return
        from repro.core.models.pretrained import prepare_in_background

        try:
            self._prepare = prepare_in_background(run_models(config))
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

    # ----------------------------------------------------------------------- the end of the run

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = self.config
        if config.getoption("--plan") and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # a plan is the whole job of a --plan run
        if self.worker:
            if self.collection_seen:  # to the controller, through xdist's channel (pytest_testnodedown)
                config.workeroutput[WORKER_CLAIM_IDS] = sorted(self.claim_ids_seen)
            return
        if not self.outcomes:
            return  # no claim tests ran (e.g. `pytest tests/`): leave any existing report alone
        results = reporting.build_results(self.outcomes.values(), self.encoded())
        run = run_metadata(config, self.start, self._durations())
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

    def _against_baseline(self, data: dict[str, Any]) -> tuple[bool, list[str]] | None:
        """(regressed, lines) against the committed baseline of this run's configuration; None when
        --baseline off. A configuration without a baseline compares nothing and says so."""
        if self.config.getoption("--baseline") == "off":
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
            tr.write_line(
                f"(a selection of claims: the last full run's report stays at {out.parent.parent / 'report.md'})"
            )

    def pytest_unconfigure(self) -> None:
        """Stop a background model build still running when the run ends (an interrupted run, or one
        whose tests never loaded the model): its writes are atomic, the next run starts it again."""
        proc = self._prepare
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _append_history(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append this run's per-claim lines to artifacts/history.jsonl in one write (`repro history`)."""
    if not rows:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
