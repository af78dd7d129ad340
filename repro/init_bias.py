"""Random-init structure of decoder transformers — 001 ("Transformers Are Born Biased") §3–4, App A.

Closed forms (App A) and the Monte-Carlo experiments that check them. Every experiment takes
explicit seeds; weights come from `repro.models.tiny` (the ablation decoder) with the init of
App B.1, inputs from `repro.data.gaussian_inputs`.

Monte-Carlo convention: an experiment is repeated over independent seeds (weights *and*
inputs redrawn); the per-seed statistic is averaged and its standard error is the
between-seed standard deviation / √seeds. Pairwise statistics inside one seed are not
independent, so seeds — not pairs — are the unit of replication.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from repro.data import gaussian_inputs
from repro.models.tiny import TinyConfig, TinyDecoder
from repro.runtime import derive_seed, generator

# --------------------------------------------------------------------------- closed forms (App A)


def arccos_map(rho: float) -> float:
    """One ReLU layer's correlation map (App A.1, Eq 3): ρ ↦ (√(1−ρ²) + (π − arccos ρ)·ρ)/π."""
    rho = min(max(rho, -1.0), 1.0)
    return (math.sqrt(1.0 - rho * rho) + (math.pi - math.acos(rho)) * rho) / math.pi


def relu_recurrence(n_layer: int, rho0: float = 0.0) -> list[float]:
    """ρ̄_1 … ρ̄_L of Prop 2 for stacked ReLU MLP0 blocks from independent inputs (ρ̄_0 = 0)."""
    out, rho = [], rho0
    for _ in range(n_layer):
        rho = arccos_map(rho)
        out.append(rho)
    return out


def attn0_after_mlp0(T: int, rho1: float = 1 / math.pi) -> float:
    """Prop 4, Case II (App A.2): Attn0∘MLP0 inter-sequence similarity T·ρ₁/(T·ρ₁ + 1 − ρ₁) = T/(T+π−1)."""
    return T * rho1 / (T * rho1 + 1.0 - rho1)


def prop5_limit(L: int) -> float:
    """Prop 5 closed form (App A.3): ρ̄′(L) = (L−2)!/(2L−4)! Σ_{k=0}^{L−2} (L−2+k)!/k! (2/3)^{L−1−k}.

    The source derives it for N = L−1 applications of the running mean; NOTES.md measured that it
    matches Monte Carlo of L−1 uniform causal averagings (the "L" counts the input as a layer).
    """
    if L < 2:
        raise ValueError("Prop 5's closed form needs L ≥ 2")
    n = L - 2
    pre = math.factorial(n) / math.factorial(2 * n)
    return pre * sum(math.factorial(n + k) / math.factorial(k) * (2 / 3) ** (L - 1 - k) for k in range(n + 1))


def prop5_approx(T: int, L: int) -> float:
    """Prop 5's approximation E ρ̄′(T, L) ≈ 1 − (1 − 1/T)/L², stated accurate for L ≥ 3."""
    return 1.0 - (1.0 - 1.0 / T) / L**2


# --------------------------------------------------------------------------- measurements


def mean_pairwise_cosine(x: torch.Tensor) -> float:
    """Mean cosine similarity over all distinct pairs of rows of x (N, d)."""
    z = torch.nn.functional.normalize(x.double(), dim=-1)
    n = z.shape[0]
    s = z.sum(0)
    return float(((s @ s) - n) / (n * (n - 1)))


@dataclass
class SeedCurves:
    """Per-seed curves (seeds × points) with their Monte-Carlo summary."""

    values: np.ndarray  # (n_seeds, n_points)

    @property
    def mean(self) -> np.ndarray:
        return self.values.mean(0)

    @property
    def sem(self) -> np.ndarray:
        n = self.values.shape[0]
        return self.values.std(0, ddof=1) / math.sqrt(n) if n > 1 else np.full(self.values.shape[1], np.nan)


def _tiny(cfg: TinyConfig, seed: int) -> TinyDecoder:
    return TinyDecoder(cfg, generator(seed)).eval()


def _last_token_states(model: TinyDecoder, x: torch.Tensor) -> list[torch.Tensor]:
    """Last-position state after every block, (N, d) each (hidden_states[0] is the input)."""
    with torch.no_grad():
        out = model(inputs_embeds=x, output_hidden_states=True)
    return [h[:, -1, :] for h in out.hidden_states[1:]]


@dataclass
class MLPStackResult:
    """001 Prop 2 / Fig 5: inter-sequence similarity after each of L blocks, per variant."""

    n_layer: int
    sizes: dict
    curves: dict[str, SeedCurves] = field(default_factory=dict)  # "relu", "tanh", "standard"
    rms: dict[str, SeedCurves] = field(default_factory=dict)  # rms of the last-token state per block
    theory: list[float] = field(default_factory=list)


MLP_VARIANTS = {
    # MLP0 (Definition 1): Y = φ(X W_up) W_down, no norm, no residual; ReLU and tanh share weights
    "relu": dict(activation="relu", norm="none", residual=False),
    "tanh": dict(activation="tanh", norm="none", residual=False),
    # the standard MLP block of Fig 5 (green): pre-LayerNorm, residual — ReLU as in the figure
    "standard": dict(activation="relu", norm="layernorm", residual=True),
}


def mlp_stack_similarity(*, d_model: int, d_ff: int, n_layer: int, n_seq: int, seeds, **_) -> MLPStackResult:
    """Inter-sequence last-token cosine similarity through stacked MLP blocks (001 §4.2, Prop 2, Fig 5).

    Inputs are independent isotropic Gaussians (Prop 2's X₁, X₂); only the last position matters
    for a position-wise MLP, so each "sequence" is one token.
    """
    res = MLPStackResult(n_layer, dict(d_model=d_model, d_ff=d_ff, n_layer=n_layer, n_seq=n_seq, seeds=list(seeds)))
    per_variant: dict[str, list[list[float]]] = {k: [] for k in MLP_VARIANTS}
    rms: dict[str, list[list[float]]] = {k: [] for k in MLP_VARIANTS}
    for seed in seeds:
        x = gaussian_inputs(n_seq, 1, d_model, generator(derive_seed("bb4-inputs", seed)))
        for name, overrides in MLP_VARIANTS.items():
            cfg = TinyConfig.merged(
                vocab_size=0, d_model=d_model, d_ff=d_ff, n_layer=n_layer, n_head=1, block="mlp",
                positions="none", final_norm=False, bias=False, **overrides,
            )
            # the same seed for every variant: identical weights (001 footnote 4)
            states = _last_token_states(_tiny(cfg, derive_seed("bb4-weights", seed)), x)
            per_variant[name].append([mean_pairwise_cosine(h) for h in states])
            rms[name].append([float(h.double().pow(2).mean().sqrt()) for h in states])
    res.curves = {k: SeedCurves(np.array(v)) for k, v in per_variant.items()}
    res.rms = {k: SeedCurves(np.array(v)) for k, v in rms.items()}
    res.theory = relu_recurrence(n_layer)
    return res


@dataclass
class TwoBlockResult:
    """001 Table 3 / Prop 4: similarity of h = MLP0(x), MLP0∘MLP0 and Attn0∘MLP0 (last token)."""

    T: int
    sizes: dict
    h: SeedCurves  # one point each; SeedCurves for a uniform SE
    mlp_mlp: SeedCurves
    attn_mlp: SeedCurves

    @property
    def theory(self) -> dict[str, float]:
        r = relu_recurrence(2)
        return {"h": r[0], "mlp_mlp": r[1], "attn_mlp": attn0_after_mlp0(self.T)}


def two_block_similarity(*, T: int, d_model: int, d_ff: int, n_seq: int, seeds, **_) -> TwoBlockResult:
    """Table 3: a shared first MLP0 (ReLU), then either a second MLP0 or Attn0 (uniform running
    mean with W_v = W_o = I, Definition 3); inter-sequence cosine of the last-token outputs."""
    rows: dict[str, list[list[float]]] = {"h": [], "mlp_mlp": [], "attn_mlp": []}
    mlp = dict(vocab_size=0, d_model=d_model, d_ff=d_ff, n_head=1, positions="none", final_norm=False,
               bias=False, norm="none", residual=False)
    for seed in seeds:
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb42-inputs", T, seed)))
        two_mlps = _tiny(TinyConfig.merged(n_layer=2, block="mlp", activation="relu", **mlp),
                         derive_seed("bb42-weights", seed))
        with torch.no_grad():
            hs = two_mlps(inputs_embeds=x, output_hidden_states=True).hidden_states
        h, y_mlp = hs[1], hs[2]  # (N, T, d): after the first and the second MLP0
        attn0 = _tiny(TinyConfig.merged(n_layer=1, block="attn", attention="uniform", value_identity=True,
                                        **{**mlp, "max_len": T}), 0)
        with torch.no_grad():
            y_attn = attn0(inputs_embeds=h, output_hidden_states=True).hidden_states[1]
        rows["h"].append([mean_pairwise_cosine(h[:, -1])])
        rows["mlp_mlp"].append([mean_pairwise_cosine(y_mlp[:, -1])])
        rows["attn_mlp"].append([mean_pairwise_cosine(y_attn[:, -1])])
    sizes = dict(T=T, d_model=d_model, d_ff=d_ff, n_seq=n_seq, seeds=list(seeds))
    return TwoBlockResult(T, sizes, **{k: SeedCurves(np.array(v)) for k, v in rows.items()})


@dataclass
class PositionalStdResult:
    """001 Eq 2 / Fig 9: std of the aggregated attention output o_i = Σ_j A_ij v_j per position."""

    sizes: dict
    std: SeedCurves  # (seeds, T): std over sequences and channels at position i (1-based)
    attn_sq: SeedCurves  # (seeds, T): mean over sequences/heads of Σ_j A_ij² (1/i if uniform)

    @property
    def positions(self) -> np.ndarray:
        return np.arange(1, self.std.values.shape[1] + 1)


def positional_std(*, d_model: int, n_head: int, T: int, n_seq: int, seeds, agg_scale: str = "none",
                   **_) -> PositionalStdResult:
    """Feed Gaussian vectors (the embedding's N(0, 0.02) statistics) through one random-init pre-LN
    softmax attention block and read o = A·V before the output projection (001 §4.4, Fig 9).
    `agg_scale` reads the same point after 001 §6.2.1's amplification/attenuation."""
    stds, sq = [], []
    for seed in seeds:
        cfg = TinyConfig.merged(vocab_size=0, d_model=d_model, n_head=n_head, n_layer=1, block="attn",
                                norm="layernorm", residual=True, positions="rope", max_len=T,
                                final_norm=False, agg_scale=agg_scale)
        model = _tiny(cfg, derive_seed("bb6-weights", seed))
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb6-inputs", seed)), std=0.02)
        captured: dict[str, torch.Tensor] = {}
        hook = model.blocks[0].attn.agg.register_forward_hook(lambda m, i, o: captured.__setitem__("o", o))
        try:
            with torch.no_grad():
                out = model(inputs_embeds=x, output_attentions=True)
        finally:
            hook.remove()
        o = captured["o"].reshape(n_seq, T, -1)  # (N, T, d)
        stds.append(o.transpose(0, 1).reshape(T, -1).std(dim=1).double().numpy())
        A = out.attentions[0]  # (N, H, T, T)
        sq.append((A.double() ** 2).sum(-1).mean(dim=(0, 1)).numpy())
    sizes = dict(d_model=d_model, n_head=n_head, T=T, n_seq=n_seq, seeds=list(seeds), agg_scale=agg_scale)
    return PositionalStdResult(sizes, SeedCurves(np.array(stds)), SeedCurves(np.array(sq)))
