"""Power of 001 §3's preference tests at the source's effects (BB-1, BB-1.1, BB-1.2, BB-1.3, BB-2.2):
the exact powers of the top-count, pooled-share and held-out tests, the simulated power of
Finding 2.2's agreement rate, and each claim's declaration (`Declared`: a typed
`repro.core.readings.Power` the claim file records with `claim.power`, and the N for 80%), every
effect from the source's Table 1 (its weakest frequency, moved along its own length trend) or
Finding 2.2 — except BB-1.2's size effect, which is ours (the source's ratio carried to our step).
Each power names the checks it `covers`; where the declared effect is not the claim's edge
(`edge` None) its 1 − power is no size at the edge, so a miss reads inconclusive, never contradicted.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import scipy.stats

from repro.born_biased import head_null
from repro.born_biased.preference_stats import FarWeaker, Trends, source_rate_at, weakest_source_freq
from repro.core import stats
from repro.core.readings import ALL_CHECKS, Power
from repro.ground.runtime import derive_seed


@dataclass(frozen=True)
class Declared:
    """A power at a declared effect (`claim.power(declared.power)`), and the sample size at which it
    reaches 80% (`n80`, None beyond the search)."""

    power: Power
    n80: int | None

    @property
    def value(self) -> float:
        return self.power.value


# --------------------------------------------------------------------------- the tests' powers


def power_every_cell(runs, rate: float, bar: float) -> tuple[float, int | None]:
    """Power of 001 App B.2's test in every Table 1 cell (§3):
    P[every cell's top count reaches the critical count] if the favourite's rate is `rate`
    (cells treated as independent: the lengths share prefixes, so this is approximate), and the
    N per cell at which it reaches 80% and, in words, 95% (`stats.either_way`)."""
    run = next(iter(runs.values()))
    n, n_cells = run.sizes["n_seq"], sum(len(r.lengths) for r in runs.values())

    def power_at(m: int) -> float:
        return head_null.top_count_power(m, run.null_rates, rate, bar) ** n_cells

    return power_at(n), stats.n_for_power(power_at, n_max=1_000_000), stats.either_way(power_at, "per cell", 1_000_000)


def trend_power(
    m: int,
    *,
    n_seeds: int,
    n_lengths: int,
    length_ratio: float,
    f_short: float,
    size_ratio: float,
    f_small: float,
    alpha: float,
) -> float:
    """BB-1.2 (001 §3 Finding 1.2) at m sequences per cell: the power of both one-sided pooled-share tests
    together (`power_pooled_share`) — the longest length against the shortest, pooled
    over `n_seeds` seeds, and the larger model against the smaller, pooled over seeds and
    `n_lengths` lengths — when the longer (larger) side's frequency is `length_ratio`
    (`size_ratio`) times the shorter (smaller) side's `f_short` (`f_small`)."""
    return length_power(m, n_seeds=n_seeds, length_ratio=length_ratio, f_short=f_short, alpha=alpha) * size_power(
        m, n_seeds=n_seeds, n_lengths=n_lengths, size_ratio=size_ratio, f_small=f_small, alpha=alpha
    )


def length_power(m: int, *, n_seeds: int, length_ratio: float, f_short: float, alpha: float) -> float:
    """BB-1.2's length test alone at m sequences per cell: the longest length against the shortest,
    pooled over `n_seeds` seeds (`power_pooled_share`)."""
    return power_pooled_share(m * n_seeds, min(1.0, length_ratio * f_short), m * n_seeds, f_short, alpha)


def size_power(m: int, *, n_seeds: int, n_lengths: int, size_ratio: float, f_small: float, alpha: float) -> float:
    """BB-1.2's size test alone at m sequences per cell: the larger model against the smaller, pooled
    over seeds and `n_lengths` lengths (`power_pooled_share`)."""
    n = m * n_seeds * n_lengths
    return power_pooled_share(n, min(1.0, size_ratio * f_small), n, f_small, alpha)


def held_out_power(n: int, rate: float, null_rates, other_rate: float) -> float:
    """Power of one `held_out_favourite` check (001 Finding 1.3): P[the selection half's top token
    is the favourite and the held-out half counts it at least once more in its own model than in
    the other] when the favourite's rate is `rate`, the other tokens follow the head's null rates
    (`null_rates`, head_null.gaussian_argmax_rates) and the other model predicts it at
    `other_rate`. A tie at the top, or a wrong token chosen, counts as a miss (a lower bound)."""
    half = n // 2
    held = n - half
    k = np.arange(1, half + 1)
    pk = scipy.stats.binom.pmf(k, half, rate)
    keep = pk > 1e-12  # the rest carries < 1e-9 of the mass
    select = float(sum(p * head_null.null_top_count_cdf(j - 1, half, null_rates) for j, p in zip(k[keep], pk[keep])))
    y = np.arange(held + 1)
    count = float((scipy.stats.binom.pmf(y, held, other_rate) * scipy.stats.binom.sf(y, held, rate)).sum())
    return select * count


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


# --------------------------------------------------------------------------- each claim's declaration

EVERY_CELL_METHOD = (
    "closed form: exact binomial tail against the critical count of the head's null, cells "
    "independent (the lengths share prefixes: approximate)"
)


def table1_power(runs, rate: float, bar: float) -> Declared:
    """BB-1 (001 §3, Table 1(a)): App B.2's Bonferroni test against the head's null in every cell of
    `runs`, at a favourite of `rate` (Table 1(a)'s weakest RoPE GPT-2 frequency, T = 64)."""
    power, n80, n95 = power_every_cell(runs, rate, bar)
    run = next(iter(runs.values()))
    power = Power(
        value=power,
        covers=("largest log10 p over the",),  # the cells' check; Fig 1a's ratio has no power of its own
        edge=None,  # the source's weakest favourite, not the edge (any favourite above the null): no size at the edge
        sd="none",
        effect=f"a favourite at {rate:.2%} of predictions in every cell (Table 1(a)'s weakest, T = 64)",
        effect_value=rate,
        basis="source: 001 Table 1(a), the weakest RoPE GPT-2 top-1 frequency (T = 64)",
        test=f"App B.2's Bonferroni top-count test against the head's null, log10 p ≤ {bar:.2f} in every cell",
        sample=f"{len(runs)} seeds × {len(run.lengths)} lengths, N = {run.sizes['n_seq']} sequences per cell",
        method=EVERY_CELL_METHOD,
        decide=f"N = {n80} per cell",
        decide_either=f"N = {n95}",
    )
    return Declared(power, n80)


def architecture_power(runs, arch: str, rate: float, alpha: float) -> Declared:
    """BB-1.1 (001 §3, Table 1(a)–(b)): App B.2's test at `alpha` in every cell of one architecture,
    at that architecture's weakest Table 1 favourite (T = 64). LLaMA's favourite holds well under
    0.1% of the predictions in Table 1(b), so at small N its expected count is a fraction of one
    and the test cannot see it: the power says at which N it could."""
    power, n80, n95 = power_every_cell(runs, rate, math.log10(alpha))
    run = next(iter(runs.values()))
    power = Power(
        value=power,
        covers=(f"{arch}: largest log10 p",),
        edge=None,  # the source's weakest favourite, not the edge: no size at the edge
        sd="none",
        effect=f"{arch}: a favourite at {rate:.2%} of predictions in every cell (Table 1's weakest at T = 64)",
        effect_value=rate,
        basis=f"source: 001 Table 1({'a' if arch == 'rope-gpt2' else 'b'}), the weakest {arch} top-1 frequency "
        "(T = 64)",
        test=f"App B.2's top-count test against the head's null at α = {alpha} in every cell",
        sample=f"{len(runs)} seeds × {len(run.lengths)} lengths, N = {run.sizes['n_seq']} sequences per cell",
        method=EVERY_CELL_METHOD,
        decide=f"N = {n80} per cell",
        decide_either=f"N = {n95}",
    )
    return Declared(power, n80)


def far_weaker_power(w: FarWeaker, source_table1: dict, source_ratio: float, length_ratio: float) -> Declared:
    """BB-1.1's "far weaker" at the source's effect only (no measured count enters it): RoPE GPT-2's
    favourite at Table 1(a)'s weakest frequency (T = 64) moved to each of our lengths by Table
    1(a)'s own length trend (`length_ratio`); at the source's ratio (`source_ratio`, ≈ 0.015)
    LLaMA's favourite is below its head's noise floor, so its pooled top count is that floor's
    expectation (the top count of N draws from its head's null rates, `head_null.expected_top_count`),
    held fixed, and RoPE GPT-2's pooled count binomial (`power_at_most_share`), at 1%."""
    rate64 = weakest_source_freq(source_table1, "rope-gpt2")
    g_rate = float(np.mean([source_rate_at(source_table1, length_ratio, T) for T in w.pairs[0][0].lengths]))

    def floor(N: int) -> int:  # LLaMA's pooled top count at its heads' noise floor
        return round(sum(head_null.expected_top_count(N, l.null_rates) * len(l.lengths) for _, l in w.pairs))

    def power_at(N: int) -> float:
        return power_at_most_share(floor(N), w.n_cells * N, g_rate, w.share, 0.01)

    n80 = stats.n_for_power(power_at, n_max=1_000_000)
    power = Power(
        value=power_at(w.n),
        covers=(ALL_CHECKS,),  # p ≤ 0.01 for share ≤ 1/3 implies the ratio check (share < 1/3)
        edge=0.5 - source_ratio,  # the source's ratio, not the bar 1/2: no size at the edge
        sd="none",
        effect=f"LLaMA's favourite at {source_ratio:.3f}× RoPE GPT-2's "
        f"(Table 1 means), RoPE GPT-2's at {g_rate:.2%} over our lengths (Table 1(a)'s "
        f"weakest {rate64:.2%} at T = 64, ×{length_ratio:.2f} per 4× of length)",
        effect_value=source_ratio,
        basis="source: 001 Table 1(a)–(b) (the ratio of their means; Table 1(a)'s weakest frequency and "
        "length trend for RoPE GPT-2)",
        test="exact one-sided binomial test at 1% of LLaMA's share of the pooled top-1 counts ≤ 1/3",
        sample=f"{len(w.pairs)} seeds × {len(w.pairs[0][0].lengths)} lengths per architecture, N = {w.n} per cell",
        method=f"closed form: exact, LLaMA's pooled count at its heads' expected noise floor ({floor(w.n)} at "
        f"this N), RoPE GPT-2's ~ Bin({w.n_cells}·N, {g_rate:.4f})",
        decide=f"N = {n80} per cell",
        decide_either="N = " + stats.either_way(power_at, "per cell", n_max=1_000_000),
    )
    return Declared(power, n80)


def size_effect(size_ratio: float, our_step: float, source_step: float) -> float:
    """The source's size ratio of top-1 frequencies (`size_ratio`, over its step of `source_step`
    in non-embedding weights) carried to our step `our_step`, log-linearly in the weights:
    size_ratio ** (log our_step / log source_step), never beyond the source's own ratio. The source
    gives two sizes only, so a straight line in log weights is the least it implies; at our ci and
    decide sizes (12L/768d against 4L/768d: a 3× step against the source's 14.2×) the effect is
    ×1.16 in place of ×1.44."""
    if our_step <= 1.0:
        return 1.0
    return float(size_ratio ** min(1.0, math.log(our_step) / math.log(source_step)))


def trends_power(
    t: Trends, source_table1: dict, length_ratio: float, size_ratio: float, alpha: float, source_step: float
) -> tuple[Declared, Declared]:
    """BB-1.2's two tests, each with its own power (`length_power`, `size_power`), when the longer
    (larger) side's frequency is a declared ratio times our shorter (smaller) side's.

    Length: the source's own effect — our nano model's frequency at Table 1(a)'s weakest (T = 64)
    moved to each length by Table 1(a)'s trend (`length_ratio` per 4×); basis "source"; the claim's
    edge is "grows at all" (×1), so this effect is not the edge and its 1 − power is no size there.
    Size: OUR extrapolation, not the source's number — Table 1(c)'s ratio (`size_ratio`, over the
    source's step of `source_step` in weights) carried log-linearly to our step (`size_effect`: the
    source's own ratio at paper, ×1.16 at ci and decide's 3× depth step); basis "interest", and we
    take it as the edge of "grows with size" at our step (edge 0: 1 − power is the size)."""
    nano = [source_rate_at(source_table1, length_ratio, T) for T in t.lengths]
    f_short = nano[0]
    ours = size_effect(size_ratio, t.scale_ratio, source_step)
    f_small = float(np.mean(nano)) / (ours if t.probe_is_larger else 1.0)
    steps = math.log(t.lengths[-1] / t.lengths[0], 4)
    r_len = length_ratio**steps
    sample = f"{t.n_seeds} seeds × {len(t.lengths)} lengths × 2 model sizes, N = {t.n} per cell"
    test = f"one-sided pooled-share binomial test at {alpha}"
    len_at = functools.partial(length_power, n_seeds=t.n_seeds, length_ratio=r_len, f_short=f_short, alpha=alpha)
    size_at = functools.partial(
        size_power, n_seeds=t.n_seeds, n_lengths=len(t.lengths), size_ratio=ours, f_small=f_small, alpha=alpha
    )
    n_len, n_size = (stats.n_for_power(f, n_max=200_000) for f in (len_at, size_at))
    length = Power(
        value=len_at(t.n),
        covers=("longer sequences, more extreme",),
        effect=f"top-1 frequency ×{r_len:.2f} from T={t.lengths[0]} to T={t.lengths[-1]} (Table 1(a): "
        f"×{length_ratio:.2f} per 4× of length)",
        effect_value=r_len,
        edge=None,  # the source's trend, not the edge ×1: no size at the edge
        sd="none",
        basis="source: 001 Table 1(a) (length trend, weakest frequency at T = 64)",
        test=test + ", longest vs shortest length",
        sample=sample,
        method=f"closed form: exact over both pooled counts; shorter-side frequency from the source ({f_short:.2%})",
        decide=f"N = {n_len} per cell",
        decide_either="N = " + stats.either_way(len_at, "per cell", n_max=200_000),
    )
    size = Power(
        value=size_at(t.n),
        covers=("larger model, more extreme",),
        effect=f"top-1 frequency ×{ours:.2f} for the larger model (Table 1(c) over (a): ×{size_ratio:.2f} over "
        f"{source_step:.1f}× the weights, carried log-linearly to our {t.scale_ratio:.1f}×)",
        effect_value=ours,
        edge=0.0,  # our bar for "grows with size" at our step
        sd="none",
        basis=f"interest: our extrapolation of the source's ×{size_ratio:.2f} (Table 1(c) over (a), "
        f"{source_step:.1f}× the weights) log-linearly to our {t.scale_ratio:.1f}× step — not the source's number",
        test=test + ", larger vs smaller model",
        sample=sample,
        method=f"closed form: exact over both pooled counts; smaller-side frequency from the source ({f_small:.2%})",
        decide=f"N = {n_size} per cell",
        decide_either="N = " + stats.either_way(size_at, "per cell", n_max=200_000),
        direction_p=float(t.p_size),
    )
    return Declared(length, n_len), Declared(size, n_size)


def held_out_declared(runs, T: int, rate: float) -> Declared:
    """BB-1.3's held-out checks (`held_out_power`), both seeds' (independent models): each seed's
    favourite at `rate` (Table 1(a)'s weakest, T = 64, moved to T by its length trend) in its own
    model and at chance (1/V) in the other, the other tokens at the head's null rates."""
    run = next(iter(runs.values()))
    n, V = run.sizes["n_seq"], run.sizes["vocab_size"]

    def power_at(N: int) -> float:  # both seeds' checks must pass (independent models)
        return float(np.prod([held_out_power(N, rate, r.null_rates, 1 / V) for r in runs.values()]))

    n80 = stats.n_for_power(power_at, n_max=100_000)
    power = Power(
        value=power_at(n),
        covers=("held-out half",),  # both seeds' held-out checks; the differ/agreement checks have none
        edge=None,  # the source's weakest favourite, not the edge: no size at the edge
        sd="none",
        effect=f"each seed's favourite at {rate:.2%} of its own predictions (T = {T}), at chance "
        "(1/V) in the other seed",
        effect_value=rate,
        basis="source: 001 Table 1(a), the weakest RoPE GPT-2 top-1 frequency (T = 64), moved to our T by "
        "Table 1(a)'s length trend",
        test="favourite chosen on the first half of the probes; held-out count in its own model at least one "
        "above the other seed's, for both seeds",
        sample=f"{len(runs)} seeds, N = {n} probes (T = {T}) each, split in halves",
        method="closed form: exact binomials for the selection (the other tokens at the head's null rates, a "
        "tie or a wrong token counted as a miss: a lower bound) and the held-out counts",
        decide=f"N = {n80} probes per seed" if n80 else "more than 100,000 probes per seed",
        decide_either="N = " + stats.either_way(power_at, "probes per seed"),
    )
    return Declared(power, n80)


def agreement_power(directions, source_agreement: float) -> Declared:
    """BB-2.2's rate test by simulation (`mode_agreement_power`): if the direction names each model's
    true favourite at the source's rate, how often does our Wilson interval contain it when our
    favourite is the mode of N predictions, with each model's measured top counts as its rates? At
    small N the mode is often not the model's favourite, which dilutes the rate."""
    m = len(directions.agree)
    n, V = directions.sizes["n_seq"], directions.sizes["vocab_size"]

    def power_at(N: int, sims: int = 1000) -> float:
        return mode_agreement_power(
            directions.rank_counts, n, V, source_agreement, sims=sims, n_scale=N / n, seed=derive_seed("bb22-power")
        )

    n80 = stats.n_for_power(lambda N: power_at(N, 400), n_max=100_000)
    power = Power(
        value=power_at(n),
        covers=("agreement rate: ",),
        edge=0.0,
        sd="plug-in",  # each model's measured top counts as its token rates
        effect=f"the direction names the true favourite in {source_agreement:.0%} of models",
        effect_value=source_agreement,
        basis="source: 001 Finding 2.2 (76% over 100 random models)",
        test="the source's rate inside our Wilson 95% interval",
        sample=f"{m} models × N = {n} predictions",
        method=f"simulation, 1,000 replicates of {m} models; nuisance: each model's token rates its measured "
        f"top-{directions.rank_counts.shape[1]} counts / N (plug-in, optimistic; the favourite half a "
        "count ahead)",
        decide=f"N ≈ {n80} predictions per model (same models, T)",
        decide_either="N ≈ " + stats.either_way(lambda N: power_at(N, 400), "predictions per model (same models, T)"),
    )
    return Declared(power, n80)
