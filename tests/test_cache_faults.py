"""Cache faults: an unusable cache path, a read-only or shared cache, a fixture
not fetched, same-size corruption of a cached dequantised model.

Everything runs the real code paths. A read-only cache is read by a separate process that cannot
write to it: with the cache's write bits cleared, and — where the tests run as root, whom file
modes do not stop — as the unprivileged user `nobody` (setpriv). Where neither is possible the
tests that need a refused write skip, saying why, and the others still run as root. Every
read-only test compares the cache's listing, sizes, modes and mtimes before and after, so
"nothing was written" is checked even where no permission could stop a write. The dequantised-model entries are small
random Llamas written where the SmolLM2 cache goes and stamped by the loader's own stamp writer
(what a completed build leaves); one test rebuilds the real SmolLM2 from its GGUF.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from repro.core import data
from repro.core.models import embedded, gguf_cache
from repro.core.models.gguf_cache import check_model_cache, model_cache_dir
from repro.core.models.pretrained import ensure_model_cache, load_pretrained
from repro.ground import resources, runtime
from repro.ground.cache import FINGERPRINT_BLOCK, FINGERPRINT_BLOCKS, sha256_file
from repro.ground.errors import MissingFixture
from repro.ground.runtime import CacheUnusable, ReproError

MODEL = "smollm2-135m"
REPRO = Path(sys.executable).with_name("repro")  # the console script of this virtualenv
SETPRIV = shutil.which("setpriv")
NOBODY = 65534


@functools.lru_cache(maxsize=None)
def _no_denial() -> str | None:
    """None where a reader can be kept from writing to a cache (file modes stop us, or we are
    root and can run this interpreter as `nobody`); else why not."""
    if os.geteuid() != 0:
        return None
    if SETPRIV is None:
        return "running as root without setpriv: file modes do not stop root's writes"
    probe = subprocess.run(
        [
            SETPRIV,
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            "-c",
            "import repro.ground.runtime",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env={**os.environ, "HOME": "/"},
        stdin=subprocess.DEVNULL,
    )
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"running as root, and user nobody cannot run this interpreter ({tail})"
    return None


def _needs_denial(why: str = "") -> None:
    if (reason := _no_denial()) is not None:
        pytest.skip(f"{reason}{why}")


@pytest.fixture(scope="module")
def real_brown() -> Path:
    return resources.fetch("brown")


@pytest.fixture(scope="module")
def bpe(real_brown):
    return data.brown_tokenizer()


@pytest.fixture
def shared_tmp():
    """A scratch directory another user can traverse (pytest's tmp_path lives under a 0700
    directory): the read-only cache and the reader's HOME. Made writable again and removed after."""
    root = Path(tempfile.mkdtemp(prefix="repro-cache-faults-"))
    root.chmod(0o755)
    home = root / "home"
    home.mkdir()
    home.chmod(0o777)
    yield root
    for dirpath, dirnames, _filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(root))
    return root


def _tiny_entry(bpe, vocab: int = 4096, width: int = 256) -> Path:
    """A complete dequantised-cache entry for SmolLM2 under $REPRO_CACHE, holding a small random
    Llama (≈ 8 MB of weights: more than the 1 MiB a fingerprint reads) and the Brown BPE."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=width,
        intermediate_size=2 * width,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
    )
    target = model_cache_dir(MODEL)
    target.mkdir(parents=True)
    LlamaForCausalLM(cfg).save_pretrained(target)
    bpe.save_pretrained(target)
    gguf_cache._write_stamp(target, MODEL)
    return target


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root`: kind, size, mode and mtime — what any write would change."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            st = path.lstat()
            out[str(path.relative_to(root))] = (
                stat.S_IFMT(st.st_mode),
                st.st_size if path.is_file() else 0,
                stat.S_IMODE(st.st_mode),
                st.st_mtime_ns,
            )
    return out


def _deny_writes(root: Path) -> None:
    """Readable by everyone, writable by no one (what a read-only mount of a shared cache is)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o444)
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o555)
    os.chmod(root, 0o555)


def _as_reader(cmd: list[str], cache: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """Run `cmd` with REPRO_CACHE=cache as a process that cannot write there (see module doc)."""
    env = {
        **os.environ,
        "REPRO_CACHE": str(cache),
        "HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if os.geteuid() == 0 and _no_denial() is None:
        cmd = [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=home, stdin=subprocess.DEVNULL)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


# --------------------------------------------------------------------------- an unusable cache path


@pytest.mark.parametrize("where", ["under a file", "a file"])
def test_cache_path_that_cannot_be_a_directory_is_one_reproerror_line(tmp_path, monkeypatch, where):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    root = blocker / "cache" if where == "under a file" else blocker
    monkeypatch.setenv("REPRO_CACHE", str(root))
    for call in (
        lambda: runtime.cache_dir("fixtures"),
        lambda: runtime.cache_dir("models", create=False),
        lambda: resources.fixture_path("brown"),
        lambda: load_pretrained(MODEL),
    ):
        with pytest.raises(ReproError) as err:
            call()
        assert type(err.value) is CacheUnusable  # not MissingFixture: fetching would not help
        msg = _one_line(str(err.value))
        assert f"{blocker} is a file, not a directory" in msg and str(root) in msg
        assert f"set REPRO_CACHE to a writable directory (now REPRO_CACHE={root})" in msg
    assert blocker.read_text() == "x"


def test_repro_fetch_under_a_file_exits_2_with_one_line(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    proc = subprocess.run(
        [str(REPRO), "fetch"],
        env={**os.environ, "REPRO_CACHE": str(blocker / "cache")},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    line = _one_line(proc.stderr)
    assert "Traceback" not in proc.stderr and line.startswith("repro: error: cache directory ")
    assert f"{blocker} is a file" in line and "REPRO_CACHE" in line


def test_unwritable_write_is_one_line_naming_the_path(tmp_path):
    """A write whose directory cannot be made (here: under a file) is CacheUnusable, never an OSError."""
    target = tmp_path / "file" / "sub" / "x.json"
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheUnusable) as err:
        runtime.atomic_write_json(target, {})
    assert _one_line(str(err.value)).startswith(f"cannot write {target} (")
    with pytest.raises(CacheUnusable, match="cannot write .*x.lock"):
        with runtime.file_lock(tmp_path / "file" / "x.lock"):
            pass


# --------------------------------------------------------------------------- a fixture not fetched


def test_missing_fixture_is_missingfixture_naming_the_fetch_command(tmp_cache):
    with pytest.raises(MissingFixture) as err:
        resources.fixture_path("brown")
    assert "run `repro fetch brown` (or `make fixtures`)" in _one_line(str(err.value))
    with pytest.raises(MissingFixture, match=r"run `repro fetch gemma3-270m` \(or `make fixtures`\)"):
        load_pretrained("gemma3-270m")  # no dequantised cache either: the build needs the GGUF
    with pytest.raises(MissingFixture, match=r"run `repro fetch brown`"):
        data.brown_documents()  # the corpus loader reads the fixture
    assert not model_cache_dir("gemma3-270m").exists()


# --------------------------------------------------------------------------- read-only and shared caches


def _populate(cache: Path, real_brown: Path, bpe, *, copied: bool) -> None:
    """The Brown fixture with its stamp, and a complete SmolLM2 cache entry. `copied`: as a plain
    copy leaves them — new mtimes, so each stamp no longer vouches for its files (re-hash)."""
    copy = shutil.copyfile if copied else shutil.copy2
    shutil.copytree(real_brown, cache / "fixtures" / "brown", copy_function=copy)
    (cache / "fixtures" / ".stamps").mkdir()
    shutil.copy2(real_brown.parent / ".stamps" / "brown.json", cache / "fixtures" / ".stamps" / "brown.json")
    entry = _tiny_entry(bpe)
    if copied:
        later = entry.stat().st_mtime_ns + 10**9
        for path in entry.iterdir():
            os.utime(path, ns=(later, later))


READER = """
import json
from repro.ground import resources
from repro.core.models.pretrained import load_pretrained
out = {"brown": str(resources.fixture_path("brown")), "fetch": resources.fetch_status("brown").status}
model, tok = load_pretrained("smollm2-135m")
out["width"], out["ids"] = model.config.hidden_size, tok("The jury said", add_special_tokens=False)["input_ids"]
print(json.dumps(out))
"""


@pytest.mark.parametrize("copied", [False, True], ids=["as-built", "copied"])
def test_read_only_cache_serves_fixtures_and_models_without_writing(shared_tmp, monkeypatch, real_brown, bpe, copied):
    """A populated cache that cannot be written (a shared, pre-fetched one) verifies its fixture
    and loads its model; nothing is created or changed in it — no lock file, no stamp refresh."""
    if copied:
        _needs_denial("; a writable copied cache would rightly refresh its stamps")
    cache = shared_tmp / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(cache))
    _populate(cache, real_brown, bpe, copied=copied)
    _deny_writes(cache)
    before = _snapshot(cache)
    proc = _as_reader(_python(READER), cache, shared_tmp / "home")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["brown"] == str(cache / "fixtures" / "brown") and out["fetch"] == "cached"
    assert out["width"] == 256 and out["ids"] == bpe("The jury said", add_special_tokens=False)["input_ids"]
    fetched = _as_reader([str(REPRO), "fetch", "brown"], cache, shared_tmp / "home")
    assert fetched.returncode == 0 and fetched.stdout.split()[:2] == ["brown", "cached"], fetched.stderr
    assert _snapshot(cache) == before, "reading a read-only cache wrote to it"


def test_fetch_into_a_read_only_cache_is_one_line(shared_tmp, real_brown, bpe):
    """A write that is needed (fetching a fixture the cache lacks) and cannot happen: exit 2, one
    line naming the path and REPRO_CACHE, no traceback, nothing downloaded."""
    _needs_denial("; a writable cache would download the fixture")
    cache = shared_tmp / "cache"
    (cache / "fixtures").mkdir(parents=True)
    _deny_writes(cache)
    proc = _as_reader([str(REPRO), "fetch", "gemma3-270m"], cache, shared_tmp / "home")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = _one_line(proc.stderr)
    assert line.startswith(f"repro: error: cannot write {cache / 'fixtures'}") and "REPRO_CACHE" in line


# --------------------------------------------------------------------------- corruption of a cached model


def _flip(path: Path, start: int, length: int, *, keep_mtime: bool) -> None:
    """Invert `length` bytes at `start` in place (same size); `keep_mtime`: as a copy with
    preserved times, or damage that bypassed the filesystem, would leave it."""
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(start)
        block = fh.read(length)
        fh.seek(start)
        fh.write(bytes(b ^ 0xFF for b in block))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


def _still_loads(path: Path) -> None:
    """The control: the damaged file is a well-formed safetensors file — transformers would load
    it and hand the claim wrong weights (the issue's "the negative control passes")."""
    from safetensors.torch import load_file

    assert load_file(str(path))


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["written", "mtime-kept"])
def test_same_size_corruption_of_a_cached_model_is_detected(tmp_cache, bpe, keep_mtime):
    weights = _tiny_entry(bpe) / "model.safetensors"
    assert check_model_cache(MODEL).state == "ok"
    size = weights.stat().st_size
    _flip(weights, size // 2, size - size // 2, keep_mtime=keep_mtime)  # the second half of the weights
    _still_loads(weights)
    assert check_model_cache(MODEL) == gguf_cache.CacheCheck("corrupt", "model.safetensors")


def test_fetch_verify_finds_zeroed_mebibytes_the_sampled_check_misses(tmp_cache, bpe):
    """The issue's case: 4 MiB of zeros between two fingerprint blocks of a cached model, its size
    kept and its mtime restored. A load's sampled check passes it; `repro fetch --verify` hashes
    every file in full and names it (one BAD line, exit 1). Before the damage, --verify exits 0."""
    target = _tiny_entry(bpe, vocab=40960)  # ≈ 84 MB of weights: blocks ≈ 5.6 MB apart
    weights = target / "model.safetensors"
    spacing = (weights.stat().st_size - FINGERPRINT_BLOCK) // (FINGERPRINT_BLOCKS - 1)
    start, length = spacing + FINGERPRINT_BLOCK + 4096, 4 << 20  # after block 1, before block 2
    assert start + length < 2 * spacing
    env = {**os.environ, "REPRO_CACHE": str(tmp_cache)}

    def verify() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(REPRO), "fetch", "--verify"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )

    clean = verify()
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert f"verified  model cache {MODEL} at {target}" in clean.stdout.splitlines()
    st = weights.stat()
    with open(weights, "r+b") as fh:
        fh.seek(start)
        fh.write(bytes(length))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert weights.stat().st_size == st.st_size
    _still_loads(weights)
    assert check_model_cache(MODEL).state == "ok"  # the sampled fingerprint misses it
    bad = verify()
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert [ln for ln in bad.stdout.splitlines() if ln.startswith("BAD")] == [
        f"BAD       model cache {MODEL} at {target}: sha256 mismatch in model.safetensors; "
        f"rm -rf {target} (the next load rebuilds it)"
    ]
    assert bad.stdout.splitlines()[-1] == "1 bad entry"


def test_corruption_between_fingerprint_blocks_is_found_by_the_full_hash(tmp_cache, bpe):
    """What the cheap check can miss, stated: a few bytes between two sampled blocks, the mtime
    restored. A changed mtime or `full=True` hashes everything and finds it."""
    weights = _tiny_entry(bpe) / "model.safetensors"
    spacing = (weights.stat().st_size - FINGERPRINT_BLOCK) // (FINGERPRINT_BLOCKS - 1)
    start = spacing + FINGERPRINT_BLOCK + 100  # after block 1, before block 2
    assert start + 1000 < 2 * spacing
    _flip(weights, start, 1000, keep_mtime=True)
    _still_loads(weights)
    assert check_model_cache(MODEL).state == "ok"
    assert check_model_cache(MODEL, full=True) == gguf_cache.CacheCheck("corrupt", "model.safetensors")
    with pytest.raises(MissingFixture):  # full_check: the rebuild starts (and needs the GGUF, absent here)
        ensure_model_cache(MODEL, full_check=True)
    os.utime(weights)  # a write that changed the mtime: found on the ordinary load
    assert check_model_cache(MODEL).state == "corrupt"


def test_corrupt_model_in_a_writable_cache_is_rebuilt_not_served(tmp_cache, bpe):
    """With no GGUF to rebuild from, the load stops at the fetch instruction: the corrupt
    weights are never handed on."""
    weights = _tiny_entry(bpe) / "model.safetensors"
    _flip(weights, weights.stat().st_size // 2, 4096 * 64, keep_mtime=False)
    with pytest.raises(MissingFixture, match=f"run `repro fetch {MODEL}`"):
        load_pretrained(MODEL)


@pytest.fixture(scope="module")
def real_gguf_dir() -> Path:
    """The real SmolLM2 fixture's directory in the user's cache (fetched: a cache hit after `make fixtures`)."""
    return resources.fetch(MODEL).parent


@pytest.mark.pretrained
@pytest.mark.slow
def test_corrupt_model_is_rebuilt_from_the_real_gguf(real_gguf_dir, tmp_cache, bpe):
    """End to end (≈ 30 s): the corrupt entry is replaced by the real SmolLM2 dequantised from its
    fetched GGUF, with a fresh stamp that carries content hashes and weights others can read."""
    weights = _tiny_entry(bpe) / "model.safetensors"
    _flip(weights, weights.stat().st_size // 2, 4096, keep_mtime=False)
    (tmp_cache / "fixtures").mkdir(parents=True)
    (tmp_cache / "fixtures" / MODEL).symlink_to(real_gguf_dir, target_is_directory=True)
    model, _ = load_pretrained(MODEL, tokenizer=False)
    assert model.config.num_hidden_layers == embedded.EMBEDDED_MODELS[MODEL].n_layers
    assert check_model_cache(MODEL, full=True).state == "ok"
    stamp = json.loads((model_cache_dir(MODEL) / "repro-cache.json").read_text())
    assert stamp["sha256"]["model.safetensors"] == sha256_file(weights)
    assert stat.S_IMODE(weights.stat().st_mode) & 0o044  # a shared cache's other users can read it


@pytest.mark.pretrained
@pytest.mark.slow
def test_a_stopped_background_build_leaves_no_temporary(real_gguf_dir, tmp_cache):
    """The run stops a background build it no longer needs (SIGTERM, `ClaimsSession`'s unconfigure):
    the build's temporary directory goes with it, instead of an empty `.smollm2-135m-….tmp/` left
    in models/ each time."""
    (tmp_cache / "fixtures").mkdir(parents=True)
    (tmp_cache / "fixtures" / MODEL).symlink_to(real_gguf_dir, target_is_directory=True)
    proc = gguf_cache.prepare_in_background([MODEL])
    assert proc is not None
    models = tmp_cache / "models"
    deadline = time.monotonic() + 180
    while not (models.is_dir() and list(models.glob(f".{model_cache_dir(MODEL).name}.*.tmp"))):
        assert proc.poll() is None and time.monotonic() < deadline, "the build ended before its temporary appeared"
        time.sleep(0.05)
    proc.terminate()
    assert proc.wait(timeout=120) != 0
    assert [p.name for p in models.iterdir() if p.name.endswith(".tmp")] == []
    assert not model_cache_dir(MODEL).exists()


def test_corrupt_model_in_a_read_only_cache_is_one_error_line(shared_tmp, monkeypatch, bpe):
    _needs_denial("; a writable cache is rebuilt (tested above)")
    cache = shared_tmp / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(cache))
    target = _tiny_entry(bpe)
    weights = target / "model.safetensors"
    _flip(weights, weights.stat().st_size // 2, 4096 * 64, keep_mtime=False)
    _deny_writes(cache)
    before = _snapshot(cache)
    code = (
        "from repro.core.models.pretrained import load_pretrained\n"
        "from repro.ground.runtime import ReproError\n"
        "try:\n    load_pretrained('smollm2-135m')\n"
        "except ReproError as e:\n    print(type(e).__name__, e, sep=': ')\n"
    )
    proc = _as_reader(_python(code), cache, shared_tmp / "home")
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = _one_line(proc.stdout)
    assert line.startswith(  # CacheUnusable: the claims plugin skips the claim with this line
        f"CacheUnusable: cached model {MODEL} at {target} is corrupt (sha256 mismatch in "
        "model.safetensors); the cache is not writable"
    )
    assert f"rm -rf {target}" in line and "REPRO_CACHE" in line
    assert _snapshot(cache) == before


READS_THE_MODEL = """
import pytest

@pytest.mark.claim("SK-4")
def test_reads_the_model(claim, pretrained):
    pretrained("smollm2-135m")
    claim.check("v", 1.0, 1.0, compare="abs", why="exact")
"""


def test_a_model_a_read_only_cache_cannot_rebuild_skips_the_claim(shared_tmp, monkeypatch, bpe):
    """A truncated dequantised model in a read-only cache: the claims run names it in one line and
    the claim reads "skipped" with that line as its reason (a missing resource, as an empty cache
    is), not "failed"; the cache is left as it was."""
    _needs_denial("; a writable cache is rebuilt")
    cache = shared_tmp / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(cache))
    target = _tiny_entry(bpe)
    weights = target / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)
    _deny_writes(cache)
    before = _snapshot(cache)
    proj = shared_tmp / "home" / "proj"
    (proj / "claims").mkdir(parents=True)
    (proj / "conftest.py").write_text('pytest_plugins = ("repro.harness.plugin",)\n')
    (proj / "claims" / "test_model.py").write_text(READS_THE_MODEL)
    for path in (proj, proj / "claims"):
        path.chmod(0o777)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--baseline", "off", "claims"]
    proc = _as_reader(cmd, cache, proj)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    claims = json.loads((proj / "artifacts" / "claims.json").read_text())["claims"]
    sk4 = next(c for c in claims if c["id"] == "SK-4")
    assert sk4["verdict"] == "skipped" and sk4["tests"][0]["outcome"] == "skipped"
    assert sk4["reasons"][0].startswith(f"embedded model {MODEL} has no complete dequantised cache at {target}")
    assert "REPRO_CACHE" in sk4["reasons"][0]
    assert _snapshot(cache) == before


def test_stamp_without_hashes_gets_them_where_writable(tmp_cache, bpe):
    """A cache written before content hashes: served on its sizes, and stamped with the hashes of
    its files as they are (from then on checked like any other)."""
    target = _tiny_entry(bpe)
    stamp_path = target / "repro-cache.json"
    stamp = json.loads(stamp_path.read_text())
    old = {k: stamp[k] for k in ("format", "model", "gguf_sha256", "files")}
    stamp_path.write_text(json.dumps(old))
    assert check_model_cache(MODEL).state == "unhashed"
    assert ensure_model_cache(MODEL) == target
    new = json.loads(stamp_path.read_text())
    assert new["sha256"] == stamp["sha256"] and new["fingerprint"] == stamp["fingerprint"]
    assert check_model_cache(MODEL, full=True).state == "ok"
