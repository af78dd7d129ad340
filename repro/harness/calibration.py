"""The plan against the device times the GPU sessions measured: `repro plan`'s calibration.

`device_times.json` (beside this module) holds every device time a session in `results/`
measured that a plan row estimates: the GPU (a `plan.GPUS` key), the profile, the jobs it timed
(an experiment and the start of a job's `what`: every job of the plan that matches is in it), the
seconds, and how they were measured:

- "alone": the only run on the GPU and its host; the seconds are the sum of the named tests'
  durations in that session's claims.json (`tests`; fixtures are charged to the first test that
  needs them, so the tests that read one fixture are summed) — tests/test_plan_calibration.py
  re-reads them —, or a number a README gives (`source` quotes it);
- "shared": beside other runs on the same GPU and host (sessions that ran two or three pytest
  processes at once): at most the time alone, so only "the estimate is at most twice it" holds;
- "stopped": a time limit ended it before the fixture finished: at least the time alone needs,
  so only "the estimate is at least half of it" holds.

`then`: fields of the timed jobs as the code that ran them had them, where the code has changed
since in a way the plan sees (the directions fixture drew its 100 models on the host): the
ratio compares a measurement with the model of the code that was measured, and the plan's own
estimate is the code's now. `fits`: the host rate (`plan.GPU_HOST`) this measurement fitted, so
its ratio is 1 by construction and says nothing; every other ratio tests the model.

`not_costed` lists measured times no plan row estimates (the context-axis claims, SF-8's
generation), with why. Stdlib only; the jobs come from `repro.harness.plan`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from repro.core import cost
from repro.core.cost import Job
from repro.ground.errors import ReproError

DATA = Path(__file__).with_name("device_times.json")
HOW = ("alone", "shared", "stopped")
# a calibrated row's measured / estimated seconds lies within these (the 2×)
LOW, HIGH = 0.5, 2.0


@dataclass(frozen=True)
class Measurement:
    """One measured device time (see the module docstring)."""

    device: str
    profile: str
    jobs: tuple[tuple[str, str], ...]  # (experiment, the start of the job's `what`)
    seconds: float
    how: str
    source: str
    commit: str
    tests: tuple[str, ...] = ()
    then: dict[str, dict[str, Any]] = field(default_factory=dict)  # job `what` start -> fields then
    fits: str | None = None
    note: str = ""

    def covers(self, job: Job) -> bool:
        return any(job.experiment == exp and job.what.startswith(what) for exp, what in self.jobs)

    def as_ran(self, job: Job) -> Job:
        """`job` as the measured code had it (`then`)."""
        for what, fields in self.then.items():
            if job.what.startswith(what):
                return replace(job, **fields)
        return job


def load(path: Path = DATA) -> tuple[list[Measurement], list[dict[str, Any]]]:
    """(measurements, not costed) from `path`; a malformed entry is one ReproError naming it."""
    raw = json.loads(path.read_text())
    out = []
    for i, m in enumerate(raw["measurements"]):
        try:
            meas = Measurement(
                m["device"],
                m["profile"],
                tuple((exp, what) for exp, what in m["jobs"]),
                float(m["seconds"]),
                m["how"],
                m["source"],
                m["commit"],
                tuple(m.get("tests", ())),
                m.get("then", {}),
                m.get("fits"),
                m.get("note", ""),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ReproError(f"{path.name}: measurement {i} is malformed ({err!r})") from None
        if meas.how not in HOW:
            raise ReproError(f"{path.name}: measurement {i}: how {meas.how!r} is not one of {', '.join(HOW)}")
        out.append(meas)
    return out, raw.get("not_costed", [])


@dataclass
class Match:
    """A measurement next to the plan's estimate of the jobs it timed."""

    measurement: Measurement
    jobs: list[Job]
    estimate: float  # the model's seconds for the jobs as the measured code ran them
    flop_estimate: float  # the FLOP model's (FLOPs at the peak × utilisation, nothing else)
    now: float  # the model's seconds for the jobs as the code runs them now

    @property
    def ratio(self) -> float:
        return self.measurement.seconds / self.estimate

    @property
    def flop_ratio(self) -> float:
        return self.measurement.seconds / self.flop_estimate

    def holds(self, ratio: float | None = None) -> bool:
        """Within [LOW, HIGH] for a time measured alone; a shared time bounds the ratio from below
        only, a stopped one from above only."""
        r = self.ratio if ratio is None else ratio
        how = self.measurement.how
        return (how == "stopped" or r >= LOW) and (how == "shared" or r <= HIGH)

    def line(self) -> str:
        m = self.measurement
        sign = {"alone": "", "shared": "≤ ", "stopped": "≥ "}[m.how]
        what = " + ".join(f"{exp} ({w})" for exp, w in m.jobs)
        fit = f"; fits {m.fits}" if m.fits else ""
        now = f"; now {seconds_text(self.now)}" if abs(self.now - self.estimate) > 1e-6 * self.estimate else ""
        return (
            f"{what}: measured {sign}{seconds_text(m.seconds)} ({m.how}, {m.source}) · estimate "
            f"{seconds_text(self.estimate)}, ratio {self.ratio:.2f}{'' if self.holds() else ' OFF'}{now} · FLOP model "
            f"{seconds_text(self.flop_estimate)}, ratio {self.flop_ratio:.3g}{fit}"
        )

    def to_dict(self) -> dict[str, Any]:
        m = self.measurement
        return {
            "jobs": [list(j) for j in m.jobs],
            "measured_s": m.seconds,
            "how": m.how,
            "source": m.source,
            "commit": m.commit,
            "estimate_s": self.estimate,
            "ratio": self.ratio,
            "holds": self.holds(),
            "flop_estimate_s": self.flop_estimate,
            "flop_ratio": self.flop_ratio,
            "now_s": self.now,
            "fits": m.fits,
            "note": m.note,
        }


def seconds_text(s: float) -> str:
    """A duration in the unit that reads best: 0.012 s, 28 s, 5.2 min, 6.9 h."""
    if s < 10:
        return f"{s:.2g} s"
    if s < 600:
        return f"{s:.0f} s"
    if s < 36_000:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.3g} h"


def matches(
    jobs: list[Job], gpu: str | None, profile: str, rates: cost.Rates, measurements: list[Measurement] | None = None
) -> list[Match]:
    """Every measurement of `profile` on `gpu` beside the plan's estimate of the jobs it timed
    (none for a device without measurements); a measurement whose jobs the plan lacks is an error
    (a row renamed under it)."""
    if gpu is None:
        return []
    flop_rates = cost.Rates(rates.tflops, rates.tflops, rates.utilisation)  # FLOPs at the one peak
    out = []
    for m in measurements if measurements is not None else load()[0]:
        if m.device != gpu or m.profile != profile:
            continue
        timed = [j for j in jobs if m.covers(j)]
        missing = [f"{exp} ({w})" for exp, w in m.jobs if not any(m.covers(j) and j.experiment == exp for j in timed)]
        if missing:
            raise ReproError(f"{DATA.name}: {', '.join(missing)} is not a job of the {profile} plan (renamed?)")
        then = [m.as_ran(j) for j in timed]
        out.append(
            Match(
                m,
                timed,
                sum(cost.job_seconds(j, rates)["total"] for j in then),
                sum(cost.job_seconds(replace(j, dtype="auto"), flop_rates)["total"] for j in then),
                sum(cost.job_seconds(j, rates)["total"] for j in timed),
            )
        )
    return out


def refit(match: Match, rates: cost.Rates) -> float:
    """The value of the rate `match.measurement.fits` names at which the model's estimate of the
    measured jobs equals the measurement, the other rates as given (bisection in log space: the
    estimate falls as a rate per second grows and rises with a cost per op or per load)."""
    name = match.measurement.fits
    if name is None:
        raise ReproError("refit: this measurement fits no rate")
    jobs = [match.measurement.as_ran(j) for j in match.jobs]

    def estimate(value: float) -> float:
        r = replace(rates, **{name: value})
        return sum(cost.job_seconds(j, r)["total"] for j in jobs)

    lo, hi = 1e-12, 1e15
    rising = estimate(lo) < estimate(hi)
    for _ in range(200):
        mid = (lo * hi) ** 0.5
        if (estimate(mid) < match.measurement.seconds) == rising:
            lo = mid
        else:
            hi = mid
    return (lo * hi) ** 0.5


def measured_rows(profile: str = "paper") -> set[tuple[str, str]]:
    """(experiment, what start) of every job some measurement of `profile` timed, on any GPU: the
    rows whose model a measurement backs."""
    return {j for m in load()[0] if m.profile == profile for j in m.jobs}


def backed(job: Job, rows: set[tuple[str, str]]) -> bool:
    """Whether a measured row (`measured_rows`) backs `job`: same experiment and `what` start, the
    sizes in its `what` (counts in parentheses, "T = …", "L = …") aside."""
    return any(job.experiment == exp and _stem(job.what).startswith(_stem(what)) for exp, what in rows)


def _stem(what: str) -> str:
    return what.split(" (")[0].split(", T = ")[0].split(", L = ")[0]
