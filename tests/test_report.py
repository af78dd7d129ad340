"""Verdict rules and record comparisons of repro.report."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro import report
from repro.report import Record, verdict_of


@pytest.mark.parametrize(
    "outcomes, verdict",
    [
        ([], report.NOT_ENCODED),
        (["passed", "passed"], report.REPRODUCED),
        (["passed", "skipped"], report.REPRODUCED),
        (["xfailed"], report.NOT_REPRODUCED),
        (["passed", "xfailed"], report.PARTLY),
        (["skipped", "skipped"], report.SKIPPED),
        (["passed", "failed"], report.FAILED),
        (["xfailed", "error"], report.FAILED),
    ],
)
def test_verdicts(outcomes, verdict):
    assert verdict_of(outcomes) == verdict


def test_record_comparisons():
    assert Record("BB-4", "x", 0.31, 1 / math.pi, 0.01, "why").within is True
    assert Record("BB-4", "x", 0.30, 1 / math.pi, 0.01, "why").within is False
    assert Record("BB-4", "x", 1.05, 1.0, 0.1, "why", compare="rel").within is True
    assert Record("BB-4", "x", 0.5, 1.0, 0.0, "why", compare="le").within is True
    assert Record("BB-4", "x", 0.5, 1.0, 0.0, "why", compare="ge").within is False
    assert Record("BB-4", "x", float("nan"), 1.0, 0.1, "why").within is False
    assert Record("BB-4", "x", "text", None).within is None
    with pytest.raises(ValueError):
        Record("BB-4", "x", 1.0, compare="approx")


def test_record_converts_numpy_and_torch_scalars():
    import numpy as np
    import torch

    rec = Record("BB-4", "x", np.float32(0.5), torch.tensor(0.5), 0.1, "why")
    assert type(rec.measured) is float and type(rec.expected) is float and rec.within


@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_fmt_never_crashes(x):
    assert isinstance(report.fmt(x), str)
