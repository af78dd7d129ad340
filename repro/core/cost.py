"""What a job costs: the unit every topic's planner returns, and the formulas it is costed by.

A topic's planner (``repro/<topic>/sizes.py``, ``PLANNERS``) turns its profile rows into `Job`s:
models trained or probed, their parameter counts (transformers models instantiated on the
``meta`` device by `hf_params`: no memory, no time; the suite's TinyDecoder counted in closed
form by `tiny_params`, tested equal to a real instance), tokens trained or evaluated, the batch.
``repro plan`` (``repro.harness.plan``) collects them and adds the device, the time and what is
missing.

FLOPs follow Kaplan et al. (2020): a forward pass costs 2·N + 2·L·T·d per token (N non-embedding
parameters plus the LM head's V·d, the attention term over a context of T), training three
forward passes (6·N·D + 6·L·T·d·D). Memory: training holds float32 weights, gradients and two
AdamW moments (16 bytes per parameter) plus bfloat16 activations of ≈ L·B·T·(34·d + 5·H·T)
bytes (Korthikanti et al. 2022, no recomputation); inference the weights and one layer's
activations. Where the N·D form does not describe a job, the job says so: `attn_layers` (layers
with a softmax attention term: 0 for MLP-only stacks and the lens reads), `extra_flops` (per
model: RS-1/2's decomposition pass, RS-8's final distributions), `held_bytes` (tensors an
experiment keeps through its pass, e.g. every layer's float32 hidden states) and `peak_bytes` (a
job whose memory is not weights and activations: the tuned lens's (L, tokens, V) logits).

Stdlib at import; torch and the model code only inside `hf_params` and `embedded`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from repro.ground.sizes import Profile, Sizes

RUN = "--corpus"  # Job.corpus of a job that reads the run's corpus (the claims' text), not a fixed one
# Parameters of the embedded pretrained models (their config.json, tied embeddings counted once);
# their width, depth, heads and vocabulary are `repro.core.models.pretrained.EMBEDDED_MODELS`'.
EMBEDDED_PARAMS = {"smollm2-135m": 134_515_008, "gemma3-270m": 268_098_176}


@dataclass
class Job:
    """One unit of work of an experiment: `models` runs of one model shape."""

    experiment: str
    claims: str
    what: str
    kind: str  # "train" | "infer"
    models: int
    params: int  # per model, embeddings included
    d: int
    L: int
    H: int
    V: int
    T: int  # context length
    tokens: int  # per model: trained (train) or evaluated (infer)
    batch: int = 1  # sequences per step (memory)
    corpus: str | None = None  # the corpus a training job reads (RUN: the run's --corpus)
    notes: str = ""
    attn_layers: int | None = None  # layers with a softmax attention term (None: L)
    extra_flops: float = 0.0  # per model, work the N·D form does not cover (stated in `notes`)
    held_bytes: float = 0.0  # kept through the pass on top of the formula (e.g. hidden states)
    peak_bytes: float | None = None  # the job's own memory estimate, where the formula does not apply

    @property
    def flops(self) -> float:
        L = self.L if self.attn_layers is None else self.attn_layers
        per_model = (train_flops if self.kind == "train" else forward_flops)(
            self.params, L, self.T, self.d, self.tokens
        )
        return self.models * (per_model + self.extra_flops)

    @property
    def memory_bytes(self) -> float:
        if self.peak_bytes is not None:
            return self.peak_bytes
        if self.kind == "train":
            return 16.0 * self.params + activation_bytes(self.L, self.batch, self.T, self.d, self.H) + self.held_bytes
        return 2.0 * self.params + activation_bytes(1, self.batch, self.T, self.d, self.H) + self.held_bytes


#: experiment -> its jobs under a profile (a topic's ``PLANNERS``)
Planner = Callable[[Profile], list[Job]]


def of_row(planner: Callable[[Sizes], list[Job]], experiment: str) -> Planner:
    """The planner of one experiment's row: `planner` applied to the profile's sizes of `experiment`."""
    return lambda prof: planner(prof.sizes(experiment))


def forward_flops(params: int, L: int, T: int, d: int, tokens: int) -> float:
    """2·N·D + 2·L·T·d·D (Kaplan et al. 2020, Table 1)."""
    return 2.0 * params * tokens + 2.0 * L * T * d * tokens


def train_flops(params: int, L: int, T: int, d: int, tokens: int) -> float:
    """Forward and backward: three forward passes, 6·N·D + 6·L·T·d·D."""
    return 3.0 * forward_flops(params, L, T, d, tokens)


def activation_bytes(L: int, batch: int, T: int, d: int, H: int) -> float:
    """bfloat16 activations kept for the backward pass, L·B·T·(34·d + 5·H·T) bytes."""
    return float(L) * batch * T * (34.0 * d + 5.0 * H * T)


def steps_tokens(train: dict) -> int:
    """Tokens one model trains on: steps × batch × sequence length of a `train` row."""
    return int(train["steps"]) * int(train["batch_size"]) * int(train["seq_len"])


def embedded() -> dict[str, dict[str, int]]:
    """Architecture facts of the embedded pretrained models, for the jobs that run on them, in the
    run's order (RS-8's `lens.models` counts from the first): parameters, width, depth, vocabulary,
    heads."""
    from repro.core.models.pretrained import EMBEDDED_MODELS

    return {
        name: dict(params=EMBEDDED_PARAMS[name], d=m.d_model, L=m.n_layers, V=m.vocab_size, H=m.n_heads)
        for name, m in EMBEDDED_MODELS.items()
    }


# --------------------------------------------------------------------------- parameter counts


def hf_params(arch: str, **config: Any) -> int:
    """Exact parameter count of a `repro.core.models.hf` architecture, instantiated on the meta device
    (tied embeddings counted once)."""
    import torch

    from repro.core.models.hf import _model_class, build_config

    cfg = build_config(arch, **config)
    with torch.device("meta"):
        model = _model_class(arch)(cfg)
    return sum(p.numel() for p in model.parameters())  # parameters() yields a tied tensor once


def llama_params(m: dict, T: int) -> tuple[int, dict]:
    """(parameters, shape) of a `model` row's LLaMA (n_layer, n_head, d_model, vocab_size) at context T."""
    shape = dict(n_layer=m["n_layer"], n_head=m["n_head"], d_model=m["d_model"], vocab_size=m["vocab_size"])
    return hf_params("llama", n_positions=T, **shape), shape


def _norm_params(d: int, norm: str, bias: bool) -> int:
    return {"layernorm": 2 * d if bias else d, "rmsnorm": d, "none": 0}[norm]


def tiny_block_params(
    d: int,
    f: int,
    *,
    block: str = "full",
    norm: str = "layernorm",
    bias: bool = True,
    attention: str = "softmax",
    value_identity: bool = False,
) -> int:
    """One block of `repro.core.models.tiny.TinyDecoder` (GELU/ReLU/tanh MLP): a norm and W_Q, W_K
    (softmax attention), W_V, W_O (unless Attn0's identity values) for "attn"; a norm, W_up and
    W_down for "mlp"; both for "full"; biases on every linear layer and LayerNorm when `bias`."""
    b = 1 if bias else 0
    mats = (2 if attention == "softmax" else 0) + (0 if value_identity else 2)
    n = 0
    if block in ("full", "attn"):
        n += _norm_params(d, norm, bias) + mats * (d * d + b * d)
    if block in ("full", "mlp"):
        n += _norm_params(d, norm, bias) + 2 * d * f + b * (f + d)
    return n


def tiny_params(
    vocab_size: int,
    d_model: int,
    n_layer: int,
    d_ff: int | None = None,
    max_len: int = 1024,
    tie: bool = True,
    positions: str = "learned",
    bias: bool = True,
    *,
    block: str = "full",
    norm: str = "layernorm",
    final_norm: bool = True,
    attention: str = "softmax",
    value_identity: bool = False,
) -> int:
    """Closed form of `repro.core.models.tiny.TinyDecoder` (defaults: LayerNorm, a GELU MLP, the
    GPT-2 style of the causal-shift models): `tiny_block_params` per block; token (and learned
    position) embeddings, the final norm, the LM head unless tied. vocab_size 0: no embedding or
    head (Gaussian inputs)."""
    f = 4 * d_model if d_ff is None else d_ff
    block_n = tiny_block_params(
        d_model, f, block=block, norm=norm, bias=bias, attention=attention, value_identity=value_identity
    )
    emb = vocab_size * d_model + (max_len * d_model if positions == "learned" else 0)
    head = 0 if tie else vocab_size * d_model
    return n_layer * block_n + emb + (_norm_params(d_model, norm, bias) if final_norm else 0) + head
