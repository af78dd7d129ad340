"""Matplotlib (Agg) figure builders, one per source figure, drawn so a reader can put ours next
to the source's: the same axes and, where the source gives a value or a curve, that value as a
reference line. Builders return the Figure; `claim.figure(fig, name)` saves and closes it."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SOURCE_STYLE = dict(color="black", linestyle=":", linewidth=1.2)


def _band(ax, x, curve, label, color, **kw):
    ax.plot(x, curve.mean, label=label, color=color, **kw)
    ax.fill_between(x, curve.mean - 2 * curve.sem, curve.mean + 2 * curve.sem, color=color, alpha=0.2, lw=0)


def fig5_mlp_stack(res) -> plt.Figure:
    """001 Fig 5: mean pairwise cosine of last-token reps after each MLP block — ReLU MLP0,
    tanh MLP0, the standard (LN + residual) block — with Prop 2's arc-cosine recurrence."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    layers = np.arange(1, res.n_layer + 1)
    _band(ax, layers, res.curves["relu"], "ReLU MLP0 (measured)", "tab:blue", marker="o", ms=3)
    _band(ax, layers, res.curves["tanh"], "tanh MLP0 (measured)", "tab:red", linestyle="--")
    _band(ax, layers, res.curves["standard"], "standard MLP block (LN+res, ReLU)", "tab:green")
    ax.plot(layers, res.theory, label="Prop 2 recurrence (source)", **SOURCE_STYLE)
    ax.axhline(1 / np.pi, color="grey", lw=0.6)
    ax.set(xlabel="number of MLP blocks l", ylabel="avg pairwise cosine similarity",
           title=f"001 Fig 5 (d={res.sizes['d_model']}, N={res.sizes['n_seq']}, {len(res.sizes['seeds'])} seeds, ±2 SE)")
    ax.set_ylim(-0.1, 1.05)
    ax.legend(fontsize=7, loc="center right")
    return fig


def table3_two_blocks(results) -> plt.Figure:
    """001 Table 3 as bars: h = MLP0(x), MLP0∘MLP0, Attn0∘MLP0 for each T, source values as ticks."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    names = [("h", "MLP0(x)"), ("mlp_mlp", "MLP0∘MLP0"), ("attn_mlp", "Attn0∘MLP0")]
    width = 0.8 / len(results)
    source = {"h": 0.31, "mlp_mlp": 0.49, "attn_mlp": 0.98}  # Table 3 (T = 128)
    for j, res in enumerate(results):
        xs = np.arange(len(names)) + j * width
        means = [getattr(res, k).mean[0] for k, _ in names]
        sems = [getattr(res, k).sem[0] for k, _ in names]
        ax.bar(xs, means, width, yerr=[2 * s for s in sems], label=f"measured, T={res.T}", alpha=0.8)
        ax.scatter(xs, [res.theory[k] for k, _ in names], marker="_", s=300, color="black", zorder=3,
                   label="theory (Props 2, 4)" if j == 0 else None)
    ax.scatter(np.arange(len(names)) + (len(results) - 1) * width / 2, [source[k] for k, _ in names],
               marker="x", color="tab:red", zorder=4, label="source Table 3 (T=128)")
    ax.set_xticks(np.arange(len(names)) + (len(results) - 1) * width / 2, [n for _, n in names])
    ax.set(ylabel="avg inter-sequence cosine similarity", ylim=(0, 1.05), title="001 Table 3")
    ax.legend(fontsize=7, loc="upper left")
    return fig


def fig9_positional_std(res, variants: dict | None = None) -> plt.Figure:
    """001 Fig 9: std of the aggregated output per position, with the 1/√i curve through position 1.
    `variants` optionally adds other PositionalStdResults (e.g. 001 §6.2.1's amplification)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    i = res.positions
    _band(ax, i, res.std, "measured std of o_i", "tab:red", linestyle="--")
    s1 = res.std.mean[0]
    ax.plot(i, s1 / np.sqrt(i), label="∝ 1/√i (Eq 2, source)", color="tab:blue", linestyle="--")
    ax.plot(i, s1 * np.sqrt(res.attn_sq.mean), label="σ·√(Σ_j A_ij²) (Eq 2 with measured A)",
            color="black", linestyle=":", lw=1)
    for name, other in (variants or {}).items():
        _band(ax, i, other.std, name, None)
    ax.set(xlabel="token position i", ylabel="std of o_i",
           title=f"001 Fig 9 (T={res.sizes['T']}, d={res.sizes['d_model']}, N={res.sizes['n_seq']})")
    ax.legend(fontsize=7)
    return fig
