"""Figure builders of SeedPrint (001 §5–6.1, App B.3): Tables 4–6 as −log10 p bars, Fig 11
(persistence along training), Fig 13 (the null τ distribution) and the baselines of Table 5."""

from __future__ import annotations

import numpy as np

from repro.core.plotting import SOURCE_STYLE, plt


def _log10p(p: float) -> float:
    return -np.log10(max(p, 1e-300))


def seedprint_pvalues(rows, title: str, alpha: float = 0.01) -> plt.Figure:
    """001 Tables 4–6 as bars: −log10 p per model pair for Algorithm 1 (t and U tests) and the
    released variant; green labels same lineage, red different; the α line is the verdict."""
    labels = [r["pair"] for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(5.2, 0.9 * len(rows) + 2), 3.6))
    for i, (key, name, color) in enumerate(
        (
            ("p_t", "Alg. 1 t-test", "tab:blue"),
            ("p_u", "Alg. 1 U-test", "tab:cyan"),
            ("p_released", "released variant", "tab:orange"),
        )
    ):
        ax.bar(x + (i - 1) * 0.27, [_log10p(r[key]) for r in rows], width=0.27, label=name, color=color)
    ax.axhline(_log10p(alpha), **SOURCE_STYLE, label=f"α = {alpha}")
    ax.set_yscale("symlog", linthresh=2)
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=7)
    for tick, r in zip(ax.get_xticklabels(), rows):
        tick.set_color("tab:green" if r["same"] else "tab:red")
    ax.set(ylabel="−log10 p (capped at 300)", title=title)
    ax.legend(fontsize=7)
    return fig


def fig11_persistence(steps, lineage, baseline, m: int) -> plt.Figure:
    """001 Fig 11: Kendall τ on the init model's top-m dims between the init and each checkpoint
    of its own training (lineage) vs checkpoints of another seed (baseline); mean ± std over dims."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for taus, name, color in (
        (lineage, "same init (seed 42 → checkpoints)", "tab:blue"),
        (baseline, "other seed (123) baseline", "tab:red"),
    ):
        mean = np.array([t.mean() for t in taus])
        sd = np.array([t.std() for t in taus])
        ax.errorbar(steps, mean, yerr=sd, label=name, color=color, marker="o", ms=3, capsize=2)
    ax.axhline(0, color="grey", lw=0.6)
    ax.set(xlabel="training step", ylabel=f"Kendall τ on top-{m} init dims", title="001 Fig 11 at our scale")
    ax.legend(fontsize=7)
    return fig


def fig13_null(taus, sigma: float, n: int) -> plt.Figure:
    """001 Fig 13: Kendall τ between independently initialised models on random inputs, pooled
    over pairs and identity dims, against N(0, σ²) with σ the independent-sample τ std at n."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    taus = np.asarray(taus)
    ax.hist(taus, bins=40, density=True, color="tab:blue", alpha=0.6, label=f"measured ({len(taus)} τ's)")
    grid = np.linspace(min(taus.min(), -4 * sigma), max(taus.max(), 4 * sigma), 200)
    ax.plot(
        grid,
        np.exp(-0.5 * (grid / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi)),
        **SOURCE_STYLE,
        label=f"N(0, τ_std(n={n})²)",
    )
    ax.set(xlabel="Kendall τ", ylabel="density", title="001 Fig 13: null correlations, independent inits")
    ax.legend(fontsize=7)
    return fig


def baseline_bars(rows, threshold: float) -> plt.Figure:
    """001 Table 5's baseline columns: similarity of each passive baseline for the true
    descendant and the distractor, with the 0.8 decision threshold."""
    methods = list(rows[0]["baselines"])
    x = np.arange(len(methods))
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for i, (r, color) in enumerate(zip(rows, ("tab:green", "tab:red"))):
        ax.bar(
            x + (i - 0.5) * 0.38,
            [r["baselines"][k].similarity for k in methods],
            width=0.38,
            color=color,
            label=r["pair"] + (" (same lineage)" if r["same"] else " (distractor)"),
        )
    ax.axhline(threshold, **SOURCE_STYLE, label=f"threshold {threshold}")
    ax.set_xticks(x, methods)
    ax.set(ylabel="similarity", title="Table 5 baselines after the code shift")
    ax.legend(fontsize=7)
    return fig
