"""What each SF claim reads off a `study.Study` (003), with its negative controls: the numbers a
claim test checks, computed here so that the test reads like the claim.

- SF-1 (§3, Fig 3, footnote 1): `unembedding_spectrum`, W_u's spectrum and frequency correlation;
- SF-2 (§3, Figs 4–5): `dark_shares`, every matrix's U-dark share; `write_projection_panels`;
- SF-3, SF-5, SF-6 (§4–5, Figs 8, 11): `residual_step`, `swap_steps`, `token0_step`, the per-prompt
  NLL of Φ_u,1:19 after ℓ* against the unfiltered model, the swap and random filters of the same
  rank; `random_in_place`, the margin checks' negative control;
- SF-4 (§5, Fig 9): `sink_vector`, token 0's sink vector against the other tokens;
- SF-7 (§6, Fig 13): `sink_preserving`, Ω_u,14's NLL against Φ_u,1:15's, per prompt;
- SF-10 (App D, Fig 21): `value_projection`, token 0's value–output ratios per head, against a
  mid-prompt token's, with their bootstrap replicates.

What each claim records beside its checks (context) is in `context`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from repro.core import data, lens, stats
from repro.ground.runtime import generator
from repro.spectral_filters import dark_signals, spectral
from repro.spectral_filters.study import Study

# --------------------------------------------------------------------------- noise-free readings (SF-1, 2, 4)


@dataclass(frozen=True)
class UnembeddingSpectrum:
    """SF-1 (003 §3, Fig 3, footnote 1): the shape of W_u's singular spectrum and how its top
    singular direction tracks token frequency, each with its negative control."""

    S: np.ndarray  # W_u's singular values (final-norm gain folded), largest first
    lead: float  # σ1/σ2: 'a single large SV'
    body: float  # σ(0.1d)/σ(0.9d): the decline across the body of the spectrum (10% … 90%)
    end_over_body: float  # the last band's drop σ(0.95d)/σ(d) over the body's decline per 5% band
    rho: float  # |Spearman ρ| of W_u·v1 with log frequency
    p: float  # its p
    n_tokens: int  # tokens counted at least `freq_min_count` times
    rho_control: float  # |ρ| with a random unit direction in place of v1
    lead_control: float  # σ1/σ2 of W_u less its mean row
    we_lead: float  # σ1/σ2 of W_e, the source's contrast


def unembedding_spectrum(s: Study) -> UnembeddingSpectrum:
    """SF-1's numbers. Footnote 1's token frequencies are the counts in the run's corpus's train
    split (tokens seen at least `sizes["freq_min_count"]` times). Negative controls: a random unit
    direction in place of the top singular vector (the same correlation, nothing to do with
    frequency), and the trained W_u without the direction all tokens share (its mean row
    removed): the source's contrast, W_e with σ1 'only twice' σ2, is not available in a tied
    model; this null passes if σ1 stands out for another reason."""
    F = s.F
    S = F.u.S.numpy()
    d = F.d
    at = lambda f: S[min(d - 1, int(f * d))]  # noqa: E731
    lead = S[0] / S[1]
    body = at(0.1) / at(0.9)
    per_band_body = body ** (1 / 16)  # the same as a factor per 5% band
    end = at(0.95) / S[-1]  # decline over the last band
    W_u = spectral.unembedding_matrix(s.model)
    stream = data.token_ids(s.tok, data.corpus_documents(s.corpus, "train"), add_bos=False)
    counts = torch.bincount(stream, minlength=W_u.shape[0]).double()[: W_u.shape[0]]
    keep = counts >= s.sizes["freq_min_count"]
    log_f = np.log(counts[keep].numpy())
    rho, p = stats.spearman((W_u @ F.u.V[:, 0])[keep].numpy(), log_f)
    g = generator(0)
    r = torch.randn(d, generator=g, dtype=torch.float64)
    rho_ctl, _ = stats.spearman((W_u @ (r / r.norm()))[keep].numpy(), log_f)
    S_ctl = spectral.spectrum(W_u - W_u.mean(0)).S  # through the d × d WᵀW, not an SVD of Gemma's 262k rows
    del W_u
    return UnembeddingSpectrum(
        S,
        float(lead),
        float(body),
        float(end / per_band_body),
        float(abs(rho)),
        float(p),
        int(keep.sum()),
        float(abs(rho_ctl)),
        float(S_ctl[0] / S_ctl[1]),
        float(F.e.S[0] / F.e.S[1]),
    )


@dataclass(frozen=True)
class DarkShares:
    """SF-2 (003 §3, Figs 4–5): every matrix's U-dark share (eq. 1, last band) by layer, and the
    same in the last band of a random orthonormal basis (the same number of directions,
    unrelated to W_u): chance, up to the spread of a max over matrices — the negative control."""

    shares: dict[str, torch.Tensor]  # y → (L,) U-dark share of each layer's W_y
    chance: float  # the band's share of d
    best_y: str  # the matrix with the largest share of any layer
    best: float
    best_random: float  # the largest share of any matrix in the random basis
    w2: float  # the largest share of an early (first half) W_2
    w2_layer: int
    w2_random: float  # that W_2's share in the random basis


def dark_shares(s: Study) -> DarkShares:
    F = s.F
    shares = spectral.dark_shares(s.model, F)
    rnd = spectral.dark_shares(s.model, F, F.random_basis(0))
    chance = F.dims(spectral.N_BANDS, spectral.N_BANDS) / F.d
    best_y, best = max(((y, float(v.max())) for y, v in shares.items()), key=lambda t: t[1])
    best_rnd = max(float(v.max()) for v in rnd.values())
    early = slice(0, max(1, s.L // 2))
    w2 = shares["2"][early]
    l2 = int(w2.argmax())
    return DarkShares(shares, chance, best_y, best, best_rnd, float(w2.max()), l2, float(rnd["2"][l2]))


def write_projection_panels(s: Study, layer: int, n_heads: int = 3) -> list[tuple[str, torch.Tensor]]:
    """003 Figs 4–5's panels: eq. (1) projection norms on V_u of `layer`'s W_2 and of its first
    `n_heads` heads' W_o."""
    F = s.F
    mats = spectral.component_matrices(s.model, layer)
    amap = lens.arch_map(s.model)
    heads = mats["o"].shape[0] // int(lens.resolve(amap.blocks(s.model)[0], amap.attn).head_dim)
    o_by_head = mats["o"].view(heads, -1, F.d)
    panels = [(f"W_2, layer {layer} (Fig 5)", spectral.projection_norms(mats["2"], F.u.V, "write"))]
    panels += [
        (f"W_o head {h}, layer {layer} (Fig 4)", spectral.projection_norms(o_by_head[h], F.u.V, "write"))
        for h in range(min(heads, n_heads))
    ]
    return panels


@dataclass(frozen=True)
class SinkVector:
    """SF-4 (003 §5, Fig 9): token 0's sink vector and its nulls. The null of 'large' and 'almost
    entirely U-dark' is the other tokens at the same depth (the sink vector is token 0's; if the
    other tokens are as dark, darkness does not single it out); of 'from an MLP', the attention
    contributions."""

    layer: int  # ℓ*: token 0 first reaches half its peak norm after this block
    peak: int  # the layer of token 0's peak norm
    last: int  # the last block that still reads it (its input carries it)
    large: float  # token 0's norm at its peak / the median other token's there
    large_control: float  # the largest other token's norm there / the median's
    dark: float  # U-dark fraction of token 0's residual at its peak
    dark_control: float  # the median other token's U-dark fraction there
    dark_embedding: float  # token 0's before any block (its <bos> embedding)
    mlp_share: float  # ‖Σ MLP contributions up to ℓ*‖ / ‖token 0's residual after ℓ*‖
    attn_share: float  # the same for the attention contributions
    n_others: int  # other tokens at the peak layer


def sink_vector(s: Study) -> SinkVector:
    p = s.sink
    ls = p.layer
    peak = int(p.norm.argmax())
    last = max(p.in_place)
    mlp_share = float(p.mlp_sum_norm[ls] / p.norm[ls + 1])
    D = s.F.dark("u")
    others = s.cap.residual[:, peak, 1:]
    norms = others.norm(dim=-1)
    large, large_ctl = float(p.norm[peak] / norms.median()), float(norms.max() / norms.median())
    others_dark = float(dark_signals.dark_fraction(others, D).median())
    attn0 = torch.stack([x[0, 0] for x in s.cap.modules["attn_out"]]).float().cpu()
    attn_share = float(attn0[: ls + 1].sum(0).norm() / p.norm[ls + 1])
    return SinkVector(
        ls,
        peak,
        last,
        large,
        large_ctl,
        float(p.dark[peak]),
        others_dark,
        float(p.dark[0]),
        mlp_share,
        attn_share,
        others.shape[0] * others.shape[1],
    )


def random_in_place(rnd: dict, seeds: list, what: str) -> dict:
    """The negative control of SF-3's and SF-6's margin checks, as `claim.check` keywords: the
    first seed's random filter in the place of `what`, against the worst of the other random
    filters (per-prompt NLL arrays `rnd` by seed); no control with a single seed."""
    others = [k for k in seeds if k != seeds[0]]
    if not others:
        return {}
    return dict(
        control=float(rnd[seeds[0]].mean() - max(rnd[k].mean() for k in others)),
        control_name=f"the random filter of seed {seeds[0]} in place of {what}, against the worst of the "
        f"other random filters (seeds {others})",
    )


# --------------------------------------------------------------------------- NLL readings (SF-3, 5, 6)


@dataclass(frozen=True)
class AgainstRandom:
    """Φ_u,1:19 after ℓ* against random filters of the same rank (ci: 3 seeds), per prompt."""

    seeds: list[int]
    step_p: np.ndarray  # Φ_u,1:19's NLL step (over the unfiltered NLL)
    gap_p: np.ndarray  # Φ_u,1:19 − the worst random filter (the one with the highest mean)
    rnd_means: list[float]  # each random filter's mean (SF-3: its NLL; SF-6: its step)
    control: dict  # `random_in_place`: the margin check's negative control, `claim.check` keywords

    @property
    def step(self) -> float:
        return float(self.step_p.mean())

    @property
    def gap(self) -> float:
        return float(self.gap_p.mean())


def residual_step(s: Study) -> AgainstRandom:
    """SF-3 (003 §4, Fig 8): the residual stream filtered after ℓ* on every token."""
    ls = s.sink.layer
    seeds = list(s.sizes["random_seeds"])
    phi19 = s.prompt_nll(ls, "phi_u", 19)
    rnd19 = {k: s.prompt_nll(ls, "random", 19, seed=k) for k in seeds}
    worst = max(seeds, key=lambda k: rnd19[k].mean())
    step_p = phi19 - s.base_prompts
    gap_p = phi19 - rnd19[worst]
    rnd_means = [float(rnd19[k].mean()) for k in seeds]
    return AgainstRandom(seeds, step_p, gap_p, rnd_means, random_in_place(rnd19, seeds, "Φ_u,1:19"))


def token0_step(s: Study) -> AgainstRandom:
    """SF-6 (003 Fig 11 middle): the filters on token 0 only after ℓ* (steps over the unfiltered NLL)."""
    ls = s.sink.layer
    first_p = s.prompt_nll(ls, "phi_u", 19, tokens="first") - s.base_prompts
    seeds = list(s.sizes["random_seeds"])  # one NLL each (ci: 3)
    rnd = {k: s.prompt_nll(ls, "random", 19, seed=k, tokens="first") - s.base_prompts for k in seeds}
    worst = max(seeds, key=lambda k: rnd[k].mean())
    rnd_means = [float(rnd[k].mean()) for k in seeds]
    gap_p = first_p - rnd[worst]
    return AgainstRandom(seeds, first_p, gap_p, rnd_means, random_in_place(rnd, seeds, "Φ_u,1:19 on token 0"))


def swap_steps(s: Study) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """SF-5, SF-6 (003 Figs 10–11): per-prompt NLL steps of Φ_u,1:19 after ℓ* with the shavings
    dropped, swapped with the next prompt's (Fig 10), on token 0 only (SF-6's filter), and the
    swap's negative control: the shavings taken one position earlier, so that token 0 too gets
    another token's shavings and loses its own sink part."""
    ls = s.sink.layer
    drop_p = s.prompt_nll(ls, "phi_u", 19) - s.base_prompts
    swap_p = s.prompt_nll(ls, "phi_u", 19, swap=True) - s.base_prompts
    first_p = s.prompt_nll(ls, "phi_u", 19, tokens="first") - s.base_prompts
    shift_p = s.prompt_nll(ls, "phi_u", 19, swap=True, swap_shift=1) - s.base_prompts
    return drop_p, swap_p, first_p, shift_p


# --------------------------------------------------------------------------- the sink kept, its values (SF-7, SF-10)


@dataclass(frozen=True)
class SinkPreserving:
    """SF-7 (003 §6, Figs 11 right, 13): Ω_u,14 after SF-7's layer (`Study.sf7_layer`), against
    Φ_u,1:15 — the same retained dimensions less the dark band — per prompt (NLL over the unfiltered)."""

    layer: int
    omega_p: np.ndarray  # Ω_u,14's NLL rise per prompt
    rise: float  # its mean
    phi_rise: float  # Φ_u,1:15's mean rise: the check's negative control
    removed: float  # the share of the spectrum Ω_u,14 removes
    ok_rows: list[int]  # the Ω grid's layers after which Ω_u,14 (k = 15) stays within 0.5 nats


def sink_preserving(s: Study, grid: np.ndarray) -> SinkPreserving:
    """SF-7's numbers; `grid`: the Ω heat map's NLL (`Study.grid("omega")`, rows `Study.rows`)."""
    lay = s.sf7_layer
    om_p = s.prompt_nll(lay, "omega", 15) - s.base_prompts
    phi_p = s.prompt_nll(lay, "phi_u", 15) - s.base_prompts
    removed = 1 - s.F.retained("omega", 14) / s.F.d
    ok_rows = [r for r, row in zip(s.rows, grid) if row[s.cols.index(15)] - s.sweep.base <= 0.5]
    return SinkPreserving(lay, om_p, float(om_p.mean()), float(phi_p.mean()), removed, ok_rows)


@dataclass(frozen=True)
class ValueProjection:
    """SF-10 (003 App D, Fig 21): ‖h_0 W_v W_o‖ over the median token's, per layer with the sink in
    place and head, with its negative control (the token in the middle of each prompt in place of
    token 0) and the ratio's bootstrap replicates (the median token resampled)."""

    layers: list[int]  # the layers with the sink in place
    mid: int  # the control token's position
    ratio: np.ndarray  # (len(layers), H): token 0's
    ratio_mid: np.ndarray  # (len(layers), H): the mid-prompt token's
    replicates: np.ndarray  # (n_boot, len(layers), H): token 0's, the median token resampled


def value_projection(s: Study) -> ValueProjection:
    """SF-10's numbers (`dark_signals.value_output_ratios` and its replicates)."""
    layers, attn_in = s.sink.in_place, s.cap.modules["attn_in"]
    mid = s.ids.shape[1] // 2
    r, r_mid = dark_signals.value_output_ratios(s.model, attn_in, layers, (0, mid))
    reps = dark_signals.value_output_ratio_replicates(s.model, attn_in, layers)
    return ValueProjection(layers, mid, r, r_mid, reps)
