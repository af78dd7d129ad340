"""The files and lines a claims run writes from its results (`repro.harness.report`): claims.json,
the per-claim lines of artifacts/history.jsonl, report.md and the terminal table.

claims.json keeps everything that depends on the run's circumstances (wall times, dates,
durations) under "run", so two runs of the same command differ only there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro.harness.catalogue import SOURCES, TOPICS
from repro.harness.report import (
    CONTRADICTED,
    FAILED,
    INCONCLUSIVE,
    INTERRUPTED,
    NOT_ENCODED,
    NOT_RUN,
    PARTLY,
    POWER_ENOUGH,
    REPRODUCED,
    SCHEMA_VERSION,
    SIZE_ENOUGH,
    ClaimResult,
    fmt,
    record_keys,
    summary,
)

# --------------------------------------------------------------------------- claims.json


def to_json(results: list[ClaimResult], run: dict[str, Any]) -> dict[str, Any]:
    claims = []
    for r in results:
        s = r.spec
        claims.append(
            {
                "id": s.id,
                "topic": s.topic,
                "source": s.source,
                "section": s.section,
                "statement": s.statement,
                "source_values": s.source_values,
                "verdict": r.verdict,
                # the text the claim's tests read (Claim.corpus); the run's --corpus is run.corpus
                "corpus": r.corpus(),
                "tests": [
                    {
                        "nodeid": t.nodeid,
                        "outcome": t.outcome,
                        "verdict": t.verdict(),
                        "power": t.power(),
                        "size": t.size(),
                        "reason": t.reason,
                        # why an xfail reads inconclusive, not contradicted (None otherwise)
                        "undecided": t.undecided(),
                    }
                    for t in r.tests
                ],
                "power": r.power(),
                # the family-wise size of a "contradicted" reading (Claim.power's size)
                "size": r.size(),
                "controls": [
                    {"name": c["name"], "key": c["key"], "rejected": c["within"] is False, "margin": c.get("margin")}
                    for c in r.controls()
                ],
                "records": r.records(),
                "tables": r.tables(),
                "figures": r.figures(),
                "reasons": r.reasons(),
            }
        )
    return {"schema": SCHEMA_VERSION, "run": run, "summary": summary(results), "claims": claims}


# --------------------------------------------------------------------------- history.jsonl


def history_rows(results: list[ClaimResult], run: dict[str, Any]) -> list[dict[str, Any]]:
    """One line per claim this run decided, for artifacts/history.jsonl: commit, date, profile,
    device, dtype, verdict, the asserted (headline) values and the wall time."""
    rows = []
    for r in results:
        if r.verdict in (NOT_ENCODED, NOT_RUN, INTERRUPTED):
            continue
        checks = {
            x["key"]: x["measured"]
            for x in r.records()
            if x.get("role") == "check"
            and isinstance(x["measured"], (int, float))
            and not isinstance(x["measured"], bool)
        }
        rows.append(
            {
                "claim": r.spec.id,
                "commit": run.get("git_commit"),
                "dirty": run.get("git_dirty"),
                "date": run.get("started"),
                "profile": run.get("profile"),
                "device": run.get("device"),
                "model": run.get("model"),
                "selection": run.get("selection"),
                "dtype": (run.get("dtype_policy") or {}).get("auto"),
                "verdict": r.verdict,
                "power": r.power(),
                "size": r.size(),
                "headline": checks,
                "wall_s": round(r.wall_s(), 2),
            }
        )
    return rows


# --------------------------------------------------------------------------- report.md


def cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _tol(rec: dict[str, Any]) -> str:
    """Our threshold as a reader sees it (the source's number is its own column)."""
    c, tol, e = rec["compare"], rec["tol"], rec["expected"]
    if c == "none" or (c != "true" and e is None):  # nothing to compare with (a context record)
        return "(context)"
    if c == "true":
        return "holds"
    if c in ("le", "ge"):
        op = "≤" if c == "le" else "≥"
        return f"{op} {fmt(e)}" + (f" {'+' if c == 'le' else '−'} {fmt(tol)}" if tol else "")
    return f"{fmt(e)} ±{'rel ' if c == 'rel' else ''}{fmt(tol or 0.0)}"


def _role(rec: dict[str, Any]) -> str:
    role = rec.get("role", "context")
    if role == "control":
        margin = rec.get("margin")
        return (
            "control "
            + ("rejected" if rec["within"] is False else "PASSED")
            + (f" (margin {fmt(margin)})" if isinstance(margin, (int, float)) else "")
        )
    return {"check": "asserted", "power": "power", "context": ""}.get(role, role)


def _source(rec: dict[str, Any]) -> str:
    return fmt(rec.get("source"))


_MARK = {True: "✓", False: "✗", None: ""}


def headline(r: ClaimResult) -> dict[str, Any] | None:
    """The record that decided the claim's verdict, for one-line views: where the claim is not
    reproduced (a strict xfail, a failure, partly), the first asserted check that failed, among the
    tests that did not reproduce first; otherwise its first asserted check; else its first record."""
    recs = r.records()
    checks = [x for x in recs if x.get("role") == "check"]
    if r.verdict in (CONTRADICTED, INCONCLUSIVE, PARTLY, FAILED):
        owners = [t for t in r.tests for x in t.records if x["claim"] == r.spec.id]  # records() order
        failing = [
            (t.verdict() == REPRODUCED, i)
            for i, (t, x) in enumerate(zip(owners, recs))
            if x.get("role") == "check" and x.get("within") is False
        ]
        if failing:
            return recs[min(failing)[1]]
    return (checks or recs or [None])[0]


def headline_text(rec: dict[str, Any] | None) -> str:
    """'measured vs threshold ✗ — name': the number first, so a cut line still shows it."""
    if rec is None:
        return ""
    mark = {True: " ✓", False: " ✗"}.get(rec.get("within"), "")
    return (
        f"{fmt(rec['measured'])}{(' ' + rec['unit']) if rec.get('unit') else ''} vs {_tol(rec)}{mark} — {rec['name']}"
    )


def short_statement(text: str, width: int = 90) -> str:
    """A claim's statement cut at a word boundary to about `width` characters."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[:width].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + " …"


def _baseline_index(base: dict[str, Any] | None, comparison: Any) -> dict[str, dict]:
    """Per claim a short 'vs baseline' cell, per (claim, record) the baseline's value and a drift mark."""
    out: dict[str, dict] = {"claims": {}, "records": {}}
    if base is None:
        return out
    for c in base.get("claims", []):
        for rec, key in zip(c.get("records", []), record_keys(c.get("records", []))):
            out["records"].setdefault((c["id"], key), {"measured": rec["measured"], "mark": ""})
    if comparison is not None:
        for v in comparison.verdicts:
            out["claims"][v["claim"]] = f"verdict was {v['a']}" + (" (REGRESSION)" if v["regression"] else "")
        drifted: dict[str, int] = {}
        for d in comparison.drifts:
            drifted[d["claim"]] = drifted.get(d["claim"], 0) + 1
            if (d["claim"], d["key"]) in out["records"]:
                out["records"][(d["claim"], d["key"])]["mark"] = (
                    f" DRIFT p {d['paired']['p']:.2g}" if d.get("paired") else f" DRIFT {d['z']:.1f}×"
                )
        for cid, n in drifted.items():
            out["claims"][cid] = (out["claims"].get(cid, "") + f" {n} drifted").strip()
    return out


def to_markdown(
    results: list[ClaimResult],
    run: dict[str, Any],
    figures_rel: str = "figures",
    *,
    base: dict[str, Any] | None = None,
    comparison: Any = None,
) -> str:
    """report.md: a one-row-per-claim summary, then one section per claim with every record
    (source · threshold · baseline · measured). `base`/`comparison`: the committed baseline of
    this configuration and `repro.harness.compare.compare(base, this run)`, when there is one."""
    counts = summary(results)
    lines = [
        "# repro — claims report",
        "",
        *([interrupted_line(run), ""] if run.get("interrupted") else []),
        f"Profile **{run.get('profile')}**, device **{run.get('device')}**, "
        f"commit `{run.get('git_commit')}`{' (dirty)' if run.get('git_dirty') else ''}, "
        f"torch {run.get('packages', {}).get('torch')}, transformers {run.get('packages', {}).get('transformers')}, "
        f"wall time {fmt(run.get('wall_time_s'))} s{_budget(run)}.",
        f"Dtype policy: {_dtype_line(run)}.",
        f"Corpus (`--corpus`): {run.get('corpus', 'brown')}; each claim below says what it read.",
        "",
        " · ".join(f"{v}: **{n}**" for v, n in counts.items()),
        "",
        "## Summary",
        "",
        "Verdicts: *contradicted* — not seen although the test's power at a declared effect (the source's "
        f"number, an effect of interest we name, or the effect expected at our budget) was ≥ {POWER_ENOUGH} "
        f"and the family-wise size of that reading (a true claim read as not reproduced) ≤ {SIZE_ENOUGH}; "
        "*inconclusive at this scale* — not seen, and the power was lower, the size larger, or the bar ours "
        "while the effect is significant in the claimed direction: the power record names the sizes that "
        "would decide it. `threshold` is ours; `source` is the "
        "source's number. Rows marked *asserted* decided the test; a *control* is the same assertion on an "
        "input where the effect must be absent, and must be rejected.",
        "",
        "| claim | states | verdict | decided by: measured vs threshold | source | power / size | controls "
        "(smallest margin) | vs baseline | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    bl = _baseline_index(base, comparison)
    for r in results:
        h = headline(r)
        cells = ("", "") if h is None else (cell(headline_text(h)), _source(h))
        wall = f"{r.wall_s():.1f}" if r.tests else ""
        lines.append(
            f"| {r.spec.id} | {cell(short_statement(r.spec.statement))} | {r.verdict} | {cells[0]} "
            f"| {cells[1]} | {_power_cell(r)} | {_controls_cell(r)} "
            f"| {bl['claims'].get(r.spec.id, '—' if base is None else '=')} | {wall} |"
        )
    lines += ["", "## Claims", ""]
    topic = None
    for r in results:
        s = r.spec
        if s.topic != topic:
            topic = s.topic
            lines += [f"### {s.topic} — {TOPICS.get(s.topic, '')}", ""]
        lines += [
            f"#### {s.id} — {r.verdict}",
            "",
            f"*{SOURCES.get(s.source, s.source)}* ({s.source}), {s.section}.",
            "",
            f"> {s.statement}",
            "",
        ]
        if s.source_values:
            lines += [f"Source's numbers: {s.source_values}", ""]
        if r.corpus():
            lines += [f"Text read: {r.corpus()}.", ""]
        if r.tests:
            lines += [
                f"Wall time: {r.wall_s():.1f} s. History of this claim over runs: `repro history {s.id}` "
                f"(figure: {figures_rel}/history_{s.id}.png).",
                "",
            ]
        if r.verdict == NOT_ENCODED:
            lines += ["_Not yet encoded: no test carries this claim ID._", ""]
            continue
        if r.verdict == NOT_RUN:
            lines += ["_Encoded in claims/, but not selected in this run._", ""]
            continue
        if r.verdict == INTERRUPTED:
            cut = [n for n in run.get("interrupted_tests") or [] if n in _claim_nodeids(r, run)]
            lines += [
                "_Selected, but the run was interrupted before "
                + (f"`{'`, `'.join(cut)}` finished" if cut else "its tests finished")
                + ": undecided._",
                "",
            ]
        for reason in r.reasons():
            lines += [f"- reason: {reason}"]
        for t in r.tests:
            if t.undecided():
                lines += [f"- not contradicted (`{t.nodeid.split('::')[-1]}`): {t.undecided()}"]
        recs = r.records()
        if recs:
            lines += [
                "",
                "| record | source | threshold | baseline | measured | ok | role | dtype | why this threshold |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for rec in recs:
                b = bl["records"].get((s.id, rec["key"]))
                lines.append(
                    f"| {cell(rec['name'])} | {_source(rec)} | {_tol(rec)} | "
                    f"{'—' if b is None else fmt(b['measured']) + b['mark']} | {fmt(rec['measured'])}"
                    f"{(' ' + rec['unit']) if rec['unit'] else ''} | {_MARK[rec['within']]} "
                    f"| {_role(rec)} | {rec.get('dtype', '')} | {cell(rec['why'])} |"
                )
        for tb in r.tables():
            lines += ["", f"**{tb['title']}**", ""]
            cols = tb["columns"]
            lines.append("| " + " | ".join(cell(c) for c in cols) + " |")
            lines.append("|" + "---|" * len(cols))
            for row in tb["rows"]:
                lines.append("| " + " | ".join(cell(fmt(v)) for v in row) + " |")
        for fig in r.figures():
            lines += ["", f"![{s.id}]({figures_rel}/{Path(fig).name})"]
        lines += ["", "Tests: " + ", ".join(f"`{t.nodeid}` ({t.outcome})" for t in r.tests), ""]
    return "\n".join(lines) + "\n"


def interrupted_line(run: dict[str, Any]) -> str:
    """report.md's first line after an interrupt: what cut the run short and what it left undone."""
    cut = run.get("interrupted_tests") or []
    return (
        f"**INTERRUPTED**: this run was {run.get('interrupted_by', 'interrupted')} after "
        f"{fmt(run.get('wall_time_s'))} s, with {len(cut)} selected claim test{'s' if len(cut) != 1 else ''} "
        "unfinished: their claims read *interrupted*, and nothing was compared with the committed baseline."
    )


def _claim_nodeids(r: ClaimResult, run: dict[str, Any]) -> set[str]:
    """Node IDs of a claim's tests: those that finished, and the cut-short ones of its file (a test
    that did not finish left no outcome that would name its claim)."""
    return {t.nodeid for t in r.tests} | set(run.get("interrupted_claims", {}).get(r.spec.id, []))


def _power_cell(r: ClaimResult) -> str:
    """'power / size' of the verdict's tests ('—' without a power)."""
    p, sz = r.power(), r.size()
    return "—" if p is None else f"{fmt(p)} / {fmt(sz)}"


def _controls_cell(r: ClaimResult) -> str:
    cs = r.controls()
    if not cs:
        return "none" if r.verdict in (REPRODUCED, PARTLY) else ""
    rejected = sum(c["within"] is False for c in cs)
    margins = [c["margin"] for c in cs if isinstance(c.get("margin"), (int, float))]
    return f"{rejected}/{len(cs)} rejected" + (f" (margin {fmt(min(margins))})" if margins else "")


def _budget(run: dict[str, Any]) -> str:
    """The wall time against the profile's budget, and on a CPU (whose matmul rate the run timed)
    scaled to the reference CPU the budget's seconds are for (`profiles.REFERENCE_CPU_TFLOPS`)."""
    budget, wall = run.get("budget_s"), run.get("wall_time_s")
    if not budget or wall is None:
        return ""
    out = f" of the {run.get('profile')} budget of {fmt(budget)} s ({100 * wall / budget:.0f}%)"
    rate, ref = run.get("cpu_matmul_tflops"), run.get("budget_reference_tflops")
    if rate and ref:
        scaled = wall * rate / ref
        out += (
            f"; this CPU's float32 matmul, timed at the run's end, ran at {rate:.3g} TFLOP/s against the "
            f"budget's reference CPU's {ref:.3g}: ≈ {fmt(scaled)} s ({100 * scaled / budget:.0f}%) at the "
            "reference rate (a VM's rate can drift by a quarter within a run)"
        )
    return out


def _dtype_line(run: dict[str, Any]) -> str:
    d = run.get("dtype_policy") or {}
    if not d:
        return "not recorded"
    cpu = d.get("cpu") or {}
    return (
        f'"auto" resolves to {d.get("auto")} (REPRO_DTYPE={d.get("override")}); CPU {cpu.get("cpu") or "?"}, '
        f"native bfloat16: {cpu.get('native_bf16')}, flags {' '.join(cpu.get('flags') or []) or 'none'}"
        + (
            f", bf16 matmul {cpu['bf16_speedup']:.2f}× float32's speed (bar {cpu.get('bf16_min_speedup')}×)"
            if isinstance(cpu.get("bf16_speedup"), (int, float))
            else ""
        )
    )


# --------------------------------------------------------------------------- terminal


def terminal_lines(results: list[ClaimResult], width: int = 100, run: dict[str, Any] | None = None) -> list[str]:
    """One compact line per encoded claim (verdict, wall time, first record), then one line
    listing the claims not yet encoded, then the run's wall time against its budget."""
    out = [f"{'claim':<9} {'verdict':<26} {'wall s':>7}  decided by: measured vs threshold — record"]
    missing = []
    for r in results:
        if r.verdict == NOT_ENCODED:
            missing.append(r.spec.id)
            continue
        if r.verdict == NOT_RUN:
            continue
        if r.verdict == INTERRUPTED:
            line = f"{r.spec.id:<9} {r.verdict:<26} {r.wall_s():>7.1f}  cut short before its tests finished"
            out.append(line[:width])
            continue
        rec = headline(r)
        detail = headline_text(rec) if rec is not None else "; ".join(r.reasons())
        if r.verdict in (CONTRADICTED, INCONCLUSIVE, PARTLY) and r.power() is not None:
            number, _, name = detail.partition(" — ")
            detail = f"{number} (power {fmt(r.power())}, size {fmt(r.size())})" + (f" — {name}" if name else "")
        out.append(f"{r.spec.id:<9} {r.verdict:<26} {r.wall_s():>7.1f}  {detail}"[:width])
    counts = summary(results)
    out.append(", ".join(f"{n} {v}" for v, n in counts.items() if n))
    if missing:
        out.append(f"not yet encoded ({len(missing)}): " + " ".join(missing))
    if run is not None and run.get("interrupted"):
        out.append(interrupted_line(run).replace("**", ""))
    if run is not None:
        out.append(f"wall time {fmt(run.get('wall_time_s'))} s{_budget(run)}; dtype policy: {_dtype_line(run)}")
    return out
