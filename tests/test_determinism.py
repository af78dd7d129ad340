"""Determinism as a test (issue 21): a cheap real claim run twice, and once on two xdist
workers, gives byte-identical claims.json outside "run" (what a baseline compares)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# CA-1 (Algorithm 1's mask, exact integer checks) and CA-2 (the figure-1 slices): cheap, and
# they write records, a figure and a table
SELECT = ["claims/test_context_axis.py", "-k", "algorithm1 or figure1"]


def _run(tmp: Path, *extra: str) -> dict:
    out = tmp / "art"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *SELECT,
            "-q",
            "-p",
            "no:cacheprovider",
            "--baseline",
            "off",
            "--artifacts",
            str(out),
            *extra,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=600,
    )
    data = json.loads((out / "claims.json").read_text())
    data.pop("run")
    return data


def test_same_command_twice_and_under_xdist_gives_the_same_claims(tmp_path: Path):
    a = _run(tmp_path / "a")
    b = _run(tmp_path / "b")
    c = _run(tmp_path / "c", "-n", "2", "--dist", "loadgroup")
    decided = [x for x in a["claims"] if x["verdict"] not in ("not run", "not yet encoded")]
    assert decided and all(x["records"] for x in decided), "the selection must decide claims with records"
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert json.dumps(a, sort_keys=True) == json.dumps(c, sort_keys=True)
