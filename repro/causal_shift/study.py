"""The experiments `claims/test_causal_shift.py` reads (000), one call per fixture.

- `read_alignment` / `Reading`: 000 §III on one pretrained model — its alignment profile over
  <bos>-led test windows of the run's corpus, two random-init twins (the null and its control),
  the switch layers with their bootstrap CIs and Table I's decoded panel (CS-1, CS-2);
  `depth_changes`: Fig 3's three continuous measures, early against late layers.
- `train_runs` / `Runs`: 000 §IV's trained variants — the baseline per seed, a fixed cut at
  every layer, the cut at layer 0 per seed, α = 0 at the middle layer per seed, and the learned
  gate (CS-3 … CS-6).
- `table2`: 000 Table II — baseline, best fixed cut and gating on held-out text of the run's
  corpus, on stdlib code (the shifted benchmark, whatever `--corpus` says) and on last words,
  with each benchmark's seed spread.

Models and token windows go on `device` (the run's `--device`; CPU by default); the device itself
is in no checkpoint key (`repro.core.train` keys the dtype that ran).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from repro.causal_shift import experiments as cs
from repro.core import data
from repro.core import train as T
from repro.core import stats
from repro.core.models.hf import random_init_twin
from repro.harness.runtime import resolve_dtype


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


def read_alignment(name: str, model: torch.nn.Module, tok, a, *, corpus: str = "brown",
                   device: torch.device | str = "cpu") -> Reading:
    """000 §III on `model` (`a`: the profile's `align` row) over <bos>-led test windows of
    `corpus` on `device`: the alignment profile (top-k in the policy's compute dtype), the same
    continuous measures on random-init twins of seeds 0 and 1 (`random_init_twin`, on the
    model's device), switch layers, bootstrap CIs over sequences and Table I's panel."""
    ids = data.bos_windows(tok, "test", a["n_seq"], a["seq_len"] + 1, who=f"--model {name}: the causal-shift claims",
                           device=device, corpus=corpus)
    dtype = resolve_dtype(a["compute_dtype"], ids.device)
    p = cs.alignment_profile(model, ids, k=a["k"], compute_dtype=dtype)
    twins = tuple(cs.alignment_profile(random_init_twin(model, seed), ids, k=a["k"], top_k=False) for seed in (0, 1))
    panel = cs.decoded_panel(model, ids[0], tok, a["panel_start"])
    return Reading(name, p, twins, cs.switch_layers(p), cs.bootstrap_switch(p, a["n_boot"]), panel, ids.shape[0])


def depth_changes(prof: cs.AlignmentProfile, early: slice, late: slice) -> dict[str, float]:
    """000 Fig 3's measures between the `early` and the `late` layers: how far cos(h, e_in)
    falls ("falls"), cos(h, e_out) rises ("rises") and the input→output projection rises ("proj")."""
    m = {k: prof.mean(k) for k in ("cos_in", "cos_out", "projection")}
    return {"falls": float(m["cos_in"][early].mean() - m["cos_in"][late].mean()),
            "rises": float(m["cos_out"][late].mean() - m["cos_out"][early].mean()),
            "proj": float(m["projection"][late].mean() - m["projection"][early].mean())}


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
    BPE, on `device` (`procs` > 1: under torchrun, `repro.harness.launch`); `sizes`: the
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
    runs = ([(cfg, cs.Variant("baseline"), s) for s in seeds]
            + [(cfg, cs.Variant(f"cut@{l}", "cut", l, a), seeds[0]) for l in range(L)]
            + [(cfg, cs.Variant("cut@0", "cut", 0, a), s) for s in seeds[1:]]
            + [(cfg, cs.Variant(f"cut@{middle} α=0", "cut", middle, 0.0), s) for s in seeds]
            + [(gate_cfg, gv, seeds[0])])
    from repro.harness import launch

    # the 13 independent models: each on `procs` processes under torchrun, or on a CPU side by
    # side, one per core (repro.harness.launch.train_jobs); then loaded here
    launch.train_jobs([cs.variant_job(tc, c, v, s, corpus=corpus, data_identity=ident) for c, v, s in runs],
                      procs, device)
    done = [cs.train_variant(tc, c, v, s, **kw) for c, v, s in runs]
    n = len(seeds)
    baseline, cuts = done[:n], done[n:n + L]
    first = [cuts[0]] + done[n + L:n + L + n - 1]
    alpha0, gate = done[n + L + n - 1:n + L + 2 * n - 1], done[-1]
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
    code = torch.stack([code_val[s:s + T1] for s in starts])
    items = cs.last_word_items(tok, [d.text for d in data.corpus_documents(corpus, "test")],
                               max_items=sizes["eval"]["last_word_items"],
                               max_tokens=runs.cfg.seq_len)
    best = int(np.argmin([Runs.val(r) for r in runs.cuts]))
    models = {"baseline": runs.baseline[0].model, f"fixed cut (layer {best})": runs.cuts[best].model,
              "gating": runs.gate.model}
    out = {}
    for name, m in models.items():
        m.eval()
        acc, nll = cs.last_word_scores(m, items)
        out[name] = {"brown": cs.loss_and_accuracy(m, brown), "code": cs.loss_and_accuracy(m, code),
                     "last_word": acc, "last_word_nll": nll}
    # the seed spread of each benchmark's score: the baseline's seeds (same data order), for CS-6's power
    # (seed 0 is the "baseline" model scored above)
    first = out["baseline"]
    spread = {"brown": [100 * first["brown"][1]], "code": [100 * first["code"][1]],
              "last_word_nll": [first["last_word_nll"]]}
    for r in runs.baseline[1:]:
        r.model.eval()
        spread["brown"].append(100 * cs.loss_and_accuracy(r.model, brown)[1])
        spread["code"].append(100 * cs.loss_and_accuracy(r.model, code)[1])
        spread["last_word_nll"].append(cs.last_word_scores(r.model, items)[1])
    return out, len(items), best, {k: float(np.std(v, ddof=1)) for k, v in spread.items()}


def order_power(base: np.ndarray, higher_is_better: np.ndarray, seed_sd: np.ndarray, rel_gain: tuple[float, float],
                seeds: int = 1, draws: int = 20_000) -> float:
    """CS-6's power: the chance that gating ≥ fixed cut ≥ baseline shows on every benchmark if
    Table II's relative gains are real. `base` (benchmark,): our baseline's scores;
    `higher_is_better` (benchmark,) bools; `seed_sd` (benchmark,): the spread of a score over
    seeds; `rel_gain`: (fixed cut over baseline, gating over fixed cut). Each model's score is
    normal around base·(1 ± gain) with sd seed_sd/√seeds (`seeds`: models averaged per variant),
    by simulation (`draws`, a fixed generator: the same number every run)."""
    sign = np.where(higher_is_better, 1.0, -1.0)                                        # (benchmark,)
    gain = np.array([0.0, rel_gain[0], (1 + rel_gain[0]) * (1 + rel_gain[1]) - 1])      # (model,)
    means = base[:, None] * (1 + sign[:, None] * gain[None, :])                         # (benchmark, model)
    sd = seed_sd / np.sqrt(seeds)
    g = np.random.default_rng(0)
    sims = means[None] + g.normal(0.0, 1.0, size=(draws, *means.shape)) * sd[None, :, None]
    better = sims * sign[None, :, None]                                                 # higher is better
    return float(np.all((better[..., 2] >= better[..., 1]) & (better[..., 1] >= better[..., 0]), axis=1).mean())


@dataclass
class GatePower:
    """CS-5's power (see `gate_power`): the largest π expected at our token count if the gate
    concentrates as the source's does, its noise, and the budgets that would decide the claim."""

    power: float
    expected: float  # largest π expected at our tokens under token-proportional progress
    se: float  # the gate's own noise: residual sd of its largest π about a linear trend in steps
    tokens_80: float  # tokens at which the source-scaled expectation clears the bar with 80% power
    trend_per_step: float  # our gate's own drift of the largest π away from uniform, per step
    steps_to_bar: float  # steps at which our own trend reaches the bar (inf without drift)


def gate_power(hist: dict[int, np.ndarray], tokens_per_step: int, source_tokens: float, bar: float) -> GatePower:
    """CS-5's power at the source's effect. 000 Fig 5 shows the gate going from uniform (1/L)
    to all its mass on one layer over the source's training (`source_tokens`) and gives no step
    axis, so the stated assumption is progress in proportion to tokens seen: after n tokens the
    largest π is 1/L + (1 − 1/L)·n/source_tokens. The gate's noise is measured on our run (one
    gate): the residual sd of its largest π about a least-squares line through (0, 1/L) over the
    snapshots (`hist`: step → π). Power: that expectation ≥ `bar` under normal noise of that sd
    (`stats.power_threshold`). Also returned: the tokens at which the expectation clears the bar
    with 80% power, and where our own gate's linear trend would reach it (what to try first)."""
    steps = np.array(sorted(hist), dtype=float)
    top = np.array([float(hist[s].max()) for s in sorted(hist)])
    L = len(hist[min(hist)])
    drift = top - 1.0 / L                                                 # (snapshots,)
    slope = float((steps * drift).sum() / (steps * steps).sum()) if steps.any() else 0.0
    resid = drift - slope * steps
    se = float(np.sqrt((resid ** 2).sum() / max(len(steps) - 1, 1)))
    n_tok = float(steps.max()) * tokens_per_step
    expected = 1.0 / L + (1.0 - 1.0 / L) * n_tok / source_tokens
    z80 = 0.8416212335729143  # the standard normal's 80% quantile
    tokens_80 = source_tokens * (bar + z80 * se - 1.0 / L) / (1.0 - 1.0 / L)
    steps_to_bar = (bar - 1.0 / L) / slope if slope > 0 else float("inf")
    return GatePower(stats.power_threshold(expected, bar, se), expected, se, tokens_80, slope, steps_to_bar)
