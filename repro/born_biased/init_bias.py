"""Random-init structure of decoder transformers — 001 ("Transformers Are Born Biased") §3–4, App A.

Closed forms (App A) and the Monte-Carlo experiments that check them. Every experiment takes
explicit seeds; weights come from `repro.core.models.tiny` (the ablation decoder) with the init of
App B.1, inputs from `repro.core.data.gaussian_inputs`.

Monte-Carlo convention: an experiment is repeated over independent seeds (weights *and*
inputs redrawn); the per-seed statistic is averaged and its standard error is the
between-seed standard deviation / √seeds. Pairwise statistics inside one seed are not
independent, so seeds — not pairs — are the unit of replication.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np
import scipy.special
import scipy.stats
import torch

from repro.born_biased import preference_probe as probe
from repro.core import lens, memo
from repro.core.data import gaussian_inputs, random_tokens
from repro.core.models.hf import build_model
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.core.stats import PositionalStdResult, SeedCurves, Top1, std_by_position, t_two_sided_p, top1_preference
from repro.ground.runtime import derive_seed, generator, resolve_dtype

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


def _tiny(cfg: TinyConfig, seed: int, device: torch.device | str = "cpu") -> TinyDecoder:
    """A TinyDecoder drawn on the CPU from `seed` (the same weights on every device), then put on `device`."""
    return TinyDecoder(cfg, generator(seed)).eval().to(device)


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

    def relu_rms_ratio(self) -> float:
        """rms of ReLU MLP0's last-token state after block L over after block 1 (001 Fig 5's footnote 5:
        without norm or residual the signal's scale shrinks with depth)."""
        return float(self.rms["relu"].mean[-1] / self.rms["relu"].mean[0])


def bonferroni_zero_mean_p(c: SeedCurves) -> float:
    """001 Prop 2 (§4.2): E ρ̄ = 0 for tanh. Per block, the two-sided t-test of "mean over models
    = 0" (df = models − 1), Bonferroni over the blocks; the smallest corrected p, capped at 1."""
    t = c.mean / c.sem
    return float(min(1.0, (t_two_sided_p(t, len(c.values) - 1) * len(t)).min()))


MLP_VARIANTS = {
    # MLP0 (Definition 1): Y = φ(X W_up) W_down, no norm, no residual; ReLU and tanh share weights
    "relu": dict(activation="relu", norm="none", residual=False),
    "tanh": dict(activation="tanh", norm="none", residual=False),
    # the standard MLP block of Fig 5 (green): pre-LayerNorm, residual — ReLU as in the figure
    "standard": dict(activation="relu", norm="layernorm", residual=True),
}


@memo.cached("bb-mlp-stack")
def mlp_stack_similarity(
    *, d_model: int, d_ff: int, n_layer: int, n_seq: int, seeds, device: torch.device | str = "cpu"
) -> MLPStackResult:
    """Inter-sequence last-token cosine similarity through stacked MLP blocks (001 §4.2, Prop 2, Fig 5).

    Inputs are independent isotropic Gaussians (Prop 2's X₁, X₂); only the last position matters
    for a position-wise MLP, so each "sequence" is one token.
    """
    res = MLPStackResult(n_layer, dict(d_model=d_model, d_ff=d_ff, n_layer=n_layer, n_seq=n_seq, seeds=list(seeds)))
    per_variant: dict[str, list[list[float]]] = {k: [] for k in MLP_VARIANTS}
    rms: dict[str, list[list[float]]] = {k: [] for k in MLP_VARIANTS}
    for seed in seeds:
        x = gaussian_inputs(n_seq, 1, d_model, generator(derive_seed("bb4-inputs", seed))).to(device)
        for name, overrides in MLP_VARIANTS.items():
            cfg = TinyConfig.merged(
                vocab_size=0,
                d_model=d_model,
                d_ff=d_ff,
                n_layer=n_layer,
                n_head=1,
                block="mlp",
                positions="none",
                final_norm=False,
                bias=False,
                **overrides,
            )
            # the same seed for every variant: identical weights (001 footnote 4)
            states = _last_token_states(_tiny(cfg, derive_seed("bb4-weights", seed), device), x)
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


@memo.cached("bb-two-blocks")
def two_block_similarity(
    *, T: int, d_model: int, d_ff: int, n_seq: int, seeds, device: torch.device | str = "cpu"
) -> TwoBlockResult:
    """Table 3: a shared first MLP0 (ReLU), then either a second MLP0 or Attn0 (uniform running
    mean with W_v = W_o = I, Definition 3); inter-sequence cosine of the last-token outputs."""
    rows: dict[str, list[list[float]]] = {"h": [], "mlp_mlp": [], "attn_mlp": []}
    mlp = dict(
        vocab_size=0,
        d_model=d_model,
        d_ff=d_ff,
        n_head=1,
        positions="none",
        final_norm=False,
        bias=False,
        norm="none",
        residual=False,
    )
    for seed in seeds:
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb42-inputs", T, seed))).to(device)
        two_mlps = _tiny(
            TinyConfig.merged(n_layer=2, block="mlp", activation="relu", **mlp),
            derive_seed("bb42-weights", seed),
            device,
        )
        with torch.no_grad():
            hs = two_mlps(inputs_embeds=x, output_hidden_states=True).hidden_states
        h, y_mlp = hs[1], hs[2]  # (N, T, d): after the first and the second MLP0
        attn0 = _tiny(
            TinyConfig.merged(
                n_layer=1, block="attn", attention="uniform", value_identity=True, **{**mlp, "max_len": T}
            ),
            0,
            device,
        )
        with torch.no_grad():
            y_attn = attn0(inputs_embeds=h, output_hidden_states=True).hidden_states[1]
        rows["h"].append([mean_pairwise_cosine(h[:, -1])])
        rows["mlp_mlp"].append([mean_pairwise_cosine(y_mlp[:, -1])])
        rows["attn_mlp"].append([mean_pairwise_cosine(y_attn[:, -1])])
    sizes = dict(T=T, d_model=d_model, d_ff=d_ff, n_seq=n_seq, seeds=list(seeds))
    return TwoBlockResult(T, sizes, **{k: SeedCurves(np.array(v)) for k, v in rows.items()})


@memo.cached("bb-positional-std")
def positional_std(
    *, d_model: int, n_head: int, T: int, n_seq: int, seeds, agg_scale: str = "none", device: torch.device | str = "cpu"
) -> PositionalStdResult:
    """Feed Gaussian vectors (the embedding's N(0, 0.02) statistics) through one random-init pre-LN
    softmax attention block and read o = A·V before the output projection (001 §4.4, Fig 9).
    `agg_scale` reads the same point after 001 §6.2.1's amplification/attenuation."""
    stds, sq, vstds = [], [], []
    for seed in seeds:
        cfg = TinyConfig.merged(
            vocab_size=0,
            d_model=d_model,
            n_head=n_head,
            n_layer=1,
            block="attn",
            norm="layernorm",
            residual=True,
            positions="rope",
            max_len=T,
            final_norm=False,
            agg_scale=agg_scale,
        )
        model = _tiny(cfg, derive_seed("bb6-weights", seed), device)
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb6-inputs", seed)), std=0.02).to(device)
        # o = A·V (after agg_scale) and V, at the tiny decoder's hook points
        with lens.hooks(model, residual=False, modules=["attn.agg", "attn.v_proj"]) as cap, torch.no_grad():
            out = model(inputs_embeds=x, output_attentions=True)
        o = cap.modules["attn.agg"][0].reshape(n_seq, T, -1)  # (N, T, d)
        stds.append(std_by_position(o).double().cpu().numpy())
        v = cap.modules["attn.v_proj"][0].reshape(n_seq, T, -1)
        vstds.append(std_by_position(v).double().cpu().numpy())
        A = out.attentions[0]  # (N, H, T, T)
        sq.append((A.double() ** 2).sum(-1).mean(dim=(0, 1)).cpu().numpy())
    sizes = dict(d_model=d_model, n_head=n_head, T=T, n_seq=n_seq, seeds=list(seeds), agg_scale=agg_scale)
    return PositionalStdResult(sizes, SeedCurves(np.array(stds)), SeedCurves(np.array(sq)), SeedCurves(np.array(vstds)))


# --------------------------------------------------------------------------- intra-sequence (App A.3)


def attn0_exact(T: int, n_avg: int) -> tuple[float, float]:
    """Exact infinite-width intra-sequence similarity after `n_avg` causal running means (Attn0,
    Definition 3) of i.i.d. isotropic inputs at finite T, by enumerating the T×T covariance:
    with M the averaging matrix (M_ij = 1/i, j ≤ i), Σ = Mᵏ Mᵏᵀ and ρ_ij = Σ_ij / √(Σ_ii Σ_jj).
    Returns (mean over pairs i ≠ j, mean over all T² pairs as in A.3's ρ̄′(T, L))."""
    if T < 2 or n_avg < 0:
        raise ValueError(f"attn0_exact needs T >= 2 and n_avg >= 0, got T={T}, n_avg={n_avg}")
    M = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    A = np.linalg.matrix_power(M, n_avg)
    C = A @ A.T
    s = np.sqrt(np.diag(C))
    R = C / np.outer(s, s)
    return float((R.sum() - T) / (T * (T - 1))), float(R.mean())


def attn0_exact_depths(T: int, n_max: int) -> np.ndarray:
    """`attn0_exact(T, n)[0]` for n = 1 … n_max at once, in O(T²) per averaging: the rows a_i of
    Mⁿ are updated by a running mean, and the mean of ρ_ij = ⟨a_i, a_j⟩/(‖a_i‖‖a_j‖) over i ≠ j is
    (‖Σ_i a_i/‖a_i‖‖² − T) / (T(T−1)), so the T×T covariance is never formed (T = 2048 in seconds)."""
    if T < 2 or n_max < 1:
        raise ValueError(f"attn0_exact_depths needs T >= 2 and n_max >= 1, got T={T}, n_max={n_max}")
    A = np.eye(T)
    counts = np.arange(1, T + 1, dtype=float)[:, None]
    out = np.empty(n_max)
    for n in range(n_max):
        np.cumsum(A, axis=0, out=A)
        A /= counts
        v = (A / np.sqrt(np.einsum("ij,ij->i", A, A))[:, None]).sum(0)
        out[n] = (v @ v - T) / (T * (T - 1))
    return out


@dataclass(frozen=True)
class Extrapolation:
    """A T → ∞ limit from values at T, 2T, 4T whose differences shrink geometrically."""

    limit: float  # Aitken's Δ²: x₃ + d₂·r/(1 − r), r = d₂/d₁
    ratio: float  # r: how much the step shrinks per doubling of T (2^−½ for a T^−½ approach)
    last_step: float  # d₂ = x(4T) − x(2T)


def extrapolate_doublings(x1: float, x2: float, x3: float) -> Extrapolation:
    """Aitken's Δ² extrapolation of a sequence at T, 2T, 4T: exact for x(T) = a + b·T^−c. Only
    meaningful when 0 < ratio < 1 (a geometric approach); the caller judges the ratio."""
    d1, d2 = x2 - x1, x3 - x2
    if d1 == 0:
        return Extrapolation(float(x3), 0.0, float(d2))
    r = d2 / d1
    limit = x3 + d2 * r / (1 - r) if r < 1 else math.nan
    return Extrapolation(float(limit), float(r), float(d2))


def intra_sequence_cosine(x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per sequence of x (N, T, d): mean cosine over pairs i ≠ j, and over all T² pairs (A.3)."""
    z = torch.nn.functional.normalize(x.double(), dim=-1)
    T = z.shape[1]
    sq = z.sum(1).pow(2).sum(-1)  # ‖Σ_i z_i‖² = Σ_ij cos(z_i, z_j)
    return ((sq - T) / (T * (T - 1))).cpu().numpy(), (sq / T**2).cpu().numpy()


@dataclass
class IntraSequenceResult:
    """001 Prop 5 / Fig 8: intra-sequence cosine after each of L stacked attention layers."""

    T: int
    sizes: dict
    standard: SeedCurves  # (seeds, L): off-diagonal mean after layer l, softmax attention
    attn0: SeedCurves  # (seeds, L): the same for Attn0 (uniform causal mean, W_V = W_O = I)
    standard_seq_std: np.ndarray  # (L,) std over sequences (Fig 8's bands), pooled over seeds
    attn0_seq_std: np.ndarray
    attn0_full: SeedCurves  # (seeds, L): mean over all T² pairs (A.3's ρ̄′(T, L))
    inputs: np.ndarray | None = None  # (seeds,) the same off-diagonal cosine of the inputs (0 layers)
    # the null: the standard stack's own weights without the averaging (`_no_averaging_cosines`)
    no_averaging: SeedCurves | None = None  # (seeds, L): off-diagonal mean after layer l
    no_averaging_abs: np.ndarray | None = None  # (seeds,) mean |cosine| over pairs i ≠ j after the last layer


ATTN_STACK = dict(
    block="attn",
    attention="softmax",
    norm="layernorm",
    residual=False,
    positions="rope",
    final_norm=False,
    bias=False,
    vocab_size=0,
)  # a pre-LN attention sub-layer, no residual


BB5_CHUNK = 256  # sequences per pass (ci's largest n_seq: one pass there, its numbers unchanged)


@torch.no_grad()
def _stack_cosines(model: torch.nn.Module, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """`intra_sequence_cosine` after each layer of `model` on x (N, T, d), BB5_CHUNK sequences per
    pass (the statistics are per sequence): (L, N) off-diagonal and all-pairs means. A pass holds
    its L + 1 hidden states; at paper sizes (2,000 × 512 × 768 float32) a whole-batch pass held
    ≈ 39 GiB of them, and two stacks' at once ≈ 73 GiB (`repro plan`)."""
    offs, fulls = [], []
    for start in range(0, x.shape[0], BB5_CHUNK):
        hs = model(inputs_embeds=x[start : start + BB5_CHUNK], output_hidden_states=True).hidden_states
        off, full = zip(*(intra_sequence_cosine(h) for h in hs[1:]))
        offs.append(np.stack(off))
        fulls.append(np.stack(full))
        del hs
    return np.concatenate(offs, axis=1), np.concatenate(fulls, axis=1)


@torch.no_grad()
def _no_averaging_cosines(model: torch.nn.Module, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The null of 001 Finding 5: `model`'s attention-only stack (pre-LN, no residual) with the
    averaging removed — every token attends to itself alone (A = I), so each layer is
    x_i ↦ W_O W_V LN(x_i): the same weights, norms and depth, no mixing across positions. Returns
    `intra_sequence_cosine`'s off-diagonal mean after each layer, (L, N), and the mean |cosine|
    over pairs i ≠ j after the last layer, (N,) — whether the per-token maps alone align the
    tokens up to sign (a product of random matrices can collapse in rank; the signed mean of an
    odd map of symmetric inputs cannot leave 0). BB5_CHUNK sequences per pass."""
    cfg = model.config
    if cfg.residual or cfg.block != "attn" or cfg.value_identity or cfg.agg_scale != "none":
        raise ValueError("_no_averaging_cosines reads a pre-LN attention-only stack without residual (ATTN_STACK)")
    offs, absn = [], []
    for start in range(0, x.shape[0], BB5_CHUNK):
        h, off = x[start : start + BB5_CHUNK], []
        for block in model.blocks:
            h = block.attn.o_proj(block.attn.v_proj(block.ln_1(h)))  # (B, T, d): attention = identity
            off.append(intra_sequence_cosine(h)[0])
        z = torch.nn.functional.normalize(h.double(), dim=-1)
        T = z.shape[1]
        absn.append(((z @ z.transpose(1, 2)).abs().sum((1, 2)) - T).div(T * (T - 1)).cpu().numpy())
        offs.append(np.stack(off))
    return np.concatenate(offs, axis=1), np.concatenate(absn)


@memo.cached("bb-intra-sequence")
def intra_sequence_stack(
    *, T: int, d_model: int, n_head: int, n_layer: int, n_seq: int, seeds, device: torch.device | str = "cpu"
) -> IntraSequenceResult:
    """001 §4.4, Fig 8: one sequence of T isotropic Gaussian vectors through L stacked random-init
    self-attention sub-layers (softmax, App B.1 init, pre-LN, no residual — the residual stream
    would keep the input and hide the averaging) and through L Attn0 blocks; intra-sequence
    cosine after each layer. The null: the standard stack's weights without the averaging
    (`_no_averaging_cosines`), on the same inputs."""
    rows: dict[str, list] = {
        "standard": [],
        "attn0": [],
        "attn0_full": [],
        "inputs": [],
        "no_avg": [],
        "no_avg_abs": [],
    }
    per_seq: dict[str, list] = {"standard": [], "attn0": []}
    std_cfg = TinyConfig.merged(**ATTN_STACK, d_model=d_model, n_head=n_head, n_layer=n_layer, max_len=T)
    a0_cfg = TinyConfig.attn0_stack(d_model=d_model, n_layer=n_layer, max_len=T, n_head=1)
    for seed in seeds:
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb5-inputs", T, seed))).to(device)
        rows["inputs"].append(intra_sequence_cosine(x)[0].mean())
        for name, cfg in (("standard", std_cfg), ("attn0", a0_cfg)):
            with torch.no_grad():
                model = _tiny(cfg, derive_seed("bb5-weights", seed), device)
            off, full = _stack_cosines(model, x)  # (L, N) each
            rows[name].append([o.mean() for o in off])
            per_seq[name].append(off)
            if name == "attn0":
                rows["attn0_full"].append([f.mean() for f in full])
            else:
                off, absn = _no_averaging_cosines(model, x)
                rows["no_avg"].append([o.mean() for o in off])
                rows["no_avg_abs"].append(absn.mean())
            del model
    sizes = dict(T=T, d_model=d_model, n_head=n_head, n_layer=n_layer, n_seq=n_seq, seeds=list(seeds))
    return IntraSequenceResult(
        T,
        sizes,
        SeedCurves(np.array(rows["standard"])),
        SeedCurves(np.array(rows["attn0"])),
        np.concatenate(per_seq["standard"], axis=1).std(1, ddof=1),
        np.concatenate(per_seq["attn0"], axis=1).std(1, ddof=1),
        SeedCurves(np.array(rows["attn0_full"])),
        np.array(rows["inputs"]),
        SeedCurves(np.array(rows["no_avg"])),
        np.array(rows["no_avg_abs"]),
    )


# --------------------------------------------------------------------------- LN and GELU (Fig 6)


@dataclass
class GeluSpreadResult:
    """001 Finding 4.1 / Fig 6: the GELU pre-activation with and without LayerNorm."""

    sizes: dict
    std: dict[str, SeedCurves]  # "norm" / "nonorm": (seeds, 1) std of the pre-activation
    cosine: dict[str, SeedCurves]  # (seeds, 1) inter-sequence cosine of the MLP's output
    samples: dict[str, np.ndarray]  # a sample of pre-activations per variant (for the figure)
    asymmetry: dict[str, SeedCurves] = field(default_factory=dict)  # (seeds, 1) gelu_asymmetry of the inputs

    @property
    def theory(self) -> dict[str, float]:
        """App B.1 in closed form: LN(x) has unit variance, so (LN x)·W_up has std 0.02·√d; raw
        embeddings have std 0.02, so x·W_up has std 0.02²·√d."""
        d = self.sizes["d_model"]
        return {"norm": 0.02 * math.sqrt(d), "nonorm": 0.02 * 0.02 * math.sqrt(d)}


def gelu_asymmetry(u: torch.Tensor | np.ndarray) -> float:
    """How asymmetric GELU acts on these inputs: GELU(u) = u/2 (odd, linear) + u·(Φ(u) − ½) (even),
    and this is rms(even part) / rms(odd part) = rms(u·erf(u/√2)) / rms(u). 0 where GELU is linear
    (|u| ≪ 1), 1 for ReLU (u/2 + |u|/2: 001 §4.2's asymmetric reference), which GELU approaches as
    the inputs widen; for u ~ N(0, σ²): 0.015 at σ = 0.011, 0.62 at σ = 0.55."""
    u = torch.as_tensor(u).double().reshape(-1)
    return float((u * torch.erf(u / math.sqrt(2.0))).pow(2).mean().sqrt() / u.pow(2).mean().sqrt())


@memo.cached("bb-gelu-spread")
def gelu_input_spread(
    *, d_model: int, n_seq: int, seeds, sample: int = 20000, device: torch.device | str = "cpu"
) -> GeluSpreadResult:
    """Embedding-like inputs N(0, 0.02²) (001 §4.1) through one GELU MLP block (App B.1 init)
    with its pre-LayerNorm and without; the std of the GELU input, and the inter-sequence
    cosine of the MLP's output (the contraction the engaged asymmetry causes)."""
    std: dict[str, list] = {"norm": [], "nonorm": []}
    cos: dict[str, list] = {"norm": [], "nonorm": []}
    asym: dict[str, list] = {"norm": [], "nonorm": []}
    samples: dict[str, np.ndarray] = {}
    for seed in seeds:
        x = gaussian_inputs(n_seq, 1, d_model, generator(derive_seed("bb41-inputs", seed)), std=0.02).to(device)
        for name, norm in (("norm", "layernorm"), ("nonorm", "none")):
            cfg = TinyConfig.merged(
                vocab_size=0,
                d_model=d_model,
                n_layer=1,
                block="mlp",
                norm=norm,
                activation="gelu",
                residual=False,
                positions="none",
                final_norm=False,
            )
            model = _tiny(cfg, derive_seed("bb41-weights", seed), device)  # same weights with and without LN
            # GELU's input: the up-projection's output (the MLP is act(up_proj(x)))
            with lens.hooks(model, residual=False, modules=["mlp.up_proj"]) as cap, torch.no_grad():
                y = model(inputs_embeds=x, output_hidden_states=True).hidden_states[1][:, -1]
            u = cap.modules["mlp.up_proj"][0].double()
            std[name].append([float(u.std())])
            asym[name].append([gelu_asymmetry(u)])
            cos[name].append([mean_pairwise_cosine(y)])
            if name not in samples:
                samples[name] = u.reshape(-1)[:sample].cpu().numpy()
    sizes = dict(d_model=d_model, d_ff=4 * d_model, n_seq=n_seq, seeds=list(seeds), input_std=0.02)
    return GeluSpreadResult(
        sizes,
        {k: SeedCurves(np.array(v)) for k, v in std.items()},
        {k: SeedCurves(np.array(v)) for k, v in cos.items()},
        samples,
        {k: SeedCurves(np.array(v)) for k, v in asym.items()},
    )


# --------------------------------------------------------------------------- §3: random-token probes

# The null of 001 App B.2 is exact uniformity over the vocabulary. A model whose blocks contract
# nothing is not uniform: its final states are independent isotropic vectors, and a token whose
# head row is longer wins the argmax more often. `gaussian_argmax_rates` gives each token's win
# probability under that null from the head alone (probe.head_logit_scales), treating the logits
# as independent Gaussians with those scales (the rows of a random head are nearly orthogonal).
# Checked against the real thing — 20,000 isotropic states through the ci heads (d = 768,
# |V| = 50,257; ≈ 70 s, so not in the claims run): the tokens drawn have mean formula rate
# 1.196/|V| (RoPE GPT-2) and 1.186/|V| (LLaMA), where the formula predicts Σq² = 1.195/|V| and
# 1.192/|V|; their collision rates are 1.17× and 1.18× uniform's. `null_top_log10_p` is App B.2's
# Bonferroni formula with each token's own null rate in place of 1/|V| (it *is* App B.2's
# formula for uniform rates).


def gaussian_argmax_rates(scales, *, n_grid: int = 2001, n_points: int = 257) -> np.ndarray:
    """P(v = argmax_u z_u) for independent z_u ~ N(0, scales_u²), by quadrature:
    q_v = ∫ φ(y/σ_v)/σ_v · Π_{u≠v} Φ(y/σ_u) dy. The product runs over a fine histogram of the
    scales, q is evaluated on a grid of scales and interpolated (q depends on σ_v alone), then
    renormalised to sum to 1. Equal scales give exactly 1/V."""
    s = np.asarray(scales, dtype=float).reshape(-1)
    if s.size == 0 or not np.all(np.isfinite(s)) or s.min() <= 0:
        raise ValueError("gaussian_argmax_rates needs positive, finite scales")
    # models that share a head (001 footnote 2: the embedding and head are fixed across seeds)
    # share its rates: computed once
    key = (hashlib.sha1(s.tobytes()).hexdigest(), n_grid, n_points)
    if key not in _RATES_CACHE:
        if len(_RATES_CACHE) >= 8:
            _RATES_CACHE.pop(next(iter(_RATES_CACHE)))
        _RATES_CACHE[key] = _gaussian_argmax_rates(s, n_grid, n_points)
    return _RATES_CACHE[key].copy()


_RATES_CACHE: dict[tuple, np.ndarray] = {}


def _gaussian_argmax_rates(s: np.ndarray, n_grid: int, n_points: int) -> np.ndarray:
    V = s.size
    s = s / s.mean()
    if s.max() - s.min() < 1e-12:
        return np.full(V, 1.0 / V)
    edges = np.linspace(s.min(), s.max(), min(1024, V) + 1)
    which = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, len(edges) - 2)
    counts = np.bincount(which, minlength=len(edges) - 1)
    keep = counts > 0
    centers = np.bincount(which, weights=s, minlength=len(edges) - 1)[keep] / counts[keep]  # each bin's mean scale
    counts = counts[keep]
    y = np.linspace(-9.0 * s.max(), 9.0 * s.max(), n_grid)
    log_f = np.zeros_like(y)
    for chunk in np.array_split(np.arange(len(centers)), max(1, len(centers) // 256)):
        log_f += (counts[chunk, None] * scipy.stats.norm.logcdf(y[None, :] / centers[chunk, None])).sum(0)
    t = np.linspace(s.min(), s.max(), n_points)
    z = y[None, :] / t[:, None]
    integrand = scipy.stats.norm.pdf(z) / t[:, None] * np.exp(log_f[None, :] - scipy.stats.norm.logcdf(z))
    q_t = np.trapezoid(integrand, y, axis=1)
    q = np.interp(s, t, q_t)
    return q / q.sum()


_LN10 = math.log(10.0)


def null_top_log10_p(k: int, n: int, rates) -> float:
    """log10 of min(1, Σ_v P[Bin(n, q_v) ≥ k]): 001 App B.2's Bonferroni p of a top count k among
    n predictions, with token v's null rate q_v (`rates`) instead of 1/|V|. Deep tails are summed
    in log space, so it does not underflow."""
    k, n = int(k), int(n)
    q = np.asarray(rates, dtype=float).reshape(-1)
    if k <= 0:
        return 0.0
    if k > n:
        return -math.inf
    q = q[q > 0]
    sf = scipy.stats.binom.sf(k - 1, n, q)
    deep = sf < 1e-280
    logs = [np.log(sf[~deep])] if (~deep).any() else []
    if deep.any():
        j = k + np.arange(64)
        j = j[j <= n]
        logs.append(scipy.special.logsumexp(scipy.stats.binom.logpmf(j[None, :], n, q[deep, None]), axis=1))
    total = scipy.special.logsumexp(np.concatenate(logs)) / _LN10
    return float(min(0.0, total))


def null_top_count_cdf(k: int, n: int, rates) -> float:
    """P[top count ≤ k] under the null rates, treating token counts as independent
    (Poissonisation; multinomial counts are slightly negatively associated)."""
    q = np.asarray(rates, dtype=float).reshape(-1)
    return float(np.exp(scipy.stats.binom.logcdf(int(k), int(n), q).sum()))


def null_top_count_quantile(n: int, rates, level: float) -> int:
    """The smallest k with P[top count ≤ k] ≥ level under the null rates."""
    k = 0
    while null_top_count_cdf(k, n, rates) < level:
        k += 1
    return k


def expected_top_count(n: int, rates) -> float:
    """E[top count] of n draws from the null rates: Σ_k P[top > k] (Poissonised, as above).
    With uniform rates this is 001 Fig 1a's random baseline for the rank-1 bar."""
    total, k = 0.0, 0
    while True:
        tail = 1.0 - null_top_count_cdf(k, n, rates)
        if tail < 1e-12:
            return total
        total += tail
        k += 1


def critical_top_count(n: int, rates, log10_alpha: float) -> int:
    """The smallest top count whose `null_top_log10_p` is ≤ log10_alpha (n + 1 if none is)."""
    q_max = float(np.max(rates))
    lo, hi = 1, min(n + 1, int(4 * n * q_max) + 32)  # a start above the null's reach; doubled if not
    while hi <= n and null_top_log10_p(hi, n, rates) > log10_alpha:
        lo, hi = hi, min(n + 1, 2 * hi)
    while lo < hi:  # null_top_log10_p falls with k
        mid = (lo + hi) // 2
        if null_top_log10_p(mid, n, rates) <= log10_alpha:
            hi = mid
        else:
            lo = mid + 1
    return lo


def top_count_power(n: int, rates, p1: float, log10_alpha: float) -> float:
    """P[the top count reaches the critical count] when one token has rate p1 (the source's
    favourite) and the others follow the null rates: 1 − P[Bin(n, p1) < k*]·P[null top < k*]."""
    k = critical_top_count(n, rates, log10_alpha)
    if k > n:
        return 0.0
    miss = scipy.stats.binom.cdf(k - 1, n, p1) * null_top_count_cdf(k - 1, n, rates)
    return float(1.0 - miss)


@dataclass
class PreferenceRun:
    """One random-init model probed with the same N random token sequences at several lengths
    (one row group of 001 Table 1; Fig 1a, Fig 10, Fig 2 and Finding 2.2 read the same pass)."""

    arch: str
    seed: int
    sizes: dict
    lengths: tuple[int, ...]
    top1: list[Top1]  # per length: most frequent argmax next token, Bonferroni p (App B.2)
    top_dim: list[Top1]  # per length: most frequent argmax hidden dimension of the last block
    rank_counts: np.ndarray  # (n_len, R) counts of the R most predicted tokens
    dim_rank_counts: np.ndarray  # (n_len, R) the same for hidden dimensions
    final_cosine: np.ndarray  # (n_len,) inter-sequence cosine of the final-normed last-token state
    contraction_token: list[int]  # per length: argmax of W_U · mean final-normed state (Finding 2.2)
    next_token: np.ndarray | None = None  # (n_len, N) argmax next token per sequence
    layer_cosine: np.ndarray | None = None  # (n_len, L+1): embeddings, then each block's output
    dim_std: np.ndarray | None = None  # (n_len, d) std over sequences of the last block's output
    # the head's own null (only with preference_run(null=True)): each token's argmax rate for
    # isotropic final states, and one such draw of N states through the model's norm and head
    null_rates: np.ndarray | None = None  # (V,)
    null_next_token: np.ndarray | None = None  # (N,)

    def at(self, length: int) -> int:
        return self.lengths.index(length)

    def null_log10_p(self, i: int) -> float:
        """log10 p of length index i's top-1 count against the head's own null (not uniform)."""
        return null_top_log10_p(self.top1[i].count, self.top1[i].n, self.null_rates)

    def null_draw_top1(self) -> Top1:
        """The top-1 token of the isotropic null draw (its p is App B.2's uniform one)."""
        return top1_preference(self.null_next_token, self.sizes["vocab_size"])

    def dim_null_rates(self, i: int) -> np.ndarray:
        """Each hidden dimension's argmax rate if the last block's output had its measured
        per-dimension spread and no shared offset (independent N(0, std_j²))."""
        return gaussian_argmax_rates(self.dim_std[i])

    def freq_of(self, token: int, length: int) -> float:
        """How often this model predicts `token` at probe length `length`."""
        return float(np.mean(self.next_token[self.at(length)] == token))


RANKS = 50  # ranks drawn in the Fig 1a / Fig 10 histograms


def random_token_inputs(n_seq: int, T: int, vocab_size: int) -> torch.Tensor:
    """001 App B.2's fixed set of N uniform random token sequences: one set per (N, T, V), shared
    by every seed and architecture (paired comparisons)."""
    return random_tokens(n_seq, T, vocab_size, generator(derive_seed("random-token-probes", n_seq, T, vocab_size)))


@memo.cached("bb-preference-run")
def preference_run(
    arch: str,
    *,
    seed: int,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    n_seq: int,
    lengths,
    embedding_seed: int = 0,
    keep_states: bool = True,
    device: torch.device | str = "cpu",
    dtype: str = "auto",
    batch_size: int = 64,
    null: bool = False,
) -> PreferenceRun:
    """Build a random-init `arch` model (App B.1 init; embedding and LM head fixed by
    `embedding_seed` across seeds, footnote 2) and probe it (001 §3, App B.2). `null`: also the
    head's own null (per-token argmax rates for isotropic final states, and one draw of N such
    states through the model's final norm and head; ≈ one LM-head pass)."""
    lengths = tuple(sorted(lengths))
    torch_dtype = resolve_dtype(dtype, device)
    model = build_model(
        arch,
        n_layer=n_layer,
        n_head=n_head,
        d_model=d_model,
        vocab_size=vocab_size,
        seed=seed,
        embedding_seed=embedding_seed,
        n_positions=max(lengths),
        attn_implementation="sdpa",
        dtype=torch_dtype,
    ).to(device)
    res = probe.probe(
        model,
        random_token_inputs(n_seq, max(lengths), vocab_size),
        lengths=lengths,
        keep_states=keep_states,
        batch_size=batch_size,
        tie_seed=derive_seed("ties", arch, seed),
    )
    sizes = dict(
        arch=arch,
        d_model=d_model,
        n_layer=n_layer,
        n_head=n_head,
        vocab_size=vocab_size,
        n_seq=n_seq,
        lengths=list(lengths),
        embedding_seed=embedding_seed,
        dtype=str(torch_dtype).removeprefix("torch."),
    )
    run = PreferenceRun(
        arch,
        seed,
        sizes,
        lengths,
        top1=[top1_preference(t, vocab_size) for t in res.next_token],
        top_dim=[top1_preference(t, d_model) for t in res.top_dim],
        rank_counts=np.stack([probe.rank_counts(t, vocab_size, RANKS) for t in res.next_token]),
        dim_rank_counts=np.stack([probe.rank_counts(t, d_model, RANKS) for t in res.top_dim]),
        final_cosine=np.array([mean_pairwise_cosine(h) for h in res.final_normed]),
        contraction_token=[probe.contraction_token(model, h) for h in res.final_normed],
        next_token=res.next_token.numpy(),
        dim_std=None if res.dim_std is None else res.dim_std.double().numpy(),
    )
    if null:
        run.null_rates = gaussian_argmax_rates(probe.head_logit_scales(model))
        run.null_next_token = probe.isotropic_next_tokens(model, n_seq, derive_seed("isotropic-null", arch, seed))
    if res.states is not None:
        run.layer_cosine = np.array([[mean_pairwise_cosine(h) for h in per_len] for per_len in res.states])
    return run


def preference_runs(
    *,
    archs,
    seeds,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    n_seq: int,
    lengths,
    dtype: str = "auto",
    device: torch.device | str = "cpu",
    keep_states: bool = True,
    null: bool = False,
) -> dict[tuple[str, int], PreferenceRun]:
    """001 Table 1's row groups (§3, App B.2): `preference_run` for every architecture and seed
    (the architecture outer), keyed (arch, seed); `null` and `keep_states` as there."""
    return {
        (arch, seed): preference_run(
            arch,
            seed=seed,
            d_model=d_model,
            n_layer=n_layer,
            n_head=n_head,
            vocab_size=vocab_size,
            n_seq=n_seq,
            lengths=lengths,
            keep_states=keep_states,
            device=device,
            dtype=dtype,
            null=null,
        )
        for arch in archs
        for seed in seeds
    }


def uniform_baselines(n_seq: int, vocab_size: int, d_model: int) -> tuple[np.ndarray, np.ndarray]:
    """The random baselines of 001 Fig 1a / Fig 10 (red lines): rank counts of n_seq uniform draws
    over the vocabulary (generator 1) and over the d_model hidden dimensions (generator 2)."""
    return (
        probe.uniform_rank_counts(n_seq, vocab_size, generator(1), ranks=RANKS),
        probe.uniform_rank_counts(n_seq, d_model, generator(2), ranks=RANKS),
    )


def power_pooled_share(n_a: int, f_a: float, n_b: int, f_b: float, alpha: float) -> float:
    """Power of the one-sided pooled-share test the BB-1.2 and BB-1.1 tests use (is count a more
    than count b? p = P[Bin(a + b, ½) ≥ a] < alpha) when a ~ Bin(n_a, f_a) and b ~ Bin(n_b, f_b):
    exact, summed over the joint distribution of (a, b)."""
    a = np.arange(n_a + 1)
    b = np.arange(n_b + 1)
    pa, pb = scipy.stats.binom.pmf(a, n_a, f_a), scipy.stats.binom.pmf(b, n_b, f_b)
    ka, kb = pa > 1e-15, pb > 1e-15  # the rest carries < 1e-11 of the mass
    a, b, pa, pb = a[ka], b[kb], pa[ka], pb[kb]
    p = scipy.stats.binom.sf(a[:, None] - 1, a[:, None] + b[None, :], 0.5)
    p = np.where(a[:, None] + b[None, :] == 0, 1.0, p)
    return float((pa[:, None] * pb[None, :] * (p < alpha)).sum())


def power_at_most_share(k: int, n_other: int, f_other: float, share: float, alpha: float) -> float:
    """Power of the one-sided test BB-1.1 uses for "far weaker" (is count k at most `share` of the
    pooled counts? p = P[Bin(k + g, share) ≤ k] < alpha) with k held at its measured value and
    the other side's count g ~ Bin(n_other, f_other): exact, summed over g."""
    g = np.arange(n_other + 1)
    pg = scipy.stats.binom.pmf(g, n_other, f_other)
    keep = pg > 1e-15  # the rest carries < 1e-11 of the mass
    g, pg = g[keep], pg[keep]
    p = scipy.stats.binom.cdf(k, k + g, share)
    return float((pg * (p < alpha)).sum())


def wilson_covers(k: np.ndarray, m: int, value: float, z: float = 1.959963984540054) -> np.ndarray:
    """Whether the Wilson score interval of k successes in m (vectorised over k) contains `value`
    (stats.binomial_ci's default method, without a scipy call per k)."""
    k = np.asarray(k, dtype=float)
    p = k / m
    centre = (p + z * z / (2 * m)) / (1 + z * z / m)
    half = z / (1 + z * z / m) * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m))
    return (centre - half <= value) & (value <= centre + half)


def mode_agreement_power(
    rank_counts: np.ndarray,
    n_seq: int,
    vocab_size: int,
    rate: float,
    *,
    sims: int = 1000,
    seed: int = 0,
    n_scale: float = 1.0,
    lead: float = 0.5,
) -> float:
    """Power of BB-2.2's rate test (the source's agreement `rate` inside our Wilson 95% interval
    over M models) when the contraction direction names each model's true favourite with
    probability `rate`, but our favourite is the mode of n_seq·n_scale predictions: it is the true
    favourite only when that token's count comes out on top. Per model, the rates of its
    most-predicted tokens are the measured ones (`rank_counts` / n_seq, plug-in: optimistic,
    since the measured top count overstates the favourite's lead), the favourite's raised by `lead`
    counts (a measured tie at the top is a tie of counts, not of rates: without a lead no N could
    resolve it); the rest of the mass is spread uniformly. Monte Carlo with `sims` runs of all M
    models."""
    rng = np.random.default_rng(seed)
    M, R = rank_counts.shape
    n = int(round(n_seq * n_scale))
    hits = np.zeros(sims)
    for i in range(M):
        r = np.clip(rank_counts[i] / n_seq, 0, None)
        r[0] += lead / n_seq
        rest = max(0.0, 1.0 - r.sum())
        counts = rng.multinomial(n, np.append(r, rest) / max(1.0, r.sum() + rest), size=sims)  # (sims, R+1)
        top, rest_n = counts[:, :R], counts[:, R]
        # the largest count among k draws spread uniformly over the other W = |V| − R tokens: 1, plus
        # one for a collision (P ≈ 1 − e^{−k(k−1)/2W}), plus one for a triple (P ≈ C(k,3)/W²)
        W = float(vocab_size - R)
        k = rest_n.astype(float)
        other = (
            (k > 0).astype(int)
            + (rng.random(sims) < -np.expm1(-k * (k - 1) / (2 * W)))
            + (rng.random(sims) < k * (k - 1) * (k - 2) / (6 * W * W))
        )
        best = np.maximum(top.max(1), other)
        tied = (top == best[:, None]).sum(1) + (other == best)
        fav_is_mode = (top[:, 0] == best) & (rng.random(sims) < 1.0 / tied)
        hits += fav_is_mode & (rng.random(sims) < rate)
    return float(wilson_covers(hits, M, rate).mean())


@dataclass
class DirectionResult:
    """001 Finding 2.2 over many random models: does the contraction direction name the favourite?"""

    sizes: dict
    favourite: np.ndarray  # (M,) most predicted token per model
    favourite_count: np.ndarray  # (M,)
    direction_token: np.ndarray  # (M,) argmax of W_U · mean final-normed state
    log10_p: np.ndarray  # (M,) Bonferroni p of each favourite
    rank_counts: np.ndarray | None = None  # (M, RANKS) counts of each model's most predicted tokens

    @property
    def agree(self) -> np.ndarray:
        return self.favourite == self.direction_token


def direction_agreement(
    *,
    arch: str,
    n_models: int,
    T: int,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    n_seq: int,
    dtype: str = "auto",
    device: torch.device | str = "cpu",
) -> DirectionResult:
    """Finding 2.2 protocol on `n_models` random-init models (seeds 0 … M−1, shared embedding
    and LM head): favourite token vs the contraction direction's token, at length T."""
    if n_models < 1:
        raise ValueError(f"direction_agreement needs n_models >= 1, got {n_models}")
    fav, cnt, dirs, lp, ranks = [], [], [], [], []
    for seed in range(n_models):
        run = preference_run(
            arch,
            seed=seed,
            lengths=(T,),
            keep_states=False,
            d_model=d_model,
            n_layer=n_layer,
            n_head=n_head,
            vocab_size=vocab_size,
            n_seq=n_seq,
            dtype=dtype,
            device=device,
        )
        fav.append(run.top1[0].token)
        cnt.append(run.top1[0].count)
        dirs.append(run.contraction_token[0])
        lp.append(run.top1[0].log10_p)
        ranks.append(run.rank_counts[0])
    info = {k: v for k, v in run.sizes.items() if k != "lengths"}
    return DirectionResult(
        dict(info, T=T, n_models=n_models), np.array(fav), np.array(cnt), np.array(dirs), np.array(lp), np.array(ranks)
    )


# --------------------------------------------------------------------------- §4.1: architectural ablation


ABLATION_BLOCKS = {"full": "full", "attn-only": "attn", "mlp-only": "mlp"}


@dataclass
class AblationRun:
    """001 §4.1 (Table 2, Figs 3, 4, 7): one variant, one seed, Gaussian inputs."""

    variant: str
    seed: int
    sizes: dict
    top1: Top1
    rank_counts: np.ndarray  # (R,)
    final_cosine: float  # Table 2: last-token states after the final LayerNorm
    layer_cosine: np.ndarray  # (L,) after each block (Fig 7, Fig 4)
    layer_cosine_std: np.ndarray  # (L,) std over pairs of sequences (Fig 4's band)
    null_log10_p: float = math.nan  # top1's count against the tied head's own null (not uniform)


def pairwise_cosine_std(x: torch.Tensor) -> float:
    """Standard deviation of the cosine similarity over all distinct pairs of rows of x (N, d)."""
    z = torch.nn.functional.normalize(x.double(), dim=-1)
    g = z @ z.T
    iu = torch.triu_indices(len(z), len(z), offset=1)
    return float(g[iu[0], iu[1]].std())


@memo.cached("bb-ablation-run")
def ablation_run(
    variant: str,
    *,
    seed: int,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    T: int,
    n_seq: int,
    device: torch.device | str = "cpu",
    dtype: str = "auto",
) -> AblationRun:
    """A 12-layer pre-LN GELU decoder with RoPE (the source's nano GPT-2 block), as full,
    attention-only or MLP-only stack, fed N Gaussian sequences with the embedding's init
    statistics N(0, 0.02²) (001 §4.1); tied LM head for the next-token histogram."""
    if variant not in ABLATION_BLOCKS:
        raise ValueError(f"unknown ablation variant {variant!r}; choose one of {', '.join(ABLATION_BLOCKS)}")
    torch_dtype = resolve_dtype(dtype, device)
    cfg = TinyConfig.merged(
        vocab_size=vocab_size,
        d_model=d_model,
        n_layer=n_layer,
        n_head=n_head,
        max_len=T,
        block=ABLATION_BLOCKS[variant],
        norm="layernorm",
        activation="gelu",
        residual=True,
        positions="rope",
        final_norm=True,
        tie_embeddings=True,
    )
    model = _tiny(cfg, derive_seed("bb3-weights", seed)).to(device=device, dtype=torch_dtype)
    x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb3-inputs", T, seed)), std=0.02)
    res = probe.probe(model, x, keep_states=True)
    states = res.states[0]  # (L+1, N, d)
    top1 = top1_preference(res.next_token[0], vocab_size)
    null_p = null_top_log10_p(top1.count, top1.n, gaussian_argmax_rates(probe.head_logit_scales(model)))
    sizes = dict(
        variant=variant,
        d_model=d_model,
        n_layer=n_layer,
        n_head=n_head,
        vocab_size=vocab_size,
        T=T,
        n_seq=n_seq,
        input_std=0.02,
        dtype=str(torch_dtype).removeprefix("torch."),
    )
    return AblationRun(
        variant,
        seed,
        sizes,
        top1,
        probe.rank_counts(res.next_token[0], vocab_size, RANKS),
        mean_pairwise_cosine(res.final_normed[0]),
        np.array([mean_pairwise_cosine(h) for h in states[1:]]),
        np.array([pairwise_cosine_std(h) for h in states[1:]]),
        null_p,
    )


def ablation_runs(
    *,
    seeds,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    T: int,
    n_seq: int,
    dtype: str = "auto",
    device: torch.device | str = "cpu",
) -> dict[str, list[AblationRun]]:
    """001 §4.1 (Table 2, Figs 3, 4, 7): `ablation_run` of every variant (full, attention-only,
    MLP-only) for every seed, variant → runs in seed order."""
    return {
        v: [
            ablation_run(
                v,
                seed=seed,
                d_model=d_model,
                n_layer=n_layer,
                n_head=n_head,
                vocab_size=vocab_size,
                T=T,
                n_seq=n_seq,
                device=device,
                dtype=dtype,
            )
            for seed in seeds
        ]
        for v in ABLATION_BLOCKS
    }


def ablation_curves(ablation: dict[str, list[AblationRun]]) -> dict[str, SeedCurves]:
    """001 §4.1, Fig 7: each variant's inter-sequence cosine after every block, one row per seed."""
    return {v: SeedCurves(np.array([r.layer_cosine for r in runs])) for v, runs in ablation.items()}
