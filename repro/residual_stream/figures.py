"""Figure builders of the residual-stream claims (002): direct logit attribution, term norms,
the FFN key–value rewrite error, residual norms and gradient ratios by depth, logit / tuned lens
by layer, induction curves."""

from __future__ import annotations

import numpy as np

from repro.core.plotting import SOURCE_STYLE, plt


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
    ax.set(
        xlabel="direct logit attribution",
        title=f"{title}\nΣ {len(values)} terms = {values.sum():.3f}, logit = {logit:.3f}",
    )
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
    for ax, key, label in (
        (axes[0], "ratio", "‖∂L/∂x^(1)‖ / ‖∂L/∂x^(L−1)‖"),
        (axes[1], "param_ratio", "‖∇W block 1‖ / ‖∇W block L‖"),
    ):
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
        (line,) = ax.plot(x, med, marker="o", ms=2, label=name)
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
        (line,) = ax.plot(x, logit_kl, marker="o", ms=2, label=f"{name} logit lens")
        ax.plot(x, tuned_kl, marker="s", ms=2, ls="--", color=line.get_color(), label=f"{name} tuned lens")
    ax.set_yscale("log")
    ax.set(xlabel="layer", ylabel="KL(final ‖ lens) [nats], held-out", title="Tuned lens vs logit lens")
    ax.legend(fontsize=7)
    return fig


def lens_training_curves(fits: dict) -> plt.Figure:
    """RS-8's stop: the tuned lens's mean KL on held-out training windows against its Adam step
    (step 0: its start), one line per model's mean over layers and thin lines for its first,
    middle and last layer; the marker is where training stopped."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for name, f in fits.items():
        kl = f.held_kl.cpu().numpy()  # (evaluations, L)
        (line,) = ax.plot(f.steps, kl.mean(1), marker="o", ms=3, label=f"{name}, mean over layers")
        for l in sorted({0, kl.shape[1] // 2, kl.shape[1] - 1}):
            ax.plot(f.steps, kl[:, l], lw=0.8, ls=":", color=line.get_color())
            ax.annotate(f"layer {l}", (f.steps[-1], kl[-1, l]), fontsize=6, color=line.get_color())
        ax.axvline(f.stopped_at, color=line.get_color(), lw=0.6, ls="--")
    ax.set_yscale("log")
    ax.set(xlabel="Adam step", ylabel="KL(final ‖ tuned lens) [nats], held-out", title="Tuned lens: held-out stop")
    ax.legend(fontsize=7)
    return fig


def induction_curves(curves: dict, chance: float | None = None) -> plt.Figure:
    """002 "Attention Head Composition": loss on the repeated half of random sequences during
    training, one-layer vs two-layer attention-only models (one line per seed)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    colors = {}
    for (name, seed), (steps, losses) in curves.items():
        color = colors.setdefault(name, f"C{len(colors)}")
        ax.plot(
            steps,
            losses,
            color=color,
            alpha=0.8,
            label=name if seed == min(s for n, s in curves if n == name) else None,
        )
    if chance is not None:
        ax.axhline(chance, **SOURCE_STYLE, label="uniform guess ln V")
    ax.set(xlabel="training step", ylabel="loss on repeated half [nats]", title="Induction needs two layers")
    ax.legend(fontsize=7)
    return fig


def term_norms_at_last_token(name: str, dec) -> plt.Figure:
    """RS-1: `term_norm_heatmap` of a `Decomposition` at the passage's last token."""
    t = dec.residual.shape[1] - 1
    return term_norm_heatmap(
        dec.heads[0, :, :, t].norm(dim=-1).cpu().numpy(),
        dec.ffn[0, :, t].norm(dim=-1).cpu().numpy(),
        f"{name}: log10 ‖term‖ at the last token\n{len(dec.names())} terms sum to x^(L)",
    )


def dla_at_last_token(name: str, att, logits) -> plt.Figure:
    """RS-2: `dla_bars` of an `Attribution` (with the norm / head-bias constant as one more term)
    at the last position, next to the model's logit `logits` (B, T) there."""
    t = att.per_term.shape[-1] - 1
    return dla_bars(
        att.names + ["norm/head bias"],
        att.per_term[0, :, t].tolist() + [float(att.constant[0, t])],
        float(logits[0, t]),
        f"{name}: DLA of the next token at the last position",
    )
