"""What the BB claim tests of 001 §4 state beyond their headline checks, as typed readings: context
records of the mechanism and ablation experiments and the checks repeated per unit (per block, per
T), each reading the experiments' results (`init_bias`, `ablation_study`, `closed_forms`) and
taking the tests' thresholds as arguments; `Row` and `Rows`, the readings' vocabulary, which
`probe_records` (§3, Table 1's probes) and `mechanism_rows` share. Nothing here touches the
harness: every function returns `Rows` (a list of `Row`: a `Reading`, and its `Control` where the
check has one) in the order the claim file records and asserts them (`claims/test_born_biased.py`'s
`_emit`: a context row is recorded, a check row asserted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from repro.born_biased.ablation_study import AblationRun
from repro.born_biased.closed_forms import ENUM_T, prop5_approx, prop5_limit
from repro.born_biased.init_bias import (
    NULL_START,
    TWO_BLOCK_LABELS,
    GeluSpreadResult,
    IntraSequenceResult,
    MLPStackResult,
    TwoBlockResult,
    depth_trend,
)
from repro.core.readings import Control, Reading
from repro.ground.runtime import derive_seed


@dataclass(frozen=True)
class Row:
    """One reading for the claim file: a context record (`reading.compare == "none"`) or a check,
    with its negative control where it has one."""

    reading: Reading
    control: Control | None = None

    @property
    def is_check(self) -> bool:
        return self.reading.compare != "none"


class Rows(list):
    """The readings of one unit, in order (a list of `Row`); `record` and `check` take the claim
    fixture's keywords so each reading reads as the call the claim file makes with it."""

    def record(self, name: str, measured: Any, *, source: Any = None, unit: str = "", key: str | None = None) -> None:
        self.append(Row(Reading(name, measured, source=source, unit=unit, key=key)))

    def check(
        self,
        name: str,
        measured: Any,
        threshold: Any = None,
        *,
        compare: str,
        why: str,
        tol: float = 0.0,
        source: Any = None,
        unit: str = "",
        key: str | None = None,
        control: Any = None,
        control_name: str = "",
    ) -> None:
        r = Reading(name, measured, threshold, compare, why, tol, source, unit, key)
        self.append(Row(r, None if control_name == "" else Control(control_name, control)))


# --------------------------------------------------------------------------- §4.2–4.4: the mechanism


def record_gelu_std(gelu_spread: GeluSpreadResult, source_gelu_std: dict) -> Rows:
    """001 Finding 4.1 / Fig 6: the GELU input's std with and without LN beside App B.1's formula
    and the source's values (context: the source's stds are that formula)."""
    rows = Rows()
    th = gelu_spread.theory
    d = gelu_spread.sizes["d_model"]
    for key in ("norm", "nonorm"):
        c = gelu_spread.std[key]
        rows.record(
            f"GELU input std, {'with' if key == 'norm' else 'without'} LN (d={d}); "
            f"App B.1's formula {'0.02·√d' if key == 'norm' else '0.02²·√d'} = {th[key]:.4g}",
            c.mean[0],
            source=source_gelu_std[key],
        )
    return rows


def check_recurrence(mlp_stack: MLPStackResult, z: float, allowance: float, source_rho1: float, ctl: str) -> Rows:
    """001 Prop 2 (§4.2) block by block: ReLU MLP0's ρ̄_l against the arc-cosine recurrence within `z`
    Monte-Carlo standard errors plus the finite-width `allowance`; tanh MLP0 on the same weights
    (`ctl`) through the same comparison at the first and the last block."""
    rows = Rows()
    relu, tanh, theory = mlp_stack.curves["relu"], mlp_stack.curves["tanh"], mlp_stack.theory
    tol = [z * s + allowance for s in relu.sem]
    why = f"{z:g} MC standard errors over {len(relu.values)} models + {allowance} finite-width allowance"
    L = mlp_stack.n_layer
    for l in range(L):
        control = dict(control=float(tanh.mean[l]), control_name=ctl) if l in (0, L - 1) else {}
        name = "ρ̄₁ after 1 ReLU MLP0 block" if l == 0 else f"ρ̄_{l + 1} (arc-cosine recurrence)"
        rows.check(
            name,
            float(relu.mean[l]),
            float(theory[l]),
            compare="abs",
            tol=tol[l],
            why=why,
            source=round(source_rho1, 4) if l == 0 else None,
            **control,
        )
    return rows


def check_two_blocks(res: TwoBlockResult, z: float, allowance: float, source_table3: dict) -> Rows:
    """001 Table 3 / Prop 4 at one T: each setting against its closed form within `z` standard errors
    plus the finite-width `allowance` (the second MLP0 put through Attn0∘MLP0's comparison as its
    control), and the amplification itself: Attn0 contracts more than a second MLP0, in every model."""
    rows = Rows()
    why = f"{z:g} MC standard errors over models + {allowance} finite-width allowance"
    for key, label in TWO_BLOCK_LABELS.items():
        c = getattr(res, key)
        control = {}
        if key == "attn_mlp":
            control = dict(control=float(res.mlp_mlp.mean[0]), control_name="MLP0∘MLP0 (a second MLP, no attention)")
        rows.check(
            f"{label}, T={res.T}",
            float(c.mean[0]),
            float(res.theory[key]),
            compare="abs",
            tol=float(z * c.sem[0] + allowance),
            why=why,
            source=source_table3.get(key, source_table3.get((key, res.T))),
            **control,
        )
    rows.check(
        f"T={res.T}: smallest per-model (Attn0∘MLP0 − MLP0∘MLP0)",
        float((res.attn_mlp.values - res.mlp_mlp.values).min()),
        0.0,
        compare="ge",
        why="Prop 4: attention amplifies the MLP's contraction more than a second MLP, in every model",
    )
    return rows


def record_intra_sequence(res: IntraSequenceResult) -> Rows:
    """001 §4.4 at one T, as context: the inputs' cosine, the null's mean |cosine| (alignment up to
    sign) and the standard stack's cosine after the first and the last layer."""
    rows = Rows()
    s, null = res.standard, res.no_averaging
    rows.record(f"T={res.T}: inputs' cosine (0 layers)", float(res.inputs.mean()))
    rows.record(
        f"T={res.T}: without the averaging, mean |cosine| after {len(null.mean)} layers (up to sign)",
        float(res.no_averaging_abs.mean()),
    )
    rows.record(
        f"T={res.T}: without the averaging, signed cosine after {len(null.mean)} layers (independent inputs: "
        "an odd map of symmetric inputs, it cannot leave 0)",
        float(null.mean[-1]),
    )
    rows.record(
        f"T={res.T}: without the averaging, from cosine {NULL_START}: after 1 → {len(null.mean)} layers",
        f"{res.no_averaging_shared.mean[0]:.3f} → {res.no_averaging_shared.mean[-1]:.4f}",
    )
    rows.record(
        f"T={res.T}: standard attention cosine after 1 → {len(s.mean)} layers", f"{s.mean[0]:.3f} → {s.mean[-1]:.4f}"
    )
    return rows


def check_intra_sequence(res: IntraSequenceResult, overlap_tol: float, z: float, toward_one: float) -> Rows:
    """001 §4.4, Fig 8 at one T: standard attention overlaps Attn0 within `overlap_tol` plus `z`
    standard errors at every layer, rises monotonically, and reaches `toward_one` after the last
    layer — where the same stack without the averaging (attention = identity), on inputs that start
    at cosine NULL_START, must not (its signed cosine can rise; on independent inputs it cannot leave
    0, so that null is context only, `record_intra_sequence`)."""
    rows = Rows()
    s, a, shared = res.standard, res.attn0, res.no_averaging_shared
    rows.extend(record_intra_sequence(res))
    diff = np.abs(s.mean - a.mean)
    tol = overlap_tol + z * np.sqrt(s.sem**2 + a.sem**2)
    worst = int(np.argmax(diff - tol))
    rows.check(
        f"T={res.T}: |standard − Attn0| at the worst layer ({worst + 1})",
        float(diff[worst]),
        0.0,
        compare="abs",
        tol=float(tol[worst]),
        why=f"{overlap_tol} (see module) + {z:g} SE, at every layer",
    )
    rows.check(
        f"T={res.T}: smallest per-layer rise (standard)",
        float(np.diff(s.mean).min()),
        0.0,
        compare="ge",
        why="monotone in depth",
    )
    rows.check(
        f"T={res.T}: standard attention cosine after {len(s.mean)} layers",
        float(s.mean[-1]),
        toward_one,
        compare="ge",
        why="'converges toward 1' (Fig 8): within 0.1 of 1",
        control=float(shared.mean[-1]),
        control_name=f"the same {len(shared.mean)} layers without the averaging (attention = identity), on "
        f"inputs starting at cosine {NULL_START} (free to rise if the per-token maps align tokens)",
    )
    return rows


def record_prop5_context(short: IntraSequenceResult, n_max: int, compared: list) -> Rows:
    """001 Prop 5's context: the source's approximation against its closed form at L = 12, the
    short sequence's Monte Carlo (finite T: the limit does not apply) and the depths where the
    T → ∞ limit is reached (`closed_forms.prop5_depths`)."""
    rows = Rows()
    L12 = prop5_limit(12)
    rows.record(
        "the source's own approximation vs its closed form at L = 12: 1 − 1/L² vs ρ̄′(12)",
        f"{prop5_approx(10**12, 12):.4f} vs {L12:.4f} (gap 1 − ρ̄′: {1 / 144:.4f} vs {1 - L12:.4f}, "
        f"ratio {(1 / 144) / (1 - L12):.2f})",
    )
    rows.record(
        f"context, T={short.T} (finite T: the limit does not apply): MC after {n_max - 1} averagings − ρ̄′({n_max})",
        float(short.attn0.mean[n_max - 2] - prop5_limit(n_max)),
    )
    rows.record(
        f"depths where the T → ∞ limit is reached from T ≤ {ENUM_T[-1]}",
        f"L = {compared[0].L} … {compared[-1].L} (of 3 … {n_max})" if compared else "none",
    )
    return rows


# --------------------------------------------------------------------------- §4.1: the ablation


def record_table2(ablation: dict[str, list[AblationRun]], final: dict, source_table2: dict) -> Rows:
    """001 Table 2's averages at our scale beside the source's, as context."""
    rows = Rows()
    sizes = ablation["full"][0].sizes
    for v, runs in ablation.items():
        rows.record(
            f"Table 2 avg sim, {v} (T={sizes['T']}, N={sizes['n_seq']}, {len(runs)} seeds)",
            final[v].mean(),
            source=source_table2[v],
        )
    return rows


def record_attn_only_p(ablation: dict[str, list[AblationRun]], source_p) -> Rows:
    """Attention-only's histograms per seed: App B.2's p against uniform (the source's), its p
    against the tied head's own null in the label."""
    rows = Rows()
    for r in ablation["attn-only"]:
        rows.record(
            f"attn-only seed {r.seed}: top count {r.top1.count}/{r.top1.n}, log10 p vs uniform (head's null: "
            f"{r.null_log10_p:.2f})",
            r.top1.log10_p,
            source=source_p,
        )
    return rows


# --------------------------------------------------------------------------- checks beside a headline


def check_eq2_pointwise(eq2, z: float) -> Rows:
    """001 §4.4 Eq 2's mechanism, exactly: Var(o_i) = σ²·Σ_j A_ij² when the v_j are uncorrelated —
    std(o_i) against Eq 2 with the measured A within `z` relative SEs + 1% (control: Eq 2 with
    uniform A); and Finding 6: the first token is the outlier, it alone keeps the full variance
    (control: position 2 against the rest)."""
    rows = Rows()
    rows.check(
        "max |std(o_i) / (σ√ΣA²) − 1| (Eq 2 with measured A)",
        eq2.eq2_gap,
        0.0,
        compare="le",
        tol=float(z * eq2.eq2_rel_sem + 0.01),
        why=f"{z:g} relative SEs + 1% for the v_j–A dependence that Eq 2 ignores",
        control=eq2.uniform_gap,
        control_name="Eq 2 with uniform attention (ΣA² = 1/i)",
    )
    rows.check(
        "std(o_1) / max_{i>1} std(o_i)",
        eq2.first_ratio,
        math.sqrt(2),
        compare="abs",
        tol=0.15,
        why="uniform attention gives √2 against position 2; ±0.15 covers the e^{s²/2}≈5% offset",
        control=eq2.second_ratio,
        control_name="position 2 against positions > 2",
    )
    return rows


def check_table2_order(ablation: dict[str, list[AblationRun]], final: dict, alpha: float) -> Rows:
    """001 Table 2's shape beside its flatness test: MLP-only's and full's histograms spiky
    (significant at `alpha` in every seed, against the head's own null; control: attn-only), and
    the order full > MLP-only > attn-only in every seed (paired: same seed index)."""
    rows = Rows()
    for v in ("mlp-only", "full"):
        rows.check(
            f"{v} histogram: largest log10 p over seeds (head's null)",
            max(r.null_log10_p for r in ablation[v]),
            math.log10(alpha),
            compare="le",
            why="spiky: significant at 0.05 in every seed",
            control=max(r.null_log10_p for r in ablation["attn-only"]),
            control_name="attn-only",
        )
    rows.check(
        "smallest per-seed (full − MLP-only) avg sim",
        float((final["full"] - final["mlp-only"]).min()),
        0.0,
        compare="ge",
        why="Table 2's order: full above MLP-only in every seed",
    )
    rows.check(
        "smallest per-seed (MLP-only − attn-only) avg sim",
        float((final["mlp-only"] - final["attn-only"]).min()),
        0.0,
        compare="ge",
        why="Table 2's order: MLP-only above attn-only in every seed",
    )
    return rows


def check_widening(gap: np.ndarray, alpha: float) -> Rows:
    """001 §4.1, Fig 7: the gap full − MLP-only (seeds, L) widens — the seed-mean gap rises over
    blocks 2…L (Kendall trend at `alpha`; control: a shuffled block order), and in every seed the
    gap at the last block exceeds the gap at block 2."""
    rows = Rows()
    tau, tau_ctl = depth_trend(gap[:, 1:].mean(0), derive_seed("bb32a-shuffle"))
    rows.check("Kendall τ of the seed-mean gap over blocks 2…L", tau.statistic, 0.0, compare="ge", why="a widening gap")
    rows.check(
        "Kendall p of that trend",
        tau.p,
        alpha,
        compare="le",
        why="trend at 5%",
        control=tau_ctl.p,
        control_name="the same gaps against a shuffled block order",
    )
    rows.check(
        "smallest (gap at block L − gap at block 2) over seeds",
        float((gap[:, -1] - gap[:, 1]).min()),
        0.0,
        compare="ge",
        why="wider at the end in every seed",
    )
    return rows


def check_prop5_depth(d, approx_tol: float, control: dict) -> Rows:
    """001 Prop 5 at one depth where the T → ∞ limit is reached (`closed_forms.prop5_depths`): the
    extrapolated enumeration against the closed form within `approx_tol` plus the extrapolation's
    own shift (with `control`, the other indexing, where given), and the source's approximation's
    gap 1 − ρ̄′ against the extrapolated gap within a factor ~2."""
    rows = Rows()
    rows.check(
        f"L={d.L}: extrapolated exact enumeration (T → ∞) − closed form",
        d.last.limit - d.closed_form,
        0.0,
        compare="abs",
        tol=approx_tol + d.shift,
        why=f"'≈' within {approx_tol}, plus the extrapolation's shift between triplets ({d.shift:.1g})",
        **control,
    )
    rows.check(
        f"L={d.L}: (1 − approx) / (1 − extrapolated), T → ∞",
        (1 - d.approx) / (1 - d.last.limit),
        1.0,
        compare="abs",
        tol=0.5,
        why="the approximation is about the rate 1 − ρ̄′ ∝ 1/L²: within a factor ~2",
    )
    return rows
