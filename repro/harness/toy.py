"""Toy sizes: a profile's rows shrunk until a 2-core CPU runs a claim in seconds, to exercise a
decide chunk end to end (its selection, its fixtures, its verdicts) without the GPU it is sized for.

A pytest plugin, opted into with ``-p repro.harness.toy``:

    pytest claims/ -p repro.harness.toy --profile decide-bb-direction --claim BB-2.2

Every experiment with a `TOY` row reads the profile's row with the toy values deep-merged in
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

# experiment -> toy overrides (any profile's row, deep-merged): Born biased's probe rows, the rows
# of the decide chunks decide-bb-probes and decide-bb-direction, and CA-4's fine-tune (decide-ca4).
# Two layers of 32 wide and a vocabulary of 256 keep the models' build and probe under a second
# each; the larger RoPE GPT-2 of BB-1.2 stays the larger (n_layer · d_model² 12,288 against 2,048).
TOY: dict[str, dict[str, Any]] = {
    "bb_1": dict(d_model=32, n_layer=2, n_head=2, vocab_size=256, n_seq=64, lengths=(4, 8, 16)),
    "bb_1_2": dict(d_model=64, n_layer=3, n_head=2),
    "bb_2_2": dict(d_model=32, n_layer=2, n_head=2, vocab_size=256, n_seq=64, T=16, n_models=4),
    # decide-ca4: two fine-tuning steps of 2 × 8 tokens on each embedded model (seconds; the real
    # models, so the fixtures must be fetched), read on 4 windows
    "context_axis": dict(retrain=dict(steps=2, batch_size=2, seq_len=8, warmup_steps=0, windows=4)),
}

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
