"""The statistics 001 §3's preference claims (BB-1, BB-1.1, BB-1.2, BB-1.3, BB-1x, BB-2.2) read over
the cells of Table 1's probes: one cell per (seed, probe length) of a `preference_runs.PreferenceRun`.

Significance is App B.2's Bonferroni test of a cell's top-1 count, against the head's own null
(each token's argmax rate for isotropic final states, `head_null.gaussian_argmax_rates`) rather
than exact uniformity; the negative control is each model's draw of N isotropic final states
through its own norm and head. Fig 1a's ratio to the random baseline, "far weaker" (LLaMA against
RoPE GPT-2), the length and size trends, BB-1.3's favourite chosen on one half of the probes and
counted on the other (`held_out_favourite`), the hidden-dimension cells against their spread null
and Finding 2.2's agreement test. The powers at the source's effects are in `preference_power`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from repro.born_biased import head_null
from repro.core import stats
from repro.core.stats import BinomialCI, Top1
from repro.ground.runtime import derive_seed


def size_label(run) -> str:
    """A probe run's shape, N and dtype (001 §3's Table 1 settings), as a record's label reads it."""
    s = run.sizes
    return f"{s['n_layer']}L/{s['d_model']}d, N={s['n_seq']}, {s['dtype']}"


def cells(runs, attr: str = "top1"):
    """(seed, T, Top1) for every (seed, probe length) of `runs`; attr "top1" (next token) or "top_dim"."""
    return [(seed, T, getattr(run, attr)[i]) for (_, seed), run in runs.items() for i, T in enumerate(run.lengths)]


def weakest_source_freq(source_table1: dict, arch: str) -> float:
    """The source's weakest top-1 frequency of `arch` in Table 1 at its shortest length (64),
    as a rate: the effect a probe at our (shorter) lengths should at least see."""
    return min(f for (a, _, T), (_, f, _) in source_table1.items() if a == arch and T == 64) / 100


def geomean(x) -> float:
    """Geometric mean (the source's trend effects over its Table 1 rows, 001 §3 Finding 1.2)."""
    return float(np.exp(np.mean(np.log(x))))


@dataclass(frozen=True)
class HeldOutFavourite:
    """A favourite chosen on one half of the probes and counted on the other (`held_out_favourite`)."""

    token: int  # the most predicted token on the selection half
    own: float  # its frequency in the selecting model, held-out half
    other: float  # its frequency in the other model, the same held-out sequences
    n_held: int  # sequences in the held-out half


def held_out_favourite(selecting: np.ndarray, other: np.ndarray, vocab_size: int) -> HeldOutFavourite:
    """001 Table 1 / Finding 1.3 ("different seeds, different top-1 IDs"): the favourite of one
    model's predictions `selecting` (N,) chosen on the first half of the probes and its frequency
    counted on the second half, in that model and in `other` (N,), another model's predictions
    on the same sequences (App B.2's probes are shared by every seed, `preference_runs.random_token_inputs`).
    Choosing and counting on the same probes would count the selection's own luck (winner's
    curse: the top of N null draws sits above its rate); the halves are independent i.i.d.
    sequences, so the held-out count is the chosen token's rate, unbiased."""
    selecting, other = np.asarray(selecting), np.asarray(other)
    if selecting.shape != other.shape or selecting.ndim != 1 or selecting.size < 2:
        raise ValueError(
            f"held_out_favourite needs two (N,) prediction arrays, N >= 2; got {selecting.shape}, {other.shape}"
        )
    half = selecting.size // 2
    token = int(np.argmax(np.bincount(selecting[:half], minlength=vocab_size)))
    held = slice(half, None)
    return HeldOutFavourite(
        token, float(np.mean(selecting[held] == token)), float(np.mean(other[held] == token)), selecting.size - half
    )


# --------------------------------------------------------------------------- the source's effects


def source_length_ratio(source_table1: dict) -> float:
    """The source's length trend as a ratio of top-1 frequencies per 4× of length: Table 1(a) (the
    nano model, our shape), the geometric mean of its four 4× steps (001 §3 Finding 1.2)."""
    return geomean(
        [
            source_table1[("rope-gpt2", s, 4 * T)][1] / source_table1[("rope-gpt2", s, T)][1]
            for s in (42, 43)
            for T in (64, 256)
        ]
    )


def source_size_ratio(source_table1: dict, source_table1c: dict) -> float:
    """The source's size trend as a ratio of top-1 frequencies: Table 1(c) 1.2B over Table 1(a) nano
    at equal length, the geometric mean of its six cells (001 §3 Finding 1.2)."""
    return geomean([f / source_table1[("rope-gpt2", s, T)][1] for (s, T), f in source_table1c.items()])


def source_scale_step(size_step: dict) -> float:
    """The source's size step (Table 1(a) nano → Table 1(c) 1.2B) as a ratio of non-embedding
    weights ∝ n_layer · d_model² (`model_scale`'s measure): 24 · 2048² / (12 · 768²) ≈ 14.2."""
    return block_weights(*size_step["1.2B"]) / block_weights(*size_step["nano"])


def block_weights(n_layer: int, d_model: int) -> int:
    """A model's non-embedding weights up to a constant, n_layer · d_model²: the measure of size
    BB-1.2's trend and its declared effect use."""
    return n_layer * d_model**2


def source_rate_at(source_table1: dict, length_ratio: float, T: int) -> float:
    """Table 1(a)'s weakest RoPE GPT-2 favourite (T = 64) moved to length T by Table 1(a)'s own
    length trend (`length_ratio` per 4× of length): the favourite's rate a nano model at T shows."""
    return weakest_source_freq(source_table1, "rope-gpt2") * length_ratio ** math.log(T / 64, 4)


def source_arch_ratio(source_table1: dict) -> float:
    """LLaMA's top-1 frequency over RoPE GPT-2's, each the mean of its Table 1 rows (001 Table 1(a)–(b))."""
    src = {
        a: np.mean([f for (aa, _, _), (_, f, _) in source_table1.items() if aa == a]) for a in ("rope-gpt2", "llama")
    }
    return src["llama"] / src["rope-gpt2"]


# --------------------------------------------------------------------------- BB-1: Fig 1a


@dataclass(frozen=True)
class Fig1aSeed:
    """One seed's Fig 1a ratio at the longest length (`fig1a`)."""

    ratio: float  # its top-1 count / the random baseline's expected top count
    interval: str  # the ratio with its 95% Wilson interval, and whether the source's frequency is inside
    control: float  # the same ratio of its N isotropic final states through the same norm and head


@dataclass(frozen=True)
class Fig1a:
    """001 Fig 1a's ratio (the top count over the top count of N uniform draws) at our N."""

    n: int
    source_ratio: float  # the source's ratio (58.5×)
    source_n: int  # at the source's N
    base: float  # expected top count of n uniform draws (Fig 1a's red line at rank 1)
    k99: int  # the head's null 99th percentile of the top count of n predictions
    source_freq: float  # the source's ratio at its own N as a top-1 frequency
    table1_t64: str  # Table 1(a)'s frequencies at T = 64 as a range of ratios at our N
    seeds: dict[int, Fig1aSeed]

    @property
    def threshold(self) -> float:
        """One count above the head's null 99th percentile, as a ratio."""
        return (self.k99 + 1) / self.base


def fig1a(runs, T: int, source_fig1a: tuple, source_table1: dict) -> Fig1a:
    """Fig 1a at length T for every seed of `runs`: the source's ratio is at N = 2,000 and an
    unstated length; it grows with N (the baseline's top count barely moves), so it is also read
    as the top-1 frequency it implies and at our N."""
    run = next(iter(runs.values()))
    n, V = run.sizes["n_seq"], run.sizes["vocab_size"]
    uniform = np.full(V, 1.0 / V)
    base = head_null.expected_top_count(n, uniform)
    k99 = head_null.null_top_count_quantile(n, run.null_rates, 0.99)
    ratio_src, n_src = source_fig1a
    f_src = ratio_src * head_null.expected_top_count(n_src, uniform) / n_src
    t64 = [f for (a, _, TT), (_, f, _) in source_table1.items() if a == "rope-gpt2" and TT == 64]
    seeds = {}
    for (_, seed), r in runs.items():
        t = r.top1[r.at(T)]
        ci = stats.binomial_ci(t.count, n)
        ratio = t.count / base
        interval = (
            f"{ratio:.2f} [{ci.low * n / base:.2f}, {ci.high * n / base:.2f}]; source's at our N "
            f"{f_src * n / base:.1f} {'inside' if ci.low <= f_src <= ci.high else 'outside'}"
        )
        seeds[seed] = Fig1aSeed(ratio, interval, r.null_draw_top1().count / base)
    t64_ratios = f"{min(t64) / 100 * n / base:.1f}–{max(t64) / 100 * n / base:.1f}"
    return Fig1a(n, ratio_src, n_src, base, k99, f_src, t64_ratios, seeds)


# --------------------------------------------------------------------------- BB-1.1: far weaker


@dataclass(frozen=True)
class FarWeaker:
    """BB-1.1's "far weaker": LLaMA's top-1 counts against RoPE GPT-2's, pooled over seeds and lengths."""

    pairs: list  # (RoPE GPT-2 run, LLaMA run) per seed
    rope_count: int  # RoPE GPT-2's pooled top-1 count
    llama_count: int  # LLaMA's
    share: float  # the largest share of LLaMA in the pooled counts that "far weaker" allows
    p: float  # one-sided exact binomial p of LLaMA's share ≤ `share`
    seed_counts: list[int]  # RoPE GPT-2's pooled count per seed (the control's two sides)
    p_control: float  # the same test between the two RoPE GPT-2 seeds
    rope_cosine: float  # inter-sequence cosine of the final-normed states at the longest length
    llama_cosine: float
    n_cells: int  # cells per architecture
    n: int  # sequences per cell

    @property
    def ratio(self) -> float:
        """LLaMA's pooled top-1 count over RoPE GPT-2's."""
        return self.llama_count / max(self.rope_count, 1)


def far_weaker(table1, share: float) -> FarWeaker:
    """001 §3 Finding 1.1: under "at least half as strong" (same N per cell) LLaMA's share of the
    pooled top-1 counts is Bin(total, ≥ `share`); the one-sided exact test, and its control
    between the two RoPE GPT-2 seeds (one architecture, not far weaker)."""
    pairs = [(table1[("rope-gpt2", s)], table1[("llama", s)]) for (a, s) in table1 if a == "llama"]
    g_counts = sum(r.top1[i].count for r, _ in pairs for i in range(len(r.lengths)))
    l_counts = sum(l.top1[i].count for _, l in pairs for i in range(len(l.lengths)))
    p = stats.binomial_p(l_counts, g_counts + l_counts, share, alternative="less")
    seeds = [sum(t.count for t in r.top1) for r, _ in pairs]
    p_ctl = stats.binomial_p(min(seeds), sum(seeds), share, alternative="less")
    g_cos = np.mean([r.final_cosine[-1] for r, _ in pairs])
    l_cos = np.mean([l.final_cosine[-1] for _, l in pairs])
    n_cells = sum(len(r.lengths) for r, _ in pairs)
    return FarWeaker(
        pairs, g_counts, l_counts, share, p, seeds, p_ctl, g_cos, l_cos, n_cells, pairs[0][0].sizes["n_seq"]
    )


# --------------------------------------------------------------------------- BB-1.2: length and size


def model_scale(runs) -> int:
    """Non-embedding weights of a probe run's shape, ∝ n_layer · d_model²: which model is larger."""
    s = next(iter(runs.values())).sizes
    return block_weights(s["n_layer"], s["d_model"])


@dataclass(frozen=True)
class Trends:
    """BB-1.2's two pooled-share tests: the longest length against the shortest (pooled over seeds)
    and the larger model against the smaller (pooled over seeds and lengths)."""

    lengths: tuple[int, ...]
    n: int  # sequences per cell
    n_seeds: int
    long_count: int  # pooled top-1 count at the longest length
    short_count: int  # at the shortest
    p_length: float  # one-sided binomial p of "longer, more extreme"
    probe_is_larger: bool  # whether the Table 1 probe's model (bb_1) is the larger one
    large_count: int  # the larger model's pooled top-1 count
    small_count: int
    p_size: float  # one-sided binomial p of "larger, more extreme"
    cosine_length: float  # final-normed cosine, longest minus shortest length (mechanism)
    cosine_size: float  # final-normed cosine at the longest length, larger minus smaller model
    larger: str  # `size_label` of the larger model
    smaller: str
    scale_ratio: float = 1.0  # `model_scale` of the larger model over the smaller's


def trends(big, other) -> Trends:
    """001 §3 Finding 1.2 on RoPE GPT-2's Table 1 probes `big` and the same probe at the other size
    `other` (which of the two is larger depends on the profile: `model_scale`). Under "no trend"
    each pooled count is equally likely to come from either side: Bin(total, 1/2), one-sided."""
    lengths = next(iter(big.values())).lengths
    n = next(iter(big.values())).sizes["n_seq"]
    long_ = sum(r.top1[-1].count for r in big.values())
    short = sum(r.top1[0].count for r in big.values())
    p_len = stats.binomial_p(long_, long_ + short, 0.5, alternative="greater")
    larger_runs, smaller_runs = sorted((big, other), key=model_scale, reverse=True)
    large = sum(t.count for r in larger_runs.values() for t in r.top1)
    smaller = sum(t.count for r in smaller_runs.values() for t in r.top1)
    p_size = stats.binomial_p(large, large + smaller, 0.5, alternative="greater")
    cos_len = np.mean([r.final_cosine[-1] - r.final_cosine[0] for r in big.values()])
    cos_size = np.mean([larger_runs[k].final_cosine[-1] - smaller_runs[k].final_cosine[-1] for k in big])
    b_size, s_size = (size_label(next(iter(runs.values()))) for runs in (larger_runs, smaller_runs))
    return Trends(
        lengths,
        n,
        len(big),
        long_,
        short,
        p_len,
        larger_runs is big,
        large,
        smaller,
        p_size,
        cos_len,
        cos_size,
        b_size,
        s_size,
        model_scale(larger_runs) / model_scale(smaller_runs),
    )


# --------------------------------------------------------------------------- BB-1.3: favourites by seed


def pair_agreement(tokens) -> float:
    """The share of distinct pairs (i < j) of `tokens` that are the same token."""
    return float(np.mean([a == b for i, a in enumerate(tokens) for b in tokens[i + 1 :]]))


@dataclass(frozen=True)
class SeedFavourite:
    """One seed's favourite at the longest length, against the other seed (`seed_favourites`)."""

    seed: int
    other_seed: int
    token: int  # the favourite over all N probes
    freq: float  # its frequency over all N probes
    held: HeldOutFavourite  # chosen on the first half, counted on the other, own vs the other seed
    null: HeldOutFavourite  # the same split of its N isotropic final states (no favourite)
    null_own: float  # its isotropic draw chosen and counted on the same N probes: own frequency (%)


def seed_favourites(runs, T: int) -> list[SeedFavourite]:
    """001 Table 1 / Finding 1.3 for the first two seeds of `runs` at length T, each against the other."""
    (k42, r42), (k43, r43) = list(runs.items())[:2]
    V, i, n = r42.sizes["vocab_size"], r42.at(T), r42.sizes["n_seq"]
    return [
        SeedFavourite(
            ka[1],
            kb[1],
            ra.top1[-1].token,
            ra.top1[-1].freq,
            held_out_favourite(ra.next_token[i], rb.next_token[i], V),
            held_out_favourite(ra.null_next_token, rb.next_token[i], V),
            float(np.bincount(ra.null_next_token).max() / n) * 100,
        )
        for (ka, ra), (kb, rb) in (((k42, r42), (k43, r43)), ((k43, r43), (k42, r42)))
    ]


# --------------------------------------------------------------------------- BB-1x: hidden dimensions


@dataclass(frozen=True)
class DimCell:
    """One (seed, length) cell of the last block's most frequent argmax hidden dimension."""

    seed: int
    T: int
    top: Top1  # the top dimension, its count and App B.2's p against uniform
    log10_p: float  # App B.2's Bonferroni p against the per-dimension spread null
    null_top_ratio: float  # the spread null's largest rate over uniform's (1/d)


def dim_cells(runs) -> tuple[list[DimCell], list[float]]:
    """001 App B.2's test over the d hidden dimensions with the spread null: each dimension
    independent N(0, std_j²) with the measured per-dimension std over sequences (the spread without
    the shared offset that the contraction adds), its argmax rates by quadrature
    (`head_null.gaussian_argmax_rates`). Also the control per seed: N draws from that null at the
    longest length, through the same test."""
    cells, controls = [], []
    for (_, seed), run in runs.items():
        n, d = run.sizes["n_seq"], run.sizes["d_model"]
        for i, T in enumerate(run.lengths):
            t = run.top_dim[i]
            rates = run.dim_null_rates(i)
            cells.append(DimCell(seed, T, t, head_null.null_top_log10_p(t.count, n, rates), rates.max() * d))
        i = len(run.lengths) - 1
        rng = np.random.default_rng(derive_seed("bb1x-null-draw", seed))
        draw = np.argmax(rng.standard_normal((n, d)) * run.dim_std[i], axis=1)
        controls.append(head_null.null_top_log10_p(np.bincount(draw).max(), n, run.dim_null_rates(i)))
    return cells, controls


# --------------------------------------------------------------------------- BB-2.2: direction agreement


@dataclass(frozen=True)
class DirectionTest:
    """Finding 2.2 over many random models: how often the contraction direction's token is the favourite."""

    k: int  # models where it is
    m: int  # models
    ci: BinomialCI  # Wilson 95% interval of k / m
    p0: float  # chance: the favourite's largest frequency over the models
    p: float  # one-sided binomial p of k against p0
    k_control: int  # models whose direction token is the *next* model's favourite
    p_control: float
    significant: np.ndarray  # (m,) the models whose favourite is significant at alpha (App B.2)


def direction_test(directions, alpha: float) -> DirectionTest:
    """The null: the direction token is unrelated to the favourite; it then coincides with the
    favourite no more often than the favourite's own frequency (bounded by its max over models).
    Control: each model's direction token against the next model's favourite (unrelated by
    construction), through the same binomial test."""
    agree = directions.agree
    k, m = int(agree.sum()), len(agree)
    ci = stats.binomial_ci(k, m)
    p0 = float(directions.favourite_count.max() / directions.sizes["n_seq"])
    p = stats.binomial_p(k, m, p0, alternative="greater")
    k_ctl = int((directions.direction_token == np.roll(directions.favourite, -1)).sum())
    p_ctl = stats.binomial_p(k_ctl, m, p0, alternative="greater")
    return DirectionTest(k, m, ci, p0, p, k_ctl, p_ctl, directions.log10_p < math.log10(alpha))
