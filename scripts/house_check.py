"""The house's shape, checked by `make lint` (issue 66): module sizes and re-export shims.

- Size: no module of repro/, claims/, tests/, benchmarks/ or scripts/ over `MAX_LINES` lines,
  except those in tests/house_allow.toml's `[module_lines]` at their line count when the check
  came in; an allowed module may shrink, never grow, and its entry goes once it is within the
  limit (a stale entry fails, so the list only shrinks).
- Re-export shims: no `from x import name as name` (nor `import x as x`): a name is imported from
  the module that defines it. The modules that still hold shims are in `[reexport_shims]` with
  their count, on the same terms.

Usage: `python scripts/house_check.py [--root DIR]` (DIR: a checkout, default this one); prints one
line per problem and exits 1 if there is any. Import-free (stdlib only): it runs before the fetch.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from pathlib import Path

MAX_LINES = 600
DIRS = ("repro", "claims", "tests", "benchmarks", "scripts")
ALLOW = "tests/house_allow.toml"


def modules(root: Path) -> list[Path]:
    """Every Python module under the checked folders, as paths relative to `root`."""
    found = (p for d in DIRS if (root / d).is_dir() for p in (root / d).rglob("*.py"))
    return sorted(p.relative_to(root) for p in found if "__pycache__" not in p.parts)


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def shims(source: str) -> list[tuple[int, str]]:
    """(line, name) of every import that binds a name to itself: `from x import name as name`,
    `import x as x` — a re-export kept for importers that should import from the defining module."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            out += [(node.lineno, a.name) for a in node.names if a.asname is not None and a.asname == a.name]
    return out


def _ratchet(kind: str, counts: dict[str, int], allowed: dict[str, int], limit: int, fix: str) -> list[str]:
    """Problems of one allow-listed measure: `counts` what each module has now (over `limit` or not),
    `allowed` the allow-list's entries, `fix` what to do about a new one."""
    problems = []
    for path, n in sorted(counts.items()):
        if n <= limit:
            continue
        if path not in allowed:
            problems.append(f"{path}: {n} {kind} (the limit is {limit}: {fix})")
        elif n > allowed[path]:
            problems.append(f"{path}: {n} {kind}, more than its allowed {allowed[path]} ({ALLOW}: it may only shrink)")
    for path, n in sorted(allowed.items()):
        now = counts.get(path)
        if now is None or now <= limit:
            state = "is gone" if now is None else f"has {now} {kind}, within the limit of {limit}"
            problems.append(f"{ALLOW}: the entry {path} = {n} is stale: the module {state}; remove the entry")
    return problems


def check(root: Path) -> list[str]:
    """Every problem of the tree at `root`, one line each (empty: the shape holds)."""
    allow_file = root / ALLOW
    allow = tomllib.loads(allow_file.read_text(encoding="utf-8")) if allow_file.exists() else {}
    files = modules(root)
    sizes = {p.as_posix(): line_count(root / p) for p in files}
    found, problems = {}, []
    for p in files:
        try:
            found[p.as_posix()] = shims((root / p).read_text(encoding="utf-8"))
        except SyntaxError as err:
            problems.append(f"{p.as_posix()}: not Python, line {err.lineno}: {err.msg}")
    problems += _ratchet("lines", sizes, allow.get("module_lines", {}), MAX_LINES, "split the module by what it holds")
    shim_problems = _ratchet(
        "re-export shims",
        {p: len(s) for p, s in found.items()},
        allow.get("reexport_shims", {}),
        0,
        "import the name from the module that defines it",
    )
    for line in shim_problems:
        path = line.split(":", 1)[0]
        where = ", ".join(f"line {n} ({name})" for n, name in found.get(path, []))
        problems.append(f"{line}{': ' + where if where and not line.startswith(ALLOW) else ''}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    problems = check(args.root)
    for p in problems:
        print(p)
    if not problems:
        print(f"house: every module within {MAX_LINES} lines or allowed, no new re-export shim")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
