"""004 Context axis: Algorithm 1, the diagonal read-out, upper-triangle and segment sparsity,
cost, and the first empirical test of the proposal (CA-1 … CA-8).

The source is a structural proposal with no code and no experiments. CA-1 … CA-6 are exact
statements about the construction: they are checked exactly (float64, random tiny
transformers models drawn by hypothesis, derandomised) and on the embedded pretrained models
(CA-4, on test windows of the run's corpus: `--corpus`, Brown by default). CA-7's cost is
counted (FLOPs through torch's FlopCounterMode, states stored), so the records are the same on
every machine; times are in benchmarks/test_context_axis_kernels.py. CA-8 trains identical
small LMs on the run's corpus under the Brown BPE — causal, full context axis, full axis with
stochastic axis drop — from the same initial weights and data order, and compares held-out
NLL under causal, full and segment-k inference; its verdict rests on that comparison alone
(the training–inference mismatch is our own check, shown as context rows of the CA-8 test).

Every exact claim runs a negative control through its assertion: Algorithm 1 with one term
dropped (CA-1), the plain causal mask against Fig 1 (CA-2), the mask with one future key let
through (CA-3, CA-5), another function of the same weights (CA-4), segment k = 2 for k = 1
(CA-6), a kernel of the other order for each growth exponent (CA-7).
"""

from __future__ import annotations

import numpy as np
import pytest

from repro.context_axis import exactness, experiments, figures, retraining
from repro.context_axis.experiments import TESTED, VARIANTS, Experiment, PretrainedRun
from repro.core import data, plotting

# 004 Figure 1 (L = 5), 1 = masked: (a) context axis 2, (b) context axis 3
FIG1 = {2: [[0, 0, 0, 1, 1]] * 3 + [[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], 3: [[0, 0, 0, 0, 1]] * 4 + [[0, 0, 0, 0, 0]]}

# float64 throughout CA-3/5/6: two exact formulations of one function differ only by the
# order of floating-point sums (≈ 1e-16 relative); 1e-9 on logits of size ≈ 1 leaves 10⁶×
# headroom and still catches any real leak (a future token moves logits by ≳ 1e-3 here)
EXACT = 1e-9
# CA-4: pretrained models in float64 with float32 norms. Rounding: the same function through
# differently shaped kernels (padded buckets, KV cache vs one pass). The model runs in float64
# (`experiments.pretrained_run`), but transformers' RMSNorm and rotary tables compute in float32
# (float64 states are cast down there and back), so every norm still rounds at float32's 6e-8
# relative. Measured in float64: ≤ 1.2e-5 at ci (2 × 32 tokens, both models), ≤ 2.8e-5 on SmolLM2
# at the paper's 128 tokens (2 windows, CPU); in float32 ≤ 1e-4 at ci; in float32 at the paper's
# 128 tokens: 7e-4 on a CPU (4 windows), 0.019 on an H100 (16 windows), which failed the old
# float32 bound of 2e-3. PRETRAINED_TOL keeps ≥ 35× headroom over those measurements and stays 10⁴×
# under a real leak (the controls: 11–35 in logits)
PRETRAINED_TOL = 1e-3

# (claim, profile) → why the claim does not hold at that profile, in words (this run's numbers
# are appended; see CA-8's records and power row)
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("CA-8", "ci"): (
        "no benefit seen at this scale: neither the model trained with the full context axis (under full inference) "
        "nor the one trained with axis drop (under causal inference) is better than the identical causal model, and "
        "the differences lie within the seed-to-seed spread. The ci profile's models are small and briefly trained "
        "on CPU; their NLL barely moves between causal, segment and full inference (they hardly re-read the past), "
        "so the axis has little to add here. The power row gives the seeds this comparison would need; a deeper "
        "model trained longer (the paper profile, a GPU) is the test this leaves open."
    ),
    ("CA-4 after minimal retraining", "ci"): (
        "the source's 'seamless integration into pretrained Transformer-based models with minimal retraining' "
        "(§2.2) is about the weights after a context-axis fine-tune, and ci runs none (hours on a CPU): the "
        "pretrained weights as they are pay the full axis's cost in NLL. The decide-ca4 chunk runs the declared "
        "fine-tune (minutes on a GPU); the power row names it."
    ),
}
NOT_REPRODUCED[("CA-4 after minimal retraining", "long")] = NOT_REPRODUCED[
    ("CA-4 after minimal retraining", "ci")
]  # long runs ci's sizes here


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("context_axis")


# --------------------------------------------------------------------------- CA-1, CA-2


@pytest.mark.claim("CA-1")
def test_algorithm1_mask(claim):
    """Algorithm 1 line by line against the closed form M[b,0,c,i,j] = 1 iff j > max(i, c) or
    x[b, j] is padding, on every sequence of length ≤ 6 over {pad, a, b} (3⁶ + … sequences)."""
    m = exactness.mask_stats(max_S=6, symbols=3)
    claim.record("sequences checked (S = 1 … 6, every sequence over 3 symbols)", m["n"])
    claim.figure(
        figures.mask_slices(
            exactness.unpadded_mask(5).numpy(), [0, 2, 3, 4], "004 Algorithm 1, L = 5: M[c] (1 = masked)"
        ),
        "mask_slices",
    )
    claim.check("shape (B, 1, S, S, S) and dtype bool on every S", m["shapes_ok"], compare="true", why="exact")
    claim.check(
        "mask entries differing from the closed form",
        m["worst"],
        0,
        compare="abs",
        tol=0,
        why="an exact boolean construction",
        control=m["control"],
        control_name="causal mask C alone over every slice (Algorithm 1 without the context mask T)",
    )


@pytest.mark.claim("CA-2")
def test_figure1_slices(claim):
    """Fig 1's two printed slices; in slice c every query sees up to c; the query i = c of
    slice c is the ordinary causal row; the last slice masks nothing."""
    f = exactness.figure1_stats(FIG1)
    claim.figure(figures.mask_slices(f["mask"].numpy(), [2, 3], "004 Fig 1 (a) c = 2, (b) c = 3, L = 5 (ours)"), "fig1")
    claim.figure(figures.fig2_layout(), "fig2_layout")
    claim.check(
        "entries differing from Fig 1 (a), (b)",
        f["figure"],
        0,
        compare="abs",
        tol=0,
        why="exact",
        control=f["control"],
        control_name="the ordinary causal mask in every slice (no context axis)",
    )
    claim.check("diagonal rows differing from the causal mask", f["diagonal"], 0, compare="abs", tol=0, why="exact")
    claim.check("queries whose last visible key is not max(i, c)", f["up_to_c"], 0, compare="abs", tol=0, why="exact")
    claim.check("entries masked in the last slice", f["last"], 0, compare="abs", tol=0, why="exact")


# --------------------------------------------------------------------------- CA-3


@pytest.mark.claim("CA-3")
def test_diagonal_is_autoregressive(claim, sizes, device):
    """Through any number of layers: changing any token after t never changes the diagonal
    output at t, and the diagonal equals the per-prefix bidirectional oracle (random llama and
    GPT-2 configs and sequences). And it is not causal attention: the past is re-read."""
    claim.dtype = "float64"  # exact checks: see EXACT
    stats = exactness.diagonal_stats(sizes["check"], device)
    claim.record("random models × sequences checked", stats["n"])
    exact = "float64, exact construction (see EXACT)"
    claim.check(
        "max |Δ diagonal logit ≤ t| when tokens after t change",
        stats["future"],
        0.0,
        compare="abs",
        tol=EXACT,
        why=exact,
        control=stats["leak"],
        control_name="Algorithm 1's mask with one future key let through (slice c sees key c + 1)",
    )
    claim.check(
        "max |full axis − per-prefix bidirectional oracle|", stats["oracle"], 0.0, compare="abs", tol=EXACT, why=exact
    )
    claim.check(
        "max |bucketed full axis − Algorithm 1 masked formulation|",
        stats["masked"],
        0.0,
        compare="abs",
        tol=EXACT,
        why=exact,
    )
    med = float(np.median(stats["vs_causal"]))
    # control: one-layer models, where the last diagonal query reads the embeddings exactly as
    # causal attention does (only when the examples drew some)
    ctl = (
        dict(control=float(np.median(stats["one_layer"])), control_name="one-layer models (nothing to re-read)")
        if stats["one_layer"]
        else {}
    )
    claim.check(
        "median |diagonal − causal| logit at the last position, ≥ 2 layers (not causal attention)",
        med,
        1e-3,
        compare="ge",
        why="re-reading the past must move the output well above rounding",
        **ctl,
    )


# --------------------------------------------------------------------------- CA-4


@pytest.fixture(scope="module")
def pretrained_run(model_name, pretrained, sizes, corpus_name) -> PretrainedRun:
    m, tok = pretrained(model_name)
    return experiments.pretrained_run(model_name, m, tok, sizes["pretrained"], corpus_name)


@pytest.mark.claim("CA-4")
def test_pretrained_weights_run_unchanged(claim, pretrained_run, sizes):
    """The embedded pretrained model runs in context-axis mode with its own state dict: no new
    parameters, nothing changed, the batched full axis and the KV-cache segment mode agree with
    the per-prefix oracle and with causal decoding. Its NLL in each mode is recorded (the
    source: "compatible with existing pretrained weights … minimal retraining")."""
    r = pretrained_run
    claim.dtype = r.dtype
    claim.corpus(r.corpus)
    tol = PRETRAINED_TOL
    why = (
        f"{r.dtype} states with float32 norms and rotary tables (transformers): rounding of one function "
        "through differently shaped kernels (logits ≈ 10–30)"
    )
    for mode, v in r.nll.items():
        claim.record(f"{data.corpus_title(r.corpus)} test NLL, {mode} inference", v, unit="nats/token")
    claim.record(
        "NLL cost of running the causal weights on the full axis", r.nll["full"] - r.nll["causal"], unit="nats/token"
    )
    claim.table(
        f"CA-4 {r.name}: held-out NLL of the pretrained weights by inference mode",
        ["mode", "NLL (nats/token)"],
        [[k, round(v, 4)] for k, v in r.nll.items()],
    )
    claim.check("parameters after / before", r.params[1] / r.params[0], 1.0, compare="abs", tol=0, why="exact")
    claim.check("state dict unchanged", r.state_unchanged, compare="true", why="exact")
    claim.check("attention implementation restored", r.impl_restored, compare="true", why="exact")
    seg = next(m for m in r.nll if m.startswith("segment:"))
    claim.check(
        "max |bucketed full axis − per-prefix oracle| (logits)",
        r.max_full_vs_oracle,
        0.0,
        compare="abs",
        tol=tol,
        why=why,
        control=r.max_causal_vs_oracle,
        control_name="the causal logits in place of the full axis (another function of the same weights)",
    )
    claim.check("max |segment k = S − oracle| (logits)", r.max_segS_vs_oracle, 0.0, compare="abs", tol=tol, why=why)
    claim.check(
        "max |segment k = 1 − causal| (logits)",
        r.max_seg1_vs_causal,
        0.0,
        compare="abs",
        tol=tol,
        why=why,
        control=r.max_segk_vs_causal,
        control_name=f"{seg} in place of k = 1",
    )


@pytest.fixture(scope="module")
def retrained(model_name, pretrained, sizes, corpus_name) -> retraining.Retraining:
    m, tok = pretrained(model_name)
    return retraining.retraining_run(model_name, m, tok, dict(sizes["retrain"]), corpus_name)


@pytest.mark.claim("CA-4")
def test_pretrained_weights_integrate_with_minimal_retraining(claim, retrained, profile):
    """004 §2.2: "remains compatible with existing pretrained weights … allowing for seamless
    integration into pretrained Transformer-based models with minimal retraining". The source gives
    no number for "seamless" or "minimal": ours are `retraining.SEAMLESS_NATS` (the full axis within
    a 5% perplexity rise) after at most `retraining.MINIMAL_RETRAIN` (1,000 steps of 8 windows). The
    model is fine-tuned on the full axis beside the same fine-tune run causally; the cost is the
    first read on the full axis against the second read causally, per held-out window, and its
    one-sided 95% upper bound must clear the bar. The control: the causal fine-tune read on the full
    axis (the same text and steps, no axis in training). ci fine-tunes nothing (0 steps: the
    pretrained weights as they are, no control); decide-ca4 runs the declared fine-tune."""
    r = retrained
    claim.dtype = r.dtype
    claim.corpus(r.corpus)
    cost, control = r.cost(), r.control_cost()
    for key, v in r.nll.items():
        variant, mode = key.split("/")
        if r.steps == 0 and variant != "causal":
            continue  # at 0 steps both "fine-tunes" are the pretrained weights: read once
        who = "pretrained weights" if r.steps == 0 else f"{variant} fine-tune"
        claim.record(f"held-out NLL, {who}, {mode} inference", float(v.mean()), unit="nats/token", key=f"nll {key}")
    claim.record("context-axis fine-tuning steps before the NLLs were read", r.steps, compare="none")
    claim.record("held-out windows", r.n_windows, compare="none")
    claim.record("mean cost of the full axis (per window)", float(cost.mean()), unit="nats/token")
    if r.steps:
        claim.table(
            f"CA-4 {r.name}: held-out NLL after {r.steps:,} fine-tuning steps ({r.tokens:,} tokens each)",
            ["fine-tune", *retraining.MODES],
            [[v, *(round(float(r.nll[f"{v}/{m}"].mean()), 4) for m in retraining.MODES)] for v in retraining.VARIANTS],
        )
        claim.figure(
            plotting.training_curves(
                {f"{v} fine-tune": r.losses[v] for v in retraining.VARIANTS},
                f"CA-4 {r.name}: fine-tuning loss (each in its own mode)",
            ),
            f"{r.name}_retraining",
        )
    claim.power(retraining.retraining_power(r))
    claim.not_reproduced_if(NOT_REPRODUCED, ("CA-4 after minimal retraining", profile.name), retraining.summary(r))
    claim.check(
        f"upper {retraining.LEVEL:.0%} {retraining.CHECK} {r.steps:,} steps of context-axis retraining",
        retraining.upper_bound(cost),
        retraining.SEAMLESS_NATS,
        compare="le",
        unit="nats/token",
        why="'seamless integration … with minimal retraining' (§2.2), read as a perplexity rise under 5% "
        "(ours: the source states no number), one-sided over held-out windows",
        **(
            dict(
                control=retraining.upper_bound(control),
                control_name="the causal fine-tune read on the full axis (same text and steps, no axis in training)",
            )
            if control is not None
            else {}
        ),
    )


# --------------------------------------------------------------------------- CA-5


@pytest.mark.claim("CA-5")
def test_upper_triangle_is_never_read(claim, sizes, device):
    """Zeroing the strictly-upper part (positions t > c of slice c) in every layer's input
    changes no diagonal output (whole models); the trimmed kernel, which never computes it,
    equals the naive kernel on everything else."""
    claim.dtype = "float64"  # exact checks: see EXACT
    stats = exactness.upper_triangle_stats(sizes["check"], device)
    S = sizes["cost"]["S"][-1]
    claim.record("random models checked", stats["n"])
    claim.record(f"share of the S × S states never computed (S = {S})", (S - 1) / (2 * S))
    claim.figure(figures.fig3_layout(exactness.trimmed_state_norms(device).numpy()), "fig3_layout")
    exact = "float64, exact construction (see EXACT)"
    claim.check(
        "max |Δ diagonal logit| with the upper triangle zeroed in every layer",
        stats["model"],
        0.0,
        compare="abs",
        tol=EXACT,
        why=exact,
        control=stats["leak"],
        control_name="Algorithm 1's mask with one future key let through (slice c sees key c + 1)",
    )
    claim.check(
        "max |trimmed − upper-zeroed naive| (kernel outputs)", stats["kernel"], 0.0, compare="abs", tol=EXACT, why=exact
    )


# --------------------------------------------------------------------------- CA-6, CA-7: counted cost


@pytest.fixture(scope="module")
def cost(sizes):
    return experiments.counted_cost(sizes["cost"])


@pytest.mark.claim("CA-6")
def test_segment_level_sparsity(claim, sizes, cost, device):
    """Segment size k: only k context slots per token are computed, deeper slices reuse the
    last one (Fig 4); k = 1 is exactly causal attention and k = S the full axis (whole models,
    KV-cache segment mode against the masked formulation with Fig 4's reuse); stored states
    and FLOPs grow linearly in k at fixed S."""
    claim.dtype = "float64"  # exact checks: see EXACT
    stats = exactness.segment_stats(sizes["check"], device)
    sc = experiments.segment_cost(cost)
    claim.record("random models checked", stats["n"])
    claim.table("CA-6: segment kernel cost at fixed S", ["k", "GFLOP", "states per head (K·S)"], sc.table())
    claim.figure(figures.fig4_layout(), "fig4_layout")
    claim.figure(figures.segment_cost_vs_k(sc), "cost_vs_k")
    exact = "float64, exact construction (see EXACT)"
    claim.check(
        "max |segment k = 1 − causal decoding| (logits)",
        stats["k1"],
        0.0,
        compare="abs",
        tol=EXACT,
        why=exact,
        control=stats["k2"],
        control_name="segment k = 2 in place of k = 1",
    )
    claim.check(
        "max |segment k = S − full axis (oracle)| (logits)", stats["kS"], 0.0, compare="abs", tol=EXACT, why=exact
    )
    claim.check(
        "max |segment k (KV cache) − masked formulation with Fig 4 reuse| (logits)",
        stats["k"],
        0.0,
        compare="abs",
        tol=EXACT,
        why=exact,
    )
    # counted, deterministic; the frozen-key GEMMs of a chunk (16 slices) run to the chunk's
    # last slice, a waste that shrinks as k grows: 0.85–1.0 is linear for k ≥ 1
    claim.check(
        f"log–log slope of segment FLOPs in k (S = {cost['S']})",
        sc.flops_slope,
        1.0,
        compare="abs",
        tol=0.15,
        why="counted FLOPs; chunking waste ≤ 15% at k = 1",
    )
    claim.check(
        f"log–log slope of stored states in k (S = {cost['S']})",
        sc.states_slope,
        1.0,
        compare="abs",
        tol=0.02,
        why="K·S states by construction (min(k, S) = k here)",
    )


@pytest.mark.claim("CA-7")
def test_cost_grows_cubically_and_sparsity_brings_it_down(claim, cost):
    """Counted FLOPs against S: the Algorithm-1 kernels (naive, masked SDPA) grow as S³, the
    causal decoder as S²; the trimmed kernel stays S³ but does only the ≈ 1/3 that can reach
    the diagonal; segment(k) brings the exponent back to 2."""
    kc = experiments.kernel_cost(cost)
    S, slopes, at = kc.S, kc.slopes, kc.at
    claim.record(f"FLOPs segment k=4 / masked_sdpa at S = {S}", at["segment k=4"] / at["masked_sdpa"])
    claim.table(
        f"CA-7: counted GFLOP by kernel (H = {cost['H']}, d = {cost['d']}, batch 1)", ["S", *kc.rows], kc.table()
    )
    claim.figure(figures.flops_vs_S(kc), "flops_vs_S")
    claim.figure(figures.states_vs_S(kc), "states_vs_S")
    # every comparison shown is asserted. Controls: the slope of a kernel of the other order
    # through the same comparison (the S² causal decoder as "cubic", the S³ kernel as "quadratic")
    why = "counted FLOPs; the lower-order terms left between the two largest S move the slope by < 0.15"
    for name, want, ctl in (
        ("masked_sdpa", 3.0, "causal"),
        ("trimmed", 3.0, None),
        ("segment k=4", 2.0, "masked_sdpa"),
        ("causal", 2.0, None),
    ):
        control = dict(control=slopes[ctl], control_name=f"the {ctl} kernel's slope") if ctl else {}
        claim.check(
            f"log–log slope of FLOPs in S (two largest S), {name}",
            slopes[name],
            want,
            compare="abs",
            tol=0.15,
            why=why,
            **control,
        )
    claim.check(
        f"FLOPs masked_sdpa / causal at S = {S}",
        at["masked_sdpa"] / at["causal"],
        S,
        compare="rel",
        tol=0.01,
        why="S slices of the S × S work, counted exactly",
    )
    naive = (
        dict(
            control=at["naive"] / at["masked_sdpa"], control_name="the naive kernel, which computes the upper triangle"
        )
        if "naive" in at
        else {}
    )  # (naive runs up to ca.NAIVE_MAX_S)
    claim.check(
        f"FLOPs trimmed / masked_sdpa at S = {S} (upper triangle never computed)",
        at["trimmed"] / at["masked_sdpa"],
        (S + 1) * (2 * S + 1) / (6 * S * S),
        compare="rel",
        tol=0.01,
        why="Σ (c+1)² / S³ exactly",
        **naive,
    )


# --------------------------------------------------------------------------- CA-8


@pytest.fixture(scope="module")
def experiment(sizes, device, corpus_name, train_procs) -> Experiment:
    return experiments.ca8_experiment(sizes, corpus_name, device, procs=train_procs)


# CA-8's power. The source states no effect size (a proposal without experiments), so the
# effect the test must be able to see is ours, stated: 0.01 nats/token (≈ 1% perplexity), the
# least benefit that would pay for the axis's S-fold cost — read as the claim's edge ("better" =
# better by at least this), so the power's size is 1 − power; its paired sds are taken at their
# 95% upper bound (`experiments.ca8_power`).
EFFECT_NATS = 0.01
# the test: mean Δ NLL < 0 and two-sided paired p ≤ 0.05, i.e. one-sided p ≤ 0.025
ALPHA_TWO_SIDED = 0.05


@pytest.mark.policy_dtype
@pytest.mark.claim("CA-8")
def test_context_axis_training_gives_better_representations(claim, experiment, sizes, profile):
    """The proposal's premise, tested: models trained with the context axis (± stochastic axis
    drop) against the identical causal model, held-out NLL under causal-only (KV-cache
    compatible), segment-k and full context-axis inference. The claim is read as: the model
    trained with the full context axis beats the causal one under full context-axis inference,
    and the model trained with axis drop (§1: "robustness under causal-only conditions") beats
    it under causal-only inference, each significantly over paired seeds. Segment inference is
    recorded.

    Our own check, not the source's claim (context rows, not asserted): §3.1's training–
    inference mismatch, i.e. how far each model's NLL moves between its training mode and the
    other inference modes, against the seed-to-seed sd. A small mismatch here says the trained
    models barely re-read the past, not that the source's premise holds."""
    e = experiment
    claim.corpus(e.corpus)
    deltas = experiments.nll_deltas(e)
    claim.table(*experiments.nll_table_rows(e))
    for r in experiments.nll_readings(e, deltas, axis_drop=sizes["axis_drop"], steps=sizes["train"]["steps"]):
        claim.record(r.name, r.measured, unit=r.unit)
    claim.figure(
        figures.nll_by_inference(
            experiments.nll_table(e),
            e.modes,
            "CA-8: held-out NLL by training and inference mode",
            reference=float(e.nll["causal"]["causal"].mean()),
        ),
        "nll_by_mode",
    )
    curves = {f"{v} (seed {s})": r.losses for v in VARIANTS for s, r in zip(e.seeds, e.results[v])}
    claim.figure(
        plotting.training_curves(curves, "CA-8: training loss (each model in its own training mode)"), "training"
    )
    power = experiments.ca8_power(e, deltas, EFFECT_NATS, ALPHA_TWO_SIDED)  # None: < 2 seeds or no spread
    if power:
        claim.power(power)
    claim.not_reproduced_if(NOT_REPRODUCED, ("CA-8", profile.name), experiments.ca8_summary(e, deltas))
    full_d, _, full_p = deltas[TESTED[0]]
    drop_d, _, drop_p = deltas[TESTED[1]]
    better = "the premise: better held-out NLL than the identical causal model"
    claim.check(
        "Δ NLL: context axis model, full inference − baseline (mean over seeds)",
        full_d,
        0.0,
        compare="le",
        unit="nats/token",
        why=better,
    )
    claim.check(
        "paired t p (two-sided, over seeds): context axis model, full inference vs baseline",
        full_p,
        ALPHA_TWO_SIDED,
        compare="le",
        why="significant over paired seeds, conventional α",
    )
    claim.check(
        "Δ NLL: axis drop model, causal inference − baseline (mean over seeds)",
        drop_d,
        0.0,
        compare="le",
        unit="nats/token",
        why=better + ", under KV-cache-compatible inference",
    )
    claim.check(
        "paired t p (two-sided, over seeds): axis drop model, causal inference vs baseline",
        drop_p,
        ALPHA_TWO_SIDED,
        compare="le",
        why="significant over paired seeds, conventional α",
    )
