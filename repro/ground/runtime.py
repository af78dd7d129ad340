"""Runtime policy: device choice, the dtype policy (what "auto" means here, and why), autocast,
seeded generators.

The errors (`repro.ground.errors`) and the cache directory with its atomic writers
(`repro.ground.cache`) are their own modules: import them from there.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from pathlib import Path
from typing import Any

import torch

from repro.ground.cache import CACHE_ENV, atomic_write_json, cache_dir, config_key, file_lock, read_json_or_none
from repro.ground.errors import CacheUnusable, ReproError

DEVICES = ("auto", "cpu", "cuda")


# --------------------------------------------------------------------------- devices


def resolve_device(name: str = "auto") -> torch.device:
    """Map --device auto|cpu|cuda to a torch.device; asking for CUDA without one is an error."""
    if name not in DEVICES:
        raise ReproError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ReproError(
            "--device cuda was asked for but torch sees no CUDA GPU "
            f"(torch {torch.__version__}, cuda build: {torch.version.cuda}); "
            "use --device cpu, or install a CUDA build of torch on a GPU machine"
        )
    return torch.device(name)


DTYPES = ("auto", "float32", "bfloat16")
DTYPE_ENV = "REPRO_DTYPE"  # auto | float32 | bfloat16: what "auto" means in this process
# /proc/cpuinfo flags that decide (or explain) whether bfloat16 is native on a CPU
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "amx_tile", "avx512f", "avx2", "bf16", "sve")


def _cpuinfo_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:  # pragma: no cover - not Linux
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):  # x86 / aarch64
            return set(value.split())
    return set()


@functools.lru_cache(maxsize=None)
def native_bf16() -> bool:
    """Does this CPU multiply bfloat16 natively (oneDNN's own test: AVX512-BF16 or AMX on x86,
    BF16 on Arm)? Where it does not, bf16 is emulated: a bf16 matmul with its backward ran 16×
    slower than float32 on a CPU without AVX512-BF16. Native is necessary for "auto" to pick
    bfloat16, not sufficient: see `bf16_speedup`."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # pragma: no cover - builds without oneDNN
        return False


# "auto" picks bfloat16 on a CPU only where `bf16_speedup` measured at least this. Native bf16
# instructions do not make bf16 fast: on a Zen 4 CPU with AVX512-BF16 a 12-layer 768-wide
# forward ran 3.7× faster in bf16, and the whole ci claims run took 1,262 s against 1,798 s in
# float32; on an Intel Xeon with AVX512-BF16 but no AMX exposed to the VM, oneDNN's bf16 matmul
# (brg_matmul:avx512_core_bf16) ran at 0.53–0.57× MKL's float32 rate (64 against 112 GFLOP/s
# on one thread), so bf16 there is slower *and* less precise. The bar sits
# well between the two; a CPU near it gets float32 (the safe side: the same numbers as a CPU
# without bf16).
BF16_MIN_SPEEDUP = 1.3
# the matmul `bf16_speedup` times: (M × K) @ (K × N), a 768-wide model's MLP at a batch of tokens
BF16_PROBE_SHAPE = (512, 768, 3072)


def _time_matmuls(rounds: int = 5) -> tuple[float, float]:
    """Best-of-`rounds` seconds of one BF16_PROBE_SHAPE matmul in float32 and in bfloat16, on one
    thread, the two dtypes interleaved (a busy machine slows both alike)."""
    import time

    m, k, n = BF16_PROBE_SHAPE
    g = generator(0)
    a32, b32 = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    a16, b16 = a32.to(torch.bfloat16), b32.to(torch.bfloat16)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = {torch.float32: float("inf"), torch.bfloat16: float("inf")}
        a32 @ b32, a16 @ b16  # first calls pick (and for oneDNN, JIT) their kernels
        for _ in range(rounds):
            for a, b in ((a32, b32), (a16, b16)):
                t = time.perf_counter()
                a @ b
                best[a.dtype] = min(best[a.dtype], time.perf_counter() - t)
    finally:
        torch.set_num_threads(threads)
    return best[torch.float32], best[torch.bfloat16]


# The dtype decision of this process, per ($REPRO_CACHE, machine key, native bf16): `dtype_decision`
# fills it, `forget_dtype_decision` (alias `bf16_speedup.cache_clear`) empties it ("a new process").
_DECISIONS: dict[tuple[str, str, bool], dict[str, Any]] = {}


@functools.lru_cache(maxsize=None)
def _machine_facts() -> dict[str, Any]:
    """What the bf16 measurement depends on, and so keys its cache entry: CPU model,
    architecture, every CPU flag, torch version, the timed shape."""
    import platform

    return {
        "cpu": _cpu_model(),
        "machine": platform.machine(),
        "flags": sorted(_cpuinfo_flags()),
        "torch": torch.__version__,
        "shape": BF16_PROBE_SHAPE,
    }


def _decided(speedup: float | None) -> str:
    return "bfloat16" if speedup is not None and speedup >= BF16_MIN_SPEEDUP else "float32"


def _decision(
    facts: dict[str, Any], entry: dict[str, Any] | None, source: str, cache_file: Path | None, note: str
) -> dict[str, Any]:
    """The dict `dtype_decision` returns (see there) from the machine's facts and a measured entry."""
    entry = entry or {}
    speedup = entry.get("speedup")
    return {
        "cpu": facts["cpu"],
        "machine": facts["machine"],
        "torch": facts["torch"],
        "flags": sorted(f for f in BF16_FLAGS if f in facts["flags"]),
        "native_bf16": native_bf16(),
        "bf16_speedup": speedup,
        "float32_s": entry.get("float32_s"),
        "bfloat16_s": entry.get("bfloat16_s"),
        "bf16_min_speedup": BF16_MIN_SPEEDUP,
        "decision": _decided(speedup),
        "measured_at": entry.get("measured_at"),
        "source": source,
        "cache_file": str(cache_file) if cache_file is not None else None,
        "note": note,
    }


def _measure(facts: dict[str, Any]) -> dict[str, Any]:
    """Time the probe matmul now: the entry the decision cache stores."""
    from datetime import datetime, timezone

    f32, b16 = _time_matmuls()
    speedup = round(f32 / b16, 3)
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return {
        "speedup": speedup,
        "decision": _decided(speedup),
        "bf16_min_speedup": BF16_MIN_SPEEDUP,
        "float32_s": f32,
        "bfloat16_s": b16,
        "measured_at": when,
        "cpu": facts["cpu"],
        "machine": facts["machine"],
        "torch": facts["torch"],
        "shape": facts["shape"],
    }


def _read_measurement(path: Path) -> dict[str, Any] | None:
    """A stored measurement, or None where there is none or it is unreadable (measure again)."""
    entry = read_json_or_none(path)
    speedup = entry.get("speedup") if isinstance(entry, dict) else None
    if isinstance(speedup, (int, float)) and not isinstance(speedup, bool) and 0 < speedup < float("inf"):
        return entry
    return None


def _measured_here(facts: dict[str, Any], why: str) -> dict[str, Any]:
    return _decision(
        facts,
        _measure(facts),
        "measured",
        None,
        f"not cached ({why}): measured in this process only; another process measures again",
    )


def _decide(facts: dict[str, Any], refresh: bool) -> dict[str, Any]:
    """Read the machine's recorded measurement, or measure (under the entry's lock, so parallel
    processes measure once) and record it; a cache that cannot take the record is no error."""
    try:
        path = cache_dir("runtime", create=False) / f"bf16-speed-{_machine_key()}.json"
    except CacheUnusable as exc:
        return _measured_here(facts, str(exc))
    if not refresh and (entry := _read_measurement(path)) is not None:
        return _decision(facts, entry, "cache", path, "read from the cache: measured once on this machine")
    lock = file_lock(path.with_suffix(".lock"))
    try:
        lock.acquire()
    except CacheUnusable as exc:
        return _measured_here(facts, str(exc))
    try:
        if not refresh and (entry := _read_measurement(path)) is not None:  # measured while we waited
            return _decision(facts, entry, "cache", path, "read from the cache: measured once on this machine")
        entry = _measure(facts)
        try:
            atomic_write_json(path, entry)
        except (CacheUnusable, OSError) as exc:
            return _decision(facts, entry, "measured", None, f"not cached ({exc}): measured in this process only")
        return _decision(facts, entry, "measured", path, "measured now and cached for later processes")
    finally:
        lock.release()


def dtype_decision(refresh: bool = False) -> dict[str, Any]:
    """What "auto" means on this CPU, and why: bfloat16 where bf16 is native (`native_bf16`) and
    its matmul measured at least BF16_MIN_SPEEDUP× float32's speed, float32 elsewhere.

    The measurement (`_time_matmuls`, about a second) is taken once per machine — CPU model,
    flags, torch version — and recorded with its decision under `cache_dir("runtime")`
    (atomically, under a lock): every later process, of this run (xdist workers, training-pool
    jobs) or a later one, reads the record instead of timing again, so a loaded machine near the
    bar cannot flip the dtype between runs (the same CPU measured 2.11× and 2.23×). `refresh`
    measures again and replaces the record (`repro env --refresh`). A cache that cannot be
    written is no error: the measurement then holds for this process only, and "note" says so.
    `REPRO_DTYPE` still overrides the decision in `resolve_dtype`.

    Returns {"cpu", "machine", "torch", "flags" (the BF16_FLAGS present), "native_bf16",
    "bf16_speedup" (None where not native: emulated bf16 is not timed), "float32_s",
    "bfloat16_s", "bf16_min_speedup", "decision" ("bfloat16" | "float32"), "measured_at" (ISO
    time, UTC), "source" ("cache" | "measured" | "not measured"), "cache_file" (the record's
    path, None where not recorded), "note" (one line)}."""
    return dict(_current_decision(refresh))


@functools.lru_cache(maxsize=None)
def _machine_key() -> str:
    return config_key(_machine_facts())


def _current_decision(refresh: bool = False) -> dict[str, Any]:
    """This process's decision (the memo's own dict: callers only read it). Every "auto" dtype
    asks here, so a repeated call costs a dictionary look-up."""
    native = native_bf16()
    memo = (os.environ.get(CACHE_ENV, ""), _machine_key(), native)  # cache_root() is ~10× a look-up
    if refresh or memo not in _DECISIONS:
        facts = _machine_facts()
        emulated = "bf16 is emulated on this CPU (several times slower than float32): not timed"
        _DECISIONS[memo] = _decide(facts, refresh) if native else _decision(facts, None, "not measured", None, emulated)
    return _DECISIONS[memo]


def forget_dtype_decision() -> None:
    """Forget this process's dtype decision: the next call reads the record again (tests)."""
    _DECISIONS.clear()


def bf16_speedup() -> float | None:
    """float32 seconds / bfloat16 seconds of one matmul (`BF16_PROBE_SHAPE`, one thread) on this
    CPU, as recorded once per machine by `dtype_decision`; None where bf16 is not native
    (emulated: not worth timing)."""
    return dtype_decision()["bf16_speedup"]


bf16_speedup.cache_clear = forget_dtype_decision  # type: ignore[attr-defined]  # it was an lru_cache


def bf16_fast() -> bool:
    """Whether "auto" means bfloat16 on this CPU: native, and measured at least BF16_MIN_SPEEDUP×
    faster than float32 (`dtype_decision`)."""
    return dtype_decision()["decision"] == "bfloat16"


def _cpu_model() -> str:
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:  # pragma: no cover - not Linux
        pass
    return platform.processor()


def cpu_capability() -> dict[str, Any]:
    """The CPU facts that decide the dtype policy, for claims.json's "run" and `.ci/run`: native
    bf16, the measured bf16 speed-up over float32 and whether that makes "auto" bfloat16."""
    d = dtype_decision()
    return {
        "cpu": d["cpu"],
        "machine": d["machine"],
        "native_bf16": d["native_bf16"],
        "flags": d["flags"],
        "bf16_speedup": d["bf16_speedup"],
        "bf16_min_speedup": BF16_MIN_SPEEDUP,
        "bf16_fast": d["decision"] == "bfloat16",
    }


def dtype_override() -> str:
    """`$REPRO_DTYPE` (default "auto"); an unknown value is an error, not a silent default."""
    value = os.environ.get(DTYPE_ENV, "auto").strip() or "auto"
    if value not in DTYPES:
        raise ReproError(f"{DTYPE_ENV}={value!r} is unknown; choose one of {', '.join(DTYPES)}")
    return value


def resolve_dtype(name: str = "auto", device: torch.device | str = "cpu") -> torch.dtype:
    """The suite's one dtype policy: every forward pass and every training autocast asks here.

    "float32" and "bfloat16" are taken as named (only where a claim needs that dtype; the
    caller states why). "auto" (and None) means: `$REPRO_DTYPE` if set to float32 or bfloat16
    (REPRO_DTYPE=float32 makes a machine with native bf16 do what one without it does), else
    bfloat16 where the hardware multiplies it natively and fast — a CUDA GPU, or a CPU with
    AVX512-BF16/AMX whose bf16 matmul measured at least BF16_MIN_SPEEDUP× float32's speed
    (`bf16_fast`; a 12-layer, 768-wide forward ran 3.7× faster on a Zen 4 with AVX512-BF16) — and
    float32 elsewhere (emulated bf16 is several times slower than float32, and some CPUs with
    native bf16 instructions run bf16 matmuls slower than float32 ones). Records say which one
    was used."""
    if name not in DTYPES:
        raise ReproError(f"unknown dtype {name!r}; choose one of {', '.join(DTYPES)}")
    if name == "auto":
        name = dtype_override()
    if name != "auto":
        return getattr(torch, name)
    if torch.device(device).type == "cuda":
        return torch.bfloat16
    return torch.bfloat16 if bf16_fast() else torch.float32


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def resolve_autocast(name: str | None, device: torch.device | str = "cpu") -> str | None:
    """A training/forward autocast setting resolved by the policy: None (float32 throughout)
    stays None; "auto" becomes "bfloat16" or None; "bfloat16" stays (named on purpose)."""
    if name is None or name == "float32":
        return None
    return "bfloat16" if resolve_dtype(name, device) == torch.bfloat16 else None


def autocast(name: str | None, device: torch.device | str = "cpu") -> contextlib.AbstractContextManager:
    """torch.autocast in the policy's dtype (see resolve_autocast), or a no-op for float32."""
    device = torch.device(device)
    if resolve_autocast(name, device) is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def attention_in_float32(device: torch.device | str = "cpu") -> bool:
    """Whether attention that would run in bfloat16 (bf16 inputs, or a bf16 autocast) on
    `device` is computed in float32 and cast back (`repro.core.models.attention`): on a CPU
    yes — bf16 SDPA's backward ran 3–7× slower than float32's there (4 heads × 64 tokens:
    5.3 vs 1.9 ms per forward+backward, on a CPU with AVX512-BF16), half the
    attention cost of a tiny-model training step, and float32 is at least as accurate; on
    CUDA no (bf16 is what its flash kernels are for). Training keys say so (`repro.core.train`)."""
    return torch.device(device).type == "cpu"


def autocast_off(device: torch.device | str = "cpu") -> contextlib.AbstractContextManager:
    """A region where no autocast lowers the dtype (float32 attention inside a bf16 autocast)."""
    return torch.autocast(torch.device(device).type, enabled=False)


# --------------------------------------------------------------------------- seeding


def generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """An explicit, seeded generator: experiments never draw from torch's global RNG."""
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def derive_seed(*parts: Any) -> int:
    """A stable 63-bit seed from any hashable description (e.g. ("bb_6", seed, T))."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)
