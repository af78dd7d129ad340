"""Size rows that more than one topic's table uses (`repro.ground.sizes.row`): a llama-style
model's shape and a training run's budget, as the topics' sizes.py declare them."""

from __future__ import annotations

from repro.ground.sizes import row


@row
class LM:
    """A trained model's shape (`repro.core.cost.llama_params` reads it)."""

    n_layer: int
    n_head: int
    d_model: int
    vocab_size: int


@row
class Train:
    """A training run (`repro.core.train_config.TrainConfig`'s budget): `steps` of `batch_size`
    windows of `seq_len` tokens, lr after `warmup_steps`, held-out loss every `eval_every` steps on
    `eval_batches` batches, `autocast` the dtype policy's ("auto") or a dtype named on purpose."""

    steps: int
    batch_size: int
    seq_len: int
    lr: float
    warmup_steps: int
    eval_every: int
    eval_batches: int
    autocast: str | None
