"""repro.harness.native: a C++ op built at first use, or one clear message saying why not."""
from __future__ import annotations

import shutil

import pytest

from repro.harness import native
from repro.harness.runtime import ReproError


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
