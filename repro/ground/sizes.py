"""Typed sizes per profile: the machinery every topic's table of sizes goes through.

A table maps an experiment to its rows, one per profile: ``{"bb_6": {"ci": BB6(...), "paper":
replace(ci, ...)}}``. A row is a frozen dataclass per experiment (nested parts are dataclasses
too: `Row`), declared in the topic's sizes.py; the paper row is the ci row with the sizes that
differ replaced (`dataclasses.replace`), so a row states only what its profile changes. Every row
is checked before anything runs (`check_rows`): its values against its class's annotations (a
string where an int belongs, a list where a tuple does), and — for rows given as plain dicts (a
test's table) — its keys against the ci row's, nested rows included. A profile without a row of
its own (``long``, the decide chunks) is the ci row with that profile's overrides deep-merged in
(`merge`; an override must name a ci key, and its values are checked against the ci row's types).
Code reads a profile's row as plain data (`as_row`: a dict of the fields in their declared order,
JSON- and ``**``-ready): `Sizes`, whose missing keys are a ReproError that lists the sizes it has.

Each topic declares its table in ``repro/<topic>/sizes.py``; ``repro.harness.profiles`` collects
them. A topic reads its own rows through `profile` (``profile("ci", SIZES, OVERRIDES)``), the
registry through ``get_profile``. Stdlib only.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repro.ground.errors import ReproError

#: experiment -> {profile -> its row: a `Row` dataclass (or a plain dict, as a test's table may give)}
Table = Mapping[str, Mapping[str, Any]]
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


@typing.dataclass_transform(kw_only_default=True, frozen_default=True)
def row(cls: type) -> type:
    """A row class: a frozen, keyword-only dataclass whose fields are the experiment's sizes in the
    order code reads them, annotated with the types `check_rows` holds every profile's values to."""
    return dataclass(frozen=True, kw_only=True)(cls)


def as_row(value: Any) -> Any:
    """A row as plain data: a dataclass row -> a dict of its fields in declared order, nested rows
    and dicts recursed; any other value as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_row(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: as_row(v) for k, v in value.items()}
    return value


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def type_problems(value: Any, hint: Any, where: str) -> list[str]:
    """Every way plain `value` (a row as `as_row` gives it) disagrees with annotation `hint`, one
    line each: a row class (its keys and each field), a union (any arm), ``tuple[X, ...]`` and
    fixed tuples element by element, ``dict``, ``Literal``, and plain types (an int is a float; a
    bool is neither an int nor a float). Empty: it agrees."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return []
    if origin in (typing.Union, types.UnionType):
        if any(not type_problems(value, arm, where) for arm in args):
            return []
        return [f"{where}: {value!r} is not {_type_name(hint)}"]
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            return [f"{where}: {value!r} is not a {hint.__name__} row"]
        hints = typing.get_type_hints(hint)
        missing, unknown = sorted(set(hints) - set(value)), sorted(set(value) - set(hints))
        if missing or unknown:
            parts = (f"missing {missing}" if missing else "", f"unknown {unknown}" if unknown else "")
            return [f"{where}: " + "; ".join(p for p in parts if p)]
        return [line for k, h in hints.items() for line in type_problems(value[k], h, f"{where}.{k}")]
    if origin is tuple:
        if not isinstance(value, tuple):
            return [f"{where}: {value!r} is not {_type_name(hint)}"]
        if len(args) == 2 and args[1] is Ellipsis:
            return [line for i, v in enumerate(value) for line in type_problems(v, args[0], f"{where}[{i}]")]
        if len(args) != len(value):
            return [f"{where}: {value!r} is not {_type_name(hint)}"]
        return [line for i, (v, h) in enumerate(zip(value, args)) for line in type_problems(v, h, f"{where}[{i}]")]
    if origin is typing.Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {args}"]
    kind = origin or hint
    if kind is type(None) or hint is None:
        ok = value is None
    elif kind in (int, float):
        ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    return [] if ok else [f"{where}: {value!r} is not {_type_name(hint)}"]


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
    a nested row) whose keys are not the ci row's — a misspelt, missing or unknown size — a row of
    another class than the ci row's, a value its row class's annotation does not admit (in any
    row, and in any profile's merged overrides), and an override that names no size of the ci row.
    A nested row may stand where the ci row has None (or the reverse): an optional part, off in
    one profile. An empty list: every row agrees."""
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
        ci = per_profile["ci"]
        cls = type(ci) if dataclasses.is_dataclass(ci) else None
        base = as_row(ci)
        if cls is not None:
            problems += type_problems(base, cls, f"{exp}[ci]")
        for prof, row in per_profile.items():
            where = f"{exp}[{prof}]"
            if prof not in PROFILES:
                problems.append(
                    f"{exp}: unknown profile {prof!r} (a row of its own needs one of {', '.join(PROFILES)})"
                )
            elif prof == "ci":
                continue
            elif cls is not None and dataclasses.is_dataclass(row) and type(row) is not cls:
                problems.append(f"{where}: a {type(row).__name__} row where the ci row is a {cls.__name__}")
            else:
                before = len(problems)
                compare(base, as_row(row), where)
                if cls is not None and len(problems) == before:
                    problems += type_problems(as_row(row), cls, where)
    for prof, rows in (overrides or {}).items():
        for exp, over in rows.items():
            try:
                ci = table[exp]["ci"]
                merged = merge(as_row(ci), over, f"{exp}[{prof}]")
            except (KeyError, ReproError) as err:
                problems.append(str(err) if isinstance(err, ReproError) else f"{prof}: no experiment {exp!r}")
                continue
            if dataclasses.is_dataclass(ci):
                problems += type_problems(merged, type(ci), f"{exp}[{prof}]")
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
            row = as_row(per_profile[self.name])
        else:
            row = merge(
                as_row(per_profile["ci"]),
                self.overrides.get(self.name, {}).get(experiment, {}),
                f"{experiment}[{self.name}]",
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
