"""The dequantised cache of the embedded GGUF models: built once, checked on every load.

transformers dequantises a GGUF to float32 on load, which takes ~12 s (SmolLM2) and ~27 s
(Gemma) on 2 cores with the metadata parsed once (`one_gguf_parse`), so the first load saves the
dequantised model and tokenizer (safetensors) under cache_dir("models", "<name>-<gguf sha[:12]>")
and every later load reads that in seconds. The cache directory is written to a temporary and
renamed into place, and carries a stamp with its files' sizes, mtimes, sha256s and fingerprints
(`file_fingerprint`: 16 × 64 KiB sampled blocks). Every load checks sizes and fingerprints, and
the full sha256s where a file's mtime changed (or on request, `check_model_cache(name,
full=True)`): a truncated, partial or corrupt cache — same-size damage included — is rebuilt,
never loaded; where the cache is read-only, it is one ReproError line naming it. An intact entry
is read without any write, so a read-only or shared cache works (DESIGN "Bad input, faults").
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from repro.core.models.embedded import EMBEDDED_MODELS, KNOWN_MODELS
from repro.ground import resources
from repro.ground.cache import (
    atomic_path,
    atomic_write_json,
    cache_dir,
    file_fingerprint,
    file_lock,
    read_json_or_none,
    remove_stale_temporaries,
    sha256_file,
)
from repro.ground.errors import CacheUnusable, ReproError
from repro.ground.progress import phase

if TYPE_CHECKING:
    import subprocess

log = logging.getLogger(__name__)

_STAMP = "repro-cache.json"
_CACHE_FORMAT = 1  # bump to invalidate every dequantised-model cache


def model_cache_dir(name: str) -> Path:
    """Where the dequantised copy of embedded model `name` lives (it may not exist yet; nothing
    is created: reading a read-only cache writes nothing)."""
    spec = KNOWN_MODELS[name]
    sha = resources.EMBEDDED_FIXTURES[spec.fixture].sha256
    return cache_dir("models", create=False) / f"{name}-{sha[:12]}"


@dataclass(frozen=True)
class CacheCheck:
    """What `check_model_cache` found. `state`: "ok" (intact), "absent" (no complete entry: no
    stamp, a stamp for another GGUF or format, a file missing or not at its recorded size),
    "corrupt" (a file's content is not what was written; `file` names it), "unhashed" (a stamp
    written before content hashes: the sizes match, the content cannot be checked),
    "unloadable" (transformers could not load it; `file` says why). `restamp`: intact, but the
    stamp should be brought up to date (hashes for an "unhashed" one, the files' mtimes after a
    copy): done where the cache is writable. `stamp`: the stamp that was checked."""

    state: str
    file: str = ""
    restamp: bool = False
    stamp: dict | None = field(default=None, compare=False, repr=False)


# entries this process hashed in full: directory -> (the stamp's sha256s, the files' mtimes), so a
# read-only cache whose stamp cannot be refreshed (copied, mtimes new) is hashed once per process
_VERIFIED: dict[str, tuple[dict[str, str], dict[str, int]]] = {}


def _payload(directory: Path) -> list[Path]:
    return [p for p in sorted(directory.iterdir()) if p.is_file() and p.name != _STAMP]


def _file_sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in _payload(directory)}


def _mtimes(directory: Path, names) -> dict[str, int]:
    return {n: (directory / n).stat().st_mtime_ns for n in names}


def _stamp_fits(stamp: Any, directory: Path, name: str) -> bool:
    """A stamp written after a complete save of this GGUF, and every file still at its recorded size."""
    return (
        isinstance(stamp, dict)
        and stamp.get("format") == _CACHE_FORMAT
        and stamp.get("gguf_sha256") == resources.EMBEDDED_FIXTURES[KNOWN_MODELS[name].fixture].sha256
        and isinstance(stamp.get("files"), dict)
        and stamp["files"] == _file_sizes(directory)
        and any(n.endswith(".safetensors") for n in stamp["files"])
    )


def _first_mismatch(directory: Path, hashes: dict[str, str], names) -> str | None:
    """The first of `names` whose sha256 is not the recorded one (None: all match)."""
    return next((n for n in names if sha256_file(directory / n) != hashes.get(n)), None)


def _content_check(stamp: dict, directory: Path, full: bool) -> CacheCheck:
    """Fingerprints of every file on every load (cheap); the full sha256 of a file whose
    fingerprint differs, of every file where the mtimes are not the stamp's (the files were
    written since, or copied) unless this process hashed them already, and where `full` asks."""
    names = list(stamp["files"])
    hashes, prints = stamp.get("sha256"), stamp.get("fingerprint")
    if not (isinstance(hashes, dict) and isinstance(prints, dict) and set(hashes) == set(prints) == set(names)):
        return CacheCheck("unhashed", restamp=True, stamp=stamp)
    differ = [n for n in names if file_fingerprint(directory / n) != prints[n]]
    if (bad := _first_mismatch(directory, hashes, differ)) is not None:
        return CacheCheck("corrupt", bad, stamp=stamp)
    mtimes = _mtimes(directory, names)
    fresh = stamp.get("mtime_ns") == mtimes
    if full or (not fresh and _VERIFIED.get(str(directory)) != (hashes, mtimes)):
        if (bad := _first_mismatch(directory, hashes, names)) is not None:
            return CacheCheck("corrupt", bad, stamp=stamp)
        _VERIFIED[str(directory)] = (hashes, mtimes)
    return CacheCheck("ok", restamp=not fresh or bool(differ), stamp=stamp)


def _check(directory: Path, name: str, full: bool = False) -> CacheCheck:
    stamp = read_json_or_none(directory / _STAMP)
    try:
        if not _stamp_fits(stamp, directory, name):
            return CacheCheck("absent", stamp=stamp)
        return _content_check(stamp, directory, full)
    except OSError:  # a file vanished or became unreadable under us: not a usable entry
        return CacheCheck("absent", stamp=stamp)


def check_model_cache(name: str, *, full: bool = False) -> CacheCheck:
    """Whether the dequantised cache of embedded model `name` is intact (see `CacheCheck`),
    writing nothing: sizes and fingerprints always (`file_fingerprint`, 1 MiB read per file),
    every file's sha256 where its mtime is not the stamp's, and everywhere when `full` asks (a
    flipped byte between two fingerprint blocks shows only there)."""
    return _check(model_cache_dir(name), name, full)


def verify_model_caches(fixtures=None) -> list[tuple[str, Path, CacheCheck]]:
    """`repro fetch --verify`: every dequantised entry in the cache (the known models', for the
    pinned GGUF) checked in full — each file's sha256 against the one its stamp recorded at the
    build, not the sampled fingerprint a load reads (which misses damage between its blocks, e.g.
    4 MiB of zeros in a 1 GB file). (name, directory, check) per entry present, of the models built
    from `fixtures` (default: every model); writes nothing."""
    out = []
    for name, spec in KNOWN_MODELS.items():
        if fixtures is not None and spec.fixture not in fixtures:
            continue
        directory = model_cache_dir(name)
        if directory.exists():
            out.append((name, directory, _check(directory, name, full=True)))
    return out


def _cache_valid(directory: Path, name: str) -> bool:
    """An entry that may be served as it is (intact, or from before content hashes)."""
    return _check(directory, name).state in ("ok", "unhashed")


@contextlib.contextmanager
def one_gguf_parse():
    """Within this block every `gguf.GGUFReader(path)` of one path returns one reader.

    transformers parses a GGUF's metadata afresh for each of the tokenizer, the config and the
    weights (`load_gguf_checkpoint` builds a new `GGUFReader` each time: four parses per model),
    and gguf-py's parse is a Python loop over every vocabulary entry: ≈ 12 s per parse of
    Gemma's 262k tokens on 2 cores. The reader only reads (a read-only memmap; dequantising
    makes new arrays), so sharing it changes nothing loaded (weights, config and vocabulary
    compared equal on both embedded models). Measured there, the one-time dequantisation:
    Gemma 50 → 27 s, SmolLM2 16 → 12 s."""
    import gguf

    original = gguf.GGUFReader
    readers: dict[tuple[str, str], Any] = {}

    def reader(path: Any, mode: str = "r") -> Any:
        key = (os.path.realpath(os.fspath(path)), mode)
        if mode != "r":  # a writable reader is never shared
            return original(path, mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = original


def _dequantise_gguf(name: str, out_dir: Path) -> None:
    """Load the GGUF (sha256 verified first), dequantised to float32, and save_pretrained it.

    `GgufConfig(dequantize=True)` asks for plain tensors explicitly: without it transformers
    keeps a GGUF quantizer attached (even when the weights were unpacked) and refuses to save."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    spec = KNOWN_MODELS[name]
    if resources.EMBEDDED_FIXTURES[spec.fixture].on_demand:  # fetched the first time a run asks for it
        gguf = resources.fetch(spec.fixture)
    else:
        gguf = resources.fixture_path(spec.fixture)  # raises on a missing fixture or a checksum mismatch
    log.warning("dequantising %s from %s (one-time, cached afterwards)", name, gguf)
    try:
        with phase(f"dequantising {name} (one-time)"), one_gguf_parse():
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent, gguf_file=gguf.name, dtype=torch.float32, quantization_config=GgufConfig(dequantize=True)
            )
    except ImportError as exc:
        raise ReproError(
            f"loading {name} from GGUF needs the gguf and accelerate packages ({exc}); "
            "run `pip install -e .` in the repository"
        ) from None
    out_dir.mkdir()
    with phase(f"saving {name}'s dequantised weights"):
        model.save_pretrained(out_dir)
        tokenizer.save_pretrained(out_dir)


def _stamp(directory: Path, name: str, hashes: dict[str, str] | None = None) -> dict[str, Any]:
    """The stamp of the files in `directory`: sizes, mtimes, fingerprints and sha256s (`hashes`:
    sha256s already verified in this process, not computed again)."""
    files = _payload(directory)
    hashes = hashes or {}
    return {
        "format": _CACHE_FORMAT,
        "model": name,
        "gguf_sha256": resources.EMBEDDED_FIXTURES[KNOWN_MODELS[name].fixture].sha256,
        "files": {p.name: p.stat().st_size for p in files},
        "mtime_ns": {p.name: p.stat().st_mtime_ns for p in files},
        "fingerprint": {p.name: file_fingerprint(p) for p in files},
        "sha256": {p.name: hashes.get(p.name) or sha256_file(p) for p in files},
    }


def _write_stamp(directory: Path, name: str) -> None:
    """Written last, inside the temporary directory: its presence means the save completed."""
    (directory / _STAMP).write_text(json.dumps(_stamp(directory, name), indent=2) + "\n", "utf-8")


def _lock(target: Path):
    return file_lock(target.parent / f".{target.name}.lock")


def _restamp(target: Path, name: str, check: CacheCheck) -> None:
    """Bring an intact entry's stamp up to date — sha256s for a stamp from before them (taken
    from the files as they are), the mtimes of a copied cache — where the cache is writable and
    the stamp is still the one checked; a read-only cache keeps its stamp (nothing must be
    written to read: the check then hashes once per process)."""
    try:
        with _lock(target):
            if read_json_or_none(target / _STAMP) != check.stamp:
                return  # rebuilt or restamped by another process meanwhile
            verified = check.stamp.get("sha256") if check.state == "ok" else None
            atomic_write_json(target / _STAMP, _stamp(target, name, verified))
    except (CacheUnusable, OSError) as exc:
        log.info("model cache %s: stamp not refreshed (%s)", target, exc)


def _cannot_build(name: str, target: Path, check: CacheCheck, exc: CacheUnusable) -> CacheUnusable:
    """One line for an entry that needs a write the cache cannot take: `CacheUnusable`, which the
    claims plugin reads as a missing resource (the claim is skipped with this line), as it reads a
    fixture never fetched; the entry is never served."""
    todo = (
        f"the cache is not writable ({exc.reason}): delete it (rm -rf {target}) and load the model once "
        f"with a writable cache, or set REPRO_CACHE to a writable directory"
    )
    if check.state == "corrupt":
        msg = f"cached model {name} at {target} is corrupt (sha256 mismatch in {check.file}); {todo}"
    elif check.state == "unloadable":
        msg = f"cached model {name} at {target} cannot be loaded ({check.file}); {todo}"
    else:
        msg = (
            f"embedded model {name} has no complete dequantised cache at {target} and the cache is not "
            f"writable ({exc.reason}) to build one: load it once with a writable cache (it needs the fetched "
            f"fixture: `repro fetch {KNOWN_MODELS[name].fixture}`), or set REPRO_CACHE to a writable "
            "directory"
        )
    return CacheUnusable(msg, target, exc.reason)


def build_model_cache(name: str, target: Path, check: CacheCheck, full: bool = False) -> Path:
    """Dequantise `name` into `target` under its lock, replacing what is there (`check`: why);
    an entry that another process completed while we waited for the lock is kept."""
    lock = _lock(target)
    try:
        lock.acquire()
    except CacheUnusable as exc:
        raise _cannot_build(name, target, check, exc) from None
    try:
        if check.state in ("absent", "corrupt") and _check(target, name, full).state == "ok":
            return target
        if target.exists():
            why = {"corrupt": f"corrupt (sha256 mismatch in {check.file})", "unloadable": f"unloadable ({check.file})"}
            log.warning("model cache %s is %s; rebuilding it", target, why.get(check.state, "incomplete"))
        remove_stale_temporaries(target)  # left by a killed build
        with atomic_path(target) as tmp:
            _dequantise_gguf(name, tmp)
            with phase(f"hashing {name}'s cache entry (sha256 of every file)"):
                _write_stamp(tmp, name)
            _readable_as_umask_allows(tmp)
    finally:
        lock.release()
    return target


def _readable_as_umask_allows(directory: Path) -> None:
    """Give every file the mode a plain open() would (0666 less the umask): safetensors writes
    its files 0600 whatever the umask, which would keep the weights of a shared cache from
    everyone but the user who built it. (A mode change leaves the stamp's mtimes as they are.)"""
    umask = os.umask(0o022)
    os.umask(umask)
    for path in directory.iterdir():
        if path.is_file():
            path.chmod(0o666 & ~umask)


def ensure_model_cache(name: str, *, rebuild: bool = False, full_check: bool = False) -> Path:
    """The dequantised cache directory of embedded model `name`: checked, built if absent,
    rebuilt if corrupt (or when `rebuild` asks).

    An intact entry is served without any write — no lock, no directory made — so a read-only
    or shared, pre-fetched cache serves it. Every call checks sizes and fingerprints, and
    sha256s where `check_model_cache` says (`full_check`: every file's). A corrupt entry is
    never served: rebuilt where the cache is writable, else one ReproError line names it. A
    stamp from before content hashes gets them now (from the files as they are) where the
    cache is writable, and is served on its sizes where it is not."""
    target = model_cache_dir(name)
    if rebuild:
        return build_model_cache(name, target, CacheCheck("unloadable", "a rebuild was asked for"))
    check = _check(target, name, full_check)
    if check.state in ("ok", "unhashed"):
        if check.restamp:
            _restamp(target, name, check)
        return target
    return build_model_cache(name, target, check, full_check)


def prepare_in_background(names) -> "subprocess.Popen | None":
    """Build the dequantised caches of the embedded models among `names` that lack one, in a
    background process, one after the other in the order given; None when none is missing.

    A cold claims run loads its first pretrained model minutes in (after the random-init probes),
    and the one-time dequantisation is mostly single-threaded Python (GGUF parse, tokenizer
    conversion: ≈ 40 s for both models on 2 cores, one core idle meanwhile). Started
    at the run's start, it overlaps with the probes' compute. `ensure_model_cache`'s lock makes the
    two sides agree: a test that needs a model first waits for the build in progress (or builds it
    itself, and the background one then finds it done). The process says nothing and its failures
    are left to the foreground, whose own `ensure_model_cache` gives the one clear message. The run
    stops it (SIGTERM) when it ends first: the process turns SIGTERM into SystemExit, so the
    build's temporary directory (`atomic_path`) is removed on that path too, never left behind.
    Callers pass only the models their run reads (`session.selected_models`)."""
    import subprocess
    import sys

    todo = [n for n in names if n in EMBEDDED_MODELS and not _cache_valid(model_cache_dir(n), n)]
    if not todo:
        return None
    code = (
        "import signal, sys\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))\n"
        "from repro.core.models.gguf_cache import ensure_model_cache\n"
        "for name in sys.argv[1:]:\n    ensure_model_cache(name)\n"
    )
    try:
        return subprocess.Popen(
            [sys.executable, "-c", code, *todo],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError as exc:  # no process to start (here, say, a sandbox): the foreground builds it
        log.info("background model build not started (%s)", exc)
        return None
