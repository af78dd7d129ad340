"""003 Spectral filters, dark signals and attention sinks: SF-1 … SF-10.

The source studied LLaMA-2 7B/13B/70B; these tests run the same experiments on each model of
the run (both embedded models by default, `--model` for any Llama/Gemma-style hub model —
`--model meta-llama/Llama-2-7b-hf --profile paper` on a GPU is the source's own setting).

One `Study` per model holds the spectral filters (repro.spectral.filters), Brown prompts that
all start with the model's <bos> (003 §5 needs token 0 alike in every prompt), one float32
forward pass with every residual state, sub-layer contribution and attention map, token 0's
sink profile, and an NLL `Sweep` whose results are memoised, so the heat maps that several
claims read are computed once.

Layers named in the source are mapped by what they do, not by index: the source's sink layer
(13B: L3) is ℓ*, the block after which token 0's residual first reaches half its maximum norm;
the source's L12 of 40 (SF-7, Fig 13) is the block at the same relative depth.

Where a model behaves differently from LLaMA-2 the test is a strict xfail for that model
(`NOT_REPRODUCED`, decided from the measurements recorded in NOTES.md), and its records carry
what the model does instead; a model not in the table (a `--model` run) is held to the claim.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch
from scipy import stats as sps

from repro import data, figures, lens
from repro import spectral as sp
from repro.runtime import ReproError, dtype_name, resolve_dtype

# the source's prompts for Tables 2, 4 and 5 (003 §6.1, App E)
PROMPTS = (
    "Tuatara are lizard-like reptiles that can be traced back to the time of the dinosaurs. For the first "
    "time in 200 years, researchers have discovered a baby tuatara on mainland New Zealand.",
    "If you're interested in Grizzly Bear viewing in and around the northern Gulf of Alaska, consider a "
    "chartered flight with Trygg Air Alaska based out of King Salmon with service to and from Anchorage.",
)
SOURCE_SF7 = (12 / 40, 2.47, 2.74)  # 003 Fig 13: Ω_{u,14} after L12 of 40: NLL 2.47 → 2.74

# (claim, model) → why the claim does not hold on that embedded model (measured at ci; the
# records of each run carry the live numbers).
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("SF-1", "gemma3-270m"): (
        "W_u has no single dominant singular value (σ1/σ2 ≈ 2.3, the ratio the source reports for W_e) and its "
        "spectrum declines through the whole body (σ(0.1d)/σ(0.9d) ≈ 12) instead of a flat tail; its top singular "
        "direction correlates only weakly with Brown frequency (|ρ| ≈ 0.24)."),
    ("SF-2", "smollm2-135m"): (
        "no MLP is equipped to write mostly dark: the largest U-dark share of a first-half W_2 is ≈ 0.07 (chance "
        "0.05); the dark-equipped matrices are readers (W_q at layer 0: 0.36). Yet the MLP of layer 11 writes a "
        "95%-dark vector into token 0 (SF-4): which hidden units fire, not W_2's overall alignment, makes it dark."),
    ("SF-3", "gemma3-270m"): (
        "the step at k = 20 is there (≈ 11 nats), but removing 5% random directions hurts even more: in Gemma every "
        "token carries large U-dark components (mean udr 1.4–3.8 after layer 1, vs ≈ 0.7 in SmolLM2), so a random "
        "cut hits them too."),
    ("SF-7", "smollm2-135m"): (
        "Ω_u,14 after the layer at the source's relative depth raises NLL by ≈ 1.2 nats (source +0.27). Keeping the "
        "dark band still matters (Ω beats Φ_u,1:15 by ≈ 4 nats), but this model does not tolerate a 25% cut."),
    ("SF-7", "gemma3-270m"): (
        "Ω_u,14 after the layer at the source's relative depth raises NLL by ≈ 7.6 nats (source +0.27); Ω beats "
        "Φ_u,1:15 by ≈ 5 nats, and stays within 0.5 nats only after late layers (11, 16 at ci)."),
    ("SF-8", "smollm2-135m"): (
        "Ψ (80%) does degenerate into repetition, but Ω (80%) degenerates as much: at 80% retention this model's "
        "greedy continuations break under every filter."),
    ("SF-8", "gemma3-270m"): (
        "Ψ (80%) does degenerate into repetition, but Ω (80%) degenerates even more: at 80% retention this model's "
        "greedy continuations break under every filter."),
    ("SF-9", "gemma3-270m"): (
        "HMLV tokens have a higher U-dark ratio than the population in 8 of 11 sink layers only (sign test p ≈ 0.11; "
        "HMLV/all ≈ 1.03), though their keys do resemble token 0's (11/11 layers)."),
    ("SF-10", "gemma3-270m"): (
        "token 0's W_vW_o projection is below the median token's in 43 of 44 heads (median ratio ≈ 0.43); one head "
        "of the last layer, where the sink is being erased, has ≈ 1.09."),
}


# --------------------------------------------------------------------------- the study


@dataclass
class Study:
    name: str
    model: torch.nn.Module  # float32, as loaded
    tok: Any
    sizes: dict
    F: sp.Filters
    ids: torch.Tensor  # (n, T), column 0 = <bos>
    cap: lens.Capture
    sink: sp.SinkProfile
    sweep: sp.Sweep  # on a copy in `dtype` (the policy's choice for sizes["nll_dtype"])
    base_f32: float
    dtype: str
    memo: dict = field(default_factory=dict)

    @property
    def L(self) -> int:
        return self.sweep.L

    @property
    def sf7_layer(self) -> int:
        return min(self.L - 1, round(SOURCE_SF7[0] * self.L))

    @property
    def rows(self) -> list[int]:
        spec = self.sizes["layers"]
        if spec == "all":
            return list(range(self.L))
        rows = {min(self.L - 1, round(f * self.L)) for f in spec} | {self.sink.layer, self.sf7_layer}
        return sorted(rows)

    @property
    def cols(self) -> list[int]:
        return list(self.sizes["bands"]) + [sp.N_BANDS]

    def filter(self, family: str, bands: int, seed: int = 0) -> torch.Tensor | None:
        """The family's filter retaining `bands` bands (Ω_{u,k} retains k + 1); None at 20."""
        if bands >= sp.N_BANDS:
            return None
        k = bands - 1 if family == "omega" else bands
        return self.F.family(family, k, seed)

    def nll(self, layer: int, family: str, bands: int, *, seed: int = 0, where: str = "resid",
            tokens: str = "all", swap: bool = False) -> float:
        key = (layer, family, bands, seed, where, tokens, swap)
        if key not in self.memo:
            P = self.filter(family, bands, seed)
            self.memo[key] = self.sweep.base if P is None else self.sweep.nll(
                layer, P, where=where, tokens=tokens, swap=swap)
        return self.memo[key]

    def grid(self, family: str, **kw: Any) -> np.ndarray:
        """(rows, cols) NLL heat map (003 Fig 8/11)."""
        return np.array([[self.nll(r, family, c, **kw) for c in self.cols] for r in self.rows])


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("spectral")


@pytest.fixture(scope="module")
def study(model_name, pretrained, sizes) -> Study:
    m, tok = pretrained(model_name)
    if tok is None:
        raise ReproError(f"--model {model_name}: the spectral claims read Brown text, which needs the model's tokenizer")
    bos = tok.bos_token_id
    if bos is None:
        raise ReproError(f"--model {model_name}: its tokenizer has no <bos>; 003 §5 needs every prompt to start alike")
    F = sp.filters(m)
    ids = data.windows(tok, "test", sizes["n_prompts"], sizes["prompt_len"], lead=bos).to(next(m.parameters()).device)
    cap = lens.capture(m, ids, modules=["mlp_out", "attn_out", "attn_in"], attentions=True, logits_to_keep=1)
    sink = sp.sink_profile(cap.residual[0, :, 0], torch.stack([x[0, 0] for x in cap.modules["mlp_out"]]),
                           torch.stack([x[0, 0] for x in cap.modules["attn_out"]]), F.dark("u"))
    dtype = resolve_dtype(sizes["nll_dtype"], next(m.parameters()).device)
    work = m if dtype == torch.float32 else copy.deepcopy(m).to(dtype)
    with torch.no_grad():
        normed = lens.final_norm(m)(cap.residual[:, -1])
        base_f32 = float(sp.nll_per_token(m, normed[:, :-1], ids[:, 1:]).mean())
    return Study(model_name, m, tok, sizes, F, ids, cap, sink, sp.Sweep(work, ids), base_f32,
                 dtype_name(dtype))


def _setting(claim, s: Study) -> None:
    n, T = s.ids.shape
    claim.record(f"{s.name}: prompts × tokens (source: 405 prompts, 13,268 tokens)", f"{n} × {T}")
    claim.record(f"{s.name}: unfiltered NLL, {s.dtype} sweep vs float32 forward", s.sweep.base, expected=s.base_f32,
                 tol=0.05, why=f"{s.dtype} vs float32 forward of the same model (exact in float32; bf16 where the "
                 "dtype policy picks it): the heat maps' differences are ≥ 0.5 nats where claims are decided, so "
                 "0.05 nats of dtype noise cannot flip them")


# --------------------------------------------------------------------------- SF-1


@pytest.mark.claim("SF-1", source="003 §3, Fig 3, footnote 1")
def test_unembedding_spectrum(claim, study, sizes):
    s, F = study, study.F
    S = F.u.S.numpy()
    d = F.d
    at = lambda f: S[min(d - 1, int(f * d))]  # noqa: E731
    lead = S[0] / S[1]
    body = at(0.1) / at(0.9)  # decline across the body of the spectrum (10% … 90%)
    per_band_body = body ** (1 / 16)  # the same as a factor per 5% band
    end = at(0.95) / S[-1]  # decline over the last band
    # footnote 1: the top singular direction tracks token frequency (Brown train split counts)
    W_u = sp.unembedding_matrix(s.model)
    stream = data.token_ids(s.tok, data.brown_split("train"), add_bos=False)
    counts = torch.bincount(stream, minlength=W_u.shape[0]).double()[:W_u.shape[0]]
    keep = counts >= sizes["freq_min_count"]
    proj = W_u @ F.u.V[:, 0]
    rho, p = sps.spearmanr(proj[keep].numpy(), np.log(counts[keep].numpy()))
    claim.record(f"{s.name}: σ1/σ2 of W_u", lead, expected=3.0, compare="ge", tol=0.0,
                 why="'a single large SV' (§3), against W_e's 'only twice as large' that the source contrasts it "
                     "with: we ask for 1.5× that ratio")
    claim.record(f"{s.name}: σ1/σ2 of W_e", float(F.e.S[0] / F.e.S[1]))
    claim.record(f"{s.name}: tail flatness σ(0.1d)/σ(0.9d)", body, expected=2.0, compare="le", tol=0.0,
                 why="'a tail that declines only at the very end': less than 2× across 80% of the spectrum")
    claim.record(f"{s.name}: last-band drop σ(0.95d)/σ(d) vs per-band body decline", end / per_band_body,
                 expected=1.0, compare="ge", tol=0.0, why="the last 5% falls faster than any 5% of the body")
    claim.record(f"{s.name}: |Spearman ρ| W_u·v1 vs log Brown frequency ({int(keep.sum())} tokens)", abs(rho),
                 expected=0.3, compare="ge", tol=0.0, why="footnote 1 'highly representative of token frequency': "
                 "at least a moderate rank correlation (Cohen's 0.3)")
    claim.record(f"{s.name}: Spearman p", float(p), expected=1e-6, compare="le", tol=0.0, why="far from chance")
    claim.figure(figures.singular_values({"W_u (final-norm gain folded)": S, "W_e": F.e.S.numpy()}, F.edges,
                                         f"003 Fig 3 — {s.name} (d = {d})"), f"{s.name}_fig3")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-1", s.name), f"σ1/σ2 {lead:.2f}, σ(0.1d)/σ(0.9d) {body:.2f}, |ρ| {abs(rho):.2f}")
    assert lead >= 3.0 and body <= 2.0 and end >= per_band_body and abs(rho) >= 0.3 and p <= 1e-6


# --------------------------------------------------------------------------- SF-2


@pytest.mark.claim("SF-2", source="003 §3 eq. (1), Fig 4, Fig 5")
def test_components_read_and_write_dark(claim, study):
    s, F = study, study.F
    shares = sp.dark_shares(s.model, F)
    chance = F.dims(sp.N_BANDS, sp.N_BANDS) / F.d
    best_y, best = max(((y, float(v.max())) for y, v in shares.items()), key=lambda t: t[1])
    early = slice(0, max(1, s.L // 2))
    w2 = shares["2"][early]
    l2 = int(w2.argmax())
    for y, v in shares.items():
        claim.record(f"{s.name}: max U-dark share of W_{y} (layer {int(v.argmax())})", float(v.max()))
    claim.record(f"{s.name}: largest U-dark share of any matrix (W_{best_y}) / chance", best / chance, expected=3.0,
                 compare="ge", tol=0.0, why="'equipped to read/write the dark subspace': 3× the 5% a random matrix has")
    claim.record(f"{s.name}: U-dark share of the most dark-writing early W_2 (layer {l2} < L/2)", float(w2.max()),
                 expected=0.5, compare="ge", tol=0.0, why="'an early MLP writes mostly dark' (Fig 5): over half its norm")
    mats = sp.component_matrices(s.model, l2)
    heads = mats["o"].shape[0] // int(lens.resolve(s.model, lens.arch_map(s.model).layers)[0].self_attn.head_dim)
    o_by_head = mats["o"].view(heads, -1, F.d)
    panels = [(f"W_2, layer {l2} (Fig 5)", sp.projection_norms(mats["2"], F.u.V, "write"))]
    panels += [(f"W_o head {h}, layer {l2} (Fig 4)", sp.projection_norms(o_by_head[h], F.u.V, "write"))
               for h in range(min(heads, 3))]
    claim.figure(figures.projection_norm_panels(panels, F.edges, f"003 Fig 4/5 — {s.name}"), f"{s.name}_fig4_5")
    claim.figure(figures.dark_share_heatmap(shares, chance, f"U-dark share by matrix and layer — {s.name}"),
                 f"{s.name}_dark_share")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-2", s.name), f"max dark share W_{best_y} {best:.2f} ({best / chance:.1f}× chance); "
                                  f"early W_2 max {float(w2.max()):.3f} at layer {l2}")
    assert best / chance >= 3.0 and float(w2.max()) >= 0.5


# --------------------------------------------------------------------------- SF-3


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-3", source="003 §4.1, Fig 7, Fig 8, Fig 16")
def test_residual_filter_step_at_last_band(claim, study):
    s = study
    _setting(claim, s)
    ls = s.sink.layer
    grids = {"random (a)": s.grid("random"), "Ψ (b)": s.grid("psi"), "Φ_e (c)": s.grid("phi_e"),
             "Φ_u (d)": s.grid("phi_u")}
    claim.figure(figures.nll_heatmaps(grids, s.rows, s.cols, s.sweep.base,
                                      f"003 Fig 8 — {s.name}, residual filtered after a layer"), f"{s.name}_fig8")
    # Fig 7: the sink-writing MLP's output filtered
    curves = {}
    for fam in ("phi_u", "phi_e", "psi", "random"):
        curves[fam] = (s.cols, [s.nll(ls, fam, c, where="mlp") for c in s.cols], None)
    claim.figure(figures.nll_vs_retained(curves, s.sweep.base, f"003 Fig 7 — {s.name}, MLP of layer {ls} filtered"),
                 f"{s.name}_fig7")
    phi19 = s.nll(ls, "phi_u", 19)
    rnd19 = [s.nll(ls, "random", 19, seed=k) for k in s.sizes["random_seeds"]]
    step = phi19 - s.sweep.base
    claim.record(f"{s.name}: sink layer ℓ* (source 13B: L3 of 40)", ls)
    claim.record(f"{s.name}: NLL step Φ_u,1:19 → I after ℓ*", step, expected=1.0, compare="ge", tol=0.0,
                 why="'NLL stays poor until the last band': ≥ 1 nat, 20× the largest bf16/fp32 difference "
                 "the unfiltered record allows (0.05); the same threshold in float32")
    claim.record(f"{s.name}: NLL Φ_u,1:19 − worst of {len(rnd19)} random 95% filters", phi19 - max(rnd19),
                 expected=0.0, compare="ge", tol=0.0, why="'worse than removing the same number of random directions', "
                 "against every random basis tried")
    claim.record(f"{s.name}: NLL MLP-of-ℓ* filtered Φ_u,1:19 − unfiltered", s.nll(ls, "phi_u", 19, where="mlp") - s.sweep.base)
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-3", s.name), f"step {step:.2f} nats, Φ_u,1:19 {phi19:.2f} vs random {np.round(rnd19, 2).tolist()}")
    assert abs(s.sweep.base - s.base_f32) <= 0.05  # the dtype margin the step thresholds rely on
    assert step >= 1.0 and phi19 > max(rnd19)


# --------------------------------------------------------------------------- SF-4


@pytest.mark.claim("SF-4", source="003 §5, Fig 9, App C")
def test_token0_gets_dark_vector_from_early_mlp(claim, study):
    s, p = study, study.sink
    ls = p.layer
    peak = int(p.norm.argmax())
    last = max(p.in_place)
    mlp_share = float(p.mlp_sum_norm[ls] / p.norm[ls + 1])
    claim.record(f"{s.name}: ℓ* (token 0 first reaches half its peak norm after this block) / L", ls / s.L,
                 expected=0.5, compare="le", tol=0.0, why="'an early MLP': in the first half of the model")
    claim.record(f"{s.name}: token 0 peak norm / median other token's, same layer",
                 float(p.norm[peak] / s.cap.residual[:, peak, 1:].norm(dim=-1).median()))
    claim.record(f"{s.name}: U-dark fraction of token 0's residual at its peak", float(p.dark[peak]), expected=0.9,
                 compare="ge", tol=0.0, why="'almost entirely U-dark': ≥ 90% of its norm in the last 5% of the spectrum")
    claim.record(f"{s.name}: ‖Σ MLP contributions up to ℓ*‖ / ‖token 0 residual after ℓ*‖", mlp_share, expected=0.5,
                 compare="ge", tol=0.0, why="the vector comes from MLPs (not attention): over half of it")
    claim.record(f"{s.name}: last block that still reads it / L", last / s.L, expected=0.8, compare="ge", tol=0.0,
                 why="'kept until the last layers': through at least 80% of the depth")
    claim.figure(figures.sink_composition(p, f"003 Fig 9 — {s.name}: token 0 (<bos>) residual"), f"{s.name}_fig9")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-4", s.name), f"ℓ* {ls}/{s.L}, dark {float(p.dark[peak]):.3f}, MLP share {mlp_share:.2f}")
    assert ls / s.L <= 0.5 and p.dark[peak] >= 0.9 and mlp_share >= 0.5 and last / s.L >= 0.8


# --------------------------------------------------------------------------- SF-5, SF-6


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-5", source="003 §5, Fig 10, Fig 11 left")
def test_shavings_swap_removes_step(claim, study):
    s = study
    ls = s.sink.layer
    grid = s.grid("phi_u", swap=True)
    claim.figure(figures.nll_heatmaps({"Φ_u, shavings swapped": grid, "Φ_u, dropped": s.grid("phi_u")}, s.rows,
                                      s.cols, s.sweep.base, f"003 Fig 11 left — {s.name}"), f"{s.name}_fig11_swap")
    step_drop = s.nll(ls, "phi_u", 19) - s.sweep.base
    step_swap = s.nll(ls, "phi_u", 19, swap=True) - s.sweep.base
    claim.record(f"{s.name}: NLL step at k = 20 after ℓ* = {ls}, swapped / dropped", step_swap / step_drop,
                 expected=0.25, compare="le", tol=0.0,
                 why="'removes the step': at most a quarter of the step left (the swap itself perturbs every token "
                     "but token 0)")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-5", s.name), f"swap step {step_swap:.2f} vs drop step {step_drop:.2f}")
    assert step_drop >= 1.0 and step_swap <= 0.25 * step_drop  # a step to remove (SF-3), then its removal


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-6", source="003 §5, Fig 11 middle")
def test_token0_only_filter_shows_step(claim, study):
    s = study
    ls = s.sink.layer
    grid = s.grid("phi_u", tokens="first")
    claim.figure(figures.nll_heatmaps({"Φ_u on token 0 only": grid}, s.rows, s.cols, s.sweep.base,
                                      f"003 Fig 11 middle — {s.name}"), f"{s.name}_fig11_token0")
    step0 = s.nll(ls, "phi_u", 19, tokens="first") - s.sweep.base
    step_swap = s.nll(ls, "phi_u", 19, swap=True) - s.sweep.base
    claim.record(f"{s.name}: NLL step at k = 20, token 0 only, after ℓ* = {ls}", step0, expected=1.0, compare="ge",
                 tol=0.0, why="'the step is clearly visible': ≥ 1 nat (20× the dtype noise)")
    claim.record(f"{s.name}: token-0-only step − swap step", step0 - step_swap, expected=0.0, compare="ge", tol=0.0,
                 why="filtering token 0 alone hurts more than perturbing every other token")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-6", s.name), f"token-0-only step {step0:.2f}, swap step {step_swap:.2f}")
    assert step0 >= 1.0 and step0 > step_swap


# --------------------------------------------------------------------------- SF-7


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-7", source="003 §6, Fig 11 right, Fig 13")
def test_sink_preserving_filters_keep_nll_low(claim, study):
    s = study
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
    src = (15, SOURCE_SF7[2], "source: Ω_u,14 at L12/40 (2.47 → 2.74)")
    claim.figure(figures.nll_vs_retained(curves, s.sweep.base, f"003 Fig 13 — {s.name}, after layer {lay}",
                                         source=src), f"{s.name}_fig13")
    om = s.nll(lay, "omega", 15)
    phi = s.nll(lay, "phi_u", 15)
    removed = 1 - s.F.retained("omega", 14) / s.F.d
    claim.record(f"{s.name}: share of the spectrum Ω_u,14 removes", removed, expected=0.25, tol=0.01,
                 why="band rounding (d/20 not whole)")
    claim.record(f"{s.name}: NLL increase, Ω_u,14 after layer {lay} (source +{SOURCE_SF7[2] - SOURCE_SF7[1]:.2f})",
                 om - s.sweep.base, expected=0.5, compare="le", tol=0.0,
                 why="'keeps NLL low': within 0.5 nats, about twice the source's +0.27 (its ±3σ bars are ~0.1)")
    claim.record(f"{s.name}: NLL Φ_u,1:15 − Ω_u,14 (same retained dims less the dark band)", phi - om)
    ok_rows = [r for r, row in zip(s.rows, grid) if row[s.cols.index(15)] - s.sweep.base <= 0.5]
    claim.record(f"{s.name}: layers where Ω_u,14 stays within 0.5 nats", str(ok_rows))
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-7", s.name), f"Ω_u,14 after layer {lay}: {om:.2f} vs {s.sweep.base:.2f} unfiltered "
                                  f"(Φ_u,1:15 {phi:.2f}); within 0.5 nats after layers {ok_rows}")
    assert om - s.sweep.base <= 0.5


# --------------------------------------------------------------------------- SF-8


@pytest.mark.policy_dtype
@pytest.mark.claim("SF-8", source="003 §6.1, Tables 2, 4, 5")
def test_generations_under_filters(claim, study):
    s, F = study, study.F
    g = s.sizes["gen"]
    layers = sorted({min(s.L - 1, round(f * s.L)) for f in g["layers"]})
    work = s.sweep.model
    fams = {"Ψ (80%)": F.psi(16), "Rnd (80%)": F.random(16, s.sizes["random_seeds"][0]), "Ω_u (80%)": F.omega(15)}
    reps: dict[str, list[float]] = {"none": [], **{k: [] for k in fams}}
    rows = []
    for text in PROMPTS:
        prompt = torch.tensor([[s.tok.bos_token_id] + s.tok(text, add_special_tokens=False)["input_ids"]])
        plain = sp.generate(work, prompt, g["new_tokens"])
        reps["none"] += [sp.rep_n(plain)] * len(layers)
        rows.append([text[:40] + "…", "-", "none", round(sp.rep_n(plain), 2), s.tok.decode(plain)])
        for layer in layers:
            for name, P in fams.items():
                out = sp.generate(work, prompt, g["new_tokens"], layer=layer, P=P)
                reps[name].append(sp.rep_n(out))
                rows.append([text[:40] + "…", layer, name, round(sp.rep_n(out), 2), s.tok.decode(out)])
    claim.table(f"003 Tables 2/4/5 — {s.name}, greedy continuations, filter after a layer",
                ["prompt", "layer", "filter", "rep-3", "continuation"], rows)
    claim.figure(figures.repetition_bars(reps, f"{s.name}: rep-3, filters after layers {layers}"), f"{s.name}_rep3")
    mean = {k: float(np.mean(v)) for k, v in reps.items()}
    for k, v in mean.items():
        claim.record(f"{s.name}: mean rep-3, {k}", v)
    claim.record(f"{s.name}: rep-3 Ψ − unfiltered", mean["Ψ (80%)"] - mean["none"], expected=0.1, compare="ge",
                 tol=0.0, why="'degenerates into repetition': a tenth more of its 3-grams repeated")
    claim.record(f"{s.name}: rep-3 Ω − unfiltered", mean["Ω_u (80%)"] - mean["none"], expected=0.1, compare="le",
                 tol=0.0, why="'Ω stays coherent': no more than a tenth more repetition than the model itself")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-8", s.name), str({k: round(v, 2) for k, v in mean.items()}))
    assert mean["Ψ (80%)"] - mean["none"] >= 0.1 and mean["Ω_u (80%)"] - mean["none"] <= 0.1


# --------------------------------------------------------------------------- SF-9


@pytest.fixture(scope="module")
def hmlv_stats(study):
    """Per layer where the sink is in place: HMLV count, mean udr and kdp for HMLV and all tokens."""
    s = study
    D = s.F.dark("u")
    blocks = lens.arch_map(s.model).blocks(s.model)
    out = {k: [] for k in ("layer", "n", "n_all", "udr_h", "udr_all", "kdp_h", "kdp_all")}
    for layer in s.sink.in_place:
        mean, var = sp.received_attention(s.cap.attentions[layer])
        valid = ~torch.isnan(mean)
        valid[:, 0] = False
        mask = sp.hmlv(mean, var) & valid
        u = sp.udr(s.cap.residual[:, layer], D)
        with torch.no_grad():
            kdp = sp.key_dot_products(sp.head_keys(blocks[layer].self_attn, s.cap.modules["attn_in"][layer]))
        if int(mask.sum()) == 0:
            continue
        for k, v in (("layer", layer), ("n", int(mask.sum())), ("n_all", int(valid.sum())),
                     ("udr_h", float(u[mask].mean())), ("udr_all", float(u[valid].mean())),
                     ("kdp_h", float(kdp[mask].mean())), ("kdp_all", float(kdp[valid].mean()))):
            out[k].append(v)
    return {k: np.array(v) for k, v in out.items()}


def _sign_test(claim, s, st, key: str, label: str) -> float:
    wins = int((st[f"{key}_h"] > st[f"{key}_all"]).sum())
    n = len(st["layer"])
    p = float(sps.binomtest(wins, n, 0.5, alternative="greater").pvalue)
    claim.record(f"{s.name}: layers where HMLV {label} > all tokens' ({n} layers with the sink in place)", f"{wins}/{n}")
    claim.record(f"{s.name}: one-sided sign test p, {label}", p, expected=0.05, compare="le", tol=0.0,
                 why="conventional α; layers are not independent draws, so this is a consistency check across depth")
    claim.record(f"{s.name}: mean HMLV / all-token {label}", float(np.mean(st[f"{key}_h"]) / np.mean(st[f"{key}_all"])))
    return p


@pytest.mark.claim("SF-9", source="003 §7 eq. (4), Fig 15, App F Fig 22")
def test_hmlv_tokens_are_darker(claim, study, hmlv_stats):
    s, st = study, hmlv_stats
    claim.record(f"{s.name}: HMLV token-layer pairs / all (source 13B: 12,236 / 404,748)",
                 f"{int(st['n'].sum())} / {int(st['n_all'].sum())}")
    claim.figure(figures.hmlv_metrics(st["layer"], st["udr_h"], st["udr_all"], st["kdp_h"], st["kdp_all"],
                                      f"003 Fig 15 — {s.name}"), f"{s.name}_fig15")
    p = _sign_test(claim, s, st, "udr", "U-dark ratio")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-9", s.name), f"p = {p:.3g}")
    assert p <= 0.05


@pytest.mark.claim("SF-9", source="003 §7 eq. (5), Fig 15, App F Fig 22")
def test_hmlv_keys_resemble_token0(claim, study, hmlv_stats):
    s = study
    p = _sign_test(claim, s, hmlv_stats, "kdp", "key dot product with token 0")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-9 kdp", s.name), f"p = {p:.3g}")
    assert p <= 0.05


# --------------------------------------------------------------------------- SF-10


@pytest.mark.claim("SF-10", source="003 App D eq. (6), Fig 21")
def test_token0_value_projection_is_small(claim, study):
    s = study
    blocks = lens.arch_map(s.model).blocks(s.model)
    layers = s.sink.in_place
    ratios = []
    with torch.no_grad():
        for layer in layers:
            vo = sp.value_output_norms(blocks[layer].self_attn, s.cap.modules["attn_in"][layer])  # (B, H, T)
            others = vo[:, :, 1:].transpose(0, 1).reshape(vo.shape[1], -1).median(-1).values
            ratios.append((vo[:, :, 0].mean(0) / others).cpu().numpy())
    r = np.stack(ratios)
    claim.figure(figures.head_ratio_heatmap(r, layers, f"003 App D — {s.name}: ‖h_0 W_v W_o‖ / median token's"),
                 f"{s.name}_fig21")
    claim.record(f"{s.name}: heads × layers (sink in place: layers {layers[0]}–{layers[-1]})", int(r.size))
    claim.record(f"{s.name}: share of heads where token 0's W_vW_o norm is below the median token's",
                 float((r < 1).mean()), expected=1.0, compare="ge", tol=0.0, why="'for all H'")
    claim.record(f"{s.name}: median ratio token 0 / median token", float(np.median(r)), expected=0.5, compare="le",
                 tol=0.0, why="'much smaller': at most half, typically")
    claim.record(f"{s.name}: largest ratio", float(r.max()))
    claim.not_reproduced_if(NOT_REPRODUCED, ("SF-10", s.name), f"{int((r >= 1).sum())} of {r.size} heads ≥ 1, largest {r.max():.2f}")
    assert (r < 1).all() and np.median(r) <= 0.5
