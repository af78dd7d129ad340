"""SeedPrint's sizes per profile and its cost rows for `repro plan` (001 §5–6.1, App B.3–B.4).

`SIZES`: experiment -> {profile -> sizes} (typed by the ci row: `repro.ground.sizes`; the
lineage's row is checked against `repro.seedprint.lineage.LineageConfig`); `PLANNERS`: experiment
-> its jobs under a profile (`repro.core.cost.Job`). Collected by `repro.harness.profiles` and
`repro.harness.plan`; `repro seedprint-eval` reads its row here (`repro.seedprint.evaluation`). The
measurements behind the ci sizes: docs/sizes.md, "SeedPrint".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from repro.core import cost
from repro.core.cost import RUN, Job, Planner, llama_params, of_row
from repro.ground.sizes import Decide, row


@row
class LineageRow:
    """The lineage's models (`repro.seedprint.lineage.LineageConfig.from_sizes` reads it)."""

    d_model: int
    n_layer: int
    n_head: int
    vocab_size: int
    n_positions: int
    steps: int
    continual_steps: int
    batch_size: int
    seq_len: int
    lr: float
    warmup_steps: int
    snapshot_steps: tuple[int, ...]


@row
class PretrainedRow:
    """SP-5 (Table 6): each embedded model fine-tuned on stdlib code, and its real null."""

    n: int
    length: int
    m: int
    finetune_models: int | None
    finetune_steps: int
    finetune_lr: float
    finetune_batch: int
    finetune_seq_len: int
    heldout_windows: int
    null_train_steps: int
    null_train_lr: float


@row
class SeedPrint:
    """001 §5–6.1's SeedPrint study (SP-1 … SP-6); what each size is: the comment below."""

    lineage: LineageRow
    seeds: tuple[int, ...]
    n: int
    length: int
    m: int
    n_null_models: int
    null_bound_models: int
    calibration_null_inits: int
    pretrained: PretrainedRow


# 001 §5–6.1 SeedPrint (Fig 11, Tables 4–6, Fig 13). `lineage`: repro.seedprint.lineage.LineageConfig —
# LLaMA-style models on the Brown BPE, 001 Table 14's optimiser. ci: 4 layers × 128 wide,
# 300 steps of 16 × 64 tokens (≈ 16 s per model in bf16 autocast on 2 cores, ≈ 30 s in float32; val loss ≈ 6.1
# vs the 6.85 unigram bar), 150 continual steps on stdlib code. m = 32 = d/4: at d = 128 the
# top-6.5% sets (the source's m = 50 of 768) of an init and its own trained model are
# disjoint (measured |S| = 0–1), so the test would have nothing to test. n_null_models:
# independent inits for the false-positive rate (all pairs); null_bound_models: inits paired
# disjointly for SP-6's "≈ 1%" bound (the first n_null_models' consecutive pairs, then more):
# ≈ 350 disjoint pairs give it 80% power at a rate of α (null_verdicts.FPR_BOUND). paper: the source's 12L/768d,
# n = 10,000 sequences of length 1024, m = 50, ~2500 null pairs (72 models).
# `pretrained` (SP-5, Table 6): each embedded model fine-tuned on stdlib code, token embedding
# frozen. `null_train_steps`: Table 6's real null, the model's random-init twin trained on the
# same code at the fine-tune's batch and length (0: not built). ci: 20 steps of 4 × 64 tokens,
# no null (a 135M-parameter model trained far enough to carry learned features costs hours on 2
# cores). paper: 500 steps of 32 × 1024 = 16.4M tokens each (≥ the 5M of Table 6's smallest
# descendant; ≈ 3 passes over stdlib code, 5.6M tokens under the Brown BPE), the null as many
# tokens at 6e-4 (001 Table 14's pre-training rate: a random init, not a fine-tune).
SEEDPRINT_CI = SeedPrint(
    lineage=LineageRow(
        d_model=128,
        n_layer=4,
        n_head=4,
        vocab_size=4096,
        n_positions=256,
        steps=300,
        continual_steps=150,
        batch_size=16,
        seq_len=64,
        lr=6e-4,
        warmup_steps=30,
        snapshot_steps=(0, 25, 50, 100, 200, 300),
    ),
    seeds=(42, 123, 1000, 2000),
    n=1000,
    length=32,
    m=32,
    n_null_models=32,
    null_bound_models=32,
    calibration_null_inits=16,
    pretrained=PretrainedRow(
        n=300,
        length=16,
        m=50,
        finetune_models=1,
        finetune_steps=20,
        finetune_lr=1e-4,
        finetune_batch=4,
        finetune_seq_len=64,
        heldout_windows=64,
        null_train_steps=0,
        null_train_lr=6e-4,
    ),
)
SIZES: dict[str, dict[str, SeedPrint]] = {
    "seedprint": {
        "ci": SEEDPRINT_CI,
        "paper": replace(
            SEEDPRINT_CI,
            lineage=replace(
                SEEDPRINT_CI.lineage,
                d_model=768,
                n_layer=12,
                n_head=12,
                vocab_size=32000,
                n_positions=1024,
                steps=20000,
                continual_steps=5000,
                batch_size=32,
                seq_len=1024,
                warmup_steps=2000,
                snapshot_steps=(0, 1000, 2500, 5000, 10000, 20000),
            ),
            n=10000,
            length=1024,
            m=50,
            n_null_models=72,
            null_bound_models=700,
            calibration_null_inits=72,
            pretrained=replace(
                SEEDPRINT_CI.pretrained,
                n=10000,
                length=1024,
                finetune_models=None,
                finetune_steps=500,
                finetune_batch=32,
                finetune_seq_len=1024,
                heldout_windows=512,
                null_train_steps=500,
            ),
        ),
    }
}
# `long`'s overrides of the ci rows: none (long runs ci's sizes here)
# decide-sp-null: SP-6's bound, ≈ 350 disjoint pairs of independent inits for 80% at a rate of α
# (its power record); the zoo at ci's sizes (its same-lineage pairs are the control). ≈ 400 s on
# 2 CPU cores (results/cpu-2026-11-29-decide).
OVERRIDES: dict[str, dict[str, dict[str, Any]]] = {"decide-sp-null": {"seedprint": dict(null_bound_models=700)}}
DECIDE: dict[str, Decide] = {
    "SP-3": Decide(
        None,
        "not a question of size: under the source's per-pair rule (p < 0.01) the unrelated "
        "base1000/base2000 pair (U p 0.0036) is a miss at any size; its test reads inconclusive at "
        "size 1 − (1 − α)^12 = 0.11 by design",
    ),
    "SP-6": Decide("sp-null", "≈ 350 disjoint pairs of independent inits for 80% at a rate of α under the 0.03 bound"),
    "SP-4": Decide(
        None,
        "the code pair: a continual training that moves the true descendant to PCS ≤ 0.585 (Table 5), the "
        "paper profile's 5,000 steps of 32 × 1024 tokens, not a chunk",
    ),
    "SP-5": Decide(
        None,
        "needs an unrelated model trained far enough to carry learned features (the real null) and "
        "fine-tunes of ≥ 5e6 tokens: the paper profile's 16.4M-token fine-tunes and null twins on a GPU, not a chunk",
    ),
}


# --------------------------------------------------------------------------- cost rows


def _seedprint(s: dict) -> list[Job]:
    c = s["lineage"]
    p, shape = llama_params(c, c.get("n_positions", c["seq_len"]))
    seeds = len(s["seeds"])
    step_ops = cost.train_step_dispatches("llama", c["n_layer"], c["n_head"])  # the lineage's step (bf16 autocast)
    # SP-6's null models: built (drawn on the host) and probed like BB's random-token probes
    null = cost.hf_probe_terms("llama", params=p, **cost.model_fields(shape), n_seq=s["n"], T=s["length"])
    jobs = [
        Job.of(
            experiment="seedprint",
            claims="SP-1…SP-4, SP-6",  # SP-6: the zoo's inputs and its same-lineage pairs (the control)
            what="lineage models (pretraining)",
            kind="train",
            models=seeds,
            params=p,
            model=shape,
            T=c["seq_len"],
            tokens=c["steps"] * c["batch_size"] * c["seq_len"],
            batch=c["batch_size"],
            corpus=RUN,
            dispatches=c["steps"] * step_ops,
        ),
        Job.of(
            experiment="seedprint",
            claims="SP-4, SP-6",
            what="continual training on code",
            kind="train",
            models=seeds,
            params=p,
            model=shape,
            T=c["seq_len"],
            tokens=c["continual_steps"] * c["batch_size"] * c["seq_len"],
            batch=c["batch_size"],
            corpus="stdlib-code",
            dispatches=c["continual_steps"] * step_ops,
        ),
        Job.of(
            experiment="seedprint",
            claims="SP-6",
            what="null models probed (random init)",
            kind="infer",
            models=max(s["n_null_models"], s["null_bound_models"]),
            params=p,
            model=shape,
            T=s["length"],
            tokens=s["n"] * s["length"],
            batch=64,
            **null,
        ),
    ]
    q = s["pretrained"]

    def code_training(name: str, e: dict, what: str, steps: int, **time_terms: Any) -> Job:
        """One training of an embedded model's shape on stdlib code at the fine-tune's batch and length."""
        return Job.of(
            experiment="seedprint",
            claims="SP-5",
            what=f"{name}: {what}",
            kind="train",
            models=1,
            model=e,
            T=q["finetune_seq_len"],
            tokens=steps * q["finetune_batch"] * q["finetune_seq_len"],
            batch=q["finetune_batch"],
            corpus="stdlib-code",
            dispatches=steps * cost.train_step_dispatches("llama", e["L"], e["H"]),
            **time_terms,
        )

    for name, e in list(cost.embedded().items())[: q["finetune_models"]]:  # the first `finetune_models` (None: all)
        jobs.append(code_training(name, e, "fine-tune", q["finetune_steps"], loads=1))
        if q["null_train_steps"]:  # Table 6's real null: the random-init twin trained alike
            what = "the real null (its random-init twin trained on the same code)"
            jobs.append(code_training(name, e, what, q["null_train_steps"], host_normals=2.0 * e["params"]))
    return jobs


PLANNERS: dict[str, Planner] = {"seedprint": of_row(_seedprint, "seedprint")}
