"""SeedPrint: "is model B descended from model A?" from initialisation-induced output biases.

Source: 001 §5 (Fig 11), §6.1 (Algorithm 1, Tables 4–6) and App B.3 (Kendall τ, the Gaussian
null, Fig 13). Two tests are implemented on the same response matrices, so a report can say
which one separates lineages:

- ``"paper"`` — Algorithm 1 as written (§6.1.1): mean output ḡ over n random inputs for each
  model; the top-m dimensions of each mean; identity dimensions S = M(f) ∩ M(f'); per-dim
  Kendall τ between the two models' responses over the n inputs; a one-sided t-test and a
  one-sided Mann–Whitney U test of {τ_j} against a null set built by the same pipeline on two
  independent N(0, I) matrices of the same shape (Alg. 1 line 8, App B.3 "Constructing the
  Null"), p averaged over 10 null draws (§6.1.2 "we report p-values averaged over 10
  independent trials"); same lineage iff p < α = 0.01.
- ``"released"`` — the authors' released code's test (`repro.seedprint.released`, read from
  YnezT0311/SeedPrints at a cited commit): the bottom-k dimensions of both models' raw means
  (intersected), a row softmax at temperature 10 over those columns, the mean of the per-dim τ's
  and a closed-form null, p = min(1, 2·sf(z)); Gaussian inputs drawn with a fresh init's
  embedding statistics. Where it and Algorithm 1 differ: docs/topics.md's SeedPrint section.

Inputs (`SeedPrintConfig.inputs`): ``"tokens"``, n uniform random token sequences (001 §3, the
Table 1 / Fig 11 setup), or ``"gaussian"``, n sequences of i.i.d. Gaussian vectors fed as
input embeddings with the scalar mean and std of the *base* model's embedding output (§6.1.1:
"independently sampling ℓ random vectors from a d-dimensional isotropic Gaussian"; §4.1 for
matching the embedding's statistics). Both models see the same inputs. Features: the final
hidden state at the last position (the LM head's input, default: §6.1.1 footnote 6) or the
logits there.

Choices the source leaves open (stated here, recorded with every result):
- Kendall's τ is τ-b (`scipy.stats.kendalltau`), which equals App B.3's (C − D)/(n(n−1)/2)
  when there are no ties and handles the ties a bfloat16 response has.
- t-test: Student's two-sample t (scipy's default, equal variances), one-sided "greater".
- Fewer than 2 identity dimensions: a t statistic is undefined; p = 1 (no evidence of lineage).
  A null draw with fewer than 2 dimensions is redrawn (another seed) so each of the 10 null
  sets can carry a test.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from scipy import stats
from torch import nn

from repro.core import arch, lens
from repro.ground.runtime import ReproError, derive_seed, generator
from repro.seedprint import released as rel
from repro.seedprint.released import ReleasedResult, released_variant

ALPHA = 0.01  # §6.1.1 "We declare significance at p < 0.01" (a literal: the CLI reads it from the source)
INPUTS = ("tokens", "gaussian")
FEATURES = ("hidden", "logits")
VARIANTS = ("paper", "released")


@dataclass(frozen=True)
class SeedPrintConfig:
    """One SeedPrint measurement. Defaults are the source's (001 §5, §6.1: n = 10,000 random
    sequences of length 1024, m = 50 as in Fig 11, 10 null trials, α = 0.01)."""

    n: int = 10_000
    length: int = 1024
    m: int = 50  # Algorithm 1's fingerprint size (top-m dims per model)
    inputs: str = "tokens"
    feature: str = "hidden"
    null_trials: int = 10
    alpha: float = ALPHA
    seed: int = 0  # random inputs and null draws
    k: int | None = None  # released variant: bottom-k dims (None: its rule's k at this width)
    temperature: float = 10.0  # released variant: row softmax temperature ("softmax_T10")
    released_rule: str = "tables"  # released variant: which of the authors' runs (released.RULES)
    batch_size: int = 32
    align: bool = False  # also Algorithm 1 after a cross-fitted alignment of hidden dimensions
    matched: bool = False  # also `matched_test` (hidden dimensions matched, rotation null)
    rotations: int = 99  # matched_test's null: p ≥ 1/(1 + rotations)

    def __post_init__(self) -> None:
        for name in ("n", "length", "null_trials", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ReproError(f"SeedPrintConfig.{name} must be ≥ 1 (got {getattr(self, name)!r})")
        if self.m < 2:
            raise ReproError(f"SeedPrintConfig.m must be ≥ 2: Algorithm 1 needs ≥ 2 identity dims (got {self.m})")
        if self.n < 3:
            raise ReproError(f"SeedPrint needs n ≥ 3 random inputs for a Kendall τ (got {self.n})")
        if self.inputs not in INPUTS:
            raise ReproError(f"unknown SeedPrint inputs {self.inputs!r}; choose one of {', '.join(INPUTS)}")
        if self.feature not in FEATURES:
            raise ReproError(f"unknown SeedPrint feature {self.feature!r}; choose one of {', '.join(FEATURES)}")
        if not 0 < self.alpha < 1:
            raise ReproError(f"alpha must lie in (0, 1) (got {self.alpha})")
        if self.k is not None and self.k < 1:
            raise ReproError(f"k must be ≥ 1 (got {self.k})")
        if not self.temperature > 0:  # also rejects NaN
            raise ReproError(f"temperature must be > 0 (got {self.temperature})")
        if self.released_rule not in rel.RULES:
            raise ReproError(f"unknown released-test rule {self.released_rule!r}; choose one of {', '.join(rel.RULES)}")
        if self.matched and self.feature != "hidden":
            raise ReproError(
                "the matched test matches hidden dimensions; it goes with feature 'hidden' (logits need "
                "no matching: a token is the same dimension in both models)"
            )
        if self.matched and self.rotations < 1 / self.alpha - 1:
            raise ReproError(
                f"{self.rotations} rotations cannot give p ≤ α = {self.alpha:g}: the matched test's "
                f"smallest p is 1/(1 + rotations); use ≥ {math.ceil(1 / self.alpha - 1)}"
            )


# --------------------------------------------------------------------------- responses


def _embedding(model: nn.Module) -> nn.Module:
    return lens.resolve(model, lens.arch_map(model).embed)


def random_inputs(base: nn.Module, cfg: SeedPrintConfig, vocab: int | None = None) -> torch.Tensor:
    """The n random inputs both models see: (n, length) token ids uniform over the base
    model's vocabulary (or its first `vocab` ids, when the suspect's vocabulary is smaller), or
    (n, length, d) Gaussian embeddings with the scalar mean and std of the base model's
    embedding *output* (Gemma's embedding multiplies by √d inside the module; inputs_embeds
    bypass it, so the scale is applied here)."""
    g = generator(derive_seed("seedprint-inputs", cfg.seed, cfg.inputs))
    emb = _embedding(base)
    weight = emb.weight.detach()
    if cfg.inputs == "tokens":
        return torch.randint(0, min(weight.shape[0], vocab or weight.shape[0]), (cfg.n, cfg.length), generator=g)
    scale = float(getattr(emb, "embed_scale", 1.0))
    w = weight.float()
    mean, std = float(w.mean()) * scale, float(w.std()) * scale
    return torch.randn(cfg.n, cfg.length, weight.shape[1], generator=g) * std + mean


def responses(model: nn.Module, inputs: torch.Tensor, *, feature: str = "hidden", batch_size: int = 32) -> torch.Tensor:
    """(n, d_out) float32 responses at the last position: the final hidden state (after the
    final norm: the LM head's input) or the logits (float32 LM head on it)."""
    from repro.born_biased.preference_probe import probe

    if feature not in FEATURES:
        raise ReproError(f"unknown SeedPrint feature {feature!r}; choose one of {', '.join(FEATURES)}")
    if inputs.dim() == 3:
        width = arch.unembedding(model).shape[1]
        if inputs.shape[-1] != width:
            raise ReproError(
                f"Gaussian inputs are {inputs.shape[-1]} wide but the model is {width} wide; "
                "SeedPrint compares models of one width"
            )
    elif int(inputs.max()) >= _embedding(model).weight.shape[0]:
        raise ReproError(
            f"token inputs reach id {int(inputs.max())} but the model's vocabulary has "
            f"{_embedding(model).weight.shape[0]} tokens; the two models must share a vocabulary"
        )
    result = probe(model, inputs, batch_size=batch_size)
    hidden = result.final_normed[0]  # (n, d)
    if feature == "hidden":
        return hidden
    device = arch.unembedding(model).device
    with torch.no_grad():
        chunks = [
            lens.unembed(model, h.to(device), normed=True, compute_dtype=torch.float32).cpu()
            for h in hidden.split(1024)
        ]
    return torch.cat(chunks)


def random_word_texts(n: int, n_words: int, seed: int = 0, *, corpus: str = "brown") -> list[str]:
    """n strings of `n_words` words drawn uniformly from the word types of `corpus`'s validation
    split (Brown by default; any name `data.corpus_documents` takes): random inputs that models
    with *different tokenizers* can share (each reads the same strings through its own
    tokenizer; see `text_inputs`)."""
    from repro.core import data

    words = sorted({w for d in data.corpus_documents(corpus, "validation") for w in d.text.split() if w.isalpha()})
    g = generator(derive_seed("seedprint-words", seed, n, n_words))
    idx = torch.randint(0, len(words), (n, n_words), generator=g)
    return [" ".join(words[i] for i in row) for row in idx.tolist()]


def text_inputs(tokenizer: Any, texts: Sequence[str], length: int) -> torch.Tensor:
    """(n, length) token ids: the first `length` tokens of each text under `tokenizer`, no
    special tokens (a text shorter than that is an error: pass more words)."""
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    short = [i for i, row in enumerate(ids) if len(row) < length]
    if short:
        raise ReproError(f"{len(short)} texts have fewer than {length} tokens; draw longer texts")
    return torch.tensor([row[:length] for row in ids], dtype=torch.long)


# --------------------------------------------------------------------------- statistics


def kendall_per_dim(a: torch.Tensor | np.ndarray, b: torch.Tensor | np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """Kendall τ-b between column j of `a` and of `b` (n × d responses) for each j in `dims`.
    A constant column has no defined τ; it contributes 0 (no association)."""
    if tuple(a.shape) != tuple(b.shape) or len(a.shape) != 2:
        raise ReproError(
            f"kendall_per_dim needs two n × d matrices of one shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    cols = list(dims)
    # only the compared columns are converted (a few of d): the whole-matrix float64 copy was
    # most of a compare's time
    a, b = (
        x.detach()[:, cols].cpu().double().numpy()
        if isinstance(x, torch.Tensor)
        else np.asarray(x)[:, cols].astype(np.float64)
        for x in (a, b)
    )
    out = np.empty(len(cols))
    for i in range(len(cols)):
        tau = stats.kendalltau(a[:, i], b[:, i]).statistic
        out[i] = 0.0 if not np.isfinite(tau) else tau
    return out


def _top(mean: torch.Tensor, m: int) -> set[int]:
    return set(torch.topk(mean, min(m, mean.numel())).indices.tolist())


def identity_dims(mean_a: torch.Tensor, mean_b: torch.Tensor, m: int) -> list[int]:
    """Alg. 1 lines 2–3: S = top-m(ā) ∩ top-m(b̄), sorted."""
    return sorted(_top(mean_a, m) & _top(mean_b, m))


@functools.lru_cache(maxsize=64)
def gaussian_null_taus(n: int, d: int, m: int, trials: int, seed: int) -> tuple[tuple[float, ...], ...]:
    """Alg. 1 line 8 / App B.3: `trials` null τ sets, each from two independent N(0, I)^{n×d}
    matrices through the same top-m ∩ top-m and per-dim τ pipeline. Sets with fewer than 2
    dimensions are redrawn. Depends on (n, d, m) only, so it is cached per process."""
    out = []
    attempt = 0
    while len(out) < trials:
        g = generator(derive_seed("seedprint-null", n, d, m, seed, attempt))
        attempt += 1
        y1 = torch.randn(n, d, generator=g)
        y2 = torch.randn(n, d, generator=g)
        dims = identity_dims(y1.mean(0), y2.mean(0), m)
        if len(dims) < 2:
            if attempt > 50 * trials:
                raise ReproError(f"the Gaussian null keeps fewer than 2 identity dims at m={m}, d={d}; raise m")
            continue
        out.append(tuple(kendall_per_dim(y1.numpy(), y2.numpy(), dims).tolist()))
    return tuple(out)


@dataclass
class AlgorithmOneResult:
    """Algorithm 1 on one (base, suspect) pair."""

    p_t: float  # one-sided t-test p, averaged over the null trials
    p_u: float  # one-sided Mann–Whitney U p, averaged over the null trials
    dims: list[int]  # identity dimensions S
    taus: np.ndarray  # τ_j over S
    null_sizes: list[int]  # |S_null| of each trial
    alpha: float = ALPHA

    @property
    def same_lineage_t(self) -> bool:
        return self.p_t < self.alpha

    @property
    def same_lineage_u(self) -> bool:
        return self.p_u < self.alpha

    @property
    def same_lineage(self) -> bool:
        """Both tests reject (the source reports both and they agree in every table)."""
        return self.same_lineage_t and self.same_lineage_u

    def summary(self) -> dict[str, Any]:
        return dict(
            p_t=self.p_t,
            p_u=self.p_u,
            n_identity_dims=len(self.dims),
            mean_tau=float(self.taus.mean()) if len(self.taus) else float("nan"),
            null_sizes=self.null_sizes,
            same_lineage=self.same_lineage,
        )


def algorithm_one(
    fa: torch.Tensor, fb: torch.Tensor, *, m: int = 50, null_trials: int = 10, alpha: float = ALPHA, seed: int = 0
) -> AlgorithmOneResult:
    """001 Algorithm 1 on two n × d response matrices (rows: the same random inputs)."""
    if fa.shape != fb.shape or fa.dim() != 2:
        raise ReproError(
            f"Algorithm 1 needs two n × d responses of one shape, got {tuple(fa.shape)} "
            f"and {tuple(fb.shape)} (models of different widths cannot be compared)"
        )
    n, d = fa.shape
    dims = identity_dims(fa.double().mean(0), fb.double().mean(0), m)
    taus = kendall_per_dim(fa, fb, dims)
    nulls = gaussian_null_taus(n, d, m, null_trials, seed)
    if len(taus) < 2:
        return AlgorithmOneResult(1.0, 1.0, dims, taus, [len(x) for x in nulls], alpha)
    p_t, p_u = [], []
    for null in nulls:
        null = np.asarray(null)
        p_t.append(float(stats.ttest_ind(taus, null, alternative="greater").pvalue))
        p_u.append(float(stats.mannwhitneyu(taus, null, alternative="greater").pvalue))
    p_t = [1.0 if not np.isfinite(p) else p for p in p_t]  # identical constant samples
    return AlgorithmOneResult(float(np.mean(p_t)), float(np.mean(p_u)), dims, taus, [len(x) for x in nulls], alpha)


# --------------------------------------------------------------------------- the whole test


@dataclass
class SeedPrintResult:
    paper: AlgorithmOneResult
    released: ReleasedResult
    config: SeedPrintConfig
    info: dict = field(default_factory=dict)
    aligned: AlgorithmOneResult | None = None  # with config.align: `aligned_algorithm_one`
    matched: "MatchedResult | None" = None  # with config.matched: `matched_test`

    def summary(self) -> dict[str, Any]:
        out = {
            "paper": self.paper.summary(),
            "released": self.released.summary(),
            "config": asdict(self.config),
            **self.info,
        }
        if self.aligned is not None:
            out["aligned"] = self.aligned.summary()
        if self.matched is not None:
            out["matched"] = self.matched.summary()
        return out


def aligned_algorithm_one(
    fa: torch.Tensor, fb: torch.Tensor, *, m: int, null_trials: int, seed: int, alpha: float = ALPHA
) -> AlgorithmOneResult:
    """Algorithm 1 after a cross-fitted alignment of hidden dimensions: fb's dimensions are
    matched to fa's by the assignment that maximises |Pearson correlation| over the first half of
    the inputs (Hungarian algorithm), and the test runs on the second half only, so the alignment
    cannot manufacture a match on the data it is tested on. It sees through a relabelled (or
    sign-flipped, rescaled) residual basis, which defeats the dimension-by-dimension test."""
    half = fa.shape[0] // 2
    rows, cols = _match(_zscore(fa[:half].double()).T @ _zscore(fb[:half].double()) / (half - 1))
    order = cols[torch.argsort(rows)]
    return algorithm_one(fa[half:], fb[half:, order], m=m, null_trials=null_trials, alpha=alpha, seed=seed)


@dataclass
class MatchedResult:
    """`matched_test` on one (base, suspect) pair: the median held-out correlation of matched
    dimensions, the same statistic after each random rotation of the suspect's responses (the
    null), and the Monte-Carlo p-value (1 + #{null ≥ observed}) / (1 + rotations)."""

    statistic: float
    null: np.ndarray
    p: float
    alpha: float = ALPHA

    @property
    def same_lineage(self) -> bool:
        return self.p <= self.alpha

    def summary(self) -> dict[str, Any]:
        return dict(
            p=self.p,
            statistic=self.statistic,
            null_mean=float(self.null.mean()),
            null_max=float(self.null.max()),
            rotations=len(self.null),
            same_lineage=self.same_lineage,
        )


def _zscore(x: torch.Tensor) -> torch.Tensor:
    """Columns (over the second-to-last axis) to mean 0, sd 1."""
    return (x - x.mean(-2, keepdim=True)) / (x.std(-2, keepdim=True) + 1e-12)


def whiten(x: torch.Tensor, floor: float = 1e-3) -> torch.Tensor:
    """ZCA whitening of one model's responses x (n, d) on their correlation matrix: columns
    standardised, then multiplied by C^(-1/2) (eigenvalues floored at `floor` × the largest, so
    directions the responses barely use are not blown up). Equivariant under permutations, sign
    flips and rotations of the dimensions, invariant to their positive rescaling. What it removes
    is what unrelated trained models share: a few high-variance learned directions that every
    dimension carries a little of (measured: the matched statistic of unrelated trained lineage
    models fell from 0.35–0.46 to 0.00–0.04 once whitened, while their descendants stayed at 0.6–0.8)."""
    z = _zscore(x.double())
    w, v = torch.linalg.eigh(z.T @ z / (z.shape[0] - 1))
    return z @ (v * w.clamp_min(floor * float(w.max())).rsqrt()) @ v.T


def _match(fit: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The assignment of suspect dimensions (columns) to base dimensions (rows) that maximises the
    summed |Pearson r| of `fit` (d_a, d_b), by the Hungarian algorithm: (rows, cols) index tensors."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(-fit.abs().numpy())
    return torch.as_tensor(rows), torch.as_tensor(cols)


def _matched_statistics(za1: torch.Tensor, za2: torch.Tensor, fb1: torch.Tensor, fb2: torch.Tensor) -> np.ndarray:
    """For each suspect in a batch fb1, fb2 (k, n/2, d): the median over base dimensions of the
    held-out correlation with the suspect dimension matched to it on the fitting half (Hungarian
    algorithm on |Pearson r|, the sign kept from that half)."""
    n1, n2 = za1.shape[0], za2.shape[0]
    fit = za1.T @ _zscore(fb1) / (n1 - 1)  # (k, d, d)
    held = za2.T @ _zscore(fb2) / (n2 - 1)  # (k, d, d)
    out = np.empty(fit.shape[0])
    for k in range(fit.shape[0]):
        r, c = _match(fit[k])
        out[k] = float((torch.sign(fit[k, r, c]) * held[k, r, c]).median())
    return out


@functools.lru_cache(maxsize=4)
def _haar_rotations(d: int, k: int, seed: int) -> torch.Tensor:
    """k Haar-distributed d × d orthogonal matrices (k, d, d), float64, from one seeded generator."""
    g = torch.Generator().manual_seed(int(seed))
    q, r = torch.linalg.qr(torch.randn(k, d, d, generator=g, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)


def matched_test(
    fa: torch.Tensor, fb: torch.Tensor, *, rotations: int = 99, seed: int = 0, alpha: float = ALPHA, chunk: int = 33
) -> MatchedResult:
    """A lineage test that sees through any relabelling, sign flip or rescaling of the suspect's
    dimensions and whose null goes through the same matching step.

    Each model's responses are whitened on their own (`whiten`: ZCA on the correlation matrix),
    the suspect's dimensions are matched to the base's on the first half of the inputs (the
    assignment maximising |Pearson r|), and the statistic is the median over dimensions of the
    matched pairs' correlation on the second half. A descendant keeps its init's per-dimension
    pattern, so nearly every dimension finds its partner; unrelated models share, at most, learned
    features that are not tied to single coordinates. The null: the same pipeline — matching
    included — on the suspect's responses times a random orthogonal matrix, which keeps everything
    basis-free about the suspect (its Gram matrix, hence any learned likeness to the base that a
    rotation-invariant comparison would see) and destroys only a coordinate-wise relation to the
    base. p = (1 + #{null ≥ observed}) / (1 + rotations): the smallest p is 1/(1 + rotations), so
    `rotations` must be at least 1/α − 1 for a verdict at α. The rotations depend only on (width,
    rotations, seed), so every pair of one width is tested against the same ones. Widths must match."""
    if fa.shape != fb.shape:
        raise ReproError(f"matched_test needs responses of one shape, got {tuple(fa.shape)} and {tuple(fb.shape)}")
    if rotations < 1 / alpha - 1:
        raise ReproError(
            f"matched_test: {rotations} rotations cannot give p ≤ α = {alpha} (need ≥ {math.ceil(1 / alpha - 1)})"
        )
    fa, fb = whiten(fa), whiten(fb)  # each model on its own: nothing of one reaches the other
    half = fa.shape[0] // 2
    za1, za2 = _zscore(fa[:half]), _zscore(fa[half:])
    observed = float(_matched_statistics(za1, za2, fb[None, :half], fb[None, half:])[0])
    qs = _haar_rotations(fb.shape[1], rotations, seed)
    null = np.concatenate([_matched_statistics(za1, za2, fb[:half] @ q, fb[half:] @ q) for q in qs.split(chunk)])
    p = (1 + int((null >= observed).sum())) / (1 + rotations)
    return MatchedResult(observed, null, p, alpha)


def compare(
    fa: torch.Tensor, fb: torch.Tensor, cfg: SeedPrintConfig, released: tuple[torch.Tensor, torch.Tensor] | None = None
) -> SeedPrintResult:
    """Both tests on precomputed responses (rows: the same inputs); `released`: the responses the
    released test reads instead (its own Gaussian inputs, `seedprint`), when they differ."""
    ra, rb = (fa, fb) if released is None else released
    if isinstance(fa, torch.Tensor) and isinstance(fb, torch.Tensor):
        fa, fb = fa.double(), fb.double()  # once here: both tests read float64 (no-op conversions below)
    aligned = (
        aligned_algorithm_one(fa, fb, m=cfg.m, null_trials=cfg.null_trials, alpha=cfg.alpha, seed=cfg.seed)
        if cfg.align
        else None
    )
    matched = matched_test(fa, fb, rotations=cfg.rotations, seed=cfg.seed, alpha=cfg.alpha) if cfg.matched else None
    return SeedPrintResult(
        algorithm_one(fa, fb, m=cfg.m, null_trials=cfg.null_trials, alpha=cfg.alpha, seed=cfg.seed),
        released_variant(ra, rb, rule=cfg.released_rule, k=cfg.k, temperature=cfg.temperature, alpha=cfg.alpha),
        cfg,
        {"n": int(fa.shape[0]), "d_out": int(fa.shape[1])},
        aligned,
        matched,
    )


def comparable_or_raise(base: tuple[int, int], suspect: tuple[int, int], cfg: SeedPrintConfig) -> None:
    """One clear message when the two models' (vocabulary, width) rule out `cfg.feature`, naming
    the feature that could still compare them, or saying that none can: the hidden state is
    compared dimension by dimension (one width), the logits token by token (one vocabulary);
    token inputs are drawn from the ids both vocabularies hold."""
    (va, da), (vb, db) = base, suspect
    none = "no SeedPrint mode can compare them (the hidden state needs one width, the logits one vocabulary)"
    if cfg.feature == "hidden" and da != db:
        alt = (
            f"--feature logits can still compare them (one {va}-token vocabulary; with --variant paper, released "
            "or both: the matched test reads hidden states)"
            if va == vb
            else none
        )
        raise ReproError(
            f"the models have different widths ({da} vs {db}) and the hidden-state feature compares "
            f"responses dimension by dimension; {alt}"
        )
    if cfg.feature == "logits" and va != vb:
        alt = (
            f"--feature hidden can still compare them (one width, {da}; token inputs below id {min(va, vb)})"
            if da == db
            else none
        )
        raise ReproError(
            f"the models have different vocabularies ({va} vs {vb} tokens) and the logits feature "
            f"compares responses token by token; {alt}"
        )
    if cfg.inputs == "gaussian" and da != db:
        raise ReproError(
            f"Gaussian inputs are embeddings of one width; the models are {da} and {db} wide: use "
            f"token inputs (--inputs tokens) with --feature logits" + ("" if va == vb else f"; {none}")
        )


def logits_m(m: int, width: int, vocab: int) -> int:
    """Algorithm 1's fingerprint size on the logits: the hidden mode's share of the dimensions
    (m of `width`) of the vocabulary. The same m over 4,096+ logits leaves two random top-m sets
    almost no common dimension (expected m²/V), so the Gaussian null cannot even be drawn."""
    return min(vocab, max(m, round(m * vocab / width)))


def seedprint(base: nn.Module, suspect: nn.Module, cfg: SeedPrintConfig | None = None) -> SeedPrintResult:
    """Is `suspect` descended from `base`? Runs both on the same random inputs and applies both
    tests. Gaussian inputs: the released test reads its own, drawn as the authors' code draws
    them (`released.gaussian_inputs`: a fresh init's embedding statistics)."""
    cfg = cfg or SeedPrintConfig()
    (va, da), (vb, db) = (tuple(arch.unembedding(m).shape) for m in (base, suspect))
    comparable_or_raise((va, da), (vb, db), cfg)
    if cfg.feature == "logits":  # m is the hidden mode's share of the dimensions (`logits_m`)
        cfg = dataclasses.replace(cfg, m=logits_m(cfg.m, da, va))
    x = random_inputs(base, cfg, vocab=min(va, vb))
    fa = responses(base, x, feature=cfg.feature, batch_size=cfg.batch_size)
    fb = responses(suspect, x, feature=cfg.feature, batch_size=cfg.batch_size)
    released = None
    if cfg.inputs == "gaussian":
        xr = rel.gaussian_inputs(base, cfg.n, cfg.length, cfg.seed)
        released = tuple(responses(m, xr, feature=cfg.feature, batch_size=cfg.batch_size) for m in (base, suspect))
    result = compare(fa, fb, cfg, released)
    result.info.update(
        inputs=cfg.inputs,
        feature=cfg.feature,
        m=cfg.m,
        dtype=[str(next(m.parameters()).dtype) for m in (base, suspect)],
    )
    return result
