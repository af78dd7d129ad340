"""Pretrained models by name or path: the embedded GGUF models, local directories and files, and
Hugging Face hub ids.

The embedded models (`repro.core.models.embedded`) are dequantised once and cached
(`repro.core.models.gguf_cache`); `load_pretrained` reads that cache, and rebuilds an entry
transformers cannot load.

Checkpoints written by `repro.core.train.train` (a directory with `model.safetensors` and
`meta.json`, no config.json, no tokenizer) load too: the model is rebuilt from the class and
config recorded in meta.json ("description" → "model"; only `transformers.*` and
`repro.core.models.*` classes) and its weights read with `repro.core.checkpoints.load_checkpoint`;
the tokenizer is None. A path to a `.safetensors` file inside such a directory loads that file
(`model.safetensors`, or a `step_*.safetensors` snapshot). `load_model_any` loads any of these
without a tokenizer (what `repro seedprint` needs: model-only save_pretrained directories work).
A user's own `.gguf` file is dequantised on every load (not cached).
"""

from __future__ import annotations

import importlib
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from repro.core.checkpoints import META_FILE, MODEL_FILE, load_checkpoint, load_snapshot
from repro.core.models.embedded import EMBEDDED_MODELS, KNOWN_MODELS, ON_DEMAND_MODELS
from repro.core.models.gguf_cache import CacheCheck, build_model_cache, ensure_model_cache, one_gguf_parse
from repro.ground import resources
from repro.ground.cache import read_json_or_none
from repro.ground.errors import ReproError
from repro.ground.runtime import DEVICES, resolve_device

if TYPE_CHECKING:
    from torch import nn
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def _choices() -> str:
    on_demand = ", ".join(f"{name} (fetched on first use)" for name in ON_DEMAND_MODELS)
    return ", ".join(EMBEDDED_MODELS) + (f"; also {on_demand}" if on_demand else "")


def model_family(model: Any) -> str:
    """ "llama", "gemma", "gpt2", "gpt_neox", ...: the architecture family from config.model_type
    (gemma, gemma2, gemma3, gemma3_text all read "gemma"), so claims can branch on the family."""
    model_type = str(getattr(getattr(model, "config", model), "model_type", "")).lower()
    if model_type.startswith("gemma"):
        return "gemma"
    return model_type or "unknown"


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
    return _from_dir(
        build_model_cache(name, directory, CacheCheck("unloadable", why)), dev, dtype, attn, tokenizer=tokenizer
    )


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

_HF_CONFIG_FILE = "config.json"
# model classes a checkpoint's meta.json may name (anything else is refused: importing an
# arbitrary recorded module path would run arbitrary code)
_ALLOWED_CLASS_PREFIXES = ("transformers.", "repro.core.models.")
# repro.core.models classes and the dataclass their recorded config rebuilds
_REPRO_CONFIG_CLASSES = {"repro.core.models.tiny.TinyDecoder": "repro.core.models.tiny.TinyConfig"}
# checkpoints written before the package layout moved name repro.models.*: the same classes
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
        f"model and tokenizer) nor {META_FILE} + {MODEL_FILE} (a checkpoint written by "
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
        (directory / META_FILE).exists() or (directory / MODEL_FILE).exists()
    )


def _load_train_checkpoint(directory: Path, weights: Path, dev: torch.device, dtype: torch.dtype, attn: str):
    """(model, None) from a directory written by repro.core.train.train (see the module docstring)."""
    meta_path = directory / META_FILE
    if not meta_path.is_file():
        raise ReproError(
            f"cannot load a model from directory {directory}: it has {MODEL_FILE} but no "
            f"{META_FILE} (a repro.core.train checkpoint needs both; a save_pretrained() directory "
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
            f"cannot load a model from directory {directory}: it has {META_FILE} but no "
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
        if weights.name == MODEL_FILE:
            load_checkpoint(model, directory)
        else:  # a snapshot: tied duplicates were written once
            load_snapshot(model, weights)
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
            return _load_train_checkpoint(path, path / MODEL_FILE, dev, dtype, attn)
        raise ReproError(_neither_message(path))
    # a file: the weights inside a repro.core.train checkpoint (or a save_pretrained directory)
    parent = path.parent
    if path.suffix == ".safetensors" and _is_train_checkpoint(parent):
        return _load_train_checkpoint(parent, path, dev, dtype, attn)
    if path.name == MODEL_FILE and (parent / _HF_CONFIG_FILE).exists():
        return _load_local_hf(parent, dev, dtype, attn, tokenizer)
    raise ReproError(
        f"cannot load a model from file {path}: pass a model directory (save_pretrained() or a "
        f"repro.core.train checkpoint), or a .safetensors file inside a repro.core.train checkpoint "
        f"directory (next to its {META_FILE})"
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
    (it has none; see the module docstring), or a .gguf file (dequantised on load).
    `tokenizer=False` skips the tokenizer (returns None), so a model-only save_pretrained()
    directory loads too.

    attn_implementation defaults to "eager" because claims read attention weights, which only
    the eager path returns (DESIGN "Facts that save time"). Embedded models are verified and
    dequantised once (see the module docstring); their fixture must have been fetched
    (`repro fetch NAME`). Hub ids need network, or a copy in the local HF cache."""
    dev = _device(device)
    if not name_or_path.strip():
        raise ReproError(
            f"no model given: pass an embedded model ({_choices()}), a local model directory or a Hugging Face hub id"
        )
    if name_or_path in KNOWN_MODELS:
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
    if spec in KNOWN_MODELS:
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
