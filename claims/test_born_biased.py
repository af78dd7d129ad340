"""001 "Transformers Are Born Biased" §3–4: structure of random-init transformers.

Encoded so far (the foundation's exemplars): BB-4 (Prop 2, Fig 5), BB-4.2 (Prop 4, Table 3),
BB-6 (Eq 2, Fig 9). Each experiment runs once per module (scoped fixture); the tests then assert
the source's numbers with tolerances built from the Monte-Carlo standard error across
independently drawn models (seeds), plus, where the source's statement is an infinite-width or
uniform-attention approximation, a stated allowance.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from repro import figures, init_bias, stats

# Closed forms are infinite-width (Gaussian-process) limits. At our widths (512–1024) a model's
# pairwise cosine carries an O(1/√d) fluctuation and a small finite-width bias; the source's own
# Monte Carlo differs from its closed forms by up to 0.008 (Table 3: 0.31 vs 1/π = 0.318,
# 0.49 vs 0.493). We allow 0.02 on top of 4 standard errors: ~2.5× that documented gap.
WIDTH_ALLOWANCE = 0.02
Z = 4.0  # standard errors: a two-sided 4σ band is missed by chance ~6e-5 of the time per number


# --------------------------------------------------------------------------- BB-4


@pytest.fixture(scope="module")
def mlp_stack(profile):
    return init_bias.mlp_stack_similarity(**profile.sizes("bb_4"))


@pytest.mark.claim("BB-4", source="001 §4.2 Prop 2, Fig 5, App A.1")
def test_relu_mlp0_contracts_along_the_arccos_map(claim, mlp_stack):
    relu, theory = mlp_stack.curves["relu"], mlp_stack.theory
    tol = [Z * s + WIDTH_ALLOWANCE for s in relu.sem]
    why = f"{Z:g} MC standard errors over {len(relu.values)} models + {WIDTH_ALLOWANCE} finite-width allowance"
    claim.record("ρ̄₁ after 1 ReLU MLP0 block", relu.mean[0], expected=1 / math.pi, tol=tol[0], why=why)
    for layer in (2, 3, mlp_stack.n_layer):
        claim.record(f"ρ̄_{layer} (arc-cosine recurrence)", relu.mean[layer - 1], expected=theory[layer - 1],
                     tol=tol[layer - 1], why=why)
    # Monotone rise: every step up is positive in every model (Prop 2: g(ρ) > ρ on [0, 1)).
    steps = np.diff(relu.values, axis=1)
    claim.record("smallest per-model rise ρ̄_{l+1} − ρ̄_l", steps.min(), expected=0.0, tol=0.0,
                 compare="ge", why="Prop 2: strictly increasing; no tolerance")
    # Fig 5's footnote 5: without norm or residual the signal's scale vanishes with depth (the
    # source's late drop of ρ̄ is attributed to it). Context only: at our depth and float32 the
    # scale shrinks but stays far from underflow, so we see no drop.
    claim.record("rms of ReLU MLP0 output, block L / block 1", relu_rms_ratio(mlp_stack), compare="none")
    claim.figure(figures.fig5_mlp_stack(mlp_stack), "fig5")
    claim.table("Fig 5 at our scale: mean ± SE per block " + str(mlp_stack.sizes),
                ["block l", "ReLU MLP0", "arc-cos theory", "tanh MLP0", "standard (LN+res)"],
                [[l + 1, f"{relu.mean[l]:.4f} ± {relu.sem[l]:.4f}", theory[l],
                  f"{mlp_stack.curves['tanh'].mean[l]:.5f} ± {mlp_stack.curves['tanh'].sem[l]:.5f}",
                  f"{mlp_stack.curves['standard'].mean[l]:.4f}"] for l in range(mlp_stack.n_layer)])
    assert np.all(np.abs(relu.mean - np.array(theory)) <= np.array(tol))
    assert steps.min() > 0


def relu_rms_ratio(res) -> float:
    return float(res.rms["relu"].mean[-1] / res.rms["relu"].mean[0])


@pytest.mark.claim("BB-4", source="001 §4.2 Prop 2 (tanh case), Fig 5")
def test_tanh_mlp0_keeps_sequences_orthogonal(claim, mlp_stack):
    tanh = mlp_stack.curves["tanh"]
    # Prop 2: E ρ̄ = 0 exactly for tanh (odd activation, independent inputs) — no width allowance.
    # Test every layer's mean against 0 with a t-test across models, Bonferroni over layers.
    t = tanh.mean / tanh.sem
    p = 2 * sps.t.sf(np.abs(t), df=len(tanh.values) - 1) * len(t)
    worst = int(np.argmax(np.abs(t)))
    claim.record("max |ρ̄_l| over blocks, tanh MLP0", float(np.abs(tanh.mean).max()), expected=0.0,
                 tol=float(Z * tanh.sem[worst]), why=f"{Z:g} MC standard errors of that block's mean")
    claim.record("Bonferroni t-test p of ρ̄_l = 0 (smallest over blocks)", float(min(1.0, p.min())),
                 expected=0.01, compare="ge", tol=0.0, why="reject 'ρ̄ = 0' only at p < 0.01")
    # ReLU vs tanh on identical weights (footnote 4): the final-layer gap is the contraction itself.
    assert p.min() >= 0.01
    assert np.all(np.abs(tanh.mean) <= Z * tanh.sem + 1e-12)


# --------------------------------------------------------------------------- BB-4.2


@pytest.fixture(scope="module")
def two_blocks(profile):
    sizes = profile.sizes("bb_4_2")
    return [init_bias.two_block_similarity(**{**sizes, "T": T}) for T in sizes["T"]]


@pytest.mark.claim("BB-4.2", source="001 §4.3 Table 3, Prop 4, App A.2")
def test_attention_amplifies_mlp_contraction(claim, two_blocks):
    why = f"{Z:g} MC standard errors over models + {WIDTH_ALLOWANCE} finite-width allowance"
    rows = []
    for res in two_blocks:
        th = res.theory
        for key, label, source in (("h", "h = MLP0(x)", 0.31), ("mlp_mlp", "MLP0∘MLP0", 0.49),
                                   ("attn_mlp", "Attn0∘MLP0", None)):
            c = getattr(res, key)
            claim.record(f"{label}, T={res.T}", c.mean[0], expected=th[key], tol=Z * c.sem[0] + WIDTH_ALLOWANCE,
                         why=why)
            rows.append([res.T, label, source if source is not None else (0.98 if res.T == 128 else "—"),
                         th[key], f"{c.mean[0]:.4f} ± {c.sem[0]:.4f}"])
    claim.table("Table 3: source vs theory vs measured (mean ± SE over models)",
                ["T", "setting", "source (T=128)", "theory", "measured"], rows)
    claim.figure(figures.table3_two_blocks(two_blocks), "table3")
    for res in two_blocks:
        for key in ("h", "mlp_mlp", "attn_mlp"):
            c = getattr(res, key)
            assert c.mean[0] == pytest.approx(res.theory[key], abs=Z * c.sem[0] + WIDTH_ALLOWANCE)
        # the amplification itself: Attn0 contracts more than a second MLP0, in every model
        assert np.all(res.attn_mlp.values > res.mlp_mlp.values)


# --------------------------------------------------------------------------- BB-6


@pytest.fixture(scope="module")
def positional(profile):
    return init_bias.positional_std(**profile.sizes("bb_6"))


# Eq 2 assumes uniform attention. At App B.1's init, pre-LN attention logits have std s ≈ 0.3,
# so Σ_j A_ij² ≈ e^{s²}/i: the std curve sits ~5% above 1/√i for i ≥ 2 while position 1 is exact.
# "Near-perfect overlap" (Fig 9) is asserted as a log-log slope within 0.05 of −1/2 (10% of the
# exponent, which covers that constant offset) and a pointwise match to Eq 2 with measured A.
SLOPE_TOL = 0.05


@pytest.mark.claim("BB-6", source="001 §4.4 Eq 2, Fig 9")
def test_positional_std_decays_as_inverse_sqrt(claim, positional):
    i = positional.positions
    slope, sem = stats.mean_sem([stats.loglog_slope(i, s).slope for s in positional.std.values])
    claim.record("log-log slope of std(o_i) vs i", slope, expected=-0.5, tol=SLOPE_TOL,
                 why="uniform-attention approximation of Eq 2; 10% of the exponent (see module)")
    claim.record("slope standard error over models", sem, compare="none")
    # Eq 2's mechanism, exactly: Var(o_i) = σ²·Σ_j A_ij² when the v_j are uncorrelated.
    ratio = positional.std.mean / (positional.std.mean[0] * np.sqrt(positional.attn_sq.mean))
    rel_sem = positional.std.sem / positional.std.mean
    worst = int(np.argmax(np.abs(ratio - 1)))
    claim.record("max |std(o_i) / (σ√ΣA²) − 1| (Eq 2 with measured A)", float(abs(ratio[worst] - 1)),
                 expected=0.0, tol=float(Z * rel_sem[worst] + 0.01), compare="le",
                 why=f"{Z:g} relative SEs + 1% for the v_j–A dependence that Eq 2 ignores")
    # Finding 6: the first token is the outlier — it alone keeps the full variance.
    outlier = positional.std.mean[0] / positional.std.mean[1:].max()
    claim.record("std(o_1) / max_{i>1} std(o_i)", outlier, expected=math.sqrt(2), tol=0.15, compare="abs",
                 why="uniform attention gives √2 against position 2; ±0.15 covers the e^{s²/2}≈5% offset")
    claim.figure(figures.fig9_positional_std(positional), "fig9")
    assert slope == pytest.approx(-0.5, abs=SLOPE_TOL)
    assert abs(ratio[worst] - 1) <= Z * rel_sem[worst] + 0.01
    assert outlier == pytest.approx(math.sqrt(2), abs=0.15)
