"""The context-axis experiments (004) the CA claims read: CA-4 on a pretrained model, the
per-slice states of Fig 3, the counted cost of CA-6 / CA-7, and CA-8's training grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from repro.context_axis.kernels import NAIVE_MAX_S, attend, segment, to_band
from repro.context_axis.whole_model import (
    causal_logits,
    full_axis_logits,
    lm_job,
    prefix_oracle,
    segment_logits,
    train_lm,
    window_nll,
)
from repro.core import data, stats
from repro.core import train as T
from repro.core.models.hf import in_dtype
from repro.ground.runtime import ReproError, generator

# --------------------------------------------------------------------------- CA-4


@dataclass
class PretrainedRun:
    name: str
    max_full_vs_oracle: float
    max_seg1_vs_causal: float
    max_segS_vs_oracle: float
    max_causal_vs_oracle: float  # controls: two different functions of the same weights
    max_segk_vs_causal: float
    params: tuple[int, int]
    state_unchanged: bool
    impl_restored: bool
    nll: dict[str, float]
    dtype: str
    corpus: str  # the text its windows were cut from (--corpus)


def pretrained_run(
    model_name: str, m: nn.Module, tok: Any, p: dict, corpus: str, dtype: torch.dtype = torch.float64
) -> PretrainedRun:
    """CA-4 on a pretrained model (`p`: the profile's "pretrained" row): every whole-model mode
    on held-out windows of `corpus` with the model's own weights, the largest logit gaps
    between modes that must agree (and two that must not: the controls), whether the state
    dict and the attention implementation are left as they were, and the NLL per mode.

    The model runs in `dtype` (`in_dtype`: in place and back, exact), so "agree" is tested well
    below float32's rounding through 30 layers; transformers' RMSNorm and rotary tables still
    compute in float32, which sets the floor (CA-4's tolerance).
    In float32 the full axis and the per-prefix oracle differed by 0.019 in the logits on an H100
    (16 × 128 tokens, results/h100-2026-11-25) and by 7e-4 on a CPU over 4 of those windows."""
    with in_dtype(m, dtype):
        return _pretrained_run(model_name, m, tok, p, corpus)


def _pretrained_run(model_name: str, m: nn.Module, tok: Any, p: dict, corpus: str) -> PretrainedRun:
    ids = data.bos_windows(
        tok,
        "test",
        p["n_seq"],
        p["seq_len"] + 1,
        who=f"--model {model_name}: CA-4's claims",
        device=next(m.parameters()).device,
        corpus=corpus,
    )
    x, y = ids[:, :-1], ids[:, 1:]
    before = {k: v.detach().clone() for k, v in m.state_dict().items()}
    n_params = sum(p.numel() for p in m.parameters())
    impl = m.config._attn_implementation
    with torch.no_grad():
        causal = causal_logits(m, x)  # (B, S, V) in the run's dtype: compared as computed
        oracle = prefix_oracle(m, x)
        full = full_axis_logits(m, x)
        seg1 = segment_logits(m, x, 1)
        segS = segment_logits(m, x, x.shape[1])
        segk = segment_logits(m, x, p["segment"])

    def nll(lg):
        return float(T.token_nll(lg, y).mean())

    return PretrainedRun(
        model_name,
        float((full - oracle).abs().max()),
        float((seg1 - causal).abs().max()),
        float((segS - oracle).abs().max()),
        float((causal - oracle).abs().max()),
        float((segk - causal).abs().max()),
        (n_params, sum(p.numel() for p in m.parameters())),
        all(torch.equal(v, before[k]) for k, v in m.state_dict().items()),
        m.config._attn_implementation == impl,
        {"causal": nll(causal), "full": nll(full), f"segment:{p['segment']}": nll(segk)},
        str(next(m.parameters()).dtype).removeprefix("torch."),
        corpus,
    )


# --------------------------------------------------------------------------- CA-5: Fig 3


def per_slice_states(model, ids: torch.Tensor, kernel: str) -> torch.Tensor:
    """The first layer's attention output for every (slice, position) of one sequence, through
    a context-axis kernel on the model's own projections (single head view, for the figures)."""
    layer = model.model.layers[0]
    with torch.no_grad():
        x = layer.input_layernorm(model.model.embed_tokens(ids))[0]  # (S, d)
        S = x.shape[0]
        a = layer.self_attn
        q, k, v = (proj(x)[None, None, None].expand(1, 1, S, S, -1) for proj in (a.q_proj, a.k_proj, a.v_proj))
        return attend(q, k, v, kernel)[0, 0]


# --------------------------------------------------------------------------- CA-6, CA-7: counted cost


def counted_flops(fn, *args) -> int:
    with FlopCounterMode(display=False) as fc:
        fn(*args)
    return int(fc.get_total_flops())


def causal_flops(q, k, v) -> int:
    """Dense causal attention over one slice (the standard decoder's S × S), written out: the
    counter does not see inside CPU SDPA's fused kernel."""
    S = q.shape[-2]

    def causal():
        s = (q @ k.transpose(-1, -2)).masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float("-inf"))
        return torch.softmax(s, -1) @ v

    return counted_flops(causal)


def counted_cost(c: dict) -> dict[str, Any]:
    """CA-6 / CA-7 (`c`: the profile's "cost" row): counted FLOPs of every kernel at each S (H heads, head_dim d, batch 1), the segment
    kernel's at the largest S for each k, and the states each layout stores."""
    H, d = c["heads"], c["head_dim"]
    g = generator(0)
    rows = {name: [] for name in ("naive", "masked_sdpa", "trimmed", "segment k=4", "causal")}
    states = {"full S×S layout": [], "segment band k=4": [], "causal": []}
    for S in c["S"]:
        q, k, v = (torch.randn(1, H, S, S, d, generator=g) for _ in range(3))
        for name in ("naive", "masked_sdpa", "trimmed"):
            if name == "naive" and S > NAIVE_MAX_S:
                continue
            rows[name].append((S, counted_flops(attend, q, k, v, name)))
        band = [to_band(t, 4) for t in (q, k, v)]
        rows["segment k=4"].append((S, counted_flops(segment, *band)))
        rows["causal"].append((S, causal_flops(q[:, :, 0], k[:, :, 0], v[:, :, 0])))
        states["full S×S layout"].append((S, S * S))
        states["segment band k=4"].append((S, band[0].shape[2] * S))
        states["causal"].append((S, S))
    S = c["S"][-1]
    q, k, v = (torch.randn(1, H, S, S, d, generator=g) for _ in range(3))
    seg = []
    for K in c["segments"]:
        band = [to_band(t, K) for t in (q, k, v)]
        out = segment(*band)
        seg.append((K, counted_flops(segment, *band), out[0, 0].numel() // d))
    return dict(rows=rows, states=states, seg=seg, S=S, H=H, d=d)


# --------------------------------------------------------------------------- CA-8


VARIANTS = ("causal", "context axis", "axis drop")


@dataclass
class Experiment:
    modes: list[str]
    nll: dict[str, dict[str, np.ndarray]]  # variant → mode → (seeds, windows)
    results: dict[str, list[T.TrainResult]]
    seeds: tuple[int, ...]
    dropped: dict[str, list[int]]
    n_windows: int
    seq_len: int
    corpus: str  # what the models trained on and were scored on (--corpus)


def ca8_experiment(
    sizes: dict, corpus: str = "brown", device: torch.device | str = "cpu", procs: int = 1
) -> Experiment:
    """CA-8: for each seed, the causal, context-axis and axis-drop LMs trained on `corpus` with
    the same init and data order, each scored per held-out window under every inference mode
    (causal, segment:k, full). `sizes`: the profile's "context_axis" row; the models train and
    are scored on `device` (--device); `procs` > 1 (--train-procs): each model trains first on
    that many processes under torchrun (repro.core.launch), then loads here."""
    tc = T.TrainConfig(**sizes["train"], vocab_size=sizes["model"]["vocab_size"], corpus=corpus)
    train_tokens, val_tokens, ident = T.corpus_tokens(corpus, tc.vocab_size)
    n, L = sizes["eval"]["windows"], tc.seq_len + 1
    if val_tokens.numel() < n * L:
        raise ReproError(
            f"CA-8 needs {n} held-out windows of {L} tokens; {data.corpus_title(corpus)} "
            f"validation has {val_tokens.numel()}"
        )
    windows = T.cut_windows(val_tokens, torch.arange(n) * L, tc.seq_len).to(device)  # n non-overlapping
    modes = ["causal", *[f"segment:{k}" for k in sizes["eval"]["segments"]], "full"]
    setups = {
        "causal": dict(train_mode="causal"),
        "context axis": dict(train_mode="full"),
        "axis drop": dict(train_mode="full", axis_drop=sizes["axis_drop"]),
    }
    from repro.core import launch

    # --train-procs N: every model under torchrun first; with one process they train in-process
    # as they always have (pooled=False: not in the training pool, whose one torch thread need
    # not reproduce the bits of the committed baselines' in-process runs)
    launch.train_jobs(
        [
            lm_job(
                sizes["model"], tc, seed, bucket=sizes["bucket"], corpus=corpus, data_identity=ident, **setups[variant]
            )
            for seed in sizes["seeds"]
            for variant in VARIANTS
        ],
        procs,
        device,
        pooled=False,
    )
    nll = {v: {m: [] for m in modes} for v in VARIANTS}
    results = {v: [] for v in VARIANTS}
    dropped = {v: [] for v in VARIANTS}
    for seed in sizes["seeds"]:
        for variant in VARIANTS:
            r = train_lm(
                sizes["model"],
                tc,
                seed,
                bucket=sizes["bucket"],
                train_tokens=train_tokens,
                val_tokens=val_tokens,
                data_identity=ident,
                device=device,
                **setups[variant],
            )
            results[variant].append(r)
            dropped[variant].append(sum(r.model.drop_draws(tc.steps)))  # replayed: also for cached runs
            for mode in modes:
                nll[variant][mode].append(window_nll(r.model, windows, mode).cpu().numpy())
    return Experiment(
        modes,
        {v: {m: np.stack(x) for m, x in d.items()} for v, d in nll.items()},
        results,
        tuple(sizes["seeds"]),
        dropped,
        n,
        tc.seq_len,
        corpus,
    )


def train_inference_mismatch(e: Experiment) -> dict[tuple[str, str], float]:
    """Our own check beside CA-8, not the source's claim (004 §3.1's training–inference mismatch):
    per (trained variant, inference mode), the largest over seeds of |NLL in that mode − NLL in
    the variant's training mode (causal for the causal model, full for the others)|, nats/token."""
    out = {}
    for v in VARIANTS:
        own = e.nll[v]["causal" if v == "causal" else "full"].mean(1)
        for mode in e.modes:
            out[(v, mode)] = float(np.abs(e.nll[v][mode].mean(1) - own).max())
    return out


def joint_paired_power(effect: float, sds: list[float], alpha_one_sided: float, n: int):
    """CA-8's power: comparisons that must all pass, each a one-sided paired t at `alpha_one_sided`
    with its paired sd `sds[i]`, at an improvement of `effect`. Returns (joint(k): the product of
    the powers at k paired seeds — a lower bound when the comparisons share a baseline and so
    correlate positively —, and the powers of each at n seeds: the smallest is an upper bound)."""

    def joint(k: int) -> float:
        return float(np.prod([stats.power_paired_t(effect, sd, max(k, 2), alpha_one_sided) for sd in sds]))

    return joint, [stats.power_paired_t(effect, sd, n, alpha_one_sided) for sd in sds]
