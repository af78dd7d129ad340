"""The checkpoint cache of `repro.core.train.train`: keys, entries written whole, loads.

Checkpoints are cached under `cache_dir("checkpoints")/<key>`, where the key hashes the full
description of the run (`train_key`): model class and config, the exact initial weights (or
the key of the checkpoint training continues from), the train config, and sha256 of the token
streams. A second call with the same description loads instead of training; a cache entry that
fails to load (truncated, corrupt) is rebuilt. Entries are written as whole directories (temp
dir + rename, `write_checkpoint`), so a killed run never leaves a half-written checkpoint.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from repro.core.attention_kind import attends_by_sdpa
from repro.core.train_config import TrainConfig, TrainResult
from repro.ground.cache import atomic_path, config_key, read_json_or_none
from repro.ground.errors import ReproError
from repro.ground.runtime import attention_in_float32

FORMAT = 1  # bump when the checkpoint layout or the training loop's semantics change
MODEL_FILE = "model.safetensors"
META_FILE = "meta.json"


# --------------------------------------------------------------------------- identity and cache


def tensor_sha256(t: torch.Tensor) -> str:
    t = t.detach().cpu().contiguous()
    h = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
    # reshape(-1): a 0-dim tensor cannot be viewed as bytes of another element size (Gemma's
    # bfloat16 embed_scale buffer); for every other tensor the bytes, and so the hash, are the same
    h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def state_sha256(model: nn.Module) -> str:
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor_sha256(t).encode())
    return h.hexdigest()


def model_description(model: nn.Module) -> dict[str, Any]:
    """Class and config of a model as JSON-able data (HF configs via to_dict, dataclasses via
    asdict); part of the checkpoint key."""
    cls = type(model)
    cfg = getattr(model, "config", None)
    if cfg is None:
        conf: Any = None
    elif hasattr(cfg, "to_dict"):
        conf = cfg.to_dict()
    elif dataclasses.is_dataclass(cfg):
        conf = dataclasses.asdict(cfg)
    else:
        conf = repr(cfg)
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "config": conf}


def _checkpoint_key(init_checkpoint: Any) -> str:
    path = checkpoint_dir(init_checkpoint)
    meta = read_json_or_none(path / META_FILE)
    if not meta or "key" not in meta or not (path / MODEL_FILE).exists():
        raise ReproError(
            f"init_checkpoint {path} is not a complete training checkpoint "
            "(expected a directory written by repro.core.train.train)"
        )
    return meta["key"]


def checkpoint_dir(ckpt: Any) -> Path:
    """The entry directory of a checkpoint given as a TrainResult, its directory, or a file in it."""
    if isinstance(ckpt, TrainResult):
        if ckpt.checkpoint is None:
            raise ReproError("init_checkpoint: that TrainResult was trained with cache=False and has no checkpoint")
        ckpt = ckpt.checkpoint
    path = Path(ckpt)
    return path.parent if path.name in (MODEL_FILE, META_FILE) else path


# TrainConfig fields added after cache entries existed: left out of the key at their default,
# so that every run described before they were added keeps its key (and its cache entry)
_KEYED_ONLY_IF_SET = ("window_align", "lead_token")


def _train_description(cfg: TrainConfig) -> dict[str, Any]:
    defaults = TrainConfig()
    return {
        k: v for k, v in dataclasses.asdict(cfg).items() if not (k in _KEYED_ONLY_IF_SET and v == getattr(defaults, k))
    }


def _attention_rule(cfg: TrainConfig, model: nn.Module, device: torch.device | None) -> dict[str, str]:
    """Under a bf16 autocast on a CPU, SDPA runs in float32 (repro.core.models.attention):
    keyed for the models that attend through SDPA, so checkpoints trained before that rule are
    not mistaken for ones trained under it."""
    device = device if device is not None else next(model.parameters()).device
    rule = cfg.autocast and attention_in_float32(device) and attends_by_sdpa(model)
    return {"attention": "sdpa-float32"} if rule else {}


def train_key(
    model: nn.Module,
    cfg: TrainConfig,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    *,
    init_checkpoint: Any = None,
    model_config: dict | None = None,
    data_identity: dict | None = None,
    device: torch.device | None = None,
) -> tuple[str, dict[str, Any]]:
    """The cache key of a run and the full description it hashes."""
    description = {
        "format": FORMAT,
        "model": model_description(model)
        if model_config is None
        else {"class": model_description(model)["class"], "config": model_config},
        "init": {"checkpoint": _checkpoint_key(init_checkpoint)}
        if init_checkpoint is not None
        else {"weights_sha256": state_sha256(model)},
        "train": _train_description(cfg),
        **_attention_rule(cfg, model, device),
        "data": {
            "corpus": cfg.corpus,
            "train_tokens": int(train_tokens.numel()),
            "train_sha256": tensor_sha256(train_tokens),
            "val_tokens": int(val_tokens.numel()),
            "val_sha256": tensor_sha256(val_tokens),
            **(data_identity or {}),
        },
    }
    return config_key(description), description


def load_checkpoint(model: nn.Module, path: str | Path) -> dict[str, Any]:
    """Load a cached checkpoint's weights into `model` (strict) and return its metadata."""
    from safetensors.torch import load_model

    path = checkpoint_dir(path)
    meta = read_json_or_none(path / META_FILE)
    if meta is None:
        raise ReproError(f"{path / META_FILE} is missing or unreadable")
    device = next(model.parameters()).device
    missing, unexpected = load_model(model, path / MODEL_FILE, strict=True, device=str(device))
    if missing or unexpected:  # strict=True raises already; belt and braces
        raise ReproError(f"checkpoint {path} does not fit the model: missing {missing}, unexpected {unexpected}")
    return meta


def try_load(model: nn.Module, path: Path, key: str) -> dict[str, Any] | None:
    """The entry's metadata after loading its weights into `model`, or None (model untouched)
    when the entry is missing, for another key, or unreadable (truncated, corrupt)."""
    meta = read_json_or_none(path / META_FILE)
    if not meta or meta.get("key") != key or not all(k in meta for k in ("history", "losses", "snapshots")):
        return None
    if not all((path / name).is_file() for name in meta["snapshots"].values()):
        return None
    backup = {k: v.detach().clone() for k, v in model.state_dict().items()}
    try:
        return load_checkpoint(model, path)
    except Exception:  # truncated / corrupt safetensors, shape mismatch: rebuild the entry
        model.load_state_dict(backup)
        return None


def write_checkpoint(
    target: Path, model: nn.Module, snapshot_states: dict[int, dict[str, torch.Tensor]], meta: dict[str, Any]
) -> dict[int, str]:
    """Write a cache entry as one directory, atomically: weights, snapshots, then meta.json."""
    from safetensors.torch import save_file, save_model

    names = {s: f"step_{s:07d}.safetensors" for s in snapshot_states}
    with atomic_path(target) as tmp:
        tmp.mkdir()
        save_model(model, str(tmp / MODEL_FILE))
        for step, state in snapshot_states.items():
            save_file(state, str(tmp / names[step]))
        (tmp / META_FILE).write_text(
            json.dumps({**meta, "snapshots": {str(s): n for s, n in names.items()}}, indent=1, default=str) + "\n"
        )
    return names


def load_snapshot(model: nn.Module, path: str | Path) -> nn.Module:
    """Load an intermediate snapshot (TrainResult.snapshots[step]) into `model` (non-strict
    about tied duplicates, strict about everything else)."""
    from safetensors.torch import load_file

    state = load_file(str(path))
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {k for k in missing if _is_tied_duplicate(model, k, state)}
    if unexpected or set(missing) - tied:
        raise ReproError(
            f"snapshot {path} does not fit the model: missing {sorted(set(missing) - tied)}, unexpected {unexpected}"
        )
    return model


def _is_tied_duplicate(model: nn.Module, name: str, state: dict[str, torch.Tensor]) -> bool:
    sd = model.state_dict()
    ptr = sd[name].untyped_storage().data_ptr()
    return any(sd[k].untyped_storage().data_ptr() == ptr for k in state if k in sd)
