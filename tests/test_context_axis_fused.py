"""repro.context_axis.kernels.fused (004 §2.1–2.3, Fig 3): `trimmed` as one C++ op per worker
(fused.cpp) returns what `trimmed` returns — prefix attention per slice, the upper triangle zero,
padding keys ignored, all-padding rows NaN — up to float rounding; wrong input gets one message.
Skipped where the op cannot be built here (no C++ compiler or ninja): the reason is shown."""

from __future__ import annotations

import math

import pytest
import torch

from repro.context_axis import kernels as ca
from repro.ground import native
from repro.ground.runtime import ReproError, generator

pytestmark = pytest.mark.usefixtures("one_thread")

# float32 rounding of a differently ordered computation (fused: scale after QKᵀ, normalisation
# after A·V, glibc's vector expf); measured max |fused − trimmed| 9e-7 at S = 200 with outputs of
# order 1 (d = 16), so 1e-5 leaves a margin of 10× and still rejects a 1% scale error (below)
ATOL = RTOL = 1e-5


@pytest.fixture(scope="module")
def op():
    ok, why = native.available(ca.FUSED_SOURCE)
    if not ok:
        pytest.skip(why)
    return torch.ops.repro_context_axis.trimmed_slices


def _qkv(B, H, S, d, seed):
    g = generator(seed)
    return [torch.randn(B, H, S, S, d, generator=g) for _ in range(3)]


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal NaN positions (all-padding rows), the rest within ATOL/RTOL."""
    return torch.equal(a.isnan(), b.isnan()) and torch.allclose(a.nan_to_num(), b.nan_to_num(), atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("S", [1, 5, 12, 40])
def test_fused_is_trimmed(op, S):
    q, k, v = _qkv(2, 3, S, 16, S)
    pad = torch.zeros(2, S, dtype=torch.bool)
    pad[0, ::3] = True  # key 0 of sample 0 is padding: slice 0's only row is all padding (NaN in both)
    pad[1, S // 2 :] = True
    with torch.no_grad():
        for p in (None, pad):
            got, want = ca.fused(q, k, v, p), ca.trimmed(q, k, v, p)
            assert _same(got, want)
            assert torch.equal(ca.upper_zeroed(got).nan_to_num(), got.nan_to_num())  # positions > c: exactly zero
    assert ca.fused(q, k, v, pad)[0, :, 0, 0].isnan().all()  # sample 0, slice 0, row 0


def test_fused_is_trimmed_on_other_shapes_and_layouts(op):
    """B = 3 with a value width ≠ the key width (the second matmul's leading dimension), inputs
    that are expanded views (copied to contiguous), a pad broadcast from (1, S), an empty v."""
    g = generator(11)
    q, k = (torch.randn(3, 2, 9, 9, 5, generator=g) for _ in range(2))
    v = torch.randn(3, 2, 9, 9, 11, generator=g)
    pad = torch.rand(3, 9, generator=g) < 0.3
    qe, ke, ve = (torch.randn(1, 2, 6, 6, 4, generator=g).expand(3, 2, 6, 6, 4) for _ in range(3))
    one = torch.zeros(1, 6, dtype=torch.bool)
    one[0, 2] = True
    empty = torch.randn(1, 1, 4, 4, 0, generator=g)
    with torch.no_grad():
        assert _same(ca.fused(q, k, v, pad), ca.trimmed(q, k, v, pad))
        assert _same(ca.fused(qe, ke, ve, one), ca.trimmed(qe, ke, ve, one))
        assert ca.fused(q[:1, :1, :4, :4], k[:1, :1, :4, :4], empty).shape == (1, 1, 4, 4, 0)


def test_fused_split_at_its_real_size_is_trimmed(op, monkeypatch):
    """From FUSED_SPLIT_MIN_S the slices are shared out among worker threads, as in `trimmed`;
    each part calls the op with its own slices."""
    q, k, v = _qkv(1, 2, ca.FUSED_SPLIT_MIN_S, 8, 3)
    with torch.no_grad():
        want = ca.trimmed(q, k, v)
    parts = []
    run_split = ca.threads.run_split
    monkeypatch.setattr(ca.threads, "workers", lambda: 2)
    monkeypatch.setattr(ca.threads, "run_split", lambda fn, ps: (parts.append(ps), run_split(fn, ps)))
    with torch.no_grad():
        got = ca.fused(q, k, v)
    assert len(parts) == 1 and len(parts[0]) == 2
    assert _same(got, want)


def test_the_comparison_rejects_a_wrong_scale_and_a_missing_slice(op):
    """Negative controls through the same `_same`: the op with its scale off by 1%, and with one
    slice left out (its rows stay zero), both differ from `trimmed`."""
    S, d = 12, 16
    q, k, v = _qkv(2, 3, S, d, 1)
    with torch.no_grad():
        want = ca.trimmed(q, k, v)
    for scale, slices in ((1.01 / math.sqrt(d), range(S)), (1 / math.sqrt(d), range(S - 1))):
        res = torch.zeros_like(want)
        op(q, k, v, res, None, list(slices), scale)
        assert not _same(res, want)
    res = torch.zeros_like(want)
    op(q, k, v, res, None, list(range(S)), 1 / math.sqrt(d))
    assert _same(res, want)


def test_fused_diagonal_and_dispatch(op):
    q, k, v = _qkv(1, 2, 7, 4, 2)
    with torch.no_grad():
        assert torch.equal(ca.fused(q, k, v, out="diagonal"), ca.trimmed(q, k, v, out="diagonal"))
        assert _same(ca.attend(q, k, v, kernel="fused"), ca.trimmed(q, k, v))


def test_fused_refuses_what_it_does_not_do():
    """Checked before any build: these need no compiler."""
    q, k, v = _qkv(1, 1, 4, 4, 0)
    with pytest.raises(ReproError, match="CPU float32 only"):
        ca.fused(q.double(), k.double(), v.double())
    with pytest.raises(ReproError, match="no backward"):
        ca.fused(q.requires_grad_(), k, v)
    with pytest.raises(ReproError, match="'full' or 'diagonal'"):
        ca.fused(q, k, v, out="band")
    with pytest.raises(ReproError, match="fused"):
        ca.attend(q, k, v, kernel="fusd")
    with pytest.raises(ReproError, match="k torch.float64"):  # names the input that is not float32
        ca.fused(q.detach(), k.double(), v)
    with pytest.raises(ReproError, match="bool"):  # as trimmed's masked_fill, which takes bool only
        ca.fused(q.detach(), k, v, torch.zeros(1, 4))
