"""001 §6.2 Attention sinks: positional variance at init, and the sinks of nano LLaMA models
trained with positional amplification / attenuation (SK-1 … SK-4).

SK-1 reads 001 Eq 2 / Fig 9 on the three variants at init (the same initial weights SK-2
trains): Gaussian inputs, the std of the first attention layer's output per position, its
log-log slope per seed. The factors act on the same o_i: amplification's slope is the
baseline's + ½, and attenuation's √(i/T) is √i times the constant 1/√T, which moves log std and
leaves its slope unchanged — "attenuation is flat", "amplification is flat" and Eq 2's −½ on
the baseline are one test, asserted once (the identities are shown as context).
SK-2/SK-3 train three identical nano LLaMA-style models (baseline, amplification o_i·√i,
attenuation o_i·√(i/T); one seed, one data order) on the run's corpus (`--corpus`, Brown by
default, under the Brown BPE) through `repro.core.train` with 001 Table 14's optimiser (AdamW
β 0.9 / 0.95, peak lr 6e-4 cosine to 6e-5, weight decay 0.1, clip 1.0) at a budget far below
the source's, and compare sink rates on held-out windows of that corpus at several lengths
(001 Fig 12) and held-out perplexity on it and on the stdlib-code corpus (001 Table 7; the
shifted corpus stays stdlib-code whatever `--corpus` says). Where the profile names a
`deviation` (long), the same trio is trained again
with lr 3e-3 / weight decay 0.5 (our earlier setting, not the source's) and shown beside it as
context; the verdicts rest on the source-setting trio. SK-4 is the real-model reference row:
the embedded pretrained models' sink rates on the same text.

Windows of every kind start with <bos> (the trained models see <bos> at position 0 of every
training window: `TrainConfig.lead_token`), so "the first token" is the same token in training
and in every measurement.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from repro.core import data, plotting, stats
from repro.core import train as T
from repro.core.models.hf import random_init_twin
from repro.core.stats import loglog_slope, mean_sem
from repro.harness import catalogue, profiles
from repro.sinks import experiments as sinks
from repro.sinks import figures
from repro.sinks.trio import (
    SHIFT,
    Trio,
    amplification_p,
    baseline_sink_power,
    describe,
    first_budget,
    harm_null,
    loss_gap_model,
    tokens_per_model,
    train_trio,
)

# 001 Table 7 (Nano LLaMA-2, OpenWebText): PPL on WikiText-2 / C4
TABLE7 = catalogue.number("SK-3", "table7")
SOURCE_EQ2_SLOPE = catalogue.number("BB-6", "eq2_slope")  # 001 Eq 2: std(o_i) ∝ 1/√i, slope −½
SOURCE_FLAT_SLOPE = catalogue.number("SK-1", "scaled_slope")  # 001 §6.2.1: the scaled variants are flat

# "Comparable or better" (SK-3): the variant's perplexity may exceed the baseline's by at most
# 3%, the largest gap the source itself calls competitive (amplification on WikiText-2,
# 21.95 / 21.33 = +2.9%). Tested on the upper 95% confidence bound of the mean per-window NLL
# difference (paired t over held-out windows), i.e. PPL ratio ≤ 1.03 with 95% confidence.
PPL_MARGIN = 1.03


# SK-1: Eq 2 assumes uniform attention; at App B.1's init the attention logits have std ≈ 0.3,
# which puts Σ_j A_ij² ≈ 5% above 1/i (BB-6): the slope of log std against log i stays within
# 0.05 (10% of the −½ exponent) of Eq 2's value; the same bound for "flat" (slope 0).
SLOPE_TOL = 0.05

# SK-2 "attenuation ≈ 0": at most one sink head in the model on average (the metric's
# resolution is one head of L·H), at every length.

# (claim, profile) → why the claim does not hold at that profile (decided from measurements;
# the run's own numbers are appended). The long profile's source-setting trio has no entry yet:
# decide it from a long run.
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("SK-3 amplification", "ci"): (
        "amplification (o_i·√i) costs in-domain perplexity at the ci budget: on held-out Brown its perplexity is "
        "far above the baseline's, well past the 3% margin, while on the shifted stdlib-code corpus it is lower "
        "than the baseline's — the direction of Table 7's split (worse on WikiText-2, better on C4), much larger. "
        "Undertrained models (the ci budget, Table 14's optimiser): the trio's own training-loss trajectory closes "
        "the gap only slowly, so at this budget the test cannot see the converged models' effect (its power at our "
        "budget is recorded): not reproduced here, not contradicted. Attenuation is comparable or better on both "
        "sets."
    ),
    ("SK-2", "ci"): (
        "the ci budget (a few hundred thousand tokens per model, Table 14's optimiser; the run's own count is below) is far below the one at which the "
        "baseline develops sinks: no baseline head crosses ε at every length, so the variants cannot be compared "
        "with it. `--profile long` trains the trio at a budget where, under the faster lr 3e-3 / wd 0.5 deviation, "
        "the baseline did develop sinks."
    ),
}


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("sinks")


# --------------------------------------------------------------------------- SK-1


@pytest.fixture(scope="module")
def init_profiles(sizes, device):
    return sinks.init_std_profiles(sizes["model"], sizes["train"]["seq_len"], device=device, **sizes["init"])


@pytest.mark.claim("SK-1")
def test_positional_scaling_flattens_the_std_at_init(claim, init_profiles, sizes):
    """Amplification (√i) and attenuation (√(i/T)) make the std of o_i flat (log-log slope 0)
    where the baseline's falls as 1/√i (slope −½, Eq 2) — on the nano LLaMA variants' first
    attention layer at init, one set of initial weights per seed for all three. The factors act
    on the same o_i, so the three slopes are one measurement: amplification's is the baseline's
    + ½ exactly and attenuation's is amplification's (the constant 1/√T moves log std, not its
    slope). It is asserted once, on amplification, with the unscaled baseline as its negative
    control; the identities are shown as context."""
    per_seed, slopes = {}, {}
    for kind, res in init_profiles.items():
        per_seed[kind] = np.array([loglog_slope(res.positions, s).slope for s in res.std.values])
        mean, sem = mean_sem(per_seed[kind])
        slopes[kind] = (mean, stats.t_quantile(0.975, len(per_seed[kind]) - 1) * sem)
    n = len(per_seed["baseline"])
    base, amp, att = init_profiles["baseline"], init_profiles["amplification"], init_profiles["attenuation"]
    T_ctx = int(att.positions[-1])
    claim.record(
        "first layer's Σ_j A_ij² × i at the last position (1 under uniform attention)",
        float(base.attn_sq.mean[-1] * base.positions[-1]),
        compare="none",
    )
    variants = {
        f"{k} (√i)" if k == "amplification" else f"{k} (√(i/T))": init_profiles[k]
        for k in ("amplification", "attenuation")
    }
    claim.figure(plotting.fig9_positional_std(base, variants), "fig9_variants")
    claim.record(
        f"baseline: log-log slope of std(o_i) against i (mean over {n} inits; Eq 2: −½)",
        slopes["baseline"][0],
        compare="none",
        source=SOURCE_EQ2_SLOPE,
    )
    claim.record(
        "amplification − baseline slope − ½, largest |value| over inits (0 up to float rounding: the same "
        "o_i times √i, so the amplification check below is also Eq 2's −½ on the baseline)",
        float(np.abs(per_seed["amplification"] - per_seed["baseline"] - 0.5).max()),
        compare="none",
    )
    claim.record(
        f"attenuation (√(i/T)): log-log slope of std(o_i) against i (mean over {n} inits); not asserted separately",
        slopes["attenuation"][0],
        compare="none",
        source=SOURCE_FLAT_SLOPE,
    )
    claim.record(
        "attenuation − amplification slope, largest |difference| over inits (0 up to float rounding: "
        "√(i/T) = √i / √T moves log std by −½·log T, never its slope: the same test)",
        float(np.abs(per_seed["attenuation"] - per_seed["amplification"]).max()),
        compare="none",
    )
    claim.record(
        f"attenuation / amplification std(o_i), mean over positions and inits (1/√T = {1 / math.sqrt(T_ctx):.4f}: "
        "attenuation equalises at the level of the last position, amplification at the first's)",
        float(np.mean(att.std.values / amp.std.values)),
        compare="none",
    )
    claim.check(
        f"amplification (√i), and with it attenuation (√(i/T)): log-log slope of std(o_i) against i "
        f"(mean over {n} inits)",
        slopes["amplification"][0],
        0.0,
        compare="abs",
        tol=SLOPE_TOL,
        source=SOURCE_FLAT_SLOPE,
        why="Eq 2's uniform-attention approximation: 10% of the −½ exponent covers the e^{s²} offset of init "
        "attention (module note)",
        control=slopes["baseline"][0],
        control_name="the unscaled baseline at the same init",
    )
    claim.check(
        "amplification: 95% t-interval half-width of the slope over inits",
        slopes["amplification"][1],
        SLOPE_TOL,
        compare="le",
        why="the slope is resolved to within the tolerance of the check above",
    )


# --------------------------------------------------------------------------- SK-2, SK-3: the trained trio


@pytest.fixture(scope="module")
def trio(sizes, profile, corpus_name, device, train_procs) -> Trio:
    """The trio with Table 14's optimiser settings (the profile's `train` row)."""
    return train_trio(sizes, profile.name, corpus_name, device=device, procs=train_procs)


@pytest.fixture(scope="module")
def deviation(sizes, profile, corpus_name, device, train_procs) -> Trio | None:
    """The same trio with the profile's `deviation` optimiser settings (lr 3e-3, wd 0.5 in
    `long`: not the source's), context beside the source-setting trio; None where the profile
    names none (ci: its training would double the file's cost)."""
    over = sizes.get("deviation")
    return train_trio(sizes, profile.name, corpus_name, over, device=device, procs=train_procs) if over else None


def _deviation_label(dev: Trio) -> str:
    return f"deviation (lr {dev.cfg.lr:g}, wd {dev.cfg.weight_decay:g}: not Table 14's setting)"


def _tokens(profile_name: str) -> int:
    """Training tokens per model of the trio at another profile (for SK-2/SK-3's power rows)."""
    return tokens_per_model(profiles.get_profile(profile_name).sizes("sinks")["train"])


@pytest.mark.policy_dtype
@pytest.mark.claim("SK-2")
def test_sink_rates_after_pretraining(claim, trio, deviation, sizes, profile):
    """Baseline: a clear sink rate at every length; attenuation: ≈ 0 (≤ one head); amplification:
    significantly below the baseline (paired over held-out sequences, Bonferroni over lengths).
    Controls: the baseline at its initial weights must fail "the baseline has sinks", and the
    trained baseline must fail "≈ 0"."""
    claim.corpus(trio.corpus)
    form, eps = "source", sinks.EPSILON["source"]
    lengths = trio.curves["baseline"].lengths
    one_head = 1.0 / trio.layers_heads
    claim.record("training (Table 14's optimiser settings, our budget)", describe(trio, sizes["model"]), compare="none")
    claim.record(
        "training wall time per model, s (from the checkpoints' meta)",
        ", ".join(f"{k} {r.wall_s:.0f}" for k, r in trio.results.items()),
        compare="none",
    )
    for kind in sinks.SCALINGS:
        for f in sinks.FORMS:
            for n in lengths:
                claim.record(
                    f"{kind}: sink rate, ε = {sinks.EPSILON[f]} ({f} form), T = {n}",
                    trio.curves[kind].mean(f, n),
                    compare="none",
                )
        claim.record(
            f"{kind}: largest mean α¹ of any head, T = {lengths[-1]}",
            float(trio.curves[kind].alpha[form][lengths[-1]].mean(0).max()),
            compare="none",
        )
    claim.record(
        "α¹ of a head with uniform causal attention, T = " + str(lengths[-1]),
        sinks.expected_uniform_importance(lengths[-1]),
        compare="none",
    )
    p_amp = amplification_p(trio, form)
    for n in lengths:
        claim.record(f"amplification < baseline at T = {n}: Bonferroni one-sided Wilcoxon p", p_amp[n], compare="none")
    rows = {k: trio.curves[k].row(form) for k in sinks.SCALINGS}
    base = np.array(rows["baseline"])
    if deviation is None:
        claim.record(
            "deviation run (lr 3e-3, wd 0.5; not the source's)", "trained in the long profile only", compare="none"
        )
    else:
        lab = _deviation_label(deviation)
        claim.record(f"{lab}: training", describe(deviation, sizes["model"]), compare="none")
        for kind in sinks.SCALINGS:
            claim.record(
                f"{lab}: {kind} sink rate (ε = {eps}) at T = {list(lengths)}",
                str(np.round(deviation.curves[kind].row(form), 4).tolist()),
                compare="none",
            )
        claim.record(
            f"{lab}: amplification < baseline, Bonferroni Wilcoxon p at T = {list(lengths)}",
            str([float(f"{p:.3g}") for p in amplification_p(deviation, form).values()]),
            compare="none",
        )
    series = {k: (lengths, r) for k, r in rows.items()}
    if deviation is not None:
        series.update(
            {
                f"{k}, lr {deviation.cfg.lr:g} (deviation)": (lengths, deviation.curves[k].row(form))
                for k in sinks.SCALINGS
            }
        )
    claim.figure(
        figures.sink_rate_by_length(
            series,
            f"001 Fig 12: sink rate (ε = {eps}) on held-out "
            f"{data.corpus_title(trio.corpus)}, "
            f"{sizes['eval']['n_seq']} sequences per length",
        ),
        "fig12",
    )
    claim.figure(
        plotting.training_curves(
            {k: r.losses for k, r in trio.results.items()},
            "SK-2: training loss of the three variants (same data order)",
        ),
        "training",
    )
    # power at our budget: the claim's effect on the variants (attenuation ≈ 0, amplification
    # clearly below the baseline, Fig 12) passes their checks once the baseline has sinks (100
    # paired sequences per length), so what decides whether this test can see the effect is whether
    # our budget — far below the source's 200k steps of 128 × 2048 tokens — gives the baseline a
    # sink head at every length. The effect there is modelled on this trio's own trajectory
    # (`baseline_sink_power`), with the held-out sequences' noise
    tokens = tokens_per_model(trio.cfg)
    reps = 2000
    power_at = lambda t: baseline_sink_power(trio, form, t, reps=reps)  # noqa: E731
    t80 = first_budget(power_at, tokens, _tokens("paper"))
    a0 = {n: float(trio.init_curve.alpha[form][n].mean(0).max()) for n in lengths}
    a1 = {n: float(trio.curves["baseline"].alpha[form][n].mean(0).max()) for n in lengths}
    low = min(lengths, key=lambda n: a1[n] - eps)  # the length furthest from a sink head
    claim.power(
        power_at(tokens),
        effect=f"the baseline's per-head mean first-token attention α¹ at our budget ({tokens / 1e6:.2f}M tokens "
        f"per model), on this trio's trajectory from its initial weights: top head "
        f"{', '.join(f'T = {n}: {a0[n]:.3f} → {a1[n]:.3f}' for n in lengths)} against ε = {eps}; "
        "then, with sinks, the source's effect on the variants (Fig 12: attenuation ≈ 0, amplification "
        "significantly lower), whose checks pass under it",
        effect_value=a1[low],
        basis="budget: each head's mean α¹ linear in training tokens between the initial weights and this "
        "run's end (two measured points, both bootstrapped over the held-out sequences); sinks tend to "
        "appear abruptly, so an estimate",
        test=f"baseline's model-wide sink rate ≥ one head of {trio.layers_heads} at every length (the check "
        "that gates the variants' comparison)",
        sample=f"{sizes['eval']['n_seq']} held-out sequences per length, T = {list(lengths)}; one trained "
        "baseline (one seed, as in the source)",
        method=f"simulation, {reps} bootstrap replicates: head means at the budget from resampled trajectory "
        "ends, a fresh resample of this run's per-sequence scatter around them",
        decide=(
            f"≈ {t80:.2g} training tokens per model (first on a 2^(1/8) grid from ours); "
            if t80
            else f"not within the source's {_tokens('paper'):.2g} tokens per model under the trajectory; "
        )
        + f"`--profile long` trains {_tokens('long'):.2g} per model, the paper profile "
        f"{_tokens('paper'):.2g}",
    )
    measured = (
        f"baseline {np.round(base, 4).tolist()}, amplification {np.round(rows['amplification'], 4).tolist()}, "
        f"attenuation {np.round(rows['attenuation'], 4).tolist()} at T = {list(lengths)}; largest baseline "
        f"α¹ {float(trio.curves['baseline'].alpha[form][lengths[-1]].mean(0).max()):.3f} at T = {lengths[-1]} "
        f"(ε = {eps}); {describe(trio, sizes['model'])}"
    )
    claim.not_reproduced_if(NOT_REPRODUCED, ("SK-2", profile.name), measured)
    claim.check(
        "baseline: sink rate at its lowest over lengths (≥ one sink head of L·H at every length)",
        float(base.min()),
        one_head,
        compare="ge",
        why="Fig 12: a clear sink rate at every length; a baseline without sinks cannot test the claim",
        control=float(min(trio.init_curve.row(form))),
        control_name="the same baseline at its initial weights (before training)",
    )
    claim.check(
        "attenuation: sink rate at its highest over lengths",
        float(max(rows["attenuation"])),
        one_head,
        compare="le",
        why="≈ 0 read as at most one sink head of L·H on average (the metric's resolution)",
        control=float(base.max()),
        control_name="the trained baseline",
    )
    claim.check(
        "amplification < baseline: largest Bonferroni one-sided Wilcoxon p over lengths",
        float(max(p_amp.values())),
        0.01,
        compare="le",
        why="'significantly lower': paired over held-out sequences, 1% after Bonferroni over lengths",
    )
    claim.check(
        "amplification − baseline sink rate, largest over lengths",
        float((np.array(rows["amplification"]) - base).max()),
        0.0,
        compare="le",
        why="'lower than the baseline' at every length (the Wilcoxon p above makes it strict)",
    )


@pytest.mark.policy_dtype
@pytest.mark.claim("SK-3")
@pytest.mark.parametrize("kind", ["amplification", "attenuation"])
def test_interventions_do_not_hurt_language_modelling(claim, trio, deviation, sizes, profile, kind):
    """Held-out perplexity on the training corpus (--corpus, Brown by default: the training
    domain) and on stdlib code (a shifted domain, fixed), next to Table 7; the variant is
    comparable to or better than the baseline on both: PPL ratio ≤ PPL_MARGIN with 95%
    confidence (see the module note). Control: a model of the same run that a real harm makes
    worse (`harm_null`: amplification for attenuation, the baseline with amplification switched on
    untrained for amplification) must fail the same bound on the training corpus. Power at our
    budget: the in-domain effect from this trio's own training-loss trajectory (`loss_gap_model`),
    not Table 7's converged ratio."""
    claim.corpus(trio.corpus, shift=SHIFT)
    text = trio.text  # the in-domain set's key: "brown" by default
    ppl = {k: {name: math.exp(float(v.mean())) for name, v in trio.nll[k].items()} for k in sinks.SCALINGS}
    if kind == "amplification":  # the table once per run
        rows = [[k, round(ppl[k][text], 2), round(ppl[k][SHIFT], 2), *TABLE7[k]] for k in sinks.SCALINGS]
        if deviation is not None:
            dppl = {
                k: {name: math.exp(float(v.mean())) for name, v in deviation.nll[k].items()} for k in sinks.SCALINGS
            }
            rows += [
                [
                    f"{k}, lr {deviation.cfg.lr:g} / wd {deviation.cfg.weight_decay:g} (deviation)",
                    round(dppl[k][text], 2),
                    round(dppl[k][SHIFT], 2),
                    "",
                    "",
                ]
                for k in sinks.SCALINGS
            ]
        claim.table(
            f"001 Table 7 next to ours: perplexity ({describe(trio, sizes['model'])}; {trio.n_windows[text]} "
            f"windows of {trio.cfg.seq_len} tokens per set)",
            [
                "model",
                f"{data.corpus_title(trio.corpus)} (ours)",
                "stdlib code (ours)",
                "WikiText-2 (source)",
                "C4 (source)",
            ],
            rows,
        )
    src = dict(zip((text, SHIFT), (TABLE7[kind][i] / TABLE7["baseline"][i] for i in range(2))))
    # context: the intervention switched on in the trained baseline, never trained for it, on the
    # shifted corpus (on the in-domain set it is amplification's negative control, `harm_null`)
    switched = sinks.apply_positional_scaling(copy.deepcopy(trio.results["baseline"].model), kind, trio.cfg.seq_len)
    # the negative control: a model of the same run that a real harm makes worse (`harm_null`)
    ctl, ctl_name = harm_null(trio, kind)
    upper, sds = {}, {}
    for name in trio.held_out:
        ratio, upper[name], sds[name] = sinks.ratio_bound(trio.nll[kind][name] - trio.nll["baseline"][name])
        claim.record(
            f"{kind}: perplexity on held-out {name} (baseline {ppl['baseline'][name]:.2f})",
            ppl[kind][name],
            compare="none",
        )
        claim.record(
            f"{kind} / baseline perplexity on {name} (source: Table 7's "
            f"{'WikiText-2' if name == text else 'C4'} ratio)",
            ratio,
            compare="none",
            source=round(src[name], 4),
        )
        if deviation is not None:
            r_dev, u_dev, _ = sinks.ratio_bound(deviation.nll[kind][name] - deviation.nll["baseline"][name])
            claim.record(
                f"{_deviation_label(deviation)}: {kind} / baseline perplexity on {name} (upper 95% bound)",
                f"{r_dev:.4f} (≤ {u_dev:.4f})",
                compare="none",
            )
    claim.record(
        f"the baseline's weights run with the {kind} scaling (never trained for it) / baseline perplexity on {SHIFT}",
        math.exp(float((T.window_losses(switched, trio.held_out[SHIFT]) - trio.nll["baseline"][SHIFT]).mean())),
        compare="none",
    )
    del switched
    # power at our budget: Table 7's ratios are the converged models' (ppl ≈ 21), ours saw a few
    # hundred thousand tokens. The in-domain effect at our budget is modelled on this trio's own
    # training-loss gap (`loss_gap_model`, with its fit's uncertainty); the shifted set has no such
    # trajectory (training loss is in-domain) and keeps Table 7's C4 ratio for the variant
    tokens = tokens_per_model(trio.cfg)
    gap = loss_gap_model(trio, kind)
    n = min(trio.n_windows.values())
    names = list(trio.held_out)

    def power_at(t: float) -> float:
        d, se = gap.at(t)
        eff = {text: (d, se), SHIFT: (math.log(src[SHIFT]), 0.0)}
        return sinks.ratio_bound_power(
            [eff[k][0] for k in names], [sds[k] for k in names], n, PPL_MARGIN, [eff[k][1] for k in names]
        )

    d_ours, se_ours = gap.at(tokens)
    t80 = first_budget(power_at, tokens, _tokens("paper"))
    log_src = 0.5 * (math.log(src[text]) + math.log(src[SHIFT]))  # Table 7's two ratios, geometric mean
    n80 = stats.n_for_power(lambda m: sinks.ratio_bound_power(log_src, [sds[k] for k in names], m, PPL_MARGIN))
    claim.power(
        power_at(tokens),
        effect=f"{kind} / baseline perplexity at our budget ({tokens / 1e6:.2f}M tokens per model; baseline "
        f"perplexity {ppl['baseline'][text]:.0f} against Table 7's {TABLE7['baseline'][0]:.2f}): on {text} "
        f"{math.exp(d_ours):.3f} (gap {d_ours:+.3f} ± {se_ours:.3f} nats), on {SHIFT} Table 7's C4 "
        f"ratio {src[SHIFT]:.3f}",
        effect_value=math.exp(d_ours),
        basis=f"budget: the {kind} − baseline per-step training-loss gap (same batches) of this trio, "
        f"{gap.blocks} means of {gap.block_steps} steps from step {gap.first_step} (second half of "
        f"training), fitted a + b·ln(tokens): b = {gap.slope:+.4f} ± {gap.slope_se:.4f} nats per e-fold; "
        f"the shifted set has no trajectory and keeps Table 7's ratio",
        test=f"upper one-sided 95% paired t bound of the mean per-window NLL difference ≤ ln {PPL_MARGIN} on "
        "both held-out sets",
        sample=f"{n} held-out windows of {trio.cfg.seq_len} tokens per set; one trained model per variant "
        "(one seed and data order, as in the source)",
        method=f"closed form: normal approximation of each set's bound (per-window sd "
        f"{', '.join(f'{sds[k]:.3f}' for k in names)} nats), the budget model's fit se added in "
        "quadrature, sets independent; seed-to-seed variance not measured (one seed)",
        decide=(
            f"≈ {t80:.2g} training tokens per model under the fitted gap"
            if t80
            else f"not within the source's {_tokens('paper'):.2g} tokens per model under the fitted gap "
            f"(b = {gap.slope:+.4f} nats per e-fold)"
        )
        + f"; at Table 7's converged effect ({math.exp(log_src):.3f}, geometric mean of its two "
        "ratios): " + (f"{n80} held-out windows per set" if n80 else "not within 100,000 windows"),
    )
    measured = ", ".join(f"{name} ≤ {u:.3f}" for name, u in upper.items())
    claim.not_reproduced_if(NOT_REPRODUCED, (f"SK-3 {kind}", profile.name), measured)
    why = "the largest gap the source calls competitive (Table 7: +2.9%); paired t over {} held-out windows"
    claim.check(
        f"{kind} / baseline perplexity on {text}: upper 95% bound",
        upper[text],
        PPL_MARGIN,
        compare="le",
        why=why.format(trio.n_windows[text]),
        control=ctl,
        control_name=ctl_name,
    )
    claim.check(
        f"{kind} / baseline perplexity on {SHIFT}: upper 95% bound",
        upper[SHIFT],
        PPL_MARGIN,
        compare="le",
        why=why.format(trio.n_windows[SHIFT]),
    )


# --------------------------------------------------------------------------- SK-4


@pytest.mark.claim("SK-4")
def test_pretrained_models_sink_rates(claim, model_name, pretrained, trio, sizes, corpus_name):
    """The reference row: sink rates of a real pretrained model on the run's text (--corpus) at several
    lengths, both metric forms. Gu et al. find sinks in every auto-regressive LM they measured;
    asserted: at least one sink head (source form, ε = 0.25) at every length. Control: a
    random-init twin of the same architecture on the same windows (one length)."""
    claim.corpus(corpus_name)
    model, tok = pretrained(model_name)
    p = sizes["pretrained"]
    windows = {
        n: data.bos_windows(tok, "test", p["n_seq"], n, who=f"--model {model_name}: SK-4", corpus=corpus_name)
        for n in p["lengths"]
    }
    curve = sinks.sink_curve(model, windows, batch=p["batch"])
    L, H = curve.alpha["source"][curve.lengths[0]].shape[1:]
    for f in sinks.FORMS:
        for n in curve.lengths:
            claim.record(
                f"{model_name}: sink rate, ε = {sinks.EPSILON[f]} ({f} form), T = {n}", curve.mean(f, n), compare="none"
            )
    claim.record(f"{model_name}: heads", L * H, compare="none")
    series = {k: (trio.curves[k].lengths, trio.curves[k].row("source")) for k in sinks.SCALINGS}
    series[model_name] = (curve.lengths, curve.row("source"))
    claim.figure(
        figures.sink_rate_by_length(
            series,
            f"001 Fig 12 with {model_name} as the real-model reference "
            f"(ε = {sinks.EPSILON['source']}, {data.corpus_title(corpus_name)})",
        ),
        "fig12_reference",
    )
    # the control at one length only: a single length's rate bounds the minimum over lengths from
    # above, so the full assertion rejects the twin whenever this does (at a small fraction of the
    # cost of the model's curve). T = 64: uniform attention gives α¹ = H_T/T ≈ 0.07 there, well below ε;
    # at T = 32 (≈ 0.13) a random model's heads can cross ε by chance
    n_ctl = 64 if 64 in windows else max(windows)
    twin = random_init_twin(model)
    twin_rate = sinks.sink_curve(twin, {n_ctl: windows[n_ctl]}, batch=p["batch"]).mean("source", n_ctl)
    del twin
    claim.check(
        f"{model_name}: sink rate (ε = {sinks.EPSILON['source']}) at its lowest over lengths",
        float(min(curve.row("source"))),
        1.0 / (L * H),
        compare="ge",
        why="Gu et al.: sinks in every auto-regressive LM they measured; at least one sink head of L·H at every length",
        control=float(twin_rate),
        control_name=f"a random-init twin of the same architecture (its rate at T = {n_ctl}, an upper bound "
        "of its lowest)",
    )
