"""repro.ground.native: a C++ op built at first use, or one clear message saying why not."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from repro.ground import native
from repro.ground.runtime import ReproError


def test_a_missing_source_is_named(tmp_path):
    with pytest.raises(ReproError, match="not found"):
        native.load(tmp_path / "absent.cpp")
    assert native.available(tmp_path / "absent.cpp") == (False, native._load(str(tmp_path / "absent.cpp"))[1])


def test_no_compiler_is_one_message(tmp_path, monkeypatch):
    src = tmp_path / "nocompiler.cpp"
    src.write_text("int f() { return 1; }\n")
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    ok, why = native.available(src)
    assert not ok and "no C++ compiler" in why and "CXX" in why
    with pytest.raises(ReproError, match="no C..? compiler"):
        native.load(src)


@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler here")
def test_a_failed_build_says_where_and_why(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "broken.cpp"
    if native._missing_tools():
        pytest.skip(native._missing_tools())
    src.write_text("this is not C++;\n")
    ok, why = native.available(src)
    assert not ok and "building broken.cpp" in why and "failed" in why and str(tmp_path / "cache") in why


def test_the_build_is_keyed_by_source_and_flags(tmp_path):
    a, b = tmp_path / "a.cpp", tmp_path / "b.cpp"
    a.write_text("int f() { return 1; }\n")
    b.write_text("int f() { return 2; }\n")
    assert native._key(a) != native._key(b) and native._key(a) == native._key(a)


def test_ninja_next_to_the_interpreter_is_found_without_an_activated_venv(monkeypatch, tmp_path):
    """`make` runs .venv/bin/python without activating the venv: pip's ninja is in .venv/bin."""
    pytest.importorskip("ninja")
    cxx = shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler here")
    monkeypatch.setenv("PATH", str(tmp_path))  # neither the venv's bin nor /usr/bin
    monkeypatch.setenv("CXX", cxx)
    with native._tools_on_path():
        assert native._missing_tools() is None
    assert native.os.environ["PATH"] == str(tmp_path)  # restored


@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler here")
def test_a_lock_left_by_a_killed_build_does_not_block_the_next(tmp_path):
    """torch's builder leaves its lock file behind when killed, and later builds would wait on it
    forever; `load` clears it under its own lock. In a subprocess with a timeout, so that a
    regression fails instead of hanging the run."""
    src = tmp_path / "tiny.cpp"
    src.write_text('extern "C" int repro_tiny() { return 1; }\n')
    cache = tmp_path / "cache"
    code = (
        "import sys; from pathlib import Path; from repro.ground import native\n"
        f"src = Path({str(src)!r}); folder = Path({str(cache)!r}) / 'native' / f'repro_tiny_{{native._key(src)}}'\n"
        "folder.mkdir(parents=True); (folder / 'lock').touch()\n"
        "ok, why = native.available(src); print(ok, why); sys.exit(0 if ok else 1)\n"
    )
    env = {**native.os.environ, "REPRO_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_unusable_cache_is_a_reason_not_a_traceback(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("REPRO_CACHE", str(blocker / "below-a-file"))
    src = tmp_path / "c.cpp"
    src.write_text("int f() { return 1; }\n")
    ok, why = native.available(src)
    assert not ok and why
