"""The registry of every claim the suite encodes: it collects each topic's catalogue.

Each topic package declares its own claims in ``repro/<topic>/catalogue.py`` — one
:class:`ClaimSpec` per claim ID of the shared ``CLAIMS.md`` (statement, where the source states
it, the source's values as CLAIMS.md gives them) and ``NUMBERS``, every number of the source a
claim test or a figure compares against, with its citation. This module knows no claim: it
collects the catalogues of the topics the registry finds (`repro.harness.topics.PACKAGES`, in
CLAIMS.md's order), so that a report (claims.json, report.md, the
terminal table) can say what each ID means, where the source states it and what number it gives,
without the shared documents at hand. ``tests/test_catalogue.py`` checks the IDs (and the source
values) against ``CLAIMS.md`` whenever that file is present, and that no claim file or module
writes a source number out instead of reading it with :func:`number`.

Adding a claim: its ClaimSpec (and numbers) in its topic's catalogue, its test in
``claims/test_<topic>.py`` (DESIGN.md, "Adding a claim"). Stdlib only (the topic catalogues
too): the pytest plugin imports this at collection time.
"""

from __future__ import annotations

import difflib
import importlib
from types import ModuleType
from typing import Any

from repro.ground.sources import ID_PATTERN, ClaimSpec, SourceNumber, UnknownNumberError, lookup  # noqa: F401  (the registry's vocabulary, re-exported)
from repro.harness import topics

SOURCES: dict[str, str] = {
    "000_1f8d71c89e1cba16": (
        "Input–output alignment shift in causal LMs and residual attenuation/gating (causal-shift)"
    ),
    "001_30830f2cef648f58": (
        "Transformers Are Born Biased: Structural Inductive Biases at Random "
        "Initialization and Their Practical Consequences"
    ),
    "002_99105bcf00933aee": "Residual Stream and Transformer Internals (LLM Construction notes)",
    "003_cbe8077a37f546e7": "Spectral Filters, Dark Signals, and Attention Sinks",
    "004_5cfc762cf7f04663": "Rethinking causal mask: proposing context axis to decoder-attention",
}


def _topics() -> list[ModuleType]:
    return [importlib.import_module(f"repro.{name}.catalogue") for name in topics.PACKAGES]


_MODULES = _topics()
#: topic prefix -> title ("BB" -> "Born biased: random-init structure (001 §3–4)")
TOPICS: dict[str, str] = {m.TOPIC: m.TITLE for m in _MODULES}
#: Topic-wide definitions from CLAIMS.md that the single claims rely on.
TOPIC_NOTES: dict[str, str] = {m.TOPIC: m.NOTES for m in _MODULES if m.NOTES}
#: topic prefix -> its package ("BB" -> "born_biased")
PACKAGES: dict[str, str] = dict(zip(TOPICS, topics.PACKAGES))
CLAIMS: tuple[ClaimSpec, ...] = tuple(spec for m in _MODULES for spec in m.CLAIMS)
NUMBERS: dict[str, dict[str, SourceNumber]] = {k: v for m in _MODULES for k, v in m.NUMBERS.items()}


def _index(claims: tuple[ClaimSpec, ...]) -> dict[str, ClaimSpec]:
    index: dict[str, ClaimSpec] = {}
    for spec in claims:
        if spec.id in index:
            raise ValueError(f"duplicate claim ID {spec.id} (repro/{PACKAGES.get(spec.topic, '?')}/catalogue.py)")
        index[spec.id] = spec
    return index


CATALOGUE: dict[str, ClaimSpec] = _index(CLAIMS)


class UnknownClaimError(KeyError):
    """An ID that is not in the catalogue; the message lists close matches."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


def suggestions(claim_id: str, n: int = 5) -> list[str]:
    """Catalogue IDs close to ``claim_id`` (case-insensitive), best first."""
    by_upper = {key.upper(): key for key in CATALOGUE}
    query = claim_id.strip().upper()
    close = difflib.get_close_matches(query, list(by_upper), n=n, cutoff=0.5)
    if not close:  # e.g. "BB" or "SF-": list the topic's IDs
        topic = query.split("-", 1)[0]
        close = [key for key in by_upper if key.startswith(topic + "-")][:n]
    return [by_upper[key] for key in close]


def get(claim_id: str) -> ClaimSpec:
    """The spec of ``claim_id``; an unknown ID raises :class:`UnknownClaimError` (a KeyError)."""
    try:
        return CATALOGUE[claim_id]
    except (KeyError, TypeError):
        pass
    close = suggestions(str(claim_id))
    hint = f"did you mean {', '.join(close)}?" if close else f"topics are {', '.join(TOPICS)}."
    raise UnknownClaimError(
        f"unknown claim ID {claim_id!r}: {hint} All {len(CATALOGUE)} IDs are in repro/<topic>/catalogue.py."
    )


def source_number(claim_id: str, key: str) -> SourceNumber:
    """The entry ``key`` of ``claim_id``: its value and citation. An ID unknown to the
    catalogue raises :class:`UnknownClaimError`, a key unknown to the claim
    :class:`UnknownNumberError` (both KeyErrors)."""
    return lookup(NUMBERS, get(claim_id).id, key)


def number(claim_id: str, key: str) -> Any:
    """The source's number (or table) ``key`` of ``claim_id``, e.g. ``number("BB-1", "fig1a")``."""
    return source_number(claim_id, key).value


def cite(claim_id: str, key: str) -> str:
    """Where the source states ``number(claim_id, key)``."""
    return source_number(claim_id, key).cite
