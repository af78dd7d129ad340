"""Runtime: device choice, seeded generators, determinism switches, cache directory, atomic writes.

Everything that touches the filesystem for caches goes through `cache_dir()` and the atomic
writers below, so a run killed mid-write never leaves a half-written artefact behind: the
writer fills a temporary file in the same directory and renames it into place, and readers
treat a file that fails to parse as absent (rebuild).

Reading never writes: a cache entry that is there and valid is read without a lock, so a
read-only or shared, pre-fetched cache serves what it holds; a lock (a file) is taken only
to write. A cache path that cannot hold a directory, or a write the cache cannot take, is one
`CacheUnusable` line naming the path and what to do (DESIGN "Bad input, faults").
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterator

import torch

DEVICES = ("auto", "cpu", "cuda")


class ReproError(RuntimeError):
    """A user-facing error: the message says what went wrong and what to do.

    The pytest plugin and the CLI print it as one line, without a traceback.
    """


class MissingFixture(ReproError):
    """An embedded fixture (a GGUF model, the Brown corpus) that has not been fetched: the
    message names the command that fetches it (`repro fetch NAME`, or `make fixtures`). What
    needs it cannot run on this machine yet (the pytest plugin skips it); nothing is wrong."""


class NotApplicable(ReproError):
    """The model lacks what a claim is about (untied embeddings for a claim read in one shared
    dictionary, a fused q/k/v projection where per-head keys are needed…): the pytest plugin reads
    it as the claim being *not applicable* to that model, with this message as the reason."""


class CacheUnusable(ReproError):
    """The cache cannot take what must be written: `REPRO_CACHE` lies under a file or is not a
    directory, or the cache is not writable (a read-only mount, another user's files) where a
    write is needed. `path` is what could not be written, `reason` the system's word for why.
    A writer whose write is optional (a stamp refresh, a memoised measurement, the dtype
    decision) catches it and goes on without."""

    def __init__(self, message: str, path: str | os.PathLike = "", reason: str = "") -> None:
        super().__init__(message)
        self.path, self.reason = Path(path), reason


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


CACHE_ENV = "REPRO_CACHE"


def cache_root() -> Path:
    """`$REPRO_CACHE`, else the user cache directory (e.g. ~/.cache/repro); not created here."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("repro"))


def _cache_hint() -> str:
    """What to do about an unusable cache, naming the setting that chose it."""
    root = os.environ.get(CACHE_ENV)
    now = f"now {CACHE_ENV}={root}" if root else f"{CACHE_ENV} is unset, so the cache is {cache_root()}"
    return f"set {CACHE_ENV} to a writable directory ({now})"


def _in_cache(path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(cache_root().resolve())
    except (OSError, RuntimeError):  # pragma: no cover - a symlink loop
        return False


def unwritable(path: str | os.PathLike, exc: OSError) -> CacheUnusable:
    """The one-line error for a write at `path` that the filesystem refused (`exc`): read-only,
    not ours, under a file, full."""
    path, reason = Path(path), exc.strerror or str(exc)
    hint = _cache_hint() if _in_cache(path) else f"make {path.parent} writable"
    return CacheUnusable(f"cannot write {path} ({reason}): {hint}", path, reason)


def _not_a_directory(path: Path) -> Path | None:
    """The nearest existing ancestor of `path` (or `path` itself) when it is not a directory —
    a file in the way — else None (it exists as a directory, or can be made)."""
    for p in (path, *path.parents):
        try:
            st = p.stat()
        except (FileNotFoundError, NotADirectoryError):
            if p.is_symlink():  # a dangling link: nothing can be made through it
                return p
            continue
        except OSError:  # unreadable: leave the verdict to the write, if one comes
            return None
        return None if stat.S_ISDIR(st.st_mode) else p
    return None


def cache_dir(*parts: str, create: bool = True) -> Path:
    """`$REPRO_CACHE` or the user cache directory (e.g. ~/.cache/repro) joined with `parts`,
    made unless `create` is False (readers: a read-only cache must not be written to).

    A path that cannot be a directory (`REPRO_CACHE` is a file, or lies under one) is a
    `CacheUnusable` error for readers and writers alike; a directory that cannot be made (a
    read-only mount, another user's directory) is one when `create` asks for it."""
    path = cache_root().joinpath(*parts)
    if path.is_dir():
        return path
    blocker = _not_a_directory(path)
    if blocker is not None:
        raise CacheUnusable(
            f"cache directory {path} is unusable: {blocker} is a file, not a directory; {_cache_hint()}",
            path,
            "not a directory",
        )
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise unwritable(path, exc) from None
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


# `file_fingerprint` reads this many blocks of this size, spread over the file
FINGERPRINT_BLOCKS, FINGERPRINT_BLOCK = 16, 64 << 10


def file_fingerprint(path: str | os.PathLike) -> str:
    """A cheap content check of a large file, for every load of a cached one: sha256 over its
    size and FINGERPRINT_BLOCKS blocks of FINGERPRINT_BLOCK bytes at fixed offsets spread evenly
    from its first byte to its last (the whole file when it is smaller). It reads 1 MiB whatever
    the size (about a millisecond warm), and changes with the size and with any overwritten or
    zeroed range wider than the blocks' spacing (1/15 of the file); a flipped byte between two
    blocks takes `sha256_file`."""
    size = os.path.getsize(path)
    digest = hashlib.sha256(f"{size}\n".encode())
    with open(path, "rb") as fh:
        if size <= FINGERPRINT_BLOCKS * FINGERPRINT_BLOCK:
            digest.update(fh.read())
            return digest.hexdigest()
        for i in range(FINGERPRINT_BLOCKS):
            fh.seek((size - FINGERPRINT_BLOCK) * i // (FINGERPRINT_BLOCKS - 1))
            digest.update(fh.read(FINGERPRINT_BLOCK))
    return digest.hexdigest()


# --------------------------------------------------------------------------- atomic writes


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `target`; on success rename it onto `target`.

    Works for files and directories (write a whole directory, then rename it). On any
    exception the temporary is removed and `target` is left as it was. A directory that cannot
    take the temporary is a `CacheUnusable` error naming `target`.
    """
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as exc:  # read-only, not ours, under a file: one line, no traceback
        raise unwritable(target, exc) from None
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


@functools.lru_cache(maxsize=None)
def _lock_class() -> type:
    import filelock

    class CacheLock(filelock.FileLock):
        """filelock's lock whose acquisition makes the lock's directory, and turns a lock file
        that cannot be created or opened (read-only, not ours) into `CacheUnusable`."""

        def acquire(self, *args: Any, **kwargs: Any) -> Any:
            path = Path(self.lock_file)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                return super().acquire(*args, **kwargs)
            except filelock.Timeout:
                raise
            except OSError as exc:
                raise unwritable(path, exc) from None

    return CacheLock


def file_lock(path: str | os.PathLike):
    """A cross-process lock held on the file `path` (filelock, a dependency of
    huggingface_hub): what serialises building one cache entry or fetching one fixture across
    xdist workers and shells. Taking it writes (the lock file, its directory), so take it only
    to write: a valid entry is read without it, and a read-only cache is never locked. Making
    the lock writes nothing; acquiring it where the cache is not writable is `CacheUnusable`."""
    return _lock_class()(str(path))


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
    """Parse a JSON cache file; a missing, unreadable (not ours, a directory) or truncated/corrupt
    file reads as None (rebuild)."""
    try:
        return json.loads(Path(path).read_text("utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
