"""What the claims plugin does to the collected tests: it checks their `claim` markers against the
catalogue, makes the claim IDs keywords (`-k SK-1`), marks the tests that read a pretrained
model, gives each claim test its xdist group, keeps only the `--claim` selection, and orders
the groups for `--dist loadgroup`.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping

import pytest

from repro.harness import catalogue


def claim_ids(item: pytest.Item) -> list[str]:
    """The claim IDs of a test's `claim` markers, each once, in the order given."""
    ids: list[str] = []
    for mark in item.iter_markers("claim"):
        ids.extend(str(a) for a in mark.args)
    return sorted(set(ids), key=ids.index)


# Under `pytest -n N --dist loadgroup` (what `make claims` runs), tests that share expensive
# module fixtures must land on one worker, or each worker builds them again. A claim test's
# group: its `xdist_group` marker if it has one (born_biased splits its probes this way), else
# its module, split per pretrained model for tests parametrised by `model_name` (a module's
# per-model fixtures are per model anyway). The longest groups go first (`order_groups`, by the
# seconds a committed baseline recorded), so that the last group a worker picks up is a short one.
_GROUP_SUFFIX = re.compile(r"@[\w.\[\]-]+$")


def xdist_group_of(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    group = item.path.stem.removeprefix("test_")
    params = getattr(getattr(item, "callspec", None), "params", {})
    return f"{group}[{params['model_name']}]" if "model_name" in params else group


def plain_nodeid(nodeid: str) -> str:
    """A node ID without the '@group' suffix xdist's loadgroup appends to it."""
    return _GROUP_SUFFIX.sub("", nodeid)


def prepare(items: list[pytest.Item], claims_prop: str) -> None:
    """Check every `claim` marker (at least one ID, IDs only, each in the catalogue: a usage error
    naming the closest known IDs otherwise) and prepare the claim tests: their IDs as keywords and
    as the `claims_prop` user property their reports carry, their xdist group (before xdist reads
    the markers), and the `pretrained` marker on tests that read a pretrained model."""
    problems = []
    for item in items:
        ids = claim_ids(item)
        marks = list(item.iter_markers("claim"))
        if marks and not ids:
            problems.append(f"{item.nodeid}: @pytest.mark.claim needs at least one claim ID")
        for mark in marks:
            if mark.kwargs:  # the source and section live in the catalogue, once
                problems.append(
                    f"{item.nodeid}: @pytest.mark.claim takes claim IDs only, not "
                    f"{', '.join(sorted(mark.kwargs))} (the catalogue holds each claim's source)"
                )
        for cid in ids:
            try:
                catalogue.get(cid)
            except KeyError as err:
                problems.append(f"{item.nodeid}: {err.args[0]}")
        if {"pretrained", "model_name", "model_names"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.pretrained)  # `-m pretrained`: the claims a --model run is about
        if ids:
            # `-k SK-1` selects by claim ID: the IDs are keywords of the item (substring match, as -k does)
            item.extra_keyword_matches.update(ids)
            item.user_properties.append((claims_prop, ids))
            if item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))
    if problems:
        raise pytest.UsageError("bad claim marker(s):\n  " + "\n  ".join(problems))


def select_claims(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--claim ID[,ID…]: keep the tests that carry one of the IDs (exact; 'CA-' selects a topic),
    deselect the rest. An unknown ID is a usage error with the closest IDs; an ID no collected
    test carries says so."""
    wanted = [w.strip() for w in (config.getoption("--claim") or "").split(",") if w.strip()]
    if not wanted:
        return
    for w in wanted:
        if not w.endswith("-"):
            try:
                catalogue.get(w)
            except KeyError as err:
                raise pytest.UsageError(f"--claim: {err.args[0]}") from None
        elif not any(cid.startswith(w) for cid in catalogue.CATALOGUE):
            raise pytest.UsageError(
                f"--claim {w}: no claim ID starts with {w!r} (topics: {', '.join(catalogue.TOPICS)})"
            )

    def chosen(item: pytest.Item) -> bool:
        return any(cid == w or (w.endswith("-") and cid.startswith(w)) for cid in claim_ids(item) for w in wanted)

    keep = [it for it in items if chosen(it)]
    if not keep:
        raise pytest.UsageError(
            f"--claim {','.join(wanted)}: no collected test carries "
            f"{'it' if len(wanted) == 1 else 'them'} (not yet encoded, or outside the paths given)"
        )
    drop = [it for it in items if not chosen(it)]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def order_groups(items: list[pytest.Item], seconds: Mapping[str, float]) -> None:
    """Under `--dist loadgroup`: the claim groups longest first, a group's length the sum of the
    seconds `seconds` (plain node ID -> seconds, a baseline's `test_durations_s`) gives its tests
    (a test it does not name counts 0: such groups keep their collection order after the
    measured ones), then the tests that carry no claim."""
    total: dict[str, float] = defaultdict(float)
    for it in items:
        if claim_ids(it):
            total[xdist_group_of(it)] += seconds.get(plain_nodeid(it.nodeid), 0.0)
    items.sort(key=lambda it: -total[xdist_group_of(it)] if claim_ids(it) else math.inf)
