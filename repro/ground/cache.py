"""The cache directory, content keys and atomic writes: how every cache of the suite is written.

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

from repro.ground.errors import CacheUnusable, ReproError

# --------------------------------------------------------------------------- cache directory and keys


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
    import torch

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
