"""repro.residual_stream.induction: repeated-token data, masks, the induction loss, and the training glue."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from repro.ground.runtime import ReproError, generator
from repro.residual_stream import induction

pytestmark = pytest.mark.usefixtures("one_thread")

SIZES = dict(seq_len=24, vocab_size=32, min_repeat=3, max_repeat=8)


def data(n_seq: int = 64, seed: int = 0, **kw) -> induction.RepeatedTokens:
    sizes = {**SIZES, **kw}
    return induction.repeated_tokens(
        n_seq, sizes["seq_len"], sizes["vocab_size"], sizes["min_repeat"], sizes["max_repeat"], generator(seed)
    )


def test_shapes_and_determinism():
    d = data()
    assert d.tokens.shape == (64, 25) and d.repeat.shape == d.first.shape == (64, 24)
    assert d.repeat.dtype == d.first.dtype == torch.bool
    assert int(d.tokens.min()) >= 0 and int(d.tokens.max()) < 32
    assert torch.equal(d.tokens, data().tokens) and torch.equal(d.repeat, data().repeat)
    assert not torch.equal(d.tokens, data(seed=1).tokens)
    assert 3 <= int(d.period.min()) and int(d.period.max()) <= 8
    assert bool((d.start + 2 * d.period <= 25).all())


def test_structure_varies_per_sequence():
    # a fixed period or place would let one layer solve the task by position: both must vary
    d = data(n_seq=256)
    assert len(d.period.unique()) == 6 and len(d.start.unique()) > 10


def test_second_copy_equals_first_and_fresh_tokens_are_distinct():
    d = data()
    for row, p, n in zip(d.tokens, d.start.tolist(), d.period.tolist()):
        assert torch.equal(row[p + n : p + 2 * n], row[p : p + n])
        fresh = torch.cat([row[: p + n], row[p + 2 * n :]])
        assert len(fresh.unique()) == len(fresh)


def test_masks_mark_exactly_the_predictable_targets():
    """Brute force: target t + 1 is predictable by induction iff some earlier i < t has
    x_i = x_t and x_{i+1} = x_{t+1}; the first-copy mask covers r's targets."""
    d = data()
    for row, rep, first, p, n in zip(d.tokens, d.repeat, d.first, d.start.tolist(), d.period.tolist()):
        x = row.tolist()
        brute = [any(x[i] == x[t] and x[i + 1] == x[t + 1] for i in range(t)) for t in range(24)]
        assert rep.tolist() == brute
        assert int(rep.sum()) == n - 1  # r[1:] of the second copy
        assert [t + 1 for t in range(24) if first[t]] == [j for j in range(p, p + n) if j >= 1]


@pytest.mark.parametrize(
    "bad",
    [
        dict(min_repeat=5, max_repeat=4),
        dict(min_repeat=1, max_repeat=4),
        dict(max_repeat=13),  # 2n > seq_len + 1
        dict(vocab_size=10),  # fresh tokens cannot all be distinct
        dict(n_seq=0),
    ],
)
def test_bad_sizes_are_clear_errors(bad):
    with pytest.raises(ReproError):
        data(**bad)
    sizes = {**SIZES, **bad}
    sizes["n_eval_seq"] = sizes.pop("n_seq", 1)
    with pytest.raises(ReproError):
        induction.InductionConfig(**sizes)


class OracleInduction(nn.Module):
    """Logit `strength` on the token that followed the current token's earlier occurrence,
    0 elsewhere: exact induction with a known confidence."""

    def __init__(self, vocab_size: int, strength: float):
        super().__init__()
        self.V, self.strength = vocab_size, strength
        self.dummy = nn.Parameter(torch.zeros(()))

    def forward(self, input_ids):
        B, T = input_ids.shape
        logits = torch.zeros(B, T, self.V)
        for b in range(B):
            x = input_ids[b].tolist()
            for t in range(T):
                hits = [i + 1 for i in range(t) if x[i] == x[t] and i + 1 < T]
                if hits:
                    logits[b, t, x[hits[0]]] = self.strength
        return type("Out", (), {"logits": logits})()


def test_induction_loss_by_hand():
    d = data(n_seq=16)
    s = 5.0
    loss = induction.induction_loss(OracleInduction(32, s), d, batch_size=5)
    assert loss.repeat == pytest.approx(-math.log(math.exp(s) / (math.exp(s) + 31)), rel=1e-5)
    assert loss.first == pytest.approx(math.log(32), rel=1e-5)  # fresh tokens: no earlier occurrence
    uniform = induction.induction_loss(OracleInduction(32, 0.0), d)
    assert uniform.repeat == pytest.approx(math.log(32)) and uniform.first == pytest.approx(math.log(32))


def test_context_copy_loss_by_hand():
    # [a b c a b]: at t = 3 (x_t = a) the target b is predictable; 3 distinct tokens seen
    tokens = torch.tensor([[0, 1, 2, 0, 1]])
    repeat = torch.tensor([[False, False, False, True]])
    first = torch.tensor([[True, True, False, False]])
    d = induction.RepeatedTokens(tokens, repeat, first, torch.tensor([0]), torch.tensor([3]))
    assert induction.context_copy_loss(d) == pytest.approx(math.log(3))


def test_malformed_data_is_a_clear_error():
    d = data(n_seq=4)
    with pytest.raises(ReproError, match="masks"):
        induction.induction_loss(
            OracleInduction(32, 1.0), induction.RepeatedTokens(d.tokens, d.repeat[:, 1:], d.first, d.start, d.period)
        )
    with pytest.raises(ReproError, match="mark some"):
        induction.context_copy_loss(
            induction.RepeatedTokens(d.tokens, torch.zeros_like(d.repeat), d.first, d.start, d.period)
        )


def test_models_differ_only_in_depth():
    cfg = induction.InductionConfig()
    one, two = induction.build_model(cfg, 1, 0), induction.build_model(cfg, 2, 0)
    assert one.config.block == two.config.block == "attn"
    assert (one.config.n_layer, two.config.n_layer) == (1, 2)
    assert one.config.merged(n_layer=2) == two.config
    assert induction.build_model(cfg, 2, 0).state_dict().keys() == two.state_dict().keys()
    w = induction.build_model(cfg, 2, 0).state_dict()
    assert all(torch.equal(w[k], v) for k, v in two.state_dict().items())  # seeded


def test_train_config_draws_whole_sequences():
    cfg = induction.InductionConfig(steps=250, curve_every=100)
    tc = induction.train_config(cfg, seed=3)
    assert tc.window_align == cfg.seq_len + 1 and tc.model_seed == 3
    assert tc.snapshot_steps == (0, 100, 200, 250)
    assert induction.train_stream(cfg).numel() == cfg.n_train_seq * (cfg.seq_len + 1)


def test_train_induction_smoke(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    cfg = induction.InductionConfig(
        **SIZES,
        n_train_seq=64,
        n_eval_seq=16,
        d_model=16,
        n_head=2,
        steps=4,
        batch_size=8,
        warmup_steps=1,
        curve_every=2,
    )
    run = induction.train_induction(cfg, 2, seed=0)
    assert run.trained and [s for s, _ in run.curve] == [0, 2, 4]
    assert run.curve[-1][1] == run.final and math.isfinite(run.final.repeat)
    again = induction.train_induction(cfg, 2, seed=0)
    assert not again.trained and again.final == run.final and again.curve == run.curve
    with pytest.raises(ReproError):
        induction.train_induction(cfg, 0, seed=0)
