"""The checks of 001 §4's mechanism tests (BB-4, BB-3.2a, BB-4.1, BB-5) that read several numbers
of one experiment, as typed readings (`records.Rows`): the claim file (`claims/test_born_biased.py`)
records and asserts them in this order through its `_emit`. Each function reads one experiment's
result (`init_bias`, `ablation_study`, `closed_forms`) and takes the tests' thresholds as
arguments; nothing here touches the harness.
"""

from __future__ import annotations

import numpy as np

from repro.born_biased.closed_forms import prop5_limit
from repro.born_biased.init_bias import GeluSpreadResult, IntraSequenceResult, MLPStackResult, bonferroni_zero_mean_p
from repro.born_biased.records import Rows, check_widening
from repro.core.stats import SeedCurves


def relu_rises(mlp_stack: MLPStackResult, ctl: str) -> Rows:
    """BB-4's monotone rise (Prop 2: g(ρ) > ρ on [0, 1)): every step up in every model, read as the
    share of (model, block) steps that rise, so the control's margin is on the scale of the claim:
    tanh's ρ̄ (`ctl`) wanders about 0 by ~1e-3, so its smallest rise misses 0 by that little,
    while about half of its steps fall."""
    relu, tanh = mlp_stack.curves["relu"], mlp_stack.curves["tanh"]
    steps = {k: np.diff(c.values, axis=1) for k, c in (("relu", relu), ("tanh", tanh))}
    rows = Rows()
    rows.record("smallest per-model rise ρ̄_{l+1} − ρ̄_l, ReLU MLP0", float(steps["relu"].min()))
    rows.record("smallest per-model rise ρ̄_{l+1} − ρ̄_l, tanh MLP0 (the control)", float(steps["tanh"].min()))
    rows.check(
        f"share of the {steps['relu'].size} per-model steps where ρ̄ rises (ρ̄_{{l+1}} > ρ̄_l)",
        float((steps["relu"] > 0).mean()),
        1.0,
        compare="ge",
        why="Prop 2 (g(ρ) > ρ on [0, 1)): increasing in every model, every step, no tolerance",
        control=float((steps["tanh"] > 0).mean()),
        control_name=ctl,
        key="share of the per-model steps where ρ̄ rises",
    )
    return rows


def tanh_zero_mean(mlp_stack: MLPStackResult, z: float) -> Rows:
    """BB-4's tanh half (Prop 2: E ρ̄ = 0 exactly, no width allowance): every block's mean against 0
    with a t-test across models, Bonferroni over blocks, and every block within `z` standard
    errors of 0. Control: ReLU MLP0 on the same weights, through both."""
    tanh, relu = mlp_stack.curves["tanh"], mlp_stack.curves["relu"]
    ctl = "ReLU MLP0 on the same weights (asymmetric)"
    rows = Rows()
    rows.record("max |ρ̄_l| over blocks, tanh MLP0", float(np.abs(tanh.mean).max()))
    rows.check(
        "Bonferroni t-test p of ρ̄_l = 0 (smallest over blocks)",
        bonferroni_zero_mean_p(tanh),
        0.01,
        compare="ge",
        why="reject 'ρ̄ = 0' only at p < 0.01",
        control=bonferroni_zero_mean_p(relu),
        control_name=ctl,
    )
    rows.check(
        "largest |ρ̄_l| / SE_l over blocks, tanh MLP0",
        float(np.abs(tanh.mean / tanh.sem).max()),
        z,
        compare="le",
        why=f"every block within {z:g} MC standard errors of 0",
        control=float(np.abs(relu.mean / relu.sem).max()),
        control_name=ctl,
    )
    return rows


def layerwise_gap(curves: dict[str, SeedCurves], source_table2: dict, alpha: float, attn_zero: float) -> Rows:
    """BB-3.2a (Fig 7): full above MLP-only from block 2 on in every seed (control: attn-only in
    its place), the gap widening (`records.check_widening`), attn-only ≈ 0 within `attn_zero`
    (control: MLP-only). `curves`: `ablation_study.ablation_curves`."""
    full, mlp, attn = (curves[v].values for v in ("full", "mlp-only", "attn-only"))
    gap = full - mlp  # (seeds, L)
    rows = Rows()
    rows.record("full − MLP-only at block 2 (mean over seeds)", gap[:, 1].mean())
    rows.record(f"full − MLP-only at block {gap.shape[1]}", gap[:, -1].mean())
    rows.record("source at block 12 (Table 2): full − MLP-only", source_table2["full"] - source_table2["mlp-only"])
    rows.check(
        "smallest full − MLP-only over blocks ≥ 2 and seeds",
        float(gap[:, 1:].min()),
        0.0,
        compare="ge",
        why="full above MLP-only from block 2 on, in every seed",
        control=float((attn - mlp)[:, 1:].min()),
        control_name="attn-only in place of full",
    )
    rows.extend(check_widening(gap, alpha))
    rows.check(
        "attn-only max |cosine| over blocks and seeds",
        float(np.abs(attn).max()),
        0.0,
        compare="abs",
        tol=attn_zero,
        why="≈ 0 (see BB-3's ATTN_ZERO)",
        control=float(np.abs(mlp).max()),
        control_name="MLP-only",
    )
    return rows


def gelu_engaged(gelu_spread: GeluSpreadResult, engaged: float, contracted: float) -> Rows:
    """BB-4.1, on the same weights with and without LayerNorm (the control): GELU's inputs reach
    its asymmetric range (at least `engaged`) and the MLP output's inter-sequence cosine is at
    least `contracted`."""
    a, c = gelu_spread.asymmetry, gelu_spread.cosine
    ctl = "the same weights without LN"
    rows = Rows()
    rows.check(
        "GELU asymmetry (rms even / odd part) of its inputs with LN, smallest over models",
        float(a["norm"].values.min()),
        engaged,
        compare="ge",
        why="in GELU's asymmetric range: at least half as asymmetric as ReLU (1)",
        control=float(a["nonorm"].values.max()),
        control_name=ctl,
    )
    rows.check(
        "MLP output inter-sequence cosine with LN, smallest over models",
        float(c["norm"].values.min()),
        contracted,
        compare="ge",
        why="'which in turn causes contraction' (see docstring)",
        control=float(c["nonorm"].values.max()),
        control_name=ctl,
    )
    return rows


def prop5_indexing(res: IntraSequenceResult, z: float) -> Rows:
    """BB-5's indexing: L counts the input as a layer, so the closed form for L = 2, 3 matches the
    Monte Carlo after L − 1 averagings within `z` SE + 0.005 (the finite-T effect, by exact
    enumeration, ≤ 0.003). Control: the other indexing (L averagings)."""
    mc = res.attn0  # after l averagings, l = 1 … L
    rows = Rows()
    for L in (2, 3):
        rows.check(
            f"ρ̄′({L}) closed form vs MC after {L - 1} averagings (T={res.T})",
            float(mc.mean[L - 2]),
            prop5_limit(L),
            compare="abs",
            tol=float(z * mc.sem[L - 2] + 0.005),
            why="4 SE + 0.005 finite-T allowance (exact enumeration at this T)",
            control=float(mc.mean[L - 1]),
            control_name=f"MC after {L} averagings (the other indexing)",
        )
    return rows
