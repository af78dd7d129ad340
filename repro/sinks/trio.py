"""SK-2 / SK-3's trained trio (001 §6.2.1, Table 7): the nano LLaMA baseline, amplification and
attenuation variants trained on one corpus with one seed and one data order, their sink-rate
curves on held-out windows (and the baseline's at its initial weights: SK-2's control), and
per-window NLL on the in-domain held-out set and on the shifted one (`SHIFT`, Table 7's
second, out-of-domain set — C4 there — fixed whatever `--corpus` says); SK-2's paired test of
amplification against the baseline; the effect at our training budget behind SK-2/SK-3's
power, modelled on the trio's own trajectory (`baseline_sink_power`, `loss_gap_model`, and
`first_budget` for the sizes at 80%); SK-3's negative control (`harm_null`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from repro.core import data, stats
from repro.core import train as T
from repro.ground.runtime import ReproError, resolve_autocast
from repro.harness import plan
from repro.sinks.experiments import SCALINGS, SinkCurve, nano_llama, sink_curve, train_variant, variant_job

SHIFT = "stdlib-code"  # the out-of-domain held-out set


@dataclass
class Trio:
    results: dict[str, T.TrainResult]
    cfg: T.TrainConfig
    curves: dict[str, SinkCurve]
    held_out: dict[str, torch.Tensor]  # held-out set (Trio.text, SHIFT) → (n, seq_len + 1) windows
    nll: dict[str, dict[str, torch.Tensor]]  # kind → held-out set → per-window NLL (n,)
    n_windows: dict[str, int]
    layers_heads: int
    init_curve: SinkCurve  # the baseline at its initial weights, on the same windows (SK-2's control)
    corpus: str = "brown"  # what the trio trained on and its in-domain held-out set (--corpus)

    @property
    def text(self) -> str:
        """The in-domain held-out set's key in `held_out` / `nll` (the corpus's name)."""
        return self.corpus if self.corpus != SHIFT else f"{SHIFT} (--corpus)"


def accelerator_for(profile_name: str):
    """`paper`: training under `accelerate launch` (the source trained with DDP on 2 GPUs)."""
    if profile_name != "paper":
        return None
    try:
        from accelerate import Accelerator
    except ImportError as err:  # pragma: no cover - accelerate ships with the suite's deps
        raise ReproError(
            "the paper profile of the sink claims trains under accelerate; pip install accelerate"
        ) from err
    bf16 = resolve_autocast("auto", "cuda" if torch.cuda.is_available() else "cpu")  # the dtype policy
    return Accelerator(mixed_precision="bf16" if bf16 else "no")


def train_trio(
    sizes: dict,
    profile_name: str,
    corpus: str,
    optimiser: dict | None = None,
    device: torch.device | str = "cpu",
    procs: int = 1,
) -> Trio:
    """The three variants trained on `corpus` (--corpus) with one seed and one data order
    (`optimiser`: TrainConfig fields that replace the profile's, e.g. the deviation's lr and
    weight decay) on `device` (not part of the checkpoint key), scored. `procs` > 1
    (--train-procs): each variant trains first on that many processes under torchrun
    (repro.core.launch), then loads here."""
    plan.require_fits("sinks", profile_name, device)
    V = sizes["model"]["vocab_size"]
    tok = data.brown_tokenizer(V)
    cfg = T.TrainConfig(**sizes["train"], vocab_size=V, lead_token=tok.bos_token_id, corpus=corpus).replace(
        **(optimiser or {})
    )
    train_tokens, val_tokens, ident = T.corpus_tokens(corpus, V)
    accelerator = accelerator_for(profile_name)
    if procs > 1 and accelerator is not None and accelerator.num_processes > 1:
        raise ReproError(
            f"--train-procs {procs} under `accelerate launch` ({accelerator.num_processes} processes): "
            "each would start its own torchrun; use one of the two"
        )
    from repro.core import launch

    # on --train-procs N: each variant under torchrun; else on a CPU the three side by side, one
    # torch thread each (repro.core.launch.train_jobs); the paper profile's accelerate run
    # trains in-process
    launch.train_jobs(
        [variant_job(k, sizes["model"], cfg, sizes["seed"], corpus=corpus, data_identity=ident) for k in SCALINGS],
        procs,
        device,
        pooled=accelerator is None,
    )
    results = {
        k: train_variant(
            k,
            sizes["model"],
            cfg,
            sizes["seed"],
            train_tokens=train_tokens,
            val_tokens=val_tokens,
            data_identity=ident,
            accelerator=accelerator,
            device=device,
        )
        for k in SCALINGS
    }
    ev = sizes["eval"]
    lengths = [n for n in ev["lengths"] if n <= cfg.seq_len]
    windows = {n: data.bos_windows(tok, "test", ev["n_seq"], n, who="SK-2", corpus=corpus) for n in lengths}
    curves = {k: sink_curve(r.model, windows, batch=ev["batch"]) for k, r in results.items()}
    init = nano_llama("baseline", sizes["model"], cfg.seq_len, sizes["seed"])
    init_curve = sink_curve(init.to(next(results["baseline"].model.parameters()).device), windows, batch=ev["batch"])
    # the shifted held-out set is fixed whatever --corpus says: Table 7's second, out-of-domain
    # set (C4 there) is part of the claim, not the user's choice
    _, code_val, _ = T.corpus_tokens(SHIFT, V)
    text = corpus if corpus != SHIFT else f"{SHIFT} (--corpus)"  # Trio.text
    held_out = {
        text: T.val_windows(cfg, val_tokens, ev["ppl_windows"]),
        SHIFT: T.val_windows(cfg, code_val, ev["ppl_windows"]),
    }
    nll = {k: {name: T.window_losses(r.model, w) for name, w in held_out.items()} for k, r in results.items()}
    m = sizes["model"]
    return Trio(
        results,
        cfg,
        curves,
        held_out,
        nll,
        {n: w.shape[0] for n, w in held_out.items()},
        m["n_layer"] * m["n_head"],
        init_curve,
        corpus,
    )


def describe(trio: Trio, model: dict) -> str:
    """The trio's model (`model`: the profile's `model` row) and training budget next to 001
    §6.2.1's (Table 14), as SK-2/SK-3's records and tables state it."""
    m, c = model, trio.cfg
    on = "" if trio.corpus == "brown" else f" on {trio.corpus}"
    return (
        f"{m['n_layer']}L × {m['d_model']} × {m['n_head']}H llama, Brown BPE {m['vocab_size']}{on}, "
        f"{c.steps} steps of {c.batch_size} × {c.seq_len} tokens ({c.steps * c.batch_size * c.seq_len / 1e6:.2f}M "
        f"tokens), lr {c.lr:g} → {c.lr * c.min_lr_ratio:g}, wd {c.weight_decay:g}, warm-up {c.warmup_steps}"
    )


def _wilcoxon_less(a: torch.Tensor, b: torch.Tensor) -> float:
    """One-sided paired Wilcoxon signed-rank p-value for a < b over sequences (1.0 when a == b
    everywhere: no evidence)."""
    d = (a - b).double().numpy()
    if not np.any(d != 0):
        return 1.0
    return stats.wilcoxon_signed_rank(d, alternative="less", zero_method="wilcox").p


def amplification_p(trio: Trio, form: str) -> dict[int, float]:
    """SK-2 (001 §6.2.1, Fig 12: amplification's sink rate significantly below the baseline's):
    per length, the one-sided paired Wilcoxon p of amplification < baseline over the held-out
    sequences' sink rates (metric `form`), Bonferroni-corrected over the lengths."""
    lengths = trio.curves["baseline"].lengths
    return {
        n: min(
            1.0,
            len(lengths)
            * _wilcoxon_less(trio.curves["amplification"].rates[form][n], trio.curves["baseline"].rates[form][n]),
        )
        for n in lengths
    }


def tokens_per_model(cfg) -> int:
    """Training tokens one model of the trio saw (`cfg`: its TrainConfig or the profile's row)."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k)
    return int(get("steps") * get("batch_size") * get("seq_len"))


def baseline_sink_power(trio: Trio, form: str, tokens: float, reps: int = 2000, seed: int = 0) -> float:
    """SK-2's power at a training budget (001 §6.2.1, Fig 12: "the baseline has a clear sink rate
    at every length"): P(the baseline check — model-wide sink rate ≥ one head of L·H at every
    length — passes after `tokens` training tokens per model), under the effect model fitted to
    this trio's own trajectory: each head's mean α¹ grows linearly in tokens from the initial
    weights (`trio.init_curve`) to this run's end, and a held-out sample at that budget scatters
    around the head means as this run's sequences do around theirs. Simulated: `reps` bootstrap
    replicates, each resampling the held-out sequences once for the trajectory's two ends (paired:
    the same windows) and once more for the new sample. Sinks tend to appear abruptly rather than
    linearly, and a head's per-sequence spread grows with its mean: an estimate to plan a run
    with, not a bound. At this run's budget the model's heads are this run's (bootstrapped)."""
    tau = tokens_per_model(trio.cfg)
    eps = trio.curves["baseline"].eps[form]
    rng = np.random.default_rng(seed)
    ok = np.ones(reps, dtype=bool)
    for n in trio.curves["baseline"].lengths:
        a0 = trio.init_curve.alpha[form][n].double().flatten(1).numpy()  # (S, L·H)
        a1 = trio.curves["baseline"].alpha[form][n].double().flatten(1).numpy()
        S, LH = a1.shape
        fit, new = rng.integers(0, S, (reps, S)), rng.integers(0, S, (reps, S))
        m0, m1 = a0[fit].mean(1), a1[fit].mean(1)  # (reps, L·H): the trajectory's two ends
        mu = m0 + (m1 - m0) * (float(tokens) / tau)
        alpha = mu[:, None, :] + (a1 - a1.mean(0))[new]  # (reps, S, L·H)
        ok &= (alpha > eps).mean(axis=(1, 2)) >= 1.0 / LH - 1e-9
    return float(ok.mean())


def first_budget(power_at, start: float, cap: float, target: float = 0.8, step: float = 2**0.125) -> float | None:
    """The smallest training budget on the grid start · step^k (≤ `cap`) at which `power_at(tokens)`
    reaches `target` (the sizes for 80% of SK-2 / SK-3), None past `cap`."""
    t = float(start)
    while t <= cap * (1 + 1e-9):
        if power_at(t) >= target:
            return t
        t *= step
    return None


@dataclass(frozen=True)
class GapModel:
    """SK-3's effect at a training budget: the variant − baseline training-loss gap (nats/token,
    the same batches in the same order) fitted as a + b·ln(tokens) to block means of the per-step
    gaps (`loss_gap_model`), with the fit's uncertainty."""

    intercept: float
    slope: float  # nats per e-fold of tokens
    resid_sd: float
    x_mean: float
    sxx: float
    blocks: int
    block_steps: int
    first_step: int

    @property
    def slope_se(self) -> float:
        return self.resid_sd / math.sqrt(self.sxx)

    def at(self, tokens: float) -> tuple[float, float]:
        """The fitted gap at `tokens` and its standard error (of the fitted mean)."""
        x = math.log(tokens)
        return (
            self.intercept + self.slope * x,
            self.resid_sd * math.sqrt(1.0 / self.blocks + (x - self.x_mean) ** 2 / self.sxx),
        )


def loss_gap_model(trio: Trio, kind: str, blocks: int = 12) -> GapModel:
    """SK-3's budget model (001 §6.2.2, Table 7 is the converged models' ratio): this trio's own
    trajectory of `kind` − baseline per-step training loss (same data order: paired batch by
    batch), in `blocks` means of consecutive steps, fitted linear in ln(tokens seen) over the
    second half of training (after the warm-up, while the gap formed; ci: steps 150–300 of 300),
    ordinary least squares; the residual sd of the block means is the fit's noise."""
    d = np.asarray(trio.results[kind].losses, float) - np.asarray(trio.results["baseline"].losses, float)
    size = max(1, len(d) // blocks)
    per_step = tokens_per_model(trio.cfg) / trio.cfg.steps
    starts = [s for s in range(0, len(d) - size + 1, size) if s >= len(d) // 2]
    x = np.array([math.log((s + size / 2) * per_step) for s in starts])
    y = np.array([d[s : s + size].mean() for s in starts])
    if len(x) < 3:
        raise ReproError(f"SK-3's budget model needs ≥ 3 blocks in the second half of training; got {len(x)}")
    xm = float(x.mean())
    sxx = float(((x - xm) ** 2).sum())
    b = float(((x - xm) * (y - y.mean())).sum() / sxx)
    a = float(y.mean() - b * xm)
    resid = y - (a + b * x)
    return GapModel(a, b, float(math.sqrt((resid**2).sum() / (len(x) - 2))), xm, sxx, len(x), size, starts[0])


def harm_null(trio: Trio, kind: str) -> tuple[float, str]:
    """SK-3's negative control for `kind` on the in-domain held-out set (001 Table 7's "comparable
    or better"): the upper 95% bound of the perplexity ratio to the baseline of a model from the
    same run that a real, non-strawman harm makes worse — a null the check could pass were its
    bound too loose. For attenuation, the amplification variant (trained alike; our budget leaves
    it worse than the baseline in-domain); for amplification, the trained baseline with
    amplification's scaling switched on, never trained for it (the intervention without the
    training the claim is about)."""
    import copy

    from repro.sinks.experiments import apply_positional_scaling, ratio_bound

    text, base = trio.text, trio.nll["baseline"][trio.text]
    if kind == "attenuation":
        return (
            ratio_bound(trio.nll["amplification"][text] - base)[1],
            "the amplification variant of the same run (trained alike, worse than the baseline in-domain here)",
        )
    if kind != "amplification":
        raise ReproError(f"SK-3 compares amplification or attenuation with the baseline, not {kind!r}")
    switched = apply_positional_scaling(copy.deepcopy(trio.results["baseline"].model), kind, trio.cfg.seq_len)
    nll = T.window_losses(switched, trio.held_out[text])
    return (
        ratio_bound(nll - base)[1],
        "the trained baseline with amplification's scaling switched on (never trained for it)",
    )
