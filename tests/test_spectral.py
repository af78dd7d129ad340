"""repro.spectral_filters.spectral: the filters are the projections 003 §4/§6 define, the parameter projections
follow eq. (1), and the interventions are exact and leave the model as it was. Small random-init
HF models (repro.core.models.hf.build_model), no downloads. The metrics of eq. (4)/(5) and §7 are
in tests/test_spectral_metrics.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from repro.core.models.hf import build_model
from repro.ground.runtime import ReproError, generator
from repro.spectral_filters import dark_signals, spectral

pytestmark = pytest.mark.usefixtures("one_thread")


def _filters(d: int, seed: int, tied: bool = True, gain: bool = False) -> spectral.Filters:
    g = generator(seed)
    W = torch.randn(4 * d, d, generator=g, dtype=torch.float64)
    We = W if tied else torch.randn(4 * d, d, generator=g, dtype=torch.float64)
    Wu = W * (1 + 0.5 * torch.rand(d, generator=g, dtype=torch.float64))[None, :] if gain else W
    return spectral.Filters(spectral.spectrum(Wu), spectral.spectrum(We))


def _close(a, b, tol=2e-5):
    return torch.allclose(a.double(), b.double(), atol=tol, rtol=0)


# --------------------------------------------------------------------------- bands


@given(d=st.integers(20, 700))
def test_band_edges_round_to_nearest(d):
    e = spectral.band_edges(d)
    assert e[0] == 0 and e[-1] == d and len(e) == 21
    sizes = [b - a for a, b in zip(e, e[1:])]
    assert max(sizes) - min(sizes) <= 1
    assert all(abs(e[k] - k * d / 20) <= 0.5 for k in range(21))


def test_band_edges_reject_narrow_width():
    with pytest.raises(ReproError, match="cannot be split"):
        spectral.band_edges(12)


def test_spectrum_matches_svd():
    W = torch.randn(300, 40, generator=generator(1), dtype=torch.float64)
    s = spectral.spectrum(W)
    assert torch.allclose(s.S, torch.linalg.svdvals(W), rtol=1e-10)
    assert torch.allclose(s.V.T @ s.V, torch.eye(40, dtype=torch.float64), atol=1e-10)
    # V diagonalises WᵀW in the order of S
    assert torch.allclose(s.V.T @ W.T @ W @ s.V, torch.diag(s.S**2), atol=1e-8)


# --------------------------------------------------------------------------- filters are projections


@settings(max_examples=25, deadline=None)
@given(
    d=st.integers(20, 64),
    seed=st.integers(0, 2**16),
    j=st.integers(1, 20),
    span=st.integers(0, 19),
    family=st.sampled_from(["phi_u", "phi_e", "omega", "random"]),
)
@example(d=20, seed=0, j=1, span=18, family="omega")  # Ω_{u,19} = I: all 20 bands retained
def test_filters_are_orthogonal_projections(d, seed, j, span, family):
    F = _filters(d, seed, tied=False, gain=True)
    k = min(20, j + span)
    P = F.phi("u", j, k) if family == "phi_u" else F.family(family, k, seed)
    assert _close(P, P.T), "symmetric"
    assert _close(P @ P, P), "idempotent"
    assert abs(float(torch.trace(P.double())) - (F.dims(j, k) if family == "phi_u" else F.retained(family, k))) < 1e-3


@settings(max_examples=20, deadline=None)
@given(d=st.integers(20, 64), seed=st.integers(0, 2**16), a=st.integers(1, 20), b=st.integers(1, 20))
def test_phi_filters_are_nested(d, seed, a, b):
    """Φ_{u,1:a}Φ_{u,1:b} = Φ_{u,1:min(a,b)} (§4 'a hierarchy of nested filters'); the same for Ω."""
    F = _filters(d, seed)
    lo = min(a, b)
    assert _close(F.phi("u", 1, a) @ F.phi("u", 1, b), F.phi("u", 1, lo))
    if max(a, b) < 20:
        assert _close(F.omega(a) @ F.omega(b), F.omega(lo))
    assert _close(F.phi("u", 1, 20), torch.eye(d))


@settings(max_examples=20, deadline=None)
@given(d=st.integers(20, 64), seed=st.integers(0, 2**16), k=st.integers(1, 19))
def test_band_projectors_partition_identity(d, seed, k):
    F = _filters(d, seed)
    assert _close(F.phi("u", 1, k) + F.phi("u", k + 1, 20), torch.eye(d))
    assert _close(F.phi("u", 1, k) @ F.phi("u", k + 1, 20), torch.zeros(d, d))
    assert _close(F.omega(k), F.phi("u", 1, k) + F.dark("u"))


@settings(max_examples=20, deadline=None)
@given(d=st.integers(20, 64), seed=st.integers(0, 2**16), k=st.integers(1, 20))
def test_psi_reduces_to_phi_with_tied_embeddings(d, seed, k):
    """Tied W_e = W_u and no norm gain: V_e = V_u, so Ψ_k = I − Φ_{u,k+1:20} = Φ_{u,1:k} — an
    orthogonal projection; Ψ_20 = I."""
    F = _filters(d, seed, tied=True, gain=False)
    assert _close(F.psi(k), F.phi("u", 1, k))
    assert _close(F.psi(k) @ F.psi(k), F.psi(k)) and _close(F.psi(k), F.psi(k).T)


@settings(max_examples=15, deadline=None)
@given(d=st.integers(20, 48), seed=st.integers(0, 2**16), k=st.integers(1, 19))
def test_psi_with_distinct_embeddings_removes_only_double_projection(d, seed, k):
    """Untied, row convention h·Ψ_k = h − (h·Φ_{e,k+1:20})·Φ_{u,k+1:20}: a vector with no
    E-dark part passes unchanged, and what Ψ removes is no larger than the E-dark part."""
    F = _filters(d, seed, tied=False)
    x = torch.randn(5, d, generator=generator(seed + 1))
    e_light = x @ F.phi("e", 1, k)
    assert _close(e_light @ F.psi(k), e_light, tol=1e-4)
    removed = (x - x @ F.psi(k)).norm(dim=-1)
    e_dark = (x @ F.phi("e", k + 1, 20)).norm(dim=-1)
    assert (removed <= e_dark * (1 + 1e-5) + 1e-6).all()


def test_unknown_family_and_band_errors():
    F = _filters(20, 0)
    with pytest.raises(ReproError, match="unknown filter family"):
        F.family("blue", 3)
    with pytest.raises(ReproError, match="1 ≤ j ≤ k"):
        F.phi("u", 5, 3)


def test_omega_zero_is_the_dark_band():
    F = _filters(40, 1)
    assert _close(F.omega(0), F.dark("u")) and F.retained("omega", 0) == F.dims(20, 20)


def test_random_filters_are_seeded():
    F = _filters(24, 0)
    assert torch.equal(F.random(10, 7), F.random(10, 7))
    assert not torch.equal(F.random(10, 7), F.random(10, 8))


# --------------------------------------------------------------------------- parameter projections


@pytest.fixture(scope="module")
def llama():
    return build_model("llama", n_layer=2, n_head=4, d_model=40, vocab_size=97, seed=0, perturb_norms=0.3)


@pytest.fixture(scope="module")
def gpt2():
    return build_model("gpt2", n_layer=2, n_head=4, d_model=40, vocab_size=97, seed=0, perturb_norms=0.3)


def test_unembedding_folds_the_final_gain(llama):
    W = llama.lm_head.weight.double() * llama.model.norm.weight.double()[None, :]
    assert torch.allclose(spectral.unembedding_matrix(llama), W)
    assert torch.allclose(spectral.embedding_matrix(llama), llama.model.embed_tokens.weight.double())


def test_component_matrices_reproduce_the_sublayer_maps(llama):
    """x·W_q with the input norm's gain folded equals q_proj(norm(x)); W_2 rows are down_proj's."""
    block = llama.model.layers[1]
    M = spectral.component_matrices(llama, 1)
    x = torch.randn(3, 40, generator=generator(3))
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + block.input_layernorm.variance_epsilon)
    with torch.no_grad():
        assert torch.allclose(
            (rms.double() @ M["q"]).float(), block.self_attn.q_proj(block.input_layernorm(x)), atol=1e-5
        )
        h = torch.randn(3, M["2"].shape[0], generator=generator(4))
        assert torch.allclose((h.double() @ M["2"]).float(), block.mlp.down_proj(h), atol=1e-5)
    assert set(M) == {"q", "k", "v", "o", "1", "2", "3"}


def test_component_matrices_gpt2(gpt2):
    M = spectral.component_matrices(gpt2, 0)
    assert set(M) == {"q", "k", "v", "o", "1", "2"}
    assert M["q"].shape == (40, 40) and M["1"].shape == (40, 160) and M["2"].shape == (160, 40)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 30), seed=st.integers(0, 2**16))
def test_projection_norms_follow_eq1(n, seed):
    g = generator(seed)
    d = 20
    V = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))[0]
    R = torch.randn(d, n, generator=g, dtype=torch.float64)
    j = spectral.projection_norms(R, V, "read")
    assert torch.allclose(j, torch.stack([(V[:, i] @ R).norm() for i in range(d)]))
    assert math.isclose(float((j**2).sum()), float((R**2).sum()), rel_tol=1e-9)  # Parseval
    Wt = R.T  # a writing matrix (n, d)
    jw = spectral.projection_norms(Wt, V, "write")
    assert torch.allclose(jw, torch.stack([(Wt @ V[:, i]).norm() for i in range(d)]))
    edges = spectral.band_edges(d)
    assert math.isclose(sum(spectral.band_share(j, edges, b) for b in range(1, 21)), 1.0, rel_tol=1e-9)
    with pytest.raises(ReproError):
        spectral.projection_norms(R, V, "sideways")


# --------------------------------------------------------------------------- interventions


@pytest.fixture(scope="module")
def ids():
    x = torch.randint(3, 97, (3, 10), generator=generator(5))
    x[:, 0] = 1
    return x


def _nll(model, ids):
    with torch.no_grad():
        logits = model(ids).logits
    return float(
        torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    )


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_hook_filter_restores_model_exactly(arch, llama, gpt2, ids):
    model = {"llama": llama, "gpt2": gpt2}[arch]
    F = spectral.filters(model)
    with torch.no_grad():
        before = model(ids).logits.clone()
    with spectral.filtered(model, 0, F.phi("u", 1, 10)):
        with torch.no_grad():
            changed = model(ids).logits
    assert not torch.allclose(before, changed)
    with torch.no_grad():
        assert torch.equal(model(ids).logits, before)
    with pytest.raises(RuntimeError), spectral.filtered(model, 0, F.phi("u", 1, 10)):
        raise RuntimeError("boom")  # the hook goes on the way out of an exception too
    with torch.no_grad():
        assert torch.equal(model(ids).logits, before)
    assert all(not b._forward_hooks for b in model.modules())


def test_identity_filter_is_a_no_op(llama, ids):
    with torch.no_grad():
        before = llama(ids).logits
    with spectral.filtered(llama, 1, torch.eye(40)), torch.no_grad():
        assert torch.allclose(llama(ids).logits, before, atol=1e-5)


@pytest.mark.parametrize(
    "kw", [dict(), dict(tokens="first"), dict(swap=True), dict(swap=True, swap_shift=1), dict(where="mlp")]
)
@pytest.mark.parametrize("layer", [0, 1])
def test_sweep_matches_hooked_forward(llama, ids, kw, layer):
    """The cached-prefix NLL equals the NLL of a full forward pass with the plain hook."""
    F = spectral.filters(llama)
    P = F.random(12, 3)
    sweep = spectral.Sweep(llama, ids)
    assert math.isclose(sweep.base, _nll(llama, ids), rel_tol=1e-5)
    with spectral.filtered(llama, layer, P, **kw):
        want = _nll(llama, ids)
    assert math.isclose(sweep.nll(layer, P, **kw), want, rel_tol=1e-5)
    # the pass-through swap is undone: the model is whole again
    assert math.isclose(_nll(llama, ids), sweep.base, rel_tol=1e-6)
    assert all(type(b).__name__ != "_PassThrough" for b in llama.model.layers)


@pytest.mark.parametrize("kw", [dict(), dict(swap=True)])
def test_sweep_prompt_nll_is_per_sample(llama, ids, kw):
    """prompt_nll gives each sample's mean NLL (the hooked forward's per-sample cross-entropy);
    their mean is `nll`; no filter gives the unfiltered per-sample NLL."""
    F = spectral.filters(llama)
    P = F.random(12, 3)
    sweep = spectral.Sweep(llama, ids)
    with spectral.filtered(llama, 1, P, **kw), torch.no_grad():
        logits = llama(ids).logits
    want = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none").mean(1)
    got = sweep.prompt_nll(1, P, **kw)
    assert got.shape == (ids.shape[0],) and got.dtype == torch.float64
    assert torch.allclose(got, want.double(), rtol=1e-5)
    assert math.isclose(float(got.mean()), sweep.nll(1, P, **kw), rel_tol=1e-6)
    assert torch.equal(sweep.prompt_nll(0, None), sweep.base_prompts)
    assert math.isclose(float(sweep.base_prompts.mean()), sweep.base, rel_tol=1e-12)


def test_dark_shares_in_another_basis(llama):
    F = spectral.filters(llama)
    own = spectral.dark_shares(llama, F)
    same = spectral.dark_shares(llama, F, F.u.V)
    assert all(torch.allclose(own[y], same[y]) for y in own)
    rnd = spectral.dark_shares(llama, F, F.random_basis(0))
    assert set(rnd) == set(own) and all(((v >= 0) & (v <= 1)).all() for v in rnd.values())


def test_swap_leaves_shared_token0_alone(llama, ids):
    """Token 0 is the same in every sample, so the shavings swap changes nothing there (Fig 10)."""
    F = spectral.filters(llama)
    sweep = spectral.Sweep(llama, ids)
    h = sweep.state(0, F.phi("u", 1, 5), swap=True)
    assert torch.allclose(h[:, 0], sweep.resid[:, 1, 0], atol=1e-4)
    assert not torch.allclose(h[:, 1:], sweep.resid[:, 1, 1:], atol=1e-3)
    # shifted by one position, token 0 gets the last token's shavings of another sample instead
    P = F.phi("u", 1, 5)
    hs = sweep.state(0, P, swap=True, swap_shift=1)
    x = sweep.resid[:, 1].float()
    other = torch.roll(torch.roll(x, 1, dims=0), 1, dims=1)
    assert torch.allclose(hs, x @ P + other - other @ P, atol=1e-4)
    assert not torch.allclose(hs[:, 0], x[:, 0], atol=1e-3)


def test_intervention_errors(llama, ids):
    F = spectral.filters(llama)
    with pytest.raises(ReproError, match="out of range"), spectral.filtered(llama, 9, F.dark()):
        pass
    with pytest.raises(ReproError, match="where must be"), spectral.filtered(llama, 0, F.dark(), where="attn"):
        pass
    with pytest.raises(ReproError, match="MLP filters"), spectral.filtered(llama, 0, F.dark(), where="mlp", swap=True):
        pass
    sweep = spectral.Sweep(llama, ids[:1])
    with pytest.raises(ReproError, match="two samples"):
        sweep.nll(0, F.dark(), swap=True)
    with pytest.raises(ReproError, match="out of range"):
        sweep.nll(5, F.dark())
    with pytest.raises(ReproError, match="MLP filters"):
        sweep.nll(0, F.dark(), where="mlp", tokens="first")


def test_generate_with_filter_restores_model(llama):
    prompt = torch.tensor([[1, 5, 6, 7]])
    F = spectral.filters(llama)
    a = spectral.generate(llama, prompt, 6)
    b = spectral.generate(llama, prompt, 6, layer=0, P=F.phi("u", 1, 2))
    assert len(a) == len(b) == 6
    assert spectral.generate(llama, prompt, 6) == a


def test_per_head_reads(llama):
    attn = llama.model.layers[0].self_attn
    x = torch.randn(2, 5, 40, generator=generator(9))
    with torch.no_grad():
        k = dark_signals.head_keys(attn, x)
        assert k.shape == (2, 4, 5, 10)
        vo = dark_signals.value_output_norms(attn, x)
        # the heads' W_v W_o outputs sum to o_proj(v) (attention weights aside)
        v = attn.v_proj(x)
        assert vo.shape == (2, 4, 5)
        h0 = v[..., :10] @ attn.o_proj.weight[:, :10].T
        assert torch.allclose(vo[:, 0], h0.norm(dim=-1), atol=1e-5)


def test_value_output_ratios_divide_by_the_median_other_token(llama):
    """SF-10's ratios: per layer and head, the position's ‖x W_v W_o‖ averaged over prompts, over
    the median of every token's but token 0's, all prompts pooled."""
    inputs = [torch.randn(3, 6, 40, generator=generator(11 + i)) for i in range(2)]
    r0, r2 = dark_signals.value_output_ratios(llama, inputs, [1, 0], (0, 2))
    assert r0.shape == r2.shape == (2, 4)
    with torch.no_grad():
        for row, layer in enumerate([1, 0]):
            vo = dark_signals.value_output_norms(llama.model.layers[layer].self_attn, inputs[layer])
            for h in range(4):
                median = vo[:, h, 1:].flatten().median()
                assert r0[row, h] == pytest.approx(float(vo[:, h, 0].mean() / median), rel=1e-6)
                assert r2[row, h] == pytest.approx(float(vo[:, h, 2].mean() / median), rel=1e-6)


def test_value_output_ratio_replicates_resample_the_median_only(llama):
    """SF-10's bootstrap: token 0's ratios with the other tokens resampled, (n_boot, layers, H),
    centred on the ratios themselves, the same draw every time, and its power record counts every
    head's noise (a larger spread, a lower power; its size is 1 − power)."""
    from repro.spectral_filters import noise_free as power

    inputs = [torch.randn(3, 6, 40, generator=generator(11 + i)) for i in range(2)]
    (r0,) = dark_signals.value_output_ratios(llama, inputs, [1, 0], (0,))
    reps = dark_signals.value_output_ratio_replicates(llama, inputs, [1, 0], n_boot=400)
    assert reps.shape == (400, 2, 4)
    assert np.median(reps, 0) == pytest.approx(r0, rel=0.35)
    assert np.array_equal(reps, dark_signals.value_output_ratio_replicates(llama, inputs, [1, 0], n_boot=400))
    rec = power.sf10_power_record(8, 15, replicates=reps)
    wide = power.sf10_power_record(8, 15, replicates=reps[:, :, :1] * np.linspace(0.2, 3.0, 400)[:, None, None])
    assert 0.0 < wide.value < rec.value <= 1.0 and rec.stated_size() == pytest.approx(1 - rec.value)
    assert "bootstrap relative sd" in rec.method and "400 replicates" in rec.sample
    assert rec.edge == 0 and "share of heads where token 0's W_vW_o norm" in rec.covers
    # the sizes that decide come from the bootstrap's sd, not "no sampling noise": a wider spread
    # needs more of the other tokens for the same power
    n_rec, n_wide = (int(r.decide.split()[0].replace(",", "")) for r in (rec, wide))
    assert n_rec <= n_wide and "1/√n" in wide.decide


def test_random_in_place_puts_the_first_seed_against_the_others():
    """SF-3/SF-6's margin control: the first seed's random filter against the worst other one."""
    from repro.spectral_filters.readings import random_in_place

    rnd = {3: np.array([1.0, 2.0]), 5: np.array([4.0, 4.0]), 7: np.array([0.0, 1.0])}
    kw = random_in_place(rnd, [3, 5, 7], "Φ")
    assert kw["control"] == pytest.approx(1.5 - 4.0)
    assert "seed 3 in place of Φ" in kw["control_name"] and "seeds [5, 7]" in kw["control_name"]
    assert random_in_place(rnd, [3], "Φ") == {}


@pytest.mark.parametrize("cap", [None, 3.0])
def test_nll_per_token_equals_cross_entropy_of_full_logits(llama, cap):
    """The vocabulary-chunked running logsumexp gives the cross-entropy of the model's own
    logits (soft-capped when the config says so), chunk sizes that do not divide V included."""
    from repro.core import lens

    model = llama
    old = getattr(model.config, "final_logit_softcapping", None)
    amap = lens.arch_map(model)
    try:
        if cap:
            amap = type(amap)(**{**amap.__dict__, "softcap_attr": "final_logit_softcapping"})
            model.config.final_logit_softcapping = cap
        ids = torch.randint(0, model.config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(0))
        normed = torch.randn(2, 8, model.config.hidden_size, generator=torch.Generator().manual_seed(1))
        logits = lens.resolve(model, amap.lm_head)(normed)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        want = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
        import unittest.mock as um

        with um.patch.object(lens, "arch_map", lambda m: amap):
            for chunk in (7, 64, 10_000):
                got = spectral.nll_per_token(model, normed, ids[:, 1:], chunk=chunk)
                torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    finally:
        model.config.final_logit_softcapping = old


def test_step_rows_are_the_sink_layer_at_ci_and_every_layer_at_paper():
    """SF-3/5/6 draw their heat maps at ℓ* (and the profile's `layers`); `rows` adds SF-7's
    layer for the claim that asserts on it (at ci its other cells were figure-only)."""
    from types import SimpleNamespace

    from repro.spectral_filters.study import Study

    def study(layers):
        return Study(
            "m",
            None,
            None,
            {"layers": layers, "bands": (10, 15, 19)},
            None,
            None,
            None,
            SimpleNamespace(layer=6),
            SimpleNamespace(L=18),
            0.0,
            "float32",
        )

    ci = study(())
    assert ci.step_rows == [6]
    assert ci.rows == [5, 6]  # SF-7's layer: round(0.3 · 18) = 5
    assert study((0.5,)).step_rows == [6, 9]
    assert study("all").step_rows == list(range(18)) == study("all").rows


def test_nll_powers_are_typed_ours_and_sized_at_the_bars():
    """SF-3/5/6's step is ours (App C's 'around 9' is another experiment): basis interest, sds at
    their upper bounds, the size taken at the 1-nat bars (far above 0.05: a miss at the bars reads
    inconclusive); SF-7's effect is the source's own rise, its edge (size 1 − power)."""
    from repro.core.readings import Power
    from repro.spectral_filters import power

    rng = np.random.default_rng(0)
    step_p, gap_p = 6.0 + rng.standard_normal(40), 2.0 + rng.standard_normal(40)
    p3, sd = power.sf3_power_record(gap_p, [1.0, 1.2, 0.9], step_p, 33)
    swap_p = 0.5 + 0.3 * rng.standard_normal(40)
    p5 = power.sf5_power_record(step_p, swap_p, 0.9 * step_p + rng.standard_normal(40), 33)
    p6 = power.sf6_power_record(step_p, swap_p, gap_p, [1.0, 1.2, 0.9], 33)
    for p in (p3, p5, p6):
        assert isinstance(p, Power) and p.basis_kind == "interest" and "another experiment" in p.basis
        assert p.sd == "upper bound" and p.edge == pytest.approx(power.STEP - 1.0) and p.size > 0.3
    assert sd["step"] > float(np.std(step_p, ddof=1))  # the upper bound, not the plug-in
    p7 = power.sf7_power_record(0.27 + 0.1 * rng.standard_normal(40), 33)
    assert p7.edge == 0 and p7.basis_kind == "source" and p7.covers == ("NLL increase, Ω_u,14",)


def test_deterministic_power_covers_each_check_at_its_bar():
    """SF-1/2/4/10's noise-free powers cover each check by (part of) its name, sized at the bars."""
    from repro.spectral_filters import noise_free as power

    p = power.sf4_power_record(100, 5)
    assert p.value == 1.0 and p.stated_size() == 0.0 and p.size_at.startswith("each check's bar")
    assert "token 0's norm at its peak" in p.covers and "last block that still reads it / L" in p.covers
    assert not any("median other token" in c for c in p.covers)  # the null's validity is a Control, not a check
