"""Figure builders of the causal-shift claims (000): Fig 2 (top-k matches by layer), Fig 3
(alignment measures by relative depth), Fig 4 (single-layer cut sweep), Fig 5 (the learned
gate's distribution) and Table II as bars."""

from __future__ import annotations

import numpy as np

from repro.core.plotting import SOURCE_STYLE, plt


def alignment_matches(profile, switch: float, title: str) -> plt.Figure:
    """000 Fig 2: top-k match rate of every layer's decoding with the input and the target token."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    x = np.arange(profile.n_layers + 1)
    ax.plot(x, profile.mean("input_match"), "C0o-", ms=3, label="input token t_i")
    ax.plot(x, profile.mean("target_match"), "C3s-", ms=3, label="target token t_i+1")
    if np.isfinite(switch):
        ax.axvline(switch, color="grey", lw=0.8, ls="--", label=f"switch ≈ {switch:.1f}")
    ax.set(xlabel="layer (0 = embeddings)", ylabel=f"top-{profile.k} match rate", ylim=(-0.02, 1.02), title=title)
    ax.legend(fontsize=7)
    return fig


def alignment_measures(profiles: dict, title: str) -> plt.Figure:
    """000 Fig 3: cosine to the input / output embedding and the input→output projection as the
    logit lens reads it (σ(z_out − z_in): 0 = the input token, 1 = the output token) by relative
    depth, one line per model."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for i, (name, p) in enumerate(profiles.items()):
        x = np.arange(p.n_layers + 1) / p.n_layers
        a.plot(x, p.mean("cos_in"), color=f"C{i}", ls="-", label=f"{name}: cos(h, e_in)")
        a.plot(x, p.mean("cos_out"), color=f"C{i}", ls="--", label=f"{name}: cos(h, e_out)")
        b.plot(x, p.mean("projection"), color=f"C{i}", label=name)
    a.set(xlabel="relative depth", ylabel="cosine")
    b.axhline(0.5, color="grey", lw=0.6)
    b.set(xlabel="relative depth", ylabel="lens projection σ(z_out − z_in) (0 = input, 1 = output)")
    a.legend(fontsize=6)
    b.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def cut_sweep(losses, baseline: float, baseline_sd: float, title: str) -> plt.Figure:
    """000 Fig 4: validation loss with the residual attenuated at each single layer, the
    baseline as a dotted line with its ±2 sd band over seeds."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    x = np.arange(len(losses))
    ax.bar(x, np.asarray(losses) - baseline, color="C0")
    ax.axhline(0, **SOURCE_STYLE, label="baseline")
    ax.axhspan(-2 * baseline_sd, 2 * baseline_sd, color="0.85", lw=0, label="±2 sd over seeds")
    ax.set(xlabel="attenuated layer", ylabel="val loss − baseline (nats)", title=title)
    ax.set_xticks(x)
    ax.legend(fontsize=7)
    return fig


def cut_sweep_seeds(rel: np.ndarray, title: str) -> plt.Figure:
    """000 Fig 4 per seed: validation loss minus the seed's baseline with the residual attenuated
    at each single layer (`rel`: seeds × layers), one thin line per seed, the mean ± its standard
    error over seeds as bars."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    n, L = rel.shape
    x = np.arange(L)
    for row in rel:
        ax.plot(x, row, color="0.6", lw=0.6, alpha=0.7)
    se = rel.std(0, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(L)
    ax.bar(x, rel.mean(0), yerr=se, color="C0", alpha=0.8, capsize=3, label=f"mean ± se over {n} seeds")
    ax.axhline(0, **SOURCE_STYLE, label="baseline (per seed)")
    ax.set(xlabel="attenuated layer", ylabel="val loss − baseline (nats)", title=title)
    ax.set_xticks(x)
    ax.legend(fontsize=7)
    return fig


def gate_distribution(history: dict, title: str) -> plt.Figure:
    """000 Fig 5: the learned gate's distribution over layers along training."""
    steps = sorted(history)
    grid = np.stack([history[s] for s in steps])
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    im = ax.imshow(
        grid.T,
        aspect="auto",
        origin="lower",
        cmap="viridis",
        vmin=0,
        vmax=max(0.5, grid.max()),
        interpolation="nearest",
    )
    ax.set_xticks(range(len(steps)), [str(s) for s in steps], fontsize=7)
    ax.set_yticks(range(grid.shape[1]))  # one row per layer, 0 = the first
    ax.set(xlabel="training step", ylabel="layer", title=title)
    fig.colorbar(im, ax=ax, label="π (probability of attenuating)")
    return fig


def benchmark_bars(rows: list, metric: str, title: str) -> plt.Figure:
    """000 Table II as bars: benchmark × {baseline, fixed cut, gating}."""
    names = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(5.6, 3.2))
    w = 0.27
    for j, (label, color) in enumerate((("baseline", "0.6"), ("fixed cut", "C0"), ("gating", "C3"))):
        ax.bar(np.arange(len(rows)) + (j - 1) * w, [r[j + 1] for r in rows], width=w, color=color, label=label)
    ax.set_xticks(range(len(rows)), names, fontsize=8)
    ax.set(ylabel=metric, title=title)
    ax.legend(fontsize=7)
    return fig
