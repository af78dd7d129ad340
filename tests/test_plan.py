"""`repro plan`: parameter counts, FLOPs and memory against hand counts on tiny configs; the
paper plan names what it lacks."""
from __future__ import annotations

import pytest
import torch

from repro.core.models.hf import build_model
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.harness import plan
from repro.harness.cli import main


@pytest.mark.parametrize("arch", ["gpt2", "rope-gpt2", "llama"])
def test_meta_device_count_equals_a_real_model(arch):
    shape = dict(n_layer=2, n_head=2, d_model=16, vocab_size=50, n_positions=32)
    real = build_model(arch, seed=0, **shape)
    assert plan.hf_params(arch, **shape) == sum(p.numel() for p in real.parameters())


def test_tiny_closed_form_equals_a_real_tiny_decoder():
    tc = TinyConfig(vocab_size=50, d_model=16, n_layer=3, n_head=2, max_len=32, norm="layernorm", activation="gelu",
                    positions="learned", tie_embeddings=True, bias=True)
    real = TinyDecoder(tc, torch.Generator().manual_seed(0))
    assert plan.tiny_params(50, 16, 3, max_len=32) == sum(p.numel() for p in real.parameters())


def test_flops_and_memory_by_hand():
    # N = 1,000 parameters, D = 100 tokens, L = 2 layers, T = 10, d = 8
    assert plan.forward_flops(1000, 2, 10, 8, 100) == 2 * 1000 * 100 + 2 * 2 * 10 * 8 * 100  # 232,000
    assert plan.train_flops(1000, 2, 10, 8, 100) == 3 * 232_000
    assert plan.activation_bytes(2, 4, 10, 8, 2) == 2 * 4 * 10 * (34 * 8 + 5 * 2 * 10)
    j = plan.Job("x", "BB-1", "w", "train", 3, 1000, 8, 2, 2, 50, 10, 100, batch=4)
    assert j.flops == 3 * 696_000 and j.memory_bytes == 16 * 1000 + plan.activation_bytes(2, 4, 10, 8, 2)
    p = plan.Plan("t", tflops=1.0, utilisation=0.5, jobs=[j])
    assert p.seconds() == pytest.approx(3 * 696_000 / 0.5e12)


def test_paper_plan_lists_what_it_lacks_and_ci_lacks_nothing():
    paper = plan.plan("paper")
    assert {j.experiment for j in paper.jobs} >= {"causal_shift", "sinks", "seedprint", "spectral", "bb_1"}
    assert any("sinks" in m and "brown has 1,311,112" in m for m in paper.missing)
    assert any("GiB per device" in m for m in paper.missing)
    assert paper.total_flops > 1e20  # the SK trio alone: 3 × 6 · 134M · 52B ≈ 1.3e20
    assert plan.plan("ci").missing == []


def test_bb_1_2_is_costed_at_the_larger_shape():
    """BB-1.2's probe of the 1.2B RoPE GPT-2 (24 L, 2048 d) on bb_1's seeds, N and lengths: by
    hand, 2 models × N·T tokens (it ran over 5 minutes on an H100, not "small")."""
    jobs = [j for j in plan.plan("paper").jobs if j.experiment == "bb_1_2"]
    assert len(jobs) == 1
    j = jobs[0]
    p = plan.hf_params("rope-gpt2", n_layer=24, n_head=32, d_model=2048, vocab_size=50257, n_positions=1024)
    assert (j.models, j.params, j.L, j.d, j.T, j.tokens) == (2, p, 24, 2048, 1024, 10_000 * 1024)
    assert j.flops == 2 * plan.forward_flops(p, 24, 1024, 2048, 10_000 * 1024)
    assert j.flops > 4e16


def test_sk1_init_probe_is_costed_by_hand():
    """SK-1 runs one block (no embeddings or head) of 3 variants × the init seeds on n_seq × T
    Gaussian inputs: at paper 48 models × 2,000 × 2,048 tokens; one LLaMA block of width 768 with
    d_ff 2048 (hf's default for this shape) has 4·768² + 3·768·d_ff + 2·768 parameters."""
    j = next(j for j in plan.plan("paper").jobs if j.claims == "SK-1")
    d, d_ff = 768, 2048
    assert (j.models, j.L, j.T, j.tokens) == (48, 1, 2048, 2000 * 2048)
    assert j.params == 4 * d * d + 3 * d * d_ff + 2 * d == 7_079_424
    assert j.flops == 48 * (2.0 * j.params * 2000 * 2048 + 2.0 * 2048 * d * 2000 * 2048)


def test_cli(capsys):
    assert main(["plan", "--profile", "ci"]) == 0
    out = capsys.readouterr().out
    assert "total:" in out and "missing or too small: 0" in out
    assert main(["plan", "--profile", "nope"]) == 2
    assert main(["plan", "--utilisation", "0"]) == 2


def test_a_training_job_that_cannot_fit_is_refused_before_it_starts():
    msg = plan.too_big("sinks", "paper", 80 * 2**30)
    assert msg is not None and "SK-2, SK-3" in msg and "GiB per device at batch 128 × 2048" in msg
    assert plan.too_big("sinks", "ci", 80 * 2**30) is None
    assert plan.too_big("sinks", "paper", 1e15) is None
    assert plan.too_big("no-such-row", "paper", 1.0) is None
    plan.require_fits("sinks", "paper", "cpu")  # CPUs are not checked: the plan's memory is per accelerator
