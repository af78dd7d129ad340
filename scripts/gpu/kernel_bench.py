"""Queue item 1 (issue 67): the exact context-axis kernels of `repro.context_axis.gpu_kernels`
(flex, dense, jagged; `kernels.attend(kernel=…)`), forward and forward + backward, at B = 1,
H = 4, d = 64, S ∈ {2048, 256, 512, 1024} (the headline S first, so a run stopped by its deadline
keeps it), bf16 then float32, beside the jagged-SDPA anchor (004's prefixes already packed as one
nested tensor, one `scaled_dot_product_attention`: the rate the issue compares against) measured in
the same process, and against the bf16 dense matmul rate timed in the same process before each S.

Per case: median seconds of `--reps` timed calls after one warm-up (which builds flex's kernels;
CUDA events around each call on the GPU, `perf_counter` on the CPU); useful TFLOP/s, 4·H·d·Σ_c (c+1)²
FLOPs forward (slice c over its c+1 prefix keys, QKᵀ and A·V) and 3.5× that forward + backward
(FlashAttention's count: the backward's five products against the forward's two); that rate as a
fraction of the bf16 matmul rate and of the anchor's of the same S, dtype and pass; on CUDA the peak
memory above the inputs of one more call (`torch.cuda.max_memory_allocated`) over the output's size
(the CPU has no allocator peak to read: null). Exactness: on `--slices` slices of each case (every
slice at S ≤ 64; else the first two, the last two and evenly spaced ones between), the kernel's output
against the float64 CPU oracle of that slice on the same inputs (softmax(QKᵀ/√d)V over the prefix,
rows past c zero); forward + backward: the three input gradients of those slices against float64
autograd of the oracle with the same output gradient. Bounds (bf16 3e-2 / float32 2e-3 relative
in the output, 5e-2 / 5e-3 in the gradients, as tests/test_context_axis_gpu_kernel.py and the
benchmark bound the diagonal) are evaluated, never asserted: the JSON records them.

Writes `kernel_bench.json` under --out after every case (atomically) and `report.md` at the end:
the best exact kernel per (S, dtype, pass) and the issue's bars (module `BARS`). `--toy` runs the
same code at S = 16, 32 with 2 reps (the CPU test, tests/test_gpu_queue.py).

    python3 scripts/gpu/kernel_bench.py --out "$OUT"                 # the device run
    python scripts/gpu/kernel_bench.py --toy --device cpu --out /tmp/kb   # the CPU check
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from repro.context_axis import gpu_kernels as gk  # noqa: E402
from repro.context_axis import kernels as ca  # noqa: E402

SCHEMA = 1
B, H, D = 1, 4, 64
FULL_S = (2048, 256, 512, 1024)
TOY_S = (16, 32)
DTYPES = ("bfloat16", "float32")
PASSES = ("fwd", "fwdbwd")
EXACT = gk.GPU_KERNELS  # flex, dense, jagged
ANCHOR = "jagged_anchor"
FWDBWD_FACTOR = 3.5
# relative error bounds (output, gradients) per dtype: bf16 rounds its output at 2⁻⁸
BOUND = {"bfloat16": (3e-2, 5e-2), "float32": (2e-3, 5e-3)}
# the issue's bars (evaluated on the CUDA rows, never asserted)
HALF_OF_BF16 = 0.5
MEMORY_BAR = 1.2
BARS = {
    "bf16_half_at_2048": "best exact kernel at S = 2048, bf16, forward ≥ 0.5 of the bf16 matmul rate",
    "beats_anchor": "best exact kernel ≥ the jagged anchor at every S, forward and forward + backward",
    "memory": f"best exact kernel's forward memory above its inputs ≤ {MEMORY_BAR}× its output at every S",
    "exact": "every timed exact kernel within its bound against the float64 oracle",
}


def useful_flops(S: int, grad: bool) -> float:
    return B * H * 4 * D * sum((c + 1) ** 2 for c in range(S)) * (FWDBWD_FACTOR if grad else 1.0)


def slices_of(S: int, n: int) -> list[int]:
    """Every slice at S ≤ 64; else 0, 1, S − 2, S − 1 and evenly spaced ones between (n in all)."""
    if S <= 64:
        return list(range(S))
    inner = [round(S * (i + 1) / (n - 3)) for i in range(max(n - 4, 0))]
    return sorted({0, 1, S - 2, S - 1, *[min(max(c, 2), S - 3) for c in inner]})


def oracle(q, k, v, c: int, gout=None):
    """Slice c in float64 on the CPU: (out (B, H, S, d) with rows > c zero, grads of q, k, v's
    slice c or None)."""
    qs, ks, vs = (t[:, :, c].detach().to("cpu", torch.float64).requires_grad_(gout is not None) for t in (q, k, v))
    n = c + 1
    a = torch.softmax(qs[:, :, :n] @ ks[:, :, :n].transpose(-1, -2) / math.sqrt(D), dim=-1)
    out = torch.zeros_like(qs)
    out[:, :, :n] = a @ vs[:, :, :n]
    grads = None
    if gout is not None:
        out.backward(gout[:, :, c].detach().to("cpu", torch.float64))
        grads = [t.grad for t in (qs, ks, vs)]
    return out.detach(), grads


def exactness(kernel_out, ins, gout, slices, dtype: str) -> dict:
    """Output (and gradients when `gout` is given) of the sampled slices against `oracle`: the
    relative error ‖got − want‖ / ‖want‖ over all sampled slices together, per tensor (a single
    slice's gradient can be exactly zero: slice 0's query gradient, one key under the softmax), and
    the largest |value| the kernel left past c (must be 0)."""
    q, k, v = ins
    sq = {"out": [0.0, 0.0], "dq": [0.0, 0.0], "dk": [0.0, 0.0], "dv": [0.0, 0.0]}
    upper = 0.0

    def add(name, got, want):
        got = got.detach().to("cpu", torch.float64)
        sq[name][0] += float((got - want).square().sum())
        sq[name][1] += float(want.square().sum())

    for c in slices:
        want, grads = oracle(q, k, v, c, gout)
        got = kernel_out[:, :, c]
        add("out", got, want)
        if c + 1 < got.shape[-2]:
            upper = max(upper, float(got[:, :, c + 1 :].detach().abs().max()))
        if grads is not None:
            for name, t, g in zip(("dq", "dk", "dv"), ins, grads):
                add(name, t.grad[:, :, c], g)
    err = {n: math.sqrt(e / w) if w > 0 else (0.0 if e == 0 else math.inf) for n, (e, w) in sq.items() if w or e}
    bound_out, bound_grad = BOUND[dtype]
    res = {"slices": len(slices), "out_rel": err["out"], "upper_max_abs": upper, "bound_out": bound_out}
    ok = err["out"] <= bound_out and upper == 0.0
    if gout is not None:
        res.update({f"{n}_rel": err[n] for n in ("dq", "dk", "dv")}, grad_rel=max(err[n] for n in ("dq", "dk", "dv")))
        res["bound_grad"] = bound_grad
        ok = ok and res["grad_rel"] <= bound_grad
    res["ok"] = ok
    return res


class Clock:
    """Seconds of one call: CUDA events on the GPU, perf_counter on the CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def __call__(self, fn) -> float:
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t


def matmul_bf16_tflops(device: torch.device, n: int, reps: int) -> float:
    """The dense bf16 matmul rate now: n³ products, median of `reps` after a warm-up."""
    g = torch.Generator(device=device).manual_seed(0)
    a, b = (torch.randn(n, n, generator=g, device=device, dtype=torch.bfloat16) for _ in range(2))
    clock = Clock(device)
    clock(lambda: a @ b)
    return 2 * n**3 / statistics.median(clock(lambda: a @ b) for _ in range(reps)) / 1e12


def inputs(kernel: str, S: int, device, dtype, grad: bool):
    g = torch.Generator(device=device).manual_seed(S)
    shape = (B * S * (S + 1) // 2, H, D) if kernel == ANCHOR else (B, H, S, S, D)
    return [torch.randn(*shape, generator=g, device=device, dtype=dtype).requires_grad_(grad) for _ in range(3)]


def call_of(kernel: str, S: int, device):
    if kernel == ANCHOR:
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.arange(1, S + 1).repeat(B).cumsum(0)]).to(device)
        return lambda *qkv: F.scaled_dot_product_attention(*(gk._nested(t, offsets, S) for t in qkv)).values()
    return lambda q, k, v: ca.attend(q, k, v, kernel=kernel)


def run_case(kernel, S, dtype_name, pas, device, reps, n_slices) -> dict:
    dtype, grad = getattr(torch, dtype_name), pas == "fwdbwd"
    row = dict(kernel=kernel, S=S, dtype=dtype_name, pass_=pas, exact_kernel=kernel != ANCHOR)
    cuda = device.type == "cuda"
    ins = gout = out = None
    try:
        if cuda and kernel == "flex":
            torch._dynamo.reset()  # flex's kernels built for this shape alone
        ins = inputs(kernel, S, device, dtype, grad)
        fn = call_of(kernel, S, device)
        if grad:
            with torch.no_grad():
                gout = torch.randn_like(fn(*ins))

        def once():
            nonlocal out
            if grad:
                for t in ins:
                    t.grad = None
                out = fn(*ins)
                out.backward(gout)
            else:
                with torch.no_grad():
                    out = fn(*ins)

        clock = Clock(device)
        t0 = time.perf_counter()
        once()  # warm-up: builds flex's kernels
        row["first_call_s"] = time.perf_counter() - t0
        times = [clock(once) for _ in range(reps)]
        seconds = statistics.median(times)
        flops = useful_flops(S, grad)
        row.update(seconds=seconds, times=times, tflop_per_s=flops / seconds / 1e12)
        out_bytes = B * H * S * S * D * dtype.itemsize
        row["output_bytes"] = out_bytes
        if cuda:
            out = None
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            once()
            torch.cuda.synchronize()
            above = torch.cuda.max_memory_allocated() - held
            row.update(memory_above_inputs_bytes=above, memory_over_output=above / out_bytes)
        else:
            row.update(memory_above_inputs_bytes=None, memory_over_output=None)
        if kernel != ANCHOR:
            row["exactness"] = exactness(out, ins, gout, slices_of(S, n_slices), dtype_name)
        row["status"] = "ok"
    except torch.OutOfMemoryError:
        row["status"] = "out of memory"
    except Exception as err:  # a kernel that cannot run this case: recorded, the run goes on
        row["status"] = f"error: {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
    finally:
        ins = gout = out = None
        if cuda:
            torch.cuda.empty_cache()
    return row


def summarize(cases: list[dict], rates: dict) -> dict:
    """Ratios, the best exact kernel per (S, dtype, pass), the bars."""
    ok = [r for r in cases if r.get("status") == "ok"]
    anchors = {(r["S"], r["dtype"], r["pass_"]): r for r in ok if r["kernel"] == ANCHOR}
    for r in ok:
        r["fraction_of_bf16"] = r["tflop_per_s"] / rates[str(r["S"])] if str(r["S"]) in rates else None
        a = anchors.get((r["S"], r["dtype"], r["pass_"]))
        r["of_anchor"] = r["tflop_per_s"] / a["tflop_per_s"] if a else None
    best: dict[tuple, dict] = {}
    for r in ok:
        if r["kernel"] == ANCHOR or not r["exactness"]["ok"]:
            continue
        key = (r["S"], r["dtype"], r["pass_"])
        if key not in best or r["seconds"] < best[key]["seconds"]:
            best[key] = r
    best_rows = [
        {k: best[key].get(k) for k in ("S", "dtype", "pass_", "kernel", "tflop_per_s", "fraction_of_bf16")}
        | {"of_anchor": best[key].get("of_anchor"), "memory_over_output": best[key].get("memory_over_output")}
        for key in sorted(best)
    ]

    def every(rows, test):
        rows = [r for r in rows if r is not None]
        return None if not rows else all(test(r) for r in rows)

    head = best.get((max(FULL_S), "bfloat16", "fwd"))
    timed_exact = [r for r in ok if r["kernel"] != ANCHOR]
    bars = {
        "bf16_half_at_2048": None if head is None else head["fraction_of_bf16"] >= HALF_OF_BF16,
        "beats_anchor": every(
            [r if r["of_anchor"] is not None else None for r in best.values()], lambda r: r["of_anchor"] >= 1.0
        ),
        "memory": every(
            [r if r["pass_"] == "fwd" and r["memory_over_output"] is not None else None for r in best.values()],
            lambda r: r["memory_over_output"] <= MEMORY_BAR,
        ),
        "exact": every(timed_exact, lambda r: r["exactness"]["ok"]),
    }
    return {"best": best_rows, "bars": bars}


def write_json(path: Path, obj: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)


def report(doc: dict) -> str:
    f = lambda x, s=".3f": "—" if x is None else format(x, s)  # noqa: E731
    lines = ["# Context-axis kernels: best exact kernel against the bf16 matmul and the jagged anchor", ""]
    lines += [f"device: {doc['device']['name']} · torch {doc['device']['torch']} · toy {doc['toy']}", ""]
    lines += [
        "bf16 dense matmul rate before each S (TFLOP/s): "
        + ", ".join(f"S={S}: {r:.1f}" for S, r in doc["matmul_bf16_tflops"].items()),
        "",
    ]
    lines += ["| bar | holds | what |", "|---|---|---|"]
    lines += [f"| {k} | {'—' if v is None else ('yes' if v else 'no')} | {BARS[k]} |" for k, v in doc["bars"].items()]
    lines += [
        "",
        "| S | dtype | pass | best exact | TFLOP/s | of bf16 mm | of anchor | memory / output |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["best"]:
        lines.append(
            f"| {r['S']} | {r['dtype']} | {r['pass_']} | {r['kernel']} | {f(r['tflop_per_s'], '.3g')} | "
            f"{f(r['fraction_of_bf16'])} | {f(r['of_anchor'], '.2f')} | {f(r['memory_over_output'], '.2f')} |"
        )
    lines += [
        "",
        "| S | dtype | pass | kernel | status | ms | of bf16 mm | of anchor | out rel err | grad rel err |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["cases"]:
        ex = r.get("exactness") or {}
        lines.append(
            f"| {r['S']} | {r['dtype']} | {r['pass_']} | {r['kernel']} | {r['status']} | "
            f"{f(r.get('seconds') and 1e3 * r['seconds'])} | {f(r.get('fraction_of_bf16'))} | "
            f"{f(r.get('of_anchor'), '.2f')} | "
            f"{f(ex.get('out_rel'), '.2e')} | {f(ex.get('grad_rel'), '.2e')} |"
        )
    if doc.get("stopped"):
        lines += ["", f"stopped: {doc['stopped']}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--toy", action="store_true", help="S = 16, 32 and 2 reps: the CPU check of this script")
    ap.add_argument("--device", default="auto", help="auto (cuda if there is one), cuda or cpu")
    ap.add_argument("--S", default=None, help="comma-separated S (default: 2048,256,512,1024; toy 16,32)")
    ap.add_argument("--kernels", default=",".join(EXACT))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--slices", type=int, default=10, help="slices checked against the float64 oracle per case")
    ap.add_argument("--deadline-s", type=float, default=330.0, help="start no case after this many seconds")
    a = ap.parse_args(argv)
    device = torch.device(
        "cuda" if a.device == "auto" and torch.cuda.is_available() else ("cpu" if a.device == "auto" else a.device)
    )
    Ss = tuple(int(s) for s in a.S.split(",")) if a.S else (TOY_S if a.toy else FULL_S)
    kernels = [k for k in a.kernels.split(",") if k]
    bad = [k for k in kernels if k not in EXACT]
    if bad:
        print(f"unknown kernel(s) {', '.join(bad)}: choose from {', '.join(EXACT)}", file=sys.stderr)
        return 2
    reps = a.reps or (2 if a.toy else 5)
    dtypes = tuple(d for d in a.dtypes.split(",") if d)
    if not set(dtypes) <= set(DTYPES):
        print(f"--dtypes: choose from {', '.join(DTYPES)}", file=sys.stderr)
        return 2
    if a.toy:
        torch.set_num_threads(1)  # tiny ops on a busy CPU's OpenMP team run far slower than on one thread
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "kernel_bench.json"
    doc = {
        "schema": SCHEMA,
        "toy": a.toy,
        "device": {
            "type": device.type,
            "name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
            "torch": torch.__version__,
            "python": platform.python_version(),
            "threads": torch.get_num_threads(),
        },
        "config": dict(
            B=B,
            H=H,
            d=D,
            S=list(Ss),
            dtypes=list(dtypes),
            passes=list(PASSES),
            kernels=kernels,
            reps=reps,
            fwdbwd_factor=FWDBWD_FACTOR,
            bounds=BOUND,
            deadline_s=a.deadline_s,
        ),
        "matmul_bf16_tflops": {},
        "cases": [],
        "best": [],
        "bars": {},
        "stopped": None,
    }
    t0 = time.perf_counter()
    n_mm = 512 if (a.toy or device.type == "cpu") else 8192
    for S, dt, pas, kn in (
        (S, dt, pas, kn) for S in Ss for dt in dtypes for pas in PASSES for kn in (*kernels, ANCHOR)
    ):
        if time.perf_counter() - t0 > a.deadline_s:
            doc["stopped"] = f"deadline {a.deadline_s:.0f} s reached before S={S} {dt} {pas} {kn}"
            break
        if str(S) not in doc["matmul_bf16_tflops"]:  # the rate now, before this S's cases
            doc["matmul_bf16_tflops"][str(S)] = matmul_bf16_tflops(device, n_mm, 3)
        if kn == "flex" and device.type != "cuda" and pas == "fwdbwd":
            continue  # torch has no CPU flex backward (gpu_kernels' docstring)
        row = run_case(kn, S, dt, pas, device, reps, a.slices)
        row["elapsed_s"] = time.perf_counter() - t0
        doc["cases"].append(row)
        doc.update(summarize(doc["cases"], doc["matmul_bf16_tflops"]))
        write_json(path, doc)
        took = f" {1e3 * row['seconds']:.3f} ms" if "seconds" in row else ""
        print(f"{row['elapsed_s']:7.1f} s  S={S} {dt} {pas} {kn}: {row['status']}{took}", flush=True)
    doc["elapsed_s"] = time.perf_counter() - t0
    doc.update(summarize(doc["cases"], doc["matmul_bf16_tflops"]))
    write_json(path, doc)
    text = report(doc)
    (a.out / "report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
