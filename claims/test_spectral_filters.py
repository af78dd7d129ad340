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
prompt-independent stream are deterministic (power 0 or 1: `stats.power_threshold` with se = 0);
NLL quantities carry the spread of the per-prompt NLL difference.

Where a model behaves differently from LLaMA-2 the test is a strict xfail for that model
(`NOT_REPRODUCED`, decided from earlier measurements at ci), and its records carry what the
model does instead; a model not in the table (a `--model` run) is held to the claim.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from repro.core import data, lens, stats
from repro.harness import catalogue
from repro.harness.runtime import generator
from repro.spectral_filters import figures, power
from repro.spectral_filters import spectral as sp
from repro.spectral_filters.study import RANDOM_DRAWS, SOURCE_SF7, Study, build_study, generations, hmlv_statistics

# the source's prompts for Tables 2, 4 and 5 (003 §6.1, App E)
PROMPTS = (
    "Tuatara are lizard-like reptiles that can be traced back to the time of the dinosaurs. For the first "
    "time in 200 years, researchers have discovered a baby tuatara on mainland New Zealand.",
    "If you're interested in Grizzly Bear viewing in and around the northern Gulf of Alaska, consider a "
    "chartered flight with Trygg Air Alaska based out of King Salmon with service to and from Anchorage.",
)
SOURCE_REMOVED = catalogue.number("SF-7", "removed")  # 003 Fig 13: Ω_{u,14} suppresses 25% of the SVs
# 003 App C: under a filter that removes what a sink-writing component writes, "log-likelihood
# remains poor (around 9)"; with Fig 13's unfiltered 2.47 this is the size of the source's step
SOURCE_POOR_NLL = catalogue.number("SF-3", "poor_nll")
SOURCE_STEP = SOURCE_POOR_NLL - SOURCE_SF7[1]
SOURCE_WE_SV_RATIO = catalogue.number("SF-1", "we_sv_ratio")  # 003 §3: W_e's σ1 "only twice" σ2
SOURCE_CCNET = "{:,} prompts, {:,} tokens".format(*catalogue.number("SF-9", "ccnet405"))  # 003 §4: ccnet-405
SOURCE_HMLV_PAIRS = "{:,} / {:,}".format(*catalogue.number("SF-9", "pairs_13b"))  # 003 §7, LLaMA-2 13B

# (claim, model) → why the claim does not hold on that embedded model (decided from earlier ci
# runs; the run's own numbers are appended as "Measured: …" and its records carry the rest).
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("SF-1", "gemma3-270m"): (
        "W_u has no single dominant singular value (its first is about as far above the second as the source says "
        "W_e's is), its spectrum declines through the whole body instead of a flat tail, and its top singular "
        "direction tracks Brown frequency only weakly."),
    ("SF-2", "smollm2-135m"): (
        "no MLP is equipped to write mostly dark: the early W_2 with the largest U-dark share is barely above chance; "
        "the dark-equipped matrices are readers (W_q of the first layer). Yet an MLP writes a mostly dark vector into "
        "token 0 (SF-4): which hidden units fire, not W_2's overall alignment, makes it dark."),
    ("SF-3", "gemma3-270m"): (
        "the step at k = 20 is there, but removing the same number of random directions hurts more, and by amounts "
        "that scatter widely from one random basis to the next: in Gemma every token carries large U-dark components, "
        "so a random cut hits them too, and a few random bases hit them hard."),
    ("SF-5", "gemma3-270m"): (
        "the swap does remove the step, but the step is not token 0's: filtering token 0 alone costs a small part of "
        "what filtering every token costs, because every Gemma token carries large U-dark components (SF-3); the "
        "swap restores the other tokens' dark parts, so its removing the step does not show what the source infers."),
    ("SF-6", "gemma3-270m"): (
        "filtering token 0 alone does raise NLL, but not through its dark band: removing a random 5% of token 0's "
        "directions costs at least as much."),
    ("SF-7", "smollm2-135m"): (
        "Ω_u,14 after the layer at the source's relative depth raises NLL by far more than the source's rise, although "
        "keeping the dark band still matters (Ω beats Φ_u,1:15 by several nats): this model does not tolerate a 25% "
        "cut of its spectrum."),
    ("SF-7", "gemma3-270m"): (
        "Ω_u,14 after the layer at the source's relative depth raises NLL by several nats; Ω beats Φ_u,1:15 by "
        "several nats, and stays within 0.5 nats of the unfiltered NLL only after late layers."),
    ("SF-8", "smollm2-135m"): (
        "Ψ (80%) does degenerate into repetition, but Ω (80%) degenerates as much: at 80% retention this model's "
        "greedy continuations break under every filter."),
    ("SF-8", "gemma3-270m"): (
        "Ψ (80%) does degenerate into repetition, but Ω (80%) degenerates even more: at 80% retention this model's "
        "greedy continuations break under every filter."),
    ("SF-9", "gemma3-270m"): (
        "on the source's 33-token prompts, HMLV tokens are not darker than the other tokens of their prompt and layer "
        "by the margin asserted, although their keys do resemble token 0's."),
    ("SF-10", "gemma3-270m"): (
        "token 0's W_vW_o projection is below the median token's in all heads but one: a head of the last layer, "
        "where the sink is being erased."),
}


# --------------------------------------------------------------------------- the study


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("spectral")



# a user's model without an attention sink (token 0 no more than this many times the median
# token's norm) is not what 003 §4–7 speak of: SF-3 … SF-10 read "not applicable" there. Massive
# activations are orders of magnitude (003 Fig 9); a random init sits near 1.
SINK_MIN_RATIO = 3.0


def _needs_a_sink(claim, s) -> None:
    claim.applies(s.sink_ratio >= SINK_MIN_RATIO,
                  f"{s.name} has no attention sink: token 0's residual peaks at {s.sink_ratio:.2g}× the median "
                  f"token's norm (< {SINK_MIN_RATIO:g}×); 003 §4–7 are about a sink")

@pytest.fixture(scope="module")
def study(model_name, pretrained, sizes, corpus_name) -> Study:
    m, tok = pretrained(model_name)
    return build_study(model_name, m, tok, sizes, corpus_name)


def _setting(claim, s: Study) -> None:
    n, T = s.ids.shape
    claim.record(f"{s.name}: prompts × tokens (source: {SOURCE_CCNET})", f"{n} × {T}")
    claim.check(f"{s.name}: unfiltered NLL, {s.dtype} sweep vs float32 forward", s.sweep.base, s.base_f32,
                compare="abs", tol=0.05, why=f"{s.dtype} vs float32 forward of the same model (exact in float32; "
                "bf16 where the dtype policy picks it): the NLL steps asserted are ≥ 1 nat, so 0.05 nats of dtype "
                "noise cannot flip them")


def _deterministic_power(claim, what: str) -> None:
    """Power of a test whose quantities have no sampling noise (read off the weights, or off token
    0's stream, which is the same in every prompt): a model with the source's property, as the
    checks' thresholds read it, passes with probability 1."""
    claim.power(1.0, effect=what, method="deterministic quantities: no sampling noise (se = 0), so the effect, "
                "if the model has it as the thresholds read it, is seen with probability 1", decide="any size")


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
    counts = torch.bincount(stream, minlength=W_u.shape[0]).double()[:W_u.shape[0]]
    keep = counts >= sizes["freq_min_count"]
    log_f = np.log(counts[keep].numpy())
    rho, p = stats.spearman((W_u @ F.u.V[:, 0])[keep].numpy(), log_f)
    # negative controls: a random unit direction in place of the top singular vector (the same
    # correlation, nothing to do with frequency), and an unstructured matrix of the same width
    # (i.i.d. Gaussian, 16·d rows: no dominant singular value)
    g = generator(0)
    r = torch.randn(d, generator=g, dtype=torch.float64)
    rho_ctl, _ = stats.spearman((W_u @ (r / r.norm()))[keep].numpy(), log_f)
    S_ctl = torch.linalg.svdvals(torch.randn(16 * d, d, generator=g, dtype=torch.float64))
    del W_u
    claim.record(f"{s.name}: σ1/σ2 of W_e", float(F.e.S[0] / F.e.S[1]), source=SOURCE_WE_SV_RATIO)
    claim.figure(figures.singular_values({"W_u (final-norm gain folded)": S, "W_e": F.e.S.numpy()}, F.edges,
                                         f"003 Fig 3 — {s.name} (d = {d})"), f"{s.name}_fig3")
    _deterministic_power(claim, "one large leading SV, a flat tail that drops in the last band, a top singular "
                                "direction 'highly representative of token frequency' (§3, footnote 1)")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-1", s.name), f"σ1/σ2 {lead:.2f}, σ(0.1d)/σ(0.9d) {body:.2f}, |ρ| {abs(rho):.2f}")
    claim.check(f"{s.name}: σ1/σ2 of W_u", float(lead), 3.0, compare="ge", control=float(S_ctl[0] / S_ctl[1]),
                control_name=f"i.i.d. Gaussian matrix ({16 * d} × {d})",
                why="'a single large SV' (§3), against W_e's 'only twice as large' that the source contrasts it with: "
                    "1.5× that ratio")
    claim.check(f"{s.name}: tail flatness σ(0.1d)/σ(0.9d)", float(body), 2.0, compare="le",
                why="'a tail that declines only at the very end': less than 2× across 80% of the spectrum")
    claim.check(f"{s.name}: last-band drop σ(0.95d)/σ(d) over the per-band body decline", float(end / per_band_body),
                1.0, compare="ge", why="the last 5% falls faster than any 5% of the body")
    claim.check(f"{s.name}: |Spearman ρ| W_u·v1 vs log {data.corpus_title(s.corpus)} frequency "
                f"({int(keep.sum())} tokens)", float(abs(rho)),
                0.3, compare="ge", control=float(abs(rho_ctl)), control_name="a random unit direction in place of v1",
                why="footnote 1 'highly representative of token frequency': at least a moderate rank correlation "
                    "(Cohen's 0.3)")
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
    panels += [(f"W_o head {h}, layer {l2} (Fig 4)", sp.projection_norms(o_by_head[h], F.u.V, "write"))
               for h in range(min(heads, 3))]
    claim.figure(figures.projection_norm_panels(panels, F.edges, f"003 Fig 4/5 — {s.name}"), f"{s.name}_fig4_5")
    claim.figure(figures.dark_share_heatmap(shares, chance, f"U-dark share by matrix and layer — {s.name}"),
                 f"{s.name}_dark_share")
    _deterministic_power(claim, "components equipped to read/write the dark band, an early W_2 writing mostly dark "
                                "(Fig 4, 5)")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-2", s.name), f"max dark share W_{best_y} {best:.2f} ({best / chance:.1f}× chance); "
                                  f"early W_2 max {float(w2.max()):.3f} at layer {l2}")
    ctl = "the same matrices' share in the last 5% of a random orthonormal basis"
    claim.check(f"{s.name}: largest U-dark share of any matrix (W_{best_y}) / chance", best / chance, 3.0, compare="ge",
                control=best_rnd / chance, control_name=ctl, key=f"{s.name}: largest U-dark share of any matrix / chance",
                why="'equipped to read/write the dark subspace': 3× the 5% a random matrix has")
    claim.check(f"{s.name}: U-dark share of the most dark-writing early W_2 (layer {l2} < L/2)", float(w2.max()), 0.5,
                compare="ge", control=float(rnd["2"][l2]), control_name=ctl,
                why="'an early MLP writes mostly dark' (Fig 5): over half its norm")


# --------------------------------------------------------------------------- SF-3


def _random_in_place(rnd: dict, seeds: list, what: str) -> dict:
    """The negative control of SF-3's and SF-6's margin checks: the first seed's random filter in
    the place of `what`, against the worst of the other random filters (per-prompt NLL arrays
    `rnd` by seed); no control with a single seed."""
    others = [k for k in seeds if k != seeds[0]]
    if not others:
        return {}
    return dict(control=float(rnd[seeds[0]].mean() - max(rnd[k].mean() for k in others)),
                control_name=f"the random filter of seed {seeds[0]} in place of {what}, against the worst of the "
                             f"other random filters (seeds {others})")


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-3")
def test_residual_filter_step_at_last_band(claim, study):
    _needs_a_sink(claim, study)
    s = study
    claim.corpus(s.corpus)
    _setting(claim, s)
    ls = s.sink.layer
    rows = s.step_rows  # ci: [ℓ*]
    grids = {"random (a)": s.grid("random", rows), "Ψ (b)": s.grid("psi", rows), "Φ_e (c)": s.grid("phi_e", rows),
             "Φ_u (d)": s.grid("phi_u", rows)}
    claim.figure(figures.nll_heatmaps(grids, rows, s.cols, s.sweep.base,
                                      f"003 Fig 8 — {s.name}, residual filtered after a layer (ℓ* = {ls})"),
                 f"{s.name}_fig8")
    # Fig 7: the sink-writing MLP's output filtered
    curves = {}
    for fam in ("phi_u", "phi_e", "psi", "random"):
        curves[fam] = (s.cols, [s.nll(ls, fam, c, where="mlp") for c in s.cols], None)
    claim.figure(figures.nll_vs_retained(curves, s.sweep.base, f"003 Fig 7 — {s.name}, MLP of layer {ls} filtered"),
                 f"{s.name}_fig7")
    seeds = list(s.sizes["random_seeds"])
    phi19 = s.prompt_nll(ls, "phi_u", 19)
    rnd19 = {k: s.prompt_nll(ls, "random", 19, seed=k) for k in seeds}
    worst = max(seeds, key=lambda k: rnd19[k].mean())
    step_p = phi19 - s.base_prompts
    gap_p = phi19 - rnd19[worst]
    step, gap = float(step_p.mean()), float(gap_p.mean())
    claim.record(f"{s.name}: sink layer ℓ* (source 13B: L3 of 40)", ls)
    claim.record(f"{s.name}: NLL MLP-of-ℓ* filtered Φ_u,1:19 − unfiltered", s.nll(ls, "phi_u", 19, where="mlp") - s.sweep.base)
    claim.record(f"{s.name}: NLL step of each random 95% filter after ℓ* (seeds {seeds})",
                 [round(float(rnd19[k].mean()) - s.sweep.base, 3) for k in seeds])
    # The step alone is not specific: a random cut of the same rank already raises NLL by more than
    # 1 nat on both embedded models (measured at ci). So the step is asserted as the dark band's
    # own: first the source's words (Φ_u,1:19 worse than every random filter of the same rank),
    # then a margin of 1 nat (the step threshold) over the costliest one, whose negative control
    # puts one random filter in Φ_u,1:19's place against the others, through the same assertion.
    rnd_means = [float(rnd19[k].mean()) for k in seeds]
    kw = _random_in_place(rnd19, seeds, "Φ_u,1:19")
    # power: the source's step is 'poor' NLL (≈ 9, App C) against 2.47 unfiltered; what a random
    # 95% cut costs LLaMA-2 is not in the text: we allow it half the step, so Φ_u,1:19 lies half
    # the source's step above the random filters' mean. Noise: the random filters' spread across
    # seeds and the per-prompt spread (simulation, `_gap_power`); times the step check's power.
    gap_power, sd_seed, sd_gap = power.gap_power(SOURCE_STEP / 2, 1.0, gap_p, rnd_means)
    sd_step = float(step_p.std(ddof=1))

    def power_at(n: int) -> float:
        return gap_power(n) * stats.power_threshold(SOURCE_STEP, 1.0, sd_step / math.sqrt(n))

    n = len(step_p)
    claim.record(f"{s.name}: sd across the {len(seeds)} random filters' NLL (seed-to-seed spread)", sd_seed)
    claim.power(power_at(n), effect=f"a step of {SOURCE_STEP:.2f} nats (App C's 'poor' ≈ {SOURCE_POOR_NLL:g} vs "
                f"Fig 13's {SOURCE_SF7[1]}), half of it above the random filters' mean (the text gives no number for "
                "them)", method=f"simulation (20,000 draws): the worst of {len(seeds)} random filters with the seeds' sd "
                f"{sd_seed:.3f}, per-prompt sd {sd_gap:.3f} (gap) and {sd_step:.3f} (step, normal approximation) over "
                f"{n} prompts", decide=power.n80_gap(power_at))
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-3", s.name), f"step {step:.2f} nats, Φ_u,1:19 − worst random {gap:.2f} "
                                                              f"nats, random steps {np.round(np.array(rnd_means) - s.sweep.base, 2).tolist()}")
    gap_name = f"{s.name}: NLL Φ_u,1:19 − worst of {len(seeds)} random 95% filters, after ℓ*"
    claim.check(gap_name + " (sign)", gap, 0.0, compare="ge",
                why="'worse than removing the same number of random directions', against every random basis tried")
    claim.check(gap_name + " (margin)", gap, 1.0, compare="ge",
                why="the step is the dark band's: ≥ 1 nat (the step threshold) beyond a random cut of the same rank",
                **kw)
    claim.check(f"{s.name}: NLL step Φ_u,1:19 → I after ℓ*", step, 1.0, compare="ge",
                why="'NLL stays poor until the last band': ≥ 1 nat, 20× the largest bf16/fp32 difference the "
                    "unfiltered check allows (0.05); the same threshold in float32 (not specific on its own: see "
                    "the margin above)")


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
    # negative controls: token 0's stream before any block (its <bos> embedding: the vector is not
    # written yet), and the attention contributions to token 0 in place of the MLPs'. The other
    # tokens at the same depth are context, not a control: on Gemma every token's residual is
    # mostly U-dark (measured at ci), so darkness alone does not single token 0 out there.
    D = s.F.dark("u")
    others_dark = float(sp.dark_fraction(s.cap.residual[:, peak, 1:], D).median())
    attn0 = torch.stack([x[0, 0] for x in s.cap.modules["attn_out"]]).float().cpu()
    attn_share = float(attn0[:ls + 1].sum(0).norm() / p.norm[ls + 1])
    claim.record(f"{s.name}: token 0 peak norm / median other token's, same layer",
                 float(p.norm[peak] / s.cap.residual[:, peak, 1:].norm(dim=-1).median()))
    claim.record(f"{s.name}: U-dark fraction of the median other token at token 0's peak layer", others_dark)
    claim.figure(figures.sink_composition(p, f"003 Fig 9 — {s.name}: token 0 (<bos>) residual"), f"{s.name}_fig9")
    _deterministic_power(claim, "an early MLP writes a large, almost entirely U-dark vector into token 0, kept "
                                "until the last layers (Fig 9)")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-4", s.name), f"ℓ* {ls}/{s.L}, dark {float(p.dark[peak]):.3f}, MLP share {mlp_share:.2f}")
    claim.check(f"{s.name}: ℓ* (token 0 first reaches half its peak norm after this block) / L", ls / s.L, 0.5,
                compare="le", why="'an early MLP': in the first half of the model")
    claim.check(f"{s.name}: U-dark fraction of token 0's residual at its peak (layer {peak})", float(p.dark[peak]), 0.9,
                compare="ge", control=float(p.dark[0]), control_name="token 0's stream before any block (its <bos> embedding)",
                why="'almost entirely U-dark': ≥ 90% of its norm in the last 5% of the spectrum")
    claim.check(f"{s.name}: ‖Σ MLP contributions up to ℓ*‖ / ‖token 0 residual after ℓ*‖", mlp_share, 0.5,
                compare="ge", control=attn_share, control_name="the attention contributions in place of the MLPs'",
                why="the vector comes from MLPs (not attention): over half of it")
    claim.check(f"{s.name}: last block that still reads it / L", last / s.L, 0.8, compare="ge",
                why="'kept until the last layers': through at least 80% of the depth")


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
    claim.figure(figures.nll_heatmaps({"Φ_u, shavings swapped": grid, "Φ_u, dropped": s.grid("phi_u", rows)}, rows,
                                      s.cols, s.sweep.base, f"003 Fig 11 left — {s.name} (ℓ* = {ls})"),
                 f"{s.name}_fig11_swap")
    drop_p = s.prompt_nll(ls, "phi_u", 19) - s.base_prompts
    swap_p = s.prompt_nll(ls, "phi_u", 19, swap=True) - s.base_prompts
    first_p = s.prompt_nll(ls, "phi_u", 19, tokens="first") - s.base_prompts  # SF-6's filter, memoised
    shift_p = s.prompt_nll(ls, "phi_u", 19, swap=True, swap_shift=1) - s.base_prompts  # the control: one NLL
    step_drop, step_swap = float(drop_p.mean()), float(swap_p.mean())
    ratio, ratio0 = step_swap / step_drop, float(first_p.mean()) / step_drop
    # power: the source's swap leaves no step (ratio 0, Fig 11 left), filtering token 0 alone shows
    # the whole step (ratio 1, Fig 11 middle 'clearly visible'), the dropped step is SOURCE_STEP;
    # the ratios' noise by the delta method from the per-prompt spread of (numerator − ratio·drop)
    sd_ratio = float((swap_p - ratio * drop_p).std(ddof=1)) / abs(step_drop)
    sd_ratio0 = float((first_p - ratio0 * drop_p).std(ddof=1)) / abs(step_drop)
    sd_drop = float(drop_p.std(ddof=1))

    def power_at(n: int) -> float:
        r = math.sqrt(n)
        return (stats.power_threshold(0.0, 0.25, sd_ratio / r, "le") * stats.power_threshold(1.0, 0.25, sd_ratio0 / r)
                * stats.power_threshold(SOURCE_STEP, 1.0, sd_drop / r))

    n = len(drop_p)
    claim.power(power_at(n), effect=f"no step left after the swap (Fig 11 left), the whole step when token 0 alone is "
                f"filtered (Fig 11 middle), a dropped-band step of {SOURCE_STEP:.2f} nats (App C's 'poor' vs "
                f"{SOURCE_SF7[1]})", method=f"normal approximation (delta method for the ratios), per-prompt sd "
                f"{sd_ratio:.3f} (swap ratio), {sd_ratio0:.3f} (token-0 ratio), {sd_drop:.3f} nats (step) over {n} "
                "prompts, product of the checks' powers", decide=power.n80(power_at))
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-5", s.name), f"drop step {step_drop:.2f}, swap step {step_swap:.2f}, "
                                                              f"token-0-only step {float(first_p.mean()):.2f} nats")
    claim.check(f"{s.name}: NLL step Φ_u,1:19 → I after ℓ* = {ls}, dropped (the step to remove, SF-3)", step_drop, 1.0,
                compare="ge", why="a step to remove: ≥ 1 nat, as SF-3 asserts it")
    claim.check(f"{s.name}: NLL step with Φ_u,1:19 on token 0 only / dropped on all tokens", ratio0, 0.25, compare="ge",
                why="the step is token 0's (Fig 11 middle): filtering token 0 alone keeps more than the quarter the "
                    "swap may leave")
    claim.check(f"{s.name}: NLL step at k = 20 after ℓ* = {ls}, swapped / dropped", ratio, 0.25, compare="le",
                control=float(shift_p.mean()) / step_drop,
                control_name="the swap with shavings from one position earlier (token 0 loses its own)",
                why="'removes the step': at most a quarter of the step left (the swap itself perturbs every token "
                    "but token 0)")


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
    claim.figure(figures.nll_heatmaps({"Φ_u on token 0 only": grid}, rows, s.cols, s.sweep.base,
                                      f"003 Fig 11 middle — {s.name} (ℓ* = {ls})"), f"{s.name}_fig11_token0")
    first_p = s.prompt_nll(ls, "phi_u", 19, tokens="first") - s.base_prompts
    swap_p = s.prompt_nll(ls, "phi_u", 19, swap=True) - s.base_prompts
    seeds = list(s.sizes["random_seeds"])  # one NLL each (ci: 3)
    rnd = {k: s.prompt_nll(ls, "random", 19, seed=k, tokens="first") - s.base_prompts for k in seeds}
    worst = max(seeds, key=lambda k: rnd[k].mean())
    rnd_means = [float(rnd[k].mean()) for k in seeds]
    gap_p = first_p - rnd[worst]
    step0, step_swap, gap = float(first_p.mean()), float(swap_p.mean()), float(gap_p.mean())
    claim.record(f"{s.name}: NLL step of each random 95% filter on token 0 only (seeds {seeds})",
                 np.round(rnd_means, 3).tolist())
    # power: the source's token-0-only step is the step of Fig 8 ('clearly visible', Fig 11 middle):
    # SOURCE_STEP, half of it above the random filters' mean (as in SF-3), none after the swap
    gap_power, sd_seed, sd_gap = power.gap_power(SOURCE_STEP / 2, 1.0, gap_p, rnd_means)
    sd0, sd_diff = float(first_p.std(ddof=1)), float((first_p - swap_p).std(ddof=1))

    def power_at(n: int) -> float:
        return (gap_power(n) * stats.power_threshold(SOURCE_STEP, 1.0, sd0 / math.sqrt(n))
                * stats.power_threshold(SOURCE_STEP, 0.0, sd_diff / math.sqrt(n)))

    n = len(first_p)
    claim.power(power_at(n), effect=f"a token-0-only step of {SOURCE_STEP:.2f} nats (App C's 'poor' vs "
                f"{SOURCE_SF7[1]}), half of it above random filters of the same rank on token 0, none after the swap",
                method=f"simulation for the gap to the worst of {len(seeds)} random filters (seeds' sd {sd_seed:.3f}, "
                       f"per-prompt sd {sd_gap:.3f}), normal approximation for the others (per-prompt sd {sd0:.3f}, "
                       f"{sd_diff:.3f}) over {n} prompts, product of the checks' powers", decide=power.n80_gap(power_at))
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-6", s.name), f"token-0-only step {step0:.2f}, random filters on token 0 "
                                                              f"{np.round(rnd_means, 2).tolist()}, swap step {step_swap:.2f}")
    gap_name = f"{s.name}: token-0-only NLL Φ_u,1:19 − worst of {len(seeds)} random 95% filters on token 0"
    claim.check(gap_name + " (sign)", gap, 0.0, compare="ge",
                why="the step is the dark band's: removing it from token 0 costs more than removing any random 5% of "
                    "token 0's directions tried")
    kw = _random_in_place(rnd, seeds, "Φ_u,1:19 on token 0")
    claim.check(gap_name + " (margin)", gap, 1.0, compare="ge",
                why="'the step is clearly visible' as the dark band's: ≥ 1 nat (the step threshold) beyond a random "
                    "cut of token 0 of the same rank", **kw)
    claim.check(f"{s.name}: NLL step at k = 20, token 0 only, after ℓ* = {ls}", step0, 1.0, compare="ge",
                why="'the step is clearly visible': ≥ 1 nat (20× the dtype noise; not specific on its own: see the "
                    "margin above)")
    claim.check(f"{s.name}: token-0-only step − swap step", step0 - step_swap, 0.0, compare="ge",
                why="filtering token 0 alone hurts at least as much as perturbing every other token")


# --------------------------------------------------------------------------- SF-7


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-7")
def test_sink_preserving_filters_keep_nll_low(claim, study):
    _needs_a_sink(claim, study)
    s = study
    claim.corpus(s.corpus)
    lay = s.sf7_layer
    grid = s.grid("omega")
    claim.figure(figures.nll_heatmaps({"Ω_u (head + dark band)": grid}, s.rows, s.cols, s.sweep.base,
                                      f"003 Fig 11 right — {s.name}"), f"{s.name}_fig11_omega")
    seeds = s.sizes["random_seeds"]
    rnd = np.array([[s.nll(lay, "random", c, seed=k) for c in s.cols] for k in seeds])
    curves = {"Ω_u": (s.cols, [s.nll(lay, "omega", c) for c in s.cols], None),
              "Φ_u": (s.cols, [s.nll(lay, "phi_u", c) for c in s.cols], None),
              "Ψ": (s.cols, [s.nll(lay, "psi", c) for c in s.cols], None),
              f"random (±1 sd, {len(seeds)} bases)": (s.cols, rnd.mean(0), rnd.std(0, ddof=1))}
    src = (15, SOURCE_SF7[2], f"source: Ω_u,14 at L12/40 ({SOURCE_SF7[1]} → {SOURCE_SF7[2]})")
    claim.figure(figures.nll_vs_retained(curves, s.sweep.base, f"003 Fig 13 — {s.name}, after layer {lay}",
                                         source=src), f"{s.name}_fig13")
    om_p = s.prompt_nll(lay, "omega", 15) - s.base_prompts
    phi_p = s.prompt_nll(lay, "phi_u", 15) - s.base_prompts
    rise, phi_rise = float(om_p.mean()), float(phi_p.mean())
    removed = 1 - s.F.retained("omega", 14) / s.F.d
    claim.record(f"{s.name}: share of the spectrum Ω_u,14 removes (source {SOURCE_REMOVED:.0%})", removed)
    claim.record(f"{s.name}: NLL Φ_u,1:15 − Ω_u,14 (same retained dims less the dark band)", phi_rise - rise)
    ok_rows = [r for r, row in zip(s.rows, grid) if row[s.cols.index(15)] - s.sweep.base <= 0.5]
    claim.record(f"{s.name}: layers where Ω_u,14 stays within 0.5 nats", str(ok_rows))
    effect = SOURCE_SF7[2] - SOURCE_SF7[1]
    sd = float(om_p.std(ddof=1))

    def power_at(n: int) -> float:
        return stats.power_threshold(effect, 0.5, sd / math.sqrt(n), "le")

    n = len(om_p)
    claim.power(power_at(n), effect=f"NLL rises by {effect:.2f} nats under Ω_u,14 (Fig 13: {SOURCE_SF7[1]} → "
                f"{SOURCE_SF7[2]})", method=f"normal approximation, per-prompt sd {sd:.3f} nats of the rise over {n} "
                "prompts", decide=power.n80(power_at))
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-7", s.name), f"Ω_u,14 after layer {lay}: +{rise:.2f} nats over "
                                  f"{s.sweep.base:.2f} unfiltered (Φ_u,1:15 +{phi_rise:.2f}); within 0.5 nats after "
                                  f"layers {ok_rows}")
    claim.check(f"{s.name}: share of the spectrum Ω_u,14 removes", removed, SOURCE_REMOVED, compare="abs", tol=0.01,
                why=f"the source's {SOURCE_REMOVED:.0%}, up to band rounding (d/20 not whole)")
    claim.check(f"{s.name}: NLL increase, Ω_u,14 after layer {lay}", rise, 0.5, compare="le",
                source=round(effect, 2), control=phi_rise,
                control_name="Φ_u,1:15 (the same head without the dark band)",
                why="'keeps NLL low': within 0.5 nats, about twice the source's rise (its ±3σ bars are ~0.1)")


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
    claim.table(f"003 Tables 2/4/5 — {s.name}, greedy continuations, filter after a layer",
                ["prompt", "layer", "filter", "rep-3", "continuation"], rows)
    claim.figure(figures.repetition_bars(reps, f"{s.name}: rep-3, filters after layers {layers}"), f"{s.name}_rep3")
    mean = {k: float(np.mean(v)) for k, v in reps.items()}
    for k, v in mean.items():
        claim.record(f"{s.name}: mean rep-3, {k}", v)
    # power, by simulation: each (prompt, layer) continuation under Ψ and Ω drawn from the source's
    # own Table 4 continuations at about the same relative depth (rep-3 in this model's tokens,
    # cut to our length), against this run's unfiltered rep-3; 20,000 draws
    src = power.source_rep(s.tok, [lay / s.L for lay in layers], g["new_tokens"])
    for fam, vals in src.items():
        claim.record(f"{s.name}: source's Table 4 rep-3, {fam}, rows near layers {layers} ({g['new_tokens']} tokens)",
                     [round(float(np.mean(v)), 3) for v in vals])
    n_draw, per_layer = 20_000, len(PROMPTS)
    # sizes for 80%: the same simulation with more continuations (prompts) per layer, at this length
    n80 = stats.n_for_power(lambda n: power.table4_power(src, mean["none"], n, n_draw), n_max=256)
    claim.power(power.table4_power(src, mean["none"], per_layer, n_draw), effect="the source's Table 4 continuations (LLaMA-2 13B, 80% retained) at the rows "
                f"within 0.1 relative depth of layers {layers}",
                method=f"simulation, {n_draw:,} draws of {per_layer} continuations per layer, rep-3 in this model's "
                       f"tokens over {g['new_tokens']} new tokens, against this run's unfiltered rep-3",
                decide=(f"{n80} prompts per layer at {g['new_tokens']} new tokens" if n80 else
                        f"not with ≤ 256 prompts at {g['new_tokens']} new tokens (the source's own rows, cut to this "
                        "length, do not clear both margins against this model's unfiltered rep-3 on average)")
                       + "; the paper profile continues 64 tokens, Table 4's length")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-8", s.name), str({k: round(v, 2) for k, v in mean.items()}))
    claim.check(f"{s.name}: rep-3 Ψ − unfiltered", mean["Ψ (80%)"] - mean["none"], 0.1, compare="ge",
                why="'degenerates into repetition': a tenth more of its 3-grams repeated")
    claim.check(f"{s.name}: rep-3 Ω − unfiltered", mean["Ω_u (80%)"] - mean["none"], 0.1, compare="le",
                control=mean["Ψ (80%)"] - mean["none"], control_name="Ψ (80%), the filter that degenerates",
                why="'Ω stays coherent': no more than a tenth more repetition than the model itself")


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
    across prompts (the statistics: `power.hmlv_test`)."""
    _needs_a_sink(claim, study)
    s, st = study, hmlv_stats
    (label, table_key), lay = HMLV_METRICS[key], st["layers"]
    if key == "udr" and len(lay["layer"]):
        claim.figure(figures.hmlv_metrics(lay["layer"], lay["udr_h"], lay["udr_all"], lay["kdp_h"], lay["kdp_all"],
                                          f"003 Fig 15 — {s.name} ({st['shape'][1]}-token prompts)"), f"{s.name}_fig15")
    h = power.hmlv_test(st, key)
    claim.corpus(s.corpus)
    claim.record(f"{s.name}: prompts × tokens for §7 (source: {SOURCE_CCNET} ≈ {sp.HMLV_PROMPT_LEN} each)",
                 "{} × {}".format(*h.shape))
    claim.record(f"{s.name}: HMLV token-layer pairs / all, {len(lay['layer'])} layers with the sink in place "
                 f"(source 13B: {SOURCE_HMLV_PAIRS})", "{} / {}".format(*h.pairs))
    if h.layer_wins:
        claim.record(f"{s.name}: layers where the HMLV mean {label} > all tokens' (context: layers are not independent)",
                     "{}/{}".format(*h.layer_wins))
    if h.n < power.SF9_MIN_PROMPTS:  # the check fails, and ends the test
        claim.not_reproduced(f"{s.name}: too few prompts with an HMLV token to test across prompts.")
        claim.check(f"{s.name}: prompts with an HMLV token", h.n, power.SF9_MIN_PROMPTS, compare="ge",
                    why=f"a test across prompts needs ≥ {power.SF9_MIN_PROMPTS}")
    claim.power(h.power_at(h.n), effect=f"HMLV tokens {power.SF9_EFFECT} population sd above the other tokens of their "
                "prompt and layer (the text gives no number: our reading of 'much larger' / 'grows considerably')",
                method=f"normal approximation and noncentral t, per-prompt sd {h.sd:.3f} over {h.n} prompts with an HMLV "
                       "token, product of the two checks' powers", decide=h.decide())
    claim.not_reproduced_if(NOT_REPRODUCED, (table_key, s.name), f"HMLV − other tokens {float(h.contrast.mean()):.3f} sd "
                                                                  f"over {h.n} prompts, p = {h.p:.3g}")
    claim.check(f"{s.name}: HMLV {label} − the other tokens' of their prompt and layer, mean over {h.n} prompts (in "
                "population sds)", float(h.contrast.mean()), power.SF9_MIN, compare="ge", control=float(h.control.mean()),
                control_name=f"random tokens of the same count per prompt and layer (mean of {RANDOM_DRAWS} draws)",
                why="'higher than the population': at least a small effect (Cohen's 0.2 sd)")
    claim.check(f"{s.name}: one-sided t-test over prompts p, HMLV {label} > the other tokens'", h.p, 0.05,
                compare="le", why=f"prompts are the independent unit ({h.n} with an HMLV token); conventional α")


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
    claim.figure(figures.head_ratio_heatmap(r, layers, f"003 App D — {s.name}: ‖h_0 W_v W_o‖ / median token's"),
                 f"{s.name}_fig21")
    claim.record(f"{s.name}: heads × layers (sink in place: layers {layers[0]}–{layers[-1]})", int(r.size))
    claim.record(f"{s.name}: largest ratio", float(r.max()))
    _deterministic_power(claim, "token 0's W_vW_o projection much smaller than other tokens' in every head (App D); "
                                f"the median over {s.ids.shape[0] * (s.ids.shape[1] - 1)} other tokens per head is "
                                "the only sampled quantity")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-10", s.name), f"{int((r >= 1).sum())} of {r.size} heads ≥ 1, largest {r.max():.2f}")
    ctl = f"token {mid} (mid-prompt) in place of token 0"
    claim.check(f"{s.name}: share of heads where token 0's W_vW_o norm is below the median token's", float((r < 1).mean()),
                1.0, compare="ge", control=float((r_mid < 1).mean()), control_name=ctl, why="'for all H'")
    claim.check(f"{s.name}: median ratio token 0 / median token", float(np.median(r)), 0.5, compare="le",
                control=float(np.median(r_mid)), control_name=ctl, why="'much smaller': at most half, typically")
