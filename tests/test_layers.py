"""The house's layer rule (DESIGN.md, "The house"): the roof (repro.harness) imports the topics,
each topic imports core and the ground, core imports the ground, and nothing imports upwards;
the seven topics are independent (one listed exception). The rule is the import-linter contracts
in pyproject.toml (the layers, exhaustive over repro's packages, and no loops between siblings);
this test runs them, holds the contract's topics equal to the catalogue's, and checks the
package graph for loops, so that `pytest tests/` fails on a new upward import, as `make lint`'s
`lint-imports` does (tests/test_house.py injects each failure into a scratch copy)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

from repro.harness import topics

REPO = Path(__file__).resolve().parents[1]
FLOORS = ("ground", "core", *topics.PACKAGES, "harness")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("repro")


def package_edges(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    """(a, b) for every pair of the suite's packages where a module of a imports one of b."""
    return {
        (a, b)
        for a in FLOORS
        for b in FLOORS
        if a != b and graph.direct_import_exists(importer=f"repro.{a}", imported=f"repro.{b}", as_packages=True)
    }


def cycles(edges: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs of packages that import each other, directly or through others."""
    reach = {a: {b for x, b in edges if x == a} for a in FLOORS}
    changed = True
    while changed:
        changed = False
        for a in FLOORS:
            more = set().union(*(reach[b] for b in reach[a])) - reach[a]
            if more:
                reach[a] |= more
                changed = True
    return sorted((a, b) for a in FLOORS for b in reach[a] if a < b and a in reach[b])


def test_the_package_graph_has_no_loops(graph):
    edges = package_edges(graph)
    assert ("harness", "core") in edges and ("core", "ground") in edges  # the graph is real
    assert not cycles(edges), f"packages that import each other: {cycles(edges)}"


def test_the_loop_finder_finds_a_loop():
    assert cycles({("core", "ground"), ("ground", "harness"), ("harness", "core")}) == [
        ("core", "ground"),
        ("core", "harness"),
        ("ground", "harness"),
    ]
    assert cycles({("harness", "core"), ("core", "ground")}) == []


def test_the_contract_declares_every_topic_and_is_exhaustive(graph):
    """The contract's floors are repro's packages, its topics the registry's (`repro.harness.topics.PACKAGES`)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")
    assert layers["containers"] == ["repro"] and layers["exhaustive"] is True
    floors = [[p.strip() for p in layer.split("|")] for layer in layers["layers"]]
    assert floors[0] == ["harness"] and floors[2:] == [["core"], ["ground"]]
    assert sorted(floors[1]) == sorted(topics.PACKAGES)
    packages = {m.removeprefix("repro.") for m in graph.find_children("repro")}
    assert packages == {p for floor in floors for p in floor}
    assert any(c["type"] == "acyclic_siblings" and c["ancestors"] == ["repro"] for c in config["contracts"])


def test_the_import_contract_holds():
    """import-linter's contracts (pyproject.toml, [tool.importlinter]), run as `make lint` runs them."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
