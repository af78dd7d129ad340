"""The experiments `claims/test_causal_shift.py` reads (000), one call per fixture.

- `read_alignment` / `Reading`: 000 §III on one pretrained model — its alignment profile over
  <bos>-led test windows of the run's corpus, two random-init twins (the null and its control),
  the switch layers with their bootstrap CIs and Table I's decoded panel (CS-1, CS-2);
  `depth_changes` (and `depth_changes_per_sequence`): Fig 3's three continuous measures, early
  against late layers; `depth_excess`: those changes in the model and in both twins (CS-2), and
  `record_measures`, CS-2's context records.
- `train_runs` / `Runs`: 000 §IV's trained variants — the baseline per seed, a fixed cut at
  every layer, the cut at layer 0 per seed, α = 0 at the middle layer per seed, the learned
  gate, the same gate trained on runs of repeated tokens (CS-5's null: the current token is the
  next one's best guess, so nothing to attenuate by the source's account), and the sweep
  again with a cut too faint to matter (CS-4's null, `FAINT_ALPHA`) (CS-3 … CS-6).
- `table2`: 000 Table II — baseline, best fixed cut and gating on held-out text of the run's
  corpus, on stdlib code (the shifted benchmark, whatever `--corpus` says) and on last words,
  with each benchmark's seed spread; `table2_rows`: its rows and the order on each benchmark
  (CS-6), `record_order` their records.

The claims' powers are in `repro.causal_shift.power`. Models and token windows go on `device`
(the run's `--device`; CPU by default); the device itself is in no checkpoint key
(`repro.core.train` keys the dtype that ran).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

from repro.causal_shift import experiments as cs
from repro.causal_shift.sizes import VARIANTS
from repro.core import data, readings, stats, token_streams, train
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


@dataclass(frozen=True)
class DepthExcess:
    """CS-2 (000 Fig 3): the three continuous measures' changes between the early layers (1…q)
    and the last q (`depth_changes`) of the model (`ours`), of its random-init twin of seed 0 (the
    null each change is asserted in excess of) and of the twin of seed 1 (the negative control, put
    through the same assertion); per sequence for the model and the null (CS-2's power)."""

    q: int
    ours: dict[str, float]
    null: dict[str, float]
    control: dict[str, float]
    ours_per_sequence: dict[str, np.ndarray]
    null_per_sequence: dict[str, np.ndarray]

    def excess(self, k: str) -> float:
        """The model's change `k` beyond the null twin's."""
        return self.ours[k] - self.null[k]

    def control_excess(self, k: str) -> float:
        """The control twin's change `k` beyond the null twin's."""
        return self.control[k] - self.null[k]

    def summary(self) -> str:
        """The changes in one line (CS-2's not-reproduced reading)."""
        ours, n0 = self.ours, self.null
        return (
            f"Δcos_in {ours['falls']:.3f}, Δcos_out {ours['rises']:.3f}, "
            f"Δprojection {ours['proj']:.3f} (twin {n0['falls']:.3f}, "
            f"{n0['rises']:.3f}, {n0['proj']:.3f})"
        )


def depth_excess(r: Reading) -> DepthExcess:
    """`DepthExcess` of a §III reading. The early reference starts at layer 1: depth alone moves
    every measure in an untrained network (its blocks add noise: the input is forgotten, the
    projection drifts from 0 towards the middle), which the twins measure; q is a quarter of the
    layers (at least one)."""
    p = r.profile
    null, twin = r.twins
    q = max(1, p.n_layers // 4)
    early, late = slice(1, 1 + q), slice(-q, None)
    ours, n0, n1 = (depth_changes(prof, early, late) for prof in (p, null, twin))
    return DepthExcess(
        q, ours, n0, n1, depth_changes_per_sequence(p, early, late), depth_changes_per_sequence(null, early, late)
    )


def measures_context(r: Reading, d: DepthExcess, p_excess: dict[str, float]) -> list[readings.Reading]:
    """CS-2's context records: the switch layer by each measure, the projection on the logit
    lens's axis and the unit-vector projection at layer 1 and at the last layer, the null twin's
    changes and the one-sided p of each excess over it (`p_excess`), for the claim file to record."""
    out: list[readings.Reading] = []
    p = r.profile
    for k in ("match", "cosine", "projection"):
        lo, hi, _ = r.ci[k]
        out.append(readings.Reading(f"{r.name}: switch by {k}", f"{r.switch[k]:.2f} [{lo:.2f}, {hi:.2f}]"))
    proj, unit = p.mean("projection"), p.mean("unit_projection")
    out.append(
        readings.Reading(
            f"{r.name}: projection (lens: σ(z_out − z_in)) at layer 1 / at the last layer (the model's own "
            "output: the reach of the axis)",
            f"{proj[1]:.2f} / {proj[-1]:.2f}",
        )
    )
    out.append(
        readings.Reading(
            f"{r.name}: unit-vector projection at layer 1 / at the last layer (not asserted: its output end "
            "needs cos(h, e_out) = 1)",
            f"{unit[1]:.2f} / {unit[-1]:.2f}",
        )
    )
    for k, v in d.null.items():
        out.append(readings.Reading(f"{r.name}: random-init twin (seed 0), change '{k}'", v))
    out.append(
        readings.Reading(
            f"{r.name}: one-sided p of each excess over the twin > 0 (t over sequences)",
            ", ".join(f"{k} {v:.3g}" for k, v in p_excess.items()),
        )
    )
    return out


# --------------------------------------------------------------------------- §IV: CS-3 … CS-6


@dataclass
class Runs:
    """000 §IV's trained variants, every one from the same initial weights and data order. A group
    the profile does not train (`sizes["variants"]`, `repro.causal_shift.sizes.VARIANTS`) is None;
    `need` says so by name."""

    tc: object
    cfg: train.TrainConfig
    baseline: list | None  # TrainResult per seed
    cuts: list | None  # TrainResult per layer (seed 0, α = cut_alpha)
    first_cut: list | None  # the cut at layer 0, per seed (seed 0 = cuts[0]), paired with `baseline`
    alpha0: list | None  # α = 0 at the middle layer, per seed
    gate: train.TrainResult | None
    gate_variant: cs.Variant
    middle: int
    profile: str = "ci"
    # CS-5's null: the gate trained alike on runs of the corpus's tokens, shuffled and each repeated
    # (token_streams.repeated_corpus_tokens): the current token is the next one's best guess
    gate_null: train.TrainResult | None = None
    # the cut at layers 1 … L − 1 for every seed but seed 0 (seed × layer order), with `cuts` and
    # `first_cut` the whole sweep per seed (`sweep_table`)
    sweep: list | None = None
    # CS-4's null (`null_table`): the sweep again with α = FAINT_ALPHA, every (seed, layer) cell
    # (seed × layer order)
    faint_null: list | None = None
    # CS-5's gates and nulls per seed (`sizes["gate_seeds"]`; `gate`, `gate_null`: the first seed's)
    gates: list | None = None
    gate_nulls: list | None = None

    @staticmethod
    def val(r: train.TrainResult) -> float:
        """A run's last validation loss."""
        return float(r.history[-1]["val_loss"])

    @property
    def tokens(self) -> int:
        """Training tokens per model of this profile's runs."""
        return self.cfg.steps * self.cfg.batch_size * self.cfg.seq_len

    def base_loss(self, sweep: np.ndarray) -> float:
        """The loss Table II's relative gain is taken of: the baselines' mean (the cuts' in `sweep`
        where no baseline is trained)."""
        return float(np.mean([self.val(r) for r in self.baseline])) if self.baseline else float(sweep.mean())

    def sweep_table(self) -> np.ndarray:
        """(seeds, layers) validation losses of the cut at every layer for every seed: seed 0's
        row is `cuts`, the others the cut at layer 0 (`first_cut`) and at the later layers (`sweep`)."""
        self.need("cuts", "first_cut", "sweep")
        L = len(self.cuts)
        rest = [self.val(r) for r in self.sweep]
        rows = [[self.val(r) for r in self.cuts]]
        rows += [[self.val(f), *rest[i * (L - 1) : (i + 1) * (L - 1)]] for i, f in enumerate(self.first_cut[1:])]
        return np.array(rows)

    def null_table(self) -> np.ndarray:
        """(seeds, layers) validation losses of CS-4's faint null, shaped as `sweep_table`: the
        sweep again — each seed's initial weights and the one data order, a cut at each layer —
        with α = FAINT_ALPHA, a cut too faint to matter that still sends each run down its own
        path, so the table keeps the sweep's structure (cells of a row share init and data) and the
        runs' own divergence, without a layer effect. CS-4's tests put it through their assertions."""
        self.need("faint_null")
        L = self.tc.n_layer
        v = [self.val(r) for r in self.faint_null]
        return np.array([v[i : i + L] for i in range(0, len(v), L)])

    def missing(self, *groups: str) -> list[str]:
        """The groups among `groups` this profile did not train."""
        return [g for g in groups if getattr(self, g) is None]

    def need(self, *groups: str) -> None:
        """Raise NotTrained naming the groups a claim reads that this profile does not train."""
        if gone := self.missing(*groups):
            raise NotTrained(
                f"the {self.profile} profile trains only {', '.join(self.trained)} of 000 §IV's variants "
                f"(sizes causal_shift.variants); this claim also reads {', '.join(gone)}"
            )

    @property
    def trained(self) -> list[str]:
        return [g for g in VARIANTS if getattr(self, g) is not None]


def iut_last(table: np.ndarray) -> tuple[list, float]:
    """CS-4's "a late cut is second best": the last column against every middle one of a (seeds,
    layers) table, the one-sided paired t's (last < middle) and the intersection–union p (their
    largest)."""
    last = [stats.paired_t(table[:, -1], table[:, k], "less") for k in range(1, table.shape[1] - 1)]
    return last, max(t.p for t in last)


# CS-4's null: α of a cut too faint to matter — the runs still part ways, with no layer pattern;
# 0.99 was not faint enough (the pilot: docs/sizes.md, `faint_null`)
FAINT_ALPHA = 0.999


class NotTrained(ReproError):
    """A claim reads a variant group its profile does not train (a decide chunk trains only what
    its own claim reads)."""


def train_runs(
    sizes, *, corpus: str = "brown", device: torch.device | str = "cpu", procs: int = 1, profile: str = "ci"
) -> Runs:
    """Train (or load from the checkpoint cache) the §IV variants the profile names
    (`sizes["variants"]`) on `corpus` under the Brown BPE, on `device` (`procs` > 1: under
    torchrun, `repro.core.launch`); `sizes`: the profile's `causal_shift` sizes."""
    tc = cs.gpt2_style(**sizes["model"])
    cfg = train.TrainConfig(**sizes["train"], vocab_size=sizes["model"]["vocab_size"], corpus=corpus)
    V = sizes["model"]["vocab_size"]
    tr, va, ident = token_streams.corpus_tokens(corpus, V)
    kw = dict(train_tokens=tr, val_tokens=va, data_identity=ident, device=device, corpus=corpus)
    # CS-5's null reads runs of the corpus's tokens (shuffled, order seed 0, each repeated a
    # geometric number of times): the current token is the next one's best guess at every
    # position, so by the source's account (000 Abstract: the residual propagates mismatched
    # information "if the current token is not the most informative for prediction"; §I) there is
    # nothing to attenuate. Shuffled tokens alone are the opposite case (the current token tells
    # nothing of the next), where that account predicts a cut: not a null for CS-5.
    str_, sva, sident = token_streams.repeated_corpus_tokens(corpus, V, seed=0)
    null_kw = dict(kw, train_tokens=str_, val_tokens=sva, data_identity=sident)
    null_tokens = ("repro.core.token_streams:repeated_streams", dict(corpus=corpus, vocab_size=V, seed=0))

    def job(g: str, c, v, s) -> dict:
        if g == "gate_null":
            return cs.variant_job(tc, c, v, s, corpus=corpus, data_identity=sident, tokens=null_tokens)
        return cs.variant_job(tc, c, v, s, corpus=corpus, data_identity=ident)

    L, a = tc.n_layer, sizes["cut_alpha"]
    middle = L // 2
    seeds = sizes["seeds"]
    wanted = tuple(sizes["variants"])
    if unknown := sorted(set(wanted) - set(VARIANTS)):
        raise ReproError(f"causal_shift.variants: unknown groups {unknown}; the groups are {', '.join(VARIANTS)}")
    gv = cs.Variant("gating", "learned", alpha=a)
    gate_cfg = cfg.replace(snapshot_steps=sizes["gate_snapshots"])
    groups = {
        "baseline": [(cfg, cs.Variant("baseline"), s) for s in seeds],
        "cuts": [(cfg, cs.Variant(f"cut@{l}", "cut", l, a), seeds[0]) for l in range(L)],
        "first_cut": [(cfg, cs.Variant("cut@0", "cut", 0, a), s) for s in seeds[1:]],
        "sweep": [(cfg, cs.Variant(f"cut@{l}", "cut", l, a), s) for s in seeds[1:] for l in range(1, L)],
        "alpha0": [(cfg, cs.Variant(f"cut@{middle} α=0", "cut", middle, 0.0), s) for s in seeds],
        "gate": [(gate_cfg, gv, s) for s in sizes["gate_seeds"]],
        "gate_null": [(gate_cfg, gv, s) for s in sizes["gate_seeds"]],
        "faint_null": [
            (cfg, cs.Variant(f"cut@{l} α={FAINT_ALPHA}", "cut", l, FAINT_ALPHA), s) for s in seeds for l in range(L)
        ],
    }
    if "sweep" in wanted and not {"cuts", "first_cut"} <= set(wanted):
        raise ReproError(
            "causal_shift.variants: 'sweep' completes the sweep of 'cuts' and 'first_cut'; train all three"
        )
    if "first_cut" in wanted and "cuts" not in wanted:  # seed 0's cut at layer 0 is the sweep's first
        groups["first_cut"].insert(0, groups["cuts"][0])
    from repro.core import launch

    # the independent models: each on `procs` processes under torchrun, or on a CPU side by
    # side, one per core (repro.core.launch.train_jobs); then loaded here
    runs = [(g, *r) for g in VARIANTS if g in wanted for r in groups[g]]
    launch.train_jobs([job(*r) for r in runs], procs, device)
    done = iter([cs.train_variant(tc, c, v, s, **(null_kw if g == "gate_null" else kw)) for g, c, v, s in runs])
    got = {g: [next(done) for _ in groups[g]] if g in wanted else None for g in VARIANTS}
    if got["first_cut"] is not None and got["cuts"] is not None:
        got["first_cut"] = [got["cuts"][0], *got["first_cut"]]
    gate = got["gate"][0] if got["gate"] is not None else None
    null_gate = got["gate_null"][0] if got["gate_null"] is not None else None
    return Runs(
        tc,
        cfg,
        got["baseline"],
        got["cuts"],
        got["first_cut"],
        got["alpha0"],
        gate,
        gv,
        middle,
        profile,
        null_gate,
        got["sweep"],
        got["faint_null"],
        got["gate"],
        got["gate_null"],
    )


def late_mass(pi: np.ndarray) -> float:
    """CS-5's pre-registered statistic (`sizes.CS5_PREREG`): a gate's mass on the latter half of
    its L layers, Σ_{l ≥ L/2} π_l (l from 0; continuous, so no pass sits on a discrete boundary)."""
    pi = np.asarray(pi, float)
    return float(pi[(len(pi) + 1) // 2 :].sum())


def permutation_p(gates: list[float], nulls: list[float]) -> float:
    """One-sided exact permutation p of "the gates' values sit above the nulls'": the share of the
    labellings of the pooled values (as many "gates" as there are) whose smallest gate minus largest
    null reaches the observed one (1/20 at its smallest, 3 against 3)."""
    pooled, k = [*gates, *nulls], len(gates)
    obs = min(gates) - max(nulls)
    stat = [
        min(pooled[i] for i in c) - max(pooled[i] for i in range(len(pooled)) if i not in c)
        for c in itertools.combinations(range(len(pooled)), k)
    ]
    return float(np.mean([t >= obs - 1e-12 for t in stat]))


def gate_prereg(gates: list[np.ndarray], nulls: list[np.ndarray], prereg: dict) -> list[readings.Reading]:
    """CS-5's pre-registered test (`sizes.CS5_PREREG`, fixed before any run): the late mass of each
    gate seed's and each null seed's π after the last step (records, with the permutation p), and
    the two checks: every gate seed ≥ bar + margin; the smallest gate seed above the largest null
    seed by ≥ margin."""
    if not (len(gates) == len(nulls) == len(prereg["seeds"])):
        raise ReproError(
            f"CS-5's pre-registered test reads {len(prereg['seeds'])} gates and as many nulls, got "
            f"{len(gates)} and {len(nulls)}"
        )
    g, n = [late_mass(p) for p in gates], [late_mass(p) for p in nulls]
    bar, margin = prereg["bar"], prereg["margin"]
    seeds = ", ".join(map(str, prereg["seeds"]))
    why = f"pre-registered (sizes.CS5_PREREG, before any run): margin {margin} declared, not fitted"
    return [
        readings.Reading(f"late mass Σ_(l ≥ L/2) π_l per gate seed ({seeds})", [round(v, 4) for v in g]),
        readings.Reading(f"late mass per null seed ({seeds}; runs of repeated tokens)", [round(v, 4) for v in n]),
        readings.Reading("one-sided exact permutation p, gate seeds above null seeds", permutation_p(g, n)),
        readings.Reading(
            "smallest gate seed's late mass", min(g), bar + margin, "ge", f"'a late layer attracts the mass': {why}"
        ),
        readings.Reading(
            "smallest gate seed's late mass − largest null seed's",
            min(g) - max(n),
            margin,
            "ge",
            f"beyond the null: {why}",
        ),
    ]


def late_layer(pi: np.ndarray, bar: float) -> float:
    """CS-5's layer check on a gate's π over L layers (000 Fig 5): (l + 1) / L for the layer l that
    holds at least `bar` of the mass, 0 where no layer does (a gate that has not concentrated names
    no layer, so a null passes the check only by concentrating too)."""
    top = int(np.argmax(pi))
    return (top + 1) / len(pi) if pi[top] >= bar else 0.0


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
    _, code_val, _ = token_streams.corpus_tokens("stdlib-code", sizes["model"]["vocab_size"])
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


@dataclass(frozen=True)
class Table2Rows:
    """CS-6: `table2`'s scores as 000 Table II's rows, [benchmark, baseline, fixed cut, gating]:
    next-token accuracy (%) on the corpus's test windows and on stdlib code (higher is better),
    the last-word NLL (lower is better: at this scale every model's last-word accuracy is 0,
    measured, and ties at 0 say nothing), and the losses and last-word accuracy as context."""

    names: list[str]
    acc: list[list]
    last_word: list
    other: list[list]
    n_items: int

    def holds(self) -> list[bool]:
        """Per benchmark, whether gating ≥ fixed cut ≥ baseline (≤ for the NLL)."""
        lw = self.last_word
        return [r[3] >= r[2] >= r[1] for r in self.acc] + [lw[3] <= lw[2] <= lw[1]]

    def table(self) -> list[list]:
        """Every row, scores rounded to 3 decimals."""
        return [[r[0], *[round(v, 3) for v in r[1:]]] for r in self.acc + [self.last_word] + self.other]

    def bars(self) -> list[list]:
        """The accuracy rows with their benchmark's short name (Table II as bars)."""
        return [[r[0].split(" (")[0], *r[1:]] for r in self.acc]


def table2_rows(res: dict, n_items: int, text: str) -> Table2Rows:
    """`Table2Rows` of `table2`'s model → scores `res` (`n_items` last-word items; `text`: the
    corpus's title)."""
    names = list(res)
    acc = [
        [bench, *[100 * res[n][key][1] for n in names]]
        for bench, key in ((f"{text} test (acc %)", "brown"), ("stdlib code (acc %)", "code"))
    ]
    lw = [f"last word, {text} ({n_items} sentences, NLL)", *[res[n]["last_word_nll"] for n in names]]
    other = [
        [b, *[res[n][k][0] for n in names]]
        for b, k in ((f"{text} test (loss)", "brown"), ("stdlib code (loss)", "code"))
    ]
    other.append([f"last word, {text} ({n_items} sentences, acc %)", *[100 * res[n]["last_word"] for n in names]])
    return Table2Rows(names, acc, lw, other, n_items)


def order_context(rows: Table2Rows) -> list[readings.Reading]:
    """CS-6's context records (for the claim file): on each benchmark, the three scores and whether
    the order holds."""
    out: list[readings.Reading] = []
    holds, lw = rows.holds(), rows.last_word
    for r, h in zip(rows.acc, holds):
        out.append(
            readings.Reading(f"{r[0]}: gating ≥ fixed cut ≥ baseline", f"{r[3]:.2f} ≥ {r[2]:.2f} ≥ {r[1]:.2f}: {h}")
        )
    out.append(
        readings.Reading(
            f"{lw[0]}: gating ≤ fixed cut ≤ baseline", f"{lw[3]:.3f} ≤ {lw[2]:.3f} ≤ {lw[1]:.3f}: {holds[-1]}"
        )
    )
    return out
