"""Power of the SF checks on noise-free quantities (SF-1, 2, 4, 10): read off the weights, or off
token 0's stream, which is the same in every prompt (`deterministic`), and SF-10's one sampled
part, the median other token each head's ratio divides by (`sf10_power_record`).

Each check declares the effect a model with the claimed property has (`Declared`): the source's
number where it gives one, else the smallest effect of interest we name, with its reason. Split
from `power` (the sampled NLL, generation and HMLV claims) by what the power rests on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from repro.core import stats
from repro.core.readings import Power
from repro.spectral_filters import catalogue
from repro.spectral_filters.study import SINK_LARGE

SINK_MLP = catalogue.number("SF-4", "sink_mlp")  # (layer, layers): 13B's L3 of 40, Fig. 9
SOURCE_WE_SV_RATIO = catalogue.number("SF-1", "we_sv_ratio")  # 003 §3: W_e's σ1 "only twice" σ2


# --------------------------------------------------------------------------- noise-free checks (SF-1, 2, 4, 10)


@dataclass(frozen=True)
class Declared:
    """One check on a noise-free quantity (read off the weights, or off token 0's stream, which is
    the same in every prompt) with the effect a model with the claimed property is declared to
    have: the source's number where it gives one (`basis` "source: …"), else the smallest effect
    of interest we name, with its reason ("interest: …")."""

    check: str
    effect: float
    threshold: float
    compare: str  # "ge" | "le"
    basis: str
    # this run's value and its null's (the check's negative control, or the value of no effect at
    # all), for the shield of a bar of ours (`deterministic`); None: not given, no shield
    measured: float | None = None
    null: float | None = None
    # the check's name as the claim file spells it (a part of it: `Power.covers`); "" = `check`
    covers: str = ""

    def fails(self) -> bool:
        """This run's value misses the threshold (False when no value is given)."""
        if self.measured is None:
            return False
        return self.measured < self.threshold if self.compare == "ge" else self.measured > self.threshold

    def beyond_null(self) -> bool:
        """This run's value lies beyond its null in the claimed direction (strictly)."""
        if self.measured is None or self.null is None:
            return False
        return self.measured > self.null if self.compare == "ge" else self.measured < self.null


def spearman_p(rho: float, n: int) -> float:
    """Two-sided p of a rank correlation `rho` over `n` pairs (t approximation), for a declared ρ."""
    t = rho * math.sqrt((n - 2) / (1 - rho * rho))
    return float(2 * stats.normal_sf(abs(t))) if n > 1000 else float(stats.t_two_sided_p(t, n - 2))


Values = dict[str, tuple[float, float | None]]


def _with_values(declared: list[Declared], values: Values | None) -> list[Declared]:
    """`declared` with this run's (value, null) of each check named in `values`."""
    values = dict(values or {})
    if unknown := sorted(set(values) - {d.check for d in declared}):
        raise ValueError(f"values for undeclared checks {unknown}; declared: {[d.check for d in declared]}")
    return [
        replace(d, measured=values[d.check][0], null=values[d.check][1]) if d.check in values else d for d in declared
    ]


def deterministic(declared: Sequence[Declared], sample: str) -> Power:
    """The power of a test whose checks are all noise-free, covering each declared check: the
    product of `stats.deterministic_power` at each check's declared effect (1 when every declared
    effect clears its threshold: a model with the declared property passes with certainty). Its
    size is taken at the claim's edge as the bars read it: a model at each check's bar passes it
    with certainty (size 0) — a miss contradicts the claim exactly as far as the bar reads it,
    which is why each bar's basis is stated. The basis is "source" only when every effect is the
    source's; one effect of ours makes the record's basis "interest".

    The shield, as for sampled effects (`report.TestOutcome.shielded`): when every check that misses
    its threshold is on a bar of ours and its value lies beyond its null in the claimed direction
    (`Declared.measured`, `Declared.null`), the effect is there — a noise-free quantity beyond its
    null is "significant", `direction_p` 0 — and only our bar's size says it is too small, so the
    test cannot read contradicted on that bar. A missed source bar, or a value not beyond its null,
    leaves no shield."""
    if not declared:
        raise ValueError("deterministic: declare at least one check's effect")
    value = float(np.prod([stats.deterministic_power(d.effect, d.threshold, d.compare) for d in declared]))
    missed = [d for d in declared if d.fails()]
    shield = bool(missed) and all(not d.basis.startswith("source") and d.beyond_null() for d in missed)
    ours = [d for d in declared if not d.basis.startswith("source")]
    parts = "; ".join(f"{d.check} {d.effect:.3g} ({d.basis})" for d in declared)
    basis = (
        ("interest: " + "; ".join(f"{d.check}: {d.basis.split(':', 1)[1].strip()}" for d in ours))
        if ours
        else "source: " + "; ".join(f"{d.check}: {d.basis.split(':', 1)[1].strip()}" for d in declared)
    )
    rel = {"ge": "≥", "le": "≤"}
    at_bars = float(np.prod([stats.deterministic_power(d.threshold, d.threshold, d.compare) for d in declared]))
    return Power(
        value,
        covers=tuple(d.covers or d.check for d in declared),
        effect=parts,
        effect_value=declared[0].effect,
        basis=basis,
        test="; ".join(f"{d.check} {rel[d.compare]} {d.threshold:.3g}" for d in declared),
        sample=sample,
        method="closed form: noise-free quantities (stats.deterministic_power at each declared effect, "
        "product over the checks)"
        + (
            f"; every missed check is on a bar of ours with its value beyond its null in the claimed direction "
            f"({'; '.join(f'{d.check} {d.measured:.3g} vs null {d.null:.3g}' for d in missed)}): noise-free, "
            "so p = 0 in that direction"
            if shield
            else ""
        ),
        direction_p=0.0 if shield else None,
        decide="any size: no sampling noise, so more data does not change the power",
        edge=abs(declared[0].effect - declared[0].threshold),
        size=1.0 - at_bars,
        size_method="noise-free: a model at each check's bar passes it with certainty (stats.deterministic_power "
        "at the bar, product over the checks)",
        size_at="each check's bar (the edge of the claim as the bars read it)",
    )


# --------------------------------------------------------------------------- the powers of SF-1, 2, 4, 10


def sf1_power_record(model: str, n_tokens: int, corpus: str, values: Values | None = None) -> Power:
    """SF-1 (003 §3, Fig 3, footnote 1): the text gives no number for W_u's spectrum; effects of
    interest, read from its words. `n_tokens`: the tokens whose frequency in `corpus` (its title)
    the correlation reads."""
    declared = [
        Declared(
            "σ1/σ2 of W_u",
            3.0,
            3.0,
            "ge",
            f"interest: 'a single large SV' (§3, Fig 3 gives no ratio) read as 1.5× "
            f"the {SOURCE_WE_SV_RATIO:g} of W_e that the source contrasts it with",
        ),
        Declared(
            "σ(0.1d)/σ(0.9d)",
            2.0,
            2.0,
            "le",
            "interest: 'a tail that declines only at the very end' read as less than 2× across 80% of the spectrum",
        ),
        Declared(
            "last-band drop over the per-band body decline",
            1.0,
            1.0,
            "ge",
            "interest: the last 5% falls faster than any 5% of the body",
            covers="last-band drop σ(0.95d)/σ(d)",
        ),
        Declared(
            "|Spearman ρ| of W_u·v1 with log frequency",
            0.5,
            0.3,
            "ge",
            "interest: 'highly representative of token frequency' (footnote 1) read as Cohen's large correlation, 0.5",
            covers="|Spearman ρ| W_u·v1",
        ),
        Declared(
            "Spearman p at ρ = 0.5",
            spearman_p(0.5, n_tokens),
            1e-6,
            "le",
            f"interest: ρ = 0.5 over {n_tokens} tokens",
            covers=": Spearman p",
        ),
    ]
    sample = f"the weights of {model} and {n_tokens} tokens' {corpus} counts"
    return deterministic(_with_values(declared, values), sample=sample)


def sf2_power_record(model: str, n_layers: int, values: Values | None = None) -> Power:
    """SF-2 (003 §3, Figs 4–5 give no number): effects of interest, read from the text's words."""
    declared = [
        Declared(
            "largest U-dark share / chance",
            3.0,
            3.0,
            "ge",
            "interest: 'equipped to read/write the dark subspace' (Figs 4, 5 give no number): 3× chance",
            covers="largest U-dark share of any matrix",
        ),
        Declared(
            "U-dark share of the most dark-writing early W_2",
            0.5,
            0.5,
            "ge",
            "interest: 'writes mostly into the dark subspace' (Fig 5): over half its norm",
        ),
    ]
    sample = f"the weights of {model} (every matrix of {n_layers} layers)"
    return deterministic(_with_values(declared, values), sample=sample)


def sf4_power_record(n_others: int, peak: int, values: Values | None = None) -> Power:
    """SF-4 (003 §5, Fig 9 gives no ratio): effects of interest, read from the text's words. Token
    0's stream is the same in every prompt; `n_others` other tokens at its peak layer `peak`."""
    declared = [
        Declared(
            "ℓ*/L",
            SINK_MLP[0] / SINK_MLP[1],
            0.5,
            "le",
            "source: §5, Fig. 9: the MLP at L3 of LLaMA-2 13B's 40 layers (our bar: the first half)",
            covers="ℓ* (token 0 first reaches half its peak norm",
        ),
        Declared(
            "token 0's norm / the median other token's",
            SINK_LARGE,
            SINK_LARGE,
            "ge",
            f"interest: 'a vector of large norm' (§5; Fig 9 gives no ratio) read as {SINK_LARGE:g}×",
            covers="token 0's norm at its peak",
        ),
        Declared(
            "U-dark fraction",
            0.9,
            0.9,
            "ge",
            "interest: 'almost completely U-dark' (§5) read as ≥ 90% of its norm",
            covers="U-dark fraction of token 0's residual at its peak",
        ),
        Declared(
            "MLP share",
            0.5,
            0.5,
            "ge",
            "interest: 'the MLP … blasts off a vector' (§5) read as over half of it",
            covers="‖Σ MLP contributions up to ℓ*‖",
        ),
        Declared(
            "last block that reads it / L",
            0.9,
            0.8,
            "ge",
            "interest: 'kept around until the last few layers' (§5) read as the last 4 of 40",
            covers="last block that still reads it / L",
        ),
    ]
    sample = f"token 0's stream (the same in every prompt) and {n_others} other tokens at layer {peak}"
    return deterministic(_with_values(declared, values), sample=sample)


def sf10_power_record(
    n_ratios: int, n_others: int, values: Values | None = None, replicates: np.ndarray | None = None
) -> Power:
    """SF-10 (003 App D, Fig 21): 'for all H' is the source's; 'much smaller' is read by us.
    `n_ratios` heads × layers; `n_others` tokens whose median each ratio divides by. Each ratio's
    one sampled part is that median: with `replicates` (n_boot, layers, H: token 0's ratios with
    the other tokens resampled, `dark_signals.value_output_ratio_replicates`) the "for all H" check's
    power is the chance that every head of a model with the declared effect — each ratio at the
    declared 0.5, with its own bootstrap relative sd — reads below 1: the product over heads, so
    its size (1 − power) is family-wise over the heads. The median over heads stays noise-free
    at its threshold (the declared 'much smaller' is the bar itself)."""
    declared = [
        Declared(
            "median ratio token 0 / median token",
            0.5,
            0.5,
            "le",
            "interest: 'much smaller' (Fig 21, different scales) read as at most half",
        ),
        Declared(
            "share of heads where token 0's projection is below the median token's",
            1.0,
            1.0,
            "ge",
            "source: App D, Fig 21 ('for all H')",
            covers="share of heads where token 0's W_vW_o norm",
        ),
    ]
    sample = (
        f"{n_ratios} heads × layers; token 0's stream is the same in every prompt, the median over "
        f"{n_others} other tokens per head the only sampled quantity"
    )
    rec = deterministic(_with_values(declared, values), sample=sample)
    if replicates is None:
        return rec
    reps = np.asarray(replicates, float).reshape(replicates.shape[0], -1)  # (n_boot, heads)
    rel_sd = reps.std(0, ddof=1) / reps.mean(0)
    effect = declared[0].effect  # each head's ratio under the declared effect

    def all_heads(m: int) -> float:  # 'for all H' with m other tokens: the median's sd ∝ 1/√m
        sd = rel_sd * np.sqrt(n_others / m)
        return float(np.prod([stats.normal_sf(-z) for z in (1.0 - effect) / (effect * sd)]))  # P(every head < 1)

    all_h = all_heads(n_others)

    def power_at(m: int) -> float:
        return rec.value * all_heads(m)

    n80 = stats.n_for_power(power_at) if rec.value > 0 else None
    return replace(
        rec,
        value=rec.value * all_h,
        edge=0.0,
        size=1.0 - rec.value * all_h,
        decide=(
            f"{n80:,} other tokens per head (each head's median's bootstrap sd scaled as 1/√n)"
            if n80
            else "beyond 100,000 other tokens per head"
        ),
        decide_either=stats.either_way(power_at, "other tokens per head") if rec.value > 0 else "",
        sample=f"{sample} (bootstrap of each head's median, {reps.shape[0]} replicates)",
        method=rec.method.replace(
            "closed form: noise-free quantities",
            f"closed form: 'for all H' at each head's ratio {effect:g} with its bootstrap relative sd "
            f"(largest {rel_sd.max():.3g}), product over the {reps.shape[1]} heads ({all_h:.4g}); the other checks "
            "noise-free",
        ),
        sd="simulated",
        size_method="1 − power: the chance that a model with the declared effect misses a check, over every head",
        size_at="each head at the declared 0.5, the edge of 'much smaller' as the median's bar reads it",
    )
