"""Context-axis attention kernels (004 §2.3, §3.1; CA-7): time, achieved FLOP/s against an
in-run dense-matmul ceiling, and peak memory, for every kernel of `repro.context_axis.kernels`.

Run without xdist: ``make bench`` (``python -m pytest benchmarks/ -p no:xdist``), which also
writes the pytest-benchmark JSON under artifacts/benchmarks/. With ``--benchmark-disable`` (CI)
every case runs once at small S as a smoke test. Nothing here asserts a time. Per case,
``extra_info`` holds:

- ``useful_gflop``: the FLOPs that can reach the diagonal (multiply-add = 2): per head
  Σ_c 4·(c+1)²·d for the full layout (slice c over its prefix, QKᵀ and A·V), and
  Σ_c 4·d·(c+1)·min(k, c+1) for segment k (k live queries per slice over c+1 keys);
- ``gflop_per_s`` (useful / mean time) and ``fraction_of_ceiling``: against a dense
  (2048×768)@(768×3072) matmul on the same device, timed between this case's rounds
  (`repro.harness.bench.InterleavedCeiling`; ``matmul_gflop_per_s``, the median over its rounds)
  — the run-start rate it replaced drifted from the kernel's on a shared VM;
- ``peak_mib_above_inputs`` (CPU, full runs): peak RSS a fresh process adds while running the
  kernel once on inputs it already holds, and ``memory_over_output`` = that / the output size.

`test_one_launch` times `gpu_kernels`' one-launch kernels (flex, dense, jagged) beside the
jagged-SDPA anchor (the prefixes already packed, one nested-tensor SDPA) and a padded dense SDPA
(every slice over all S keys, unmasked: twice the work, not exact), forward and forward +
backward, bf16 and float32 on CUDA (S up to 2048; CPU: float32 forward at S = 128, 256, for
information), against dense 8192³ matmuls timed before each case (bf16, float32, TF32); one JSON
line per case in artifacts/benchmarks/context_axis_one_launch.jsonl, which
scripts/context_axis_gpu_report.py turns into the GPU run's table.

`test_summary` then writes artifacts/benchmarks/context_axis_summary.json and a log–log time
figure, with the issue's performance ratios measured in this one run: the best exact kernel's
fraction of the ceiling at S = 512, its speed-up over masked_sdpa (S = 512) and naive
(S = 256), its memory over output, and the log–log slopes of segment time and memory in k.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from repro.context_axis import gpu_kernels as gk
from repro.context_axis import kernels as ca
from repro.context_axis import whole_model as cl
from repro.ground import native
from repro.ground.cache import atomic_path
from repro.ground.runtime import generator
from repro.harness.bench import InterleavedCeiling, mean_seconds, peak_memory_above

B, H, D = 1, 4, 64
# S per device: on CUDA up to 2048 (issue 22 item 5: q, k, v are B·H·S·S·D floats, 4.3 GB each at 2048)
FULL_S = {"cpu": (64, 128, 256, 512), "cuda": (64, 128, 256, 512, 1024, 2048)}
SMOKE_S = (16, 32)
SEG_K, SMOKE_K = (1, 4, 16, 64), (1, 4)
SEG_S, SMOKE_SEG_S = 512, 32
SEGMENT = 16  # segment size of the "segment" row in the per-S groups
KERNELS = ("naive", "masked_sdpa", "trimmed", "fused", "segment", "flex")
EXACT = ("naive", "masked_sdpa", "trimmed", "fused", "flex")  # full-layout kernels: the "best exact kernel" candidates
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
MODEL_MODES = ("causal", "full", "segment:2", "segment:8")
RESULTS: dict[tuple, dict] = {}  # filled by the cases, read by test_summary


def _smoke(config) -> bool:
    return bool(config.getoption("benchmark_disable", False))


def pytest_generate_tests(metafunc):
    smoke = _smoke(metafunc.config)
    if "S" in metafunc.fixturenames:
        pairs = [(dev, S) for dev in DEVICES for S in (SMOKE_S if smoke else FULL_S[dev])]
        metafunc.parametrize("device,S", pairs, ids=[f"{dev}-{S}" for dev, S in pairs])
    if "K" in metafunc.fixturenames:
        metafunc.parametrize("K", SMOKE_K if smoke else SEG_K)
    if "one_case" in metafunc.fixturenames:
        cases = _one_cases(smoke)
        metafunc.parametrize("one_case", cases, ids=["-".join(map(str, c)) for c in cases])


def useful_flops(S: int, K: int | None = None) -> float:
    c = np.arange(1, S + 1, dtype=float)  # prefix length c + 1
    per_head = 4 * D * (c * c).sum() if K is None else 4 * D * (c * np.minimum(K, c)).sum()
    return float(B * H * per_head)


def output_bytes(S: int, K: int | None = None) -> int:
    return B * H * (K or S) * S * D * 4


def _inputs(S: int, device: str, K: int | None = None):
    """q, k, v drawn on `device` itself (seeded per S; CUDA draws differ from CPU draws)."""
    g = generator(S) if device == "cpu" else torch.Generator(device=device).manual_seed(S)
    shape = (B, H, S, S, D) if K is None else (B, H, min(K, S), S, D)
    return [torch.randn(*shape, generator=g, device=device) for _ in range(3)]


def _runner(kernel: str, q, k, v, device: str):
    fn = ca.segment if kernel == "segment" else (lambda *a: ca.attend(*a, kernel=kernel))
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def run():
        with torch.no_grad():
            out = fn(q, k, v)
        sync()
        return out

    return run


_SETUP = """
import torch
from repro.context_axis import gpu_kernels as gk
from repro.context_axis import kernels as ca
g = torch.Generator().manual_seed({S})
q, k, v = (torch.randn(*{shape}, generator=g) for _ in range(3))
"""


def _measure(benchmark, *, device: str, kernel: str, S: int, K: int | None, group: str, key: tuple):
    if kernel == "naive" and S > ca.NAIVE_MAX_S:
        pytest.skip(f"naive is the reference for S ≤ {ca.NAIVE_MAX_S}")
    if kernel == "flex" and device != "cuda":
        pytest.skip("flex runs eagerly on the CPU (torch's dense reference): its CPU times are test_one_launch's")
    if kernel == "fused":
        if device != "cpu":
            pytest.skip("fused is the CPU kernel (C++); on a GPU trimmed's ops are the ones timed")
        ok, why = native.available(ca.FUSED_SOURCE)
        if not ok:
            pytest.skip(why)
    q = k = v = run = None
    try:
        q, k, v = _inputs(S, device, K)
        run = _runner(kernel, q, k, v, device)
        benchmark.group = group
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
            held = torch.cuda.memory_allocated()
        ceiling = InterleavedCeiling(torch.float32, device)
        out = benchmark.pedantic(run, setup=ceiling.setup, rounds=5, warmup_rounds=1, iterations=1)
        oom = False
    except torch.OutOfMemoryError:
        oom = True
    if oom:  # skip outside the handler, inputs released: a held traceback would keep them for the next case
        q = k = v = run = None
        if device == "cuda":
            torch.cuda.empty_cache()
        pytest.skip(f"{kernel} at S = {S} does not fit in {device} memory")
    # the diagonal is exact: against the trimmed kernel's out="diagonal" (O(S²) work)
    with torch.no_grad():
        want = ca.segment(q, k, v, out="diagonal") if kernel == "segment" else ca.trimmed(q, k, v, out="diagonal")
    got = out[:, :, 0] if kernel == "segment" else ca.diagonal(out)
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)  # float32 kernels of different shapes
    flops = useful_flops(S, K if kernel == "segment" else None)
    info = benchmark.extra_info
    info.update(
        device=device,
        kernel=kernel,
        S=S,
        k=K,
        heads=H,
        head_dim=D,
        batch=B,
        dtype="float32",
        torch_threads=torch.get_num_threads(),
        useful_gflop=flops / 1e9,
        output_mib=output_bytes(S, K if kernel == "segment" else None) / 2**20,
        matmul_gflop_per_s=ceiling.gflop_per_s,
    )
    seconds = mean_seconds(benchmark)
    if seconds is None:
        return
    info.update(
        seconds=seconds,
        gflop_per_s=flops / seconds / 1e9,
        fraction_of_ceiling=flops / seconds / 1e9 / ceiling.gflop_per_s,
    )
    if device == "cuda":  # peak the caching allocator saw above the inputs (output included)
        above = torch.cuda.max_memory_allocated() - held
        info.update(
            peak_mib_above_inputs=above / 2**20,
            memory_over_output=above / output_bytes(S, K if kernel == "segment" else None),
        )
    elif device == "cpu":
        shape = (B, H, S, S, D) if kernel != "segment" else (B, H, min(K, S), S, D)
        call = "ca.segment(q, k, v)" if kernel == "segment" else f"ca.attend(q, k, v, kernel={kernel!r})"
        above = peak_memory_above(_SETUP.format(S=S, shape=shape), f"with torch.no_grad(): out = {call}")
        info.update(
            peak_mib_above_inputs=above / 2**20,
            memory_over_output=above / output_bytes(S, K if kernel == "segment" else None),
        )
    RESULTS[key] = dict(info)


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel(benchmark, device, kernel, S):
    K = SEGMENT if kernel == "segment" else None
    _measure(
        benchmark, device=device, kernel=kernel, S=S, K=K, group=f"context axis {device} S={S}", key=(device, kernel, S)
    )


@pytest.mark.parametrize("device", DEVICES)
def test_segment_in_k(benchmark, request, device, K):
    S = SMOKE_SEG_S if _smoke(request.config) else SEG_S
    _measure(
        benchmark,
        device=device,
        kernel="segment",
        S=S,
        K=K,
        group=f"segment(k) {device} S={S}",
        key=(device, "segment-k", S, K),
    )


# --------------------------------------------------------------------------- one launch for all slices

# `gpu_kernels` against the jagged-SDPA anchor, forward and forward + backward. CUDA: bf16 at
# every S (the headline S = 2048 first, so a run stopped by its time limit keeps it), float32 at
# two; the CPU: float32 forward at S = 128, 256 for information (FlexAttention runs eagerly there)
ONE_S = {"cpu": (128, 256), "cuda": (2048, 256, 512, 1024, 64, 128)}
SMOKE_ONE_S = (24,)
ONE_EXACT = ("flex", "dense", "jagged")
ANCHORS = ("jagged_anchor", "padded_anchor")  # SDPA on inputs already packed / padded: not our layout
TUNED = "max-autotune-no-cudagraphs"  # torch.compile's mode for "flex_tuned": flex with its tiles autotuned
# backward FLOPs as FlashAttention counts them: the backward's five products (the scores again,
# dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q) against the forward's two, 2.5× the forward, so
# forward + backward is 3.5× the forward's useful work
FWDBWD_FACTOR = 3.5
ONE_ROWS = "context_axis_one_launch.jsonl"  # one line per case, written as it finishes
_BUILT: set = set()  # (kernel, S, dtype) whose flex kernels this run built
_WRITTEN: set = set()  # the rows file, once truncated in this run


def _one_cases(smoke: bool) -> list[tuple]:
    """(device, S, kernel, dtype, pass) in running order."""
    out: list[tuple] = []
    for dev in DEVICES:
        if smoke:
            for S in SMOKE_ONE_S:
                for kn in (*ONE_EXACT, *ANCHORS, "trimmed"):
                    passes = ("fwd",) if kn == "flex" and dev == "cpu" else ("fwd", "fwdbwd")  # no CPU flex backward
                    out += [(dev, S, kn, "float32", p) for p in passes]
        elif dev == "cpu":
            out += [(dev, S, kn, "float32", "fwd") for S in ONE_S[dev] for kn in ("flex", "dense", "jagged", "trimmed")]
        else:
            for S in ONE_S[dev]:
                out += [(dev, S, kn, "bfloat16", p) for kn in (*ONE_EXACT, *ANCHORS) for p in ("fwd", "fwdbwd")]
            for S in (2048, 512):
                out += [(dev, S, kn, "float32", p) for kn in ("flex", "jagged_anchor") for p in ("fwd", "fwdbwd")]
                out.append((dev, S, "trimmed", "float32", "fwd"))
            # last, for what time is left: flex with Inductor's autotuning of its tiles (minutes of builds)
            out += [(dev, S, "flex_tuned", "bfloat16", p) for S in (2048, 256) for p in ("fwd", "fwdbwd")]
    return out


def _gpu_ceilings(device: str) -> dict[str, float]:
    """Dense 8192³ matmul rates on `device` now (TFLOP/s, median of 3 after a warm-up, CUDA
    events): bf16, float32 as the run sets TF32 (off by default), and TF32 forced on."""
    n = 8192
    g = torch.Generator(device=device).manual_seed(0)
    out = {}
    for name, dtype, tf32 in (
        ("bf16", torch.bfloat16, None),
        ("fp32", torch.float32, None),
        ("tf32", torch.float32, True),
    ):
        a, b = (torch.randn(n, n, generator=g, device=device, dtype=dtype) for _ in range(2))
        before = torch.backends.cuda.matmul.allow_tf32
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            times = []
            for _ in range(4):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                a @ b
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
        out[name] = 2 * n**3 / float(np.median(times[1:])) / 1e12
        del a, b
    return out


def _one_inputs(kernel: str, S: int, device: str, dtype: torch.dtype, grad: bool) -> list[torch.Tensor]:
    """The case's operands: (B, H, S, S, D) q, k, v for our kernels; for the jagged anchor the
    prefixes already packed, (B·S(S+1)/2, H, D) values of B·S sequences of 1 … S tokens; for the
    padded anchor (B·H, S, S, D), every slice over all S keys, unmasked (twice the work, not
    exact)."""
    g = torch.Generator(device=device).manual_seed(S)
    shape = {"jagged_anchor": (B * S * (S + 1) // 2, H, D), "padded_anchor": (B * H, S, S, D)}.get(
        kernel, (B, H, S, S, D)
    )
    return [torch.randn(*shape, generator=g, device=device, dtype=dtype).requires_grad_(grad) for _ in range(3)]


def _one_call(kernel: str, S: int, device: str):
    if kernel == "jagged_anchor":  # the nested views made in the call, so each backward has its own graph
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.arange(1, S + 1).repeat(B).cumsum(0)]).to(device)
        return lambda *qkv: F.scaled_dot_product_attention(*(gk._nested(t, offsets, S) for t in qkv))
    if kernel == "padded_anchor":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v)
    if kernel == "flex_tuned":
        return lambda q, k, v: gk.flex(q, k, v, mode=TUNED)
    return lambda q, k, v: ca.attend(q, k, v, kernel=kernel)


def _dense_out(out: torch.Tensor) -> torch.Tensor:
    return out.values() if out.is_nested else out


@pytest.fixture
def smoke_threads(request):
    """Smoke cases on one intra-op thread: their tiny ops on a busy 2-core machine's OpenMP team
    ran ~1000× slower (tests/conftest.py's `one_thread`); a timed run keeps the machine's count."""
    n = torch.get_num_threads()
    if _smoke(request.config):
        torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.usefixtures("smoke_threads")
def test_one_launch(benchmark, request, one_case):
    """One case of `_one_cases`: time (pytest-benchmark, synchronised), useful TFLOP/s against
    the dense-matmul ceilings timed just before (CUDA: bf16, fp32, TF32; CPU: the interleaved
    float32 ceiling), peak memory above the inputs against the output, and for our exact kernels
    the diagonal against `gpu_kernels.diagonal_only` in float32 (the kernels' full exactness:
    tests/test_context_axis_gpu_kernel.py)."""
    device, S, kernel, dt, pas = one_case
    dtype = getattr(torch, dt)
    if kernel.startswith("flex") and device == "cuda" and not gk.compiler_ready(device):
        pytest.skip("torch.compile cannot build FlexAttention here (no Triton)")
    grad = pas == "fwdbwd"
    cuda = device == "cuda"
    if cuda and kernel.startswith("flex") and (kernel, S, dt) not in _BUILT:  # kernels built for this
        torch._dynamo.reset()  # shape alone, as a fixed-shape user (CA-8's training) gets them
        _BUILT.add((kernel, S, dt))
    ins = None
    try:
        ins = _one_inputs(kernel, S, device, dtype, grad)
        fn = _one_call(kernel, S, device)
        gout = None
        if grad:
            with torch.no_grad():
                gout = torch.randn_like(_dense_out(fn(*ins)))

        def run():
            if grad:
                for t in ins:
                    t.grad = None
                _dense_out(fn(*ins)).backward(gout)
            else:
                with torch.no_grad():
                    fn(*ins)
            if cuda:
                torch.cuda.synchronize()

        timed = not _smoke(request.config)
        ceilings = _gpu_ceilings(device) if cuda and timed else None
        ceiling = InterleavedCeiling(torch.float32, device) if timed and not cuda else None
        benchmark.group = f"one launch {device} {dt} {pas} S={S}"
        benchmark.pedantic(run, setup=ceiling and ceiling.setup, rounds=5, warmup_rounds=1, iterations=1)
        if cuda:
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            run()
            above = torch.cuda.max_memory_allocated() - held
        oom = False
    except torch.OutOfMemoryError:
        oom = True
    if oom:
        ins = gout = None
        if cuda:
            torch.cuda.empty_cache()
        pytest.skip(f"{kernel} at S = {S} ({dt}, {pas}) does not fit in {device} memory")
    flops = useful_flops(S) * (FWDBWD_FACTOR if grad else 1.0)
    out_bytes = B * H * S * S * D * dtype.itemsize
    info = benchmark.extra_info
    info.update(device=device, kernel=kernel, S=S, dtype=dt, pass_=pas, heads=H, head_dim=D, batch=B)
    info.update(useful_gflop=flops / 1e9, output_mib=out_bytes / 2**20, exact=kernel not in ANCHORS)
    if kernel not in ANCHORS and not grad:
        q, k, v = (t.detach().float() for t in ins)
        with torch.no_grad():
            got, want = ca.diagonal(fn(*ins)).float(), gk.diagonal_only(q, k, v)
        info["diagonal_rel_error"] = float((got - want).norm() / want.norm())
        assert info["diagonal_rel_error"] <= (3e-2 if dtype == torch.bfloat16 else 2e-3)  # as the tests' bounds
    seconds = mean_seconds(benchmark)
    if seconds is not None:
        rate = flops / seconds / 1e12
        info.update(seconds=seconds, tflop_per_s=rate)
        if cuda:
            info.update({f"{n}_tflop_per_s": c for n, c in ceilings.items()})
            info.update({f"fraction_of_{n}": rate / c for n, c in ceilings.items()})
            info.update(peak_mib_above_inputs=above / 2**20, memory_over_output=above / out_bytes)
        else:
            info.update(fp32_tflop_per_s=ceiling.gflop_per_s / 1e3, fraction_of_fp32=rate / (ceiling.gflop_per_s / 1e3))
        RESULTS[("one", device, kernel, dt, pas, S)] = dict(info)
    target = Path(request.config.rootpath) / "artifacts" / "benchmarks" / ONE_ROWS
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = "a" if target in _WRITTEN else "w"  # a fresh file per run
    _WRITTEN.add(target)
    with target.open(mode) as f:
        f.write(json.dumps({**info, "torch": torch.__version__}) + "\n")


# --------------------------------------------------------------------------- a small LM


@pytest.fixture(scope="module")
def small_lm(request):
    S = 16 if _smoke(request.config) else 64
    lm = cl.build_lm(dict(n_layer=2, n_head=4, d_model=64, vocab_size=2048), S, 0, train_mode="causal")
    ids = torch.randint(0, 2048, (8, S), generator=generator(0))
    return lm.model.eval(), ids


@pytest.mark.parametrize("mode", MODEL_MODES)
def test_model_forward(benchmark, small_lm, mode):
    """A 2-layer llama-style LM (d = 64, V = 2048), 8 × S tokens, float32: the diagonal logits
    under each mode; `ratio_to_causal` read against the causal case of this run."""
    model, ids = small_lm

    def run():
        with torch.no_grad():
            return cl.logits(model, ids, mode)

    benchmark.group = f"small LM forward 8×{ids.shape[1]}"
    out = benchmark.pedantic(run, rounds=5, warmup_rounds=1, iterations=1)
    assert out.shape == (*ids.shape, 2048)
    seconds = mean_seconds(benchmark)
    benchmark.extra_info.update(mode=mode, tokens=ids.numel())
    if seconds is None:
        return
    RESULTS[("model", mode)] = dict(seconds=seconds)
    if ("model", "causal") in RESULTS:
        benchmark.extra_info["ratio_to_causal"] = seconds / RESULTS[("model", "causal")]["seconds"]


# --------------------------------------------------------------------------- summary


def _slope(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def test_summary(request, capsys):
    """The issue's performance ratios, measured in this run (recorded, not asserted)."""
    if _smoke(request.config) or not RESULTS:
        pytest.skip("benchmarking disabled (smoke run): no times to summarise")
    out: dict = {"devices": {}}
    for dev in DEVICES:
        rows = {(k[1], k[2]): v for k, v in RESULTS.items() if k[0] == dev and len(k) == 3}
        if not rows:  # this device's cases were deselected (e.g. -k cuda)
            continue
        s_max = max(s for _, s in rows)
        exact = {kn: rows[(kn, s_max)] for kn in EXACT if (kn, s_max) in rows}
        best = min(exact, key=lambda kn: exact[kn]["seconds"])
        d: dict = {
            "S_max": s_max,
            "best_exact": best,
            "best_fraction_of_ceiling": exact[best]["fraction_of_ceiling"],
            "best_gflop_per_s": exact[best]["gflop_per_s"],
        }
        if ("masked_sdpa", s_max) in rows:
            d["speedup_vs_masked_sdpa"] = rows[("masked_sdpa", s_max)]["seconds"] / exact[best]["seconds"]
        s_naive = max((s for kn, s in rows if kn == "naive"), default=None)
        if s_naive and (best, s_naive) in rows:
            d["naive_S"] = s_naive
            d["speedup_vs_naive"] = rows[("naive", s_naive)]["seconds"] / rows[(best, s_naive)]["seconds"]
        if "memory_over_output" in exact[best]:
            d["best_memory_over_output"] = exact[best]["memory_over_output"]
        seg = sorted((k[3], v) for k, v in RESULTS.items() if k[0] == dev and k[1] == "segment-k")
        if len(seg) > 1:
            ks = [k for k, _ in seg]
            d["segment_time_slope_in_k"] = _slope(ks, [v["seconds"] for _, v in seg])
            if all("peak_mib_above_inputs" in v for _, v in seg):
                d["segment_memory_slope_in_k"] = _slope(ks, [max(v["peak_mib_above_inputs"], 1e-3) for _, v in seg])
        d["table"] = [
            dict(
                kernel=kn,
                S=s,
                ms=1e3 * v["seconds"],
                gflop_per_s=v["gflop_per_s"],
                fraction_of_ceiling=v["fraction_of_ceiling"],
                peak_mib_above_inputs=v.get("peak_mib_above_inputs"),
                output_mib=v["output_mib"],
            )
            for (kn, s), v in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1]))
        ]
        d["segment_k"] = [
            dict(k=k, ms=1e3 * v["seconds"], peak_mib_above_inputs=v.get("peak_mib_above_inputs")) for k, v in seg
        ]
        out["devices"][dev] = d
    one = [v for k, v in RESULTS.items() if k[0] == "one"]
    if one:  # the one-launch cases as measured (scripts/context_axis_gpu_report.py reads them against the anchor)
        out["one_launch"] = one
    model = {m: RESULTS[("model", m)]["seconds"] for m in MODEL_MODES if ("model", m) in RESULTS}
    if "causal" in model:
        out["model_ratio_to_causal"] = {m: t / model["causal"] for m, t in model.items()}
    target = Path(request.config.rootpath) / "artifacts" / "benchmarks"
    with atomic_path(target / "context_axis_summary.json") as tmp:
        Path(tmp).write_text(json.dumps(out, indent=2))
    from repro.context_axis import figures

    for dev, d in out["devices"].items():
        curves = {}
        for row in d["table"]:
            curves.setdefault(row["kernel"], ([], []))
            curves[row["kernel"]][0].append(row["S"])
            curves[row["kernel"]][1].append(row["ms"])
        fig = figures.cost_vs_length(
            curves,
            f"context-axis kernels on {dev}: time vs S (H={H}, d={D})",
            "ms",
            {n: _slope(*c) for n, c in curves.items() if len(c[0]) > 1},
        )
        with atomic_path(target / f"context_axis_time_vs_S_{dev}.png") as tmp:
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
        figures.plt.close(fig)
    with capsys.disabled():
        print(
            "\n"
            + json.dumps(
                {
                    dev: {k: v for k, v in d.items() if k not in ("table", "segment_k")}
                    for dev, d in out["devices"].items()
                },
                indent=1,
            )
        )
        for dev, d in out["devices"].items():
            for row in d["table"]:
                mem = row["peak_mib_above_inputs"]
                print(
                    f"{dev:5s} {row['kernel']:12s} S={row['S']:4d} {row['ms']:9.1f} ms {row['gflop_per_s']:7.1f} "
                    f"GFLOP/s {row['fraction_of_ceiling']:5.2f} of ceiling  mem "
                    f"{'—' if mem is None else f'{mem:.0f}'} MiB (output {row['output_mib']:.0f} MiB)"
                )
        for r in one:
            fr = r.get("fraction_of_bf16", r.get("fraction_of_fp32"))
            print(
                f"{r['device']:5s} {r['kernel']:14s} {r['dtype']:8s} {r['pass_']:6s} S={r['S']:4d} "
                f"{1e3 * r['seconds']:9.3f} ms {r['tflop_per_s']:8.3f} TFLOP/s {fr:6.3f} of the ceiling"
            )
        print(out.get("model_ratio_to_causal"))
