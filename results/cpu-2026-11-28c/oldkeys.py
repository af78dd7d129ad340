"""Re-key a new claims.json the old way (no ' [param]' suffix) and compare it with an old baseline:
shows that the key change loses no record and moves no number."""

import json, re, sys, copy
from repro.harness import compare, report

new = json.load(open(sys.argv[1]))
old = json.load(open(sys.argv[2]))
re_new = copy.deepcopy(new)
for c in re_new["claims"]:
    params = {report.test_param(t["nodeid"]) for t in c["tests"]} - {""}
    seen = {}
    for r in c["records"]:
        k = re.sub(r" #\d+$", "", r["key"])
        for p in params:
            if k.endswith(f" [{p}]"):
                k = k[: -len(p) - 3]
        seen[k] = seen.get(k, 0) + 1
        r["key"] = k if seen[k] == 1 else f"{k} #{seen[k]}"
cmp = compare.compare(old, re_new)
print("\n".join(compare.lines(cmp, "old baseline", "new run, old keys")))
