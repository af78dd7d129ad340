"""Figure builders of 001 §3–4 (Born biased): Fig 1a, Table 1, Figs 2–8 and 10, Tables 2–3,
Finding 1.3's favourite tokens and Finding 2.2's direction agreement; drawn on the source's axes
with the source's values as reference lines. Fig 9 is shared with the sinks and lives in
`repro.core.plotting`."""

from __future__ import annotations

import numpy as np

from repro.born_biased import catalogue
from repro.born_biased.closed_forms import prop5_approx
from repro.core.plotting import SOURCE_STYLE, band, plt


def fig5_mlp_stack(res) -> plt.Figure:
    """001 Fig 5: mean pairwise cosine of last-token reps after each MLP block — ReLU MLP0,
    tanh MLP0, the standard (LN + residual) block — with Prop 2's arc-cosine recurrence."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    layers = np.arange(1, res.n_layer + 1)
    band(ax, layers, res.curves["relu"], "ReLU MLP0 (measured)", "tab:blue", marker="o", ms=3)
    band(ax, layers, res.curves["tanh"], "tanh MLP0 (measured)", "tab:red", linestyle="--")
    band(ax, layers, res.curves["standard"], "standard MLP block (LN+res, ReLU)", "tab:green")
    ax.plot(layers, res.theory, label="Prop 2 recurrence (source)", **SOURCE_STYLE)
    ax.axhline(catalogue.number("BB-4", "rho1"), color="grey", lw=0.6)  # Prop 2: ρ̄₁ = 1/π
    ax.set(
        xlabel="number of MLP blocks l",
        ylabel="avg pairwise cosine similarity",
        title=f"001 Fig 5 (d={res.sizes['d_model']}, N={res.sizes['n_seq']}, {len(res.sizes['seeds'])} seeds, ±2 SE)",
    )
    ax.set_ylim(-0.1, 1.05)
    ax.legend(fontsize=7, loc="center right")
    return fig


def table3_two_blocks(results) -> plt.Figure:
    """001 Table 3 as bars: h = MLP0(x), MLP0∘MLP0, Attn0∘MLP0 for each T, source values as ticks."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    names = [("h", "MLP0(x)"), ("mlp_mlp", "MLP0∘MLP0"), ("attn_mlp", "Attn0∘MLP0")]
    width = 0.8 / len(results)
    source = {
        k if isinstance(k, str) else k[0]: v  # Table 3 (T = 128)
        for k, v in catalogue.number("BB-4.2", "table3").items()
    }
    for j, res in enumerate(results):
        xs = np.arange(len(names)) + j * width
        means = [getattr(res, k).mean[0] for k, _ in names]
        sems = [getattr(res, k).sem[0] for k, _ in names]
        ax.bar(xs, means, width, yerr=[2 * s for s in sems], label=f"measured, T={res.T}", alpha=0.8)
        ax.scatter(
            xs,
            [res.theory[k] for k, _ in names],
            marker="_",
            s=300,
            color="black",
            zorder=3,
            label="theory (Props 2, 4)" if j == 0 else None,
        )
    ax.scatter(
        np.arange(len(names)) + (len(results) - 1) * width / 2,
        [source[k] for k, _ in names],
        marker="x",
        color="tab:red",
        zorder=4,
        label="source Table 3 (T=128)",
    )
    ax.set_xticks(np.arange(len(names)) + (len(results) - 1) * width / 2, [n for _, n in names])
    ax.set(ylabel="avg inter-sequence cosine similarity", ylim=(0, 1.05), title="001 Table 3")
    ax.legend(fontsize=7, loc="upper left")
    return fig


# --------------------------------------------------------------------------- 001 §3 (Table 1 probes)


def _rank_bars(ax, counts, n, label, color, baseline=None):
    ranks = np.arange(1, len(counts) + 1)
    ax.bar(ranks, np.asarray(counts) / n * 100, color=color, alpha=0.75, label=label)
    if baseline is not None:
        ax.plot(
            ranks,
            np.asarray(baseline) / n * 100,
            color="tab:red",
            linestyle="--",
            lw=1.2,
            label="uniform sampling (empirical top-rank frequencies)",
        )
    ax.set(xlabel="rank", ylabel="frequency (%)")


def fig1a_preference(run, length: int, baseline) -> plt.Figure:
    """001 Fig 1a: frequencies of the most predicted next tokens, by rank, against the sorted
    counts of N uniform draws from the vocabulary (red dashed, as in the source)."""
    i = run.at(length)
    n = run.sizes["n_seq"]
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    _rank_bars(ax, run.rank_counts[i], n, f"random-init {run.arch}, seed {run.seed}", "tab:blue", baseline)
    ratio = run.rank_counts[i][0] / baseline[0]
    ratio_src, _ = catalogue.number("BB-1", "fig1a")
    ax.set_title(
        f"001 Fig 1a (T={length}, N={n}, |V|={run.sizes['vocab_size']}): top token {ratio:.1f}× "
        f"the uniform top (source: {ratio_src}×)",
        fontsize=8,
    )
    ax.legend(fontsize=7)
    return fig


def fig10_token_and_dim(run, length: int, tok_baseline, dim_baseline) -> plt.Figure:
    """001 Fig 10: rank frequencies of argmax tokens (top) and argmax hidden dimensions of the
    final layer (bottom) over random inputs; dashed: the uniform-sampling baseline."""
    i = run.at(length)
    n = run.sizes["n_seq"]
    fig, (a, b) = plt.subplots(2, 1, figsize=(5.2, 5.2))
    _rank_bars(a, run.rank_counts[i], n, "max-logit token", "tab:red", tok_baseline)
    _rank_bars(b, run.dim_rank_counts[i], n, "max hidden dimension (final block)", "tab:blue", dim_baseline)
    a.set_title(f"001 Fig 10 ({run.arch} seed {run.seed}, T={length}, N={n})", fontsize=9)
    a.legend(fontsize=7)
    b.legend(fontsize=7)
    fig.tight_layout()
    return fig


def table1_frequencies(runs, other_runs=None) -> plt.Figure:
    """001 Table 1 as a plot: top-1 frequency (%) vs probe length per (arch, seed), with the
    source's rows (a) and (b) for seeds 42 / 43 drawn as dotted reference lines; `other_runs`
    (green): the same probe at BB-1.2's other model size, labelled by its layer count."""
    source: dict = {}  # (arch, seed) -> ([T …], [top-1 freq % …]) of Table 1(a)-(b)
    for (arch, seed, T), (_, freq, _) in catalogue.number("BB-1", "table1").items():
        xs, ys = source.setdefault((arch, seed), ([], []))
        xs.append(T)
        ys.append(freq)
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    colors = {"rope-gpt2": "tab:blue", "llama": "tab:orange"}
    for (arch, seed), run in runs.items():
        ls = "-" if seed == 42 else "--"
        lab = f"{arch} {run.sizes['n_layer']}L seed {seed} (measured)"
        ax.plot(run.lengths, [t.freq * 100 for t in run.top1], marker="o", color=colors[arch], ls=ls, label=lab)
        if (arch, seed) in source:
            xs, ys = source[(arch, seed)]
            ax.plot(xs, ys, color=colors[arch], ls=":", marker="x", lw=1, label=f"source Table 1 {arch} seed {seed}")
    for (arch, seed), run in (other_runs or {}).items():
        ax.plot(
            run.lengths,
            [t.freq * 100 for t in run.top1],
            marker="s",
            color="tab:green",
            ls="-" if seed == 42 else "--",
            label=f"{arch} {run.sizes['n_layer']}L seed {seed} (measured)",
        )
    from repro.born_biased.preference_probe import uniform_rank_counts
    from repro.ground.runtime import generator

    sizes = next(iter(runs.values())).sizes
    ax.axhline(100 / sizes["vocab_size"], color="grey", lw=0.6, label="uniform 1/|V|")
    # the floor at our N: the top-1 frequency of N uniform draws (a model without preference)
    floor = uniform_rank_counts(sizes["n_seq"], sizes["vocab_size"], generator(1), ranks=1)[0] / sizes["n_seq"]
    ax.axhline(100 * floor, color="tab:red", lw=0.8, ls="--", label=f"top-1 of N={sizes['n_seq']} uniform draws")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="sequence length T",
        ylabel="top-1 frequency (%)",
        title="001 Table 1: top-1 next-token frequency",
    )
    ax.legend(fontsize=6, ncol=2)
    return fig


def fig2_layer_cosine(runs, length: int) -> plt.Figure:
    """001 Fig 2: inter-sequence cosine of last-token representations after each block."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for (arch, seed), run in runs.items():
        if run.layer_cosine is None:
            continue
        y = run.layer_cosine[run.at(length)]
        ax.plot(np.arange(len(y)), y, marker="o", ms=3, label=f"{arch} seed {seed}")
    ax.set(
        xlabel="block (0 = embeddings)",
        ylabel="avg pairwise cosine (last token)",
        title=f"001 Fig 2 (random tokens, T={length})",
    )
    ax.legend(fontsize=7)
    return fig


def fig_direction_agreement(res, source_rate: float | None = None) -> plt.Figure:
    """001 Finding 2.2: per model, favourite token vs contraction-direction token; agreement rate
    with its Wilson 95% interval against the source's 76% (`source_rate`, the catalogue's by default)."""
    from repro.core.stats import binomial_ci

    if source_rate is None:
        source_rate = catalogue.number("BB-2.2", "agreement")

    k, m = int(res.agree.sum()), len(res.agree)
    ci = binomial_ci(k, m)
    fig, (a, b) = plt.subplots(1, 2, figsize=(7.2, 3.2), gridspec_kw=dict(width_ratios=[2.2, 1]))
    xs = np.arange(m)
    a.scatter(xs[res.agree], res.favourite_count[res.agree], color="tab:green", s=14, label="direction = favourite")
    a.scatter(xs[~res.agree], res.favourite_count[~res.agree], color="tab:red", marker="x", s=14, label="differs")
    a.set(xlabel="model (seed)", ylabel="favourite token's count", title="per model")
    a.legend(fontsize=7)
    b.bar([0], [k / m], yerr=[[k / m - ci.low], [ci.high - k / m]], color="tab:blue", alpha=0.7, capsize=4)
    b.axhline(source_rate, **SOURCE_STYLE, label=f"source: {source_rate:.0%}")
    b.set(xticks=[], ylim=(0, 1), ylabel="agreement rate", title=f"{k}/{m}, 95% CI")
    b.legend(fontsize=7)
    fig.suptitle(
        f"001 Finding 2.2 ({res.sizes['arch']} {res.sizes['n_layer']}L, N={res.sizes['n_seq']}, T={res.sizes['T']})",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def fig_seed_favourites(runs, length: int) -> plt.Figure:
    """001 Finding 1.3: how often each seed's favourite token is predicted by every model
    (rows: whose favourite; columns: which model predicts) — a diagonal means seed-specific."""
    keys = list(runs)
    mat = np.zeros((len(keys), len(keys)))
    for r, kr in enumerate(keys):
        fav = runs[kr].top1[runs[kr].at(length)].token
        for c, kc in enumerate(keys):
            mat[r, c] = runs[kc].freq_of(fav, length) * 100
    fig, ax = plt.subplots(figsize=(4.4, 3.6))
    im = ax.imshow(mat, cmap="viridis")
    labels = [f"{a} s{s}" for a, s in keys]
    ax.set_xticks(range(len(keys)), labels, rotation=30, fontsize=7)
    ax.set_yticks(range(len(keys)), [f"fav. of {l}" for l in labels], fontsize=7)
    for r in range(len(keys)):
        for c in range(len(keys)):
            ax.text(c, r, f"{mat[r, c]:.2f}", ha="center", va="center", color="w", fontsize=7)
    fig.colorbar(im, ax=ax, label="frequency (%)")
    ax.set_title(f"001 Finding 1.3: favourite tokens by seed (T={length})", fontsize=9)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- 001 §4 (ablation, Figs 3–8)


ABLATION_COLORS = {"full": "tab:blue", "attn-only": "tab:orange", "mlp-only": "tab:green"}


def fig3_ablation_histograms(ablation: dict, baseline) -> plt.Figure:
    """001 Fig 3: next-token rank frequencies of full, attention-only and MLP-only models (each
    variant's first seed of `ablation`, variant → runs)."""
    runs = {v: variant_runs[0] for v, variant_runs in ablation.items()}
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    ranks = np.arange(1, len(baseline) + 1)
    for variant, run in runs.items():
        ax.plot(
            ranks,
            run.rank_counts / run.sizes["n_seq"] * 100,
            marker="o",
            ms=2.5,
            color=ABLATION_COLORS[variant],
            label=variant,
        )
    ax.plot(
        ranks,
        np.asarray(baseline) / next(iter(runs.values())).sizes["n_seq"] * 100,
        color="tab:red",
        ls="--",
        label="uniform sampling",
    )
    ax.set(xlabel="rank", ylabel="frequency (%)", yscale="log", title="001 Fig 3 (Gaussian inputs, one seed)")
    ax.legend(fontsize=7)
    return fig


def fig7_layerwise(curves: dict) -> plt.Figure:
    """001 Fig 7: inter-sequence cosine after each block for the three variants (mean ± 2 SE
    over seeds); `curves` maps variant → SeedCurves (seeds × layers)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for variant, c in curves.items():
        band(ax, np.arange(1, c.values.shape[1] + 1), c, variant, ABLATION_COLORS[variant], marker="o", ms=3)
    ax.set(xlabel="block", ylabel="avg pairwise cosine (last token)", title="001 Fig 7")
    ax.legend(fontsize=7)
    return fig


def fig4_mlp_only(runs) -> plt.Figure:
    """001 Fig 4: mean and standard deviation (over pairs) of the inter-sequence cosine after each
    MLP block of the MLP-only model, averaged over its seeds' `runs`."""
    mean, std = np.mean([r.layer_cosine for r in runs], 0), np.mean([r.layer_cosine_std for r in runs], 0)
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    layers = np.arange(1, len(mean) + 1)
    ax.plot(layers, mean, marker="o", color="tab:green", label="mean")
    ax.fill_between(layers, mean - std, mean + std, color="tab:green", alpha=0.2, label="± std over pairs")
    ax.set(xlabel="MLP block", ylabel="pairwise cosine (last token)", title="001 Fig 4 (MLP-only)")
    ax.legend(fontsize=7)
    return fig


def table2_bars(means: dict, source: dict) -> plt.Figure:
    """001 Table 2: final-LayerNorm last-token cosine per variant, with the source's values."""
    fig, ax = plt.subplots(figsize=(4.6, 3.2))
    names = list(means)
    ax.bar(
        range(len(names)),
        [means[n] for n in names],
        color=[ABLATION_COLORS[n] for n in names],
        alpha=0.8,
        label="measured",
    )
    ax.scatter(
        range(len(names)), [source[n] for n in names], marker="x", color="black", zorder=3, label="source Table 2"
    )
    ax.set_xticks(range(len(names)), names)
    ax.set(ylabel="avg pairwise cosine", title="001 Table 2")
    ax.legend(fontsize=7)
    return fig


def fig6_gelu(res) -> plt.Figure:
    """001 Fig 6: GELU with the distributions of its inputs with (Norm) and without (NoNorm) LN."""
    from scipy.stats import norm as gauss

    fig, (a, b) = plt.subplots(1, 2, figsize=(7.6, 3.2))
    for ax, key, color in ((a, "norm", "tab:blue"), (b, "nonorm", "tab:orange")):
        u = res.samples[key]
        s = float(np.std(u))
        x = np.linspace(-4 * s, 4 * s, 400)
        ax.plot(x, x * gauss.cdf(x), color="black", label="GELU(x)")
        ax.plot(x, x, color="grey", lw=0.6, ls=":", label="y = x")
        ax2 = ax.twinx()
        ax2.hist(u, bins=80, density=True, color=color, alpha=0.35)
        ax2.set_yticks([])
        ax.set_title(
            f"{'Norm' if key == 'norm' else 'NoNorm'}: input std {s:.3g} (source "
            f"{catalogue.number('BB-4.1', 'gelu_std')[key]})",
            fontsize=8,
        )
        ax.set_xlabel("GELU input")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"001 Fig 6 (d={res.sizes['d_model']})", fontsize=9)
    fig.tight_layout()
    return fig


def fig8_intra_sequence(results, closed_form) -> plt.Figure:
    """001 Fig 8: intra-sequence cosine after each attention layer — standard attention (solid),
    Attn0 (dashed) — for each T, ±1 std over sequences as in the source; Prop 5's closed form
    (dotted) and its approximation (dash-dot, per T)."""
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    colors = ["tab:red", "tab:blue", "tab:green"]
    for res, color in zip(results, colors):
        L = res.standard.values.shape[1]
        layers = np.arange(1, L + 1)
        for curve, sd, ls, name in (
            (res.standard, res.standard_seq_std, "-", "standard"),
            (res.attn0, res.attn0_seq_std, "--", "Attn0"),
        ):
            ax.plot(layers, curve.mean, color=color, ls=ls, label=f"{name}, T={res.T}")
            ax.fill_between(layers, curve.mean - sd, curve.mean + sd, color=color, alpha=0.12, lw=0)
        ax.plot(
            layers[2:],
            [prop5_approx(res.T, l) for l in layers[2:]],
            color=color,
            ls="-.",
            lw=0.8,
            label=f"1 − (1 − 1/T)/L², T={res.T}",
        )
    ax.plot(np.arange(1, len(closed_form) + 1), closed_form, **SOURCE_STYLE, label="Prop 5 closed form ρ̄′(l+1)")
    ax.set(xlabel="attention layers l", ylabel="intra-sequence cosine", title="001 Fig 8", ylim=(-0.05, 1.02))
    ax.legend(fontsize=6, loc="lower right")
    return fig
