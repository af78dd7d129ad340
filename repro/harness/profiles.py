"""The registry of sizes per experiment per profile: it collects each topic's table.

Each topic package declares its experiments' sizes in ``repro/<topic>/sizes.py``: ``SIZES``
(experiment -> {profile -> its row: a frozen dataclass per experiment, `repro.ground.sizes.row`,
fields named for the claim or figure they serve, each row's comment saying what a size costs and
why it is not smaller) and ``OVERRIDES`` (`long`'s changes
to its ci rows). This module knows no size: it collects the sizes of the topics the registry
finds (`repro.harness.topics.PACKAGES`, in CLAIMS.md's order, the order `repro plan` lists their
rows), and checks every row against its ci row (`check_rows`, run by `get_profile`: a misspelt
size in any profile is an error before anything runs). The machinery — `Sizes`, `Profile`, the
merge and the check — is `repro.ground.sizes`.

`ci`: every claim on 2 CPU cores, offline, the whole claims run within ``BUDGET_S["ci"]`` cold.
`paper`: the sources' own sizes (001: 12 layers, 768 wide, N = 2,000–10,000, T up to 1024),
meant for a GPU. `long`: ci with a few rows overridden. Claim tests read their sizes with
``profile.sizes("bb_6")`` and record the sizes they used, so a report always says at what scale
a number was measured. Stdlib only: the pytest plugin imports this at collection time.
"""

from __future__ import annotations

import importlib
from typing import Any

from repro.ground import sizes as _sizes
from repro.ground.sizes import DECIDE_PREFIX, PROFILES, Decide, Profile, Sizes  # noqa: F401  (re-exported)
from repro.harness import topics


def _collect() -> tuple[dict[str, str], dict[str, dict[str, Any]], dict[str, dict[str, dict[str, Any]]]]:
    topic_of: dict[str, str] = {}
    table: dict[str, dict[str, Any]] = {}
    overrides: dict[str, dict[str, dict[str, Any]]] = {}
    for topic in topics.PACKAGES:
        module = importlib.import_module(f"repro.{topic}.sizes")
        for exp, rows in module.SIZES.items():
            if exp in topic_of:
                raise ValueError(f"experiment {exp!r} in repro/{topic}/sizes.py and repro/{topic_of[exp]}/sizes.py")
            topic_of[exp], table[exp] = topic, rows
        for prof, rows in module.OVERRIDES.items():
            overrides.setdefault(prof, {}).update(rows)
    return topic_of, table, overrides


#: experiment -> the topic package whose sizes.py holds its rows
TOPIC_OF: dict[str, str]
#: experiment -> {profile -> its row (a `repro.ground.sizes.row` dataclass)}, every topic's rows
SIZES: dict[str, dict[str, Any]]
#: profile -> {experiment -> overrides of its ci row} (deep-merged; a key the ci row lacks is an
#: error), for experiments whose claim needs more than CI's budget but still fits a CPU
OVERRIDES: dict[str, dict[str, dict[str, Any]]]
TOPIC_OF, SIZES, OVERRIDES = _collect()
#: every profile a run may name: the three with rows of their own, then the override profiles
#: the topics declare (`long`, the decide chunks `decide-<chunk>`)
ALL_PROFILES: tuple[str, ...] = (*PROFILES, *sorted(o for o in OVERRIDES if o not in PROFILES))
#: claim ID -> how the decide profile decides it (or why it cannot), every topic's DECIDE
DECIDE: dict[str, Decide] = {
    cid: d for topic in topics.PACKAGES for cid, d in importlib.import_module(f"repro.{topic}.sizes").DECIDE.items()
}

# wall-time budget of a cold `pytest claims/` (empty caches) on 2 CPU cores, in seconds: shown
# against the run's wall time in the report (≤ 30 min with native bfloat16 and with float32
# forced). None: no budget (long and paper are not run by CI). The seconds are the reference
# CPU's: the 2-core AMD EPYC of results/reference-machine.md, whose float32 (1024 × 1024) matmul
# runs at REFERENCE_CPU_TFLOPS. A slower CPU takes longer (the AVX2-only EPYC of 2026-11-28, at
# 0.067–0.105 TFLOP/s, ran the ci profile cold in 3,524 s), so the budget is also held as FLOPs:
# `plan.budget_flops`, which tests/test_plan.py checks the ci profile's planned FLOPs against, and
# the report scales a CPU run's wall time by the matmul rate it measured.
BUDGET_S: dict[str, int | None] = {"ci": 1800, "long": None, "paper": None}
REFERENCE_CPU_TFLOPS = 0.15


def chunks() -> dict[str, list[str]]:
    """decide chunk (its override profile's name) -> the claims it decides, in catalogue order."""
    out: dict[str, list[str]] = {}
    for cid, d in DECIDE.items():
        if d.chunk is not None:
            out.setdefault(DECIDE_PREFIX + d.chunk, []).append(cid)
    return out


def check_rows(table: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Every way a row of `table` (default: every topic's) disagrees with its experiment's ci row,
    or an override of `OVERRIDES` with its ci row, one line each (`repro.ground.sizes.check_rows`).
    An empty list: every row has the ci row's keys."""
    return _sizes.check_rows(SIZES if table is None else table, OVERRIDES)


def get_profile(name: str) -> Profile:
    """Profile `name` over every topic's rows, once they are checked (an unknown profile or a row
    that disagrees with its ci row is one ReproError)."""
    return _sizes.profile(name, SIZES, OVERRIDES)
