"""Thin wrappers over scipy.stats: the tests every claim asserts with.

Each function returns plain floats / small frozen dataclasses so records are JSON-able.
The binomial tail with a Bonferroni correction over the vocabulary is the significance test
of 001 App B.2 (is the model's favourite next token more frequent than chance?). The source
reports p-values down to 1e-137, far below what a float64 holds once multiplied out in other
settings, so every p here also comes as log10(p), computed in log space.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import scipy.special
import scipy.stats

from repro.ground.errors import ReproError

if TYPE_CHECKING:  # the torch helpers here (PositionStd, std_by_position) only call tensor methods
    import torch

_LN10 = math.log(10.0)
# Below this, scipy's survival function may be subnormal or zero: switch to an explicit
# log-space sum of the pmf tail.
_SF_FLOOR = 1e-280


# --------------------------------------------------------------------------- binomial tails


def binomial_log10_sf(k: int, n: int, p: float) -> float:
    """log10 P[X ≥ k] for X ~ Bin(n, p), accurate far into the tail (no underflow)."""
    k, n = int(k), int(n)
    if n < 0 or not 0.0 <= p <= 1.0:
        raise ReproError(f"binomial tail needs n ≥ 0 and 0 ≤ p ≤ 1 (got n={n}, p={p})")
    if k <= 0:
        return 0.0
    if k > n:
        return -math.inf
    sf = float(scipy.stats.binom.sf(k - 1, n, p))
    if sf >= _SF_FLOOR:
        return math.log10(sf)
    # Deep upper tail: log-sum-exp of log pmf(j) for j = k..n (terms shrink geometrically
    # once k > np, so the sum is dominated by its first terms and stays exact in log space).
    j = np.arange(k, n + 1)
    logpmf = scipy.stats.binom.logpmf(j, n, p)
    return float(scipy.special.logsumexp(logpmf)) / _LN10


def bonferroni_binomial_log10_p(k_max: int, n: int, vocab_size: int) -> float:
    """log10 of the Bonferroni-corrected p of 001 App B.2: min(0, log10 V + log10 P[X ≥ k_max]),
    X ~ Bin(n, 1/V). Use this when p itself would underflow."""
    if vocab_size < 1:
        raise ReproError(f"vocab_size must be ≥ 1 (got {vocab_size})")
    tail = binomial_log10_sf(k_max, n, 1.0 / vocab_size)
    return min(0.0, math.log10(vocab_size) + tail)


def bonferroni_binomial_p(k_max: int, n: int, vocab_size: int) -> float:
    """001 App B.2: p = min(1, V · P[X ≥ k_max]), X ~ Bin(n, 1/V).

    The most frequent of V tokens is tested against the uniform null; multiplying by V is
    the Bonferroni correction for having picked the maximum. May underflow to 0.0 for very
    strong preferences: see `bonferroni_binomial_log10_p`.
    """
    if vocab_size < 1:
        raise ReproError(f"vocab_size must be ≥ 1 (got {vocab_size})")
    if k_max <= 0:
        return 1.0
    sf = float(scipy.stats.binom.sf(int(k_max) - 1, int(n), 1.0 / vocab_size))
    if sf >= _SF_FLOOR:
        return min(1.0, vocab_size * sf)
    return 10.0 ** bonferroni_binomial_log10_p(k_max, n, vocab_size)


@dataclass(frozen=True)
class Top1:
    """The most frequent token of a sample, with its Bonferroni binomial significance."""

    token: int
    count: int
    n: int
    freq: float
    p: float
    log10_p: float
    uniform_freq: float  # 1 / V, the null frequency


def top1_preference(token_ids: Sequence[int] | np.ndarray, vocab_size: int) -> Top1:
    """Most frequent token among `token_ids` (e.g. argmax next-token predictions on random
    inputs) and the 001 App B.2 test of its frequency against uniform over `vocab_size`.
    Ties go to the smallest token id."""
    ids = np.asarray(token_ids if not hasattr(token_ids, "numpy") else token_ids.numpy())
    ids = ids.reshape(-1).astype(np.int64)
    if ids.size == 0:
        raise ReproError("top1_preference needs at least one token id")
    if ids.min() < 0 or ids.max() >= vocab_size:
        raise ReproError(f"token ids must lie in [0, {vocab_size}); got [{ids.min()}, {ids.max()}]")
    counts = np.bincount(ids, minlength=vocab_size)
    token = int(np.argmax(counts))
    count = int(counts[token])
    n = int(ids.size)
    log10_p = bonferroni_binomial_log10_p(count, n, vocab_size)
    return Top1(
        token=token,
        count=count,
        n=n,
        freq=count / n,
        p=bonferroni_binomial_p(count, n, vocab_size),
        log10_p=log10_p,
        uniform_freq=1.0 / vocab_size,
    )


# --------------------------------------------------------------------------- tests


@dataclass(frozen=True)
class TestResult:
    """A test statistic and its p-value (scipy's, for the stated alternative)."""

    __test__ = False  # not a pytest class

    statistic: float
    p: float
    alternative: str = "two-sided"

    def __iter__(self):
        """Unpacks as (statistic, p), like scipy's result objects."""
        return iter((self.statistic, self.p))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> TestResult:
    """Kendall's τ-b between two rankings (scipy.stats.kendalltau, two-sided p)."""
    r = scipy.stats.kendalltau(np.asarray(x, float), np.asarray(y, float))
    return TestResult(float(r.statistic), float(r.pvalue), "two-sided")


def one_sided_t(sample_a: Sequence[float], sample_b: Sequence[float], alternative: str = "greater") -> TestResult:
    """Welch's t-test (unequal variances) of mean(a) vs mean(b); default H1: mean(a) > mean(b)."""
    r = scipy.stats.ttest_ind(
        np.asarray(sample_a, float), np.asarray(sample_b, float), equal_var=False, alternative=alternative
    )
    return TestResult(float(r.statistic), float(r.pvalue), alternative)


def mann_whitney_u(a: Sequence[float], b: Sequence[float], alternative: str = "greater") -> TestResult:
    """Mann–Whitney U of a vs b (U statistic of `a`); default H1: a stochastically greater."""
    r = scipy.stats.mannwhitneyu(np.asarray(a, float), np.asarray(b, float), alternative=alternative)
    return TestResult(float(r.statistic), float(r.pvalue), alternative)


def paired_t(a: Sequence[float], b: Sequence[float], alternative: str = "two-sided") -> TestResult:
    """Paired t-test of a − b (scipy.stats.ttest_rel); H1 by `alternative` (mean(a) > mean(b): "greater")."""
    r = scipy.stats.ttest_rel(np.asarray(a, float), np.asarray(b, float), alternative=alternative)
    return TestResult(float(r.statistic), float(r.pvalue), alternative)


@dataclass(frozen=True)
class BlockedF:
    """A two-way ANOVA without interaction on a (blocks × treatments) table: the treatments' F
    with blocks (e.g. seeds) removed, its p, its degrees of freedom and the residual (block ×
    treatment) variance, the noise a treatment effect is judged against."""

    statistic: float
    p: float
    df_treatments: int
    df_error: int
    ms_error: float


def blocked_f(table: np.ndarray) -> BlockedF:
    """The repeated-measures F-test of "the treatments differ" on `table` (blocks × treatments,
    one observation per cell; e.g. seeds × cut layers, every layer trained from each seed's
    weights and data order): F = MS_treatments / MS_error on (t − 1, (b − 1)(t − 1)) degrees of
    freedom, the classical randomised complete block design (scipy has no blocked ANOVA)."""
    x = np.asarray(table, float)
    if x.ndim != 2 or min(x.shape) < 2:
        raise ReproError(f"blocked_f needs a (blocks × treatments) table, both ≥ 2 (got shape {x.shape})")
    b, t = x.shape
    resid = x - x.mean(1, keepdims=True) - x.mean(0, keepdims=True) + x.mean()
    df_t, df_e = t - 1, (b - 1) * (t - 1)
    ms_t = b * float(((x.mean(0) - x.mean()) ** 2).sum()) / df_t
    ms_e = float((resid**2).sum()) / df_e
    f = ms_t / ms_e if ms_e > 0 else float("inf")
    return BlockedF(float(f), float(scipy.stats.f.sf(f, df_t, df_e)), df_t, df_e, ms_e)


def power_blocked_f(effects: Sequence[float], sd: float, blocks: int, alpha: float = 0.05) -> float:
    """Power of `blocked_f` at level `alpha` with `blocks` blocks when the treatments' true means
    are `effects` (any offset) and the residual sd is `sd`: the noncentral F with
    λ = blocks · Σ(μ − μ̄)² / sd²."""
    mu = np.asarray(effects, float)
    if blocks < 2 or sd <= 0 or mu.size < 2:
        raise ValueError(f"power_blocked_f needs ≥ 2 blocks, ≥ 2 treatments and sd > 0 (got {blocks}, {mu.size}, {sd})")
    df_t, df_e = mu.size - 1, (blocks - 1) * (mu.size - 1)
    lam = blocks * float(((mu - mu.mean()) ** 2).sum()) / sd**2
    crit = scipy.stats.f.isf(alpha, df_t, df_e)
    if lam <= 0:  # scipy's ncf is wrong at λ = 0 (it returns sf − 1); the central F's level
        return float(alpha)
    return float(scipy.stats.ncf.sf(crit, df_t, df_e, lam))


def one_sample_t(x: Sequence[float], popmean: float = 0.0, alternative: str = "two-sided") -> TestResult:
    """One-sample t-test of mean(x) against `popmean` (scipy.stats.ttest_1samp)."""
    r = scipy.stats.ttest_1samp(np.asarray(x, float), popmean, alternative=alternative)
    return TestResult(float(r.statistic), float(r.pvalue), alternative)


def wilcoxon_signed_rank(
    a: Sequence[float], b: Sequence[float] | None = None, alternative: str = "two-sided", zero_method: str = "wilcox"
) -> TestResult:
    """Wilcoxon signed-rank test of a − b (or of a, when b is None) about 0 (scipy.stats.wilcoxon,
    its default method; `zero_method` "wilcox" drops zero differences). The inputs keep their
    floating dtype, as scipy would: float32 differences give scipy's float32 p-value."""
    x = np.asarray(a)
    y = None if b is None else np.asarray(b)
    r = scipy.stats.wilcoxon(x, y, alternative=alternative, zero_method=zero_method)
    return TestResult(float(r.statistic), float(r.pvalue), alternative)


def spearman(x: Sequence[float], y: Sequence[float]) -> TestResult:
    """Spearman's rank correlation ρ and its two-sided p (scipy.stats.spearmanr)."""
    r = scipy.stats.spearmanr(np.asarray(x, float), np.asarray(y, float))
    return TestResult(float(r.statistic), float(r.pvalue), "two-sided")


def binomial_p(k: int, n: int, p0: float = 0.5, alternative: str = "greater") -> float:
    """Exact binomial test of k successes in n trials against rate p0 (scipy.stats.binomtest)."""
    return float(scipy.stats.binomtest(int(k), int(n), p0, alternative=alternative).pvalue)


def binomial_tail(k: int, n: int, p: float) -> float:
    """P[X ≥ k] for X ~ Bin(n, p)."""
    return float(scipy.stats.binom.sf(k - 1, n, p))


def t_quantile(q: float, df: int | float) -> float:
    """Student-t quantile (e.g. q = 0.975 for a two-sided 95% interval's half-width in SEs)."""
    return float(scipy.stats.t.ppf(q, df))


def t_two_sided_p(t: np.ndarray | float, df: int | float) -> np.ndarray:
    """Two-sided p of t statistics with `df` degrees of freedom, elementwise."""
    return 2 * scipy.stats.t.sf(np.abs(t), df=df)


def normal_sf(z: float) -> float:
    """P[Z > z] for a standard normal Z."""
    return float(scipy.stats.norm.sf(z))


def normality_p(x: Sequence[float]) -> float:
    """D'Agostino–Pearson test of normality (scipy.stats.normaltest): small p, not Gaussian."""
    return float(scipy.stats.normaltest(np.asarray(x, float)).pvalue)


def excess_kurtosis(x: Sequence[float]) -> float:
    """Fisher's (excess) kurtosis: 0 for a Gaussian."""
    return float(scipy.stats.kurtosis(np.asarray(x, float)))


# --------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class BinomialCI:
    estimate: float
    low: float
    high: float
    level: float
    method: str


def binomial_ci(k: int, n: int, level: float = 0.95, method: str = "wilson") -> BinomialCI:
    """Confidence interval of a proportion k/n via scipy's binomtest(...).proportion_ci.

    Default is the Wilson score interval (no continuity correction): well behaved at k = 0
    and k = n and not as conservative as Clopper–Pearson; pass method="exact" for
    Clopper–Pearson."""
    if n < 1 or not 0 <= k <= n:
        raise ReproError(f"binomial_ci needs 0 ≤ k ≤ n and n ≥ 1 (got k={k}, n={n})")
    ci = scipy.stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method=method)
    return BinomialCI(k / n, float(ci.low), float(ci.high), level, method)


def binomial_upper(k: int, n: int, level: float = 0.95) -> float:
    """One-sided Clopper–Pearson upper confidence bound of a proportion from k of n independent
    trials: the rate p with P(X ≤ k | n, p) = 1 − level (1 when k = n). Exact: its coverage is ≥
    `level` at every true rate."""
    if n < 1 or not 0 <= k <= n:
        raise ReproError(f"binomial_upper needs 0 ≤ k ≤ n and n ≥ 1 (got k={k}, n={n})")
    return 1.0 if k == n else float(scipy.stats.beta.ppf(level, k + 1, n - k))


def binomial_below_p(k: int, n: int, floor: float) -> float:
    """One-sided exact p of so few events if the rate were `floor`: P(X ≤ k | n, floor)."""
    if n < 1 or not 0 <= k <= n:
        raise ReproError(f"binomial_below_p needs 0 ≤ k ≤ n and n ≥ 1 (got k={k}, n={n})")
    return float(scipy.stats.binom.cdf(k, n, floor))


def power_binomial_bound(n: int, rate: float, bound: float, level: float = 0.95, floor: float | None = None) -> float:
    """Power of "the rate is at most `bound`" shown by `binomial_upper(K, n, level)` ≤ bound, at a
    true `rate` < bound: P(K ≤ k*) for K ~ Bin(n, rate), k* the most events whose upper bound
    still clears `bound` (0 when none does: then no outcome of n trials can show it). With
    `floor`, the two-sided form: also not significantly below `floor` (`binomial_below_p(K, n,
    floor)` > 1 − level), P(k_lo ≤ K ≤ k*). Exact."""
    k = -1
    while k + 1 <= n and binomial_upper(k + 1, n, level) <= bound:
        k += 1
    lo = 0
    if floor is not None:
        while lo <= n and binomial_below_p(lo, n, floor) <= 1.0 - level:
            lo += 1
    if k < lo:
        return 0.0
    return float(scipy.stats.binom.cdf(k, n, rate) - (scipy.stats.binom.cdf(lo - 1, n, rate) if lo > 0 else 0.0))


def mean_sem(x: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (sample std with ddof=1, over √n); sem = nan for n = 1."""
    a = np.asarray(x, float).reshape(-1)
    if a.size == 0:
        raise ReproError("mean_sem of an empty sample")
    if a.size == 1:
        return float(a[0]), math.nan
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size))


def bootstrap_ci(
    x: Sequence[float],
    stat: Callable[..., float] = np.mean,
    n_resamples: int = 9999,
    seed: int = 0,
    level: float = 0.95,
    method: str = "BCa",
) -> tuple[float, float]:
    """Bootstrap CI of stat(x) (scipy.stats.bootstrap with an explicit numpy Generator, so
    the same seed gives the same interval). `stat` must accept `axis=` (numpy reductions do)."""
    a = np.asarray(x, float).reshape(-1)
    r = scipy.stats.bootstrap(
        (a,), stat, n_resamples=n_resamples, confidence_level=level, method=method, rng=np.random.default_rng(seed)
    )
    return float(r.confidence_interval.low), float(r.confidence_interval.high)


# --------------------------------------------------------------------------- per-seed curves
# Monte-Carlo results shared by Born biased (001 §4) and the sinks (001 §6.2.1): seeds, not
# pairs inside one seed, are the unit of replication.


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


class PositionStd:
    """Per-position std over sequences and channels, accumulated over batches o (n, T, C, ...) of
    sequences in float64 (first and second moments): 001 Fig 9's red line when one pass over all
    sequences does not fit in memory (SK-1 at the paper's T = 2048)."""

    def __init__(self) -> None:
        self.count = 0
        self.s1: torch.Tensor | float = 0.0
        self.s2: torch.Tensor | float = 0.0

    def add(self, o: torch.Tensor) -> None:
        o = o.flatten(2).double()
        self.s1 = self.s1 + o.sum(dim=(0, 2))
        self.s2 = self.s2 + (o * o).sum(dim=(0, 2))
        self.count += o.shape[0] * o.shape[2]

    def std(self) -> torch.Tensor:
        """(T,) float64, the unbiased std (n − 1), as torch.std."""
        return ((self.s2 - self.s1 * self.s1 / self.count) / (self.count - 1)).clamp_min(0).sqrt()


def std_by_position(o: torch.Tensor) -> torch.Tensor:
    """Per-position std over sequences and channels: o (n, T, C) → (T,) float64 (001 Fig 9's red
    line; BB-6 and SK-1 both read it): `PositionStd` over one batch."""
    acc = PositionStd()
    acc.add(o)
    return acc.std()


@dataclass
class PositionalStdResult:
    """001 Eq 2 / Fig 9: std of the aggregated attention output o_i = Σ_j A_ij v_j per position."""

    sizes: dict
    std: SeedCurves  # (seeds, T): std over sequences and channels at position i (1-based)
    attn_sq: SeedCurves  # (seeds, T): mean over sequences/heads of Σ_j A_ij² (1/i if uniform)
    value_std: SeedCurves | None = None  # (seeds, T): the same std of the value vectors v_j (before A)

    @property
    def positions(self) -> np.ndarray:
        return np.arange(1, self.std.values.shape[1] + 1)


# --------------------------------------------------------------------------- scaling laws


@dataclass(frozen=True)
class Slope:
    slope: float
    stderr: float
    ci95: tuple[float, float]
    intercept: float
    r: float

    def __iter__(self):
        """Unpacks as (slope, stderr, ci95)."""
        return iter((self.slope, self.stderr, self.ci95))


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> Slope:
    """Least-squares slope of log y against log x (a power-law exponent), its standard error
    and a 95% t-interval with n − 2 degrees of freedom (scipy.stats.linregress)."""
    xa, ya = np.asarray(x, float).reshape(-1), np.asarray(y, float).reshape(-1)
    if xa.size < 3 or xa.size != ya.size:
        raise ReproError("loglog_slope needs ≥ 3 (x, y) pairs of equal length for a standard error")
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(ya)) and xa.min() > 0 and ya.min() > 0):
        raise ReproError("loglog_slope needs strictly positive, finite x and y")
    lx, ly = np.log(xa), np.log(ya)
    r = scipy.stats.linregress(lx, ly)
    half = float(scipy.stats.t.ppf(0.975, lx.size - 2)) * float(r.stderr)
    return Slope(
        float(r.slope),
        float(r.stderr),
        (float(r.slope) - half, float(r.slope) + half),
        float(r.intercept),
        float(r.rvalue),
    )


def tail_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """The log–log slope between the two largest x: a growth exponent once lower-order terms
    have faded (e.g. a kernel's per-chunk padding)."""
    return float(np.log(y[-1] / y[-2]) / np.log(x[-1] / x[-2]))


def paired_seed_difference(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """(seeds, items) arrays a and b: the mean over seeds of (a − b) (each seed's mean over
    items), its sd over seeds, and the two-sided paired t-test p over seeds (nan with one seed or
    a constant difference)."""
    d = a.mean(1) - b.mean(1)
    p = float(scipy.stats.ttest_rel(a.mean(1), b.mean(1)).pvalue) if len(d) > 1 and np.any(d != d[0]) else float("nan")
    return float(d.mean()), float(d.std(ddof=1)) if len(d) > 1 else float("nan"), p


# --------------------------------------------------------------------------- power (verdicts)
# A strict xfail means "the source's effect was not seen". Whether that contradicts the source
# or only says the test was too small depends on the test's power at the source's effect size:
# these give it in closed form for the tests the claims use.


def power_paired_t(effect: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """Power of a one-sided paired (or one-sample) t-test at level `alpha` with n pairs when the
    true mean difference is `effect` (in the tested direction) and the differences' sd is `sd`:
    P(T > t_{1−α, n−1}) under the noncentral t with δ = effect·√n / sd."""
    from scipy import stats as sps

    if n < 2 or sd <= 0:
        raise ValueError(f"power_paired_t needs n >= 2 and sd > 0 (got n={n}, sd={sd})")
    crit = sps.t.ppf(1 - alpha, n - 1)
    return float(sps.nct.sf(crit, n - 1, effect * math.sqrt(n) / sd))


def sd_upper_bound(sd: float, n: int, level: float = 0.95) -> float:
    """The one-sided `level` upper confidence bound on a normal population's sd from a sample sd
    of n observations: sd·√((n−1)/χ²_{1−level, n−1}). A power that can make a verdict read
    "contradicted" takes its noise from here, not from the plug-in sd: with 3 seeds the plug-in
    understates the sd by a factor up to 4.4 at 95%, and the power it gives is optimistic."""
    if n < 2 or not math.isfinite(sd) or sd < 0:
        raise ReproError(f"an sd's upper bound needs n ≥ 2 observations and a finite sd ≥ 0 (got n={n}, sd={sd})")
    return float(sd * math.sqrt((n - 1) / scipy.stats.chi2.ppf(1.0 - level, n - 1)))


def n_for_power(power_at: Callable[[int], float], target: float = 0.8, n_max: int = 100_000) -> int | None:
    """The smallest n with power_at(n) >= target (power non-decreasing in n), None past n_max."""
    lo, hi = 1, 2
    while power_at(hi) < target:
        lo, hi = hi, hi * 2
        if hi > n_max:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if power_at(mid) < target else (lo, mid)
    return hi


EITHER_WAY = 0.95  # = 1 − the harness's SIZE_ENOUGH (repro.harness.report.EITHER_WAY; a test checks they agree)


def either_way(power_at: Callable[[int], float], unit: str, n_max: int = 100_000) -> str:
    """A power record's `decide_either`: the smallest size at which `power_at` reaches EITHER_WAY,
    in words ("62 paired seeds"). Where a test's size is 1 − power, a run at its 80% size can read
    reproduced or inconclusive, never contradicted (size 0.2 > 0.05); at this size a miss reads
    contradicted, so one run decides either way."""
    n = n_for_power(power_at, target=EITHER_WAY, n_max=n_max)
    return f"{n:,} {unit}" if n else f"more than {n_max:,} {unit}"


def power_threshold(effect: float, threshold: float, se: float, compare: str = "ge") -> float:
    """Power of "measured ≥ threshold" (or ≤ for compare="le") when the measurement is normal
    around the declared `effect` with standard error `se` > 0.

    A standard error of 0 (or nan) is refused: the "power" would be a step function — 0 or 1 by
    which side of the threshold `effect` sits — and when `effect` is this run's measurement it is
    observed power, 0 exactly when the test failed, so the verdict could never read contradicted.
    A quantity without sampling noise (a fixed model's weights) states so through
    `deterministic_power`, with an effect that is declared, not measured."""
    from scipy import stats as sps

    if compare not in ("ge", "le"):
        raise ValueError(f"compare must be 'ge' or 'le', not {compare!r}")
    if not (se > 0 and math.isfinite(se)):
        raise ReproError(
            f"power_threshold: standard error {se!r} — a power that cannot vary with the data's noise "
            "is a step function of the effect (observed power when the effect is the measurement); "
            "model the noise, or use stats.deterministic_power for a noise-free quantity"
        )
    margin = (effect - threshold) if compare == "ge" else (threshold - effect)
    return float(sps.norm.cdf(margin / se))


def deterministic_power(declared_effect: float, threshold: float, compare: str = "ge") -> float:
    """Power of a check on a quantity with no sampling noise (weights of a fixed pretrained model,
    a closed-form spectrum): a model with the *declared* effect (the source's number or a named
    effect of interest, never this run's measurement) passes "≥ threshold" (or ≤) with probability 1
    if the effect clears the threshold, else 0. Its size (a true claim read as not reproduced) is then
    0: such a check contradicts the claim exactly as far as the threshold reads the claim, which is
    why the threshold's basis is stated with the power (`Claim.power(basis=...)`)."""
    if compare not in ("ge", "le"):
        raise ValueError(f"compare must be 'ge' or 'le', not {compare!r}")
    margin = (declared_effect - threshold) if compare == "ge" else (threshold - declared_effect)
    return 1.0 if margin >= 0 else 0.0


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (strong family-wise error control under any dependence):
    reject H_i at family-wise level α when the adjusted p_i ≤ α. Same order as the input."""
    p = np.asarray(pvalues, float).reshape(-1)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def power_binomial_excess(n: int, p0: float, p1: float, alpha: float = 0.05) -> float:
    """Power of a one-sided exact binomial test of H0: rate p0 against a true rate p1 > p0 with
    n trials: P(K ≥ k_crit | p1), k_crit the smallest k with P(K ≥ k | p0) ≤ α."""
    from scipy import stats as sps

    k = int(sps.binom.isf(alpha, n, p0)) + 1  # P(K >= k | p0) <= alpha
    while k > 0 and sps.binom.sf(k - 2, n, p0) <= alpha:
        k -= 1
    return float(sps.binom.sf(k - 1, n, p1))
