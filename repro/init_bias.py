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

from repro import probe
from repro.data import gaussian_inputs, random_tokens
from repro.models.hf import build_model
from repro.models.tiny import TinyConfig, TinyDecoder
from repro.runtime import derive_seed, generator, resolve_dtype
from repro.stats import Top1, top1_preference

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


def intra_sequence_cosine(x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per sequence of x (N, T, d): mean cosine over pairs i ≠ j, and over all T² pairs (A.3)."""
    z = torch.nn.functional.normalize(x.double(), dim=-1)
    T = z.shape[1]
    sq = z.sum(1).pow(2).sum(-1)  # ‖Σ_i z_i‖² = Σ_ij cos(z_i, z_j)
    return ((sq - T) / (T * (T - 1))).numpy(), (sq / T**2).numpy()


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


ATTN_STACK = dict(block="attn", attention="softmax", norm="layernorm", residual=False, positions="rope",
                  final_norm=False, bias=False, vocab_size=0)  # a pre-LN attention sub-layer, no residual


def intra_sequence_stack(*, T: int, d_model: int, n_head: int, n_layer: int, n_seq: int, seeds,
                         **_) -> IntraSequenceResult:
    """001 §4.4, Fig 8: one sequence of T isotropic Gaussian vectors through L stacked random-init
    self-attention sub-layers (softmax, App B.1 init, pre-LN, no residual — the residual stream
    would keep the input and hide the averaging) and through L Attn0 blocks; intra-sequence
    cosine after each layer."""
    rows: dict[str, list] = {"standard": [], "attn0": [], "attn0_full": []}
    per_seq: dict[str, list] = {"standard": [], "attn0": []}
    std_cfg = TinyConfig.merged(**ATTN_STACK, d_model=d_model, n_head=n_head, n_layer=n_layer, max_len=T)
    a0_cfg = TinyConfig.attn0_stack(d_model=d_model, n_layer=n_layer, max_len=T, n_head=1)
    for seed in seeds:
        x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb5-inputs", T, seed)))
        for name, cfg in (("standard", std_cfg), ("attn0", a0_cfg)):
            with torch.no_grad():
                hs = _tiny(cfg, derive_seed("bb5-weights", seed))(inputs_embeds=x, output_hidden_states=True).hidden_states
            off, full = zip(*(intra_sequence_cosine(h) for h in hs[1:]))
            rows[name].append([o.mean() for o in off])
            per_seq[name].append(np.stack(off))  # (L, N)
            if name == "attn0":
                rows["attn0_full"].append([f.mean() for f in full])
    sizes = dict(T=T, d_model=d_model, n_head=n_head, n_layer=n_layer, n_seq=n_seq, seeds=list(seeds))
    return IntraSequenceResult(
        T, sizes, SeedCurves(np.array(rows["standard"])), SeedCurves(np.array(rows["attn0"])),
        np.concatenate(per_seq["standard"], axis=1).std(1, ddof=1),
        np.concatenate(per_seq["attn0"], axis=1).std(1, ddof=1), SeedCurves(np.array(rows["attn0_full"])))


# --------------------------------------------------------------------------- LN and GELU (Fig 6)


@dataclass
class GeluSpreadResult:
    """001 Finding 4.1 / Fig 6: the GELU pre-activation with and without LayerNorm."""

    sizes: dict
    std: dict[str, SeedCurves]  # "norm" / "nonorm": (seeds, 1) std of the pre-activation
    cosine: dict[str, SeedCurves]  # (seeds, 1) inter-sequence cosine of the MLP's output
    samples: dict[str, np.ndarray]  # a sample of pre-activations per variant (for the figure)

    @property
    def theory(self) -> dict[str, float]:
        """App B.1 in closed form: LN(x) has unit variance, so (LN x)·W_up has std 0.02·√d; raw
        embeddings have std 0.02, so x·W_up has std 0.02²·√d."""
        d = self.sizes["d_model"]
        return {"norm": 0.02 * math.sqrt(d), "nonorm": 0.02 * 0.02 * math.sqrt(d)}


def gelu_input_spread(*, d_model: int, n_seq: int, seeds, sample: int = 20000, **_) -> GeluSpreadResult:
    """Embedding-like inputs N(0, 0.02²) (001 §4.1) through one GELU MLP block (App B.1 init)
    with its pre-LayerNorm and without; the std of the GELU input, and the inter-sequence
    cosine of the MLP's output (the contraction the engaged asymmetry causes)."""
    std: dict[str, list] = {"norm": [], "nonorm": []}
    cos: dict[str, list] = {"norm": [], "nonorm": []}
    samples: dict[str, np.ndarray] = {}
    for seed in seeds:
        x = gaussian_inputs(n_seq, 1, d_model, generator(derive_seed("bb41-inputs", seed)), std=0.02)
        for name, norm in (("norm", "layernorm"), ("nonorm", "none")):
            cfg = TinyConfig.merged(vocab_size=0, d_model=d_model, n_layer=1, block="mlp", norm=norm,
                                    activation="gelu", residual=False, positions="none", final_norm=False)
            model = _tiny(cfg, derive_seed("bb41-weights", seed))  # same weights with and without LN
            got: dict[str, torch.Tensor] = {}
            h = model.blocks[0].mlp.act.register_forward_hook(lambda m, i, o: got.__setitem__("u", i[0]))
            try:
                with torch.no_grad():
                    y = model(inputs_embeds=x, output_hidden_states=True).hidden_states[1][:, -1]
            finally:
                h.remove()
            u = got["u"].double()
            std[name].append([float(u.std())])
            cos[name].append([mean_pairwise_cosine(y)])
            if name not in samples:
                samples[name] = u.reshape(-1)[:sample].numpy()
    sizes = dict(d_model=d_model, d_ff=4 * d_model, n_seq=n_seq, seeds=list(seeds), input_std=0.02)
    return GeluSpreadResult(sizes, {k: SeedCurves(np.array(v)) for k, v in std.items()},
                            {k: SeedCurves(np.array(v)) for k, v in cos.items()}, samples)


# --------------------------------------------------------------------------- §3: random-token probes


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

    def at(self, length: int) -> int:
        return self.lengths.index(length)

    def freq_of(self, token: int, length: int) -> float:
        """How often this model predicts `token` at probe length `length`."""
        return float(np.mean(self.next_token[self.at(length)] == token))


RANKS = 50  # ranks drawn in the Fig 1a / Fig 10 histograms


def random_token_inputs(n_seq: int, T: int, vocab_size: int) -> torch.Tensor:
    """001 App B.2's fixed set of N uniform random token sequences: one set per (N, T, V), shared
    by every seed and architecture (paired comparisons)."""
    return random_tokens(n_seq, T, vocab_size, generator(derive_seed("random-token-probes", n_seq, T, vocab_size)))


def preference_run(arch: str, *, seed: int, d_model: int, n_layer: int, n_head: int, vocab_size: int,
                   n_seq: int, lengths, embedding_seed: int = 0, keep_states: bool = True,
                   device: torch.device | str = "cpu", dtype: str = "auto", batch_size: int = 64,
                   **_) -> PreferenceRun:
    """Build a random-init `arch` model (App B.1 init; embedding and LM head fixed by
    `embedding_seed` across seeds, footnote 2) and probe it (001 §3, App B.2)."""
    lengths = tuple(sorted(lengths))
    torch_dtype = resolve_dtype(dtype, device)
    model = build_model(arch, n_layer=n_layer, n_head=n_head, d_model=d_model, vocab_size=vocab_size, seed=seed,
                        embedding_seed=embedding_seed, n_positions=max(lengths), attn_implementation="sdpa",
                        dtype=torch_dtype).to(device)
    res = probe.probe(model, random_token_inputs(n_seq, max(lengths), vocab_size), lengths=lengths,
                      keep_states=keep_states, batch_size=batch_size, tie_seed=derive_seed("ties", arch, seed))
    sizes = dict(arch=arch, d_model=d_model, n_layer=n_layer, n_head=n_head, vocab_size=vocab_size, n_seq=n_seq,
                 lengths=list(lengths), embedding_seed=embedding_seed, dtype=str(torch_dtype).removeprefix("torch."))
    run = PreferenceRun(
        arch, seed, sizes, lengths,
        top1=[top1_preference(t, vocab_size) for t in res.next_token],
        top_dim=[top1_preference(t, d_model) for t in res.top_dim],
        rank_counts=np.stack([probe.rank_counts(t, vocab_size, RANKS) for t in res.next_token]),
        dim_rank_counts=np.stack([probe.rank_counts(t, d_model, RANKS) for t in res.top_dim]),
        final_cosine=np.array([mean_pairwise_cosine(h) for h in res.final_normed]),
        contraction_token=[probe.contraction_token(model, h) for h in res.final_normed],
        next_token=res.next_token.numpy(),
    )
    if res.states is not None:
        run.layer_cosine = np.array([[mean_pairwise_cosine(h) for h in per_len] for per_len in res.states])
    return run


@dataclass
class DirectionResult:
    """001 Finding 2.2 over many random models: does the contraction direction name the favourite?"""

    sizes: dict
    favourite: np.ndarray  # (M,) most predicted token per model
    favourite_count: np.ndarray  # (M,)
    direction_token: np.ndarray  # (M,) argmax of W_U · mean final-normed state
    log10_p: np.ndarray  # (M,) Bonferroni p of each favourite

    @property
    def agree(self) -> np.ndarray:
        return self.favourite == self.direction_token


def direction_agreement(*, arch: str, n_models: int, T: int, **sizes) -> DirectionResult:
    """Finding 2.2 protocol on `n_models` random-init models (seeds 0 … M−1, shared embedding
    and LM head): favourite token vs the contraction direction's token, at length T."""
    if n_models < 1:
        raise ValueError(f"direction_agreement needs n_models >= 1, got {n_models}")
    fav, cnt, dirs, lp = [], [], [], []
    for seed in range(n_models):
        run = preference_run(arch, seed=seed, lengths=(T,), keep_states=False, **sizes)
        fav.append(run.top1[0].token)
        cnt.append(run.top1[0].count)
        dirs.append(run.contraction_token[0])
        lp.append(run.top1[0].log10_p)
    info = {k: v for k, v in run.sizes.items() if k != "lengths"}
    return DirectionResult(dict(info, T=T, n_models=n_models), np.array(fav), np.array(cnt), np.array(dirs),
                           np.array(lp))


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


def pairwise_cosine_std(x: torch.Tensor) -> float:
    """Standard deviation of the cosine similarity over all distinct pairs of rows of x (N, d)."""
    z = torch.nn.functional.normalize(x.double(), dim=-1)
    g = z @ z.T
    iu = torch.triu_indices(len(z), len(z), offset=1)
    return float(g[iu[0], iu[1]].std())


def ablation_run(variant: str, *, seed: int, d_model: int, n_layer: int, n_head: int, vocab_size: int, T: int,
                 n_seq: int, device: torch.device | str = "cpu", dtype: str = "auto", **_) -> AblationRun:
    """A 12-layer pre-LN GELU decoder with RoPE (the source's nano GPT-2 block), as full,
    attention-only or MLP-only stack, fed N Gaussian sequences with the embedding's init
    statistics N(0, 0.02²) (001 §4.1); tied LM head for the next-token histogram."""
    if variant not in ABLATION_BLOCKS:
        raise ValueError(f"unknown ablation variant {variant!r}; choose one of {', '.join(ABLATION_BLOCKS)}")
    torch_dtype = resolve_dtype(dtype, device)
    cfg = TinyConfig.merged(vocab_size=vocab_size, d_model=d_model, n_layer=n_layer, n_head=n_head, max_len=T,
                            block=ABLATION_BLOCKS[variant], norm="layernorm", activation="gelu", residual=True,
                            positions="rope", final_norm=True, tie_embeddings=True)
    model = _tiny(cfg, derive_seed("bb3-weights", seed)).to(device=device, dtype=torch_dtype)
    x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb3-inputs", T, seed)), std=0.02)
    res = probe.probe(model, x, keep_states=True)
    states = res.states[0]  # (L+1, N, d)
    sizes = dict(variant=variant, d_model=d_model, n_layer=n_layer, n_head=n_head, vocab_size=vocab_size, T=T,
                 n_seq=n_seq, input_std=0.02, dtype=str(torch_dtype).removeprefix("torch."))
    return AblationRun(
        variant, seed, sizes, top1_preference(res.next_token[0], vocab_size),
        probe.rank_counts(res.next_token[0], vocab_size, RANKS), mean_pairwise_cosine(res.final_normed[0]),
        np.array([mean_pairwise_cosine(h) for h in states[1:]]),
        np.array([pairwise_cosine_std(h) for h in states[1:]]))
