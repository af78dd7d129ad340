"""What a claim is and what a source's number is: the two types every topic's catalogue uses.

Each topic package declares its claims in its own ``catalogue`` module (``CLAIMS``: one
:class:`ClaimSpec` per claim ID, ``NUMBERS``: the source's numbers with their citations);
``repro.harness.catalogue`` is the registry that collects them. Stdlib only: the pytest plugin
reads the catalogue at collection time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

#: Well-formed claim IDs: two-letter topic, number, optional ".n", optional letter
#: ("BB-4", "BB-4.2", "BB-3.2a", "BB-1x", "SF-10").
ID_PATTERN = re.compile(r"^(?P<topic>[A-Z]{2})-\d+(?:\.\d+)?[a-z]?$")


@dataclass(frozen=True)
class ClaimSpec:
    id: str  # "BB-4.2"
    topic: str  # "BB" (the ID's prefix, the topic package's TOPIC)
    source: str  # seed file stem, a key of repro.harness.catalogue.SOURCES
    section: str  # where the source states it: "§4.3, Def. 3, Table 3, Prop. 4; App. A.2"
    statement: str  # one line, plain text
    source_values: str  # the source's numbers as CLAIMS.md gives them ("" if none)
    notes: str = ""  # "notes for our scale" (and testing advice) from CLAIMS.md

    @property
    def ref(self) -> str:
        """Short citation, e.g. ``001 §4.3, Def. 3, Table 3, Prop. 4; App. A.2``."""
        return f"{self.source.split('_', 1)[0]} {self.section}"


@dataclass(frozen=True)
class SourceNumber:
    value: Any  # a number, a tuple, or a read-only mapping (a table)
    cite: str  # where the source states it: "001 §4.3, Table 3 (T = 128)"


def source(value: Any, cite: str) -> SourceNumber:
    """A catalogue entry; a table (dict) is stored read-only, so no test can edit it."""
    return SourceNumber(MappingProxyType(dict(value)) if isinstance(value, dict) else value, cite)


class UnknownNumberError(KeyError):
    """A (claim, key) with no number in a catalogue; the message names the claim's known keys."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


def lookup(numbers: dict[str, dict[str, SourceNumber]], claim_id: str, key: str) -> SourceNumber:
    """The entry ``key`` of ``claim_id`` in ``numbers`` (a topic's NUMBERS, or all of them);
    :class:`UnknownNumberError` names the keys the claim has."""
    entries = numbers.get(claim_id, {})
    if key in entries:
        return entries[key]
    known = f"its keys are {', '.join(repr(k) for k in entries)}" if entries else "it has none"
    raise UnknownNumberError(
        f"no source number {key!r} for claim {claim_id}: {known}. "
        "The sources' numbers are in NUMBERS of the claim's topic (repro/<topic>/catalogue.py)."
    )
