"""The experiments `claims/test_causal_shift.py` reads (000), one call per fixture.

- `read_alignment` / `Reading`: 000 §III on one pretrained model — its alignment profile over
  <bos>-led test windows of the run's corpus, two random-init twins (the null and its control),
  the switch layers with their bootstrap CIs and Table I's decoded panel (CS-1, CS-2);
  `depth_changes` (and `depth_changes_per_sequence`): Fig 3's three continuous measures, early
  against late layers; `measures_power`: CS-2's power at declared changes over the twin's.
- `train_runs` / `Runs`: 000 §IV's trained variants — the baseline per seed, a fixed cut at
  every layer, the cut at layer 0 per seed, α = 0 at the middle layer per seed, and the learned
  gate (CS-3 … CS-6).
- `table2`: 000 Table II — baseline, best fixed cut and gating on held-out text of the run's
  corpus, on stdlib code (the shifted benchmark, whatever `--corpus` says) and on last words,
  with each benchmark's seed spread; `order_power`: CS-6's power; `gate_power`: CS-5's power at
  our budget, from a line fitted to our own gate's snapshots.

Models and token windows go on `device` (the run's `--device`; CPU by default); the device itself
is in no checkpoint key (`repro.core.train` keys the dtype that ran).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from repro.causal_shift import experiments as cs
from repro.core import data, stats
from repro.core import train as T
from repro.core.models.hf import random_init_twin
from repro.ground.runtime import ReproError, resolve_dtype

# --------------------------------------------------------------------------- §III: CS-1, CS-2


@dataclass
class Reading:
    """One pretrained model's 000 §III measurements."""

    name: str
    profile: cs.AlignmentProfile
    twins: tuple  # the same measures on two random-init twins (seeds 0, 1): the null and its control
    switch: dict
    ci: dict
    panel: list
    n_seq: int


def read_alignment(
    name: str, model: torch.nn.Module, tok, a, *, corpus: str = "brown", device: torch.device | str = "cpu"
) -> Reading:
    """000 §III on `model` (`a`: the profile's `align` row) over <bos>-led test windows of
    `corpus` on `device`: the alignment profile (top-k in the policy's compute dtype), the same
    continuous measures on random-init twins of seeds 0 and 1 (`random_init_twin`, on the
    model's device), switch layers, bootstrap CIs over sequences and Table I's panel."""
    ids = data.bos_windows(
        tok,
        "test",
        a["n_seq"],
        a["seq_len"] + 1,
        who=f"--model {name}: the causal-shift claims",
        device=device,
        corpus=corpus,
    )
    dtype = resolve_dtype(a["compute_dtype"], ids.device)
    p = cs.alignment_profile(model, ids, k=a["k"], compute_dtype=dtype)
    twins = tuple(cs.alignment_profile(random_init_twin(model, seed), ids, k=a["k"], top_k=False) for seed in (0, 1))
    panel = cs.decoded_panel(model, ids[0], tok, a["panel_start"])
    return Reading(name, p, twins, cs.switch_layers(p), cs.bootstrap_switch(p, a["n_boot"]), panel, ids.shape[0])


def depth_changes(prof: cs.AlignmentProfile, early: slice, late: slice) -> dict[str, float]:
    """000 Fig 3's measures between the `early` and the `late` layers: how far cos(h, e_in)
    falls ("falls"), cos(h, e_out) rises ("rises") and the input→output projection rises ("proj")."""
    m = {k: prof.mean(k) for k in ("cos_in", "cos_out", "projection")}
    return {
        "falls": float(m["cos_in"][early].mean() - m["cos_in"][late].mean()),
        "rises": float(m["cos_out"][late].mean() - m["cos_out"][early].mean()),
        "proj": float(m["projection"][late].mean() - m["projection"][early].mean()),
    }


def depth_changes_per_sequence(prof: cs.AlignmentProfile, early: slice, late: slice) -> dict[str, np.ndarray]:
    """`depth_changes` per sequence: name → (S,) the change of each sequence's layer means."""
    m = {k: getattr(prof, k).numpy() for k in ("cos_in", "cos_out", "projection")}

    def mean(x, sl):
        return np.nanmean(x[:, sl], axis=1)

    return {
        "falls": mean(m["cos_in"], early) - mean(m["cos_in"], late),
        "rises": mean(m["cos_out"], late) - mean(m["cos_out"], early),
        "proj": mean(m["projection"], late) - mean(m["projection"], early),
    }


@dataclass
class MeasuresPower:
    """CS-2's power (see `measures_power`)."""

    power: float  # P(every check passes | each change at its declared effect)
    se: dict  # name → se of the mean excess over the twin, over sequences
    p: dict  # name → one-sided p of the excess > 0 (the claimed direction), over sequences
    n_seq: int
    n_80: int | None  # sequences for 80% power (None: more than 100,000)


def measures_power(
    ours: dict[str, np.ndarray], null: dict[str, np.ndarray], effects: dict[str, float], bars: dict[str, float]
) -> MeasuresPower:
    """CS-2's power: its rule is that every change (name → (S,) per sequence, `ours` minus the
    random-init twin's `null`, paired by sequence: the same windows) reaches its bar. Each mean
    excess is normal around its declared effect with the se of the per-sequence excesses (the
    twin's own seed-to-seed spread, the control's, is far smaller); the power is the product of
    the checks' powers (their passing is positively correlated through shared sequences, so the
    product is a lower bound, and 1 − it an upper bound on the size). Also the one-sided p of each
    excess in the claimed direction (one-sample t over sequences), for the direction shield."""
    diff = {k: np.asarray(ours[k], float) - np.asarray(null[k], float) for k in effects}
    n = min(int(np.isfinite(d).sum()) for d in diff.values())
    se = {k: float(np.nanstd(d, ddof=1) / np.sqrt(np.isfinite(d).sum())) for k, d in diff.items()}
    p = {k: float(stats.one_sample_t(d[np.isfinite(d)], 0.0, "greater").p) for k, d in diff.items()}

    def power_at(m: int) -> float:
        return float(np.prod([stats.power_threshold(effects[k], bars[k], se[k] * np.sqrt(n / m)) for k in effects]))

    return MeasuresPower(power_at(n), se, p, n, stats.n_for_power(power_at))


# --------------------------------------------------------------------------- §IV: CS-3 … CS-6


@dataclass
class Runs:
    """000 §IV's trained variants, every one from the same initial weights and data order."""

    tc: object
    cfg: T.TrainConfig
    baseline: list  # TrainResult per seed
    cuts: list  # TrainResult per layer (seed 0, α = cut_alpha)
    first_cut: list  # the cut at layer 0, per seed (seed 0 = cuts[0]), paired with `baseline`
    alpha0: list  # α = 0 at the middle layer, per seed
    gate: T.TrainResult
    gate_variant: cs.Variant
    middle: int

    @staticmethod
    def val(r: T.TrainResult) -> float:
        """A run's last validation loss."""
        return float(r.history[-1]["val_loss"])


def train_runs(sizes, *, corpus: str = "brown", device: torch.device | str = "cpu", procs: int = 1) -> Runs:
    """Train (or load from the checkpoint cache) every §IV variant on `corpus` under the Brown
    BPE, on `device` (`procs` > 1: under torchrun, `repro.core.launch`); `sizes`: the
    profile's `causal_shift` sizes."""
    tc = cs.gpt2_style(**sizes["model"])
    cfg = T.TrainConfig(**sizes["train"], vocab_size=sizes["model"]["vocab_size"], corpus=corpus)
    tr, va, ident = T.corpus_tokens(corpus, sizes["model"]["vocab_size"])
    kw = dict(train_tokens=tr, val_tokens=va, data_identity=ident, device=device, corpus=corpus)
    L, a = tc.n_layer, sizes["cut_alpha"]
    middle = L // 2
    seeds = sizes["seeds"]
    gv = cs.Variant("gating", "learned", alpha=a)
    gate_cfg = cfg.replace(snapshot_steps=sizes["gate_snapshots"])
    runs = (
        [(cfg, cs.Variant("baseline"), s) for s in seeds]
        + [(cfg, cs.Variant(f"cut@{l}", "cut", l, a), seeds[0]) for l in range(L)]
        + [(cfg, cs.Variant("cut@0", "cut", 0, a), s) for s in seeds[1:]]
        + [(cfg, cs.Variant(f"cut@{middle} α=0", "cut", middle, 0.0), s) for s in seeds]
        + [(gate_cfg, gv, seeds[0])]
    )
    from repro.core import launch

    # the 13 independent models: each on `procs` processes under torchrun, or on a CPU side by
    # side, one per core (repro.core.launch.train_jobs); then loaded here
    launch.train_jobs(
        [cs.variant_job(tc, c, v, s, corpus=corpus, data_identity=ident) for c, v, s in runs], procs, device
    )
    done = [cs.train_variant(tc, c, v, s, **kw) for c, v, s in runs]
    n = len(seeds)
    baseline, cuts = done[:n], done[n : n + L]
    first = [cuts[0]] + done[n + L : n + L + n - 1]
    alpha0, gate = done[n + L + n - 1 : n + L + 2 * n - 1], done[-1]
    return Runs(tc, cfg, baseline, cuts, first, alpha0, gate, gv, middle)


def table2(runs: Runs, sizes, *, corpus: str = "brown"):
    """Baseline, best fixed cut (by validation loss), gating on held-out text of `corpus` (test
    split), stdlib code (validation split) and last-word accuracy on the corpus's test
    sentences. Returns (model → scores, number of last-word items, the best cut's layer,
    benchmark → the seed sd of its score over the baseline's seeds)."""
    tok = data.brown_tokenizer(sizes["model"]["vocab_size"])
    T1 = runs.cfg.seq_len + 1
    n = sizes["eval"]["windows"]
    brown = data.windows(tok, "test", n, T1, corpus=corpus)
    # fixed whatever --corpus says: Table II's out-of-domain benchmark is part of the claim (the
    # shifted corpus), not the user's choice
    _, code_val, _ = T.corpus_tokens("stdlib-code", sizes["model"]["vocab_size"])
    starts = torch.linspace(0, code_val.numel() - T1 - 1, n).long()
    code = torch.stack([code_val[s : s + T1] for s in starts])
    items = cs.last_word_items(
        tok,
        [d.text for d in data.corpus_documents(corpus, "test")],
        max_items=sizes["eval"]["last_word_items"],
        max_tokens=runs.cfg.seq_len,
    )
    best = int(np.argmin([Runs.val(r) for r in runs.cuts]))
    models = {
        "baseline": runs.baseline[0].model,
        f"fixed cut (layer {best})": runs.cuts[best].model,
        "gating": runs.gate.model,
    }
    out = {}
    for name, m in models.items():
        m.eval()
        acc, nll = cs.last_word_scores(m, items)
        out[name] = {
            "brown": cs.loss_and_accuracy(m, brown),
            "code": cs.loss_and_accuracy(m, code),
            "last_word": acc,
            "last_word_nll": nll,
        }
    # the seed spread of each benchmark's score: the baseline's seeds (same data order), for CS-6's power
    # (seed 0 is the "baseline" model scored above)
    first = out["baseline"]
    spread = {
        "brown": [100 * first["brown"][1]],
        "code": [100 * first["code"][1]],
        "last_word_nll": [first["last_word_nll"]],
    }
    for r in runs.baseline[1:]:
        r.model.eval()
        spread["brown"].append(100 * cs.loss_and_accuracy(r.model, brown)[1])
        spread["code"].append(100 * cs.loss_and_accuracy(r.model, code)[1])
        spread["last_word_nll"].append(cs.last_word_scores(r.model, items)[1])
    return out, len(items), best, {k: float(np.std(v, ddof=1)) for k, v in spread.items()}


def order_power(
    base: np.ndarray,
    higher_is_better: np.ndarray,
    seed_sd: np.ndarray,
    rel_gain: tuple[float, float],
    seeds: int = 1,
    draws: int = 20_000,
) -> float:
    """CS-6's power: the chance that gating ≥ fixed cut ≥ baseline shows on every benchmark if
    Table II's relative gains are real. `base` (benchmark,): our baseline's scores;
    `higher_is_better` (benchmark,) bools; `seed_sd` (benchmark,): the spread of a score over
    seeds; `rel_gain`: (fixed cut over baseline, gating over fixed cut). Each model's score is
    normal around base·(1 ± gain) with sd seed_sd/√seeds (`seeds`: models averaged per variant),
    by simulation (`draws`, a fixed generator: the same number every run)."""
    sign = np.where(higher_is_better, 1.0, -1.0)  # (benchmark,)
    gain = np.array([0.0, rel_gain[0], (1 + rel_gain[0]) * (1 + rel_gain[1]) - 1])  # (model,)
    means = base[:, None] * (1 + sign[:, None] * gain[None, :])  # (benchmark, model)
    sd = seed_sd / np.sqrt(seeds)
    g = np.random.default_rng(0)
    sims = means[None] + g.normal(0.0, 1.0, size=(draws, *means.shape)) * sd[None, :, None]
    better = sims * sign[None, :, None]  # higher is better
    return float(np.all((better[..., 2] >= better[..., 1]) & (better[..., 1] >= better[..., 0]), axis=1).mean())


@dataclass
class GatePower:
    """CS-5's power at our budget (see `gate_power`): the straight line fitted to our own gate's
    largest π over its snapshots, what it predicts at our last step and how uncertain that is,
    and the budget at which it would clear the bar with 80% power."""

    power: float  # P(largest π ≥ bar at our last step) under the fitted line, slope uncertainty included
    expected: float  # largest π the fitted line gives at our last step (the effect at our budget)
    trend_per_step: float  # fitted drift of the largest π away from uniform, per step
    trend_se: float  # its standard error
    noise_sd: float  # residual sd of the largest π about the line
    df: int  # the residual degrees of freedom (snapshots after init − 1)
    steps: int  # our last step
    steps_80: float  # steps at which the fitted line clears the bar with 80% power (inf: never)

    def power_at(self, steps: float, bar: float) -> float:
        """P(largest π ≥ `bar` after `steps`) under the fitted line: a prediction, Student t with
        `df` degrees of freedom around 1/L + trend·steps, with sd √(noise² + steps²·trend_se²)."""
        return _prediction_power(
            self.expected - self.trend_per_step * self.steps,
            self.trend_per_step,
            self.trend_se,
            self.noise_sd,
            self.df,
            steps,
            bar,
        )


def _prediction_power(
    start: float, slope: float, slope_se: float, noise: float, df: int, steps: float, bar: float
) -> float:
    sd = math.sqrt(noise**2 + (steps * slope_se) ** 2)
    z = (start + slope * steps - bar) / sd
    p2 = float(stats.t_two_sided_p(z, df))  # P(|T| ≥ |z|)
    return 1 - p2 / 2 if z >= 0 else p2 / 2  # P(T ≤ z): the prediction clears the bar


def gate_power(hist: dict[int, np.ndarray], bar: float, *, max_steps: float = 1e9) -> GatePower:
    """CS-5's power at *our* budget (basis "budget"). 000 Fig 5 shows the gate going from uniform
    (1/L) to all its mass on one layer over the source's training and has no step axis, so the
    effect at our budget is modelled on our own gate (`hist`: step → π over its snapshots): the
    drift of its largest π from 1/L as a straight line through (0, 1/L) in steps (least squares;
    the init is exactly uniform), with the slope's standard error and the residual sd as the gate's
    own noise. The claim's check (largest π ≥ `bar` at the last step) then passes with the
    probability that the line's prediction there clears the bar — a prediction interval: Student
    t with (snapshots after init − 1) degrees of freedom, sd √(noise² + steps²·se(slope)²), so the
    slope's uncertainty grows with the extrapolation. `steps_80`: the smallest step count at which
    that reaches 80% (inf when it never does within `max_steps`: the slope is too uncertain or
    not positive). The snapshots of one run are one trajectory, not independent draws: its
    residuals are correlated, so se(slope) is if anything too small (an optimistic power)."""
    steps = np.array(sorted(hist), dtype=float)
    L = len(hist[min(hist)])
    drift = np.array([float(hist[s].max()) for s in sorted(hist)]) - 1.0 / L  # (snapshots,)
    pos = steps > 0
    if pos.sum() < 2:
        raise ReproError(f"CS-5's gate power needs at least two snapshots after init, got steps {steps.tolist()}")
    s, d = steps[pos], drift[pos]
    ss = float((s * s).sum())
    slope = float((s * d).sum() / ss)
    df = int(pos.sum()) - 1
    noise = float(np.sqrt(((d - slope * s) ** 2).sum() / df))
    slope_se = noise / math.sqrt(ss)
    last = float(steps.max())
    expected = 1.0 / L + slope * last
    gp = GatePower(0.0, expected, slope, slope_se, noise, df, int(last), math.inf)
    gp.power = gp.power_at(last, bar)
    if gp.power_at(max_steps, bar) >= 0.8:
        gp.steps_80 = float(stats.n_for_power(lambda n: gp.power_at(n, bar), n_max=int(max_steps) * 2))
    return gp
