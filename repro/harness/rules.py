"""The verdict rules, applied per check to one test's records (DESIGN.md, "Verdicts").

One place judges every test, from the typed readings its claim file recorded
(`repro.core.readings`: `Power`, `Reading`, `Control`), so no topic re-implements a rule:

- a failing check reads *contradicted* only when a power that covers *that* check has a source or
  interest basis (never budget, never fitted to this run's data), is ≥ POWER_ENOUGH, states its
  size at the claim's edge, takes no plug-in nuisance sd — and the test's family-wise size (the
  union bound over its failing checks, each at the smallest size a qualifying power gives it) is
  ≤ SIZE_ENOUGH, and an invented bar does not stand alone against an effect significant in the
  claimed direction;
- a failing check that no power covers, or whose covering powers do not qualify, reads
  *inconclusive*, with each reason;
- a control whose null failed its own validity check reads "cannot tell": *inconclusive*;
- a pass that only means "not rejected" (`Reading.not_rejected`) reads *reproduced* only with a
  covering power ≥ POWER_ENOUGH against a declared alternative; else *inconclusive*;
- budget powers size chunks and name "the sizes that would decide"; they never decide.

The functions take plain record dicts (what claims.json stores), so a stored run is re-judged by
the same code (`repro scorecard`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from repro.core.readings import covers

POWER_ENOUGH = 0.8
SIZE_ENOUGH = 0.05
_EPS = 1e-12


@dataclass(frozen=True)
class Judgement:
    """One test's verdict word (`kind`: "reproduced", "contradicted", "inconclusive"), the reasons
    it is not stronger, and the power and family-wise size it rests on."""

    kind: str
    why: tuple[str, ...] = ()
    power: float | None = None
    size: float | None = None
    covered: dict[str, float] = field(default_factory=dict)  # failing check → the size it was held to


def _fmt(v: float) -> str:
    """As `report.fmt` shows a float (3 significant digits, scientific outside [1e-3, 1e5))."""
    a = abs(v)
    return str(v) if v == 0 else (f"{v:.3g}" if 1e-3 <= a < 1e5 else f"{v:.2e}")


def powers(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The test's power records with a numeric value."""
    return [
        r
        for r in records
        if r.get("role") == "power"
        and isinstance(r.get("measured"), (int, float))
        and not isinstance(r.get("measured"), bool)
    ]


def _decl(r: dict[str, Any]) -> dict[str, Any]:
    return r.get("power") or {}


def _size(r: dict[str, Any]) -> float:
    d = _decl(r)
    return float(d["size"]) if d.get("size") is not None else 1.0 - float(r["measured"])


def covering(check: dict[str, Any], recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The power records whose `covers` names `check` (a record without `covers` covers nothing)."""
    return [
        p for p in recs if covers(_decl(p).get("covers") or (), str(check.get("name", "")), str(check.get("key") or ""))
    ]


def disqualified(p: dict[str, Any]) -> list[str]:
    """Why a covering power cannot support "contradicted" (empty: it can)."""
    d = _decl(p)
    why = []
    kind = str(d.get("basis", "")).split(":", 1)[0].strip()
    if kind not in ("source", "interest"):
        why.append(f"its effect's basis is {kind or 'not stated'} ({d.get('basis', '')!s}): sizing only")
    if d.get("fitted"):
        why.append("its effect was fitted to this run's data")
    if float(p["measured"]) < POWER_ENOUGH:
        why.append(f"power {_fmt(float(p['measured']))} < {POWER_ENOUGH}")
    if d.get("sd") == "plug-in":
        why.append("its nuisance sd is this run's plug-in estimate (take its upper confidence bound)")
    if str(d.get("size_method", "1 − power")).startswith("1 − power") and d.get("edge") != 0:
        at = "not stated" if d.get("edge") is None else _fmt(float(d["edge"]))
        why.append(f"its size 1 − power is taken at the declared effect, not at the claim's edge (distance {at})")
    return why


def shielded(recs: list[dict[str, Any]]) -> str | None:
    """Why an invented bar cannot contradict: a power whose effect is ours ("interest") while the
    effect is significant in the claimed direction (direction_p ≤ SIZE_ENOUGH)."""
    for r in recs:
        d = _decl(r)
        if str(d.get("basis", "")).startswith("interest") and d.get("direction_p") is not None:
            if d["direction_p"] <= SIZE_ENOUGH:
                return (
                    f"the bar is ours ({d['basis']}) and the effect is significant in the claimed direction "
                    f"(p = {_fmt(d['direction_p'])})"
                )
    return None


def judge_failure(records: list[dict[str, Any]]) -> Judgement:
    """A test whose assertion failed (a strict xfail, or a failing check on a user's model or in a
    decide chunk): contradicted or inconclusive, per failing check."""
    recs = powers(records)
    smallest = min((float(p["measured"]) for p in recs), default=None)
    invalid = [c for c in records if c.get("role") == "control" and c.get("valid") is False]
    if invalid:
        return Judgement(
            "inconclusive", tuple(f"cannot tell: the null of '{c['name']}' cannot serve" for c in invalid), smallest
        )
    failing = [c for c in records if c.get("role") == "check" and c.get("within") is False]
    if not failing:
        return Judgement("inconclusive", ("no failing check on record",), smallest)
    why: list[str] = []
    held: dict[str, float] = {}
    used: list[float] = []
    for f in failing:
        cov = covering(f, recs)
        if not cov:
            why.append(f"no power covers the failing check '{f['name']}'")
            continue
        ok = [p for p in cov if not disqualified(p)]
        if not ok:
            best = max(cov, key=lambda p: float(p["measured"]))
            why.append(f"'{f['name']}': " + "; ".join(disqualified(best)))
            continue
        pick = min(ok, key=_size)
        held[str(f["name"])] = _size(pick)
        used.append(float(pick["measured"]))
    if why:
        return Judgement("inconclusive", tuple(why), smallest, None, held)
    fw = min(1.0, sum(held.values()))
    if fw > SIZE_ENOUGH + _EPS:
        return Judgement("inconclusive", (f"family-wise size {_fmt(fw)} > {SIZE_ENOUGH}",), min(used), fw, held)
    shield = shielded(recs)
    if shield:
        return Judgement("inconclusive", (shield,), min(used), fw, held)
    return Judgement("contradicted", (), min(used), fw, held)


def judge_pass(records: list[dict[str, Any]]) -> Judgement:
    """A test whose checks all held: reproduced, unless a check passed only by not rejecting a null
    and no covering power ≥ POWER_ENOUGH against a declared alternative backs it."""
    recs = powers(records)
    smallest = min((float(p["measured"]) for p in recs), default=None)
    why = []
    for c in records:
        if c.get("role") != "check" or not c.get("not_rejected"):
            continue
        ok = [
            p
            for p in covering(c, recs)
            if float(p["measured"]) >= POWER_ENOUGH
            and str(_decl(p).get("against") or "").strip()
            and str(_decl(p).get("basis", "")).split(":", 1)[0].strip() in ("source", "interest")
            and not _decl(p).get("fitted")
        ]
        if not ok:
            why.append(
                f"'{c['name']}' passes only by not rejecting a null: no covering power ≥ {POWER_ENOUGH} "
                "against a declared alternative"
            )
    return Judgement("inconclusive" if why else "reproduced", tuple(why), smallest)
