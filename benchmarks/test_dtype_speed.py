"""One training step and one probe forward in float32 and in bfloat16 (issue 18): the ratio of
the two, measured in one run, shows what the dtype policy buys on this CPU — or what emulated
bfloat16 would cost where the CPU lacks it (the reason `runtime.resolve_dtype("auto")` picks
float32 there).

Run without xdist: ``make bench`` or ``python -m pytest benchmarks/test_dtype_speed.py -p no:xdist``.
Nothing here asserts a time. Each case's ``extra_info`` holds ``seconds`` and the sizes;
`test_dtype_summary` writes artifacts/benchmarks/dtype_summary.json with, per workload,
``bf16_over_f32`` = seconds in bfloat16 / seconds in float32 (< 1: bf16 is faster here), the
CPU's bfloat16 capability and what the policy chose.

Workloads, at the ci profile's shapes:
- train step: the CS-3 … CS-6 TinyDecoder (4 layers, d = 128, GPT-2 block, V = 4096), one AdamW
  step on 16 × 64 tokens through `repro.core.train`'s loss, under the autocast the dtype would give;
- probe forward: `repro.born_biased.preference_probe.probe` on a 4-layer slice of 001 §3's 768-wide RoPE GPT-2
  (V = 50,257), 32 random sequences of 64 tokens, weights in the dtype (as `preference_run`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from repro.born_biased.preference_probe import probe
from repro.born_biased.preference_runs import random_token_inputs
from repro.causal_shift.experiments import gpt2_style
from repro.core import scoring, train
from repro.core.models.hf import build_model
from repro.core.models.tiny import TinyDecoder
from repro.ground.runtime import atomic_write_json, cpu_capability, dtype_name, generator, resolve_dtype
from repro.harness.bench import mean_seconds

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
RESULTS: dict[tuple[str, str], float] = {}  # (workload, dtype) → mean seconds, read by the summary

# train step: the causal_shift ci row
TR_V, TR_D, TR_L, TR_H, TR_B, TR_T = 4096, 128, 4, 4, 16, 64
# probe: bb_1's width and vocabulary, 4 layers, fewer sequences (one forward is the unit)
PR_L, PR_H, PR_D, PR_V, PR_N, PR_T = 4, 12, 768, 50257, 32, 64


@pytest.fixture(scope="module")
def tokens() -> torch.Tensor:
    return torch.randint(0, TR_V, (TR_B, TR_T + 1), generator=generator(0))


@pytest.mark.parametrize("name", list(DTYPES))
def test_train_step(benchmark, tokens, name):
    model = TinyDecoder(
        gpt2_style(vocab_size=TR_V, d_model=TR_D, n_layer=TR_L, n_head=TR_H, max_len=TR_T), generator(1)
    )
    cfg = train.TrainConfig(autocast=None if name == "float32" else "bfloat16", vocab_size=TR_V)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        loss = scoring.lm_loss(model, tokens, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss)

    benchmark.group = f"train step: TinyDecoder {TR_L}L d={TR_D} V={TR_V}, {TR_B}×{TR_T} tokens"
    loss = benchmark.pedantic(step, rounds=5, warmup_rounds=1)
    assert loss == loss  # finite
    _keep(benchmark, "train step", name)


@pytest.mark.parametrize("name", list(DTYPES))
def test_probe_forward(benchmark, name):
    model = build_model(
        "rope-gpt2",
        n_layer=PR_L,
        n_head=PR_H,
        d_model=PR_D,
        vocab_size=PR_V,
        seed=0,
        n_positions=PR_T,
        attn_implementation="sdpa",
        dtype=DTYPES[name],
    )
    ids = random_token_inputs(PR_N, PR_T, PR_V)
    benchmark.group = f"probe forward: rope-gpt2 {PR_L}L d={PR_D} V={PR_V}, {PR_N}×{PR_T} tokens"
    res = benchmark.pedantic(probe, args=(model, ids), kwargs=dict(keep_states=False), rounds=3, warmup_rounds=1)
    assert res.next_token.shape == (1, PR_N)
    _keep(benchmark, "probe forward", name)


def _keep(benchmark, workload: str, name: str) -> None:
    seconds = mean_seconds(benchmark)
    benchmark.extra_info.update(dtype=name, torch_threads=torch.get_num_threads())
    if seconds is not None:
        benchmark.extra_info["seconds"] = seconds
        RESULTS[(workload, name)] = seconds


def test_dtype_summary(request, capsys):
    """bf16 / float32 time per workload, measured in this run (recorded, not asserted)."""
    if not RESULTS:
        pytest.skip("benchmarking disabled (smoke run): no times to summarise")
    cpu = cpu_capability()
    out = {
        "cpu": cpu,
        "policy_dtype": dtype_name(resolve_dtype("auto")),
        "torch_threads": torch.get_num_threads(),
        "workloads": {},
    }
    for workload in sorted({w for w, _ in RESULTS}):
        f32, b16 = RESULTS.get((workload, "float32")), RESULTS.get((workload, "bfloat16"))
        out["workloads"][workload] = {
            "float32_s": f32,
            "bfloat16_s": b16,
            "bf16_over_f32": None if not (f32 and b16) else b16 / f32,
        }
    atomic_write_json(Path(request.config.rootpath) / "artifacts" / "benchmarks" / "dtype_summary.json", out)
    with capsys.disabled():
        print(f"\n[dtype] native bf16: {cpu['native_bf16']} ({' '.join(cpu['flags'])}); policy: {out['policy_dtype']}")
        for workload, w in out["workloads"].items():
            ratio = w["bf16_over_f32"]
            print(
                f"[dtype] {workload:14s} float32 {w['float32_s']:.3f} s, bfloat16 {w['bfloat16_s']:.3f} s, "
                f"bf16/f32 = {ratio:.2f}"
                if ratio
                else f"[dtype] {workload}: incomplete"
            )
