"""`repro sk2-seed`: one of SK-2's further seeds trained and read ahead of the claim run (001 §6.2.1,
Fig 12; issue 64), so decide-sinks' three trios (≈ 17 min on an H100) split over GPU calls of
≤ 10 minutes: a call per further seed stores its `over_seeds.SeedTrio` (the trio's sink curves,
≈ 0.3 MB, not its 120 MB of checkpoints) in the measurement cache and `--export`s it; the claim run
(`pytest claims/test_sinks.py --profile decide-sinks --claim SK-2`) then trains only the profile's own
trio and reads the stored seeds (scripts/gpu/README.md). Its parser imports no torch; named in the
topic's manifest (`TOPIC.commands`).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path


def _cmd_sk2_seed(args: argparse.Namespace) -> int:
    from repro.ground.cache import cache_dir
    from repro.ground.errors import ReproError
    from repro.ground.runtime import resolve_device
    from repro.ground.sizes import profile as sizes_profile
    from repro.sinks import over_seeds
    from repro.sinks.sizes import OVERRIDES, SIZES

    sizes = sizes_profile(args.profile, SIZES, OVERRIDES).sizes("sinks")
    further = over_seeds.further_seeds(sizes)
    if args.seed not in further:
        own = f"seed {sizes['seed']} is its own trio, trained by the claim run" if args.seed == sizes["seed"] else ""
        raise ReproError(
            f"--seed {args.seed}: profile {args.profile!r} reads SK-2 at further seeds {list(further) or 'none'}"
            + (f" ({own})" if own else "")
        )
    from repro.core.data import corpus_problem

    problem = corpus_problem(args.corpus)
    if problem:
        raise ReproError(problem)
    if args.train_procs < 1:
        raise ReproError(f"--train-procs must be >= 1, got {args.train_procs}")
    device = resolve_device(args.device)
    key = (sizes, args.profile, args.corpus, args.seed, device)
    was = over_seeds.seed_trio.stored(*key)
    if args.check:
        if not was:
            raise ReproError(
                f"SK-2 seed {args.seed} at {args.profile} on {args.corpus} ({device}) is not stored here "
                f"({over_seeds.seed_trio.path(*key).parent}): a run would train it (an entry measured by "
                "other code, another dtype policy or torch is another key)"
            )
        print(f"SK-2 seed {args.seed} at {args.profile} on {args.corpus} ({device}): stored")
        return 0
    t = over_seeds.seed_trio(*key, procs=args.train_procs)
    entry = over_seeds.seed_trio.path(*key)
    form = "source"
    rows = {k: [round(x, 4) for x in c.row(form)] for k, c in t.curves.items()}
    print(f"SK-2 seed {args.seed} at {args.profile} on {args.corpus} ({device}): {'loaded' if was else 'trained'}")
    for k, r in rows.items():
        print(f"  {k:<13} sink rate (ε = 0.25) at T = {list(t.curves[k].lengths)}: {r}")
    print(f"  stored: {entry}")
    if args.export:
        out = Path(args.export)
        out.mkdir(parents=True, exist_ok=True)
        if not entry.is_file():
            raise ReproError(
                f"the measurement cache did not store seed {args.seed} (REPRO_MEMO=0, or a read-only cache): "
                "nothing to export"
            )
        for f in (entry, entry.with_suffix(".json")):
            shutil.copy2(f, out / f.name)
        print(f"  exported to {out}/ (place it in {cache_dir('measurements', 'sk2-seed-trio', create=False)}/)")
    return 0


def add_sk2_seed(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sk2-seed",
        help="train and store one of SK-2's further seeds ahead of the claim run (a decide-sinks split)",
        description="Train the trio (baseline, amplification, attenuation) at one of the profile's sk2_seeds "
        "exactly as `pytest claims/test_sinks.py` would, read its sink curves and store them in the "
        "measurement cache, where the claim run finds them (and trains only its own seed's trio). "
        "--export copies the stored entry to a directory, to carry it to another machine.",
    )
    p.add_argument(
        "--profile", default="decide-sinks", help="the profile whose sinks row it reads (default decide-sinks)"
    )
    p.add_argument("--seed", type=int, required=True, help="one of the profile's sk2_seeds (decide-sinks: 1 or 2)")
    p.add_argument("--corpus", default="mix", help="training corpus, as the claim run's --corpus (default mix)")
    p.add_argument(
        "--device", default="auto", choices=("auto", "cpu", "cuda"), help="auto (cuda if available), cpu, cuda"
    )
    p.add_argument("--train-procs", type=int, default=1, metavar="N", help="as the claim run's --train-procs")
    p.add_argument(
        "--check", action="store_true", help="train nothing: say whether the seed is stored (exit 2 if it is not)"
    )
    p.add_argument("--export", default=None, metavar="DIR", help="also copy the stored entry (.pkl, .json) to DIR")
    p.set_defaults(func=_cmd_sk2_seed)
