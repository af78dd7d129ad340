"""`repro env` and `repro env --refresh` (repro/harness/cli.py): the cached per-machine dtype
decision (`repro.ground.runtime.dtype_decision`) — what, whence, when measured, where cached —
and --refresh measuring it again. The decision is stubbed: no matmul is timed, no cache written."""

from __future__ import annotations

import json

import pytest

from repro.ground import runtime
from repro.harness.cli import main

MEASURED = {
    "cpu": "Test CPU",
    "machine": "x86_64",
    "torch": "2.x",
    "flags": ["avx512_bf16"],
    "native_bf16": True,
    "bf16_speedup": 2.2,
    "float32_s": 0.011,
    "bfloat16_s": 0.005,
    "bf16_min_speedup": 1.3,
    "decision": "bfloat16",
    "measured_at": "2026-11-27T18:00:00+00:00",
    "source": "cache",
    "cache_file": "/cache/runtime/bf16-speed-abc.json",
    "note": "read from the cache: measured once on this machine",
}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every `dtype_decision` call's `refresh`, the stub answering MEASURED (source "measured" when refreshed)."""
    seen: list[bool] = []

    def stub(refresh: bool = False) -> dict:
        seen.append(refresh)
        return (
            {**MEASURED, "source": "measured", "note": "measured now and cached for later processes"}
            if refresh
            else dict(MEASURED)
        )

    monkeypatch.setattr(runtime, "dtype_decision", stub)
    monkeypatch.delenv(runtime.DTYPE_ENV, raising=False)
    return seen


def test_env_shows_the_cached_decision(calls: list[bool], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert calls and not any(calls)  # read, never re-measured
    assert "decision bfloat16 (cache: read from the cache: measured once on this machine)" in out
    assert (
        "measured 2026-11-27T18:00:00+00:00: one probe matmul on one thread, float32 11.00 ms, bfloat16 5.00 ms" in out
    )
    assert "cached   /cache/runtime/bf16-speed-abc.json (`repro env --refresh` measures again)" in out


def test_env_refresh_measures_again(calls: list[bool], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "--device", "cpu", "--refresh", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert calls[0] is True and info["decision"]["source"] == "measured"
    assert info["decision"]["cache_file"] == MEASURED["cache_file"] and info["dtype"] == "bfloat16"


def test_env_without_a_measurement_says_so(
    calls: list[bool], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulated = {
        **MEASURED,
        "native_bf16": False,
        "bf16_speedup": None,
        "float32_s": None,
        "bfloat16_s": None,
        "decision": "float32",
        "measured_at": None,
        "source": "not measured",
        "cache_file": None,
        "note": "bf16 is emulated on this CPU (several times slower than float32): float32, not timed",
    }
    monkeypatch.setattr(runtime, "dtype_decision", lambda refresh=False: dict(emulated))
    assert main(["env", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "decision float32 (not measured: bf16 is emulated" in out
    assert not any(line.startswith(("measured ", "cached ")) for line in out.splitlines())
