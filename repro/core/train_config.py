"""What a training run is: its config, its result, the learning-rate schedule and the data order.

- AdamW (weight decay on matrices only), linear warm-up then cosine decay to
  `min_lr_ratio · lr` (`lr_at`), gradient clipping.
- Data order is a function of `data_seed` alone (`batch_starts`): an explicit generator picks
  random windows of `seq_len + 1` tokens from the training stream (at any offset, or at
  multiples of `window_align` for a stream of whole sequences), so runs that differ only in the
  model's init see the same batches in the same order (the "same data, different init seed"
  claims).
- `resolved`: the config with autocast "auto" replaced by what the dtype policy chose, as the
  checkpoint key records it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from repro.ground.errors import ReproError
from repro.ground.runtime import derive_seed, generator, resolve_autocast


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


def batch_starts(cfg: TrainConfig, n_tokens: int) -> torch.Tensor:
    """(steps, batch_size) start offsets of the training windows: a function of data_seed,
    seq_len, batch_size and the stream length only — never of the model or its seed."""
    g = generator(derive_seed("train-windows", cfg.data_seed))
    a = cfg.window_align  # window_align = 1 draws exactly what it did before the option existed
    return torch.randint(0, (n_tokens - cfg.seq_len - 1) // a + 1, (cfg.steps, cfg.batch_size), generator=g) * a


def resolved(cfg: TrainConfig, device: torch.device | str = "cpu") -> TrainConfig:
    """`cfg` with autocast "auto" replaced by what the dtype policy chooses on `device`."""
    return cfg.replace(autocast=resolve_autocast(cfg.autocast, device))
