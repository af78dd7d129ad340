"""Constants of a module read from its source, without importing it.

`repro --help` and `repro COMMAND --help` must not wait for torch (whose import alone takes
seconds), yet some parsers' choices and defaults live in modules that import it: the parsers read
those from the modules' source (`const`). tests/test_cli_startup.py compares every constant read
with the imported module's value.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

# (module, name) of every constant `const` has read, for the test that compares each with the
# imported module's value
CONSTS_READ: set[tuple[str, str]] = set()


def module_constants(module: str) -> dict[str, Any]:
    """The literal module-level constants of `module` (``NAME = literal``, a literal naming an
    earlier one included) and its classes' literal field defaults (as "Class.field"), read from its
    source without importing it: the parsers' choices and defaults live in modules that import
    torch, which `repro --help` must not wait for."""
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
                except (ValueError, TypeError, SyntaxError):  # not a literal: not a constant `const` reads
                    pass

    collect(tree.body, "")
    return found


_CONSTANTS: dict[str, dict[str, Any]] = {}


def const(module: str, name: str) -> Any:
    """Constant `name` ("NAME" or "Class.field") of `module`, read from its source (`module_constants`)."""
    if module not in _CONSTANTS:
        _CONSTANTS[module] = module_constants(module)
    CONSTS_READ.add((module, name))
    return _CONSTANTS[module][name]
