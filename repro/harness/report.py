"""What a claims run found: records, test outcomes, claim verdicts.

A test's `claim.record(...)` produces a `Record`; records and figure paths travel from the
(possibly remote, under xdist) test process to the controller as `user_properties`, so the
controller can rebuild per-claim results from test reports alone. This module knows nothing
about pytest: `build_results` takes plain `TestOutcome`s and the catalogue. What a run writes
from them (claims.json, history.jsonl's lines, report.md, the terminal table) is in
`repro.harness.writers`.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from repro.harness import rules
from repro.harness.catalogue import CATALOGUE, ClaimSpec
from repro.harness.rules import POWER_ENOUGH, SIZE_ENOUGH  # noqa: F401 (re-read by writers and tests)

SCHEMA_VERSION = 2  # 2: records carry `source` (the source's number) and `role`; new verdicts

# Verdicts of a claim, from its tests' outcomes and recorded power (DESIGN.md, Verdicts).
REPRODUCED = "reproduced"
PARTLY = "partly reproduced"  # some parametrisations reproduce, others are strict xfails
# A strict xfail says the source's effect was not seen. Which of the two it means comes from
# the power the test recorded (`claim.power`): the probability that this test, at these sizes,
# passes when the source's effect is real.
CONTRADICTED = "contradicted"  # not seen although the power was >= POWER_ENOUGH
INCONCLUSIVE = "inconclusive at this scale"  # not seen, power < POWER_ENOUGH or not recorded
FAILED = "failed"  # an unexpected failure or error: a regression, a strict XPASS, a control that passed
SKIPPED = "skipped"
# the claim needs something the run's model does not have (a final-norm gain, a first-token sink,
# an architecture the layer map knows, …): `Claim.not_applicable(reason)`, never an error
NOT_APPLICABLE = "not applicable"
NOT_APPLICABLE_PREFIX = "not applicable: "
NOT_RUN = "not run"  # encoded in claims/, but this run did not select it (-k, -m, a file argument)
INTERRUPTED = "interrupted"  # selected, but the run was cut short (SIGINT, a time limit) before it finished
NOT_ENCODED = "not yet encoded"
VERDICTS = (
    REPRODUCED,
    PARTLY,
    CONTRADICTED,
    INCONCLUSIVE,
    FAILED,
    SKIPPED,
    NOT_APPLICABLE,
    INTERRUPTED,
    NOT_RUN,
    NOT_ENCODED,
)
NOT_REPRODUCED = (CONTRADICTED, INCONCLUSIVE)  # schema 1's single "not reproduced" split in two
# POWER_ENOUGH (0.8) and SIZE_ENOUGH (0.05, the family-wise size of reading "contradicted": the
# probability that the test is not reproduced although the claim holds at its edge) live with the
# rules that use them (`repro.harness.rules`)
# a test whose size is 1 − power reads contradicted only at this power or more: the power records
# name the sizes for it (Claim.power's decide_either, stats.either_way) beside the 80% sizes
EITHER_WAY = 1.0 - SIZE_ENOUGH
# where a power's declared effect comes from (Claim.power's basis): the source's number, a smallest
# effect of interest we name (with its reason), or the effect expected at our own training budget
POWER_BASES = ("source", "interest", "budget")

COMPARES = ("abs", "rel", "le", "ge", "true", "none")
# what a record is: context (shown, not asserted); check (asserted by claim.check: the row that
# decided the test); control (the same assertion on a negative control, which must reject it);
# power (the test's power at the source's effect size)
ROLES = ("context", "check", "control", "power")


def plain(value: Any) -> Any:
    """JSON-able, execnet-serialisable python scalars/lists (numpy and torch scalars included)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        # 7 significant digits: float32 results differ in the last bits with the thread count
        # (e.g. serial vs `-n 2`), and the report should not.
        return float(f"{value:.7g}")
    if hasattr(value, "tolist"):  # numpy / torch
        return plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


@dataclass
class Record:
    """One asserted number: what was measured, what the source says, and the tolerance's reason.

    `expected` is *our threshold* (what the assertion compares against); `source` is the
    source's own number, shown beside it — two different things (e.g. source 58.5×, threshold
    ≥ 10×). compare: "abs" |measured − expected| ≤ tol; "rel" |measured − expected| ≤
    tol·|expected|; "le" measured ≤ expected (+tol); "ge" measured ≥ expected (−tol); "true"
    measured is True; "none" context only.
    """

    claim: str
    name: str
    measured: Any
    expected: Any = None
    tol: float | None = None
    why: str = ""
    compare: str = "abs"
    unit: str = ""
    within: bool | None = None
    dtype: str = "float32"  # the dtype the measured number was computed in (runtime.resolve_dtype)
    source: Any = None  # the source's number for this quantity, if it states one
    role: str = "context"  # see ROLES
    # the record's identity for comparisons across runs (`record_keys`): given by the test when its
    # label carries a measured word (e.g. which matrix won), else derived from the label
    key: str | None = None
    # how far the comparison stayed from flipping, in units of the threshold's scale (`margin`):
    # > 0 it fails (a rejected control), < 0 it holds
    margin: float | None = None
    # a power record's declaration (Claim.power, `readings.Power.to_dict`): covers, effect,
    # effect_value, basis, edge, sd, test, sample, method, decide, decide_either, size, size_method,
    # size_at, direction_p, fitted, against
    power: dict | None = None
    # a check that passes by not rejecting a null (`readings.Reading.not_rejected`)
    not_rejected: bool = False
    # a control whose null could (True) or could not (False) serve (`readings.Control.valid`)
    valid: bool | None = None

    def __post_init__(self) -> None:
        if self.compare not in COMPARES:
            raise ValueError(f"compare must be one of {COMPARES}, not {self.compare!r}")
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {self.role!r}")
        self.source = plain(self.source)
        self.measured = plain(self.measured)
        self.expected = plain(self.expected)
        self.tol = None if self.tol is None else float(self.tol)
        if self.within is None:
            self.within = self.check()
        if self.margin is None:
            self.margin = self.compute_margin()

    def check(self) -> bool | None:
        m, e, tol = self.measured, self.expected, self.tol or 0.0
        if self.compare == "true":
            return m is True
        if self.compare == "none" or not isinstance(m, (int, float)) or isinstance(m, bool):
            return None
        if not math.isfinite(m):
            return False
        if e is None or not isinstance(e, (int, float)):
            return None
        if self.compare == "abs":
            return abs(m - e) <= tol
        if self.compare == "rel":
            return abs(m - e) <= tol * abs(e)
        if self.compare == "le":
            return m <= e + tol
        return m >= e - tol  # "ge"

    def compute_margin(self) -> float | None:
        """Distance from the comparison's boundary in units of the threshold's own scale: positive
        when the comparison fails (how far a rejected control stayed from passing), negative when it
        holds. Scale: |threshold| for ge / le (tol when the threshold is 0), tol for abs, tol·|threshold|
        for rel. None for "true" / "none" comparisons and non-numeric values."""
        m, e, tol = self.measured, self.expected, self.tol or 0.0
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (m, e))
        if self.compare in ("true", "none") or not numeric or not math.isfinite(m):
            return None
        if self.compare in ("ge", "le"):
            scale = abs(e) or tol or 1.0
            gap = (e - tol - m) if self.compare == "ge" else (m - e - tol)
        elif self.compare == "abs":
            scale, gap = (tol or abs(e) or 1.0), abs(m - e) - tol
        else:  # rel
            scale = (tol * abs(e)) or abs(e) or 1.0
            gap = abs(m - e) - tol * abs(e)
        return float(f"{gap / scale:.4g}")

    def shown(self) -> str:
        """The comparison as a reader should see it: 'measured op threshold'."""
        op = {
            "abs": "within ±%s of" % fmt(self.tol or 0.0),
            "rel": "within ±%s rel. of" % fmt(self.tol or 0.0),
            "le": "≤",
            "ge": "≥",
            "true": "is",
            "none": "vs",
        }[self.compare]
        thr = self.expected
        if self.compare in ("le", "ge") and self.tol:
            thr = f"{fmt(self.expected)} {'+' if self.compare == 'le' else '−'} {fmt(self.tol)}"
        return f"{fmt(self.measured)} {op} {fmt(True if self.compare == 'true' else thr)}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not d["not_rejected"]:  # written only where set: records of checks without it read as before
            d.pop("not_rejected")
        if d["valid"] is None:
            d.pop("valid")
        return d


# a number standing alone (not part of a word: 'Fig 1a', 'log10', 'W_2', 'smollm2-135m' keep theirs)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?%?(?![\w])")


def key_of_label(name: str) -> str:
    """A label's stable part: every number in it replaced by '#', so that a label which embeds a
    measured value ('favourite, seed 3 (T=64)', 'after ℓ* = 5', '({n} tokens)') keeps its identity
    when the value moves."""
    return _NUMBER.sub("#", name)


def test_param(nodeid: str) -> str:
    """A parametrized test's parameter id ('gemma3-270m' of 'test_x[gemma3-270m]'), else ''."""
    m = re.search(r"\[(.+)\]$", nodeid)
    return m.group(1) if m else ""


def record_keys(records: Iterable[dict[str, Any]], params: Iterable[str] | None = None) -> list[str]:
    """The stable keys of one claim's records, in order: the test's own `key` where it gave one,
    else `key_of_label(name)`; a record of a parametrized test (`params`: each record's test's
    parameter id, `test_param`) whose key does not already name its parameter gets ' [param]', so
    the records of one model are told apart from another's by name, not by which tests ran; a key
    seen before in the claim then gets ' #2', ' #3', … in order of appearance (the order is
    deterministic: tests by node ID, records in the order recorded), so no two records of a claim
    share a key and none is lost to a comparison."""
    records = list(records)
    params = [""] * len(records) if params is None else list(params)
    seen: dict[str, int] = {}
    keys = []
    for rec, param in zip(records, params):
        base = rec.get("key") or key_of_label(str(rec.get("name", "")))
        base = re.sub(r" #\d+$", "", base)
        if param and key_of_label(param) not in base and f"[{param}]" not in base:
            base = f"{base} [{param}]"
        seen[base] = seen.get(base, 0) + 1
        keys.append(base if seen[base] == 1 else f"{base} #{seen[base]}")
    return keys


@dataclass
class TestOutcome:
    """What the controller learns about one test (from its reports' user_properties)."""

    nodeid: str
    claim_ids: list[str]
    outcome: str  # passed | failed | skipped | xfailed | xpassed | error
    reason: str = ""
    duration: float = 0.0
    records: list[dict[str, Any]] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    corpora: list[dict[str, Any]] = field(default_factory=list)  # claim.corpus: {claims, read, shift}

    def _powers(self) -> list[dict[str, Any]]:
        return rules.powers(self.records)

    def judgement(self) -> rules.Judgement | None:
        """The rules' reading of this test (`repro.harness.rules`): for a failed assertion (xfail)
        per failing check, for a pass per not-rejected check; None for other outcomes."""
        if self.outcome == "xfailed":
            return rules.judge_failure(self.records)
        if self.outcome in ("passed", "xpassed"):
            return rules.judge_pass(self.records)
        return None

    def power(self) -> float | None:
        """The power behind the verdict: for a contradicted test the smallest of the powers that
        carried its failing checks; otherwise the smallest the test recorded (None: none)."""
        j = self.judgement()
        if j is not None and j.kind == CONTRADICTED:
            return j.power
        p = [r["measured"] for r in self._powers()]
        return min(p) if p else None

    def size(self) -> float | None:
        """The family-wise size of reading this test as contradicted: for a contradicted test the
        union bound over its failing checks (`rules.judge_failure`); otherwise the largest size its
        power records state (1 − power for a record without one); None without a power."""
        j = self.judgement()
        if j is not None and j.kind == CONTRADICTED:
            return j.size
        s = [(r.get("power") or {}).get("size", 1.0 - r["measured"]) for r in self._powers()]
        return max(s) if s else None

    def shielded(self) -> str | None:
        """Why an invented bar cannot contradict (`rules.shielded`)."""
        return rules.shielded(self._powers())

    def undecided(self) -> str | None:
        """Why the test reads inconclusive rather than contradicted or reproduced (None when it does
        not): the rules' reasons, then the sizes that would decide it."""
        if self.outcome not in ("xfailed", "passed", "xpassed") or self.verdict() != INCONCLUSIVE:
            return None
        j = self.judgement()
        why = list(j.why) if j else []
        if not self._powers():
            why.insert(0, "no power recorded at a declared effect")
        if why and (sizes := self.sizes_to_decide()):
            why.append(sizes)
        return "; ".join(why) or None

    def sizes_to_decide(self) -> str | None:
        """The sizes its weakest power record names (`Claim.power`): for 80% and, where the size is
        1 − power, for EITHER_WAY, where a miss would read contradicted."""
        recs = self._powers()
        if not recs:
            return None
        d = min(recs, key=lambda r: r["measured"]).get("power") or {}
        if not d.get("decide"):
            return None
        out = f"80% power at {d['decide']}"
        if d.get("decide_either"):
            out += f", {EITHER_WAY:.0%} (decides either way) at {d['decide_either']}"
        return out

    def verdict(self) -> str:
        """This test's own verdict, by the rules (`repro.harness.rules`): a failed assertion reads
        contradicted only when every failing check is covered by a qualifying power and the
        family-wise size is ≤ SIZE_ENOUGH, else inconclusive; a pass reads reproduced unless it only
        failed to reject a null without the power to have rejected it."""
        o = self.outcome
        if o in ("failed", "error"):
            return FAILED
        if o == "skipped":
            return NOT_APPLICABLE if self.reason.startswith(NOT_APPLICABLE_PREFIX) else SKIPPED
        if o == INTERRUPTED:
            return INTERRUPTED
        j = self.judgement()
        if j is None:
            return FAILED
        return {"reproduced": REPRODUCED, "contradicted": CONTRADICTED}.get(j.kind, INCONCLUSIVE)


@dataclass
class ClaimResult:
    spec: ClaimSpec
    verdict: str
    tests: list[TestOutcome]

    def records(self) -> list[dict[str, Any]]:
        """The claim's records over its tests, each with its stable `key` (`record_keys`) and the
        test that recorded it (`test`: the node ID's last part)."""
        owned = [(dict(r), t.nodeid) for t in self.tests for r in t.records if r["claim"] == self.spec.id]
        recs = [r for r, _ in owned]
        for (rec, nodeid), key in zip(owned, record_keys(recs, [test_param(n) for _, n in owned])):
            rec["key"] = key
            rec["test"] = nodeid.split("::")[-1]  # which test recorded it: a stored run is re-judged per test
        return recs

    def figures(self) -> list[str]:
        return sorted({f for t in self.tests for f in t.figures})

    def tables(self) -> list[dict[str, Any]]:
        return [tb for t in self.tests for tb in t.tables if tb["claim"] == self.spec.id]

    def reasons(self) -> list[str]:
        return sorted({t.reason for t in self.tests if t.reason})

    def corpus(self) -> str | None:
        """The text its tests read (`Claim.corpus`), e.g. "brown; shift: stdlib-code"; None when
        none stated one (the claim reads no text)."""
        return corpus_text([c for t in self.tests for c in t.corpora if self.spec.id in c.get("claims", ())])

    def controls(self) -> list[dict[str, Any]]:
        """Negative controls run through a check's assertion ('rejected' when within is False)."""
        return [r for r in self.records() if r.get("role") == "control"]

    def power(self) -> float | None:
        """The power behind the verdict: for a contradicted claim, the smallest among the tests
        that contradicted it (each ≥ POWER_ENOUGH — a setting without the power, e.g. SF-7 on a
        second model at 0.795, does not lower the figure the verdict rests on); otherwise the
        smallest any test recorded."""
        tests = self.tests
        if self.verdict == CONTRADICTED:
            tests = [t for t in tests if t.verdict() == CONTRADICTED]
        ps = [p for p in (t.power() for t in tests) if p is not None]
        return min(ps) if ps else None

    def size(self) -> float | None:
        """The family-wise size behind the verdict: for a contradicted claim the union bound over
        the tests that contradicted it (`union_size`: any one of them reading contradicted makes
        the claim read so); otherwise the largest any test recorded."""
        if self.verdict == CONTRADICTED:
            return union_size((t.verdict(), t.size()) for t in self.tests)
        ss = [s for s in (t.size() for t in self.tests) if s is not None]
        return max(ss) if ss else None

    def wall_s(self) -> float:
        """Seconds of its tests (set-up included: a module fixture is charged to the first test
        that uses it; a test that carries several claim IDs counts for each)."""
        return sum(t.duration for t in self.tests)


def corpus_text(entries: Iterable[dict[str, Any]]) -> str | None:
    """The `Claim.corpus` entries as one line, `read[, read …][; shift: shift[, …]]` (each name
    once, in the order first stated); None without entries."""
    reads: list[str] = []
    shifts: list[str] = []
    for e in entries:
        if e.get("read") and e["read"] not in reads:
            reads.append(e["read"])
        if e.get("shift") and e["shift"] not in shifts:
            shifts.append(e["shift"])
    if not reads and not shifts:
        return None
    return ", ".join(reads) + (f"; shift: {', '.join(shifts)}" if shifts else "")


def verdict_of(verdicts: Iterable[str]) -> str:
    """A claim's verdict from its tests' own verdicts (`TestOutcome.verdict`): any failure
    fails it; all reproduced → reproduced; none reproduced → contradicted if any test had the
    power to see the effect and did not, else inconclusive; a mix → partly."""
    vs = list(verdicts)
    if not vs:
        return NOT_ENCODED
    if FAILED in vs:
        return FAILED
    ran = [v for v in vs if v not in (SKIPPED, NOT_APPLICABLE)]
    if not ran:
        return NOT_APPLICABLE if NOT_APPLICABLE in vs and SKIPPED not in vs else SKIPPED
    good = sum(v == REPRODUCED for v in ran)
    if good == len(ran):
        return REPRODUCED
    if good == 0:
        return CONTRADICTED if CONTRADICTED in ran else INCONCLUSIVE
    return PARTLY


def union_size(verdicts_sizes: Iterable[tuple[str, float | None]]) -> float | None:
    """A claim's family-wise size of reading contradicted, from its tests' (verdict, size): it does
    when any of its tests does, so the chance a true claim reads contradicted is at most the sum of
    the sizes of the tests that read contradicted (Bonferroni's union bound; capped at 1). None:
    no test reads contradicted."""
    ss = [s for v, s in verdicts_sizes if v == CONTRADICTED and s is not None]
    return min(1.0, float(sum(ss))) if ss else None


def claim_verdict(verdicts_sizes: Iterable[tuple[str, float | None]]) -> str:
    """A claim's verdict from its tests' (verdict, size) (`verdict_of`), a contradiction held to a
    family-wise size over its tests: contradicted only when `union_size` is at most SIZE_ENOUGH
    (each test's alone is not enough when several could contradict), else inconclusive."""
    pairs = list(verdicts_sizes)
    verdict = verdict_of(v for v, _ in pairs)
    if verdict == CONTRADICTED and (union_size(pairs) or 0.0) > SIZE_ENOUGH + 1e-12:
        return INCONCLUSIVE
    return verdict


def build_results(tests: Iterable[TestOutcome], encoded: Iterable[str] = ()) -> list[ClaimResult]:
    """Group test outcomes by claim, in catalogue order; every catalogue ID appears.
    `encoded`: IDs that some claim test carries, so a claim this run did not select reads
    "not run" rather than "not yet encoded"."""
    by_claim: dict[str, list[TestOutcome]] = {cid: [] for cid in CATALOGUE}
    for t in sorted(tests, key=lambda t: t.nodeid):
        for cid in t.claim_ids:
            by_claim.setdefault(cid, []).append(t)
    encoded = set(encoded)
    results = []
    for cid, ts in by_claim.items():
        if cid not in CATALOGUE:
            continue
        verdict = claim_verdict((t.verdict(), t.size()) for t in ts)
        if verdict == NOT_ENCODED and cid in encoded:
            verdict = NOT_RUN
        results.append(ClaimResult(CATALOGUE[cid], verdict, ts))
    return results


def summary(results: list[ClaimResult]) -> dict[str, int]:
    counts = {v: 0 for v in VERDICTS}
    for r in results:
        counts[r.verdict] += 1
    return counts


def fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value == 0 or not math.isfinite(value):
            return str(value)
        a = abs(value)
        return f"{value:.3g}" if (a >= 1e-3 and a < 1e5) else f"{value:.2e}"
    if isinstance(value, list):
        inner = ", ".join(fmt(v) for v in value[:6])
        return f"[{inner}{', …' if len(value) > 6 else ''}]"
    return str(value)
