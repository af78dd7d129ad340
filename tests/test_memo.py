"""repro.core.memo: measurements cached by arguments, inputs, dtype policy and code."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from repro.core import memo
from repro.ground.runtime import ReproError


@pytest.fixture
def memo_on(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    monkeypatch.setenv(memo.MEMO_ENV, "1")
    return tmp_path


CALLS: list[tuple] = []


@memo.cached("test-draw")
def draw(n: int, *, scale: float = 1.0, x: torch.Tensor | None = None):
    CALLS.append((n, scale))
    out = torch.rand(n) * scale  # consumes the global RNG, as careless code might
    return {"draw": out, "sum": None if x is None else float(x.sum())}


def test_second_call_is_served_from_the_cache(memo_on):
    CALLS.clear()
    a = draw(3, scale=2.0)
    b = draw(3, scale=2.0)
    assert len(CALLS) == 1 and torch.equal(a["draw"], b["draw"])
    draw(3, scale=3.0)  # another argument: computed
    draw(n=3, scale=2.0)  # the same binding spelled differently: cached
    assert CALLS == [(3, 2.0), (3, 3.0)]


def test_tensor_arguments_are_keyed_by_their_bytes(memo_on):
    CALLS.clear()
    assert draw(2, x=torch.ones(3))["sum"] == 3.0
    assert draw(2, x=torch.full((3,), 2.0))["sum"] == 6.0
    assert len(CALLS) == 2


def test_modules_are_keyed_by_their_state(memo_on):
    a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    with torch.no_grad():
        b.weight.add_(1.0)
    assert memo.keyable(a) != memo.keyable(b)
    assert memo.keyable(a)["class"] == "torch.nn.modules.linear.Linear"


def test_models_are_keyed_by_their_attention_implementation_too():
    from repro.core.models.hf import build_model

    kw = dict(n_layer=1, n_head=2, d_model=16, vocab_size=32, seed=0, n_positions=8)
    eager, sdpa = build_model("llama", **kw), build_model("llama", attn_implementation="sdpa", **kw)
    assert memo.keyable(eager)["state_sha256"] == memo.keyable(sdpa)["state_sha256"]
    assert memo.keyable(eager) != memo.keyable(sdpa)


def test_a_hit_leaves_the_global_rng_where_the_computation_left_it(memo_on):
    torch.manual_seed(0)
    draw(4)
    after_cold = torch.rand(3)
    torch.manual_seed(0)
    draw(4)  # a hit: nothing drawn, the state is restored
    assert torch.equal(torch.rand(3), after_cold)


@memo.cached("test-pure")
def pure(n: int):
    CALLS.append(("pure", n))
    return torch.arange(n, dtype=torch.float32) * 2


def test_a_computation_that_draws_nothing_leaves_the_rng_alone_on_a_hit(memo_on):
    pure(3)
    torch.manual_seed(5)
    want = torch.rand(2)
    torch.manual_seed(5)
    pure(3)  # a hit must not rewind the RNG to the cold call's state
    assert torch.equal(torch.rand(2), want)


def test_modules_with_hooks_are_refused_and_mode_is_keyed():
    m = torch.nn.Linear(2, 2)
    train_key = memo.keyable(m)
    assert memo.keyable(m.eval()) != train_key and train_key["device"] == "cpu"
    h = m.register_forward_hook(lambda *a: None)
    with pytest.raises(ReproError, match="forward hooks"):
        memo.keyable(m)
    h.remove()


def test_transformers_output_capturing_hooks_are_not_refused():
    """transformers leaves inert output-capturing hooks on every layer after a forward pass with
    output_attentions=True (the SF study's capture did this to the shared pretrained models, and
    every memoised SF sweep on them was refused): the key ignores them and stays the same; a
    hook of ours on the same model is still refused (control)."""
    from repro.core.models.hf import build_model

    m = build_model("llama", n_layer=2, n_head=2, d_model=16, vocab_size=32, seed=0)
    before = memo.keyable(m)
    with torch.no_grad():
        m(torch.zeros(1, 4, dtype=torch.long), output_attentions=True)
    assert any(x._forward_hooks for x in m.modules())  # transformers installed its hooks
    assert memo.keyable(m) == before
    h = m.model.layers[0].register_forward_pre_hook(lambda *a: None)
    with pytest.raises(ReproError, match="forward hooks"):
        memo.keyable(m)
    h.remove()


def test_an_unreadable_entry_is_recomputed(memo_on):
    CALLS.clear()
    draw(5)
    for f in (memo_on / "measurements" / "test-draw").glob("*.pkl"):
        f.write_bytes(b"not a pickle")
    draw(5)
    assert len(CALLS) == 2


def test_memo_off_computes_every_time_and_stores_nothing(memo_on, monkeypatch):
    monkeypatch.setenv(memo.MEMO_ENV, "0")
    CALLS.clear()
    draw(6)
    draw(6)
    assert len(CALLS) == 2 and not (memo_on / "measurements").exists()


def test_the_key_names_code_dtype_and_threads():
    d = memo.description(draw.uncached, (1,), {})
    assert d["code"] == memo.code_version() and len(d["code"]) == 64
    assert {"auto_dtype", "autocast", "torch_threads"} <= set(d)
    assert set(d["libraries"]) == {"torch", "transformers", "numpy", "scipy"}
    assert d["arguments"] == {"n": 1, "scale": 1.0, "x": None}


def test_bad_input_is_one_clear_error(memo_on, monkeypatch):
    with pytest.raises(ReproError, match="cannot key an argument of type object"):
        memo.keyable(object())
    monkeypatch.setenv(memo.MEMO_ENV, "yes")
    with pytest.raises(ReproError, match="REPRO_MEMO='yes' is unknown"):
        draw(1)
    assert memo.keyable(np.arange(3)) == memo.keyable(torch.arange(3))


class Keyed:
    def __init__(self, tag):
        self.tag = tag

    def memo_key(self):
        return {"tag": self.tag, "t": torch.ones(2) * self.tag}


def test_objects_say_what_identifies_them():
    assert memo.keyable(Keyed(1)) == memo.keyable(Keyed(1)) != memo.keyable(Keyed(2))


def test_zero_dim_bfloat16_buffers_are_keyable():
    """Gemma's embed_scale is a 0-dim buffer; in a bfloat16 copy of the model it could not be
    hashed (a 0-dim tensor cannot be viewed as bytes), so every memoised sweep on Gemma in bf16
    failed. Its hash is its value's: 25.25 and 25.5 differ, a 1-element copy of the same value
    keeps the shape in the hash (control)."""
    from repro.core.checkpoints import tensor_sha256

    a, b = torch.tensor(25.25, dtype=torch.bfloat16), torch.tensor(25.5, dtype=torch.bfloat16)
    assert tensor_sha256(a) == tensor_sha256(a.clone()) != tensor_sha256(b)
    assert tensor_sha256(a) != tensor_sha256(a.reshape(1))
    m = torch.nn.Linear(2, 2).to(torch.bfloat16)
    m.register_buffer("scale", a)
    assert memo.keyable(m)["buffers"]["scale"]["tensor_sha256"] == tensor_sha256(a)


def test_a_measurement_is_keyed_by_the_packages_it_reaches(tmp_path, monkeypatch):
    """An edit to a topic recomputes that topic and the topics importing it (SeedPrint imports
    BB's probe), and everything on an edit to core; never on an edit to another topic or the
    harness. The negative control: the same edit inside the topic changes its key."""
    copy = tmp_path / "repro"
    shutil.copytree(memo.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(memo, "PACKAGE", copy)

    def keys() -> dict[str, str]:
        memo.code_version.cache_clear()
        memo.packages_reached.cache_clear()
        return {m: memo.code_version(f"repro.{m}.study") for m in ("sinks", "born_biased", "seedprint", "harness")}

    def edit(path: str) -> dict[str, str]:
        with open(copy / path, "a", encoding="utf-8") as f:
            f.write("\n# an edit\n")
        return keys()

    try:
        before = keys()
        assert memo.packages_reached("seedprint") == ("born_biased", "core", "ground", "seedprint")
        after = edit("harness/report.py")
        assert [m for m in before if after[m] != before[m]] == ["harness"]
        before, after = after, edit("sinks/budget.py")
        assert [m for m in before if after[m] != before[m]] == ["sinks", "harness"]
        before, after = after, edit("born_biased/tables.py")
        assert [m for m in before if after[m] != before[m]] == ["born_biased", "seedprint", "harness"]
        before, after = after, edit("context_axis/fused.cpp")  # a kernel's C++ source counts
        assert [m for m in before if after[m] != before[m]] == ["harness"]
        before, after = after, edit("core/stats.py")
        assert all(after[m] != before[m] for m in before)
    finally:
        memo.code_version.cache_clear()
        memo.packages_reached.cache_clear()
