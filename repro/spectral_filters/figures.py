"""Figure builders of the spectral-filter claims (003): singular values and eq. (1) projection
norms with the dark band shaded, dark shares, NLL against retained bands and as heat maps,
token 0's sink composition, HMLV metrics, head ratios, repetition; and the figures of a
`study.Study` (Figs 7, 8, 11, 13: they read its memoised NLL sweeps; Fig 15)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from repro.core.plotting import plt
from repro.spectral_filters.study import SOURCE_SF7

if TYPE_CHECKING:
    from repro.spectral_filters.study import Study


def _dark_band(ax, edges, horizontal: bool = False) -> None:
    lo, hi = edges[-2], edges[-1] - 1
    (ax.axhspan if horizontal else ax.axvspan)(lo, hi, color="0.85", lw=0, zorder=0, label="U-dark band (last 5%)")


def singular_values(spectra: dict, edges, title: str) -> plt.Figure:
    """003 Fig 3: singular values of W_u (norm gain folded) and W_e, the dark band shaded."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    _dark_band(ax, edges)
    for label, S in spectra.items():
        ax.plot(np.arange(len(S)), np.asarray(S), label=label)
    ax.set_yscale("log")
    ax.set(xlabel="singular value index", ylabel="singular value", title=title)
    ax.legend(fontsize=7)
    return fig


def projection_norm_panels(panels: list, edges, title: str) -> plt.Figure:
    """003 Fig 4/5: eq. (1) projection norms j_i of chosen matrices on the RSVs of W_u."""
    fig, axes = plt.subplots(len(panels), 1, figsize=(5.6, 1.7 * len(panels) + 0.6), squeeze=False)
    for ax, (name, j) in zip(axes[:, 0], panels):
        _dark_band(ax, edges)
        ax.plot(np.arange(len(j)), np.asarray(j), lw=0.7)
        ax.set_ylabel("j_i", fontsize=8)
        ax.set_title(name, fontsize=8)
    axes[-1, 0].set_xlabel("right singular vector of W_u (largest singular value first)")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def dark_share_heatmap(shares: dict, chance: float, title: str) -> plt.Figure:
    """Share of each matrix's squared norm in the U-dark band, by layer (chance = band share)."""
    names = list(shares)
    grid = np.stack([np.asarray(shares[n]) for n in names])
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    im = ax.imshow(grid / chance, aspect="auto", cmap="magma", interpolation="nearest")
    ax.set_yticks(range(len(names)), [f"W_{n}" for n in names])
    ax.set(xlabel="layer", title=title)
    fig.colorbar(im, ax=ax, label="dark share / chance")
    return fig


def nll_vs_retained(
    curves: dict, base: float, title: str, xlabel: str = "retained bands (of 20)", source: tuple | None = None
) -> plt.Figure:
    """003 Fig 7/13/16: NLL against retained spectrum for each filter family; `curves`:
    label → (x, mean, spread or None) with spread drawn as ±1 (random bases)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for label, (x, y, spread) in curves.items():
        x, y = np.asarray(x), np.asarray(y)
        if spread is None:
            ax.plot(x, y, marker="o", ms=3, label=label)
        else:
            ax.errorbar(x, y, yerr=np.asarray(spread), marker="o", ms=3, capsize=2, label=label)
    ax.axhline(base, color="grey", lw=0.8, label="no filter")
    if source is not None:
        ax.plot(*source[:2], "k*", ms=9, label=source[2])
    ax.set(xlabel=xlabel, ylabel="NLL (nats/token)", title=title)
    ax.legend(fontsize=7)
    return fig


def nll_heatmaps(grids: dict, rows, cols, base: float, title: str) -> plt.Figure:
    """003 Fig 8/11/19: NLL when filtering the residual stream after the layer on the vertical
    axis, retaining the bands on the horizontal axis; one panel per filter family."""
    n = len(grids)
    fig, axes = plt.subplots(1, n, figsize=(2.4 * n + 1.2, 0.28 * len(rows) + 2.0), squeeze=False, layout="constrained")
    vmax = max(float(np.nanmax(np.asarray(g))) for g in grids.values())
    for ax, (label, g) in zip(axes[0], grids.items()):
        im = ax.imshow(
            np.asarray(g),
            aspect="auto",
            cmap="viridis",
            vmin=base,
            vmax=max(vmax, base + 1e-3),
            interpolation="nearest",
            origin="lower",
        )
        ax.set_xticks(range(len(cols)), [str(c) for c in cols], fontsize=7)
        ax.set_yticks(range(len(rows)), [str(r) for r in rows], fontsize=7)
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("retained bands", fontsize=8)
    axes[0, 0].set_ylabel("filtered after layer", fontsize=8)
    fig.colorbar(im, ax=list(axes[0]), label="NLL")
    fig.suptitle(title, fontsize=9)
    return fig


def sink_composition(p, title: str) -> plt.Figure:
    """003 Fig 9: token 0's residual norm by layer with its U-dark / U-light parts (top), and
    the norms of the MLP (bottom left) and attention (bottom right) contributions."""
    fig = plt.figure(figsize=(7.2, 5.0))
    top = fig.add_subplot(2, 1, 1)
    bl, br = fig.add_subplot(2, 2, 3), fig.add_subplot(2, 2, 4)

    def split(ax, norm, darkf, x, label):
        norm, darkf = np.asarray(norm), np.asarray(darkf)
        ax.plot(x, norm, "k-", label=f"{label} norm")
        ax.plot(x, norm * darkf, "C3--", label="U-dark part")
        ax.plot(x, norm * np.sqrt(np.clip(1 - darkf**2, 0, None)), "C0:", label="U-light part")
        ax.set_yscale("symlog", linthresh=1.0)

    split(top, p.norm, p.dark, np.arange(len(p.norm)), "residual")
    top.axvline(p.layer + 1, color="grey", lw=0.6)
    top.set(xlabel="residual stream entering block (L = after the last)", title=title)
    top.legend(fontsize=7)
    split(bl, p.mlp_norm, p.mlp_dark, np.arange(len(p.mlp_norm)), "MLP")
    bl.set(xlabel="layer", title="MLP contributions")
    split(br, p.attn_norm, p.attn_dark, np.arange(len(p.attn_norm)), "attention")
    br.set(xlabel="layer", title="attention contributions")
    fig.tight_layout()
    return fig


def hmlv_metrics(layers, udr_h, udr_all, kdp_h, kdp_all, title: str) -> plt.Figure:
    """003 Fig 15/22: mean U-dark ratio and key dot product with token 0, HMLV vs all tokens."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(8.0, 3.2))
    for ax, h, al, name in (
        (a, udr_h, udr_all, "U-dark ratio (eq. 4)"),
        (b, kdp_h, kdp_all, "key dot product (eq. 5)"),
    ):
        ax.plot(layers, h, "C3o-", ms=3, label="HMLV tokens")
        ax.plot(layers, al, "C0s-", ms=3, label="all tokens")
        ax.set(xlabel="layer", title=name)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def head_ratio_heatmap(ratios, layers, title: str) -> plt.Figure:
    """003 App D / Fig 21: ‖h_0 W_v^h W_o^h‖ over the median token's, per layer and head."""
    r = np.asarray(ratios)
    fig, ax = plt.subplots(figsize=(5.6, 0.22 * len(layers) + 1.6))
    im = ax.imshow(np.log10(r), aspect="auto", cmap="coolwarm", vmin=-1.5, vmax=1.5, interpolation="nearest")
    ax.set_yticks(range(len(layers)), [str(x) for x in layers], fontsize=6)
    ax.set(xlabel="head", ylabel="layer", title=title)
    fig.colorbar(im, ax=ax, label="log10 (token 0 / median token)")
    return fig


def repetition_bars(reps: dict, title: str) -> plt.Figure:
    """003 §6.1 / Tables 2, 4, 5 as numbers: rep-3 of greedy continuations per filter."""
    fig, ax = plt.subplots(figsize=(5.0, 3.0))
    names = list(reps)
    means = [float(np.mean(reps[n])) for n in names]
    ax.bar(range(len(names)), means, color=["0.6", "C3", "C7", "C0"][: len(names)])
    for i, n in enumerate(names):
        ax.plot([i] * len(reps[n]), reps[n], "k.", ms=4)
    ax.set_xticks(range(len(names)), names)
    ax.set(ylabel="rep-3 (share of repeated 3-grams)", ylim=(0, 1.02), title=title)
    return fig


# --------------------------------------------------------------------------- a study's NLL figures


def residual_filter_heatmaps(s: Study) -> plt.Figure:
    """003 Fig 8: NLL with the residual stream filtered after each of `s.step_rows` (ci: ℓ*), for
    random filters (a), Ψ (b), Φ_e (c) and Φ_u (d)."""
    rows = s.step_rows
    grids = {
        "random (a)": s.grid("random", rows),
        "Ψ (b)": s.grid("psi", rows),
        "Φ_e (c)": s.grid("phi_e", rows),
        "Φ_u (d)": s.grid("phi_u", rows),
    }
    title = f"003 Fig 8 — {s.name}, residual filtered after a layer (ℓ* = {s.sink.layer})"
    return nll_heatmaps(grids, rows, s.cols, s.sweep.base, title)


def mlp_filter_curves(s: Study) -> plt.Figure:
    """003 Fig 7: NLL with the output of the sink-writing MLP (layer ℓ*) filtered."""
    ls = s.sink.layer
    curves = {}
    for fam in ("phi_u", "phi_e", "psi", "random"):
        curves[fam] = (s.cols, [s.nll(ls, fam, c, where="mlp") for c in s.cols], None)
    return nll_vs_retained(curves, s.sweep.base, f"003 Fig 7 — {s.name}, MLP of layer {ls} filtered")


def swap_heatmaps(s: Study) -> plt.Figure:
    """003 Fig 11 left: Φ_u after each of `s.step_rows` with the shavings swapped, next to the
    same filter with the shavings dropped (Fig 8 d)."""
    rows = s.step_rows
    grid = s.grid("phi_u", rows, swap=True)
    grids = {"Φ_u, shavings swapped": grid, "Φ_u, dropped": s.grid("phi_u", rows)}
    return nll_heatmaps(grids, rows, s.cols, s.sweep.base, f"003 Fig 11 left — {s.name} (ℓ* = {s.sink.layer})")


def token0_heatmap(s: Study) -> plt.Figure:
    """003 Fig 11 middle: Φ_u on token 0 only, after each of `s.step_rows`."""
    rows = s.step_rows
    grids = {"Φ_u on token 0 only": s.grid("phi_u", rows, tokens="first")}
    return nll_heatmaps(grids, rows, s.cols, s.sweep.base, f"003 Fig 11 middle — {s.name} (ℓ* = {s.sink.layer})")


def omega_heatmap(s: Study, grid: np.ndarray) -> plt.Figure:
    """003 Fig 11 right: Ω_u's grid over `s.rows` (`s.grid("omega")`)."""
    grids = {"Ω_u (head + dark band)": grid}
    return nll_heatmaps(grids, s.rows, s.cols, s.sweep.base, f"003 Fig 11 right — {s.name}")


def sink_preserving_curves(s: Study) -> plt.Figure:
    """003 Fig 13: NLL against retained bands after SF-7's layer for Ω_u, Φ_u, Ψ and the random
    filters (mean ± 1 sd over the bases), with the source's Ω_u,14 point."""
    lay, seeds = s.sf7_layer, s.sizes["random_seeds"]
    rnd = np.array([[s.nll(lay, "random", c, seed=k) for c in s.cols] for k in seeds])
    curves = {
        "Ω_u": (s.cols, [s.nll(lay, "omega", c) for c in s.cols], None),
        "Φ_u": (s.cols, [s.nll(lay, "phi_u", c) for c in s.cols], None),
        "Ψ": (s.cols, [s.nll(lay, "psi", c) for c in s.cols], None),
        f"random (±1 sd, {len(seeds)} bases)": (s.cols, rnd.mean(0), rnd.std(0, ddof=1)),
    }
    src = (15, SOURCE_SF7[2], f"source: Ω_u,14 at L12/40 ({SOURCE_SF7[1]} → {SOURCE_SF7[2]})")
    return nll_vs_retained(curves, s.sweep.base, f"003 Fig 13 — {s.name}, after layer {lay}", source=src)


def hmlv_layers(s: Study, st: dict) -> plt.Figure:
    """003 Fig 15: the per-layer means of `study.hmlv_statistics` (`st`), HMLV vs all tokens."""
    lay = st["layers"]
    title = f"003 Fig 15 — {s.name} ({st['shape'][1]}-token prompts)"
    return hmlv_metrics(lay["layer"], lay["udr_h"], lay["udr_all"], lay["kdp_h"], lay["kdp_all"], title)
