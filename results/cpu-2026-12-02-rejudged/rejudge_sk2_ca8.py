"""Re-judge SK-2's and CA-8's stored decide records under the per-check rules (issue 64 item 3).

Neither decide chunk fits two shared CPU cores in a session (SK-2 at ≥ 3 seeds per variant:
≥ 3 × 38 min; CA-8: 6 seeds × 3 variants), so their stored records are re-judged here: each
record set is the run's own (results/cpu-2026-11-29-decide/claims-decide-sinks-3000.json,
results/cpu-2026-11-28-decide/claims-decide-ca8.json), with its power replaced by the declaration
the code now makes (`repro.sinks.budget.baseline_budget_power`: covers the baseline check only,
budget basis, fitted to the run; `repro.context_axis.experiments.ca8_power_from`: the paired sds
at their 95% upper bound), then judged by `repro.harness.rules.judge_failure`.

    .venv/bin/python results/cpu-2026-12-02-rejudged/rejudge_sk2_ca8.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from repro.context_axis.experiments import ca8_power_from  # noqa: E402
from repro.harness import rules  # noqa: E402
from repro.sinks.budget import BASELINE_CHECK  # noqa: E402


def claim_of(path: str, cid: str) -> dict:
    data = json.loads((ROOT / path).read_text(encoding="utf-8"))
    return next(c for c in data["claims"] if c["id"] == cid)


def sk2() -> dict:
    c = claim_of("results/cpu-2026-11-29-decide/claims-decide-sinks-3000.json", "SK-2")
    recs = [dict(r) for r in c["records"]]
    for r in recs:
        if r.get("role") == "power":  # the stored declaration, now with what it covers and how it was got
            r["power"] = {**r["power"], "covers": [BASELINE_CHECK], "fitted": True, "sd": "plug-in"}
    j = rules.judge_failure(recs)
    rate = {r["name"]: r["measured"] for r in recs if r.get("role") == "context"}

    def at(kind: str, eps: str, form: str) -> list[float]:
        return [rate[f"{kind}: sink rate, ε = {eps} ({form} form), T = {n}"] for n in (32, 64)]

    one_head = 1 / 24
    by_eps = {}
    for eps, form in (("0.25", "source"), ("0.3", "gu")):
        b, am, at_ = at("baseline", eps, form), at("amplification", eps, form), at("attenuation", eps, form)
        gap = max(x - y for x, y in zip(am, b))
        by_eps[eps] = {
            "baseline min (≥ 1/24 = 0.0417)": [min(b), min(b) >= one_head],
            "attenuation max (≤ 0.0417)": [max(at_), max(at_) <= one_head],
            "amplification − baseline max (≤ 0)": [gap, gap <= 0],
        }
    return {"written": c["verdict"], "now": j.kind, "why": list(j.why), "checks by ε": by_eps}


def ca8() -> dict:
    c = claim_of("results/cpu-2026-11-28-decide/claims-decide-ca8.json", "CA-8")
    recs = [dict(r) for r in c["records"]]
    old = next(r for r in recs if r.get("role") == "power")
    sds = [float(x) for x in re.findall(r"\(plug-in\) ([0-9.]+) \(full\) / ([0-9.]+)", old["power"]["method"])[0]]
    p = ca8_power_from(sds, 6, 0.01, 0.05, 256, 32, direction_p=old["power"]["direction_p"])
    new = {**old, "measured": p.value, "power": p.to_dict()}
    recs = [new if r is old else r for r in recs]
    j = rules.judge_failure(recs)
    return {
        "written": c["verdict"],
        "written power / size": [old["measured"], old["power"]["size"]],
        "plug-in paired sds (stored, 4 digits)": sds,
        "power / size, sds at their 95% upper bound": [p.value, p.stated_size()],
        "now": j.kind,
        "why": list(j.why),
    }


if __name__ == "__main__":
    out = {"SK-2 (decide-sinks, 3,000 steps, one seed per variant)": sk2(), "CA-8 (decide-ca8, 6 seeds)": ca8()}
    text = json.dumps(out, indent=1, ensure_ascii=False)
    (Path(__file__).parent / "rejudge_sk2_ca8.json").write_text(text + "\n", encoding="utf-8")
    print(text)
