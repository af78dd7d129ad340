"""Random draws where the model runs: `core.data.gaussian_inputs(device=)` and the directions
fixture's models built and drawn on their device (`preference_runs.random_init_model`). On the CPU
both give the numbers the former code gave, bit for bit; on a GPU (when there is one) nothing is
drawn on the host."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from repro.born_biased import preference_runs
from repro.core.data import gaussian_inputs
from repro.core.models.hf import build_model
from repro.ground.runtime import generator

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
TINY = dict(arch="rope-gpt2", n_layer=2, n_head=2, d_model=16, vocab_size=64)


def _former_gaussian_inputs(n, T, d, g, mean=0.0, std=1.0):
    """gaussian_inputs as it was before `device=`: the CPU generator's draws."""
    x = torch.randn((n, T, d), generator=g, device=g.device)
    return x.mul_(std).add_(mean) if (mean, std) != (0.0, 1.0) else x


@pytest.mark.parametrize("device", [None, "cpu"])
@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (0.5, 0.02)])
def test_gaussian_inputs_on_the_cpu_are_the_former_draws(device, mean, std):
    new = gaussian_inputs(5, 7, 3, generator(11), mean=mean, std=std, device=device)
    assert new.device.type == "cpu" and torch.equal(new, _former_gaussian_inputs(5, 7, 3, generator(11), mean, std))


def test_the_devices_model_on_the_cpu_is_the_host_built_one_bit_for_bit():
    """`random_init_model(draw_on_device=True)` runs the device path's code (built under the device,
    drawn by generators of it); on the CPU it must give `hf.build_model`'s weights exactly."""
    kw = dict(seed=3, n_positions=16, embedding_seed=0, dtype=torch.float32, device="cpu")
    shape = {k: v for k, v in TINY.items() if k != "arch"}
    on_device = preference_runs.random_init_model(TINY["arch"], **shape, **kw, draw_on_device=True)
    host = build_model(TINY["arch"], **shape, seed=3, embedding_seed=0, n_positions=16, attn_implementation="sdpa")
    a, b = on_device.state_dict(), host.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert on_device.get_input_embeddings().weight is on_device.get_output_embeddings().weight  # still tied


def test_direction_agreement_on_the_cpu_is_the_former_result():
    """The directions fixture's builder on a tiny config: the device path forced on the CPU gives
    the former (host-drawn) result, every field equal."""
    sizes = dict(arch="rope-gpt2", n_layer=2, n_head=2, d_model=16, vocab_size=64, n_seq=24, T=8)
    runs = {
        flag: [
            preference_runs.preference_run.uncached(
                sizes["arch"],
                seed=seed,
                lengths=(sizes["T"],),
                keep_states=False,
                d_model=16,
                n_layer=2,
                n_head=2,
                vocab_size=64,
                n_seq=24,
                dtype="float32",
                draw_on_device=flag,
            )
            for seed in range(3)
        ]
        for flag in (False, True)
    }
    for old, new in zip(runs[False], runs[True]):
        assert old.top1 == new.top1 and old.contraction_token == new.contraction_token
        assert np.array_equal(old.next_token, new.next_token) and np.array_equal(old.rank_counts, new.rank_counts)
    whole = preference_runs.direction_agreement(n_models=3, dtype="float32", **sizes)
    assert whole.favourite.tolist() == [r.top1[0].token for r in runs[False]]


@CUDA
def test_gaussian_inputs_on_a_gpu_are_drawn_there():
    g = generator(11)
    x = gaussian_inputs(4, 8, 16, g, device="cuda")
    assert x.device.type == "cuda" and torch.equal(x, gaussian_inputs(4, 8, 16, generator(11), device="cuda"))
    assert not torch.equal(x.cpu(), _former_gaussian_inputs(4, 8, 16, generator(11)))  # other numbers


@CUDA
def test_directions_models_on_a_gpu_draw_nothing_on_the_host(monkeypatch):
    drawn_on = []
    original = torch.Tensor.normal_

    def spy(self, *args, **kwargs):
        drawn_on.append(self.device.type)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "normal_", spy)
    model = preference_runs.random_init_model(
        TINY["arch"],
        **{k: v for k, v in TINY.items() if k != "arch"},
        seed=0,
        n_positions=16,
        embedding_seed=0,
        dtype=torch.bfloat16,
        device="cuda",
        draw_on_device=True,
    )
    assert drawn_on and set(drawn_on) == {"cuda"}
    assert {p.device.type for p in model.parameters()} == {"cuda"}
