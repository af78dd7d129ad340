"""Windows of token streams and their next-token loss: how every model of the suite is scored.

- `cut_windows`: the one cutter of (B, seq_len + 1) windows, for training, validation and
  held-out scoring; `val_starts` / `val_windows`: the fixed, evenly spaced validation windows (no
  randomness: every run on the same validation stream is scored on the same tokens).
- `token_nll` / `window_logits` / `window_nll`: the one per-token NLL and evaluation loop every
  topic scores with; `evaluate` (the held-out loss of a training run) and `window_losses`
  (per-window losses, for paired comparisons) are built on them.
- `unigram_entropy`: the loss of the best context-free predictor, the bar a trained LM must clear.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from repro.core.train_config import TrainConfig
from repro.ground.errors import ReproError
from repro.ground.runtime import autocast


def check_stream(tokens: torch.Tensor, seq_len: int, what: str) -> torch.Tensor:
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
        raise ReproError(f"{what} must be a 1-D LongTensor of token ids")
    if tokens.numel() < seq_len + 1:
        raise ReproError(f"{what} has {tokens.numel()} tokens, fewer than seq_len + 1 = {seq_len + 1}")
    return tokens.long()


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
    tokens = check_stream(tokens, cfg.seq_len, "tokens")
    starts = val_starts(cfg if n is None else cfg.replace(eval_batches=1, batch_size=int(n)), tokens.numel())
    return cut_windows(tokens, starts, cfg.seq_len, cfg.lead_token)


def scoring_kwargs(model: nn.Module) -> dict[str, Any]:
    """transformers models build a KV cache by default; training and scoring need none."""
    return {"use_cache": False} if hasattr(getattr(model, "config", None), "use_cache") else {}


def _autocast(cfg: TrainConfig, device: torch.device | str):
    return autocast(cfg.autocast, device)


def lm_loss(model: nn.Module, window: torch.Tensor, cfg: TrainConfig | None = None, **kwargs: Any) -> torch.Tensor:
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
    tokens = check_stream(tokens, cfg.seq_len, "val_tokens")
    device = device or next(model.parameters()).device
    kwargs = scoring_kwargs(model) if forward_kwargs is None else forward_kwargs
    starts = val_starts(cfg, tokens.numel())
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for chunk in starts.split(cfg.batch_size):
        w = cut_windows(tokens, chunk, cfg.seq_len, cfg.lead_token).to(device)
        total += float(lm_loss(model, w, cfg, **kwargs)) * w.shape[0]
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
    kwargs = scoring_kwargs(model)
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
