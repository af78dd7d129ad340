"""003 Spectral filters, dark signals and attention sinks: SF-1 … SF-10.

The source studied LLaMA-2 7B/13B/70B; these tests run the same experiments on each model of
the run (both embedded models by default, `--model` for any Llama/Gemma-style hub model —
`--model meta-llama/Llama-2-7b-hf --profile paper` on a GPU is the source's own setting).

One `Study` per model (repro.spectral_filters.study) holds the spectral filters, prompts cut
from the run's corpus (`--corpus`, Brown by default) that all start with the model's <bos>, one
float32 forward pass with every residual state, sub-layer contribution and attention map, token
0's sink profile, and an NLL `Sweep` whose per-prompt results are memoised, so the heat maps that
several claims read are computed once, and the spread over prompts is every NLL claim's noise.

Layers named in the source are mapped by what they do, not by index: the source's sink layer
(13B: L3) is ℓ*, the block after which token 0's residual first reaches half its maximum norm;
the source's L12 of 40 (SF-7, Fig 13) is the block at the same relative depth.

Verdicts (issue 19): every assertion is a `claim.check` (the row shown is the row asserted);
claims that pass run a negative control through one of their checks (random filters of the
same rank, a random basis, a non-sink token, random tokens in place of the HMLV ones, …); every
test records its power at the source's effect, so a strict xfail reads *contradicted* (power ≥
0.8) or *inconclusive at this scale*. Quantities read off the weights or off token 0's
prompt-independent stream are deterministic (`power.deterministic`: `stats.deterministic_power` at
each check's declared effect, the source's number or a named effect of interest); NLL quantities
carry the spread of the per-prompt NLL difference (`power.sf3_power` …). Every power record
states its effect, basis, test, sample, method and the sizes for 80%.

Where a model behaves differently from LLaMA-2 the test is a strict xfail for that model
(`NOT_REPRODUCED`, decided from earlier measurements at ci), and its records carry what the
model does instead; a model not in the table (a `--model` run) is held to the claim.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from repro.core import data, lens, stats
from repro.ground.runtime import generator
from repro.harness import catalogue
from repro.spectral_filters import figures, power
from repro.spectral_filters import spectral as sp
from repro.spectral_filters.power import SOURCE_POOR_NLL, SOURCE_STEP  # 003 App C's 'poor' NLL − Fig 13's 2.47
from repro.spectral_filters.study import RANDOM_DRAWS, SOURCE_SF7, Study, build_study, generations, hmlv_statistics

# the source's prompts for Tables 2, 4 and 5 (003 §6.1, App E)
PROMPTS = (
    "Tuatara are lizard-like reptiles that can be traced back to the time of the dinosaurs. For the first "
    "time in 200 years, researchers have discovered a baby tuatara on mainland New Zealand.",
    "If you're interested in Grizzly Bear viewing in and around the northern Gulf of Alaska, consider a "
    "chartered flight with Trygg Air Alaska based out of King Salmon with service to and from Anchorage.",
)
SOURCE_REMOVED = catalogue.number("SF-7", "removed")  # 003 Fig 13: Ω_{u,14} suppresses 25% of the SVs
SOURCE_WE_SV_RATIO = catalogue.number("SF-1", "we_sv_ratio")  # 003 §3: W_e's σ1 "only twice" σ2
SOURCE_CCNET = "{:,} prompts, {:,} tokens".format(*catalogue.number("SF-9", "ccnet405"))  # 003 §4: ccnet-405
SOURCE_HMLV_PAIRS = "{:,} / {:,}".format(*catalogue.number("SF-9", "pairs_13b"))  # 003 §7, LLaMA-2 13B

# (claim, model) → why the claim does not hold on that embedded model (decided from earlier ci
# runs; the run's own numbers are appended as "Measured: …" and its records carry the rest).
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("SF-1", "gemma3-270m"): (
        "W_u has no single dominant singular value (its first is about as far above the second as the source says "
        "W_e's is), its spectrum declines through the whole body instead of a flat tail, and its top singular "
        "direction tracks Brown frequency only weakly."
    ),
    ("SF-2", "smollm2-135m"): (
        "no MLP is equipped to write mostly dark: the early W_2 with the largest U-dark share is barely above chance; "
        "the dark-equipped matrices are readers (W_q of the first layer). Yet an MLP writes a mostly dark vector into "
        "token 0 (SF-4): which hidden units fire, not W_2's overall alignment, makes it dark."
    ),
    ("SF-3", "gemma3-270m"): (
        "the step at k = 20 is there, but removing the same number of random directions hurts more, and by amounts "
        "that scatter widely from one random basis to the next: in Gemma every token carries large U-dark components, "
        "so a random cut hits them too, and a few random bases hit them hard."
    ),
    ("SF-4", "gemma3-270m"): (
        "token 0's vector is not large (a few times the median other token's norm, not an order of magnitude), and "
        "its darkness does not single it out: the other tokens at the same depth are themselves almost entirely "
        "U-dark (the null of the darkness check passes)."
    ),
    ("SF-5", "gemma3-270m"): (
        "the swap does remove the step, but the step is not token 0's: filtering token 0 alone costs a small part of "
        "what filtering every token costs, because every Gemma token carries large U-dark components (SF-3); the "
        "swap restores the other tokens' dark parts, so its removing the step does not show what the source infers."
    ),
    ("SF-6", "gemma3-270m"): (
        "filtering token 0 alone does raise NLL, but not through its dark band: removing a random 5% of token 0's "
        "directions costs at least as much."
    ),
    ("SF-7", "smollm2-135m"): (
        "Ω_u,14 after the layer at the source's relative depth raises NLL by far more than the source's rise, although "
        "keeping the dark band still matters (Ω beats Φ_u,1:15 by several nats): this model does not tolerate a 25% "
        "cut of its spectrum."
    ),
    ("SF-7", "gemma3-270m"): (
        "Ω_u,14 after the layer at the source's relative depth raises NLL by several nats; Ω beats Φ_u,1:15 by "
        "several nats, and stays within 0.5 nats of the unfiltered NLL only after late layers."
    ),
    ("SF-8", "smollm2-135m"): (
        "Ψ (80%) does degenerate into repetition, but Ω (80%) degenerates as much: at 80% retention this model's "
        "greedy continuations break under every filter."
    ),
    ("SF-8", "gemma3-270m"): (
        "Ψ (80%) does degenerate into repetition, but Ω (80%) degenerates even more: at 80% retention this model's "
        "greedy continuations break under every filter."
    ),
    ("SF-9", "smollm2-135m"): (
        "with HMLV the source's 3% most-attended pairs, they are darker than the other tokens of their prompt and "
        "layer by more than the margin, but not significantly so across prompts at α = 0.05 (a wide spread over "
        "prompts), while their keys do resemble token 0's."
    ),
    ("SF-10", "gemma3-270m"): (
        "token 0's W_vW_o projection is below the median token's in all heads but one: a head of the last layer, "
        "where the sink is being erased."
    ),
}


# --------------------------------------------------------------------------- the study


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("spectral")


# a user's model without an attention sink (token 0 no more than this many times the median
# token's norm) is not what 003 §4–7 speak of: SF-3 … SF-10 read "not applicable" there. Massive
# activations are orders of magnitude (003 Fig 9); a random init sits near 1.
SINK_MIN_RATIO = 3.0
# SF-4's 'large': token 0's norm at its peak an order of magnitude above the median other token's
# (§5 gives no ratio; SINK_MIN_RATIO only says a sink is there)
SINK_LARGE = 10.0


def _needs_a_sink(claim, s) -> None:
    claim.applies(
        s.sink_ratio >= SINK_MIN_RATIO,
        f"{s.name} has no attention sink: token 0's residual peaks at {s.sink_ratio:.2g}× the median "
        f"token's norm (< {SINK_MIN_RATIO:g}×); 003 §4–7 are about a sink",
    )


@pytest.fixture(scope="module")
def study(model_name, pretrained, sizes, corpus_name) -> Study:
    m, tok = pretrained(model_name)
    return build_study(model_name, m, tok, sizes, corpus_name)


def _setting(claim, s: Study) -> None:
    n, T = s.ids.shape
    claim.record(f"{s.name}: prompts × tokens (source: {SOURCE_CCNET})", f"{n} × {T}")
    claim.check(
        f"{s.name}: unfiltered NLL, {s.dtype} sweep vs float32 forward",
        s.sweep.base,
        s.base_f32,
        compare="abs",
        tol=0.05,
        why=f"{s.dtype} vs float32 forward of the same model (exact in float32; "
        "bf16 where the dtype policy picks it): the NLL steps asserted are ≥ 1 nat, so 0.05 nats of dtype "
        "noise cannot flip them",
    )


# --------------------------------------------------------------------------- SF-1


@pytest.mark.claim("SF-1")
def test_unembedding_spectrum(claim, study, sizes):
    claim.corpus(study.corpus)
    s, F = study, study.F
    S = F.u.S.numpy()
    d = F.d
    at = lambda f: S[min(d - 1, int(f * d))]  # noqa: E731
    lead = S[0] / S[1]
    body = at(0.1) / at(0.9)  # decline across the body of the spectrum (10% … 90%)
    per_band_body = body ** (1 / 16)  # the same as a factor per 5% band
    end = at(0.95) / S[-1]  # decline over the last band
    # footnote 1: the top singular direction tracks token frequency (the corpus's train split counts)
    W_u = sp.unembedding_matrix(s.model)
    stream = data.token_ids(s.tok, data.corpus_documents(s.corpus, "train"), add_bos=False)
    counts = torch.bincount(stream, minlength=W_u.shape[0]).double()[: W_u.shape[0]]
    keep = counts >= sizes["freq_min_count"]
    log_f = np.log(counts[keep].numpy())
    rho, p = stats.spearman((W_u @ F.u.V[:, 0])[keep].numpy(), log_f)
    # negative controls: a random unit direction in place of the top singular vector (the same
    # correlation, nothing to do with frequency), and the trained W_u without the direction all
    # tokens share (its mean row removed): the source's contrast, W_e with σ1 'only twice' σ2, is
    # not available in a tied model; this null passes if σ1 stands out for another reason
    g = generator(0)
    r = torch.randn(d, generator=g, dtype=torch.float64)
    rho_ctl, _ = stats.spearman((W_u @ (r / r.norm()))[keep].numpy(), log_f)
    S_ctl = torch.linalg.svdvals(W_u - W_u.mean(0))
    del W_u
    claim.record(f"{s.name}: σ1/σ2 of W_e", float(F.e.S[0] / F.e.S[1]), source=SOURCE_WE_SV_RATIO)
    claim.figure(
        figures.singular_values(
            {"W_u (final-norm gain folded)": S, "W_e": F.e.S.numpy()}, F.edges, f"003 Fig 3 — {s.name} (d = {d})"
        ),
        f"{s.name}_fig3",
    )
    n_tok = int(keep.sum())
    Dc = power.Declared
    claim.power(
        **power.deterministic(
            [
                Dc(
                    "σ1/σ2 of W_u",
                    3.0,
                    3.0,
                    "ge",
                    f"interest: 'a single large SV' (§3, Fig 3 gives no ratio) read as 1.5× "
                    f"the {SOURCE_WE_SV_RATIO:g} of W_e that the source contrasts it with",
                ),
                Dc(
                    "σ(0.1d)/σ(0.9d)",
                    2.0,
                    2.0,
                    "le",
                    "interest: 'a tail that declines only at the very end' read as less "
                    "than 2× across 80% of the spectrum",
                ),
                Dc(
                    "last-band drop over the per-band body decline",
                    1.0,
                    1.0,
                    "ge",
                    "interest: the last 5% falls faster than any 5% of the body",
                ),
                Dc(
                    "|Spearman ρ| of W_u·v1 with log frequency",
                    0.5,
                    0.3,
                    "ge",
                    "interest: 'highly representative of token "
                    "frequency' (footnote 1) read as Cohen's "
                    "large correlation, 0.5",
                ),
                Dc(
                    "Spearman p at ρ = 0.5",
                    power.spearman_p(0.5, n_tok),
                    1e-6,
                    "le",
                    f"interest: ρ = 0.5 over {n_tok} tokens",
                ),
            ],
            sample=f"the weights of {s.name} and {n_tok} tokens' {data.corpus_title(s.corpus)} counts",
        )
    )
    claim.not_reproduced_if(
        NOT_REPRODUCED, ("SF-1", s.name), f"σ1/σ2 {lead:.2f}, σ(0.1d)/σ(0.9d) {body:.2f}, |ρ| {abs(rho):.2f}"
    )
    claim.check(
        f"{s.name}: σ1/σ2 of W_u",
        float(lead),
        3.0,
        compare="ge",
        control=float(S_ctl[0] / S_ctl[1]),
        control_name="W_u less its mean row (the trained matrix without the direction all tokens share)",
        why="'a single large SV' (§3), against W_e's 'only twice as large' that the source contrasts it with: "
        "1.5× that ratio",
    )
    claim.check(
        f"{s.name}: tail flatness σ(0.1d)/σ(0.9d)",
        float(body),
        2.0,
        compare="le",
        why="'a tail that declines only at the very end': less than 2× across 80% of the spectrum",
    )
    claim.check(
        f"{s.name}: last-band drop σ(0.95d)/σ(d) over the per-band body decline",
        float(end / per_band_body),
        1.0,
        compare="ge",
        why="the last 5% falls faster than any 5% of the body",
    )
    claim.check(
        f"{s.name}: |Spearman ρ| W_u·v1 vs log {data.corpus_title(s.corpus)} frequency ({int(keep.sum())} tokens)",
        float(abs(rho)),
        0.3,
        compare="ge",
        control=float(abs(rho_ctl)),
        control_name="a random unit direction in place of v1",
        why="footnote 1 'highly representative of token frequency': at least a moderate rank correlation (Cohen's 0.3)",
    )
    claim.check(f"{s.name}: Spearman p", float(p), 1e-6, compare="le", why="far from chance")


# --------------------------------------------------------------------------- SF-2


@pytest.mark.claim("SF-2")
def test_components_read_and_write_dark(claim, study):
    s, F = study, study.F
    shares = sp.dark_shares(s.model, F)
    # negative control: the same shares in the last band of a random orthonormal basis (the same
    # number of directions, unrelated to W_u): chance, up to the spread of a max over matrices
    rnd = sp.dark_shares(s.model, F, F.random_basis(0))
    chance = F.dims(sp.N_BANDS, sp.N_BANDS) / F.d
    best_y, best = max(((y, float(v.max())) for y, v in shares.items()), key=lambda t: t[1])
    best_rnd = max(float(v.max()) for v in rnd.values())
    early = slice(0, max(1, s.L // 2))
    w2 = shares["2"][early]
    l2 = int(w2.argmax())
    for y, v in shares.items():
        claim.record(f"{s.name}: max U-dark share of W_{y} (layer {int(v.argmax())})", float(v.max()))
    mats = sp.component_matrices(s.model, l2)
    amap = lens.arch_map(s.model)
    heads = mats["o"].shape[0] // int(lens.resolve(amap.blocks(s.model)[0], amap.attn).head_dim)
    o_by_head = mats["o"].view(heads, -1, F.d)
    panels = [(f"W_2, layer {l2} (Fig 5)", sp.projection_norms(mats["2"], F.u.V, "write"))]
    panels += [
        (f"W_o head {h}, layer {l2} (Fig 4)", sp.projection_norms(o_by_head[h], F.u.V, "write"))
        for h in range(min(heads, 3))
    ]
    claim.figure(figures.projection_norm_panels(panels, F.edges, f"003 Fig 4/5 — {s.name}"), f"{s.name}_fig4_5")
    claim.figure(
        figures.dark_share_heatmap(shares, chance, f"U-dark share by matrix and layer — {s.name}"),
        f"{s.name}_dark_share",
    )
    D = power.Declared
    claim.power(
        **power.deterministic(
            [
                D(
                    "largest U-dark share / chance",
                    3.0,
                    3.0,
                    "ge",
                    "interest: 'equipped to read/write the dark subspace' (Figs 4, 5 give no number): 3× chance",
                ),
                D(
                    "U-dark share of the most dark-writing early W_2",
                    0.5,
                    0.5,
                    "ge",
                    "interest: 'writes mostly into the dark subspace' (Fig 5): over half its norm",
                ),
            ],
            sample=f"the weights of {s.name} (every matrix of {s.L} layers)",
        )
    )
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SF-2", s.name),
        f"max dark share W_{best_y} {best:.2f} ({best / chance:.1f}× chance); "
        f"early W_2 max {float(w2.max()):.3f} at layer {l2}",
    )
    ctl = "the same matrices' share in the last 5% of a random orthonormal basis"
    claim.check(
        f"{s.name}: largest U-dark share of any matrix (W_{best_y}) / chance",
        best / chance,
        3.0,
        compare="ge",
        control=best_rnd / chance,
        control_name=ctl,
        key=f"{s.name}: largest U-dark share of any matrix / chance",
        why="'equipped to read/write the dark subspace': 3× the 5% a random matrix has",
    )
    claim.check(
        f"{s.name}: U-dark share of the most dark-writing early W_2 (layer {l2} < L/2)",
        float(w2.max()),
        0.5,
        compare="ge",
        control=float(rnd["2"][l2]),
        control_name=ctl,
        why="'an early MLP writes mostly dark' (Fig 5): over half its norm",
    )


# --------------------------------------------------------------------------- SF-3


def _random_in_place(rnd: dict, seeds: list, what: str) -> dict:
    """The negative control of SF-3's and SF-6's margin checks: the first seed's random filter in
    the place of `what`, against the worst of the other random filters (per-prompt NLL arrays
    `rnd` by seed); no control with a single seed."""
    others = [k for k in seeds if k != seeds[0]]
    if not others:
        return {}
    return dict(
        control=float(rnd[seeds[0]].mean() - max(rnd[k].mean() for k in others)),
        control_name=f"the random filter of seed {seeds[0]} in place of {what}, against the worst of the "
        f"other random filters (seeds {others})",
    )


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-3")
def test_residual_filter_step_at_last_band(claim, study):
    _needs_a_sink(claim, study)
    s = study
    claim.corpus(s.corpus)
    _setting(claim, s)
    ls = s.sink.layer
    rows = s.step_rows  # ci: [ℓ*]
    grids = {
        "random (a)": s.grid("random", rows),
        "Ψ (b)": s.grid("psi", rows),
        "Φ_e (c)": s.grid("phi_e", rows),
        "Φ_u (d)": s.grid("phi_u", rows),
    }
    claim.figure(
        figures.nll_heatmaps(
            grids, rows, s.cols, s.sweep.base, f"003 Fig 8 — {s.name}, residual filtered after a layer (ℓ* = {ls})"
        ),
        f"{s.name}_fig8",
    )
    # Fig 7: the sink-writing MLP's output filtered
    curves = {}
    for fam in ("phi_u", "phi_e", "psi", "random"):
        curves[fam] = (s.cols, [s.nll(ls, fam, c, where="mlp") for c in s.cols], None)
    claim.figure(
        figures.nll_vs_retained(curves, s.sweep.base, f"003 Fig 7 — {s.name}, MLP of layer {ls} filtered"),
        f"{s.name}_fig7",
    )
    seeds = list(s.sizes["random_seeds"])
    phi19 = s.prompt_nll(ls, "phi_u", 19)
    rnd19 = {k: s.prompt_nll(ls, "random", 19, seed=k) for k in seeds}
    worst = max(seeds, key=lambda k: rnd19[k].mean())
    step_p = phi19 - s.base_prompts
    gap_p = phi19 - rnd19[worst]
    step, gap = float(step_p.mean()), float(gap_p.mean())
    claim.record(f"{s.name}: sink layer ℓ* (source 13B: L3 of 40)", ls)
    claim.record(
        f"{s.name}: NLL MLP-of-ℓ* filtered Φ_u,1:19 − unfiltered", s.nll(ls, "phi_u", 19, where="mlp") - s.sweep.base
    )
    claim.record(
        f"{s.name}: NLL step of each random 95% filter after ℓ* (seeds {seeds})",
        [round(float(rnd19[k].mean()) - s.sweep.base, 3) for k in seeds],
    )
    # The step alone is not specific: a random cut of the same rank already raises NLL by more than
    # 1 nat on both embedded models (measured at ci). So the step is asserted as the dark band's
    # own: first the source's words (Φ_u,1:19 worse than every random filter of the same rank),
    # then a margin of 1 nat (the step threshold) over the costliest one, whose negative control
    # puts one random filter in Φ_u,1:19's place against the others, through the same assertion.
    rnd_means = [float(rnd19[k].mean()) for k in seeds]
    kw = _random_in_place(rnd19, seeds, "Φ_u,1:19")
    # power: the source's step is 'poor' NLL (≈ 9, App C) against 2.47 unfiltered; what a random
    # 95% cut costs LLaMA-2 is not in the text: we allow it half the step, so Φ_u,1:19 lies half
    # the source's step above the random filters' mean (`power.sf3_power`)
    power_at, sd = power.sf3_power(gap_p, rnd_means, step_p)
    n = len(step_p)
    claim.record(f"{s.name}: sd across the {len(seeds)} random filters' NLL (seed-to-seed spread)", sd["seeds"])
    claim.power(
        power_at(n),
        effect=f"a step of {SOURCE_STEP:.2f} nats, Φ_u,1:19 half of it above the random filters' "
        "mean (the text gives no number for them)",
        effect_value=SOURCE_STEP,
        basis=f"source: App C ('poor', around {SOURCE_POOR_NLL:g}) against Fig 13's {SOURCE_SF7[1]} unfiltered",
        test="Φ_u,1:19 − the worst random filter ≥ 1 nat, and the step ≥ 1 nat (mean over prompts)",
        sample=f"{n} prompts × {s.ids.shape[1]} tokens, {len(seeds)} random bases",
        method=f"simulation (20,000 draws) of the worst of {len(seeds)} random filters and the prompts' noise, "
        f"normal approximation for the step; sds {power.sd_text(sd)}",
        decide=power.n80_gap(power_at),
    )
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SF-3", s.name),
        f"step {step:.2f} nats, Φ_u,1:19 − worst random {gap:.2f} "
        f"nats, random steps {np.round(np.array(rnd_means) - s.sweep.base, 2).tolist()}",
    )
    gap_name = f"{s.name}: NLL Φ_u,1:19 − worst of {len(seeds)} random 95% filters, after ℓ*"
    claim.check(
        gap_name + " (sign)",
        gap,
        0.0,
        compare="ge",
        why="'worse than removing the same number of random directions', against every random basis tried",
    )
    claim.check(
        gap_name + " (margin)",
        gap,
        1.0,
        compare="ge",
        why="the step is the dark band's: ≥ 1 nat (the step threshold) beyond a random cut of the same rank",
        **kw,
    )
    claim.check(
        f"{s.name}: NLL step Φ_u,1:19 → I after ℓ*",
        step,
        1.0,
        compare="ge",
        why="'NLL stays poor until the last band': ≥ 1 nat, 20× the largest bf16/fp32 difference the "
        "unfiltered check allows (0.05); the same threshold in float32 (not specific on its own: see "
        "the margin above)",
    )


# --------------------------------------------------------------------------- SF-4


@pytest.mark.claim("SF-4")
def test_token0_gets_dark_vector_from_early_mlp(claim, study):
    _needs_a_sink(claim, study)
    claim.corpus(study.corpus)
    s, p = study, study.sink
    ls = p.layer
    peak = int(p.norm.argmax())
    last = max(p.in_place)
    mlp_share = float(p.mlp_sum_norm[ls] / p.norm[ls + 1])
    # the null of 'large' and 'almost entirely U-dark': the other tokens at the same depth (the
    # sink vector is token 0's; if the other tokens are as dark, darkness does not single it out,
    # and the claim is not reproduced on that model); of 'from an MLP': the attention contributions
    D = s.F.dark("u")
    others = s.cap.residual[:, peak, 1:]
    norms = others.norm(dim=-1)
    large, large_ctl = float(p.norm[peak] / norms.median()), float(norms.max() / norms.median())
    others_dark = float(sp.dark_fraction(others, D).median())
    attn0 = torch.stack([x[0, 0] for x in s.cap.modules["attn_out"]]).float().cpu()
    attn_share = float(attn0[: ls + 1].sum(0).norm() / p.norm[ls + 1])
    claim.record(
        f"{s.name}: U-dark fraction of token 0's stream before any block (its <bos> embedding)", float(p.dark[0])
    )
    claim.figure(figures.sink_composition(p, f"003 Fig 9 — {s.name}: token 0 (<bos>) residual"), f"{s.name}_fig9")
    Dc = power.Declared
    claim.power(
        **power.deterministic(
            [
                Dc("ℓ*/L", 0.5, 0.5, "le", "interest: 'an early MLP' (§5) read as one in the first half of the model"),
                Dc(
                    "token 0's norm / the median other token's",
                    SINK_LARGE,
                    SINK_LARGE,
                    "ge",
                    f"interest: 'a vector of large norm' (§5; Fig 9 gives no ratio) read as {SINK_LARGE:g}×",
                ),
                Dc(
                    "U-dark fraction",
                    0.9,
                    0.9,
                    "ge",
                    "interest: 'almost completely U-dark' (§5) read as ≥ 90% of its norm",
                ),
                Dc(
                    "MLP share",
                    0.5,
                    0.5,
                    "ge",
                    "interest: 'the MLP … blasts off a vector' (§5) read as over half of it",
                ),
                Dc(
                    "last block that reads it / L",
                    0.9,
                    0.8,
                    "ge",
                    "interest: 'kept around until the last few layers' (§5) read as the last 4 of 40",
                ),
            ],
            sample=f"token 0's stream (the same in every prompt) and {others.shape[0] * others.shape[1]} other tokens at "
            f"layer {peak}",
        )
    )
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SF-4", s.name),
        f"ℓ* {ls}/{s.L}, token 0 {large:.1f}× the median other token's norm at layer {peak}, "
        f"U-dark {float(p.dark[peak]):.3f} (median other token {others_dark:.3f}), MLP share "
        f"{mlp_share:.2f}",
    )
    claim.check(
        f"{s.name}: ℓ* (token 0 first reaches half its peak norm after this block) / L",
        ls / s.L,
        0.5,
        compare="le",
        why="'an early MLP': in the first half of the model",
    )
    claim.check(
        f"{s.name}: token 0's norm at its peak (layer {peak}) / the median other token's there",
        large,
        SINK_LARGE,
        compare="ge",
        control=large_ctl,
        control_name="the largest other token's norm there (any token with a massive activation)",
        key=f"{s.name}: token 0's norm at its peak / the median other token's there",
        why=f"'a vector of large norm' (§5): an order of magnitude above the other tokens' ({SINK_MIN_RATIO:g}× "
        "only says there is a sink; massive activations are orders of magnitude)",
    )
    dark_name = f"{s.name}: U-dark fraction of token 0's residual at its peak (layer {peak})"
    claim.check(
        f"{s.name}: U-dark fraction of the median other token at layer {peak} (the null must not be "
        "'almost entirely U-dark' too)",
        others_dark,
        0.9,
        compare="le",
        key=f"{s.name}: U-dark fraction of the median other token at token 0's peak layer",
        why="the darkness is the sink vector's: if the other tokens at the same depth are ≥ 90% U-dark too, "
        "the next check's null passes and darkness does not single token 0 out",
    )
    claim.check(
        dark_name,
        float(p.dark[peak]),
        0.9,
        compare="ge",
        control=others_dark,
        control_name="the median other token at the same depth",
        key=f"{s.name}: U-dark fraction of token 0's residual at its peak",
        why="'almost entirely U-dark': ≥ 90% of its norm in the last 5% of the spectrum",
    )
    claim.check(
        f"{s.name}: ‖Σ MLP contributions up to ℓ*‖ / ‖token 0 residual after ℓ*‖",
        mlp_share,
        0.5,
        compare="ge",
        control=attn_share,
        control_name="the attention contributions in place of the MLPs'",
        why="the vector comes from MLPs (not attention): over half of it",
    )
    claim.check(
        f"{s.name}: last block that still reads it / L",
        last / s.L,
        0.8,
        compare="ge",
        why="'kept until the last layers': through at least 80% of the depth",
    )


# --------------------------------------------------------------------------- SF-5, SF-6


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-5")
def test_shavings_swap_removes_step(claim, study):
    """The source reads the swap with Fig 11 middle: the swap leaves only token 0 intact and
    removes the step, and filtering token 0 alone shows it, so the step is token 0's. Checked in
    that order: a step to remove (SF-3), a step that is token 0's (filtering token 0 alone keeps
    more than the quarter the swap may leave), then its removal by the swap. The negative control
    of the last: the swap with the shavings taken one position earlier, so that token 0 too gets
    another token's shavings and loses its own sink part — the step must stay."""
    _needs_a_sink(claim, study)
    claim.corpus(study.corpus)
    s = study
    ls = s.sink.layer
    rows = s.step_rows  # ci: [ℓ*]
    grid = s.grid("phi_u", rows, swap=True)
    claim.figure(
        figures.nll_heatmaps(
            {"Φ_u, shavings swapped": grid, "Φ_u, dropped": s.grid("phi_u", rows)},
            rows,
            s.cols,
            s.sweep.base,
            f"003 Fig 11 left — {s.name} (ℓ* = {ls})",
        ),
        f"{s.name}_fig11_swap",
    )
    drop_p = s.prompt_nll(ls, "phi_u", 19) - s.base_prompts
    swap_p = s.prompt_nll(ls, "phi_u", 19, swap=True) - s.base_prompts
    first_p = s.prompt_nll(ls, "phi_u", 19, tokens="first") - s.base_prompts  # SF-6's filter, memoised
    shift_p = s.prompt_nll(ls, "phi_u", 19, swap=True, swap_shift=1) - s.base_prompts  # the control: one NLL
    step_drop, step_swap = float(drop_p.mean()), float(swap_p.mean())
    ratio, ratio0 = step_swap / step_drop, float(first_p.mean()) / step_drop
    # power: the source's swap leaves no step (Fig 11 left), token 0 alone shows the whole step
    power_at, sd = power.sf5_power(drop_p, swap_p, first_p)
    n = len(drop_p)
    claim.power(
        power_at(n),
        effect=f"no step left after the swap (ratio 0), the whole step when token 0 alone is "
        f"filtered (ratio 1), a dropped-band step of {SOURCE_STEP:.2f} nats",
        effect_value=SOURCE_STEP,
        basis=f"source: Fig 11 left (no step), Fig 11 middle ('clearly visible'), App C ('poor', around "
        f"{SOURCE_POOR_NLL:g}) against Fig 13's {SOURCE_SF7[1]}",
        test="swap/drop ratio ≤ 0.25, token-0/drop ratio ≥ 0.25, dropped step ≥ 1 nat (means over prompts)",
        sample=f"{n} prompts × {s.ids.shape[1]} tokens",
        method=f"closed form: normal approximation (delta method for the ratios), per-prompt sds "
        f"{power.sd_text(sd)}, product of the checks' powers",
        decide=power.n80(power_at),
    )
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SF-5", s.name),
        f"drop step {step_drop:.2f}, swap step {step_swap:.2f}, token-0-only step {float(first_p.mean()):.2f} nats",
    )
    claim.check(
        f"{s.name}: NLL step Φ_u,1:19 → I after ℓ* = {ls}, dropped (the step to remove, SF-3)",
        step_drop,
        1.0,
        compare="ge",
        why="a step to remove: ≥ 1 nat, as SF-3 asserts it",
    )
    claim.check(
        f"{s.name}: NLL step with Φ_u,1:19 on token 0 only / dropped on all tokens",
        ratio0,
        0.25,
        compare="ge",
        why="the step is token 0's (Fig 11 middle): filtering token 0 alone keeps more than the quarter the "
        "swap may leave",
    )
    claim.check(
        f"{s.name}: NLL step at k = 20 after ℓ* = {ls}, swapped / dropped",
        ratio,
        0.25,
        compare="le",
        control=float(shift_p.mean()) / step_drop,
        control_name="the swap with shavings from one position earlier (token 0 loses its own)",
        why="'removes the step': at most a quarter of the step left (the swap itself perturbs every token but token 0)",
    )


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-6")
def test_token0_only_filter_shows_step(claim, study):
    """Filtering token 0 alone shows the step. As in SF-3, a random cut of the same rank on token 0
    is the reference (it costs NLL too): the step beyond the costliest random filter on token 0
    (the dark band's, not any 5%'s), first its sign, then a margin of 1 nat whose negative
    control puts one random filter in Φ_u's place against the others; then the step itself, then
    that it exceeds what the swap leaves. (At the paper's prompts on an H100 a random 5% cut of
    token 0 alone cost smollm2 0.56–1.34 nats, so a random filter is no control for the bare
    "≥ 1 nat" step: results/h100-2026-11-25.)"""
    _needs_a_sink(claim, study)
    claim.corpus(study.corpus)
    s = study
    ls = s.sink.layer
    rows = s.step_rows  # ci: [ℓ*]
    grid = s.grid("phi_u", rows, tokens="first")
    claim.figure(
        figures.nll_heatmaps(
            {"Φ_u on token 0 only": grid}, rows, s.cols, s.sweep.base, f"003 Fig 11 middle — {s.name} (ℓ* = {ls})"
        ),
        f"{s.name}_fig11_token0",
    )
    first_p = s.prompt_nll(ls, "phi_u", 19, tokens="first") - s.base_prompts
    swap_p = s.prompt_nll(ls, "phi_u", 19, swap=True) - s.base_prompts
    seeds = list(s.sizes["random_seeds"])  # one NLL each (ci: 3)
    rnd = {k: s.prompt_nll(ls, "random", 19, seed=k, tokens="first") - s.base_prompts for k in seeds}
    worst = max(seeds, key=lambda k: rnd[k].mean())
    rnd_means = [float(rnd[k].mean()) for k in seeds]
    gap_p = first_p - rnd[worst]
    step0, step_swap, gap = float(first_p.mean()), float(swap_p.mean()), float(gap_p.mean())
    claim.record(
        f"{s.name}: NLL step of each random 95% filter on token 0 only (seeds {seeds})", np.round(rnd_means, 3).tolist()
    )
    # power: the source's token-0-only step is the step of Fig 8 ('clearly visible', Fig 11 middle):
    # SOURCE_STEP, half of it above the random filters' mean (as in SF-3), none after the swap
    power_at, sd = power.sf6_power(first_p, swap_p, gap_p, rnd_means)
    n = len(first_p)
    claim.power(
        power_at(n),
        effect=f"a token-0-only step of {SOURCE_STEP:.2f} nats, half of it above random filters "
        "of the same rank on token 0 (the text gives no number for them), none after the swap",
        effect_value=SOURCE_STEP,
        basis=f"source: Fig 11 middle ('clearly visible'), App C ('poor', around "
        f"{SOURCE_POOR_NLL:g}) against Fig 13's {SOURCE_SF7[1]}",
        test="gap to the worst random filter ≥ 0 and ≥ 1 nat, step ≥ 1 nat, step − swap step ≥ 0 (means over prompts)",
        sample=f"{n} prompts × {s.ids.shape[1]} tokens, {len(seeds)} random bases",
        method=f"simulation (20,000 draws) for the gap to the worst of {len(seeds)} random filters, normal "
        f"approximation for the others; sds {power.sd_text(sd)}; product of the checks' powers",
        decide=power.n80_gap(power_at),
    )
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SF-6", s.name),
        f"token-0-only step {step0:.2f}, random filters on token 0 "
        f"{np.round(rnd_means, 2).tolist()}, swap step {step_swap:.2f}",
    )
    gap_name = f"{s.name}: token-0-only NLL Φ_u,1:19 − worst of {len(seeds)} random 95% filters on token 0"
    claim.check(
        gap_name + " (sign)",
        gap,
        0.0,
        compare="ge",
        why="the step is the dark band's: removing it from token 0 costs more than removing any random 5% of "
        "token 0's directions tried",
    )
    kw = _random_in_place(rnd, seeds, "Φ_u,1:19 on token 0")
    claim.check(
        gap_name + " (margin)",
        gap,
        1.0,
        compare="ge",
        why="'the step is clearly visible' as the dark band's: ≥ 1 nat (the step threshold) beyond a random "
        "cut of token 0 of the same rank",
        **kw,
    )
    claim.check(
        f"{s.name}: NLL step at k = 20, token 0 only, after ℓ* = {ls}",
        step0,
        1.0,
        compare="ge",
        why="'the step is clearly visible': ≥ 1 nat (20× the dtype noise; not specific on its own: see the "
        "margin above)",
    )
    claim.check(
        f"{s.name}: token-0-only step − swap step",
        step0 - step_swap,
        0.0,
        compare="ge",
        why="filtering token 0 alone hurts at least as much as perturbing every other token",
    )


# --------------------------------------------------------------------------- SF-7


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-7")
def test_sink_preserving_filters_keep_nll_low(claim, study):
    _needs_a_sink(claim, study)
    s = study
    claim.corpus(s.corpus)
    lay = s.sf7_layer
    grid = s.grid("omega")
    claim.figure(
        figures.nll_heatmaps(
            {"Ω_u (head + dark band)": grid}, s.rows, s.cols, s.sweep.base, f"003 Fig 11 right — {s.name}"
        ),
        f"{s.name}_fig11_omega",
    )
    seeds = s.sizes["random_seeds"]
    rnd = np.array([[s.nll(lay, "random", c, seed=k) for c in s.cols] for k in seeds])
    curves = {
        "Ω_u": (s.cols, [s.nll(lay, "omega", c) for c in s.cols], None),
        "Φ_u": (s.cols, [s.nll(lay, "phi_u", c) for c in s.cols], None),
        "Ψ": (s.cols, [s.nll(lay, "psi", c) for c in s.cols], None),
        f"random (±1 sd, {len(seeds)} bases)": (s.cols, rnd.mean(0), rnd.std(0, ddof=1)),
    }
    src = (15, SOURCE_SF7[2], f"source: Ω_u,14 at L12/40 ({SOURCE_SF7[1]} → {SOURCE_SF7[2]})")
    claim.figure(
        figures.nll_vs_retained(curves, s.sweep.base, f"003 Fig 13 — {s.name}, after layer {lay}", source=src),
        f"{s.name}_fig13",
    )
    om_p = s.prompt_nll(lay, "omega", 15) - s.base_prompts
    phi_p = s.prompt_nll(lay, "phi_u", 15) - s.base_prompts
    rise, phi_rise = float(om_p.mean()), float(phi_p.mean())
    removed = 1 - s.F.retained("omega", 14) / s.F.d
    claim.record(f"{s.name}: share of the spectrum Ω_u,14 removes (source {SOURCE_REMOVED:.0%})", removed)
    claim.record(f"{s.name}: NLL Φ_u,1:15 − Ω_u,14 (same retained dims less the dark band)", phi_rise - rise)
    ok_rows = [r for r, row in zip(s.rows, grid) if row[s.cols.index(15)] - s.sweep.base <= 0.5]
    claim.record(f"{s.name}: layers where Ω_u,14 stays within 0.5 nats", str(ok_rows))
    effect = SOURCE_SF7[2] - SOURCE_SF7[1]
    power_at, sd = power.sf7_power(om_p)
    n = len(om_p)
    claim.power(
        power_at(n),
        effect=f"NLL rises by {effect:.2f} nats under Ω_u,14",
        effect_value=effect,
        basis=f"source: Fig 13 ({SOURCE_SF7[1]} → {SOURCE_SF7[2]})",
        test="mean NLL rise ≤ 0.5 nats over prompts",
        sample=f"{n} prompts × {s.ids.shape[1]} tokens",
        method=f"closed form: normal approximation, per-prompt sd {sd:.3f} nats of the rise",
        decide=power.n80(power_at),
    )
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SF-7", s.name),
        f"Ω_u,14 after layer {lay}: +{rise:.2f} nats over "
        f"{s.sweep.base:.2f} unfiltered (Φ_u,1:15 +{phi_rise:.2f}); within 0.5 nats after "
        f"layers {ok_rows}",
    )
    claim.check(
        f"{s.name}: share of the spectrum Ω_u,14 removes",
        removed,
        SOURCE_REMOVED,
        compare="abs",
        tol=0.01,
        why=f"the source's {SOURCE_REMOVED:.0%}, up to band rounding (d/20 not whole)",
    )
    claim.check(
        f"{s.name}: NLL increase, Ω_u,14 after layer {lay}",
        rise,
        0.5,
        compare="le",
        source=round(effect, 2),
        control=phi_rise,
        control_name="Φ_u,1:15 (the same head without the dark band)",
        why="'keeps NLL low': within 0.5 nats, about twice the source's rise (its ±3σ bars are ~0.1)",
    )


# --------------------------------------------------------------------------- SF-8


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-8")
def test_generations_under_filters(claim, study):
    _needs_a_sink(claim, study)
    # greedy continuations of the source's own prompts (Tables 2, 4, 5): fixed text, part of the claim
    claim.corpus("003 §6.1's two prompts")
    s = study
    g = s.sizes["gen"]
    layers, reps, rows = generations(s, PROMPTS)
    claim.table(
        f"003 Tables 2/4/5 — {s.name}, greedy continuations, filter after a layer",
        ["prompt", "layer", "filter", "rep-3", "continuation"],
        rows,
    )
    claim.figure(figures.repetition_bars(reps, f"{s.name}: rep-3, filters after layers {layers}"), f"{s.name}_rep3")
    mean = {k: float(np.mean(v)) for k, v in reps.items()}
    for k, v in mean.items():
        claim.record(f"{s.name}: mean rep-3, {k}", v)
    # power, by simulation: each (prompt, layer) continuation under Ψ and Ω drawn from the source's
    # own Table 4 continuations at about the same relative depth (rep-3 in this model's tokens,
    # cut to our length), against this run's unfiltered rep-3; 20,000 draws
    src = power.source_rep(s.tok, [lay / s.L for lay in layers], g["new_tokens"])
    for fam, vals in src.items():
        claim.record(
            f"{s.name}: source's Table 4 rep-3, {fam}, rows near layers {layers} ({g['new_tokens']} tokens)",
            [round(float(np.mean(v)), 3) for v in vals],
        )
    n_draw, per_layer = 20_000, len(PROMPTS)
    # sizes for 80%: the same simulation with more continuations (prompts) per layer, at this length
    n80 = stats.n_for_power(lambda n: power.table4_power(src, mean["none"], n, n_draw), n_max=256)
    claim.power(
        power.table4_power(src, mean["none"], per_layer, n_draw),
        effect="the source's Table 4 continuations "
        f"(LLaMA-2 13B, 80% retained) at the rows within 0.1 relative depth of layers {layers}",
        basis="source: App E Table 4 (LLaMA-2 13B, the Tuatara prompt, Ψ and Ω_u at 80%)",
        test="mean rep-3 Ψ − unfiltered ≥ 0.1 and Ω − unfiltered ≤ 0.1",
        sample=f"{len(PROMPTS)} prompts × {len(layers)} layers, {g['new_tokens']} new tokens each",
        method=f"simulation, {n_draw:,} draws of {per_layer} continuations per layer, rep-3 in this model's "
        f"tokens over {g['new_tokens']} new tokens, against this run's unfiltered rep-3",
        decide=(
            f"{n80} prompts per layer at {g['new_tokens']} new tokens"
            if n80
            else f"not with ≤ 256 prompts at {g['new_tokens']} new tokens (the source's own rows, cut to this "
            "length, do not clear both margins against this model's unfiltered rep-3 on average)"
        )
        + "; the paper profile continues 64 tokens, Table 4's length",
    )
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-8", s.name), str({k: round(v, 2) for k, v in mean.items()}))
    claim.check(
        f"{s.name}: rep-3 Ψ − unfiltered",
        mean["Ψ (80%)"] - mean["none"],
        0.1,
        compare="ge",
        why="'degenerates into repetition': a tenth more of its 3-grams repeated",
    )
    claim.check(
        f"{s.name}: rep-3 Ω − unfiltered",
        mean["Ω_u (80%)"] - mean["none"],
        0.1,
        compare="le",
        control=mean["Ψ (80%)"] - mean["none"],
        control_name="Ψ (80%), the filter that degenerates",
        why="'Ω stays coherent': no more than a tenth more repetition than the model itself",
    )


# --------------------------------------------------------------------------- SF-9


@pytest.fixture(scope="module")
def hmlv_stats(study):
    return hmlv_statistics(study)


# SF-9's two metrics (§7, Fig 15): metric key → (what it measures, the NOT_REPRODUCED key)
HMLV_METRICS = {"udr": ("U-dark ratio", "SF-9"), "kdp": ("key dot product with token 0", "SF-9 kdp")}


@pytest.mark.claim("SF-9")
@pytest.mark.parametrize("key", list(HMLV_METRICS), ids=["darker", "keys_like_token0"])
def test_hmlv_tokens_stand_out(claim, study, hmlv_stats, key):
    """003 §7: HMLV tokens are darker (U-dark ratio) and their keys resemble token 0's, tested
    across prompts (the statistics: `power.hmlv_test`). HMLV as the source meant it, the few
    pairs that form attention bars: τ_σ is the source's, τ_μ marks the source's share of pairs
    (12,236 / 404,748 = 3.0%) on this model (`sp.hmlv_mean_threshold`; the source's 0.018 would
    mark 43–48% of them here)."""
    _needs_a_sink(claim, study)
    s, st = study, hmlv_stats
    (label, table_key), lay = HMLV_METRICS[key], st["layers"]
    if key == "udr" and len(lay["layer"]):
        claim.figure(
            figures.hmlv_metrics(
                lay["layer"],
                lay["udr_h"],
                lay["udr_all"],
                lay["kdp_h"],
                lay["kdp_all"],
                f"003 Fig 15 — {s.name} ({st['shape'][1]}-token prompts)",
            ),
            f"{s.name}_fig15",
        )
    h = power.hmlv_test(st, key)
    claim.corpus(s.corpus)
    claim.record(
        f"{s.name}: prompts × tokens for §7 (source: {SOURCE_CCNET} ≈ {sp.HMLV_PROMPT_LEN} each)",
        "{} × {}".format(*h.shape),
    )
    claim.record(
        f"{s.name}: τ_μ marking the source's share of pairs HMLV (source: {sp.HMLV_MEAN}; τ_σ kept at {sp.HMLV_VAR})",
        st["tau_mean"],
    )
    claim.record(
        f"{s.name}: share of pairs the source's τ_μ = {sp.HMLV_MEAN} would mark HMLV here",
        st["source_thresholds_share"],
    )
    claim.record(
        f"{s.name}: HMLV token-layer pairs / all, {len(s.sink.in_place)} layers with the sink in place "
        f"(source 13B: {SOURCE_HMLV_PAIRS})",
        "{} / {}".format(*h.pairs),
    )
    claim.record(
        f"{s.name}: share of token-layer pairs marked HMLV (τ_μ set to mark the source's share)",
        h.pairs[0] / h.pairs[1],
        source=round(sp.HMLV_SHARE, 4),
    )
    if h.layer_wins:
        claim.record(
            f"{s.name}: layers where the HMLV mean {label} > all tokens' (context: layers are not independent)",
            "{}/{}".format(*h.layer_wins),
        )
    if h.n < power.SF9_MIN_PROMPTS:  # the check fails, and ends the test
        claim.not_reproduced(f"{s.name}: too few prompts with an HMLV token to test across prompts.")
        claim.check(
            f"{s.name}: prompts with an HMLV token",
            h.n,
            power.SF9_MIN_PROMPTS,
            compare="ge",
            why=f"a test across prompts needs ≥ {power.SF9_MIN_PROMPTS}",
        )
    claim.power(**h.power_record())
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        (table_key, s.name),
        f"HMLV − other tokens {float(h.contrast.mean()):.3f} sd over {h.n} prompts, p = {h.p:.3g}",
    )
    claim.check(
        f"{s.name}: HMLV {label} − the other tokens' of their prompt and layer, mean over {h.n} prompts (in "
        "population sds)",
        float(h.contrast.mean()),
        power.SF9_MIN,
        compare="ge",
        control=float(h.control.mean()),
        control_name=f"random tokens of the same count per prompt and layer (mean of {RANDOM_DRAWS} draws)",
        why="'higher than the population': at least a small effect (Cohen's 0.2 sd)",
    )
    claim.check(
        f"{s.name}: one-sided t-test over prompts p, HMLV {label} > the other tokens'",
        h.p,
        0.05,
        compare="le",
        why=f"prompts are the independent unit ({h.n} with an HMLV token); conventional α",
    )


# --------------------------------------------------------------------------- SF-10


@pytest.mark.claim("SF-10")
def test_token0_value_projection_is_small(claim, study):
    _needs_a_sink(claim, study)
    s = study
    claim.corpus(s.corpus)
    blocks = lens.arch_map(s.model).blocks(s.model)
    layers = s.sink.in_place
    mid = s.ids.shape[1] // 2  # negative control: a token in the middle of each prompt in place of token 0
    ratios, ratios_mid = [], []
    with torch.no_grad():
        for layer in layers:
            attn = lens.resolve(blocks[layer], lens.arch_map(s.model).attn)
            vo = sp.value_output_norms(attn, s.cap.modules["attn_in"][layer])  # (B, H, T)
            others = vo[:, :, 1:].transpose(0, 1).reshape(vo.shape[1], -1).median(-1).values
            ratios.append((vo[:, :, 0].mean(0) / others).cpu().numpy())
            ratios_mid.append((vo[:, :, mid].mean(0) / others).cpu().numpy())
    r, r_mid = np.stack(ratios), np.stack(ratios_mid)
    claim.figure(
        figures.head_ratio_heatmap(r, layers, f"003 App D — {s.name}: ‖h_0 W_v W_o‖ / median token's"),
        f"{s.name}_fig21",
    )
    claim.record(f"{s.name}: heads × layers (sink in place: layers {layers[0]}–{layers[-1]})", int(r.size))
    claim.record(f"{s.name}: largest ratio", float(r.max()))
    D = power.Declared
    claim.power(
        **power.deterministic(
            [
                D(
                    "median ratio token 0 / median token",
                    0.5,
                    0.5,
                    "le",
                    "interest: 'much smaller' (Fig 21, different scales) read as at most half",
                ),
                D(
                    "share of heads where token 0's projection is below the median token's",
                    1.0,
                    1.0,
                    "ge",
                    "source: App D, Fig 21 ('for all H')",
                ),
            ],
            sample=f"{r.size} heads × layers; token 0's stream is the same in every prompt, the median over "
            f"{s.ids.shape[0] * (s.ids.shape[1] - 1)} other tokens per head the only sampled quantity",
        )
    )
    claim.not_reproduced_if(
        NOT_REPRODUCED, ("SF-10", s.name), f"{int((r >= 1).sum())} of {r.size} heads ≥ 1, largest {r.max():.2f}"
    )
    ctl = f"token {mid} (mid-prompt) in place of token 0"
    claim.check(
        f"{s.name}: share of heads where token 0's W_vW_o norm is below the median token's",
        float((r < 1).mean()),
        1.0,
        compare="ge",
        control=float((r_mid < 1).mean()),
        control_name=ctl,
        why="'for all H'",
    )
    claim.check(
        f"{s.name}: median ratio token 0 / median token",
        float(np.median(r)),
        0.5,
        compare="le",
        control=float(np.median(r_mid)),
        control_name=ctl,
        why="'much smaller': at most half, typically",
    )
