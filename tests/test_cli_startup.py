"""`repro`'s start-up (repro/harness/cli.py): `repro --help` and `repro COMMAND --help` build every
parser without importing torch (seconds on the reference CPU) — checked deterministically, by the
modules a fresh process holds after building them, not by a timed assertion; the wall times are
printed (`pytest -rP` shows them). The parsers' choices and defaults that live in torch-importing
modules are read from those modules' source (`source_constants.const`): each one read equals the
imported value.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro.ground import source_constants
from repro.harness import cli

HEAVY = ("torch", "numpy", "scipy", "transformers")

# builds every parser and asks each command for its help, then reports what got imported
_PROBE = """
import contextlib, io, json, sys, time
start = time.perf_counter()
from repro.harness import cli
codes = {}
with contextlib.redirect_stdout(io.StringIO()):
    codes[""] = cli.main(["--help"])
    for name in cli.build_parser()._subparsers._group_actions[0].choices:  # every subcommand
        codes[name] = cli.main([name, "--help"])
print(json.dumps({"codes": codes, "seconds": time.perf_counter() - start,
                  "heavy": sorted(m for m in sys.modules if m.split(".")[0] in %r)}))
""" % (HEAVY,)


def _repro() -> list[str]:
    """The `repro` console script of this interpreter's environment (else `python -m`)."""
    script = Path(sys.executable).with_name("repro")
    return [str(script)] if script.exists() else [sys.executable, "-m", "repro.harness.cli"]


def test_every_help_is_built_without_torch() -> None:
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=True)
    probe = json.loads(r.stdout)
    assert set(probe["codes"]) >= {
        "",
        "fetch",
        "seedprint",
        "env",
        "compare",
        "baseline",
        "history",
        "plan",
        "seedprint-eval",
    }
    assert set(probe["codes"].values()) == {0}
    assert probe["heavy"] == [], f"building the parsers imported {probe['heavy']}"
    start = time.perf_counter()
    subprocess.run([*_repro(), "--help"], capture_output=True, timeout=120, check=True)
    print(
        f"every parser and help in one process: {probe['seconds']:.3f} s; "
        f"`repro --help` as a command: {time.perf_counter() - start:.3f} s"
    )


def _imported(module: str, name: str):
    """The value `const` stands in for, from the imported module ("Class.field": the field's default)."""
    mod = importlib.import_module(module)
    if "." not in name:
        return getattr(mod, name)
    cls, field = name.split(".")
    return next(f.default for f in dataclasses.fields(getattr(mod, cls)) if f.name == field)


def test_constants_read_from_source_equal_the_imported_ones() -> None:
    from repro.harness import plan

    parser = cli.build_parser()
    assert source_constants.CONSTS_READ, "no constant read: the check below checks nothing"
    for module, name in sorted(source_constants.CONSTS_READ):
        assert source_constants.const(module, name) == _imported(module, name), (module, name)
    plan_parser = parser._subparsers._group_actions[0].choices["plan"]
    device = next(a for a in plan_parser._actions if a.dest == "device")
    assert tuple(device.choices) == plan.device_names()


def test_module_constants_reads_literals_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "consts_probe.py").write_text(
        "import os\nA = 3\nB: tuple = ('x', 'y')\nC = A\nD = os.sep\nE = {'k': {'v': 1.5}}\n"
        "class K:\n    n: int = 10_000\n    a: float = A\n    f: list = field(default_factory=list)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = source_constants.module_constants("consts_probe")
    assert found == {"A": 3, "B": ("x", "y"), "C": 3, "E": {"k": {"v": 1.5}}, "K.n": 10_000, "K.a": 3}
    assert "consts_probe" not in sys.modules  # read, never imported


def test_a_repro_error_is_one_line_and_anything_else_a_traceback(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """main() tells a ReproError apart without importing it at start-up (`cli._repro_error`)."""
    from repro.ground.runtime import ReproError

    def handler(exc: Exception):
        def raise_it(args) -> int:
            raise exc

        return raise_it

    monkeypatch.setattr(cli, "_cmd_history", handler(ReproError("no such claim")))
    assert cli.main(["history", "BB-1"]) == 2
    assert capsys.readouterr().err == "repro: error: no such claim\n"
    monkeypatch.setattr(cli, "_cmd_history", handler(ZeroDivisionError("a bug")))
    with pytest.raises(ZeroDivisionError):  # a bug keeps its traceback
        cli.main(["history", "BB-1"])
