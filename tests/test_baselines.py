"""The committed baselines (repro/<topic>/baselines/, a file per topic and configuration, joined
by `baseline.load_set`) meet issue 19's bar for a verdict.

Each baseline, joined, is a whole claims run of one configuration, so what it says holds for the suite
as committed: every claim has a verdict from the current set; every *reproduced* claim ran at
least one negative control and the control was rejected; every *contradicted* claim recorded a
power ≥ 0.8 at a declared effect and a family-wise size ≤ 0.05; every power record states its effect,
basis, test, sample, method, sizes for 80% and size; every *inconclusive* claim recorded its power and the sizes
at which it would reach 80% (or says why no power is computable). `audit` is run on a doctored
baseline too, so the assertion is shown able to fail. Every claim's records, re-judged by the verdict
rules (`repro.harness.rules`, through `scorecard.rejudge`), read the verdict the baseline states.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from repro.ground.runtime import ReproError
from repro.harness import baseline, report, scorecard, topics

BASELINES = baseline.keys(baseline.ROOT)  # configurations: "ci-cpu-float32", …


def _load(key: str) -> dict:
    data = baseline.load_set(key, baseline.ROOT)
    assert data is not None
    return copy.deepcopy(data)


DECIDED = (report.REPRODUCED, report.PARTLY, report.CONTRADICTED, report.INCONCLUSIVE)


#: claims whose baseline records predate the verdict rules; shrink-only (empty: CS-3…CS-6 were
#: re-recorded 2026-12-02, results/cpu-2026-12-02-cs-rerecord)
PRE_RULES: set[str] = set()


def audit(data: dict) -> list[str]:
    """What keeps a baseline's verdicts from meaning what they say, one line per problem."""
    problems = []
    for c in data["claims"]:
        cid, verdict, records = c["id"], c["verdict"], c["records"]
        if verdict not in DECIDED:
            problems.append(f"{cid}: verdict {verdict!r} (a baseline holds decided claims only)")
            continue
        rejudged, ruled = scorecard.rejudge(c)
        if not ruled and cid not in PRE_RULES:
            problems.append(
                f"{cid}: its records predate the verdict rules (a power without covers, a record without its test)"
            )
        elif rejudged != verdict:
            problems.append(f"{cid}: reads {verdict!r} but its records, judged by the rules, read {rejudged!r}")
        controls = [r for r in records if r.get("role") == "control"]
        powers = [r for r in records if r.get("role") == "power"]
        if verdict in (report.REPRODUCED, report.PARTLY):
            if not controls:
                problems.append(f"{cid}: {verdict} without a negative control")
            # a null that could not serve (`valid` False) is not a passing control: its test reads
            # "cannot tell" (inconclusive), which the rules check below holds it to
            elif any(r.get("within") is not False for r in controls if r.get("valid") is not False):
                problems.append(f"{cid}: a negative control passed the claim's assertion")
        if verdict == report.CONTRADICTED and not any(
            isinstance(r["measured"], (int, float)) and r["measured"] >= report.POWER_ENOUGH for r in powers
        ):
            problems.append(f"{cid}: contradicted without a recorded power >= {report.POWER_ENOUGH}")
        if verdict == report.CONTRADICTED and not (
            isinstance(c.get("size"), (int, float)) and c["size"] <= report.SIZE_ENOUGH + 1e-12
        ):
            problems.append(f"{cid}: contradicted without a family-wise size <= {report.SIZE_ENOUGH}")
        for r in powers:
            d = r.get("power") or {}
            missing = [
                f for f in ("effect", "basis", "test", "sample", "method", "decide", "size") if d.get(f) in (None, "")
            ]
            if missing:
                problems.append(f"{cid}: a power record without its declaration ({', '.join(missing)})")
        if verdict in (report.INCONCLUSIVE, report.PARTLY) and any(t.get("outcome") == "xfailed" for t in c["tests"]):
            if not powers and not any("no power" in (t.get("reason") or "").lower() for t in c["tests"]):
                problems.append(f"{cid}: {verdict} without a recorded power (or the reason none is computable)")
            elif powers and not any(
                "80% power at" in (r.get("why") or "") or r["measured"] >= report.POWER_ENOUGH for r in powers
            ):
                problems.append(f"{cid}: its power record does not say at which sizes it would reach 80%")
    return problems


def test_a_baseline_is_committed():
    assert BASELINES, f"no baseline under {baseline.ROOT}/*/baselines: `repro baseline update artifacts/claims.json`"


@pytest.mark.parametrize("key", BASELINES)
def test_baseline_verdicts_mean_what_they_say(key):
    data = _load(key)
    assert data["schema"] == report.SCHEMA_VERSION
    assert {c["id"] for c in data["claims"]} == set(report.CATALOGUE), "a baseline covers every catalogue claim"
    assert audit(data) == []


@pytest.mark.parametrize("key", BASELINES[:1])
def test_audit_rejects_a_doctored_baseline(key):
    """Negative controls of the audit itself: the same function on baselines that break each rule."""
    data = _load(key)
    by_verdict = {c["verdict"]: i for i, c in enumerate(data["claims"])}
    i = by_verdict[report.REPRODUCED]
    no_control = copy.deepcopy(data)
    no_control["claims"][i]["records"] = [r for r in no_control["claims"][i]["records"] if r.get("role") != "control"]
    assert any("without a negative control" in p for p in audit(no_control))
    passed_control = copy.deepcopy(data)
    for r in passed_control["claims"][i]["records"]:
        if r.get("role") == "control":
            r["within"] = True
    assert any("control passed" in p for p in audit(passed_control))
    j = by_verdict.get(report.CONTRADICTED)
    if j is not None:
        weak = copy.deepcopy(data)
        for r in weak["claims"][j]["records"]:
            if r.get("role") == "power":
                r["measured"] = 0.5
        assert any("contradicted without" in p for p in audit(weak))
        loose = copy.deepcopy(data)
        loose["claims"][j]["size"] = 0.2  # power 0.8: a true claim read as contradicted one time in five
        assert any("family-wise size" in p for p in audit(loose))
    undeclared = copy.deepcopy(data)
    k = next(i for i, c in enumerate(undeclared["claims"]) if any(r.get("role") == "power" for r in c["records"]))
    for r in undeclared["claims"][k]["records"]:
        if r.get("role") == "power":
            r["power"] = None
    assert any("without its declaration" in p for p in audit(undeclared))
    failed = copy.deepcopy(data)
    failed["claims"][0]["verdict"] = report.FAILED
    assert audit(failed)


# --------------------------------------------------------------------------- beside their topic
# (issue 66 item 2: a file per topic and configuration, so a claim's change re-records one file)

REPO = Path(__file__).resolve().parents[1]
OLD_DIR = "repro/harness/baselines"  # the whole-run layout before


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


def _migration(key: str) -> tuple[dict, list[dict]]:
    """The whole-run file of `key` before the move and the topic files the move wrote: from the
    commit that removed the whole-run file (and its parent), or, before that commit exists,
    HEAD's file against the working tree's."""
    old_path = f"{OLD_DIR}/{key}.json"
    try:
        sha = _git("log", "--diff-filter=D", "--format=%H", "-1", "--", old_path).strip()
        if sha:
            old = json.loads(_git("show", f"{sha}^:{old_path}"))
            listed = _git("ls-tree", "-r", "--name-only", sha, "repro").splitlines()
            names = [f"repro/{pkg}/baselines/{key}.json" for pkg in topics.PACKAGES]
            return old, [json.loads(_git("show", f"{sha}:{n}")) for n in names if n in listed]
        old = json.loads(_git("show", f"HEAD:{old_path}"))
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"the whole-run baseline {key} is not in this checkout's history ({err})")
    paths = [baseline.topic_path(pkg, key, baseline.ROOT) for pkg in topics.PACKAGES]
    return old, [json.loads(p.read_text("utf-8")) for p in paths if p.exists()]


@pytest.mark.parametrize("key", ["ci-cpu-float32", "ci-cpu-bfloat16"])
def test_the_move_to_topic_files_lost_no_record(key):
    """The two whole-run files, moved to a file per topic: the topic files' claims, in catalogue
    order, are the old file's claims, record for record; so are the per-test durations; and each
    file holds its own topic's claims only."""
    old, parts = _migration(key)
    assert len(parts) == len(topics.PACKAGES)
    assert [c for p in parts for c in p["claims"]] == old["claims"]
    records = lambda claims: [(c["id"], r["key"], json.dumps(r, sort_keys=True)) for c in claims for r in c["records"]]  # noqa: E731
    assert sorted(records(c for p in parts for c in p["claims"])) == sorted(records(old["claims"]))
    assert {n: s for p in parts for n, s in p["run"]["test_durations_s"].items()} == old["run"]["test_durations_s"]
    for pkg, part in zip(topics.PACKAGES, parts):
        assert {baseline.package_of(c) for c in part["claims"]} == {pkg}
        assert sum(part["summary"].values()) == len(part["claims"])
    assert baseline.join(parts) == old  # joined, the whole-run file exactly


@pytest.mark.parametrize("key", BASELINES)
def test_topic_files_split_and_join_back(key):
    data = _load(key)
    parts = baseline.split(data)
    assert list(parts) == [p for p in topics.PACKAGES if p in parts]
    assert baseline.join(list(parts.values())) == data
    for pkg, part in parts.items():
        ids = {t["nodeid"] for c in part["claims"] for t in c["tests"]}
        assert set(part["run"]["test_durations_s"]) <= ids, f"{pkg}: another topic's durations"


def test_a_claims_change_re_records_its_topic_file_only(tmp_path):
    """`update` on a scratch root: every topic file first; the same claims again from another
    commit with new durations rewrite nothing; one RS-1 record changed rewrites
    residual_stream's file alone (the others byte for byte as they were); the set read back is
    the run."""
    data = _load("ci-cpu-float32")
    first, lines = baseline.update(data, tmp_path)
    assert first == baseline.topic_path("born_biased", "ci-cpu-float32", tmp_path)
    assert sum(ln.startswith("written: ") for ln in lines) == len(topics.PACKAGES)
    files = {pkg: baseline.topic_path(pkg, "ci-cpu-float32", tmp_path) for pkg in topics.PACKAGES}
    before = {pkg: p.read_bytes() for pkg, p in files.items()}
    again = copy.deepcopy(data)
    again["run"]["git_commit"] = "0000000later"
    again["run"]["test_durations_s"] = {n: s * 2 for n, s in again["run"]["test_durations_s"].items()}
    _, lines = baseline.update(again, tmp_path)
    assert not any(ln.startswith("written: ") for ln in lines)
    assert {pkg: p.read_bytes() for pkg, p in files.items()} == before
    changed = copy.deepcopy(data)
    rs1 = next(c for c in changed["claims"] if c["id"] == "RS-1")
    rs1["records"][0]["measured"] = rs1["records"][0]["expected"] = 1058
    _, lines = baseline.update(changed, tmp_path)
    assert [ln for ln in lines if ln.startswith("written: ")] == [
        f"written: {Path('residual_stream', 'baselines', 'ci-cpu-float32.json')}"
    ]
    assert "REGRESSED" in lines  # the comparison it accepts: an exact check moved
    after = {pkg: p.read_bytes() for pkg, p in files.items()}
    assert [pkg for pkg in files if after[pkg] != before[pkg]] == ["residual_stream"]
    assert baseline.load_set("ci-cpu-float32", tmp_path)["claims"] == changed["claims"]


def _not_run(claim: dict) -> dict:
    """A claim as a selection run that did not select it writes it."""
    return {**claim, "verdict": report.NOT_RUN, "tests": [], "records": [], "power": None, "size": None}


def test_a_selection_run_re_records_the_claims_it_ran_only(tmp_path):
    """`update` from a selection run (`-k RS-1`): RS-1's new entry replaces its old one, every
    claim the run did not select keeps its baseline entry and durations, and the topic files
    with no claim run stay byte for byte as they were ("kept"); the set read back is the full
    baseline with RS-1 changed (a selection run's "not run" never overwrites a recorded verdict)."""
    data = _load("ci-cpu-float32")
    baseline.update(data, tmp_path)
    files = {pkg: baseline.topic_path(pkg, "ci-cpu-float32", tmp_path) for pkg in topics.PACKAGES}
    before = {pkg: p.read_bytes() for pkg, p in files.items()}
    run = copy.deepcopy(data)
    run["run"]["git_commit"], run["run"]["selection"] = "0000000later", "-k RS-1"
    run["run"]["torch_threads"] = 99  # other provenance: a file with no claim run is kept all the same
    rs1 = next(c for c in run["claims"] if c["id"] == "RS-1")
    rs1["records"][0]["measured"] = rs1["records"][0]["expected"] = 1058
    ran = {t["nodeid"] for t in rs1["tests"]}
    run["run"]["test_durations_s"] = {n: 1.0 for n in ran}
    run["claims"] = [c if c["id"] == "RS-1" else _not_run(c) for c in run["claims"]]
    _, lines = baseline.update(run, tmp_path)
    assert [ln for ln in lines if ln.startswith("written: ")] == [
        f"written: {Path('residual_stream', 'baselines', 'ci-cpu-float32.json')}"
    ]
    assert sum(ln.startswith("kept: ") for ln in lines) == len(topics.PACKAGES) - 1
    after = {pkg: p.read_bytes() for pkg, p in files.items()}
    assert [pkg for pkg in files if after[pkg] != before[pkg]] == ["residual_stream"]
    back = baseline.load_set("ci-cpu-float32", tmp_path)
    expect = [rs1 if c["id"] == "RS-1" else c for c in data["claims"]]
    assert back["claims"] == expect
    durations = back["run"]["test_durations_s"]
    assert all(durations[n] == 1.0 for n in ran)
    others = {t["nodeid"] for c in data["claims"] if c["topic"] == "RS" and c["id"] != "RS-1" for t in c["tests"]}
    assert others and all(durations[n] == data["run"]["test_durations_s"][n] for n in others if n not in ran)


def test_a_whole_run_file_is_read_then_replaced_and_a_topic_gone_is_removed(tmp_path):
    """A root still in the whole-run layout (<key>.json) is read as it was; `update` writes the
    topic files and removes it; a run without one topic's claims removes that topic's file."""
    data = _load("ci-cpu-float32")
    legacy = tmp_path / "ci-cpu-float32.json"
    legacy.write_text(json.dumps(data))
    assert baseline.load_for(data["run"], tmp_path) == data
    assert baseline.keys(tmp_path) == ["ci-cpu-float32"]
    assert baseline.path_for(data["run"], tmp_path) == legacy
    baseline.update(data, tmp_path)
    assert not legacy.exists() and baseline.load_for(data["run"], tmp_path) == data
    fewer = copy.deepcopy(data)
    fewer["claims"] = [c for c in fewer["claims"] if c["topic"] != "CA"]
    _, lines = baseline.update(fewer, tmp_path)
    assert not baseline.topic_path("context_axis", "ci-cpu-float32", tmp_path).exists()
    assert any(ln.startswith("removed: ") and "context_axis" in ln for ln in lines)
    assert baseline.load_for(data["run"], tmp_path)["claims"] == fewer["claims"]
    stray = copy.deepcopy(data)
    stray["claims"][0]["topic"], stray["claims"][0]["id"] = "XX", "XX-1"
    with pytest.raises(ReproError, match="XX-1: topic 'XX' is none of"):
        baseline.update(stray, tmp_path)
