"""What a job costs: the unit every topic's planner returns, and the formulas it is costed by.

A topic's planner (``repro/<topic>/sizes.py``, ``PLANNERS``) turns its profile rows into `Job`s:
models trained or probed, their parameter counts (transformers models instantiated on the
``meta`` device by `hf_params`: no memory, no time; the suite's TinyDecoder counted in closed
form by `tiny_params`, tested equal to a real instance), tokens trained or evaluated, the batch —
each built by keyword (`Job.of`: d, L, H, V from a model row, T, batch, tokens and dtype from a
training row).
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

Time (`job_seconds`, for a device's `Rates`) is more than FLOPs: a job's FLOPs run at the
device's peak in the dtype they run in (`dtype`, `fp32_flops`: the suite leaves float32 matmuls
in float32, no TF32, so they run at the float32 peak, 1/15 of an H100's bfloat16 one) times the
utilisation; `mem_bytes` (kernels that move memory rather than multiply: norms, activations,
softmax over a materialised map, casts) at the device's bandwidth; `host_normals` (weights or
inputs a CPU generator draws before the device sees them) and `h2d_bytes` (tensors built on the
host and copied over) at the host's rates; `dispatches` (torch ops the host hands to the device
one by one) at the host's cost per op. The host draws come first, then the device's work and the
host's dispatching overlap: time = host + max(compute + memory, dispatch). A job that is the first
to read a pretrained model in a claim file's process also pays its `loads` (the model read from
the cache, the corpus tokenised for it, the GPU's start), a fitted host constant. What each term counts
for a kind of job is measured on the CPU, not guessed: `op_census` runs the job's own torch code
(a transformers layer's forward, one training step) under a dispatch mode and counts the ops and
the bytes the non-matmul kernels read and write (`hf_layer_traffic`, `train_step_dispatches`).

Stdlib at import; torch and the model code only inside the functions that need them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from repro.ground.sizes import Profile, Sizes

RUN = "--corpus"  # Job.corpus of a job that reads the run's corpus (the claims' text), not a fixed one
# Parameters of the embedded pretrained models (their config.json, tied embeddings counted once);
# their width, depth, heads and vocabulary are `repro.core.models.embedded.EMBEDDED_MODELS`'.
EMBEDDED_PARAMS = {"smollm2-135m": 134_515_008, "gemma3-270m": 268_098_176}
# A model row `Job.of` takes: a profile's model-size row (its keys -> the Job fields they give), which
# may also hold MODEL_SHAPE's keys (they shape the model's parameter count, no field of the job), or
# one of `embedded()`'s rows, which holds the job's fields themselves.
MODEL_ROW = {"d_model": "d", "n_layer": "L", "n_head": "H", "vocab_size": "V"}
MODEL_SHAPE = ("max_len", "n_positions", "d_ff")
EMBEDDED_ROW = ("params", "d", "L", "H", "V")
# A training row's keys `Job.of` reads (it may hold more: lr, warm-up, evaluation…)
TRAIN_ROW = ("seq_len", "batch_size", "steps", "autocast")


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
    # what the time model adds to the FLOPs (per model; `job_seconds`):
    dtype: str = "auto"  # "auto": the dtype policy's (bfloat16 on a GPU); "float32": matmuls in float32
    fp32_flops: float = 0.0  # FLOPs in float32 whatever `dtype` (float32 LM heads), beyond the formula
    mem_bytes: float = 0.0  # bytes moved by memory-bound kernels (norms, activations, softmax, casts)
    host_normals: float = 0.0  # normals drawn by a CPU generator (weights or inputs made on the host)
    h2d_bytes: float = 0.0  # bytes built on the host and copied to the device
    dispatches: float = 0.0  # torch ops the host dispatches one by one (eager launches)
    loads: int = 0  # pretrained models this job is the first to load in a claim file's process (per job)
    # parameters an output head holds that runs only where `fp32_flops` counts it (a probe's head at
    # its probe positions, `logits_to_keep`), not at every token: left out of 2·N·D
    head_params: int = 0

    @classmethod
    def of(cls, *, model: Mapping[str, int], train: Mapping[str, Any] | None = None, **fields: Any) -> Job:
        """The job of a model row and (for a training job) a training row, every other field by keyword.

        `model`: a profile's model-size row (d_model, n_layer, n_head, vocab_size; MODEL_SHAPE's keys
        allowed beside them) gives d, L, H, V; an `embedded()` row gives params too. `train` (seq_len,
        batch_size, steps, autocast; other keys ignored) gives T, batch, the tokens one model trains on
        (`steps_tokens`) and the dtype (the policy's under autocast, else float32). A field given by
        keyword overrides what a row gives (L=1: one block of the model). A model row with a key
        missing or one it should not hold is a TypeError, as a constructor's unknown field is."""
        given = model_fields(model)
        if train is not None:
            missing = [k for k in TRAIN_ROW if k not in train]
            if missing:
                raise TypeError(f"Job.of: the training row lacks {', '.join(missing)}")
            given.update(
                T=train["seq_len"],
                batch=train["batch_size"],
                tokens=steps_tokens(train),
                dtype="auto" if train["autocast"] else "float32",
            )
        return cls(**{**given, **fields})

    @property
    def flops(self) -> float:
        L = self.L if self.attn_layers is None else self.attn_layers
        per_model = (train_flops if self.kind == "train" else forward_flops)(
            self.params - self.head_params, L, self.T, self.d, self.tokens
        )
        return self.models * (per_model + self.extra_flops + self.fp32_flops)

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


def model_fields(model: Mapping[str, int]) -> dict[str, int]:
    """The Job fields a model row gives (`Job.of`): d, L, H, V of a model-size row (MODEL_ROW),
    params, d, L, H, V of an `embedded()` row (EMBEDDED_ROW). A TypeError names a key the row lacks
    or one neither kind of row holds."""
    if set(model) == set(EMBEDDED_ROW):
        return {k: model[k] for k in EMBEDDED_ROW}
    missing = [k for k in MODEL_ROW if k not in model]
    unknown = [k for k in model if k not in MODEL_ROW and k not in MODEL_SHAPE]
    said = ([f"lacks {', '.join(missing)}"] if missing else []) + ([f"holds {', '.join(unknown)}"] if unknown else [])
    if said:
        raise TypeError(f"Job.of: the model row {' and '.join(said)} (a model-size row: {', '.join(MODEL_ROW)})")
    return {field: model[k] for k, field in MODEL_ROW.items()}


def model_shape(row: Mapping[str, Any]) -> dict[str, int]:
    """The model-size row inside a row that holds more (born-biased's flat rows, the seedprint
    lineage, random_init): its d_model, n_layer, n_head, vocab_size."""
    return {k: row[k] for k in MODEL_ROW}


def steps_tokens(train: Mapping[str, Any]) -> int:
    """Tokens one model trains on: steps × batch × sequence length of a `train` row."""
    return int(train["steps"]) * int(train["batch_size"]) * int(train["seq_len"])


def embedded() -> dict[str, dict[str, int]]:
    """Architecture facts of the embedded pretrained models, for the jobs that run on them, in the
    run's order (RS-8's `lens.models` counts from the first): parameters, width, depth, vocabulary,
    heads."""
    from repro.core.models.embedded import EMBEDDED_MODELS

    return {
        name: dict(params=EMBEDDED_PARAMS[name], d=m.d_model, L=m.n_layers, V=m.vocab_size, H=m.n_heads)
        for name, m in EMBEDDED_MODELS.items()
    }


# --------------------------------------------------------------------------- parameter counts


@functools.lru_cache(maxsize=None)  # a plan asks for the same shapes in every profile it plans
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
    shape = model_shape(m)
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


# --------------------------------------------------------------------------- time on a device


@dataclass(frozen=True)
class Rates:
    """What one device and its host do per second: what `job_seconds` divides each kind of work by.
    `math.inf` for a rate means that work costs nothing extra there (a CPU: its one FLOP rate,
    fitted on a whole run, already holds its draws, copies and dispatching)."""

    tflops: float  # dense matmul peak in the dtype policy's dtype (bfloat16 on a GPU), TFLOP/s
    tflops_fp32: float  # the same in float32 (no TF32)
    utilisation: float  # the fraction of either peak a job's FLOPs reach
    bandwidth_gbs: float = math.inf  # device memory, GB/s, as the datasheet gives it
    bandwidth_utilisation: float = 1.0  # the fraction of it memory-bound kernels reach
    host_normals_per_s: float = math.inf  # normals a CPU generator draws per second on the host
    h2d_gbs: float = math.inf  # host-to-device copies, GB/s
    dispatch_s: float = 0.0  # host seconds per dispatched torch op
    load_s: float = 0.0  # host seconds a claim file's first test on a pretrained model spends before it


TERMS = ("compute", "memory", "host", "dispatch")


def job_seconds(job: Job, r: Rates) -> dict[str, float]:
    """The job's seconds on a device at rates `r`, by term (TERMS) and in all ("total"): its FLOPs at
    the peak of the dtype they run in (× utilisation), its memory-bound bytes at the bandwidth, its
    host draws and copies, its dispatches; host + max(compute + memory, dispatch), since the host
    draws before the device works and dispatches while it works."""
    n = job.models
    fp32 = n * job.fp32_flops if job.dtype != "float32" else job.flops
    policy = job.flops - fp32
    compute = policy / (r.tflops * 1e12 * r.utilisation) + fp32 / (r.tflops_fp32 * 1e12 * r.utilisation)
    memory = n * job.mem_bytes / (r.bandwidth_gbs * 1e9 * r.bandwidth_utilisation)
    host = n * (job.host_normals / r.host_normals_per_s + job.h2d_bytes / (r.h2d_gbs * 1e9)) + job.loads * r.load_s
    dispatch = n * job.dispatches * r.dispatch_s
    return dict(
        compute=compute, memory=memory, host=host, dispatch=dispatch, total=host + max(compute + memory, dispatch)
    )


# --------------------------------------------------------------------------- what the torch code does


@dataclass(frozen=True)
class OpCensus:
    """The aten ops a piece of torch code dispatches: all of them (`dispatches`: each a host-side
    call), those that run a kernel (`kernels`: not views), and the bytes the kernels that are not
    matmuls read and write (`bytes`: memory-bound work; a matmul's traffic hides under its FLOPs)."""

    dispatches: int
    kernels: int
    bytes: int

    def __sub__(self, other: OpCensus) -> OpCensus:
        return OpCensus(self.dispatches - other.dispatches, self.kernels - other.kernels, self.bytes - other.bytes)


MATMULS = frozenset({"mm", "addmm", "bmm", "baddbmm", "_addmm_activation"})
# host-side ops with no kernel: a CPU scalar read (an optimiser's step count on the host)
NO_KERNEL = frozenset({"_local_scalar_dense"})


def op_census(fn: Callable[[], Any]) -> OpCensus:
    """Run `fn` under a torch dispatch mode and count what it dispatches (`OpCensus`). Run it on
    the CPU at the job's own shapes, or with a narrower width where only counts are wanted: the
    aten ops are the ones a GPU runs (transformers' SDPA takes the flash path on the CPU as on a
    GPU, so no T × T map is counted where none is made)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    counts = [0, 0, 0]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small ops: one thread is fastest, and a busy machine does not thrash

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            counts[0] += 1
            name = func._schema.name.split("::")[-1]
            if func.is_view or name in NO_KERNEL:
                return out
            counts[1] += 1
            if name not in MATMULS:
                tensors = tree_flatten((args, kwargs, out))[0]
                counts[2] += sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))
            return out

    try:
        with _Count():
            fn()
    finally:
        torch.set_num_threads(threads)
    return OpCensus(*counts)


def remembered(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` through the measurement cache (`repro.core.memo`: keyed by the
    arguments, the library versions and the source `fn` reaches), so a census runs once per code
    version and `repro plan` stays fast."""
    from repro.core import memo

    return memo.cached(name)(fn)(*args, **kwargs)


@functools.lru_cache(maxsize=None)
def hf_layer_traffic(arch: str, d_model: int, n_head: int, d_ff: int | None = None) -> tuple[float, int, int]:
    """(memory-bound bytes per token, dispatches per forward, dispatches per forward outside the
    layers) of one decoder layer of a `repro.core.models.hf` architecture: `count_hf_layer`, cached."""
    return remembered("census-hf-layer", count_hf_layer, arch, d_model, n_head, d_ff)


def count_hf_layer(arch: str, d_model: int, n_head: int, d_ff: int | None = None) -> tuple[float, int, int]:
    """(memory-bound bytes per token, dispatches per forward, dispatches per forward outside the
    layers) of one decoder layer of a `repro.core.models.hf` architecture in bfloat16 inference
    (transformers' SDPA, `logits_to_keep=1` as the probes run), counted by `op_census` on the CPU
    as a 2-layer model minus a 1-layer one on 2 × 64 tokens (uninitialised weights: nothing is
    drawn). Bytes scale with the tokens, dispatches with the forwards."""
    import torch

    from repro.core.models.hf import _model_class, build_config

    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # older layout: an init that is paid for once here
        import contextlib

        no_init_weights = contextlib.nullcontext

    def count(n_layer: int) -> OpCensus:
        cfg = build_config(
            arch, n_layer=n_layer, n_head=n_head, d_model=d_model, vocab_size=64, n_positions=64, d_ff=d_ff
        )
        cfg._attn_implementation = "sdpa"
        with no_init_weights():
            model = _model_class(arch)(cfg).to(torch.bfloat16).eval()
        ids = torch.zeros((2, 64), dtype=torch.long)
        with torch.no_grad():
            return op_census(lambda: model(input_ids=ids, logits_to_keep=1))

    one, two = count(1), count(2)
    layer = two - one
    return layer.bytes / 128, layer.dispatches, one.dispatches - layer.dispatches


@functools.lru_cache(maxsize=None)
def train_step_dispatches(family: str, n_layer: int, n_head: int, autocast: bool = True, **shape: Any) -> int:
    """Torch ops one training step dispatches: `count_train_step`, cached."""
    return remembered("census-train-step", count_train_step, family, n_layer, n_head, autocast, **shape)


def count_train_step(family: str, n_layer: int, n_head: int, autocast: bool = True, **shape: Any) -> int:
    """Torch ops one training step dispatches (`repro.core.train`'s loop: the forward, under a
    bfloat16 autocast with `autocast`, the float32 cross-entropy, backward, gradient clipping and
    AdamW, both multi-tensor as on a GPU, and the loss read back), counted by `op_census` on a
    narrow copy of the model (8 per head, vocabulary 64, 2 × 8 tokens: the count follows the
    layers, not the width). `family`: "tiny" (`repro.core.models.tiny.TinyDecoder`, `shape` its
    TinyConfig fields) or a `repro.core.models.hf` architecture."""
    import contextlib

    import torch
    import torch.nn.functional as F

    d = 8 * n_head
    if family == "tiny":
        from repro.core.models.tiny import TinyConfig, TinyDecoder

        cfg = TinyConfig(**{**shape, "vocab_size": 64, "d_model": d, "d_ff": None, "n_layer": n_layer})
        cfg = TinyConfig(**{**cfg.__dict__, "n_head": n_head, "max_len": 16})
        model = TinyDecoder(cfg, torch.Generator().manual_seed(0))
        kwargs: dict[str, Any] = {}
    else:
        from repro.core.models.hf import build_model

        model = build_model(family, n_layer=n_layer, n_head=n_head, d_model=d, vocab_size=64, n_positions=16, seed=0)
        kwargs = {"use_cache": False}
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    window = torch.zeros((2, 9), dtype=torch.long)

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext():
            logits = model(input_ids=window[:, :-1], **kwargs).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), window[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        float(loss.detach())

    step()  # the optimiser's state is made on the first step: count a later one
    return op_census(step).dispatches


def hf_probe_terms(
    arch: str,
    *,
    params: int,
    d: int,
    L: int,
    H: int,
    V: int,
    n_seq: int,
    T: int,
    lengths: int = 1,
    batch: int = 64,
    drawn_on_host: bool = True,
) -> dict[str, float]:
    """The time model's fields (per model) of a random-init transformers model built and probed as
    `repro.born_biased.preference_probe` does: its layers' memory-bound traffic and dispatches
    (`hf_layer_traffic`) over `n_seq` sequences of T tokens in batches of `batch`; the LM head at
    `lengths` positions per sequence in float32; with `drawn_on_host`, every weight drawn by a
    CPU generator in float32 and the model copied over in bfloat16 (`hf.build_model`)."""
    per_token, per_layer, fixed = hf_layer_traffic(arch, d, H)
    return dict(
        head_params=V * d,  # the head runs at the probe positions only (`fp32_flops`)
        mem_bytes=per_token * L * n_seq * T,
        dispatches=(per_layer * L + fixed) * math.ceil(n_seq / batch),
        fp32_flops=2.0 * V * d * n_seq * lengths,
        host_normals=float(params) if drawn_on_host else 0.0,
        h2d_bytes=2.0 * params if drawn_on_host else 0.0,
    )
