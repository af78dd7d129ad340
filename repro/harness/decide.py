"""`repro plan --profile decide`: the chunks that would turn the ci run's inconclusive claims into verdicts.

Each topic declares, in its `sizes.py`, `DECIDE` (claim -> `Decide`: its chunk and why, or why no
chunk can decide it) and one override profile per chunk, `decide-<chunk>`: the ci rows with the
sizes the ci run's power records name for 80% power at their declared effects. A chunk runs as

    pytest claims/ --profile decide-<chunk> --corpus <its corpus> --claim <its claims>

(claims already decided at ci are not run). This module plans every chunk on the device asked
for: the jobs its claims' tests need (`plan.for_claims`: every job that names one of them), their
FLOPs and the estimated minutes by the plan's time model (`repro.core.cost.job_seconds`: FLOPs,
memory-bound bytes, host draws, dispatches, pretrained loads), against the chunk bar
(`CHUNK_MINUTES`, so that a 15-minute GPU allocation runs one chunk with its set-up). A job's
minutes are "calibrated" where a paper run measured its row on a GPU (`calibration.measured_rows`:
the model of that row was checked against it, within 2×); elsewhere the model has not met a
measurement, and its minutes are a floor.
"""

from __future__ import annotations

from repro.harness import calibration
from repro.harness import plan as planning
from repro.harness.catalogue import CATALOGUE
from repro.harness.profiles import DECIDE, chunks

CHUNK_MINUTES = 8.0  # a chunk must fit this on one GPU (a 15-minute allocation with its set-up)
CALIBRATED = "calibrated"
FLOOR = "not measured: model (floor)"


def chunk_plans(**device_args) -> list[tuple[str, list[str], str, planning.Plan]]:
    """(chunk profile, its claims, its corpus, the plan of the jobs those claims need)."""
    out = []
    for name, claims in chunks().items():
        corpus = DECIDE[claims[0]].corpus
        full = planning.plan(name, corpus=corpus, **device_args)
        out.append((name, claims, corpus, planning.for_claims(full, claims)))
    return out


def label(p: planning.Plan, rows: set[tuple[str, str]] | None = None) -> str:
    """CALIBRATED when a measured row backs every job of the chunk, FLOOR when none does, else
    how many of its minutes are calibrated."""
    rows = calibration.measured_rows() if rows is None else rows
    backed = [calibration.backed(j, rows) for j in p.jobs]
    if all(backed):
        return CALIBRATED
    if not any(backed):
        return FLOOR
    calibrated = sum(p.seconds(j) for j, b in zip(p.jobs, backed) if b)
    return f"{calibrated / max(p.seconds(), 1e-12):.0%} {CALIBRATED}, the rest {FLOOR}"


def lines(**device_args) -> list[str]:
    """The decide profile, one block per chunk (its jobs with their minutes, what bounds them and
    whether a measured row backs them), then the claims no chunk decides and why."""
    plans = chunk_plans(**device_args)
    rows = calibration.measured_rows()
    out = []
    if plans and plans[0][3].device is not None:
        out.append(f"decide profile on {planning.device_line(plans[0][3])}")
    out.append(
        f"chunks (each must run in ≤ {CHUNK_MINUTES:g} minutes on one GPU; minutes from the plan's time model, "
        f"'{CALIBRATED}' where a paper run on a GPU measured the row, '{FLOOR}' where none did):"
    )
    for name, claims, corpus, p in plans:
        minutes = p.seconds() / 60
        flag = "fits" if minutes <= CHUNK_MINUTES else f"OVER {CHUNK_MINUTES:g} min: split it"
        out.append(
            f"  {name:<22} {', '.join(claims):<22} {p.total_flops / 1e15:9.3g} PFLOP  {minutes:7.2f} min  {flag}  "
            f"[{label(p, rows)}]"
        )
        for cid in claims:
            out.append(f"      {cid}: {DECIDE[cid].why}")
        for j in p.jobs:
            terms = p.terms(j)
            how = CALIBRATED if calibration.backed(j, rows) else FLOOR
            out.append(
                f"      job {j.experiment} ({j.what}): {terms['total'] / 60:.2f} min, {planning.bound(terms)}-bound "
                f"[{how}]"
            )
        out.append(
            f"      run: pytest claims/ --profile {name} --corpus {corpus} --claim {','.join(claims)}"
            + (f"   (missing: {'; '.join(p.missing)})" if p.missing else "")
        )
    undecided = [(cid, d) for cid, d in DECIDE.items() if d.chunk is None]
    if undecided:
        out.append("not decided by any chunk:")
        out += [f"  {cid:<7} {d.why}" for cid, d in sorted(undecided, key=lambda x: list(CATALOGUE).index(x[0]))]
    return out
