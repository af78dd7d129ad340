"""The context axis's sizes per profile and its cost rows for `repro plan` (004).

`SIZES`: experiment -> {profile -> sizes} (typed by the ci row: `repro.ground.sizes`);
`PLANNERS`: experiment -> its jobs under a profile (`repro.core.cost.Job`). Collected by
`repro.harness.profiles` and `repro.harness.plan`. The measurements behind the ci sizes:
docs/sizes.md, "Context axis".
"""

from __future__ import annotations

from typing import Any

from repro.core import cost
from repro.core.cost import RUN, Job, Planner, llama_params, of_row, steps_tokens
from repro.ground.sizes import Decide

SIZES: dict[str, dict[str, dict[str, Any]]] = {
    # 004 context axis (CA-1 … CA-8). `check`: CA-3/5/6 on random tiny HF models (hypothesis
    # examples, float64, S up to `max_S`); `cost`: CA-6/7's counted FLOPs at these S (and
    # segment sizes at S = max), times for the figure only (benchmarks/ times properly);
    # `pretrained`: CA-4 on the embedded models (or --model), Brown test windows led by <bos>.
    # CA-8: identical llama-style models (`model`) trained on Brown BPE from the same initial
    # weights and data order — causal, full context axis, full axis with §1's stochastic axis
    # drop (`axis_drop`: a batch runs causal with that probability) — over `seeds`; held-out
    # NLL on `eval.windows` non-overlapping validation windows under causal, full and
    # segment-k inference. A full-axis step costs ≈ T/2 causal steps (every prefix is a pass).
    # ci: 50 steps of 16 × 32 tokens for all 9 models. CA-8 is inconclusive at any CPU budget
    # (power ≈ 0.004 at 0.02 nats, ~78 seeds for 80%), so the steps are cut to what CI's budget
    # leaves: the verdict cannot change with steps at this size, and the power row says what
    # would decide it.
    # paper: 6 layers × 256, 128-token windows (a GPU).
    "context_axis": {
        "ci": dict(
            check=dict(examples=25, max_S=10, max_layers=3),
            cost=dict(S=(16, 32, 64, 128, 256), segments=(1, 2, 4, 8, 16), heads=4, head_dim=16),
            pretrained=dict(n_seq=2, seq_len=32, segment=4),
            model=dict(n_layer=2, n_head=4, d_model=64, vocab_size=2048),
            train=dict(
                steps=50,
                batch_size=16,
                seq_len=32,
                lr=3e-3,
                warmup_steps=10,
                eval_every=50,
                eval_batches=4,
                autocast="auto",
            ),
            seeds=(0, 1, 2),
            axis_drop=0.5,
            bucket=8,
            eval=dict(windows=256, segments=(2, 4, 8)),
        ),
        "paper": dict(
            check=dict(examples=200, max_S=16, max_layers=4),
            cost=dict(S=(16, 32, 64, 128, 256), segments=(1, 2, 4, 8, 16, 32, 64), heads=4, head_dim=64),
            pretrained=dict(n_seq=16, seq_len=128, segment=8),
            model=dict(n_layer=6, n_head=8, d_model=256, vocab_size=8192),
            train=dict(
                steps=5000,
                batch_size=32,
                seq_len=128,
                lr=1e-3,
                warmup_steps=200,
                eval_every=500,
                eval_batches=8,
                autocast="auto",
            ),
            seeds=(0, 1, 2, 3, 4),
            axis_drop=0.5,
            bucket=16,
            eval=dict(windows=2048, segments=(2, 4, 8, 16, 32)),
        ),
    }
}
# `long`'s overrides of the ci rows: none (long runs ci's sizes here)
# decide-ca8: CA-8's power record names 6 paired seeds at this model size and budget.
OVERRIDES: dict[str, dict[str, dict[str, Any]]] = {"decide-ca8": {"context_axis": dict(seeds=tuple(range(6)))}}
DECIDE: dict[str, Decide] = {
    "CA-8": Decide("ca8", "6 paired seeds for 80% at a 0.01 nats/token benefit (ours)", corpus="mix"),
    "CA-4": Decide(
        None,
        "the 'minimal retraining' half: a context-axis fine-tune of each embedded model (≥ 1,000 steps of "
        "8 × 64 tokens), not built; no chunk",
    ),
}


# --------------------------------------------------------------------------- cost rows


def _context_axis(s: dict) -> list[Job]:
    t, m = s["train"], s["model"]
    p, _ = llama_params(m, t["seq_len"])
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
            steps_tokens(t),
            batch=t["batch_size"],
            corpus=RUN,
            dtype="auto" if t["autocast"] else "float32",
            # a step's ops: a LLaMA-style model's of the same depth (the axis's own ops not counted)
            dispatches=t["steps"] * cost.train_step_dispatches("llama", m["n_layer"], m["n_head"]),
            notes="the context-axis batches' S× attention term and ops are not in the estimate",
        )
    ]


PLANNERS: dict[str, Planner] = {"context_axis": of_row(_context_axis, "context_axis")}
