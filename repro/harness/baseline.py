"""Committed baselines of the claims run, beside their topic: for each configuration that changes
numerics, one file per topic package, repro/<topic>/baselines/<profile>-<device>-<dtype>.json,
holding that topic's claims and the run block (pytest-regressions' datadir idea: the reference
data sits with what it is the reference of, so a claim's change re-records its topic's file
only, and a file whose claims did not change is not rewritten).

The key is what moves measured values by itself: the profile's sizes, the device type, the
dtype the policy chose ("auto" → bfloat16 on CPUs where it is native and measured fast, float32 elsewhere; see
repro.ground.runtime.resolve_dtype), and a `--corpus` other than brown (`-corpus-<name>`: the
default's key is unchanged). A topic's file keeps everything of claims.json outside "run" for
that topic's claims (its verdict counts as "summary") plus the run fields `repro compare` reads
(profile, device, dtype policy, the topic's per-test durations), so the same comparison works
against one file; `load_for` joins a configuration's files in catalogue order
(`repro.harness.topics.PACKAGES`) into the whole-run claims.json the comparison takes.
A whole-run file of the layout before (repro/harness/baselines/<key>.json, or <key>.json under
$REPRO_BASELINES) is still read where no topic file of its key exists, and `update` replaces it.

Written only by an explicit command, never by a claims run or CI:

    repro baseline update artifacts/claims.json      # prints the comparison it replaces
    repro baseline show                               # which baselines exist, and their keys
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from repro.ground.runtime import ReproError, atomic_write_json

ROOT = Path(__file__).resolve().parents[1]  # repro/: each topic package holds its baselines/
DIR = ROOT / "harness" / "baselines"  # the whole-run layout before issue 66: read, never written
DIR_ENV = "REPRO_BASELINES"  # another root of baselines (the plugin's own tests use a scratch one)
SUBDIR = "baselines"


def baseline_root() -> Path:
    """Where the topic folders of the baselines are: repro/, or $REPRO_BASELINES."""
    return Path(os.environ[DIR_ENV]) if os.environ.get(DIR_ENV) else ROOT


def baseline_dir() -> Path:
    """Kept for callers of the whole-run layout: the root of the baselines."""
    return baseline_root()


RUN_FIELDS = (
    "profile",
    "device",
    "dtype_policy",
    "corpus",
    "torch_threads",
    "xdist_workers",
    "packages",
    "models",
    "git_commit",
    "test_durations_s",
)


def key_of(run: dict[str, Any]) -> str:
    """'<profile>-<device type>-<dtype>' of a claims.json's "run", and '-corpus-<name>' after it
    for a run whose `--corpus` is not the default (brown): every claim that reads text reads it,
    so its numbers are another configuration's (a directory is named by its own name); and
    '-model-<name>' for a `--model` run: a model's numbers are compared only with a baseline of
    that model, committed by hand, never with the embedded models'."""
    device = str(run.get("device", "cpu")).split(":")[0]
    dtype = (run.get("dtype_policy") or {}).get("auto")
    if not run.get("profile") or not dtype:
        raise ReproError(
            "this claims.json records no profile or dtype policy (written before the dtype policy "
            "existed?): run the claims again"
        )
    key = f"{run['profile']}-{device}-{dtype}"
    corpus = str(run.get("corpus") or "brown")
    if corpus != "brown":
        key += f"-corpus-{_label(corpus)}"
    if run.get("model"):  # --model: that model's own configuration, never compared with the embedded models'
        key += f"-model-{_label(str(run['model']))}"
    return key


def _label(spec: str) -> str:
    """A corpus or model as a file-name part: a path by its own name (the same on every machine),
    a hub id (owner/name, not a local path) with '/' as '--'."""
    hub_id = re.fullmatch(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*", spec) and not Path(spec).expanduser().exists()
    name = spec.replace("/", "--") if hub_id else (Path(spec.rstrip("/\\")).name or spec)
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:40] or "dir"


def _packages() -> tuple[str, ...]:
    from repro.harness import topics

    return topics.PACKAGES


def package_of(claim: dict[str, Any]) -> str:
    """The topic package a claim of claims.json belongs to (its `topic`, else its ID's prefix)."""
    from repro.harness import catalogue

    topic = claim.get("topic") or str(claim["id"]).split("-")[0]
    if topic not in catalogue.PACKAGES:
        raise ReproError(f"claim {claim['id']}: topic {topic!r} is none of repro.harness.catalogue's topics")
    return catalogue.PACKAGES[topic]


def topic_path(package: str, key: str, root: Path | None = None) -> Path:
    return (root or baseline_root()) / package / SUBDIR / f"{key}.json"


def legacy_path(key: str, root: Path | None = None) -> Path:
    """Where the whole-run baseline of `key` lay before the topic layout."""
    root = root or baseline_root()
    return (DIR if root == ROOT else root) / f"{key}.json"


def paths_for(run: dict[str, Any], root: Path | None = None) -> list[Path]:
    """The topic files of this run's configuration that exist, in catalogue order."""
    key = key_of(run)
    return [p for p in (topic_path(pkg, key, root) for pkg in _packages()) if p.exists()]


def path_for(run: dict[str, Any], root: Path | None = None) -> Path:
    """A name for this configuration's baseline in messages: `<key>.json` (its topic files are
    `paths_for`); under the whole-run layout, the file itself."""
    key = key_of(run)
    legacy = legacy_path(key, root)
    return legacy if legacy.exists() and not paths_for(run, root) else (root or baseline_root()) / f"{key}.json"


def strip(data: dict[str, Any]) -> dict[str, Any]:
    """What a baseline keeps of a claims.json."""
    run = {k: data["run"][k] for k in RUN_FIELDS if k in data.get("run", {})}
    return {**{k: v for k, v in data.items() if k != "run"}, "run": run}


def _summary(template: Any, claims: list[dict[str, Any]]) -> dict[str, int]:
    """Verdict counts over `claims`, in the order (and with the verdicts) of claims.json's summary."""
    verdicts = list(template) if isinstance(template, dict) else []
    verdicts += [c["verdict"] for c in claims if c["verdict"] not in verdicts]
    return {v: sum(c["verdict"] == v for c in claims) for v in verdicts}


def split(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A stripped claims.json as one baseline per topic package (catalogue order): each holds its
    claims, their verdict counts, and the run block with its own tests' durations (a duration of
    a test no claim lists stays with the first topic, so none is dropped)."""
    order = {pkg: i for i, pkg in enumerate(_packages())}
    parts: dict[str, list[dict[str, Any]]] = {}
    for c in data["claims"]:
        parts.setdefault(package_of(c), []).append(c)
    parts = dict(sorted(parts.items(), key=lambda kv: order[kv[0]]))
    durations = dict(data["run"].get("test_durations_s") or {})
    out = {}
    for i, (pkg, claims) in enumerate(parts.items()):
        ids = {t["nodeid"] for c in claims for t in c.get("tests", [])}
        mine = {n: s for n, s in durations.items() if n in ids}
        if i == 0:
            every = {t["nodeid"] for c in data["claims"] for t in c.get("tests", [])}
            mine.update({n: s for n, s in durations.items() if n not in every})
        run = dict(data["run"])
        if "test_durations_s" in run:
            run["test_durations_s"] = mine
        if isinstance(run.get("git_commit"), dict):  # a joined set recorded at several commits
            run["git_commit"] = run["git_commit"].get(pkg)
        part = {k: v for k, v in data.items() if k not in ("claims", "run", "summary")}
        if "summary" in data:
            part["summary"] = _summary(data["summary"], claims)
        out[pkg] = {**part, "claims": claims, "run": run}
    return out


def join(parts: list[dict[str, Any]], where: str = "baseline") -> dict[str, Any]:
    """Topic baselines (catalogue order) as one whole-run claims.json: the claims in order, the
    run block of the first with every file's durations (and its commits, by topic, where the
    files were recorded at different ones)."""
    schemas = {p.get("schema") for p in parts}
    if len(schemas) != 1:
        raise ReproError(f"{where}: its topic files have schema versions {sorted(map(str, schemas))}; re-record them")
    claims = [c for p in parts for c in p["claims"]]
    run = dict(parts[0]["run"])
    if any("test_durations_s" in p["run"] for p in parts):
        run["test_durations_s"] = {n: s for p in parts for n, s in (p["run"].get("test_durations_s") or {}).items()}
    commits = {package_of(p["claims"][0]): p["run"].get("git_commit") for p in parts if p["claims"]}
    if len({json.dumps(c, sort_keys=True) for c in commits.values()}) > 1:
        run["git_commit"] = commits
    out = {k: v for k, v in parts[0].items() if k not in ("claims", "run", "summary")}
    if "summary" in parts[0]:
        out["summary"] = _summary(parts[0]["summary"], claims)
    return {**out, "claims": claims, "run": run}


#: the configuration whose recorded test durations order a `--dist loadgroup` run's groups (the
#: reference CPU's ci run, the one baseline every checkout has)
REFERENCE_KEY = "ci-cpu-float32"


def durations(key: str, root: Path | None = None) -> dict[str, float]:
    """The seconds per plain node ID the baseline of configuration `key` recorded (its run's
    `test_durations_s`); empty when there is no such baseline."""
    data = load_set(key, root)
    return dict((data or {}).get("run", {}).get("test_durations_s") or {})


def load_set(key: str, root: Path | None = None) -> dict[str, Any] | None:
    """The baseline of configuration `key` as one claims.json (its topic files joined; a
    whole-run file of the layout before where there is none); None if there is neither."""
    from repro.harness import compare

    paths = [p for p in (topic_path(pkg, key, root) for pkg in _packages()) if p.exists()]
    if paths:
        data = join([compare.load(p) for p in paths], f"baseline {key}")
        compare.validate(data, f"baseline {key}")
        return data
    legacy = legacy_path(key, root)
    return compare.load(legacy) if legacy.exists() else None


def load_any(path: str | Path) -> dict[str, Any]:
    """A claims.json; or, for a bare configuration key that is no file (`ci-cpu-float32`), the
    committed baseline of that configuration, its topic files joined (`load_set`)."""
    from repro.harness import compare

    path = Path(path)
    if not path.exists() and path.parent == Path(".") and path.name:
        committed = load_set(path.name.removesuffix(".json"))
        if committed is not None:
            return committed
    return compare.load(path)


def load_for(run: dict[str, Any], root: Path | None = None) -> dict[str, Any] | None:
    return load_set(key_of(run), root)


def keys(root: Path | None = None) -> list[str]:
    """Every configuration with a baseline (topic files or a whole-run file)."""
    root = root or baseline_root()
    found = {p.stem for pkg in _packages() for p in (root / pkg / SUBDIR).glob("*.json")}
    found |= {p.stem for p in (DIR if root == ROOT else root).glob("*.json")}
    return sorted(found)


def show_lines(root: Path | None = None) -> list[str]:
    """`repro baseline show`: a line per configuration (its files, claims, records) and per file."""
    root = root or baseline_root()
    out = []
    for key in keys(root):
        data = load_set(key, root)
        files = [p for p in (topic_path(pkg, key, root) for pkg in _packages()) if p.exists()] or [
            legacy_path(key, root)
        ]
        out.append(
            f"{key + '.json':32s} {len(files)} file(s), {len(data['claims'])} claims, "
            f"{sum(len(c['records']) for c in data['claims'])} records"
        )
        for path in files:
            part = _read(path)
            out.append(
                f"  {_shown(path, root)}: commit {part['run'].get('git_commit')}, {len(part['claims'])} claims, "
                f"{sum(len(c['records']) for c in part['claims'])} records"
            )
    return out or [f"no baselines under {root}"]


def _read(path: Path) -> dict[str, Any]:
    from repro.harness import compare

    return compare.load(path)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.parent if root == ROOT else root))
    except ValueError:
        return str(path)


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A topic file needs no rewrite: the same claims, schema and provenance (a new commit and new
    durations alone do not re-record it)."""
    from repro.harness import compare

    if old.get("schema") != new.get("schema") or old["claims"] != new["claims"]:
        return False
    return all(old["run"].get(f) == new["run"].get(f) for f in compare.PROVENANCE)


def merge_selection(old: dict[str, Any] | None, new: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """A selection run (`-k`, `--claim`, one claim file) as a whole run: a claim it did not run
    ("not run") keeps its entry in the baseline it replaces, with its tests' durations; return the
    merged claims.json and the IDs kept. A claim the baseline lacks too stays "not run"."""
    from repro.harness import report

    before = {c["id"]: c for c in (old or {}).get("claims", [])}
    kept = {c["id"] for c in new["claims"] if c["verdict"] == report.NOT_RUN and c["id"] in before}
    if not kept:
        return new, kept
    claims = [before[c["id"]] if c["id"] in kept else c for c in new["claims"]]
    run = dict(new["run"])
    if "test_durations_s" in run or "test_durations_s" in old["run"]:
        olds = old["run"].get("test_durations_s") or {}
        mine = {t["nodeid"] for cid in kept for t in before[cid].get("tests", [])}
        run["test_durations_s"] = {
            **{n: s for n, s in olds.items() if n in mine},
            **(run.get("test_durations_s") or {}),
        }
    merged = {**new, "claims": claims, "run": run}
    if "summary" in new:
        merged["summary"] = _summary(new["summary"], claims)
    return merged, kept


def update(data: dict[str, Any], root: Path | None = None) -> tuple[Path, list[str]]:
    """Write `data` as the baseline of its configuration, a file per topic (a topic whose claims
    and provenance did not change keeps its file; so does a topic none of whose claims `data`
    ran — a selection run re-records the topics it ran, and a claim it did not run keeps its
    baseline entry, `merge_selection`; a topic file of this configuration that `data` has no
    claims of goes, as does a whole-run file of the layout before); return the first topic file
    and the lines: the comparison against the baseline it replaces (or a line saying there was
    none), then what happened to each file."""
    from repro.harness import compare

    if data.get("run", {}).get("interrupted"):
        raise ReproError(
            f"this claims run was cut short ({data['run'].get('interrupted_by') or 'interrupted'}): a baseline "
            "is a finished run; run the claims again to the end"
        )
    root = root or baseline_root()
    key = key_of(data["run"])
    old = load_set(key, root)
    new, kept = merge_selection(old, strip(data))
    lines = (
        [f"new baseline {key}.json (none before)"]
        if old is None
        else compare.lines(compare.compare(old, new), f"{key} (committed)", "the new baseline")
    )
    parts = split(new)
    if not parts:
        raise ReproError("this claims.json holds no claim: nothing to take as a baseline")
    first = None
    for pkg, part in parts.items():
        target = topic_path(pkg, key, root)
        first = first or target
        if target.exists() and _same(_read(target), part):
            lines.append(f"unchanged: {_shown(target, root)}")
            continue
        if target.exists() and all(c["id"] in kept for c in part["claims"]):
            lines.append(f"kept: {_shown(target, root)} (none of its claims ran in this claims.json)")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(target, part)
        lines.append(f"written: {_shown(target, root)}")
    for pkg in _packages():
        stale = topic_path(pkg, key, root)
        if pkg not in parts and stale.exists():
            stale.unlink()
            lines.append(f"removed: {_shown(stale, root)} (no claim of {pkg} in this run)")
    legacy = legacy_path(key, root)
    if legacy.exists():
        legacy.unlink()
        lines.append(f"removed: {_shown(legacy, root)} (the whole-run layout, now a file per topic)")
    assert first is not None
    return first, lines
