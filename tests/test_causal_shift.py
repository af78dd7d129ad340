"""repro.causal_shift.experiments and the tied-dictionary lens (000): the lens on a hand-built model whose
answer is known, switch-layer estimation, the residual gate (uniform at init, sums to one,
α = 1 is the unmodified model exactly, a fixed cut is y − (1 − α)x), and the evaluators."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from repro.causal_shift import experiments as cs
from repro.core import activations, tied_decoding, train
from repro.core.models.hf import build_model
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.core.readings import ALL_CHECKS
from repro.ground.runtime import ReproError, generator

pytestmark = pytest.mark.usefixtures("one_thread")


# --------------------------------------------------------------------------- the lens on a known model


def test_nearest_tokens_and_measures_by_hand():
    D = torch.eye(6, 4)[:6]  # rows 4, 5 are zero → never nearest
    D[4] = torch.tensor([1.0, 1.0, 0, 0])
    h = torch.tensor([[2.0, 0.1, 0, 0], [0, 0, 0, -1.0]])
    top = tied_decoding.nearest_tokens(h, D, k=2, metric="cosine")
    assert top[0, 0] == 0 and top[0, 1] == 4  # cosine: e0 first, then (e0+e1)/√2
    dot = tied_decoding.nearest_tokens(h, D, k=2)  # the logit lens: largest ⟨h, e_v⟩
    assert dot[0].tolist() == [4, 0]  # ⟨h, e0 + e1⟩ = 2.1 > ⟨h, e0⟩ = 2
    with pytest.raises(ReproError, match="metric"):
        tied_decoding.nearest_tokens(h, D, metric="euclid")
    assert tied_decoding.top_k_match(top, torch.tensor([4, 3])).tolist() == [True, False]
    c = tied_decoding.cosine_to(h, D, torch.tensor([0, 3]))
    assert c[0] > 0.99 and math.isclose(float(c[1]), -1.0, rel_tol=1e-6)
    # projection: 0 at the input embedding, 1 at the output's, 0.5 half way
    e_in, e_out = D[[0, 0, 0]], D[[1, 1, 1]]
    hs = torch.stack([D[0], D[1], (D[0] + D[1]) / 2])
    t = tied_decoding.axis_projection(hs, e_in, e_out)
    assert torch.allclose(t, torch.tensor([0.0, 1.0, 0.5]), atol=1e-6)
    assert torch.isnan(tied_decoding.axis_projection(D[:1], D[:1], D[:1])).all()  # input = output token


def test_alignment_profile_on_a_model_whose_answer_is_known():
    """Embeddings E = I, tied; block 0 adds nothing; block 1 adds 3·e_{t+1} at every position
    (the next token of the sequence 0, 1, 2, …). Layers 0 and 1 decode to the input, layer 2 to
    the target; the switch lies between layers 1 and 2."""
    V = d = 16
    tc = TinyConfig(
        vocab_size=V,
        d_model=d,
        n_layer=2,
        n_head=1,
        block="attn",
        positions="none",
        norm="none",
        final_norm=False,
        bias=False,
        tie_embeddings=True,
        max_len=32,
    )
    m = TinyDecoder(tc, generator(0))
    shift = torch.roll(torch.eye(d), 1, dims=0)  # row convention: e_i @ shift.T = e_{i+1}
    with torch.no_grad():
        m.wte.weight.copy_(torch.eye(V, d))
        for p in m.parameters():
            if p is not m.wte.weight:
                p.zero_()
    # all block weights are zero, so both blocks add nothing; a hook makes block 1 write the
    # next token exactly, so the expected answer is unambiguous (the lens is under test)
    ids = torch.arange(12).remainder(V).unsqueeze(0).repeat(3, 1)

    def write_next(_mod, args, out):
        x = args[0]
        return (x + 3 * x @ shift.T, *out[1:])

    h = m.blocks[1].register_forward_hook(write_next)
    try:
        p = cs.alignment_profile(m, ids, k=1, skip_first=1)
    finally:
        h.remove()
    assert p.input_match[:, 0].eq(1).all() and p.input_match[:, 1].eq(1).all()
    assert p.target_match[:, 2].eq(1).all() and p.target_match[:, :2].eq(0).all()
    s = cs.switch_layers(p)
    assert 1 < s["match"] <= 2 and 1 < s["projection"] <= 2
    # the lens projection σ(z_out − z_in), E = I untied-free and no norm: h = e → σ(0 − 1);
    # h = e + 3e' → σ(3 − 1)
    assert p.mean("projection")[0] == pytest.approx(1 / (1 + math.e), abs=1e-6)
    assert p.mean("projection")[2] == pytest.approx(1 / (1 + math.exp(-2)), abs=1e-5)
    assert p.mean("unit_projection")[0] == pytest.approx(0.0, abs=1e-6)
    # ĥ = (e + 3e')/√10: t = ⟨ĥ − e, e' − e⟩ / 2 = (1 + 2/√10) / 2
    assert p.mean("unit_projection")[2] == pytest.approx((1 + 2 / math.sqrt(10)) / 2, abs=1e-5)


def test_alignment_profile_rejects_untied():
    m = build_model("llama", n_layer=1, n_head=2, d_model=16, vocab_size=50, seed=0)
    m.lm_head.weight = torch.nn.Parameter(m.lm_head.weight.detach().clone() + 1.0)
    with pytest.raises(ReproError, match="does not tie"):
        cs.alignment_profile(m, torch.randint(0, 50, (2, 6)))


@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=12))
def test_crossing_finds_sign_change(xs):
    a = np.zeros(len(xs))
    b = np.array(xs)
    c = cs.crossing(a, b)
    if math.isnan(c):
        neg = np.nonzero(b < 0)[0]
        assert neg.size == 0 or (b[neg[0] :] < 0).all()
    else:
        l = int(math.floor(c))
        assert b[l] < 0 <= b[min(l + 1, len(b) - 1)] or c == l
        assert (b[: l + 1] < 0).any()


def test_crossing_interpolates():
    assert cs.crossing(np.array([1.0, 1.0, 1.0]), np.array([0.0, 0.5, 2.0])) == pytest.approx(1 + 0.5 / 1.5)
    assert cs.level_crossing(np.array([0.0, 0.4, 0.6, 1.0])) == pytest.approx(1.5)


# --------------------------------------------------------------------------- the gate


def _tiny(seed=0, n_layer=3):
    tc = cs.gpt2_style(vocab_size=40, d_model=16, n_layer=n_layer, n_head=2, max_len=16)
    return TinyDecoder(tc, generator(seed))


def test_gate_alpha_one_is_the_unmodified_model():
    ids = torch.randint(0, 40, (2, 10), generator=generator(1))
    ref = _tiny()
    with torch.no_grad():
        want = ref(ids).logits
    for variant in (
        cs.Variant("none"),
        cs.Variant("cut", "cut", layer=1, alpha=1.0),
        cs.Variant("all", "all", alpha=1.0),
    ):
        m = variant.gate(3).attach(_tiny())
        with torch.no_grad():
            assert torch.equal(m(ids).logits, want), variant


def test_fixed_cut_rewrites_one_block():
    m = _tiny()
    ids = torch.randint(0, 40, (2, 10), generator=generator(2))
    with torch.no_grad():
        plain = activations.capture(m, ids, modules=[]).residual
    cs.ResidualGate(3, "cut", layer=1, alpha=0.25).attach(m)
    with torch.no_grad():
        cut = activations.capture(m, ids, modules=[]).residual
    assert torch.equal(cut[:, :2], plain[:, :2])  # blocks before the cut untouched
    block1 = m.blocks[1]
    with torch.no_grad():
        y, _ = block1(plain[:, 1], None)  # hook applied: α·x + F(x)
    m.residual_gate.detach_hooks()
    with torch.no_grad():
        y0, _ = block1(plain[:, 1], None)
    assert torch.allclose(y, y0 - 0.75 * plain[:, 1], atol=1e-6)
    assert torch.allclose(cut[:, 2], y, atol=1e-6)


def test_learned_gate_is_uniform_at_init_and_a_distribution():
    g = cs.ResidualGate(5, "learned", alpha=0.5)
    pi = g.distribution()
    assert torch.allclose(pi, torch.full((5,), 0.2)) and math.isclose(float(pi.sum()), 1.0)
    assert torch.allclose(g.alphas().detach(), torch.full((5,), 0.9))
    with torch.no_grad():
        g.logits.copy_(torch.tensor([0.0, 0, 0, 50.0, 0]))
    assert math.isclose(float(g.distribution().sum()), 1.0, rel_tol=1e-6)
    assert float(g.alphas().detach()[3]) == pytest.approx(0.5, abs=1e-6)  # one-hot limit = the fixed cut


def test_learned_gate_trains_with_the_model():
    m = cs.Variant("g", "learned").gate(3).attach(_tiny())
    ids = torch.randint(0, 40, (4, 12), generator=generator(3))
    out = m(ids[:, :-1])
    loss = torch.nn.functional.cross_entropy(out.logits.flatten(0, 1), ids[:, 1:].flatten())
    loss.backward()
    assert m.residual_gate.logits.grad is not None and m.residual_gate.logits.grad.abs().sum() > 0
    assert "residual_gate.logits" in m.state_dict()


def test_gate_errors():
    with pytest.raises(ReproError, match="mode"):
        cs.ResidualGate(3, "sometimes")
    with pytest.raises(ReproError, match="layer"):
        cs.ResidualGate(3, "cut", layer=3)
    with pytest.raises(ReproError, match="α"):
        cs.ResidualGate(3, "all", alpha=1.5)
    with pytest.raises(ReproError, match="attached to a model"):
        cs.ResidualGate(4, "all").attach(_tiny(n_layer=3))


def test_gate_on_hf_model_alpha_one_is_exact():
    m = build_model("gpt2", n_layer=2, n_head=2, d_model=16, vocab_size=50, seed=0)
    ids = torch.randint(0, 50, (2, 8), generator=generator(4))
    with torch.no_grad():
        want = m(ids).logits
    cs.ResidualGate(2, "all", alpha=1.0).attach(m)
    with torch.no_grad():
        assert torch.equal(m(ids).logits, want)
    cs.ResidualGate(2, "cut", layer=0, alpha=0.0).attach(m)  # replaces the previous gate
    with torch.no_grad():
        cut = m(ids).logits
    assert not torch.allclose(cut, want)
    cs.ResidualGate(2, "all", alpha=1.0).attach(m)  # …and is itself replaced, not stacked
    with torch.no_grad():
        assert torch.equal(m(ids).logits, want)
    assert sum(len(b._forward_hooks) for b in m.transformer.h) == 2


def test_gate_refuses_blocks_it_would_miscompute():
    tc = cs.gpt2_style(vocab_size=40, d_model=16, n_layer=2, n_head=2, max_len=16, norm_position="post")
    with pytest.raises(ReproError, match="pre-norm"):
        cs.ResidualGate(2, "all").attach(TinyDecoder(tc, generator(0)))


# --------------------------------------------------------------------------- evaluators and training


def test_loss_and_accuracy_and_last_word():
    m = _tiny()
    w = torch.randint(0, 40, (5, 9), generator=generator(5))
    loss, acc = cs.loss_and_accuracy(m, w, batch=2)
    with torch.no_grad():
        logits = m(w[:, :-1]).logits
    ref = torch.nn.functional.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten())
    assert loss == pytest.approx(float(ref), rel=1e-5)
    assert acc == pytest.approx(float((logits.argmax(-1) == w[:, 1:]).float().mean()))
    # last word: an item whose target is the model's own greedy continuation scores 1
    ctx = [1, 2, 3]
    with torch.no_grad():
        nxt = int(m(torch.tensor([ctx])).logits[0, -1].argmax())
    acc, nll = cs.last_word_scores(m, [(ctx, [nxt])])
    with torch.no_grad():
        ref = -float(m(torch.tensor([ctx])).logits[0, -1].log_softmax(-1)[nxt])
    assert acc == 1.0 and nll == pytest.approx(ref, rel=1e-5)
    assert cs.last_word_scores(m, [(ctx, [(nxt + 1) % 40])])[0] == 0.0
    with pytest.raises(ReproError):
        cs.last_word_scores(m, [])


def test_last_word_items():
    class Tok:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [len(w) for w in text.split()]}

    items = cs.last_word_items(
        Tok(), ["one two three four five six seven eight. too short. a b c d e f g h9"], min_words=8
    )
    assert items == [([3, 3, 5, 4, 4, 3, 5], [5])]


def test_variant_key_differs_and_gate_history(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    tc = cs.gpt2_style(vocab_size=40, d_model=16, n_layer=2, n_head=2, max_len=16)
    cfg = train.TrainConfig(
        steps=4, batch_size=2, seq_len=8, eval_every=4, eval_batches=1, warmup_steps=0, snapshot_steps=(0, 4)
    )
    tokens = torch.randint(0, 40, (400,), generator=generator(6))
    a = cs.train_variant(tc, cfg, cs.Variant("base"), 0, train_tokens=tokens, val_tokens=tokens)
    b = cs.train_variant(tc, cfg, cs.Variant("gate", "learned"), 0, train_tokens=tokens, val_tokens=tokens)
    assert a.key != b.key
    hist = cs.gate_history(b, tc, cs.Variant("gate", "learned"))
    assert sorted(hist) == [0, 4]
    assert np.allclose(hist[0], 0.5) and math.isclose(float(hist[4].sum()), 1.0, rel_tol=1e-6)


def test_order_power_grows_with_seeds_and_vanishes_without_gains():
    """CS-6's power (power.order_power): more seeds per variant shrink the noise and raise it to
    80% at a finite count; with no gains the order of three ties shows by chance only (≈ 1/6 per
    benchmark, so ≈ (1/6)³ on three)."""
    import numpy as np

    from repro.causal_shift import power
    from repro.core import stats

    base, higher, sd = np.array([20.0, 15.0, 6.5]), np.array([True, True, False]), np.array([0.3, 0.4, 0.02])
    gains = (0.0058, 0.0083)
    one = power.order_power(base, higher, sd, gains)
    assert one == power.order_power(base, higher, sd, gains)  # a fixed generator: the same every run
    assert (
        one
        < power.order_power(base, higher, sd, gains, seeds=16)
        < power.order_power(base, higher, sd, gains, seeds=256)
    )
    n80 = stats.n_for_power(lambda n: power.order_power(base, higher, sd, gains, seeds=n, draws=4_000), n_max=4096)
    assert n80 is not None and power.order_power(base, higher, sd, gains, seeds=n80, draws=4_000) >= 0.8
    assert power.order_power(base, higher, sd, (0.0, 0.0), seeds=64) < 0.02


def test_gate_power_by_hand():
    """CS-5's power at our budget: a line through (0, 1/L) fitted to the largest π by hand, its
    prediction at our last step, and the steps at which it clears the bar with 80%."""
    from repro.causal_shift import power

    steps = (0, 100, 200, 300)
    wobble = {0: 0.0, 100: 0.002, 200: -0.002, 300: 0.001}
    hist = {s: np.array([0.25 + 1e-4 * s + wobble[s], 0.25, 0.25, 0.25 - 1e-4 * s - wobble[s]]) for s in steps}
    gp = power.gate_power(hist, bar=0.5)
    x = np.array([100.0, 200, 300])
    d = 1e-4 * x + np.array([0.002, -0.002, 0.001])
    slope = float((x * d).sum() / (x * x).sum())
    noise = float(np.sqrt(((d - slope * x) ** 2).sum() / 2))
    assert gp.trend_per_step == pytest.approx(slope) and gp.noise_sd == pytest.approx(noise)
    assert gp.trend_se == pytest.approx(noise / math.sqrt((x * x).sum())) and gp.df == 2 and gp.steps == 300
    assert gp.expected == pytest.approx(0.25 + slope * 300)
    assert gp.power < 1e-3  # 0.28 predicted against the bar 0.5
    # at steps_80 the prediction clears the bar with 80%, one step earlier it does not
    assert gp.power_at(gp.steps_80, 0.5) >= 0.8 > gp.power_at(gp.steps_80 - 1, 0.5)
    assert 0.25 / slope < gp.steps_80 < 2 * 0.25 / slope
    # power grows with the steps towards P(T ≤ slope / se): a gate whose largest π rose once and
    # fell back (slope 0.8 se, df 2: ≈ 0.75) never reaches 80%
    back = {0: 0.0, 100: 0.004, 200: 0.001, 300: 0.0005}
    flat = {s: np.array([0.25 + back[s], 0.25, 0.25, 0.25 - back[s]]) for s in steps}
    assert power.gate_power(flat, bar=0.5).steps_80 == math.inf
    with pytest.raises(ReproError, match="two snapshots"):
        power.gate_power({0: np.full(4, 0.25), 100: np.full(4, 0.25)}, bar=0.5)


def test_measures_power_by_hand():
    """CS-2's power: the product of the three checks' normal powers at the declared effects with the
    se of the per-sequence excess over the twin; p one-sided over sequences."""
    from repro.causal_shift import power
    from repro.core import stats

    ours = {
        "proj": np.array([0.3, 0.32, 0.28, 0.31]),
        "falls": np.array([0.0, 0.02, -0.01, 0.01]),
        "rises": np.array([0.1, 0.12, 0.09, 0.11]),
    }
    null = {k: np.zeros(4) for k in ours}
    effects, bars = {"proj": 0.5, "falls": 0.1, "rises": 0.1}, {"proj": 0.1, "falls": 0.05, "rises": 0.05}
    mp = power.measures_power(ours, null, effects, bars)
    se = {k: float(np.std(v, ddof=1) / 2) for k, v in ours.items()}
    assert mp.se == pytest.approx(se) and mp.n_seq == 4
    want = np.prod([stats.power_threshold(effects[k], bars[k], se[k]) for k in ours])
    assert mp.power == pytest.approx(want)
    assert mp.p["proj"] < 0.01 and mp.p["falls"] > 0.05
    assert mp.n_80 is not None and mp.n_80 <= 4


def test_table2_rows_order_the_benchmarks_as_table_ii():
    """CS-6's rows (study.table2_rows): accuracies in %, higher is better; the last-word NLL lower
    is better; the order holds where gating ≥ fixed cut ≥ baseline."""
    from repro.causal_shift import study

    res = {
        name: {
            "brown": (3.0 - i, 0.1 + 0.01 * i),
            "code": (4.0, 0.2 - 0.01 * i),
            "last_word": 0.0,
            "last_word_nll": 5 - i,
        }
        for i, name in enumerate(("baseline", "fixed cut (layer 0)", "gating"))
    }
    rows = study.table2_rows(res, 7, "Brown")
    assert rows.names == list(res) and rows.n_items == 7
    assert rows.acc[0][0] == "Brown test (acc %)" and rows.acc[0][1:] == pytest.approx([10.0, 11.0, 12.0])
    assert rows.holds() == [True, False, True]
    assert rows.bars()[1][0] == "stdlib code" and len(rows.table()) == 2 + 1 + 3


def test_trajectory_gap_reads_the_paired_gap_at_the_last_step():
    """CS-4/CS-6's budget model: the line through the last half of two runs' per-step training-loss
    difference, at the last step, with its standard error; a known gap is found within its se."""
    from repro.causal_shift import power

    g = np.random.default_rng(0)
    steps = np.arange(300)
    base = 8.0 - 0.01 * steps + g.normal(0, 0.05, 300)
    # the cut pulls ahead linearly: −0.02 at step 150, −0.05 at the last step, plus paired noise
    cut = base - 0.02 - 0.03 * np.clip(steps - 150, 0, None) / 149 + g.normal(0, 0.01, 300)
    gap, se = power.trajectory_gap(base.tolist(), cut.tolist())
    assert 0 < se < 0.005 and abs(gap - (-0.05)) < 3 * se
    with pytest.raises(ReproError, match="per-step losses"):
        power.trajectory_gap([1.0, 2.0], [1.0, 2.0])


def test_cut_budget_power_is_a_budget_declaration_that_grows_with_the_gain():
    """CS-4 at our budget: the gain our trajectories show, its uncertainty averaged over; no gain,
    the test's level and no seed count; a larger gain, more power and a finite 80% size."""
    from repro.causal_shift import power
    from repro.harness.claim import Claim

    diff = np.array([-0.02, 0.01, -0.005])
    none = power.cut_budget_power(diff, [(0.001, 0.002), (-0.001, 0.002), (0.0, 0.002)], 307_200)
    big = power.cut_budget_power(diff, [(-0.2, 0.002), (-0.21, 0.002), (-0.19, 0.002)], 307_200)
    inspect.signature(Claim.power).bind(object(), big)
    assert none.basis.startswith("budget:") and none.value < 0.1 and none.fitted and none.sd == "upper bound"
    assert none.covers == (ALL_CHECKS,) and "no number of seeds" in none.decide
    assert big.value > none.value and big.decide.endswith("paired seeds at this budget")
    assert power.expected_power(lambda e: e * e, 0.3, 1.0) == pytest.approx(0.3**2 + 1.0, rel=0.01)  # E[δ²]


def test_placement_powers_grow_with_seeds_and_bind_as_claim_power():
    """CS-4's placement half: the blocked F and the last-cut intersection–union powers at Table
    II's gain, against the seed × layer noise at its upper bound; more seeds of the same noise give
    more power, and the 80% sizes are where the power crosses 0.8."""
    from repro.causal_shift import power
    from repro.harness.claim import Claim

    g = np.random.default_rng(0)
    few, many = (6.0 + 0.02 * g.normal(size=(n, 4)) for n in (3, 40))
    for fn in (power.placement_power, power.last_cut_power):
        a, b = fn(few, 6.0, 0.006), fn(many, 6.0, 0.006)
        inspect.signature(Claim.power).bind(object(), a)
        assert a.basis.startswith("interest:") and a.effect_value == pytest.approx(0.036)
        assert a.value < b.value <= 1.0 and a.sd == "upper bound" and not a.fitted
        n80 = int(b.decide.split()[0])
        assert n80 > 3
    # placement: the declared span is our reading's bar (edge 0, size 1 − power); the last cut's
    # margin is not ("second best" names none): its size is taken at no margin, ≥ 1 − α
    place, last = power.placement_power(many, 6.0, 0.006), power.last_cut_power(many, 6.0, 0.006)
    assert place.edge == 0.0 and place.size is None and place.covers == (power.PLACEMENT_CHECK,)
    assert last.edge == pytest.approx(0.036) and last.size == pytest.approx(0.95, abs=1e-6)


def test_cut_power_covers_both_checks_and_states_its_size_at_no_gain():
    """CS-4's first-layer power: a rejection of the one-sided paired t implies a negative mean, so
    the power covers both checks; the claim's edge is no gain, where the test rejects with α: the
    stated size is 1 − α (never contradicted by a miss), and the sd is this run's (plug-in)."""
    from repro.causal_shift import power

    p = power.cut_power(np.array([-0.02, 0.01, -0.005]), 6.0, 0.006)
    assert p.covers == (ALL_CHECKS,) and p.basis.startswith("source:") and p.sd == "plug-in"
    assert p.edge == pytest.approx(0.036) and p.size == pytest.approx(0.95, abs=1e-6)


def test_late_layer_names_a_layer_only_where_half_the_mass_sits():
    """CS-5's layer check: the 1-based layer over L where at least half of π sits, 0 where none
    does, so a null gate that has not concentrated cannot pass it by where its noise peaks."""
    from repro.causal_shift import study

    assert study.late_layer(np.array([0.03, 0.10, 0.75, 0.12]), 0.5) == 0.75
    assert study.late_layer(np.array([0.95, 0.01, 0.01, 0.03]), 0.5) == 0.25
    assert study.late_layer(np.array([0.2, 0.2, 0.2, 0.4]), 0.5) == 0.0  # peaks late, not concentrated
