"""`repro side-by-side RUN [RUN …]`: claims × models, one column per model, from claims.json files.

The workflow "check your model" (README): run `pytest claims/ --model YOURS`, then put its
claims.json beside the embedded models' run. Each row is a claim with the source's numbers;
each column a model found in a run (the model a test is parametrised by, read from its node ID;
tests that take no model — random inits, Gaussian inputs — count for every model of their run);
each cell that model's verdict, from its own tests' verdicts by the same rule as the claim's
(`report.verdict_of`), with the power its tests recorded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from repro.harness import report as reporting
from repro.harness import writers


def models_of(data: dict[str, Any]) -> list[str]:
    """The models a run's tests were parametrised by: its `--model`, else the embedded ones it
    recorded (run.models), in that order."""
    run = data.get("run", {})
    if run.get("model"):
        return [str(run["model"])]
    return list((run.get("models") or {}).keys())


def _model_of(nodeid: str, models: list[str]) -> str | None:
    params = re.search(r"\[(.*)\]$", nodeid)
    if params is None:
        return None
    hits = [m for m in models if m in params.group(1)]
    return max(hits, key=len) if hits else None


def cells(data: dict[str, Any]) -> dict[str, dict[str, str]]:
    """claim ID → model → 'verdict (power p, size s)' for one run; claims not decided there are absent."""
    models = models_of(data)
    out: dict[str, dict[str, str]] = {}
    for c in data["claims"]:
        if c["verdict"] in (reporting.NOT_RUN, reporting.NOT_ENCODED):
            continue
        per: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
        for t in c.get("tests", []):
            owner = _model_of(t.get("nodeid", ""), models)
            for m in [owner] if owner else models:
                per.setdefault(m, []).append(t)
        row = {}
        for m, tests in per.items():
            if not tests:
                continue
            verdict = reporting.claim_verdict((t.get("verdict", reporting.FAILED), t.get("size")) for t in tests)
            undecided = [
                t
                for t in tests
                if isinstance(t.get("power"), (int, float)) and t.get("verdict") != reporting.REPRODUCED
            ]
            sizes = [t["size"] for t in undecided if isinstance(t.get("size"), (int, float))]
            row[m] = verdict
            if undecided and verdict != reporting.REPRODUCED:
                row[m] += (
                    f" (power {reporting.fmt(min(t['power'] for t in undecided))}"
                    + (f", size {reporting.fmt(max(sizes))}" if sizes else "")
                    + ")"
                )
        out[c["id"]] = row
    return out


def table(runs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """A markdown table: claim, the source's numbers, then a column per (run, model)."""
    columns: list[tuple[int, str]] = []
    per_run = []
    for i, (_, data) in enumerate(runs):
        per_run.append(cells(data))
        columns += [(i, m) for m in models_of(data) if (i, m) not in columns]
    sources: dict[str, str] = {}
    for _, data in runs:
        for c in data["claims"]:
            sources.setdefault(c["id"], c.get("source_values") or "")
    names = [f"{m} ({Path(runs[i][0]).parent.name or runs[i][0]})" if len(runs) > 1 else m for i, m in columns]
    lines = ["| claim | source's numbers | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(columns)]
    ids = [cid for cid in sources if any(cid in cells_ for cells_ in per_run)]
    for cid in ids:
        row = [per_run[i].get(cid, {}).get(m, "—") for i, m in columns]
        lines.append(f"| {cid} | {writers.cell(writers.short_statement(sources[cid], 60))} | " + " | ".join(row) + " |")
    return lines
