"""Pretrained models: the embedded GGUF models, local directories, and Hugging Face hub ids.

DESIGN "Real components (no mocks)": two small real models ship as pinned, checksummed GGUF
fixtures (repro/ground/resources.py). transformers dequantises a GGUF to float32 on load, which takes
~12 s (SmolLM2) and ~27 s (Gemma) on 2 cores with the metadata parsed once (`one_gguf_parse`),
so the first load saves the dequantised model and tokenizer (safetensors) under
cache_dir("models", "<name>-<gguf sha[:12]>") and every later load reads that in seconds. The
cache directory is written to a temporary and renamed into place, and carries a stamp with its
files' sizes, mtimes, sha256s and fingerprints (`file_fingerprint`: 16 × 64 KiB sampled blocks).
Every load checks sizes and fingerprints, and the full sha256s where a file's mtime changed (or on
request, `check_model_cache(name, full=True)`): a truncated, partial or corrupt cache — same-size
damage included — is rebuilt, never loaded; where the cache is read-only, it is one ReproError
line naming it. An intact entry is read without any write, so a read-only or shared cache works
(DESIGN "Bad input, faults").

Tokenizers, as loaded (NOTES "Embedded pretrained models"):
- smollm2-135m: adds no special token by default; its bos_token is <|im_start|> (id 1) and its
  eos_token <|im_end|> (id 2), as in the upstream Instruct tokenizer.
- gemma3-270m: prepends <bos> (id 2) by default; eos is <eos> (id 1).
`repro.core.data.token_ids` adds <bos>/<eos> itself (add_special_tokens=False), so both behave alike
there; code that calls a tokenizer directly must mind the difference.

Checkpoints written by `repro.core.train.train` (a directory with `model.safetensors` and
`meta.json`, no config.json, no tokenizer) load too: the model is rebuilt from the class and
config recorded in meta.json ("description" → "model"; only `transformers.*` and
`repro.core.models.*` classes) and its weights read with `repro.core.train.load_checkpoint`; the
tokenizer is None. A path to a `.safetensors` file inside such a directory loads that file
(`model.safetensors`, or a `step_*.safetensors` snapshot). `load_model_any` loads any of these
without a tokenizer (what `repro seedprint` needs: model-only save_pretrained directories work).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from repro.ground import resources
from repro.ground.runtime import (
    DEVICES,
    CacheUnusable,
    ReproError,
    atomic_path,
    atomic_write_json,
    cache_dir,
    file_fingerprint,
    file_lock,
    read_json_or_none,
    remove_stale_temporaries,
    resolve_device,
    sha256_file,
)

if TYPE_CHECKING:
    import subprocess

    from torch import nn
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

_STAMP = "repro-cache.json"
_CACHE_FORMAT = 1  # bump to invalidate every dequantised-model cache


@dataclass(frozen=True)
class EmbeddedModel:
    """Facts about an embedded model (checked against the loaded config by the tests)."""

    name: str
    fixture: str  # key of repro.ground.resources.EMBEDDED_FIXTURES
    gguf_file: str
    family: str  # what model_family() returns for it
    n_layers: int
    d_model: int
    n_heads: int
    vocab_size: int
    tokenizer_adds_bos: bool
    upstream: str  # the original (unquantised) weights on the hub, for reference


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "smollm2-135m": EmbeddedModel(
        name="smollm2-135m",
        fixture="smollm2-135m",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        family="llama",
        n_layers=30,
        d_model=576,
        n_heads=9,
        vocab_size=49152,
        tokenizer_adds_bos=False,
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "gemma3-270m": EmbeddedModel(
        name="gemma3-270m",
        fixture="gemma3-270m",
        gguf_file="gemma-3-270m-q4_k_m.gguf",
        family="gemma",
        n_layers=18,
        d_model=640,
        n_heads=4,
        vocab_size=262144,
        tokenizer_adds_bos=True,
        upstream="google/gemma-3-270m",
    ),
}

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def _choices() -> str:
    return ", ".join(EMBEDDED_MODELS)


def model_family(model: Any) -> str:
    """ "llama", "gemma", "gpt2", "gpt_neox", ...: the architecture family from config.model_type
    (gemma, gemma2, gemma3, gemma3_text all read "gemma"), so claims can branch on the family."""
    model_type = str(getattr(getattr(model, "config", model), "model_type", "")).lower()
    if model_type.startswith("gemma"):
        return "gemma"
    return model_type or "unknown"


# --------------------------------------------------------------------------- dequantised cache


def model_cache_dir(name: str) -> Path:
    """Where the dequantised copy of embedded model `name` lives (it may not exist yet; nothing
    is created: reading a read-only cache writes nothing)."""
    spec = EMBEDDED_MODELS[name]
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
        and stamp.get("gguf_sha256") == resources.EMBEDDED_FIXTURES[EMBEDDED_MODELS[name].fixture].sha256
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


def _cache_valid(directory: Path, name: str) -> bool:
    """An entry that may be served as it is (intact, or from before content hashes)."""
    return _check(directory, name).state in ("ok", "unhashed")


@contextlib.contextmanager
def one_gguf_parse():
    """Within this block every `gguf.GGUFReader(path)` of one path returns one reader.

    transformers parses a GGUF's metadata afresh for each of the tokenizer, the config and the
    weights (`load_gguf_checkpoint` builds a new `GGUFReader` each time: four parses per model),
    and gguf-py's parse is a Python loop over every vocabulary entry: ≈ 12 s per parse of
    Gemma's 262k tokens on the 2-core reference EPYC. The reader only reads (a read-only memmap;
    dequantising makes new arrays), so sharing it changes nothing loaded (weights, config and
    vocabulary compared equal on both embedded models, 2026-11-26). Measured on that CPU, the
    one-time dequantisation: Gemma 50 → 27 s, SmolLM2 16 → 12 s."""
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

    spec = EMBEDDED_MODELS[name]
    gguf = resources.fixture_path(spec.fixture)  # raises on a missing fixture or a checksum mismatch
    log.warning("dequantising %s from %s (one-time, cached afterwards)", name, gguf)
    try:
        with one_gguf_parse():
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
        "gguf_sha256": resources.EMBEDDED_FIXTURES[EMBEDDED_MODELS[name].fixture].sha256,
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


def _cannot_build(name: str, target: Path, check: CacheCheck, exc: CacheUnusable) -> ReproError:
    """One line for an entry that needs a write the cache cannot take."""
    todo = (
        f"the cache is not writable ({exc.reason}): delete it (rm -rf {target}) and load the model once "
        f"with a writable cache, or set REPRO_CACHE to a writable directory"
    )
    if check.state == "corrupt":
        return ReproError(f"cached model {name} at {target} is corrupt (sha256 mismatch in {check.file}); {todo}")
    if check.state == "unloadable":
        return ReproError(f"cached model {name} at {target} cannot be loaded ({check.file}); {todo}")
    return ReproError(
        f"embedded model {name} has no complete dequantised cache at {target} and the cache is not "
        f"writable ({exc.reason}) to build one: load it once with a writable cache (it needs the fetched "
        f"fixture: `repro fetch {EMBEDDED_MODELS[name].fixture}`), or set REPRO_CACHE to a writable "
        "directory"
    )


def _build(name: str, target: Path, check: CacheCheck, full: bool = False) -> Path:
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
        return _build(name, target, CacheCheck("unloadable", "a rebuild was asked for"))
    check = _check(target, name, full_check)
    if check.state in ("ok", "unhashed"):
        if check.restamp:
            _restamp(target, name, check)
        return target
    return _build(name, target, check, full_check)


def prepare_in_background(names) -> "subprocess.Popen | None":
    """Build the dequantised caches of the embedded models among `names` that lack one, in a
    background process, one after the other in the order given; None when none is missing.

    A cold claims run loads its first pretrained model minutes in (after the random-init probes),
    and the one-time dequantisation is mostly single-threaded Python (GGUF parse, tokenizer
    conversion: ≈ 40 s for both models, one core idle meanwhile; 2026-11-27, 2-core EPYC). Started
    at the run's start, it overlaps with the probes' compute. `ensure_model_cache`'s lock makes the
    two sides agree: a test that needs a model first waits for the build in progress (or builds it
    itself, and the background one then finds it done). The process says nothing and its failures
    are left to the foreground, whose own `ensure_model_cache` gives the one clear message."""
    import subprocess
    import sys

    todo = [n for n in names if n in EMBEDDED_MODELS and not _cache_valid(model_cache_dir(n), n)]
    if not todo:
        return None
    code = (
        "import sys\nfrom repro.core.models.pretrained import ensure_model_cache\n"
        "for name in sys.argv[1:]:\n    ensure_model_cache(name)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, *todo],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


# --------------------------------------------------------------------------- loading


def _device(device: str | torch.device) -> torch.device:
    if isinstance(device, str) and device in DEVICES:
        return resolve_device(device)
    return torch.device(device)


def _from_dir(path: Path | str, dev: torch.device, dtype: torch.dtype, attn: str, *, tokenizer: bool = True, **kw: Any):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation=attn, **kw)
    tok = AutoTokenizer.from_pretrained(path, **kw) if tokenizer else None
    return model.to(dev).eval(), tok


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _load_embedded(name: str, dev: torch.device, dtype: torch.dtype, attn: str, tokenizer: bool = True):
    directory = ensure_model_cache(name)
    try:
        return _from_dir(directory, dev, dtype, attn, tokenizer=tokenizer)
    except ReproError:
        raise
    except Exception as exc:  # e.g. a file transformers cannot read although its hashes match the stamp's
        why = _first_line(exc)
        log.warning("loading cached %s failed (%s); rebuilding the cache", name, why)
    return _from_dir(_build(name, directory, CacheCheck("unloadable", why)), dev, dtype, attn, tokenizer=tokenizer)


def _offline_message(name: str) -> str:
    return (
        f"cannot load hub model {name!r}: the Hugging Face hub is unreachable (offline). "
        f"Use an embedded model ({_choices()}) or a local path."
    )


def _load_hub(name: str, dev: torch.device, dtype: torch.dtype, attn: str, tokenizer: bool = True):
    if not resources.hub_reachable():
        try:  # a model already in the local HF cache still works offline
            return _from_dir(name, dev, dtype, attn, tokenizer=tokenizer, local_files_only=True)
        except (OSError, ValueError):
            raise ReproError(_offline_message(name)) from None
    try:
        return _from_dir(name, dev, dtype, attn, tokenizer=tokenizer)
    except (OSError, ValueError) as exc:  # transformers reports unknown/gated repos as OSError
        raise ReproError(
            f"cannot load hub model {name!r}: {_first_line(exc)} Check the id (and `hf auth login` for "
            f"gated models), or use an embedded model ({_choices()}) or a local path."
        ) from None


# --------------------------------------------------------------------------- local directories and checkpoints

_TRAIN_MODEL_FILE = "model.safetensors"  # repro.core.train.MODEL_FILE / META_FILE (train.py imports lazily here)
_TRAIN_META_FILE = "meta.json"
_HF_CONFIG_FILE = "config.json"
# model classes a checkpoint's meta.json may name (anything else is refused: importing an
# arbitrary recorded module path would run arbitrary code)
_ALLOWED_CLASS_PREFIXES = ("transformers.", "repro.core.models.")
# repro.core.models classes and the dataclass their recorded config rebuilds
_REPRO_CONFIG_CLASSES = {"repro.core.models.tiny.TinyDecoder": "repro.core.models.tiny.TinyConfig"}
# checkpoints written before the layout move (issue 20) name repro.models.*: the same classes
_LEGACY_PREFIXES = {"repro.models.": "repro.core.models."}


def current_class_name(qualname: Any) -> Any:
    """A recorded model class name as it is imported today (old checkpoints stay loadable)."""
    if isinstance(qualname, str):
        for old, new in _LEGACY_PREFIXES.items():
            if qualname.startswith(old):
                return new + qualname[len(old) :]
    return qualname


def _neither_message(path: Path) -> str:
    return (
        f"cannot load a model from directory {path}: it holds neither {_HF_CONFIG_FILE} (a save_pretrained() "
        f"model and tokenizer) nor {_TRAIN_META_FILE} + {_TRAIN_MODEL_FILE} (a checkpoint written by "
        "repro.core.train.train); pass one of those, an embedded model or a hub id"
    )


def _load_local_hf(path: Path, dev: torch.device, dtype: torch.dtype, attn: str, tokenizer: bool):
    """A save_pretrained() directory: any failure inside transformers/safetensors (a missing or
    truncated weights file, a config it cannot read) is one ReproError line."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    wanted = "model (config.json, weights) and tokenizer" if tokenizer else "model (config.json, weights)"
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation=attn)
    except Exception as exc:  # OSError, ValueError, SafetensorError, RuntimeError (shape mismatch), ...
        raise ReproError(
            f"cannot load a model from directory {path}: {_first_line(exc)} It must hold a save_pretrained() {wanted}."
        ) from None
    tok = None
    if tokenizer:
        try:
            tok = AutoTokenizer.from_pretrained(path)
        except Exception as exc:
            raise ReproError(
                f"cannot load a model from directory {path}: it holds a model but no loadable tokenizer "
                f"({_first_line(exc)}). It must hold a save_pretrained() {wanted}."
            ) from None
    return model.to(dev).eval(), tok


def _load_gguf_file(path: Path, dev: torch.device, dtype: torch.dtype, attn: str, tokenizer: bool):
    """A local GGUF file (llama.cpp's format), dequantised by transformers on every load (the
    embedded models are dequantised once and cached instead; a user's own file is not). A file
    transformers cannot read (truncated, an architecture it does not map) is one ReproError line."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with one_gguf_parse():
            model = AutoModelForCausalLM.from_pretrained(
                path.parent, gguf_file=path.name, dtype=dtype, attn_implementation=attn
            )
            tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name) if tokenizer else None
    except Exception as exc:  # ValueError (unsupported architecture), OSError, gguf's own errors, ...
        raise ReproError(f"cannot load a model from GGUF file {path}: {_first_line(exc)}") from None
    return model.to(dtype=dtype, device=dev).eval(), tok


def _import_model_class(qualname: Any, meta_path: Path) -> type:
    qualname = current_class_name(qualname)
    if not isinstance(qualname, str) or not qualname.startswith(_ALLOWED_CLASS_PREFIXES):
        raise ReproError(
            f"{meta_path} names model class {qualname!r}; only transformers.* and repro.core.models.* "
            "classes are rebuilt from a checkpoint"
        )
    module_name, _, attr = qualname.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        import transformers

        raise ReproError(
            f"unknown model class {qualname!r} in {meta_path}: it cannot be imported here "
            f"(transformers {transformers.__version__}); was the checkpoint written by another "
            "version of repro or transformers?"
        ) from None
    from torch import nn

    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ReproError(f"{meta_path} names {qualname!r}, which is not a torch model class")
    return cls


def _rebuild_model(description: dict[str, Any], meta_path: Path, attn: str) -> "nn.Module":
    """The model of a repro.core.train checkpoint, rebuilt from meta.json's description.model (weights
    not loaded yet: whatever the construction leaves; they are all overwritten, strictly)."""
    qualname = current_class_name(description.get("class"))
    cls = _import_model_class(qualname, meta_path)
    conf = description.get("config")
    if not isinstance(conf, dict):
        raise ReproError(
            f"{meta_path} records no config dict for {qualname} (got {type(conf).__name__}); "
            "the model cannot be rebuilt from it"
        )
    if qualname.startswith("transformers."):
        try:
            config_class = getattr(cls, "config_class", None)
            if config_class is None:
                from transformers import AutoConfig

                rest = {k: v for k, v in conf.items() if k != "model_type"}
                config = AutoConfig.for_model(conf["model_type"], **rest)
            else:
                config = config_class.from_dict(dict(conf))
            config._attn_implementation = attn
            try:
                from transformers.initialization import no_init_weights
            except ImportError:  # older/newer layout: pay for HF's init (overwritten below)
                model = cls(config)
            else:
                with no_init_weights():  # also skips tying: tie below, before loading
                    model = cls(config)
            model.tie_weights()
        except ReproError:
            raise
        except Exception as exc:
            raise ReproError(f"cannot rebuild {qualname} from the config in {meta_path}: {_first_line(exc)}") from None
        return model
    config_path = _REPRO_CONFIG_CLASSES.get(qualname)
    if config_path is None:
        raise ReproError(
            f"unknown model class {qualname!r} in {meta_path}: the repro.core.models classes a checkpoint "
            f"can be rebuilt as are {', '.join(_REPRO_CONFIG_CLASSES)}"
        )
    module_name, _, attr = config_path.rpartition(".")
    config_cls = getattr(importlib.import_module(module_name), attr)
    try:
        config = config_cls(**conf)
    except TypeError as exc:  # unknown / missing fields (TinyConfigError is a ReproError already)
        raise ReproError(f"cannot rebuild {qualname} from the config in {meta_path}: {_first_line(exc)}") from None
    return cls(config)


def _is_train_checkpoint(directory: Path) -> bool:
    return not (directory / _HF_CONFIG_FILE).exists() and (
        (directory / _TRAIN_META_FILE).exists() or (directory / _TRAIN_MODEL_FILE).exists()
    )


def _load_train_checkpoint(directory: Path, weights: Path, dev: torch.device, dtype: torch.dtype, attn: str):
    """(model, None) from a directory written by repro.core.train.train (see the module docstring)."""
    from repro.core import train

    meta_path = directory / _TRAIN_META_FILE
    if not meta_path.is_file():
        raise ReproError(
            f"cannot load a model from directory {directory}: it has {_TRAIN_MODEL_FILE} but no "
            f"{_TRAIN_META_FILE} (a repro.core.train checkpoint needs both; a save_pretrained() directory "
            f"needs {_HF_CONFIG_FILE})"
        )
    meta = read_json_or_none(meta_path)
    if not isinstance(meta, dict):
        raise ReproError(
            f"{meta_path} is unreadable (truncated or not JSON); delete the checkpoint directory and train it again"
        )
    description = meta.get("description")
    description = description.get("model") if isinstance(description, dict) else None
    if not isinstance(description, dict) or "class" not in description:
        raise ReproError(
            f"{meta_path} does not describe a model (no description.model.class): it was not "
            "written by repro.core.train.train"
        )
    if not weights.is_file():
        raise ReproError(
            f"cannot load a model from directory {directory}: it has {_TRAIN_META_FILE} but no "
            f"{weights.name}; the checkpoint is incomplete (train it again)"
        )
    model = _rebuild_model(description, meta_path, attn)
    try:
        from safetensors import safe_open

        with safe_open(str(weights), framework="pt"):
            pass
    except Exception as exc:  # SafetensorError: truncated, garbage header, ...
        raise ReproError(
            f"{weights} is not a readable safetensors file ({_first_line(exc)}): truncated or "
            "corrupt; delete the checkpoint directory and train it again"
        ) from None
    try:
        if weights.name == _TRAIN_MODEL_FILE:
            train.load_checkpoint(model, directory)
        else:  # a snapshot: tied duplicates were written once
            train.load_snapshot(model, weights)
    except ReproError:
        raise
    except Exception as exc:  # strict load: missing / unexpected keys, shape mismatches
        raise ReproError(
            f"the weights in {weights} do not fit the {description['class']} described in "
            f"{meta_path}: {_first_line(exc)}"
        ) from None
    if dtype != torch.float32:
        # parameters only, as repro.core.models.hf.build_model: float32 buffers (RoPE) stay float32
        for param in model.parameters():
            param.data = param.data.to(dtype)
    return model.to(dev).eval(), None


def _load_path(path: Path, dev: torch.device, dtype: torch.dtype, attn: str, tokenizer: bool):
    if path.is_dir():
        if (path / _HF_CONFIG_FILE).exists():
            return _load_local_hf(path, dev, dtype, attn, tokenizer)
        if _is_train_checkpoint(path):
            return _load_train_checkpoint(path, path / _TRAIN_MODEL_FILE, dev, dtype, attn)
        raise ReproError(_neither_message(path))
    # a file: the weights inside a repro.core.train checkpoint (or a save_pretrained directory)
    parent = path.parent
    if path.suffix == ".safetensors" and _is_train_checkpoint(parent):
        return _load_train_checkpoint(parent, path, dev, dtype, attn)
    if path.name == _TRAIN_MODEL_FILE and (parent / _HF_CONFIG_FILE).exists():
        return _load_local_hf(parent, dev, dtype, attn, tokenizer)
    raise ReproError(
        f"cannot load a model from file {path}: pass a model directory (save_pretrained() or a "
        f"repro.core.train checkpoint), or a .safetensors file inside a repro.core.train checkpoint "
        f"directory (next to its {_TRAIN_META_FILE})"
    )


def load_pretrained(
    name_or_path: str,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "eager",
    tokenizer: bool = True,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase | None]:
    """(model in eval mode, tokenizer) for an embedded name, a local directory, or a hub id.

    Local paths: a save_pretrained() directory (model and tokenizer), a checkpoint written by
    `repro.core.train.train` — its directory or a .safetensors file in it — whose tokenizer is None
    (it has none; see the module docstring), or a .gguf file (dequantised on load). `tokenizer=False` skips the tokenizer (returns
    None), so a model-only save_pretrained() directory loads too.

    attn_implementation defaults to "eager" because claims read attention weights, which only
    the eager path returns (DESIGN "Facts that save time"). Embedded models are verified and
    dequantised once (see the module docstring); their fixture must have been fetched
    (`repro fetch NAME`). Hub ids need network, or a copy in the local HF cache."""
    dev = _device(device)
    if not name_or_path.strip():
        raise ReproError(
            f"no model given: pass an embedded model ({_choices()}), a local model directory or a Hugging Face hub id"
        )
    if name_or_path in EMBEDDED_MODELS:
        return _load_embedded(name_or_path, dev, dtype, attn_implementation, tokenizer)
    path = Path(name_or_path).expanduser()
    if path.is_dir() or (path.is_file() and path.suffix == ".safetensors"):
        return _load_path(path, dev, dtype, attn_implementation, tokenizer)
    if path.is_file() and path.suffix == ".gguf":
        return _load_gguf_file(path, dev, dtype, attn_implementation, tokenizer)
    looks_like_path = name_or_path.startswith(("/", ".", "~")) or path.exists()
    if looks_like_path or not _HUB_ID.match(name_or_path):
        raise ReproError(
            f"unknown model {name_or_path!r}: not an embedded model ({_choices()}), not a local "
            "model directory, and not a Hugging Face hub id (owner/name); pass one of those."
        )
    return _load_hub(name_or_path, dev, dtype, attn_implementation, tokenizer)


def model_spec_problem(spec: str) -> str | None:
    """Why `spec` cannot name a model, in one line, without loading anything (None: it may —
    an embedded name, a hub id of the form owner/name, or a local path of a kind
    `load_pretrained` reads). The `--model` option and `repro seedprint` check with it before any
    model is loaded, so a wrong path is an error at once, never a skipped claim."""
    if not spec or not spec.strip():
        return f"no model given: pass an embedded model ({_choices()}), a local model directory or a hub id"
    if spec in EMBEDDED_MODELS:
        return None
    path = Path(spec).expanduser()
    if path.is_dir():
        if (path / _HF_CONFIG_FILE).exists() or _is_train_checkpoint(path):
            return None
        return _neither_message(path)
    if path.is_file():
        if path.suffix == ".gguf":
            return None
        if path.suffix == ".safetensors" and (
            _is_train_checkpoint(path.parent) or (path.parent / _HF_CONFIG_FILE).exists()
        ):
            return None
        return (
            f"cannot load a model from file {path}: pass a model directory (save_pretrained() or a "
            "repro.core.train checkpoint), a .safetensors file inside a checkpoint directory, or a .gguf file"
        )
    if spec.startswith(("/", ".", "~")) or not _HUB_ID.match(spec) or "/" not in spec:
        return (
            f"unknown model {spec!r}: not an embedded model ({_choices()}), no such local path, and not a "
            "Hugging Face hub id (owner/name)"
        )
    return None


def load_model_any(
    spec: str,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "eager",
) -> "nn.Module":
    """The model alone (eval mode, on `device`, parameters in `dtype`) for anything
    `load_pretrained` accepts: an embedded name, a hub id, a save_pretrained() directory (with or
    without a tokenizer), a repro.core.train checkpoint directory or a .safetensors file in one, a
    .gguf file."""
    model, _ = load_pretrained(
        spec, device=device, dtype=dtype, attn_implementation=attn_implementation, tokenizer=False
    )
    return model
