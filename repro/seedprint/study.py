"""The lineage study behind `claims/test_seedprint.py` (001 §5–6.1, App B.3–B.4), at our scale.

What the SP claims (and BB-7) read, built once per module by the claim file's fixtures:

- `Zoo` (`build_zoo`): the lineage of App B.4 — LLaMA-style inits of the profile's seeds (42, 123,
  1000, 2000), each pre-trained on the run's corpus with one data order (Tables 4a–4c), a
  distractor (seed 123, another data order) and continual training of seed 1000 and of the
  distractor on the shifted corpus (Table 5) — and every model's responses to one set of random
  token inputs; `reef_windows`, REEF's shared inputs; `with_baselines`, a pair's row with the four
  baselines of App B.3.2, for Table 4b's pairs (`init_vs_trained`) and Table 5's two suspects
  (`table5_pairs`); `gaussian_pairs`, pairs under §6.1.1's Gaussian inputs (SP-1's other half).
- `Calibration` (`calibrate`, `null_responses`, `null_pairs`): Algorithm 1's false-positive rate
  on pairs of unrelated models — independent inits (App B.3.1, Fig 13) and the zoo's trained
  models of different seeds (where Tables 4c and 5 apply the Gaussian null) — with the test of
  that rate against α with the models resampled (`boot_p`; pairs share models), and the exact
  binomial tests as context.
- `Descendant` (`finetune_descendants`): Table 6 at our scale — an embedded pretrained model
  against its code fine-tune, against a random-init model of its config and, where the profile
  trains one, against an unrelated trained model of its config (the real null).
- `Persistence` (`persistence`): §5 / Fig 11 — τ between init 42 and each checkpoint of its own
  training against seed 123's checkpoints.

Every model is built, trained or loaded on the `device` given (a `Lineage` carries its own);
inputs and responses are drawn exactly as on the CPU.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from repro.core import scoring, stats
from repro.core.models.hf import random_init_twin
from repro.ground.runtime import autocast, derive_seed
from repro.seedprint import algorithm
from repro.seedprint import fingerprint_baselines as fb
from repro.seedprint.lineage import Lineage, finetune_pretrained, heldout_windows, weight_change

ALPHA = algorithm.ALPHA
TESTS = (("p_t", "t-test"), ("p_u", "U-test"))  # Algorithm 1's two tests (001 §6.1.1): result key, label
CAL_LEVEL = 0.05  # the level of the binomial test of a false-positive rate against α
# the shifted corpus of Table 5 (The Stack) and Table 6 (the fine-tunes) at our scale: part of the
# claims, so fixed whatever --corpus says (which sets what the lineage pre-trains on)
SHIFT = "stdlib-code"
SKIP_EMBED = ("embed", "lm_head")  # the fine-tune freezes the (tied) token embedding


def pair_row(a: str, b: str, r: algorithm.SeedPrintResult, same: bool, label: str | None = None) -> dict:
    """One pair's row: Algorithm 1's (t, U) p, |S|, mean τ on S and τ's, the released variant's
    p and z; `same`: whether the pair is one lineage."""
    return dict(
        pair=label or f"{a} vs {b}",
        a=a,
        b=b,
        same=same,
        p_t=r.paper.p_t,
        p_u=r.paper.p_u,
        n_dims=len(r.paper.dims),
        mean_tau=float(np.mean(r.paper.taus)) if len(r.paper.taus) else float("nan"),
        taus=r.paper.taus,
        p_released=r.released.p,
        z_released=r.released.z,
    )


# --------------------------------------------------------------------------- the zoo (App B.4, Tables 4–5)


class Zoo:
    """Models of the lineage experiment (001 App B.4, Tables 4a–4c and 5) and their responses
    (n × d) to one set of random inputs."""

    def __init__(self, lab: Lineage, seeds, cfg: algorithm.SeedPrintConfig) -> None:
        self.lab, self.cfg = lab, cfg
        self.models: dict[str, torch.nn.Module] = {}
        self.results = {}
        self.seed_of: dict[str, int] = {}
        lab.pretrain([lab.base_job(s, data_seed=0) for s in seeds] + [lab.base_job(123, data_seed=1)])
        for s in seeds:
            self.models[f"init{s}"] = lab.init(s)
            self.results[f"base{s}"] = lab.base(s, data_seed=0)
            self.models[f"base{s}"] = self.results[f"base{s}"].model
            self.seed_of[f"init{s}"] = self.seed_of[f"base{s}"] = s
        # Table 5: the distractor is seed 123 trained with a *different* data order, then both it
        # and the true base (seed 1000) continue on the shifted corpus
        self.results["base123'"] = lab.base(123, data_seed=1)
        self.models["base123'"] = self.results["base123'"].model
        self.seed_of["base123'"] = 123
        shifted = (("base1000", 1000), ("base123'", 123))
        lab.pretrain(
            [lab.continual_job(self.results[name], seed=seed, corpus=SHIFT, data_seed=0) for name, seed in shifted]
        )
        for name, seed in shifted:
            r = lab.continual(self.results[name], seed=seed, corpus=SHIFT, data_seed=0)
            self.results[f"{name}+code"] = r
            self.models[f"{name}+code"] = r.model
            self.seed_of[f"{name}+code"] = seed
        self.trained = [k for k in self.models if not k.startswith("init")]
        self.inputs = algorithm.random_inputs(self.models[f"init{seeds[0]}"], cfg).to(lab.device)
        self.responses = {k: algorithm.responses(m, self.inputs, batch_size=100) for k, m in self.models.items()}

    def compare(self, a: str, b: str, same: bool) -> dict:
        return pair_row(a, b, algorithm.compare(self.responses[a], self.responses[b], self.cfg), same)

    def same_lineage_pairs(self) -> list[dict]:
        """Every init against its own trained model, and each base against its code descendant."""
        pairs = [
            (f"init{s}", f"base{s}") for s in sorted({self.seed_of[k] for k in self.models if k.startswith("init")})
        ]
        pairs += [("base1000", "base1000+code"), ("base123'", "base123'+code")]
        return [self.compare(a, b, same=True) for a, b in pairs]


def build_zoo(lab: Lineage, seeds, cfg: algorithm.SeedPrintConfig) -> Zoo:
    """The zoo of `lab` (on `lab.device`), with torch's global RNG seeded first."""
    torch.manual_seed(0)
    return Zoo(lab, seeds, cfg)


def reef_windows(lab: Lineage) -> torch.Tensor:
    """64 validation windows of 32 tokens of the pre-training corpus: REEF's "same samples" for
    both models (App B.3.2), on `lab.device`."""
    _, val, _ = lab.corpus(lab.base_corpus)
    starts = torch.linspace(0, val.numel() - 33, 64).long()
    return val[starts.unsqueeze(1) + torch.arange(32)].to(lab.device)


def with_baselines(zoo: Zoo, a: str, b: str, same: bool, reef_inputs: torch.Tensor) -> dict:
    """`zoo.compare(a, b)`'s row with the four baselines of App B.3.2 on the pair (`baselines`) and
    the suspect `b`'s val loss (`val_loss`)."""
    r = zoo.compare(a, b, same=same)
    r["baselines"] = fb.all_baselines(zoo.models[a], zoo.models[b], reef_inputs)
    r["val_loss"] = zoo.results[b].final_val_loss
    return r


def init_vs_trained(zoo: Zoo, seeds, reef_inputs: torch.Tensor) -> list[dict]:
    """001 Table 4b (+ Table 8's baselines): each seed's init against its own trained model."""
    return [with_baselines(zoo, f"init{s}", f"base{s}", True, reef_inputs) for s in seeds]


def table5_pairs(zoo: Zoo, reef_inputs: torch.Tensor) -> list[dict]:
    """001 Table 5 (the code shift): base seed 1000 against its continual-trained descendant and
    against the distractor's, each with the four baselines (App B.3.2) and the suspect's val loss."""
    return [
        with_baselines(zoo, "base1000", suspect, same, reef_inputs)
        for suspect, same in (("base1000+code", True), ("base123'+code", False))
    ]


def gaussian_pairs(zoo: Zoo, cfg: algorithm.SeedPrintConfig, pairs: list[tuple[str, str, bool]]) -> list[dict]:
    """Algorithm 1 as §6.1.1 states its inputs: n sequences of i.i.d. Gaussian vectors (the scalar
    mean and std of the first init's embedding output, `algorithm.random_inputs`), one set that
    every model of `pairs` sees, fed as input embeddings; `pairs`: (a, b, same lineage). The
    released test reads the same set, as the authors' Tables 4a–4c draw theirs: the statistics of
    an init of the architecture (test_toy_models.py: the base seed's init model; one cached file
    for every pair). Each row
    is `pair_row`'s, its label marked "Gaussian inputs". Only the models named are run (a response
    set costs about as much as the zoo's token responses of one model)."""
    gcfg = dataclasses.replace(cfg, inputs="gaussian")
    first = next(k for k in zoo.models if k.startswith("init"))
    x = algorithm.random_inputs(zoo.models[first], gcfg).to(zoo.lab.device)
    names = list(dict.fromkeys(n for a, b, _ in pairs for n in (a, b)))
    resp = {k: algorithm.responses(zoo.models[k], x, batch_size=100) for k in names}
    return [
        pair_row(a, b, algorithm.compare(resp[a], resp[b], gcfg), same, label=f"{a} vs {b}, Gaussian inputs")
        for a, b, same in pairs
    ]


# --------------------------------------------------------------------------- null calibration (App B.3.1)


BOOT_REPLICATES = 2000  # model-level bootstrap of a false-positive rate (Calibration.boot_p)


@dataclass
class Calibration:
    """Algorithm 1's verdicts over pairs of unrelated models (different seeds): how often each
    test flags one (a false positive) against the α it promises (001 App B.3.1's null).

    Pairs share models (7 trained models give 17 pairs), so their verdicts are not independent:
    the exact binomial test (`binom_p`) is context only; the rate is tested with the models
    resampled (`boot_p`: every row names its two models, `a` and `b`)."""

    kind: str
    rows: list[dict]

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def models(self) -> list[str]:
        return sorted({str(r[k]) for r in self.rows for k in ("a", "b")})

    def k(self, key: str) -> int:
        return int(sum(r[key] < ALPHA for r in self.rows))

    def ci(self, key: str) -> stats.BinomialCI:
        return stats.binomial_ci(self.k(key), self.n)

    def binom_p(self, key: str) -> float:
        """One-sided exact binomial p of k or more false positives in n pairs at rate α, as if the
        pairs were independent (context: they share models)."""
        return stats.binomial_tail(self.k(key), self.n, ALPHA)

    def binom_p_below(self, key: str) -> float:
        """The other side: exact binomial p of k or fewer false positives at rate α (independent pairs)."""
        return 1.0 - stats.binomial_tail(self.k(key) + 1, self.n, ALPHA)

    def boot_rates(self, key: str, replicates: int = BOOT_REPLICATES) -> np.ndarray:
        """The false-positive rate under a model-level bootstrap: the M models are drawn M times
        with replacement, each pair of the data weighs (copies of a) × (copies of b), and the
        rate is the weighted share of flagged pairs; replicates that keep no pair are dropped.
        Seeded by the kind and the test (deterministic)."""
        models = self.models
        idx = {m: i for i, m in enumerate(models)}
        ia = np.array([idx[str(r["a"])] for r in self.rows])
        ib = np.array([idx[str(r["b"])] for r in self.rows])
        flags = np.array([r[key] < ALPHA for r in self.rows], dtype=float)
        rng = np.random.default_rng(derive_seed("seedprint-calibration-boot", self.kind, key, replicates))
        counts = rng.multinomial(len(models), np.full(len(models), 1.0 / len(models)), size=replicates).astype(float)
        w = counts[:, ia] * counts[:, ib]
        total = w.sum(1)
        keep = total > 0
        return (w[keep] @ flags) / total[keep]

    def boot_p(self, key: str, replicates: int = BOOT_REPLICATES) -> float:
        """One-sided p of "the rate is at most α", pairs resampled at the model level: the share
        of bootstrap rates at or below α, (1 + count) / (1 + replicates). No false positive at
        all gives 1 (every resampled rate is 0)."""
        rates = self.boot_rates(key, replicates)
        return float((1 + np.sum(rates <= ALPHA)) / (1 + len(rates)))

    def power_against(self, key: str, rate: float, level: float, sims: int = 200) -> float:
        """The probability that `boot_p` falls below `level` when each of these pairs is flagged at
        `rate` (independently: pairs that share a model and flag together would be harder still to
        tell from α, so this bounds the power from above), simulated on this calibration's models
        and pairs with one set of model-level bootstrap draws (seeded by the kind, the test and the
        rate: deterministic)."""
        models = self.models
        idx = {m: i for i, m in enumerate(models)}
        ia = np.array([idx[str(r["a"])] for r in self.rows])
        ib = np.array([idx[str(r["b"])] for r in self.rows])
        rng = np.random.default_rng(derive_seed("seedprint-calibration-power", self.kind, key, rate, level, sims))
        counts = rng.multinomial(len(models), np.full(len(models), 1.0 / len(models)), size=BOOT_REPLICATES)
        w = (counts[:, ia] * counts[:, ib]).astype(float)
        total = w.sum(1)
        w = w[total > 0] / total[total > 0, None]
        rates = w @ (rng.random((self.n, sims)) < rate)  # (replicates kept, sims)
        p = (1 + (rates <= ALPHA).sum(0)) / (1 + w.shape[0])
        return float((p < level).mean())

    def disjoint(self) -> list[dict]:
        """Pairs no two of which share a model (greedy in row order: for `null_pairs`' rows the
        consecutive seeds (0, 1), (2, 3), …). Independent models make their verdicts independent
        trials, so an exact binomial bound holds on them (`upper`)."""
        used: set[str] = set()
        out = []
        for r in self.rows:
            a, b = str(r["a"]), str(r["b"])
            if a not in used and b not in used:
                used |= {a, b}
                out.append(r)
        return out

    def upper(self, key: str, level: float = 0.95) -> tuple[int, int, float]:
        """(false positives, pairs, one-sided Clopper–Pearson upper bound of the rate) over the
        disjoint pairs (`disjoint`): a bound valid whatever the dependence among all pairs."""
        rows = self.disjoint()
        k = int(sum(r[key] < ALPHA for r in rows))
        return k, len(rows), stats.binomial_upper(k, len(rows), level)

    def family_p(self, replicates: int = BOOT_REPLICATES) -> dict[str, float]:
        """`boot_p` of each of Algorithm 1's tests (TESTS' keys)."""
        return {key: self.boot_p(key, replicates) for key, _ in TESTS}

    def miscalibrated(self, key: str) -> bool:
        """The rate exceeds α at CAL_LEVEL with the models resampled (not Holm-corrected: a caveat)."""
        return self.boot_p(key) < CAL_LEVEL

    def summary(self) -> str:
        parts = []
        for key, label in TESTS:
            ci = self.ci(key)
            parts.append(
                f"{label} {self.k(key)}/{self.n} (Wilson 95% {ci.low:.3f}–{ci.high:.3f}, binomial p "
                f"{self.binom_p(key):.2g} as if independent, model-level bootstrap p {self.boot_p(key):.2g}"
                f"{': miscalibrated' if self.miscalibrated(key) else ''})"
            )
        return f"{self.kind} ({len(self.models)} models): " + "; ".join(parts)


def null_responses(lab: Lineage, n_models: int, inputs: torch.Tensor) -> dict[int, torch.Tensor]:
    """Responses of `n_models` independent inits (seeds 10_000 + i, on `lab.device`) on the
    zoo's inputs: App B.3.1's null models."""
    seeds = [10_000 + i for i in range(n_models)]
    return {s: algorithm.responses(lab.init(s), inputs, batch_size=100) for s in seeds}


def bound_pairs(
    lab: Lineage, null_rows: list[dict], n_null: int, n_bound: int, inputs: torch.Tensor, cfg: algorithm.SeedPrintConfig
) -> list[dict]:
    """SP-6's bound (`null_verdicts.check_fpr_bound`): disjoint pairs of independent inits — the
    consecutive pairs among `null_pairs`' `n_null` inits, then, up to `n_bound` inits, further
    consecutive pairs (seeds 10_000 + n_null, n_null + 1, …), each pair scored and its responses
    let go (a paper-sized bound holds hundreds of inits)."""
    rows = Calibration("null", null_rows).disjoint()
    for i in range(n_null, n_bound - 1, 2):
        a, b = 10_000 + i, 10_001 + i
        r = algorithm.compare(
            algorithm.responses(lab.init(a), inputs, batch_size=100),
            algorithm.responses(lab.init(b), inputs, batch_size=100),
            cfg,
        )
        rows.append(dict(a=f"null{a}", b=f"null{b}", p_t=r.paper.p_t, p_u=r.paper.p_u, p_released=r.released.p))
    return rows


def calibrate(
    zoo: Zoo, null_responses: dict[int, torch.Tensor], cfg: algorithm.SeedPrintConfig, n_null_inits: int
) -> dict[str, Calibration]:
    """Every pair of the zoo's trained models of different seeds (trained × trained: what Table 5's
    distractor and the extended Table 4c are), and every init (the zoo's four and the first
    `n_null_inits` null models) against every trained model of another seed (init × trained:
    Table 4c, SP-5's null)."""
    tt = [
        zoo.compare(a, b, same=False)
        for a, b in itertools.combinations(zoo.trained, 2)
        if zoo.seed_of[a] != zoo.seed_of[b]
    ]
    nulls = sorted(null_responses)[:n_null_inits]
    resp = {
        **{k: zoo.responses[k] for k in zoo.models if k.startswith("init")},
        **{f"null{s}": null_responses[s] for s in nulls},
    }
    seed_of = {**zoo.seed_of, **{f"null{s}": s for s in nulls}}
    it = [
        pair_row(a, b, algorithm.compare(resp[a], zoo.responses[b], cfg), same=False)
        for a in resp
        for b in zoo.trained
        if seed_of[a] != seed_of[b]
    ]
    return {
        "trained": Calibration("trained × trained, different seeds", tt),
        "init": Calibration("init × trained, different seeds", it),
    }


def null_pairs(
    null_responses: dict[int, torch.Tensor], cfg: algorithm.SeedPrintConfig
) -> tuple[list[dict], np.ndarray, np.ndarray, int]:
    """All pairs of the independent inits (App B.3.1, Fig 13): (p_t, p_u, p_released) per pair,
    the pooled τ's, the τ's of disjoint pairs (each model in one pair: independent samples), and
    the model count."""
    seeds = sorted(null_responses)
    rows, pooled, by_pair = [], [], {}
    for a, b in itertools.combinations(seeds, 2):
        r = algorithm.compare(null_responses[a], null_responses[b], cfg)
        rows.append(dict(a=f"null{a}", b=f"null{b}", p_t=r.paper.p_t, p_u=r.paper.p_u, p_released=r.released.p))
        pooled.extend(r.paper.taus.tolist())
        by_pair[(a, b)] = r.paper.taus
    disjoint = np.concatenate([by_pair[(seeds[i], seeds[i + 1])] for i in range(0, len(seeds) - 1, 2)])
    return rows, np.array(pooled), disjoint, len(seeds)


# --------------------------------------------------------------------------- fine-tuned descendants (Table 6)


@dataclass
class Movement:
    """How far a fine-tune moved its pretrained model (a descendant must have measurably
    moved): held-out code NLL per window before and after (paired), the relative weight change of
    the fine-tuned parameters, and the tokens it trained on."""

    tokens: int
    nll_before: np.ndarray  # per held-out code window
    nll_after: np.ndarray
    rel_change: float  # ‖Δθ‖/‖θ‖ over the fine-tuned parameters

    def nll_drop(self) -> tuple[float, float, float]:
        """Mean per-window drop of held-out NLL and its 95% t-interval."""
        d = self.nll_before - self.nll_after
        mean, sem = stats.mean_sem(d)
        half = stats.t_quantile(0.975, len(d) - 1) * sem
        return mean, mean - half, mean + half


@dataclass
class Descendant(Movement):
    """001 Table 6 at our scale: a pretrained model against its code fine-tune."""

    name: str = ""
    pair: dict | None = None  # original vs its fine-tune
    null: dict | None = None  # original vs a random-init model of the same config (one width, one tokenizer)
    one_minus_pcs: float = float("nan")  # 1 − PCS over the fine-tuned parameters (Table 6's PCS column)
    # original vs an unrelated *trained* model of the same config (the random-init twin trained on
    # the shift corpus): the null that could pass; None where the profile trains none
    trained_null: dict | None = None
    null_tokens: int = 0  # the tokens that trained null saw


def finetune_measured(
    base: torch.nn.Module, tok: Any, *, name: str, ps: dict, device: torch.device | str
) -> tuple[torch.nn.Module, Movement]:
    """A copy of `base` fine-tuned on the shifted corpus (`lineage.finetune_pretrained`, token
    embedding frozen; `ps`: the profile's "pretrained" row) and how far it moved (`Movement`:
    held-out code NLL before and after in the policy's dtype, paired by window)."""
    windows = heldout_windows(tok, SHIFT, n=ps["heldout_windows"], seq_len=ps["finetune_seq_len"]).to(device)
    with autocast("auto", device):  # the policy dtype, as the fine-tune itself; paired before/after
        before = scoring.window_losses(base, windows, batch=8).numpy()
    tuned = copy.deepcopy(base)
    finetune_pretrained(
        tuned,
        tok,
        name=name,
        corpus=SHIFT,
        steps=ps["finetune_steps"],
        lr=ps["finetune_lr"],
        batch_size=ps["finetune_batch"],
        seq_len=ps["finetune_seq_len"],
    )
    tuned.eval()
    with autocast("auto", device):
        after = scoring.window_losses(tuned, windows, batch=8).numpy()
    tokens = ps["finetune_steps"] * ps["finetune_batch"] * ps["finetune_seq_len"]
    return tuned, Movement(tokens, before, after, weight_change(base, tuned, skip=SKIP_EMBED))


def finetune_descendants(
    pretrained: Callable[[str], tuple[torch.nn.Module, Any]],
    names,
    ps: dict,
    device: torch.device | str,
    procs: int = 1,
) -> tuple[algorithm.SeedPrintConfig, dict[str, Descendant]]:
    """Each of `names` (loaded by `pretrained(name)` on `device`) fine-tuned and measured
    (`finetune_measured`), and Algorithm 1 against the fine-tune and against a random-init model
    of its config and, where the profile's row sets `null_train_steps` and `null_train_lr`, against
    that twin trained on the shift corpus (the fine-tune's batch and length; token embedding frozen
    as in the fine-tune): an unrelated trained model of the same config, Table 6's real null.
    `ps`: the profile's "pretrained" row. `procs` (--train-procs) is not honoured,
    with a warning: the fine-tunes start from a model loaded in this process (whatever --model
    names), not from a launch job's factory, so they train here."""
    if procs > 1:
        import warnings

        warnings.warn(
            f"--train-procs {procs} does not reach SP-5's fine-tunes of pretrained models (Table 6): "
            "they start from the model loaded in this process, not a launch job, and train here on one "
            "process (the lineage models do train on the N processes)",
            stacklevel=2,
        )
    device = torch.device(device)
    # the released test as run_table5.sh runs it on Table 6's Llama-2-7B fine-tunes (released.RULES)
    cfg = algorithm.SeedPrintConfig(n=ps["n"], length=ps["length"], m=ps["m"], seed=0, released_rule="table6")
    out = {}
    for name in names:
        base, tok = pretrained(name)
        tuned, mv = finetune_measured(base, tok, name=name, ps=ps, device=device)
        twin = random_init_twin(base, seed=0).to(device)
        x = algorithm.random_inputs(base, cfg).to(device)
        f_base, f_tuned, f_twin = (algorithm.responses(m, x, batch_size=50) for m in (base, tuned, twin))
        trained_null, null_tokens = None, 0
        if ps.get("null_train_steps"):
            steps = ps["null_train_steps"]
            finetune_pretrained(
                twin,
                tok,
                name=f"random-init {name} (seed 0)",
                corpus=SHIFT,
                steps=steps,
                lr=ps["null_train_lr"],
                batch_size=ps["finetune_batch"],
                seq_len=ps["finetune_seq_len"],
            )
            twin.eval()
            null_tokens = steps * ps["finetune_batch"] * ps["finetune_seq_len"]
            trained_null = pair_row(
                name,
                f"unrelated trained {name}-config model",
                algorithm.compare(f_base, algorithm.responses(twin, x, batch_size=50), cfg),
                same=False,
            )
        out[name] = Descendant(
            mv.tokens,
            mv.nll_before,
            mv.nll_after,
            mv.rel_change,
            name=name,
            pair=pair_row(name, f"{name}+code ft", algorithm.compare(f_base, f_tuned, cfg), same=True),
            null=pair_row(name, f"random-init {name}", algorithm.compare(f_base, f_twin, cfg), same=False),
            one_minus_pcs=1.0 - fb.pcs(base, tuned, exclude=SKIP_EMBED).similarity,
            trained_null=trained_null,
            null_tokens=null_tokens,
        )
        del tuned, twin
    return cfg, out


# --------------------------------------------------------------------------- persistence through training (§5, Fig 11)


@dataclass
class Persistence:
    """001 §5 / Fig 11 (BB-7): τ per dimension between init 42's responses and each checkpoint of
    its own training, and of seed 123's (the different-seed baseline), on init 42's top-m mean dims."""

    steps: list[int]
    dims: list[int]
    lineage: list[np.ndarray]  # per step: τ's, init 42 vs its own checkpoint
    baseline: list[np.ndarray]  # per step: τ's, init 42 vs seed 123's checkpoint
    ps: list[float]  # per step: one-sided Mann–Whitney p (lineage > baseline), Bonferroni over steps > 0; nan at 0
    p_control: float  # the same at the last step with seed 2000's trained model in place of seed 42's


def persistence(zoo: Zoo, lab: Lineage, m: int) -> Persistence:
    """Fig 11's experiment on the zoo's seed-42 and seed-123 trainings (their snapshots, loaded on
    `lab.device`), with the negative control: seed 2000's trained model against the last baseline."""
    steps = sorted(zoo.results["base42"].snapshots)
    init = zoo.responses["init42"]
    dims = sorted(torch.topk(init.double().mean(0), m).indices.tolist())
    lineage, baseline, ps = [], [], []
    bonferroni = len(steps) - 1
    for step in steps:
        own = algorithm.responses(lab.snapshot(zoo.results["base42"], step, 42), zoo.inputs, batch_size=100)
        other = algorithm.responses(lab.snapshot(zoo.results["base123"], step, 123), zoo.inputs, batch_size=100)
        lineage.append(algorithm.kendall_per_dim(init, own, dims))
        baseline.append(algorithm.kendall_per_dim(init, other, dims))
        p = stats.mann_whitney_u(lineage[-1], baseline[-1], alternative="greater").p
        ps.append(min(1.0, p * bonferroni) if step > 0 else float("nan"))
    unrelated = algorithm.kendall_per_dim(init, zoo.responses["base2000"], dims)
    p_ctl = min(1.0, stats.mann_whitney_u(unrelated, baseline[-1], alternative="greater").p * bonferroni)
    return Persistence(steps, dims, lineage, baseline, ps, p_ctl)
