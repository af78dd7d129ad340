"""One small causal-LM training loop, shared by every training claim, with a checkpoint cache.

- The run is described by a `TrainConfig` (`repro.core.train_config`: AdamW with weight decay on
  matrices only, linear warm-up then cosine decay, gradient clipping, data order a function of
  `data_seed` alone), scored on fixed validation windows (`repro.core.scoring`), and cached under
  the key of its full description (`repro.core.checkpoints`): a second call with the same
  description loads instead of training.
- Deterministic on CPU: the same call twice gives an identical loss history (dropout, if a
  model has any, draws from a forked global RNG seeded from the config).
- Works on transformers causal LMs and on `repro.core.models.tiny.TinyDecoder` (anything whose
  forward(input_ids=...) returns `.logits`); with an `accelerate.Accelerator` it uses
  `prepare`/`backward`, each process taking its share of the same global batch.

The windows and scoring, the checkpoint cache and `corpus_tokens` (`repro.core.token_streams`)
are read from their own modules, not through this one.
"""

from __future__ import annotations

import inspect
import math
import time
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from repro.core.checkpoints import META_FILE, load_checkpoint, train_key, try_load, write_checkpoint
from repro.core.scoring import check_stream, cut_windows, evaluate, lm_loss, scoring_kwargs
from repro.core.train_config import TrainConfig, TrainResult, batch_starts, lr_at, resolved
from repro.ground.cache import cache_dir
from repro.ground.errors import ReproError
from repro.ground.progress import Heartbeat
from repro.ground.runtime import derive_seed


def _dtype_of(cfg: TrainConfig) -> str:
    return "bfloat16" if cfg.autocast else "float32"


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
        check_stream(train_tokens, cfg.seq_len, "train_tokens"),
        check_stream(val_tokens, cfg.seq_len, "val_tokens"),
        model_config=model_config,
        data_identity=data_identity,
        init_checkpoint=init_checkpoint,
    )
    return (cache_dir("checkpoints") / key / META_FILE).exists()


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
    `model_config`: overrides the JSON description of the model taken from `model.config`.
    `data_identity`: extra labels for the key (e.g. the tokenizer's name); the token streams are
    hashed regardless. `init_checkpoint`: continue from a cached checkpoint (a TrainResult or its
    directory) — its key replaces the initial weights in the new key; the optimizer and schedule
    start afresh.
    """
    model = _build(model, cfg.model_seed)
    device = accelerator.device if accelerator is not None else next(model.parameters()).device
    cfg = resolved(cfg, device)  # the key names the dtype that ran, not "auto"
    train_tokens = check_stream(train_tokens, cfg.seq_len, "train_tokens")
    val_tokens = check_stream(val_tokens, cfg.seq_len, "val_tokens")
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
        meta = try_load(model, target, key)
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
    snapshots = write_checkpoint(
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
    kwargs = scoring_kwargs(model)
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
    # a line on `repro.progress` every half minute (what pytest's terminal shows while a claim trains)
    beat = Heartbeat("train", cfg.steps) if rank == 0 else None
    try:
        for step in range(cfg.steps):
            lr = lr_at(step, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            window = cut_windows(train_tokens, starts[step, rank::world], cfg.seq_len, cfg.lead_token).to(device)
            loss = lm_loss(model, window, cfg, **kwargs)
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
            if beat is not None:
                beat.tick(step + 1, f"loss {value:.3f}")
            if bar is not None:
                bar.update(1)
                if history:
                    bar.set_postfix(loss=f"{value:.3f}", val=f"{history[-1]['val_loss']:.3f}")
    finally:
        if bar is not None:
            bar.close()
    return history, losses, snapshots
