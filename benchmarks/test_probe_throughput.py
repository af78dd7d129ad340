"""Random-input probe throughput (001 §3 probes): tokens/s, and useful FLOP/s as a fraction of
the machine's dense-matmul FLOP/s measured in the same run.

Run without xdist: ``python -m pytest benchmarks/ -p no:xdist -p no:randomly -q`` (add
``--benchmark-json=FILE`` to keep the numbers). Nothing here asserts a time: the numbers to read
and compare across changes are in each benchmark's ``extra_info``:

- ``tokens_per_s``: N·T input tokens per second of ``repro.born_biased.preference_probe.probe`` (mean round time);
- ``useful_gflop_per_s``: the FLOPs a probe must do (counted analytically, `probe_flops`)
  per second;
- ``matmul_gflop_per_s``: a dense (2048×768)@(768×3072) matmul in the same dtype, timed in
  this run (`matmul_rate`), so the ratio is comparable across machines and loads;
- ``efficiency`` = useful / matmul: how close the probe's hot loop comes to the machine's
  matmul rate (1.0 would be every cycle doing a useful GEMM at that shape's speed).
- ``matmul_drift``: the matmul rate re-timed right after the probe / the fixture's rate; far
  from 1 means other load came or went during the run, and its numbers are not comparable.

The last group keeps the plain HF forward's last-position vs all-positions comparison (the
reason `probe` never computes logits over all T positions).
"""

from __future__ import annotations

import pytest
import torch

from repro.born_biased.preference_probe import probe
from repro.born_biased.preference_runs import random_token_inputs
from repro.core.data import random_tokens
from repro.core.models.hf import build_model, default_d_ff
from repro.ground.runtime import generator, resolve_dtype
from repro.harness.bench import mean_seconds, time_matmul

# --------------------------------------------------------------------------- sizes

# probe case: a 4-layer slice of the 001 §3 GPT-2-small-width model, the ci profile's lengths
ARCH, N_LAYER, N_HEAD, D_MODEL, VOCAB = "rope-gpt2", 4, 12, 768, 50257
N_SEQ, T, LENGTHS = 64, 64, (16, 32, 64)
PROBE_ROUNDS = 3  # + 1 warm-up: ~10 s for both dtypes on 2 idle cores

AUTO_DTYPE = resolve_dtype("auto")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def probe_flops(
    *, n_layer: int, d_model: int, d_ff: int, vocab_size: int, n_seq: int, T: int, n_lengths: int
) -> dict[str, float]:
    """Useful FLOPs of one `probe` call (multiply-add = 2 FLOPs; norms, activations, softmax,
    RoPE and the embedding lookup are not counted):

    - projections, per token per layer: 2·(4d² + 2·d·d_ff) (Q, K, V, O; MLP up and down);
    - attention, per token per layer: 2·2·T_avg·d (QKᵀ and A·V) with the causal average context
      T_avg = (T+1)/2;
    - LM head only at the probed positions: 2·d·V per sequence per probe length (the head's
      discarded one-position logits inside the HF forward are overhead, not useful work).
    """
    tokens = n_seq * T
    proj = tokens * n_layer * 2 * (4 * d_model**2 + 2 * d_model * d_ff)
    attn = tokens * n_layer * 2 * 2 * ((T + 1) / 2) * d_model
    head = n_seq * n_lengths * 2 * d_model * vocab_size
    return dict(projections=float(proj), attention=float(attn), lm_head=float(head), total=float(proj + attn + head))


# --------------------------------------------------------------------------- matmul reference


@pytest.fixture(scope="module")
def matmul_rate() -> dict[str, dict[str, float]]:
    """Dense-matmul FLOP/s in this run, for float32 and the probe's auto dtype (median of
    repro.harness.bench.MM_REPS timed matmuls after MM_WARMUP warm-ups), keyed by dtype name."""
    return {_dtype_name(dt): time_matmul(dt) for dt in dict.fromkeys((torch.float32, AUTO_DTYPE))}


# --------------------------------------------------------------------------- probe throughput


@pytest.fixture(scope="module")
def probe_inputs() -> torch.Tensor:
    return random_token_inputs(N_SEQ, T, VOCAB)


@pytest.fixture(scope="module")
def probe_models():
    """rope-gpt2 models built on demand, once per dtype, as `preference_run` builds them."""
    cache: dict[torch.dtype, torch.nn.Module] = {}

    def get(dtype: torch.dtype) -> torch.nn.Module:
        if dtype not in cache:
            cache[dtype] = build_model(
                ARCH,
                n_layer=N_LAYER,
                n_head=N_HEAD,
                d_model=D_MODEL,
                vocab_size=VOCAB,
                seed=0,
                embedding_seed=0,
                n_positions=T,
                attn_implementation="sdpa",
                dtype=dtype,
            )
        return cache[dtype]

    yield get
    cache.clear()


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_probe_throughput(benchmark, capsys, matmul_rate, probe_models, probe_inputs, dtype_name):
    dtype = DTYPES[dtype_name]
    if dtype != torch.float32 and AUTO_DTYPE != dtype:
        pytest.skip(
            f"resolve_dtype('auto') is {_dtype_name(AUTO_DTYPE)} on this machine ({dtype_name} not native, "
            "or native but measured slower than float32 — `repro env`): probes never run in "
            f"{dtype_name} here"
        )
    model = probe_models(dtype)

    benchmark.group = f"probe(): {ARCH} {N_LAYER}L d={D_MODEL} V={VOCAB}, {N_SEQ}×{T} tokens, lengths {LENGTHS}"
    res = benchmark.pedantic(
        probe,
        args=(model, probe_inputs),
        kwargs=dict(lengths=LENGTHS, keep_states=False),
        rounds=PROBE_ROUNDS,
        warmup_rounds=1,
        iterations=1,
    )

    n_len = len(LENGTHS)
    assert res.next_token.shape == (n_len, N_SEQ)
    assert res.top_dim.shape == (n_len, N_SEQ)
    assert res.final_normed.shape == (n_len, N_SEQ, D_MODEL)
    assert res.states is None
    assert res.info["dtype"] == str(dtype)

    flops = probe_flops(
        n_layer=N_LAYER,
        d_model=D_MODEL,
        d_ff=default_d_ff(ARCH, D_MODEL),
        vocab_size=VOCAB,
        n_seq=N_SEQ,
        T=T,
        n_lengths=n_len,
    )
    mm = matmul_rate[dtype_name]
    info = benchmark.extra_info
    info.update(
        arch=ARCH,
        n_layer=N_LAYER,
        d_model=D_MODEL,
        vocab_size=VOCAB,
        n_seq=N_SEQ,
        T=T,
        lengths=list(LENGTHS),
        dtype=dtype_name,
        torch_threads=torch.get_num_threads(),
        useful_gflop=flops["total"] / 1e9,
        useful_gflop_split={k: v / 1e9 for k, v in flops.items() if k != "total"},
        matmul_gflop_per_s=mm["gflop_per_s"],
        matmul_best_gflop_per_s=mm["best_gflop_per_s"],
        matmul_shape=mm["shape"],
    )
    seconds = mean_seconds(benchmark)
    if seconds is None:
        return
    useful = flops["total"] / seconds / 1e9
    # the matmul again, right after the probe: a ratio far from 1 means the machine's load
    # changed during the run (other processes), and this run's efficiency is not comparable
    after = time_matmul(dtype)["gflop_per_s"]
    info.update(
        seconds_per_probe=seconds,
        tokens_per_s=N_SEQ * T / seconds,
        useful_gflop_per_s=useful,
        efficiency=useful / mm["gflop_per_s"],
        matmul_gflop_per_s_after=after,
        matmul_drift=after / mm["gflop_per_s"],
    )
    with capsys.disabled():
        print(
            f"\n[probe {dtype_name}] {info['tokens_per_s']:,.0f} tokens/s, {useful:.1f} useful GFLOP/s, "
            f"matmul {mm['gflop_per_s']:.1f} GFLOP/s, efficiency {info['efficiency']:.2f} "
            f"({seconds:.3f} s/probe, {info['useful_gflop']:.1f} GFLOP; matmul after/before {info['matmul_drift']:.2f})"
        )


# --------------------------------------------------------------------------- plain HF forward

HF_V, HF_T, HF_N = 8000, 128, 32


@pytest.fixture(scope="module")
def hf_forward():
    model = build_model("rope-gpt2", n_layer=4, n_head=4, d_model=256, vocab_size=HF_V, seed=0)
    ids = random_tokens(HF_N, HF_T, HF_V, generator(0))
    return model, ids


@pytest.mark.parametrize("logits_to_keep", [1, 0], ids=["last-position", "all-positions"])
def test_probe_forward(benchmark, hf_forward, logits_to_keep):
    """The ratio of the two cases' times, measured in one run, is the number to read."""
    model, ids = hf_forward

    def run():
        with torch.no_grad():
            return model(input_ids=ids, logits_to_keep=logits_to_keep).logits.argmax(-1)

    benchmark.group = f"HF forward, rope-gpt2 4L d=256 V={HF_V}, {HF_N}×{HF_T}: logits kept"
    out = benchmark.pedantic(run, rounds=5, warmup_rounds=1)
    assert out.shape == (HF_N, 1 if logits_to_keep == 1 else HF_T)
    seconds = mean_seconds(benchmark)
    if seconds is not None:
        benchmark.extra_info["tokens_per_s"] = HF_N * HF_T / seconds
