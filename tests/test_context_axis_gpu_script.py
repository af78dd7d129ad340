"""scripts/context_axis_gpu.sh and scripts/context_axis_gpu_report.py, the GPU run of the
one-launch context-axis kernels: the shell script parses, and the report reads the benchmark's
rows into the issue's bars — each bar holding on rows that meet it and failing on rows that do
not (the negative controls), a row cut off by a time limit dropped, the exactness tests' JUnit
counts read. The run itself (SMOKE=1 on the CPU) is in the script's header."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("context_axis_gpu_report", SCRIPTS / "context_axis_gpu_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(kernel, S, pas, tflops, *, memory=1.05, bf16=800.0, dtype="bfloat16"):
    useful = 4 * 4 * 64 * sum((c + 1) ** 2 for c in range(S)) / 1e12 * (3.5 if pas == "fwdbwd" else 1.0)
    return dict(
        device="cuda",
        kernel=kernel,
        S=S,
        dtype=dtype,
        pass_=pas,
        seconds=useful / tflops,
        tflop_per_s=tflops,
        fraction_of_bf16=tflops / bf16,
        fraction_of_fp32=tflops / 50.0,
        fraction_of_tf32=tflops / 400.0,
        memory_over_output=memory,
    )


def _rows(flex_rate=450.0, flex_memory=1.03):
    rows = []
    for S in (256, 512, 1024, 2048):
        for pas in ("fwd", "fwdbwd"):
            rows += [_row("jagged_anchor", S, pas, 300.0), _row("flex", S, pas, flex_rate, memory=flex_memory)]
            rows += [_row("dense", S, pas, 200.0 if S > 256 else 500.0, memory=1.1)]
    return rows


def test_the_bars_hold_on_rows_that_meet_them(report):
    s = report.summarize(_rows(), {"passed": 12, "failed": 0, "skipped": 0, "failures": []})
    assert s["bars"] == {"bf16_half_at_2048": True, "beats_anchor": True, "memory": True, "exact": True}
    assert s["best_exact"]["cuda/bfloat16/fwd/2048"] == "flex" and s["best_exact"]["cuda/bfloat16/fwd/256"] == "dense"
    assert s["dense_faster_than_flex_at"] == [256] and not s["bars_unmeasured"]
    row = next(r for r in s["table"] if r["kernel"] == "flex" and r["S"] == 2048 and r["pass"] == "fwd")
    assert row["of_anchor"] == pytest.approx(1.5) and row["fraction_of_bf16"] == pytest.approx(450 / 800)


def test_the_bars_fail_on_rows_that_miss_them(report):
    """The negative controls: a best kernel under half the bf16 rate and under the anchor, a
    best kernel over 1.2× its output, a failed exactness test; missing cases are named."""
    slow = report.summarize(_rows(flex_rate=250.0), {"passed": 11, "failed": 1, "skipped": 0, "failures": ["x"]})
    assert slow["bars"]["bf16_half_at_2048"] is False and slow["bars"]["beats_anchor"] is False
    assert slow["bars"]["exact"] is False
    assert report.summarize(_rows(flex_memory=1.5))["bars"]["memory"] is False
    part = report.summarize([r for r in _rows() if r["S"] != 1024])
    assert part["bars_unmeasured"] == ["bfloat16 fwd S=1024", "bfloat16 fwdbwd S=1024"]
    assert part["bars"]["exact"] is None and report.summarize([])["bars"]["bf16_half_at_2048"] is None


def test_the_report_reads_its_files_and_writes_the_table(report, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in _rows()) + '\n{"device": "cu')  # cut off by a time limit
    junit = tmp_path / "exact.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b">'
        '<failure message="x"/></testcase><testcase classname="t" name="c"><skipped/></testcase>'
        "</testsuite></testsuites>"
    )
    assert len(report.read_rows(rows)) == len(_rows())
    assert report.read_junit(junit) == {"passed": 1, "failed": 1, "skipped": 1, "failures": ["t::b"]}
    assert report.main([str(rows), "--exact", str(junit), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "README.md").read_text()
    assert "| 2048 | flex | yes | 22.821 | 450 |" in text and "| exact | no |" in text and "- failed: `t::b`" in text
    assert json.loads((tmp_path / "out" / "context_axis_gpu.json").read_text())["bars"]["memory"] is True
    assert report.main([str(tmp_path / "none.jsonl"), "--out", str(tmp_path)]) == 2


def test_the_run_script_parses():
    done = subprocess.run(["bash", "-n", str(SCRIPTS / "context_axis_gpu.sh")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
