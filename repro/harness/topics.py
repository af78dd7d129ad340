"""The registry of topics: every package under ``repro/`` but the floors declares a `Topic`.

A topic package says what it is once, in its ``__init__.py`` (``TOPIC = Topic(...)``,
`repro.ground.topic`); this module finds the packages (`pkgutil` over ``repro/``), reads their
manifests and orders them by their place in CLAIMS.md. Everything in the roof that needs the
topics — the catalogue, the sizes, `repro plan`'s vocabulary rows, the toy sizes, the ``repro``
subcommands, the baseline set — reads them here, so adding a topic touches its own package, its
claim file, its baseline and the import contract's layer line (which tests/test_layers.py checks
against `PACKAGES`). A package under ``repro/`` without a manifest is an error, named. Stdlib
only: the pytest plugin imports this at collection time.
"""

from __future__ import annotations

import importlib
import pkgutil

import repro
from repro.ground.errors import ReproError
from repro.ground.topic import Topic

#: the packages of ``repro/`` that are floors, not topics (DESIGN.md, "The house")
FLOORS: tuple[str, ...] = ("ground", "core", "harness")


def discover() -> tuple[Topic, ...]:
    """Every topic package's manifest, in CLAIMS.md's order (`Topic.order`)."""
    found: list[Topic] = []
    for info in pkgutil.iter_modules(repro.__path__):
        if not info.ispkg or info.name in FLOORS:
            continue
        topic = getattr(importlib.import_module(f"repro.{info.name}"), "TOPIC", None)
        if not isinstance(topic, Topic):
            raise ReproError(
                f"repro/{info.name}/: a topic package declares `TOPIC = Topic(...)` in its __init__.py "
                "(repro.ground.topic); a package that is not a topic belongs in a floor"
            )
        if topic.package != info.name:
            raise ReproError(f"repro/{info.name}/__init__.py: its TOPIC names package {topic.package!r}")
        found.append(topic)
    orders = sorted(t.order for t in found)
    if len(set(orders)) != len(orders):
        raise ReproError(f"topics share a place in CLAIMS.md's order: {sorted((t.order, t.package) for t in found)}")
    return tuple(sorted(found, key=lambda t: t.order))


TOPICS: tuple[Topic, ...] = discover()
#: the topic packages, in CLAIMS.md's order
PACKAGES: tuple[str, ...] = tuple(t.package for t in TOPICS)


def commands() -> list[tuple[str, str]]:
    """(module, function) of every subcommand a topic adds to ``repro``, in the topics' order."""
    return [tuple(c.split(":", 1)) for t in TOPICS for c in t.commands]  # type: ignore[misc]
