"""`repro compare A B`: what changed between two claims runs (two claims.json files).

In order: verdict changes; records whose measured value moved by more than `k` noise scales;
records that appear in only one run; per-claim wall-time ratios; and the provenance fields that
differ (dtype policy, device, packages, …), since a change there alone can move a number.

A record's noise scale is the spread it states itself: its tolerance (absolute, or relative to
the source's value). Per-item records (per seed, per window) kept by both runs are compared by a
paired t-test and drift when it rejects at 1% and the mean moved by more than one noise scale.
A record without one (a one-sided threshold at 0, a context number) is
compared but never counted as drift: it is listed as "moved" when its value changed by more
than the 7 significant digits claims.json keeps. So is a record computed in another dtype on each
side (its `dtype` field: a bfloat16 measurement against a float32 one is two configurations' numbers,
e.g. a baseline entry standing in for a dtype not yet re-recorded); its verdict and its presence
still count.

An asserted *exact* check (role "check", compare "abs" or "rel" with tolerance 0: an integer count,
an exact identity, e.g. RS-1's "terms for a #-layer × #-head model" = 1 + L·H + L) states that
its value cannot move at all: any change of it is a drift (listed with `exact`, z = inf), not a
move "within its noise". An asserted record (check, control, power) whose value was a finite
number (or a list of them) in A and is NaN, ±inf, null, a bool, a string or another shape in B
lost its measurement: listed with the asserted records lost, with `why`, and a regression. A
measured value that cannot be one at all (an object, a list holding one) is a schema error.
Every text line about a record names its key (which carries the test's parameter, the model).

Records are matched by their stable key (`report.record_keys`: the test's `key`, else the label
with its numbers masked, repeats numbered in order), never by their prose label alone, so a
repeated label or one that embeds a measured value is still compared. An asserted record (a
check, a control, a power) of a claim that ran in both runs but is missing from B counts as a
regression: a lost assertion is never silent.

Exit status: 0 nothing regressed, 1 a verdict got worse, a record drifted (an exact check
moved), or an asserted record was lost or lost its number, 2 bad input (missing or unreadable
file, a schema problem, another schema version, another profile without
`--allow-profile-change`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from repro.ground.runtime import ReproError
from repro.harness import report as reporting

DEFAULT_K = 3.0
# verdicts from best to worst: a move to the right is a regression
_RANK = {
    reporting.REPRODUCED: 0,
    reporting.PARTLY: 1,
    reporting.INCONCLUSIVE: 2,
    "not reproduced": 2,
    reporting.CONTRADICTED: 2,
    reporting.SKIPPED: 3,
    reporting.NOT_APPLICABLE: 3,
    reporting.NOT_RUN: 3,
    reporting.NOT_ENCODED: 3,
    reporting.FAILED: 4,
}
PROVENANCE = (
    "profile",
    "device",
    "dtype_policy",
    "corpus",
    "torch_threads",
    "xdist_workers",
    "python",
    "packages",
    "models",
)
# what a provenance field meant where a claims.json (or a baseline written before the field was
# kept) does not say
_PROVENANCE_DEFAULT = {"corpus": "brown"}


@dataclass
class Comparison:
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # claim, a, b, regression
    drifts: list[dict[str, Any]] = field(default_factory=list)  # claim, name, a, b, noise, z
    moved: list[dict[str, Any]] = field(default_factory=list)  # changed, no stated noise scale
    only_a: list[dict[str, Any]] = field(default_factory=list)
    only_b: list[dict[str, Any]] = field(default_factory=list)
    # asserted records of A missing from B, or whose number B lost (NaN, null, a string: `why`)
    lost: list[dict[str, Any]] = field(default_factory=list)
    # claims B ran only some tests of (a -k selection): claim, ran, of; their verdicts and missing
    # records are not compared (a test B did not run cannot have lost its records)
    partial: list[dict[str, Any]] = field(default_factory=list)
    wall: list[dict[str, Any]] = field(default_factory=list)  # claim, a_s, b_s, ratio
    provenance: list[dict[str, Any]] = field(default_factory=list)  # field, a, b
    # why a run was cut short ("interrupted (KeyboardInterrupt)"), per side; its claims that read
    # "interrupted" are not compared (a run cut short is evidence neither of a regression nor of none)
    interrupted: dict[str, str] = field(default_factory=dict)
    k: float = DEFAULT_K

    @property
    def regressed(self) -> bool:
        return bool(self.drifts) or bool(self.lost) or any(v["regression"] for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        """As JSON takes it: a non-finite number (an exact check's z, a measured NaN) as its name
        ("inf", "nan"), never the non-standard tokens `json.dumps` would write for it."""
        return _json_safe({**asdict(self), "regressed": self.regressed})


def _json_safe(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def load(path: str | Path) -> dict[str, Any]:
    """A claims.json (a bare configuration key, `ci-cpu-float32`, is read by `baseline.load_any`,
    which the `repro compare` command calls: this module imports no baseline code)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise ReproError(
            f"{path}: no such file (a claims.json written by `pytest claims/`, or a baseline's key: "
            "`repro baseline show` lists them)"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReproError(f"{path}: not a readable claims.json ({err})") from None
    if not isinstance(data, dict) or "claims" not in data or "schema" not in data:
        raise ReproError(f"{path}: not a claims.json (no 'schema' and 'claims')")
    validate(data, str(path))
    return data


def validate(data: Any, where: str = "claims.json") -> None:
    """One ReproError line for the first schema problem `compare` would trip on (claims not a
    list, a claim without an id, verdict or records, a record without a name or value), so a corrupt
    file is bad input (exit 2), never a traceback or a "regression"."""
    if not isinstance(data, dict):
        raise ReproError(f"{where}: not a claims.json (a JSON object with 'schema' and 'claims')")
    if not isinstance(data.get("run", {}), dict):
        raise ReproError(f"{where}: 'run' is {type(data['run']).__name__}, not an object")
    claims = data.get("claims")
    if not isinstance(claims, list):
        raise ReproError(f"{where}: 'claims' is {type(claims).__name__}, not a list of claims")
    for i, c in enumerate(claims):
        if not isinstance(c, dict):
            raise ReproError(f"{where}: claims[{i}] is {type(c).__name__}, not an object")
        for name, kind in (("id", str), ("verdict", str), ("records", list)):
            if not isinstance(c.get(name), kind):
                raise ReproError(f"{where}: claims[{i}] ({c.get('id', '?')}) has no {name!r} {kind.__name__}")
        if not isinstance(c.get("tests", []), list):
            raise ReproError(f"{where}: claim {c['id']}: 'tests' is not a list")
        for j, r in enumerate(c["records"]):
            if not isinstance(r, dict) or not isinstance(r.get("name"), str) or "measured" not in r:
                raise ReproError(f"{where}: claim {c['id']}, records[{j}]: not a record (needs 'name' and 'measured')")
            if not _measurable(r["measured"]):
                kind = "a list holding an object" if isinstance(r["measured"], list) else type(r["measured"]).__name__
                raise ReproError(
                    f"{where}: claim {c['id']}, records[{j}] ({r['name']!r}): 'measured' is {kind}, not a "
                    "measured value (a number, a string, a bool, null, or a list of them)"
                )


def _measurable(x: Any) -> bool:
    """A value a record can hold as `measured`: a JSON scalar, or a list (per item) of them or of
    such lists; an object (dict) is none."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return True
    return isinstance(x, list) and all(_measurable(v) for v in x)


def noise_scale(rec: dict[str, Any]) -> float | None:
    """The spread a record states for itself: its tolerance (rel: times |source|); None if none.
    A negative control has none: the tolerance it carries is its check's (e.g. an exactness bound
    of 1e-9 against a control far above it), and all a control must do is stay rejected, which
    the verdict enforces (a control that passes fails its claim)."""
    tol, exp = rec.get("tol"), rec.get("expected")
    if not tol or rec.get("compare") == "none" or rec.get("role") == "control":
        return None
    if rec.get("compare") == "rel":
        return tol * abs(exp) if isinstance(exp, (int, float)) and exp else None
    return float(tol)


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


ASSERTED = ("check", "control", "power")


def is_exact(rec: dict[str, Any]) -> bool:
    """An asserted equality with no tolerance (compare "abs"/"rel", tol 0 or none): its value
    cannot move without the claim's content changing (a count of terms, an exact identity). A
    one-sided threshold at 0 ("ge"/"le") is not one: its value may move on its side of the
    threshold, and crossing it is the verdict's business; nor is a condition ("true"), whose flip
    fails its test."""
    return rec.get("role") == "check" and rec.get("compare") in ("abs", "rel") and not rec.get("tol")


def _finite_kind(x: Any) -> str | None:
    """'number' for a finite number, 'numbers' for a non-empty list of them; None otherwise."""
    if (v := _number(x)) is not None:
        return "number" if math.isfinite(v) else None
    if isinstance(x, list) and x and all((v := _number(u)) is not None and math.isfinite(v) for u in x):
        return "numbers"
    return None


def _what(x: Any) -> str:
    """A measured value that is not a finite number, in words."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if x is None:
        return "null"
    if isinstance(x, bool):
        return f"a bool ({str(x).lower()})"
    if isinstance(x, str):
        return f"a string ({x[:40]!r})"
    if isinstance(x, list):
        bad = [u for u in x if _finite_kind(u) != "number"]
        return f"a list of {len(x)} holding {_what(bad[0])}" if bad else "a list of numbers"
    return f"a number ({reporting.fmt(x)})"


# a per-item record (per seed, per window) drifts when a paired t-test rejects "no change" at this
# level *and* its mean moved by more than the noise scale the record states (one scale: the test
# already says the move is not noise; the scale says it matters)
PAIRED_ALPHA = 0.01


def _paired(a: Any, b: Any) -> dict[str, Any] | None:
    """Per-item lists kept by both runs (e.g. per-seed values, same items in the same order):
    a paired t-test on the differences, as lm-evaluation-harness's compare_samples does, not a
    difference of two means. None unless both are equal-length numeric lists (n >= 3) that differ."""
    if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b) or len(a) < 3:
        return None
    xa, xb = [_number(v) for v in a], [_number(v) for v in b]
    if any(v is None for v in xa + xb) or xa == xb:
        return None
    from scipy import stats as sps

    d = [v - u for u, v in zip(xa, xb)]
    if max(d) == min(d):  # a constant shift: the t statistic is infinite unless it is zero
        p = 0.0 if d[0] != 0 else 1.0
    else:
        p = float(sps.ttest_rel(xb, xa).pvalue)
    return {"n": len(d), "mean_a": sum(xa) / len(xa), "mean_b": sum(xb) / len(xb), "mean_diff": sum(d) / len(d), "p": p}


def _records(data: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Every record by (claim, stable key): the keys a claims.json carries, or, for a file written
    before records had keys, the same derivation from its labels (`report.record_keys`)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for c in data["claims"]:
        recs = c["records"]
        keys = [r.get("key") for r in recs]
        if not all(isinstance(k, str) and k for k in keys) or len(set(keys)) != len(keys):
            keys = reporting.record_keys(recs)
        for r, key in zip(recs, keys):
            out[(c["id"], key)] = r
    return out


_UNDECIDED = (
    reporting.NOT_RUN,
    reporting.INTERRUPTED,
    reporting.SKIPPED,
    reporting.NOT_APPLICABLE,
    reporting.NOT_ENCODED,
    None,
)
#: verdicts that say the run did not decide the claim at all: never a verdict change
_UNRUN = (reporting.NOT_RUN, reporting.INTERRUPTED)


def _claim_wall(data: dict[str, Any]) -> dict[str, float]:
    durations = data.get("run", {}).get("test_durations_s", {})
    wall: dict[str, float] = {}
    for c in data["claims"]:
        ids = [t["nodeid"] for t in c["tests"]]
        if ids:
            wall[c["id"]] = sum(float(durations.get(n, 0.0)) for n in ids)
    return wall


def _ran(claim: dict[str, Any]) -> set[str]:
    return {t["nodeid"] for t in claim.get("tests", []) if t.get("outcome") not in (None, "not run", "deselected")}


def _partly_run(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """claim -> (tests B ran, tests A ran) for the claims B ran only some of A's tests of."""
    ran_a = {c["id"]: _ran(c) for c in a["claims"]}
    out = {}
    for c in b["claims"]:
        ran_b, of = _ran(c), ran_a.get(c["id"], set())
        if ran_b and of and ran_b < of:
            out[c["id"]] = (len(ran_b), len(of))
    return out


def _cut_short(a: dict[str, Any], b: dict[str, Any]) -> dict[str, str]:
    """Why each side's run was cut short, for the sides that were (`run.interrupted`)."""
    return {
        side: str(data["run"].get("interrupted_by") or "interrupted")
        for side, data in (("a", a), ("b", b))
        if data.get("run", {}).get("interrupted")
    }


def compare(
    a: dict[str, Any], b: dict[str, Any], *, k: float = DEFAULT_K, allow_profile_change: bool = False
) -> Comparison:
    validate(a, "A")
    validate(b, "B")
    if a.get("schema") != b.get("schema"):
        raise ReproError(
            f"schema versions differ ({a.get('schema')} vs {b.get('schema')}): compare runs of one version"
        )
    pa, pb = a.get("run", {}).get("profile"), b.get("run", {}).get("profile")
    if pa != pb and not allow_profile_change:
        raise ReproError(f"profiles differ ({pa} vs {pb}); pass --allow-profile-change to compare them anyway")
    out = Comparison(k=k, interrupted=_cut_short(a, b))
    partial = _partly_run(a, b)
    out.partial = [{"claim": cid, "ran": ran, "of": of} for cid, (ran, of) in partial.items()]
    va = {c["id"]: c["verdict"] for c in a["claims"]}
    vb = {c["id"]: c["verdict"] for c in b["claims"]}
    for cid in sorted(set(va) | set(vb), key=lambda c: (c not in va, c)):
        x, y = va.get(cid), vb.get(cid)
        if x != y:
            out.verdicts.append(
                {
                    "claim": cid,
                    "a": x,
                    "b": y,
                    "regression": _RANK.get(y, 4) > _RANK.get(x, 4)
                    and y not in _UNRUN
                    and x != reporting.INTERRUPTED
                    and cid not in partial,
                }
            )
    ra, rb = _records(a), _records(b)
    for key, rec in ra.items():
        if key not in rb:
            row = {"claim": key[0], "key": key[1], "name": rec["name"], "role": rec.get("role", "context")}
            out.only_a.append(row)
            if (
                row["role"] in ("check", "control", "power")
                and vb.get(key[0]) not in _UNDECIDED
                and va.get(key[0]) not in _UNDECIDED
                and key[0] not in partial
            ):
                out.lost.append(row)
    for key, rec in rb.items():
        if key not in ra:
            out.only_b.append({"claim": key[0], "key": key[1], "name": rec["name"], "role": rec.get("role", "context")})
            continue
        role = rec.get("role") if rec.get("role") in ASSERTED else ra[key].get("role", "context")
        kind_a, kind_b = _finite_kind(ra[key]["measured"]), _finite_kind(rec["measured"])
        if role in ASSERTED and kind_a is not None and kind_b != kind_a:
            # an asserted number that became NaN, null, a string, …: its measurement is gone
            was = "a number" if kind_a == "number" else "a list of numbers"
            out.lost.append(
                {
                    "claim": key[0],
                    "key": key[1],
                    "name": rec["name"],
                    "role": role,
                    "a": ra[key]["measured"],
                    "b": rec["measured"],
                    "why": f"measured {_what(rec['measured'])}, was {was}",
                }
            )
            continue
        x, y = _number(ra[key]["measured"]), _number(rec["measured"])
        # computed in two dtypes (a baseline entry standing in for another dtype's measurement): the
        # move is listed, never a drift — the verdict and the presence of the record still count
        dtypes = (ra[key].get("dtype"), rec.get("dtype"))
        cross = dtypes[0] is not None and dtypes[1] is not None and dtypes[0] != dtypes[1]
        pair = _paired(ra[key]["measured"], rec["measured"])
        if pair is not None:
            # significance from the paired test, size from the record's own noise scale: a shift
            # that is consistent but tiny (float error on another CPU) is listed, never a drift,
            # and so is a per-item record that states no noise scale (as for scalars)
            noise = noise_scale(ra[key]) or noise_scale(rec)
            row = {
                "claim": key[0],
                "key": key[1],
                "name": rec["name"],
                "a": pair["mean_a"],
                "b": pair["mean_b"],
                "noise": noise,
                "paired": pair,
            }
            drifted = pair["p"] < PAIRED_ALPHA and noise is not None and abs(pair["mean_diff"]) > noise and not cross
            if cross:
                row["dtypes"] = list(dtypes)
            elif is_exact(ra[key]) or is_exact(rec):  # an exact per-item check: any change
                row.update(noise=0.0, z=math.inf, exact=True)
                drifted = True
            (out.drifts if drifted else out.moved).append(row)
            continue
        if x is None or y is None:
            if ra[key]["measured"] != rec["measured"]:
                # (an asserted number that became none is lost, above; what is left here had no
                # finite number in A: a context string, a NaN that became a number)
                a_val, b_val = ra[key]["measured"], rec["measured"]
                out.moved.append({"claim": key[0], "key": key[1], "name": rec["name"], "a": a_val, "b": b_val})
            continue
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        noise = noise_scale(ra[key]) or noise_scale(rec)
        row = {"claim": key[0], "key": key[1], "name": rec["name"], "a": x, "b": y, "noise": noise}
        if cross:
            row["dtypes"] = list(dtypes)
        if (is_exact(ra[key]) or is_exact(rec)) and not cross:
            # tolerance 0 states no noise at all: any move is infinitely many noise scales
            out.drifts.append({**row, "noise": 0.0, "z": math.inf, "exact": True})
            continue
        if noise and not cross:
            row["z"] = abs(y - x) / noise
            if row["z"] > k:
                out.drifts.append(row)
                continue
        out.moved.append(row)
    wa, wb = _claim_wall(a), _claim_wall(b)
    for cid in wa:
        if cid in wb and wa[cid] > 0:
            out.wall.append({"claim": cid, "a_s": wa[cid], "b_s": wb[cid], "ratio": wb[cid] / wa[cid]})
    for name in PROVENANCE:
        x, y = (r.get("run", {}).get(name, _PROVENANCE_DEFAULT.get(name)) for r in (a, b))
        if x != y:
            out.provenance.append({"field": name, "a": x, "b": y})
    return out


def lines(c: Comparison, a_name: str = "A", b_name: str = "B") -> list[str]:
    f = reporting.fmt
    out = [f"A = {a_name}", f"B = {b_name}", ""]
    for side, name in (("a", a_name), ("b", b_name)):
        if side in c.interrupted:
            out.append(
                f"{name} was cut short ({c.interrupted[side]}): its claims that read 'interrupted' are not compared"
            )
    if c.provenance:
        out.append("provenance that differs (can move numbers by itself):")
        out += [f"  {p['field']}: {_short(p['a'])} -> {_short(p['b'])}" for p in c.provenance]
        out.append("")
    if c.partial:
        out.append("claims run in part (a selection of their tests): their verdicts and missing records not compared")
        out += [f"  {p['claim']:<8} {p['ran']} of {p['of']} tests" for p in c.partial]
    # a claim B did not run (a selection) is not a change of its verdict: counted apart, named in
    # short; one that A did not run and B did is a verdict of B's, listed (a new "failed" regresses)
    unrun = [v for v in c.verdicts if v["b"] == reporting.NOT_RUN]
    cut = [v for v in c.verdicts if v["b"] == reporting.INTERRUPTED or v["a"] == reporting.INTERRUPTED]
    changed = [v for v in c.verdicts if v not in unrun and v not in cut]
    out.append(f"verdict changes: {len(changed)}")
    out += [f"  {v['claim']:<8} {v['a']} -> {v['b']}{'  REGRESSION' if v['regression'] else ''}" for v in changed]
    if ids := [v["claim"] for v in unrun]:
        shown = ", ".join(ids[:8]) + (f" … ({len(ids)} in all)" if len(ids) > 8 else "")
        out.append(f"  not run in {b_name} (not compared): {shown}")
    if ids := [v["claim"] for v in cut]:
        shown = ", ".join(ids[:8]) + (f" … ({len(ids)} in all)" if len(ids) > 8 else "")
        out.append(f"  interrupted (not compared): {shown}")
    out.append(f"records drifted by more than {c.k:g} noise scales (an exact check: any move): {len(c.drifts)}")
    out += [
        f"  {d['claim']:<8} {_named(d)}: {_value(d['a'])} -> {_value(d['b'])} "
        + (
            "(exact check, tolerance 0: any move is a regression)"
            if d.get("exact")
            else f"(paired t-test over {d['paired']['n']} items, p {f(d['paired']['p'])})"
            if d.get("paired")
            else f"({d['z']:.1f} × {f(d['noise'])})"
        )
        for d in c.drifts
    ]
    out.append(f"records that moved within their noise, or state none: {len(c.moved)}")
    out += [
        f"  {d['claim']:<8} {_named(d)}: {_value(d['a'])} -> {_value(d['b'])}"
        + (f" ({d['z']:.2f} × {f(d['noise'])})" if d.get("z") is not None else "")
        + (f" (paired, {d['paired']['n']} items, p {f(d['paired']['p'])})" if d.get("paired") else "")
        for d in c.moved
    ]
    out.append(
        "asserted records lost (a check, control or power of a claim that ran in both, missing from B, "
        f"or whose number B lost): {len(c.lost)}"
    )
    out += [
        f"  {r['claim']:<8} [{r['role']}] {_named(r)}"
        + (f": {_value(r['a'])} -> {_value(r['b'])} ({r['why']})" if r.get("why") else ": missing from B")
        for r in c.lost
    ]
    if c.only_a or c.only_b:
        out.append(f"records only in A: {len(c.only_a)}, only in B: {len(c.only_b)}")
        out += [f"  A only  {r['claim']:<8} {_named(r)}" for r in c.only_a]
        out += [f"  B only  {r['claim']:<8} {_named(r)}" for r in c.only_b]
    if c.wall:
        out.append("wall time per claim (s), B / A:")
        out += [f"  {w['claim']:<8} {w['a_s']:8.1f} {w['b_s']:8.1f}  ×{w['ratio']:.2f}" for w in c.wall]
    out.append("REGRESSED" if c.regressed else "no regression")
    return out


def _named(row: dict[str, Any]) -> str:
    """A record as a line names it: its label, and its stable key where that says more (the
    test's parameter, the model, a repeat's number), so two models' rows are told apart."""
    return row["name"] if row["key"] == row["name"] else f"{row['name']} [key: {row['key']}]"


def _value(x: Any) -> str:
    if x is None:
        return "null"
    return repr(x if len(x) <= 60 else x[:60] + "…") if isinstance(x, str) else reporting.fmt(x)


def _short(x: Any, n: int = 160) -> str:
    s = json.dumps(x, sort_keys=True, default=str)
    return s if len(s) <= n else s[:n] + "…"
