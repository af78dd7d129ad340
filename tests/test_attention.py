"""repro.core.models.attention: attention in float32 inside a bf16 autocast on a CPU."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from repro.core import train
from repro.core.models.attention import SDPA, sdpa
from repro.core.models.hf import build_model
from repro.ground import runtime


def qkv(dtype=torch.float32):
    g = runtime.generator(0)
    return [torch.randn(2, 3, 8, 4, generator=g).to(dtype) for _ in range(3)]


def test_plain_float32_is_torchs_sdpa_exactly():
    q, k, v = qkv()
    assert torch.equal(sdpa(q, k, v, is_causal=True), F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_under_a_bf16_autocast_attention_runs_in_float32():
    q, k, v = qkv(torch.bfloat16)
    with runtime.autocast("bfloat16"):
        out = sdpa(q, k, v, is_causal=True)
        lowered = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # what autocast does alone
    want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    assert out.dtype is torch.bfloat16  # returned in the inputs' dtype
    assert torch.equal(out, want.to(torch.bfloat16))  # computed in float32
    assert not torch.equal(lowered, out)  # control: bf16 SDPA differs


def test_hf_models_take_the_same_rule():
    kw = dict(n_layer=2, n_head=2, d_model=32, vocab_size=64, seed=0, n_positions=16)
    ours, theirs = (
        build_model("llama", attn_implementation=SDPA, **kw),
        build_model("llama", attn_implementation="sdpa", **kw),
    )
    ids = torch.randint(0, 64, (2, 16), generator=runtime.generator(1))
    assert torch.equal(ours(ids).logits, theirs(ids).logits)  # float32: identical
    assert ours.config._attn_implementation == SDPA


def test_checkpoint_keys_say_the_attention_rule():
    kw = dict(n_layer=1, n_head=2, d_model=16, vocab_size=32, seed=0, n_positions=8)
    model, eager = build_model("llama", attn_implementation=SDPA, **kw), build_model("llama", **kw)
    toks = torch.arange(200) % 32
    cfg = train.TrainConfig(steps=1, warmup_steps=0, batch_size=2, seq_len=8)
    _, plain = train.train_key(model, cfg, toks, toks)
    _, bf16 = train.train_key(model, cfg.replace(autocast="bfloat16"), toks, toks)
    _, eager_bf16 = train.train_key(eager, cfg.replace(autocast="bfloat16"), toks, toks)
    assert "attention" not in plain and bf16["attention"] == "sdpa-float32"
    assert "attention" not in eager_bf16  # eager attention is untouched by the rule: its key neither
