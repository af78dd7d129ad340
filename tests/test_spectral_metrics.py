"""repro.spectral_filters.dark_signals' metrics: eq. (4)'s U-dark ratio and dark fraction, eq. (5)'s
key dot products, §7's received attention, HMLV marks (and the τ_μ that marks the source's share),
their contrast in population sds and its random-token control, token 0's sink profile (§5); and
spectral.rep_n, SF-8's repetition. Synthetic tensors and filters, no model (the filters, the
interventions and the parameter projections are in tests/test_spectral.py)."""

from __future__ import annotations

import math

import pytest
import torch

from repro.ground.runtime import ReproError, generator
from repro.spectral_filters import dark_signals, spectral

pytestmark = pytest.mark.usefixtures("one_thread")


def _filters(d: int, seed: int) -> spectral.Filters:
    """The filters of a random tied (4d, d) matrix (tests/test_spectral.py's `_filters` at its defaults)."""
    W = torch.randn(4 * d, d, generator=generator(seed), dtype=torch.float64)
    return spectral.Filters(spectral.spectrum(W), spectral.spectrum(W))


def test_udr_and_dark_fraction():
    d = 40
    F = _filters(d, 0)
    D = F.dark("u")
    dark_vec = F.basis("u", 20, 20)[:, 0].float()
    light_vec = F.basis("u", 1, 1)[:, 0].float()
    assert math.isclose(float(dark_signals.dark_fraction(dark_vec, D)), 1.0, rel_tol=1e-5)
    assert float(dark_signals.dark_fraction(light_vec, D)) < 1e-5
    assert math.isclose(float(dark_signals.udr(dark_vec + light_vec, D)), 1.0, rel_tol=1e-5)  # eq. (4): equal parts


def test_key_dot_products_eq5():
    keys = torch.randn(2, 3, 5, 4, generator=generator(0))
    kdp = dark_signals.key_dot_products(keys)
    b, t = 1, 3
    expect = sum(float(keys[b, h, t] @ keys[b, h, 0]) for h in range(3)) / 3
    assert math.isclose(float(kdp[b, t]), expect, rel_tol=1e-5)


def test_received_attention_and_hmlv():
    """A bar at token 1 (every later query gives it 0.5) is HMLV; others are not; token 0
    (the sink) and the last 4 tokens are excluded (§7)."""
    T = 12
    A = torch.zeros(1, 2, T, T)
    for t in range(T):
        A[0, :, t, 0] = 1.0 if t == 0 else (1.0 if t == 1 else 0.5)
        if t >= 2:
            A[0, :, t, 1] = 0.5
    mean, var = dark_signals.received_attention(A)
    assert math.isclose(float(mean[0, 1]), 0.5, rel_tol=1e-6) and float(var[0, 1]) < 1e-12  # queries 2 … T-1
    assert float(mean[0, 2]) == 0.0
    mask = dark_signals.hmlv(mean, var)
    assert bool(mask[0, 1]) and not bool(mask[0, 0]) and int(mask.sum()) == 1
    assert torch.isnan(mean[0, -4:]).all()


def test_hmlv_contrast_in_population_sds():
    """Marked tokens 1 sd above their prompt's population give a contrast of 1 per marked token;
    the count is per prompt; unmarked prompts contribute 0 and 0."""
    x = torch.zeros(3, 6)
    x[0, 2] = x[1, 3] = 1.0
    x[0, 4] = x[1, 1] = -1.0
    valid = torch.ones(3, 6, dtype=torch.bool)
    valid[:, 0] = False
    mask = torch.zeros(3, 6, dtype=torch.bool)
    mask[0, 2] = mask[1, 3] = True
    s, n = dark_signals.hmlv_contrast(x, mask, valid)
    sd = float(x[valid].double().std())
    assert n.tolist() == [1.0, 1.0, 0.0]
    assert math.isclose(float(s[0]), 1.0 / sd, rel_tol=1e-9) and math.isclose(float(s[1]), 1.0 / sd, rel_tol=1e-9)
    assert float(s[2]) == 0.0
    # invariant to the metric's scale and offset (layers of different scales add up)
    s2, _ = dark_signals.hmlv_contrast(5 * x + 3, mask, valid)
    assert torch.allclose(s, s2)
    # a mask outside the population counts nothing
    s3, n3 = dark_signals.hmlv_contrast(x, ~valid, valid)
    assert float(n3.sum()) == 0.0 and float(s3.abs().sum()) == 0.0
    with pytest.raises(ReproError, match="one shape"):
        dark_signals.hmlv_contrast(x, mask[:, :3], valid)


def test_matched_random_mask_keeps_counts_and_averages_to_zero():
    g = generator(0)
    x = torch.randn(4, 30, generator=g)
    valid = torch.ones(4, 30, dtype=torch.bool)
    valid[:, 0] = False
    valid[:, -4:] = False
    mask = torch.zeros(4, 30, dtype=torch.bool)
    mask[0, 1:6] = True
    mask[2, 10] = True
    total, count = torch.zeros(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    for _ in range(400):
        r = dark_signals.matched_random_mask(mask, valid, g)
        assert r.sum(1).tolist() == mask.sum(1).tolist() and not (r & ~valid).any()
        s, n = dark_signals.hmlv_contrast(x, r, valid)
        total, count = total + s, count + n
    assert abs(float(total.sum() / count.sum())) < 0.05  # random tokens are not above their population


def test_sink_profile_finds_the_jump():
    d, L = 20, 6
    F = _filters(d, 0)
    D = F.dark("u")
    v = F.basis("u", 20, 20)[:, 0].float()
    mlp = torch.zeros(L, d)
    mlp[2] = 100 * v
    attn = torch.zeros(L, d)
    resid = torch.zeros(L + 1, d) + 0.01
    resid[3:] += 100 * v
    p = dark_signals.sink_profile(resid, mlp, attn, D)
    assert p.layer == 2 and p.in_place == [3, 4, 5]
    assert float(p.mlp_dark[2]) > 0.999 and float(p.mlp_sum_norm[2]) == pytest.approx(100, rel=1e-5)


def test_rep_n():
    assert spectral.rep_n([1, 2, 3, 4, 5]) == 0.0
    assert spectral.rep_n([1, 2, 1, 2, 1, 2], n=2) == pytest.approx(1 - 2 / 5)
    assert spectral.rep_n([1]) == 0.0


def test_hmlv_mean_threshold_marks_the_share():
    """τ_μ marks the requested share of the valid pairs among those with variance < τ_σ; NaN and
    invalid pairs are left out, and a share no τ_μ can reach is refused."""
    g = torch.Generator().manual_seed(0)
    mean = torch.rand(8, 40, generator=g)
    var = torch.full_like(mean, 0.001)
    var[:, :5] = 0.5  # high variance: never HMLV
    valid = torch.ones_like(mean, dtype=torch.bool)
    valid[:, 0] = False
    mean[:, -4:] = float("nan")
    tau = dark_signals.hmlv_mean_threshold(mean, var, valid, share=0.1)
    ok = valid & ~torch.isnan(mean)
    marked = dark_signals.hmlv(mean, var, tau) & ok
    assert int(marked.sum()) == round(0.1 * int(ok.sum()))
    with pytest.raises(ReproError):
        dark_signals.hmlv_mean_threshold(mean, var, valid, share=0.95)
    assert 0.02 < dark_signals.HMLV_SHARE < 0.04  # the source's 12,236 / 404,748
