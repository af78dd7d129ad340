"""SK-2 / SK-3's trained trio (001 §6.2.1, Table 7): the nano LLaMA baseline, amplification and
attenuation variants trained on one corpus with one seed and one data order, their sink-rate
curves on held-out windows (and the baseline's at its initial weights: SK-2's control), and
per-window NLL on the in-domain held-out set and on the shifted one (`SHIFT`, Table 7's
second, out-of-domain set — C4 there — fixed whatever `--corpus` says); SK-2's paired test of
amplification against the baseline.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from repro.core import data, stats
from repro.core import train as T
from repro.harness import plan
from repro.harness.runtime import ReproError, resolve_autocast
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
        raise ReproError("the paper profile of the sink claims trains under accelerate; pip install accelerate") from err
    bf16 = resolve_autocast("auto", "cuda" if torch.cuda.is_available() else "cpu")  # the dtype policy
    return Accelerator(mixed_precision="bf16" if bf16 else "no")


def train_trio(sizes: dict, profile_name: str, corpus: str, optimiser: dict | None = None,
               device: torch.device | str = "cpu", procs: int = 1) -> Trio:
    """The three variants trained on `corpus` (--corpus) with one seed and one data order
    (`optimiser`: TrainConfig fields that replace the profile's, e.g. the deviation's lr and
    weight decay) on `device` (not part of the checkpoint key), scored. `procs` > 1
    (--train-procs): each variant trains first on that many processes under torchrun
    (repro.harness.launch), then loads here."""
    plan.require_fits("sinks", profile_name, device)
    V = sizes["model"]["vocab_size"]
    tok = data.brown_tokenizer(V)
    cfg = T.TrainConfig(**sizes["train"], vocab_size=V, lead_token=tok.bos_token_id,
                        corpus=corpus).replace(**(optimiser or {}))
    train_tokens, val_tokens, ident = T.corpus_tokens(corpus, V)
    accelerator = accelerator_for(profile_name)
    if procs > 1 and accelerator is not None and accelerator.num_processes > 1:
        raise ReproError(f"--train-procs {procs} under `accelerate launch` ({accelerator.num_processes} processes): "
                         "each would start its own torchrun; use one of the two")
    from repro.harness import launch

    # on --train-procs N: each variant under torchrun; else on a CPU the three side by side, one
    # torch thread each (repro.harness.launch.train_jobs); the paper profile's accelerate run
    # trains in-process
    launch.train_jobs([variant_job(k, sizes["model"], cfg, sizes["seed"], corpus=corpus, data_identity=ident)
                       for k in SCALINGS], procs, device, pooled=accelerator is None)
    results = {k: train_variant(k, sizes["model"], cfg, sizes["seed"], train_tokens=train_tokens,
                                val_tokens=val_tokens, data_identity=ident, accelerator=accelerator, device=device)
               for k in SCALINGS}
    ev = sizes["eval"]
    lengths = [n for n in ev["lengths"] if n <= cfg.seq_len]
    windows = {n: data.bos_windows(tok, "test", ev["n_seq"], n, who="SK-2", corpus=corpus) for n in lengths}
    curves = {k: sink_curve(r.model, windows, batch=ev["batch"]) for k, r in results.items()}
    init = nano_llama("baseline", sizes["model"], cfg.seq_len, sizes["seed"])
    init_curve = sink_curve(init.to(next(results["baseline"].model.parameters()).device), windows,
                                  batch=ev["batch"])
    # the shifted held-out set is fixed whatever --corpus says: Table 7's second, out-of-domain
    # set (C4 there) is part of the claim, not the user's choice
    _, code_val, _ = T.corpus_tokens(SHIFT, V)
    text = corpus if corpus != SHIFT else f"{SHIFT} (--corpus)"  # Trio.text
    held_out = {text: T.val_windows(cfg, val_tokens, ev["ppl_windows"]),
                SHIFT: T.val_windows(cfg, code_val, ev["ppl_windows"])}
    nll = {k: {name: T.window_losses(r.model, w) for name, w in held_out.items()} for k, r in results.items()}
    m = sizes["model"]
    return Trio(results, cfg, curves, held_out, nll, {n: w.shape[0] for n, w in held_out.items()},
                m["n_layer"] * m["n_head"], init_curve, corpus)


def describe(trio: Trio, model: dict) -> str:
    """The trio's model (`model`: the profile's `model` row) and training budget next to 001
    §6.2.1's (Table 14), as SK-2/SK-3's records and tables state it."""
    m, c = model, trio.cfg
    on = "" if trio.corpus == "brown" else f" on {trio.corpus}"
    return (f"{m['n_layer']}L × {m['d_model']} × {m['n_head']}H llama, Brown BPE {m['vocab_size']}{on}, "
            f"{c.steps} steps of {c.batch_size} × {c.seq_len} tokens ({c.steps * c.batch_size * c.seq_len / 1e6:.2f}M "
            f"tokens), lr {c.lr:g} → {c.lr * c.min_lr_ratio:g}, wd {c.weight_decay:g}, warm-up {c.warmup_steps}")


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
    return {n: min(1.0, len(lengths) * _wilcoxon_less(trio.curves["amplification"].rates[form][n],
                                                       trio.curves["baseline"].rates[form][n]))
            for n in lengths}


def sink_budget(trio: Trio, form: str) -> dict[int, float]:
    """SK-2's sizes for 80% power, estimated: per length, the training tokens at which the
    baseline's most first-token-attending head would reach ε if its mean α¹ kept growing at the
    rate measured between the initial weights and this run's end (linear in tokens; sink heads
    tend to appear abruptly, so this is an estimate to plan a run with, not a bound). inf where
    the head did not grow. The claim needs a sink head at every length: read the largest value."""
    tokens = trio.cfg.steps * trio.cfg.batch_size * trio.cfg.seq_len
    eps = trio.curves["baseline"].eps[form]
    out = {}
    for n in trio.curves["baseline"].lengths:
        a0 = float(trio.init_curve.alpha[form][n].mean(0).max())  # (L, H) per-head means → the largest
        a1 = float(trio.curves["baseline"].alpha[form][n].mean(0).max())
        out[n] = tokens if a1 >= eps else (tokens * (eps - a0) / (a1 - a0) if a1 > a0 else float("inf"))
    return out
