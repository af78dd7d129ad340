"""`repro plan`: parameter counts, FLOPs and memory (`repro.core.cost`) against hand counts on tiny
configs, each topic's planners (`repro/<topic>/sizes.py`) against real models; the paper plan
names what it lacks (`repro.harness.plan_corpus`: corpus and vocabulary)."""

from __future__ import annotations

import pytest
import torch

from repro.core import cost
from repro.core.models.hf import build_model
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.ground.errors import ReproError
from repro.ground.runtime import cache_dir
from repro.harness import plan, plan_corpus
from repro.harness.cli import main

CACHE = str(cache_dir())  # at import, before pytester moves HOME


@pytest.mark.parametrize("arch", ["gpt2", "rope-gpt2", "llama"])
def test_meta_device_count_equals_a_real_model(arch):
    shape = dict(n_layer=2, n_head=2, d_model=16, vocab_size=50, n_positions=32)
    real = build_model(arch, seed=0, **shape)
    assert cost.hf_params(arch, **shape) == sum(p.numel() for p in real.parameters())


def test_tiny_closed_form_equals_a_real_tiny_decoder():
    tc = TinyConfig(
        vocab_size=50,
        d_model=16,
        n_layer=3,
        n_head=2,
        max_len=32,
        norm="layernorm",
        activation="gelu",
        positions="learned",
        tie_embeddings=True,
        bias=True,
    )
    real = TinyDecoder(tc, torch.Generator().manual_seed(0))
    assert cost.tiny_params(50, 16, 3, max_len=32) == sum(p.numel() for p in real.parameters())


NAMED = dict(experiment="x", claims="BB-1", what="w")  # what a job is, beside its numbers
MODEL = dict(d_model=8, n_layer=2, n_head=2, vocab_size=50)  # a model-size row, as the profiles' rows spell it


def test_flops_and_memory_by_hand():
    # N = 1,000 parameters, D = 100 tokens, L = 2 layers, T = 10, d = 8
    assert cost.forward_flops(1000, 2, 10, 8, 100) == 2 * 1000 * 100 + 2 * 2 * 10 * 8 * 100  # 232,000
    assert cost.train_flops(1000, 2, 10, 8, 100) == 3 * 232_000
    assert cost.activation_bytes(2, 4, 10, 8, 2) == 2 * 4 * 10 * (34 * 8 + 5 * 2 * 10)
    j = cost.Job.of(**NAMED, kind="train", models=3, params=1000, model=MODEL, T=10, tokens=100, batch=4)
    assert j.flops == 3 * 696_000 and j.memory_bytes == 16 * 1000 + cost.activation_bytes(2, 4, 10, 8, 2)
    p = plan.Plan("t", tflops=1.0, utilisation=0.5, jobs=[j])
    assert p.seconds() == pytest.approx(3 * 696_000 / 0.5e12)


def test_a_job_of_a_model_row_and_a_training_row():
    train = dict(seq_len=10, batch_size=4, steps=5, autocast=None, lr=1e-3)  # lr: a key Job.of does not read
    j = cost.Job.of(**NAMED, kind="train", models=3, params=1000, model=MODEL, train=train)
    assert j == cost.Job("x", "BB-1", "w", "train", 3, 1000, 8, 2, 2, 50, 10, 5 * 4 * 10, batch=4, dtype="float32")
    bf16 = cost.Job.of(**NAMED, kind="train", models=3, params=1000, model=MODEL, train={**train, "autocast": "auto"})
    assert bf16.dtype == "auto"  # under autocast: the dtype policy's
    infer = dict(NAMED, kind="infer", models=1, T=10, tokens=20)
    # a keyword overrides what a row gives; a shape key the job has no field for is allowed
    one = cost.Job.of(**infer, params=9, model={**MODEL, "max_len": 64}, L=1, notes="one block")
    assert (one.d, one.L, one.H, one.V, one.notes) == (8, 1, 2, 50, "one block")
    # an embedded model's row (`cost.embedded()`) gives the parameters too
    assert cost.Job.of(**infer, model=dict(params=77, d=8, L=2, H=2, V=50)).params == 77
    with pytest.raises(TypeError, match="lacks n_head"):
        cost.Job.of(**infer, params=9, model={k: v for k, v in MODEL.items() if k != "n_head"})
    with pytest.raises(TypeError, match="holds seq_len"):
        cost.Job.of(**infer, params=9, model={**MODEL, "seq_len": 10})
    with pytest.raises(TypeError, match="lacks autocast"):
        cost.Job.of(
            **NAMED, kind="train", models=1, params=9, model=MODEL, train=dict(seq_len=10, batch_size=4, steps=5)
        )
    with pytest.raises(TypeError):  # a field no row gives and no keyword does
        cost.Job.of(**NAMED, kind="infer", models=1, params=9, model=MODEL, T=1)


def test_paper_plan_lists_what_it_lacks_and_ci_lacks_nothing():
    paper = plan.plan("paper")
    assert {j.experiment for j in paper.jobs} >= {"causal_shift", "sinks", "seedprint", "spectral", "bb_1"}
    assert any("sinks" in m and "brown has 1,311,112" in m for m in paper.missing)
    assert any("GiB per device" in m for m in paper.missing)
    assert paper.total_flops > 1e20  # the SK trio alone: 3 × 6 · 134M · 52B ≈ 1.3e20
    assert plan.plan("ci").missing == []
    # one line per job: SP-5's two fine-tunes and their two real nulls name their model
    assert len(set(paper.missing)) == len(paper.missing)
    assert sum("SP-5; smollm2-135m" in m or "SP-5; gemma3-270m" in m for m in paper.missing) == 4
    assert sum("the real null" in m for m in paper.missing) == 2


def test_bb_1_2_is_costed_at_the_larger_shape():
    """BB-1.2's probe of the 1.2B RoPE GPT-2 (24 L, 2048 d) on bb_1's seeds, N and lengths: by
    hand, 2 models × N·T tokens (it ran over 5 minutes on an H100, not "small")."""
    jobs = [j for j in plan.plan("paper").jobs if j.experiment == "bb_1_2"]
    assert len(jobs) == 1
    j = jobs[0]
    p = cost.hf_params("rope-gpt2", n_layer=24, n_head=32, d_model=2048, vocab_size=50257, n_positions=1024)
    assert (j.models, j.params, j.L, j.d, j.T, j.tokens) == (2, p, 24, 2048, 1024, 10_000 * 1024)
    head = 2.0 * 50257 * 2048 * 10_000 * 3  # the float32 LM head at the 3 probe positions of each sequence
    assert j.fp32_flops == head and j.dtype == "auto"
    # the tied head runs at the probe positions only (`logits_to_keep`, the float32 head above),
    # so 2·N·D leaves its V·d parameters out
    assert j.head_params == 50257 * 2048
    assert j.flops == 2 * (cost.forward_flops(p - 50257 * 2048, 24, 1024, 2048, 10_000 * 1024) + head)
    assert j.flops > 4e16
    assert j.host_normals == p and j.h2d_bytes == 2 * p  # drawn on the host in float32, moved in bfloat16


def test_sk1_init_probe_is_costed_by_hand():
    """SK-1 runs one block (no embeddings or head) of 3 variants × the init seeds on n_seq × T
    Gaussian inputs: at paper 48 models × 2,000 × 2,048 tokens; one LLaMA block of width 768 with
    d_ff 2048 (hf's default for this shape) has 4·768² + 3·768·d_ff + 2·768 parameters."""
    j = next(j for j in plan.plan("paper").jobs if j.claims == "SK-1")
    d, d_ff = 768, 2048
    assert (j.models, j.L, j.T, j.tokens) == (48, 1, 2048, 2000 * 2048)
    assert j.params == 4 * d * d + 3 * d * d_ff + 2 * d == 7_079_424
    assert j.flops == 48 * (2.0 * j.params * 2000 * 2048 + 2.0 * 2048 * d * 2000 * 2048)
    # the time model: float32; each model's embeddings, untied head, block and final norm drawn on the
    # host; its recorded (H, T, T) float32 map read and written ≈ 17 times a sequence (the scores,
    # their scale and mask, softmax, A·V's read, Σ A² per head in float64), counted on the CPU
    assert j.dtype == "float32" and j.host_normals == 2 * 32000 * d + j.params + d
    passes = j.mem_bytes / 2000 / (4 * 12 * 2048**2)
    assert 12 < passes < 24, passes


def test_cli(capsys):
    assert main(["plan", "--profile", "ci"]) == 0
    out = capsys.readouterr().out
    assert "total:" in out and "missing or too small: 0" in out
    assert main(["plan", "--profile", "nope"]) == 2
    assert main(["plan", "--utilisation", "0"]) == 2


def test_cli_plans_for_the_device_the_run_would_use(capsys, monkeypatch):
    """`repro plan` without a GPU: this CPU at a matmul rate timed now, its RAM, the header naming
    both (not the H100 of `plan()`'s default); `--device h100`: the H100's datasheet figures."""
    from repro.ground.runtime import cpu_capability

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["plan", "--profile", "ci"]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    assert "one cpu device" in head and cpu_capability()["cpu"] in head and "matmul timed now" in head
    assert f"× {plan.CPU_UTILISATION:.0%} utilisation" in head
    assert "H100" not in out.split("what")[0]
    rate = float(head.split(" at ")[1].split(" TFLOP/s")[0])
    assert 0 < rate < 1000
    assert main(["plan", "--profile", "ci", "--device", "h100"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "one h100 device, NVIDIA H100 SXM, at 989 TFLOP/s (the datasheet's dense bfloat16 peak)" in head
    h100 = plan.plan("ci")  # plan()'s default, the pytest plugin's --plan: one H100
    assert (h100.tflops, h100.device.memory_gib) == (989.0, 80.0)
    assert h100.flop_seconds() == pytest.approx(h100.total_flops / (989e12 * 0.4))
    assert h100.seconds() >= h100.flop_seconds()  # the time model adds to the FLOPs, never takes away


def test_plan_device_choices(monkeypatch):
    """auto is the GPU where torch sees one: a GPUS name inside its name gives the datasheet's rate,
    another GPU is timed; --tflops replaces the rate (nothing timed), --memory-gib the memory."""

    def no_timing(*args, **kwargs):
        raise AssertionError("timed a matmul although the rate was given")

    monkeypatch.setattr(plan, "matmul_tflops", no_timing)
    cpu = plan.plan_device("cpu", tflops=2.0, memory_gib=3.0)
    assert (cpu.name, cpu.tflops, cpu.memory_gib, cpu.rate) == ("cpu", 2.0, 3.0, "as given (--tflops)")
    assert plan.plan_device("a100").tflops == 312.0
    with pytest.raises(ReproError, match="unknown plan device 'tpu'"):
        plan.plan_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ReproError, match="torch sees no CUDA GPU"):
        plan.plan_device("cuda")

    class Props:
        name, total_memory = "NVIDIA H100 80GB HBM3", 81559 * 2**20

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: Props)
    gpu = plan.plan_device()
    assert (gpu.name, gpu.label, gpu.tflops, round(gpu.memory_gib, 1)) == ("cuda", Props.name, 989.0, 79.6)
    Props.name = "NVIDIA L4"
    monkeypatch.setattr(
        plan,
        "matmul_tflops",
        lambda device, dtype=None: (60.0 if dtype == torch.float32 else 121.0, f"timed on {device}"),
    )
    l4 = plan.plan_device()
    assert (l4.tflops, l4.tflops_fp32) == (121.0, 60.0) and l4.rate.startswith("timed on cuda")
    assert l4.gpu is None and l4.host == plan.GPU_HOST  # a GPU's host rates; no measured times of its own


def test_matmul_rate_is_timed_in_the_policy_dtype(monkeypatch):
    from repro.ground.runtime import DTYPE_ENV

    monkeypatch.setenv(DTYPE_ENV, "float32")
    tflops, what = plan.matmul_tflops("cpu")
    assert tflops > 0 and what.startswith(f"a float32 ({plan.PROBE_N['cpu']}×")


def test_a_training_job_that_cannot_fit_is_refused_before_it_starts():
    msg = plan.too_big("sinks", "paper", 80 * 2**30)
    assert msg is not None and "SK-2, SK-3" in msg and "GiB per device at batch 128 × 2048" in msg
    assert plan.too_big("sinks", "ci", 80 * 2**30) is None
    assert plan.too_big("sinks", "paper", 1e15) is None
    assert plan.too_big("no-such-row", "paper", 1.0) is None
    plan.require_fits("sinks", "paper", "cpu")  # CPUs are not checked: the plan's memory is per accelerator


# --------------------------------------------------------------------------- every row costed


def test_every_profile_row_has_a_planner_and_none_is_left_uncosted():
    from repro.harness.profiles import SIZES

    assert set(plan.PLANNERS) == set(SIZES)
    paper = plan.plan("paper")
    assert paper.not_costed == [] and not any("not costed" in line for line in plan.lines(paper))
    assert {j.experiment for j in paper.jobs} == set(SIZES)


def _one_row(key: str, row: dict) -> list:
    """The jobs of one experiment row given by hand (a profile table of that row alone)."""
    from repro.harness.profiles import Profile

    return plan.PLANNERS[key](Profile("ci", table={key: {"ci": row}}))


def test_bb_5_by_hand():
    """BB-5 on a tiny row: per T a stack of L = 3 pre-LN softmax attention layers (LayerNorm without
    bias: d; W_Q, W_K, W_V, W_O without bias: 4·d²) over seeds × n·T Gaussian tokens, with the
    attention term 2·L·T·d per token; Attn0 has no weights. The params equal a real stack's."""
    from repro.born_biased.init_bias import ATTN_STACK

    d, L, H = 16, 3, 2
    jobs = _one_row("bb_5", dict(d_model=d, n_head=H, n_layer=L, T=(4, 8), n_seq=(5, 2), seeds=(0, 1)))
    p = L * (d + 4 * d * d)  # 3,120
    real = TinyDecoder(TinyConfig.merged(**ATTN_STACK, d_model=d, n_head=H, n_layer=L, max_len=8))
    assert p == 3120 == sum(q.numel() for q in real.parameters())
    assert [(j.models, j.params, j.L, j.T, j.tokens, j.batch) for j in jobs] == [
        (2, p, L, 4, 20, 5),
        (2, p, L, 8, 16, 2),
    ]
    assert jobs[0].flops == 2 * (2 * 3120 * 20 + 2 * 3 * 4 * 16 * 20) == 264_960
    # held: the input and one pass's L + 1 hidden states, float32 (n, T, d) each (n ≤ BB5_CHUNK: one
    # pass); the planner reads the topic's chunk
    from repro.born_biased.init_bias import BB5_CHUNK

    assert jobs[1].memory_bytes == 2 * p + cost.activation_bytes(1, 2, 8, d, H) + 5 * 2 * 8 * d * 4
    big = _one_row("bb_5", dict(d_model=d, n_head=H, n_layer=L, T=(4,), n_seq=(4 * BB5_CHUNK,), seeds=(0,)))[0]
    assert big.batch == BB5_CHUNK
    assert big.held_bytes == 4 * (4 * BB5_CHUNK + (L + 1) * BB5_CHUNK) * 4 * d


def test_bb_4_and_bb_4_2_by_hand():
    """BB-4: 3 variants × seeds of L MLP blocks (no bias) on n one-token inputs — no attention term;
    the standard variant's LayerNorm (d, no bias) counted. BB-4.2: per seed two MLP0 blocks over
    n × ΣT tokens. Both against real TinyDecoders of init_bias's configs."""
    from repro.born_biased.init_bias import MLP_VARIANTS

    d, f, L = 8, 32, 2
    (j,) = _one_row("bb_4", dict(d_model=d, d_ff=f, n_layer=L, n_seq=10, seeds=(0, 1, 2)))
    p = L * (2 * d * f + d)  # 1,040
    mlp = dict(
        vocab_size=0,
        d_model=d,
        d_ff=f,
        n_layer=L,
        n_head=1,
        block="mlp",
        positions="none",
        final_norm=False,
        bias=False,
    )
    real = TinyDecoder(TinyConfig.merged(**mlp, **MLP_VARIANTS["standard"]))
    assert p == 1040 == sum(q.numel() for q in real.parameters())
    assert (j.models, j.params, j.tokens, j.T) == (9, p, 10, 1)
    assert j.flops == 9 * 2 * 1040 * 10 == 187_200
    (j2,) = _one_row("bb_4_2", dict(d_model=d, d_ff=f, n_seq=3, T=(4, 16), seeds=(0, 1)))
    mlp0 = TinyDecoder(TinyConfig.merged(**{**mlp, "norm": "none", "residual": False}))
    assert j2.params == 2 * 2 * d * f == sum(q.numel() for q in mlp0.parameters())
    assert (j2.models, j2.tokens, j2.T, j2.batch) == (2, 3 * 20, 16, 3)
    assert j2.flops == 2 * 2 * 1024 * 60


def test_bb_4_1_and_bb_6_params_equal_real_blocks():
    (j,) = _one_row("bb_4_1", dict(d_model=8, n_seq=5, seeds=(0, 1)))
    gelu = TinyDecoder(
        TinyConfig.merged(
            vocab_size=0,
            d_model=8,
            n_layer=1,
            block="mlp",
            norm="layernorm",
            activation="gelu",
            residual=False,
            positions="none",
            final_norm=False,
        )
    )
    assert j.params == sum(q.numel() for q in gelu.parameters()) and (j.models, j.tokens) == (4, 5)
    (j,) = _one_row("bb_6", dict(d_model=8, n_head=2, T=4, n_seq=3, seeds=(0,)))
    attn = TinyDecoder(
        TinyConfig.merged(
            vocab_size=0,
            d_model=8,
            n_head=2,
            n_layer=1,
            block="attn",
            norm="layernorm",
            residual=True,
            positions="rope",
            max_len=4,
            final_norm=False,
        )
    )
    assert j.params == sum(q.numel() for q in attn.parameters()) and (j.tokens, j.L) == (12, 1)


def _rs_row(**over) -> dict:
    row = dict(
        text=dict(test_seqs=2, seq_len=8),
        dla_len=4,
        grad=dict(depths=(2, 3), d_model=8, n_head=2, batch_size=2, seq_len=4, seeds=(0, 1)),
        random_init=dict(
            archs=("gpt2",), n_layer=2, d_model=8, n_head=2, vocab_size=50, perturb_norms=0.3, n_seq=2, seq_len=4
        ),
        lens=dict(train_seqs=3, steps=5, batch_tokens=6, lr=1e-3, models=1),
        induction=dict(config=dict(), seeds=(0, 1, 2)),
    )
    return {**row, **over}


def test_residual_stream_parts_by_hand(monkeypatch):
    """RS on a tiny row and one tiny 'embedded' model (N = 1,000, d = 4, L = 2, V = 10, tied):
    - text: the blocks (N − V·d = 960) over (test + lens-training) windows, T = 8, plus a full pass
      of dla_len = 4 tokens (RS-1/2's decomposition);
    - lens reads: every layer's logits 3·(L+1)·V·d + the tuned lens's L·(d² + d) per held-out token
      (test_seqs × (T − 1)), no attention term, plus 2·V·d for the mean distribution per token;
    - tuned lens: 6·L·(V·d + d² + d) per training token plus 2·V·d for the final distribution."""
    monkeypatch.setattr(cost, "embedded", lambda: {"m": dict(params=1000, d=4, L=2, V=10, H=1)})
    jobs = [j for j in _one_row("residual_stream", _rs_row()) if j.what.startswith("m:")]
    read, lenses, tuned = jobs
    assert (read.params, read.tokens) == (960, (2 + 3) * 8)
    assert read.flops == (2 * 960 * 40 + 2 * 2 * 8 * 4 * 40) + (2 * 1000 * 4 + 2 * 2 * 4 * 4 * 4)
    n_test, n_train = 2 * 7, 3 * 7
    assert (lenses.params, lenses.tokens) == (3 * 3 * 40 + 2 * 20, n_test)
    assert lenses.flops == 2 * 400 * 14 + 2 * 40 * (n_train + n_test)
    assert (tuned.kind, tuned.params, tuned.tokens) == ("train", 2 * 60, 30)
    assert tuned.flops == 6 * 120 * 30 + 2 * 40 * 30
    assert tuned.memory_bytes == 2 * 1000 + 12 * 2 * 6 * 10 + 16 * 2 * 20


def test_residual_stream_models_equal_the_topics(monkeypatch):
    """RS-3's stacks, RS-7's induction models and RS-4's post-norm control against real models of
    the topic's configs (the planner reads GRAD_V and InductionConfig's defaults from the topic)."""
    from repro.residual_stream import induction, study

    jobs = _one_row("residual_stream", _rs_row(induction=dict(config=dict(vocab_size=40, d_model=16), seeds=(0, 1, 2))))
    grad = [j for j in jobs if j.claims == "RS-3"]
    for j, L in zip(grad, (2, 3)):
        real = TinyDecoder(TinyConfig(vocab_size=study.GRAD_V, d_model=8, n_layer=L, n_head=2, max_len=4))
        assert j.params == sum(q.numel() for q in real.parameters())
        assert j.flops == j.models * cost.train_flops(j.params, L, 4, 8, 2 * 4)
    assert [j.models for j in grad] == [4, 4 + 3]  # pre and post per seed; at the deepest, no-skip and App B.1
    cfg = induction.InductionConfig(vocab_size=40, d_model=16)
    for j, L in zip([j for j in jobs if j.claims == "RS-7"], (1, 2)):
        real = induction.build_model(cfg, L, 0)
        assert (j.models, j.params, j.tokens) == (3, sum(q.numel() for q in real.parameters()), 1000 * 64 * 32)
    post = next(j for j in jobs if j.what.startswith("post-norm"))
    real = TinyDecoder(
        TinyConfig(vocab_size=50, d_model=8, n_layer=2, n_head=2, max_len=4, norm_position="post", final_norm=False)
    )
    assert post.params == sum(q.numel() for q in real.parameters())


def test_embedded_facts_match_the_embedded_models():
    from repro.core.models.embedded import EMBEDDED_MODELS

    assert list(cost.embedded()) == list(EMBEDDED_MODELS)  # the run's order: RS-8's lens.models counts from it
    assert set(cost.EMBEDDED_PARAMS) == set(EMBEDDED_MODELS)
    for name, e in cost.embedded().items():
        m = EMBEDDED_MODELS[name]
        assert (e["d"], e["L"], e["V"], e["H"]) == (m.d_model, m.n_layers, m.vocab_size, m.n_heads)


# --------------------------------------------------------------------------- --corpus


def _corpus_dir(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(30):
        (root / f"doc{i:02d}.txt").write_text(f"Document {i} of a small corpus. " * (i + 1))
    return root


def test_plan_uses_the_run_corpus_and_counts_its_tokens(tmp_path, monkeypatch):
    """--corpus DIR: every training job on the run's corpus is checked against DIR's train split,
    counted as the run reads it (the Brown BPE, <bos>/<eos> per document); the jobs on the corpus a
    claim fixes (stdlib-code) are not. Past SAMPLE_BYTES the count is extrapolated (≈)."""
    from repro.core import data

    root = _corpus_dir(tmp_path)
    docs = data.corpus_documents(str(root), "train")
    tok = data.brown_tokenizer(4096)
    by_hand = sum(len(tok(d.text, add_special_tokens=False)["input_ids"]) + 2 for d in docs)
    assert plan_corpus.corpus_train_tokens(str(root)) == (by_hand, "")
    p = plan.plan("paper", corpus=str(root))
    sinks = next(m for m in p.missing if m.startswith("sinks (SK-2, SK-3;"))
    assert f"{root} has {by_hand:,} (" in sinks and "1,311,112" not in sinks
    assert next(j for j in p.jobs if j.claims == "SK-2, SK-3").corpus == str(root)
    assert any("SP-4" in m and "stdlib-code has 5,612,449" in m and "does not change it" in m for m in p.missing)
    assert p.corpus == str(root) and f"on corpus {str(root)!r}" in plan.lines(p)[0]
    monkeypatch.setattr(plan_corpus, "SAMPLE_BYTES", 1)  # one document tokenized, the rest at its bytes per token
    first = len(tok(docs[0].text, add_special_tokens=False)["input_ids"]) + 2
    total = sum(len(d.text.encode()) for d in docs)
    assert plan_corpus.corpus_train_tokens(str(root)) == (round(first * total / len(docs[0].text.encode())), "≈ ")


def test_a_bad_corpus_is_one_error(tmp_path, capsys):
    assert main(["plan", "--corpus", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("repro: error: corpus directory") and "does not exist" in err[0]
    assert main(["plan", "--corpus", "no-such-corpus"]) == 2
    assert "unknown corpus 'no-such-corpus'" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReproError, match="no train documents"):
        plan.plan("ci", corpus=str(tmp_path / "empty"))


def test_pytest_plan_passes_the_run_corpus(pytester: pytest.Pytester, tmp_path, monkeypatch):
    """`pytest claims/ --plan --corpus DIR`: the plan is the run's, on DIR."""
    monkeypatch.setenv("REPRO_CACHE", CACHE)  # Brown and its BPE: pytester's scratch HOME has no cache
    root = _corpus_dir(tmp_path)
    pytester.makeconftest('pytest_plugins = ("repro.harness.plugin",)\n')
    pytester.makepyfile(test_sk='import pytest\n\n@pytest.mark.claim("SK-2")\ndef test_sk(claim):\n    pass\n')
    # "--corpus=DIR", one argument: a bare DIR would be taken for a test path before the plugin's
    # options are known, and pytest would then look for conftests there, not here
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--plan", "--profile", "paper", f"--corpus={root}")
    assert result.ret == 0
    tokens, _ = plan_corpus.corpus_train_tokens(str(root))
    result.stdout.fnmatch_lines(
        [f"plan for profile 'paper' on corpus '{root}'*", f"*sinks (SK-2, SK-3; *{root} has {tokens:,} (*"]
    )
    assert "brown has" not in result.stdout.str()


# --------------------------------------------------------------------------- the Brown BPE's vocabulary


def test_bpe_vocabulary_bounds_by_hand(monkeypatch):
    """Two documents "aa ab" and "aa": byte-level words aa (×2) and Ġab. Lower bound: 259 base
    tokens + 2 words of ≥ 2 symbols = 261. Upper: Σ (len − 1) = 1 + 2 = 3 merges (distinct
    substrings aa, Ġa, ab, Ġab: 4) → 262. The suite's own trainer (`_train_brown_bpe`, on these
    documents in place of Brown) asked for a million tokens learns aa, then Ġa or ab, then Ġab: 262."""
    from repro.core import data

    words = plan_corpus.bpe_words(["aa ab", "aa"])
    assert words == {"aa": 2, "Ġab": 1}
    assert (plan_corpus.bpe_vocab_lower(words), plan_corpus.bpe_vocab_upper(words)) == (261, 262)
    monkeypatch.setattr(
        data, "brown_split", lambda split: [data.Document("1", "x", "aa ab"), data.Document("2", "x", "aa")]
    )
    assert data._train_brown_bpe(10**6).get_vocab_size() == 262


def test_bpe_words_split_as_the_suites_tokenizer_does():
    from tokenizers import pre_tokenizers

    from repro.core import data

    backend = data.brown_tokenizer(4096).backend_tokenizer
    assert backend.normalizer is None
    assert backend.pre_tokenizer.__getstate__() == pre_tokenizers.ByteLevel(add_prefix_space=False).__getstate__()


def test_vocabulary_check_passes_on_brown_and_names_each_row_it_fails(monkeypatch):
    paper = plan.plan("paper")
    assert not any("vocab_size" in m for m in paper.missing)
    assert any(
        line.startswith("vocabulary:") and "48,622" in line and "SK-2, SK-3: 32,000" in line for line in paper.checked
    )
    monkeypatch.setattr(plan_corpus, "_brown_words", lambda: plan_corpus.bpe_words(["aa ab", "aa"]))
    tiny = plan.plan("paper")
    lines = [m for m in tiny.missing if "vocab_size" in m]
    assert len(lines) == len(plan_corpus.bpe_rows(plan.get_profile("paper"))) and tiny.checked == []
    assert all("yields at most 262" in m and "vocab_size to ≤ 261" in m for m in lines)
    assert any(m.startswith("sinks (SK-2, SK-3): vocab_size 32,000") for m in lines)


def test_without_brown_the_vocabulary_is_one_missing_line(monkeypatch):
    def no_brown():
        raise ReproError("fixture 'brown' is not in the cache")

    monkeypatch.setattr(plan_corpus, "_brown_words", no_brown)
    p = plan.plan("ci")
    assert p.checked == [] and len(p.missing) == 1 and "not checked: fixture 'brown'" in p.missing[0]
    assert plan.for_claims(p, ["SK-2"]).missing == p.missing


def test_each_topic_costs_its_own_rows():
    """Every topic's planners cost exactly its own rows; the registry collects them unchanged."""
    import importlib

    from repro.harness import topics

    for topic in topics.PACKAGES:
        m = importlib.import_module(f"repro.{topic}.sizes")
        assert set(m.PLANNERS) == set(m.SIZES), topic
        assert all(plan.PLANNERS[exp] is planner for exp, planner in m.PLANNERS.items())


def test_ci_fits_its_budget_in_flops():
    """The ci budget's 30 minutes are the reference CPU's (`profiles.REFERENCE_CPU_TFLOPS`, float32):
    the ci profile's planned FLOPs must fit what they buy there, so a size that grows ci past its
    budget fails here on any machine, however fast or slow the one running the tests."""
    budget = plan.budget_flops("ci")
    assert budget == pytest.approx(1800 * 0.15e12 * plan.CPU_UTILISATION)
    assert plan.budget_flops("paper") is None
    total = plan.plan("ci", device="cpu", tflops=0.15).total_flops
    assert total <= budget, f"ci plans {total / 1e15:.4f} PFLOP, over its budget's {budget / 1e15:.4f}"
