"""Typed sizes per profile: the machinery every topic's table of sizes goes through.

A table maps an experiment to its rows, one per profile: ``{"bb_6": {"ci": {...}, "paper":
{...}}}``. The ci row names the experiment's sizes; every other row has exactly its keys, nested
rows included (`check_rows`: a misspelt size in any profile is an error before anything runs). A
profile without a row of its own (``long``) is the ci row with that profile's overrides
deep-merged in (`merge`; an override must name a ci key). Reading a size a row does not have is
a ReproError that lists the sizes it has (`Sizes`).

Each topic declares its table in ``repro/<topic>/sizes.py``; ``repro.harness.profiles`` collects
them. A topic reads its own rows through `profile` (``profile("ci", SIZES, OVERRIDES)``), the
registry through ``get_profile``. Stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repro.ground.errors import ReproError

#: experiment -> {profile -> sizes}
Table = Mapping[str, Mapping[str, dict[str, Any]]]
#: profile -> {experiment -> overrides of its ci row}
Overrides = Mapping[str, Mapping[str, dict[str, Any]]]

#: `ci`: every claim on 2 CPU cores, offline; `long`: ci with a few rows overridden, for claims
#: that need more than CI can pay but still fit a CPU; `paper`: the sources' own sizes (a GPU).
#: Any other profile is an override profile a topic declares in its OVERRIDES (ci with those
#: rows overridden): the `decide-<chunk>` profiles, see `Decide`.
PROFILES = ("ci", "long", "paper")
#: the prefix of the chunks of the decide profile (`repro plan --profile decide`)
DECIDE_PREFIX = "decide-"


@dataclass(frozen=True)
class Decide:
    """How a claim that is inconclusive at ci (or whose partly reproduced half is) gets decided:
    the chunk (an override profile `decide-<name>`, sized by the 80% sizes its power record names
    at the declared effect, each chunk meant to run in minutes on one GPU) and the corpus it
    trains on, or `chunk` None and `why` no chunk can (out of one GPU quarter-hour, or not a
    question of size)."""

    chunk: str | None
    why: str
    corpus: str = "brown"


class Sizes(dict):
    """One experiment's sizes: a plain dict (JSON, `**sizes`, comparisons) whose missing keys are
    an error naming the experiment, the profile and the keys it has — a misspelt size read by code
    fails loudly instead of a bare KeyError. Nested rows are Sizes too."""

    def __init__(self, row: dict[str, Any], where: str):
        super().__init__({k: Sizes(v, f"{where}.{k}") if isinstance(v, dict) else v for k, v in row.items()})
        self.where = where

    def __missing__(self, key: str):
        raise ReproError(
            f"{self.where} has no size {key!r}; its sizes are {', '.join(sorted(self)) or 'none'} "
            "(the experiment's rows are in repro/<topic>/sizes.py)"
        )


def merge(base: dict[str, Any], over: dict[str, Any], where: str) -> dict[str, Any]:
    """`base` with `over`'s values deep-merged in; a key `base` lacks is an error (a misspelt override)."""
    out = dict(base)
    for k, v in over.items():
        if k not in base:
            raise ReproError(
                f"{where}: override {k!r} is not a size of the ci row; its sizes are {', '.join(sorted(base))}"
            )
        out[k] = merge(base[k], v, f"{where}.{k}") if isinstance(v, dict) and isinstance(base[k], dict) else v
    return out


def check_rows(table: Table, overrides: Overrides | None = None) -> list[str]:
    """Every way a row can disagree with its experiment's ci row, one line each: a profile row (or
    a nested row) whose keys are not the ci row's — a misspelt, missing or unknown size — and an
    override that names no size of the ci row. A nested row may stand where the ci row has None
    (or the reverse): an optional part, off in one profile. An empty list: every row agrees."""
    problems: list[str] = []

    def compare(ci: dict[str, Any], row: dict[str, Any], where: str) -> None:
        if set(ci) != set(row):
            missing, unknown = sorted(set(ci) - set(row)), sorted(set(row) - set(ci))
            problems.append(
                f"{where}: "
                + "; ".join(
                    part
                    for part in (f"missing {missing}" if missing else "", f"unknown {unknown}" if unknown else "")
                    if part
                )
            )
        for k in set(ci) & set(row):
            if isinstance(ci[k], dict) and isinstance(row[k], dict):
                compare(ci[k], row[k], f"{where}.{k}")

    for exp, per_profile in table.items():
        if "ci" not in per_profile:
            problems.append(f"{exp}: no ci row")
            continue
        for prof, row in per_profile.items():
            if prof not in PROFILES:
                problems.append(
                    f"{exp}: unknown profile {prof!r} (a row of its own needs one of {', '.join(PROFILES)})"
                )
            elif prof != "ci":
                compare(per_profile["ci"], row, f"{exp}[{prof}]")
    for prof, rows in (overrides or {}).items():
        for exp, over in rows.items():
            try:
                merge(table[exp]["ci"], over, f"{exp}[{prof}]")
            except (KeyError, ReproError) as err:
                problems.append(str(err) if isinstance(err, ReproError) else f"{prof}: no experiment {exp!r}")
    return problems


@dataclass(frozen=True)
class Profile:
    """One profile's view of a table: `sizes(experiment)` is that experiment's row."""

    name: str
    table: Table = field(repr=False)
    overrides: Overrides = field(default_factory=dict, repr=False)

    def sizes(self, experiment: str) -> Sizes:
        """The experiment's sizes in this profile: its own row, or the ci row with this profile's
        overrides (`long`), as `Sizes` (a missing key is an error that names what there is)."""
        try:
            per_profile = self.table[experiment]
        except KeyError:
            raise ReproError(
                f"no sizes for experiment {experiment!r} in any repro/<topic>/sizes.py; add a row for it"
            ) from None
        if self.name in per_profile:
            row = per_profile[self.name]
        else:
            row = merge(
                per_profile["ci"], self.overrides.get(self.name, {}).get(experiment, {}), f"{experiment}[{self.name}]"
            )
        return Sizes(row, f"profile {self.name!r}, experiment {experiment!r}")

    def as_dict(self) -> dict[str, Any]:
        return {exp: self.sizes(exp) for exp in self.table}


def profile(name: str, table: Table, overrides: Overrides | None = None) -> Profile:
    """Profile `name` of `table` (and `overrides`), once every row is checked: an unknown profile or
    a row that disagrees with its ci row is one ReproError naming each problem."""
    known = (*PROFILES, *(o for o in (overrides or {}) if o not in PROFILES))
    if name not in known:
        raise ReproError(f"unknown profile {name!r}; choose one of {', '.join(known)}")
    problems = check_rows(table, overrides)
    if problems:
        raise ReproError("sizes: rows disagree with their ci rows:\n  " + "\n  ".join(problems))
    return Profile(name, table, overrides if overrides is not None else {})
