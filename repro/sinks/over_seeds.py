"""SK-2 read over seeds (001 §6.2.1, Fig 12; issue 64): the trio trained at each of the profile's
seeds (`seed`, then `sk2_seeds`), its three checks read over them, and the power that lets the
attenuation check decide either way.

One seed per variant cannot tell attenuation from the baseline where both sit a hair above ε (the
decide-sinks run: attenuation's top head at α¹ 0.276, the baseline's at 0.258, ε = 0.25), and a
threshold on one point estimate fails half the time at the claim's edge whatever the run's size.
Over n ≥ 2 seeds the attenuation check becomes a confidence-bound check, fixed here before any
seeded run (`SK2_PREREG`):

- per seed, attenuation's sink rate at its highest over lengths (the ci check's quantity);
- the check: the one-sided 95% lower t bound over seeds of that rate ≤ one sink head of L·H (the
  claim's edge: "≈ 0" read as at most one head, the metric's resolution). A miss means attenuation
  leaves more than one head with 95% confidence: its size at the edge is the t bound's level,
  0.05. A pass only fails to reject "≈ 0" (`not_rejected`): it reads reproduced only with power
  ≥ 0.8 against the declared alternative;
- the alternative: attenuation leaves `ALT_HEADS` sink heads of L·H on average — three times
  what "≈ 0" allows (interest: ours, declared here, not fitted to a run);
- the nuisance sd: the seeds' sd at its 95% upper bound (`stats.sd_upper_bound`), and never below
  `SD_FLOOR_HEADS` heads (three seeds that agree exactly say nothing of the spread).

The baseline check ("a clear sink rate at every length") and amplification's two checks read the
seeds' mean curves and the per-sequence differences pooled over seeds (`trio.amplification_p`);
the baseline's power stays the budget model's (`budget.baseline_budget_power`: it sizes the chunk, never decides), and
amplification's checks have no declared effect at a budget below the source's (Fig 12 gives its
curve at 200k steps only): a miss there reads inconclusive. Both ε are reported (`bound_readings`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from repro.core import memo, stats
from repro.core.readings import Power, Reading
from repro.ground.runtime import ReproError
from repro.sinks.experiments import EPSILON, FORMS, SCALINGS, SinkCurve
from repro.sinks.trio import Trio, train_trio

#: the attenuation check's name over seeds (the power below covers it)
ATTENUATION_BOUND_CHECK = "attenuation: one-sided 95% lower bound over seeds of its highest sink rate"
LEVEL = 0.95  # the bound's level: the check's size at the claim's edge is 1 − LEVEL
ALT_HEADS = 3.0  # the declared alternative: attenuation leaves three sink heads of L·H on average
SD_FLOOR_HEADS = 0.5  # the nuisance sd is taken as at least half a head (three equal seeds: no spread seen)

#: fixed before any seeded run (issue 64), as CS-5's CS5_PREREG is
SK2_PREREG = dict(
    statistic="per seed: attenuation's sink rate at its highest over lengths (ε = 0.25, the source's form)",
    check=f"its one-sided {LEVEL:.0%} lower t bound over seeds ≤ one sink head of L·H",
    alternative=f"attenuation leaves {ALT_HEADS:g} sink heads of L·H on average",
    sd=f"the seeds' sd at its 95% upper bound, at least {SD_FLOOR_HEADS:g} head",
    seeds="≥ 3 per variant (decide-sinks: the profile's seed and sk2_seeds)",
)


def further_seeds(sizes: dict) -> tuple[int, ...]:
    """The profile's `sk2_seeds`: SK-2's trios beyond the one at `seed` (distinct, and not `seed`)."""
    more = tuple(sizes["sk2_seeds"])
    if sizes["seed"] in more or len(set(more)) != len(more):
        raise ReproError(f"sinks: sk2_seeds {more} must be distinct and differ from seed {sizes['seed']}")
    return more


@dataclass(frozen=True)
class SeedTrio:
    """A further seed's trio as SK-2 reads it: each variant's sink curve, the baseline's at its
    initial weights and L·H — not the models (SK-3 reads the profile's own trio only)."""

    seed: int
    curves: dict[str, SinkCurve]
    init_curve: SinkCurve
    layers_heads: int


def _on_cpu(c: SinkCurve) -> SinkCurve:
    def cpu(d: dict[str, dict[int, torch.Tensor]]) -> dict[str, dict[int, torch.Tensor]]:
        return {f: {n: t.detach().cpu() for n, t in by.items()} for f, by in d.items()}

    return SinkCurve(c.lengths, cpu(c.rates), cpu(c.alpha), dict(c.eps))


@memo.cached("sk2-seed-trio", ignore=("procs",))
def seed_trio(sizes: dict, profile_name: str, corpus: str, seed: int, device: Any, procs: int = 1) -> SeedTrio:
    """The trio at `seed` trained (or loaded) as `train_trio` trains the profile's own, read into a
    `SeedTrio` and memoised (`repro.core.memo`: keyed by the sizes, profile, corpus, seed, device,
    dtype policy and the code): a later run reads the stored curves without its models — the split
    of decide-sinks over GPU calls (`repro sk2-seed` stores one seed's; scripts/gpu carries it)."""
    t = train_trio(sizes, profile_name, corpus, device=device, procs=procs, seed=seed)
    return SeedTrio(seed, {k: _on_cpu(c) for k, c in t.curves.items()}, _on_cpu(t.init_curve), t.layers_heads)


@dataclass(frozen=True)
class SeedRows:
    """Every variant's sink-rate curve (metric `form`) at each seed: variant → (seeds, lengths)."""

    seeds: tuple[int, ...]
    lengths: tuple[int, ...]
    form: str
    rows: dict[str, np.ndarray]
    init: np.ndarray  # the baselines at their initial weights, (seeds, lengths): the baseline check's control
    layers_heads: int

    @property
    def one_head(self) -> float:
        return 1.0 / self.layers_heads

    def baseline_low(self) -> float:
        """The baseline check's quantity: the seeds' mean rate at its lowest over lengths."""
        return float(self.rows["baseline"].mean(0).min())

    def attenuation_high(self) -> np.ndarray:
        """Per seed, attenuation's rate at its highest over lengths: the bound's sample."""
        return self.rows["attenuation"].max(1)

    def amplification_excess(self) -> float:
        """Amplification − baseline on the seeds' mean curves, largest over lengths."""
        return float((self.rows["amplification"] - self.rows["baseline"]).mean(0).max())


def seed_rows(trios: Sequence[Trio | SeedTrio], seeds: tuple[int, ...], form: str) -> SeedRows:
    """The trios' curves as `SeedRows` (one trio per seed, trained alike but for the seed)."""
    if len(trios) != len(seeds) or not trios:
        raise ReproError(f"SK-2 over seeds: {len(trios)} trio(s) for {len(seeds)} seed(s)")
    lengths = trios[0].curves["baseline"].lengths
    if any(t.curves["baseline"].lengths != lengths for t in trios):
        raise ReproError("SK-2 over seeds: the trios were read at different lengths")
    rows = {k: np.array([t.curves[k].row(form) for t in trios], dtype=float) for k in SCALINGS}
    init = np.array([t.init_curve.row(form) for t in trios], dtype=float)
    return SeedRows(tuple(seeds), lengths, form, rows, init, trios[0].layers_heads)


@dataclass(frozen=True)
class Bound:
    """The attenuation check over seeds: the sample's mean and sd, the sd the power takes (its 95%
    upper bound, floored), and the one-sided lower t bound the check compares with one head."""

    n: int
    mean: float
    sd: float
    sd_power: float
    lower: float


def attenuation_bound(r: SeedRows, variant: str = "attenuation") -> Bound:
    """`Bound` over its seeds (n ≥ 2) of `variant`'s sink rate at its highest over lengths:
    attenuation's is the check; the baseline's, through the same bound, is its control."""
    x = r.rows[variant].max(1)
    n = len(x)
    if n < 2:
        raise ReproError("SK-2's bound over seeds needs ≥ 2 seeds (decide-sinks trains 3)")
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    lower = mean - stats.t_quantile(LEVEL, n - 1) * sd / math.sqrt(n)
    return Bound(n, mean, sd, max(stats.sd_upper_bound(sd, n), SD_FLOOR_HEADS * r.one_head), lower)


def attenuation_power(r: SeedRows, b: Bound) -> Power:
    """The attenuation bound check's power against `ALT_HEADS` heads (its pass means reproduced
    only at ≥ 0.8) and its size at the claim's edge (a miss reads contradicted at 0.05)."""
    one, alt = r.one_head, ALT_HEADS * r.one_head

    def at(n: int) -> float:
        return stats.power_paired_t(alt - one, b.sd_power, max(n, 2), alpha=1 - LEVEL) if n >= 2 else 0.0

    return Power(
        value=at(b.n),
        covers=(ATTENUATION_BOUND_CHECK,),
        effect=f"attenuation leaves {ALT_HEADS:g} sink heads of L·H = {r.layers_heads} (rate {alt:.4f})",
        effect_value=alt,
        basis=f"interest: {ALT_HEADS:g}× the one head '≈ 0' allows, declared before any seeded run (SK2_PREREG)",
        test=f"one-sided {LEVEL:.0%} lower t bound over seeds of attenuation's highest sink rate > one head",
        sample=f"{b.n} seeds per variant",
        method=f"noncentral t, the seeds' sd at its 95% upper bound {b.sd_power:.4g} (sample sd {b.sd:.4g}; "
        f"floor {SD_FLOOR_HEADS:g} head)",
        decide=f"{stats.n_for_power(at) or 'more than 100,000'} seeds",
        decide_either=stats.either_way(at, "seeds"),
        edge=alt - one,
        sd="upper bound",
        size=1 - LEVEL,
        size_method=f"the one-sided t bound's level: at the edge the check fails with probability {1 - LEVEL:.2f}",
        size_at=f"the claim's edge: attenuation's rate = one head of L·H ({one:.4f})",
        against=f"attenuation's rate = {ALT_HEADS:g} heads of L·H ({alt:.4f})",
    )


def bound_readings(trios: Sequence[Trio | SeedTrio], seeds: tuple[int, ...], asserted: str) -> list[Reading]:
    """Context over seeds: each seed's attenuation and baseline extremes and, at both ε (the
    source's 0.25 and Gu et al.'s 0.3, which CLAIMS.md asks for), the bound and its power; the
    asserted form's are the check itself, the other's are not asserted."""
    out = [Reading("SK-2 over seeds: pre-registered design (SK2_PREREG)", "; ".join(SK2_PREREG.values()))]
    for f in FORMS:
        r = seed_rows(trios, seeds, f)
        b = attenuation_bound(r)
        tag = f"ε = {EPSILON[f]} ({f} form{'' if f == asserted else '; not asserted'})"
        out += [
            Reading(
                f"attenuation: highest sink rate per seed {list(seeds)}, {tag}",
                str(np.round(r.attenuation_high(), 4).tolist()),
            ),
            Reading(
                f"baseline: lowest sink rate per seed {list(seeds)}, {tag}",
                str(np.round(r.rows["baseline"].min(1), 4).tolist()),
            ),
            Reading(f"attenuation: one-sided 95% lower bound over seeds, {tag}", b.lower),
            Reading(f"attenuation bound's power against {ALT_HEADS:g} heads, {tag}", attenuation_power(r, b).value),
        ]
    return out
