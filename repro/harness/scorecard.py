"""`repro scorecard`: every claim's verdict at each scale the suite has run it, re-judged from the
stored records under the current rules, and one verdict of record per claim.

A scale is a run's profile (`ci`, `paper`; every decide chunk, `decide-<chunk>`, is `decide`); a
run on a researcher's own model (`--model`) is not the embedded default's and is only a note.
Files are read in the order given (by default the committed ci baseline, then
`results/*/**claims*.json` in the order the runs started). Each stored claim is re-derived from its
records by the harness's rules (`rejudge`, `repro.harness.rules`); a run whose records lack what
the rules need (powers without `covers`, records without their test: every run before the rules)
is shown "pre-rules (was …)", never as decided. Per claim and scale the card keeps the latest
cell judged under the rules, else the latest pre-rules one, else the latest failed run (failed
runs are cells, and notes). Each cell names its run and the embedded models its tests covered.
The *record* column is the verdict the suite stands behind (`record`): the largest scale judged
under the rules whose run covers every model the claim's ci run names, with the disagreement of
other scales stated. `markdown` gives the README's table, `figure` the same as one image.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
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
    reporting.FAILED: "#7b3294",
    "pre-rules": "#d9d9d9",
}
SHORT = {
    reporting.REPRODUCED: "reproduced",
    reporting.PARTLY: "partly",
    reporting.CONTRADICTED: "contradicted",
    reporting.INCONCLUSIVE: "inconclusive",
    reporting.NOT_APPLICABLE: "n/a",
    reporting.FAILED: "failed",
}


#: a path standing for the committed baseline set of a configuration (its topic files joined)
BASELINE = "baseline:"


def default_runs(root: Path) -> list[Path]:
    """The committed ci baseline (float32: the dtype every CPU can run; its topic files under
    repro/<topic>/baselines/, joined), then every claims.json kept under results/, in the order the
    runs started."""
    found = [p for p in (root / "results").rglob("*claims*.json") if "partial" not in p.name]
    base = root / "repro" / f"{BASELINE}ci-cpu-float32"
    has = any((root / "repro").glob("*/baselines/ci-cpu-float32.json"))
    return ([base] if has else []) + sorted(found, key=_started)


def _started(path: Path) -> tuple[str, str]:
    """When the run started (its claims.json's `run.started`, ISO time), then its path: the folder
    names' dates do not order two runs of one day."""
    try:
        started = str((json.loads(path.read_text(encoding="utf-8")).get("run") or {}).get("started") or "")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        started = ""
    return started, str(path)


def _label(path: Path) -> str:
    return "baseline" if path.parent.name == "baselines" or path.name.startswith(BASELINE) else path.parent.name


def _load(path: Path) -> dict[str, Any]:
    """A claims.json's data; a missing, unreadable or foreign file is one ReproError naming it.
    `<root>/baseline:<key>` is the committed baseline set of `key` under `<root>` (`default_runs`)."""
    if path.name.startswith(BASELINE):
        from repro.harness import baseline

        data = baseline.load_set(path.name.removeprefix(BASELINE), path.parent)
        if data is None:
            raise ReproError(f"{path}: no committed baseline of that configuration")
        return data
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


PRE_RULES = "pre-rules"
#: the embedded models a test's parametrisation can name (a cell covers the models its tests ran on)
MODELS = ("smollm2-135m", "gemma3-270m")


@dataclass(frozen=True)
class Cell:
    """One claim's verdict in one run: re-derived from its stored records under the current rules
    (`rules`: True), or the verdict the run wrote when its records lack what the rules need
    (`rules`: False, shown "pre-rules"); `models` the embedded models its tests ran on."""

    verdict: str
    run: str
    models: tuple[str, ...] = ()
    rules: bool = True
    written: str = ""  # what the run itself wrote, where the re-derivation differs

    def shown(self) -> str:
        word = SHORT.get(self.verdict, self.verdict)
        if not self.rules:
            word = f"{PRE_RULES} (was {SHORT.get(self.written, self.written)})"
        elif self.written and self.written != self.verdict:
            word += f" (was {SHORT.get(self.written, self.written)})"
        on = f", {'+'.join(m.split('-')[0] for m in self.models)}" if self.models else ""
        return f"{word} ({self.run}{on})"


def models_of(claim: dict[str, Any]) -> tuple[str, ...]:
    """The embedded models a stored claim's tests name in their parametrisation."""
    params = " ".join(reporting.test_param(str(t.get("nodeid", ""))) for t in claim.get("tests") or [])
    return tuple(m for m in MODELS if m in params)


def rejudge(claim: dict[str, Any]) -> tuple[str, bool]:
    """(verdict, judged under the current rules) of one stored claim: its tests rebuilt from their
    records (`report.TestOutcome`, `rules`), when every record names its test and every power its
    `covers` (what the rules judge by); otherwise the verdict the run wrote, marked pre-rules."""
    tests, recs = claim.get("tests") or [], claim.get("records") or []
    if claim.get("verdict") not in DECIDED or not tests:
        return str(claim.get("verdict")), True
    ready = all("test" in r for r in recs) and all(
        "covers" in (r.get("power") or {}) for r in recs if r.get("role") == "power"
    )
    if not ready:
        return str(claim["verdict"]), False
    outcomes = []
    for t in tests:
        name = str(t["nodeid"]).split("::")[-1]
        own = [r for r in recs if r.get("test") == name]
        outcomes.append(
            reporting.TestOutcome(t["nodeid"], [claim["id"]], t["outcome"], t.get("reason", ""), records=own)
        )
    return reporting.claim_verdict((o.verdict(), o.size()) for o in outcomes), True


def collect(paths: Iterable[Path]) -> tuple[dict[str, dict[str, Cell]], list[str]]:
    """(scale → claim → Cell, notes): per claim and scale the latest run's cell that decided it —
    one judged under the current rules if any run is, else the latest pre-rules one; a run that
    ended failed is kept as the cell when nothing later decided the claim, and listed in the notes."""
    card: dict[str, dict[str, Cell]] = {}
    notes: list[str] = []
    for path in paths:
        data = _load(Path(path))
        run = data.get("run") or {}
        if run.get("model"):  # a researcher's own model (--model): its verdicts are not the default's
            notes.append(f"run {_label(Path(path))} ran --model {run['model']} (not counted)")
            continue
        scale = scale_of(run.get("profile") or "ci")
        for claim in data.get("claims", []):
            written = claim.get("verdict")
            if written == reporting.FAILED:
                notes.append(f"{claim['id']} at {scale}: run {_label(Path(path))} ended failed")
            if written not in DECIDED and written != reporting.FAILED:
                continue
            verdict, judged = rejudge(claim)
            cell = Cell(verdict, _label(Path(path)), models_of(claim), judged, "" if verdict == written else written)
            if not judged:
                cell = Cell(PRE_RULES, cell.run, cell.models, False, str(written))
            old = card.setdefault(scale, {}).get(claim["id"])
            if old is None or _rank(cell) >= _rank(old):
                card[scale][claim["id"]] = cell
    return card, notes


def _rank(cell: Cell) -> int:
    """Which cell of a scale stands: a later one replaces an earlier one of the same or lower rank
    (judged under the rules 2, pre-rules 1, failed 0)."""
    if cell.verdict == reporting.FAILED:
        return 0
    return 2 if cell.rules else 1


def record(cid: str, card: dict[str, dict[str, Cell]], names: tuple[str, ...]) -> tuple[str, str]:
    """The verdict of record for claim `cid` and why: the largest scale judged under the current rules
    whose run covers every model the claim names (`names`: its ci run's models) and decided it; where
    judged scales disagree, "scales disagree: …"."""
    judged = [
        (s, card[s][cid])
        for s in SCALES
        if cid in card.get(s, {}) and card[s][cid].rules and card[s][cid].verdict in DECIDED
    ]
    full = [(s, c) for s, c in judged if set(names) <= set(c.models)]
    if not full:
        pre = [s for s in SCALES if cid in card.get(s, {}) and not card[s][cid].rules]
        why = "no run judged under the current rules covers its models"
        return "—", why + (f" ({', '.join(pre)} pre-rules)" if pre else "")
    scale, cell = full[-1]
    why = f"{scale}, the largest scale judged under the current rules on {', '.join(names) or 'its models'}"
    others = {c.verdict for _, c in judged} - {cell.verdict}
    if others:
        why = "scales disagree: " + ", ".join(f"{s} {SHORT.get(c.verdict, c.verdict)}" for s, c in judged)
        why += f"; the record is the largest ({scale})"
    pre = [s for s in SCALES if cid in card.get(s, {}) and not card[s][cid].rules]
    if pre:
        why += f"; {', '.join(pre)} pre-rules (to re-run)"
    return cell.verdict, why


def markdown(card: dict[str, dict[str, Cell]]) -> list[str]:
    """One row per claim (catalogue order): the verdict of record and why, then one column per scale:
    'verdict (run, models)' or '—'."""
    scales = [s for s in SCALES if s in card] + sorted(s for s in card if s not in SCALES)
    lines = ["| claim | record | why | " + " | ".join(scales) + " |", "|---|---|---|" + "---|" * len(scales)]
    for spec in CLAIMS:
        ci = card.get("ci", {}).get(spec.id)
        verdict, why = record(spec.id, card, ci.models if ci else ())
        cells = [card[s][spec.id].shown() if spec.id in card[s] else "—" for s in scales]
        lines.append(f"| {spec.id} | {SHORT.get(verdict, verdict)} | {why} | " + " | ".join(cells) + " |")
    return lines


def counts(card: dict[str, dict[str, Cell]], scale: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for cell in card.get(scale, {}).values():
        word = PRE_RULES if not cell.rules else SHORT.get(cell.verdict, cell.verdict)
        out[word] = out.get(word, 0) + 1
    return out


def record_counts(card: dict[str, dict[str, Cell]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for spec in CLAIMS:
        ci = card.get("ci", {}).get(spec.id)
        verdict = record(spec.id, card, ci.models if ci else ())[0]
        word = SHORT.get(verdict, verdict)
        out[word] = out.get(word, 0) + 1
    return out


def figure(card: dict[str, dict[str, tuple[str, str]]], path: Path) -> Path:
    """Claims × scales as coloured cells (grey: not run at that scale), written to `path`."""
    from matplotlib.patches import Patch

    from repro.core.plotting import plt

    scales = ["record"] + [s for s in SCALES if s in card] + sorted(s for s in card if s not in SCALES)
    ids = [spec.id for spec in CLAIMS]
    records = {}
    for spec in CLAIMS:
        ci = card.get("ci", {}).get(spec.id)
        records[spec.id] = record(spec.id, card, ci.models if ci else ())[0]
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(scales), 0.2 * len(ids) + 1.2))
    for j, scale in enumerate(scales):
        for i, cid in enumerate(ids):
            if scale == "record":
                colour = COLOURS.get(records[cid], "#f5f5f5")
            else:
                got = card[scale].get(cid)
                colour = "#f5f5f5" if got is None else COLOURS.get(got.verdict if got.rules else PRE_RULES, "#f5f5f5")
            ax.add_patch(plt.Rectangle((j, i), 0.95, 0.9, color=colour))
    ax.set_xlim(0, len(scales))
    ax.set_ylim(len(ids), 0)
    ax.set_xticks([j + 0.47 for j in range(len(scales))], scales)
    ax.set_yticks([i + 0.45 for i in range(len(ids))], ids, fontsize=6)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    handles = [Patch(color=c, label=SHORT.get(v, v)) for v, c in COLOURS.items()] + [
        Patch(color="#f5f5f5", label="not run")
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=7, frameon=False)
    ax.set_title("verdict of record, then per scale", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path
