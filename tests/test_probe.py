"""repro.born_biased.preference_probe on tiny random-init models (HF and the ablation decoder) against direct forward
passes, the prefix trick, tie breaking, rank counts, input validation; repro.ground.runtime.resolve_dtype.

Tolerance for float32 states: the probe reads the same forward pass through hooks, so states
of a direct pass over the same inputs agree to rounding; a different sequence length or batch
split changes matmul shapes and hence the summation order, ~1e-7 relative per op on O(1)
LayerNorm outputs over 2 layers of width 32 — atol = rtol = 1e-5 is a generous bound.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from repro.born_biased import preference_probe as probe
from repro.core import lens
from repro.core.models.hf import ARCHS, build_model
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.ground.runtime import ReproError, generator, resolve_dtype

pytestmark = pytest.mark.usefixtures("one_thread")

V, D, L, T, N = 97, 32, 2, 8, 24
TOL = dict(atol=1e-5, rtol=1e-5)  # see the module docstring


def _hf(arch: str = "rope-gpt2", dtype: torch.dtype = torch.float32):
    return build_model(arch, n_layer=L, n_head=2, d_model=D, vocab_size=V, seed=0, n_positions=T, dtype=dtype)


def _tiny(vocab_size: int = V) -> TinyDecoder:
    return TinyDecoder(
        TinyConfig.merged(vocab_size=vocab_size, d_model=D, n_layer=L, n_head=2, max_len=T), generator(0)
    )


@pytest.fixture(scope="module", params=[*ARCHS, "tiny"])
def model(request):
    return _tiny() if request.param == "tiny" else _hf(request.param)


@pytest.fixture(scope="module")
def ids() -> torch.Tensor:
    return torch.randint(0, V, (N, T), generator=generator(3))


def _direct(model, x: torch.Tensor):
    with torch.no_grad():
        return model(input_ids=x, output_hidden_states=True)


# --------------------------------------------------------------------------- against a direct pass


def test_next_token_is_direct_argmax(model, ids):
    res = probe.probe(model, ids)
    assert res.lengths == (T,) and res.n_seq == N and res.vocab_size == V
    assert res.next_token.shape == (1, N) and res.next_token.dtype == torch.int64
    assert torch.equal(res.next_token[0], _direct(model, ids).logits[:, -1].argmax(-1))


def test_every_length_is_its_prefix(model, ids):
    lengths = (3, 5, 8)
    res = probe.probe(model, ids, lengths=lengths)
    assert res.next_token.shape == (3, N) and res.final_normed.shape == (3, N, D)
    for t in lengths:
        alone = probe.probe(model, ids[:, :t])
        k = res.index(t)
        assert torch.equal(res.next_token[k], alone.next_token[0]), t
        torch.testing.assert_close(res.final_normed[k], alone.final_normed[0], **TOL)
        assert torch.equal(res.next_token[k], _direct(model, ids[:, :t]).logits[:, -1].argmax(-1)), t


def test_states_final_norm_and_top_dim(model, ids):
    lengths = (2, 5, 8)
    res = probe.probe(model, ids, lengths=lengths, keep_states=True)
    assert res.states.shape == (len(lengths), L + 1, N, D)
    assert res.states.dtype == res.final_normed.dtype == torch.float32
    norm = lens.final_norm(model)
    with torch.no_grad():
        torch.testing.assert_close(norm(res.states[:, -1]), res.final_normed, **TOL)
    # float32 states have no exact ties: random tie breaking is plain argmax of the last block
    assert torch.equal(res.top_dim, res.states[:, -1].argmax(-1))
    # states are the residual stream at position t−1: block input, then each block's output
    hs = _direct(model, ids).hidden_states
    pre_norm = hs if isinstance(model, TinyDecoder) else hs[:-1]  # HF 5.x: last one is normed
    for k, t in enumerate(lengths):
        for layer, h in enumerate(pre_norm):
            torch.testing.assert_close(res.states[k, layer], h[:, t - 1], **TOL)


def test_keep_states_off_and_batching(ids):
    model = _hf()
    full = probe.probe(model, ids, lengths=(4, 8), keep_states=True)
    small = probe.probe(model, ids, lengths=(8, 4, 4), keep_states=False, batch_size=5)  # 5 ∤ 24
    assert small.states is None and small.lengths == (4, 8)  # sorted, duplicates dropped
    assert torch.equal(small.next_token, full.next_token)
    torch.testing.assert_close(small.final_normed, full.final_normed, **TOL)
    assert torch.equal(small.top_dim, full.top_dim)
    with pytest.raises(ReproError, match="not read out"):
        full.index(5)


def test_embedding_inputs_without_lm_head():
    model = _tiny(vocab_size=0)
    x = torch.randn(6, T, D, generator=generator(4))
    res = probe.probe(model, x, lengths=(1, T), keep_states=True)
    assert res.next_token is None and res.vocab_size is None and res.info["inputs"] == "embeddings"
    with torch.no_grad():
        out = model(inputs_embeds=x, output_hidden_states=True)
    torch.testing.assert_close(res.final_normed[1], out.last_hidden_state[:, -1], **TOL)
    torch.testing.assert_close(res.final_normed[0], out.last_hidden_state[:, 0], **TOL)
    assert torch.equal(res.top_dim[1], out.hidden_states[-1][:, -1].argmax(-1))


def test_contraction_token(model, ids):
    res = probe.probe(model, ids)
    direction = res.final_normed[0].double().mean(0)
    w_u = model.get_output_embeddings().weight.double()  # (V, d): the LM head, independent of lens
    expected = int((w_u @ direction).argmax())
    assert probe.contraction_token(model, res.final_normed[0]) == expected


# --------------------------------------------------------------------------- bfloat16


def test_bfloat16_model_probes_in_float32(ids):
    model = _hf(dtype=torch.bfloat16)
    assert next(model.parameters()).dtype == torch.bfloat16
    res = probe.probe(model, ids, lengths=(5, 8), keep_states=True)
    assert res.final_normed.dtype == res.states.dtype == torch.float32
    assert res.next_token.dtype == res.top_dim.dtype == torch.int64
    assert res.info["dtype"] == "torch.bfloat16"
    assert torch.isfinite(res.final_normed).all() and torch.isfinite(res.states).all()
    # the logits are taken in float32 from the (bf16-valued) final-normed state
    w_u = model.get_output_embeddings().weight.float()
    assert torch.equal(res.next_token, (res.final_normed @ w_u.T).argmax(-1))
    # the state maxima are maxima (with bf16 ties broken at random, never a non-maximum)
    last = res.states[:, -1]
    assert torch.equal(last.gather(-1, res.top_dim.unsqueeze(-1)).squeeze(-1), last.amax(-1))
    assert isinstance(probe.contraction_token(model, res.final_normed[1]), int)


def test_bfloat16_near_tie_is_resolved_in_float32():
    """Two LM-head rows that differ by 2⁻⁶ in one coordinate: their logits (|z| ≈ 4, where the
    bf16 spacing is 2⁻⁵) differ by 2⁻⁶·h₀, below bf16 resolution but not float32's. The probe
    must pick by the float32 logits; a bf16 head would tie (→ token 0) or flip many rows."""
    model = TinyDecoder(
        TinyConfig.merged(vocab_size=2, d_model=D, n_layer=1, n_head=2, max_len=4, tie_embeddings=False), generator(0)
    ).to(torch.bfloat16)
    w = torch.randn(D, generator=generator(1)).bfloat16()
    w[0] = 0
    W = torch.stack([w, w.clone()])
    W[1, 0] = 2**-6
    with torch.no_grad():
        model.lm_head.weight.copy_(W)
    res = probe.probe(model, torch.randn(256, 4, D, generator=generator(2)))
    h = res.final_normed[0]
    f32, b16 = (h @ W.float().T).argmax(-1), (h.bfloat16() @ W.T).argmax(-1)
    assert (f32 != b16).sum() > 10  # the setup discriminates (48 of 256 rows differ, measured)
    assert torch.equal(res.next_token[0], f32)


def test_bfloat16_tiny_decoder_accepts_float32_embeddings():
    model = _tiny(vocab_size=0).to(torch.bfloat16)
    res = probe.probe(model, torch.randn(4, T, D, generator=generator(5)))  # cast to bf16 inside
    assert res.final_normed.dtype == torch.float32 and res.final_normed.shape == (1, 4, D)


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "bad",
    [
        dict(inputs=torch.zeros(T, dtype=torch.long)),  # 1-D
        dict(inputs=torch.zeros(2, T, D, 1)),  # 4-D
        dict(lengths=(0, 4)),
        dict(lengths=(-1,)),
        dict(lengths=(T + 1,)),
        dict(batch_size=0),
    ],
)
def test_bad_inputs_raise(bad):
    kw = {"inputs": torch.zeros(2, T, dtype=torch.long), **bad}
    with pytest.raises(ReproError):
        probe.probe(_tiny(), kw.pop("inputs"), **kw)


# --------------------------------------------------------------------------- argmax_random_ties


@settings(max_examples=30, deadline=None)
@given(
    x=hnp.arrays(np.int64, st.tuples(st.integers(1, 20), st.integers(1, 8)), elements=st.integers(0, 3)),
    seed=st.integers(0, 2**31),
)
def test_argmax_random_ties_picks_a_maximum(x, seed):
    t = torch.from_numpy(x).float()  # few distinct values: ties are common
    idx = probe.argmax_random_ties(t, seed)
    assert idx.shape == t.shape[:-1]
    assert torch.equal(t.gather(-1, idx.unsqueeze(-1)).squeeze(-1), t.amax(-1))
    assert torch.equal(idx, probe.argmax_random_ties(t, seed))  # seeded: repeatable
    unique_max = (t == t.amax(-1, keepdim=True)).sum(-1) == 1
    assert torch.equal(idx[unique_max], t.argmax(-1)[unique_max])


def test_argmax_random_ties_spreads_over_tied_indices():
    idx = probe.argmax_random_ties(torch.zeros(200, 5), seed=0)
    # P(some index never chosen in 200 uniform draws) ≈ 5·0.8²⁰⁰ ≈ 2e-19; torch.argmax gives all 0
    assert set(idx.tolist()) == set(range(5))
    assert (idx == 0).sum() < 100  # Bin(200, 1/5): mean 40, sd 5.7
    two = probe.argmax_random_ties(torch.tensor([[1.0, 3.0, 3.0, 0.0]]).repeat(200, 1), seed=1)
    assert set(two.tolist()) == {1, 2}


# --------------------------------------------------------------------------- rank counts


@settings(max_examples=30, deadline=None)
@given(ids=st.lists(st.integers(0, 29), min_size=1, max_size=300), ranks=st.integers(1, 60))
def test_rank_counts(ids, ranks):
    size = 30
    c = probe.rank_counts(torch.tensor(ids), size, ranks)
    assert c.shape == (ranks,) and c.dtype == float
    assert np.all(np.diff(c) <= 0)  # descending
    expected = np.sort(np.bincount(ids, minlength=size))[::-1][:ranks]
    np.testing.assert_array_equal(c[: len(expected)], expected)
    assert c.sum() <= len(ids) and (ranks < size or c.sum() == len(ids))
    np.testing.assert_array_equal(probe.rank_counts(np.array(ids), size, ranks), c)


def test_uniform_rank_counts():
    n, vocab = 500, 40
    a = probe.uniform_rank_counts(n, vocab, generator(0), draws=10, ranks=50)  # ranks > V: zero-padded
    assert a.shape == (50,) and np.all(np.diff(a) <= 0)
    assert a.sum() == pytest.approx(n) and np.all(a[vocab:] == 0)
    b = probe.uniform_rank_counts(n, vocab, generator(0), draws=10, ranks=5)
    assert b.shape == (5,) and np.all(np.diff(b) <= 0) and b.sum() < n
    np.testing.assert_array_equal(b, a[:5])  # same generator seed, same draws
    # the top count of a uniform draw sits above the mean count n/V = 12.5
    assert a[0] > n / vocab


# --------------------------------------------------------------------------- resolve_dtype


def test_resolve_dtype():
    assert resolve_dtype("float32") is torch.float32
    assert resolve_dtype("bfloat16", "cpu") is torch.bfloat16
    assert resolve_dtype("auto", "cpu") in (torch.float32, torch.bfloat16)
    assert resolve_dtype("auto", "cuda") in (torch.bfloat16, torch.float32)  # tests/test_dtype_policy.py has more
    with pytest.raises(ReproError, match="auto, float32, bfloat16"):
        resolve_dtype("float16")


# --------------------------------------------------------------------------- issue 19: the head's own null


def test_dim_std_is_the_last_block_output_spread(ids):
    model = _hf()
    res = probe.probe(model, ids, lengths=(4, T), keep_states=True)
    last = res.states[:, -1]  # (n_len, N, d)
    torch.testing.assert_close(res.dim_std, last.double().std(dim=1).float(), **TOL)


@pytest.mark.parametrize("arch", ARCHS)
def test_head_logit_scales_predict_isotropic_logit_spread(arch):
    """The std of each token's logit over isotropic states entering the final norm: ‖P(γ⊙w_v)‖
    times the norm's output scale (√d/‖z‖ ≈ 1 per channel), so the ratio measured/predicted is
    one common factor for every token (within sampling error: 4,000 draws, SE ≈ 1.1%)."""
    model = build_model(arch, n_layer=1, n_head=2, d_model=D, vocab_size=V, seed=0, n_positions=T, perturb_norms=0.0)
    with torch.no_grad():
        norm = lens.final_norm(model)
        norm.weight.copy_(1 + 0.5 * torch.rand(norm.weight.shape, generator=generator(4)))  # γ ≠ 1 must count
        z = torch.randn(4000, D, generator=generator(5))
        logits = lens.unembed(model, z).double()
    ratio = logits.std(0).numpy() / probe.head_logit_scales(model)
    assert np.all(np.abs(ratio / ratio.mean() - 1) < 0.06)


def test_head_logit_scales_refuse_a_norm_bias():
    model = build_model(
        "rope-gpt2", n_layer=1, n_head=2, d_model=D, vocab_size=V, seed=0, n_positions=T, perturb_norms=0.1
    )
    with pytest.raises(ReproError):
        probe.head_logit_scales(model)


def test_isotropic_next_tokens():
    model = _hf()
    a = probe.isotropic_next_tokens(model, 50, seed=7, batch_size=16)
    assert a.shape == (50,) and a.min() >= 0 and a.max() < V
    np.testing.assert_array_equal(a, probe.isotropic_next_tokens(model, 50, seed=7))  # batching: same draws
    # the draw is what the head makes of N(0, I) states
    z = torch.randn(50, D, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        direct = lens.unembed(model, z).argmax(-1).numpy()
    np.testing.assert_array_equal(a, direct)
