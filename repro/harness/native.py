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

import functools
import hashlib
import os
import platform
import shutil
from pathlib import Path

import torch

from repro.harness.runtime import ReproError, _cpuinfo_flags, cache_dir

# -fopenmp-simd: `#pragma omp simd` loops vectorised (glibc's vector expf) without OpenMP threads
# and without -ffast-math, whose "no infinities" the kernels' −inf padding scores would break
CFLAGS = ("-O3", "-march=native", "-fopenmp-simd")


def _key(source: Path) -> str:
    h = hashlib.sha256(source.read_bytes())
    for part in (torch.__version__, " ".join(CFLAGS), platform.machine(), " ".join(sorted(_cpuinfo_flags()))):
        h.update(b"\0" + part.encode())
    return h.hexdigest()[:12]


def _missing_tools() -> str | None:
    from torch.utils.cpp_extension import is_ninja_available

    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
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
    missing = _missing_tools()
    if missing:
        return "", f"cannot build {path.name}: {missing}"
    from torch.utils.cpp_extension import load as build

    name = f"repro_{path.stem}_{_key(path)}"
    folder = cache_dir("native", name)
    try:
        build(name, sources=[str(path)], extra_cflags=list(CFLAGS), build_directory=str(folder),
              is_python_module=False, verbose=False)
    except (RuntimeError, OSError, ImportError) as e:  # compiler errors arrive as RuntimeError
        return "", f"building {path.name} in {folder} failed: {str(e)[-2000:]}"
    return name, ""


def available(source: str | os.PathLike) -> tuple[bool, str]:
    """(True, "") where `load(source)` works here, else (False, the reason)."""
    try:
        load(source)
    except ReproError as e:
        return False, str(e)
    return True, ""
