"""repro.seedprint.algorithm end to end on tiny random models: Algorithm 1 and the released variant
on a Llama against itself and a descendant, the random inputs (tokens; Gaussian matched to the
embedding's output, Gemma3's scale included), the responses (hidden state and logits), width and
vocabulary mismatches, determinism, and the logits feature's m over a large vocabulary.

Tolerances and statistical bounds as in tests/test_seedprint.py (4 Monte Carlo standard errors,
derived where used; every draw seeded).
"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch

from repro.core import lens
from repro.core.models.hf import build_model
from repro.ground.runtime import ReproError, generator
from repro.seedprint import algorithm as sp

pytestmark = pytest.mark.usefixtures("one_thread")

V = 256
D = 64
SCIPY_ZERO_VARIANCE = pytest.mark.filterwarnings(  # ttest_ind on a set of τ's that are all 1.0
    "ignore:Precision loss occurred in moment calculation:RuntimeWarning"
)


def randn(*shape, seed: int = 0, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=generator(seed), dtype=dtype)


def llama(seed: int = 1, **kw):
    kw = {"n_layer": 2, "n_head": 4, "d_model": D, "vocab_size": V, **kw}
    return build_model("llama", seed=seed, **kw)


def gemma3():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=16,
        hidden_size=D,
        intermediate_size=128,
        vocab_size=V,
        max_position_embeddings=64,
        attn_implementation="eager",
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    with torch.random.fork_rng():  # HF's own init draws from the global RNG
        torch.manual_seed(0)
        return Gemma3ForCausalLM(cfg).eval()


CFG = sp.SeedPrintConfig(n=64, length=8, m=16, null_trials=3, seed=0)


@pytest.fixture(scope="module")
def base():
    return llama(1)


@SCIPY_ZERO_VARIANCE
@pytest.mark.parametrize("inputs", ["tokens", "gaussian"])
def test_model_against_itself_and_a_descendant(base, inputs):
    cfg = sp.SeedPrintConfig(n=64, length=8, m=16, null_trials=3, seed=0, inputs=inputs)
    res = sp.seedprint(base, base, cfg)
    assert np.all(res.paper.taus == 1.0) and len(res.paper.dims) == 16
    assert res.paper.same_lineage and res.released.same_lineage
    child = copy.deepcopy(base)  # "fine-tuned": every weight moved by 2% of its own scale
    with torch.no_grad():
        for i, p in enumerate(child.parameters()):
            p.add_(0.02 * p.std() * randn(*p.shape, seed=50 + i))  # norm weights (all 1) stay put
    res = sp.seedprint(base, child, cfg)
    assert res.paper.same_lineage and res.released.same_lineage


def test_random_inputs_tokens(base):
    x = sp.random_inputs(base, CFG)
    assert x.shape == (64, 8) and x.dtype == torch.int64
    assert int(x.min()) >= 0 and int(x.max()) < V
    assert torch.equal(x, sp.random_inputs(base, CFG))
    assert not torch.equal(x, sp.random_inputs(base, sp.SeedPrintConfig(n=64, length=8, seed=1)))


def test_random_inputs_gaussian_match_embedding_statistics(base):
    cfg = sp.SeedPrintConfig(n=64, length=8, inputs="gaussian")
    x = sp.random_inputs(base, cfg)
    assert x.shape == (64, 8, D) and x.dtype == torch.float32
    w = base.model.embed_tokens.weight.detach()
    N = x.numel()  # 32768 i.i.d. draws: SE(mean) = σ/√N, SE(std) = σ/√(2N); 4 SE
    assert abs(float(x.mean()) - float(w.mean())) < 4 * float(w.std()) / math.sqrt(N)
    assert abs(float(x.std()) / float(w.std()) - 1) < 4 / math.sqrt(2 * N)


def test_random_inputs_gaussian_apply_embed_scale():
    m = llama(1)
    cfg = sp.SeedPrintConfig(n=16, length=4, inputs="gaussian")
    plain = sp.random_inputs(m, cfg)
    m.model.embed_tokens.embed_scale = torch.tensor(3.0)  # as Gemma's scaled embedding carries it
    scaled = sp.random_inputs(m, cfg)
    torch.testing.assert_close(scaled, 3.0 * plain, rtol=1e-6, atol=1e-7)


def test_random_inputs_gaussian_match_gemma_embedding_output():
    # a real scaled embedding: Gemma3 multiplies by √d inside its embedding module
    m = gemma3()
    emb = lens.resolve(m, lens.arch_map(m).embed)
    assert float(emb.embed_scale) == pytest.approx(math.sqrt(D))
    with torch.no_grad():
        out = emb(torch.arange(V)).float()  # the output over the whole vocabulary
    x = sp.random_inputs(m, sp.SeedPrintConfig(n=64, length=8, inputs="gaussian"))
    N = x.numel()
    assert abs(float(x.mean()) - float(out.mean())) < 4 * float(out.std()) / math.sqrt(N)
    assert abs(float(x.std()) / float(out.std()) - 1) < 4 / math.sqrt(2 * N)
    assert sp.responses(m, x[:4]).shape == (4, D)


def test_responses_hidden_and_logits_match_the_model(base):
    x = sp.random_inputs(base, CFG)[:16]
    hidden = sp.responses(base, x, batch_size=5)
    logits = sp.responses(base, x, feature="logits", batch_size=5)
    assert hidden.shape == (16, D) and logits.shape == (16, V)
    assert hidden.dtype == logits.dtype == torch.float32
    with torch.no_grad():
        out = base(x, output_hidden_states=True)
    torch.testing.assert_close(hidden, out.hidden_states[-1][:, -1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(logits, out.logits[:, -1], rtol=1e-5, atol=1e-5)
    with pytest.raises(ReproError, match="unknown SeedPrint feature 'probs'"):
        sp.responses(base, x, feature="probs")
    with pytest.raises(ReproError, match="Gaussian inputs are 32 wide but the model is 64 wide"):
        sp.responses(base, randn(4, 3, 32))


@SCIPY_ZERO_VARIANCE
def test_logits_feature_end_to_end(base):
    cfg = sp.SeedPrintConfig(n=48, length=6, m=40, null_trials=2, feature="logits")
    res = sp.seedprint(base, base, cfg)
    assert res.info["d_out"] == V and res.paper.same_lineage
    assert res.released.k == len(res.released.dims) > 0 and res.released.rule == "tables"


def test_width_and_vocabulary_mismatch(base):
    """Each mismatch is one message naming the feature that can still compare the pair, or none."""
    narrow = llama(2, d_model=32)
    with pytest.raises(ReproError, match=r"different widths \(64 vs 32\).*--feature logits can still compare"):
        sp.seedprint(base, narrow, CFG)
    small_vocab = llama(2, vocab_size=128)
    with pytest.raises(ReproError, match=r"different vocabularies \(256 vs 128 tokens\).*--feature hidden can still"):
        sp.seedprint(base, small_vocab, sp.SeedPrintConfig(n=8, length=8, feature="logits"))
    both = llama(2, d_model=32, vocab_size=128)
    for feature in ("hidden", "logits"):
        with pytest.raises(ReproError, match="no SeedPrint mode can compare them"):
            sp.seedprint(base, both, sp.SeedPrintConfig(n=8, length=8, feature=feature))
    # hidden feature across vocabularies: token inputs come from the ids both hold (a descendant
    # with added tokens stays comparable); the inputs are the base's own below that id
    cfg = sp.SeedPrintConfig(n=8, length=8)
    x = sp.random_inputs(base, cfg, vocab=128)
    assert int(x.max()) < 128 and torch.equal(sp.random_inputs(base, cfg), sp.random_inputs(base, cfg, vocab=256))
    assert sp.seedprint(base, small_vocab, cfg).info["n"] == 8


def test_seedprint_is_deterministic(base):
    other = llama(2)
    first = sp.seedprint(base, other, CFG)
    sp.gaussian_null_taus.cache_clear()  # recompute the null too, not just reuse it
    second = sp.seedprint(base, other, CFG)
    assert first.summary() == second.summary()
    assert np.array_equal(first.paper.taus, second.paper.taus)
    assert np.array_equal(first.released.taus, second.released.taus)
    summary = json.loads(json.dumps(first.summary()))  # recordable as JSON
    assert summary["config"]["n"] == 64 and summary["inputs"] == "tokens" and summary["d_out"] == D
    assert summary["dtype"] == ["torch.float32", "torch.float32"]


@SCIPY_ZERO_VARIANCE
def test_logits_feature_takes_the_hidden_modes_share_of_a_large_vocabulary():
    """`--feature logits` with the hidden mode's m over a vocabulary 64× the width: the same m would
    leave two random top-m sets no common token (the Gaussian null could not be drawn); seedprint
    scales m to m·V/d (algorithm.logits_m), records it, and still finds the model against itself."""
    base = llama(1, d_model=16, vocab_size=1024)
    cfg = sp.SeedPrintConfig(n=48, length=8, m=4, null_trials=3, seed=0, feature="logits")
    assert sp.logits_m(4, 16, 1024) == 256
    res = sp.seedprint(base, base, cfg)
    assert res.info["m"] == 256 and len(res.paper.dims) == 256
    assert res.paper.same_lineage
    hidden = sp.seedprint(base, base, sp.SeedPrintConfig(n=48, length=8, m=4, null_trials=3, seed=0))
    assert hidden.info["m"] == 4  # the hidden feature keeps the given m
