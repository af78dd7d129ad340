"""repro.residual_stream.decomposition: the 1 + L·H + L decomposition, direct logit attribution with a frozen
final norm, the FFN key–value rewrite, gradient flow, residual norms — on hand-built and
random small models of every supported family (hypothesis over layers, heads, widths, gains)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from repro.core.activations import capture
from repro.core.arch import frozen_norm
from repro.core.lens import arch_map, resolve
from repro.core.models.hf import build_model
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.ground.runtime import ReproError, generator
from repro.residual_stream import decomposition as rs

pytestmark = pytest.mark.usefixtures("one_thread")

V = 61
U = 2.0**-24


def tokens(n: int = 2, T: int = 9, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, V, (n, T), generator=generator(seed))


def gemma3(layers: int = 2, heads: int = 2, perturb: float = 0.3):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=1,
        head_dim=16,
        hidden_size=32,
        intermediate_size=64,
        vocab_size=V,
        max_position_embeddings=64,
        attn_implementation="eager",
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    torch.manual_seed(0)  # HF's own init draws from the global RNG; only this test model uses it
    model = Gemma3ForCausalLM(cfg).eval()
    with torch.no_grad():  # Gemma's norm weights start at 0 (gain 1 + w): make the gains differ from 1
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(perturb * torch.randn(p.shape, generator=generator(len(name))))
    return model


def hf(arch: str, layers: int = 2, heads: int = 2, width: int = 32, perturb: float = 0.3, seed: int = 1):
    return build_model(
        arch,
        n_layer=layers,
        n_head=heads,
        d_model=width,
        vocab_size=V,
        seed=seed,
        n_positions=64,
        perturb_norms=perturb,
    )


def tiny(**kw):
    base = dict(vocab_size=V, d_model=32, n_layer=2, n_head=2, max_len=64)
    return TinyDecoder(TinyConfig(**{**base, **kw}), generator(3))


MODELS = {
    "gpt2": lambda: hf("gpt2"),
    "llama": lambda: hf("llama"),
    "gemma3": gemma3,
    "tiny-layernorm": lambda: tiny(),
    "tiny-rmsnorm-swiglu": lambda: tiny(norm="rmsnorm", activation="swiglu", bias=False),
}


@pytest.fixture(params=sorted(MODELS), scope="module")
def model(request):
    return MODELS[request.param]()


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max() / b.double().abs().max())


# --------------------------------------------------------------------------- counting


def test_count_formula_source_examples():
    from transformers import GPT2Config, LlamaConfig

    assert rs.count_terms(LlamaConfig(num_hidden_layers=32, num_attention_heads=32)) == 1057
    assert rs.count_terms(GPT2Config(n_layer=24, n_head=16)) == 409
    assert rs.count_terms(TinyConfig(n_layer=3, n_head=4)) == 1 + 12 + 3


def test_example_configs_are_the_source_examples():
    assert rs.count_terms(rs.example_config(32, 32)) == 1057
    assert rs.count_terms(rs.example_config(24, 16)) == 409


def test_count_needs_layers_and_heads():
    with pytest.raises(ReproError, match="layer or head count"):
        rs.count_terms(object())


def test_bias_terms_gpt2_has_one_per_layer():
    assert rs.bias_terms(hf("gpt2", layers=3)) == 3
    assert rs.bias_terms(hf("llama", layers=3)) == 0


# --------------------------------------------------------------------------- frozen norms


def _norm_modules():
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    g = generator(5)
    ln = nn.LayerNorm(16)
    rms = nn.RMSNorm(16, eps=1e-6)
    llama = LlamaRMSNorm(16)
    gemma = Gemma3RMSNorm(16)
    with torch.no_grad():
        for m in (ln, rms, llama, gemma):
            m.weight.copy_(torch.randn(16, generator=g))
        ln.bias.copy_(torch.randn(16, generator=g))
    return {"layernorm": ln, "rmsnorm": rms, "llama": llama, "gemma": gemma, "identity": nn.Identity()}


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm", "llama", "gemma", "identity"])
def test_frozen_norm_matches_module(kind):
    module = _norm_modules()[kind]
    x = 3 * torch.randn(4, 7, 16, generator=generator(6)) + 1
    with torch.no_grad():
        assert torch.allclose(frozen_norm(module)(x), module(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm", "gemma"])
def test_frozen_norm_is_linear_once_scale_is_frozen(kind):
    norm = frozen_norm(_norm_modules()[kind])
    a, b = torch.randn(2, 5, 16, generator=generator(7)).unbind(0)
    s = norm.scale(a + b)
    assert torch.allclose(norm.linear(a, s) + norm.linear(b, s), norm.linear(a + b, s), atol=1e-5)


def test_frozen_norm_unknown_module_is_a_clear_error():
    with pytest.raises(ReproError, match="cannot freeze a BatchNorm1d"):
        frozen_norm(nn.BatchNorm1d(4))


# --------------------------------------------------------------------------- decomposition


def test_terms_sum_to_final_residual(model):
    ids = tokens()
    dec = rs.decompose(model, ids)
    L, H = dec.n_layers, dec.n_heads
    assert len(dec.names()) == 1 + L * H + L + (L if dec.attn_bias is not None else 0)
    assert dec.stack().shape[1] == len(dec.names())
    assert rel_err(dec.total(), dec.residual) < 1e-5


def test_residual_is_the_pre_norm_state(model):
    """x^(L) is the last block's output before the final norm; with TinyDecoder this is its
    last hidden state, so the decomposition is checked against an independent reading."""
    ids = tokens()
    dec = rs.decompose(model, ids)
    if isinstance(model, TinyDecoder):
        ref = model(ids, output_hidden_states=True).hidden_states[-1]
        assert torch.allclose(dec.residual, ref)
    else:  # HF: the last hidden state is after the final norm, so norm(x^(L)) must equal it
        from repro.core.lens import final_norm

        ref = model(input_ids=ids, output_hidden_states=True).hidden_states[-1]
        with torch.no_grad():
            assert torch.allclose(final_norm(model)(dec.residual), ref, atol=1e-5)


def test_decompose_leaves_no_hooks_and_same_weights(model):
    before = {k: v.clone() for k, v in model.state_dict().items()}
    hooks_before = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    rs.decompose(model, tokens())
    assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()) == hooks_before
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_heads_split_attention_output_exactly():
    """Hand check on GPT-2: per-head terms + b_O equal the attention sub-layer's output."""
    model = hf("gpt2", layers=2, heads=4, width=32)
    ids = tokens()
    dec = rs.decompose(model, ids)
    cap = capture(model, ids, modules=["attn_out"])
    for l in range(2):
        assert torch.allclose(dec.heads[:, l].sum(1) + dec.attn_bias[:, l], cap.modules["attn_out"][l], atol=1e-6)


def test_zeroing_one_heads_value_removes_only_its_term():
    """A head whose W_O slice is zero contributes a zero term; the others are unchanged."""
    model = hf("llama", layers=2, heads=4, width=32)
    ids = tokens()
    with torch.no_grad():
        model.model.layers[1].self_attn.o_proj.weight[:, 8:16] = 0  # head 1 of layer 1 (D = 8)
    dec = rs.decompose(model, ids)
    assert torch.count_nonzero(dec.heads[:, 1, 1]) == 0
    assert torch.count_nonzero(dec.heads[:, 1, 0]) > 0


def test_gemma_sandwich_norm_heads_sum_exactly():
    model = gemma3()
    dec = rs.decompose(model, tokens())
    cap = capture(model, tokens(), modules=["attn_out"])
    for l in range(dec.n_layers):
        assert torch.allclose(dec.heads[:, l].sum(1), cap.modules["attn_out"][l], atol=1e-5)


def test_decompose_needs_out_projection_and_ffn():
    with pytest.raises(ReproError, match="1 \\+ L·H \\+ L"):
        rs.decompose(tiny(block="attn"), tokens())
    with pytest.raises(ReproError, match="1 \\+ L·H \\+ L"):
        rs.decompose(tiny(block="mlp"), tokens())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arch=st.sampled_from(["gpt2", "llama", "tiny"]),
    layers=st.integers(1, 3),
    heads=st.sampled_from([1, 2, 4]),
    head_dim=st.sampled_from([4, 8]),
    perturb=st.floats(0.0, 1.0),
    seed=st.integers(0, 10_000),
)
def test_decomposition_and_dla_on_random_configs(arch, layers, heads, head_dim, perturb, seed):
    width = heads * head_dim
    if arch == "tiny":
        model = TinyDecoder(
            TinyConfig(vocab_size=V, d_model=width, n_layer=layers, n_head=heads, max_len=32), generator(seed)
        )
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "ln" in name:
                    p.add_(perturb * torch.randn(p.shape, generator=generator(seed + 1)))
    else:
        model = hf(arch, layers=layers, heads=heads, width=width, perturb=perturb, seed=seed)
    ids = tokens(seed=seed)
    dec = rs.decompose(model, ids[:, :-1])
    assert dec.heads.shape[1:3] == (layers, heads)
    n = len(dec.names())
    # float32 sums of n terms: the worst-case relative error is ≈ n·u; allow 4× that
    assert rel_err(dec.total(), dec.residual) <= 4 * n * U
    att = rs.direct_logit_attribution(model, dec, ids[:, 1:])
    logits = dec.output.logits.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    assert rel_err(att.total(), logits) <= 4 * (n + 1) * U


# --------------------------------------------------------------------------- DLA


def test_dla_sums_to_logit(model):
    ids = tokens(T=10)
    dec = rs.decompose(model, ids[:, :-1])
    att = rs.direct_logit_attribution(model, dec, ids[:, 1:])
    logits = dec.output.logits.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    assert att.per_term.shape == (ids.shape[0], len(dec.names()), ids.shape[1] - 1)
    assert rel_err(att.total(), logits) < 1e-5


def test_sum_and_dla_checks_pass_and_their_controls_fail():
    """RS-1 / RS-2's readings (rs.sum_check, rs.dla_check): the terms and the attributions sum
    within the rounding bound, and leaving out the smallest head's term misses by more."""
    model = hf("gpt2")
    ids = tokens(T=10)
    dec = rs.decompose(model, ids[:, :-1])
    c = rs.sum_check(model, dec)
    assert c.n_terms == c.expected == rs.count_terms(model.config) + c.bias and c.bias == 2
    assert c.err <= c.tol < c.control
    d = rs.dla_check(model, ids, dec)
    assert d.err <= d.tol < d.control and d.tol == 2 * (c.n_terms + 1) * rs.F32_U
    assert d.att.names[d.term].startswith("L")


def test_dla_of_the_embedding_alone_is_its_frozen_logit():
    """Hand check: with every block's output zeroed the residual is the embedding, and its DLA
    term is the whole logit minus the norm's and head's bias."""
    model = hf("gpt2", layers=1)
    with torch.no_grad():
        for name, p in model.transformer.h.named_parameters():
            if name.endswith(("c_proj.weight", "c_proj.bias")):
                p.zero_()
    ids = tokens(T=6)
    dec = rs.decompose(model, ids[:, :-1])
    att = rs.direct_logit_attribution(model, dec, ids[:, 1:])
    assert torch.count_nonzero(att.per_term[:, 1:]) == 0
    logits = dec.output.logits.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(att.per_term[:, 0] + att.constant, logits, atol=1e-5)


# --------------------------------------------------------------------------- FFN rewrite


@pytest.mark.parametrize("name", ["gpt2", "llama", "gemma3", "tiny-gelu", "tiny-relu", "tiny-swiglu"])
def test_ffn_key_value_rewrite_is_exact(name):
    model = {
        "gpt2": lambda: hf("gpt2"),
        "llama": lambda: hf("llama"),
        "gemma3": gemma3,
        "tiny-gelu": lambda: tiny(),
        "tiny-relu": lambda: tiny(activation="relu"),
        "tiny-swiglu": lambda: tiny(activation="swiglu"),
    }[name]()
    amap = arch_map(model)
    mlp = resolve(amap.blocks(model)[0], amap.mlp)
    x = torch.randn(3, 5, 32, generator=generator(9))
    kv = rs.ffn_key_value(mlp, x)
    with torch.no_grad():
        y = mlp(x)
    assert kv.values.shape == (kv.coeffs.shape[-1], 32)
    bound = kv.coeffs.shape[-1] * U * (kv.coeffs.double().abs() @ kv.values.double().abs()) + 1e-12
    if kv.bias is not None:
        bound = bound + U * kv.bias.double().abs()
    assert bool(((kv.output() - y.double()).abs() <= bound).all())


def test_relu_keys_are_literal_max():
    model = tiny(activation="relu", bias=False)
    mlp = model.blocks[0].mlp
    x = torch.randn(4, 32, generator=generator(10))
    kv = rs.ffn_key_value(mlp, x)
    assert torch.equal(kv.coeffs, (x @ mlp.up_proj.weight.detach().T).clamp_min(0))
    assert torch.equal(kv.values, mlp.down_proj.weight.detach().T)


def test_ffn_key_value_unknown_module():
    with pytest.raises(ReproError, match="has no activation"):
        rs.ffn_key_value(nn.Linear(4, 4), torch.zeros(1, 4))


# --------------------------------------------------------------------------- gradient flow, norms


def test_post_norm_block_is_norm_after_the_add():
    model = tiny(norm_position="post", final_norm=False)
    x = torch.randn(2, 5, 32, generator=generator(11))
    blk = model.blocks[0]
    with torch.no_grad():
        out, _ = blk(x, (model.rope_cos[:5], model.rope_sin[:5]))
        a, _ = blk.attn(x, (model.rope_cos[:5], model.rope_sin[:5]))
        h = blk.ln_1(x + a)
        ref = blk.ln_2(h + blk.mlp(h))
    assert torch.allclose(out, ref, atol=1e-6)


def test_gradient_flow_pre_norm_identity_path_and_cleanup():
    model = tiny(n_layer=6).train()
    ids = tokens(T=17)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flow = rs.gradient_flow(model, ids)
    assert len(flow.per_layer) == 7 and flow.per_layer[5] == pytest.approx(1.0)
    assert flow.ratio > 0.5 and flow.param_ratio > 0
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_gradient_flow_identity_share_pre_vs_post_and_no_skip():
    """The coefficient of ∂L/∂x^(L) in ∂L/∂x^(1): 1 with the pre-norm skip path, ≈ 0 without skips
    or behind post-norm LayerNorms at the Xavier init (sub-layers as large as the stream)."""
    ids = tokens(n=4, T=33)

    def share(**kw):
        model = tiny(n_layer=8, **kw)
        rs.xavier_init_(model, generator(5))
        return rs.gradient_flow(model.train(), ids, embed_scale=32**0.5).identity_share

    assert share() == pytest.approx(1.0, abs=0.1)
    assert abs(share(residual=False)) < 0.3
    assert abs(share(norm_position="post", final_norm=False)) < 0.3


def test_gradient_flow_embed_scale_reads_scaled_embeddings():
    model = tiny(n_layer=3).train()
    ids = tokens(T=17)
    a = rs.gradient_flow(model, ids)
    b = rs.gradient_flow(model, ids, embed_scale=1.0)
    assert a == b
    c = rs.gradient_flow(model, ids, embed_scale=4.0)
    assert c.per_layer != a.per_layer


def test_gradient_flow_micro_batches_give_the_one_pass_numbers():
    """Micro-batches (one sequence each, forced by a tiny memory budget) accumulate to the same
    ratios and share as one pass over the batch (float32 sums in another order)."""
    model = tiny(n_layer=4).train()
    ids = tokens(n=3, T=17)
    whole = rs.gradient_flow(model, ids)
    parts = rs.gradient_flow(model, ids, max_batch_bytes=1)
    assert parts.ratio == pytest.approx(whole.ratio, rel=1e-5)
    assert parts.param_ratio == pytest.approx(whole.param_ratio, rel=1e-5)
    assert parts.identity_share == pytest.approx(whole.identity_share, rel=1e-4, abs=1e-6)
    assert parts.per_layer == pytest.approx(whole.per_layer, rel=1e-5)
    # and a different batch gives different numbers (the comparison can fail)
    assert rs.gradient_flow(model, tokens(n=3, T=17, seed=99)).ratio != pytest.approx(whole.ratio, rel=1e-5)


def test_xavier_init_scales_and_tied_head():
    model = tiny(n_layer=2, d_ff=96)
    rs.xavier_init_(model, generator(7))
    d = 32
    up = model.blocks[0].mlp.up_proj.weight.detach()
    assert float(up.std()) == pytest.approx((2 / (d + 96)) ** 0.5, rel=0.1)
    assert float(model.blocks[1].attn.o_proj.weight.detach().std()) == pytest.approx((2 / (2 * d)) ** 0.5, rel=0.1)
    assert float(model.wte.weight.detach().std()) == pytest.approx(d**-0.5, rel=0.1)
    assert model.lm_head.weight is model.wte.weight
    assert all(float(b.attn.q_proj.bias.detach().abs().max()) == 0 for b in model.blocks)
    assert torch.equal(model.blocks[0].ln_1.weight, torch.ones(d))
    again = rs.xavier_init_(tiny(n_layer=2, d_ff=96), generator(7))
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters()))


@pytest.mark.parametrize("position", ["pre", "post"])
def test_xavier_init_overwrites_every_parameter(position):
    """RS-3 builds its stacks uninitialised (`TinyDecoder(init=False)`) before `xavier_init_`:
    the same weights as over App B.1's init, so xavier_init_ must leave no parameter unwritten
    (a missed one would hold whatever torch.empty returned)."""
    from repro.core.models.tiny import TinyConfig, TinyDecoder

    cfg = TinyConfig(
        vocab_size=50, d_model=32, n_layer=3, n_head=4, max_len=16, norm_position=position, final_norm=position == "pre"
    )
    a = rs.xavier_init_(TinyDecoder(cfg, generator(3)), generator(4))
    b = TinyDecoder(cfg, generator(3), init=False)
    with torch.no_grad():
        for p in b.parameters():
            p.fill_(float("nan"))  # what an unwritten parameter would keep
    b = rs.xavier_init_(b, generator(4))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    # the comparison can fail: another draw differs
    c = rs.xavier_init_(TinyDecoder(cfg, generator(3), init=False), generator(5))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))


def test_mean_distribution_kl_is_kl_to_the_average():
    model = tiny(n_layer=2)
    h_train, h_test = torch.randn(10, 32, generator=generator(8)), torch.randn(5, 32, generator=generator(9))
    kl = rs.mean_distribution_kl(model, h_train, h_test, chunk=3)
    with torch.no_grad():
        mean = model.lm_head(model.ln_f(h_train)).softmax(-1).mean(0)
        p = model.lm_head(model.ln_f(h_test)).softmax(-1)
    ref = (p * (p.log() - mean.log())).sum(-1)
    assert kl.shape == (5,) and torch.allclose(kl, ref, atol=1e-5)
    assert (kl >= -1e-6).all()
    # on its own tokens the average is the best constant distribution: mean KL to it ≤ to uniform
    own = rs.mean_distribution_kl(model, h_train, h_train)
    with torch.no_grad():
        q = model.lm_head(model.ln_f(h_train)).log_softmax(-1)
    uni = (q.exp() * (q + torch.log(torch.tensor(float(V))))).sum(-1)
    assert own.mean() <= uni.mean() + 1e-6


def test_gradient_flow_bad_input():
    with pytest.raises(ReproError, match="TinyDecoder"):
        rs.gradient_flow(hf("gpt2"), tokens())
    with pytest.raises(ReproError, match="n_layer must be >= 2"):
        rs.gradient_flow(tiny(n_layer=1), tokens())


def test_residual_norms_skip_first_position():
    r = torch.ones(2, 3, 4, 8)
    r[:, :, 0] = 1000.0  # a massive-activation token at position 0
    r[:, 2] *= 2
    norms = rs.residual_norms(r)
    assert torch.allclose(norms, torch.tensor([8**0.5, 8**0.5, 2 * 8**0.5]))
    assert rs.residual_norms(r, skip_first=0)[0] == pytest.approx(8**0.5)  # the median ignores one outlier


def test_lens_power_grows_with_the_effect_and_the_tokens():
    """RS-8's power is at a declared relative effect, not the measurement: a larger declared
    effect or more held-out tokens gives more power; the record states its sizes for 80%."""
    from repro.core.lens import StoppedLens, TunedLens
    from repro.residual_stream import study

    g = torch.Generator().manual_seed(0)
    L, n = 3, 200
    logit = 5.0 + torch.rand(L, n, generator=g)
    tuned = logit - 0.3 + torch.randn(L, n, generator=g)
    const = 4.0 + torch.rand(n, generator=g)
    fit = StoppedLens(TunedLens(L, 4), [0], torch.zeros(1, L), [0] * L, 0, False, None)
    c = study.LensComparison(logit, tuned, const, [], [], [], [], n, n, n, fit)
    small, large = study.lens_power(c, 0.02), study.lens_power(c, 0.2, name="m")
    assert 0.0 <= small.value < large.value <= 1.0
    assert large.effect_value == 0.2 and "held-out tokens" in large.decide
    assert large.sd == "upper bound" and large.edge == 0 and large.covers[1] == "m: largest per-layer Wilcoxon p"


def test_post_norm_power_is_typed_at_its_upper_bound_sd():
    """RS-3's post-norm power: a `Power` covering the weight-gradient check, its sd the seeds'
    upper bound (fewer seeds, less power at the same spread), None without a spread."""
    from repro.residual_stream import study

    deep = {"depth": 48, "param_ratio": [0.2, 0.3, 0.25, 0.22]}
    p = study.post_norm_power(deep)
    few = study.post_norm_power({"depth": 48, "param_ratio": [0.2, 0.3]})
    assert p.covers == ("‖∇W block 1‖ / ‖∇W block L‖",) and p.sd == "upper bound" and p.edge == 0
    assert few.value < p.value and p.basis_kind == "interest" and p.direction_p is not None
    assert study.post_norm_power({"depth": 48, "param_ratio": [0.2]}) is None


def test_rs3_gradient_flow_says_how_far_it_got(monkeypatch, caplog):
    """Issue 65: RS-3 ran 531 s cold with nothing on the terminal. Its stacks now tick a
    `repro.progress` heartbeat (here every stack): one line per stack, counted to the total."""
    import functools
    import logging

    from repro.ground import progress
    from repro.residual_stream import study

    monkeypatch.setattr(study, "Heartbeat", functools.partial(progress.Heartbeat, every_s=0))
    s = dict(depths=(2,), d_model=16, n_head=2, batch_size=2, seq_len=8, seeds=(0, 1))
    with caplog.at_level(logging.INFO, logger=progress.LOGGER):
        study.gradients(s)
    lines = [r.getMessage() for r in caplog.records if r.name == progress.LOGGER]
    assert [ln.split(", ")[0] for ln in lines] == [f"RS-3 gradient flow: {i}/7 stacks" for i in range(1, 8)]
    assert "(pre-norm, 2 layers, seed 0)" in lines[0] and "(post-norm, 2 layers, seed 0)" in lines[-1]
