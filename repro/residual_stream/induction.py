"""Induction needs two attention layers (002 "Attention Head Composition"; Olsson et al. 2022).

An induction head predicts the token that followed the previous occurrence of the current
token: at position t it attends to j + 1 where x_j = x_t, and copies x_{j+1}. The key at j + 1
must carry x_j, which only an earlier layer can write there (a previous-token head): this is
K-composition, so a one-layer attention-only model cannot do it, a two-layer one can.

Data: sequences of `seq_len + 1` tokens — a random-length prefix of fresh tokens, a segment r
of random length n ∈ [min_repeat, max_repeat], r again, then fresh filler. All fresh tokens of
one sequence are distinct (drawn without replacement), so each token of the second copy has
exactly one earlier occurrence. Both the repeat period and its place vary per sequence: no
fixed offset or absolute position gives the answer, only induction does. The training stream
is such sequences back to back, and `repro.core.train.train` draws whole ones (`window_align =
seq_len + 1`): windows cut at random offsets join two sequences' tokens, which collide, and
took ~2× the steps to learn induction (measured). Evaluation: held-out sequences, masked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from repro.core import checkpoints, scoring, train
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.ground.runtime import ReproError, derive_seed, generator


@dataclass(frozen=True)
class InductionConfig:
    """Sizes of the RS-7 experiment. Defaults (the ci profile), measured on 2 CPU threads: the
    2-layer model ends at 0.09–0.13 nats on the repeats (~9 s), the 1-layer one at ≈ 3.0 (~5 s)."""

    vocab_size: int = 64
    seq_len: int = 32  # model input length T; a sequence has T + 1 tokens
    min_repeat: int = 8  # n, the length of the repeated segment r
    max_repeat: int = 16
    n_train_seq: int = 8192  # sequences in the training stream
    n_eval_seq: int = 256  # held-out sequences scored for the curve and the final losses
    d_model: int = 64
    n_head: int = 4  # per layer; the same for both depths
    steps: int = 1000
    batch_size: int = 64
    lr: float = 3e-3  # 5e-3 stalled on the plateau (measured); 2e-3 ends ~0.02 higher
    warmup_steps: int = 50
    curve_every: int = 100  # snapshot (and score) the model every this many steps
    autocast: str | None = None  # bf16 autocast was 2.3× slower than float32 at this size (measured)
    data_seed: int = 0

    def __post_init__(self) -> None:
        _check_sizes(self.n_eval_seq, self.seq_len, self.vocab_size, self.min_repeat, self.max_repeat)
        if min(self.n_train_seq, self.curve_every, self.d_model, self.n_head) < 1:
            raise ReproError("InductionConfig: n_train_seq, curve_every, d_model and n_head must be ≥ 1")


def _check_sizes(n_seq: int, seq_len: int, vocab_size: int, min_repeat: int, max_repeat: int) -> None:
    if n_seq < 1 or not 2 <= min_repeat <= max_repeat or 2 * max_repeat > seq_len + 1:
        raise ReproError(
            f"repeated tokens need n_seq ≥ 1 and 2 ≤ min_repeat ≤ max_repeat ≤ (seq_len + 1)/2 "
            f"(got n_seq={n_seq}, min_repeat={min_repeat}, max_repeat={max_repeat}, seq_len={seq_len})"
        )
    if vocab_size < seq_len + 1 - min_repeat:
        raise ReproError(
            f"vocab_size={vocab_size} is too small: a sequence's seq_len + 1 − min_repeat = "
            f"{seq_len + 1 - min_repeat} fresh tokens must be distinct"
        )


@dataclass
class RepeatedTokens:
    tokens: torch.Tensor  # (N, T + 1) token ids
    repeat: torch.Tensor  # (N, T) bool: target tokens[:, t + 1] is predictable by induction
    first: torch.Tensor  # (N, T) bool: target tokens[:, t + 1] lies in the first copy of r
    start: torch.Tensor  # (N,) p, where the first copy of r begins
    period: torch.Tensor  # (N,) n, the length of r


def repeated_tokens(
    n_seq: int, seq_len: int, vocab_size: int, min_repeat: int, max_repeat: int, g: torch.Generator
) -> RepeatedTokens:
    """`n_seq` sequences [prefix (p) | r (n) | r (n) | filler], n ~ U{min_repeat..max_repeat},
    p ~ U{0..seq_len + 1 − 2n}; fresh tokens distinct within a sequence (module docstring)."""
    _check_sizes(n_seq, seq_len, vocab_size, min_repeat, max_repeat)
    S = seq_len + 1
    n = torch.randint(min_repeat, max_repeat + 1, (n_seq,), generator=g)  # (N,)
    p = (torch.rand(n_seq, generator=g) * (S - 2 * n + 1)).long()  # (N,)
    fresh = torch.rand(n_seq, vocab_size, generator=g).argsort(dim=1)  # (N, V) permutations
    j = torch.arange(S).unsqueeze(0)  # (1, S)
    n_, p_ = n.unsqueeze(1), p.unsqueeze(1)  # (N, 1)
    src = torch.where(j < p_ + n_, j, j - n_)  # the second copy and the filler shift back by n
    tokens = fresh.gather(1, src)  # (N, S)
    tgt = j[:, 1:]  # (1, T) target index
    repeat = (tgt > p_ + n_) & (tgt < p_ + 2 * n_)  # r[1:] of the second copy; its r[0] is unpredictable
    first = (tgt >= p_) & (tgt < p_ + n_)
    return RepeatedTokens(tokens, repeat, first, p, n)  # masks (N, T)


def eval_data(cfg: InductionConfig) -> RepeatedTokens:
    """The held-out sequences (their own seed: never in the training stream's draw)."""
    return repeated_tokens(
        cfg.n_eval_seq,
        cfg.seq_len,
        cfg.vocab_size,
        cfg.min_repeat,
        cfg.max_repeat,
        generator(derive_seed("induction-eval", cfg.data_seed)),
    )


def train_stream(cfg: InductionConfig) -> torch.Tensor:
    """(n_train_seq · (seq_len + 1),) the training sequences back to back."""
    data = repeated_tokens(
        cfg.n_train_seq,
        cfg.seq_len,
        cfg.vocab_size,
        cfg.min_repeat,
        cfg.max_repeat,
        generator(derive_seed("induction-train", cfg.data_seed)),
    )
    return data.tokens.reshape(-1)


@dataclass(frozen=True)
class InductionLoss:
    repeat: float  # mean loss (nats) on the induction targets: the second copy of r, less its r[0]
    first: float  # mean loss on the first copy of r: fresh tokens, ≈ ln V at best


def _check_data(data: RepeatedTokens) -> None:
    N, S = data.tokens.shape if data.tokens.dim() == 2 else (0, 0)
    if S < 2 or any(m.shape != (N, S - 1) or m.dtype != torch.bool for m in (data.repeat, data.first)):
        raise ReproError("induction data: tokens must be (N, T + 1) and the masks (N, T) bool")
    if not data.repeat.any() or not data.first.any():
        raise ReproError("induction data: the repeat and first-copy masks must each mark some target")


@torch.no_grad()
def induction_loss(model: nn.Module, data: RepeatedTokens, batch_size: int = 256) -> InductionLoss:
    """Mean next-token loss (nats) of `model` on the repeat and first-copy targets of `data`
    (run on the model's device; the losses come back to the CPU, where the masks are)."""
    _check_data(data)
    was_training = model.training
    model.eval()
    nll_all = scoring.window_nll(
        lambda x: model(input_ids=x).logits, data.tokens, batch_size, next(model.parameters()).device
    )  # (N, T)
    model.train(was_training)
    return InductionLoss(float(nll_all[data.repeat].mean()), float(nll_all[data.first].mean()))


def context_copy_loss(data: RepeatedTokens) -> float:
    """Mean over the induction targets of ln(#distinct tokens among x_0..x_t): the loss of
    copying a uniformly chosen earlier token — what a model that knows the answer is in the
    context, but not which one (no K-composition), gets without positional priors."""
    _check_data(data)
    V = int(data.tokens.max()) + 1
    seen = F.one_hot(data.tokens[:, :-1], V).cummax(dim=1).values.sum(-1)  # (N, T)
    return float(seen[data.repeat].double().log().mean())


def build_model(cfg: InductionConfig, n_layer: int, seed: int, device: torch.device | str = "cpu") -> TinyDecoder:
    """An attention-only TinyDecoder, 1 or 2 layers, otherwise identical. RoPE: relative
    positions make a previous-token head one translation-invariant pattern (what the 2-layer
    circuit needs) and give the 1-layer model all the positional information it could use, so
    its failure is not for lack of it. Untied embeddings: the tied direct path W_E·W_Eᵀ favours
    repeating the current token (never right here) and stalled learning (measured). Initialised
    on the CPU (the same weights on every device), then moved to `device`."""
    tc = TinyConfig(
        vocab_size=cfg.vocab_size,
        d_model=cfg.d_model,
        n_layer=n_layer,
        n_head=cfg.n_head,
        max_len=cfg.seq_len,
        block="attn",
        positions="rope",
        tie_embeddings=False,
    )
    return TinyDecoder(tc, generator(derive_seed("induction-init", n_layer, seed))).to(device)


def build_for_job(seed: int, *, config: dict[str, Any], n_layer: int) -> TinyDecoder:
    """`build_model` from JSON-able arguments: the model factory of a training job in another
    process (repro.core.launch), on the CPU."""
    return build_model(InductionConfig(**config), n_layer, seed)


def job_tokens(*, config: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """(train stream, held-out sequences back to back): the streams `train_induction` trains
    and validates on, for a training job in another process."""
    cfg = InductionConfig(**config)
    return train_stream(cfg), eval_data(cfg).tokens.reshape(-1)


def train_job(cfg: InductionConfig, n_layer: int, seed: int) -> dict[str, Any]:
    """`train_induction`'s training as a JSON-able job (repro.core.launch.train_jobs): the same
    checkpoint key, so `train_induction` then loads what the job wrote."""
    from dataclasses import asdict

    from repro.core import launch

    return launch.job(
        "repro.residual_stream.induction:build_for_job",
        {"config": asdict(cfg), "n_layer": n_layer},
        train_config(cfg, seed),
        tokens=("repro.residual_stream.induction:job_tokens", {"config": asdict(cfg)}),
    )


def train_config(cfg: InductionConfig, seed: int) -> train.TrainConfig:
    snaps = tuple(range(0, cfg.steps, cfg.curve_every)) + (cfg.steps,)
    return train.TrainConfig(
        steps=cfg.steps,
        batch_size=cfg.batch_size,
        seq_len=cfg.seq_len,
        lr=cfg.lr,
        warmup_steps=cfg.warmup_steps,
        eval_every=cfg.steps,
        eval_batches=1,
        data_seed=cfg.data_seed,
        model_seed=seed,
        corpus="repeated-random-tokens",
        vocab_size=cfg.vocab_size,
        snapshot_steps=snaps,
        autocast=cfg.autocast,
        window_align=cfg.seq_len + 1,
    )


@dataclass
class InductionRun:
    n_layer: int
    seed: int
    final: InductionLoss
    curve: list[tuple[int, InductionLoss]]  # (step, losses) every curve_every steps, and the last
    wall_s: float  # training time of the run that filled the cache
    trained: bool  # False: loaded from the checkpoint cache
    result: Any = field(repr=False, default=None)  # the repro.core.train.TrainResult


def train_induction(
    cfg: InductionConfig, n_layer: int, seed: int, *, progress: bool = False, device: torch.device | str = "cpu"
) -> InductionRun:
    """Train (or load from the cache) the `n_layer` attention-only model on the repeated
    sequences, on `device`, and score it on the held-out ones at every snapshot (the induction
    loss curve, 002 "Attention Head Composition") and at the end. The checkpoint key names the
    model (class, config, initial weights) and the dtype that ran, not the device."""
    if n_layer < 1:
        raise ReproError(f"train_induction: n_layer must be ≥ 1 (got {n_layer})")
    data = eval_data(cfg)
    result = train.train(
        lambda s: build_model(cfg, n_layer, s, device),
        train_config(cfg, seed),
        train_tokens=train_stream(cfg),
        val_tokens=data.tokens.reshape(-1),
        progress=progress,
    )
    probe = build_model(cfg, n_layer, seed, device)
    curve = [
        (step, induction_loss(checkpoints.load_snapshot(probe, path), data))
        for step, path in sorted(result.snapshots.items())
    ]
    return InductionRun(n_layer, seed, induction_loss(result.model, data), curve, result.wall_s, result.trained, result)
