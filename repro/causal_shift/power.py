"""The CS claims' power at declared effects (000): CS-1's switch depth against the source's
(`switch_power`), CS-2's three depth changes over a random-init twin (`measures_power`), CS-4's
paired cut-versus-baseline test at Table II's gain (`cut_power`), its placement's blocked F-test
(`placement_power`) and the last cut ahead of every middle one (`last_cut_power`), CS-5's gate at our budget from
a line fitted to our own gate's snapshots (`gate_power`), and CS-6's order on every benchmark at
Table II's gains (`order_power`, `order_power_record`). Each returns a typed `Power`
(`repro.core.readings`) that names the checks it `covers` (the names below are the claim file's
check names, or a part of them), its distance from the claim's `edge` (and, where that is not 0,
its size computed at the edge) and how its nuisance sd was taken; the claim file records it with
`claim.power`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.stats

from repro.core import stats
from repro.core.readings import ALL_CHECKS, Power
from repro.ground.runtime import ReproError

#: the claim file's check names (or the part of them a power covers), one place for both
SWITCH_CHECK = "switch layer (target overtakes input) / L"
PLACEMENT_CHECK = "blocked F-test p (the cut layers differ; seeds as blocks)"
LAST_CUT_CHECK = "last layer's cut beats every middle layer's: largest one-sided paired p"
GATE_CHECK = "largest π"
ORDER_CHECK = "benchmarks where the order holds"

# --------------------------------------------------------------------------- §III: CS-1, CS-2


def switch_power(r, source: tuple[int, int]) -> Power | None:
    """CS-1's power: could this measurement have seen a switch at the source's depth (`source`:
    (layer, layers), 000 Fig 2)? The switch estimate's spread over sequences (its 95% bootstrap CI
    → se, `r`: a `study.Reading`) against the margin between the source's depth and our bar of 0.5.
    It covers the switch check only (the two match checks have no power). The claim's edge is the
    bar (a switch at half the depth is still "deep"): the source's depth sits `src − 0.5` from it,
    and at the edge a threshold check on a normal estimate fails half the time, the size stated.
    The se is this run's (a bootstrap over its own sequences): plug-in. None when the CI gives no
    finite, positive se."""
    p, L = r.profile, r.profile.n_layers
    lo, hi, _ = r.ci["match"]
    src = source[0] / source[1]
    se = (hi - lo) / (2 * 1.96) / L if np.isfinite(lo) and np.isfinite(hi) else float("nan")
    if not (np.isfinite(se) and se > 0):
        return None

    def power_at(n: int) -> float:
        return stats.power_threshold(src, 0.5, se * np.sqrt(r.n_seq / n))

    n80 = stats.n_for_power(power_at)
    return Power(
        stats.power_threshold(src, 0.5, se),
        covers=(SWITCH_CHECK,),
        effect=f"switch at {source[0]}/{source[1]} = {src:.2f} of depth",
        effect_value=src,
        basis=f"source: 000 Fig 2 (Gemma-2-2B switches at ≈ layer {source[0]} of {source[1]})",
        test="switch layer / L ≥ 0.5 (the deeper half; the check below)",
        sample=f"{r.n_seq} sequences × {p.n_tokens // r.n_seq} tokens",
        method=f"normal approximation, se {se:.3f} of depth from the 95% bootstrap CI over {r.n_seq} sequences",
        decide=f"{n80} sequences (se ∝ 1/√sequences)" if n80 else "more than 100,000 sequences",
        decide_either=stats.either_way(power_at, "sequences"),
        edge=src - 0.5,
        sd="plug-in",
        size=1.0 - stats.power_threshold(0.5, 0.5, se),
        size_method="1 − P(switch / L ≥ 0.5) with the switch at the bar, normal with this run's se",
        size_at="the claim's edge: a switch at half the depth (our bar 0.5)",
    )


@dataclass
class MeasuresPower:
    """CS-2's power (see `measures_power`)."""

    power: float  # P(every check passes | each change at its declared effect)
    se: dict  # name → se of the mean excess over the twin, over sequences
    p: dict  # name → one-sided p of the excess > 0 (the claimed direction), over sequences
    n_seq: int
    n_80: int | None  # sequences for 80% power (None: more than 100,000)
    either: str = ""  # sequences for 95% power (`stats.either_way`)

    def power_record(self, excess: dict, effects: dict, bars: dict, n_tokens: int) -> Power:
        """CS-2's `Power`: its rule (all three checks pass) at the declared `effects`,
        with the noise of the per-sequence excess over the twin (`n_tokens`: the profile's tokens).
        The bars and effects are ours, so a failing check whose excess (`excess`: name → this run's
        excess over the twin) is significant in the claimed direction cannot by itself contradict:
        `direction_p` is the largest one-sided p of the failing checks (of all, when none fails).
        It covers all three checks jointly; the declared effects sit above their bars (`edge`: the
        projection's distance), and at the edge (each change at its bar) each check passes half the
        time, so the size there is 1 − 0.5³ (stated); the se's are this run's, over its sequences
        (plug-in)."""
        failing = [k for k in bars if excess[k] < bars[k]]
        at_edge = float(np.prod([stats.power_threshold(bars[k], bars[k], self.se[k]) for k in bars]))
        return Power(
            self.power,
            covers=(ALL_CHECKS,),
            effect=f"projection rises by {effects['proj']} of the input→output axis (half of Fig 3's "
            f"0 → 1), cos(h, e_in) falls and cos(h, e_out) rises by {effects['falls']}, each "
            "between layers 1…q and the last q, beyond the random-init twin's change",
            effect_value=effects["proj"],
            basis="interest: Fig 3 draws 0 → 1 and falling/rising cosines without printing a number; half the "
            "axis and twice each cosine bar as the least that reads as the figure's transition. The "
            "model's own last layer can reach the axis's output end on this metric (recorded)",
            test=f"all three checks below (projection ≥ {bars['proj']}, each cosine ≥ {bars['falls']})",
            sample=f"{self.n_seq} sequences × {n_tokens // self.n_seq} tokens, paired with the twin's",
            method="normal approximation per check, se over sequences of the excess over the twin "
            f"({', '.join(f'{k} {v:.4f}' for k, v in self.se.items())}); product of the three (a lower "
            "bound: they share sequences)",
            decide=f"{self.n_80} sequences" if self.n_80 else "more than 100,000 sequences",
            decide_either=self.either,
            direction_p=max(self.p[k] for k in failing) if failing else max(self.p.values()),
            edge=effects["proj"] - bars["proj"],
            sd="plug-in",
            size=1.0 - at_edge,
            size_method="1 − the product of the three checks' powers with each change at its bar",
            size_at="the claim's edge as we read it: each change exactly at its bar",
        )


def measures_power(
    ours: dict[str, np.ndarray], null: dict[str, np.ndarray], effects: dict[str, float], bars: dict[str, float]
) -> MeasuresPower:
    """CS-2's power: its rule is that every change (name → (S,) per sequence, `ours` minus the
    random-init twin's `null`, paired by sequence: the same windows) reaches its bar. Each mean
    excess is normal around its declared effect with the se of the per-sequence excesses (the
    twin's own seed-to-seed spread, the control's, is far smaller); the power is the product of
    the checks' powers (their passing is positively correlated through shared sequences, so the
    product is a lower bound, and 1 − it an upper bound on the size). Also the one-sided p of each
    excess in the claimed direction (one-sample t over sequences), for the direction shield."""
    diff = {k: np.asarray(ours[k], float) - np.asarray(null[k], float) for k in effects}
    n = min(int(np.isfinite(d).sum()) for d in diff.values())
    se = {k: float(np.nanstd(d, ddof=1) / np.sqrt(np.isfinite(d).sum())) for k, d in diff.items()}
    p = {k: float(stats.one_sample_t(d[np.isfinite(d)], 0.0, "greater").p) for k, d in diff.items()}

    def power_at(m: int) -> float:
        return float(np.prod([stats.power_threshold(effects[k], bars[k], se[k] * np.sqrt(n / m)) for k in effects]))

    return MeasuresPower(power_at(n), se, p, n, stats.n_for_power(power_at), stats.either_way(power_at, "sequences"))


# --------------------------------------------------------------------------- §IV: CS-4 … CS-6


def cut_power(diff: np.ndarray, base: float, rel_gain: float) -> Power:
    """CS-4's `Power` of its paired test at the source's effect. Fig 4 prints no number;
    its size is taken from Table II, where the fixed cut beats the baseline by `rel_gain` (relative,
    mean over the four benchmarks; higher-is-better scores), applied as the same relative
    improvement of our validation loss `base` (an assumption, stated in the record), against our
    paired seed spread (`diff`: cut at layer 0 − baseline, per seed; plug-in). A rejection implies
    a negative mean difference, so the power is that of both checks (`ALL_CHECKS`). The claim's
    edge is no gain at all ("improves"): the effect sits `effect` from it, and there the test
    rejects with probability α, the size (0.95) stated."""
    effect = rel_gain * base
    sd_diff = float(diff.std(ddof=1))

    def power_at(n: int) -> float:
        return stats.power_paired_t(effect, sd_diff, max(n, 2))

    n80 = stats.n_for_power(power_at)
    return Power(
        stats.power_paired_t(effect, sd_diff, len(diff)),
        covers=(ALL_CHECKS,),
        effect=f"cut at layer 0 improves the loss by "
        f"{effect:.4f} nats (assumed: Table II's fixed-cut gain over the baseline, {100 * rel_gain:.2f}% "
        f"relative, mean of its four benchmarks, as a relative loss improvement; Fig 4 gives no number)",
        effect_value=effect,
        basis="source: 000 Table II (fixed cut over baseline, relative, mean of its four benchmarks; taken as "
        "a relative improvement of our validation loss, at the source's 10B tokens, not modelled at ours)",
        test="one-sided paired t at α = 0.05 (cut at layer 0 < baseline; the check below)",
        sample=f"{len(diff)} paired seeds (same initial weights and data order per pair)",
        method=f"closed form: noncentral t, paired sd {sd_diff:.4f} over {len(diff)} seeds",
        decide=f"{n80} paired seeds at this model size" if n80 else "more than 100,000 paired seeds",
        decide_either=stats.either_way(power_at, "paired seeds at this model size"),
        edge=effect,
        sd="plug-in",
        size=1.0 - stats.power_paired_t(0.0, sd_diff, len(diff)),
        size_method="1 − P(the one-sided paired t rejects) at no gain: 1 − α",
        size_at="the claim's edge: no gain from the cut (the claim allows any improvement)",
    )


def _gain_effect(base: float, rel_gain: float) -> tuple[float, str]:
    effect = rel_gain * base
    return effect, (
        f"Table II's fixed-cut gain over the baseline ({100 * rel_gain:.2f}% relative, mean of its four "
        f"benchmarks) as a relative improvement of our validation loss: {effect:.4f} nats"
    )


def placement_power(sweep: np.ndarray, base: float, rel_gain: float) -> Power:
    """CS-4's `Power` for its "highly sensitive to the chosen layer" (Fig 4 prints no
    number): the blocked F-test over the cut layers (`stats.blocked_f`, seeds as blocks) at a
    declared effect of interest — moving the cut between layers changes the loss by as much as the
    cut gains (Table II's fixed-cut gain, `rel_gain` of our loss `base`) — in its least favourable
    layout for that range (two layers at ±half of it, the rest between: Σ(μ − μ̄)² = range²/2). The
    noise: the residual (seed × layer) sd at its 95% upper bound (`stats.sd_upper_bound`), so a few
    seeds cannot make the power optimistic. `sweep`: (seeds, layers) validation losses. The
    declared effect is our reading's bar ("at least as much as the cut gains"), so it is the edge
    (0) and 1 − power its size (the least favourable layout makes that an upper bound)."""
    n, L = sweep.shape
    f = stats.blocked_f(sweep)
    sd = stats.sd_upper_bound(math.sqrt(f.ms_error), f.df_error + 1)
    effect, words = _gain_effect(base, rel_gain)
    mu = np.zeros(L)
    mu[0], mu[-1] = -effect / 2, effect / 2  # which two layers does not matter to the F-test

    def power_at(m: int) -> float:
        return stats.power_blocked_f(mu, sd, max(m, 2))

    n80 = stats.n_for_power(power_at)
    return Power(
        power_at(n),
        covers=(PLACEMENT_CHECK,),
        effect=f"the layer means span {effect:.4f} nats (best to worst cut), two layers at the extremes: {words}",
        effect_value=effect,
        basis="interest: 'highly sensitive to the chosen layer' read as a placement that moves the loss by at "
        "least as much as the cut gains (Table II's fixed-cut gain; Fig 4 gives no number)",
        test=f"blocked F-test at α = 0.05 over the {L} cut layers, seeds as blocks (the check below)",
        sample=f"{n} seeds × {L} cut layers (each seed's initial weights and data order for every layer)",
        method=f"closed form: noncentral F on ({f.df_treatments}, {f.df_error}) df, residual sd at its 95% upper "
        f"bound ({sd:.4f}; plug-in {math.sqrt(f.ms_error):.4f})",
        decide=f"{n80} seeds × {L} cut layers at this model size" if n80 else "more than 100,000 seeds",
        decide_either=stats.either_way(power_at, f"seeds × {L} cut layers at this model size"),
        edge=0.0,
        sd="upper bound",
    )


def last_cut_power(sweep: np.ndarray, base: float, rel_gain: float) -> Power:
    """CS-4's `Power` for its "a late cut is second best", tested as the source's text
    names it ("the final layer, corresponding to the second-best fixed choice"): the cut at the
    last layer beats the cut at every middle layer (1 … L − 2), an intersection–union test of
    one-sided paired t's (each at α; no multiplicity correction: all must reject). Its power at
    the declared effect (the last layer ahead of each middle one by Table II's fixed-cut gain) is
    bounded below by 1 − Σ(1 − power of each pair), each pair's sd at its 95% upper bound. The
    claim's edge is no margin ("second best" names none): the declared margin sits `effect` from
    it, and there the test passes with probability at most α, the size (≥ 0.95) stated."""
    n, L = sweep.shape
    effect, words = _gain_effect(base, rel_gain)
    sds = [stats.sd_upper_bound(float((sweep[:, k] - sweep[:, -1]).std(ddof=1)), n) for k in range(1, L - 1)]

    def power_at(m: int) -> float:
        m = max(m, 2)
        return max(0.0, 1.0 - sum(1.0 - stats.power_paired_t(effect, sd, m) for sd in sds))

    n80 = stats.n_for_power(power_at)
    return Power(
        power_at(n),
        covers=(LAST_CUT_CHECK,),
        effect=f"the cut at the last layer beats the cut at every middle layer by {effect:.4f} nats: {words}",
        effect_value=effect,
        basis="interest: 'a late cut is second best' as a margin over every middle layer as large as the cut's "
        "own gain (Table II; Fig 4 gives no number)",
        test=f"intersection–union of {L - 2} one-sided paired t's at α = 0.05 (last layer < layer k, k = 1 … "
        f"{L - 2}; the check below)",
        sample=f"{n} seeds (each layer's cut from the seed's initial weights and data order)",
        method="closed form: noncentral t per pair, paired sds at their 95% upper bounds "
        f"({', '.join(f'{sd:.4f}' for sd in sds)}), combined by the union bound 1 − Σ(1 − power)",
        decide=f"{n80} seeds × {L} cut layers at this model size" if n80 else "more than 100,000 seeds",
        decide_either=stats.either_way(power_at, f"seeds × {L} cut layers at this model size"),
        edge=effect,
        sd="upper bound",
        size=1.0 - min(stats.power_paired_t(0.0, sd, n) for sd in sds),
        size_method="1 − the smallest pair's P(reject) at no margin (the IUT passes only if every pair rejects)",
        size_at="the claim's edge: the last cut level with the middle ones",
    )


def trajectory_gap(a: list[float], b: list[float], tail: float = 0.5) -> tuple[float, float]:
    """(gap, se): the training loss of run `b` minus run `a`'s at their last step, from a
    least-squares line through the last `tail` of their per-step losses (`TrainResult.losses`).
    The two runs read the same batches in the same order (one data order for every variant), so
    the per-step difference is paired; while a run reads under one epoch of its corpus (ci: 0.3M of
    Brown's 1.3M training tokens; decide-cs-gate: 2.3M of the mix's 9.8M) each batch is new to the model
    and the training loss an unbiased reading of the loss at that step. se: from
    the line's residuals, taken as independent (the batches are; an autocorrelated residual would
    make it optimistic)."""
    d = np.asarray(b, float) - np.asarray(a, float)
    if d.ndim != 1 or d.size < 6:
        raise ReproError(f"trajectory_gap needs two runs' per-step losses of equal length ≥ 6 (got {d.shape})")
    k = max(int(d.size * tail), 3)
    t = np.arange(d.size - k, d.size, dtype=float) - (d.size - 1)  # 0 at the last step: the intercept
    fit = scipy.stats.linregress(t, d[-k:])
    return float(fit.intercept), float(fit.intercept_stderr)


def expected_power(power_at, effect: float, se: float, points: int = 41) -> float:
    """E[power_at(δ)] over δ ~ N(effect, se²): the power at an effect known only with its
    uncertainty (a normal quadrature over ±4 se; `power_at(effect)` when se is 0)."""
    if se <= 0:
        return float(power_at(effect))
    z = np.linspace(-4.0, 4.0, points)
    w = np.exp(-0.5 * z * z)
    return float(sum(wi * power_at(effect + zi * se) for zi, wi in zip(z, w)) / w.sum())


def cut_budget_power(diff: np.ndarray, gaps: list[tuple[float, float]], tokens: int) -> Power:
    """CS-4's `Power` of its paired test at *our* budget (basis "budget"): the cut's gain
    expected after this profile's `tokens` per model, from our own runs' trajectories —
    `gaps`: per seed, `trajectory_gap(baseline, cut at layer 0)` (negative: the cut is ahead) —
    with the seeds' spread as its uncertainty; the test's noise is the paired validation
    differences' sd at its 95% upper bound (`diff`: cut − baseline per seed; `stats.sd_upper_bound`:
    a plug-in sd from 3 seeds can be 4× too small). The power is its expectation over the gain's
    uncertainty (`expected_power`). Sizing only: its effect is fitted to this run (`fitted`)."""
    gain = -np.array([g for g, _ in gaps])  # (seeds,) the cut's improvement at our last step
    n = len(diff)
    effect, se = float(gain.mean()), float(gain.std(ddof=1) / math.sqrt(len(gain))) if len(gain) > 1 else 0.0
    sd = stats.sd_upper_bound(float(diff.std(ddof=1)), n)
    value = expected_power(lambda e: stats.power_paired_t(e, sd, n), effect, se)

    def power_at(m: int) -> float:
        return stats.power_paired_t(effect, sd, max(m, 2))

    n80 = stats.n_for_power(power_at) if effect > 0 else None
    return Power(
        value,
        covers=(ALL_CHECKS,),
        effect=f"cut at layer 0 improves the loss by {effect:+.4f} ± {se:.4f} nats at {tokens:,} tokens per model "
        "(our budget), from our runs' paired training-loss trajectories",
        effect_value=effect,
        basis="budget: per seed, a least-squares line through the last half of the cut's and the baseline's "
        "per-step training losses (the same batches: paired; under one epoch: each batch unseen), at the last "
        f"step; mean over {len(gain)} seeds ± their standard error",
        test="one-sided paired t at α = 0.05 (cut at layer 0 < baseline; the check below)",
        sample=f"{n} paired seeds (same initial weights and data order per pair)",
        method=f"closed form: noncentral t with the paired sd at its 95% upper bound ({sd:.4f} from {n} seeds), "
        f"averaged over the effect's normal uncertainty",
        decide=f"{n80} paired seeds at this budget"
        if n80
        else "no number of seeds at this budget: our runs show no gain from the cut here (train longer)",
        decide_either=stats.either_way(power_at, "paired seeds at this budget") if effect > 0 else "",
        sd="upper bound",
        fitted=True,
    )


def order_budget_gains(gap_cut: tuple[float, float], gap_gate: tuple[float, float], loss: float) -> tuple[float, float]:
    """CS-6's gains at our budget, relative, from seed 0's paired training-loss trajectories: the
    best fixed cut over the baseline (`gap_cut`: `trajectory_gap(baseline, cut)`) and gating over
    that cut (`gap_gate`: `trajectory_gap(cut, gate)`), each over the baseline's last loss `loss`."""
    return -gap_cut[0] / loss, -gap_gate[0] / loss


def order_power(
    base: np.ndarray,
    higher_is_better: np.ndarray,
    seed_sd: np.ndarray,
    rel_gain: tuple[float, float],
    seeds: int = 1,
    draws: int = 20_000,
) -> float:
    """CS-6's power: the chance that gating ≥ fixed cut ≥ baseline shows on every benchmark if
    Table II's relative gains are real. `base` (benchmark,): our baseline's scores;
    `higher_is_better` (benchmark,) bools; `seed_sd` (benchmark,): the spread of a score over
    seeds; `rel_gain`: (fixed cut over baseline, gating over fixed cut). Each model's score is
    normal around base·(1 ± gain) with sd seed_sd/√seeds (`seeds`: models averaged per variant),
    by simulation (`draws`, a fixed generator: the same number every run)."""
    sign = np.where(higher_is_better, 1.0, -1.0)  # (benchmark,)
    gain = np.array([0.0, rel_gain[0], (1 + rel_gain[0]) * (1 + rel_gain[1]) - 1])  # (model,)
    means = base[:, None] * (1 + sign[:, None] * gain[None, :])  # (benchmark, model)
    sd = seed_sd / np.sqrt(seeds)
    g = np.random.default_rng(0)
    sims = means[None] + g.normal(0.0, 1.0, size=(draws, *means.shape)) * sd[None, :, None]
    better = sims * sign[None, :, None]  # higher is better
    return float(np.all((better[..., 2] >= better[..., 1]) & (better[..., 1] >= better[..., 0]), axis=1).mean())


def order_power_record(
    rows,
    seed_sd: np.ndarray,
    rel_gain: tuple[float, float],
    n_seeds: int,
    *,
    budget: tuple[tuple[float, float], int] | None = None,
) -> Power:
    """CS-6's `Power`: the chance that the order shows on every benchmark if the
    source's gains are real. Table II's scores are accuracies (higher is better): its relative
    gains (`rel_gain`: fixed cut over baseline, gating over fixed cut, mean of its four
    benchmarks) are applied like for like to our accuracy benchmarks, and as relative NLL
    improvements to the last-word NLL; each model's score carries the seed spread of that
    benchmark (`seed_sd`, over the baseline's `n_seeds` seeds), by simulation (`order_power`).
    `rows`: `study.Table2Rows`. `budget`: ((fixed cut over baseline, gating over fixed cut) at our
    budget, `order_budget_gains`; tokens per model): the same simulation at those gains, the
    record's basis "budget" (the gains from one seed's trajectories: no seed spread of their own;
    `fitted`). The seed sd is this run's baseline seeds' (plug-in). The claim's edge is no gain
    (the order on every benchmark at gains of 0+): the source's gains sit `rel_gain[0]` (fixed
    cut over baseline) from it, and the size there is simulated too."""
    base = np.array([r[1] for r in rows.acc] + [rows.last_word[1]])  # (benchmark,)
    higher = np.array([True] * len(rows.acc) + [False])
    sd = seed_sd
    if budget is not None:
        rel_gain = budget[0]
    power = order_power(base, higher, sd, rel_gain)

    def power_at(n: int) -> float:
        return order_power(base, higher, sd, rel_gain, seeds=n, draws=4_000)

    n80 = stats.n_for_power(power_at, n_max=4096)
    k = len(rows.acc) + 1
    at_edge = {}
    if budget is None:
        at_edge = dict(
            edge=float(rel_gain[0]),
            size=1.0 - order_power(base, higher, sd, (0.0, 0.0)),
            size_method="1 − the simulated chance of the order on every benchmark at no gains (20,000 replicates)",
            size_at="the claim's edge: gains of 0 (any improvement reads as the claim)",
        )
    return Power(
        power,
        covers=(ORDER_CHECK,),
        effect=(
            f"Table II's gains ({100 * rel_gain[0]:.2f}% fixed cut over baseline, "
            f"{100 * rel_gain[1]:.2f}% gating over fixed cut, relative, mean of its four benchmarks), applied to "
            "our accuracies (and as relative NLL gains to the last-word NLL)"
            if budget is None
            else f"our gains at {budget[1]:,} tokens per model ({100 * rel_gain[0]:+.2f}% fixed cut over baseline, "
            f"{100 * rel_gain[1]:+.2f}% gating over fixed cut, relative training loss), applied like Table II's"
        ),
        effect_value=None if budget is None else float(rel_gain[0]),
        basis="source: 000 Table II (relative gains, mean of its four benchmarks, at the source's 10B tokens)"
        if budget is None
        else "budget: seed 0's paired per-step training losses (baseline, the best fixed cut, gating: the same "
        "batches, each unseen), a least-squares line through their last half at the last step "
        "(`trajectory_gap`), over the baseline's loss",
        test=f"gating ≥ fixed cut ≥ baseline on every one of the {k} benchmarks (the check below)",
        sample=f"one model per variant × {k} benchmarks ({rows.n_items} last-word items)",
        method=f"simulation, 20,000 replicates: each model's score on each benchmark normal around our "
        f"baseline's score × (1 ± the gain) with that benchmark's seed sd over {n_seeds} "
        "baseline seeds",
        decide=(
            f"{n80} seeds per variant, each benchmark's score their mean (80% in 4,000 simulations), "
            "at this profile's tokens"
            if n80
            else "more than 4,096 seeds per variant at this profile's tokens: far more tokens than this profile"
        ),
        decide_either=stats.either_way(power_at, "seeds per variant at this profile's tokens", n_max=4096),
        sd="plug-in",
        fitted=budget is not None,
        **at_edge,
    )


@dataclass
class GatePower:
    """CS-5's power at our budget (see `gate_power`): the straight line fitted to our own gate's
    largest π over its snapshots, what it predicts at our last step and how uncertain that is,
    and the budget at which it would clear the bar with 80% power."""

    power: float  # P(largest π ≥ bar at our last step) under the fitted line, slope uncertainty included
    expected: float  # largest π the fitted line gives at our last step (the effect at our budget)
    trend_per_step: float  # fitted drift of the largest π away from uniform, per step
    trend_se: float  # its standard error
    noise_sd: float  # residual sd of the largest π about the line
    df: int  # the residual degrees of freedom (snapshots after init − 1)
    steps: int  # our last step
    steps_80: float  # steps at which the fitted line clears the bar with 80% power (inf: never)
    either: str = ""  # steps for 95% power under the fitted line (`stats.either_way`)

    def power_record(self, hist: dict[int, np.ndarray], train: dict, paper: dict, bar: float) -> Power:
        """CS-5's `Power` at our budget (`hist`: the gate's snapshots, step → π;
        `train`, `paper`: this profile's and the paper profile's `train` rows): the effect is our
        own gate's fitted drift carried to our last step, since Fig 5 has no step axis and the
        source's pace cannot be scaled to ours: basis budget, fitted to this run, its noise the
        fit's residual sd (plug-in). It covers the concentration check only; the late-layer check
        has no power."""
        L = len(hist[max(hist)])
        per_step = train["batch_size"] * train["seq_len"]
        if np.isfinite(self.steps_80):
            decide = (
                f"≈ {self.steps_80:,.0f} steps ≈ {self.steps_80 * per_step:.2e} tokens at {per_step} tokens per "
                f"step (this profile: {train['steps']}; the paper profile: {paper['steps']:,} steps × "
                f"{paper['batch_size'] * paper['seq_len']:,} tokens), if the gate kept its fitted pace"
            )
        else:
            decide = (
                "no budget under the fitted line: its drift is not positive beyond its own uncertainty; "
                "a longer run must measure the pace first"
            )
        return Power(
            self.power,
            covers=(GATE_CHECK,),
            effect=f"largest π {self.expected:.4f} after our {self.steps} steps: our gate's fitted drift "
            f"{self.trend_per_step:.3g} ± {self.trend_se:.2g} per step from 1/{L} carried to our budget",
            effect_value=self.expected,
            basis=f"budget: a straight line through (0, 1/{L}) fitted to our gate's largest π over its "
            f"{len(hist)} snapshots (least squares; its slope's standard error propagated); the source "
            "gives no pace (Fig 5 has no step axis)",
            test=f"largest π ≥ {bar} at the last step (the check below)",
            sample=f"one gate run of {self.steps} steps × {per_step} tokens, {len(hist)} snapshots",
            method=f"closed form: the line's prediction at step {self.steps}, Student t with {self.df} df and sd "
            f"√(residual sd² + steps²·se²) = {np.hypot(self.noise_sd, self.steps * self.trend_se):.4f} "
            "(one run's snapshots are correlated: if anything the sd is too small)",
            decide=decide,
            decide_either=self.either,
            sd="plug-in",
            fitted=True,
        )

    def power_at(self, steps: float, bar: float) -> float:
        """P(largest π ≥ `bar` after `steps`) under the fitted line: a prediction, Student t with
        `df` degrees of freedom around 1/L + trend·steps, with sd √(noise² + steps²·trend_se²)."""
        return _prediction_power(
            self.expected - self.trend_per_step * self.steps,
            self.trend_per_step,
            self.trend_se,
            self.noise_sd,
            self.df,
            steps,
            bar,
        )


def _prediction_power(
    start: float, slope: float, slope_se: float, noise: float, df: int, steps: float, bar: float
) -> float:
    sd = math.sqrt(noise**2 + (steps * slope_se) ** 2)
    z = (start + slope * steps - bar) / sd
    p2 = float(stats.t_two_sided_p(z, df))  # P(|T| ≥ |z|)
    return 1 - p2 / 2 if z >= 0 else p2 / 2  # P(T ≤ z): the prediction clears the bar


def gate_power(hist: dict[int, np.ndarray], bar: float, *, max_steps: float = 1e9) -> GatePower:
    """CS-5's power at *our* budget (basis "budget"). 000 Fig 5 shows the gate going from uniform
    (1/L) to all its mass on one layer over the source's training and has no step axis, so the
    effect at our budget is modelled on our own gate (`hist`: step → π over its snapshots): the
    drift of its largest π from 1/L as a straight line through (0, 1/L) in steps (least squares;
    the init is exactly uniform), with the slope's standard error and the residual sd as the gate's
    own noise. The claim's check (largest π ≥ `bar` at the last step) then passes with the
    probability that the line's prediction there clears the bar — a prediction interval: Student
    t with (snapshots after init − 1) degrees of freedom, sd √(noise² + steps²·se(slope)²), so the
    slope's uncertainty grows with the extrapolation. `steps_80`: the smallest step count at which
    that reaches 80% (inf when it never does within `max_steps`: the slope is too uncertain or
    not positive). The snapshots of one run are one trajectory, not independent draws: its
    residuals are correlated, so se(slope) is if anything too small (an optimistic power)."""
    steps = np.array(sorted(hist), dtype=float)
    L = len(hist[min(hist)])
    drift = np.array([float(hist[s].max()) for s in sorted(hist)]) - 1.0 / L  # (snapshots,)
    pos = steps > 0
    if pos.sum() < 2:
        raise ReproError(f"CS-5's gate power needs at least two snapshots after init, got steps {steps.tolist()}")
    s, d = steps[pos], drift[pos]
    ss = float((s * s).sum())
    slope = float((s * d).sum() / ss)
    df = int(pos.sum()) - 1
    noise = float(np.sqrt(((d - slope * s) ** 2).sum() / df))
    slope_se = noise / math.sqrt(ss)
    last = float(steps.max())
    expected = 1.0 / L + slope * last
    gp = GatePower(0.0, expected, slope, slope_se, noise, df, int(last), math.inf)
    gp.power = gp.power_at(last, bar)
    if gp.power_at(max_steps, bar) >= 0.8:
        gp.steps_80 = float(stats.n_for_power(lambda n: gp.power_at(n, bar), n_max=int(max_steps) * 2))
        gp.either = stats.either_way(
            lambda n: gp.power_at(n, bar), "steps, if the gate kept its fitted pace", n_max=int(max_steps) * 2
        )
    return gp
