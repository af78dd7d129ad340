"""The claims runs' history: every `pytest claims/` appends one line per decided
claim to artifacts/history.jsonl (commit, date, profile, device, dtype, verdict, power, the
asserted values, wall time); `repro history CLAIM` prints a claim's lines and draws one trend
panel per asserted value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repro.ground.cache import atomic_path
from repro.ground.runtime import ReproError


def load(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise ReproError(f"{path}: no history yet (a claims run appends to it: `make claims`)")
    rows = []
    for i, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ReproError(f"{path}:{i}: not a JSON line ({err.msg})") from None
    return rows


def for_claim(rows: list[dict[str, Any]], claim: str) -> list[dict[str, Any]]:
    from repro.harness.catalogue import CATALOGUE

    if claim not in CATALOGUE:
        raise ReproError(f"unknown claim ID {claim!r}; known: {', '.join(CATALOGUE)}")
    return [r for r in rows if r.get("claim") == claim]


def lines(rows: list[dict[str, Any]]) -> list[str]:
    from repro.harness.report import fmt

    out = [f"{'date':<26} {'commit':<13} {'profile':<7} {'dtype':<9} {'verdict':<27} {'wall s':>7}  asserted values"]
    for r in rows:
        vals = ", ".join(f"{k}: {fmt(v)}" for k, v in sorted(r.get("headline", {}).items()))
        commit = (r.get("commit") or "?") + ("+" if r.get("dirty") else "")
        out.append(
            f"{str(r.get('date')):<26} {commit:<13} {str(r.get('profile')):<7} {str(r.get('dtype')):<9} "
            f"{r.get('verdict', ''):<27} {r.get('wall_s', 0):>7.1f}  {vals}"
        )
    return out


def trend_figure(rows: list[dict[str, Any]], claim: str):
    """One small panel per asserted value, the run index on x (labelled by commit)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({k for r in rows for k in r.get("headline", {})}) or ["(no asserted value)"]
    fig, axes = plt.subplots(len(names), 1, figsize=(6.0, 1.6 * len(names) + 0.6), squeeze=False)
    x = list(range(len(rows)))
    for ax, name in zip(axes[:, 0], names):
        y = [r.get("headline", {}).get(name, float("nan")) for r in rows]
        ax.plot(x, y, marker="o", ms=3)
        ax.set_title(name[:90], fontsize=7)
        ax.tick_params(labelsize=6)
    axes[-1, 0].set_xticks(x)
    axes[-1, 0].set_xticklabels([(r.get("commit") or "?")[:7] for r in rows], rotation=60, fontsize=6)
    fig.suptitle(f"{claim}: asserted values over claims runs", fontsize=8)
    fig.tight_layout()
    return fig


def draw(rows: list[dict[str, Any]], claim: str, target: Path) -> Path:
    import matplotlib.pyplot as plt

    fig = trend_figure(rows, claim)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return target
