"""The dtype decision: "auto" on a CPU is decided once per machine from a
measured bf16/float32 matmul speed ratio, recorded under the cache directory and reused by every
later process, so a loaded machine near the bar cannot flip dtypes between runs.

The tests pretend the CPU multiplies bf16 natively (`native_bf16`: what makes the decision a
measurement at all) and stand in for the one-second timing with fixed seconds, counting calls or
failing if called; the record, its cache file, the lock and the policy are the real ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from repro.ground import runtime

KEYS = {
    "cpu",
    "machine",
    "torch",
    "flags",
    "native_bf16",
    "bf16_speedup",
    "float32_s",
    "bfloat16_s",
    "bf16_min_speedup",
    "decision",
    "measured_at",
    "source",
    "cache_file",
    "note",
}


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A native-bf16 CPU, a private cache, no override; the process's decision forgotten around the test."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(cache))
    monkeypatch.delenv(runtime.DTYPE_ENV, raising=False)
    monkeypatch.setattr(runtime, "native_bf16", lambda: True)
    runtime.forget_dtype_decision()
    yield cache
    runtime.forget_dtype_decision()


def _timed(monkeypatch: pytest.MonkeyPatch, f32_s: float, bf16_s: float) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(runtime, "_time_matmuls", lambda rounds=5: calls.append(1) or (f32_s, bf16_s))
    return calls


def _untimed(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(rounds: int = 5):
        raise AssertionError("re-measured although the machine's decision was recorded")

    monkeypatch.setattr(runtime, "_time_matmuls", fail)


def _record(cache: Path) -> Path:
    (path,) = (cache / "runtime").glob("bf16-speed-*.json")
    return path


def test_decision_is_recorded_and_reused_by_a_later_process(monkeypatch, machine):
    """Near the bar (1.33×): recorded as bfloat16; a later process whose timing would say 1.25×
    reads the record instead — the same decision, not a flip."""
    calls = _timed(monkeypatch, 0.010, 0.0075)
    first = runtime.dtype_decision()
    assert set(first) == KEYS and calls == [1]
    assert first["decision"] == "bfloat16" and first["bf16_speedup"] == pytest.approx(1.333)
    assert first["source"] == "measured" and first["cache_file"] == str(_record(machine))
    stored = json.loads(_record(machine).read_text())
    assert stored["decision"] == "bfloat16" and stored["measured_at"] == first["measured_at"]
    assert runtime.dtype_decision() == first and calls == [1]  # the same process: its memo
    runtime.forget_dtype_decision()  # a new process
    _untimed(monkeypatch)
    again = runtime.dtype_decision()
    assert again["source"] == "cache" and again["decision"] == "bfloat16"
    assert {k: again[k] for k in ("bf16_speedup", "measured_at", "cache_file")} == {
        k: first[k] for k in ("bf16_speedup", "measured_at", "cache_file")
    }
    assert runtime.resolve_dtype("auto", "cpu") is torch.bfloat16 and runtime.bf16_fast()


SCRIPT = """
import json, sys
from repro.ground import runtime
runtime.native_bf16 = lambda: True
if sys.argv[1] == "measure":
    runtime._time_matmuls = lambda rounds=5: (0.010, 0.0080)
else:
    def fail(rounds=5):
        raise SystemExit("re-measured")
    runtime._time_matmuls = fail
print(json.dumps({**runtime.dtype_decision(), "auto": str(runtime.resolve_dtype("auto", "cpu"))}))
"""


def test_separate_processes_share_one_measurement(tmp_path):
    env = {**os.environ, "REPRO_CACHE": str(tmp_path / "cache")}
    env.pop(runtime.DTYPE_ENV, None)
    out = []
    for step in ("measure", "read"):
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT, step], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = out
    assert (first["source"], second["source"]) == ("measured", "cache")
    assert first["decision"] == second["decision"] == "float32" and first["auto"] == second["auto"] == "torch.float32"
    assert first["measured_at"] == second["measured_at"] and first["cache_file"] == second["cache_file"]


def test_refresh_measures_again_and_replaces_the_record(monkeypatch, machine):
    calls = _timed(monkeypatch, 0.010, 0.0080)  # 1.25×: float32
    assert runtime.dtype_decision()["decision"] == "float32"
    assert runtime.resolve_dtype("auto", "cpu") is torch.float32
    calls = _timed(monkeypatch, 0.010, 0.0050)  # the machine measured again: 2×
    fresh = runtime.dtype_decision(refresh=True)
    assert calls == [1] and fresh["source"] == "measured" and fresh["decision"] == "bfloat16"
    assert runtime.resolve_dtype("auto", "cpu") is torch.bfloat16  # this process follows the refresh
    assert json.loads(_record(machine).read_text())["speedup"] == pytest.approx(2.0)
    runtime.forget_dtype_decision()
    _untimed(monkeypatch)
    assert runtime.dtype_decision()["decision"] == "bfloat16"  # later processes read the new record


@pytest.mark.parametrize("content", ['{"speedup": 2.0', '{"speedup": "fast"}', "[]", '{"speedup": -1}', ""])
def test_corrupt_record_is_measured_again(monkeypatch, machine, content):
    _timed(monkeypatch, 0.010, 0.0050)
    runtime.dtype_decision()
    _record(machine).write_text(content)
    runtime.forget_dtype_decision()
    calls = _timed(monkeypatch, 0.010, 0.0080)
    d = runtime.dtype_decision()
    assert calls == [1] and d["source"] == "measured" and d["decision"] == "float32"
    assert json.loads(_record(machine).read_text())["speedup"] == pytest.approx(1.25)


def test_unusable_cache_measures_in_process_and_says_so(monkeypatch, machine, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("REPRO_CACHE", str(blocker / "cache"))
    calls = _timed(monkeypatch, 0.010, 0.0050)
    d = runtime.dtype_decision()
    assert d["decision"] == "bfloat16" and d["source"] == "measured" and d["cache_file"] is None
    assert d["note"].startswith("not cached (") and "measured in this process only" in d["note"]
    assert runtime.resolve_dtype("auto", "cpu") is torch.bfloat16 and calls == [1]  # once per process
    assert blocker.read_text() == "x"


def test_override_still_wins_over_the_recorded_decision(monkeypatch, machine):
    _timed(monkeypatch, 0.010, 0.0050)
    assert runtime.dtype_decision()["decision"] == "bfloat16"
    monkeypatch.setenv(runtime.DTYPE_ENV, "float32")
    assert runtime.resolve_dtype("auto", "cpu") is torch.float32
    assert runtime.dtype_decision()["decision"] == "bfloat16"  # the machine's decision, shown as measured


def test_emulated_bf16_is_decided_without_timing_or_record(monkeypatch, machine):
    monkeypatch.setattr(runtime, "native_bf16", lambda: False)
    _untimed(monkeypatch)
    d = runtime.dtype_decision(refresh=True)
    assert d["decision"] == "float32" and d["bf16_speedup"] is None and d["source"] == "not measured"
    assert d["cache_file"] is None and not (machine / "runtime").exists()


def test_cpu_capability_reports_the_recorded_decision(monkeypatch, machine):
    _timed(monkeypatch, 0.010, 0.0050)
    d = runtime.dtype_decision()
    cap = runtime.cpu_capability()
    assert cap["bf16_speedup"] == d["bf16_speedup"] and cap["bf16_fast"] is True
    assert cap["flags"] == d["flags"] and cap["native_bf16"] is True
