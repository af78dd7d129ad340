"""The house's shape as `make lint` holds it (DESIGN.md, "The house"; issue 66): each failure mode
injected into a scratch copy of the repository, and the lint run there — a module over 600 lines,
an allowed module that grew, a stale allow-list entry, a re-export shim (scripts/house_check.py),
a package outside the import contract, a loop between siblings (lint-imports), a banned alias, a
function over the argument limit (ruff) — and the clean copy passing, so each failure is the
injection's. DESIGN.md's diagram of the floors is the import graph's (scripts/house_diagram.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO / "scripts"))
import house_check  # noqa: E402  (scripts/ is not a package)
import house_diagram  # noqa: E402

COPIED = ("repro", "claims", "tests", "benchmarks", "scripts")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """The checked folders, pyproject.toml and DESIGN.md as they are in this checkout."""
    root = tmp_path_factory.mktemp("house") / "pristine"
    for d in COPIED:
        shutil.copytree(REPO / d, root / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
    for f in ("pyproject.toml", "DESIGN.md"):
        shutil.copy2(REPO / f, root / f)
    # the copy's allow-list at the copy's own counts: what the injections below break is theirs,
    # not a module another change is growing at this moment (test_the_house_holds_here checks that)
    files = house_check.modules(root)
    sizes = {p.as_posix(): house_check.line_count(root / p) for p in files}
    shims = {p.as_posix(): len(house_check.shims((root / p).read_text(encoding="utf-8"))) for p in files}
    rows = ["[module_lines]", *(f'"{p}" = {n}' for p, n in sorted(sizes.items()) if n > house_check.MAX_LINES)]
    rows += ["", "[reexport_shims]", *(f'"{p}" = {n}' for p, n in sorted(shims.items()) if n)]
    (root / house_check.ALLOW).write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def scratch(pristine, tmp_path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(pristine, root)
    return root


def run(root: Path, *cmd: str) -> subprocess.CompletedProcess:
    """A lint command in the scratch copy, its `repro` the copy's (PYTHONPATH ahead of the install)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "scripts")])}
    return subprocess.run([*cmd], cwd=root, env=env, capture_output=True, text=True, timeout=120)


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    return run(root, str(BIN / "lint-imports"), "--no-cache")


def ruff(root: Path, *paths: str) -> subprocess.CompletedProcess:
    return run(root, str(BIN / "ruff"), "check", "--no-cache", *paths)


def test_the_house_holds_here():
    assert house_check.check(REPO) == []


def test_the_clean_copy_passes_every_check(scratch):
    assert house_check.check(scratch) == []
    done = lint_imports(scratch)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Contracts: 2 kept, 0 broken" in done.stdout


def test_a_new_module_over_600_lines_fails(scratch):
    (scratch / "repro/core/big.py").write_text('"""A module too long."""\n' + "x = 1\n" * 600)
    assert house_check.check(scratch) == [
        "repro/core/big.py: 601 lines (the limit is 600: split the module by what it holds)"
    ]
    assert house_check.main(["--root", str(scratch)]) == 1


def test_an_allowed_module_may_not_grow_and_its_entry_goes_when_it_is_cut(scratch):
    # a module over the limit with its entry, made here: the checkout's own list is empty (issue 66)
    path, n = "repro/core/big.py", 610
    module = scratch / path
    module.write_text('"""A module over the limit, allowed."""\n' + "x = 1\n" * (n - 1))
    allow = scratch / house_check.ALLOW
    allow.write_text(allow.read_text().replace("[module_lines]\n", f'[module_lines]\n"{path}" = {n}\n', 1))
    assert house_check.check(scratch) == []
    module.write_text(module.read_text() + "\n")
    assert house_check.check(scratch) == [
        f"{path}: {n + 1} lines, more than its allowed {n} (tests/house_allow.toml: it may only shrink)"
    ]
    module.write_text('"""The module cut to the limit."""\n' + "x = 1\n" * 599)  # valid Python, 600 lines
    (problem,) = house_check.check(scratch)
    assert problem.startswith(f"tests/house_allow.toml: the entry {path} = {n} is stale") and "600 lines" in problem


def test_a_reexport_shim_fails(scratch):
    module = scratch / "repro/core/stats.py"
    module.write_text(module.read_text() + "\nfrom repro.ground.errors import ReproError as ReproError\n")
    (problem,) = house_check.check(scratch)
    assert problem.startswith("repro/core/stats.py: 1 re-export shims") and "(ReproError)" in problem
    assert house_check.shims("import os as os\nfrom a import b as c\nfrom a import d\n") == [(1, "os")]


def test_a_new_package_outside_the_contract_fails(scratch):
    (scratch / "repro/newtopic").mkdir()
    (scratch / "repro/newtopic/__init__.py").write_text('"""A topic not declared in the contract."""\n')
    (scratch / "repro/newtopic/study.py").write_text("from repro.harness import catalogue  # noqa: F401\n")
    done = lint_imports(scratch)
    assert done.returncode == 1 and "repro.newtopic" in done.stdout and "not listed as layers" in done.stdout


def test_a_loop_between_siblings_fails(scratch):
    module = scratch / "repro/core/mix.py"  # repro.core.data imports mix at its top
    module.write_text(module.read_text() + "\n\ndef _brown():\n    from repro.core import data\n\n    return data\n")
    done = lint_imports(scratch)
    assert done.returncode == 1, done.stdout[-2000:]
    assert "no loops between siblings BROKEN" in done.stdout and "No cycles are allowed in repro.core" in done.stdout


def test_a_banned_alias_fails(scratch):
    (scratch / "repro/core/aliased.py").write_text(
        '"""T is a length."""\n\nfrom repro.core import train as T\n\nprint(T)\n'
    )
    done = ruff(scratch, "repro/core/aliased.py")
    assert (
        done.returncode == 1
        and "ICN002" in done.stdout
        and "`repro.core.train` should not be imported as `T`" in done.stdout
    )


def test_a_function_over_the_argument_limit_fails(scratch):
    params = ", ".join(f"a{i}" for i in range(17))
    (scratch / "repro/core/wide.py").write_text(f'"""Too many."""\n\n\ndef f({params}):\n    return a0\n')
    done = ruff(scratch, "repro/core/wide.py")
    assert done.returncode == 1 and "PLR0913" in done.stdout and "(17 > 16)" in done.stdout


def test_the_design_diagram_is_the_import_graph():
    """DESIGN.md's block is what scripts/house_diagram.py draws from today's graph (rerun the
    script after a change of arrows)."""
    committed = house_diagram.current((REPO / "DESIGN.md").read_text(encoding="utf-8"))
    assert committed == house_diagram.block(grimp.build_graph("repro", cache_dir=None))


def test_the_diagram_shows_an_upward_arrow(scratch):
    module = scratch / "repro/core/stats.py"
    module.write_text(
        module.read_text() + "\n\ndef _up():\n    from repro.harness import catalogue\n\n    return catalogue\n"
    )
    done = run(
        scratch,
        sys.executable,
        "-c",
        "import grimp, house_diagram; print(house_diagram.mermaid(grimp.build_graph('repro', cache_dir=None)))",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "    core --> roof" in done.stdout and "Upward arrows: core → roof." in done.stdout
    check = run(scratch, sys.executable, "scripts/house_diagram.py", "--check", "--design", str(scratch / "DESIGN.md"))
    assert check.returncode == 1 and "differs from the import graph" in check.stdout
