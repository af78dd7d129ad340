"""The GPU queue of issue 67: its items in order, the device sessions they make, and the payloads
(wheels, the Brown corpus, the mix corpus's other four parts, the embedded GGUFs) each call
carries — here (`plan`, `stage`) and on the device machine (`stash`, `assemble`).

A device session has 15 minutes (start-up, transfers, idle and close counted), ≤ 10 minutes a
call, and each call carries the working tree plus its `carry` paths, 64 MiB in all
(/work/.library/device/README.md). The machine is fresh each session and stays warm 30 s after a
call, so a payload that does not fit one call goes over in parts, in calls made back to back, each
part stashed outside the repository copy (`STASH`, default /root/gpu-stash) until its payload is
whole. `plan` assigns the items, in the issue's order, to sessions: a session takes the next item
while its start-up, the item's command, its call's overhead and the transfer calls its payloads need
fit in the session's minutes; a payload's parts ride in the session's earlier calls where they have
room, else in transfer calls just before the item that needs them. `stage` writes each call's
folder `.cache/gpu/<call>/` (git-ignored by the repository's `.cache/`): the parts it carries and
`call.json` (its item, the payloads' manifests). On the device each call runs

    bash scripts/gpu/call.sh <call>          (run: carry [".cache/gpu/<call>"])

which stashes the carried parts, assembles every payload its item needs (sha256 of the whole
archive, then of each GGUF against fixtures/manifest.json), installs the wheels and runs the item's
script (scripts/gpu/<item>.sh) with $OUT.

    python scripts/gpu/gpu_queue.py plan             # the sessions, from the estimated payload sizes
    python scripts/gpu/gpu_queue.py stage            # build .cache/gpu/ (pip download of the wheels)
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGE = ROOT / ".cache" / "gpu"
MIB = 2**20
CALL_LIMIT_BYTES = 64 * MIB  # the working tree and the carried paths of one call
MARGIN_BYTES = 2 * MIB  # files others add to the tree between staging and the call
SESSION_S = 14 * 60  # 15 device minutes less the 30 s a machine idles after its last call and 30 s of margin
START_S = 90  # a fresh machine's start (the device README: "a minute or more")
CALL_OVERHEAD_S = 20  # a warm call's transfers and setup (setup 9 s in results/h200-2026-11-26c)
TRANSFER_CALL_S = 30  # a call that only carries parts (not measured: the first session calibrates it)
PER_CALL_LIMIT_S = 600

# pinned in constraints.txt; the device image has transformers 5.17.0 and no datasets / gguf
# (KINDS.md), so these travel as wheels, as in results/h200-2026-11-26c/
WHEELS = ("transformers==5.23.0", "datasets==5.2.0", "gguf==0.19.0", "dill==0.4.1", "multiprocess==0.70.19")
WHEELS_BYTES_ESTIMATE = 13 * MIB
BROWN_BYTES_ESTIMATE = 4 * MIB
MIX_BYTES_ESTIMATE = 15 * MIB  # gzip -1 of the mix's four fixture folders (measured: 14.2 MiB of 35.6 MB)
GZIP_RATIO_ESTIMATE = 0.96  # gzip -1 of a Q4 GGUF (measured on 20 MB of Gemma's: 0.955)

# the fixture folders (fixtures/manifest.json) each fixture payload carries: `mix` is the mix
# corpus's parts other than Brown (repro/core/mix.py's PARTS; a test holds the two equal), which
# `repro fetch` leaves to a run's first use and the device, offline, cannot fetch
MIX_FIXTURES = ("gutenberg", "sotu", "shakespeare", "wiki-en")
PAYLOAD_FIXTURES: dict[str, tuple[str, ...]] = {
    "brown": ("brown",),
    "mix": MIX_FIXTURES,
    "smollm2-135m": ("smollm2-135m",),
    "gemma3-270m": ("gemma3-270m",),
}


@dataclass(frozen=True)
class Item:
    """One queue item: its script, the payloads it needs, its command's device seconds (the
    estimate and where it comes from) and the limit the call runs under."""

    name: str
    needs: tuple[str, ...]
    seconds: float
    timeout_s: int
    basis: str


ITEMS: tuple[Item, ...] = (
    Item(
        "kernel_bench",
        (),
        450,
        540,
        "deadline 420 s (no case starts after it) + the report; 16 flex builds, uncalibrated: "
        "results/h100-2026-11-27 ran 30 cases in 83 s",
    ),
    Item(
        "sf_smollm2",
        ("wheels", "brown", "smollm2-135m"),
        380,
        540,
        "SF on SmolLM2 at paper, H100: the SF tests' durations in run5 + run7 claims.json ≈ 291 s, "
        "+ load and dequantisation ≈ 60 s; the plan's sweeps 372 s at ratio 0.54",
    ),
    Item(
        "bb_paper",
        ("wheels", "brown"),
        280,
        420,
        "bb_2_2 150 s (plan, h200; ≥ 205 s stopped before its models were drawn on the GPU), "
        "bb_3 27 s, bb_4_1 + bb_5 13 s, + process start and collection ≈ 60 s",
    ),
    Item(
        "sf_gemma_a",
        ("wheels", "brown", "gemma3-270m"),
        270,
        420,
        "SF-1…SF-5 on Gemma: the plan's sweeps 597 s × the SmolLM2 ratio 0.54 × SF-3/4's share 0.45 "
        "≈ 145 s + first load and dequantisation ≈ 90 s",
    ),
    Item(
        "sf_gemma_b",
        ("wheels", "brown", "gemma3-270m"),
        380,
        540,
        "SF-6…SF-10 on Gemma: sweeps 597 × 0.54 × 0.55 ≈ 177 s + SF-8's generation ≈ 1.5 × SmolLM2's "
        "89.6 s + a cached load 30 s",
    ),
    Item(
        "ca4_smollm2",
        ("wheels", "brown", "smollm2-135m"),
        420,
        570,
        "decide-ca4's SmolLM2 job 363 s (the plan's floor, dispatch-bound, not measured) + load 30 s",
    ),
    Item(
        "ca4_gemma",
        ("wheels", "brown", "gemma3-270m"),
        300,
        480,
        "decide-ca4's Gemma job 220 s (the plan's floor, not measured) + load and dequantisation 80 s",
    ),
    Item(
        "bb_decide",
        ("wheels", "brown"),
        170,
        330,
        "decide-bb-probes 37 s + decide-bb-lengths 8 s + decide-bb-direction 20 s (the plan, calibrated) "
        "+ three pytest starts ≈ 90 s",
    ),
    Item(
        "ca8_decide",
        ("wheels", "brown", "mix"),
        120,
        420,
        "decide-ca8 12 s (the plan's floor, 8 seeds, dispatch-bound, not measured) + the mix corpus "
        "cold: its assembly, the Brown BPE's training and the mix's tokenising 43 s on this 2-core CPU "
        "(loaded; fresh REPRO_CACHE: imports 2.5, Brown 1.0, BPE 4.0, assembly 4.9, 12.4M tokens 30.7) "
        "+ process start and collection ≈ 30 s; the timeout leaves the unmeasured floor 3× room",
    ),
    # decide-sinks (SK-2 over 3 seeds, issue 64): 17.3 min in the plan, over one call, so split — a
    # call per further seed stores its curves (`repro sk2-seed --export`), the claim run then trains
    # seed 0 only and reads the two carried entries (.cache/gpu/sk2-seeds, beside the call's folder)
    Item(
        "sk2_seed1",
        ("wheels", "brown", "mix"),
        420,
        540,
        "one trio of decide-sinks 346 s (the plan's floor, 5.77 min per seed on an H100; not measured) + the mix "
        "corpus cold 43 s + process start 30 s",
    ),
    Item("sk2_seed2", ("wheels", "brown", "mix"), 420, 540, "as sk2_seed1"),
    Item(
        "sk2_decide",
        ("wheels", "brown", "mix"),
        450,
        570,
        "seed 0's trio 346 s (the plan's floor) + the three seeds' SK-2 reading ≈ 30 s + the mix cold 43 s + "
        "two stored-seed checks and process start ≈ 30 s; carries .cache/gpu/sk2-seeds too (≈ 0.6 MB)",
    ),
)
BY_NAME = {i.name: i for i in ITEMS}


@dataclass
class Call:
    id: str
    item: str | None  # None: a transfer call (parts only)
    parts: list[tuple[str, int]] = field(default_factory=list)  # (payload, part index)
    bytes: int = 0


@dataclass
class Session:
    number: int
    calls: list[Call] = field(default_factory=list)
    items: list[str] = field(default_factory=list)

    def seconds(self) -> float:
        s = START_S
        for c in self.calls:
            s += TRANSFER_CALL_S if c.item is None else CALL_OVERHEAD_S + BY_NAME[c.item].seconds
        return s


def part_counts(sizes: dict[str, int], part_bytes: int) -> dict[str, int]:
    return {name: max(1, math.ceil(size / part_bytes)) for name, size in sizes.items()}


def _layout(number: int, items: list[str], sizes: dict[str, int], capacity: int) -> Session:
    """The session's calls: one per item, each payload's parts placed in the earliest call with
    room that comes no later than its first user, transfer calls inserted before that user when
    none has room. Parts are `capacity` bytes (the last one the rest)."""
    work = [Call("", it) for it in items]
    calls: list[Call] = list(work)
    pending: list[tuple[str, int, int, Call]] = []  # payload, index, bytes, first user
    seen: set[str] = set()
    for call in work:
        for p in BY_NAME[call.item].needs:
            if p in seen:
                continue
            seen.add(p)
            n = part_counts({p: sizes[p]}, capacity)[p]
            for i in range(n):
                pending.append((p, i, min(capacity, sizes[p] - i * capacity), call))
    for p, i, b, user in pending:
        upto = calls.index(user)
        spot = next((c for c in calls[: upto + 1] if c.bytes + b <= capacity), None)
        if spot is None:
            spot = Call("", None)
            calls.insert(upto, spot)
        spot.parts.append((p, i))
        spot.bytes += b
    session = Session(number, calls, list(items))
    for k, c in enumerate(calls, 1):
        c.id = f"s{number}c{k}"
    return session


def plan(sizes: dict[str, int], capacity: int, items: tuple[Item, ...] = ITEMS) -> list[Session]:
    """The items in order over sessions of SESSION_S (module docstring)."""
    sessions: list[Session] = []
    current: list[str] = []
    for item in items:
        trial = _layout(len(sessions) + 1, [*current, item.name], sizes, capacity)
        if current and trial.seconds() > SESSION_S:
            sessions.append(_layout(len(sessions) + 1, current, sizes, capacity))
            current = [item.name]
        else:
            current.append(item.name)
    if current:
        sessions.append(_layout(len(sessions) + 1, current, sizes, capacity))
    return sessions


def tree_bytes(root: Path = ROOT) -> int:
    """What travels without `carry`: tracked and untracked-not-ignored files."""
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, capture_output=True, check=True
    )
    return sum((root / p).stat().st_size for p in out.stdout.decode().split("\0") if p and (root / p).is_file())


def capacity_bytes(root: Path = ROOT) -> int:
    return CALL_LIMIT_BYTES - tree_bytes(root) - MARGIN_BYTES


def estimated_sizes(manifest: Path = ROOT / "fixtures" / "manifest.json") -> dict[str, int]:
    fx = json.loads(manifest.read_text())["fixtures"]
    return {
        "wheels": WHEELS_BYTES_ESTIMATE,
        "brown": BROWN_BYTES_ESTIMATE,
        "mix": MIX_BYTES_ESTIMATE,
        **{m: int(fx[m]["size"] * GZIP_RATIO_ESTIMATE) for m in ("smollm2-135m", "gemma3-270m")},
    }


# --------------------------------------------------------------------------- payloads (here)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def archive(src: Path, dest: Path, arcname: str, level: int = 1, *, more: dict[str, Path] | None = None) -> Path:
    """`src` (a folder) as a gzip-`level` tar at `dest`, its members under `arcname`, and each
    folder of `more` (arcname -> folder) after it under its own; the gzip header's time zeroed so
    the same folders give the same bytes."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=level, mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w") as tar:
            for name, folder in {arcname: src, **(more or {})}.items():
                for p in sorted(folder.rglob("*")):
                    if p.is_file():
                        info = tar.gettarinfo(str(p), f"{name}/{p.relative_to(folder)}")
                        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                        with open(p, "rb") as f:
                            tar.addfile(info, f)
    os.replace(tmp, dest)
    return dest


def split(path: Path, part_bytes: int, out_dir: Path) -> dict:
    """`path` cut into parts of ≤ part_bytes under out_dir: its manifest (name, sha256, size,
    parts with their sha256)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = []
    with open(path, "rb") as f:
        i = 0
        while block := f.read(part_bytes):
            name = f"{path.name}.part{i:02d}"
            (out_dir / name).write_bytes(block)
            parts.append({"file": name, "sha256": hashlib.sha256(block).hexdigest(), "bytes": len(block)})
            i += 1
    return {"archive": path.name, "sha256": sha256(path), "bytes": path.stat().st_size, "parts": parts}


def stage(sessions: list[Session], payloads: dict[str, Path], part_bytes: int, stage_dir: Path = STAGE) -> dict:
    """Each call's folder under stage_dir: its parts and call.json (module docstring)."""
    tmp = stage_dir / "_parts"
    manifests = {name: split(p, part_bytes, tmp / name) for name, p in payloads.items()}
    index = {}
    for s in sessions:
        for c in s.calls:
            d = stage_dir / c.id
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            for name, i in c.parts:
                part = manifests[name]["parts"][i]["file"]
                shutil.copy2(tmp / name / part, d / part)
            needs = BY_NAME[c.item].needs if c.item else ()
            info = {"call": c.id, "session": s.number, "item": c.item, "needs": list(needs), "manifests": manifests}
            (d / "call.json").write_text(json.dumps(info, indent=1))
            index[c.id] = {
                "item": c.item,
                "parts": [f"{n}[{i}]" for n, i in c.parts],
                "bytes": sum(f.stat().st_size for f in d.iterdir()),
            }
    shutil.rmtree(tmp)
    (stage_dir / "index.json").write_text(json.dumps(index, indent=1))
    return index


def build_payloads(work: Path, cache: Path, wheels: bool = True) -> dict[str, Path]:
    """The payload archives: the wheels (pip download, manylinux x86-64, Python 3.12 as on the
    device) and the fixture folders of PAYLOAD_FIXTURES (Brown, the mix's four, the two GGUFs)
    from the fetched cache (`repro fetch`, which fetches the mix's only when named)."""
    out = {}
    if wheels:
        whl = work / "whl"
        shutil.rmtree(whl, ignore_errors=True)
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            "-d",
            str(whl),
        ]
        for tag in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any"):
            cmd += ["--platform", tag]
        subprocess.run([*cmd, *WHEELS], check=True)
        out["wheels"] = archive(whl, work / "wheels.tgz", "whl", level=0)
    for name, fixtures in PAYLOAD_FIXTURES.items():
        srcs = {f: cache / "fixtures" / f for f in fixtures}
        for f, src in srcs.items():
            if not src.is_dir():
                raise SystemExit(f"{src} is missing: run `repro fetch {f}` first")
        first, *rest = fixtures
        out[name] = archive(srcs[first], work / f"{name}.tgz", first, more={f: srcs[f] for f in rest})
    return out


# --------------------------------------------------------------------------- the device side


def stash(call_dir: Path, stash_dir: Path) -> list[str]:
    """Copy the call's parts into stash_dir (kept while the machine stays warm)."""
    stash_dir.mkdir(parents=True, exist_ok=True)
    got = []
    for p in sorted(call_dir.glob("*.part*")):
        shutil.copy2(p, stash_dir / p.name)
        got.append(p.name)
    return got


def assemble(call_dir: Path, stash_dir: Path, cache: Path, wheel_dir: Path, fixtures_manifest: Path) -> list[str]:
    """Every payload the call's item needs, whole from stash_dir's parts, sha256-checked and
    unpacked: fixtures into cache/fixtures/<fixture>/ (PAYLOAD_FIXTURES; a payload not named there
    holds the fixture of its own name), each single-file fixture's sha256 (a GGUF, wiki-en's JSON)
    against fixtures_manifest, wheels into wheel_dir. A payload unpacked earlier this session is
    left as it is. A missing or corrupt part: SystemExit naming it (a fresh machine lost the stash:
    rerun the session's calls)."""
    info = json.loads((call_dir / "call.json").read_text())
    done = []
    for name in info["needs"]:
        m = info["manifests"][name]
        mark = stash_dir / f"{name}.done"
        if mark.exists() and mark.read_text() == m["sha256"]:
            continue
        missing = [p["file"] for p in m["parts"] if not (stash_dir / p["file"]).exists()]
        if missing:
            raise SystemExit(
                f"payload {name}: part(s) {', '.join(missing)} not on this machine (a fresh machine or an earlier "
                f"call skipped): run this session's calls from its first, back to back"
            )
        h = hashlib.sha256()
        buf = io.BytesIO()
        for p in m["parts"]:
            block = (stash_dir / p["file"]).read_bytes()
            if hashlib.sha256(block).hexdigest() != p["sha256"]:
                raise SystemExit(f"payload {name}: part {p['file']} is corrupt (sha256 differs)")
            h.update(block)
            buf.write(block)
        if h.hexdigest() != m["sha256"]:
            raise SystemExit(f"payload {name}: the whole archive's sha256 differs from its manifest")
        buf.seek(0)
        dest = wheel_dir.parent if name == "wheels" else cache / "fixtures"
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=buf, mode="r:gz") as tar:
            tar.extractall(dest, filter="data")
        if name == "wheels" and (dest / "whl") != wheel_dir:
            shutil.rmtree(wheel_dir, ignore_errors=True)
            (dest / "whl").rename(wheel_dir)
        specs = json.loads(fixtures_manifest.read_text())["fixtures"]
        for fixture in PAYLOAD_FIXTURES.get(name, (name,)):
            fx = specs.get(fixture)
            if fx and fx.get("kind") == "file":
                got = sha256(cache / "fixtures" / fixture / fx["output"])
                if got != fx["sha256"]:
                    raise SystemExit(f"payload {name}: {fx['output']} sha256 {got[:12]}… is not the manifest's")
        mark.write_text(m["sha256"])
        done.append(name)
    return done


# --------------------------------------------------------------------------- the queue as text


def readme_table(sessions: list[Session], sizes: dict[str, int], capacity: int) -> str:
    lines = [
        f"Capacity per call: {capacity / MIB:.1f} MiB of parts "
        f"(64 MiB − the working tree − {MARGIN_BYTES // MIB} MiB). "
        "Payloads: "
        + ", ".join(
            f"{n} {b / MIB:.0f} MiB → {k} part(s)"
            for (n, b), k in zip(sizes.items(), part_counts(sizes, capacity).values())
        ),
        "",
        "| session | call | item | carries | command minutes | timeout_s | session minutes so far |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in sessions:
        t = START_S
        for c in s.calls:
            t += TRANSFER_CALL_S if c.item is None else CALL_OVERHEAD_S + BY_NAME[c.item].seconds
            item = BY_NAME[c.item] if c.item else None
            carries = ", ".join(f"{n}[{i}]" for n, i in c.parts) or "—"
            minutes = (item.seconds if item else TRANSFER_CALL_S) / 60
            limit = item.timeout_s if item else 120
            lines.append(
                f"| {s.number} | {c.id} | {c.item or '(transfer)'} | {carries} | {minutes:.1f} | {limit} "
                f"| {t / 60:.1f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("plan", help="the sessions from the estimated payload sizes")
    st = sub.add_parser("stage", help="build .cache/gpu/<call>/ for every call")
    st.add_argument("--cache", type=Path, default=Path(os.environ.get("REPRO_CACHE", Path.home() / ".cache" / "repro")))
    st.add_argument("--no-wheels", action="store_true")
    sh = sub.add_parser("stash", help="(device) copy a call's parts into the stash")
    sh.add_argument("call_dir", type=Path)
    sh.add_argument("--stash", type=Path, default=Path(os.environ.get("STASH", "/root/gpu-stash")))
    asm = sub.add_parser("assemble", help="(device) the payloads a call's item needs, whole and unpacked")
    asm.add_argument("call_dir", type=Path)
    asm.add_argument("--stash", type=Path, default=Path(os.environ.get("STASH", "/root/gpu-stash")))
    asm.add_argument("--cache", type=Path, required=True)
    asm.add_argument("--wheels", type=Path, required=True)
    asm.add_argument("--manifest", type=Path, default=ROOT / "fixtures" / "manifest.json")
    a = ap.parse_args(argv)
    if a.cmd == "plan":
        sizes, cap = estimated_sizes(), capacity_bytes()
        print(readme_table(plan(sizes, cap), sizes, cap))
    elif a.cmd == "stage":
        work = STAGE / "_payloads"
        payloads = build_payloads(work, a.cache, wheels=not a.no_wheels)
        if "wheels" not in payloads:  # --no-wheels: an empty wheels archive (the device's own packages)
            (work / "none").mkdir(parents=True, exist_ok=True)
            payloads["wheels"] = archive(work / "none", work / "wheels.tgz", "whl", level=0)
        sizes = {n: p.stat().st_size for n, p in payloads.items()}
        cap = capacity_bytes()
        sessions = plan(sizes, cap)
        index = stage(sessions, payloads, cap)
        shutil.rmtree(work)
        print(readme_table(sessions, sizes, cap))
        print(json.dumps(index, indent=1))
    elif a.cmd == "stash":
        print("stashed:", ", ".join(stash(a.call_dir, a.stash)) or "nothing")
    elif a.cmd == "assemble":
        done = assemble(a.call_dir, a.stash, a.cache, a.wheels, a.manifest)
        print("assembled:", ", ".join(done) or "nothing new")
    return 0


if __name__ == "__main__":
    sys.exit(main())
