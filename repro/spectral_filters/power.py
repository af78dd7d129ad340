"""Power of the sampled SF claims' checks at their declared effects (SF-3, 5–9), each a `Power`
saying which checks it covers, its edge and how its nuisance sds were taken (their 95% upper
bounds); the noise-free checks' powers (SF-1, 2, 4, 10) are in `noise_free`.

The NLL claims (SF-3, SF-5 … SF-7) compare a filter against the worst of several random filters
of the same rank: their noise is the random filters' spread across seeds as well as the
per-prompt spread (`gap_power`). SF-8's effect is the source's own continuations (003 App E
Table 4), re-tokenised for the model under test (`source_rep`, `table4_power`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from repro.core import stats
from repro.core.readings import Power
from repro.spectral_filters import catalogue, spectral
from repro.spectral_filters.study import SOURCE_SF7

SOURCE_LAYERS = catalogue.number("SF-8", "layers")  # LLaMA-2 13B (003 Table 1), the model of Figs 8–15 and Table 4
# 003 App E Table 4 (LLaMA-2 13B, 80% retained, the Tuatara prompt): layer of 40 → (Ψ, Ω_u)
SOURCE_TABLE4 = catalogue.number("SF-8", "table4")
# 003 App C: under Φ_e filters of 13B/L0's MLP (Fig 16), "log-likelihood remains poor (around 9)"
SOURCE_POOR_NLL = catalogue.number("SF-3", "poor_nll")
#: the NLL step the SF-3/5/6 powers declare, ours: Fig 8 gives no number; App C's "around 9" (another
#: experiment, Φ_e filters on 13B/L0's MLP) over Fig 13's unfiltered 2.47 sets its scale
STEP = SOURCE_POOR_NLL - SOURCE_SF7[1]
SOURCE_SF7_RISE = SOURCE_SF7[2] - SOURCE_SF7[1]  # Fig 13: the NLL rise under Ω_u,14
SOURCE_REMOVED = catalogue.number("SF-7", "removed")  # 003 Fig 13: Ω_{u,14} suppresses 25% of the SVs


def n80(power_at: Callable[[int], float]) -> str:
    """The prompts (of the study's length) at which `power_at` reaches 80%, in words."""
    n = stats.n_for_power(lambda k: power_at(max(k, 2)))
    return f"{n} prompts of this length" if n is not None else "more than 100,000 prompts"


def n95(power_at: Callable[[int], float], n_max: int = 100_000) -> str:
    """`n80`'s twin at 95% (`stats.either_way`): where a miss reads contradicted."""
    return stats.either_way(lambda k: power_at(max(k, 2)), "prompts of this length", n_max=n_max)


def gap_power(effect: float, threshold: float, gap_p: np.ndarray, rnd_means: list[float], sims: int = 20_000):
    """Power of "Φ − the worst of K random filters ≥ threshold" when Φ lies `effect` above the
    random filters' mean, as a function of the number of prompts n, by simulation: the worst of K
    random filters is the mean plus the largest of K normal draws with the seeds' spread (the sd
    of the K measured means), and the prompts add normal noise with the per-prompt sd of the
    measured gap, both at their 95% upper bounds (`stats.sd_upper_bound`: from 3 seeds the plug-in
    sd is optimistic). More prompts cannot beat the seeds' spread, and more seeds raise the worst
    one. Returns (power_at(n), sd across seeds, per-prompt sd)."""
    K = len(rnd_means)
    sd_seed = stats.sd_upper_bound(float(np.std(rnd_means, ddof=1)), K) if K > 1 else 0.0
    sd_prompt = _sd(gap_p)
    rng = np.random.default_rng(0)
    worst = rng.standard_normal((sims, K)).max(1) * sd_seed
    z = rng.standard_normal(sims)

    def power_at(n: int) -> float:
        return float(((effect - worst + z * sd_prompt / math.sqrt(n)) >= threshold).mean())

    return power_at, sd_seed, sd_prompt


def n80_gap(power_at: Callable[[int], float]) -> str:
    """`n80` for a `gap_power` curve, which may never reach 80% with more prompts."""
    n = stats.n_for_power(lambda k: power_at(max(k, 2)), n_max=10_000)
    return (
        f"{n} prompts of this length"
        if n is not None
        else "not reachable with more prompts: the random filters' spread across seeds dominates (a test against "
        "their distribution, over many seeds, would be needed)"
    )


def _sd(x: np.ndarray) -> float:
    """The per-prompt sd of `x` at its 95% upper bound (`stats.sd_upper_bound`)."""
    return stats.sd_upper_bound(float(np.std(x, ddof=1)), len(x))


def sf3_power(
    gap_p: np.ndarray, rnd_means: list[float], step_p: np.ndarray, step: float = STEP, gap: float | None = None
):
    """SF-3's checks at a declared `step` (default STEP, ours), Φ_u,1:19 `gap` above the random
    filters' mean (default half the step: the text gives no number for them): the gap to the worst
    random filter ≥ 1 nat (`gap_power`) × the step ≥ 1 nat (normal approximation). Returns
    (power_at(n), the sds used)."""
    gap_at, sd_seed, sd_gap = gap_power(step / 2 if gap is None else gap, 1.0, gap_p, rnd_means)
    sd_step = _sd(step_p)

    def power_at(n: int) -> float:
        return gap_at(n) * stats.power_threshold(step, 1.0, sd_step / math.sqrt(n))

    return power_at, {"seeds": sd_seed, "gap": sd_gap, "step": sd_step}


def sf5_power(
    drop_p: np.ndarray, swap_p: np.ndarray, first_p: np.ndarray, effect: tuple[float, float, float] = (0.0, 1.0, 0.0)
):
    """SF-5's checks at a declared `effect` (swap ratio, token-0 ratio, dropped step; a step of 0
    means STEP): by default the source's (no step left after the swap, ratio 0, Fig 11 left) and
    ours (the whole step when token 0 alone is filtered, ratio 1; a step of STEP); the ratios'
    noise by the delta method from the per-prompt spread of (numerator − ratio·drop), every sd at
    its 95% upper bound. Returns (power_at(n), the sds used)."""
    swap_ratio, first_ratio, step = effect[0], effect[1], effect[2] or STEP
    step_drop = float(drop_p.mean())
    ratio, ratio0 = float(swap_p.mean()) / step_drop, float(first_p.mean()) / step_drop
    sd = {
        "swap ratio": _sd(swap_p - ratio * drop_p) / abs(step_drop),
        "token-0 ratio": _sd(first_p - ratio0 * drop_p) / abs(step_drop),
        "step": _sd(drop_p),
    }

    def power_at(n: int) -> float:
        r = math.sqrt(n)
        return (
            stats.power_threshold(swap_ratio, 0.25, sd["swap ratio"] / r, "le")
            * stats.power_threshold(first_ratio, 0.25, sd["token-0 ratio"] / r)
            * stats.power_threshold(step, 1.0, sd["step"] / r)
        )

    return power_at, sd


def sf6_power(
    first_p: np.ndarray,
    swap_p: np.ndarray,
    gap_p: np.ndarray,
    rnd_means: list[float],
    effect: tuple[float, float, float] = (0.0, 0.0, 0.0),
):
    """SF-6's checks at a declared `effect` (token-0-only step, its gap above random filters of the
    same rank on token 0, step − swap step; 0 means the default): by default a step of STEP, half
    of it above the random filters' mean (`gap_power`), none after the swap (normal approximation
    for the step and the step − swap step), every sd at its 95% upper bound. Returns
    (power_at(n), the sds used)."""
    step = effect[0] or STEP
    gap_at, sd_seed, sd_gap = gap_power(effect[1] or step / 2, 1.0, gap_p, rnd_means)
    less_swap = effect[2] or step
    sd = {"seeds": sd_seed, "gap": sd_gap, "step": _sd(first_p), "step − swap": _sd(first_p - swap_p)}

    def power_at(n: int) -> float:
        return (
            gap_at(n)
            * stats.power_threshold(step, 1.0, sd["step"] / math.sqrt(n))
            * stats.power_threshold(less_swap, 0.0, sd["step − swap"] / math.sqrt(n))
        )

    return power_at, sd


def sf7_power(rise_p: np.ndarray, bar: float = 0.5):
    """SF-7's check at the source's rise (Fig 13: 2.47 → 2.74 under Ω_u,14): the mean rise ≤ `bar`
    nats, normal approximation with the per-prompt sd at its 95% upper bound. Returns
    (power_at(n), that sd)."""
    effect, sd = SOURCE_SF7_RISE, _sd(rise_p)

    def power_at(n: int) -> float:
        return stats.power_threshold(effect, bar, sd / math.sqrt(n), "le")

    return power_at, sd


def sd_text(sd: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in sd.items())


# The NLL claims' powers: each power model above at the prompts measured, with its declaration
# (what it covers, effect, basis, test, sample, method, the sizes for 80%, the size at the edge)

#: why the step's size is ours: the text gives no number for Fig 8's step
STEP_BASIS = (
    f"interest: Fig 8 gives no number for the step; ours, of the size of App C's 'poor (around "
    f"{SOURCE_POOR_NLL:g})' NLL — another experiment, Φ_e filters on 13B/L0's MLP (Fig 16) — over Fig 13's "
    f"{SOURCE_SF7[1]} unfiltered"
)
#: where the NLL claims' sizes are taken: at our bars, the edge of our reading of the claim's words
AT_THE_BARS = "the bars (a step of 1 nat, 1 nat beyond the random filters' mean, ratio 0.25): the edge of our reading"


def sf3_power_record(gap_p: np.ndarray, rnd_means: list[float], step_p: np.ndarray, tokens: int) -> tuple[Power, dict]:
    """SF-3 (`sf3_power`): a step of STEP nats (ours: the text gives no number for Fig 8's step);
    what a random 95% cut costs LLaMA-2 is not in the text either: we allow it half the step, so
    Φ_u,1:19 lies half the step above the random filters' mean. Its size is taken at our bars (a
    1-nat step, 1 nat above the random mean). `tokens` per prompt. Returns (the power, the sds used)."""
    power_at, sd = sf3_power(gap_p, rnd_means, step_p)
    edge_at, _ = sf3_power(gap_p, rnd_means, step_p, step=1.0, gap=1.0)
    n, k = len(step_p), len(rnd_means)
    p = Power(
        power_at(n),
        covers=("Φ_u,1:19 − worst of", "NLL step Φ_u,1:19 → I after ℓ*"),
        effect=f"a step of {STEP:.2f} nats, Φ_u,1:19 half of it above the random filters' mean (the text gives "
        "no number for either)",
        effect_value=STEP,
        basis=STEP_BASIS,
        test="Φ_u,1:19 − the worst random filter ≥ 0 and ≥ 1 nat, and the step ≥ 1 nat (means over prompts); the "
        "margin implies the sign, so the joint power of margin and step covers all three",
        sample=f"{n} prompts × {tokens} tokens, {k} random bases",
        method=f"simulation (20,000 draws) of the worst of {k} random filters and the prompts' noise, "
        f"normal approximation for the step; sds at their 95% upper bounds {sd_text(sd)}",
        decide=n80_gap(power_at),
        decide_either=n95(power_at, n_max=10_000),
        edge=STEP - 1.0,
        sd="upper bound",
        size=1.0 - edge_at(n),
        size_method="1 − the same model's power with the step and the gap at their 1-nat bars",
        size_at=AT_THE_BARS,
    )
    return p, sd


def sf5_power_record(drop_p: np.ndarray, swap_p: np.ndarray, first_p: np.ndarray, tokens: int) -> Power:
    """SF-5 (`sf5_power`): the source's swap leaves no step (Fig 11 left); token 0 alone shows the
    whole step (our reading of Fig 11 middle's 'clearly visible'), a step of STEP (ours). Its size
    is taken at the edge: no step after the swap, token 0's ratio and the step at our bars."""
    power_at, sd = sf5_power(drop_p, swap_p, first_p)
    edge_at, _ = sf5_power(drop_p, swap_p, first_p, (0.0, 0.25, 1.0))
    n = len(drop_p)
    return Power(
        power_at(n),
        covers=("dropped (the step to remove", "on token 0 only / dropped on all tokens", "swapped / dropped"),
        effect=f"no step left after the swap (ratio 0), the whole step when token 0 alone is "
        f"filtered (ratio 1), a dropped-band step of {STEP:.2f} nats",
        effect_value=STEP,
        basis="interest: Fig 11 left's 'no step-decrease' is the source's (ratio 0); the whole step on token 0 "
        "alone reads Fig 11 middle's 'clearly visible' (ratio 1); " + STEP_BASIS.removeprefix("interest: "),
        test="swap/drop ratio ≤ 0.25, token-0/drop ratio ≥ 0.25, dropped step ≥ 1 nat (means over prompts)",
        sample=f"{n} prompts × {tokens} tokens",
        method=f"closed form: normal approximation (delta method for the ratios), per-prompt sds at their 95% "
        f"upper bounds {sd_text(sd)}, product of the checks' powers",
        decide=n80(power_at),
        decide_either=n95(power_at),
        edge=STEP - 1.0,
        sd="upper bound",
        size=1.0 - edge_at(n),
        size_method="1 − the same model's power with the swap ratio at 0 (the source's), token 0's ratio at 0.25 "
        "and the step at 1 nat (our bars)",
        size_at="no step after the swap; token 0's ratio and the step at our bars",
    )


def sf6_power_record(
    first_p: np.ndarray, swap_p: np.ndarray, gap_p: np.ndarray, rnd_means: list[float], tokens: int
) -> Power:
    """SF-6 (`sf6_power`): a token-0-only step of STEP (ours: Fig 11 middle's 'clearly visible'
    gives no number), half of it above the random filters' mean (as in SF-3), none after the
    swap. Its size is taken at our bars (a 1-nat step, 1 nat above the random mean, step − swap
    just above 0)."""
    power_at, sd = sf6_power(first_p, swap_p, gap_p, rnd_means)
    edge_at, _ = sf6_power(first_p, swap_p, gap_p, rnd_means, (1.0, 1.0, 1e-9))
    n, k = len(first_p), len(rnd_means)
    return Power(
        power_at(n),
        covers=("token-0-only NLL Φ_u,1:19 − worst of", "NLL step at k = 20, token 0 only", "token-0-only step − swap"),
        effect=f"a token-0-only step of {STEP:.2f} nats, half of it above random filters "
        "of the same rank on token 0 (the text gives no number for them), none after the swap",
        effect_value=STEP,
        basis=STEP_BASIS,
        test="gap to the worst random filter ≥ 0 and ≥ 1 nat, step ≥ 1 nat, step − swap step ≥ 0 (means over "
        "prompts; the margin implies the sign)",
        sample=f"{n} prompts × {tokens} tokens, {k} random bases",
        method=f"simulation (20,000 draws) for the gap to the worst of {k} random filters, normal "
        f"approximation for the others; sds at their 95% upper bounds {sd_text(sd)}; product of the checks' powers",
        decide=n80_gap(power_at),
        decide_either=n95(power_at, n_max=10_000),
        edge=STEP - 1.0,
        sd="upper bound",
        size=1.0 - edge_at(n),
        size_method="1 − the same model's power with the step and the gap at their 1-nat bars and step − swap at 0",
        size_at=AT_THE_BARS,
    )


def sf7_power_record(rise_p: np.ndarray, tokens: int) -> Power:
    """SF-7 (`sf7_power`): the source's rise under Ω_u,14 (Fig 13), the claim's own number: a
    claim of "keeps NLL low" at that rise allows no larger one, so the declared effect is the
    claim's edge (size 1 − power)."""
    power_at, sd = sf7_power(rise_p)
    n = len(rise_p)
    return Power(
        power_at(n),
        covers=("NLL increase, Ω_u,14",),
        effect=f"NLL rises by {SOURCE_SF7_RISE:.2f} nats under Ω_u,14",
        effect_value=SOURCE_SF7_RISE,
        basis=f"source: Fig 13 ({SOURCE_SF7[1]} → {SOURCE_SF7[2]})",
        test="mean NLL rise ≤ 0.5 nats over prompts",
        sample=f"{n} prompts × {tokens} tokens",
        method=f"closed form: normal approximation, per-prompt sd of the rise at its 95% upper bound {sd:.3f} nats",
        decide=n80(power_at),
        decide_either=n95(power_at),
        edge=0.0,
        sd="upper bound",
    )


def source_rep(tok, layers_rel: list[float], new_tokens: int) -> dict[str, list[list[float]]]:
    """rep-3 of the source's own Table 4 continuations (LLaMA-2 13B, 80%), in this model's tokens
    cut to `new_tokens`, pooled per layer of ours over the source's rows within 0.1 of its relative
    depth: family → one list of rep-3 values per layer."""
    out: dict[str, list[list[float]]] = {"Ψ (80%)": [], "Ω_u (80%)": []}
    for f in layers_rel:
        rows = [L for L in SOURCE_TABLE4 if abs(L / SOURCE_LAYERS - f) <= 0.1 + 1e-9] or [
            min(SOURCE_TABLE4, key=lambda L: abs(L / SOURCE_LAYERS - f))
        ]
        for i, fam in enumerate(out):
            out[fam].append(
                [
                    spectral.rep_n(tok(" " + SOURCE_TABLE4[L][i], add_special_tokens=False)["input_ids"][:new_tokens])
                    for L in rows
                ]
            )
    return out


def table4_power(src: dict[str, list[list[float]]], none_mean: float, per_layer: int, n_draw: int = 20_000) -> float:
    """SF-8's power: each (prompt, layer) continuation under Ψ and Ω drawn from the source's own
    Table 4 continuations at about the same relative depth (`source_rep`), against this run's
    unfiltered rep-3 `none_mean`; the share of `n_draw` draws in which both SF-8 checks pass
    (Ψ ≥ 0.1 above it, Ω ≤ 0.1 above it)."""
    rng = np.random.default_rng(0)

    def draw(fam: str) -> np.ndarray:
        return np.mean([rng.choice(v, size=(n_draw, per_layer)) for v in src[fam]], axis=(0, 2))

    psi_d, om_d = draw("Ψ (80%)"), draw("Ω_u (80%)")
    ok = ((psi_d - none_mean) >= 0.1) & ((om_d - none_mean) <= 0.1)
    return float(ok.mean())


def sf8_power_record(
    src: dict[str, list[list[float]]],
    none_mean: float,
    layers: list[int],
    n_prompts: int,
    new_tokens: int,
    n_draw: int = 20_000,
) -> Power:
    """SF-8's power, by simulation (`table4_power`): each (prompt, layer)
    continuation under Ψ and Ω drawn from the source's own Table 4 continuations at about the
    same relative depth (`source_rep`: rep-3 in this model's tokens, cut to our length), against
    this run's unfiltered rep-3 `none_mean`; the sizes for 80%: the same simulation with more
    continuations (prompts) per layer, at this length. Its edge is not stated: the source's
    continuations show how far Ψ degenerates, not the least degeneration the claim allows (so a
    miss reads inconclusive, never contradicted)."""
    per_layer = n_prompts

    def power_at(n: int) -> float:
        return table4_power(src, none_mean, n, n_draw)

    n80 = stats.n_for_power(power_at, n_max=256)
    return Power(
        table4_power(src, none_mean, per_layer, n_draw),
        covers=("rep-3 Ψ − unfiltered", "rep-3 Ω − unfiltered"),
        sd="simulated",
        effect="the source's Table 4 continuations "
        f"(LLaMA-2 13B, 80% retained) at the rows within 0.1 relative depth of layers {layers}",
        basis="source: App E Table 4 (LLaMA-2 13B, the Tuatara prompt, Ψ and Ω_u at 80%)",
        test="mean rep-3 Ψ − unfiltered ≥ 0.1 and Ω − unfiltered ≤ 0.1",
        sample=f"{n_prompts} prompts × {len(layers)} layers, {new_tokens} new tokens each",
        method=f"simulation, {n_draw:,} draws of {per_layer} continuations per layer, rep-3 in this model's "
        f"tokens over {new_tokens} new tokens, against this run's unfiltered rep-3",
        decide=(
            f"{n80} prompts per layer at {new_tokens} new tokens"
            if n80
            else f"not with ≤ 256 prompts at {new_tokens} new tokens (the source's own rows, cut to this "
            "length, do not clear both margins against this model's unfiltered rep-3 on average)"
        )
        + "; the paper profile continues 64 tokens, Table 4's length",
        decide_either=stats.either_way(power_at, f"prompts per layer at {new_tokens} new tokens", n_max=256),
    )


# --------------------------------------------------------------------------- SF-9 (§7)

SF9_EFFECT = 0.5  # population sds: our reading of the source's 'much larger' (App F) / 'grows considerably' (§7)
SF9_MIN = 0.2  # population sds: the least we call 'higher' (Cohen's small effect)
SF9_MIN_PROMPTS = 3  # a test across prompts needs at least this many with an HMLV token


@dataclass(frozen=True)
class HMLVTest:
    """SF-9 for one metric of `study.hmlv_statistics` ("udr" or "kdp"), across prompts (the
    independent unit): per prompt, the HMLV tokens' contrast with the prompt's other tokens in
    population sds (`contrast`) and the same for random tokens of the same count (`control`); the
    one-sided t-test of contrast > 0 (`p`, NaN below SF9_MIN_PROMPTS prompts) and its power at
    SF9_EFFECT: threshold check at SF9_MIN (normal approximation) × the t-test (noncentral t)."""

    contrast: np.ndarray
    control: np.ndarray
    p: float
    sd: float
    shape: tuple[int, int]  # prompts × tokens of the §7 pass
    pairs: tuple[int, int]  # HMLV token-layer pairs / all valid ones (of the layers with the sink in place)
    layer_wins: tuple[int, int] | None  # layers where the HMLV mean beats all tokens' / layers with any

    @property
    def n(self) -> int:
        return len(self.contrast)

    @property
    def sd_hi(self) -> float:
        """The per-prompt sd of the contrast at its 95% upper bound (`stats.sd_upper_bound`)."""
        return stats.sd_upper_bound(self.sd, self.n)

    def power_at(self, k: int) -> float:
        return stats.power_threshold(SF9_EFFECT, SF9_MIN, self.sd_hi / math.sqrt(k)) * stats.power_paired_t(
            SF9_EFFECT, self.sd_hi, k
        )

    def decide(self) -> str:
        return n80(self.power_at).replace("of this length", "of 33 tokens")

    def decide_either(self) -> str:
        return n95(self.power_at).replace("of this length", "of 33 tokens")

    def power_record(self) -> Power:
        """The power at SF9_EFFECT, our reading of the claim's words (the text gives no number), so
        the claim's edge as we read it (the 0.2-sd bar leaves a margin below it); with the t-test's
        p as `direction_p`, so that our bar alone cannot read contradicted while the contrast is
        significant in the claimed direction."""
        return Power(
            self.power_at(self.n),
            covers=(": HMLV ", "one-sided t-test over prompts p"),
            edge=0.0,
            sd="upper bound",
            effect_value=SF9_EFFECT,
            effect=f"HMLV tokens {SF9_EFFECT} population sd above the other tokens of their prompt and layer",
            basis="interest: the text gives no number; 'much larger' (App F) / 'grows considerably' (§7) read "
            f"as Cohen's medium effect ({SF9_EFFECT} sd)",
            test=f"mean contrast ≥ {SF9_MIN} sd and one-sided one-sample t over prompts at α = 0.05",
            sample=f"{self.n} prompts with an HMLV token ({self.shape[0]} prompts × {self.shape[1]} tokens)",
            method=f"closed form: normal approximation (threshold) × noncentral t (test), per-prompt sd "
            f"of the contrast at its 95% upper bound {self.sd_hi:.3f} (sample sd {self.sd:.3f}), product of the two "
            "checks' powers",
            decide=self.decide(),
            decide_either=self.decide_either(),
            direction_p=self.p,
        )


def hmlv_test(st: dict, key: str) -> HMLVTest:
    """`HMLVTest` of metric `key` from `study.hmlv_statistics`'s output `st`."""
    lay, d, ctl = st["layers"], st["prompts"][key], st["prompts"][f"{key}_rnd"]
    wins = (int((lay[f"{key}_h"] > lay[f"{key}_all"]).sum()), len(lay["layer"])) if len(lay["layer"]) else None
    enough = len(d) >= SF9_MIN_PROMPTS
    p = float(stats.one_sample_t(d, 0.0, alternative="greater").p) if enough else math.nan
    return HMLVTest(
        d, ctl, p, float(d.std(ddof=1)) if enough else math.nan, tuple(st["shape"]), tuple(st["pairs"]), wins
    )
