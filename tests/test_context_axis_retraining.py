"""CA-4's "seamless integration … with minimal retraining" half (004 §2.2): the full axis's NLL cost
of a `PretrainedRun`, and the power record `experiments.retraining_power` gives it — a declared
bar and retraining budget (ours: the source gives no number), deterministic in the steps run."""

from __future__ import annotations

import inspect
import math

import pytest

from repro.context_axis import experiments
from repro.context_axis.experiments import MINIMAL_RETRAIN, SEAMLESS_NATS, PretrainedRun
from repro.harness.claim import Claim


def run(retrain_steps: int = 0) -> PretrainedRun:
    return PretrainedRun(
        "tiny",
        *(0.0,) * 5,
        params=(10, 10),
        state_unchanged=True,
        impl_restored=True,
        nll={"causal": 4.0, "full": 4.75, "segment:4": 4.2},
        dtype="float64",
        corpus="brown",
        retrain_steps=retrain_steps,
        n_tokens=62,
    )


def test_full_axis_cost_is_full_minus_causal():
    assert run().full_axis_cost == pytest.approx(0.75)
    assert SEAMLESS_NATS == pytest.approx(math.log(1.05))


def test_retraining_power_is_a_valid_declaration_and_zero_without_the_fine_tune():
    kw = experiments.retraining_power(run())
    inspect.signature(Claim.power).bind(object(), **kw)  # every keyword is Claim.power's
    assert kw["value"] == 0.0 and kw["basis"].startswith("interest:")
    assert kw["effect_value"] == SEAMLESS_NATS  # the declared bar, never the run's 0.75
    assert f"{MINIMAL_RETRAIN['steps']:,} steps" in kw["decide"] and "62 scored tokens" in kw["sample"]


@pytest.mark.parametrize("steps, power", [(MINIMAL_RETRAIN["steps"] - 1, 0.0), (MINIMAL_RETRAIN["steps"], 1.0)])
def test_retraining_power_reaches_one_at_the_declared_budget(steps, power):
    assert experiments.retraining_power(run(steps))["value"] == power
