"""Every assertion in a claim test goes through `claim.check`, so the row a reader sees in the
report is the comparison that decided the test (issue: verdicts). A plain `assert` in a claim
test is a defect. Every claim file is converted; the ratchet below stays empty (a file may be
listed with its count of plain asserts only while it is being converted, and the count must
be exact, so the list stays true)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLAIMS = Path(__file__).resolve().parents[1] / "claims"

# plain `assert` statements left in claim test functions, per file: none since issue 19
NOT_YET_CONVERTED: dict[str, int] = {}


def plain_asserts(path: Path) -> list[int]:
    """Line numbers of `assert` statements inside test_* functions of a claims file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        n.lineno
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")
        for n in ast.walk(f)
        if isinstance(n, ast.Assert)
    ]


@pytest.mark.parametrize("path", sorted(CLAIMS.glob("test_*.py")), ids=lambda p: p.name)
def test_claim_tests_assert_through_claim_check(path: Path):
    lines = plain_asserts(path)
    allowed = NOT_YET_CONVERTED.get(path.name, 0)
    assert len(lines) <= allowed, (
        f"{path.name}: plain assert at lines {lines}; assert through claim.check(...) so "
        "the report shows the comparison that decided the test"
    )
    assert len(lines) == allowed, f"{path.name}: {len(lines)} plain asserts left, the list says {allowed}: update it"


def test_the_scan_finds_a_plain_assert(tmp_path: Path):
    """Negative control of the scan itself."""
    f = tmp_path / "test_x.py"
    f.write_text(
        "def helper():\n    assert True\n\ndef test_x(claim):\n    claim.check('a', 1, 0, compare='ge', why='w')\n"
        "    assert 1 > 0\n"
    )
    assert plain_asserts(f) == [6]
