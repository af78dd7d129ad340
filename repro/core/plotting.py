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


# --------------------------------------------------------------------------- 001 §3 (Table 1 probes)


def _rank_bars(ax, counts, n, label, color, baseline=None):
    ranks = np.arange(1, len(counts) + 1)
    ax.bar(ranks, np.asarray(counts) / n * 100, color=color, alpha=0.75, label=label)
    if baseline is not None:
        ax.plot(ranks, np.asarray(baseline) / n * 100, color="tab:red", linestyle="--", lw=1.2,
                label="uniform sampling (empirical top-rank frequencies)")
    ax.set(xlabel="rank", ylabel="frequency (%)")


def fig1a_preference(run, length: int, baseline) -> plt.Figure:
    """001 Fig 1a: frequencies of the most predicted next tokens, by rank, against the sorted
    counts of N uniform draws from the vocabulary (red dashed, as in the source)."""
    i = run.at(length)
    n = run.sizes["n_seq"]
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    _rank_bars(ax, run.rank_counts[i], n, f"random-init {run.arch}, seed {run.seed}", "tab:blue", baseline)
    ratio = run.rank_counts[i][0] / baseline[0]
    ax.set_title(f"001 Fig 1a (T={length}, N={n}, |V|={run.sizes['vocab_size']}): top token {ratio:.1f}× "
                 "the uniform top (source: 58.5×)", fontsize=8)
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


def table1_frequencies(runs, small_runs=None) -> plt.Figure:
    """001 Table 1 as a plot: top-1 frequency (%) vs probe length per (arch, seed), with the
    source's rows (a) and (b) for seeds 42 / 43 drawn as dotted reference lines."""
    source = {("rope-gpt2", 42): ([64, 256, 1024], [2.60, 4.85, 5.20]),
              ("rope-gpt2", 43): ([64, 256, 1024], [3.00, 5.25, 6.75]),
              ("llama", 42): ([64, 256, 1024], [0.06, 0.06, 0.07]),
              ("llama", 43): ([64, 256, 1024], [0.09, 0.06, 0.07])}
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    colors = {"rope-gpt2": "tab:blue", "llama": "tab:orange"}
    for (arch, seed), run in runs.items():
        ls = "-" if seed == 42 else "--"
        lab = f"{arch} {run.sizes['n_layer']}L seed {seed} (measured)"
        ax.plot(run.lengths, [t.freq * 100 for t in run.top1], marker="o", color=colors[arch], ls=ls, label=lab)
        if (arch, seed) in source:
            xs, ys = source[(arch, seed)]
            ax.plot(xs, ys, color=colors[arch], ls=":", marker="x", lw=1,
                    label=f"source Table 1 {arch} seed {seed}")
    for (arch, seed), run in (small_runs or {}).items():
        ax.plot(run.lengths, [t.freq * 100 for t in run.top1], marker="s", color="tab:green",
                ls="-" if seed == 42 else "--", label=f"{arch} {run.sizes['n_layer']}L seed {seed} (measured)")
    from repro.born_biased.preference_probe import uniform_rank_counts
    from repro.harness.runtime import generator

    sizes = next(iter(runs.values())).sizes
    ax.axhline(100 / sizes["vocab_size"], color="grey", lw=0.6, label="uniform 1/|V|")
    # the floor at our N: the top-1 frequency of N uniform draws (a model without preference)
    floor = uniform_rank_counts(sizes["n_seq"], sizes["vocab_size"], generator(1), ranks=1)[0] / sizes["n_seq"]
    ax.axhline(100 * floor, color="tab:red", lw=0.8, ls="--", label=f"top-1 of N={sizes['n_seq']} uniform draws")
    ax.set(xscale="log", yscale="log", xlabel="sequence length T", ylabel="top-1 frequency (%)",
           title="001 Table 1: top-1 next-token frequency")
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
    ax.set(xlabel="block (0 = embeddings)", ylabel="avg pairwise cosine (last token)",
           title=f"001 Fig 2 (random tokens, T={length})")
    ax.legend(fontsize=7)
    return fig


def fig_direction_agreement(res, source_rate: float = 0.76) -> plt.Figure:
    """001 Finding 2.2: per model, favourite token vs contraction-direction token; agreement rate
    with its Wilson 95% interval against the source's 76%."""
    from repro.core.stats import binomial_ci

    k, m = int(res.agree.sum()), len(res.agree)
    ci = binomial_ci(k, m)
    fig, (a, b) = plt.subplots(1, 2, figsize=(7.2, 3.2), gridspec_kw=dict(width_ratios=[2.2, 1]))
    xs = np.arange(m)
    a.scatter(xs[res.agree], res.favourite_count[res.agree], color="tab:green", s=14, label="direction = favourite")
    a.scatter(xs[~res.agree], res.favourite_count[~res.agree], color="tab:red", marker="x", s=14, label="differs")
    a.set(xlabel="model (seed)", ylabel="favourite token's count", title="per model")
    a.legend(fontsize=7)
    b.bar([0], [k / m], yerr=[[k / m - ci.low], [ci.high - k / m]], color="tab:blue", alpha=0.7, capsize=4)
    b.axhline(source_rate, **SOURCE_STYLE, label="source: 76%")
    b.set(xticks=[], ylim=(0, 1), ylabel="agreement rate", title=f"{k}/{m}, 95% CI")
    b.legend(fontsize=7)
    fig.suptitle(f"001 Finding 2.2 ({res.sizes['arch']} {res.sizes['n_layer']}L, N={res.sizes['n_seq']}, "
                 f"T={res.sizes['T']})", fontsize=9)
    fig.tight_layout()
    return fig


def fig_seed_favourites(runs, length: int) -> plt.Figure:
    """001 Finding 1.3: how often each seed's favourite token is predicted by every model
    (rows: whose favourite; columns: which model predicts) — a diagonal means seed-specific."""
    keys = list(runs)
    n = next(iter(runs.values())).sizes["n_seq"]
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


def fig3_ablation_histograms(runs, baseline) -> plt.Figure:
    """001 Fig 3: next-token rank frequencies of full, attention-only and MLP-only models."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    ranks = np.arange(1, len(baseline) + 1)
    for variant, run in runs.items():
        ax.plot(ranks, run.rank_counts / run.sizes["n_seq"] * 100, marker="o", ms=2.5,
                color=ABLATION_COLORS[variant], label=variant)
    ax.plot(ranks, np.asarray(baseline) / next(iter(runs.values())).sizes["n_seq"] * 100, color="tab:red",
            ls="--", label="uniform sampling")
    ax.set(xlabel="rank", ylabel="frequency (%)", yscale="log", title="001 Fig 3 (Gaussian inputs, one seed)")
    ax.legend(fontsize=7)
    return fig


def fig7_layerwise(curves: dict) -> plt.Figure:
    """001 Fig 7: inter-sequence cosine after each block for the three variants (mean ± 2 SE
    over seeds); `curves` maps variant → SeedCurves (seeds × layers)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for variant, c in curves.items():
        _band(ax, np.arange(1, c.values.shape[1] + 1), c, variant, ABLATION_COLORS[variant], marker="o", ms=3)
    ax.set(xlabel="block", ylabel="avg pairwise cosine (last token)", title="001 Fig 7")
    ax.legend(fontsize=7)
    return fig


def fig4_mlp_only(mean, std) -> plt.Figure:
    """001 Fig 4: mean and standard deviation (over pairs) of the inter-sequence cosine after each
    MLP block of the MLP-only model."""
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
    ax.bar(range(len(names)), [means[n] for n in names], color=[ABLATION_COLORS[n] for n in names], alpha=0.8,
           label="measured")
    ax.scatter(range(len(names)), [source[n] for n in names], marker="x", color="black", zorder=3,
               label="source Table 2")
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
        ax.set_title(f"{'Norm' if key == 'norm' else 'NoNorm'}: input std {s:.3g} (source "
                     f"{'0.55' if key == 'norm' else '0.011'})", fontsize=8)
        ax.set_xlabel("GELU input")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"001 Fig 6 (d={res.sizes['d_model']})", fontsize=9)
    fig.tight_layout()
    return fig


def fig8_intra_sequence(results, closed_form) -> plt.Figure:
    """001 Fig 8: intra-sequence cosine after each attention layer — standard attention (solid),
    Attn0 (dashed) — for each T, ±1 std over sequences as in the source; Prop 5's closed form
    (dotted) and its approximation (dash-dot, per T)."""
    from repro.born_biased.init_bias import prop5_approx

    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    colors = ["tab:red", "tab:blue", "tab:green"]
    for res, color in zip(results, colors):
        L = res.standard.values.shape[1]
        layers = np.arange(1, L + 1)
        for curve, sd, ls, name in ((res.standard, res.standard_seq_std, "-", "standard"),
                                    (res.attn0, res.attn0_seq_std, "--", "Attn0")):
            ax.plot(layers, curve.mean, color=color, ls=ls, label=f"{name}, T={res.T}")
            ax.fill_between(layers, curve.mean - sd, curve.mean + sd, color=color, alpha=0.12, lw=0)
        ax.plot(layers[2:], [prop5_approx(res.T, l) for l in layers[2:]], color=color, ls="-.", lw=0.8,
                label=f"1 − (1 − 1/T)/L², T={res.T}")
    ax.plot(np.arange(1, len(closed_form) + 1), closed_form, **SOURCE_STYLE, label="Prop 5 closed form ρ̄′(l+1)")
    ax.set(xlabel="attention layers l", ylabel="intra-sequence cosine", title="001 Fig 8", ylim=(-0.05, 1.02))
    ax.legend(fontsize=6, loc="lower right")
    return fig


# --------------------------------------------------------------------------- SeedPrint (001 §5–6.1)


def _log10p(p: float) -> float:
    return -np.log10(max(p, 1e-300))


def seedprint_pvalues(rows, title: str, alpha: float = 0.01) -> plt.Figure:
    """001 Tables 4–6 as bars: −log10 p per model pair for Algorithm 1 (t and U tests) and the
    released variant; green labels same lineage, red different; the α line is the verdict."""
    labels = [r["pair"] for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(5.2, 0.9 * len(rows) + 2), 3.6))
    for i, (key, name, color) in enumerate((("p_t", "Alg. 1 t-test", "tab:blue"), ("p_u", "Alg. 1 U-test", "tab:cyan"),
                                            ("p_released", "released variant", "tab:orange"))):
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
    for taus, name, color in ((lineage, "same init (seed 42 → checkpoints)", "tab:blue"),
                              (baseline, "other seed (123) baseline", "tab:red")):
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
    ax.plot(grid, np.exp(-0.5 * (grid / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi)), **SOURCE_STYLE,
            label=f"N(0, τ_std(n={n})²)")
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
        ax.bar(x + (i - 0.5) * 0.38, [r["baselines"][k].similarity for k in methods], width=0.38, color=color,
               label=r["pair"] + (" (same lineage)" if r["same"] else " (distractor)"))
    ax.axhline(threshold, **SOURCE_STYLE, label=f"threshold {threshold}")
    ax.set_xticks(x, methods)
    ax.set(ylabel="similarity", title="Table 5 baselines after the code shift")
    ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------------------- 002 residual stream


def dla_bars(names, values, logit: float, title: str, top: int = 15) -> plt.Figure:
    """002 "Direct Logit Attribution" for one token: the `top` terms by |DLA| (blue promotes the
    token, red suppresses it) and the sum of all terms next to the model's logit."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(-np.abs(values))[:top]
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    y = np.arange(len(order))[::-1]
    ax.barh(y, values[order], color=["tab:blue" if v > 0 else "tab:red" for v in values[order]])
    ax.set_yticks(y, [names[i] for i in order], fontsize=7)
    ax.axvline(0, color="grey", lw=0.6)
    ax.set(xlabel="direct logit attribution", title=f"{title}\nΣ {len(values)} terms = {values.sum():.3f}, "
                                                   f"logit = {logit:.3f}")
    return fig


def term_norm_heatmap(per_head, ffn, title: str) -> plt.Figure:
    """002 "Residual Stream Decomposition" for one token: log10 ‖term‖ per layer (rows) for every
    head and the FFN (columns) — which of the 1 + L·H + L terms write most."""
    grid = np.concatenate([np.asarray(per_head, dtype=float), np.asarray(ffn, dtype=float)[:, None]], axis=1)
    fig, ax = plt.subplots(figsize=(5.2, 4.2))
    im = ax.imshow(np.log10(grid + 1e-12), aspect="auto", cmap="viridis")
    ax.set_xticks(range(grid.shape[1]), [f"H{h}" for h in range(grid.shape[1] - 1)] + ["FFN"], fontsize=6)
    ax.set(xlabel="term", ylabel="layer", title=title)
    fig.colorbar(im, ax=ax)
    return fig


def ffn_rewrite_error(errors: dict) -> plt.Figure:
    """002 "FFN as Key-Value Memory": per layer, |Σ_i c_i v_i − FFN(x)| over its float32 bound."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for name, ratios in errors.items():
        ax.plot(np.linspace(0, 1, len(ratios)), np.maximum(ratios, 1e-6), marker="o", ms=3, label=name)
    ax.axhline(1.0, **SOURCE_STYLE, label="float32 bound")
    ax.set_yscale("log")
    ax.set(xlabel="layer / L", ylabel="error / Higham bound", title="FFN(x) = Σ φ(k_i·x)·v_i per layer")
    ax.legend(fontsize=7)
    return fig


def residual_norm_by_layer(curves: dict) -> plt.Figure:
    """002 "Failure Mode" of pre-norm: median residual norm ‖x^(l)‖ per layer (log scale), one
    curve per model; layer axis normalised to [0, 1] so models of different depth share it."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for name, norms in curves.items():
        norms = np.asarray(norms, dtype=float)
        ax.plot(np.linspace(0, 1, len(norms)), norms, marker="o", ms=2, label=name)
    ax.set_yscale("log")
    ax.set(xlabel="layer / L", ylabel="median ‖x^(l)‖", title="Residual norm grows with depth (pre-norm)")
    ax.legend(fontsize=7)
    return fig


def gradient_ratio_by_depth(rows) -> plt.Figure:
    """002 "Pre-Norm Gradient Flow": ‖∂L/∂x^(1)‖ / ‖∂L/∂x^(L−1)‖ at random init vs depth, pre vs post
    norm (one marker per seed), and the first/last-block weight-gradient ratio (Xiong et al. 2020)."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4))
    for ax, key, label in ((axes[0], "ratio", "‖∂L/∂x^(1)‖ / ‖∂L/∂x^(L−1)‖"),
                           (axes[1], "param_ratio", "‖∇W block 1‖ / ‖∇W block L‖")):
        for pos, color in (("pre", "tab:blue"), ("post", "tab:red")):
            pts = [(r["depth"], v) for r in rows if r["position"] == pos for v in r[key]]
            ax.scatter(*zip(*pts), color=color, s=12, label=f"{pos}-norm")
            depths = sorted({d for d, _ in pts})
            ax.plot(depths, [np.mean([v for d, v in pts if d == dd]) for dd in depths], color=color)
        ax.axhline(1, color="grey", lw=0.6)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set(xlabel="depth L", ylabel=label)
        ax.legend(fontsize=7)
    fig.suptitle("Gradient reaching the first layer, random init")
    fig.tight_layout()
    return fig


def lens_rank_by_layer(curves: dict) -> plt.Figure:
    """002 "Logit Lens": median rank (and interquartile band) of the correct next token per layer."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for name, (med, q1, q3) in curves.items():
        x = np.linspace(0, 1, len(med))
        line, = ax.plot(x, med, marker="o", ms=2, label=name)
        ax.fill_between(x, q1, q3, color=line.get_color(), alpha=0.15, lw=0)
    ax.set_yscale("log")
    ax.set(xlabel="layer / L", ylabel="rank of the correct next token", title="Logit lens (002): rank by depth")
    ax.legend(fontsize=7)
    return fig


def lens_kl_by_layer(curves: dict) -> plt.Figure:
    """002 / Belrose et al. 2023 Fig 1-style: KL(final ‖ lens) per layer, logit vs tuned lens."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for name, (logit_kl, tuned_kl) in curves.items():
        x = np.arange(len(logit_kl))
        line, = ax.plot(x, logit_kl, marker="o", ms=2, label=f"{name} logit lens")
        ax.plot(x, tuned_kl, marker="s", ms=2, ls="--", color=line.get_color(), label=f"{name} tuned lens")
    ax.set_yscale("log")
    ax.set(xlabel="layer", ylabel="KL(final ‖ lens) [nats], held-out", title="Tuned lens vs logit lens")
    ax.legend(fontsize=7)
    return fig


def induction_curves(curves: dict, chance: float | None = None) -> plt.Figure:
    """002 "Attention Head Composition": loss on the repeated half of random sequences during
    training, one-layer vs two-layer attention-only models (one line per seed)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    colors = {}
    for (name, seed), (steps, losses) in curves.items():
        color = colors.setdefault(name, f"C{len(colors)}")
        ax.plot(steps, losses, color=color, alpha=0.8, label=name if seed == min(s for n, s in curves if n == name) else None)
    if chance is not None:
        ax.axhline(chance, **SOURCE_STYLE, label="uniform guess ln V")
    ax.set(xlabel="training step", ylabel="loss on repeated half [nats]", title="Induction needs two layers")
    ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------------------- 003 spectral filters


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


def nll_vs_retained(curves: dict, base: float, title: str, xlabel: str = "retained bands (of 20)",
                    source: tuple | None = None) -> plt.Figure:
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
    fig, axes = plt.subplots(1, n, figsize=(2.4 * n + 1.2, 0.28 * len(rows) + 1.8), squeeze=False)
    vmax = max(float(np.nanmax(np.asarray(g))) for g in grids.values())
    for ax, (label, g) in zip(axes[0], grids.items()):
        im = ax.imshow(np.asarray(g), aspect="auto", cmap="viridis", vmin=base, vmax=max(vmax, base + 1e-3),
                       interpolation="nearest", origin="lower")
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
        ax.plot(x, norm * np.sqrt(np.clip(1 - darkf ** 2, 0, None)), "C0:", label="U-light part")
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
    for ax, h, al, name in ((a, udr_h, udr_all, "U-dark ratio (eq. 4)"), (b, kdp_h, kdp_all, "key dot product (eq. 5)")):
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
    ax.bar(range(len(names)), means, color=["0.6", "C3", "C7", "C0"][:len(names)])
    for i, n in enumerate(names):
        ax.plot([i] * len(reps[n]), reps[n], "k.", ms=4)
    ax.set_xticks(range(len(names)), names)
    ax.set(ylabel="rep-3 (share of repeated 3-grams)", ylim=(0, 1.02), title=title)
    return fig


# --------------------------------------------------------------------------- 000 causal shift


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
    """000 Fig 3: cosine to the input / output embedding and the normalised input→output
    projection by relative depth, one line per model."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for i, (name, p) in enumerate(profiles.items()):
        x = np.arange(p.n_layers + 1) / p.n_layers
        a.plot(x, p.mean("cos_in"), color=f"C{i}", ls="-", label=f"{name}: cos(h, e_in)")
        a.plot(x, p.mean("cos_out"), color=f"C{i}", ls="--", label=f"{name}: cos(h, e_out)")
        b.plot(x, p.mean("projection"), color=f"C{i}", label=name)
    a.set(xlabel="relative depth", ylabel="cosine")
    b.axhline(0.5, color="grey", lw=0.6)
    b.set(xlabel="relative depth", ylabel="projection (0 = input, 1 = output)")
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


def gate_distribution(history: dict, title: str) -> plt.Figure:
    """000 Fig 5: the learned gate's distribution over layers along training."""
    steps = sorted(history)
    grid = np.stack([history[s] for s in steps])
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    im = ax.imshow(grid.T, aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=max(0.5, grid.max()),
                   interpolation="nearest")
    ax.set_xticks(range(len(steps)), [str(s) for s in steps], fontsize=7)
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


# --------------------------------------------------------------------------- 004 context axis


def mask_slices(mask, slices, title: str) -> plt.Figure:
    """004 Fig 1: slices of Algorithm 1's mask M[c] (rows: query i, columns: key j; dark = 1,
    masked), the diagonal query i = c outlined."""
    mask = np.asarray(mask, dtype=float)
    fig, axes = plt.subplots(1, len(slices), figsize=(1.9 * len(slices) + 0.4, 2.3), squeeze=False)
    S = mask.shape[-1]
    for ax, c in zip(axes[0], slices):
        ax.imshow(mask[c], cmap="Greys", vmin=0, vmax=1.6, interpolation="nearest")
        for i in range(S):
            for j in range(S):
                ax.text(j, i, f"{int(mask[c, i, j])}", ha="center", va="center", fontsize=6,
                        color="white" if mask[c, i, j] else "black")
        ax.add_patch(plt.Rectangle((-0.5, c - 0.5), S, 1, fill=False, ec="C3", lw=1.2))
        ax.set_xticks(range(S))
        ax.set_yticks(range(S))
        ax.tick_params(labelsize=6)
        ax.set_title(f"context axis c = {c}", fontsize=8)
        ax.set_xlabel("key j", fontsize=7)
    axes[0][0].set_ylabel("query i", fontsize=7)
    fig.suptitle(title, fontsize=9)
    return fig


def axis_layout(source, values, title: str, cbar: str) -> plt.Figure:
    """004 Fig 2–4: the (context c, causal t) grid of states. Colour: `values` (e.g. ‖h_{c,t}‖,
    0 where nothing is stored); text: which computed state the slot holds, from `source`
    ((C, S) ints, the slice whose state is there; −1 = zero)."""
    source = np.asarray(source)
    values = np.asarray(values, dtype=float)
    S = source.shape[1]
    fig, ax = plt.subplots(figsize=(0.55 * S + 1.6, 0.5 * S + 0.9))
    im = ax.imshow(values, cmap="viridis", interpolation="nearest")
    for c in range(source.shape[0]):
        for t in range(S):
            src = int(source[c, t])
            label = "0" if src < 0 else f"h{src},{t}"
            ax.text(t, c, label, ha="center", va="center", fontsize=6, color="white" if src < 0 else "black",
                    fontweight="bold" if c == t else "normal")
    ax.set_xticks(range(S), [f"t{t}" for t in range(S)], fontsize=7)
    ax.set_yticks(range(source.shape[0]), [f"c{c}" for c in range(source.shape[0])], fontsize=7)
    ax.set(xlabel="causal axis (L_seq)", ylabel="context axis (L_context)", title=title)
    fig.colorbar(im, ax=ax, label=cbar, shrink=0.8)
    return fig


def cost_vs_length(curves: dict, title: str, ylabel: str, slopes: dict | None = None) -> plt.Figure:
    """Cost against sequence length S on log–log axes, one line per kernel (with its fitted
    log–log slope in the legend)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for j, (name, (xs, ys)) in enumerate(curves.items()):
        label = name if not slopes or name not in slopes else f"{name} (slope {slopes[name]:.2f})"
        ax.plot(xs, ys, marker="o", ms=3, label=label, color=f"C{j}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel="sequence length S", ylabel=ylabel, title=title)
    ax.legend(fontsize=6)
    return fig


def nll_by_inference(table: dict, modes: list, title: str, reference: float | None = None) -> plt.Figure:
    """CA-8: held-out NLL of each trained variant (lines) under each inference mode (x), mean
    over seeds with ±1 sd bars; `reference`: the causal baseline under causal inference."""
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    x = np.arange(len(modes))
    for j, (variant, rows) in enumerate(table.items()):
        mean = np.array([rows[m][0] for m in modes])
        sd = np.array([rows[m][1] for m in modes])
        ax.errorbar(x + (j - 1) * 0.08, mean, yerr=sd, marker="o", ms=3, capsize=2, label=variant, color=f"C{j}")
    if reference is not None:
        ax.axhline(reference, **SOURCE_STYLE, label="causal model, causal inference")
    ax.set_xticks(x, modes, fontsize=7)
    ax.set(xlabel="inference", ylabel="held-out NLL (nats/token)", title=title)
    ax.legend(fontsize=6)
    return fig


# --------------------------------------------------------------------------- 001 §6.2 (attention sinks)


def sink_rate_by_length(series: dict, title: str) -> plt.Figure:
    """001 Fig 12: sink rate against sequence length, one line per model; `series` maps a
    label to (lengths, rates)."""
    fig, ax = plt.subplots(figsize=(5.4, 3.6))
    for label, (lengths, rates) in series.items():
        ax.plot(lengths, rates, marker="o", ms=4, label=label)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="sequence length T", ylabel="sink rate (share of heads with α¹ > ε)", ylim=(-0.02, 1.02),
           title=title)
    ax.title.set_fontsize(8)
    ax.legend(fontsize=7)
    return fig
