"""Figure builders of the context-axis claims (004): Fig 1 (mask slices), Figs 2–4 (the
(context, causal) grid of states), cost against sequence length (CA-7) and against segment size
(CA-6), and CA-8's NLL by inference mode."""

from __future__ import annotations

import numpy as np

from repro.core.plotting import SOURCE_STYLE, plt


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
                ax.text(
                    j,
                    i,
                    f"{int(mask[c, i, j])}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white" if mask[c, i, j] else "black",
                )
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
            ax.text(
                t,
                c,
                label,
                ha="center",
                va="center",
                fontsize=6,
                color="white" if src < 0 else "black",
                fontweight="bold" if c == t else "normal",
            )
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


def fig2_layout(S: int = 6) -> plt.Figure:
    """004 Fig 2: every slot of the (context, causal) grid is computed; the diagonal is read out."""
    grid = np.tile(np.arange(S)[:, None], (1, S))
    return axis_layout(grid, np.ones((S, S)), "004 Fig 2: output states h_{c,t} (diagonal read out)", "computed")


def fig3_layout(norms) -> plt.Figure:
    """004 Fig 3 from a real layer: `norms` (S, S), ‖h_{c,t}‖ of a 1-layer model's per-slice
    outputs through the trimmed kernel, whose strictly upper part is zero."""
    S = np.asarray(norms).shape[0]
    src = np.where(np.tril(np.ones((S, S))) > 0, np.arange(S)[:, None], -1)
    return axis_layout(
        src,
        np.asarray(norms),
        "004 Fig 3: strictly upper part zero (1-layer attention, trimmed kernel)",
        "‖attention output‖",
    )


def fig4_layout(S: int = 6, k: int = 3) -> plt.Figure:
    """004 Fig 4: segment size `k` — slot (c, t) is stored for c < t + k, and deeper slots reuse
    h_{t+k−1,t}."""
    src = np.where(np.tril(np.ones((S, S))) > 0, np.minimum(np.arange(S)[:, None], np.arange(S)[None, :] + k - 1), -1)
    return axis_layout(
        src,
        (src >= 0) * (1 + (np.arange(S)[:, None] <= np.arange(S)[None, :] + k - 1)),
        f"004 Fig 4: segment size {k} (slots c ≥ t + {k} reuse h_{{t+{k - 1},t}})",
        "stored (2) / reused (1) / zero (0)",
    )


def segment_cost_vs_k(sc) -> plt.Figure:
    """CA-6: the segment kernel's counted FLOPs and stored states against k at fixed S (`sc`: an
    `experiments.SegmentCost`)."""
    return cost_vs_length(
        {"FLOPs": (sc.ks, sc.flops), "states": (sc.ks, sc.states)},
        f"CA-6 segment kernel at S = {sc.S}: cost vs k",
        "count",
        {"FLOPs": sc.flops_slope, "states": sc.states_slope},
    )


def flops_vs_S(kc) -> plt.Figure:
    """CA-7: every kernel's counted attention FLOPs per layer against S (`kc`: an
    `experiments.KernelCost`)."""
    from repro.context_axis.experiments import curves

    return cost_vs_length(curves(kc.rows), "CA-7: attention FLOPs per layer vs S (counted)", "FLOPs", kc.slopes)


def states_vs_S(kc) -> plt.Figure:
    """CA-7: the states each layout stores per head against S (`kc`: an `experiments.KernelCost`)."""
    from repro.context_axis.experiments import curves

    return cost_vs_length(curves(kc.states), "CA-7: states stored per head vs S", "states", kc.state_slopes)
