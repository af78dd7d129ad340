"""The context records of the SF claims (003): what each claim test records beside its checks —
shown in the report, compared with nothing, never asserted — as `repro.core.readings.Reading`s
(compare "none") in the order the claim file records them (`claims/test_spectral_filters.py`'s
`_say`). Each function reads what the test already holds (the `Study`, the claim's numbers from
`readings`, its NLL means) and computes only what it records: the checks, their controls and the
numbers they check stay with the claim file and `readings`.

- SF-3's setting (`setting`: the prompts) and its random filters (`residual_step`);
- SF-1 (`unembedding_spectrum`), SF-2 (`dark_shares`), SF-4 (`sink_vector`): the source's contrast
  and the per-matrix and per-token numbers the checks' maxima come from;
- SF-6 (`token0_step`), SF-7 (`sink_preserving`): the random filters' steps, the share of the
  spectrum Ω removes and the layers where it keeps NLL low;
- SF-8 (`generations`): the mean rep-3 per filter, and the source's Table 4 near the same layers;
- SF-9 (`hmlv`): §7's pass, τ_μ and the share of pairs marked HMLV;
- SF-10 (`value_projection`): the heads read and the largest ratio with its bootstrap interval.
"""

from __future__ import annotations

import numpy as np

from repro.core.readings import Reading
from repro.spectral_filters import catalogue, dark_signals
from repro.spectral_filters.noise_free import SOURCE_WE_SV_RATIO
from repro.spectral_filters.power import SOURCE_REMOVED, HMLVTest
from repro.spectral_filters.readings import (
    AgainstRandom,
    DarkShares,
    SinkPreserving,
    SinkVector,
    UnembeddingSpectrum,
    ValueProjection,
)
from repro.spectral_filters.study import Study

SOURCE_CCNET = "{:,} prompts, {:,} tokens".format(*catalogue.number("SF-9", "ccnet405"))  # 003 §4: ccnet-405
SOURCE_HMLV_PAIRS = "{:,} / {:,}".format(*catalogue.number("SF-9", "pairs_13b"))  # 003 §7, LLaMA-2 13B


def setting(s: Study) -> list[Reading]:
    """The prompts the NLL claims read (the source's: ccnet-405)."""
    n, T = s.ids.shape
    return [Reading(f"{s.name}: prompts × tokens (source: {SOURCE_CCNET})", f"{n} × {T}")]


def unembedding_spectrum(s: Study, u: UnembeddingSpectrum) -> list[Reading]:
    """SF-1: W_e's σ1/σ2, the contrast the source draws with W_u's single large singular value."""
    return [Reading(f"{s.name}: σ1/σ2 of W_e", u.we_lead, source=SOURCE_WE_SV_RATIO)]


def dark_shares(s: Study, ds: DarkShares) -> list[Reading]:
    """SF-2: each matrix's largest U-dark share over the layers, and the layer it is at."""
    return [
        Reading(f"{s.name}: max U-dark share of W_{y} (layer {int(v.argmax())})", float(v.max()))
        for y, v in ds.shares.items()
    ]


def residual_step(s: Study, r: AgainstRandom) -> list[Reading]:
    """SF-3: the sink layer ℓ*, Φ_u,1:19 on ℓ*'s MLP output alone, each random filter's NLL step
    after ℓ* and their seed-to-seed spread."""
    ls, base = s.sink.layer, s.sweep.base
    return [
        Reading(f"{s.name}: sink layer ℓ* (source 13B: L3 of 40)", ls),
        Reading(f"{s.name}: NLL MLP-of-ℓ* filtered Φ_u,1:19 − unfiltered", s.nll(ls, "phi_u", 19, where="mlp") - base),
        Reading(
            f"{s.name}: NLL step of each random 95% filter after ℓ* (seeds {r.seeds})",
            [round(m - base, 3) for m in r.rnd_means],
        ),
        Reading(
            f"{s.name}: sd across the {len(r.seeds)} random filters' NLL (seed-to-seed spread)",
            float(np.std(r.rnd_means, ddof=1)) if len(r.rnd_means) > 1 else 0.0,
        ),
    ]


def sink_vector(s: Study, v: SinkVector) -> list[Reading]:
    """SF-4: how dark token 0's stream is before any block (its <bos> embedding)."""
    name = f"{s.name}: U-dark fraction of token 0's stream before any block (its <bos> embedding)"
    return [Reading(name, v.dark_embedding)]


def token0_step(s: Study, r: AgainstRandom) -> list[Reading]:
    """SF-6: each random filter's NLL step on token 0 only."""
    name = f"{s.name}: NLL step of each random 95% filter on token 0 only (seeds {r.seeds})"
    return [Reading(name, np.round(r.rnd_means, 3).tolist())]


def sink_preserving(s: Study, v: SinkPreserving) -> list[Reading]:
    """SF-7: the share of the spectrum Ω_u,14 removes, Φ_u,1:15's NLL over Ω_u,14's (the same
    retained dimensions less the dark band) and the layers after which Ω_u,14 keeps NLL low."""
    return [
        Reading(f"{s.name}: share of the spectrum Ω_u,14 removes (source {SOURCE_REMOVED:.0%})", v.removed),
        Reading(f"{s.name}: NLL Φ_u,1:15 − Ω_u,14 (same retained dims less the dark band)", v.phi_rise - v.rise),
        Reading(f"{s.name}: layers where Ω_u,14 stays within 0.5 nats", str(v.ok_rows)),
    ]


def generations(
    s: Study, mean: dict[str, float], src: dict[str, list[list[float]]], layers: list[int], new_tokens: int
) -> list[Reading]:
    """SF-8: the mean rep-3 under each filter (`mean`), then the source's own Table 4 continuations
    at about the same relative depth (`src`, `power.source_rep`), per filter family."""
    out = [Reading(f"{s.name}: mean rep-3, {k}", v) for k, v in mean.items()]
    for fam, vals in src.items():
        out.append(
            Reading(
                f"{s.name}: source's Table 4 rep-3, {fam}, rows near layers {layers} ({new_tokens} tokens)",
                [round(float(np.mean(v)), 3) for v in vals],
            )
        )
    return out


def hmlv(s: Study, st: dict, h: HMLVTest, label: str) -> list[Reading]:
    """SF-9: the §7 pass's size, τ_μ against the source's, the share of pairs marked HMLV, and the
    layers where the HMLV tokens' mean `label` beats all tokens' (context: layers are not independent)."""
    out = [
        Reading(
            f"{s.name}: prompts × tokens for §7 (source: {SOURCE_CCNET} ≈ {dark_signals.HMLV_PROMPT_LEN} each)",
            "{} × {}".format(*h.shape),
        ),
        Reading(
            f"{s.name}: τ_μ marking the source's share of pairs HMLV (source: {dark_signals.HMLV_MEAN}; "
            f"τ_σ kept at {dark_signals.HMLV_VAR})",
            st["tau_mean"],
        ),
        Reading(
            f"{s.name}: share of pairs the source's τ_μ = {dark_signals.HMLV_MEAN} would mark HMLV here",
            st["source_thresholds_share"],
        ),
        Reading(
            f"{s.name}: HMLV token-layer pairs / all, {len(s.sink.in_place)} layers with the sink in place "
            f"(source 13B: {SOURCE_HMLV_PAIRS})",
            "{} / {}".format(*h.pairs),
        ),
        Reading(
            f"{s.name}: share of token-layer pairs marked HMLV (τ_μ set to mark the source's share)",
            h.pairs[0] / h.pairs[1],
            source=round(dark_signals.HMLV_SHARE, 4),
        ),
    ]
    if h.layer_wins:
        out.append(
            Reading(
                f"{s.name}: layers where the HMLV mean {label} > all tokens' (context: layers are not independent)",
                "{}/{}".format(*h.layer_wins),
            )
        )
    return out


def value_projection(s: Study, v: ValueProjection) -> list[Reading]:
    """SF-10: the heads × layers read, token 0's largest ratio and its 95% bootstrap interval (the
    median token resampled), and the heads whose interval lies above 1."""
    r, layers = v.ratio, v.layers
    lo, hi = np.percentile(v.replicates, [2.5, 97.5], axis=0)
    top = np.unravel_index(int(np.argmax(r)), r.shape)
    return [
        Reading(f"{s.name}: heads × layers (sink in place: layers {layers[0]}–{layers[-1]})", int(r.size)),
        Reading(f"{s.name}: largest ratio", float(r.max())),
        Reading(
            f"{s.name}: largest ratio's 95% bootstrap interval (the median token resampled)",
            f"[{lo[top]:.3g}, {hi[top]:.3g}]",
        ),
        Reading(f"{s.name}: heads whose 95% bootstrap interval lies above 1", int((lo >= 1).sum())),
    ]
