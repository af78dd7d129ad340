"""Runtime: device choice, seeded generators, determinism switches, cache directory, atomic writes.

Everything that touches the filesystem for caches goes through `cache_dir()` and the atomic
writers below, so a run killed mid-write never leaves a half-written artefact behind: the
writer fills a temporary file in the same directory and renames it into place, and readers
treat a file that fails to parse as absent (rebuild).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import torch

DEVICES = ("auto", "cpu", "cuda")


class ReproError(RuntimeError):
    """A user-facing error: the message says what went wrong and what to do.

    The pytest plugin and the CLI print it as one line, without a traceback.
    """


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
    slower than float32 on an AMD EPYC without AVX512-BF16 (issue 18). Native is necessary for
    "auto" to pick bfloat16, not sufficient: see `bf16_speedup`."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # pragma: no cover - builds without oneDNN
        return False


# "auto" picks bfloat16 on a CPU only where `bf16_speedup` measured at least this. Native bf16
# instructions do not make bf16 fast: on the AMD EPYC (Zen 4, AVX512-BF16) a 12-layer 768-wide
# forward ran 3.7× faster in bf16, and the whole ci claims run took 1,262 s against 1,798 s in
# float32 (2026-11-26); on an Intel Xeon with AVX512-BF16 but no AMX exposed to the VM, oneDNN's
# bf16 matmul (brg_matmul:avx512_core_bf16) ran at 0.53–0.57× MKL's float32 rate (64 against 112
# GFLOP/s on one thread, 2026-11-26), so bf16 there is slower *and* less precise. The bar sits
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


@functools.lru_cache(maxsize=None)
def bf16_speedup() -> float | None:
    """float32 seconds / bfloat16 seconds of one matmul (`BF16_PROBE_SHAPE`, one thread) on this
    CPU; None where bf16 is not native (emulated: not worth timing). Measured once per machine —
    CPU model, flags and torch version — and kept under the cache directory, so every process of a
    run (pytest, xdist workers, training-pool jobs) and every later run on this machine decides
    alike; takes about a second the first time."""
    if not native_bf16():
        return None
    import platform

    flags = sorted(_cpuinfo_flags())
    key = config_key({"cpu": _cpu_model(), "machine": platform.machine(), "flags": flags, "torch": torch.__version__,
                      "shape": BF16_PROBE_SHAPE})
    try:
        path = cache_dir("runtime") / f"bf16-speed-{key}.json"
        lock = file_lock(path.with_suffix(".lock"))
        lock.acquire()
    except OSError:  # an unwritable cache: measure, keep it for this process only
        f32, b16 = _time_matmuls()
        return round(f32 / b16, 3)
    try:
        cached = read_json_or_none(path)
        if isinstance(cached, dict) and isinstance(cached.get("speedup"), (int, float)):
            return float(cached["speedup"])
        f32, b16 = _time_matmuls()
        speedup = round(f32 / b16, 3)
        atomic_write_json(path, {"speedup": speedup, "float32_s": f32, "bfloat16_s": b16, "cpu": _cpu_model(),
                                 "torch": torch.__version__, "shape": BF16_PROBE_SHAPE})
        return speedup
    finally:
        lock.release()


def bf16_fast() -> bool:
    """Whether "auto" means bfloat16 on this CPU: native, and measured at least BF16_MIN_SPEEDUP×
    faster than float32 (`bf16_speedup`)."""
    speedup = bf16_speedup()
    return speedup is not None and speedup >= BF16_MIN_SPEEDUP


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
    import platform

    flags = _cpuinfo_flags()
    return {"cpu": _cpu_model(), "machine": platform.machine(), "native_bf16": native_bf16(),
            "flags": sorted(f for f in BF16_FLAGS if f in flags), "bf16_speedup": bf16_speedup(),
            "bf16_min_speedup": BF16_MIN_SPEEDUP, "bf16_fast": bf16_fast()}


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
    (`bf16_fast`; a 12-layer, 768-wide forward ran 3.7× faster on the AVX512-BF16 EPYC) — and
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
    5.3 vs 1.9 ms per forward+backward, AMD EPYC with AVX512-BF16, 2026-11-25), half the
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


# --------------------------------------------------------------------------- cache


def cache_dir(*parts: str) -> Path:
    """`$REPRO_CACHE` or the user cache directory (e.g. ~/.cache/repro), with sub-folders made."""
    root = os.environ.get("REPRO_CACHE")
    if root:
        base = Path(root).expanduser()
    else:
        import platformdirs

        base = Path(platformdirs.user_cache_dir("repro"))
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_key(config: Any, length: int = 16) -> str:
    """A short hash of a JSON-able config: cache keys that change whenever the config does."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:length]


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- atomic writes


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `target`; on success rename it onto `target`.

    Works for files and directories (write a whole directory, then rename it). On any
    exception the temporary is removed and `target` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    tmp_target = tmp / target.name
    try:
        yield tmp_target
        if not tmp_target.exists():
            raise ReproError(f"atomic write of {target} produced nothing")
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(tmp_target, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def file_lock(path: str | os.PathLike):
    """A cross-process lock held on the file `path` (filelock, a dependency of
    huggingface_hub; its directory is created): what serialises building one cache entry or
    fetching one fixture across xdist workers and shells."""
    import filelock

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(path))


def remove_stale_temporaries(target: str | os.PathLike) -> None:
    """Remove what `atomic_path` left next to `target` when a run was killed mid-write (call
    while holding `target`'s lock, so no temporary is in use)."""
    target = Path(target)
    for tmp in target.parent.glob(f".{target.name}.*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)


def atomic_write_bytes(target: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(target)


def atomic_write_text(target: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(target, text.encode("utf-8"))


def atomic_write_json(target: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(target, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def atomic_torch_save(target: str | os.PathLike, obj: Any) -> Path:
    with atomic_path(target) as tmp:
        torch.save(obj, tmp)
    return Path(target)


def read_json_or_none(path: str | os.PathLike) -> Any | None:
    """Parse a JSON cache file; a missing or truncated/corrupt file reads as None (rebuild)."""
    try:
        return json.loads(Path(path).read_text("utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
