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

import numpy as np
import pytest

from repro.harness import catalogue, plan, profiles
from repro.sinks import experiments as sinks
from repro.sinks import figures, init_std, over_seeds
from repro.sinks.budget import BASELINE_CHECK, baseline_budget_power, loss_gap_power
from repro.sinks.trio import (
    SHIFT,
    Trio,
    amplification_p,
    deviation_readings,
    harm_null,
    perplexity_ratios,
    perplexity_readings,
    pretrain_trios,
    rates_summary,
    sink_rate_readings,
    table7_rows,
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
        "the ci budget (a few hundred thousand tokens per model, Table 14's optimiser; the run's own count is below) "
        "is far below the one at which the "
        "baseline develops sinks: no baseline head crosses ε at every length, so the variants cannot be compared "
        "with it. The decide-sinks chunk (`repro plan --profile decide`) trains the trio at the budget its power "
        "record names, on the mix corpus, where the baseline does develop sinks."
    ),
}


def _record(claim, readings) -> None:
    """The topic's context readings (`repro.core.readings.Reading`), recorded, not asserted."""
    for r in readings:
        claim.record(r.name, r.measured, compare="none", source=r.source, unit=r.unit, key=r.key)


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("sinks")


# --------------------------------------------------------------------------- SK-1


@pytest.fixture(scope="module")
def init_profiles(sizes, device):
    return init_std.init_std_profiles(sizes["model"], sizes["train"]["seq_len"], device=device, **sizes["init"])


@pytest.mark.claim("SK-1")
def test_positional_scaling_flattens_the_std_at_init(claim, init_profiles, sizes):
    """Amplification (√i) and attenuation (√(i/T)) make the std of o_i flat (log-log slope 0)
    where the baseline's falls as 1/√i (slope −½, Eq 2) — on the nano LLaMA variants' first
    attention layer at init, one set of initial weights per seed for all three. The factors act
    on the same o_i, so the three slopes are one measurement: amplification's is the baseline's
    + ½ exactly and attenuation's is amplification's (the constant 1/√T moves log std, not its
    slope). It is asserted once, on amplification, with the unscaled baseline as its negative
    control; the identities are shown as context."""
    s = init_std.init_slopes(init_profiles)
    _record(claim, init_std.init_identity_readings(init_profiles, s, SOURCE_EQ2_SLOPE, SOURCE_FLAT_SLOPE))
    claim.figure(figures.init_std_variants(init_profiles), "fig9_variants")
    claim.check(
        f"amplification (√i), and with it attenuation (√(i/T)): log-log slope of std(o_i) against i "
        f"(mean over {s.n} inits)",
        s.slopes["amplification"][0],
        0.0,
        compare="abs",
        tol=SLOPE_TOL,
        source=SOURCE_FLAT_SLOPE,
        why="Eq 2's uniform-attention approximation: 10% of the −½ exponent covers the e^{s²} offset of init "
        "attention (module note)",
        control=s.slopes["baseline"][0],
        control_name="the unscaled baseline at the same init",
    )
    claim.check(
        "amplification: 95% t-interval half-width of the slope over inits",
        s.slopes["amplification"][1],
        SLOPE_TOL,
        compare="le",
        why="the slope is resolved to within the tolerance of the check above",
    )


# --------------------------------------------------------------------------- SK-2, SK-3: the trained trio


@pytest.fixture(scope="module")
def trio(sizes, profile, corpus_name, device, train_procs) -> Trio:
    """The trio with Table 14's optimiser settings (the profile's `train` row); a CUDA device too
    small for the profile is refused before any step. Where SK-2 reads more seeds (decide-sinks),
    every seed's trio not stored already (`repro sk2-seed`) trains first in one pool with this one
    (`pretrain_trios`), then each loads."""
    plan.require_fits("sinks", profile.name, device)
    more = [
        s
        for s in over_seeds.further_seeds(sizes)
        if not over_seeds.seed_trio.stored(sizes, profile.name, corpus_name, s, device)
    ]
    if more:
        pretrain_trios(sizes, profile.name, corpus_name, (sizes["seed"], *more), device=device, procs=train_procs)
    return train_trio(sizes, profile.name, corpus_name, device=device, procs=train_procs)


@pytest.fixture(scope="module")
def deviation(sizes, profile, corpus_name, device, train_procs) -> Trio | None:
    """The same trio with the profile's `deviation` optimiser settings (lr 3e-3, wd 0.5 in
    `long`: not the source's), context beside the source-setting trio; None where the profile
    names none (ci: its training would double the file's cost)."""
    over = sizes.get("deviation")
    if not over:
        return None
    plan.require_fits("sinks", profile.name, device)
    return train_trio(sizes, profile.name, corpus_name, over, device=device, procs=train_procs)


@pytest.fixture(scope="module")
def sk2_trios(trio, sizes, profile, corpus_name, device, train_procs) -> list[Trio | over_seeds.SeedTrio]:
    """SK-2's trios, one per seed: the profile's `seed` (the trio SK-3 reads) and `sk2_seeds`
    (none at ci; decide-sinks: two more), trained alike but for the seed; the further seeds' read
    as their curves (`over_seeds.seed_trio`, memoised: a seed `repro sk2-seed` stored loads)."""
    more = over_seeds.further_seeds(sizes)
    return [trio] + [over_seeds.seed_trio(sizes, profile.name, corpus_name, s, device, train_procs) for s in more]


def _tokens(profile_name: str) -> int:
    """Training tokens per model of the trio at another profile (for SK-2/SK-3's power rows)."""
    return tokens_per_model(profiles.get_profile(profile_name).sizes("sinks")["train"])


@pytest.mark.policy_dtype
@pytest.mark.claim("SK-2")
def test_sink_rates_after_pretraining(claim, trio, sk2_trios, deviation, sizes, profile):
    """Baseline: a clear sink rate at every length; attenuation: ≈ 0 (≤ one head); amplification:
    significantly below the baseline (paired over held-out sequences, Bonferroni over lengths).
    Controls: the baseline at its initial weights must fail "the baseline has sinks", and the
    trained baseline must fail "≈ 0". Power at our budget, of the baseline check only: the
    baseline's sinks on this trio's own trajectory (`baseline_budget_power`: fitted, it sizes the
    chunk and never decides); the variants' checks have no power, so a miss there reads
    inconclusive. Both ε are reported: the checks' quantities at Gu et al.'s ε = 0.3 are context.
    Over ≥ 2 seeds (decide-sinks): `_sk2_over_seeds`, attenuation's check a lower confidence bound
    with its power (`over_seeds.SK2_PREREG`)."""
    claim.corpus(trio.corpus)
    form, n_seq = "source", sizes["eval"]["n_seq"]
    one_head = 1.0 / trio.layers_heads
    p_amp = amplification_p(trio, form)
    rows = {k: trio.curves[k].row(form) for k in sinks.SCALINGS}
    base = np.array(rows["baseline"])
    _record(claim, sink_rate_readings(trio, sizes["model"], form, p_amp))
    _record(claim, deviation_readings(deviation, sizes["model"], form))
    claim.figure(figures.trio_sink_rates(trio, deviation, form, n_seq), "fig12")
    claim.figure(figures.trio_training(trio), "training")
    # a power for the baseline check only (budget, fitted to this trio: it sizes the chunk, never
    # decides); the variants' checks have none (the source gives no effect size for them at a
    # budget below its own), so a miss there reads inconclusive (issue 64)
    claim.power(
        baseline_budget_power(trio, form, n_seq=n_seq, long_tokens=_tokens("long"), paper_tokens=_tokens("paper"))
    )
    claim.not_reproduced_if(NOT_REPRODUCED, ("SK-2", profile.name), rates_summary(trio, form, sizes["model"]))
    if len(sk2_trios) > 1:
        _sk2_over_seeds(claim, sk2_trios, (sizes["seed"], *over_seeds.further_seeds(sizes)), form)
        return
    claim.check(
        f"{BASELINE_CHECK} (≥ one sink head of L·H at every length)",
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


def _sk2_over_seeds(claim, trios: list[Trio | over_seeds.SeedTrio], seeds: tuple[int, ...], form: str) -> None:
    """SK-2's checks over the trios of `seeds` (001 §6.2.1, Fig 12; `over_seeds`, fixed before
    any seeded run): the baseline and amplification on the seeds' mean curves (the per-sequence
    pairs pooled over seeds for the Wilcoxon p), attenuation by its lower 95% bound over seeds
    against one head, with its power against three heads and its size 0.05 at the edge."""
    r = over_seeds.seed_rows(trios, seeds, form)
    b = over_seeds.attenuation_bound(r)
    p_amp = amplification_p(trios, form)
    _record(claim, over_seeds.bound_readings(trios, seeds, form))
    claim.power(over_seeds.attenuation_power(r, b))
    claim.check(
        f"{BASELINE_CHECK}, mean over {b.n} seeds (≥ one sink head of L·H at every length)",
        r.baseline_low(),
        r.one_head,
        compare="ge",
        why="Fig 12: a clear sink rate at every length; a baseline without sinks cannot test the claim",
        control=float(r.init.mean(0).min()),
        control_name="the same baselines at their initial weights (before training)",
    )
    claim.check(
        over_seeds.ATTENUATION_BOUND_CHECK,
        b.lower,
        r.one_head,
        compare="le",
        why="≈ 0 read as at most one sink head of L·H; a miss: more than one head with 95% confidence "
        "(size 0.05 at the edge); a pass fails to reject ≈ 0 (its power against three heads is recorded)",
        not_rejected=True,
        control=over_seeds.attenuation_bound(r, "baseline").lower,
        control_name="the trained baselines through the same bound over seeds",
    )
    claim.check(
        f"amplification < baseline: largest Bonferroni one-sided Wilcoxon p over lengths, pooled over {b.n} seeds",
        float(max(p_amp.values())),
        0.01,
        compare="le",
        why="'significantly lower': paired over held-out sequences of every seed, 1% after Bonferroni over lengths",
    )
    claim.check(
        f"amplification − baseline sink rate, largest over lengths, mean over {b.n} seeds",
        r.amplification_excess(),
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
    budget: the in-domain effect from this trio's own training-loss trajectory (`loss_gap_power`),
    not Table 7's converged ratio."""
    claim.corpus(trio.corpus, shift=SHIFT)
    text = trio.text  # the in-domain set's key: "brown" by default
    if kind == "amplification":  # the table once per run
        claim.table(*table7_rows(trio, deviation, sizes["model"], TABLE7))
    r = perplexity_ratios(trio, kind, TABLE7)
    ctl, ctl_name = harm_null(trio, kind)
    _record(claim, perplexity_readings(trio, deviation, r))
    claim.power(
        loss_gap_power(trio, r, PPL_MARGIN, baseline_source_ppl=TABLE7["baseline"][0], paper_tokens=_tokens("paper"))
    )
    measured = ", ".join(f"{name} ≤ {u:.3f}" for name, u in r.upper.items())
    claim.not_reproduced_if(NOT_REPRODUCED, (f"SK-3 {kind}", profile.name), measured)
    why = "the largest gap the source calls competitive (Table 7: +2.9%); paired t over {} held-out windows"
    claim.check(
        f"{kind} / baseline perplexity on {text}: upper 95% bound",
        r.upper[text],
        PPL_MARGIN,
        compare="le",
        why=why.format(trio.n_windows[text]),
        control=ctl,
        control_name=ctl_name,
    )
    claim.check(
        f"{kind} / baseline perplexity on {SHIFT}: upper 95% bound",
        r.upper[SHIFT],
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
    random-init twin of the same architecture on the same windows (one length; see
    `sinks.pretrained_sinks`)."""
    claim.corpus(corpus_name)
    model, tok = pretrained(model_name)
    ps = sinks.pretrained_sinks(model, tok, model_name, sizes["pretrained"], corpus=corpus_name)
    curve, (L, H) = ps.curve, ps.heads
    for f in sinks.FORMS:
        for n in curve.lengths:
            claim.record(
                f"{model_name}: sink rate, ε = {sinks.EPSILON[f]} ({f} form), T = {n}", curve.mean(f, n), compare="none"
            )
    claim.record(f"{model_name}: heads", L * H, compare="none")
    claim.figure(figures.reference_sink_rates(trio, curve, model_name, corpus_name), "fig12_reference")
    claim.check(
        f"{model_name}: sink rate (ε = {sinks.EPSILON['source']}) at its lowest over lengths",
        float(min(curve.row("source"))),
        1.0 / (L * H),
        compare="ge",
        why="Gu et al.: sinks in every auto-regressive LM they measured; at least one sink head of L·H at every length",
        control=float(ps.control_rate),
        control_name=f"a random-init twin of the same architecture (its rate at T = {ps.control_length}, an upper "
        "bound of its lowest)",
    )
