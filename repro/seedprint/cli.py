"""`repro seedprint BASE SUSPECT` (is SUSPECT descended from BASE? 001 §6.1) and `repro
seedprint-eval` (the operating table behind it): their parsers, built without importing torch
(`repro.ground.source_constants`), and their handlers; named in the topic's manifest (`TOPIC.commands`).
"""

from __future__ import annotations

import argparse
import sys

from repro.ground.source_constants import const

_VERDICT = {True: "same lineage", False: "different lineage"}


def _progress(message: str) -> None:
    print(f"repro seedprint: {message}", file=sys.stderr, flush=True)


def _fmt_p(p: float) -> str:
    return f"{p:.3g}"


def _describe_model(spec: str, model) -> dict:
    from repro.core import arch, lens

    vocab, width = arch.unembedding(model).shape
    return {
        "spec": spec,
        "class": type(model).__name__,
        "layers": len(lens.arch_map(model).blocks(model)),
        "width": int(width),
        "vocab": int(vocab),
        "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
    }


def _jsonable(obj):
    """numpy scalars/arrays → Python numbers/lists; NaN/±inf → null (strict JSON)."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _paper_lines(r, m: int, title: str = "paper variant (Algorithm 1 as written, 001 §6.1.1):") -> list[str]:
    lines = [
        title,
        f"  p (t-test)      {_fmt_p(r.p_t)}",
        f"  p (U-test)      {_fmt_p(r.p_u)}",
        f"  identity dims   {len(r.dims)} (top-{m} of the base's mean ∩ top-{m} of the suspect's)",
    ]
    if len(r.dims) < 2:
        lines.append(
            "  mean τ          "
            + (f"{float(r.taus.mean()):.4f}" if len(r.taus) else "n/a")
            + " (fewer than 2 identity dims: no test, p = 1)"
        )
    else:
        lines.append(f"  mean τ          {float(r.taus.mean()):.4f}")
    if r.same_lineage:
        why = f"both tests p < α = {r.alpha:g}"
    elif r.same_lineage_t or r.same_lineage_u:
        why = f"only the {'t' if r.same_lineage_t else 'U'}-test has p < α = {r.alpha:g}; both must reject"
    else:
        why = f"p ≥ α = {r.alpha:g}"
    lines.append(f"  verdict         {_VERDICT[r.same_lineage]} ({why})")
    return lines


def _released_lines(r) -> list[str]:
    from repro.seedprint.released import CODE_COMMIT, CODE_REPO, RULES

    op = "<" if r.same_lineage else "≥"
    rule = RULES[r.rule]
    where = "both models' bottom-k" if rule.identity_mode == "coset" else "the base's bottom-k"
    return [
        f"released variant (the authors' code, {CODE_REPO}@{CODE_COMMIT[:12]}; rule {r.rule}: {rule.where}):",
        f"  p               {_fmt_p(r.p)}",
        f"  z               {r.z:.3f}",
        f"  dims            {len(r.dims)} ({where} of the raw mean; softmax at T = 10 over them)",
        f"  k               {r.k} τ's in z" + ("" if r.k else " (none: no test, p = 1)"),
        f"  mean τ          {r.mean_tau:.4f}",
        f"  verdict         {_VERDICT[r.same_lineage]} (p {op} α = {r.alpha:g})",
    ]


def _matched_lines(r, n: int) -> list[str]:
    op = "≤" if r.same_lineage else ">"
    return [
        f"matched variant (the suspect's hidden dimensions matched to the base's on inputs 1–{n // 2}, "
        f"median matched correlation on the other {n - n // 2}; null: the same after {len(r.null)} random "
        "rotations of the suspect):",
        f"  p               {_fmt_p(r.p)} (smallest possible {1 / (1 + len(r.null)):.3g})",
        f"  statistic       {r.statistic:.4f} (null: mean {float(r.null.mean()):.4f}, max {float(r.null.max()):.4f})",
        f"  verdict         {_VERDICT[r.same_lineage]} (p {op} α = {r.alpha:g})",
    ]


def _cmd_seedprint(args: argparse.Namespace) -> int:
    import json
    import time

    from repro.core.models.pretrained import load_model_any, model_spec_problem
    from repro.ground.runtime import ReproError, resolve_device, resolve_dtype

    # validate everything before loading anything: the options, then both models' specs
    if args.align and args.feature != "hidden":
        raise ReproError(
            "--align matches hidden dimensions; it goes with --feature hidden (logits need no alignment: "
            "a token is the same dimension in both models)"
        )
    variants = _VARIANTS[args.variant] + (("aligned",) if args.align else ())
    if "matched" in variants and args.feature != "hidden":
        raise ReproError(
            f"--variant {args.variant} includes the matched test, which matches hidden dimensions: use "
            "--feature hidden, or --variant paper / released / both with --feature logits"
        )
    for role, spec in (("BASE", args.base), ("SUSPECT", args.suspect)):
        problem = model_spec_problem(spec)
        if problem:
            raise ReproError(f"{role}: {problem}")
    from repro.seedprint.algorithm import SeedPrintConfig, seedprint

    cfg = SeedPrintConfig(
        n=args.n,
        length=args.length,
        m=args.m,
        inputs=args.inputs,
        feature=args.feature,
        null_trials=args.null_trials,
        alpha=args.alpha,
        seed=args.seed,
        k=args.k,
        released_rule=args.released_rule,
        batch_size=args.batch_size,
        align=args.align,
        matched="matched" in variants,
        rotations=args.rotations,
    )
    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    models = {}
    for role, spec in (("base", args.base), ("suspect", args.suspect)):
        if role == "suspect" and spec == args.base:
            models[role] = models["base"]  # the same model twice: load it once
            continue
        start = time.perf_counter()
        _progress(f"loading {role} {spec} ...")
        models[role] = load_model_any(spec, device=device, dtype=dtype)
        _progress(f"loaded {role} in {time.perf_counter() - start:.1f} s")
    info = {
        role: _describe_model(spec, models[role]) for role, spec in (("base", args.base), ("suspect", args.suspect))
    }
    start = time.perf_counter()
    _progress(f"running {cfg.n} inputs of length {cfg.length} through both models on {device} ...")
    result = seedprint(models["base"], models["suspect"], cfg)
    _progress(f"done in {time.perf_counter() - start:.1f} s")

    verdicts = {v: getattr(result, v).same_lineage for v in variants}
    if len(set(verdicts.values())) == 1:
        verdict = _VERDICT[verdicts[variants[0]]]
        final = (
            f"verdict: {verdict} ({' and '.join(variants)} variants agree, α = {cfg.alpha:g})"
            if len(variants) > 1
            else f"verdict: {verdict} ({variants[0]} variant, α = {cfg.alpha:g})"
        )
    else:
        verdict = "variants disagree"
        final = (
            "verdict: the variants disagree: "
            + ", ".join(f"{v} says {_VERDICT[verdicts[v]]}" for v in variants)
            + f" (α = {cfg.alpha:g})"
        )

    from repro.seedprint import evaluation as seedprint_eval

    calibration = {
        v: seedprint_eval.calibration(
            seedprint_eval.cli_mode(v, cfg.feature, aligned=v == "aligned", matched=v == "matched")
        )
        for v in variants
    }
    if args.json:
        summary = result.summary()
        for v in ("paper", "released", "aligned", "matched"):
            if v not in variants:
                summary.pop(v, None)
        summary.update(models=info, device=str(device), verdict=verdict, calibration=calibration)
        print(json.dumps(_jsonable(summary), indent=2))
        return 0

    what = (
        f"{cfg.n} random token sequences of length {cfg.length}"
        if cfg.inputs == "tokens"
        else f"{cfg.n} random Gaussian embedding sequences of length {cfg.length} "
        "(scalar mean/std of the base's embeddings; for the released variant, of a fresh init's, as the "
        "authors' code draws them)"
    )
    feature = (
        "final hidden state at the last position (the LM head's input)"
        if cfg.feature == "hidden"
        else "logits at the last position"
    )
    lines = ["SeedPrint (001 §6.1): is the suspect descended from the base?"]
    for role in ("base", "suspect"):
        d = info[role]
        lines.append(
            f"  {role:<8} {d['spec']}: {d['class']}, {d['layers']} layers, width {d['width']}, "
            f"vocab {d['vocab']}, {d['dtype']}"
        )
    lines += [
        f"  inputs   {what}, seed {cfg.seed}, the same for both models",
        f"  feature  {feature}",
        f"  device   {device}",
        "",
    ]
    if "matched" in variants:
        lines += _matched_lines(result.matched, cfg.n) + [""]
    if "paper" in variants:
        lines += _paper_lines(result.paper, result.info.get("m", cfg.m)) + [""]
    if "released" in variants:
        lines += _released_lines(result.released) + [""]
    if "aligned" in variants:
        lines += _paper_lines(
            result.aligned,
            cfg.m,
            "aligned variant (Algorithm 1 after matching the suspect's hidden "
            f"dimensions to the base's on inputs 1–{cfg.n // 2}, tested on the other "
            f"{cfg.n - cfg.n // 2}):",
        ) + [""]
    for v in variants:
        lines += seedprint_eval.calibration_lines(calibration[v]) + [""]
    lines.append(final)
    print("\n".join(lines))
    return 0


# `repro seedprint --variant`: the tests each choice reports
_VARIANTS = {
    "matched": ("matched",),
    "paper": ("paper",),
    "released": ("released",),
    "both": ("paper", "released"),
    "all": ("matched", "paper", "released"),
}
DEFAULT_VARIANT = "matched"


def add_seedprint(subparsers: argparse._SubParsersAction) -> None:
    import types

    algorithm = "repro.seedprint.algorithm"
    DEVICES, DTYPES = const("repro.ground.runtime", "DEVICES"), const("repro.ground.runtime", "DTYPES")
    INPUTS, FEATURES = const(algorithm, "INPUTS"), const(algorithm, "FEATURES")
    RULES = tuple(const("repro.seedprint.released", "RULE_NAMES"))
    d = types.SimpleNamespace(
        **{
            f: const(algorithm, f"SeedPrintConfig.{f}")
            for f in (
                "n",
                "length",
                "m",
                "inputs",
                "feature",
                "rotations",
                "null_trials",
                "alpha",
                "seed",
                "batch_size",
                "released_rule",
            )
        }
    )
    p = subparsers.add_parser(
        "seedprint",
        help="SeedPrint lineage test: is SUSPECT descended from BASE? (001 §6.1)",
        description="SeedPrint (001 §6.1): feed the same random inputs to both models, compare their "
        "per-dimension responses, and test whether they share an initialisation. By default the matched test "
        "(whitened hidden states, dimensions matched across the models, a null of random rotations: it sees through "
        "a permuted or rescaled basis); on request Algorithm 1 as written in the paper and the variant of the "
        "authors' released code (Kendall's τ per dimension). "
        "The source's n=10,000, length=1024 take long on a CPU; `--n 1000 --length 32` is a quick check.",
        epilog="Models: an embedded name (smollm2-135m, gemma3-270m), a Hugging Face hub id, a "
        "save_pretrained() directory, or a checkpoint written by repro.core.train.train (its directory or "
        "its model.safetensors). Both need one width (and, for --feature logits, one vocabulary). "
        "Exit status: 0 whenever the test ran, whatever the verdict (read it from the output or "
        "--json); 2 on bad input (unknown model, different widths, corrupt checkpoint, bad option).",
    )
    p.add_argument("base", metavar="BASE", help="the reference model")
    p.add_argument("suspect", metavar="SUSPECT", help="the model suspected of descending from BASE")
    p.add_argument("--n", type=int, default=d.n, help=f"number of random inputs (default {d.n:,})")
    p.add_argument("--length", type=int, default=d.length, help=f"input length in positions (default {d.length})")
    p.add_argument(
        "--m", type=int, default=d.m, help=f"paper variant: top-m fingerprint dims per model (default {d.m})"
    )
    p.add_argument(
        "--k",
        type=int,
        default=None,
        help="released variant: bottom-k dims per model (default: the rule's — 400 of 768 dims in proportion "
        "for 'tables', 400 of 4096 for 'table6', 10%% for 'leafbench')",
    )
    p.add_argument(
        "--released-rule",
        choices=RULES,
        default=d.released_rule,
        help="released variant: which of the authors' runs (tables: run_table1-4.sh, coset; table6: "
        f"run_table5.sh, coset; leafbench: LeaFBench's test_lineage, the base's bottom-k) (default {d.released_rule})",
    )
    p.add_argument(
        "--inputs",
        choices=INPUTS,
        default=d.inputs,
        help=f"random token ids, or Gaussian input embeddings (default {d.inputs})",
    )
    p.add_argument(
        "--feature",
        choices=FEATURES,
        default=d.feature,
        help=f"response read at the last position: final hidden state or logits (default {d.feature})",
    )
    p.add_argument(
        "--variant",
        choices=tuple(_VARIANTS),
        default=DEFAULT_VARIANT,
        help="which test to report: matched (hidden dimensions matched to the base's, rotation null: sees "
        "through a permuted or rescaled residual basis), paper (Algorithm 1 as written), released (the "
        "authors' code), both (paper and released), all (the three); the README's operating table says "
        f"what each is worth (default {DEFAULT_VARIANT})",
    )
    p.add_argument(
        "--rotations",
        type=int,
        default=d.rotations,
        help=f"matched variant: random rotations in its null; p ≥ 1/(1 + rotations) (default {d.rotations})",
    )
    p.add_argument(
        "--align",
        action="store_true",
        help="also run Algorithm 1 after a cross-fitted alignment of hidden dimensions (sees through a "
        "permuted residual basis, which defeats the dimension-by-dimension test; see README's operating "
        "table)",
    )
    p.add_argument(
        "--null-trials",
        type=int,
        default=d.null_trials,
        help=f"paper variant: Gaussian null draws whose p-values are averaged (default {d.null_trials})",
    )
    p.add_argument("--alpha", type=float, default=d.alpha, help=f"significance level (default {d.alpha:g})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed of the inputs and null draws (default {d.seed})")
    p.add_argument("--batch-size", type=int, default=d.batch_size, help=f"forward batch size (default {d.batch_size})")
    p.add_argument("--device", choices=DEVICES, default="auto", help="default auto: CUDA if available")
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default="auto",
        help="compute dtype (default auto: the dtype policy — bfloat16 on a GPU or a CPU with native "
        "bf16, else float32; REPRO_DTYPE overrides auto)",
    )
    p.add_argument("--json", action="store_true", help="print the result summary as JSON")
    p.set_defaults(func=_cmd_seedprint)


def _cmd_seedprint_eval(args: argparse.Namespace) -> int:
    from repro.seedprint import evaluation as seedprint_eval

    j, md = seedprint_eval.main_table(
        args.profile,
        pretrained=args.pretrained,
        n_untrained=args.untrained,
        n_trained=args.trained,
        out=args.out,
        save=args.save,
        finetune_steps=args.finetune_steps,
        finetune_lr=args.finetune_lr,
        quick=args.quick,
    )
    print(md.read_text())
    print(f"written: {j}, {md}")
    return 0


def add_seedprint_eval(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "seedprint-eval",
        help="measure `repro seedprint`: detection and false-alarm rates per mode, with intervals",
        description="Build true descendants (init → trained → continued; pretrained → fine-tuned), the same "
        "descendants rewritten by function-preserving transforms (residual basis, MLP units, heads permuted; norm "
        "scales folded), and unrelated pairs (untrained; trained with the same and with other data orders); run every "
        "SeedPrint mode on each; write the operating table (rates with 95% Wilson intervals and pair counts).",
    )
    p.add_argument("--profile", default="ci", help="sizes of the lineage models (the seedprint row; default ci)")
    p.add_argument("--pretrained", action="store_true", help="add the embedded pretrained models and their fine-tunes")
    p.add_argument(
        "--untrained", type=int, default=12, help="untrained inits whose pairs measure the null (default 12)"
    )
    p.add_argument(
        "--trained",
        type=int,
        default=24,
        help="further trained lineage bases (same data order) for the trained unrelated pairs: with the "
        "profile's 4 seeds, 24 give 378 pairs (default 24; 0: the profile's seeds only)",
    )
    p.add_argument(
        "--finetune-steps",
        type=int,
        default=None,
        metavar="N",
        help="with --pretrained: steps of each embedded model's code fine-tune (default: the profile's, "
        "SP-5's 20); the table says how far each fine-tune moved its model",
    )
    p.add_argument(
        "--finetune-lr",
        type=float,
        default=None,
        metavar="LR",
        help="with --pretrained: the fine-tune's peak learning rate (default: the profile's, 1e-4)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="toy sizes (2-layer × 32 lineage models, 12 steps, 64 inputs of 8 tokens): every row and mode "
        "in seconds, to test the command; its rates say nothing",
    )
    p.add_argument("--out", default="artifacts", help="output directory (default artifacts)")
    p.add_argument(
        "--save",
        action="store_true",
        help="also write the table that `repro seedprint` quotes (repro/seedprint/operating_table.json; "
        "commit it with the README's table)",
    )
    p.set_defaults(func=_cmd_seedprint_eval)
