"""SK-2 over seeds (issue 64, `repro.sinks.over_seeds`): the attenuation check as a lower bound
over seeds, its power against the declared alternative and its size at the edge, judged by the
harness's rules on synthetic trios whose numbers can be worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch

from repro.ground.runtime import ReproError
from repro.harness import rules
from repro.sinks import experiments as sinks
from repro.sinks import over_seeds
from repro.sinks.trio import Trio, amplification_p

LH = 24  # 6 layers × 4 heads, the sinks row's model at ci and decide
ONE = 1.0 / LH


def _curve(rate: float, n: int = 10, wobble: float = 0.0) -> sinks.SinkCurve:
    """Per-sequence rates `rate` (± `wobble`, alternating) at both lengths, in both forms."""
    r = torch.full((n,), rate) + wobble * torch.tensor([(-1.0) ** i for i in range(n)])
    rates = {f: {32: r.clone(), 64: r.clone()} for f in sinks.FORMS}
    return sinks.SinkCurve((32, 64), rates, {}, dict(sinks.EPSILON))


def _trio(base: float, amp: float, att: float, init: float = 0.0, wobble: float = 0.0) -> Trio:
    curves = {"baseline": _curve(base), "amplification": _curve(amp, wobble=wobble), "attenuation": _curve(att)}
    return Trio({}, None, curves, {}, {}, {}, LH, _curve(init))


def _judge(trios: list[Trio]) -> tuple[rules.Judgement, over_seeds.Bound]:
    """The attenuation bound check and its power as the claim file records them, judged."""
    seeds = tuple(range(len(trios)))
    r = over_seeds.seed_rows(trios, seeds, "source")
    b = over_seeds.attenuation_bound(r)
    p = over_seeds.attenuation_power(r, b)
    power = {"role": "power", "measured": p.value, "power": p.to_dict()}
    check = {
        "role": "check",
        "name": over_seeds.ATTENUATION_BOUND_CHECK,
        "within": b.lower <= r.one_head,
        "not_rejected": True,
    }
    judge = rules.judge_pass if check["within"] else rules.judge_failure
    return judge([power, check]), b


def test_the_bound_and_the_power_by_hand():
    atts = [2.5 * ONE, 3.0 * ONE, 3.5 * ONE]
    trios = [_trio(0.3, 0.1, a) for a in atts]
    r = over_seeds.seed_rows(trios, (0, 1, 2), "source")
    b = over_seeds.attenuation_bound(r)
    x = np.array(atts)
    sd = x.std(ddof=1)
    assert b.mean == pytest.approx(x.mean()) and b.sd == pytest.approx(sd)
    assert b.lower == pytest.approx(x.mean() - scipy.stats.t.ppf(0.95, 2) * sd / math.sqrt(3))
    sd_hi = sd * math.sqrt(2 / scipy.stats.chi2.ppf(0.05, 2))
    assert b.sd_power == pytest.approx(max(sd_hi, 0.5 * ONE))
    p = over_seeds.attenuation_power(r, b)
    crit = scipy.stats.t.ppf(0.95, 2)
    assert p.value == pytest.approx(scipy.stats.nct.sf(crit, 2, 2 * ONE * math.sqrt(3) / b.sd_power))
    assert p.stated_size() == pytest.approx(0.05) and p.sd == "upper bound" and not p.fitted
    assert p.basis_kind == "interest" and p.against and p.covers == (over_seeds.ATTENUATION_BOUND_CHECK,)
    assert r.baseline_low() == pytest.approx(0.3) and r.amplification_excess() == pytest.approx(-0.2)
    # the check's control: the baselines (0.3 on every seed) through the same bound, which fails it
    control = over_seeds.attenuation_bound(r, "baseline").lower
    assert control == pytest.approx(0.3) and control > r.one_head


def test_attenuation_that_leaves_three_heads_on_every_seed_reads_contradicted():
    """Issue 64: one seed read "contradicted, power 1.0, size 0" on a budget bootstrap. Over
    three seeds a rate of three heads (± 0.1 head) fails the bound, and the power against three
    heads (floored sd: half a head) qualifies: contradicted at the bound's size 0.05."""
    j, b = _judge([_trio(0.3, 0.1, a * ONE) for a in (2.9, 3.0, 3.1)])
    assert b.lower > ONE
    assert j.kind == "contradicted" and j.size == pytest.approx(0.05), j


def test_attenuation_at_zero_on_every_seed_reads_reproduced():
    """Three seeds at rate 0: the bound passes; its power against three heads at the floored sd
    (half a head) is 0.99 ≥ 0.8, so the not-rejected pass reads reproduced."""
    j, b = _judge([_trio(0.3, 0.1, 0.0) for _ in range(3)])
    assert b.lower == 0.0 and b.sd_power == pytest.approx(0.5 * ONE)
    assert j.kind == "reproduced", j


def test_noisy_seeds_decide_neither_way():
    """Seeds that scatter by heads: a pass cannot say reproduced and a miss cannot say
    contradicted (power against three heads < 0.8 at the sd's upper bound)."""
    j_pass, _ = _judge([_trio(0.3, 0.1, a * ONE) for a in (0.0, 2.0, 0.0)])
    assert j_pass.kind == "inconclusive" and "not rejecting" in j_pass.why[0], j_pass
    j_fail, b = _judge([_trio(0.3, 0.1, a * ONE) for a in (3.0, 5.0, 7.0)])
    assert b.lower > ONE and j_fail.kind == "inconclusive" and "power" in j_fail.why[0], j_fail


def test_two_seeds_are_too_few_for_three_heads_and_one_is_refused():
    j, _ = _judge([_trio(0.3, 0.1, 0.0) for _ in range(2)])
    assert j.kind == "inconclusive"  # power 0.62 at n = 2
    r = over_seeds.seed_rows([_trio(0.3, 0.1, 0.0)], (0,), "source")
    with pytest.raises(ReproError, match="≥ 2 seeds"):
        over_seeds.attenuation_bound(r)


def test_further_seeds_are_distinct_and_not_the_trios_own():
    assert over_seeds.further_seeds({"seed": 0, "sk2_seeds": (1, 2)}) == (1, 2)
    for bad in ((0, 1), (1, 1)):
        with pytest.raises(ReproError, match="sk2_seeds"):
            over_seeds.further_seeds({"seed": 0, "sk2_seeds": bad})


def test_amplification_p_pools_sequences_over_seeds():
    """One trio: the single-seed p as before; three: the pairs of every seed in one Wilcoxon."""
    one = _trio(0.3, 0.1, 0.0, wobble=0.01)
    single = amplification_p(one, "source")
    assert amplification_p([one], "source") == single
    pooled = amplification_p([one, one, one], "source")
    assert all(pooled[n] < single[n] for n in single)  # three times the pairs, the same direction


def test_the_decide_chunk_trains_three_seeds_and_ci_one():
    from repro.harness import profiles

    assert profiles.get_profile("ci").sizes("sinks")["sk2_seeds"] == ()
    d = profiles.get_profile("decide-sinks").sizes("sinks")
    assert (d["seed"], *d["sk2_seeds"]) == (0, 1, 2)


_TOY_CLI = (
    "import sys; from repro.ground import sizes as g; from repro.harness import toy; "
    "g.Profile.sizes = toy.toy_sizes; from repro.harness.cli import main; sys.exit(main(sys.argv[1:]))"
)


def test_the_seed_command_takes_only_the_profiles_further_seeds(capsys):
    """`repro sk2-seed`: seed 0 is decide-sinks' own trio (the claim run trains it) and ci reads none:
    one line each, exit 2, nothing trained; so is an unknown corpus."""
    from repro.harness.cli import main

    assert main(["sk2-seed", "--profile", "decide-sinks", "--seed", "0", "--check"]) == 2
    assert "further seeds [1, 2] (seed 0 is its own trio" in capsys.readouterr().err
    assert main(["sk2-seed", "--profile", "ci", "--seed", "1"]) == 2
    assert "further seeds none" in capsys.readouterr().err
    assert main(["sk2-seed", "--seed", "1", "--corpus", "nosuch", "--check"]) == 2
    assert "--corpus 'nosuch' is unknown" in capsys.readouterr().err


def test_decide_sinks_split_over_calls_end_to_end_at_toy_sizes(tmp_path):
    """decide-sinks as the GPU queue splits it, at toy sizes (`repro.harness.toy`) on a cache of its
    own: `repro sk2-seed --seed 1 --export` trains and stores seed 1's curves; a fresh cache (no
    checkpoints, no measurements) that receives only the exported entry then runs the chunk's
    command: it trains seeds 0 and 2 (6 checkpoints, not 9), reads seed 1 as stored, and SK-2 reads
    its checks over the 3 seeds (the records say "mean over 3 seeds" and carry the bound's power);
    the verdict is one of the three words, never failed."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from repro.ground.cache import cache_root

    root = Path(__file__).resolve().parents[1]
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "fixtures").symlink_to(cache_root() / "fixtures")  # Brown, fetched by the session
    env = {**os.environ, "REPRO_CACHE": str(cache), "REPRO_DTYPE": "float32", "REPRO_MEMO": "1"}

    def cli(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-c", _TOY_CLI, "sk2-seed", "--profile", "decide-sinks", "--corpus", "brown", *args]
        return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)

    first = cli("--seed", "1", "--device", "cpu", "--export", str(tmp_path / "seed1"))
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert "SK-2 seed 1 at decide-sinks on brown (cpu): trained" in first.stdout
    assert cli("--seed", "1", "--check").returncode == 0
    exported = sorted(p.name for p in (tmp_path / "seed1").iterdir())
    assert [Path(n).suffix for n in exported] == [".json", ".pkl"], exported
    # the machine that judges: a bare cache but for the fixtures, the BPE and the carried entry
    for d in ("checkpoints", "measurements"):
        shutil.rmtree(cache / d, ignore_errors=True)
    assert cli("--seed", "1", "--check").returncode == 2
    into = cache / "measurements" / "sk2-seed-trio"
    into.mkdir(parents=True)
    for n in exported:
        shutil.copy2(tmp_path / "seed1" / n, into / n)
    assert cli("--seed", "1", "--check").returncode == 0

    cmd = [sys.executable, "-m", "pytest", "claims/test_sinks.py", "-p", "repro.harness.toy", "-p", "no:xdist"]
    cmd += ["-p", "no:cacheprovider", "--profile", "decide-sinks", "--corpus", "brown", "--claim", "SK-2"]
    cmd += ["--artifacts", str(tmp_path / "art"), "--baseline", "off", "-q"]
    run = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    found = list((tmp_path / "art").rglob("claims.json"))
    assert found, run.stdout[-3000:] + run.stderr[-3000:]
    sk2 = next(c for c in json.loads(found[0].read_text())["claims"] if c["id"] == "SK-2")
    assert sk2["verdict"] in ("reproduced", "contradicted", "inconclusive at this scale"), sk2["verdict"]
    names = [r["name"] for r in sk2["records"]]
    assert any("mean over 3 seeds" in n for n in names), names
    assert any(n.startswith("attenuation: one-sided 95% lower bound over seeds") for n in names)
    assert any(r.get("role") == "power" and (r.get("power") or {}).get("against") for r in sk2["records"])
    trained = [p for p in (cache / "checkpoints").iterdir() if not p.name.startswith(".")]
    assert len(trained) == 6, sorted(p.name for p in trained)  # seeds 0 and 2; seed 1 was read as stored
