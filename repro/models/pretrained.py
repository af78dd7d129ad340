"""Pretrained models: the embedded GGUF models, local directories, and Hugging Face hub ids.

DESIGN "Real components (no mocks)": two small real models ship as pinned, checksummed GGUF
fixtures (repro/fixtures.py). transformers dequantises a GGUF to float32 on load, which takes
~25 s (SmolLM2) and ~1-2 min (Gemma) on 2 cores, so the first load saves the dequantised model
and tokenizer (safetensors) under cache_dir("models", "<name>-<gguf sha[:12]>") and every later
load reads that in seconds. The cache directory is written to a temporary and renamed into
place, and carries a stamp with its files' sizes: a truncated or partial cache is rebuilt, not
loaded (DESIGN "Bad input, faults").

Tokenizers, as loaded (NOTES "Embedded pretrained models"):
- smollm2-135m: adds no special token by default; its bos_token is <|im_start|> (id 1) and its
  eos_token <|im_end|> (id 2), as in the upstream Instruct tokenizer.
- gemma3-270m: prepends <bos> (id 2) by default; eos is <eos> (id 1).
`repro.data.token_ids` adds <bos>/<eos> itself (add_special_tokens=False), so both behave alike
there; code that calls a tokenizer directly must mind the difference.
"""
from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from repro import fixtures
from repro.runtime import DEVICES, ReproError, atomic_path, cache_dir, resolve_device

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

_STAMP = "repro-cache.json"
_CACHE_FORMAT = 1  # bump to invalidate every dequantised-model cache


@dataclass(frozen=True)
class EmbeddedModel:
    """Facts about an embedded model (checked against the loaded config by the tests)."""

    name: str
    fixture: str  # key of repro.fixtures.EMBEDDED_FIXTURES
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
        name="smollm2-135m", fixture="smollm2-135m", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        family="llama", n_layers=30, d_model=576, n_heads=9, vocab_size=49152,
        tokenizer_adds_bos=False, upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "gemma3-270m": EmbeddedModel(
        name="gemma3-270m", fixture="gemma3-270m", gguf_file="gemma-3-270m-q4_k_m.gguf",
        family="gemma", n_layers=18, d_model=640, n_heads=4, vocab_size=262144,
        tokenizer_adds_bos=True, upstream="google/gemma-3-270m",
    ),
}

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def _choices() -> str:
    return ", ".join(EMBEDDED_MODELS)


def model_family(model: Any) -> str:
    """"llama", "gemma", "gpt2", "gpt_neox", ...: the architecture family from config.model_type
    (gemma, gemma2, gemma3, gemma3_text all read "gemma"), so claims can branch on the family."""
    model_type = str(getattr(getattr(model, "config", model), "model_type", "")).lower()
    if model_type.startswith("gemma"):
        return "gemma"
    return model_type or "unknown"


# --------------------------------------------------------------------------- dequantised cache


def model_cache_dir(name: str) -> Path:
    """Where the dequantised copy of embedded model `name` lives (it may not exist yet)."""
    spec = EMBEDDED_MODELS[name]
    sha = fixtures.EMBEDDED_FIXTURES[spec.fixture].sha256
    return cache_dir("models") / f"{name}-{sha[:12]}"


def _file_sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(directory.iterdir()) if p.is_file() and p.name != _STAMP}


def _cache_valid(directory: Path, name: str) -> bool:
    """A stamp written after a complete save, and every file still at its recorded size."""
    try:
        stamp = json.loads((directory / _STAMP).read_text("utf-8"))
        return (
            stamp.get("format") == _CACHE_FORMAT
            and stamp.get("gguf_sha256") == fixtures.EMBEDDED_FIXTURES[EMBEDDED_MODELS[name].fixture].sha256
            and stamp.get("files") == _file_sizes(directory)
            and any(n.endswith(".safetensors") for n in stamp["files"])
        )
    except (OSError, ValueError, KeyError, AttributeError):
        return False


def _dequantise_gguf(name: str, out_dir: Path) -> None:
    """Load the GGUF (sha256 verified first), dequantised to float32, and save_pretrained it.

    `GgufConfig(dequantize=True)` asks for plain tensors explicitly: without it transformers
    keeps a GGUF quantizer attached (even when the weights were unpacked) and refuses to save."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    spec = EMBEDDED_MODELS[name]
    gguf = fixtures.fixture_path(spec.fixture)  # raises on a missing fixture or a checksum mismatch
    log.warning("dequantising %s from %s (one-time, cached afterwards)", name, gguf)
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
            quantization_config=GgufConfig(dequantize=True),
        )
    except ImportError as exc:
        raise ReproError(f"loading {name} from GGUF needs the gguf and accelerate packages ({exc}); "
                         "run `pip install -e .` in the repository") from None
    out_dir.mkdir()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def _write_stamp(directory: Path, name: str) -> None:
    """Written last, inside the temporary directory: its presence means the save completed."""
    stamp = {
        "format": _CACHE_FORMAT,
        "model": name,
        "gguf_sha256": fixtures.EMBEDDED_FIXTURES[EMBEDDED_MODELS[name].fixture].sha256,
        "files": _file_sizes(directory),
    }
    (directory / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n", "utf-8")


def _lock(target: Path):
    import filelock

    return filelock.FileLock(str(target.parent / f".{target.name}.lock"))


def ensure_model_cache(name: str, *, rebuild: bool = False) -> Path:
    """The dequantised cache directory of embedded model `name`, built if absent or invalid."""
    target = model_cache_dir(name)
    with _lock(target):
        if not rebuild and _cache_valid(target, name):
            return target
        if target.exists():
            log.warning("model cache %s is incomplete or corrupt; rebuilding it", target)
        for stale in target.parent.glob(f".{target.name}.*.tmp"):  # left by a killed build
            shutil.rmtree(stale, ignore_errors=True)
        with atomic_path(target) as tmp:
            _dequantise_gguf(name, tmp)
            _write_stamp(tmp, name)
    return target


# --------------------------------------------------------------------------- loading


def _device(device: str | torch.device) -> torch.device:
    if isinstance(device, str) and device in DEVICES:
        return resolve_device(device)
    return torch.device(device)


def _from_dir(path: Path | str, dev: torch.device, dtype: torch.dtype, attn: str, **kw: Any):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation=attn, **kw)
    tokenizer = AutoTokenizer.from_pretrained(path, **kw)
    return model.to(dev).eval(), tokenizer


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _load_embedded(name: str, dev: torch.device, dtype: torch.dtype, attn: str):
    directory = ensure_model_cache(name)
    try:
        return _from_dir(directory, dev, dtype, attn)
    except ReproError:
        raise
    except Exception as exc:  # e.g. SafetensorError on a damaged file the size check missed
        log.warning("loading cached %s failed (%s); rebuilding the cache", name, _first_line(exc))
    return _from_dir(ensure_model_cache(name, rebuild=True), dev, dtype, attn)


def _offline_message(name: str) -> str:
    return (
        f"cannot load hub model {name!r}: the Hugging Face hub is unreachable (offline). "
        f"Use an embedded model ({_choices()}) or a local path."
    )


def _load_hub(name: str, dev: torch.device, dtype: torch.dtype, attn: str):
    if not fixtures.hub_reachable():
        try:  # a model already in the local HF cache still works offline
            return _from_dir(name, dev, dtype, attn, local_files_only=True)
        except (OSError, ValueError):
            raise ReproError(_offline_message(name)) from None
    try:
        return _from_dir(name, dev, dtype, attn)
    except (OSError, ValueError) as exc:  # transformers reports unknown/gated repos as OSError
        raise ReproError(
            f"cannot load hub model {name!r}: {_first_line(exc)} Check the id (and `hf auth login` for "
            f"gated models), or use an embedded model ({_choices()}) or a local path."
        ) from None


def load_pretrained(
    name_or_path: str,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "eager",
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """(model in eval mode, tokenizer) for an embedded name, a local directory, or a hub id.

    attn_implementation defaults to "eager" because claims read attention weights, which only
    the eager path returns (DESIGN "Facts that save time"). Embedded models are verified and
    dequantised once (see the module docstring); their fixture must have been fetched
    (`repro fetch NAME`). Hub ids need network, or a copy in the local HF cache."""
    dev = _device(device)
    if not name_or_path.strip():
        raise ReproError(f"no model given: pass an embedded model ({_choices()}), a local model "
                         "directory or a Hugging Face hub id")
    if name_or_path in EMBEDDED_MODELS:
        return _load_embedded(name_or_path, dev, dtype, attn_implementation)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        try:
            return _from_dir(path, dev, dtype, attn_implementation)
        except (OSError, ValueError) as exc:
            raise ReproError(
                f"cannot load a model from directory {path}: {_first_line(exc)} It must hold a "
                "save_pretrained() model (config.json, weights) and tokenizer."
            ) from None
    looks_like_path = name_or_path.startswith(("/", ".", "~")) or path.exists()
    if looks_like_path or not _HUB_ID.match(name_or_path):
        raise ReproError(
            f"unknown model {name_or_path!r}: not an embedded model ({_choices()}), not a local "
            "model directory, and not a Hugging Face hub id (owner/name); pass one of those."
        )
    return _load_hub(name_or_path, dev, dtype, attn_implementation)
