"""The verdict vocabulary: what a topic hands its claim file so the harness can judge it.

A topic computes numbers; the claim file (`claims/test_<topic>.py`) records and asserts them
through the `claim` fixture; the harness (`repro.harness.report`) turns the records into a
verdict by one set of rules (DESIGN.md, "Verdicts"). The three types here are that hand-over,
frozen so nothing downstream edits a reading after the topic made it:

- `Power`: the probability that a test's check(s) pass when the claim holds at a *declared*
  effect — which checks it covers, the effect and where it comes from (`basis`), how far that
  effect sits from the claim's edge, how a nuisance standard deviation was taken, and the size
  (the probability of reading "contradicted" although the claim holds).
- `Reading`: one number a check or record states (measured, threshold, comparison, reason).
- `Control`: a negative control's reading, and whether the null could serve at all (its own
  validity check): a null that cannot serve means "cannot tell", never a verdict.

Nothing here imports the harness or a topic: every topic may import it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

#: where a declared effect comes from: the source's number, a smallest effect of interest we name
#: (with its reason), or what we expect at our own training budget (sizing only: never decides)
BASES = ("source", "interest", "budget")
#: how a nuisance standard deviation behind the power was taken: "none" (no nuisance sd: a closed
#: form, an exact test, a deterministic quantity), "known" (fixed by the design, e.g. a binomial's),
#: "upper bound" (its upper confidence bound, `stats.sd_upper_bound`), "simulated" (a Monte-Carlo
#: model whose spread is declared, not fitted), "plug-in" (this run's sample sd: may size a chunk,
#: cannot support "contradicted")
SD_METHODS = ("none", "known", "upper bound", "simulated", "plug-in")
#: `covers` value for a power computed for the whole test (every check passing jointly)
ALL_CHECKS = "all checks"


def _finite_or_none(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"Power.{name} must be finite, got {value}")
    return v


@dataclass(frozen=True)
class Power:
    """A test's power at a declared effect, for the checks it `covers`.

    `covers`: the names of the checks whose failure this power speaks to — a check is covered when
    its name equals, or contains, one of these (a check's name usually carries a model prefix:
    "smollm2-135m: NLL increase, …" is covered by "NLL increase"), or `ALL_CHECKS` when `value` is
    the probability that every check of the test passes. Empty: not stated (the form schema-2 runs
    and the legacy keyword call leave): it covers no check. A failing check that no power covers
    reads *inconclusive* (`repro.harness.report`).
    `effect` / `effect_value`: the declared effect in words / as a number; `basis`: "source: <where>",
    "interest: <reason>" or "budget: <model>" (BASES); `test`, `sample`, `method`: the test, what it
    runs on, how the power was computed; `decide`: the sizes at which it reaches 80%;
    `decide_either`: the sizes at which it reaches 95%, where a miss reads contradicted.
    `edge`: the declared effect's distance from the claim's edge (the bar, or the innermost value
    the claim allows), in the effect's units: 0 when the effect *is* the edge. The size of reading
    contradicted is the failure probability at the edge, so the default size 1 − power stands only
    at edge 0; elsewhere give `size` with `size_at` saying where it was taken. None: not stated
    (cannot support "contradicted").
    `sd`: how a nuisance sd was taken (SD_METHODS); `fitted`: the effect was fitted to this run's
    own data (sizing only). `direction_p`: for a bar of ours ("interest"), the p-value of the
    effect in the claimed direction (an invented bar alone cannot contradict a significant effect).
    `against`: for a check that passes by *not rejecting* a null (a false-positive rate, an
    interval containing the source's value), the declared alternative the power is against.
    """

    value: float
    covers: tuple[str, ...]
    effect: str
    basis: str
    test: str
    sample: str
    method: str
    decide: str
    effect_value: float | None = None
    edge: float | None = None
    sd: str = "none"
    size: float | None = None
    size_method: str = ""
    size_at: str = ""
    direction_p: float | None = None
    decide_either: str = ""
    fitted: bool = False
    against: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.value) <= 1.0:
            raise ValueError(f"power must lie in [0, 1], got {self.value}")
        object.__setattr__(self, "value", float(self.value))
        covers = (self.covers,) if isinstance(self.covers, str) else tuple(self.covers)
        if not all(isinstance(c, str) and c.strip() for c in covers):
            raise ValueError("Power.covers: name the check(s) this power is of (or ALL_CHECKS)")
        object.__setattr__(self, "covers", covers)
        kind, _, where = self.basis.partition(":")
        if kind.strip() not in BASES or (kind.strip() != "source" and not where.strip()):
            raise ValueError(
                f"power basis {self.basis!r}: one of 'source: <where>', 'interest: <reason>', 'budget: <model>'"
            )
        for name in ("effect", "test", "sample", "method", "decide"):
            if not str(getattr(self, name)).strip():
                raise ValueError(
                    f"power: state the {name} (a power says effect, basis, test, sample, method and the sizes for 80%)"
                )
        if self.sd not in SD_METHODS:
            raise ValueError(f"Power.sd must be one of {SD_METHODS}, not {self.sd!r}")
        for name in ("effect_value", "edge", "direction_p"):
            object.__setattr__(self, name, _finite_or_none(name, getattr(self, name)))
        if self.size is not None:
            if not 0.0 <= float(self.size) <= 1.0:
                raise ValueError(f"Power.size must lie in [0, 1], got {self.size}")
            if not (self.size_method and self.size_at):
                raise ValueError(
                    "Power: a size given explicitly needs its size_method and size_at (where it was taken)"
                )
            object.__setattr__(self, "size", float(self.size))

    @property
    def basis_kind(self) -> str:
        return self.basis.split(":", 1)[0].strip()

    def stated_size(self) -> float:
        """The size this power states: the explicit one, else 1 − power (a true claim at the declared
        effect fails with that probability)."""
        return self.size if self.size is not None else 1.0 - self.value

    def to_dict(self) -> dict[str, Any]:
        """The declaration as a power record carries it (`record["power"]`)."""
        d = asdict(self)
        d.pop("value")
        d["covers"] = list(self.covers)
        d["size"] = self.stated_size()
        if self.size is None:
            d["size_method"] = "1 − power: a true claim at the declared effect fails with that probability"
            d["size_at"] = "the declared effect" + (" (the claim's edge)" if self.edge == 0 else "")
        d["decide_either"] = self.decide_either or None
        return d

    @classmethod
    def from_record(cls, value: float, d: dict[str, Any]) -> Power:
        """A power back from a record's declaration (`to_dict`), for re-judging stored runs."""
        keys = {f for f in cls.__dataclass_fields__ if f != "value"}
        kw = {k: v for k, v in d.items() if k in keys}
        if kw.get("size_method", "").startswith("1 − power"):
            kw.pop("size", None), kw.pop("size_method", None), kw.pop("size_at", None)
        kw["decide_either"] = kw.get("decide_either") or ""
        return cls(value, **kw)


def covers(power_covers: tuple[str, ...] | list[str], check_name: str, check_key: str = "") -> bool:
    """Whether a power's `covers` names a check (`Power.covers`)."""
    for c in power_covers:
        if c == ALL_CHECKS or c == check_name or c == check_key or c in check_name:
            return True
    return False


@dataclass(frozen=True)
class Reading:
    """One number for the claim file to record (`compare="none"`) or assert (`claim.check`).

    `threshold` is ours, `source` the source's own number (shown, not used); `why` the threshold's
    reason. `not_rejected`: the check passes when a null is *not* rejected (a false-positive rate
    under its bar, an interval that contains the source's value): such a pass reads reproduced only
    with a covering power ≥ 0.8 against a declared alternative (`Power.against`)."""

    name: str
    measured: Any
    threshold: Any = None
    compare: str = "none"
    why: str = ""
    tol: float = 0.0
    source: Any = None
    unit: str = ""
    key: str | None = None
    not_rejected: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Control:
    """A negative control: the same quantity on an input or model where the effect must be absent.

    `valid`: whether the null could serve at all (its own validity check, e.g. "the median other
    token is not U-dark"); `invalid_why` says what failed. A null that cannot serve makes the test
    *inconclusive* ("cannot tell"), never contradicted."""

    name: str
    measured: Any
    valid: bool = True
    invalid_why: str = ""

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("Control: name the control")
        if not self.valid and not self.invalid_why.strip():
            raise ValueError(f"Control {self.name!r}: say why the null cannot serve (invalid_why=...)")
