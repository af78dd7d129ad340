"""The residual stream's sizes per profile and its cost rows for `repro plan` (002).

`SIZES`: experiment -> {profile -> its row, a frozen dataclass: `repro.ground.sizes.row`};
`PLANNERS`: experiment -> its jobs under a profile (`repro.core.cost.Job`). Collected by
`repro.harness.profiles` and `repro.harness.plan`. The sizes the topic fixes in code (RS-3's
vocabulary `study.GRAD_V`, RS-7's `induction.InductionConfig` defaults) are read from there. The
measurements behind the ci sizes: docs/sizes.md, "Residual stream".
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

from repro.core import cost
from repro.core.cost import Job, Planner, forward_flops, hf_params, of_row, tiny_params
from repro.ground.sizes import row


@row
class Text:
    """Held-out Brown test-split windows per model for RS-4/6/8."""

    test_seqs: int
    seq_len: int


@row
class Grad:
    """RS-3's pre-/post-norm TinyDecoders at each depth (random init, one shared batch)."""

    depths: tuple[int, ...]
    d_model: int
    n_head: int
    batch_size: int
    seq_len: int
    seeds: tuple[int, ...]


@row
class RandomInit:
    """RS-2/RS-4's HF models with norm gains perturbed."""

    archs: tuple[str, ...]
    n_layer: int
    d_model: int
    n_head: int
    vocab_size: int
    perturb_norms: float
    n_seq: int
    seq_len: int


@row
class Lens:
    """RS-8's tuned lens: a ridge start, then Adam with a stop on held-out windows; `models`: how
    many embedded models carry it (None: all)."""

    train_seqs: int
    held_seqs: int
    steps: int
    batch_tokens: int
    lr: float
    eval_every: int
    patience: int
    min_gain: float
    ridges: tuple[float, ...]
    models: int | None


@row
class Induction:
    """RS-7: `induction.InductionConfig` overrides and the model seeds."""

    config: dict[str, Any]
    seeds: tuple[int, ...]


@row
class ResidualStream:
    """002's residual-stream study (RS-1 … RS-8); what each size is: the comment below."""

    text: Text
    dla_len: int
    grad: Grad
    random_init: RandomInit
    lens: Lens
    induction: Induction


# 002 residual stream (RS-1 … RS-8). `text`: held-out Brown test-split windows per model
# (test_seqs × seq_len tokens) for RS-4/6/8; the tuned lens trains on `lens.train_seqs`
# validation-split windows; `dla_len`: tokens decomposed for RS-1/2/5.
# `grad`: RS-3's pre-/post-norm TinyDecoders (random init, one shared batch of Brown BPE
# windows). `random_init`: RS-2/RS-4's HF models with norm gains perturbed. `lens`: RS-8's
# tuned-lens budget; ci trains it on the first model only (SmolLM2 by default: Gemma's
# 262k vocabulary makes each step ≈ 3.5× dearer), paper on every model. Each layer's map
# starts from a ridge fit (λ per layer on the held-out windows) and trains on KL with a stop
# on held-out windows (`lens.fit_tuned_lens_stopped`): from the identity, Adam could not
# catch a lens that reads nothing at ci (100 steps left layer 0 at 11.6 nats against the
# constant lens's 3.75). ci steps draw 64 tokens (a step is layers × tokens × V logits
# forward and back) and stop at the 20-step cap with layers 0–18 still improving: the tuned
# lens then beats both the logit and the constant lens at 30/30 layers (worst Wilcoxon p
# 1.3e-10 against the bar 3.3e-4); convergence is the paper row's (cap 2,000 steps).
# `induction`: RS-7 (repro.residual_stream.induction): InductionConfig overrides and model
# seeds. ci: the defaults (the 2-layer model ≈ 12 s on 2 threads; the six models train side
# by side, one thread each); paper: the same task (a mechanism, not a scale claim) over ten
# seeds.
RESIDUAL_STREAM_CI = ResidualStream(
    text=Text(test_seqs=3, seq_len=128),
    dla_len=64,
    # five seeds, not three: RS-3's post-norm power takes the seeds' sd at its 95% upper
    # bound (4.4× the sample sd from 3 seeds, 2.4× from 5), so 3 seeds cannot decide it
    grad=Grad(depths=(12, 24, 48), d_model=128, n_head=4, batch_size=8, seq_len=64, seeds=(0, 1, 2, 3, 4)),
    random_init=RandomInit(
        archs=("gpt2", "llama"),
        n_layer=12,
        d_model=256,
        n_head=4,
        vocab_size=4096,
        perturb_norms=0.3,
        n_seq=8,
        seq_len=64,
    ),
    # RS-8's tuned lens: 16 validation windows, the last 3 held out for the stop; a ridge
    # start (λ per layer from the grid, × the mean input variance, on the held-out windows:
    # 1.0 lost at every layer on SmolLM2), then Adam at 64 tokens a step, evaluated every 10
    # steps, stopped after 2 evaluations without a 0.5% gain at any layer or at the 20-step
    # cap: at ci the cap stops it (layers 0–18 still improving, 19–29 best at the start);
    # each held-out evaluation costs about one lens read of the test tokens
    lens=Lens(
        train_seqs=16,
        held_seqs=3,
        steps=20,
        batch_tokens=64,
        lr=1e-4,
        eval_every=10,
        patience=2,
        min_gain=0.005,
        ridges=(0.01, 0.1),
        models=1,
    ),
    induction=Induction(config={}, seeds=(0, 1, 2)),
)
SIZES: dict[str, dict[str, ResidualStream]] = {
    "residual_stream": {
        "ci": RESIDUAL_STREAM_CI,
        "paper": replace(
            RESIDUAL_STREAM_CI,
            text=Text(test_seqs=32, seq_len=512),
            dla_len=512,
            grad=Grad(
                depths=(6, 12, 24, 48, 96), d_model=768, n_head=12, batch_size=16, seq_len=256, seeds=(0, 1, 2, 3, 4)
            ),
            random_init=replace(
                RESIDUAL_STREAM_CI.random_init,
                n_layer=24,
                d_model=768,
                n_head=12,
                vocab_size=32000,
                n_seq=32,
                seq_len=256,
            ),
            lens=replace(
                RESIDUAL_STREAM_CI.lens,
                train_seqs=64,
                held_seqs=8,
                steps=2000,
                batch_tokens=512,
                eval_every=25,
                patience=4,
                ridges=(0.01, 0.1, 1.0),
                models=None,
            ),
            induction=Induction(config={}, seeds=tuple(range(10))),
        ),
    }
}
# `long`'s overrides of the ci rows: none (long runs ci's sizes here)
OVERRIDES: dict[str, dict[str, dict[str, Any]]] = {}
DECIDE: dict[str, Any] = {}  # nothing inconclusive at ci


# --------------------------------------------------------------------------- cost rows


@functools.lru_cache(maxsize=None)
def _logit_bytes() -> tuple[float, float]:
    return cost.remembered("census-logits", logit_bytes)


def logit_bytes() -> tuple[float, float]:
    """Memory-bound bytes per logit (`cost.op_census` on the CPU, 64 tokens × 512 logits): of a
    lens read (a bfloat16 head's logits cast to float32 and put through `lens.kl_to_logits`) and of a
    tuned-lens step over 2 layers (the same under a bfloat16 autocast, forward and backward)."""
    import torch

    from repro.core.lens import kl_to_logits

    n, V, d, L = 64, 512, 16, 2
    W = torch.randn(V, d, dtype=torch.bfloat16)
    x, log_p = torch.randn(n, d), torch.randn(n, V).log_softmax(-1)
    xs = torch.randn(L, n, d, requires_grad=True)

    def read() -> None:
        kl_to_logits(log_p, (x.to(torch.bfloat16) @ W.T).float())

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = xs @ W.T
        kl_to_logits(log_p, z.float()).mean(-1).sum().backward()

    return cost.op_census(read).bytes / (n * V), cost.op_census(step).bytes / (L * n * V)


def _rs_text(s: dict) -> list[Job]:
    """RS-1/2/4/5/6/8 on every embedded model (in the run's order; `lens.models` of them carry RS-8)."""
    embedded = cost.embedded()
    lens_n = s["lens"]["models"] or len(embedded)
    jobs = []
    for i, (name, e) in enumerate(embedded.items()):
        jobs += _rs_read(name, e, s, lensed=i < lens_n)
        if i < lens_n:
            jobs.append(_rs_tuned_lens(name, e, s["lens"]))
    return jobs


def _rs_read(name: str, e: dict, s: dict, *, lensed: bool) -> list[Job]:
    """The residual stream of the held-out (and lens-training) windows, one capture each (blocks
    only: `logits_to_keep=1`), with RS-1/2's decomposition of `dla_len` tokens (a full pass with
    the head); then the reads of every layer through the V × d head: RS-6's ranks, RS-8's logit-
    and tuned-lens KLs (each its final distribution and L layers) and its mean-distribution control."""
    d, L, V = e["d"], e["L"], e["V"]
    n, T = s["text"]["test_seqs"], s["text"]["seq_len"]
    seqs = n + (s["lens"]["train_seqs"] if lensed else 0)
    dla = min(s["dla_len"], T)
    read = Job.of(
        experiment="residual_stream",
        claims="RS-1, RS-2, RS-4…RS-6" + (", RS-8" if lensed else ""),
        what=f"{name}: residual stream of held-out text" + (" and lens windows" if lensed else ""),
        kind="infer",
        models=1,
        model=e,
        params=e["params"] - V * d,
        T=T,
        tokens=seqs * T,
        batch=n,
        held_bytes=4.0 * (L + 1) * seqs * T * d,
        extra_flops=forward_flops(e["params"], L, dla, d, dla),
        loads=1,
        notes="params: the blocks (tied head, logits of one position); extra: RS-1/2's decomposition pass. "
        "Not counted: RS-5's FFN rewrite and RS-6's random-init twin (< 1% of the row)",
    )
    n_test, n_train = n * (T - 1), s["lens"]["train_seqs"] * (T - 1) if lensed else 0
    per_token = (L + 1) * V * d * (3 if lensed else 1) + (L * (d * d + d) if lensed else 0)
    # RS-8 reads the logit and the tuned lens at every layer in chunks of 256 tokens
    # (`lens.lens_kl`, ≈ 20 ops a read), with the final distribution of each chunk
    reads = 2 * (L + 1) if lensed else 0
    lenses = Job.of(
        experiment="residual_stream",
        claims="RS-6, RS-8" if lensed else "RS-6",
        what=f"{name}: every layer through the head " + ("(ranks, logit / tuned-lens KL)" if lensed else "(ranks)"),
        kind="infer",
        models=1,
        model=e,
        params=per_token,
        T=T,
        tokens=n_test,
        batch=n,
        attn_layers=0,
        extra_flops=2.0 * V * d * (n_train + n_test) if lensed else 0.0,
        peak_bytes=2.0 * e["params"] + 8.0 * n_test * V,
        mem_bytes=_logit_bytes()[0] * reads * n_test * V,
        dispatches=20.0 * reads * math.ceil(n_test / 256),
        notes="params: per-token (L+1)·V·d per read; peak: one layer's logits of every held-out token",
    )
    return [read, lenses]


def _rs_tuned_lens(name: str, e: dict, lens: dict) -> Job:
    """RS-8's tuned lens: `steps` Adam steps of `batch_tokens` tokens through L affine maps and the
    frozen head (forward and backward), the final distribution without a gradient (`extra`);
    memory: the model, (L, tokens, V) logits in bf16 and float32 with their gradient, the lens's Adam state."""
    d, L, V = e["d"], e["L"], e["V"]
    bt, tokens = lens["batch_tokens"], lens["steps"] * lens["batch_tokens"]
    return Job.of(
        experiment="residual_stream",
        claims="RS-8",
        what=f"{name}: tuned-lens training",
        kind="train",
        models=1,
        model=e,
        params=L * (V * d + d * d + d),
        T=1,
        tokens=tokens,
        batch=bt,
        attn_layers=0,
        extra_flops=2.0 * V * d * tokens,
        peak_bytes=2.0 * e["params"] + 12.0 * L * bt * V + 16.0 * L * (d * d + d),
        mem_bytes=_logit_bytes()[1] * L * tokens * V,
    )


def _rs_random_init(s: dict) -> list[Job]:
    """RS-2/RS-4's random-init HF models: the residual stream of every window (blocks only) and
    RS-1/2's decomposition; RS-4's control, a post-norm TinyDecoder of their size, with its head."""
    r = s["random_init"]
    d, L, V, H, n, T = r["d_model"], r["n_layer"], r["vocab_size"], r["n_head"], r["n_seq"], r["seq_len"]
    dla, jobs, model = min(s["dla_len"], T), [], cost.model_shape(r)
    for arch in r["archs"]:
        shape = dict(n_head=H, d_model=d, vocab_size=V)
        blocks = L * (hf_params(arch, n_layer=2, **shape) - hf_params(arch, n_layer=1, **shape))
        jobs.append(
            Job.of(
                experiment="residual_stream",
                claims="RS-1, RS-2, RS-4",
                what=f"random-init {arch}: residual stream, decomposition",
                kind="infer",
                models=1,
                params=blocks,
                model=model,
                T=T,
                tokens=n * T,
                batch=n,
                held_bytes=4.0 * (L + 1) * n * T * d,
                extra_flops=forward_flops(blocks + V * d, L, dla, d, dla),
                notes="params: the blocks",
            )
        )
    post = tiny_params(V, d, L, max_len=T, positions="rope", final_norm=False)
    jobs.append(
        Job.of(
            experiment="residual_stream",
            claims="RS-4",
            what="post-norm control stack (full logits)",
            kind="infer",
            models=1,
            params=post,
            model=model,
            T=T,
            tokens=n * T,
            batch=n,
            held_bytes=8.0 * (L + 1) * n * T * d,
        )
    )
    return jobs


def _rs_grad(s: dict) -> list[Job]:
    """RS-3: one forward and backward (three passes) of every pre- and post-norm TinyDecoder on the
    batch, per depth and seed; at the deepest also the no-skip stacks and App B.1's post-norm one.
    Counted with the pre-norm stack's final norm (post-norm stacks have 2·d fewer). The Brown BPE's
    vocabulary is the topic's (`study.GRAD_V`), not a size of the profile."""
    from repro.residual_stream.study import GRAD_V

    g = s["grad"]
    deepest, seeds = max(g["depths"]), len(g["seeds"])
    jobs = []
    for L in g["depths"]:
        n = 2 * seeds + (seeds + 1 if L == deepest else 0)
        p = tiny_params(GRAD_V, g["d_model"], L, max_len=g["seq_len"], positions="rope")
        # every stack is built uninitialised on the host and copied over in float32 (`study.flow_row`),
        # its init drawn on the device, but App B.1's post-norm control at the deepest is drawn on the host
        jobs.append(
            Job(
                experiment="residual_stream",
                claims="RS-3",
                what=f"pre- and post-norm stacks, L = {L}" + (" (+ controls)" if L == deepest else ""),
                kind="train",
                models=n,
                params=p,
                d=g["d_model"],
                L=L,
                H=g["n_head"],
                V=GRAD_V,
                T=g["seq_len"],
                tokens=g["batch_size"] * g["seq_len"],
                batch=g["batch_size"],
                dtype="float32",
                h2d_bytes=4.0 * p,
                host_normals=p / n if L == deepest else 0.0,
            )
        )
    return jobs


def _rs_induction(s: dict) -> list[Job]:
    """RS-7: the 1- and 2-layer attention-only models (untied, RoPE) per seed on generated sequences:
    `InductionConfig`'s defaults with the row's `induction.config` overrides."""
    from dataclasses import asdict

    from repro.residual_stream.induction import InductionConfig

    c = {**asdict(InductionConfig()), **s["induction"]["config"]}
    d, T, V = c["d_model"], c["seq_len"], c["vocab_size"]
    return [
        Job.of(
            experiment="residual_stream",
            claims="RS-7",
            what=f"{L}-layer attention-only induction models",
            kind="train",
            models=len(s["induction"]["seeds"]),
            params=tiny_params(V, d, L, max_len=T, tie=False, positions="rope", block="attn"),
            model=dict(d_model=d, n_layer=L, n_head=c["n_head"], vocab_size=V),
            train=c,
            dispatches=c["steps"]
            * cost.train_step_dispatches(
                "tiny",
                L,
                c["n_head"],
                autocast=bool(c["autocast"]),
                block="attn",
                positions="rope",
                tie_embeddings=False,
            ),
            notes="launch-bound: 64-wide models, each step's ops cost the host more than the GPU",
        )
        for L in (1, 2)
    ]


def _residual_stream(s: dict) -> list[Job]:
    return _rs_text(s) + _rs_random_init(s) + _rs_grad(s) + _rs_induction(s)


PLANNERS: dict[str, Planner] = {"residual_stream": of_row(_residual_stream, "residual_stream")}
