"""Toy sizes: a profile's rows shrunk until a 2-core CPU runs a claim in seconds, to exercise a
decide chunk end to end (its selection, its fixtures, its verdicts) without the GPU it is sized for.

A pytest plugin, opted into with ``-p repro.harness.toy``:

    pytest claims/ -p repro.harness.toy --profile decide-bb-direction --claim BB-2.2

Every experiment with a toy row (its topic's manifest, `Topic.toy`: Born biased's probe rows and
the rows of decide-bb-probes and decide-bb-direction, CA-4's fine-tune of decide-ca4) reads the
profile's row with the toy values deep-merged in
(`repro.ground.sizes.merge`: a toy value must name a size of the ci row); an experiment without one
keeps the profile's sizes. At toy sizes a claim's check may fail for want of power, which is not a
regression: a failing check reads as an xfail, whose verdict — contradicted or inconclusive at this
scale — comes from the power the test recorded, as on a user's model (`plugin.pytest_runtest_call`).
A control that passes, or any other error, still fails. The run's claims.json says nothing of the
toy sizes but their `profile_sizes`: run it with its own `--artifacts`.
"""

from __future__ import annotations

from typing import Any

import pytest

from repro.ground import sizes as ground_sizes
from repro.ground.sizes import Sizes
from repro.harness import topics

# experiment -> toy overrides (any profile's row, deep-merged), every topic's (`Topic.toy`)
TOY: dict[str, dict[str, Any]] = {exp: dict(row) for t in topics.TOPICS for exp, row in t.toy.items()}

_ORIGINAL = ground_sizes.Profile.sizes


def toy_sizes(self: ground_sizes.Profile, experiment: str) -> Sizes:
    """`Profile.sizes` with the experiment's `TOY` row merged over the profile's."""
    row = _ORIGINAL(self, experiment)
    if experiment not in TOY:
        return row
    merged = ground_sizes.merge(dict(row), TOY[experiment], f"{experiment}[toy]")
    return Sizes(merged, f"profile {self.name!r} (toy), experiment {experiment!r}")


def pytest_configure(config: pytest.Config) -> None:
    ground_sizes.Profile.sizes = toy_sizes  # type: ignore[method-assign]
    config.add_cleanup(lambda: setattr(ground_sizes.Profile, "sizes", _ORIGINAL))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A failing check at toy sizes is the claim's answer at that scale: an xfail (see the module doc)."""
    try:
        return (yield)
    except AssertionError as err:
        pytest.xfail(f"toy sizes: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
