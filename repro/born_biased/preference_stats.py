"""The statistics 001 §3's preference claims (BB-1, BB-1.1, BB-1.2, BB-1.3) read over the cells of
Table 1's probes: one cell per (seed, probe length) of a `init_bias.PreferenceRun`.

Significance is App B.2's Bonferroni test of a cell's top-1 count, against the head's own null
(each token's argmax rate for isotropic final states, `init_bias.gaussian_argmax_rates`) rather
than exact uniformity; the negative control is each model's draw of N isotropic final states
through its own norm and head. Power is stated at the source's effect: its weakest Table 1
frequency (every cell), or its length and size trends (the pooled-share tests of BB-1.2).
BB-1.3's favourite is chosen on one half of the probes and counted on the other
(`held_out_favourite`, its power `held_out_power`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.stats

from repro.born_biased import init_bias
from repro.core import stats


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


def table1_rows(table1, source_table1: dict) -> list[list]:
    """001 Table 1 (a)–(b) at our scale, each model's cells followed by the source's rows for it."""
    rows = []
    for (arch, seed), run in table1.items():
        for i, T in enumerate(run.lengths):
            t = run.top1[i]
            rows.append(
                [
                    arch,
                    seed,
                    T,
                    t.token,
                    f"{t.freq * 100:.2f}",
                    f"1e{t.log10_p:.1f}",
                    f"1e{run.null_log10_p(i):.1f}",
                    "—",
                ]
            )
        for (a, s_, T), (tok, f, p) in source_table1.items():
            if (a, s_) == (arch, seed):
                rows.append([arch, seed, T, tok, f"{f:.2f}", f"{p:.3g}", "—", "source (N=10,000)"])
    return rows


def null_control(runs) -> tuple[float, str]:
    """The negative control of 001 App B.2's test here: the strongest of the models' isotropic
    draws (smallest p against the head's null), with its name."""
    draws = [
        (init_bias.null_top_log10_p(r.null_draw_top1().count, r.sizes["n_seq"], r.null_rates), seed)
        for (_, seed), r in runs.items()
    ]
    p, seed = min(draws)
    return (
        p,
        f"N isotropic final states through the same norm and head (no contraction; seed {seed}'s draw, the stronger)",
    )


def check_significance(claim, runs, bar: float, why: str, label: str) -> None:
    """001 §3 / App B.2: every (seed, length) cell's top-1 count against the head's own null: the
    cells as context, the worst cell asserted (through `claim`), the models' isotropic draws as
    the control."""
    worst = []
    for (_arch, seed), run in runs.items():
        for i, T in enumerate(run.lengths):
            t = run.top1[i]
            worst.append(run.null_log10_p(i))
            claim.record(
                f"{label}seed {seed}, T={T}: top-1 {t.token}, {t.count}/{t.n} ({size_label(run)})",
                t.freq * 100,
                unit="%",
            )
            claim.record(
                f"{label}seed {seed}, T={T}: log10 p vs the head's null (App B.2's vs uniform: {t.log10_p:.2f})",
                worst[-1],
            )
    for (_, seed), run in runs.items():
        d = run.null_draw_top1()
        claim.record(
            f"{label}control draw, seed {seed}: top count {d.count}/{d.n}; App B.2 log10 p vs uniform", d.log10_p
        )
    ctl, ctl_name = null_control(runs)
    claim.check(
        f"{label}largest log10 p over the {len(worst)} cells, vs the head's own null",
        max(worst),
        bar,
        compare="le",
        why=why,
        control=ctl,
        control_name=ctl_name,
    )


def power_every_cell(runs, rate: float, bar: float) -> tuple[float, int | None]:
    """Power of 001 App B.2's test in every Table 1 cell (§3):
    P[every cell's top count reaches the critical count] if the favourite's rate is `rate`
    (cells treated as independent: the lengths share prefixes, so this is approximate), and the
    N per cell at which it reaches 80%."""
    run = next(iter(runs.values()))
    n, n_cells = run.sizes["n_seq"], sum(len(r.lengths) for r in runs.values())

    def power_at(m: int) -> float:
        return init_bias.top_count_power(m, run.null_rates, rate, bar) ** n_cells

    return power_at(n), stats.n_for_power(power_at, n_max=1_000_000)


def geomean(x) -> float:
    """Geometric mean (the source's trend effects over its Table 1 rows, 001 §3 Finding 1.2)."""
    return float(np.exp(np.mean(np.log(x))))


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
    together (`init_bias.power_pooled_share`) — the longest length against the shortest, pooled
    over `n_seeds` seeds, and the larger model against the smaller, pooled over seeds and
    `n_lengths` lengths — when the longer (larger) side's frequency is `length_ratio`
    (`size_ratio`) times the shorter (smaller) side's `f_short` (`f_small`)."""
    a = init_bias.power_pooled_share(m * n_seeds, min(1.0, length_ratio * f_short), m * n_seeds, f_short, alpha)
    b = init_bias.power_pooled_share(
        m * n_seeds * n_lengths, min(1.0, size_ratio * f_small), m * n_seeds * n_lengths, f_small, alpha
    )
    return a * b


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
    on the same sequences (App B.2's probes are shared by every seed, `init_bias.random_token_inputs`).
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


def held_out_power(n: int, rate: float, null_rates, other_rate: float) -> float:
    """Power of one `held_out_favourite` check (001 Finding 1.3): P[the selection half's top token
    is the favourite and the held-out half counts it at least once more in its own model than in
    the other] when the favourite's rate is `rate`, the other tokens follow the head's null rates
    (`null_rates`, init_bias.gaussian_argmax_rates) and the other model predicts it at
    `other_rate`. A tie at the top, or a wrong token chosen, counts as a miss (a lower bound)."""
    half = n // 2
    held = n - half
    k = np.arange(1, half + 1)
    pk = scipy.stats.binom.pmf(k, half, rate)
    keep = pk > 1e-12  # the rest carries < 1e-9 of the mass
    select = float(sum(p * init_bias.null_top_count_cdf(j - 1, half, null_rates) for j, p in zip(k[keep], pk[keep])))
    y = np.arange(held + 1)
    count = float((scipy.stats.binom.pmf(y, held, other_rate) * scipy.stats.binom.sf(y, held, rate)).sum())
    return select * count
