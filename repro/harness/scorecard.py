"""`repro scorecard`: every claim's verdict at each scale the suite has run it, from claims.json files.

A scale is a run's profile (`ci`, `paper`; every decide chunk, `decide-<chunk>`, is `decide`); a
run on a researcher's own model (`--model`) is not the embedded default's and is only a note.
For each claim and scale the card keeps the verdict of the latest run (files read in the order
given; by default the committed ci baseline, then `results/*/**claims*.json` in the order the
runs started) that decided it; a run that ended "failed" (a harness error, a regression) or did
not run the claim leaves the earlier verdict in place and is listed as a note. Each cell names
the run it came from (the results folder, or the baseline), so a reader can open its report.
`markdown` gives the README's table, `figure` the same as one image: claims × scales, coloured
by verdict.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from repro.ground.errors import ReproError
from repro.harness import report as reporting
from repro.harness.catalogue import CLAIMS

SCALES = ("ci", "decide", "paper")
#: verdicts that decide a claim at a scale (a "failed" run or an unrun claim decides nothing)
DECIDED = (
    reporting.REPRODUCED,
    reporting.PARTLY,
    reporting.CONTRADICTED,
    reporting.INCONCLUSIVE,
    reporting.NOT_APPLICABLE,
)
COLOURS = {
    reporting.REPRODUCED: "#4c9a2a",
    reporting.PARTLY: "#a6d96a",
    reporting.INCONCLUSIVE: "#fee08b",
    reporting.CONTRADICTED: "#d73027",
    reporting.NOT_APPLICABLE: "#bdbdbd",
}
SHORT = {
    reporting.REPRODUCED: "reproduced",
    reporting.PARTLY: "partly",
    reporting.CONTRADICTED: "contradicted",
    reporting.INCONCLUSIVE: "inconclusive",
    reporting.NOT_APPLICABLE: "n/a",
}


def default_runs(root: Path) -> list[Path]:
    """The committed ci baseline (float32: the dtype every CPU can run), then every claims.json
    kept under results/, in folder (date) order."""
    baseline = root / "repro" / "harness" / "baselines" / "ci-cpu-float32.json"
    found = [p for p in (root / "results").rglob("*claims*.json") if "partial" not in p.name]
    return ([baseline] if baseline.exists() else []) + sorted(found, key=_started)


def _started(path: Path) -> tuple[str, str]:
    """When the run started (its claims.json's `run.started`, ISO time), then its path: the folder
    names' dates do not order two runs of one day."""
    try:
        started = str((json.loads(path.read_text(encoding="utf-8")).get("run") or {}).get("started") or "")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        started = ""
    return started, str(path)


def _label(path: Path) -> str:
    return "baseline" if path.parent.name == "baselines" else path.parent.name


def _load(path: Path) -> dict[str, Any]:
    """A claims.json's data; a missing, unreadable or foreign file is one ReproError naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReproError(f"{path}: no such file (a claims.json written by `pytest claims/`)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReproError(f"{path}: not a readable claims.json ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ReproError(f"{path}: not a claims.json (no 'claims' list)")
    return data


def scale_of(profile: str) -> str:
    """A run's scale: its profile, a decide chunk's (`decide-<chunk>`) being "decide"."""
    return "decide" if profile.startswith("decide-") else profile


def collect(paths: Iterable[Path]) -> tuple[dict[str, dict[str, tuple[str, str]]], list[str]]:
    """(scale → claim → (verdict, where), notes): the latest deciding verdict per claim and scale."""
    card: dict[str, dict[str, tuple[str, str]]] = {}
    notes: list[str] = []
    for path in paths:
        data = _load(Path(path))
        run = data.get("run") or {}
        if run.get("model"):  # a researcher's own model (--model): its verdicts are not the default's
            notes.append(f"run {_label(Path(path))} ran --model {run['model']} (not counted)")
            continue
        scale = scale_of(run.get("profile") or "ci")
        for claim in data.get("claims", []):
            verdict = claim.get("verdict")
            if verdict in DECIDED:
                card.setdefault(scale, {})[claim["id"]] = (verdict, _label(Path(path)))
            elif verdict == reporting.FAILED:
                notes.append(f"{claim['id']} at {scale}: run {_label(Path(path))} ended failed (not counted)")
    return card, notes


def markdown(card: dict[str, dict[str, tuple[str, str]]]) -> list[str]:
    """One row per claim (catalogue order), one column per scale: 'verdict (run)' or '—'."""
    scales = [s for s in SCALES if s in card] + sorted(s for s in card if s not in SCALES)
    lines = ["| claim | " + " | ".join(scales) + " |", "|---|" + "---|" * len(scales)]
    for spec in CLAIMS:
        cells = []
        for scale in scales:
            got = card[scale].get(spec.id)
            cells.append(f"{SHORT[got[0]]} ({got[1]})" if got else "—")
        lines.append(f"| {spec.id} | " + " | ".join(cells) + " |")
    return lines


def counts(card: dict[str, dict[str, tuple[str, str]]], scale: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for verdict, _ in card.get(scale, {}).values():
        out[SHORT[verdict]] = out.get(SHORT[verdict], 0) + 1
    return out


def figure(card: dict[str, dict[str, tuple[str, str]]], path: Path) -> Path:
    """Claims × scales as coloured cells (grey: not run at that scale), written to `path`."""
    from matplotlib.patches import Patch

    from repro.core.plotting import plt

    scales = [s for s in SCALES if s in card] + sorted(s for s in card if s not in SCALES)
    ids = [spec.id for spec in CLAIMS]
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(scales), 0.2 * len(ids) + 1.2))
    for j, scale in enumerate(scales):
        for i, cid in enumerate(ids):
            got = card[scale].get(cid)
            colour = COLOURS[got[0]] if got else "#f5f5f5"
            ax.add_patch(plt.Rectangle((j, i), 0.95, 0.9, color=colour))
    ax.set_xlim(0, len(scales))
    ax.set_ylim(len(ids), 0)
    ax.set_xticks([j + 0.47 for j in range(len(scales))], scales)
    ax.set_yticks([i + 0.45 for i in range(len(ids))], ids, fontsize=6)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    handles = [Patch(color=c, label=SHORT[v]) for v, c in COLOURS.items()] + [Patch(color="#f5f5f5", label="not run")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=7, frameon=False)
    ax.set_title("verdict per claim and scale", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path
