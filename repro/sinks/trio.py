"""SK-2 / SK-3's trained trio (001 §6.2.1, Table 7): the nano LLaMA baseline, amplification and
attenuation variants trained on one corpus with one seed (SK-2's further seeds: more trios,
`repro.sinks.over_seeds`) and one data order, their sink-rate
curves on held-out windows (and the baseline's at its initial weights: SK-2's control), and
per-window NLL on the in-domain held-out set and on the shifted one (`SHIFT`, Table 7's
second, out-of-domain set — C4 there — fixed whatever `--corpus` says); SK-2's paired test of
amplification against the baseline and its context records; SK-3's perplexity ratios
(`perplexity_ratios`), Table 7 beside ours, and its negative control (`harm_null`). The
effects at our training budget behind the two claims' power are in `repro.sinks.budget`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from repro.core import data, scoring, stats, token_streams, train
from repro.core.checkpoints import load_snapshot
from repro.core.readings import Reading
from repro.ground.runtime import ReproError, resolve_autocast
from repro.sinks.experiments import (
    EPSILON,
    FORMS,
    SCALINGS,
    SinkCurve,
    apply_positional_scaling,
    expected_uniform_importance,
    nano_llama,
    ratio_bound,
    sink_curve,
    train_variant,
    variant_job,
)

SHIFT = "stdlib-code"  # the out-of-domain held-out set


@dataclass
class Trio:
    results: dict[str, train.TrainResult]
    cfg: train.TrainConfig
    curves: dict[str, SinkCurve]
    held_out: dict[str, torch.Tensor]  # held-out set (Trio.text, SHIFT) → (n, seq_len + 1) windows
    nll: dict[str, dict[str, torch.Tensor]]  # kind → held-out set → per-window NLL (n,)
    n_windows: dict[str, int]
    layers_heads: int
    init_curve: SinkCurve  # the baseline at its initial weights, on the same windows (SK-2's control)
    corpus: str = "brown"  # what the trio trained on and its in-domain held-out set (--corpus)
    # the baseline's curve at its snapshots (training tokens → curve, on the same windows; its
    # initial weights and its end are `init_curve` and `curves["baseline"]`): SK-2's trajectory
    snapshots: dict[int, SinkCurve] = field(default_factory=dict)

    def trajectory(self) -> dict[int, SinkCurve]:
        """The baseline's curve by training tokens: 0 (its initial weights), its snapshots, its end."""
        return {0: self.init_curve, **self.snapshots, tokens_per_model(self.cfg): self.curves["baseline"]}

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


def _trio_config(sizes: dict, corpus: str, optimiser: dict | None) -> train.TrainConfig:
    """The trio's TrainConfig (the profile's `train` row, `optimiser`'s changes, the baseline's
    trajectory snapshots): one config for every variant and seed, so the checkpoint keys match."""
    V = sizes["model"]["vocab_size"]
    tok = data.brown_tokenizer(V)
    cfg = train.TrainConfig(**sizes["train"], vocab_size=V, lead_token=tok.bos_token_id, corpus=corpus).replace(
        **(optimiser or {})
    )
    steps = sizes["train"]["steps"]
    return cfg.replace(snapshot_steps=tuple(sorted({round(f * steps) for f in sizes["trajectory"]} - {0, steps})))


def pretrain_trios(
    sizes: dict,
    profile_name: str,
    corpus: str,
    seeds: tuple[int, ...],
    optimiser: dict | None = None,
    device: torch.device | str = "cpu",
    procs: int = 1,
) -> int:
    """Train the trios of every seed in `seeds` before `train_trio` loads them (repro.core.launch):
    on a CPU the 3·len(seeds) models side by side in one training pool, so SK-2's trios over seeds
    (decide-sinks: 9 models) keep both cores busy instead of waiting trio by trio (3 jobs on 2
    processes leave one idle for a third of each trio's time); on --train-procs N each under
    torchrun; under `accelerate launch` (paper) nothing — the trio trains in-process. Returns
    how many models trained here (0: all cached)."""
    accelerator = accelerator_for(profile_name)
    if procs > 1 and accelerator is not None and accelerator.num_processes > 1:
        raise ReproError(
            f"--train-procs {procs} under `accelerate launch` ({accelerator.num_processes} processes): "
            "each would start its own torchrun; use one of the two"
        )
    from repro.core import launch

    cfg = _trio_config(sizes, corpus, optimiser)
    _, _, ident = token_streams.corpus_tokens(corpus, sizes["model"]["vocab_size"])
    jobs = [variant_job(k, sizes["model"], cfg, s, corpus=corpus, data_identity=ident) for s in seeds for k in SCALINGS]
    return launch.train_jobs(jobs, procs, device, pooled=accelerator is None)


def train_trio(
    sizes: dict,
    profile_name: str,
    corpus: str,
    optimiser: dict | None = None,
    device: torch.device | str = "cpu",
    procs: int = 1,
    seed: int | None = None,
) -> Trio:
    """The three variants trained on `corpus` (--corpus) with one seed and one data order
    (`optimiser`: TrainConfig fields that replace the profile's, e.g. the deviation's lr and
    weight decay) on `device` (not part of the checkpoint key), scored. `procs` > 1
    (--train-procs): each variant trains first on that many processes under torchrun
    (repro.core.launch), then loads here. The caller refuses a CUDA device too small for the
    profile first (`repro.harness.plan.require_fits`: the claim's fixture, before any step).
    `seed`: the models' seed (default the profile's `seed`; SK-2's further trios pass theirs).
    A trio `pretrain_trios` trained already loads from the checkpoint cache."""
    seed = sizes["seed"] if seed is None else seed
    V = sizes["model"]["vocab_size"]
    tok = data.brown_tokenizer(V)
    cfg = _trio_config(sizes, corpus, optimiser)
    train_tokens, val_tokens, ident = token_streams.corpus_tokens(corpus, V)
    accelerator = accelerator_for(profile_name)
    # on --train-procs N: each variant under torchrun; else on a CPU the three side by side, one
    # torch thread each (repro.core.launch.train_jobs); the paper profile's accelerate run
    # trains in-process
    pretrain_trios(sizes, profile_name, corpus, (seed,), optimiser, device, procs)
    results = {
        k: train_variant(
            k,
            sizes["model"],
            cfg,
            seed,
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
    init = nano_llama("baseline", sizes["model"], cfg.seq_len, seed)
    where = next(results["baseline"].model.parameters()).device
    init_curve = sink_curve(init.to(where), windows, batch=ev["batch"])
    per_step = cfg.batch_size * cfg.seq_len
    snapshots = {
        step * per_step: sink_curve(
            load_snapshot(nano_llama("baseline", sizes["model"], cfg.seq_len, seed), path).to(where),
            windows,
            batch=ev["batch"],
        )
        for step, path in sorted(results["baseline"].snapshots.items())
    }
    # the shifted held-out set is fixed whatever --corpus says: Table 7's second, out-of-domain
    # set (C4 there) is part of the claim, not the user's choice
    _, code_val, _ = token_streams.corpus_tokens(SHIFT, V)
    text = corpus if corpus != SHIFT else f"{SHIFT} (--corpus)"  # Trio.text
    held_out = {
        text: scoring.val_windows(cfg, val_tokens, ev["ppl_windows"]),
        SHIFT: scoring.val_windows(cfg, code_val, ev["ppl_windows"]),
    }
    nll = {k: {name: scoring.window_losses(r.model, w) for name, w in held_out.items()} for k, r in results.items()}
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
        snapshots,
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


def amplification_p(trio: Trio | Sequence[Any], form: str) -> dict[int, float]:
    """SK-2 (001 §6.2.1, Fig 12: amplification's sink rate significantly below the baseline's):
    per length, the one-sided paired Wilcoxon p of amplification < baseline over the held-out
    sequences' sink rates (metric `form`), Bonferroni-corrected over the lengths. Several trios
    (one per seed, `repro.sinks.over_seeds`): the sequences' pairs pooled over them."""
    trios = [trio] if isinstance(trio, Trio) else list(trio)
    lengths = trios[0].curves["baseline"].lengths

    def pooled(kind: str, n: int) -> torch.Tensor:
        return torch.cat([t.curves[kind].rates[form][n] for t in trios])

    return {
        n: min(1.0, len(lengths) * _wilcoxon_less(pooled("amplification", n), pooled("baseline", n))) for n in lengths
    }


def tokens_per_model(cfg) -> int:
    """Training tokens one model of the trio saw (`cfg`: its TrainConfig or the profile's row)."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k)
    return int(get("steps") * get("batch_size") * get("seq_len"))


def switched_nll(trio: Trio, kind: str, name: str) -> torch.Tensor:
    """Per-window NLL on the held-out set `name` of the trained baseline's weights run with
    `kind`'s scaling switched on, never trained for it (a copy: the trio's baseline is left as it
    is): the intervention without the training SK-3 is about."""
    import copy

    switched = apply_positional_scaling(copy.deepcopy(trio.results["baseline"].model), kind, trio.cfg.seq_len)
    return scoring.window_losses(switched, trio.held_out[name])


def harm_null(trio: Trio, kind: str) -> tuple[float, str]:
    """SK-3's negative control for `kind` on the in-domain held-out set (001 Table 7's "comparable
    or better"): the upper 95% bound of the perplexity ratio to the baseline of a model from the
    same run that a real, non-strawman harm makes worse — a null the check could pass were its
    bound too loose. For attenuation, the amplification variant (trained alike; our budget leaves
    it worse than the baseline in-domain); for amplification, the trained baseline with
    amplification's scaling switched on, never trained for it (the intervention without the
    training the claim is about)."""
    text, base = trio.text, trio.nll["baseline"][trio.text]
    if kind == "attenuation":
        return (
            ratio_bound(trio.nll["amplification"][text] - base)[1],
            "the amplification variant of the same run (trained alike, worse than the baseline in-domain here)",
        )
    if kind != "amplification":
        raise ReproError(f"SK-3 compares amplification or attenuation with the baseline, not {kind!r}")
    return (
        ratio_bound(switched_nll(trio, kind, text) - base)[1],
        "the trained baseline with amplification's scaling switched on (never trained for it)",
    )


# --------------------------------------------------------------------------- SK-2's readings


def deviation_label(dev: Trio) -> str:
    """How SK-2/SK-3's records name the deviation's trio (its optimiser, not Table 14's)."""
    return f"deviation (lr {dev.cfg.lr:g}, wd {dev.cfg.weight_decay:g}: not Table 14's setting)"


def sink_rate_readings(trio: Trio, model: dict, form: str, p_amp: dict[int, float]) -> list[Reading]:
    """SK-2's context readings (001 §6.2.1, Fig 12): the training, every variant's sink rate in
    both metric forms (ε = 0.25, the source's; ε = 0.3, Gu et al.'s, which CLAIMS.md asks to report
    too) at every length, the three checks' quantities at the other form's ε, the largest head's
    mean α¹, uniform attention's α¹, and `p_amp` (`amplification_p`) per length; `model`: the
    profile's `model` row."""
    lengths = trio.curves["baseline"].lengths
    out = [
        Reading("training (Table 14's optimiser settings, our budget)", describe(trio, model)),
        Reading(
            "training wall time per model, s (from the checkpoints' meta)",
            ", ".join(f"{k} {r.wall_s:.0f}" for k, r in trio.results.items()),
        ),
    ]
    for kind in SCALINGS:
        for f in FORMS:
            for n in lengths:
                out.append(
                    Reading(f"{kind}: sink rate, ε = {EPSILON[f]} ({f} form), T = {n}", trio.curves[kind].mean(f, n))
                )
        out.append(
            Reading(
                f"{kind}: largest mean α¹ of any head, T = {lengths[-1]}",
                float(trio.curves[kind].alpha[form][lengths[-1]].mean(0).max()),
            )
        )
    for f in FORMS:
        if f == form:
            continue  # the asserted form: its quantities are the checks themselves
        rows = {k: np.array(trio.curves[k].row(f)) for k in SCALINGS}
        at = f"ε = {EPSILON[f]} ({f} form; not asserted)"
        out += [
            Reading(f"baseline: sink rate at its lowest over lengths, {at}", float(rows["baseline"].min())),
            Reading(f"attenuation: sink rate at its highest over lengths, {at}", float(rows["attenuation"].max())),
            Reading(
                f"amplification − baseline sink rate, largest over lengths, {at}",
                float((rows["amplification"] - rows["baseline"]).max()),
            ),
        ]
    out.append(
        Reading(
            "α¹ of a head with uniform causal attention, T = " + str(lengths[-1]),
            expected_uniform_importance(lengths[-1]),
        )
    )
    out += [Reading(f"amplification < baseline at T = {n}: Bonferroni one-sided Wilcoxon p", p_amp[n]) for n in lengths]
    return out


def deviation_readings(deviation: Trio | None, model: dict, form: str) -> list[Reading]:
    """SK-2's context readings of the deviation's trio (the profile's `deviation` optimiser, not
    the source's), or that the profile trains none."""
    if deviation is None:
        return [Reading("deviation run (lr 3e-3, wd 0.5; not the source's)", "trained in the long profile only")]
    lengths = deviation.curves["baseline"].lengths
    lab = deviation_label(deviation)
    out = [Reading(f"{lab}: training", describe(deviation, model))]
    for kind in SCALINGS:
        out.append(
            Reading(
                f"{lab}: {kind} sink rate (ε = {EPSILON[form]}) at T = {list(lengths)}",
                str(np.round(deviation.curves[kind].row(form), 4).tolist()),
            )
        )
    out.append(
        Reading(
            f"{lab}: amplification < baseline, Bonferroni Wilcoxon p at T = {list(lengths)}",
            str([float(f"{p:.3g}") for p in amplification_p(deviation, form).values()]),
        )
    )
    return out


def rates_summary(trio: Trio, form: str, model: dict) -> str:
    """SK-2's measurements in one line (its not-reproduced reading): the three variants' sink
    rates by length, the baseline's largest head α¹ at the longest, and the training."""
    lengths = trio.curves["baseline"].lengths
    rows = {k: trio.curves[k].row(form) for k in SCALINGS}
    return (
        f"baseline {np.round(np.array(rows['baseline']), 4).tolist()}, amplification "
        f"{np.round(rows['amplification'], 4).tolist()}, "
        f"attenuation {np.round(rows['attenuation'], 4).tolist()} at T = {list(lengths)}; largest baseline "
        f"α¹ {float(trio.curves['baseline'].alpha[form][lengths[-1]].mean(0).max()):.3f} at T = {lengths[-1]} "
        f"(ε = {EPSILON[form]}); {describe(trio, model)}"
    )


# --------------------------------------------------------------------------- SK-3's readings


def perplexities(trio: Trio) -> dict[str, dict[str, float]]:
    """Perplexity of every variant on every held-out set: variant → set → exp(mean NLL)."""
    return {k: {name: math.exp(float(v.mean())) for name, v in trio.nll[k].items()} for k in SCALINGS}


@dataclass(frozen=True)
class PerplexityRatios:
    """SK-3 for one variant (001 §6.2.2, Table 7): per held-out set, the variant / baseline
    perplexity ratio, the upper one-sided 95% t bound of it and the per-window sd of the NLL
    difference (`ratio_bound`), with every variant's perplexities and Table 7's ratios."""

    kind: str
    ppl: dict[str, dict[str, float]]  # variant → held-out set → perplexity
    source: dict[str, float]  # held-out set → Table 7's ratio (in-domain: WikiText-2's; shifted: C4's)
    ratio: dict[str, float]
    upper: dict[str, float]
    sd: dict[str, float]


def perplexity_ratios(trio: Trio, kind: str, table7: dict) -> PerplexityRatios:
    """`PerplexityRatios` of `kind` against the trio's baseline; `table7`: 001 Table 7's
    perplexities, variant → (WikiText-2, C4)."""
    text = trio.text
    src = dict(zip((text, SHIFT), (table7[kind][i] / table7["baseline"][i] for i in range(2))))
    ratio, upper, sds = {}, {}, {}
    for name in trio.held_out:
        ratio[name], upper[name], sds[name] = ratio_bound(trio.nll[kind][name] - trio.nll["baseline"][name])
    return PerplexityRatios(kind, perplexities(trio), src, ratio, upper, sds)


def table7_rows(trio: Trio, deviation: Trio | None, model: dict, table7: dict) -> tuple[str, list[str], list[list]]:
    """SK-3's table (title, columns, rows): 001 Table 7 next to the trio's perplexities on the two
    held-out sets (and the deviation's trio where the profile trains one)."""
    text = trio.text
    ppl = perplexities(trio)
    rows = [[k, round(ppl[k][text], 2), round(ppl[k][SHIFT], 2), *table7[k]] for k in SCALINGS]
    if deviation is not None:
        dppl = perplexities(deviation)
        rows += [
            [
                f"{k}, lr {deviation.cfg.lr:g} / wd {deviation.cfg.weight_decay:g} (deviation)",
                round(dppl[k][text], 2),
                round(dppl[k][SHIFT], 2),
                "",
                "",
            ]
            for k in SCALINGS
        ]
    return (
        f"001 Table 7 next to ours: perplexity ({describe(trio, model)}; {trio.n_windows[text]} "
        f"windows of {trio.cfg.seq_len} tokens per set)",
        [
            "model",
            f"{data.corpus_title(trio.corpus)} (ours)",
            "stdlib code (ours)",
            "WikiText-2 (source)",
            "C4 (source)",
        ],
        rows,
    )


def perplexity_readings(trio: Trio, deviation: Trio | None, r: PerplexityRatios) -> list[Reading]:
    """SK-3's context readings for `r.kind`: its perplexity and its ratio to the baseline's on each
    held-out set (the deviation's ratio beside it), and, on the shifted set, the trained baseline
    run with the scaling switched on, never trained for it (on the in-domain set that is
    amplification's negative control, `harm_null`)."""
    kind, text = r.kind, trio.text
    out = []
    for name in trio.held_out:
        out.append(
            Reading(
                f"{kind}: perplexity on held-out {name} (baseline {r.ppl['baseline'][name]:.2f})", r.ppl[kind][name]
            )
        )
        out.append(
            Reading(
                f"{kind} / baseline perplexity on {name} (source: Table 7's "
                f"{'WikiText-2' if name == text else 'C4'} ratio)",
                r.ratio[name],
                source=round(r.source[name], 4),
            )
        )
        if deviation is not None:
            r_dev, u_dev, _ = ratio_bound(deviation.nll[kind][name] - deviation.nll["baseline"][name])
            out.append(
                Reading(
                    f"{deviation_label(deviation)}: {kind} / baseline perplexity on {name} (upper 95% bound)",
                    f"{r_dev:.4f} (≤ {u_dev:.4f})",
                )
            )
    out.append(
        Reading(
            f"the baseline's weights run with the {kind} scaling (never trained for it) / baseline perplexity "
            f"on {SHIFT}",
            math.exp(float((switched_nll(trio, kind, SHIFT) - trio.nll["baseline"][SHIFT]).mean())),
        )
    )
    return out
