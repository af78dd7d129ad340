"""Random-token probe throughput (001 §3 probes): last-position logits only vs all positions.

Run without xdist: `python -m pytest benchmarks/ -p no:xdist`. The ratio of the two groups'
times, measured in one run, is the number to read; no timing is asserted.
"""
from __future__ import annotations

import pytest
import torch

from repro.data import random_tokens
from repro.models.hf import build_model
from repro.runtime import generator

V, T, N = 8000, 128, 32


@pytest.fixture(scope="module")
def probe():
    model = build_model("rope-gpt2", n_layer=4, n_head=4, d_model=256, vocab_size=V, seed=0)
    ids = random_tokens(N, T, V, generator(0))
    return model, ids


@pytest.mark.parametrize("logits_to_keep", [1, 0], ids=["last-position", "all-positions"])
def test_probe_forward(benchmark, probe, logits_to_keep):
    model, ids = probe

    def run():
        with torch.no_grad():
            return model(input_ids=ids, logits_to_keep=logits_to_keep).logits.argmax(-1)

    benchmark.group = "random-token probe, rope-gpt2 4L d=256 V=8000, 32×128"
    out = benchmark.pedantic(run, rounds=5, warmup_rounds=1)
    assert out.shape == (N, 1 if logits_to_keep == 1 else T)
