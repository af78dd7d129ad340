"""The ablation decoder: init (001 App B.1), causality, MLP0 / Attn0 (Defs. 1, 3), agg_scale
(§6.2.1), hook points, outputs and config validation.

Init-statistics tolerance: 5 standard errors of the sample std (relative SE ≈ 1/√(2n)) and of
the sample mean (σ/√n); see tests/test_models_hf.py.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repro.core.models.hf import init_gpt_style_, param_groups
from repro.core.models.tiny import (
    ACTIVATIONS,
    AGG_SCALES,
    ATTENTIONS,
    BLOCKS,
    NORMS,
    POSITIONS,
    TinyConfig,
    TinyConfigError,
    TinyDecoder,
)
from repro.ground.runtime import ReproError, generator


def _model(seed: int = 0, **overrides) -> TinyDecoder:
    cfg = TinyConfig.merged(**{"vocab_size": 97, "d_model": 32, "n_layer": 2, "n_head": 4, "max_len": 64, **overrides})
    return TinyDecoder(cfg, generator(seed))


def _gauss(*shape, seed=0, std=1.0):
    return torch.randn(*shape, generator=generator(seed)) * std


def _assert_normal(values: torch.Tensor, std: float, what: str) -> None:
    x = values.detach().double().flatten()
    n = x.numel()
    assert x.std().item() == pytest.approx(std, rel=5 / math.sqrt(2 * n)), f"{what}: std"
    assert abs(x.mean().item()) <= 5 * std / math.sqrt(n), f"{what}: mean"


# --------------------------------------------------------------------------- init (App B.1)


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
@pytest.mark.parametrize("tie", [True, False])
def test_init_std_per_group(activation, tie):
    L = 3
    model = _model(seed=1, d_model=64, n_layer=L, activation=activation, tie_embeddings=tie, positions="learned")
    params = dict(model.named_parameters())
    groups = param_groups(model)
    expected = {"embedding": 0.02, "lm_head": 0.02, "linear": 0.02, "residual_proj": 0.02 / math.sqrt(2 * L)}
    for group, std in expected.items():
        for name in groups[group]:
            _assert_normal(params[name], std, name)
    assert (groups["lm_head"] == []) == tie
    assert len(groups["residual_proj"]) == 2 * L
    assert all(n.endswith(("attn.o_proj.weight", "mlp.down_proj.weight")) for n in groups["residual_proj"])
    assert {"wte.weight", "wpe.weight"} <= set(groups["embedding"])
    assert all(torch.count_nonzero(params[n]) == 0 for n in groups["bias"])
    for name in groups["norm"]:
        assert torch.all(params[name] == (0.0 if name.endswith("bias") else 1.0)), name


def test_init_std_is_configurable():
    model = _model(d_model=64, n_layer=2, init_std=0.1, block="mlp")
    w = model.blocks[0].mlp.down_proj.weight
    _assert_normal(w, 0.1 / 2, "down_proj with init_std=0.1, L=2")


def test_seeding_and_no_global_rng():
    state = torch.get_rng_state()
    a, b, c = _model(seed=4), _model(seed=4), _model(seed=5)
    assert torch.equal(state, torch.get_rng_state())  # construction never touches torch's global RNG
    for (n, pa), (_, pb), (_, pc) in zip(a.named_parameters(), b.named_parameters(), c.named_parameters()):
        assert torch.equal(pa, pb), n
        if n in param_groups(a)["linear"] + param_groups(a)["residual_proj"]:
            assert not torch.equal(pa, pc), n
    assert torch.equal(TinyDecoder(a.config).wte.weight, TinyDecoder(a.config).wte.weight)  # default seed 0


def test_perturb_norms_applies_to_tiny():
    model = _model()
    init_gpt_style_(model, 2, generator(0), perturb_norms=0.2)
    w = torch.cat(
        [p.flatten() for n, p in model.named_parameters() if n in param_groups(model)["norm"] and n.endswith("weight")]
    )
    _assert_normal(w - 1, 0.2, "perturbed norm weights")


def test_tying():
    tied, untied = _model(tie_embeddings=True), _model(tie_embeddings=False)
    assert tied.lm_head.weight is tied.wte.weight
    assert untied.lm_head.weight is not untied.wte.weight
    assert not torch.equal(untied.lm_head.weight, untied.wte.weight)


# --------------------------------------------------------------------------- causality


configs = st.fixed_dictionaries(
    {
        "block": st.sampled_from(BLOCKS),
        "norm": st.sampled_from(NORMS),
        "activation": st.sampled_from(ACTIVATIONS),
        "attention": st.sampled_from(ATTENTIONS),
        "positions": st.sampled_from(POSITIONS),
        "agg_scale": st.sampled_from(AGG_SCALES),
        "residual": st.booleans(),
        "value_identity": st.booleans(),
        "bias": st.booleans(),
        "final_norm": st.booleans(),
        "tie_embeddings": st.booleans(),
        "n_layer": st.integers(1, 3),
        "n_head": st.sampled_from([1, 2, 4]),
        "residual_alpha": st.sampled_from([1.0, 0.5]),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs, T=st.integers(2, 24), data=st.data(), attentions=st.booleans())
def test_every_variant_is_causal(cfg, T, data, attentions):
    model = _model(seed=2, d_model=16, **cfg)
    t = data.draw(st.integers(0, T - 2), label="t")
    g = generator(T)
    x = torch.randint(0, 97, (2, T), generator=g)
    y = x.clone()
    y[:, t + 1 :] = (x[:, t + 1 :] + 1 + torch.randint(0, 96, (2, T - t - 1), generator=g)) % 97
    with torch.no_grad():
        a = model(x, output_hidden_states=True, output_attentions=attentions)
        b = model(y, output_hidden_states=True, output_attentions=attentions)
    for ha, hb in zip(a.hidden_states, b.hidden_states, strict=True):
        torch.testing.assert_close(ha[:, : t + 1], hb[:, : t + 1], rtol=0, atol=1e-6)
    torch.testing.assert_close(a.logits[:, : t + 1], b.logits[:, : t + 1], rtol=0, atol=1e-6)
    assert not torch.equal(a.hidden_states[0][:, t + 1 :], b.hidden_states[0][:, t + 1 :])
    if attentions:
        for A in a.attentions:
            assert torch.all(A.triu(1) == 0)


@settings(max_examples=15, deadline=None)
@given(T=st.integers(2, 20), n_head=st.sampled_from([1, 2, 4]), positions=st.sampled_from(POSITIONS))
def test_sdpa_and_eager_attention_agree(T, n_head, positions):
    model = _model(seed=3, n_head=n_head, positions=positions)
    x = torch.randint(0, 97, (2, T), generator=generator(T))
    with torch.no_grad():
        fast = model(x).logits
        eager = model(x, output_attentions=True)
    torch.testing.assert_close(fast, eager.logits, rtol=1e-5, atol=1e-6)
    A = eager.attentions[0]
    assert A.shape == (2, n_head, T, T)
    torch.testing.assert_close(A.sum(-1), torch.ones(2, n_head, T))


# --------------------------------------------------------------------------- Attn0 and MLP0


def _running_mean(x: torch.Tensor) -> torch.Tensor:
    """o_i = (1/i) Σ_{j≤i} x_j, written as a loop (the reference for 001 Def. 3)."""
    return torch.stack([x[:, : i + 1].mean(dim=1) for i in range(x.shape[1])], dim=1)


def test_attn0_stack_is_a_running_mean():
    T, d = 17, 12
    model = TinyDecoder(TinyConfig.attn0_stack(d_model=d, n_head=3, n_layer=3, max_len=T))
    assert not any(True for _ in model.parameters())  # W_V = W_O = I, no norms
    x = _gauss(4, T, d)
    with torch.no_grad():
        out = model(inputs_embeds=x, output_hidden_states=True, output_attentions=True)
    ref = x
    for layer in range(3):
        ref = _running_mean(ref)
        torch.testing.assert_close(out.hidden_states[layer + 1], ref, rtol=1e-5, atol=1e-6)
    i = torch.arange(1, T + 1, dtype=torch.float32)
    expected_A = torch.tril(torch.ones(T, T)) / i[:, None]
    torch.testing.assert_close(out.attentions[0], expected_A.expand(4, 3, T, T))
    assert out.logits is None
    torch.testing.assert_close(out.last_hidden_state, out.hidden_states[-1])  # no final norm


def test_uniform_attention_with_projections_averages_the_values():
    model = _model(
        block="attn",
        attention="uniform",
        norm="none",
        residual=False,
        n_layer=1,
        bias=False,
        positions="none",
        vocab_size=0,
        final_norm=False,
    )
    attn = model.blocks[0].attn
    x = _gauss(2, 9, 32)
    with torch.no_grad():
        y = model(inputs_embeds=x).last_hidden_state
        ref = attn.o_proj(_running_mean(attn.v_proj(x)))
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_mlp0_stack_matches_the_formula(activation):
    phi = torch.relu if activation == "relu" else torch.tanh
    model = TinyDecoder(TinyConfig.mlp0_stack(d_model=16, d_ff=40, n_layer=3, activation=activation), generator(1))
    x = _gauss(3, 5, 16)
    with torch.no_grad():
        out = model(inputs_embeds=x, output_hidden_states=True)
        y = x
        for layer, block in enumerate(model.blocks):
            W_up, W_down = block.mlp.up_proj.weight.T, block.mlp.down_proj.weight.T  # (d, F), (F, d)
            y = phi(y @ W_up) @ W_down  # Y = φ(X W_up) W_down
            torch.testing.assert_close(out.hidden_states[layer + 1], y, rtol=1e-5, atol=1e-7)


def test_swiglu_matches_the_formula():
    model = _model(
        block="mlp",
        activation="swiglu",
        norm="none",
        residual=False,
        n_layer=1,
        bias=False,
        vocab_size=0,
        final_norm=False,
        positions="none",
    )
    mlp = model.blocks[0].mlp
    x = _gauss(2, 4, 32)
    with torch.no_grad():
        ref = (
            torch.nn.functional.silu(x @ mlp.gate_proj.weight.T) * (x @ mlp.up_proj.weight.T)
        ) @ mlp.down_proj.weight.T
        torch.testing.assert_close(model(inputs_embeds=x).last_hidden_state, ref, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("alpha", [1.0, 0.25])
def test_pre_norm_residual_block(norm, alpha):
    model = _model(
        block="mlp", norm=norm, residual_alpha=alpha, n_layer=1, vocab_size=0, final_norm=False, positions="none"
    )
    init_gpt_style_(model, 1, generator(0), perturb_norms=0.3)  # norms must really be applied
    block = model.blocks[0]
    x = _gauss(2, 5, 32)
    with torch.no_grad():
        ref = alpha * x + block.mlp(block.ln_2(x))
        torch.testing.assert_close(model(inputs_embeds=x).last_hidden_state, ref)
    no_res = _model(block="mlp", norm=norm, residual=False, n_layer=1, vocab_size=0, final_norm=False)
    with torch.no_grad():
        torch.testing.assert_close(
            no_res(inputs_embeds=x).last_hidden_state, no_res.blocks[0].mlp(no_res.blocks[0].ln_2(x))
        )


# --------------------------------------------------------------------------- agg_scale and hooks


def _capture(model, T, seed=0, **cfg_free):
    seen = {}
    attn = model.blocks[0].attn
    hooks = [
        attn.agg_unscaled.register_forward_hook(lambda m, a, o: seen.__setitem__("raw", o)),
        attn.agg.register_forward_hook(lambda m, a, o: seen.__setitem__("scaled", o)),
    ]
    try:
        with torch.no_grad():
            out = model(inputs_embeds=_gauss(3, T, 32, seed=seed))
    finally:
        for h in hooks:
            h.remove()
    return seen, out


@pytest.mark.parametrize("mode", ["amplify", "attenuate"])
def test_agg_scale_multiplies_position_i(mode):
    T, max_len = 11, 64
    kw = dict(block="attn", n_layer=1, vocab_size=0, positions="rope", max_len=max_len)
    scaled_model = _model(seed=6, agg_scale=mode, **kw)
    plain_model = _model(seed=6, agg_scale="none", **kw)
    seen, _ = _capture(scaled_model, T)
    plain, _ = _capture(plain_model, T)
    i = torch.arange(1, T + 1, dtype=torch.float32)
    factor = i.sqrt() if mode == "amplify" else (i / max_len).sqrt()
    assert seen["raw"].shape == (3, T, 4, 8)  # (B, T, H, D)
    torch.testing.assert_close(seen["raw"], plain["raw"])  # same weights, same o = A·V
    torch.testing.assert_close(seen["scaled"], seen["raw"] * factor.view(1, T, 1, 1))
    torch.testing.assert_close(plain["scaled"], plain["raw"])  # "none" leaves o alone


def test_amplified_attn0_restores_the_first_token_std():
    """001 Eq. 2: Var(o_i) = σ²/i under uniform aggregation; amplification by √i undoes it."""
    T = 16
    model = TinyDecoder(TinyConfig.attn0_stack(d_model=32, n_head=1, n_layer=1, max_len=T, agg_scale="amplify"))
    seen = {}
    model.blocks[0].attn.agg.register_forward_hook(lambda m, a, o: seen.__setitem__("o", o))
    with torch.no_grad():
        model(inputs_embeds=_gauss(2000, T, 32, seed=1))
    std = seen["o"].transpose(0, 1).reshape(T, -1).std(dim=1)
    n = 2000 * 32
    torch.testing.assert_close(std, torch.ones(T), rtol=5 / math.sqrt(2 * n), atol=0)


def test_agg_hook_can_replace_the_output():
    model = _model(block="attn", n_layer=1, vocab_size=0, residual=False, final_norm=False, bias=False)
    model.blocks[0].attn.agg.register_forward_hook(lambda m, a, o: torch.zeros_like(o))
    with torch.no_grad():
        y = model(inputs_embeds=_gauss(2, 6, 32)).last_hidden_state
    assert torch.count_nonzero(y) == 0


# --------------------------------------------------------------------------- outputs


def test_hidden_states_last_is_before_the_final_norm():
    model = _model(n_layer=3)
    x = torch.randint(0, 97, (2, 10))
    with torch.no_grad():
        out = model(x, output_hidden_states=True)
    assert len(out.hidden_states) == 4
    torch.testing.assert_close(out.hidden_states[0], model.wte(x))
    torch.testing.assert_close(out.last_hidden_state, model.ln_f(out.hidden_states[-1]))
    assert not torch.allclose(out.last_hidden_state, out.hidden_states[-1])
    torch.testing.assert_close(out.logits, model.lm_head(out.last_hidden_state))
    assert out.attentions is None


def test_loss_and_logits_to_keep():
    model = _model()
    x = torch.randint(0, 97, (2, 10))
    with torch.no_grad():
        out = model(x, labels=x)
        last = model(x, logits_to_keep=1).logits
    ref = torch.nn.functional.cross_entropy(out.logits[:, :-1].reshape(-1, 97), x[:, 1:].reshape(-1))
    torch.testing.assert_close(out.loss, ref)
    assert out.loss.item() == pytest.approx(math.log(97), rel=0.05)  # near-uniform at init
    torch.testing.assert_close(last[:, 0], out.logits[:, -1])


def test_learned_positions_are_added_to_inputs_embeds():
    model = _model(positions="learned")
    x = _gauss(1, 5, 32)
    with torch.no_grad():
        h0 = model(inputs_embeds=x, output_hidden_states=True).hidden_states[0]
    torch.testing.assert_close(h0, x + model.wpe.weight[:5])


def test_rope_scores_depend_on_relative_position_only():
    model = _model(n_head=1, block="attn", n_layer=1)
    q, k = _gauss(32, seed=1), _gauss(32, seed=2)
    cos, sin = model.rope_cos, model.rope_sin

    def rot(v, p):
        return v * cos[p] + torch.cat((-v[16:], v[:16])) * sin[p]

    s1 = rot(q, 7) @ rot(k, 3)
    s2 = rot(q, 20) @ rot(k, 16)
    torch.testing.assert_close(s1, s2, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(s1, rot(q, 7) @ rot(k, 5))


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "field, value, choices",
    [
        ("block", "both", BLOCKS),
        ("norm", "batchnorm", NORMS),
        ("activation", "silu", ACTIVATIONS),
        ("attention", "linear", ATTENTIONS),
        ("positions", "alibi", POSITIONS),
        ("agg_scale", "double", AGG_SCALES),
    ],
)
def test_unknown_choice_names_the_choices(field, value, choices):
    with pytest.raises(ValueError) as info:
        TinyConfig.merged(**{field: value})
    message = str(info.value)
    assert field in message and repr(value) in message
    assert all(repr(c) in message for c in choices)
    assert isinstance(info.value, ReproError)


@pytest.mark.parametrize(
    "overrides, match",
    [
        (dict(d_model=30, n_head=4), "divisible by n_head"),
        (dict(d_model=12, n_head=4), "even head size"),
        (dict(n_layer=0), "n_layer must be >= 1"),
        (dict(vocab_size=-1), "vocab_size"),
        (dict(d_ff=0), "d_ff"),
        (dict(init_std=0.0), "init_std"),
    ],
)
def test_invalid_sizes(overrides, match):
    with pytest.raises(TinyConfigError, match=match):
        TinyConfig.merged(**overrides)


def test_merged_rejects_unknown_fields_and_keeps_the_base():
    with pytest.raises(TinyConfigError, match=r"unknown TinyConfig field\(s\) \['width'\]"):
        TinyConfig.merged(width=3)
    base = TinyConfig.merged(d_model=64)
    assert base.merged(n_layer=2).d_model == 64
    assert TinyConfig.merged(n_layer=2).d_model == TinyConfig().d_model
    assert TinyConfig.merged(block="mlp", d_model=30, n_head=4).block == "mlp"  # heads irrelevant without attention


def test_forward_errors():
    model = _model()
    with pytest.raises(ReproError, match="exactly one"):
        model()
    with pytest.raises(ReproError, match="max_len"):
        model(torch.zeros(1, 65, dtype=torch.long))
    probe = _model(vocab_size=0)
    with pytest.raises(ReproError, match="inputs_embeds"):
        probe(torch.zeros(1, 3, dtype=torch.long))
