"""repro.seedprint.fingerprint_baselines: the Intrinsic / REEF / PCS / ICS baselines of 001 App B.3.2.

Checked against brute force (PCS by concatenation, CKA by REEF's centring-matrix HSIC, ICS by
HuRef's standardise-and-concatenate cosine, the Intrinsic score by numpy's corrcoef), against
the symmetries each method claims (CKA: rotations and isotropic scaling; ICS: per-head V/O
rotations and MLP-unit permutations, which PCS does not survive), and on GQA, bfloat16 and
mismatched inputs.

Tolerances: everything similar-to-itself is computed in float64 from identical inputs, so 1e-6
is loose; symmetry checks go through float32 model weights (ICS's products are float32), hence
1e-5; brute-force comparisons in float64 agree to ~1e-12. Statistical bounds are stated where used.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.core.lens import arch_map
from repro.core.models.hf import build_model
from repro.ground.runtime import ReproError, generator
from repro.seedprint import fingerprint_baselines as fb
from repro.seedprint.block_weights import block_weights

pytestmark = pytest.mark.usefixtures("one_thread")

ARCHS = ("llama", "gpt2", "rope-gpt2")
V = 256
FAST = settings(max_examples=25, deadline=None)


def model(arch: str, seed: int = 1, **kw):
    kw = {"n_layer": 2, "n_head": 4, "d_model": 64, **kw}
    return build_model(arch, vocab_size=V, seed=seed, **kw)


def ids(n: int = 48, t: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, V, (n, t), generator=generator(seed))


@pytest.fixture(scope="module", params=ARCHS)
def pair(request):
    """(arch, model seed 1, model seed 2) of one architecture."""
    return request.param, model(request.param, 1), model(request.param, 2)


def gqa_llama(n_kv: int = 2):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=V,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=n_kv,
        attn_implementation="eager",
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    torch.manual_seed(0)  # HF's own init draws from the global RNG; only these test models use it
    return LlamaForCausalLM(cfg).eval()


def gemma3():
    """Gemma3's shape quirks: 4 query heads, 1 K/V head, head_dim 32 ≠ d/H = 16."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=32,
        hidden_size=64,
        intermediate_size=128,
        vocab_size=V,
        max_position_embeddings=64,
        attn_implementation="eager",
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    torch.manual_seed(0)
    return Gemma3ForCausalLM(cfg).eval()


# --------------------------------------------------------------------------- symmetries


def _rotations(n: int, size: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """n Haar-random orthogonal (size × size) matrices."""
    q, r = torch.linalg.qr(torch.randn(n, size, size, generator=generator(seed), dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))[:, None, :]).to(dtype)


@torch.no_grad()
def apply_symmetries(m, seed: int = 0):
    """Rotate every head's value/output space and permute every MLP's hidden units (in place).
    Both leave the model's function unchanged (checked by the caller on the logits)."""
    cfg = m.config
    h = cfg.num_attention_heads
    for i, block in enumerate(arch_map(m).blocks(m)):
        g = generator(seed + i)
        if cfg.model_type == "gpt2":
            d = cfg.n_embd
            hd = d // h
            rot = _rotations(h, hd, seed + i)
            w, b = block.attn.c_attn.weight, block.attn.c_attn.bias  # x @ w, columns [q|k|v]
            wv = w[:, 2 * d :].view(d, h, hd)
            w[:, 2 * d :] = torch.einsum("dhj,hij->dhi", wv, rot).reshape(d, d)  # v_h ← v_h R_hᵀ
            b[2 * d :] = torch.einsum("hj,hij->hi", b[2 * d :].view(h, hd), rot).reshape(d)
            wo = block.attn.c_proj.weight.view(h, hd, d)  # rows per head: out = Σ_h v_h W_o[h]
            block.attn.c_proj.weight.copy_(torch.einsum("hij,hjd->hid", rot, wo).reshape(d, d))
            perm = torch.randperm(block.mlp.c_fc.weight.shape[1], generator=g)
            block.mlp.c_fc.weight.copy_(block.mlp.c_fc.weight[:, perm])
            block.mlp.c_fc.bias.copy_(block.mlp.c_fc.bias[perm])
            block.mlp.c_proj.weight.copy_(block.mlp.c_proj.weight[perm])
        elif cfg.model_type == "gpt_neox":
            d = cfg.hidden_size
            hd = d // h
            rot = _rotations(h, hd, seed + i)
            qkv = block.attention.query_key_value
            wv = qkv.weight.view(h, 3, hd, d)  # rows per head: [q | k | v]
            wv[:, 2] = torch.einsum("hij,hjd->hid", rot, wv[:, 2].clone())
            bv = qkv.bias.view(h, 3, hd)
            bv[:, 2] = torch.einsum("hij,hj->hi", rot, bv[:, 2].clone())
            wo = block.attention.dense.weight.view(d, h, hd)
            block.attention.dense.weight.copy_(torch.einsum("dhj,hij->dhi", wo, rot).reshape(d, d))
            up, down = block.mlp.dense_h_to_4h, block.mlp.dense_4h_to_h
            perm = torch.randperm(up.weight.shape[0], generator=g)
            up.weight.copy_(up.weight[perm])
            up.bias.copy_(up.bias[perm])
            down.weight.copy_(down.weight[:, perm])
        else:  # Llama / Gemma: v_proj (H_kv·hd, d), o_proj (d, H·hd); K/V head j serves query heads j·g…
            attn, mlp = block.self_attn, block.mlp
            hd = attn.v_proj.weight.shape[0] // cfg.num_key_value_heads
            n_kv = cfg.num_key_value_heads
            rot = _rotations(n_kv, hd, seed + i)
            d = attn.v_proj.weight.shape[1]
            wv = attn.v_proj.weight.view(n_kv, hd, d)
            attn.v_proj.weight.copy_(torch.einsum("kij,kjd->kid", rot, wv).reshape(n_kv * hd, d))
            rot_q = rot.repeat_interleave(h // n_kv, 0)  # each query head reads its group's V
            wo = attn.o_proj.weight.view(d, h, hd)
            attn.o_proj.weight.copy_(torch.einsum("dhj,hij->dhi", wo, rot_q).reshape(d, h * hd))
            perm = torch.randperm(mlp.up_proj.weight.shape[0], generator=g)
            mlp.gate_proj.weight.copy_(mlp.gate_proj.weight[perm])
            mlp.up_proj.weight.copy_(mlp.up_proj.weight[perm])
            mlp.down_proj.weight.copy_(mlp.down_proj.weight[:, perm])
    return m


def _logits(m, x):
    with torch.no_grad():
        return m(x).logits


@pytest.mark.parametrize(
    "make",
    [lambda: model("llama"), lambda: model("gpt2"), lambda: model("rope-gpt2"), gqa_llama, gemma3],
    ids=["llama", "gpt2", "rope-gpt2", "llama-gqa", "gemma3"],
)
def test_ics_survives_head_rotations_and_mlp_permutations_pcs_does_not(make):
    a = make()
    b = apply_symmetries(copy.deepcopy(a))
    x = ids(4, 5)
    torch.testing.assert_close(_logits(b, x), _logits(a, x), atol=1e-5, rtol=1e-4)  # a true symmetry
    r = fb.ics(a, b)
    assert r.similarity == pytest.approx(1.0, abs=1e-5), r.info["per_term"]
    assert r.same_lineage
    p = fb.pcs(a, b, matrices_only=True)
    assert p.similarity < 0.9, p  # V, O and the MLPs moved: most of the weight norm
    assert fb.pcs(a, b).similarity < 1 - 1e-3


# --------------------------------------------------------------------------- self-similarity


def test_every_method_is_one_on_a_model_and_its_copy(pair):
    _, a, _ = pair
    for other in (a, copy.deepcopy(a)):
        res = fb.all_baselines(a, other, ids())
        assert set(res) == set(fb.METHODS)
        for name, r in res.items():
            assert r.method == name
            assert r.similarity == pytest.approx(1.0, abs=1e-6), (name, r.info)
            assert r.same_lineage and r.info["threshold"] == fb.THRESHOLD


@pytest.mark.parametrize("make", [gqa_llama, gemma3], ids=["llama-gqa", "gemma3"])
def test_gqa_models_work(make):
    a = make()
    w = block_weights(a)[0]
    assert (w.n_heads, w.n_kv_heads) == (a.config.num_attention_heads, a.config.num_key_value_heads)
    res = fb.all_baselines(a, copy.deepcopy(a), ids())
    assert all(r.similarity == pytest.approx(1.0, abs=1e-6) for r in res.values())


# --------------------------------------------------------------------------- PCS


def test_pcs_matches_brute_force_concatenation(pair):
    _, a, b = pair
    va = torch.cat([p.detach().reshape(-1) for p in a.parameters()]).double()
    vb = torch.cat([p.detach().reshape(-1) for p in b.parameters()]).double()
    want = float(va @ vb / (va.norm() * vb.norm()))
    r = fb.pcs(a, b)
    assert r.similarity == pytest.approx(want, abs=1e-12)
    assert r.info["n_params"] == va.numel()


def test_pcs_of_independent_seeds_is_near_zero_on_weight_matrices(pair):
    """Independent N(0, σ²) weights: the cosine is ~ N(0, 1/n_eff); with n ≈ 10⁵ parameters
    one standard error is ≲ 0.01, so 0.05 is > 5 SE. On *all* parameters the all-ones norm
    weights dominate these tiny models' norms, which lifts PCS past the 0.8 threshold."""
    _, a, b = pair
    assert abs(fb.pcs(a, b, matrices_only=True).similarity) < 0.05
    full = fb.pcs(a, b)
    assert full.info["dot_share_1d"] == pytest.approx(1.0, abs=0.05)
    assert full.similarity > fb.THRESHOLD


def test_pcs_exclude_drops_named_parameters():
    a, b = model("llama", 1), model("llama", 2)
    r = fb.pcs(a, b, exclude=("embed", "lm_head"))  # REEF's pcs.py selection
    n_all = sum(p.numel() for p in a.parameters())
    assert r.info["n_params"] == n_all - 2 * V * 64


def test_pcs_mismatches_raise_naming_the_parameter():
    a, wide = model("llama", 1), model("llama", 1, d_model=96)
    with pytest.raises(
        ReproError,
        match=r"pcs: models differ in parameter 'model\.embed_tokens\.weight': "
        r"\(256, 64\) vs \(256, 96\)",
    ):
        fb.pcs(a, wide)
    tied = model("llama", 1, tie_word_embeddings=True)
    with pytest.raises(ReproError, match="'lm_head.weight' is in model_a but not in model_b"):
        fb.pcs(a, tied)


# --------------------------------------------------------------------------- ICS


def test_ics_equals_hurefs_standardised_concatenated_cosine(pair):
    """HuRef's Invariant_terms_Cos_Sim.py: standardise each term, flatten all, one cosine."""
    _, a, b = pair
    tok = fb.select_tokens(V, 100, seed=3)
    ta, tb = fb.invariant_terms(a, tok), fb.invariant_terms(b, tok)
    assert list(ta) == ["0.qk", "0.vo", "0.mlp", "1.qk", "1.vo", "1.mlp"]
    assert all(t.shape == (100, 100) for t in ta.values())

    def std(t):
        t = t.double()
        return ((t - t.mean()) / t.std()).reshape(-1)

    ca = torch.cat([std(t) for t in ta.values()])
    cb = torch.cat([std(t) for t in tb.values()])
    want = float(ca @ cb / (ca.norm() * cb.norm()))
    r = fb.ics(a, b, token_ids=tok)
    assert r.similarity == pytest.approx(want, abs=1e-10)
    # independent models: independent terms, so small correlation (n² = 10⁴ entries per term,
    # though entries within a term are correlated; 0.1 is generous)
    assert abs(r.similarity) < 0.1


def test_ics_attention_term_is_the_weights_bilinear_form():
    a = model("llama", 1)
    tok = torch.tensor([3, 7, 11])
    attn = a.model.layers[1].self_attn
    x = a.model.embed_tokens.weight[tok].detach()
    want = x @ attn.q_proj.weight.T @ attn.k_proj.weight @ x.T
    torch.testing.assert_close(fb.invariant_terms(a, tok, n_layers=1)["1.qk"], want)


def test_ics_tokens_and_layers_are_recorded_and_validated():
    a, b = model("llama", 1), model("llama", 2, n_layer=3, d_model=96)
    r = fb.ics(a, b, n_tokens=50, seed=4)  # widths and depths may differ: the terms are n × n
    assert r.info["n_tokens"] == 50 and r.info["layers_a"] == [0, 1] and r.info["layers_b"] == [1, 2]
    assert fb.ics(a, a).info["n_tokens"] == V  # HuRef's 4096, capped at the vocabulary
    with pytest.raises(ReproError, match="different vocabularies"):
        fb.ics(a, build_model("llama", n_layer=2, n_head=4, d_model=64, vocab_size=300, seed=1))
    with pytest.raises(ReproError, match="n_layers"):
        fb.ics(a, b, n_layers=3)


# --------------------------------------------------------------------------- Intrinsic


def test_intrinsic_matches_numpy_corrcoef():
    a, b = model("llama", 1, n_layer=5, perturb_norms=0.1), model("llama", 2, n_layer=5)
    r = fb.intrinsic(a, b)
    per = {}
    for t, name in zip("qkvo", ("q_proj", "k_proj", "v_proj", "o_proj")):
        pa = [getattr(layer.self_attn, name).weight.double().std().item() for layer in a.model.layers]
        pb = [getattr(layer.self_attn, name).weight.double().std().item() for layer in b.model.layers]
        per[t] = np.corrcoef(pa, pb)[0, 1]
    assert r.info["per_matrix"] == pytest.approx(per, abs=1e-12)
    assert r.similarity == pytest.approx(np.mean(list(per.values())), abs=1e-12)
    assert -1 <= r.similarity <= 1


def test_intrinsic_splits_fused_qkv():
    """GPT-2's c_attn thirds and GPT-NeoX's per-head rows must give the right matrices: scale
    only W_K of one layer, and only the K profile changes."""
    for arch in ("gpt2", "rope-gpt2"):
        a = model(arch, 1, n_layer=3)
        b = copy.deepcopy(a)
        with torch.no_grad():
            if arch == "gpt2":
                b.transformer.h[1].attn.c_attn.weight[:, 64:128] *= 3
            else:
                b.gpt_neox.layers[1].attention.query_key_value.weight.view(4, 3, 16, 64)[:, 1] *= 3
        per = fb.intrinsic(a, b).info["per_matrix"]
        assert [per[t] for t in "qvo"] == pytest.approx([1.0] * 3, abs=1e-12)
        assert per["k"] < 0.9


def test_intrinsic_needs_equal_depth():
    with pytest.raises(ReproError, match="differ in depth: 2 vs 3"):
        fb.intrinsic(model("llama", 1), model("llama", 1, n_layer=3))


# --------------------------------------------------------------------------- CKA


def _reef_linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """REEF compute_cka.py's CKA.linear_CKA, verbatim in spirit: H K H with H = I − 11ᵀ/n."""
    n = x.shape[0]
    h = np.eye(n) - np.ones((n, n)) / n

    def hsic(a, b):
        return np.sum((h @ (a @ a.T) @ h) * (h @ (b @ b.T) @ h))

    return hsic(x, y) / math.sqrt(hsic(x, x) * hsic(y, y))


def _gauss(seed: int, n: int, d: int) -> torch.Tensor:
    return torch.randn(n, d, generator=generator(seed), dtype=torch.float64)


@pytest.mark.parametrize("n,da,db", [(10, 30, 20), (80, 6, 9)])  # Gram and feature-space paths
def test_linear_cka_matches_reefs_formula(n, da, db):
    x = _gauss(0, n, da)
    y = x[:, : min(da, db)] @ _gauss(1, min(da, db), db) + 0.5 * _gauss(2, n, db)
    assert fb.cka(x, y) == pytest.approx(_reef_linear_cka(x.numpy(), y.numpy()), abs=1e-12)


@FAST
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(4, 40),
    d=st.integers(1, 12),
    log_scale=st.floats(-3, 3),
    kernel=st.sampled_from(["linear", "rbf"]),
)
def test_cka_is_invariant_to_rotation_and_isotropic_scaling(seed, n, d, log_scale, kernel):
    x = _gauss(seed, n, d)
    y = torch.tanh(x @ _gauss(seed + 1, d, d)) + 0.3 * _gauss(seed + 2, n, d)
    rot = _rotations(1, d, seed + 3, torch.float64)[0]
    base = fb.cka(x, y, kernel=kernel)
    assert fb.cka(x, (10**log_scale) * y @ rot, kernel=kernel) == pytest.approx(base, abs=1e-9)
    assert fb.cka(y, x, kernel=kernel) == pytest.approx(base, abs=1e-12)
    assert fb.cka(x, x, kernel=kernel) == pytest.approx(1.0, abs=1e-12)
    assert -1e-12 <= base <= 1 + 1e-12


def test_cka_of_independent_gaussians_is_small():
    """E[linear CKA] ≈ √(d_a d_b)/N for independent data: 0.004 here; 0.05 is > 10×."""
    x, y = _gauss(0, 2000, 8), _gauss(1, 2000, 8)
    assert fb.cka(x, y) < 0.05
    assert fb.cka(x, y, kernel="rbf") < 0.05


def test_cka_rejects_bad_input():
    x = _gauss(0, 10, 3)
    with pytest.raises(ReproError, match="same samples"):
        fb.cka(x, _gauss(1, 9, 3))
    with pytest.raises(ReproError, match="kernel"):
        fb.cka(x, x, kernel="poly")
    with pytest.raises(ReproError, match="constant"):
        fb.cka(x, torch.ones(10, 3))


# --------------------------------------------------------------------------- REEF


def test_reef_layer_is_reefs_depth_fraction():
    assert fb.reef_layer(32) == 18  # REEF: block 18 of Llama-2-7B
    assert (fb.reef_layer(30), fb.reef_layer(12), fb.reef_layer(2)) == (17, 7, 1)
    assert fb.reef_layer(12, 0.5) == 6 and fb.reef_layer(12, -1) == 11 and fb.reef_layer(12, 3) == 3
    for bad in (12, -13, 1.5, True):
        with pytest.raises(ReproError):
            fb.reef_layer(12, bad)


def test_last_token_states_are_the_block_outputs():
    a = model("llama", 1, n_layer=3)
    x = ids(5, 7)
    with torch.no_grad():
        hs = a(x, output_hidden_states=True).hidden_states  # hs[l+1]: output of block l (l < L-1)
    got = fb.last_token_states(a, x, 1, batch_size=2)
    torch.testing.assert_close(got, hs[2][:, -1].double())
    # sequences of different lengths, unpadded, come back in input order
    seqs = [x[0], x[1, :4], x[2], x[3, :2]]
    got = fb.last_token_states(a, seqs, 1)
    for i, s in enumerate(seqs):
        torch.testing.assert_close(got[i], fb.last_token_states(a, s[None], 1)[0])


def test_reef_compares_models_of_different_widths():
    a, b = model("llama", 1), model("llama", 2, d_model=96)
    r = fb.reef(a, b, ids())
    assert 0 <= r.similarity <= 1
    assert r.info["layer_a"] == r.info["layer_b"] == 1 and r.info["n_samples"] == 48
    assert fb.reef(a, b, ids(), kernel="rbf").info["kernel"] == "rbf"


# --------------------------------------------------------------------------- dtype


def test_bfloat16_models_work():
    a = model("llama", 1)
    a16 = model("llama", 1, dtype=torch.bfloat16)
    res = fb.all_baselines(a16, copy.deepcopy(a16), ids())
    assert all(r.similarity == pytest.approx(1.0, abs=1e-6) for r in res.values())
    # bf16 rounding (8 bits of mantissa) perturbs weights by ~0.4%: everything stays ≈ 1
    assert fb.pcs(a16, a).similarity > 0.999
    assert fb.ics(a16, a).similarity > 0.99
    assert fb.reef(a16, a, ids()).similarity > 0.95
