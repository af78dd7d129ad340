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
activations. Time = FLOPs / (peak × utilisation), default one H100 SXM: 989 TFLOP/s dense
bfloat16 at 40% model-FLOPs utilisation — an estimate to plan with, not a measurement.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from repro.harness.profiles import SIZES, Profile, bb_1_2_sizes, get_profile
from repro.harness.runtime import ReproError

H100_BF16_TFLOPS = 989.0  # dense, SXM (NVIDIA H100 datasheet)
DEFAULT_UTILISATION = 0.4
# Token counts of the embedded corpora under the suite's byte-level BPE (V = 4096, measured
# 2026-11-23 from the token cache): Brown train 1,311,112 / validation 181,874; the stdlib code
# corpus 5,612,449 / 595,769. A larger vocabulary gives a few % fewer tokens.
CORPUS_TOKENS = {"brown": 1_311_112, "stdlib-code": 5_612_449}
# Architecture facts of the embedded pretrained models (their config.json), for the inference
# jobs that run on them: parameters, width, depth, vocabulary.
EMBEDDED = {
    "gemma3-270m": dict(params=268_098_176, d=640, L=18, V=262_144, H=4),
    "smollm2-135m": dict(params=134_515_008, d=576, L=30, V=49_152, H=9),
}


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
    corpus: str | None = None  # the corpus a training job reads
    notes: str = ""

    @property
    def flops(self) -> float:
        return self.models * (train_flops if self.kind == "train" else forward_flops)(
            self.params, self.L, self.T, self.d, self.tokens)

    @property
    def memory_bytes(self) -> float:
        if self.kind == "train":
            return 16.0 * self.params + activation_bytes(self.L, self.batch, self.T, self.d, self.H)
        return 2.0 * self.params + activation_bytes(1, self.batch, self.T, self.d, self.H)


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


def tiny_params(vocab_size: int, d_model: int, n_layer: int, d_ff: int | None = None, max_len: int = 1024,
                tie: bool = True, positions: str = "learned", bias: bool = True) -> int:
    """Closed form of `repro.core.models.tiny.TinyDecoder` with LayerNorm and a GELU MLP (the GPT-2
    style of the causal-shift models): per block 4 attention matrices and 2 MLP matrices (with
    biases), two LayerNorms; token (and learned position) embeddings, a final LayerNorm, the
    LM head unless tied."""
    f = 4 * d_model if d_ff is None else d_ff
    b = 1 if bias else 0
    block = 4 * d_model * d_model + 4 * d_model * b + 2 * d_model * f + (f + d_model) * b + 4 * d_model
    emb = vocab_size * d_model + (max_len * d_model if positions == "learned" else 0)
    head = 0 if tie else vocab_size * d_model
    return n_layer * block + emb + 2 * d_model + head


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
    jobs = [Job("causal_shift", "CS-3…CS-6", "GPT-2-style variants (baseline, a cut per layer, α = 0, gating)",
                "train", n_models, p, m["d_model"], L, m["n_head"], m["vocab_size"], t["seq_len"], _steps_tokens(t),
                batch=t["batch_size"], corpus="brown")]
    a = s["align"]
    for name, e in EMBEDDED.items():
        toks = a["n_seq"] * a["seq_len"]
        # the decoding reads every layer's states through the V × d dictionary: (L+1)·2·V·d per token
        jobs.append(Job("causal_shift", "CS-1, CS-2", f"{name}: logit-lens decoding of every layer", "infer", 1,
                        e["params"] + (e["L"] + 1) * e["V"] * e["d"], e["d"], e["L"], e["H"], e["V"], a["seq_len"], toks,
                        batch=a["n_seq"], notes="params include (L+1)·V·d of per-layer decoding"))
    return jobs


def _sinks(s: dict) -> list[Job]:
    t, m = s["train"], s["model"]
    p, _ = _llama(m, t["seq_len"])
    n = 3 + (3 if s.get("deviation") else 0)
    # SK-1: the first block of each variant and seed on Gaussian inputs (no embeddings, no head)
    i, T = s["init"], t["seq_len"]
    block = hf_params("llama", n_positions=T, **{**_llama(m, T)[1], "n_layer": 2}) - hf_params(
        "llama", n_positions=T, **{**_llama(m, T)[1], "n_layer": 1})
    return [Job("sinks", "SK-2, SK-3", "nano LLaMA trio (baseline, amplification, attenuation)"
                + (" and the deviation trio" if n == 6 else ""), "train", n, p, m["d_model"], m["n_layer"], m["n_head"],
                m["vocab_size"], t["seq_len"], _steps_tokens(t), batch=t["batch_size"], corpus="brown"),
            Job("sinks", "SK-1", "first block of each variant at init, Gaussian inputs", "infer", 3 * len(i["seeds"]),
                block, m["d_model"], 1, m["n_head"], m["vocab_size"], T, i["n_seq"] * T, batch=10,
                notes="float32 eager attention with every map recorded: memory-bound, so the FLOPs undercount it "
                      "≈ 20×: measured alone on an H200 (2026-11-26, b1086f5) 3.5 s per seed and variant (200 "
                      "batches of 10 sequences of 2,048, ≈ 17 ms each), the fixture 174 s for the 48")]


def _context_axis(s: dict) -> list[Job]:
    t, m = s["train"], s["model"]
    p, _ = _llama(m, t["seq_len"])
    n = 2 * len(s["seeds"])  # baseline and axis-drop variants per seed
    return [Job("context_axis", "CA-8", "baseline and context-axis LMs per seed", "train", n, p, m["d_model"],
                m["n_layer"], m["n_head"], m["vocab_size"], t["seq_len"], _steps_tokens(t), batch=t["batch_size"],
                corpus="brown", notes="the context-axis batches' S× attention term is not in the estimate")]


def _seedprint(s: dict) -> list[Job]:
    c = s["lineage"]
    p = hf_params("llama", n_layer=c["n_layer"], n_head=c["n_head"], d_model=c["d_model"],
                  vocab_size=c["vocab_size"], n_positions=c.get("n_positions", c["seq_len"]))
    seeds = len(s["seeds"])
    jobs = [Job("seedprint", "SP-1…SP-4", "lineage models (pretraining)", "train", seeds, p, c["d_model"], c["n_layer"],
                c["n_head"], c["vocab_size"], c["seq_len"], c["steps"] * c["batch_size"] * c["seq_len"],
                batch=c["batch_size"], corpus="brown"),
            Job("seedprint", "SP-4", "continual training on code", "train", seeds, p, c["d_model"], c["n_layer"],
                c["n_head"], c["vocab_size"], c["seq_len"], c["continual_steps"] * c["batch_size"] * c["seq_len"],
                batch=c["batch_size"], corpus="stdlib-code"),
            Job("seedprint", "SP-6", "null models probed (random init)", "infer", s["n_null_models"], p, c["d_model"],
                c["n_layer"], c["n_head"], c["vocab_size"], s["length"], s["n"] * s["length"], batch=64)]
    q = s["pretrained"]
    for name, e in EMBEDDED.items():
        jobs.append(Job("seedprint", "SP-5", f"{name}: fine-tune", "train", 1, e["params"], e["d"], e["L"], e["H"], e["V"],
                        q["finetune_seq_len"], q["finetune_steps"] * q["finetune_batch"] * q["finetune_seq_len"],
                        batch=q["finetune_batch"], corpus="stdlib-code"))
    return jobs


def _bb_probes(s: dict, key: str) -> list[Job]:
    if key in ("bb_1", "bb_1_2"):
        p = hf_params("rope-gpt2", n_layer=s["n_layer"], n_head=s["n_head"], d_model=s["d_model"],
                      vocab_size=s["vocab_size"], n_positions=max(s["lengths"]))
        T = max(s["lengths"])
        claims, what = (("BB-1, BB-1.1, BB-2.1, BB-3.2a", "random-token probes (one pass, every length)") if key == "bb_1"
                        else ("BB-1.2", "the same probes on the other RoPE GPT-2 size (Finding 1.2)"))
        return [Job(key, claims, what, "infer", len(s["archs"]) * len(s["seeds"]), p, s["d_model"], s["n_layer"],
                    s["n_head"], s["vocab_size"], T, s["n_seq"] * T, batch=64)]
    if key == "bb_2_2":
        p = hf_params("rope-gpt2", n_layer=s["n_layer"], n_head=s["n_head"], d_model=s["d_model"],
                      vocab_size=s["vocab_size"], n_positions=s["T"])
        return [Job(key, "BB-2.2", "favourite token vs direction, many random models", "infer", s["n_models"], p,
                    s["d_model"], s["n_layer"], s["n_head"], s["vocab_size"], s["T"], s["n_seq"] * s["T"], batch=64)]
    p = tiny_params(0, s["d_model"], s["n_layer"], positions="none") + s["vocab_size"] * s["d_model"]
    return [Job(key, "BB-2.1, BB-3", "full / attention-only / MLP-only stacks on Gaussian inputs", "infer",
                3 * len(s["seeds"]), p, s["d_model"], s["n_layer"], s["n_head"], s["vocab_size"], s["T"],
                s["n_seq"] * s["T"], batch=64)]


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
        jobs.append(Job("spectral", "SF-3, SF-5…SF-7", f"{name}: filtered-NLL sweeps ({evals} evaluations)", "infer",
                        evals, per, e["d"], e["L"] // 2, e["H"], e["V"], s["prompt_len"],
                        s["n_prompts"] * s["prompt_len"], batch=s["n_prompts"],
                        notes="per evaluation: half the blocks and the whole head"))
    return jobs


def _row(planner: Callable[[dict], list[Job]], key: str) -> Callable[[Profile], list[Job]]:
    return lambda prof: planner(prof.sizes(key))


# experiment -> its jobs under a profile. Rows not here are listed as "not costed": their FLOPs
# are small next to these (closed forms, a few forward passes, tiny MLP stacks) — not their wall
# time: on the H100 (2026-11-25, paper profile) bb_4_2 took 118 s and RS-7's induction seeds 111 s,
# launch- and CPU-bound work that a FLOP count does not see. bb_1_2 was uncosted until that run:
# the paper's 1.2B RoPE GPT-2 probed at N = 10,000 × T = 1024 is ≈ 56 PFLOP, as much as bb_2_2
# (its fixture ran > 5 minutes).
PLANNERS: dict[str, Callable[[Profile], list[Job]]] = {
    "causal_shift": _row(_causal_shift, "causal_shift"), "sinks": _row(_sinks, "sinks"),
    "context_axis": _row(_context_axis, "context_axis"), "seedprint": _row(_seedprint, "seedprint"),
    "spectral": _row(_spectral, "spectral"), "bb_1": _row(lambda s: _bb_probes(s, "bb_1"), "bb_1"),
    "bb_1_2": lambda prof: _bb_probes(bb_1_2_sizes(prof), "bb_1_2"),
    "bb_2_2": _row(lambda s: _bb_probes(s, "bb_2_2"), "bb_2_2"), "bb_3": _row(lambda s: _bb_probes(s, "bb_3"), "bb_3"),
}


@dataclass
class Plan:
    profile: str
    tflops: float
    utilisation: float
    jobs: list[Job] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    not_costed: list[str] = field(default_factory=list)

    @property
    def total_flops(self) -> float:
        return sum(j.flops for j in self.jobs)

    def seconds(self, job: Job | None = None) -> float:
        f = self.total_flops if job is None else job.flops
        return f / (self.tflops * 1e12 * self.utilisation)

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "tflops": self.tflops, "utilisation": self.utilisation,
                "jobs": [{**asdict(j), "flops": j.flops, "memory_bytes": j.memory_bytes, "seconds": self.seconds(j)}
                         for j in self.jobs],
                "total_flops": self.total_flops, "total_seconds": self.seconds(),
                "missing": self.missing, "not_costed": self.not_costed}


def plan(profile: str | Profile = "paper", *, tflops: float = H100_BF16_TFLOPS, utilisation: float = DEFAULT_UTILISATION,
         device_memory_gib: float = 80.0) -> Plan:
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    if tflops <= 0 or not 0 < utilisation <= 1:
        raise ReproError(f"--tflops must be > 0 and --utilisation in (0, 1] (got {tflops}, {utilisation})")
    out = Plan(prof.name, tflops, utilisation)
    for key in SIZES:
        if key in PLANNERS:
            out.jobs += PLANNERS[key](prof)
        else:
            out.not_costed.append(key)
    for j in out.jobs:
        if j.kind == "train" and j.corpus in CORPUS_TOKENS and j.tokens > CORPUS_TOKENS[j.corpus]:
            epochs = j.tokens / CORPUS_TOKENS[j.corpus]
            out.missing.append(f"{j.experiment} ({j.claims}): trains on {j.tokens:,} tokens per model; {j.corpus} has "
                               f"{CORPUS_TOKENS[j.corpus]:,} ({epochs:.0f} epochs). Needs a larger corpus: pass `--corpus PATH` "
                               "(a directory of text files or a saved datasets directory)")
        if j.memory_bytes > device_memory_gib * 2**30:
            out.missing.append(f"{j.experiment} ({j.what}): ≈ {j.memory_bytes / 2**30:.0f} GiB per device at batch "
                               f"{j.batch} × {j.T} (over {device_memory_gib:.0f} GiB): smaller micro-batches with "
                               "gradient accumulation, or activation recomputation")
    return out


def too_big(experiment: str, profile: str | Profile, device_bytes: float) -> str | None:
    """One line saying which training job of `experiment` needs more memory per device than
    `device_bytes` (the plan's estimate: weights, Adam state and activations at the row's batch),
    or None when every one fits."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    for j in PLANNERS[experiment](prof) if experiment in PLANNERS else []:
        if j.kind == "train" and j.memory_bytes > device_bytes:
            return (f"{j.claims} ({j.what}) at profile {prof.name!r} needs ≈ {j.memory_bytes / 2**30:.0f} GiB per "
                    f"device at batch {j.batch} × {j.T} (`repro plan --profile {prof.name}`); this device has "
                    f"{device_bytes / 2**30:.0f} GiB: train it with smaller micro-batches and gradient accumulation "
                    "or activation recomputation (not built yet), or run a smaller profile")
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
    resources of those jobs' experiments."""
    topics = {cid.split("-")[0] for cid in claim_ids}
    jobs = [j for j in p.jobs if any(c.strip().split("-")[0] in topics for c in j.claims.replace("…", ",").split(","))]
    experiments = {j.experiment for j in jobs}
    missing = [m for m in p.missing if m.split(" ", 1)[0] in experiments]
    return Plan(p.profile, p.tflops, p.utilisation, jobs, missing, p.not_costed)


def lines(p: Plan) -> list[str]:
    out = [f"plan for profile {p.profile!r}: one device at {p.tflops:g} TFLOP/s × {p.utilisation:.0%} utilisation",
           f"{'experiment':<13} {'claims':<22} {'kind':<5} {'models':>6} {'params':>9} {'tokens/model':>13} "
           f"{'PFLOP':>10} {'peak GiB':>8} {'hours':>8}  what"]
    for j in p.jobs:
        out.append(f"{j.experiment:<13} {j.claims:<22} {j.kind:<5} {j.models:>6} {j.params / 1e6:>8.1f}M "
                   f"{j.tokens:>13,} {j.flops / 1e15:>10.3g} {j.memory_bytes / 2**30:>8.1f} {p.seconds(j) / 3600:>8.3g}  "
                   f"{j.what}")
    out.append(f"total: {p.total_flops / 1e15:.4g} PFLOP ≈ {p.seconds() / 3600:.3g} hours on one device "
               f"({p.seconds() / 3600 / 8:.3g} on 8 at the same utilisation)")
    if p.not_costed:
        out.append("not costed (small next to the rows above): " + ", ".join(p.not_costed))
    out.append(f"missing or too small: {len(p.missing)}")
    out += [f"  - {m}" for m in p.missing]
    return out
