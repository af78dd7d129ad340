"""Random-init structure of decoder transformers — 001 ("Transformers Are Born Biased") §4, checked
against App A's closed forms (`closed_forms`).

The Monte-Carlo experiments on random-init TinyDecoder stacks: ReLU / tanh MLP0 stacks (Prop 2,
Fig 5), MLP0∘MLP0 vs Attn0∘MLP0 (Prop 4, Table 3), the positional std of the attention output
(Eq 2, Fig 9), intra-sequence similarity through stacked attention (Prop 5, Fig 8) and GELU's
inputs with and without LayerNorm (Finding 4.1, Fig 6). Every experiment takes explicit seeds;
weights come from `repro.core.models.tiny` (the ablation decoder) with the init of App B.1,
inputs from `repro.core.data.gaussian_inputs`.

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

from repro.born_biased.closed_forms import attn0_after_mlp0, relu_recurrence
from repro.core import activations, memo, stats
from repro.core.data import gaussian_inputs
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.core.stats import PositionalStdResult, SeedCurves, std_by_position, t_two_sided_p
from repro.ground.runtime import derive_seed, generator

# --------------------------------------------------------------------------- measurements


def mean_pairwise_cosine(x: torch.Tensor) -> float:
    """Mean cosine similarity over all distinct pairs of rows of x (N, d)."""
    z = torch.nn.functional.normalize(x.double(), dim=-1)
    n = z.shape[0]
    s = z.sum(0)
    return float(((s @ s) - n) / (n * (n - 1)))


def tiny_decoder(cfg: TinyConfig, seed: int, device: torch.device | str = "cpu") -> TinyDecoder:
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
        x = gaussian_inputs(n_seq, 1, d_model, generator(derive_seed("bb4-inputs", seed)), device=device)
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
            states = _last_token_states(tiny_decoder(cfg, derive_seed("bb4-weights", seed), device), x)
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


# Table 3's rows: each TwoBlockResult curve and its label
TWO_BLOCK_LABELS = {"h": "h = MLP0(x)", "mlp_mlp": "MLP0∘MLP0", "attn_mlp": "Attn0∘MLP0"}


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
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb42-inputs", T, seed)), device=device)
        two_mlps = tiny_decoder(
            TinyConfig.merged(n_layer=2, block="mlp", activation="relu", **mlp),
            derive_seed("bb42-weights", seed),
            device,
        )
        with torch.no_grad():
            hs = two_mlps(inputs_embeds=x, output_hidden_states=True).hidden_states
        h, y_mlp = hs[1], hs[2]  # (N, T, d): after the first and the second MLP0
        attn0 = tiny_decoder(
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
        model = tiny_decoder(cfg, derive_seed("bb6-weights", seed), device)
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb6-inputs", seed)), std=0.02, device=device)
        # o = A·V (after agg_scale) and V, at the tiny decoder's hook points
        with activations.hooks(model, residual=False, modules=["attn.agg", "attn.v_proj"]) as cap, torch.no_grad():
            out = model(inputs_embeds=x, output_attentions=True)
        o = cap.modules["attn.agg"][0].reshape(n_seq, T, -1)  # (N, T, d)
        stds.append(std_by_position(o).double().cpu().numpy())
        v = cap.modules["attn.v_proj"][0].reshape(n_seq, T, -1)
        vstds.append(std_by_position(v).double().cpu().numpy())
        A = out.attentions[0]  # (N, H, T, T)
        sq.append((A.double() ** 2).sum(-1).mean(dim=(0, 1)).cpu().numpy())
    sizes = dict(d_model=d_model, n_head=n_head, T=T, n_seq=n_seq, seeds=list(seeds), agg_scale=agg_scale)
    return PositionalStdResult(sizes, SeedCurves(np.array(stds)), SeedCurves(np.array(sq)), SeedCurves(np.array(vstds)))


@dataclass(frozen=True)
class Eq2Reading:
    """001 §4.4 Eq 2 and Finding 6 read off a `positional_std` result (BB-6)."""

    slope: float  # log-log slope of std(o_i) vs i, mean over models
    slope_sem: float  # its standard error over models
    value_slope: float  # the same slope of the value vectors v_j (before aggregation)
    eq2_gap: float  # max over i of |std(o_i) / (σ√Σ_j A_ij²) − 1|, Eq 2 with the measured A
    eq2_rel_sem: float  # the relative standard error of std(o_i) at that position
    uniform_gap: float  # max over i of |std(o_i) / (σ√(1/i)) − 1|, Eq 2 with uniform A
    first_ratio: float  # std(o_1) / max_{i>1} std(o_i): the first token's outlier ratio
    second_ratio: float  # std(o_2) / max_{i>2} std(o_i): the same for position 2


def eq2_reading(positional: PositionalStdResult) -> Eq2Reading:
    """001 §4.4 Eq 2: Var(o_i) = σ²·Σ_j A_ij² when the v_j are uncorrelated, so std(o_i) ∝ 1/√i
    under uniform attention; its slope, its pointwise match with the measured A (and with uniform
    A) and Finding 6's first-token ratio."""
    i = positional.positions
    slope, sem = stats.mean_sem([stats.loglog_slope(i, s).slope for s in positional.std.values])
    v_slope = float(np.mean([stats.loglog_slope(i, s).slope for s in positional.value_std.values]))
    std = positional.std.mean
    ratio = std / (std[0] * np.sqrt(positional.attn_sq.mean))
    uniform = std / (std[0] * np.sqrt(1.0 / i))
    rel_sem = positional.std.sem / std
    worst = int(np.argmax(np.abs(ratio - 1)))
    return Eq2Reading(
        slope,
        sem,
        v_slope,
        float(abs(ratio[worst] - 1)),
        rel_sem[worst],
        float(np.abs(uniform - 1).max()),
        float(std[0] / std[1:].max()),
        float(std[1] / std[2:].max()),
    )


def depth_trend(values, shuffle_seed: int) -> tuple[stats.TestResult, stats.TestResult]:
    """A rising trend of `values` over blocks (Kendall τ against the block order, 001 Fig 2 / Fig 7),
    and its control: the same values against a block order shuffled by `shuffle_seed` (no depth trend)."""
    tau = stats.kendall_tau(np.arange(len(values)), values)
    shuffled = np.random.default_rng(shuffle_seed).permutation(len(values))
    return tau, stats.kendall_tau(shuffled, values)


# --------------------------------------------------------------------------- intra-sequence (App A.3)


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
    # "toward 1"'s null: the same no-averaging stack on inputs that start at cosine NULL_START
    # (`shared_inputs`), where a signed cosine is free to rise if the per-token maps align tokens
    no_averaging_shared: SeedCurves | None = None  # (seeds, L): off-diagonal mean after layer l


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


#: where "toward 1"'s null starts (chosen before any run, issue 64): tokens of one sequence at
#: cosine 1/2 — halfway, so a signed cosine can move either way; without averaging nothing mixes
#: positions, so Finding 5's mechanism is absent and it stays near 1/2 (random maps keep angles to
#: O(1/√d)), unless the per-token maps themselves align tokens (rank collapse of the product of
#: random W_O W_V: the alternative the null rules out), which would carry it past 0.9
NULL_START = 0.5


def shared_inputs(x: torch.Tensor, rho: float, g: torch.Generator) -> torch.Tensor:
    """x (N, T, d) i.i.d. N(0, 1) → √ρ·c + √(1−ρ)·x with c one N(0, I) vector per sequence: every
    pair of a sequence's tokens at expected cosine ρ (norms ≈ √d, so the cosine concentrates)."""
    c = torch.randn(x.shape[0], 1, x.shape[2], generator=g, device=g.device).to(x.device, x.dtype)
    return math.sqrt(rho) * c + math.sqrt(1.0 - rho) * x


@memo.cached("bb-intra-sequence")
def intra_sequence_stack(
    *, T: int, d_model: int, n_head: int, n_layer: int, n_seq: int, seeds, device: torch.device | str = "cpu"
) -> IntraSequenceResult:
    """001 §4.4, Fig 8: one sequence of T isotropic Gaussian vectors through L stacked random-init
    self-attention sub-layers (softmax, App B.1 init, pre-LN, no residual — the residual stream
    would keep the input and hide the averaging) and through L Attn0 blocks; intra-sequence
    cosine after each layer. The nulls: the standard stack's weights without the averaging
    (`_no_averaging_cosines`), on the same inputs (context: its signed cosine cannot leave 0) and
    on inputs that start at cosine NULL_START (`shared_inputs`: "toward 1"'s control)."""
    rows: dict[str, list] = {
        "standard": [],
        "attn0": [],
        "attn0_full": [],
        "inputs": [],
        "no_avg": [],
        "no_avg_abs": [],
        "no_avg_shared": [],
    }
    per_seq: dict[str, list] = {"standard": [], "attn0": []}
    std_cfg = TinyConfig.merged(**ATTN_STACK, d_model=d_model, n_head=n_head, n_layer=n_layer, max_len=T)
    a0_cfg = TinyConfig.attn0_stack(d_model=d_model, n_layer=n_layer, max_len=T, n_head=1)
    for seed in seeds:
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb5-inputs", T, seed)), device=device)
        rows["inputs"].append(intra_sequence_cosine(x)[0].mean())
        for name, cfg in (("standard", std_cfg), ("attn0", a0_cfg)):
            with torch.no_grad():
                model = tiny_decoder(cfg, derive_seed("bb5-weights", seed), device)
            off, full = _stack_cosines(model, x)  # (L, N) each
            rows[name].append([o.mean() for o in off])
            per_seq[name].append(off)
            if name == "attn0":
                rows["attn0_full"].append([f.mean() for f in full])
            else:
                off, absn = _no_averaging_cosines(model, x)
                rows["no_avg"].append([o.mean() for o in off])
                rows["no_avg_abs"].append(absn.mean())
                xs = shared_inputs(x, NULL_START, generator(derive_seed("bb5-shared", T, seed)))
                rows["no_avg_shared"].append([o.mean() for o in _no_averaging_cosines(model, xs)[0]])
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
        SeedCurves(np.array(rows["no_avg_shared"])),
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
        x = gaussian_inputs(n_seq, 1, d_model, generator(derive_seed("bb41-inputs", seed)), std=0.02, device=device)
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
            model = tiny_decoder(cfg, derive_seed("bb41-weights", seed), device)  # same weights with and without LN
            # GELU's input: the up-projection's output (the MLP is act(up_proj(x)))
            with activations.hooks(model, residual=False, modules=["mlp.up_proj"]) as cap, torch.no_grad():
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


# --------------------------------------------------------------------------- the claims' records and per-unit checks
