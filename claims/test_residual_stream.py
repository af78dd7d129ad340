"""002 Residual stream and transformer internals: RS-1 … RS-8.

The pretrained claims run on the embedded models (or `--model`) over the run's corpus
(`--corpus`, Brown by default): one module-scoped `texts` fixture reads every model's residual
stream once on windows of its validation split (tuned-lens training) and test split (held-out),
and the tests read from it. The random-init models read the same corpus under the Brown BPE.
Position 0 of every window is left out of the lens and norm statistics: it is the attention
sink / massive-activation token (NOTES "Embedded pretrained models"), which no claim is about.

Random-init models: HF GPT-2 and Llama built by `repro.core.models.hf.build_model` with their norm
gains perturbed (RS-2 must not pass by an accident of unit gains), and `TinyDecoder`s for the
pre-/post-norm comparison (RS-3, at the original Transformer's Xavier init that the post-norm
argument assumes) and the attention-only induction models (RS-7).

Every passing claim runs a negative control through one of its assertions: one term left out
of the sum (RS-1, RS-2, RS-5), a post-norm stack (RS-4), a random-init twin (RS-6), the stacks
without skip connections and the post-norm stacks (RS-3), the other depth (RS-7), a lens that
reads nothing from the layer (RS-8).
"""

from __future__ import annotations

import numpy as np
import pytest

from repro.core import arch, lens, stats
from repro.harness import catalogue
from repro.residual_stream import decomposition as rs
from repro.residual_stream import figures, study

# 002 "Residual Stream Decomposition": 1 + L·H + L terms for (L, H) = (32, 32) (the source's
# example) and (24, 16) (its exercise)
SOURCE_TERMS = catalogue.number("RS-1", "terms")

# (claim, profile) → why the claim does not hold at that profile's sizes (measured at ci; `long`
# runs the ci sizes here; paper measured on one H200)
_POST_NORM = (
    "at the source's init (Xavier weights, embeddings read ×√d, as in the original Transformer) the post-norm "
    "stack has lost the direct gradient path, as the source says, but not the gradient itself: the first block's "
    "weight gradient is about as large as the last block's at every depth measured, the deepest included, so "
    "deep post-norm stacks do not lose gradient at early layers at initialisation in this decoder-only model."
)
_POST_NORM_PAPER = (
    "at the source's init and the paper row's sizes (width 768, 6 … 96 layers, 5 seeds; one H200, 2026-11-26, "
    "results/h200-2026-11-26b) the post-norm stack has lost the direct gradient path (coefficient −0.001 at L = 96), "
    "as the source says, and from L = 12 its first block gets less weight gradient than its last (geometric means "
    "0.74, 0.67, 0.67, 0.92 at L = 12, 24, 48, 96; pre-norm's grow 2.6 → 6.1), but never at most half of it, and the "
    "ratio does not fall with depth: deep post-norm stacks do not lose gradient at early layers at initialisation "
    "in this decoder-only model at the source's scale either."
)
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("RS-3", "ci"): _POST_NORM,
    ("RS-3", "long"): _POST_NORM,
    ("RS-3", "paper"): _POST_NORM_PAPER,
}


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("residual_stream")


@pytest.fixture(scope="module")
def texts(model_names, pretrained, sizes, corpus_name, device) -> dict[str, study.Text]:
    return study.read_texts(model_names, pretrained, sizes, corpus=corpus_name, device=device)


@pytest.fixture(scope="module")
def random_init(sizes, corpus_name, device):
    """HF GPT-2 and Llama at random init (001 App B.1) with norm gains 1 + 0.3·N(0,1) and
    biases 0.3·N(0,1), and windows of the corpus under the Brown BPE to feed them."""
    return study.random_init_models(sizes["random_init"], corpus=corpus_name, device=device)


# --------------------------------------------------------------------------- RS-1, RS-2


@pytest.fixture(scope="module")
def decomposed(texts, random_init, sizes):
    """name → (model, ids (1, dla_len + 1), Decomposition of ids[:, :-1]): the embedded models on
    held-out text, the random-init ones on the same text under the Brown BPE; shared by RS-1 and RS-2."""
    return study.decompose_all(texts, random_init, sizes["dla_len"])


@pytest.mark.claim("RS-1")
def test_final_residual_is_sum_of_terms(claim, decomposed, corpus_name):
    """The count 1 + L·H + L on the source's two examples and on every model, and the terms'
    sum against x^(L) within float32 rounding (`rs.sum_check`: 2·n·u, Higham). Control: the sum
    with one term left out (the smallest head output)."""
    claim.corpus(corpus_name)
    # the count formula from the configs of the source's two examples (32 × 32; the exercise's 24 × 16)
    for (L, H), n in SOURCE_TERMS.items():
        claim.check(
            f"terms for a {L}-layer × {H}-head model",
            rs.count_terms(rs.example_config(L, H)),
            n,
            compare="abs",
            tol=0,
            source=n,
            why="exact count: 1 + L·H + L",
        )
    for name, (model, _, dec) in decomposed.items():
        c = rs.sum_check(model, dec)
        l, h = c.head
        claim.check(
            f"{name}: terms (1 + L·H + L + bias terms)",
            c.n_terms,
            c.expected,
            compare="abs",
            tol=0,
            why=f"count_terms + {c.bias} b_O terms",
        )
        claim.check(
            f"{name}: max relative |Σ terms − x^(L)|",
            c.err,
            0.0,
            compare="abs",
            tol=c.tol,
            why=f"2·n·u worst-case float32 accumulation over n = {c.n_terms} terms",
            control=c.control,
            control_name=f"Σ terms without one term (L{l}H{h}, the smallest head output)",
        )
    name, (_, _, dec) = next(iter(decomposed.items()))
    claim.figure(figures.term_norms_at_last_token(name, dec), "term_norms")


@pytest.mark.claim("RS-2")
def test_direct_logit_attribution_sums_to_logit(claim, decomposed, corpus_name):
    """Σ DLA (final norm's scale frozen, its gain folded into the unembedding) equals the logit
    within float32 rounding (`rs.dla_check`), on models whose final-norm gains are not 1.
    Control: the sum with one head's attribution left out (the smallest)."""
    claim.corpus(corpus_name)
    shown = None
    for name, (model, ids, dec) in decomposed.items():
        gain = arch.frozen_norm(lens.final_norm(model)).gain
        if gain is not None:  # the claim is about models whose final-norm gains are not 1
            claim.applies(
                float(gain.std()) >= 0.01,
                f"{name}'s final-norm gain is constant (std {float(gain.std()):.2g}): freezing it tests nothing",
            )
            claim.check(
                f"{name}: final-norm gain, std over dimensions",
                float(gain.std()),
                0.01,
                compare="ge",
                why="gains that differ from 1, so freezing the norm's scale is put to the test",
            )
        c = rs.dla_check(model, ids, dec)
        claim.check(
            f"{name}: max |Σ DLA − logit| / max |logit|",
            c.err,
            0.0,
            compare="abs",
            tol=c.tol,
            why=f"2·n·u float32 accumulation, n = {len(c.att.names) + 1} terms",
            control=c.control,
            control_name=f"Σ DLA without one term ({c.att.names[c.term]}, the smallest head attribution)",
        )
        shown = shown or (name, c)
    name, c = shown
    claim.figure(figures.dla_at_last_token(name, c.att, c.logits), "dla_top_terms")


# --------------------------------------------------------------------------- RS-3


@pytest.fixture(scope="module")
def gradients(sizes, corpus_name, device) -> study.Gradients:
    """All fed one batch of windows of the corpus (--corpus) under the Brown BPE."""
    return study.gradients(sizes["grad"], corpus=corpus_name, device=device)


def _record_gradients(claim, g: study.Gradients, position: str) -> list[dict]:
    """Records RS-3's measurements of the `position`-norm stacks, and the figure of all rows,
    into `claim`; returns those rows."""
    mine = [r for r in g.rows if r["position"] == position]
    for r in mine:
        claim.record(
            f"{position}-norm L={r['depth']}: ‖∂L/∂x^(1)‖/‖∂L/∂x^(L−1)‖ (mean of {len(r['ratio'])} seeds)",
            float(np.mean(r["ratio"])),
        )
        claim.record(
            f"{position}-norm L={r['depth']}: first/last block weight-gradient ratio (geometric mean)",
            study.gmean(r["param_ratio"]),
        )
        claim.record(
            f"{position}-norm L={r['depth']}: coefficient of ∂L/∂x^(L) in ∂L/∂x^(1) (mean)", float(np.mean(r["share"]))
        )
    claim.figure(figures.gradient_ratio_by_depth(g.rows), "gradient_ratio")
    return mine


@pytest.mark.claim("RS-3")
def test_pre_norm_keeps_gradient_at_first_layer(claim, gradients, corpus_name):
    """The Proposition: ∂L/∂x^(l) = ∂L/∂x^(L) + (terms from the blocks), the first term a direct
    path with no multiplicative degradation. Measured as the coefficient with which ∂L/∂x^(L)
    enters ∂L/∂x^(1) (`GradientFlow.identity_share`: 1 for a clean identity path, the other terms
    project on it only by chance), at the source's init; and, as the exercise asks, the size of
    ∂L/∂x^(1) itself. Controls: the same stacks without skip connections, and the post-norm
    stacks, where the source says the direct path does not exist."""
    claim.corpus(corpus_name)
    g = gradients
    mine = _record_gradients(claim, g, "pre")
    deep = max(r["depth"] for r in mine)
    post_deep = next(r for r in g.rows if r["position"] == "post" and r["depth"] == deep)
    pre_deep = next(r for r in mine if r["depth"] == deep)
    why = "'a direct path … with no multiplicative degradation': it arrives at least at half strength"
    claim.check(
        "pre-norm: coefficient of ∂L/∂x^(L) in ∂L/∂x^(1), smallest over depths and seeds",
        min(min(r["share"]) for r in mine),
        0.5,
        compare="ge",
        why=why,
        control=min(g.no_skip["share"]),
        control_name=f"the pre-norm stacks at L={deep} without skip connections",
    )
    claim.check(
        f"pre-norm L={deep}: coefficient of ∂L/∂x^(L) in ∂L/∂x^(1), mean over seeds",
        float(np.mean(pre_deep["share"])),
        0.5,
        compare="ge",
        why=why,
        control=float(np.mean(post_deep["share"])),
        control_name=f"post-norm at L={deep} ('this direct path does not exist in post-norm')",
    )
    # "O(1)": the gradient reaching layer 1 does not shrink with depth — a decay like c^L with
    # c < 1 would miss both marks by orders of magnitude at L = 48
    first = float(np.mean(mine[0]["ratio"]))
    claim.check(
        f"pre-norm ratio at L={deep} / at L={mine[0]['depth']}",
        float(np.mean(pre_deep["ratio"])) / first,
        0.5,
        compare="ge",
        why="no decay with depth: at least half",
    )
    claim.check(
        "pre-norm ‖∂L/∂x^(1)‖/‖∂L/∂x^(L−1)‖, smallest over depths and seeds",
        min(min(r["ratio"]) for r in mine),
        0.5,
        compare="ge",
        why="the gradient reaches layer 1: at least half",
    )


@pytest.mark.claim("RS-3")
def test_post_norm_loses_gradient_at_depth(claim, gradients, profile, corpus_name):
    """'Deep post-norm stacks (48+) lose gradient at early layers' (002, exercise; Xiong et al.
    2020): the first block's weight gradient against the last block's (Xiong et al.'s per-layer
    parameter-gradient norm), at the init the argument assumes — the original Transformer's
    Xavier weights with embeddings read ×√d (`rs.xavier_init_`). At 001 App B.1's init (std 0.02,
    damped residual projections) every sub-layer output is small, each LayerNorm's Jacobian is
    close to a projection and post-norm keeps a near-identity path by construction: recorded as
    context, not asserted."""
    claim.corpus(corpus_name)
    g = gradients
    mine = _record_gradients(claim, g, "post")
    deep = mine[-1]
    claim.record(
        f"post-norm L={deep['depth']} at 001 App B.1's init (std 0.02, seed {g.b1['seeds'][0]}): coefficient of "
        "∂L/∂x^(L) in ∂L/∂x^(1) / first-last weight-gradient ratio",
        f"{g.b1['share'][0]:.3f} / {g.b1['param_ratio'][0]:.3f}",
    )
    post_power = study.post_norm_power(deep)  # None: fewer than two seeds, or no spread
    if post_power:
        claim.power(post_power)
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("RS-3", profile.name),
        "first/last block weight-gradient ratio (geometric mean over seeds) "
        + ", ".join(f"L={r['depth']}: {study.gmean(r['param_ratio']):.2f}" for r in mine)
        + f"; coefficient of the direct path at L={deep['depth']}: {np.mean(deep['share']):.3f}",
    )
    claim.check(
        f"post-norm L={deep['depth']}: ‖∇W block 1‖ / ‖∇W block L‖, geometric mean over seeds",
        study.gmean(deep["param_ratio"]),
        0.5,
        compare="le",
        why="'lose gradient at early layers': the first block gets at most half the last block's weight gradient",
    )


# --------------------------------------------------------------------------- RS-4


@pytest.fixture(scope="module")
def norm_curves(texts, random_init, sizes, device):
    """name → median ‖x^(l)‖ per layer, and the negative control's: a post-norm stack of the
    random-init models' size on the same windows — the stream itself is normalised after every
    block ("no normalization on the residual stream itself" is the source's reason for the growth)."""
    return study.residual_norm_curves(texts, random_init, sizes["random_init"], device=device)


@pytest.mark.claim("RS-4")
def test_residual_norm_grows_with_depth(claim, norm_curves, sizes, corpus_name):
    claim.corpus(corpus_name)
    curves, post_norms = norm_curves
    s = sizes["random_init"]
    # the trend is read from layer 1 on: the embedding's own scale (x^(0)) is not what the blocks
    # add, and a post-norm stack, whose embedding is smaller than its normalised stream, would
    # otherwise show a "growth" from layer 0 alone
    ctl_tau, ctl_p = study.one_sided_tau_p(post_norms[1:], "up")
    claim.record("control (post-norm stack): Kendall τ(layer, median norm), layers 1…L", ctl_tau)
    claim.figure(figures.residual_norm_by_layer(curves), "residual_norm")
    for i, (name, norms) in enumerate(curves.items()):
        tau, p = study.one_sided_tau_p(norms[1:], "up")
        claim.record(f"{name}: median ‖x^(L)‖ / ‖x^(0)‖", float(norms[-1] / norms[0]))
        claim.record(f"{name}: Kendall τ(layer, median norm), layers 1…L", tau)
        control = (
            dict(control=ctl_p, control_name=f"a post-norm stack ({s['n_layer']} layers, random init, same windows)")
            if i == 0
            else {}
        )
        claim.check(
            f"{name}: one-sided p of Kendall τ(layer, median ‖x^(l)‖) > 0, layers 1…L",
            p,
            0.01,
            compare="le",
            why="growth: τ > 0 with one-sided p ≤ 0.01",
            **control,
        )
        claim.check(
            f"{name}: median ‖x^(L)‖ / ‖x^(1)‖",
            float(norms[-1] / norms[1]),
            1.0,
            compare="ge",
            why="the last layer's norm above the first block's output",
        )


# --------------------------------------------------------------------------- RS-5


@pytest.fixture(scope="module")
def ffn(texts, sizes, device) -> study.FFNRewrite:
    """The FFN key–value rewrite of every pretrained model and of a tiny ReLU model (the source's form)."""
    return study.ffn_rewrite(texts, sizes["dla_len"], device=device)


@pytest.mark.claim("RS-5")
def test_ffn_is_a_key_value_sum(claim, ffn, corpus_name):
    claim.corpus(corpus_name)
    for name, ratios in ffn.ratios.items():
        claim.check(
            f"{name}: max |Σ_i c_i v_i − FFN(x)| / (F·u·Σ|c_i||v_i|) over layers",
            max(ratios),
            1.0,
            compare="le",
            why="Higham's float32 dot-product bound",
            control=min(ffn.dropped[name]),
            control_name="the sum without one key–value pair (the median key), smallest over layers",
        )
    # the ReLU model's coefficients are literally max(w1_i·x, 0)
    claim.check(
        "tiny ReLU: coefficients equal max(w1_i·x, 0) bit for bit",
        ffn.relu_literal,
        compare="true",
        why="the source's form, exactly",
    )
    claim.record("tiny ReLU: share of keys active (c_i > 0)", ffn.relu_active)
    claim.figure(figures.ffn_rewrite_error(ffn.ratios), "ffn_rewrite_error")


# --------------------------------------------------------------------------- RS-6


RS6_TWIN_TOKENS = 64  # the control reads the first window's first tokens (its cost: ~5% of the claim's)


@pytest.mark.claim("RS-6")
def test_logit_lens_rank_improves_with_depth(claim, texts, corpus_name):
    """Negative control: a random-init twin of the first model (same architecture, tied
    embeddings stay tied; `repro.core.models.hf.random_init_twin`) on the first held-out
    window's first RS6_TWIN_TOKENS tokens, through the same trend assertion. One model only: a
    twin of Gemma (262k vocabulary) would add a fifth of the claim's cost."""
    claim.corpus(corpus_name)
    curves = {}
    for i, (name, t) in enumerate(texts.items()):
        med, q1, q3, n_tok = study.rank_curve(t.model, t.resid, t.ids)
        curves[name] = (med, q1, q3)
        tau, p = study.one_sided_tau_p(med, "down")
        claim.record(
            f"{name}: median rank at layer 0 / L/2 / L", f"{med[0]:.0f} / {med[len(med) // 2]:.0f} / {med[-1]:.0f}"
        )
        claim.record(f"{name}: Kendall τ(layer, median rank)", tau)
        claim.record(f"{name}: tokens", n_tok)
        control = {}
        if i == 0:
            twin_med = study.twin_rank_curve(t, RS6_TWIN_TOKENS)
            twin_tau, twin_p = study.one_sided_tau_p(twin_med, "down")
            claim.record(
                f"{name} random-init twin: median rank at layer 0 / L, Kendall τ",
                f"{twin_med[0]:.0f} / {twin_med[-1]:.0f}, {twin_tau:.2f}",
            )
            control = dict(
                control=twin_p,
                control_name=f"a random-init twin of {name} (same architecture, tied), {RS6_TWIN_TOKENS - 1} tokens",
            )
        # "toward 1 with depth": the trend (τ) and the end point — the last layer has the best
        # median rank of all layers (it need not be monotone on the way: Gemma's early layers
        # are worse than its embedding)
        claim.check(
            f"{name}: one-sided p of Kendall τ(layer, median rank) < 0",
            p,
            0.01,
            compare="le",
            why="improvement: τ < 0 with one-sided p ≤ 0.01",
            **control,
        )
        claim.check(
            f"{name}: median rank at the last layer − best median rank over layers",
            float(med[-1] - med.min()),
            0.0,
            compare="le",
            why="the last layer has the best median rank",
        )
        claim.check(
            f"{name}: median rank at the last layer / at layer 0",
            float(med[-1] / med[0]),
            1.0,
            compare="le",
            why="better at the end than at the embeddings",
        )
    claim.figure(figures.lens_rank_by_layer(curves), "rank_by_layer")


# --------------------------------------------------------------------------- RS-7


@pytest.fixture(scope="module")
def induction_runs(sizes, device, train_procs) -> study.InductionStudy:
    """One- and two-layer attention-only models trained on repeated random tokens, every seed."""
    return study.induction_study(sizes["induction"], device=device, procs=train_procs)


@pytest.mark.claim("RS-7")
def test_induction_needs_two_layers(claim, induction_runs):
    cfg, runs, seeds, uniform = induction_runs.cfg, induction_runs.runs, induction_runs.seeds, induction_runs.uniform
    claim.record("reference: ln V (uniform guess)", uniform)
    claim.record("reference: copy a random earlier token (no K-composition)", induction_runs.copy_loss)
    claim.record(
        "config",
        f"V={cfg.vocab_size}, T={cfg.seq_len}, repeat {cfg.min_repeat}-{cfg.max_repeat}, "
        f"d={cfg.d_model}, H={cfg.n_head}, {cfg.steps} steps × {cfg.batch_size}",
    )
    one = np.array([runs[1, s_].final.repeat for s_ in seeds])
    two = np.array([runs[2, s_].final.repeat for s_ in seeds])
    for seed, a, b in zip(seeds, one, two):
        claim.record(f"seed {seed}: loss on repeated half, 1 layer / 2 layers", f"{a:.3f} / {b:.3f}")
    near_zero = 0.2  # ≤ 5% of ln V = 4.16: on average ≥ e^-0.2 = 82% (geometric) on the right token
    t = stats.paired_t(one, two, "greater")
    curves = {
        (f"{n}-layer attention-only", seed): ([st for st, _ in r.curve], [l.repeat for _, l in r.curve])
        for (n, seed), r in runs.items()
    }
    claim.figure(figures.induction_curves(curves, chance=uniform), "induction_loss_curves")
    # each half of the claim with the other depth as its negative control, through the same assertion
    claim.check(
        "2 layers: worst seed's loss on repeated half",
        float(two.max()),
        near_zero,
        compare="le",
        why="'a two-layer one can': near zero, ≤ 0.2 nats (5% of ln V)",
        control=float(one.max()),
        control_name="the 1-layer model (no K-composition), worst seed",
    )
    claim.check(
        "1 layer: best seed's loss on repeated half",
        float(one.min()),
        1.0,
        compare="ge",
        why="'a one-layer model cannot': stays ≥ 1 nat (≥ 5× the 2-layer bar; context copying gives ≈ 2.8)",
        control=float(two.min()),
        control_name="the 2-layer model, best seed",
    )
    claim.check("paired t-test over seeds, 1 layer > 2 layers: p", float(t.p), 0.01, compare="le", why="α = 0.01")


# --------------------------------------------------------------------------- RS-8


def _beats_at_every_layer(claim, names, lens, null, L: int, why: str, null_name: str) -> None:
    """RS-8's two assertions of one lens comparison: it wins at every layer (`names[0]`, lens's
    wins against `L`), and its largest per-layer Wilcoxon p is below 0.01 / L (`names[1]`, the
    layer named); `lens` and `null` are (wins, per-layer p's), the null through the same checks."""
    wins, ps = lens
    null_wins, null_ps = null
    claim.check(names[0], wins, L, compare="ge", why=why, control=null_wins, control_name=null_name)
    worst = int(np.argmax(ps))
    claim.check(
        f"{names[1]} (layer {worst})",
        float(ps[worst]),
        0.01 / L,
        compare="le",
        why=f"α = 0.01, Bonferroni over {L} layers",
        control=float(max(null_ps)),
        control_name=null_name,
    )


def _record_lens(claim, name: str, c: study.LensComparison) -> None:
    """RS-8's context records of one model: token counts, the tuned lens's start, stop and held-out
    KL curve, the logit → tuned lens's KL at three layers, the control's KL and wins."""
    L, f = c.layers, c.fit
    claim.record(
        f"{name}: held-out tokens / training tokens / tokens held out for the stop",
        f"{c.n_test} / {c.n_train} / {c.n_held}",
    )
    start = "the identity (logit lens)" if f.ridges is None else f"ridge fit, ridges {sorted(set(f.ridges))}"
    claim.record(f"{name}: tuned lens start", start)
    claim.record(
        f"{name}: tuned lens stop",
        f"step {f.stopped_at}: "
        + ("held-out KL stopped improving" if f.converged else "step cap reached, held-out KL still improving"),
    )
    claim.record(
        f"{name}: held-out KL curve, step: mean over layers / layer 0 / layer L−1",
        "; ".join(f"{st}: {kl.mean():.3f} / {kl[0]:.3f} / {kl[-1]:.3f}" for st, kl in zip(f.steps, f.held_kl)),
    )
    claim.record(f"{name}: each layer's best step", ", ".join(map(str, f.best_step)))
    claim.record(
        f"{name}: mean KL logit → tuned lens, layer 0 / L/2 / L−1",
        " / ".join(f"{c.kl_logit[l].mean():.2f}→{c.kl_tuned[l].mean():.2f}" for l in (0, L // 2, L - 1)),
    )
    claim.record(f"{name}: mean KL of the state-independent lens (control)", float(c.kl_const.mean()))
    claim.record(
        f"{name}: layers where the state-independent lens beats the logit lens (mean KL)", f"{c.control_wins}/{L}"
    )
    claim.record(
        f"{name}: layers where the tuned lens beats the state-independent lens (mean KL)", f"{c.tuned_const_wins}/{L}"
    )


@pytest.mark.policy_dtype
@pytest.mark.claim("RS-8")
def test_tuned_lens_beats_logit_lens(claim, texts, sizes, profile, corpus_name):
    """The tuned lens, trained until its KL on held-out training windows stops improving, against
    two lenses on unseen windows: the logit lens (the claim) and a lens that reads nothing from the
    layer — the model's final distribution averaged over the training tokens
    (`rs.mean_distribution_kl`): a probe that loses to it does not decode the layer. Each
    comparison has a null that could pass the same assertions: the constant lens against the logit
    lens (it beats it where the logit lens is poor), the logit lens against the constant lens."""
    claim.corpus(corpus_name)
    names = study.lens_models(list(texts), sizes)
    claim.record("models", ", ".join(names))
    curves, fits, measured = {}, {}, []
    for name in names:
        c = study.lens_comparison(texts[name], sizes["lens"])
        curves[name], fits[name] = c.curves(), c.fit
        _record_lens(claim, name, c)
        claim.power(study.lens_power(c, name=name))
        measured.append(
            f"{name}: {c.tuned_wins}/{c.layers} layers below the logit lens, "
            f"{c.tuned_const_wins}/{c.layers} below the constant lens"
        )
        claim.not_reproduced_if(NOT_REPRODUCED, ("RS-8", profile.name), "; ".join(measured))
        L = c.layers
        ctl = "a lens that reads nothing from the layer (the mean final distribution of the training tokens)"
        _beats_at_every_layer(
            claim,
            (f"{name}: layers where mean tuned KL < mean logit KL", f"{name}: largest per-layer Wilcoxon p"),
            (c.tuned_wins, c.ps),
            (c.control_wins, c.ps_const),
            L,
            f"better at every layer: {L} of {L}",
            ctl,
        )
        # the null of "beats a lens that reads nothing" is the logit lens (the tuned lens untrained):
        # where it already beats the constant lens at every layer (a random init whose last layers
        # carry the final distribution), the comparison cannot tell a trained lens from an
        # untrained one, so it is recorded, not asserted
        if c.logit_const_wins < L:
            _beats_at_every_layer(
                claim,
                (
                    f"{name}: layers where mean tuned KL < the constant lens's",
                    f"{name}: largest per-layer Wilcoxon p, tuned < constant",
                ),
                (c.tuned_const_wins, c.ps_tuned_const),
                (c.logit_const_wins, c.ps_logit_const),
                L,
                f"'decodes the layer': beats a lens that reads nothing at every layer, {L} of {L}",
                "the logit lens (the tuned lens's untrained form)",
            )
        else:
            claim.record(
                f"{name}: layers where mean tuned KL < the constant lens's (not asserted: the logit lens already "
                "beats the constant lens at every layer)",
                c.tuned_const_wins,
            )
    claim.figure(figures.lens_kl_by_layer(curves), "tuned_vs_logit_kl")
    claim.figure(figures.lens_training_curves(fits), "tuned_lens_held_out_kl")
