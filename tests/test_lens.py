"""repro.core.lens: architecture maps, hooks that leave no trace, and a logit lens whose last layer
is the model's own logits."""

from __future__ import annotations

import pytest
import torch

from repro.core import activations, arch, lens, tied_decoding
from repro.core.models.hf import build_model
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.ground.runtime import ReproError, generator

V, T, B = 97, 11, 2


def tokens(seed: int = 0, batch: int = B, length: int = T) -> torch.Tensor:
    return torch.randint(0, V, (batch, length), generator=generator(seed))


def hf(arch: str, **kw):
    # perturbed norms so that "the lens applies the final norm" cannot pass by an accident of
    # identity weights
    return build_model(
        arch, n_layer=3, n_head=2, d_model=32, vocab_size=V, seed=1, n_positions=64, perturb_norms=0.2, **kw
    )


def gemma3(softcap: float | None = 30.0):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        hidden_size=32,
        intermediate_size=64,
        vocab_size=V,
        max_position_embeddings=64,
        final_logit_softcapping=softcap,
        attn_implementation="eager",
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    torch.manual_seed(0)  # HF's own init draws from the global RNG; only this test model uses it
    return Gemma3ForCausalLM(cfg).eval()


MODELS = {
    "gpt2": lambda: hf("gpt2"),
    "rope-gpt2": lambda: hf("rope-gpt2"),  # GPT-NeoX classes
    "llama": lambda: hf("llama"),
    "gemma3": gemma3,
    "tiny": lambda: TinyDecoder(TinyConfig(vocab_size=V, d_model=32, n_layer=3, n_head=2), generator(2)),
}


@pytest.fixture(params=sorted(MODELS), scope="module")
def model(request):
    return MODELS[request.param]()


def hook_counts(model: torch.nn.Module) -> list[tuple[int, int, int]]:
    return [
        (len(m._forward_hooks), len(m._forward_pre_hooks), len(m._forward_hooks_with_kwargs)) for m in model.modules()
    ]


# --------------------------------------------------------------------------- arch map


def test_arch_map_paths_resolve(model):
    amap = lens.arch_map(model)
    blocks = amap.blocks(model)
    assert len(blocks) == len(list(lens.resolve(model, amap.layers)))
    assert isinstance(lens.resolve(model, amap.embed), torch.nn.Embedding)
    assert arch.unembedding(model).shape == (V, 32)
    for attr in ("attn", "attn_out_proj", "mlp", "attn_norm", "mlp_norm", "attn_resid", "mlp_resid"):
        lens.resolve(blocks[0], getattr(amap, attr))  # raises if a path is wrong


def test_arch_map_families():
    assert lens.arch_map(hf("gpt2")).family == "gpt2"
    neox = lens.arch_map(hf("rope-gpt2"))
    assert neox.family == "gpt_neox" and neox.parallel_residual is False  # 001's RoPE GPT-2 is sequential
    g = lens.arch_map(gemma3())
    assert g.embed_scaled_inside and g.attn_resid == "post_attention_layernorm"


def test_arch_map_unknown_model_is_a_clear_error():
    with pytest.raises(ReproError, match="no layer map"):
        lens.arch_map(torch.nn.Linear(2, 2))


def test_tiny_ablations_map_missing_sublayers():
    mlp_only = TinyDecoder(TinyConfig(vocab_size=V, d_model=32, n_layer=2, n_head=2, block="mlp"))
    amap = lens.arch_map(mlp_only)
    assert amap.attn is None and amap.mlp == "mlp"
    c = activations.capture(mlp_only, tokens())
    assert list(c.modules) == ["mlp_out"]
    with pytest.raises(ReproError, match="no attention"):
        activations.capture(mlp_only, tokens(), attentions=True)
    with pytest.raises(ReproError, match="attn_out"):
        activations.capture(mlp_only, tokens(), modules=("attn_out",))


# --------------------------------------------------------------------------- hooks


def test_capture_leaves_model_bit_identical(model):
    ids = tokens(1)
    with torch.no_grad():
        # transformers installs its own output recorders lazily, on the first call that asks
        # for hidden states / attentions: do that before counting hooks
        model(input_ids=ids, output_attentions=True, output_hidden_states=True)
        before = model(input_ids=ids).logits.clone()
    counts = hook_counts(model)
    c = activations.capture(model, ids, attentions=True, modules=("attn_out", "mlp_out", "attn_in", "mlp_in"))
    assert c.residual is not None
    assert hook_counts(model) == counts
    with torch.no_grad():
        after = model(input_ids=ids).logits
    assert torch.equal(before, after)


def test_hooks_removed_when_forward_raises():
    model = hf("llama", attn_implementation="sdpa")  # sdpa returns no weights → our hook raises
    with torch.no_grad():
        model(input_ids=tokens(), output_attentions=True)  # transformers' own lazy recorders
    counts = hook_counts(model)
    with pytest.raises(ReproError, match="eager attention"):
        activations.capture(model, tokens(), attentions=True)
    assert hook_counts(model) == counts


def test_residual_matches_output_hidden_states(model):
    ids = tokens(2)
    c = activations.capture(model, ids)
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
    hs = out.hidden_states
    L = len(lens.arch_map(model).blocks(model))
    assert c.residual.shape == (B, L + 1, T, 32) and len(hs) == L + 1
    for layer in range(L):
        torch.testing.assert_close(c.residual[:, layer], hs[layer], rtol=0, atol=0)
    if isinstance(model, TinyDecoder):  # the tiny decoder's last hidden state is pre-norm
        torch.testing.assert_close(c.residual[:, L], hs[L], rtol=0, atol=0)
    else:  # transformers 5.x: the last hidden state is after the final norm
        with torch.no_grad():
            torch.testing.assert_close(lens.final_norm(model)(c.residual[:, L]), hs[L], rtol=0, atol=0)


def test_residual_is_sum_of_contributions(model):
    c = activations.capture(model, tokens(3))
    r = c.residual
    for layer in range(r.shape[1] - 1):
        torch.testing.assert_close(
            r[:, layer + 1],
            r[:, layer] + c.modules["attn_out"][layer] + c.modules["mlp_out"][layer],
            rtol=1e-5,
            atol=1e-5,
        )


def test_attention_maps_are_causal_distributions(model):
    c = activations.capture(model, tokens(4), attentions=True, modules=())
    assert len(c.attentions) == len(lens.arch_map(model).blocks(model))
    for a in c.attentions:
        assert a.shape == (B, 2, T, T)
        torch.testing.assert_close(a.sum(-1), torch.ones(B, 2, T))
        assert torch.all(a.triu(1) == 0)


def test_attn_heads_feed_output_projection():
    model = hf("llama")
    c = activations.capture(model, tokens(5), modules=("attn_heads", "attn_out"))
    o_proj = model.model.layers[0].self_attn.o_proj
    with torch.no_grad():
        torch.testing.assert_close(o_proj(c.modules["attn_heads"][0]), c.modules["attn_out"][0])


def test_several_forwards_concatenate_along_batch():
    model = hf("gpt2")
    a, b = tokens(6, batch=1), tokens(7, batch=3)
    with activations.hooks(model) as cap, torch.no_grad():
        model(input_ids=a)
        model(input_ids=b)
    full = activations.capture(model, torch.cat([a, b]))
    assert cap.residual.shape[0] == 4
    torch.testing.assert_close(cap.residual, full.residual)


def test_positions_keep_those_positions_and_final_norm_is_the_head_input(model):
    """`positions` keeps dim-1 positions of every state (the same numbers as a full capture
    indexed there); `final_norm` records the LM head's input: the logits at a kept position
    come back from it. Control: another position's normed state does not give those logits."""
    ids = tokens()
    pos = torch.tensor([0, T // 2, T - 1])
    full = activations.capture(model, ids, modules=["mlp_out"])
    with activations.hooks(model, modules=["mlp_out"], final_norm=True, positions=pos) as cap, torch.no_grad():
        logits = model(input_ids=ids).logits
    assert torch.equal(cap.residual, full.residual[:, :, pos])
    assert torch.equal(cap.modules["mlp_out"][1], full.modules["mlp_out"][1][:, pos])
    assert cap.final_normed.shape == (ids.shape[0], len(pos), cap.residual.shape[-1])
    want = logits[:, pos].float()
    got = lens.unembed(model, cap.final_normed, normed=True).float()
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(lens.unembed(model, cap.final_normed.flip(1), normed=True).float(), want, atol=1e-3)
    with pytest.raises(ReproError, match="positions"):
        with activations.hooks(model, attentions=True, positions=pos):
            pass


def test_arbitrary_block_path_is_captured():
    model = hf("gpt2")
    c = activations.capture(model, tokens(), modules=("mlp.c_fc",))
    assert c.modules["mlp.c_fc"][0].shape == (B, T, 4 * 32)


# --------------------------------------------------------------------------- logit lens


def test_last_layer_lens_equals_logits(model):
    ids = tokens(8)
    c = activations.capture(model, ids)
    with torch.no_grad():
        lensed = lens.logit_lens(model, c.residual)
    assert lensed.shape == (B, c.residual.shape[1], T, V)
    torch.testing.assert_close(lensed[:, -1], c.logits, rtol=0, atol=1e-5)


def test_lens_from_hf_hidden_states_does_not_normalise_twice():
    model = hf("llama")
    ids = tokens(9)
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
        right = lens.logit_lens(model, list(out.hidden_states), last_is_normed=True)
        wrong = lens.logit_lens(model, list(out.hidden_states))
        stacked = lens.logit_lens(model, torch.stack(out.hidden_states, 1), last_is_normed=True)
    torch.testing.assert_close(right[-1], out.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(stacked[:, -1], out.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(stacked[:, 0], right[0])
    assert not torch.allclose(wrong[-1], out.logits, atol=1e-3)  # a second RMSNorm changes logits


def test_gemma_softcap_is_applied():
    capped, plain = gemma3(30.0), gemma3(None)
    ids = tokens(10)
    c = activations.capture(capped, ids)
    with torch.no_grad():
        lensed = lens.logit_lens(capped, c.residual)[:, -1]
        uncapped = lens.unembed(plain, c.residual[:, -1])  # same weights (same seed), no cap
    torch.testing.assert_close(lensed, c.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(lensed, 30.0 * torch.tanh(uncapped / 30.0), rtol=0, atol=1e-5)


def test_token_logits_and_axis_preference_match_the_full_lens():
    """`token_logits` is `unembed` at one id per state (final norm, head row, soft-cap), and
    `axis_preference` is σ(z_out − z_in) of those logits: checked against the full (N, V) lens on
    a capped Gemma and a GPT-2 (a biased head is not needed: the maps' heads have none)."""
    for model in (gemma3(30.0), hf("gpt2")):
        c = activations.capture(model, tokens(11))
        h = c.residual[:, 2].reshape(-1, c.residual.shape[-1])  # (B·T, d), pre-norm
        g = torch.Generator().manual_seed(0)
        a, b = torch.randint(0, V, (h.shape[0],), generator=g), torch.randint(0, V, (h.shape[0],), generator=g)
        with torch.no_grad():
            full = lens.unembed(model, h).float()
            z = tied_decoding.token_logits(model, h, a)
            normed = tied_decoding.token_logits(model, lens.final_norm(model)(h), a, normed=True)
            pref = tied_decoding.axis_preference(model, h, a, b)
        torch.testing.assert_close(z, full.gather(1, a[:, None])[:, 0], rtol=0, atol=1e-4)
        torch.testing.assert_close(normed, z, rtol=0, atol=1e-5)
        want = torch.sigmoid(full.gather(1, b[:, None])[:, 0] - full.gather(1, a[:, None])[:, 0])
        same = a == b
        torch.testing.assert_close(pref[~same], want[~same], rtol=0, atol=1e-4)
        assert torch.isnan(tied_decoding.axis_preference(model, h[:2], a[:2], a[:2])).all()  # input = output token


# --------------------------------------------------------------------------- pretrained


@pytest.mark.pretrained
@pytest.mark.slow
@pytest.mark.parametrize("name,n_layer", [("smollm2-135m", 30), ("gemma3-270m", 18)])
def test_pretrained_last_layer_lens_equals_logits(name, n_layer):
    try:
        from repro.core.models.pretrained import load_pretrained
    except ImportError as e:
        pytest.skip(f"repro.core.models.pretrained is not importable yet: {e}")
    try:
        model, tok = load_pretrained(name)
    except ReproError as e:
        pytest.skip(f"embedded {name} unavailable (run `repro fetch {name}`): {e}")
    ids = tok("The quick brown fox jumps over the lazy dog because it was", return_tensors="pt").input_ids
    c = activations.capture(model, ids, modules=())
    assert c.residual.shape[1] == n_layer + 1  # every block's input + the final pre-norm state
    with torch.no_grad():
        lensed = lens.logit_lens(model, c.residual[:, -1:])
        out = model(input_ids=ids, output_hidden_states=True)
    torch.testing.assert_close(lensed[:, 0], c.logits, rtol=0, atol=1e-3)
    torch.testing.assert_close(c.residual[:, :-1], torch.stack(out.hidden_states[:-1], 1), rtol=0, atol=0)


# --------------------------------------------------------------------------- ranks, tuned lens


def test_target_ranks_known_answer():
    logits = torch.tensor([[0.1, 3.0, 2.0, 2.0], [5.0, 1.0, 1.0, 0.0]])
    assert lens.target_ranks(logits, torch.tensor([1, 0])).tolist() == [1, 1]
    assert lens.target_ranks(logits, torch.tensor([2, 3])).tolist() == [2, 4]  # a tie counts for the target
    assert lens.target_ranks(logits, torch.tensor([0, 1])).tolist() == [4, 2]


def test_logit_lens_ranks_last_layer_is_model_rank():
    model = hf("llama")
    ids = tokens(length=12)
    cap = activations.capture(model, ids[:, :-1])
    ranks = lens.logit_lens_ranks(model, cap.residual, ids[:, 1:])
    assert ranks.shape == (4, B, 11)
    assert torch.equal(ranks[-1], lens.target_ranks(cap.logits, ids[:, 1:]))


def test_tuned_lens_starts_as_the_logit_lens():
    model = hf("gpt2")
    cap = activations.capture(model, tokens(length=12))
    resid = cap.residual.permute(0, 2, 1, 3).reshape(-1, 4, 32)
    tl = lens.TunedLens(3, 32)
    assert torch.allclose(lens.lens_kl(model, resid, tl), lens.lens_kl(model, resid), atol=1e-6)
    h = torch.randn(3, 5, 32, generator=generator(3))
    assert torch.equal(tl(h), h) and torch.equal(tl(h[1], 1), h[1])


def test_fit_tuned_lens_lowers_kl_and_leaves_model_trainable():
    model = hf("llama")
    resid = activations.capture(model, tokens(batch=8, length=16)).residual.permute(0, 2, 1, 3).reshape(-1, 4, 32)
    flags = [p.requires_grad for p in model.parameters()]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tl, losses = lens.fit_tuned_lens(model, resid, steps=60, batch_tokens=32, lr=1e-2, autocast=None)
    assert losses[-1] < losses[0]
    kl_tuned, kl_logit = lens.lens_kl(model, resid, tl), lens.lens_kl(model, resid)
    assert kl_tuned.shape == (3, resid.shape[0])
    assert (kl_tuned.mean(1) < kl_logit.mean(1)).all()
    assert [p.requires_grad for p in model.parameters()] == flags
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_fit_tuned_lens_is_deterministic():
    model = hf("gpt2")
    resid = activations.capture(model, tokens(batch=4, length=8)).residual.permute(0, 2, 1, 3).reshape(-1, 4, 32)
    a, _ = lens.fit_tuned_lens(model, resid, steps=5, batch_tokens=8, autocast=None)
    b, _ = lens.fit_tuned_lens(model, resid, steps=5, batch_tokens=8, autocast=None)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)


def _flat(model, batch, length, seed=0):
    return (
        activations.capture(model, tokens(batch=batch, length=length, seed=seed))
        .residual.permute(0, 2, 1, 3)
        .flatten(0, 1)
    )


def test_tuned_lens_stopped_keeps_each_layers_best_and_records_the_curve():
    model = hf("llama")
    train, held = _flat(model, 8, 16), _flat(model, 4, 16, seed=1)
    f = lens.fit_tuned_lens_stopped(
        model,
        train,
        held,
        max_steps=40,
        batch_tokens=32,
        lr=1e-2,
        eval_every=5,
        patience=2,
        min_gain=0.005,
        autocast=None,
    )
    assert f.steps[0] == 0 and f.held_kl.shape == (len(f.steps), 3)
    # the lens returned is each layer's best evaluation: its held-out KL is the curve's minimum
    torch.testing.assert_close(lens.lens_kl(model, held, f.lens).mean(1), f.best_kl, rtol=1e-5, atol=1e-6)
    assert (f.best_kl <= f.held_kl[0]).all()  # never worse than its start (here the identity: near-exact)
    assert f.stopped_at == f.steps[-1] <= 40
    if f.converged:  # the stop rule: the last `patience` evaluations gained < 0.5% at every layer
        prior = f.held_kl[:-2].min(0).values
        assert (f.held_kl[-2:] >= prior * (1 - 0.005) ** 2).all()


def test_tuned_lens_stopped_at_the_cap_says_so():
    model = hf("gpt2")
    train, held = _flat(model, 4, 8), _flat(model, 2, 8, seed=1)
    f = lens.fit_tuned_lens_stopped(
        model, train, held, max_steps=3, batch_tokens=8, lr=1e-3, eval_every=5, patience=2, min_gain=0.0, autocast=None
    )
    assert f.steps == [0, 3] and f.stopped_at == 3 and not f.converged


def test_ridge_start_picks_each_layers_ridge_on_the_held_out_kl():
    model = hf("llama")
    train, held = _flat(model, 8, 16), _flat(model, 4, 16, seed=1)
    tl, kl, ridges = lens.ridge_translators(model, train, held, (0.01, 1.0))
    assert kl.shape == (3,) and set(ridges) <= {0.01, 1.0}
    torch.testing.assert_close(lens.lens_kl(model, held, tl).mean(1), kl)
    assert torch.isfinite(kl).all() and not torch.equal(tl.weight[0], torch.eye(32))  # a fitted map, not the start


def test_tuned_lens_stopped_wants_matching_states():
    with pytest.raises(ReproError, match="one model"):
        lens.fit_tuned_lens_stopped(
            hf("gpt2"),
            torch.zeros(4, 4, 32),
            torch.zeros(4, 3, 32),
            max_steps=1,
            batch_tokens=2,
            lr=1e-3,
            eval_every=1,
            patience=1,
            min_gain=0.0,
        )


def test_fit_tuned_lens_wants_flat_states():
    with pytest.raises(ReproError, match="N tokens, L\\+1, d"):
        lens.fit_tuned_lens(hf("gpt2"), torch.zeros(2, 4, 3, 32))


def test_kl_to_logits_matches_the_definition_and_its_gradient():
    """The fused KL(p ‖ softmax(z)) equals Σ p (log p − log_softmax z) per row, for leading layer
    dims too, and its hand-written backward equals autograd's through the definition (float64
    gradcheck); a wrong reference (p swapped for another row's) is told apart: the control."""
    g = generator(0)
    log_p = torch.randn(5, 11, generator=g, dtype=torch.float64).log_softmax(-1)
    z = torch.randn(3, 5, 11, generator=g, dtype=torch.float64, requires_grad=True)
    direct = (log_p.exp() * (log_p - z.log_softmax(-1))).sum(-1)
    assert torch.allclose(lens.kl_to_logits(log_p, z), direct, atol=1e-12)
    assert not torch.allclose(lens.kl_to_logits(log_p.roll(1, 0), z), direct, atol=1e-3)
    assert torch.autograd.gradcheck(lambda x: lens.kl_to_logits(log_p, x), (z,))
    (gz,) = torch.autograd.grad(direct.square().sum(), z)
    (gk,) = torch.autograd.grad(lens.kl_to_logits(log_p, z).square().sum(), z)
    assert torch.allclose(gz, gk, atol=1e-12)
