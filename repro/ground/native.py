"""C++ ops of the package, built at first use with torch's own extension builder.

`load(source)` compiles one C++ file of the package (its `TORCH_LIBRARY` ops then appear under
`torch.ops`) into the cache (`cache_dir("native")`), once per source, torch version, compiler
flags and CPU — `-march=native`: the library is for the CPU it was built on —, and loads it
into this process. It needs a C++ compiler and ninja (a dependency of the package); where either
is missing or the build fails, it raises one ReproError saying which, and `available(source)`
says so without raising. Nothing of the suite's claims depends on these ops: they are opt-in
kernels (the context axis's `fused`), each with a pure-PyTorch twin it is tested against.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
import shlex
import shutil
import sys
from pathlib import Path

import torch

from repro.ground.cache import cache_dir, file_lock
from repro.ground.errors import ReproError
from repro.ground.runtime import _cpuinfo_flags

# -fopenmp-simd: `#pragma omp simd` loops vectorised (glibc's vector expf) without OpenMP threads
# and without -ffast-math, whose "no infinities" the kernels' −inf padding scores would break
CFLAGS = ("-O3", "-march=native", "-fopenmp-simd")
# how long a process waits for another one building the same library (a first build: ≈ 10 s here)
LOCK_TIMEOUT_S = 600


def _key(source: Path) -> str:
    h = hashlib.sha256(source.read_bytes())
    for part in (torch.__version__, " ".join(CFLAGS), platform.machine(), " ".join(sorted(_cpuinfo_flags()))):
        h.update(b"\0" + part.encode())
    return h.hexdigest()[:12]


@contextlib.contextmanager
def _tools_on_path():
    """torch's builder runs `ninja` from PATH; pip installs it next to this interpreter (the venv's
    bin, not on PATH where the venv is not activated, as under `make`): put both folders first."""
    folders = [os.path.dirname(sys.executable)]
    with contextlib.suppress(ImportError):
        import ninja

        folders.insert(0, ninja.BIN_DIR)
    before = os.environ.get("PATH")
    os.environ["PATH"] = os.pathsep.join([*folders, before or ""])
    try:
        yield
    finally:
        if before is None:
            del os.environ["PATH"]
        else:
            os.environ["PATH"] = before


def _missing_tools() -> str | None:
    """What is missing to build here, or None. Call inside `_tools_on_path()`."""
    from torch.utils.cpp_extension import is_ninja_available

    compiler = os.environ.get("CXX", "c++")
    words = shlex.split(compiler) or [""]
    if not any(shutil.which(w) for w in words[:2]):  # "g++", or a wrapper: "ccache g++"
        return f"no C++ compiler ({compiler!r} not on PATH; set CXX)"
    if not is_ninja_available():
        return "ninja is not installed (pip install ninja)"
    return None


def load(source: str | os.PathLike) -> str:
    """Build (once, cached on disk) and load the C++ file `source`; returns the library's name.
    Raises ReproError with the reason where it cannot be built or loaded (tried once a process)."""
    name, error = _load(str(Path(source).resolve()))
    if error:
        raise ReproError(error)
    return name


@functools.lru_cache(maxsize=None)
def _load(source: str) -> tuple[str, str]:
    """(library name, "") or ("", why not)."""
    path = Path(source)
    if not path.is_file():
        return "", f"C++ source {path} not found (is the package installed with its .cpp files?)"
    from torch.utils.cpp_extension import load as build

    name = f"repro_{path.stem}_{_key(path)}"
    folder: Path | None = None
    with _tools_on_path():
        missing = _missing_tools()
        if missing:
            return "", f"cannot build {path.name}: {missing}"
        try:
            folder = cache_dir("native", name)
            # one build per folder at a time, across processes (a file lock the OS drops when its
            # holder dies); torch's own lock file ("lock") stays behind when a build is killed and
            # would make every later process wait forever: under ours, any such file is stale
            with file_lock(folder / "repro.lock").acquire(timeout=LOCK_TIMEOUT_S):
                (folder / "lock").unlink(missing_ok=True)
                build(
                    name,
                    sources=[str(path)],
                    extra_cflags=list(CFLAGS),
                    build_directory=str(folder),
                    is_python_module=False,
                    verbose=False,
                )
        except Exception as e:  # compiler errors arrive as RuntimeError; a locked or unwritable cache, OSError
            where = f" in {folder}" if folder is not None else ""
            return "", f"building {path.name}{where} failed: {type(e).__name__}: {str(e)[-2000:]}"
    return name, ""


def available(source: str | os.PathLike) -> tuple[bool, str]:
    """(True, "") where `load(source)` works here, else (False, the reason)."""
    try:
        load(source)
    except ReproError as e:
        return False, str(e)
    return True, ""
