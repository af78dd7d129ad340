"""repro.sinks.experiments (001 §4.4 Eq 2, §6.2): the sink metric on hand-built attention maps with known
answers, Eq 2's variance scaling on random values, and the positional-scaling attention keeps
causality (changing a future token never changes an earlier output) through the fused and the
eager path, under a KV cache, on Llama and GPT-2; registering the function without its mask
function is shown to lose causality, which is why `register` adds both."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.core.models.hf import attn_implementation, build_model
from repro.core.stats import PositionStd, loglog_slope, std_by_position
from repro.ground.runtime import ReproError, generator
from repro.sinks import experiments as sinks
from repro.sinks import init_std

pytestmark = pytest.mark.usefixtures("one_thread")


def uniform_causal(T: int) -> torch.Tensor:
    """A[i, j] = 1/(i+1) for j ≤ i: the init regime of Eq 2."""
    i = torch.arange(T)
    return torch.tril(torch.ones(T, T)) / (i + 1)[:, None]


# --------------------------------------------------------------------------- the metric


def test_importance_of_uniform_causal_attention_is_harmonic_over_T():
    A = uniform_causal(4)
    h4 = 1 + 1 / 2 + 1 / 3 + 1 / 4
    for form in sinks.FORMS:  # for the first token both forms are (1/T)·Σ_i A[i, 0]
        assert sinks.importance(A, 0, form).item() == pytest.approx(h4 / 4)
    assert sinks.expected_uniform_importance(4) == pytest.approx(h4 / 4)
    # key 1 (the source's token 2): queries 1..3 see it; the source divides by T, Gu by T − k
    tail = 1 / 2 + 1 / 3 + 1 / 4
    assert sinks.importance(A, 1, "source").item() == pytest.approx(tail / 4)
    assert sinks.importance(A, 1, "gu").item() == pytest.approx(tail / 3)


def test_importance_per_head_and_rates():
    T = 8
    sink = torch.zeros(T, T)
    sink[:, 0] = 1.0  # every query on the first token
    half = uniform_causal(T) * 0.5
    half[:, 0] += 0.5  # half the mass on token 0, the rest uniform
    maps = torch.stack([torch.stack([sink, uniform_causal(T)]), torch.stack([half, uniform_causal(T)])])  # (L=2, H=2)
    alpha = sinks.importance(maps, 0, "source")
    assert alpha.shape == (2, 2)
    assert alpha[0, 0] == pytest.approx(1.0)
    assert alpha[1, 0] == pytest.approx(0.5 + 0.5 * sinks.expected_uniform_importance(T))
    assert alpha[0, 1] == pytest.approx(sinks.expected_uniform_importance(T))  # 0.34 at T = 8
    assert sinks.sink_rate(alpha, 0.25).item() == pytest.approx(1.0)  # uniform at T = 8 is above 0.25 too
    assert sinks.sink_rate(alpha, 0.5).item() == pytest.approx(0.5)
    assert sinks.sink_rate(alpha, 0.5, per_layer=True).tolist() == pytest.approx([0.5, 0.5])


def test_threshold_is_strict():
    alpha = torch.tensor([[0.3, 0.2], [0.31, 0.1]])
    assert sinks.sink_rate(alpha, 0.3).item() == pytest.approx(0.25)  # 0.3 is not > 0.3
    assert sinks.sink_rate(alpha, 0.25).item() == pytest.approx(0.5)


def test_metric_rejects_bad_input():
    with pytest.raises(ReproError, match="form"):
        sinks.importance(uniform_causal(4), 0, "mean")
    with pytest.raises(ReproError, match=r"\(T, T\)"):
        sinks.importance(torch.ones(3, 4), 0)
    with pytest.raises(ReproError, match="outside"):
        sinks.importance(uniform_causal(4), 4)


# --------------------------------------------------------------------------- Eq 2 on random values


def test_position_scale_values():
    i = torch.arange(1, 5)
    assert sinks.position_scale("baseline", i).tolist() == [1, 1, 1, 1]
    assert sinks.position_scale("amplification", i).tolist() == pytest.approx([1, math.sqrt(2), math.sqrt(3), 2])
    assert sinks.position_scale("attenuation", i, 4).tolist() == pytest.approx(
        [0.5, math.sqrt(0.5), math.sqrt(0.75), 1]
    )
    with pytest.raises(ReproError, match="context length"):
        sinks.position_scale("attenuation", i)
    with pytest.raises(ReproError, match="unknown positional scaling"):
        sinks.position_scale("sqrt", i)


@given(T=st.integers(8, 48), seed=st.integers(0, 2**16))
@settings(max_examples=10, deadline=None)
def test_eq2_variance_decay_and_its_corrections_on_random_values(T, seed):
    """o_i = (1/i)·Σ_{j≤i} v_j with i.i.d. unit-variance v: Var o_i = 1/i (Eq 2); √i makes it
    1, √(i/T) makes it 1/T, at every position. n = 4,000 sequences × 8 channels: the relative
    standard error of a variance estimate is √(2/32,000) ≈ 0.8%, so 5% is > 6 s.e."""
    v = torch.randn(4000, T, 8, generator=generator(seed), dtype=torch.float64)
    o = torch.einsum("ij,njd->nid", uniform_causal(T).double(), v)
    i = torch.arange(1, T + 1)
    var = o.var(dim=(0, 2))
    assert torch.allclose(var * i, torch.ones(T, dtype=torch.float64), rtol=0.05)
    amp = (o * sinks.position_scale("amplification", i).double()[None, :, None]).var(dim=(0, 2))
    att = (o * sinks.position_scale("attenuation", i, T).double()[None, :, None]).var(dim=(0, 2))
    assert torch.allclose(amp, torch.ones(T, dtype=torch.float64), rtol=0.05)
    assert torch.allclose(att * T, torch.ones(T, dtype=torch.float64), rtol=0.05)
    # and the log-log slope reads −½ and 0 (std, so half the variance's exponent)
    assert loglog_slope(i, std_by_position(o)).slope == pytest.approx(-0.5, abs=0.03)
    # accumulated over batches of sequences: the same std as one pass (and as torch.std)
    acc = PositionStd()
    for part in o.split(700):
        acc.add(part)
    assert torch.allclose(acc.std(), o.transpose(0, 1).reshape(T, -1).std(dim=1), rtol=1e-10)
    assert loglog_slope(i, var.sqrt() * i.sqrt()).slope == pytest.approx(0.0, abs=0.03)


# --------------------------------------------------------------------------- the attention function


def tiny(arch: str = "llama", seed: int = 0, attn: str = "sdpa"):
    return build_model(
        arch,
        n_layer=2,
        n_head=2,
        d_model=16,
        vocab_size=37,
        seed=seed,
        n_positions=32,
        attn_implementation=attn,
        dtype=torch.float64,
    )


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("kind", sinks.SCALINGS)
@given(pos=st.integers(0, 10), seed=st.integers(0, 1000))
@settings(max_examples=8, deadline=None)
def test_scaled_attention_keeps_causality(arch, kind, pos, seed):
    """Changing token `pos` never changes the logits before it, on the fused and the eager
    path, for every variant (the mask function is registered with the attention function)."""
    model = sinks.apply_positional_scaling(tiny(arch), kind, T=12)
    g = generator(seed)
    ids = torch.randint(0, 37, (2, 12), generator=g)
    other = ids.clone()
    other[:, pos] = (other[:, pos] + 1 + torch.randint(0, 35, (2,), generator=g)) % 37
    with torch.no_grad():
        a, b = model(input_ids=ids).logits, model(input_ids=other).logits
        with sinks.record_attention(model):
            c, d = model(input_ids=ids).logits, model(input_ids=other).logits
    assert torch.equal(a[:, :pos], b[:, :pos]) and torch.equal(c[:, :pos], d[:, :pos])
    assert not torch.allclose(a[:, pos:], b[:, pos:])  # the change itself is seen
    # fused and eager agree (the models' eager softmax runs in float32: ≈ 1e-8 apart in float64)
    assert torch.allclose(a, c, atol=1e-6)


def test_without_a_mask_function_causality_is_silently_lost():
    """The reason `register` adds a mask function: a name known only to the AttentionInterface
    gets attention_mask=None, and eager attention under None sees the future."""
    from transformers import AttentionInterface

    AttentionInterface.register("repro_test_unmasked", sinks._positional_eager)
    model = tiny()
    model.set_attn_implementation("repro_test_unmasked")
    ids = torch.randint(0, 37, (1, 8), generator=generator(1))
    other = ids.clone()
    other[0, -1] = (other[0, -1] + 1) % 37
    with torch.no_grad():
        a, b = model(input_ids=ids).logits, model(input_ids=other).logits
    assert not torch.allclose(a[:, 0], b[:, 0])  # position 0 saw position 7


@pytest.mark.parametrize("kind", ["amplification", "attenuation"])
def test_scaling_is_applied_before_the_output_projection(kind):
    """Output of the attention function = √i (or √(i/T)) × the plain eager output, per query."""
    model = sinks.apply_positional_scaling(tiny(), kind, T=8)
    embeds = torch.randn(3, 8, 16, generator=generator(2), dtype=torch.float64)
    scaled = sinks.attention_outputs(model, embeds)
    plain = sinks.attention_outputs(sinks.apply_positional_scaling(model, "baseline"), embeds)
    f = sinks.position_scale(kind, torch.arange(1, 9), 8).double()
    assert torch.allclose(scaled, plain * f[None, :, None])


def test_baseline_through_the_function_equals_plain_sdpa():
    plain = tiny()
    scaled = sinks.apply_positional_scaling(tiny(), "baseline")
    ids = torch.randint(0, 37, (2, 10), generator=generator(3))
    with torch.no_grad():
        assert torch.allclose(plain(input_ids=ids).logits, scaled(input_ids=ids).logits, atol=1e-12)


def test_kv_cache_decoding_uses_true_positions():
    """Decoding one token at a time (query length 1, KV cache) gives the full pass's logits:
    the factor follows position_ids, not the query's index in its chunk."""
    model = sinks.apply_positional_scaling(tiny(), "amplification")
    ids = torch.randint(0, 37, (1, 9), generator=generator(4))
    with torch.no_grad():
        full = model(input_ids=ids).logits
        out = model(input_ids=ids[:, :5], use_cache=True)
        steps = [out.logits]
        cache = out.past_key_values
        for t in range(5, 9):
            out = model(input_ids=ids[:, t : t + 1], past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            steps.append(out.logits)
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-10)


def test_recorded_columns_match_eager_attention_maps():
    model = sinks.apply_positional_scaling(tiny(), "attenuation", T=10)
    ids = torch.randint(0, 37, (3, 10), generator=generator(5))
    with torch.no_grad(), sinks.record_attention(model, keys=(0, 2)) as rec:
        maps = model(input_ids=ids, output_attentions=True).attentions
    assert model.config._attn_implementation == sinks.POSITIONAL  # restored
    assert len(rec.columns) == 2
    for col, A in zip(rec.columns, maps):
        assert torch.equal(col, A[..., [0, 2]])
    alpha = sinks.first_token_importance(model, ids, batch=2)
    want = torch.stack([sinks.importance(A, 0, "source") for A in maps], dim=1)  # (n, L, H)
    assert alpha["source"].shape == (3, 2, 2)
    assert torch.allclose(alpha["source"], want) and torch.allclose(alpha["gu"], want)


def test_record_attention_stops_after_the_asked_layer():
    """`stop_after`: the forward ends once that attention call is recorded (SK-1 at paper skips
    the block's MLP and the rest), the columns and outputs recorded equal a whole run's, every
    column as a view where the keys are 0 … n − 1, and the code after the `with` runs."""
    model = sinks.apply_positional_scaling(tiny(), "amplification", T=10)
    ids = torch.randint(0, 37, (2, 10), generator=generator(7))
    every = tuple(range(10))
    with torch.no_grad(), sinks.record_attention(model, keys=every, outputs=True) as full:
        maps = model(input_ids=ids, output_attentions=True).attentions
    reached = []
    with torch.no_grad(), sinks.record_attention(model, keys=every, outputs=True, stop_after=0) as rec:
        model(input_ids=ids)
        reached.append("body")  # not reached: the forward raised inside the block
    reached.append("after")
    assert reached == ["after"] and len(rec.columns) == len(rec.outputs) == 1 and len(full.columns) == 2
    assert torch.equal(rec.columns[0], maps[0]) and torch.equal(rec.outputs[0], full.outputs[0])
    assert model.config._attn_implementation == sinks.POSITIONAL  # restored after the stop too
    with pytest.raises(ReproError, match="stop_after counts attention calls from 0"):
        with sinks.record_attention(model, stop_after=-1):
            pass
    w = torch.rand(2, 3, 5, 5)
    leading, scattered = (sinks._Recorder(keys, [], [], False) for keys in ((0, 1, 2), (0, 2)))
    assert leading.select(w).data_ptr() == w.data_ptr() and torch.equal(leading.select(w), w[..., :3])
    assert torch.equal(scattered.select(w), w[..., [0, 2]])


def test_a_stopped_forward_is_freed_without_a_garbage_collection():
    """The stop's traceback holds the forward's frames (the recorder among their locals, and at
    SK-1's paper size ≈ 6 GB of maps per batch): they must go when the `with` ends, by reference
    counting alone. Python 3.12's `contextlib.contextmanager` kept them in a cycle until the next
    collection (CPython gh-129280; SK-1's process reached 120 GiB on an H200, 2026-11-26). The
    negative controls: a stop deliberately kept in a cycle is seen on every Python, and the same
    stop absorbed by a generator context manager stays alive on 3.12 (on 3.11 both shapes are
    freed, so there that control is not asserted)."""
    import contextlib
    import gc
    import sys
    import weakref

    model = tiny()
    ids = torch.randint(0, 37, (2, 10), generator=generator(7))

    @contextlib.contextmanager
    def generator_cm(m, keep_stop: bool = False):  # the former record_attention's shape
        rec = sinks._Recorder((0,), [], [], False, 0)
        token = sinks._RECORD.set(rec)
        try:
            with attn_implementation(m, sinks.POSITIONAL_EAGER):
                yield rec
        except sinks._StopForward as stop:
            if keep_stop:  # a cycle on every Python: recorder → stop → traceback → frames → recorder
                rec.stop = stop
        finally:
            sinks._RECORD.reset(token)

    def alive_after(cm) -> bool:
        with torch.no_grad(), cm as rec:
            model(input_ids=ids)
        ref = weakref.ref(rec)
        del rec, cm
        return ref() is not None

    gc.collect()
    gc.disable()
    try:
        ours = alive_after(sinks.record_attention(model, stop_after=0))
        control = alive_after(generator_cm(model))
        cycle = alive_after(generator_cm(model, keep_stop=True))
    finally:
        gc.enable()
    assert not ours
    assert cycle, "the check cannot see a recorder kept in a reference cycle"
    if sys.version_info >= (3, 12):
        assert control, "the generator context manager no longer keeps the stop alive: update this control"


def test_sink_curve_shapes_and_eps():
    model = tiny()
    g = generator(6)
    windows = {n: torch.randint(0, 37, (4, n), generator=g) for n in (4, 8)}
    curve = sinks.sink_curve(model, windows, batch=3)
    assert curve.lengths == (4, 8) and curve.eps == sinks.EPSILON
    for f in sinks.FORMS:
        assert curve.rates[f][8].shape == (4,) and curve.alpha[f][4].shape == (4, 2, 2)
    # a random-init model attends ≈ uniformly: α ≈ H_T/T (0.52 at T = 4, 0.34 at T = 8)
    assert curve.alpha["source"][8].mean().item() == pytest.approx(sinks.expected_uniform_importance(8), abs=0.05)
    assert len(curve.row("gu")) == 2


def test_config_carries_the_variant():
    model = sinks.apply_positional_scaling(tiny(), "attenuation")
    assert sinks.scaling_of(model) == "attenuation"
    d = model.config.to_dict()
    assert d[sinks.CONFIG_KIND] == "attenuation" and d[sinks.CONFIG_T] == 32  # max_position_embeddings
    assert sinks.scaling_of(tiny()) == "baseline"


def test_bad_input_is_explained():
    with pytest.raises(ReproError, match="AttentionInterface"):
        sinks.apply_positional_scaling(torch.nn.Linear(2, 2), "amplification")
    with pytest.raises(ReproError, match="unknown positional scaling"):
        sinks.apply_positional_scaling(tiny(), "double")
    with pytest.raises(ReproError, match="AttentionInterface"):
        with sinks.record_attention(torch.nn.Linear(2, 2)):
            pass
    with pytest.raises(ReproError, match="layer 5"):
        sinks.attention_outputs(tiny(), torch.zeros(1, 4, 16, dtype=torch.float64), layer=5)


# --------------------------------------------------------------------------- what SK-1 and SK-3 rely on


def test_the_three_variants_at_init_are_one_measurement():
    """SK-1 asserts one slope: on the same initial weights and inputs the variants scale the
    same o_i, so amplification's std is the baseline's × √i and attenuation's is
    amplification's / √T at every position (slopes +½ and +0 apart, exactly)."""
    model = dict(n_layer=1, n_head=2, d_model=16, vocab_size=37)
    T = 16
    prof = {k: init_std.init_std_profile(k, model, T, seeds=(0, 1), n_seq=32) for k in sinks.SCALINGS}
    i = torch.arange(1, T + 1, dtype=torch.float64).numpy()
    base, amp, att = (prof[k].std.values for k in sinks.SCALINGS)
    assert amp == pytest.approx(base * i**0.5, rel=1e-5)
    assert att == pytest.approx(amp / math.sqrt(T), rel=1e-5)
    for b, a in zip(base, amp):
        assert loglog_slope(i, a).slope == pytest.approx(loglog_slope(i, b).slope + 0.5, abs=1e-6)


def test_ratio_bound_power_matches_a_simulation():
    """SK-3's power (closed form) against 4,000 simulated runs of its assertion: per-window NLL
    differences N(effect, sd) on two sets of n windows, both upper 95% t bounds ≤ log 1.03."""
    from scipy import stats as sps

    n, sds, margin = 50, (0.1, 0.15), 1.03
    g = generator(7)
    t = float(sps.t.ppf(0.95, n - 1))
    for effect in (0.0, -0.02, 0.02):
        ok = torch.ones(4000, dtype=torch.bool)
        for sd in sds:
            d = effect + sd * torch.randn(4000, n, generator=g, dtype=torch.float64)
            upper = d.mean(1) + t * d.std(1) / math.sqrt(n)
            ok &= upper <= math.log(margin)
        assert sinks.ratio_bound_power(effect, sds, n, margin) == pytest.approx(ok.double().mean().item(), abs=0.035)
    assert sinks.ratio_bound_power(math.log(margin) + 0.05, sds, 10_000, margin) < 1e-6  # a real harm: never passes


def test_a_variant_trained_in_the_pool_is_the_one_train_variant_loads():
    """SK-2/SK-3's trio trains side by side (repro.core.launch.pool): a pooled variant's
    checkpoint carries the key of an in-process `train_variant`, which then loads it."""
    import shutil
    import uuid

    from repro.core import launch, token_streams, train
    from repro.sinks.experiments import train_variant, variant_job

    model = dict(n_layer=1, n_head=2, d_model=32, vocab_size=4096)
    cfg = train.TrainConfig(
        steps=4,
        batch_size=4,
        seq_len=16,
        lr=1e-3,
        warmup_steps=1,
        eval_every=4,
        eval_batches=1,
        vocab_size=4096,
        autocast=None,
    )
    tr, va, ident = token_streams.corpus_tokens("brown", 4096)
    ident = {**ident, "test": uuid.uuid4().hex}  # a fresh key per run
    assert launch.pool([variant_job("attenuation", model, cfg, 0, corpus="brown", data_identity=ident)], workers=2) == 1
    run = train_variant("attenuation", model, cfg, 0, train_tokens=tr, val_tokens=va, data_identity=ident)
    try:
        assert not run.trained
    finally:
        shutil.rmtree(run.checkpoint, ignore_errors=True)


def _fake_trio(top0: float, top1: float, spread: float = 0.01, n: int = 20, tokens: int = 1000):
    """A trio whose baseline has one head (of L·H = 2) with mean α¹ `top0` at init and `top1` at the
    end at both lengths, per-sequence ±`spread`, after `tokens` training tokens."""
    from types import SimpleNamespace

    def curve(a):
        al = torch.zeros(n, 1, 2)
        al[:, 0, 0] = a + spread * torch.tensor([(-1.0) ** i for i in range(n)])
        return sinks.SinkCurve((32, 64), {}, {"source": {32: al, 64: al}}, {"source": 0.25})

    cfg = SimpleNamespace(steps=10, batch_size=10, seq_len=tokens // 100)
    trio = SimpleNamespace(cfg=cfg, curves={"baseline": curve(top1)}, init_curve=curve(top0), layers_heads=2)
    trio.snapshots = {}
    trio.trajectory = lambda: {0: trio.init_curve, **trio.snapshots, tokens: trio.curves["baseline"]}
    return trio


def test_baseline_sink_power_by_hand():
    """SK-2's power at a budget: a head grown from 0.10 to 0.15 over 1,000 tokens reaches ε = 0.25
    (mean) after 3,000 and has every sequence above it (± 0.01) from 3,200 on: the rate then is one
    head of two in every sequence. None below, at our budget or for a head that did not grow."""
    from repro.sinks.budget import baseline_sink_power, first_budget

    trio = _fake_trio(0.10, 0.15)
    assert baseline_sink_power(trio, "source", 1000, reps=200) == 0.0
    assert baseline_sink_power(trio, "source", 3000, reps=200) < 0.05
    assert baseline_sink_power(trio, "source", 3400, reps=200) > 0.95
    t80 = first_budget(lambda t: baseline_sink_power(trio, "source", t, reps=200), 1000, 1e6)
    assert 3000 < t80 < 3400 * 2**0.125
    assert first_budget(lambda t: baseline_sink_power(_fake_trio(0.10, 0.10), "source", t, reps=200), 1000, 1e6) is None
    assert baseline_sink_power(_fake_trio(0.10, 0.30), "source", 1000, reps=200) == 1.0


def test_sk2_power_covers_the_baseline_check_only_and_never_decides():
    """Issue 64: SK-2's power is a budget model fitted to this trio (at our budget a bootstrap of
    its own heads) and covers the baseline check alone; the variants' checks have no power. So a
    failing attenuation check reads inconclusive (at decide it read "contradicted, power 1.0,
    size 0"), and even a failing baseline check cannot read contradicted on it."""
    from repro.core.readings import Power
    from repro.harness import rules
    from repro.sinks.budget import BASELINE_CHECK, baseline_budget_power

    p = baseline_budget_power(
        _fake_trio(0.10, 0.30), "source", n_seq=20, long_tokens=10**4, paper_tokens=10**6, reps=50
    )
    assert isinstance(p, Power) and p.covers == (BASELINE_CHECK,) and p.value == 1.0
    assert p.basis_kind == "budget" and p.fitted and p.sd == "plug-in"
    power = {"role": "power", "measured": p.value, "power": p.to_dict()}
    for name in ("attenuation: sink rate at its highest over lengths", f"{BASELINE_CHECK} (≥ one sink head)"):
        j = rules.judge_failure([power, {"role": "check", "name": name, "within": False}])
        assert j.kind == "inconclusive", (name, j)
    assert (
        "no power covers"
        in rules.judge_failure([power, {"role": "check", "name": "attenuation", "within": False}]).why[0]
    )


def test_loss_gap_model_recovers_a_log_linear_gap():
    """SK-3's budget model: per-step losses whose gap is a + b·ln(tokens) (+ alternating noise)
    give back a, b over the second half of training, and the gap at a budget with its se."""
    from types import SimpleNamespace

    from repro.sinks.budget import loss_gap_model

    steps, per_step = 120, 1000
    x = np.log((np.arange(steps) + 0.5) * per_step)
    base = np.full(steps, 5.0)
    amp = base + 0.6 - 0.03 * x + 0.001 * (-1.0) ** np.arange(steps)
    trio = SimpleNamespace(
        results={
            "baseline": SimpleNamespace(losses=base.tolist()),
            "amplification": SimpleNamespace(losses=amp.tolist()),
        },
        cfg=SimpleNamespace(steps=steps, batch_size=10, seq_len=100),
    )
    g = loss_gap_model(trio, "amplification", blocks=12)
    assert (g.blocks, g.block_steps, g.first_step) == (6, 10, 60)
    assert g.slope == pytest.approx(-0.03, abs=2e-3) and g.intercept == pytest.approx(0.6, abs=0.03)
    d, se = g.at(steps * per_step)
    assert d == pytest.approx(0.6 - 0.03 * math.log(steps * per_step), abs=2e-3) and 0 < se < 2e-3
    assert g.at(1e9)[1] > se  # extrapolating widens the fit's uncertainty


def test_ratio_bound_power_with_an_uncertain_effect():
    """SK-3's power with a budget model: per-set effects, and the effect's own sd lowers the power
    of a passing effect (and raises that of a failing one) towards ½."""
    n, sds, margin = 200, (0.1, 0.1), 1.03
    sure = sinks.ratio_bound_power([0.0, -0.02], sds, n, margin)
    assert sure == pytest.approx(
        sinks.ratio_bound_power(0.0, [0.1], n, margin) * sinks.ratio_bound_power(-0.02, [0.1], n, margin)
    )
    assert sinks.ratio_bound_power([0.0, -0.02], sds, n, margin, [0.05, 0.0]) < sure
    assert sinks.ratio_bound_power(0.1, [0.1], n, margin, 0.5) > sinks.ratio_bound_power(0.1, [0.1], n, margin)
    with pytest.raises(ReproError, match="2 sets but 3 effects"):
        sinks.ratio_bound_power([0.0, 0.0, 0.0], sds, n, margin)


def test_baseline_sink_power_fits_every_point_of_the_trajectory():
    """With snapshots the effect model is the least-squares line through all the points: a head
    flat at 0.10 for the first three quarters that jumps to 0.15 at the end grows more slowly than
    the two-end line says (the fit's slope 0.05·0.8 per 1,000 tokens, not 0.05), so the budget for
    80% lies further out; with the end points alone it is the line through them."""
    from repro.sinks.budget import baseline_sink_power, first_budget

    two = _fake_trio(0.10, 0.15)
    five = _fake_trio(0.10, 0.15)
    flat = _fake_trio(0.10, 0.10)
    five.snapshots = {250: flat.init_curve, 500: flat.init_curve, 750: flat.init_curve}
    assert baseline_sink_power(five, "source", 1000, reps=200) == baseline_sink_power(two, "source", 1000, reps=200)
    t2 = first_budget(lambda t: baseline_sink_power(two, "source", t, reps=200), 1000, 1e6)
    t5 = first_budget(lambda t: baseline_sink_power(five, "source", t, reps=200), 1000, 1e6)
    assert t2 < t5, (t2, t5)
