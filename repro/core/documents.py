"""What a corpus document is, and the three splits every corpus is cut into.

The piece `repro.core.data` (the corpora and their one dispatch) and `repro.core.mix` (`--corpus
mix`, which the dispatch reads) share, here so that neither imports the other's module for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from repro.ground.errors import ReproError

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Document:
    """One document of a corpus: a stable id, a genre (stratum) and its plain text."""

    doc_id: str
    genre: str
    text: str


def check_split(split: str, allowed: Sequence[str] = SPLITS) -> None:
    if split not in allowed:
        raise ReproError(f"unknown split {split!r}; choose one of {', '.join(allowed)}")
