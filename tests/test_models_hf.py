"""Random-init HF builders: 001 App B.1 init, seeding, embedding sharing (B.2), architecture.

Tolerance for init statistics: for n i.i.d. N(0, σ²) draws, the sample std has relative
standard error ≈ 1/√(2n) and the sample mean has standard error σ/√n. We allow 5 standard
errors (a false alarm once in ~1.7 million checks for a correct init; the seeds are fixed, so
the test is deterministic anyway). A wrong init (e.g. forgetting the 1/√(2L) scaling, a
factor of 2 at L = 2) is off by hundreds of standard errors.
"""

from __future__ import annotations

import math

import pytest
import torch

from repro.core.models import hf
from repro.core.models.hf import ARCHS, build_config, build_model, init_gpt_style_, param_groups
from repro.ground.runtime import ReproError, generator

SMALL = dict(n_layer=2, n_head=4, d_model=64, vocab_size=500, n_positions=64)


def _build(arch: str, seed: int = 0, **kw):
    return build_model(arch, **{**SMALL, "seed": seed, **kw})


def _assert_normal(values: torch.Tensor, std: float, what: str) -> None:
    x = values.detach().double().flatten()
    n = x.numel()
    rel_se = 1 / math.sqrt(2 * n)
    assert x.std().item() == pytest.approx(std, rel=5 * rel_se), f"{what}: std"
    assert abs(x.mean().item()) <= 5 * std / math.sqrt(n), f"{what}: mean"


@pytest.fixture(scope="module", params=ARCHS)
def arch(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def model(arch):
    return _build(arch, seed=42)


# --------------------------------------------------------------------------- init (App B.1)


def test_init_std_per_group(arch, model):
    params = dict(model.named_parameters())
    groups = param_groups(model)
    L = SMALL["n_layer"]
    expected = {"embedding": 0.02, "lm_head": 0.02, "linear": 0.02, "residual_proj": 0.02 / math.sqrt(2 * L)}
    for group, std in expected.items():
        names = groups[group]
        if not names:
            continue
        for name in names:  # each tensor on its own, and the group pooled
            _assert_normal(params[name], std, name)
        _assert_normal(torch.cat([params[n].flatten() for n in names]), std, group)
    for name in groups["bias"]:
        assert torch.count_nonzero(params[name]) == 0, name
    for name in groups["norm"]:
        want = 0.0 if name.endswith("bias") else 1.0
        assert torch.all(params[name] == want), name


def test_groups_cover_every_parameter_once(model):
    groups = param_groups(model)
    listed = [n for names in groups.values() for n in names]
    assert sorted(listed) == sorted(n for n, _ in model.named_parameters())
    assert len(listed) == len(set(listed))


EXPECTED_RESIDUAL = {
    "gpt2": ("attn.c_proj.weight", "mlp.c_proj.weight"),
    "rope-gpt2": ("attention.dense.weight", "mlp.dense_4h_to_h.weight"),
    "llama": ("self_attn.o_proj.weight", "mlp.down_proj.weight"),
}


def test_residual_projections_are_w_o_and_w_down(arch, model):
    names = param_groups(model)["residual_proj"]
    assert len(names) == 2 * SMALL["n_layer"]
    for layer in range(SMALL["n_layer"]):
        for suffix in EXPECTED_RESIDUAL[arch]:
            assert sum(n.endswith(f".{layer}.{suffix}") for n in names) == 1, (layer, suffix)


def test_residual_scaling_follows_depth(arch):
    deep = build_model(arch, **{**SMALL, "n_layer": 8, "seed": 0})
    params = dict(deep.named_parameters())
    w = torch.cat([params[n].flatten() for n in param_groups(deep)["residual_proj"]])
    _assert_normal(w, 0.02 / math.sqrt(16), "residual_proj at L=8")


def test_tying_matches_the_source(arch, model):
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert tied == (arch != "llama")  # 001 B.2: GPT-2 variants tied, LLaMA-2 untied
    assert (param_groups(model)["lm_head"] == []) == tied


def test_hf_init_is_skipped(arch, monkeypatch):
    """The builder must not pay for HF's init (it is overwritten anyway)."""
    cls = type(_build(arch))
    calls = []
    monkeypatch.setattr(cls, "_init_weights", lambda self, module: calls.append(module))
    _build(arch)
    assert calls == []


def test_buffers_match_a_normally_built_model(arch):
    """Skipping HF's init must not leave buffers (rotary inv_freq) uninitialised."""
    ours = _build(arch)
    config = build_config(arch, **SMALL)
    reference = type(ours)(config)
    ref_buffers = dict(reference.named_buffers())
    assert set(ref_buffers) == {n for n, _ in ours.named_buffers()}
    for name, buf in ours.named_buffers():
        torch.testing.assert_close(buf, ref_buffers[name], rtol=0, atol=0)


# --------------------------------------------------------------------------- seeding


def test_same_seed_is_bit_identical(arch, model):
    again = _build(arch, seed=42)
    for (n1, p1), (n2, p2) in zip(model.state_dict().items(), again.state_dict().items(), strict=True):
        assert n1 == n2 and torch.equal(p1, p2), n1


def test_different_seed_gives_different_weights(arch, model):
    other = _build(arch, seed=43)
    params = dict(other.named_parameters())
    groups = param_groups(model)
    for name in groups["embedding"] + groups["lm_head"] + groups["linear"] + groups["residual_proj"]:
        assert not torch.equal(dict(model.named_parameters())[name], params[name]), name


def test_embedding_seed_shares_embedding_and_head_across_seeds(arch):
    a = _build(arch, seed=1, embedding_seed=7)
    b = _build(arch, seed=2, embedding_seed=7)
    c = _build(arch, seed=1, embedding_seed=8)
    pa, pb, pc = (dict(m.named_parameters()) for m in (a, b, c))
    groups = param_groups(a)
    shared = groups["embedding"] + groups["lm_head"]
    assert shared
    for name in shared:
        assert torch.equal(pa[name], pb[name]), name
        assert not torch.equal(pa[name], pc[name]), name
    assert torch.equal(a.get_output_embeddings().weight, b.get_output_embeddings().weight)
    for name in groups["linear"] + groups["residual_proj"]:
        assert not torch.equal(pa[name], pb[name]), name  # the blocks still follow `seed`
        assert torch.equal(pa[name], pc[name]), name  # and only `seed`
    if arch == "llama":  # untied: the head is its own draw, not a copy of the embedding
        assert not torch.equal(a.lm_head.weight, a.model.embed_tokens.weight)


def test_perturb_norms_perturbs_only_norms(arch):
    base = _build(arch, seed=5)
    pert = _build(arch, seed=5, perturb_norms=0.1)
    pb, pp = dict(base.named_parameters()), dict(pert.named_parameters())
    groups = param_groups(base)
    weights = [n for n in groups["norm"] if n.endswith("weight")]
    biases = [n for n in groups["norm"] if n.endswith("bias")]
    _assert_normal(torch.cat([pp[n].flatten() - 1 for n in weights]), 0.1, "norm weights - 1")
    if biases:
        _assert_normal(torch.cat([pp[n].flatten() for n in biases]), 0.1, "norm biases")
    for name in groups["embedding"] + groups["lm_head"] + groups["linear"] + groups["residual_proj"]:
        assert torch.equal(pb[name], pp[name]), name  # drawn before the norms: unchanged
    x = torch.randint(0, SMALL["vocab_size"], (1, 8))
    with torch.no_grad():
        assert not torch.allclose(base(x).logits, pert(x).logits)


def test_init_rejects_bad_arguments(model):
    with pytest.raises(ReproError, match="n_layer"):
        init_gpt_style_(model, 0, generator(0))
    with pytest.raises(ReproError, match="perturb_norms"):
        init_gpt_style_(model, 2, generator(0), perturb_norms=-1.0)


# --------------------------------------------------------------------------- architecture


def test_eval_mode_eager_attention_and_outputs(arch, model):
    assert not model.training
    assert model.config._attn_implementation == "eager"
    T = 12
    x = torch.randint(0, SMALL["vocab_size"], (2, T))
    with torch.no_grad():
        out = model(x, output_hidden_states=True, output_attentions=True)
    assert out.logits.shape == (2, T, SMALL["vocab_size"])
    assert len(out.hidden_states) == SMALL["n_layer"] + 1
    assert len(out.attentions) == SMALL["n_layer"]
    A = out.attentions[0]
    assert A.shape == (2, SMALL["n_head"], T, T)
    torch.testing.assert_close(A.sum(-1), torch.ones(2, SMALL["n_head"], T))
    assert torch.all(A.triu(1) == 0)  # causal


def test_causal(arch, model):
    g = generator(3)
    x = torch.randint(0, SMALL["vocab_size"], (2, 16), generator=g)
    y = x.clone()
    t = 9
    y[:, t + 1 :] = torch.randint(0, SMALL["vocab_size"], (2, 16 - t - 1), generator=g)
    with torch.no_grad():
        a, b = model(x).logits, model(y).logits
    torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1], rtol=0, atol=1e-6)
    assert not torch.allclose(a[:, t + 1 :], b[:, t + 1 :])


def test_logits_to_keep_one_is_the_last_position(model):
    x = torch.randint(0, SMALL["vocab_size"], (2, 10))
    with torch.no_grad():
        full, last = model(x).logits, model(x, logits_to_keep=1).logits
    assert last.shape == (2, 1, SMALL["vocab_size"])
    torch.testing.assert_close(last[:, 0], full[:, -1], rtol=1e-5, atol=1e-6)


def test_rope_gpt2_is_a_sequential_gpt2_block_with_full_rotary():
    model = _build("rope-gpt2")
    cfg = model.config
    assert cfg.use_parallel_residual is False
    assert cfg.rope_parameters["partial_rotary_factor"] == 1.0
    layer = model.gpt_neox.layers[0]
    assert layer.attention.rotary_ndims == SMALL["d_model"] // SMALL["n_head"]
    assert not any("wpe" in n or "position" in n for n, _ in model.named_parameters())
    # x → h = x + Attn(LN1 x) → h + MLP(LN2 h), checked with hooks on one layer
    seen = {}
    hooks = [
        layer.register_forward_hook(
            lambda m, a, k, o: seen.update(x=k.get("hidden_states", a[0] if a else None), y=o), with_kwargs=True
        ),
        layer.attention.register_forward_hook(lambda m, a, o: seen.update(attn=o[0])),
        layer.mlp.register_forward_hook(lambda m, a, o: seen.update(mlp_in=a[0], mlp=o)),
    ]
    try:
        with torch.no_grad():
            model(torch.randint(0, SMALL["vocab_size"], (1, 8)))
    finally:
        for h in hooks:
            h.remove()
    h = seen["x"] + seen["attn"]
    torch.testing.assert_close(seen["mlp_in"], layer.post_attention_layernorm(h))
    torch.testing.assert_close(seen["y"], h + seen["mlp"])


def test_gpt2_has_learned_positions_llama_rmsnorm_swiglu():
    gpt2 = _build("gpt2")
    assert gpt2.transformer.wpe.weight.shape == (SMALL["n_positions"], SMALL["d_model"])
    assert "transformer.wpe.weight" in param_groups(gpt2)["embedding"]
    llama = _build("llama")
    assert "RMSNorm" in type(llama.model.norm).__name__
    assert llama.config.hidden_act == "silu" and hasattr(llama.model.layers[0].mlp, "gate_proj")
    assert param_groups(llama)["bias"] == []


def test_default_d_ff():
    assert hf.default_d_ff("gpt2", 768) == 3072
    assert hf.default_d_ff("llama", 768) == 2048  # 001 Table 13
    assert _build("llama", d_ff=96).config.intermediate_size == 96


def test_dtype_is_a_cast_of_the_float32_draw():
    f32 = _build("llama", seed=9)
    bf16 = _build("llama", seed=9, dtype=torch.bfloat16)
    for (n, p32), (_, p16) in zip(f32.named_parameters(), bf16.named_parameters(), strict=True):
        assert p16.dtype == torch.bfloat16
        assert torch.equal(p32.to(torch.bfloat16), p16), n
    assert bf16.model.rotary_emb.inv_freq.dtype == torch.float32  # positions stay exact
    torch.testing.assert_close(bf16.model.rotary_emb.inv_freq, f32.model.rotary_emb.inv_freq, rtol=0, atol=0)
    tied = _build("gpt2", dtype=torch.bfloat16)
    assert tied.lm_head.weight is tied.transformer.wte.weight
    x = torch.randint(0, SMALL["vocab_size"], (1, 6))
    with torch.no_grad():
        assert tied(x).logits.dtype == torch.bfloat16  # and it runs


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(arch="gpt3"), "unknown architecture 'gpt3'; choose one of gpt2, rope-gpt2, llama"),
        (dict(d_model=30), "not divisible by n_head"),
        (dict(arch="llama", d_model=20, n_head=4), "even head size"),
        (dict(vocab_size=0), "vocab_size must be a positive integer"),
        (dict(d_ff=0), "d_ff must be a positive integer"),
    ],
)
def test_config_errors(kwargs, match):
    args = {"arch": "gpt2", **SMALL, **kwargs}
    with pytest.raises(ReproError, match=match):
        build_config(args.pop("arch"), **args)


def test_param_groups_rejects_unknown_modules():
    class Odd(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 1, 1)

    with pytest.raises(ReproError, match="cannot place parameter 'conv.weight'"):
        param_groups(Odd())


@pytest.mark.parametrize("arch", ["gpt2", "rope-gpt2"])
def test_gpt2_activation_is_gelu_new_in_one_kernel(arch):
    """GPT-2's activation (`gelu_new`: the tanh approximation written as seven elementwise ops)
    is computed by the fused `gelu_pytorch_tanh`: the same function to float rounding over the
    range a random-init block sees; exact GELU (erf), a different function, is told apart."""
    from transformers.activations import ACT2FN

    m = build_model(arch, n_layer=1, n_head=2, d_model=16, vocab_size=32, seed=0)
    mlp = m.transformer.h[0].mlp if arch == "gpt2" else m.gpt_neox.layers[0].mlp
    x = torch.linspace(-8, 8, 10_001)
    assert torch.allclose(mlp.act(x), ACT2FN["gelu_new"](x), atol=1e-6)
    assert not torch.allclose(ACT2FN["gelu"](x), ACT2FN["gelu_new"](x), atol=1e-4)


def test_in_dtype_runs_in_float64_and_restores_the_weights_bit_for_bit():
    m = build_model("llama", n_layer=1, n_head=2, d_model=16, vocab_size=20, seed=0)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with hf.in_dtype(m, torch.float64):
        assert all(v.dtype == torch.float64 for v in m.state_dict().values() if v.is_floating_point())
    assert all(torch.equal(v, before[k]) and v.dtype == before[k].dtype for k, v in m.state_dict().items())
    with pytest.raises(RuntimeError, match="boom"), hf.in_dtype(m, torch.float64):
        raise RuntimeError("boom")
    assert next(m.parameters()).dtype == torch.float32


@pytest.mark.parametrize("arch", ARCHS)
def test_build_layers_are_the_full_models_first_layers(arch):
    """SK-1 builds only the layers it reads (`build_layers`): the embeddings and those layers
    hold exactly the full model's weights (draws go in parameter order), the residual scaling
    still follows n_layer, and the later layers are absent."""
    kw = dict(SMALL, n_layer=4)
    full, part = build_model(arch, seed=3, **kw), build_model(arch, seed=3, build_layers=2, **kw)
    full_p = dict(full.named_parameters())
    # everything but an untied LM head, which is drawn after the layers
    shared = [n for n, _ in part.named_parameters() if "lm_head" not in n]
    assert len(shared) > 4 and all(torch.equal(full_p[n], p) for n, p in part.named_parameters() if n in shared)
    assert not any(".2." in n or ".3." in n for n, _ in part.named_parameters())
    # the control: another seed's first layers differ
    other = dict(build_model(arch, seed=4, build_layers=2, **kw).named_parameters())
    assert not all(torch.equal(other[n], p) for n, p in part.named_parameters() if n in shared)
    with pytest.raises(ReproError, match="build_layers"):
        build_model(arch, seed=3, build_layers=5, **kw)
