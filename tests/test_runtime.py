"""runtime: device choice, seeded generators, cache dir, atomic writes."""

from __future__ import annotations

import json

import pytest
import torch

from repro.ground import cache, runtime
from repro.ground.runtime import ReproError


def test_unknown_device_and_missing_cuda():
    with pytest.raises(ReproError, match="unknown device 'tpu'"):
        runtime.resolve_device("tpu")
    assert runtime.resolve_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ReproError, match="no CUDA GPU"):
            runtime.resolve_device("cuda")
        assert runtime.resolve_device("auto") == torch.device("cpu")


def test_generators_are_explicit_and_repeatable():
    state = torch.random.get_rng_state()
    a = torch.randn(5, generator=runtime.generator(7))
    b = torch.randn(5, generator=runtime.generator(7))
    assert torch.equal(a, b)
    assert torch.equal(state, torch.random.get_rng_state()), "the global RNG is never touched"
    assert runtime.derive_seed("x", 1) == runtime.derive_seed("x", 1) != runtime.derive_seed("x", 2)


def test_cache_dir_honours_env(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "c"))
    assert runtime.cache_dir("a", "b") == tmp_path / "c" / "a" / "b"
    assert (tmp_path / "c" / "a" / "b").is_dir()


def test_config_key_changes_with_config():
    assert runtime.config_key({"a": 1, "b": 2}) == runtime.config_key({"b": 2, "a": 1})
    assert runtime.config_key({"a": 1}) != runtime.config_key({"a": 2})


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "x.json"
    runtime.atomic_write_json(target, {"v": 1})
    with pytest.raises(RuntimeError):
        with cache.atomic_path(target) as tmp:
            tmp.write_text('{"v": 2')  # half-written, then the writer dies
            raise RuntimeError("killed mid-write")
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"], "no temporaries left behind"


def test_atomic_directory_write(tmp_path):
    target = tmp_path / "model"
    for version in ("1", "2"):
        with cache.atomic_path(target) as tmp:
            tmp.mkdir()
            (tmp / "weights").write_text(version)
    assert (target / "weights").read_text() == "2"


def test_truncated_json_reads_as_absent(tmp_path):
    path = tmp_path / "stamp.json"
    path.write_text('{"sha256": "abc", "si')  # a kill mid-write by a non-atomic writer
    assert runtime.read_json_or_none(path) is None
    assert runtime.read_json_or_none(tmp_path / "missing.json") is None
