"""Matplotlib (Agg) plotting shared by the topics: the backend, the style of a source's
reference value, and the figure builders more than one topic draws — Fig 9 of 001 (positional
std, eq. 2: Born biased and the sinks) and per-step training curves (causal shift, context
axis, sinks). Each topic's own builders are in its `figures` module, one per source figure,
drawn so a reader can put ours next to the source's: the same axes and, where the source gives
a value or a curve, that value as a reference line. Builders return the Figure;
`claim.figure(fig, name)` saves and closes it. Import this module (or a topic's `figures`, which
imports it) before pyplot so the Agg backend is chosen first."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SOURCE_STYLE = dict(color="black", linestyle=":", linewidth=1.2)


def band(ax, x, curve, label, color, **kw):
    ax.plot(x, curve.mean, label=label, color=color, **kw)
    ax.fill_between(x, curve.mean - 2 * curve.sem, curve.mean + 2 * curve.sem, color=color, alpha=0.2, lw=0)


def fig9_positional_std(res, variants: dict | None = None) -> plt.Figure:
    """001 Fig 9: std of the aggregated output per position, with the 1/√i curve through position 1.
    `variants` optionally adds other PositionalStdResults (e.g. 001 §6.2.1's amplification)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    i = res.positions
    band(ax, i, res.std, "measured std of o_i", "tab:red", linestyle="--")
    s1 = res.std.mean[0]
    ax.plot(i, s1 / np.sqrt(i), label="∝ 1/√i (Eq 2, source)", color="tab:blue", linestyle="--")
    ax.plot(
        i,
        s1 * np.sqrt(res.attn_sq.mean),
        label="σ·√(Σ_j A_ij²) (Eq 2 with measured A)",
        color="black",
        linestyle=":",
        lw=1,
    )
    for name, other in (variants or {}).items():
        band(ax, i, other.std, name, None)
    ax.set(
        xlabel="token position i",
        ylabel="std of o_i",
        title=f"001 Fig 9 (T={res.sizes['T']}, d={res.sizes['d_model']}, N={res.sizes['n_seq']})",
    )
    ax.legend(fontsize=7)
    return fig


def training_curves(curves: dict, title: str, smooth: int = 10) -> plt.Figure:
    """Per-step training loss (moving average over `smooth` steps), one line per run."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for label, losses in curves.items():
        y = np.asarray(losses, dtype=float)
        if len(y) >= smooth:
            y = np.convolve(y, np.ones(smooth) / smooth, mode="valid")
        ax.plot(np.arange(len(y)) + smooth, y, lw=0.9, label=label)
    ax.set(xlabel="step", ylabel="training loss (nats/token)", title=title)
    ax.legend(fontsize=6)
    return fig
