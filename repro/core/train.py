"""One small causal-LM training loop, shared by every training claim, with a checkpoint cache.

- AdamW (weight decay on matrices only), linear warm-up then cosine decay to
  `min_lr_ratio · lr`, gradient clipping.
- Data order is a function of `data_seed` alone: an explicit generator picks random windows
  of `seq_len + 1` tokens from the training stream (at any offset, or at multiples of
  `window_align` for a stream of whole sequences), so runs that differ only in the model's
  init see the same batches in the same order (the "same data, different init seed" claims).
- Held-out loss on a fixed, evenly spaced set of validation windows (no randomness: every run
  on the same validation stream is scored on the same tokens).
- Deterministic on CPU: the same call twice gives an identical loss history (dropout, if a
  model has any, draws from a forked global RNG seeded from the config).
- Checkpoints are cached under `cache_dir("checkpoints")/<key>`, where the key hashes the
  full description of the run: model class and config, the exact initial weights (or the key
  of the checkpoint training continues from), the train config, and sha256 of the token
  streams. A second call with the same description loads instead of training; a cache entry
  that fails to load (truncated, corrupt) is rebuilt. Entries are written as whole directories
  (temp dir + rename), so a killed run never leaves a half-written checkpoint.
- Works on transformers causal LMs and on `repro.core.models.tiny.TinyDecoder` (anything whose
  forward(input_ids=...) returns `.logits`); with an `accelerate.Accelerator` it uses
  `prepare`/`backward`, each process taking its share of the same global batch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from repro.ground.runtime import (
    ReproError,
    atomic_path,
    atomic_torch_save,
    attention_in_float32,
    autocast,
    cache_dir,
    config_key,
    derive_seed,
    generator,
    read_json_or_none,
    resolve_autocast,
)

FORMAT = 1  # bump when the checkpoint layout or the training loop's semantics change
MODEL_FILE = "model.safetensors"
META_FILE = "meta.json"


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 300
    batch_size: int = 32
    seq_len: int = 128
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 30
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    grad_clip: float | None = 1.0
    eval_every: int = 50
    eval_batches: int = 4  # validation windows = eval_batches · batch_size
    data_seed: int = 0
    model_seed: int = 0  # passed to a model factory that takes one argument
    corpus: str = "brown"  # labels only: the token streams themselves are hashed into the key
    vocab_size: int = 4096
    snapshot_steps: tuple[int, ...] = ()  # also keep the weights after these many updates
    # mixed precision: None (float32 throughout), "auto" (the dtype policy,
    # runtime.resolve_dtype: bfloat16 on a GPU or a CPU with native bf16, else float32 — the
    # source trained in bfloat16, 001 Table 14; with native bf16 matmul it is ≈ 3× faster, and
    # emulated bf16 is 16× slower) or "bfloat16" (named on purpose). Under bfloat16 the forward
    # and backward run under torch.autocast; weights, optimizer state and the loss stay float32.
    # train() resolves "auto" before keying the checkpoint, so the key names what ran.
    autocast: str | None = None
    # training windows start at multiples of this (1: at any offset). With a stream of
    # back-to-back sequences of seq_len + 1 tokens, seq_len + 1 makes every window one whole
    # sequence (synthetic tasks whose structure a random cut would break, e.g. repro.residual_stream.induction)
    window_align: int = 1
    # when set, position 0 of every training and validation window is this token id (the
    # window's first token overwritten), e.g. <bos>: every sample then starts alike, as the
    # <bos>-led held-out windows do (repro.core.data.bos_windows). Gu et al. 2024 §5: a token fixed
    # at position k during pre-training is where the attention sink forms (repro.sinks.experiments)
    lead_token: int | None = None

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "seq_len", "eval_every", "eval_batches", "window_align"):
            if int(getattr(self, name)) < 1:
                raise ReproError(f"TrainConfig.{name} must be ≥ 1 (got {getattr(self, name)!r})")
        if not 0 <= self.warmup_steps <= self.steps:
            raise ReproError(f"TrainConfig.warmup_steps must be in [0, steps] (got {self.warmup_steps})")
        if not 0.0 <= self.min_lr_ratio <= 1.0 or self.lr <= 0:
            raise ReproError("TrainConfig needs lr > 0 and 0 ≤ min_lr_ratio ≤ 1")
        if self.lead_token is not None and (int(self.lead_token) != self.lead_token or self.lead_token < 0):
            raise ReproError(f"TrainConfig.lead_token must be a token id ≥ 0 or None (got {self.lead_token!r})")
        if self.autocast not in (None, "auto", "bfloat16"):
            raise ReproError(f"TrainConfig.autocast must be None, 'auto' or 'bfloat16' (got {self.autocast!r})")
        bad = [s for s in self.snapshot_steps if not 0 <= s <= self.steps]
        if bad:
            raise ReproError(f"TrainConfig.snapshot_steps {bad} lie outside [0, steps={self.steps}]")
        # tuples, so that configs from JSON (lists) compare and hash the same
        object.__setattr__(self, "betas", tuple(float(b) for b in self.betas))
        object.__setattr__(self, "snapshot_steps", tuple(sorted({int(s) for s in self.snapshot_steps})))

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **changes)


@dataclass
class TrainResult:
    model: nn.Module
    history: list[dict[str, float]]  # {step, train_loss, val_loss, lr} at each evaluation
    checkpoint: Path | None  # the cache entry (a directory), None with cache=False
    key: str
    trained: bool  # False: loaded from the cache, no step was run
    losses: list[float] = field(default_factory=list)  # per-step training loss
    snapshots: dict[int, Path] = field(default_factory=dict)  # step → weights file
    wall_s: float = 0.0  # training time of the run that produced it (from the cache: the original's)
    dtype: str = "float32"  # the matmul dtype it trained in: "bfloat16" under autocast, else "float32"

    @property
    def final_val_loss(self) -> float:
        return self.history[-1]["val_loss"]


# --------------------------------------------------------------------------- schedule and data


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for update `step` (0-based): linear warm-up over `warmup_steps` updates
    reaching `lr` at update warmup_steps − 1, then a half cosine from `lr` down to
    `min_lr_ratio · lr` at the last update."""
    lo = cfg.lr * cfg.min_lr_ratio
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = cfg.steps - cfg.warmup_steps - 1
    progress = 1.0 if span <= 0 else min(1.0, (step - cfg.warmup_steps) / span)
    return lo + 0.5 * (cfg.lr - lo) * (1.0 + math.cos(math.pi * progress))


def _check_stream(tokens: torch.Tensor, seq_len: int, what: str) -> torch.Tensor:
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
        raise ReproError(f"{what} must be a 1-D LongTensor of token ids")
    if tokens.numel() < seq_len + 1:
        raise ReproError(f"{what} has {tokens.numel()} tokens, fewer than seq_len + 1 = {seq_len + 1}")
    return tokens.long()


def batch_starts(cfg: TrainConfig, n_tokens: int) -> torch.Tensor:
    """(steps, batch_size) start offsets of the training windows: a function of data_seed,
    seq_len, batch_size and the stream length only — never of the model or its seed."""
    g = generator(derive_seed("train-windows", cfg.data_seed))
    a = cfg.window_align  # window_align = 1 draws exactly what it did before the option existed
    return torch.randint(0, (n_tokens - cfg.seq_len - 1) // a + 1, (cfg.steps, cfg.batch_size), generator=g) * a


def val_starts(cfg: TrainConfig, n_tokens: int) -> torch.Tensor:
    """Evenly spaced start offsets of the eval_batches · batch_size validation windows (at
    multiples of `window_align`, like the training windows)."""
    n = cfg.eval_batches * cfg.batch_size
    a = cfg.window_align
    return torch.linspace(0, (n_tokens - cfg.seq_len - 1) // a, n).round().long() * a


def cut_windows(
    tokens: torch.Tensor, starts: torch.Tensor, seq_len: int, lead_token: int | None = None
) -> torch.Tensor:
    """(B, seq_len + 1) windows of a token stream at `starts` (B,), led by `lead_token` if set:
    the one window cutter of training, validation and held-out scoring."""
    w = tokens[starts.unsqueeze(1) + torch.arange(seq_len + 1)]  # (B, seq_len + 1)
    if lead_token is not None:
        w[:, 0] = lead_token
    return w


def val_windows(cfg: TrainConfig, tokens: torch.Tensor, n: int | None = None) -> torch.Tensor:
    """(n, seq_len + 1) held-out windows as `evaluate` scores them (evenly spaced, led by
    `cfg.lead_token` if set); n defaults to eval_batches · batch_size."""
    tokens = _check_stream(tokens, cfg.seq_len, "tokens")
    starts = val_starts(cfg if n is None else cfg.replace(eval_batches=1, batch_size=int(n)), tokens.numel())
    return cut_windows(tokens, starts, cfg.seq_len, cfg.lead_token)


def _forward_kwargs(model: nn.Module) -> dict[str, Any]:
    """transformers models build a KV cache by default; training and scoring need none."""
    return {"use_cache": False} if hasattr(getattr(model, "config", None), "use_cache") else {}


def _autocast(cfg: TrainConfig, device: torch.device | str):
    return autocast(cfg.autocast, device)


def _dtype_of(cfg: TrainConfig) -> str:
    return "bfloat16" if cfg.autocast else "float32"


def resolved(cfg: TrainConfig, device: torch.device | str = "cpu") -> TrainConfig:
    """`cfg` with autocast "auto" replaced by what the dtype policy chooses on `device`."""
    return cfg.replace(autocast=resolve_autocast(cfg.autocast, device))


def _lm_loss(model: nn.Module, window: torch.Tensor, cfg: TrainConfig | None = None, **kwargs: Any) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) of windows (B, T+1): inputs [:-1], targets [1:];
    the forward under `cfg.autocast`, the loss in float32."""
    with _autocast(cfg or TrainConfig(), window.device):
        logits = model(input_ids=window[:, :-1], **kwargs).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), window[:, 1:].reshape(-1))


@torch.no_grad()
def evaluate(
    model: nn.Module,
    tokens: torch.Tensor,
    cfg: TrainConfig,
    device: torch.device | str | None = None,
    forward_kwargs: dict | None = None,
) -> float:
    """Held-out loss (nats/token) on the fixed validation windows of `cfg`."""
    tokens = _check_stream(tokens, cfg.seq_len, "val_tokens")
    device = device or next(model.parameters()).device
    kwargs = _forward_kwargs(model) if forward_kwargs is None else forward_kwargs
    starts = val_starts(cfg, tokens.numel())
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for chunk in starts.split(cfg.batch_size):
        w = cut_windows(tokens, chunk, cfg.seq_len, cfg.lead_token).to(device)
        total += float(_lm_loss(model, w, cfg, **kwargs)) * w.shape[0]
        count += w.shape[0]
    model.train(was_training)
    return total / count


def token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(b, T) next-token NLL (nats) of `targets` (b, T) under `logits` (b, T, V), in float32: the
    one per-token cross-entropy of the suite's evaluations (averaged, it is the mean loss)."""
    return F.cross_entropy(logits.float().transpose(1, 2), targets.to(logits.device), reduction="none")


def window_logits(
    forward: Callable[[torch.Tensor], torch.Tensor],
    windows: torch.Tensor,
    batch: int = 32,
    device: torch.device | str | None = None,
):
    """Yields (logits (b, T, V) float32, targets (b, T)) for the windows (n, T+1) in batches of
    `batch` — inputs [:-1], targets [1:], both on `device` — each forward pass under no_grad
    (only inside it: grad mode is never held across a yield): the one loop over evaluation
    windows. `forward` maps input ids (b, T) to logits (b, T, V)."""
    if windows.dim() != 2 or windows.shape[1] < 2:
        raise ReproError(f"evaluation windows must have shape (n, T+1) with T ≥ 1; got {tuple(windows.shape)}")
    for w in windows.split(batch):
        w = w.to(device) if device is not None else w
        with torch.no_grad():
            logits = forward(w[:, :-1]).float()
        yield logits, w[:, 1:]


def window_nll(
    forward: Callable[[torch.Tensor], torch.Tensor],
    windows: torch.Tensor,
    batch: int = 32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """(n, T) per-token next-token NLL (nats, float32, on the CPU) of windows (n, T+1) under
    `forward` (input ids → logits; see `window_logits`)."""
    return torch.cat([token_nll(lg, t).cpu() for lg, t in window_logits(forward, windows, batch, device)])


def window_losses(model: nn.Module, windows: torch.Tensor, batch: int = 32) -> torch.Tensor:
    """Mean next-token NLL (nats/token) of each window (n, T+1) — inputs [:-1], targets [1:] —
    in float32, in eval mode on the model's device: (n,). For paired comparisons of models window
    by window."""
    kwargs = _forward_kwargs(model)
    was_training = model.training
    model.eval()
    try:
        return window_nll(
            lambda x: model(input_ids=x, **kwargs).logits, windows, batch, next(model.parameters()).device
        ).mean(1)
    finally:
        model.train(was_training)


def unigram_entropy(train_tokens: torch.Tensor, val_tokens: torch.Tensor, vocab_size: int) -> float:
    """Cross-entropy (nats/token) of the validation tokens under the training tokens' unigram
    distribution with add-one smoothing: the loss of the best context-free predictor, the bar
    a trained LM must clear."""
    counts = torch.bincount(train_tokens.reshape(-1).long(), minlength=vocab_size).double() + 1.0
    if counts.numel() > vocab_size:
        raise ReproError(f"train tokens exceed vocab_size={vocab_size}")
    logp = counts.log() - counts.sum().log()
    return float(-logp[val_tokens.reshape(-1).long()].mean())


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
    path = _checkpoint_dir(init_checkpoint)
    meta = read_json_or_none(path / META_FILE)
    if not meta or "key" not in meta or not (path / MODEL_FILE).exists():
        raise ReproError(
            f"init_checkpoint {path} is not a complete training checkpoint "
            "(expected a directory written by repro.core.train.train)"
        )
    return meta["key"]


def _checkpoint_dir(ckpt: Any) -> Path:
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


def _uses_sdpa(model: nn.Module) -> bool:
    """Does the model attend through SDPA (torch's, transformers' or repro_sdpa)?"""
    from repro.core.models.attention import SDPA
    from repro.core.models.tiny import CausalSelfAttention

    for m in model.modules():
        if getattr(getattr(m, "config", None), "_attn_implementation", None) in ("sdpa", SDPA):
            return True
        if isinstance(m, CausalSelfAttention) and m.config.attention == "softmax":
            return True
    return False


def _attention_rule(cfg: TrainConfig, model: nn.Module, device: torch.device | None) -> dict[str, str]:
    """Under a bf16 autocast on a CPU, SDPA runs in float32 (repro.core.models.attention):
    keyed for the models that attend through SDPA, so checkpoints trained before that rule are
    not mistaken for ones trained under it."""
    device = device if device is not None else next(model.parameters()).device
    return {"attention": "sdpa-float32"} if cfg.autocast and attention_in_float32(device) and _uses_sdpa(model) else {}


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


def is_cached(
    model: nn.Module,
    cfg: TrainConfig,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    *,
    model_config: dict | None = None,
    data_identity: dict | None = None,
    init_checkpoint: Any = None,
) -> bool:
    """Whether `train(...)` with these arguments would load a finished checkpoint (e.g. before
    launching the run on N processes)."""
    cfg = resolved(cfg, next(model.parameters()).device)
    key, _ = train_key(
        model,
        cfg,
        _check_stream(train_tokens, cfg.seq_len, "train_tokens"),
        _check_stream(val_tokens, cfg.seq_len, "val_tokens"),
        model_config=model_config,
        data_identity=data_identity,
        init_checkpoint=init_checkpoint,
    )
    return (cache_dir("checkpoints") / key / META_FILE).exists()


def load_checkpoint(model: nn.Module, path: str | Path) -> dict[str, Any]:
    """Load a cached checkpoint's weights into `model` (strict) and return its metadata."""
    from safetensors.torch import load_model

    path = _checkpoint_dir(path)
    meta = read_json_or_none(path / META_FILE)
    if meta is None:
        raise ReproError(f"{path / META_FILE} is missing or unreadable")
    device = next(model.parameters()).device
    missing, unexpected = load_model(model, path / MODEL_FILE, strict=True, device=str(device))
    if missing or unexpected:  # strict=True raises already; belt and braces
        raise ReproError(f"checkpoint {path} does not fit the model: missing {missing}, unexpected {unexpected}")
    return meta


def _try_load(model: nn.Module, path: Path, key: str) -> dict[str, Any] | None:
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


# --------------------------------------------------------------------------- the loop


def _build(model: nn.Module | Callable[..., nn.Module], seed: int) -> nn.Module:
    if isinstance(model, nn.Module):
        return model
    if not callable(model):
        raise ReproError("train() needs an nn.Module or a factory that returns one")
    params = [
        p
        for p in inspect.signature(model).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return model(seed) if params else model()


def train(
    model: nn.Module | Callable[..., nn.Module],
    cfg: TrainConfig,
    *,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    model_config: dict | None = None,
    data_identity: dict | None = None,
    init_checkpoint: str | Path | TrainResult | None = None,
    cache: bool = True,
    accelerator: Any = None,
    progress: bool = True,
) -> TrainResult:
    """Train (or load from the cache) a causal LM on `train_tokens`; see the module docstring.

    `model`: an nn.Module (trained in place), or a factory — called with `cfg.model_seed` if
    it takes a positional argument (with or without a default), else with none.
    `model_config`: overrides the JSON description of the model taken from `model.config`. `data_identity`: extra labels for the key (e.g. the
    tokenizer's name); the token streams are hashed regardless. `init_checkpoint`: continue
    from a cached checkpoint (a TrainResult or its directory) — its key replaces the initial
    weights in the new key; the optimizer and schedule start afresh.
    """
    model = _build(model, cfg.model_seed)
    device = accelerator.device if accelerator is not None else next(model.parameters()).device
    cfg = resolved(cfg, device)  # the key names the dtype that ran, not "auto"
    train_tokens = _check_stream(train_tokens, cfg.seq_len, "train_tokens")
    val_tokens = _check_stream(val_tokens, cfg.seq_len, "val_tokens")
    if init_checkpoint is not None:
        load_checkpoint(model, init_checkpoint)
    key, description = train_key(
        model,
        cfg,
        train_tokens,
        val_tokens,
        init_checkpoint=init_checkpoint,
        model_config=model_config,
        data_identity=data_identity,
        device=device,
    )
    target = cache_dir("checkpoints") / key
    if cache:
        meta = _try_load(model, target, key)
        if meta is not None:
            model.eval()
            return TrainResult(
                model,
                meta["history"],
                target,
                key,
                trained=False,
                losses=meta["losses"],
                snapshots={int(s): target / n for s, n in meta["snapshots"].items()},
                wall_s=meta.get("wall_s", 0.0),
                dtype=_dtype_of(cfg),
            )

    t0 = time.perf_counter()
    device = next(model.parameters()).device
    rng_devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=rng_devices):
        torch.manual_seed(derive_seed("train-global-rng", cfg.model_seed, cfg.data_seed))
        history, losses, snapshot_states = _loop(model, cfg, train_tokens, val_tokens, accelerator, progress)
    wall_s = time.perf_counter() - t0
    model.eval()

    if not cache or (accelerator is not None and not accelerator.is_main_process):
        if accelerator is not None:
            accelerator.wait_for_everyone()
        return TrainResult(
            model,
            history,
            target if cache else None,
            key,
            trained=True,
            losses=losses,
            wall_s=wall_s,
            dtype=_dtype_of(cfg),
        )
    snapshots = _write(
        target,
        model,
        snapshot_states,
        {"key": key, "description": description, "history": history, "losses": losses, "wall_s": wall_s},
    )
    if accelerator is not None:
        accelerator.wait_for_everyone()
    return TrainResult(
        model,
        history,
        target,
        key,
        trained=True,
        losses=losses,
        snapshots={s: target / n for s, n in snapshots.items()},
        wall_s=wall_s,
        dtype=_dtype_of(cfg),
    )


def _loop(
    model: nn.Module,
    cfg: TrainConfig,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    accelerator: Any,
    progress: bool,
):
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr_at(0, cfg),
        betas=cfg.betas,
        eps=cfg.eps,
    )
    kwargs = _forward_kwargs(model)
    if accelerator is not None:
        model, optimizer = accelerator.prepare(model, optimizer)
        device, rank, world = accelerator.device, accelerator.process_index, accelerator.num_processes
    else:
        device, rank, world = next(model.parameters()).device, 0, 1
    unwrap = (lambda m: accelerator.unwrap_model(m)) if accelerator is not None else (lambda m: m)

    starts = batch_starts(cfg, train_tokens.numel())
    history: list[dict[str, float]] = []
    losses: list[float] = []
    snapshots: dict[int, dict[str, torch.Tensor]] = {}

    def checkpoint_events(step: int, since: list[float]) -> None:
        if step % cfg.eval_every == 0 or step == cfg.steps:
            history.append(
                {
                    "step": step,
                    "train_loss": float(sum(since) / len(since)) if since else None,
                    "val_loss": evaluate(model, val_tokens, cfg, device, kwargs),
                    "lr": lr_at(max(step - 1, 0), cfg),
                }
            )
            since.clear()
        if step in cfg.snapshot_steps:
            # one copy per storage: tied weights appear under two names in a state_dict
            seen: set[int] = set()
            state = {}
            for k, v in unwrap(model).state_dict().items():
                if v.untyped_storage().data_ptr() not in seen:
                    seen.add(v.untyped_storage().data_ptr())
                    state[k] = v.detach().cpu().clone().contiguous()
            snapshots[step] = state

    since: list[float] = []
    checkpoint_events(0, since)
    model.train()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=cfg.steps,
            desc="train",
            leave=False,
            dynamic_ncols=True,
            disable=accelerator is not None and not accelerator.is_main_process,
        )
    try:
        for step in range(cfg.steps):
            lr = lr_at(step, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            window = cut_windows(train_tokens, starts[step, rank::world], cfg.seq_len, cfg.lead_token).to(device)
            loss = _lm_loss(model, window, cfg, **kwargs)
            optimizer.zero_grad(set_to_none=True)
            if accelerator is not None:
                accelerator.backward(loss)
                if cfg.grad_clip:
                    accelerator.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            else:
                loss.backward()
                if cfg.grad_clip:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            optimizer.step()
            # the logged loss is the global batch's (every rank holds a slice of it), so N
            # processes log the same curve as one
            value = float(loss.detach() if world == 1 else accelerator.reduce(loss.detach(), reduction="mean"))
            if not math.isfinite(value):
                raise ReproError(
                    f"training diverged: loss {value} at step {step} (lr {lr:.3g}); "
                    "lower TrainConfig.lr or raise warmup_steps"
                )
            losses.append(value)
            since.append(value)
            checkpoint_events(step + 1, since)
            if bar is not None:
                bar.update(1)
                if history:
                    bar.set_postfix(loss=f"{value:.3f}", val=f"{history[-1]['val_loss']:.3f}")
    finally:
        if bar is not None:
            bar.close()
    return history, losses, snapshots


def _write(
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


# --------------------------------------------------------------------------- corpora


def corpus_tokens(
    corpus: str = "brown",
    vocab_size: int = 4096,
    *,
    add_bos: bool = True,
    max_tokens: int | None = None,
    max_files: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """(train_tokens, val_tokens, identity) of a repro.core.data corpus under the Brown byte-level
    BPE (`brown_tokenizer(vocab_size)`), so models trained on one corpus can continue on the
    other with the same vocabulary: "brown", or "stdlib-code" (the running interpreter's
    standard library, the suite's shifted corpus; `max_files` keeps the first files of each
    split). `identity` labels the key of runs on them. The token streams are cached under
    cache_dir("tokens"), keyed by the tokenizer and the documents."""
    from repro.core import data

    if corpus not in data.CORPORA and not data.is_local_corpus(corpus):
        raise ReproError(f"corpus_tokens: unknown corpus {corpus!r} (known: {', '.join(data.CORPORA)}, or a directory)")
    tok = data.brown_tokenizer(vocab_size=vocab_size)
    tok_sha = hashlib.sha256(tok.backend_tokenizer.to_str().encode()).hexdigest()
    streams = []
    for split in ("train", "validation"):
        docs = data.corpus_documents(corpus, split, max_files=max_files)
        if not docs:
            raise ReproError(f"corpus {corpus!r} has no {split} documents on this machine")
        h = hashlib.sha256()
        for d in docs:
            h.update(f"{d.doc_id}\0{d.text}\0".encode())
        key = config_key(
            {"tokenizer": tok_sha, "docs": h.hexdigest(), "add_bos": add_bos, "max_tokens": max_tokens, "format": 1}
        )
        label = re.sub(r"[^A-Za-z0-9_.-]+", "-", corpus).strip("-.")[-40:] or "corpus"  # a path → a file name
        path = cache_dir("tokens") / f"{label}-{split}-{vocab_size}-{key}.pt"
        ids = None
        if path.exists():
            try:
                ids = torch.load(path, weights_only=True)
            except Exception:  # truncated / corrupt: tokenize again
                ids = None
        if not isinstance(ids, torch.Tensor):
            ids = data.token_ids(tok, docs, add_bos=add_bos, max_tokens=max_tokens)
            atomic_torch_save(path, ids)
        streams.append(ids)
    identity = {
        "corpus": corpus,
        "tokenizer": f"brown-bpe-{vocab_size}",
        "tokenizer_sha256": tok_sha,
        "add_bos": add_bos,
    }
    return streams[0], streams[1], identity
