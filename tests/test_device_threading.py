"""`--device` reaches every topic (issue 20 item 5).

Every claim fixture that runs an experiment (reads the profile's sizes) must resolve its device
through the one helper, the session fixture `device` (`runtime.resolve_device(--device)`):
directly, through `pretrained` (which loads on it), or through another fixture that does. A
fixture that builds no model and holds no tensor an experiment computes on is listed below with
the reason. What the packages do with the device is tested in their own unit tests; this scan
catches a new fixture that forgets it (as the SK trio and the RS models did before).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVICE_SOURCES = {"device", "pretrained"}
NO_MODEL = {
    ("test_born_biased.py", "uniform_baseline"): "rank counts of uniform random draws (Fig 1a's red line): no model",
    ("test_context_axis.py", "cost"): "FLOPs counted by torch's FlopCounterMode: the same on every device",
    ("test_seedprint.py", "spcfg"): "a SeedPrintConfig built from the sizes: no tensors",
}


def _fixtures(path: Path) -> dict[str, list[str]]:
    tree = ast.parse(path.read_text("utf-8"))
    return {
        node.name: [a.arg for a in node.args.args]
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list)
    }


def _on_device(fixtures: dict[str, list[str]]) -> set[str]:
    on = set()
    while True:
        more = {n for n, args in fixtures.items() if n not in on and (DEVICE_SOURCES | on) & set(args)}
        if not more:
            return on
        on |= more


def test_every_experiment_fixture_resolves_its_device():
    missing, seen = [], 0
    for path in sorted(ROOT.joinpath("claims").glob("test_*.py")):
        fixtures = _fixtures(path)
        on = _on_device(fixtures)
        for name, args in fixtures.items():
            runs_experiment = name != "sizes" and bool({"profile", "sizes"} & set(args) | (set(args) & set(fixtures)))
            if not runs_experiment:
                continue
            seen += 1
            if name not in on and (path.name, name) not in NO_MODEL:
                missing.append(f"{path.name}::{name}({', '.join(args)})")
    assert seen >= 15  # the scan reads the fixtures it means to
    assert not missing, "fixtures that run an experiment without the device fixture: " + "; ".join(missing)


def test_the_allowlist_names_fixtures_that_exist():
    for file, name in NO_MODEL:
        assert name in _fixtures(ROOT / "claims" / file), f"{file}::{name} is gone: drop it from NO_MODEL"


def test_the_scan_catches_a_fixture_without_the_device(tmp_path):
    f = tmp_path / "test_x.py"
    f.write_text(
        "import pytest\n@pytest.fixture\ndef sizes(profile):\n    return 1\n"
        "@pytest.fixture\ndef trio(sizes):\n    return 2\n@pytest.fixture\ndef runs(sizes, device):\n    return 3\n"
    )
    fx = _fixtures(f)
    assert _on_device(fx) == {"runs"}
