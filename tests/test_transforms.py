"""Function-preserving weight transforms (issue 23): the logits stay equal to float tolerance
on Llama (with and without grouped-query attention), Gemma 3, GPT-2 and GPT-NeoX classes, while
the weights — and the hidden states — change."""

from __future__ import annotations

import pytest
import torch

from repro.core.models.hf import build_model
from repro.ground.runtime import ReproError
from repro.seedprint import transforms as tf


def _gemma3():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    cfg = Gemma3TextConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=64,
        sliding_window=16,
        attn_implementation="eager",
    )
    m = Gemma3ForCausalLM(cfg).eval()
    with torch.no_grad():  # non-trivial norm gains (Gemma's 1 + w)
        for n, p in m.named_parameters():
            if "norm" in n:
                p.normal_(0.0, 0.3)
    return m


def _llama_gqa():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        attn_implementation="eager",
    )
    return LlamaForCausalLM(cfg).eval()


MODELS = {
    "llama": lambda: build_model("llama", n_layer=2, n_head=4, d_model=32, vocab_size=97, n_positions=64, seed=0),
    "llama-gqa-tied": _llama_gqa,
    "gemma3": _gemma3,
    "gpt2": lambda: build_model("gpt2", n_layer=2, n_head=4, d_model=32, vocab_size=97, n_positions=64, seed=0),
    "rope-gpt2": lambda: build_model(
        "rope-gpt2", n_layer=2, n_head=4, d_model=32, vocab_size=97, n_positions=64, seed=0
    ),
}


def _logits(m, ids):
    with torch.no_grad():
        return m(input_ids=ids).logits


def _n_ff(m):
    return (
        m.config.intermediate_size
        if hasattr(m.config, "intermediate_size") and m.config.intermediate_size
        else (m.config.n_inner or 4 * m.config.n_embd)
    )


def _n_groups(m):
    c = m.config
    return getattr(c, "num_key_value_heads", None) or getattr(c, "num_attention_heads", None) or c.n_head


@pytest.mark.parametrize("arch", list(MODELS))
@pytest.mark.parametrize("how", ["residual", "mlp", "heads", "scale"])
def test_transform_keeps_the_logits(arch, how):
    m = MODELS[arch]()
    ids = torch.randint(0, 97, (2, 12), generator=torch.Generator().manual_seed(1))
    before = _logits(m, ids)
    state = {k: v.clone() for k, v in m.state_dict().items()}
    g = torch.Generator().manual_seed(2)
    d = tf._d(m)
    if how == "residual":
        tf.permute_residual(m, torch.randperm(d, generator=g))
    elif how == "mlp":
        tf.permute_mlp_hidden(m, 1, torch.randperm(_n_ff(m), generator=g))
    elif how == "heads":
        tf.permute_heads(
            m, 0, torch.randperm(_n_groups(m), generator=g).flip(0) if _n_groups(m) > 1 else torch.tensor([0])
        )
    else:
        tf.scale_into_norm(m, 0, torch.exp(torch.randn(d, generator=g)))
    changed = sum(not torch.equal(state[k], v) for k, v in m.state_dict().items())
    assert changed > 0, "the transform must change the weights"
    after = _logits(m, ids)
    assert torch.allclose(before, after, atol=2e-5, rtol=1e-4), float((before - after).abs().max())


def test_permuted_residual_moves_the_hidden_states():
    m = MODELS["llama"]()
    ids = torch.randint(0, 97, (1, 8), generator=torch.Generator().manual_seed(1))
    h0 = m(input_ids=ids, output_hidden_states=True).hidden_states[-1].detach()
    perm = torch.randperm(32, generator=torch.Generator().manual_seed(3))
    tf.permute_residual(m, perm)
    h1 = m(input_ids=ids, output_hidden_states=True).hidden_states[-1].detach()
    assert not torch.allclose(h0, h1)
    assert torch.allclose(h0[..., perm], h1, atol=1e-5)  # new dimension j holds old dimension perm[j]


def test_bad_input():
    m = MODELS["gpt2"]()
    with pytest.raises(ReproError, match="permutation of 32"):
        tf.permute_residual(m, torch.arange(31))
    with pytest.raises(ReproError, match="out of range"):
        tf.permute_mlp_hidden(m, 5, torch.arange(128))
    with pytest.raises(ReproError, match="positive scales"):
        tf.scale_into_norm(m, 0, -torch.ones(32))
