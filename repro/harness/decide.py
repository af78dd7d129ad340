"""`repro plan --profile decide`: the chunks that would turn the ci run's inconclusive claims into verdicts.

Each topic declares, in its `sizes.py`, `DECIDE` (claim -> `Decide`: its chunk and why, or why no
chunk can decide it) and one override profile per chunk, `decide-<chunk>`: the ci rows with the
sizes the ci run's power records name for 80% power at their declared effects. A chunk runs as

    pytest claims/ --profile decide-<chunk> --corpus <its corpus> --claim <its claims>

(claims already decided at ci are not run). This module plans every chunk on the device asked
for: the FLOPs and memory of the jobs its claims need (`plan.for_claims`), the estimated minutes
at the device's rate, against the chunk bar (`CHUNK_MINUTES`, so that a 15-minute GPU allocation
runs one chunk with its set-up). The estimate is the plan's FLOP model: GPU rows measured so far
ran slower than planned (results/*/README.md), so a chunk's minutes are a floor, not a promise.
"""

from __future__ import annotations

from repro.harness import plan as planning
from repro.harness.catalogue import CATALOGUE
from repro.harness.profiles import DECIDE, chunks

CHUNK_MINUTES = 8.0  # a chunk must fit this on one GPU (a 15-minute allocation with its set-up)


def chunk_plans(**device_args) -> list[tuple[str, list[str], str, planning.Plan]]:
    """(chunk profile, its claims, its corpus, the plan of the jobs those claims need)."""
    out = []
    for name, claims in chunks().items():
        corpus = DECIDE[claims[0]].corpus
        full = planning.plan(name, corpus=corpus, **device_args)
        out.append((name, claims, corpus, planning.for_claims(full, claims)))
    return out


def lines(**device_args) -> list[str]:
    """The decide profile, one block per chunk, then the claims no chunk decides and why."""
    plans = chunk_plans(**device_args)
    out = []
    if plans and plans[0][3].device is not None:
        out.append(f"decide profile on {planning.device_line(plans[0][3])}")
    out.append(f"chunks (each must run in ≤ {CHUNK_MINUTES:g} minutes on one GPU; minutes from the FLOP model):")
    for name, claims, corpus, p in plans:
        minutes = p.seconds() / 60
        flag = "fits" if minutes <= CHUNK_MINUTES else f"OVER {CHUNK_MINUTES:g} min: split it"
        out.append(
            f"  {name:<22} {', '.join(claims):<22} {p.total_flops / 1e15:9.3g} PFLOP  {minutes:7.2f} min  {flag}"
        )
        for cid in claims:
            out.append(f"      {cid}: {DECIDE[cid].why}")
        out.append(
            f"      run: pytest claims/ --profile {name} --corpus {corpus} --claim {','.join(claims)}"
            + (f"   (missing: {'; '.join(p.missing)})" if p.missing else "")
        )
    undecided = [(cid, d) for cid, d in DECIDE.items() if d.chunk is None]
    if undecided:
        out.append("not decided by any chunk:")
        out += [f"  {cid:<7} {d.why}" for cid, d in sorted(undecided, key=lambda x: list(CATALOGUE).index(x[0]))]
    return out
