"""What a topic package declares about itself, once: its `TOPIC = Topic(...)` manifest.

Each topic package (``repro/<topic>/__init__.py``) holds one :class:`Topic`; the roof's registry
(`repro.harness.topics`) discovers the packages under ``repro/`` and reads their manifests, so no
module above a topic keeps a list of topics or a fact about one. What a manifest names:

- ``order``: the topic's place in CLAIMS.md, the order every report, plan and baseline set lists
  the topics in;
- ``toy``: the overrides that shrink its experiments' rows to seconds on two CPU cores
  (``-p repro.harness.toy``, to exercise a decide chunk end to end);
- ``bpe_rows``: the rows whose models use the suite's Brown BPE, with their ``vocab_size``, for
  `repro plan`'s vocabulary check;
- ``commands``: the ``repro`` subcommands the topic adds, as ``"module:function"`` (the function
  takes argparse's subparsers and returns nothing; built without importing torch).

The topic's claims (`catalogue`), sizes (`sizes`) and baselines (`baselines/`) stay where they
are, found by the same package name. Stdlib only: the pytest plugin reads the manifests at
collection time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

#: (experiment, the claims it serves, vocab_size) of one row whose models use the Brown BPE
BpeRow = tuple[str, str, int]


def _no_bpe_rows(prof: Any) -> list[BpeRow]:
    return []


@dataclass(frozen=True)
class Topic:
    """One topic package's manifest (see the module doc)."""

    package: str
    order: int
    toy: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    bpe_rows: Callable[[Any], list[BpeRow]] = _no_bpe_rows
    commands: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.package.isidentifier():
            raise ValueError(f"Topic: package {self.package!r} is not a package name")
        for command in self.commands:
            module, _, function = command.partition(":")
            if not module.startswith(f"repro.{self.package}.") or not function.isidentifier():
                raise ValueError(
                    f"Topic {self.package}: command {command!r} is not 'repro.{self.package}.<module>:<function>'"
                )
        object.__setattr__(self, "toy", MappingProxyType({k: dict(v) for k, v in self.toy.items()}))
