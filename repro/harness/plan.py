"""What a profile will cost before any GPU hour is spent (issue 22): `repro plan --profile paper`.

For every experiment row of `repro.harness.profiles` the jobs it runs — models trained or probed, with
their parameter counts (transformers models instantiated on the ``meta`` device: no memory, no
time; the suite's TinyDecoder counted in closed form, tested equal to a real instance), tokens
trained and evaluated, FLOPs, peak memory per device — then an estimated time on a stated device
and the resources the profile needs that are missing, one line each.

FLOPs follow Kaplan et al. (2020): a forward pass costs 2·N + 2·L·T·d per token (N non-embedding
parameters plus the LM head's V·d, the attention term over a context of T), training three
forward passes (6·N·D + 6·L·T·d·D). Memory: training holds float32 weights, gradients and two
AdamW moments (16 bytes per parameter) plus bfloat16 activations of ≈ L·B·T·(34·d + 5·H·T)
bytes (Korthikanti et al. 2022, no recomputation); inference the weights and one layer's
activations. Time = FLOPs / (peak × utilisation) on one device (`plan_device`): a CPU at the rate
of a float32 (the dtype policy's) matmul timed now, a GPU `repro plan` knows by name at its
datasheet's dense bfloat16 peak (`GPUS`: one H100 SXM, 989 TFLOP/s, is `plan()`'s default), another
GPU at its measured matmul rate; 40% model-FLOPs utilisation of a GPU's rate, 80% of a CPU's
measured one (`CPU_UTILISATION`) — an estimate to plan with, not a measurement. `repro plan`
plans for the device the run would use (`--device auto`).
Where the N·D form does not describe a job, the job says so: `attn_layers` (layers with a softmax
attention term: 0 for MLP-only stacks and the lens reads), `extra_flops` (per model: RS-1/2's
decomposition pass, RS-8's final distributions), `held_bytes` (tensors an experiment keeps
through its pass, e.g. every layer's float32 hidden states) and `peak_bytes` (a job whose memory
is not weights and activations: the tuned lens's (L, tokens, V) logits).

Resources: the corpus each training job reads — the run's `--corpus` (`plan(corpus=...)`, the
same names and directories, through `repro.core.data.corpus_documents`) or the corpus a claim
fixes (stdlib-code) — against its tokens (`corpus_train_tokens`), and the vocabulary of the
suite's Brown BPE against every row's `vocab_size` (`bpe_vocab_lower` / `bpe_vocab_upper`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable, Iterable

from repro.ground.runtime import DEVICES, ReproError
from repro.harness.profiles import SIZES, Profile, bb_1_2_sizes, get_profile

# GPUs `repro plan --device NAME` knows by name (the datasheets, SXM parts): dense bfloat16 peak
# TFLOP/s and memory per device. A name here inside torch's name of the local GPU (lower case)
# gives that GPU these figures; any other GPU is measured.
GPUS = {
    "h100": {"label": "NVIDIA H100 SXM", "tflops": 989.0, "memory_gib": 80.0},
    "h200": {"label": "NVIDIA H200 SXM", "tflops": 989.0, "memory_gib": 139.0},
    "a100": {"label": "NVIDIA A100 SXM 80GB", "tflops": 312.0, "memory_gib": 80.0},
}
H100_BF16_TFLOPS = GPUS["h100"]["tflops"]
DEFAULT_UTILISATION = 0.4  # model-FLOPs utilisation of a GPU's rate
# ... and of a CPU's measured matmul rate: the float32-forced ci run took 30–32 min on the reference
# CPU where its FLOPs at that CPU's matmul rate (0.15 TFLOP/s) come to 25 min (README, 2026-11-27)
CPU_UTILISATION = 0.8
# the matmul `matmul_tflops` times on a device not in GPUS: (n × n) @ (n × n), best of PROBE_REPEATS
# after a warm-up. 1024 on a CPU: ≈ 2 GFLOP, tens of ms on 2 cores; a GPU needs 8192 to be busy.
PROBE_N = {"cpu": 1024, "cuda": 8192}
PROBE_REPEATS = 3
# Token counts of the embedded corpora under the suite's byte-level BPE (V = 4096, measured
# 2026-11-23 from the token cache): Brown train 1,311,112 / validation 181,874; the stdlib code
# corpus 5,612,449 / 595,769. A larger vocabulary gives a few % fewer tokens.
CORPUS_TOKENS = {"brown": 1_311_112, "stdlib-code": 5_612_449}
# Bytes of UTF-8 text per token of the suite's BPE (V = 4096), from the figures above: Brown's
# train split is 4,681,175 bytes (3.57 per token), stdlib code's 9,150,253 (1.63): a corpus's
# own ratio is measured on its text (`corpus_train_tokens`), never assumed.
SAMPLE_BYTES = 4 * 2**20  # a larger --corpus is tokenized this far, and the rest extrapolated
RUN = "--corpus"  # Job.corpus of a job that reads the run's corpus (the claims' text), not a fixed one
# Architecture facts of the embedded pretrained models (their config.json), for the inference
# jobs that run on them: parameters, width, depth, vocabulary; in the run's order
# (repro.core.models.pretrained.EMBEDDED_MODELS: RS-8's `lens.models` counts from the first).
EMBEDDED = {
    "smollm2-135m": dict(params=134_515_008, d=576, L=30, V=49_152, H=9),
    "gemma3-270m": dict(params=268_098_176, d=640, L=18, V=262_144, H=4),
}
# Sizes the residual-stream topic fixes in code, not in the profile (tests/test_plan.py checks
# them against repro.residual_stream): RS-3's Brown BPE, and InductionConfig's defaults that
# RS-7's `induction.config` overrides.
GRAD_V = 4096
BB5_CHUNK = 256  # repro.born_biased.init_bias.BB5_CHUNK: BB-5's sequences per pass
INDUCTION = dict(vocab_size=64, seq_len=32, d_model=64, n_head=4, steps=1000, batch_size=64)


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


def forward_flops(params: int, L: int, T: int, d: int, tokens: int) -> float:
    """2·N·D + 2·L·T·d·D (Kaplan et al. 2020, Table 1)."""
    return 2.0 * params * tokens + 2.0 * L * T * d * tokens


def train_flops(params: int, L: int, T: int, d: int, tokens: int) -> float:
    """Forward and backward: three forward passes, 6·N·D + 6·L·T·d·D."""
    return 3.0 * forward_flops(params, L, T, d, tokens)


def activation_bytes(L: int, batch: int, T: int, d: int, H: int) -> float:
    """bfloat16 activations kept for the backward pass, L·B·T·(34·d + 5·H·T) bytes."""
    return float(L) * batch * T * (34.0 * d + 5.0 * H * T)


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


# --------------------------------------------------------------------------- jobs per experiment


def _steps_tokens(train: dict) -> int:
    return int(train["steps"]) * int(train["batch_size"]) * int(train["seq_len"])


def _llama(m: dict, T: int) -> tuple[int, dict]:
    shape = dict(n_layer=m["n_layer"], n_head=m["n_head"], d_model=m["d_model"], vocab_size=m["vocab_size"])
    return hf_params("llama", n_positions=T, **shape), shape


def _causal_shift(s: dict) -> list[Job]:
    m, t = s["model"], s["train"]
    L = m["n_layer"]
    n_models = len(s["seeds"]) + L + (len(s["seeds"]) - 1) + len(s["seeds"]) + 1  # baseline, cuts, cut@0, α=0, gate
    p = tiny_params(m["vocab_size"], m["d_model"], L, max_len=m["max_len"])
    jobs = [
        Job(
            "causal_shift",
            "CS-3…CS-6",
            "GPT-2-style variants (baseline, a cut per layer, α = 0, gating)",
            "train",
            n_models,
            p,
            m["d_model"],
            L,
            m["n_head"],
            m["vocab_size"],
            t["seq_len"],
            _steps_tokens(t),
            batch=t["batch_size"],
            corpus=RUN,
        )
    ]
    a = s["align"]
    for name, e in EMBEDDED.items():
        toks = a["n_seq"] * a["seq_len"]
        # the decoding reads every layer's states through the V × d dictionary: (L+1)·2·V·d per token
        jobs.append(
            Job(
                "causal_shift",
                "CS-1, CS-2",
                f"{name}: logit-lens decoding of every layer",
                "infer",
                1,
                e["params"] + (e["L"] + 1) * e["V"] * e["d"],
                e["d"],
                e["L"],
                e["H"],
                e["V"],
                a["seq_len"],
                toks,
                batch=a["n_seq"],
                notes="params include (L+1)·V·d of per-layer decoding",
            )
        )
    return jobs


def _sinks(s: dict) -> list[Job]:
    t, m = s["train"], s["model"]
    p, _ = _llama(m, t["seq_len"])
    n = 3 + (3 if s.get("deviation") else 0)
    # SK-1: the first block of each variant and seed on Gaussian inputs (no embeddings, no head)
    i, T = s["init"], t["seq_len"]
    block = hf_params("llama", n_positions=T, **{**_llama(m, T)[1], "n_layer": 2}) - hf_params(
        "llama", n_positions=T, **{**_llama(m, T)[1], "n_layer": 1}
    )
    return [
        Job(
            "sinks",
            "SK-2, SK-3",
            "nano LLaMA trio (baseline, amplification, attenuation)" + (" and the deviation trio" if n == 6 else ""),
            "train",
            n,
            p,
            m["d_model"],
            m["n_layer"],
            m["n_head"],
            m["vocab_size"],
            t["seq_len"],
            _steps_tokens(t),
            batch=t["batch_size"],
            corpus=RUN,
        ),
        Job(
            "sinks",
            "SK-1",
            "first block of each variant at init, Gaussian inputs",
            "infer",
            3 * len(i["seeds"]),
            block,
            m["d_model"],
            1,
            m["n_head"],
            m["vocab_size"],
            T,
            i["n_seq"] * T,
            batch=10,
            notes="float32 eager attention with every map recorded: memory-bound, so the FLOPs undercount it "
            "≈ 20×: measured alone on an H200 (2026-11-26, b1086f5) 3.5 s per seed and variant (200 "
            "batches of 10 sequences of 2,048, ≈ 17 ms each), the fixture 174 s for the 48",
        ),
    ]


def _context_axis(s: dict) -> list[Job]:
    t, m = s["train"], s["model"]
    p, _ = _llama(m, t["seq_len"])
    n = 2 * len(s["seeds"])  # baseline and axis-drop variants per seed
    return [
        Job(
            "context_axis",
            "CA-8",
            "baseline and context-axis LMs per seed",
            "train",
            n,
            p,
            m["d_model"],
            m["n_layer"],
            m["n_head"],
            m["vocab_size"],
            t["seq_len"],
            _steps_tokens(t),
            batch=t["batch_size"],
            corpus=RUN,
            notes="the context-axis batches' S× attention term is not in the estimate",
        )
    ]


def _seedprint(s: dict) -> list[Job]:
    c = s["lineage"]
    p = hf_params(
        "llama",
        n_layer=c["n_layer"],
        n_head=c["n_head"],
        d_model=c["d_model"],
        vocab_size=c["vocab_size"],
        n_positions=c.get("n_positions", c["seq_len"]),
    )
    seeds = len(s["seeds"])
    jobs = [
        Job(
            "seedprint",
            "SP-1…SP-4",
            "lineage models (pretraining)",
            "train",
            seeds,
            p,
            c["d_model"],
            c["n_layer"],
            c["n_head"],
            c["vocab_size"],
            c["seq_len"],
            c["steps"] * c["batch_size"] * c["seq_len"],
            batch=c["batch_size"],
            corpus=RUN,
        ),
        Job(
            "seedprint",
            "SP-4",
            "continual training on code",
            "train",
            seeds,
            p,
            c["d_model"],
            c["n_layer"],
            c["n_head"],
            c["vocab_size"],
            c["seq_len"],
            c["continual_steps"] * c["batch_size"] * c["seq_len"],
            batch=c["batch_size"],
            corpus="stdlib-code",
        ),
        Job(
            "seedprint",
            "SP-6",
            "null models probed (random init)",
            "infer",
            s["n_null_models"],
            p,
            c["d_model"],
            c["n_layer"],
            c["n_head"],
            c["vocab_size"],
            s["length"],
            s["n"] * s["length"],
            batch=64,
        ),
    ]
    q = s["pretrained"]
    for name, e in EMBEDDED.items():
        jobs.append(
            Job(
                "seedprint",
                "SP-5",
                f"{name}: fine-tune",
                "train",
                1,
                e["params"],
                e["d"],
                e["L"],
                e["H"],
                e["V"],
                q["finetune_seq_len"],
                q["finetune_steps"] * q["finetune_batch"] * q["finetune_seq_len"],
                batch=q["finetune_batch"],
                corpus="stdlib-code",
            )
        )
    return jobs


def _bb_probes(s: dict, key: str) -> list[Job]:
    if key in ("bb_1", "bb_1_2"):
        p = hf_params(
            "rope-gpt2",
            n_layer=s["n_layer"],
            n_head=s["n_head"],
            d_model=s["d_model"],
            vocab_size=s["vocab_size"],
            n_positions=max(s["lengths"]),
        )
        T = max(s["lengths"])
        claims, what = (
            ("BB-1, BB-1.1, BB-2.1, BB-3.2a", "random-token probes (one pass, every length)")
            if key == "bb_1"
            else ("BB-1.2", "the same probes on the other RoPE GPT-2 size (Finding 1.2)")
        )
        return [
            Job(
                key,
                claims,
                what,
                "infer",
                len(s["archs"]) * len(s["seeds"]),
                p,
                s["d_model"],
                s["n_layer"],
                s["n_head"],
                s["vocab_size"],
                T,
                s["n_seq"] * T,
                batch=64,
            )
        ]
    if key == "bb_2_2":
        p = hf_params(
            "rope-gpt2",
            n_layer=s["n_layer"],
            n_head=s["n_head"],
            d_model=s["d_model"],
            vocab_size=s["vocab_size"],
            n_positions=s["T"],
        )
        return [
            Job(
                key,
                "BB-2.2",
                "favourite token vs direction, many random models",
                "infer",
                s["n_models"],
                p,
                s["d_model"],
                s["n_layer"],
                s["n_head"],
                s["vocab_size"],
                s["T"],
                s["n_seq"] * s["T"],
                batch=64,
            )
        ]
    p = tiny_params(0, s["d_model"], s["n_layer"], positions="none") + s["vocab_size"] * s["d_model"]
    return [
        Job(
            key,
            "BB-2.1, BB-3",
            "full / attention-only / MLP-only stacks on Gaussian inputs",
            "infer",
            3 * len(s["seeds"]),
            p,
            s["d_model"],
            s["n_layer"],
            s["n_head"],
            s["vocab_size"],
            s["T"],
            s["n_seq"] * s["T"],
            batch=64,
        )
    ]


def _spectral(s: dict) -> list[Job]:
    jobs = []
    for name, e in EMBEDDED.items():
        step_rows = e["L"] if s["layers"] == "all" else len(s["layers"]) + 1  # ℓ* (+ the profile's layers)
        rows = e["L"] if s["layers"] == "all" else step_rows + 1  # + SF-7's layer
        cols, seeds = len(s["bands"]), len(s["random_seeds"])
        # at ℓ*'s rows: Fig 8 (4 families), swap and token-0 grids; Fig 7 (MLP of ℓ*, 4 families);
        # the Ω grid; at SF-7's layer Fig 13's Φ_u, Ψ and random curves; the random bases at k = 19
        # (ci: 40 per model, counted 2026-11-26). Each runs on average half the blocks and the head.
        evals = 6 * step_rows * cols + 4 * cols + rows * cols + (seeds + 2) * cols + 2 * seeds
        per = e["params"] // 2 + e["V"] * e["d"] // 2
        jobs.append(
            Job(
                "spectral",
                "SF-3, SF-5…SF-7",
                f"{name}: filtered-NLL sweeps ({evals} evaluations)",
                "infer",
                evals,
                per,
                e["d"],
                e["L"] // 2,
                e["H"],
                e["V"],
                s["prompt_len"],
                s["n_prompts"] * s["prompt_len"],
                batch=s["n_prompts"],
                notes="per evaluation: half the blocks and the whole head",
            )
        )
    return jobs


def _gaussian_stack(
    key: str,
    claims: str,
    what: str,
    s: dict,
    p: int,
    L: int,
    T: int,
    tokens: int,
    *,
    n: int,
    models: int,
    H: int = 1,
    attn: bool = True,
    held_states: float = 0,
    batch: int | None = None,
    notes: str = "",
) -> Job:
    """A `repro.born_biased.init_bias` experiment: random-init TinyDecoder stacks fed Gaussian
    inputs (no embedding, no head), `batch` of the `n` sequences per float32 pass (default all);
    `held_states` (n, T, d) float32 states' worth kept through it (hidden_states)."""
    d = s["d_model"]
    return Job(
        key,
        claims,
        what,
        "infer",
        models,
        p,
        d,
        L,
        H,
        0,
        T,
        tokens,
        batch=batch or n,
        attn_layers=None if attn else 0,
        held_bytes=4.0 * held_states * n * T * d,
        notes=notes,
    )


def _bb_4_1(s: dict) -> list[Job]:
    # one GELU MLP block with biases, counted with its pre-LayerNorm (the variant without has 2·d fewer)
    p = tiny_params(0, s["d_model"], 1, positions="none", block="mlp", final_norm=False)
    return [
        _gaussian_stack(
            "bb_4_1",
            "BB-4.1",
            "one GELU MLP block with and without its LayerNorm",
            s,
            p,
            1,
            1,
            s["n_seq"],
            n=s["n_seq"],
            models=2 * len(s["seeds"]),
            attn=False,
            held_states=2,
        )
    ]


def _bb_4(s: dict) -> list[Job]:
    # the standard variant's LayerNorm (no bias) counted; ReLU and tanh MLP0 have none
    p = tiny_params(
        0, s["d_model"], s["n_layer"], d_ff=s["d_ff"], positions="none", bias=False, block="mlp", final_norm=False
    )
    return [
        _gaussian_stack(
            "bb_4",
            "BB-4",
            "ReLU / tanh MLP0 and standard MLP stacks, one token each",
            s,
            p,
            s["n_layer"],
            1,
            s["n_seq"],
            n=s["n_seq"],
            models=3 * len(s["seeds"]),
            attn=False,
            held_states=s["n_layer"] + 1,
            notes="H100 2026-11-25: 20 s, drawing the weights on the CPU (not in the FLOPs)",
        )
    ]


def _bb_4_2(s: dict) -> list[Job]:
    # per seed two MLP0 blocks (no norm, no bias) on every T; Attn0 (a running mean, no weights) is
    # O(d) per token: not counted. No attention term, so one job over every T's tokens is exact.
    p = tiny_params(
        0, s["d_model"], 2, d_ff=s["d_ff"], positions="none", bias=False, block="mlp", norm="none", final_norm=False
    )
    T = max(s["T"])
    return [
        _gaussian_stack(
            "bb_4_2",
            "BB-4.2",
            f"two MLP0 blocks, then Attn0, at T = {', '.join(map(str, s['T']))}",
            s,
            p,
            2,
            T,
            s["n_seq"] * sum(s["T"]),
            n=s["n_seq"],
            models=len(s["seeds"]),
            attn=False,
            held_states=4,
            notes="peak at the largest T; H100 2026-11-25: 118 s, weight draws and launches",
        )
    ]


def _bb_5(s: dict) -> list[Job]:
    # a pre-LN softmax attention stack (LayerNorm without bias, RoPE: no parameters), one job per T
    # (the attention term grows with T); Attn0's stack has no weights and O(d) per token. Held: the
    # input (n sequences) and one pass's L + 1 hidden states (BB5_CHUNK sequences a pass:
    # init_bias._stack_cosines; until 2026-11-27 both stacks' states of all n at once, 2L + 1).
    L = s["n_layer"]
    p = tiny_params(0, s["d_model"], L, positions="none", bias=False, block="attn", final_norm=False)
    return [
        _gaussian_stack(
            "bb_5",
            "BB-5",
            f"stacked softmax attention and Attn0, T = {T}",
            s,
            p,
            L,
            T,
            n * T,
            n=n,
            models=len(s["seeds"]),
            H=s["n_head"],
            batch=min(BB5_CHUNK, n),
            held_states=1 + (L + 1) * min(BB5_CHUNK, n) / n,
        )
        for T, n in zip(s["T"], s["n_seq"])
    ]


def _bb_6(s: dict) -> list[Job]:
    # one pre-LN attention block with biases; held: its (N, H, T, T) map and two hooked (N, T, d) tensors
    p = tiny_params(0, s["d_model"], 1, positions="none", block="attn", final_norm=False)
    T, H = s["T"], s["n_head"]
    job = _gaussian_stack(
        "bb_6",
        "BB-6",
        "one attention block at init, per-position std of A·V",
        s,
        p,
        1,
        T,
        s["n_seq"] * T,
        n=s["n_seq"],
        models=len(s["seeds"]),
        H=H,
        held_states=2,
    )
    job.held_bytes += 4.0 * s["n_seq"] * H * T * T
    return [job]


def _rs_text(s: dict) -> list[Job]:
    """RS-1/2/4/5/6/8 on every embedded model (in the run's order; `lens.models` of them carry RS-8)."""
    lens_n = s["lens"]["models"] or len(EMBEDDED)
    jobs = []
    for i, (name, e) in enumerate(EMBEDDED.items()):
        jobs += _rs_read(name, e, s, lensed=i < lens_n)
        if i < lens_n:
            jobs.append(_rs_tuned_lens(name, e, s["lens"]))
    return jobs


def _rs_read(name: str, e: dict, s: dict, *, lensed: bool) -> list[Job]:
    """The residual stream of the held-out (and lens-training) windows, one capture each (blocks
    only: `logits_to_keep=1`), with RS-1/2's decomposition of `dla_len` tokens (a full pass with
    the head); then the reads of every layer through the V × d head: RS-6's ranks, RS-8's logit-
    and tuned-lens KLs (each its final distribution and L layers) and its mean-distribution control."""
    d, L, V, H = e["d"], e["L"], e["V"], e["H"]
    n, T = s["text"]["test_seqs"], s["text"]["seq_len"]
    seqs = n + (s["lens"]["train_seqs"] if lensed else 0)
    dla = min(s["dla_len"], T)
    read = Job(
        "residual_stream",
        "RS-1, RS-2, RS-4…RS-6" + (", RS-8" if lensed else ""),
        f"{name}: residual stream of held-out text" + (" and lens windows" if lensed else ""),
        "infer",
        1,
        e["params"] - V * d,
        d,
        L,
        H,
        V,
        T,
        seqs * T,
        batch=n,
        held_bytes=4.0 * (L + 1) * seqs * T * d,
        extra_flops=forward_flops(e["params"], L, dla, d, dla),
        notes="params: the blocks (tied head, logits of one position); extra: RS-1/2's decomposition pass. "
        "Not counted: RS-5's FFN rewrite and RS-6's random-init twin (< 1% of the row)",
    )
    n_test, n_train = n * (T - 1), s["lens"]["train_seqs"] * (T - 1) if lensed else 0
    per_token = (L + 1) * V * d * (3 if lensed else 1) + (L * (d * d + d) if lensed else 0)
    lenses = Job(
        "residual_stream",
        "RS-6, RS-8" if lensed else "RS-6",
        f"{name}: every layer through the head " + ("(ranks, logit / tuned-lens KL)" if lensed else "(ranks)"),
        "infer",
        1,
        per_token,
        d,
        L,
        H,
        V,
        T,
        n_test,
        batch=n,
        attn_layers=0,
        extra_flops=2.0 * V * d * (n_train + n_test) if lensed else 0.0,
        peak_bytes=2.0 * e["params"] + 8.0 * n_test * V,
        notes="params: per-token (L+1)·V·d per read; peak: one layer's logits of every held-out token",
    )
    return [read, lenses]


def _rs_tuned_lens(name: str, e: dict, lens: dict) -> Job:
    """RS-8's tuned lens: `steps` Adam steps of `batch_tokens` tokens through L affine maps and the
    frozen head (forward and backward), the final distribution without a gradient (`extra`);
    memory: the model, (L, tokens, V) logits in bf16 and float32 with their gradient, the lens's Adam state."""
    d, L, V = e["d"], e["L"], e["V"]
    bt, tokens = lens["batch_tokens"], lens["steps"] * lens["batch_tokens"]
    return Job(
        "residual_stream",
        "RS-8",
        f"{name}: tuned-lens training",
        "train",
        1,
        L * (V * d + d * d + d),
        d,
        L,
        e["H"],
        V,
        1,
        tokens,
        batch=bt,
        attn_layers=0,
        extra_flops=2.0 * V * d * tokens,
        peak_bytes=2.0 * e["params"] + 12.0 * L * bt * V + 16.0 * L * (d * d + d),
    )


def _rs_random_init(s: dict) -> list[Job]:
    """RS-2/RS-4's random-init HF models: the residual stream of every window (blocks only) and
    RS-1/2's decomposition; RS-4's control, a post-norm TinyDecoder of their size, with its head."""
    r = s["random_init"]
    d, L, V, H, n, T = r["d_model"], r["n_layer"], r["vocab_size"], r["n_head"], r["n_seq"], r["seq_len"]
    dla, jobs = min(s["dla_len"], T), []
    for arch in r["archs"]:
        shape = dict(n_head=H, d_model=d, vocab_size=V)
        blocks = L * (hf_params(arch, n_layer=2, **shape) - hf_params(arch, n_layer=1, **shape))
        jobs.append(
            Job(
                "residual_stream",
                "RS-1, RS-2, RS-4",
                f"random-init {arch}: residual stream, decomposition",
                "infer",
                1,
                blocks,
                d,
                L,
                H,
                V,
                T,
                n * T,
                batch=n,
                held_bytes=4.0 * (L + 1) * n * T * d,
                extra_flops=forward_flops(blocks + V * d, L, dla, d, dla),
                notes="params: the blocks",
            )
        )
    post = tiny_params(V, d, L, max_len=T, positions="rope", final_norm=False)
    jobs.append(
        Job(
            "residual_stream",
            "RS-4",
            "post-norm control stack (full logits)",
            "infer",
            1,
            post,
            d,
            L,
            H,
            V,
            T,
            n * T,
            batch=n,
            held_bytes=8.0 * (L + 1) * n * T * d,
        )
    )
    return jobs


def _rs_grad(s: dict) -> list[Job]:
    """RS-3: one forward and backward (three passes) of every pre- and post-norm TinyDecoder on the
    batch, per depth and seed; at the deepest also the no-skip stacks and App B.1's post-norm one.
    Counted with the pre-norm stack's final norm (post-norm stacks have 2·d fewer)."""
    g = s["grad"]
    deepest, seeds = max(g["depths"]), len(g["seeds"])
    return [
        Job(
            "residual_stream",
            "RS-3",
            f"pre- and post-norm stacks, L = {L}" + (" (+ controls)" if L == deepest else ""),
            "train",
            2 * seeds + (seeds + 1 if L == deepest else 0),
            tiny_params(GRAD_V, g["d_model"], L, max_len=g["seq_len"], positions="rope"),
            g["d_model"],
            L,
            g["n_head"],
            GRAD_V,
            g["seq_len"],
            g["batch_size"] * g["seq_len"],
            batch=g["batch_size"],
        )
        for L in g["depths"]
    ]


def _rs_induction(s: dict) -> list[Job]:
    """RS-7: the 1- and 2-layer attention-only models (untied, RoPE) per seed on generated sequences."""
    c = {**INDUCTION, **{k: v for k, v in s["induction"]["config"].items() if k in INDUCTION}}
    d, T, V = c["d_model"], c["seq_len"], c["vocab_size"]
    return [
        Job(
            "residual_stream",
            "RS-7",
            f"{L}-layer attention-only induction models",
            "train",
            len(s["induction"]["seeds"]),
            tiny_params(V, d, L, max_len=T, tie=False, positions="rope", block="attn"),
            d,
            L,
            c["n_head"],
            V,
            T,
            c["steps"] * c["batch_size"] * T,
            batch=c["batch_size"],
            notes="H100 2026-11-25: 111 s for 10 seeds × 2, launch-bound (not in the FLOPs)",
        )
        for L in (1, 2)
    ]


def _residual_stream(s: dict) -> list[Job]:
    return _rs_text(s) + _rs_random_init(s) + _rs_grad(s) + _rs_induction(s)


def _row(planner: Callable[[dict], list[Job]], key: str) -> Callable[[Profile], list[Job]]:
    return lambda prof: planner(prof.sizes(key))


# experiment -> its jobs under a profile: every row of profiles.SIZES (tests/test_plan.py checks
# it; a row without a planner is listed as "not costed"). The FLOPs do not see launch- and
# CPU-bound work: on the H100 (2026-11-25, paper profile) bb_4_2 took 118 s and RS-7's induction
# seeds 111 s for well under a second of FLOPs each (the rows' notes say so). bb_1_2 was uncosted
# until that run: the paper's 1.2B RoPE GPT-2 probed at N = 10,000 × T = 1024 is ≈ 56 PFLOP.
PLANNERS: dict[str, Callable[[Profile], list[Job]]] = {
    "causal_shift": _row(_causal_shift, "causal_shift"),
    "sinks": _row(_sinks, "sinks"),
    "context_axis": _row(_context_axis, "context_axis"),
    "seedprint": _row(_seedprint, "seedprint"),
    "spectral": _row(_spectral, "spectral"),
    "bb_1": _row(lambda s: _bb_probes(s, "bb_1"), "bb_1"),
    "bb_1_2": lambda prof: _bb_probes(bb_1_2_sizes(prof), "bb_1_2"),
    "bb_2_2": _row(lambda s: _bb_probes(s, "bb_2_2"), "bb_2_2"),
    "bb_3": _row(lambda s: _bb_probes(s, "bb_3"), "bb_3"),
    "bb_4_1": _row(_bb_4_1, "bb_4_1"),
    "bb_4": _row(_bb_4, "bb_4"),
    "bb_4_2": _row(_bb_4_2, "bb_4_2"),
    "bb_5": _row(_bb_5, "bb_5"),
    "bb_6": _row(_bb_6, "bb_6"),
    "residual_stream": _row(_residual_stream, "residual_stream"),
}


# --------------------------------------------------------------------------- the device


@dataclass(frozen=True)
class Device:
    """The one device a plan's times and memory are for (`plan_device`)."""

    name: str  # what `--device` names: "cpu", "cuda", or a key of GPUS
    label: str  # what it is: the CPU model and its torch threads, or the GPU's name
    tflops: float  # the peak the times divide by (before utilisation)
    memory_gib: float  # memory per device, which every job's peak is checked against
    rate: str  # where `tflops` comes from: a datasheet, a matmul timed now, or --tflops
    utilisation: float = DEFAULT_UTILISATION  # the fraction of `tflops` a run's model FLOPs reach


def device_names() -> tuple[str, ...]:
    """What `repro plan --device` takes: auto, cpu, cuda (the suite's device choices) and the GPUS."""
    return (*DEVICES, *GPUS)


def matmul_tflops(device: str = "cpu", dtype: Any = None) -> tuple[float, str]:
    """(TFLOP/s, what was timed) of one (n × n) @ (n × n) matmul on `device` in `dtype` (default: the
    dtype policy's there, what the run would compute in), n = PROBE_N[device], best of
    PROBE_REPEATS after a warm-up: a fraction of a second on a CPU, so `repro plan` stays fast."""
    import time

    import torch

    from repro.ground.runtime import dtype_name, generator, resolve_dtype

    n = PROBE_N[device]
    dtype = resolve_dtype("auto", device) if dtype is None else dtype
    g = generator(0)
    a, b = (torch.randn(n, n, generator=g).to(device=device, dtype=dtype) for _ in range(2))
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    best = float("inf")
    with torch.no_grad():
        for i in range(PROBE_REPEATS + 1):  # the first call picks its kernel: not timed
            sync()
            start = time.perf_counter()
            a @ b
            sync()
            best = best if i == 0 else min(best, time.perf_counter() - start)
    what = f"a {dtype_name(dtype)} ({n}×{n})@({n}×{n}) matmul timed now, best of {PROBE_REPEATS}"
    return 2.0 * n**3 / best / 1e12, what


def _physical_memory_gib() -> float:
    """This machine's RAM, GiB: what a CPU run's jobs must fit in."""
    import os

    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def _local_cpu(measure: bool) -> Device:
    import torch

    from repro.ground.runtime import cpu_capability

    cpu = cpu_capability()
    tflops, rate = matmul_tflops("cpu") if measure else (0.0, "")
    return Device(
        "cpu",
        f"{cpu['cpu'] or cpu['machine']} ({torch.get_num_threads()} torch threads)",
        tflops,
        _physical_memory_gib(),
        rate,
        CPU_UTILISATION,
    )


def _local_gpu(measure: bool) -> Device:
    """The first CUDA GPU: a GPUS entry's datasheet rate where its name is in torch's name of the
    GPU, else its matmul rate timed now; its own memory."""
    import torch

    props = torch.cuda.get_device_properties(0)
    known = next((k for k in GPUS if k in props.name.lower()), None)
    if known:
        tflops, rate = GPUS[known]["tflops"], f"the {known} datasheet's dense bfloat16 peak"
    else:
        tflops, rate = matmul_tflops("cuda") if measure else (0.0, "")
    return Device("cuda", props.name, tflops, props.total_memory / 2**30, rate)


def plan_device(name: str = "auto", *, tflops: float | None = None, memory_gib: float | None = None) -> Device:
    """The device to plan for: `name` one of `device_names()` — auto (the GPU when torch sees one,
    else this CPU), cpu, cuda (this machine's), or a GPUS entry by name (its datasheet figures,
    whatever this machine has). `tflops` / `memory_gib` replace the device's own (nothing is
    timed when `tflops` is given). Its utilisation: CPU_UTILISATION of a CPU's measured rate,
    DEFAULT_UTILISATION of a GPU's."""
    if name not in device_names():
        raise ReproError(f"unknown plan device {name!r}; choose one of {', '.join(device_names())}")
    if name in GPUS:
        g = GPUS[name]
        dev = Device(name, g["label"], g["tflops"], g["memory_gib"], "the datasheet's dense bfloat16 peak")
    else:
        import torch

        if name == "auto":
            name = "cuda" if torch.cuda.is_available() else "cpu"
        if name == "cuda" and not torch.cuda.is_available():
            raise ReproError(
                "repro plan --device cuda: torch sees no CUDA GPU here; name one (--device "
                f"{' / '.join(GPUS)}) to plan for it"
            )
        dev = (_local_gpu if name == "cuda" else _local_cpu)(measure=tflops is None)
    if tflops is not None:
        dev = replace(dev, tflops=tflops, rate="as given (--tflops)")
    if memory_gib is not None:
        dev = replace(dev, memory_gib=memory_gib)
    return dev


@dataclass
class Plan:
    profile: str
    tflops: float
    utilisation: float
    jobs: list[Job] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    not_costed: list[str] = field(default_factory=list)
    corpus: str = "brown"
    checked: list[str] = field(default_factory=list)  # resources checked and sufficient, one line each
    device: Device | None = None  # what `tflops` and the memory check are for (None: a bare rate)

    @property
    def total_flops(self) -> float:
        return sum(j.flops for j in self.jobs)

    def seconds(self, job: Job | None = None) -> float:
        f = self.total_flops if job is None else job.flops
        return f / (self.tflops * 1e12 * self.utilisation)

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "corpus": self.corpus,
            "tflops": self.tflops,
            "utilisation": self.utilisation,
            "device": asdict(self.device) if self.device else None,
            "jobs": [
                {**asdict(j), "flops": j.flops, "memory_bytes": j.memory_bytes, "seconds": self.seconds(j)}
                for j in self.jobs
            ],
            "total_flops": self.total_flops,
            "total_seconds": self.seconds(),
            "missing": self.missing,
            "checked": self.checked,
            "not_costed": self.not_costed,
        }


def plan(
    profile: str | Profile = "paper",
    *,
    tflops: float | None = None,
    utilisation: float | None = None,
    device_memory_gib: float | None = None,
    corpus: str = "brown",
    device: str | Device = "h100",
) -> Plan:
    """The plan of a profile for a run on `corpus` (what `--corpus` accepts: a ReproError names a
    bad one) on `device` (a `plan_device` name or a Device; default one H100 SXM, `repro plan`'s
    default is the device the run would use; `tflops` / `device_memory_gib` / `utilisation` replace
    its figures): every row's jobs, then what is missing or too small — the corpus each training
    job reads, memory per device, the Brown BPE's vocabulary."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    if (tflops is not None and tflops <= 0) or (utilisation is not None and not 0 < utilisation <= 1):
        raise ReproError(f"--tflops must be > 0 and --utilisation in (0, 1] (got {tflops}, {utilisation})")
    if isinstance(device, str):
        device = plan_device(device, tflops=tflops, memory_gib=device_memory_gib)
    else:
        device = replace(device, tflops=tflops or device.tflops, memory_gib=device_memory_gib or device.memory_gib)
    device = replace(device, utilisation=utilisation or device.utilisation)
    out = Plan(prof.name, device.tflops, device.utilisation, corpus=corpus, device=device)
    for key in SIZES:
        if key in PLANNERS:
            out.jobs += PLANNERS[key](prof)
        else:
            out.not_costed.append(key)
    out.missing += _job_lines(out.jobs, corpus, device.memory_gib)
    missing, checked = vocab_lines(prof)
    out.missing += missing
    out.checked += checked
    return out


def _job_lines(jobs: list[Job], corpus: str, device_memory_gib: float) -> list[str]:
    """Each job's corpus (the run's `corpus` for RUN, now written in) and memory per device, one
    line per shortfall. Each corpus is read once (`corpus_train_tokens`), the run's first: a bad
    one is an error whatever the jobs."""
    sizes = {corpus: corpus_train_tokens(corpus)}
    out = []
    for j in jobs:
        fixed = j.corpus != RUN
        j.corpus = corpus if j.corpus == RUN else j.corpus
        if j.kind == "train" and j.corpus:
            if j.corpus not in sizes:
                sizes[j.corpus] = corpus_train_tokens(j.corpus)
            if j.tokens > sizes[j.corpus][0]:
                out.append(_corpus_line(j, *sizes[j.corpus], fixed=fixed))
        if j.memory_bytes > device_memory_gib * 2**30:
            out.append(_memory_line(j, device_memory_gib))
    return out


def _memory_line(j: Job, device_memory_gib: float) -> str:
    fix = (
        "smaller micro-batches with gradient accumulation, or activation recomputation"
        if j.kind == "train"
        else "pass the sequences in batches"
    )
    return (
        f"{j.experiment} ({j.what}): ≈ {j.memory_bytes / 2**30:.0f} GiB per device at batch {j.batch} × {j.T} "
        f"(over {device_memory_gib:.0f} GiB): {fix}"
    )


def _corpus_line(j: Job, have: int, how: str, *, fixed: bool) -> str:
    head = (
        f"{j.experiment} ({j.claims}; {j.what}): trains on {j.tokens:,} tokens per model; {j.corpus} has "
        f"{how}{have:,} ({j.tokens / have:,.0f} epochs)."
    )
    if fixed:
        return (
            head + f" The claim fixes {j.corpus} (its shifted domain): `--corpus` does not change it, so the "
            "run repeats it that often, or the topic needs a larger corpus of that domain"
        )
    return (
        head + f" Needs a corpus of ≥ {j.tokens:,} tokens: pass `--corpus DIR` (a directory of text files or a "
        "saved datasets directory)"
    )


# --------------------------------------------------------------------------- corpus size


def corpus_train_tokens(name: str) -> tuple[int, str]:
    """(tokens, how) of a corpus's train split under the suite's BPE (V = 4096, <bos>/<eos> per
    document: `repro.core.data.token_ids`), `how` "" for a count, "≈ " for an extrapolation. The
    embedded corpora: CORPUS_TOKENS. Any other `--corpus` is read through the one corpus dispatch
    (`repro.core.data.corpus_documents`: its ReproError names a bad name or directory) and its
    first SAMPLE_BYTES of text tokenized: the count when that is all of it, else the total bytes
    at the sample's own bytes per token."""
    if name in CORPUS_TOKENS:
        return CORPUS_TOKENS[name], ""
    from repro.core import data

    docs = data.corpus_documents(name, "train")
    sizes = [len(d.text.encode()) for d in docs]
    k, sample = 0, 0
    while k < len(docs) and sample < SAMPLE_BYTES:
        sample, k = sample + sizes[k], k + 1
    counted = int(data.token_ids(data.brown_tokenizer(4096), docs[:k]).numel())
    if k == len(docs):
        return counted, ""
    return round(counted * sum(sizes) / sample), "≈ "


# --------------------------------------------------------------------------- the Brown BPE's vocabulary


def bpe_rows(prof: Profile) -> list[tuple[str, str, int]]:
    """(experiment, claims, vocab_size) of every row whose models use the suite's Brown BPE
    (`repro.core.data.brown_tokenizer(vocab_size)`): the trained models and RS's random-init inputs."""
    return [
        ("seedprint", "SP-1…SP-6, BB-7", prof.sizes("seedprint")["lineage"]["vocab_size"]),
        ("causal_shift", "CS-3…CS-6", prof.sizes("causal_shift")["model"]["vocab_size"]),
        ("sinks", "SK-2, SK-3", prof.sizes("sinks")["model"]["vocab_size"]),
        ("context_axis", "CA-8", prof.sizes("context_axis")["model"]["vocab_size"]),
        ("residual_stream", "RS-1, RS-2, RS-4", prof.sizes("residual_stream")["random_init"]["vocab_size"]),
        ("residual_stream", "RS-3", GRAD_V),
    ]


def bpe_words(texts: Iterable[str]) -> Counter:
    """The words the suite's BPE trainer counts: each text pre-tokenized as `repro.core.data`'s
    `_train_brown_bpe` does (byte-level, no prefix space; tests/test_plan.py checks the tokenizer's
    pre-tokenizer is this one)."""
    from tokenizers import pre_tokenizers

    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    words: Counter = Counter()
    for text in texts:
        words.update(w for w, _ in pre.pre_tokenize_str(text))
    return words


def _base_vocab() -> int:
    from repro.core.data import BROWN_SPECIAL_TOKENS

    return 256 + len(BROWN_SPECIAL_TOKENS)  # the byte alphabet and <pad>, <bos>, <eos>


def bpe_vocab_lower(words: Iterable[str]) -> int:
    """A vocabulary the suite's BPE trainer always reaches (when asked for at least as many): the
    259 base tokens and every distinct word of ≥ 2 symbols. Sound because `_train_brown_bpe` keeps
    `tokenizers`' default min_frequency 0: its loop stops only at vocab_size or when no pair with
    a count ≥ 1 is left, i.e. when every word is a single symbol — that word, now a token."""
    from repro.core.data import BROWN_SPECIAL_TOKENS

    return _base_vocab() + len({w for w in words if len(w) >= 2} - set(BROWN_SPECIAL_TOKENS))


def bpe_vocab_upper(words: Iterable[str]) -> int:
    """The most tokens the suite's BPE trainer can learn from these words, an upper bound: each
    merge adds at most one token, the concatenation of two adjacent symbols inside a word, so every
    learned token is a distinct substring of ≥ 2 symbols of some word (their number bounds it);
    and each merge shortens at least one word by a symbol, so there are at most Σ (len(w) − 1)
    merges. The 259 base tokens on top."""
    words = set(words)
    substrings = {w[i:j] for w in words for i in range(len(w) - 1) for j in range(i + 2, len(w) + 1)}
    return _base_vocab() + min(len(substrings), sum(len(w) - 1 for w in words))


@lru_cache(maxsize=1)
def _brown_words() -> Counter:
    from repro.core import data

    return bpe_words(d.text for d in data.corpus_documents("brown", "train"))


def vocab_lines(prof: Profile, experiments: set[str] | None = None) -> tuple[list[str], list[str]]:
    """(missing, checked) for the Brown BPE's vocabulary: the suite trains it on Brown's train
    split whatever `--corpus` says (`repro.core.data.brown_tokenizer`), so a row asking for more
    tokens than that split can yield gets a fixed-size, smaller vocabulary than it says. Decided
    in seconds by `bpe_vocab_lower` (a row at or under it is met) and, above it, `bpe_vocab_upper`
    (over it cannot be met; in between, training decides). Brown's train split (2026-11-27,
    tokenizers 0.23.3): 48,436 distinct words, 48,363 of ≥ 2 bytes, lower bound 48,622; trained to
    exhaustion the BPE stops at 66,100 tokens; upper bound 351,034 — so 32,000 is met (and
    `brown_tokenizer(32000)` has 32,000 tokens). `experiments`: only those rows (None: all)."""
    rows = [r for r in bpe_rows(prof) if experiments is None or r[0] in experiments]
    if not rows:
        return [], []
    try:
        words = _brown_words()
    except ReproError as err:  # no Brown fixture: the run could not train the BPE either
        return [f"vocabulary (the Brown BPE of every trained model): not checked: {err}"], []
    lower = bpe_vocab_lower(words)
    over = [(e, c, V) for e, c, V in rows if V > lower]
    upper = bpe_vocab_upper(words) if over else None
    missing = [_vocab_line(e, c, V, lower, upper) for e, c, V in over]
    checked = (
        [
            f"vocabulary: the Brown BPE (trained on Brown's train split whatever --corpus says) reaches ≥ {lower:,} "
            f"tokens, so every row's vocab_size of at most that is met: "
            + "; ".join(f"{c}: {V:,}" for e, c, V in rows if V <= lower)
        ]
        if len(over) < len(rows)
        else []
    )
    return missing, checked


def _vocab_line(experiment: str, claims: str, V: int, lower: int, upper: int) -> str:
    what = (
        f"Brown's train split yields at most {upper:,} BPE tokens"
        if V > upper
        else f"Brown's train split yields between {lower:,} and {upper:,} BPE tokens (train it to know: "
        f"repro.core.data.brown_tokenizer({V}))"
    )
    return (
        f"{experiment} ({claims}): vocab_size {V:,}, but {what}; the suite's BPE always trains on Brown. Lower "
        f"the row's vocab_size to ≤ {lower:,} (repro/harness/profiles.py), or train the tokenizer on a larger corpus"
    )


def too_big(experiment: str, profile: str | Profile, device_bytes: float) -> str | None:
    """One line saying which training job of `experiment` needs more memory per device than
    `device_bytes` (the plan's estimate: weights, Adam state and activations at the row's batch),
    or None when every one fits."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    for j in PLANNERS[experiment](prof) if experiment in PLANNERS else []:
        if j.kind == "train" and j.memory_bytes > device_bytes:
            return (
                f"{j.claims} ({j.what}) at profile {prof.name!r} needs ≈ {j.memory_bytes / 2**30:.0f} GiB per "
                f"device at batch {j.batch} × {j.T} (`repro plan --profile {prof.name}`); this device has "
                f"{device_bytes / 2**30:.0f} GiB: train it with smaller micro-batches and gradient accumulation "
                "or activation recomputation (not built yet), or run a smaller profile"
            )
    return None


def require_fits(experiment: str, profile: str | Profile, device: Any) -> None:
    """Refuse to start a training job that cannot fit the CUDA device it was given (one
    `ReproError` before any step, instead of an out-of-memory error mid-fixture that keeps the
    memory held for the tests after it: the paper's SK trio on an 80 GB H100, 2026-11-25). CPUs
    are not checked: the plan's memory is per accelerator."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return
    msg = too_big(experiment, profile, torch.cuda.get_device_properties(dev).total_memory)
    if msg:
        raise ReproError(msg)


def for_claims(p: Plan, claim_ids: list[str]) -> Plan:
    """The part of a plan that the given claims need (`pytest claims/ --plan -k ...`): the jobs of
    their topics (the ID's two-letter prefix: a topic's claims share its models), and the missing
    resources of those jobs' experiments (and the vocabulary, when it could not be checked)."""
    topics = {cid.split("-")[0] for cid in claim_ids}
    jobs = [j for j in p.jobs if any(c.strip().split("-")[0] in topics for c in j.claims.replace("…", ",").split(","))]
    experiments = {j.experiment for j in jobs}
    missing = [m for m in p.missing if m.split(" ", 1)[0] in experiments]
    vocab_missing, checked = vocab_lines(get_profile(p.profile), experiments)
    missing += [m for m in vocab_missing if m.startswith("vocabulary")]  # not checked: no Brown fixture
    return Plan(p.profile, p.tflops, p.utilisation, jobs, missing, p.not_costed, p.corpus, checked, p.device)


def _device_line(p: Plan) -> str:
    """Which device the times and memory are for, at what rate and whence the rate."""
    if p.device is None:
        return f"one device at {p.tflops:g} TFLOP/s × {p.utilisation:.0%} utilisation"
    d = p.device
    return (
        f"one {d.name} device, {d.label}, at {p.tflops:.3g} TFLOP/s ({d.rate}) × {p.utilisation:.0%} utilisation, "
        f"{d.memory_gib:.0f} GiB memory"
    )


def lines(p: Plan) -> list[str]:
    out = [
        f"plan for profile {p.profile!r} on corpus {p.corpus!r}: {_device_line(p)}",
        f"{'experiment':<15} {'claims':<22} {'kind':<5} {'models':>6} {'params':>9} {'tokens/model':>13} "
        f"{'PFLOP':>10} {'peak GiB':>8} {'hours':>8}  what",
    ]
    for j in p.jobs:
        out.append(
            f"{j.experiment:<15} {j.claims:<22} {j.kind:<5} {j.models:>6} {j.params / 1e6:>8.1f}M "
            f"{j.tokens:>13,} {j.flops / 1e15:>10.3g} {j.memory_bytes / 2**30:>8.1f} {p.seconds(j) / 3600:>8.3g}  "
            f"{j.what}"
        )
    eight = (
        "" if p.device and p.device.name == "cpu" else f" ({p.seconds() / 3600 / 8:.3g} on 8 at the same utilisation)"
    )
    out.append(f"total: {p.total_flops / 1e15:.4g} PFLOP ≈ {p.seconds() / 3600:.3g} hours on one device{eight}")
    if p.not_costed:
        out.append("not costed (no planner in repro/harness/plan.py): " + ", ".join(p.not_costed))
    out += p.checked
    out.append(f"missing or too small: {len(p.missing)}")
    out += [f"  - {m}" for m in p.missing]
    return out
