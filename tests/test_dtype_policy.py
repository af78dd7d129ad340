"""The dtype policy (issue 18): every forward pass and training autocast takes its dtype from
repro.ground.runtime.resolve_dtype; REPRO_DTYPE=float32 forces float32 everywhere; no profile row,
training default or lens default names bfloat16 without a stated reason."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
import torch

from repro.core import lens, train
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.ground import runtime
from repro.ground.runtime import ReproError
from repro.ground.sizes import as_row
from repro.harness import profiles
from repro.seedprint import lineage

ROOT = Path(__file__).resolve().parents[1]

# profile keys that choose a dtype, and the named (non-"auto") values allowed, each with its reason
DTYPE_KEYS = ("dtype", "autocast", "nll_dtype", "compute_dtype")
NAMED_ON_PURPOSE = {
    # paper: the source's own precision for the NLL heat maps and top-k decoding on a GPU, where
    # float32 is affordable and bf16 rounding of near-ties would move a top-5 set
    ("spectral", "paper", "nll_dtype"): "float32",
    ("causal_shift", "paper", "compute_dtype"): "float32",
}


def _dtype_settings(row, path=()):
    if isinstance(row, dict):
        for k, v in row.items():
            if k in DTYPE_KEYS:
                yield path + (k,), v
            yield from _dtype_settings(v, path + (k,))


def test_profile_rows_say_auto_unless_named_with_a_reason():
    seen = 0
    for exp, per_profile in profiles.SIZES.items():
        for prof, row in per_profile.items():
            for path, value in _dtype_settings(as_row(row)):
                seen += 1
                key = (exp, prof, path[-1])
                if value in ("auto", None):
                    continue
                assert NAMED_ON_PURPOSE.get(key) == value, f"{exp}/{prof}/{'.'.join(path)} = {value!r}: say 'auto'"
    assert seen >= 10  # the test reads the rows it means to


def test_defaults_go_through_the_policy():
    assert train.TrainConfig().autocast is None  # plain float32 unless a row asks
    assert lineage.LineageConfig().autocast == "auto"
    assert inspect.signature(lineage.finetune_pretrained).parameters["autocast"].default == "auto"
    assert inspect.signature(lens.fit_tuned_lens).parameters["autocast"].default == "auto"


def test_no_dtype_decision_bypasses_the_policy():
    """Outside repro/ground/runtime.py no code in repro/ or claims/ opens an autocast, picks accelerate's
    mixed precision or names torch.bfloat16 itself (comments and strings aside)."""
    offenders = []
    for path in sorted([*ROOT.joinpath("repro").rglob("*.py"), *ROOT.joinpath("claims").glob("*.py")]):
        # runtime.py decides; the plan's cost model (core/cost.py, the topics' sizes.py planners)
        # counts the ops of the bf16 GPU run it prices, on toy tensors, and measures nothing
        if path.name in ("runtime.py", "sizes.py") or path.relative_to(ROOT).as_posix() == "repro/core/cost.py":
            continue
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            text = ast.unparse(node) if isinstance(node, (ast.Attribute, ast.keyword)) else ""
            if isinstance(node, ast.Attribute) and text in (
                "torch.bfloat16",
                "torch.autocast",
                "torch.half",
                "torch.float16",
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text}")
            if (
                isinstance(node, ast.keyword)
                and node.arg == "mixed_precision"
                and not isinstance(node.value, ast.IfExp)
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.value.lineno}: {text}")
    assert not offenders, "dtype chosen outside repro.ground.runtime.resolve_dtype:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "forced, dtype, autocast", [("float32", torch.float32, None), ("bfloat16", torch.bfloat16, "bfloat16")]
)
def test_repro_dtype_forces_every_decision(monkeypatch, forced, dtype, autocast):
    monkeypatch.setenv(runtime.DTYPE_ENV, forced)
    for device in ("cpu", "cuda"):  # the override wins over the hardware, GPU included
        assert runtime.resolve_dtype("auto", device) is dtype
        assert runtime.resolve_autocast("auto", device) == autocast
    assert train.resolved(train.TrainConfig(autocast="auto")).autocast == autocast
    assert runtime.resolve_dtype("float32") is torch.float32  # a named dtype stays named
    assert runtime.resolve_autocast(None) is None


def test_auto_follows_the_hardware(monkeypatch):
    monkeypatch.delenv(runtime.DTYPE_ENV, raising=False)
    assert runtime.resolve_dtype("auto", "cuda") is torch.bfloat16
    want = torch.bfloat16 if runtime.bf16_fast() else torch.float32
    assert runtime.resolve_dtype("auto", "cpu") is want
    with runtime.autocast("auto", "cpu"):
        y = torch.ones(2, 2) @ torch.ones(2, 2)
    assert y.dtype is want


def test_bad_override_is_one_clear_error(monkeypatch):
    monkeypatch.setenv(runtime.DTYPE_ENV, "fp8")
    with pytest.raises(ReproError, match="REPRO_DTYPE='fp8' is unknown; choose one of auto, float32, bfloat16"):
        runtime.resolve_dtype("auto")


def test_cpu_capability_names_the_deciding_flags():
    cap = runtime.cpu_capability()
    assert set(cap) == {"cpu", "machine", "native_bf16", "flags", "bf16_speedup", "bf16_min_speedup", "bf16_fast"}
    assert isinstance(cap["native_bf16"], bool)
    assert set(cap["flags"]) <= set(runtime.BF16_FLAGS)
    assert cap["bf16_fast"] == (cap["bf16_speedup"] is not None and cap["bf16_speedup"] >= runtime.BF16_MIN_SPEEDUP)


@pytest.fixture
def fresh_speed(monkeypatch, tmp_path):
    """The bf16 speed measurement forgotten (in-process and on disk) before and after the test."""
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    monkeypatch.delenv(runtime.DTYPE_ENV, raising=False)
    runtime.bf16_speedup.cache_clear()
    yield tmp_path
    runtime.bf16_speedup.cache_clear()


@pytest.mark.parametrize(
    "f32_s, bf16_s, want",
    [
        (0.010, 0.0027, torch.bfloat16),  # 3.7×: the AVX512-BF16 EPYC's forward
        (0.010, 0.018, torch.float32),  # 0.55×: the Xeon whose bf16 matmul is slower than float32's
        (0.010, 0.0080, torch.float32),  # 1.25×: native, faster, but under the bar
    ],
)
def test_native_bf16_is_used_only_where_measured_faster(monkeypatch, fresh_speed, f32_s, bf16_s, want):
    """Native bf16 instructions are necessary, not sufficient: "auto" follows the measured speed-up."""
    monkeypatch.setattr(runtime, "native_bf16", lambda: True)
    monkeypatch.setattr(runtime, "_time_matmuls", lambda rounds=5: (f32_s, bf16_s))
    assert runtime.resolve_dtype("auto", "cpu") is want
    assert runtime.resolve_autocast("auto", "cpu") == ("bfloat16" if want is torch.bfloat16 else None)
    assert runtime.resolve_dtype("auto", "cuda") is torch.bfloat16  # a GPU is not timed
    cap = runtime.cpu_capability()
    assert cap["bf16_speedup"] == pytest.approx(f32_s / bf16_s, rel=1e-3)
    assert cap["bf16_fast"] is (want is torch.bfloat16)


def test_bf16_speed_is_measured_once_per_machine(monkeypatch, fresh_speed):
    """The measurement is kept under the cache directory: every process of a run and every later
    run on this machine reads the same number (and so picks the same dtype); a corrupt entry is
    measured again."""
    calls = []
    monkeypatch.setattr(runtime, "native_bf16", lambda: True)
    monkeypatch.setattr(runtime, "_time_matmuls", lambda rounds=5: calls.append(1) or (0.01, 0.002))
    assert runtime.bf16_speedup() == pytest.approx(5.0)
    runtime.bf16_speedup.cache_clear()  # a new process
    monkeypatch.setattr(runtime, "_time_matmuls", lambda rounds=5: calls.append(1) or (0.01, 0.02))
    assert runtime.bf16_speedup() == pytest.approx(5.0) and len(calls) == 1
    (entry,) = fresh_speed.joinpath("runtime").glob("bf16-speed-*.json")
    entry.write_text("{trunc")
    runtime.bf16_speedup.cache_clear()
    assert runtime.bf16_speedup() == pytest.approx(0.5) and len(calls) == 2


def test_emulated_bf16_is_not_timed(monkeypatch, fresh_speed):
    monkeypatch.setattr(runtime, "native_bf16", lambda: False)
    monkeypatch.setattr(runtime, "_time_matmuls", lambda rounds=5: pytest.fail("timed an emulated bf16"))
    assert runtime.bf16_speedup() is None and not runtime.bf16_fast()
    assert runtime.resolve_dtype("auto", "cpu") is torch.float32


def test_matmul_timing_is_real_and_restores_threads():
    threads = torch.get_num_threads()
    f32, b16 = runtime._time_matmuls(rounds=1)
    assert 0 < f32 < 10 and 0 < b16 < 60
    assert torch.get_num_threads() == threads


def test_training_key_names_the_dtype_that_ran(monkeypatch, tmp_path):
    """autocast "auto" is resolved before the checkpoint key: under REPRO_DTYPE=float32 the run
    is the same cache entry as an explicit float32 run, and its result says float32."""
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    monkeypatch.setenv(runtime.DTYPE_ENV, "float32")
    tokens = torch.randint(0, 32, (400,), generator=runtime.generator(0))
    cfg = train.TrainConfig(
        steps=2, batch_size=2, seq_len=8, warmup_steps=1, eval_every=2, eval_batches=1, vocab_size=32, autocast="auto"
    )

    def model():
        return TinyDecoder(
            TinyConfig.merged(vocab_size=32, d_model=16, n_layer=1, n_head=2, max_len=8), runtime.generator(1)
        )

    a = train.train(model, cfg, train_tokens=tokens, val_tokens=tokens, progress=False)
    b = train.train(model, cfg.replace(autocast=None), train_tokens=tokens, val_tokens=tokens, progress=False)
    assert a.dtype == b.dtype == "float32"
    assert a.key == b.key and not b.trained


def test_env_command_prints_capability_and_dtype(monkeypatch, capsys):
    from repro.harness.cli import main

    monkeypatch.setenv(runtime.DTYPE_ENV, "float32")
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^bf16\s+native: (yes|no)", out, re.M)
    assert re.search(r"^dtype\s+float32", out, re.M)
    assert re.search(r"^bf16\s+speed: ", out, re.M)
