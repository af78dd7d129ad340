"""`repro plan` against the device times measured in results/ (`repro.harness.calibration`): every
measurement's seconds are what its claims.json says, each fitted host rate is its measurement's
fit, every measured row's estimate is within 2× of it, and the time model's parts (`cost.op_census`,
`cost.job_seconds`) count what they say by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from repro.core import cost
from repro.ground.errors import ReproError
from repro.harness import calibration, plan

ROOT = Path(__file__).resolve().parents[1]

# The calibration table (docs/sizes.md, "What the plan's time model was checked against"): per
# measurement (device, its jobs' first experiment and `what`, how it was measured), the measured
# seconds, the FLOP model's estimate before the time model (FLOPs at the bfloat16 peak × 40%) and
# the time model's after, as `repro plan --profile paper --device <gpu>` prints them. A change of
# the model that moves an estimate changes this table and the docs' with it; 2%: four significant
# figures, and the op census's counts under another torch or transformers version.
TABLE = [
    ("h100", "bb_1", "alone", 72.811, 23.58, 50.11),
    ("h100", "bb_1", "alone", 77.913, 23.58, 50.11),
    ("h100", "bb_1_2", "stopped", 316.0, 130.4, 189.1),
    ("h100", "bb_2_2", "stopped", 286.0, 97.88, 262.2),
    ("h100", "bb_4", "alone", 19.923, 0.02749, 19.86),
    ("h100", "bb_4_2", "alone", 118.488, 1.002, 132.3),
    ("h100", "bb_6", "alone", 7.167, 0.01237, 6.028),
    ("h100", "residual_stream", "alone", 110.894, 0.0227, 110.9),
    ("h100", "causal_shift", "alone", 25.611, 0.6564, 39.78),
    ("h100", "spectral", "stopped", 112.181, 23.23, 372.0),
    ("h100", "spectral", "shared", 201.25, 23.23, 372.0),
    ("h200", "bb_1", "shared", 65.272, 23.58, 43.45),
    ("h200", "bb_1_2", "shared", 166.143, 130.4, 177.3),
    ("h200", "bb_1", "shared", 343.862, 154.0, 220.7),
    ("h200", "bb_2_2", "stopped", 205.0, 97.88, 239.9),
    ("h200", "bb_4", "shared", 22.55, 0.02749, 19.86),
    ("h200", "bb_4_2", "shared", 115.068, 1.002, 132.3),
    ("h200", "bb_6", "shared", 5.227, 0.01237, 6.028),
    ("h200", "sinks", "alone", 174.288, 8.6, 245.8),
    ("h200", "residual_stream", "shared", 93.173, 1.113, 28.26),
    ("h200", "residual_stream", "alone", 35.493, 1.941, 35.55),
]


@pytest.fixture(scope="module")
def matches() -> dict[str, list[calibration.Match]]:
    return {gpu: plan.plan("paper", device=gpu).calibration for gpu in ("h100", "h200")}


def _durations(source: str, test: str) -> float:
    """A test's duration in the claims.json a measurement names ("other_claims.json:nodeid": a
    sibling file of the same session)."""
    first = ROOT / source.split(" + ")[0]
    path, node = (first.with_name(test.split(":", 1)[0]), test.split(":", 1)[1]) if ".json:" in test else (first, test)
    return json.loads(path.read_text())["run"]["test_durations_s"][node]


def test_each_measurement_is_the_sum_of_its_tests_durations():
    measurements, not_costed = calibration.load()
    summed = [m for m in measurements if m.tests]
    assert len(summed) >= 15 and not_costed
    for m in summed:
        total = sum(_durations(m.source, t) for t in m.tests)
        # claims.json rounds each duration to the millisecond
        assert total == pytest.approx(m.seconds, abs=1e-3 * len(m.tests)), (m.source, m.jobs)
    for m in measurements:
        assert (
            m.how in calibration.HOW
            and m.device in plan.GPUS
            and (m.tests or "README" in m.source or "issue" in m.source)
        )


def test_each_uncosted_time_is_what_its_source_says():
    """`not_costed` (times no plan row estimates): one read off a claims.json is one test's duration
    there, or the sum of one claims file's tests (CA-1 … CA-7); one read off a README quotes it."""
    _, not_costed = calibration.load()
    assert len(not_costed) >= 8
    for entry in not_costed:
        source, seconds = entry["source"], entry["seconds"]
        if seconds is None:
            continue
        if source.endswith("claims.json"):
            durations = json.loads((ROOT / source).read_text())["run"]["test_durations_s"]
            by_file: dict[str, float] = {}
            for node, d in durations.items():
                by_file[node.split("::")[0]] = by_file.get(node.split("::")[0], 0.0) + d
            assert any(d == pytest.approx(seconds, abs=1e-3) for d in durations.values()) or any(
                d == pytest.approx(seconds, abs=1e-3 * len(durations)) for d in by_file.values()
            ), entry
        else:
            path, quote = source.split(": ", 1)
            assert quote.strip("'") in (ROOT / path).read_text(), entry
            assert f"{seconds:g} s" in quote, entry


def test_each_fitted_host_rate_is_its_measurements_fit(matches):
    fitted = {}
    for gpu, ms in matches.items():
        rates = plan.plan_device(gpu).rates()
        for m in ms:
            if m.measurement.fits:
                fitted[m.measurement.fits] = calibration.refit(m, rates)
    assert set(fitted) == {"host_normals_per_s", "dispatch_s", "load_s"}
    for name, value in fitted.items():
        # GPU_HOST keeps three significant figures of each fit
        assert plan.GPU_HOST[name] == pytest.approx(value, rel=0.02), name


def test_every_measured_row_is_within_2x_of_the_time_model(matches):
    """measured / estimate in [0.5, 2] for a time measured alone; a shared time (beside other runs)
    bounds it from below, a stopped one from above. The FLOP model alone fails the same rule, so
    the rule can fail."""
    checked = [m for ms in matches.values() for m in ms]
    assert len(checked) == len(calibration.load()[0])
    off = [(m.measurement.device, m.measurement.jobs, round(m.ratio, 2)) for m in checked if not m.holds()]
    assert not off, off
    flop_off = [m for m in checked if not m.holds(m.flop_ratio)]
    assert len([m for m in flop_off if m.measurement.how == "alone"]) >= 5


def test_the_calibration_table(matches):
    rows = [m for gpu in ("h100", "h200") for m in matches[gpu]]
    for device, experiment, how, measured, before, after in TABLE:
        found = [
            m
            for m in rows
            if m.measurement.device == device
            and m.measurement.jobs[0][0] == experiment
            and m.measurement.how == how
            and m.measurement.seconds == measured
        ]
        assert len(found) == 1, (device, experiment, measured)
        m = found[0]
        assert m.flop_estimate == pytest.approx(before, rel=0.02), (device, experiment, measured, m.flop_estimate)
        assert m.estimate == pytest.approx(after, rel=0.02), (device, experiment, measured, m.estimate)
    assert len(TABLE) == len(rows)
    docs = (ROOT / "docs" / "sizes.md").read_text()
    for device, experiment, how, measured, before, after in TABLE:
        row = (
            f"| {device} | {experiment} | {how} | {measured:g} | {before:.4g} | {measured / before:.3g} | {after:.4g} |"
        )
        assert row in docs, row


def test_a_renamed_row_under_a_measurement_is_an_error():
    bad = calibration.Measurement("h100", "ci", (("bb_1", "no such job"),), 1.0, "alone", "x", "x")
    p = plan.plan("ci", device="h100")
    with pytest.raises(ReproError, match="no such job.*not a job"):
        calibration.matches(p.jobs, "h100", "ci", p.rates(), [bad])


# --------------------------------------------------------------------------- the time model by hand


def test_op_census_by_hand():
    a, b = torch.ones(2, 2), torch.ones(4)

    def work():
        b.view(2, 2)  # a view: dispatched, no kernel, no bytes
        b + 1  # a kernel: 16 bytes read, 16 written
        a @ a  # a matmul: its traffic is left to its FLOPs

    c = cost.op_census(work)
    assert (c.dispatches, c.kernels, c.bytes) == (3, 2, 32)


def test_job_seconds_by_hand():
    r = cost.Rates(
        tflops=100.0,
        tflops_fp32=10.0,
        utilisation=0.5,
        bandwidth_gbs=1000.0,
        bandwidth_utilisation=0.5,
        host_normals_per_s=1e8,
        h2d_gbs=10.0,
        dispatch_s=1e-5,
        load_s=3.0,
    )
    model = dict(d_model=8, n_layer=2, n_head=2, vocab_size=50)
    row = dict(
        experiment="x", claims="BB-1", what="w", kind="infer", models=2, params=1000, model=model, T=10, tokens=100
    )
    j = cost.Job.of(**row)
    j.fp32_flops, j.mem_bytes, j.host_normals, j.h2d_bytes, j.dispatches, j.loads = 5e11, 1e11, 1e8, 1e10, 1e4, 1
    t = cost.job_seconds(j, r)
    policy = j.flops - 2 * 5e11
    assert t["compute"] == pytest.approx(policy / 50e12 + 2 * 5e11 / 5e12)
    assert t["memory"] == pytest.approx(2 * 1e11 / 500e9)
    assert t["host"] == pytest.approx(2 * (1.0 + 1.0) + 3.0)
    assert t["dispatch"] == pytest.approx(2 * 1e4 * 1e-5)
    assert t["total"] == pytest.approx(t["host"] + max(t["compute"] + t["memory"], t["dispatch"]))
    whole = cost.job_seconds(cost.Job.of(**row, dtype="float32"), r)
    assert whole["compute"] == pytest.approx(j.models * cost.forward_flops(1000, 2, 10, 8, 100) / 5e12)


def test_a_cpu_plan_is_the_flop_model_and_a_gpu_plan_adds_the_host():
    cpu = plan.plan("paper", device="cpu", tflops=1.0)
    assert all(cpu.seconds(j) == pytest.approx(cpu.flop_seconds(j), rel=1e-9) for j in cpu.jobs)
    assert not cpu.calibration
    gpu = plan.plan("paper", device="h100")
    bb_4 = next(j for j in gpu.jobs if j.experiment == "bb_4")
    assert gpu.terms(bb_4)["host"] > 100 * gpu.flop_seconds(bb_4)
    assert gpu.device.rates().load_s == plan.GPU_HOST["load_s"] and math.isfinite(gpu.device.rates().bandwidth_gbs)


def test_hf_layer_traffic_counts_the_layer_not_the_model():
    """A layer's memory-bound bytes per token grow with its width, its dispatches do not; a LLaMA
    layer (RMSNorm in float32, SwiGLU) moves more per token than a RoPE GPT-2 one of its width."""
    small, n_small, _ = cost.count_hf_layer("rope-gpt2", 64, 4)
    wide, n_wide, _ = cost.count_hf_layer("rope-gpt2", 128, 4)
    llama, _, _ = cost.count_hf_layer("llama", 64, 4)
    assert n_small == n_wide and 1.8 < wide / small < 2.2  # linear in d (its MLP is 4d wide)
    # every layer reads and writes its (d) stream at least a dozen times in bfloat16: norms, residual adds, RoPE
    assert small > 12 * 64 * 2 and llama > small


def test_train_step_dispatches_grow_with_depth():
    one = cost.count_train_step("tiny", 1, 4, autocast=False, block="attn", positions="rope", tie_embeddings=False)
    two = cost.count_train_step("tiny", 2, 4, autocast=False, block="attn", positions="rope", tie_embeddings=False)
    three = cost.count_train_step("tiny", 3, 4, autocast=False, block="attn", positions="rope", tie_embeddings=False)
    assert one < two < three and two - one == three - two  # a layer's ops, forward, backward and optimiser


def test_repro_plan_json_carries_the_calibration(capsys):
    from repro.harness.cli import main

    assert main(["plan", "--profile", "paper", "--device", "h200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["calibration"] and all("ratio" in c and "flop_ratio" in c for c in out["calibration"])
    sk1 = next(j for j in out["jobs"] if j["what"].startswith("first block of each variant"))
    assert sk1["measured"] and sk1["measured"][0]["ratio"] == pytest.approx(174.288 / sk1["seconds"])
    assert sk1["terms"]["memory"] > sk1["flop_seconds"]


def test_then_is_the_code_that_ran(monkeypatch):
    """A measurement's `then` is its jobs as the measured code had them, not a free number: BB's
    TinyDecoder rows with their Gaussian inputs drawn on the host (`born_biased.sizes.INPUTS_ON_HOST`),
    the directions fixture's models drawn on the host (`cost.hf_probe_terms`'s host build), RS-8's
    tuned lens at the paper row's former 250 steps (2%: the census of its bytes under another torch)."""
    from repro.born_biased import sizes as bb_sizes

    monkeypatch.setattr(bb_sizes, "INPUTS_ON_HOST", True)
    jobs = plan.plan("paper", device="h100").jobs
    for m in calibration.load()[0]:
        for what, fields in m.then.items():
            job = next(j for j in jobs if j.what.startswith(what))
            if job.what.endswith("tuned-lens training"):  # RS-8's paper lens as it ran: 250 steps of 512 tokens
                from repro.residual_stream.sizes import _rs_tuned_lens

                name = job.what.split(":")[0]
                old = _rs_tuned_lens(name, cost.embedded()[name], {"steps": 250, "batch_tokens": 512})
                assert fields == pytest.approx({k: getattr(old, k) for k in fields}, rel=0.02), what
            elif job.experiment == "bb_2_2":
                host = cost.hf_probe_terms(
                    "rope-gpt2", params=job.params, d=job.d, L=job.L, H=job.H, V=job.V, n_seq=1, T=1
                )
                assert fields == {"host_normals": host["host_normals"], "h2d_bytes": host["h2d_bytes"]}
            else:
                assert fields == {"host_normals": job.host_normals}, (m.source, what)
