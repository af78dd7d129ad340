"""Born biased's sizes per profile and its cost rows for `repro plan` (001 §3–4, App A, App B.1).

`SIZES`: experiment -> {profile -> its row, a frozen dataclass: `repro.ground.sizes.row`}, fields
named for the claim or figure they serve; `PLANNERS`: experiment -> its jobs under a profile
(`repro.core.cost.Job`). Both collected by `repro.harness.profiles` and `repro.harness.plan`.
The measurements behind the ci sizes: docs/sizes.md, "Born biased".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from repro.core.cost import Job, Planner, hf_params, hf_probe_terms, model_fields, model_shape, of_row, tiny_params
from repro.ground.sizes import Decide, Profile, row


@row
class BB1:
    """001 §3's random-token probes (Table 1 / Fig 1a / Fig 10 / Fig 2 / Finding 2.2)."""

    archs: tuple[str, ...]
    d_model: int
    n_layer: int
    n_head: int
    vocab_size: int
    n_seq: int
    lengths: tuple[int, ...]
    seeds: tuple[int, ...]
    dtype: str


@row
class Shape:
    """Finding 1.2's other RoPE GPT-2 size (merged into bb_1's probe: `bb_1_2_sizes`)."""

    d_model: int
    n_layer: int
    n_head: int


@row
class BB22:
    """Finding 2.2: favourite token vs contraction direction over `n_models` random models."""

    arch: str
    d_model: int
    n_layer: int
    n_head: int
    vocab_size: int
    n_seq: int
    T: int
    n_models: int
    dtype: str


@row
class BB3:
    """§4.1's full / attention-only / MLP-only stacks on Gaussian inputs."""

    d_model: int
    n_layer: int
    n_head: int
    vocab_size: int
    T: int
    n_seq: int
    seeds: tuple[int, ...]
    dtype: str


@row
class BB41:
    """Finding 4.1: GELU pre-activation spread with and without LayerNorm."""

    d_model: int
    n_seq: int
    seeds: tuple[int, ...]


@row
class BB5:
    """Prop 5: stacked attention vs Attn0, `n_seq[i]` sequences at `T[i]`."""

    d_model: int
    n_head: int
    n_layer: int
    T: tuple[int, ...]
    n_seq: tuple[int, ...]
    seeds: tuple[int, ...]


@row
class BB4:
    """Prop 2: stacked MLP0 blocks (ReLU vs tanh) on Gaussian inputs."""

    d_model: int
    d_ff: int
    n_layer: int
    n_seq: int
    seeds: tuple[int, ...]


@row
class BB42:
    """Table 3 / Prop 4: MLP0, MLP0∘MLP0, Attn0∘MLP0 at several T."""

    d_model: int
    d_ff: int
    n_seq: int
    T: tuple[int, ...]
    seeds: tuple[int, ...]


@row
class BB6:
    """Eq 2: per-position output std after value aggregation."""

    d_model: int
    n_head: int
    T: int
    n_seq: int
    seeds: tuple[int, ...]


# 001 §3 Table 1 / Fig 1a / Fig 10 / Fig 2 / Finding 2.2: random-token probes of the nano
# RoPE GPT-2 and LLaMA-2 (12L, 12H, 768d, |V| = 50,257), seeds 42 and 43 as in Table 1.
# All lengths come from one pass (prefix trick, repro.born_biased.preference_probe). ci: N = 400 and T ≤ 64
# (≈ 11 s per model on 2 cores in bfloat16, ≈ 40 s in float32); paper: the source's N = 10,000,
# T up to 1024. dtype "auto": the dtype policy (runtime.resolve_dtype) everywhere below.
BB_1 = BB1(
    archs=("rope-gpt2", "llama"),
    d_model=768,
    n_layer=12,
    n_head=12,
    vocab_size=50257,
    n_seq=400,
    lengths=(16, 32, 64),
    seeds=(42, 43),
    dtype="auto",
)
# 001 Finding 2.2: favourite token vs contraction direction over many random models.
# ci: 30 models of 6 layers (≈ 1.6 s each); paper: the source's 100 models, N = 2000, T = 1024.
BB_2_2 = BB22(
    arch="rope-gpt2", d_model=768, n_layer=6, n_head=12, vocab_size=50257, n_seq=256, T=32, n_models=30, dtype="auto"
)
# 001 §4.1 Table 2 / Figs 3, 4, 7: full / attention-only / MLP-only 12-layer stacks fed
# Gaussian inputs with the embedding's statistics.
BB_3 = BB3(d_model=768, n_layer=12, n_head=12, vocab_size=50257, T=32, n_seq=400, seeds=(0, 1), dtype="auto")
# 001 Prop 2 / Fig 5: stacked MLP0 blocks (ReLU vs tanh), Gaussian inputs.
# The source's width (768); 6 independent models give the Monte-Carlo standard error
# across inits (weight drawing dominates the cost: ~4 s per model and variant on 2 cores).
BB_4 = BB4(d_model=768, d_ff=3072, n_layer=12, n_seq=512, seeds=(0, 1, 2, 3, 4, 5))
# 001 Table 3 / Prop 4: MLP0, MLP0∘MLP0, Attn0∘MLP0 at several T.
BB_4_2 = BB42(d_model=512, d_ff=2048, n_seq=256, T=(16, 128), seeds=(0, 1, 2, 3, 4, 5, 6, 7))
# 001 Eq 2 / Fig 9: per-position output std after value aggregation, T = 32.
BB_6 = BB6(d_model=768, n_head=12, T=32, n_seq=2000, seeds=(0, 1, 2, 3))
SIZES: dict[str, dict[str, Any]] = {
    "bb_1": {"ci": BB_1, "paper": replace(BB_1, n_seq=10000, lengths=(64, 256, 1024))},
    # 001 Finding 1.2 / Table 1(c): the same probe on a smaller and a larger RoPE GPT-2 than
    # bb_1's; "smaller" at ci (4 layers), the source's 1.2B (24L, 32H, 2048d) under paper.
    "bb_1_2": {"ci": Shape(d_model=768, n_layer=4, n_head=12), "paper": Shape(d_model=2048, n_layer=24, n_head=32)},
    "bb_2_2": {"ci": BB_2_2, "paper": replace(BB_2_2, n_layer=12, n_seq=2000, T=1024, n_models=100)},
    "bb_3": {"ci": BB_3, "paper": replace(BB_3, T=1024, n_seq=2000, seeds=(0, 1, 2, 3))},
    # 001 Finding 4.1 / Fig 6: GELU pre-activation spread with and without LayerNorm (cheap).
    "bb_4_1": {
        "ci": BB41(d_model=768, n_seq=2048, seeds=(0, 1, 2, 3)),
        "paper": BB41(d_model=768, n_seq=10000, seeds=tuple(range(8))),
    },
    # 001 Prop 5 / Fig 8: 12 stacked attention layers vs Attn0, T = 16 and 512.
    "bb_5": {
        "ci": BB5(d_model=256, n_head=4, n_layer=12, T=(16, 512), n_seq=(256, 16), seeds=(0, 1, 2)),
        "paper": BB5(d_model=768, n_head=12, n_layer=12, T=(16, 512), n_seq=(2000, 2000), seeds=(0, 1, 2, 3)),
    },
    "bb_4": {"ci": BB_4, "paper": replace(BB_4, n_seq=2000, seeds=tuple(range(16)))},
    "bb_4_2": {
        "ci": BB_4_2,
        "paper": BB42(d_model=768, d_ff=3072, n_seq=2000, T=(16, 128, 512), seeds=tuple(range(16))),
    },
    "bb_6": {"ci": BB_6, "paper": replace(BB_6, seeds=tuple(range(16)))},
}

# `long`'s overrides of the ci rows: none (long runs ci's sizes here)
# The decide chunks (an override profile each; repro plan --profile decide): the 95% sizes the ci
# run's power records name at their declared effects, so that a miss reads contradicted (a bar
# test's size is 1 − power: at 80% a miss stays inconclusive). One probe pass reads every length.
# decide-bb-probes: N = 31,800 sequences per cell for BB-1.1's LLaMA half (95% at 31,732; 80% at
# 25,031), both architectures. decide-bb-lengths: BB-1.2 (7,965 per cell, its size trend carried to
# our 3× step in weights: `preference_power.size_effect`) and BB-1.3 (512 probes per seed) read
# RoPE GPT-2 only, so N = 8,000 of RoPE GPT-2 alone: a quarter of the probes' work (a CPU job as
# well as a GPU one). BB-2.2's rate test (the source's 76%
# inside our Wilson interval) cannot reach 95% at any N — the interval's coverage is its ceiling —
# so its chunk is sized at 80%: 6,222 predictions per model in the bfloat16 ci run (5,698 in
# float32), which can read reproduced, never contradicted. What the chunks cost and decided where
# they ran: docs/sizes.md (Born biased) and results/.
OVERRIDES: dict[str, dict[str, dict[str, Any]]] = {
    "decide-bb-probes": {"bb_1": dict(n_seq=31_800)},
    "decide-bb-lengths": {"bb_1": dict(n_seq=8_000, archs=("rope-gpt2",))},
    "decide-bb-direction": {"bb_2_2": dict(n_seq=6_300)},
}
DECIDE: dict[str, Decide] = {
    "BB-1.1": Decide(
        "bb-probes", "LLaMA's half: N = 31,732 per cell for 95% (25,031 for 80%) at Table 1(b)'s weakest frequency"
    ),
    "BB-1.2": Decide(
        "bb-lengths",
        "N = 7,965 per cell for 95% (4,768 for 80%) at Table 1's length trend and its size trend carried to our "
        "step (×1.16 for 12L against 4L at 768d)",
    ),
    "BB-1.3": Decide("bb-lengths", "N = 512 probes per seed for 95% (342 for 80%) at Table 1(a)'s weakest frequency"),
    "BB-2.2": Decide(
        "bb-direction",
        "N ≈ 6,222 predictions per model for 80% at Finding 2.2's 76% (the ci record; the chunk's own run, "
        "reproduced, names 11,449; 95% is out of reach of a rate-inside-interval test: it can reproduce, not "
        "contradict)",
    ),
}


def bb_1_2_sizes(prof: Profile) -> dict[str, Any]:
    """001 Finding 1.2's other model size: bb_1's probe (seeds, N, lengths) of RoPE GPT-2 at
    bb_1_2's shape — the one place that row is merged (the BB-1.2 fixture and `repro plan`)."""
    return {**prof.sizes("bb_1"), "archs": ("rope-gpt2",), **prof.sizes("bb_1_2")}


# --------------------------------------------------------------------------- cost rows
# Time beyond the FLOPs (`repro.core.cost.job_seconds`): the HF probes' layers move memory
# (`cost.hf_probe_terms`, counted on the CPU); every model of bb_1 and bb_1_2 is drawn by a CPU
# generator and copied over (`hf.build_model`), bb_2_2's 100 on the device
# (`preference_runs.direction_agreement`); the TinyDecoder experiments draw their weights and their
# Gaussian inputs on the host (`init_bias.tiny_decoder`, `core.data.gaussian_inputs`), which at
# paper takes longer than their FLOPs by 100× or more (results/h100-2026-11-25: bb_4 20 s,
# bb_4_2 118 s, bb_6 7 s for under a second of FLOPs each).


# Where `core.data.gaussian_inputs` draws the TinyDecoder experiments' inputs: on the run's device
# (`init_bias` and `ablation_study` pass `device=`: a GPU draws them itself), so no host draws are
# planned; device_times.json's `then` keeps the host draws the measured runs made.
INPUTS_ON_HOST = False


def _inputs(n: float) -> float:
    """Host normals of `n` Gaussian inputs: all of them while INPUTS_ON_HOST, else none."""
    return float(n) if INPUTS_ON_HOST else 0.0


def _probe_job(key: str, s: dict, arch: str, claims: str, what: str, *, drawn_on_host: bool = True) -> Job:
    T = max(s["lengths"]) if "lengths" in s else s["T"]
    n_lengths = len(s["lengths"]) if "lengths" in s else 1
    shape = model_shape(s)
    p = hf_params(arch, n_positions=T, **shape)
    return Job.of(
        experiment=key,
        claims=claims,
        what=what,
        kind="infer",
        models=len(s["seeds"]) if "seeds" in s else s["n_models"],
        params=p,
        model=shape,
        T=T,
        tokens=s["n_seq"] * T,
        batch=64,
        **hf_probe_terms(
            arch, params=p, **model_fields(shape), n_seq=s["n_seq"], T=T, lengths=n_lengths, drawn_on_host=drawn_on_host
        ),
    )


def _bb_probes(s: dict, key: str) -> list[Job]:
    if key == "bb_1":
        return [
            _probe_job(key, s, arch, "BB-1…BB-2.1", f"random-token probes, {arch} (one pass, every length)")
            for arch in s["archs"]
        ]
    if key == "bb_1_2":
        what = "the same probes on the other RoPE GPT-2 size (Finding 1.2)"
        return [_probe_job(key, s, "rope-gpt2", "BB-1.2", what)]
    if key == "bb_2_2":
        what = "favourite token vs direction, many random models"
        return [_probe_job(key, s, s["arch"], "BB-1.3, BB-2.2", what, drawn_on_host=False)]
    # bb_3: per variant and seed a 12-layer TinyDecoder with the tied head (drawn on the host), its own
    # draw of the N × T Gaussian inputs on the host (`ablation_study.ablation_run`)
    p = tiny_params(0, s["d_model"], s["n_layer"], positions="none") + s["vocab_size"] * s["d_model"]
    return [
        Job.of(
            experiment=key,
            claims="BB-3, BB-3.2a",
            what="full / attention-only / MLP-only stacks on Gaussian inputs",
            kind="infer",
            models=3 * len(s["seeds"]),
            params=p,
            model=model_shape(s),
            T=s["T"],
            tokens=s["n_seq"] * s["T"],
            batch=64,
            host_normals=p + _inputs(s["n_seq"] * s["T"] * s["d_model"]),
            fp32_flops=2.0 * s["vocab_size"] * s["d_model"] * s["n_seq"],
            notes="host: the weights and the inputs (drawn again for each variant)",
        )
    ]


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
    host_normals: float = 0.0,
    notes: str = "",
) -> Job:
    """A `repro.born_biased.init_bias` experiment: random-init TinyDecoder stacks fed Gaussian
    inputs (no embedding, no head), `batch` of the `n` sequences per float32 pass (default all);
    `held_states` (n, T, d) float32 states' worth kept through it (hidden_states); `host_normals`
    per model, the weights and inputs drawn on the host."""
    d = s["d_model"]
    return Job(
        experiment=key,
        claims=claims,
        what=what,
        kind="infer",
        models=models,
        params=p,
        d=d,
        L=L,
        H=H,
        V=0,
        T=T,
        tokens=tokens,
        batch=batch or n,
        attn_layers=None if attn else 0,
        held_bytes=4.0 * held_states * n * T * d,
        notes=notes,
        dtype="float32",
        host_normals=host_normals,
    )


def _bb_4_1(s: dict) -> list[Job]:
    # one GELU MLP block with biases, counted with its pre-LayerNorm (the variant without has 2·d fewer)
    p = tiny_params(0, s["d_model"], 1, positions="none", block="mlp", final_norm=False)
    d = s["d_model"]
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
            host_normals=8.0 * d * d + _inputs(s["n_seq"] * d / 2),  # W_up, W_down; the inputs shared by 2
        )
    ]


def _bb_4(s: dict) -> list[Job]:
    # the standard variant's LayerNorm (no bias) counted; ReLU and tanh MLP0 have none
    p = tiny_params(
        0, s["d_model"], s["n_layer"], d_ff=s["d_ff"], positions="none", bias=False, block="mlp", final_norm=False
    )
    weights = 2.0 * s["n_layer"] * s["d_model"] * s["d_ff"]  # every variant redraws the seed's weights
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
            host_normals=weights + _inputs(s["n_seq"] * s["d_model"] / 3),
        )
    ]


def _bb_4_2(s: dict) -> list[Job]:
    # per seed two MLP0 blocks (no norm, no bias) on every T; Attn0 (a running mean, no weights) is
    # O(d) per token: not counted. No attention term, so one job over every T's tokens is exact.
    p = tiny_params(
        0, s["d_model"], 2, d_ff=s["d_ff"], positions="none", bias=False, block="mlp", norm="none", final_norm=False
    )
    T = max(s["T"])
    # host: per T the seed's two MLP0 blocks and its n × T × d inputs (`two_block_similarity`)
    host = len(s["T"]) * 4.0 * s["d_model"] * s["d_ff"] + _inputs(s["n_seq"] * sum(s["T"]) * s["d_model"])
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
            host_normals=host,
            notes="peak at the largest T",
        )
    ]


def _bb_5(s: dict) -> list[Job]:
    # a pre-LN softmax attention stack (LayerNorm without bias, RoPE: no parameters), one job per T
    # (the attention term grows with T); Attn0's stack has no weights and O(d) per token. Held: the
    # input (n sequences) and one pass's L + 1 hidden states (BB5_CHUNK sequences a pass:
    # init_bias._stack_cosines). Host: the stack's weights and the inputs.
    from repro.born_biased.init_bias import BB5_CHUNK

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
            host_normals=p + _inputs(n * T * s["d_model"]),
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
        host_normals=p + _inputs(s["n_seq"] * T * s["d_model"]),
    )
    job.held_bytes += 4.0 * s["n_seq"] * H * T * T
    return [job]


# experiment -> its jobs under a profile; BB-1.2's row is bb_1's probe at bb_1_2's shape
PLANNERS: dict[str, Planner] = {
    "bb_1": of_row(lambda s: _bb_probes(s, "bb_1"), "bb_1"),
    "bb_1_2": lambda prof: _bb_probes(bb_1_2_sizes(prof), "bb_1_2"),
    "bb_2_2": of_row(lambda s: _bb_probes(s, "bb_2_2"), "bb_2_2"),
    "bb_3": of_row(lambda s: _bb_probes(s, "bb_3"), "bb_3"),
    "bb_4_1": of_row(_bb_4_1, "bb_4_1"),
    "bb_4": of_row(_bb_4, "bb_4"),
    "bb_4_2": of_row(_bb_4_2, "bb_4_2"),
    "bb_5": of_row(_bb_5, "bb_5"),
    "bb_6": of_row(_bb_6, "bb_6"),
}
