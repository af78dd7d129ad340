"""Model lineages for SeedPrint (001 §5, §6.1.2, App B.4): who descends from whom, trained here.

Every model is trained through `repro.core.train.train` (cached by the full description of the run),
so a lineage is a chain of checkpoint keys:

- init(seed): a LLaMA-style model (RMSNorm, SwiGLU, RoPE, untied embeddings; 001 B.4.1) with the
  GPT-2 init of 001 App B.1, drawn from `seed` (`repro.core.models.hf.build_model("llama", ...)`);
- base(seed, data_seed): init(seed) pre-trained on the lineage's corpus (`Lineage(corpus=...)`:
  Brown unless `--corpus` says otherwise; always under the Brown BPE, `token_streams.corpus_tokens`). Runs
  with one `data_seed` see the same batches in the same order whatever the model seed (Table 4c:
  "we fix the training seed to lock the data order");
- continual(base, corpus): a base trained further on another corpus (Table 5: TinyStories / The
  Stack; ours: the standard-library code corpus, under the same Brown BPE so the vocabulary is
  unchanged), with a fresh optimizer and schedule;
- finetune(pretrained model): a short fine-tune of an embedded pretrained model on code (Table 6's
  Llama-2 descendants, at our scale), embeddings frozen (see `finetune_pretrained`).

Optimisation follows 001 Table 14 where it scales down: AdamW β = (0.9, 0.95), peak lr 6e-4
decaying to 6e-5 by cosine, weight decay 0.1, clipping 1.0, bfloat16 autocast where the
hardware has it (the dtype policy, runtime.resolve_dtype). Steps, batch and
width are the profile's (`repro.harness.profiles` "seedprint").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch import nn

from repro.core import checkpoints, scoring, token_streams, train
from repro.core.models.hf import build_model
from repro.ground.runtime import ReproError


@dataclass(frozen=True)
class LineageConfig:
    """Model and training sizes of one lineage experiment (defaults: the ci profile)."""

    d_model: int = 128
    n_layer: int = 4
    n_head: int = 4
    vocab_size: int = 4096  # the Brown byte-level BPE (repro.core.data.brown_tokenizer)
    n_positions: int = 256
    steps: int = 300
    continual_steps: int = 150
    batch_size: int = 16
    seq_len: int = 64
    lr: float = 6e-4  # 001 Table 14
    warmup_steps: int = 30
    weight_decay: float = 0.1
    autocast: str | None = "auto"  # the dtype policy (runtime.resolve_dtype): bf16 only where native
    snapshot_steps: tuple[int, ...] = ()

    @classmethod
    def from_sizes(cls, sizes: dict[str, Any]) -> "LineageConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(sizes) - known)
        if unknown:  # a misspelt size would otherwise be dropped in silence
            raise ReproError(f"lineage sizes {unknown} are not fields of LineageConfig ({', '.join(sorted(known))})")
        return cls(**{k: (tuple(v) if k == "snapshot_steps" else v) for k, v in sizes.items()})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Lineage:
    """Builds and trains (or loads from the cache) the models of one lineage experiment."""

    def __init__(
        self,
        cfg: LineageConfig,
        *,
        corpus: str = "brown",
        progress: bool = False,
        device: torch.device | str = "cpu",
        procs: int = 1,
    ) -> None:
        """`corpus`: what `base` pre-trains on (a repro.core.data corpus name or a directory; the
        claims pass `--corpus`); a continual training names its own (the shifted corpus).
        `device`: where every model of the lineage is built, trained and loaded (the claims pass
        `--device`); the weights are drawn on the CPU first, so they are the same on any device.
        `procs`: the processes `pretrain` trains each job on under torchrun (--train-procs)."""
        self.cfg = cfg
        self.base_corpus = corpus
        self.progress = progress
        self.device = torch.device(device)
        self.procs = procs
        self._corpora: dict[str, tuple[torch.Tensor, torch.Tensor, dict]] = {}

    def corpus(self, name: str | None = None) -> tuple[torch.Tensor, torch.Tensor, dict]:
        """(train, validation, identity) token streams of corpus `name` under the Brown BPE
        (`token_streams.corpus_tokens`); default: the pre-training corpus."""
        name = self.base_corpus if name is None else name
        if name not in self._corpora:
            self._corpora[name] = token_streams.corpus_tokens(name, self.cfg.vocab_size)
        return self._corpora[name]

    def init(self, seed: int) -> nn.Module:
        return init_model(self.cfg, seed).to(self.device)

    def _train_config(
        self, *, steps: int, seed: int, data_seed: int, corpus: str, snapshots: tuple[int, ...] = ()
    ) -> train.TrainConfig:
        c = self.cfg
        return train.TrainConfig(
            steps=steps,
            batch_size=c.batch_size,
            seq_len=c.seq_len,
            lr=c.lr,
            min_lr_ratio=0.1,
            warmup_steps=min(c.warmup_steps, steps),
            weight_decay=c.weight_decay,
            eval_every=steps,
            eval_batches=2,
            data_seed=data_seed,
            model_seed=seed,
            corpus=corpus,
            vocab_size=c.vocab_size,
            autocast=c.autocast,
            snapshot_steps=tuple(s for s in snapshots if s <= steps),
        )

    def base(self, seed: int, data_seed: int = 0) -> train.TrainResult:
        """init(seed) pre-trained on the lineage's corpus with the data order of `data_seed`."""
        tr, va, ident = self.corpus(self.base_corpus)
        cfg = self._train_config(
            steps=self.cfg.steps,
            seed=seed,
            data_seed=data_seed,
            corpus=self.base_corpus,
            snapshots=self.cfg.snapshot_steps,
        )
        return train.train(self.init, cfg, train_tokens=tr, val_tokens=va, data_identity=ident, progress=self.progress)

    def continual(
        self, base: train.TrainResult, *, seed: int, corpus: str = "stdlib-code", data_seed: int = 0
    ) -> train.TrainResult:
        """`base` trained further on `corpus` (fresh optimizer and schedule)."""
        tr, va, ident = self.corpus(corpus)
        cfg = self._train_config(steps=self.cfg.continual_steps, seed=seed, data_seed=data_seed, corpus=corpus)
        return train.train(
            self.init,
            cfg,
            train_tokens=tr,
            val_tokens=va,
            data_identity=ident,
            init_checkpoint=base,
            progress=self.progress,
        )

    def base_job(self, seed: int, data_seed: int = 0) -> dict[str, Any]:
        """`base(seed, data_seed)` as a JSON-able job for another process (repro.core.launch)."""
        from repro.core import launch

        cfg = self._train_config(
            steps=self.cfg.steps,
            seed=seed,
            data_seed=data_seed,
            corpus=self.base_corpus,
            snapshots=self.cfg.snapshot_steps,
        )
        return launch.job(
            "repro.seedprint.lineage:init_for_job", {"sizes": self.cfg.as_dict()}, cfg, corpus=self.base_corpus
        )

    def continual_job(
        self, base: train.TrainResult, *, seed: int, corpus: str = "stdlib-code", data_seed: int = 0
    ) -> dict[str, Any]:
        """`continual(base, ...)` as a job (`base` must be trained already: its key is the init)."""
        from repro.core import launch

        cfg = self._train_config(steps=self.cfg.continual_steps, seed=seed, data_seed=data_seed, corpus=corpus)
        return launch.job(
            "repro.seedprint.lineage:init_for_job",
            {"sizes": self.cfg.as_dict()},
            cfg,
            corpus=corpus,
            init_checkpoint=base,
        )

    def pretrain(self, jobs: list[dict[str, Any]]) -> None:
        """Train the jobs not cached yet, so that `base` / `continual` then load them: with
        `procs` > 1 each on that many processes under torchrun, else on a CPU side by side
        (repro.core.launch.train_jobs); on a GPU with one process they train one by one as called."""
        from repro.core import launch

        launch.train_jobs(jobs, self.procs, self.device)

    def snapshot(self, result: train.TrainResult, step: int, seed: int) -> nn.Module:
        """The weights of `result` after `step` updates (step 0: the init itself)."""
        if step not in result.snapshots:
            raise ReproError(f"no snapshot at step {step}; kept: {sorted(result.snapshots)}")
        return checkpoints.load_snapshot(self.init(seed), result.snapshots[step]).eval()


def init_model(c: LineageConfig, seed: int) -> nn.Module:
    """The lineage's model drawn from `seed`, on the CPU (see the module docstring)."""
    return build_model(
        "llama",
        n_layer=c.n_layer,
        n_head=c.n_head,
        d_model=c.d_model,
        vocab_size=c.vocab_size,
        n_positions=c.n_positions,
        seed=seed,
    )


def init_for_job(seed: int, *, sizes: dict[str, Any]) -> nn.Module:
    """`Lineage.init` from JSON-able arguments: the model factory of a training job, on the CPU."""
    return init_model(LineageConfig.from_sizes(sizes), seed)


def text_tokens(tokenizer: Any, corpus: str, *, max_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, validation) token streams of a repro.core.data corpus (what `--corpus` accepts:
    "brown", "stdlib-code", a datasets corpus or a local directory; `data.corpus_documents`) under
    a pretrained model's own tokenizer, at most `max_tokens` each."""
    from repro.core import data

    splits = data.corpus_documents(corpus, "train"), data.corpus_documents(corpus, "validation")
    return tuple(data.token_ids(tokenizer, docs, max_tokens=max_tokens) for docs in splits)  # type: ignore[return-value]


def finetune_pretrained(
    model: nn.Module,
    tokenizer: Any,
    *,
    name: str,
    corpus: str = "stdlib-code",
    steps: int = 20,
    batch_size: int = 4,
    seq_len: int = 64,
    lr: float = 1e-4,
    autocast: str | None = "auto",
    progress: bool = False,
) -> train.TrainResult:
    """A short full fine-tune of a pretrained model's transformer blocks on `corpus` (001 Table 6 at
    our scale). The token embedding (tied to the LM head in both embedded models; 78% of Gemma-3's
    parameters) stays frozen: on two CPU cores that is what makes the fine-tune affordable, and a
    frozen embedding shares nothing with the hidden-state fingerprint that the blocks do not
    already carry. `model` is trained in place (or loaded from the cache)."""
    from repro.core import lens

    embed = lens.resolve(model, lens.arch_map(model).embed).weight
    for p in model.parameters():
        p.requires_grad_(p is not embed)
    tr, va = text_tokens(
        tokenizer, corpus, max_tokens=max(steps * batch_size * (seq_len + 1) * 2, 4 * 4 * (seq_len + 1))
    )
    cfg = train.TrainConfig(
        steps=steps,
        batch_size=batch_size,
        seq_len=seq_len,
        lr=lr,
        min_lr_ratio=0.1,
        warmup_steps=min(5, steps),
        weight_decay=0.0,
        eval_every=steps,
        eval_batches=1,
        corpus=corpus,
        vocab_size=int(embed.shape[0]),
        autocast=autocast,
    )
    try:
        return train.train(
            model,
            cfg,
            train_tokens=tr,
            val_tokens=va,
            progress=progress,
            data_identity={"model": name, "frozen": "token embedding"},
        )
    finally:
        for p in model.parameters():
            p.requires_grad_(True)


def heldout_windows(tokenizer: Any, corpus: str, *, n: int, seq_len: int) -> torch.Tensor:
    """(n, seq_len + 1) evenly spaced windows of `corpus`'s *validation* split under a pretrained
    model's tokenizer: the held-out text on which a fine-tune's shift is measured (window by
    window, so before and after are paired; `repro.core.scoring.window_losses`)."""
    if n < 2 or seq_len < 1:
        raise ReproError(f"heldout_windows needs n ≥ 2 and seq_len ≥ 1 (got n={n}, seq_len={seq_len})")
    _, val = text_tokens(tokenizer, corpus, max_tokens=4 * n * (seq_len + 1))
    cfg = train.TrainConfig(steps=1, batch_size=n, seq_len=seq_len, warmup_steps=0, eval_batches=1)
    return scoring.val_windows(cfg, val, n)


def weight_change(before: nn.Module, after: nn.Module, *, skip: tuple[str, ...] = ()) -> float:
    """Relative weight change ‖θ_after − θ_before‖ / ‖θ_before‖ (float64) over the parameters the
    two models share by name, leaving out those whose name contains any of `skip` (e.g. a frozen
    embedding, which would only dilute the change)."""
    pa = dict(before.named_parameters())
    num = den = 0.0
    with torch.no_grad():
        for name, q in after.named_parameters():
            if any(s in name for s in skip):
                continue
            if name not in pa or pa[name].shape != q.shape:
                raise ReproError(f"weight_change: parameter {name!r} does not match between the two models")
            p = pa[name].detach().double()
            num += float(((q.detach().double().to(p.device) - p) ** 2).sum())
            den += float((p**2).sum())
    if den == 0:
        raise ReproError("weight_change: no parameters left to compare (or all zero)")
    return (num / den) ** 0.5
