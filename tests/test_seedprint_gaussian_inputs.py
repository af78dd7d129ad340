"""SP-1's two halves on tiny random models: `study.gaussian_pairs` feeds one set of §6.1.1's
Gaussian inputs to every model it names, and on those inputs Algorithm 1 declares two independent
inits one lineage (both residual streams carry the shared input to the last position's hidden
state), while random token sequences, which each model embeds with its own table, do not.

Every draw is seeded, so the p's are fixed numbers; the margins (below) hold for other seeds too:
the Gaussian pair's τ's sit far above the null, the token pair's near 0.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from repro.core.models.hf import build_model
from repro.seedprint import algorithm as sp
from repro.seedprint import study

pytestmark = pytest.mark.usefixtures("one_thread")

CFG = sp.SeedPrintConfig(n=200, length=8, m=16, null_trials=3, seed=0)


@pytest.fixture(scope="module")
def zoo():
    """A stand-in for `study.Zoo`: what `gaussian_pairs` reads (`models`, `lab.device`)."""
    models = {f"init{s}": build_model("llama", seed=s, n_layer=2, n_head=4, d_model=64, vocab_size=256) for s in (1, 2)}
    return SimpleNamespace(models=models, lab=SimpleNamespace(device="cpu"))


def test_gaussian_inputs_make_independent_inits_match(zoo):
    (row,) = study.gaussian_pairs(zoo, CFG, [("init1", "init2", False)])
    assert row["pair"] == "init1 vs init2, Gaussian inputs" and row["same"] is False
    assert row["n_dims"] >= 2 and row["mean_tau"] > 0.2  # null τ's sd at n = 200: ≈ 0.047
    assert max(row["p_t"], row["p_u"]) < sp.ALPHA


def test_token_inputs_keep_independent_inits_apart(zoo):
    r = sp.seedprint(zoo.models["init1"], zoo.models["init2"], dataclasses.replace(CFG, inputs="tokens"))
    assert min(r.paper.p_t, r.paper.p_u) >= sp.ALPHA


def test_gaussian_pairs_run_each_model_once_on_one_input_set(zoo, monkeypatch):
    seen = []
    real = sp.responses

    def spy(model, inputs, **kw):
        seen.append((id(model), inputs.data_ptr()))
        return real(model, inputs, **kw)

    monkeypatch.setattr(sp, "responses", spy)
    rows = study.gaussian_pairs(zoo, CFG, [("init1", "init2", False), ("init2", "init1", False)])
    assert len(seen) == 2 and len({ptr for _, ptr in seen}) == 1  # two models, one input set
    assert [r["pair"] for r in rows] == ["init1 vs init2, Gaussian inputs", "init2 vs init1, Gaussian inputs"]
