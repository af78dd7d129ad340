"""The GPU run's table: benchmarks/test_context_axis_kernels.py's one-launch rows (one JSON line
per case) and the exactness tests' JUnit XML → `context_axis_gpu.json` and `README.md` in --out.

Reads, per (S, dtype, pass), every kernel's useful TFLOP/s (4·H·d·Σ(c+1)² FLOPs forward, 3.5×
that forward + backward) as a fraction of the dense bf16, float32 and TF32 matmul rates timed
just before the case and of the jagged-SDPA anchor of the same S, dtype and pass; its memory
above the inputs over the output's size; and the issue's bars, evaluated, never asserted:

- `bf16_half_at_2048`: the best exact kernel at S = 2048, bf16, forward, ≥ 0.5 of the bf16 matmul;
- `beats_anchor`: the best exact kernel ≥ the jagged anchor at S = 256 … 2048, forward and
  forward + backward (bf16);
- `memory`: the best exact kernel's forward memory ≤ 1.2× its output at every S;
- `exact`: the CUDA exactness tests passed (none failed, some ran).

Usage: python scripts/context_axis_gpu_report.py ROWS.jsonl [--exact exact.xml] [--device device.txt] --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

EXACT = ("flex", "flex_tuned", "dense", "jagged", "trimmed")  # flex_tuned: flex with its tiles autotuned
ANCHOR = "jagged_anchor"
BAR_S = (256, 512, 1024, 2048)
HALF_OF_BF16 = 0.5
MEMORY_BAR = 1.2


def read_rows(path: Path) -> list[dict]:
    """The benchmark's JSON lines; a line cut off by a run's time limit is dropped."""
    rows = []
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def read_junit(path: Path | None) -> dict:
    """Counts and failed test names of a pytest JUnit XML; {} when there is none."""
    if path is None or not Path(path).exists():
        return {}
    root = ET.parse(path).getroot()
    out = {"passed": 0, "failed": 0, "skipped": 0, "failures": []}
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            out["failed"] += 1
            out["failures"].append(name)
        elif case.find("skipped") is not None:
            out["skipped"] += 1
        else:
            out["passed"] += 1
    return out


def summarize(rows: list[dict], exact: dict | None = None) -> dict:
    """Per (device, dtype, pass, S): the timed kernels with their ratios, the best exact one;
    then the bars (module docstring) on the CUDA rows."""
    timed = [r for r in rows if r.get("seconds")]
    groups: dict[tuple, list[dict]] = {}
    for r in timed:
        groups.setdefault((r["device"], r["dtype"], r["pass_"], r["S"]), []).append(r)
    table = []
    best: dict[tuple, dict] = {}
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], k[3])):
        anchor = next((r for r in groups[key] if r["kernel"] == ANCHOR), None)
        for r in sorted(groups[key], key=lambda r: r["seconds"]):
            row = {
                "device": key[0],
                "dtype": key[1],
                "pass": key[2],
                "S": key[3],
                "kernel": r["kernel"],
                "exact": r["kernel"] in EXACT,
                "ms": 1e3 * r["seconds"],
                "tflop_per_s": r["tflop_per_s"],
                **{f: r.get(f) for f in ("fraction_of_bf16", "fraction_of_fp32", "fraction_of_tf32")},
                "of_anchor": r["tflop_per_s"] / anchor["tflop_per_s"] if anchor else None,
                "memory_over_output": r.get("memory_over_output"),
                "diagonal_rel_error": r.get("diagonal_rel_error"),
            }
            table.append(row)
            if row["exact"] and key not in best:
                best[key] = row
    cuda = {k: v for k, v in best.items() if k[0] == "cuda"}

    def bar(key_rows, test):
        return None if not key_rows else all(test(r) for r in key_rows)

    head = cuda.get(("cuda", "bfloat16", "fwd", 2048))
    vs_anchor = [r for k, r in cuda.items() if k[1] == "bfloat16" and k[3] in BAR_S]
    memory = [r for k, r in cuda.items() if k[1] == "bfloat16" and k[2] == "fwd"]
    bars = {
        "bf16_half_at_2048": None if head is None else head["fraction_of_bf16"] >= HALF_OF_BF16,
        "beats_anchor": bar([r for r in vs_anchor if r["of_anchor"] is not None], lambda r: r["of_anchor"] >= 1.0),
        "memory": bar(
            [r for r in memory if r["memory_over_output"] is not None], lambda r: r["memory_over_output"] <= MEMORY_BAR
        ),
        "exact": None if not exact else exact["failed"] == 0 and exact["passed"] > 0,
    }
    wanted = {("bfloat16", p, S) for p in ("fwd", "fwdbwd") for S in BAR_S}
    missing = sorted(wanted - {(k[1], k[2], k[3]) for k in cuda})
    # the size rule of gpu_kernels.pick (dense up to DENSE_MAX_S, flex beyond) read off the rows:
    # the largest S at which dense was the faster of the two, bf16 forward
    fast = {}
    for r in table:
        if (
            r["device"] == "cuda"
            and r["dtype"] == "bfloat16"
            and r["pass"] == "fwd"
            and r["kernel"] in ("flex", "dense")
        ):
            fast.setdefault(r["S"], r["kernel"])  # rows are sorted by time within a group
    dense_wins = [S for S, k in sorted(fast.items()) if k == "dense"]
    return {
        "table": table,
        "best_exact": {"/".join(map(str, k)): v["kernel"] for k, v in best.items()},
        "bars": bars,
        "bars_unmeasured": [f"{dt} {p} S={S}" for dt, p, S in missing],
        "dense_faster_than_flex_at": dense_wins,
        "exact_tests": exact or {},
    }


def _f(x, spec=".3f"):
    return "—" if x is None else format(x, spec)


def readme(summary: dict, device: str = "") -> str:
    """The run's README: the bars, then one table per device, dtype and pass."""
    lines = ["# Context-axis one-launch kernels on the GPU", ""]
    if device:
        lines += ["```", device.strip(), "```", ""]
    lines += ["| bar | holds |", "|---|---|"]
    lines += [f"| {k} | {'—' if v is None else ('yes' if v else 'no')} |" for k, v in summary["bars"].items()]
    if summary["bars_unmeasured"]:
        lines += ["", "Not measured (time limit, memory or a failed case): " + ", ".join(summary["bars_unmeasured"])]
    ex = summary["exact_tests"]
    if ex:
        lines += ["", f"Exactness tests: {ex['passed']} passed, {ex['failed']} failed, {ex['skipped']} skipped"]
        lines += [f"- failed: `{n}`" for n in ex["failures"]]
    lines += ["", f"dense faster than flex (bf16 forward) at S = {summary['dense_faster_than_flex_at'] or 'none'}"]
    groups: dict[tuple, list[dict]] = {}
    for r in summary["table"]:
        groups.setdefault((r["device"], r["dtype"], r["pass"]), []).append(r)
    for (dev, dt, p), rows in groups.items():
        lines += ["", f"## {dev}, {dt}, {p}", ""]
        lines += [
            "| S | kernel | exact | ms | useful TFLOP/s | of bf16 mm | of fp32 mm | of TF32 mm | of jagged anchor "
            "| memory / output |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sorted(rows, key=lambda r: (r["S"], r["ms"])):
            cells = [r["S"], r["kernel"], "yes" if r["exact"] else "no", f"{r['ms']:.3f}", f"{r['tflop_per_s']:.3g}"]
            cells += [_f(r[f]) for f in ("fraction_of_bf16", "fraction_of_fp32", "fraction_of_tf32")]
            cells += [_f(r["of_anchor"], ".2f"), _f(r["memory_over_output"], ".2f")]
            lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("--exact", type=Path, default=None)
    ap.add_argument("--device", type=Path, default=None)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if not a.rows.exists():
        print(f"no benchmark rows at {a.rows}: did the benchmark run?", file=sys.stderr)
        return 2
    summary = summarize(read_rows(a.rows), read_junit(a.exact))
    device = a.device.read_text() if a.device and a.device.exists() else ""
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "context_axis_gpu.json").write_text(json.dumps(summary, indent=1))
    text = readme(summary, device)
    (a.out / "README.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
