"""The SP verdict helpers before (claim-taking, /tmp/verdicts_old.py) and after (Steps): the same calls on the claim."""
import importlib.util, sys, math
from types import SimpleNamespace as NS
import numpy as np
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from repro.core.readings import Power, Reading, Control
from repro.seedprint import verdicts as new, algorithm, study
from repro.seedprint import fingerprint_baselines as fb
import subprocess, tempfile
_old_src = subprocess.run(["git", "-C", str(ROOT), "show", "3718ab8:repro/seedprint/verdicts.py"], capture_output=True, text=True, check=True).stdout
_old_path = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False); _old_path.write(_old_src); _old_path.close()
spec = importlib.util.spec_from_file_location("verdicts_old", _old_path.name)
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
cspec = importlib.util.spec_from_file_location("tsp", str(ROOT / "claims" / "test_seedprint.py"))
tsp = importlib.util.module_from_spec(cspec); cspec.loader.exec_module(tsp)
NO = object()
class Rec:
    def __init__(s): s.calls = []
    def record(s, name, measured, expected=None, tol=None, why="", *, compare=None, unit="", source=None, key=None, **kw):
        s.calls.append(("record", name, repr(measured), expected, tol, why, compare or "none", unit, source, key))
    def check(s, name, measured=None, threshold=None, *, compare="", why="", tol=0.0, source=None, control=NO, control_name="", unit="", key=None, not_rejected=False):
        if isinstance(name, Reading):
            r = name
            name, measured, threshold, compare, why, tol, source, unit, key, not_rejected = r.name, r.measured, r.threshold, r.compare, r.why, r.tol, r.source, r.unit, r.key, r.not_rejected
        if isinstance(control, Control):
            assert control.valid
            control, control_name = control.measured, control.name
        s.calls.append(("check", name, repr(measured), threshold, compare, why, tol, source, unit, key, not_rejected, None if control is NO else repr(control), control_name))
    def power(s, p=None, **legacy):
        if p is not None and not isinstance(p, Power):
            legacy["value"], p = p, None
        if p is None:
            legacy.setdefault("covers", ()); p = Power(legacy.pop("value"), **legacy)
        s.calls.append(("power", p.value, sorted(p.to_dict().items(), key=str)))
    def table(s, title, cols, rows):
        s.calls.append(("table", title, cols, rows))
def pair(name, same, pt, pu):
    return {"pair": name, "same": same, "p_t": pt, "p_u": pu, "n_dims": 7, "mean_tau": 0.123, "p_released": 0.04}
rows = [pair("init42/init123", False, 0.3, 0.004), pair("init42/init1000", False, 0.6, 0.5), pair("init123/init2000", False, 1e-5, 0.2)]
ctls = [pair("init42/base42", True, 1e-9, 1e-12)] * 3
bl = lambda sim, same: NS(similarity=sim, same_lineage=same)
true = {**pair("base1000/base1000+code", True, 1e-20, 1e-30), "baselines": {k: bl(0.5 + i / 10, i % 2 == 0) for i, k in enumerate(fb.METHODS)}, "val_loss": 2.5}
dis = {**pair("base1000/base123+code", False, 0.7, 0.8), "baselines": {k: bl(0.3 + i / 10, i % 2 == 1) for i, k in enumerate(fb.METHODS)}, "val_loss": 2.7}
fig11 = study.Persistence(steps=[0, 100, 300], dims=[1, 2], lineage=[np.array([0.1, 0.2])] * 3, baseline=[np.array([0.0, 0.05])] * 3, ps=[float("nan"), 0.001, 0.002], p_control=0.4)
ps = {"finetune_lr": 1e-4, "finetune_seq_len": 128, "finetune_steps": 10, "finetune_batch": 4}
d1 = study.Descendant(tokens=5120, nll_before=np.array([3.0, 3.1, 2.9]), nll_after=np.array([2.8, 2.7, 2.85]), rel_change=0.01, name="smollm2", pair=pair("smollm2/ft", True, 1e-8, 1e-9), null=pair("smollm2/init", False, 0.5, 0.6), one_minus_pcs=1e-4, trained_null=pair("smollm2/null", False, 0.3, 0.2), null_tokens=999)
d2 = study.Descendant(tokens=5120, nll_before=np.array([3.0, 3.1, 2.9]), nll_after=np.array([2.8, 2.7, 2.85]), rel_change=0.01, name="gemma", pair=pair("gemma/ft", True, 1e-8, 1e-9), null=pair("gemma/init", False, 0.5, 0.6), one_minus_pcs=1e-4, trained_null=None, null_tokens=0)
cfg = algorithm.SeedPrintConfig(n=8, length=16, m=4, inputs="tokens", seed=0)
a, b = Rec(), Rec()
# old
old.record_released(a, rows); old.record_gaussian_taus(a, rows, ctls[0])
old.check_pair(a, rows[0], control=ctls[0], source=(0.5, 0.6)); old.check_pair(a, rows[1])
old.check_no_false_positive(a, rows, ctls, [(0.1, 0.2)] * 3); old.check_no_false_positive(a, rows, ctls)
old.power_no_false_positive(a, 3, "x pairs", "source: Table 4a"); old.power_each_pair(a, 6, "y pairs", "source: Table 4c")
old.table5(a, [true, dis]); w_old = old.baselines_wrong(a, true, dis); old.power_baselines(a, true); old.power_baselines(a, {**true, "baselines": {**true["baselines"], "pcs": bl(0.1, True)}})
old.record_persistence(a, fig11, 4); old.check_persistence(a, fig11)
for d in (d1, d2): old.record_descendant(a, d, ps)
old.table6(a, cfg, rows); built_old = old.power_table6(a, cfg, {"s": d1}); built_old2 = old.power_table6(a, cfg, {"s": d1, "g": d2})
old.check_descendant(a, d1, True); old.power_finetune_tokens(a, ps, 5e6); old.power_finetune_tokens(a, {**ps, "finetune_steps": 10**6}, 5e6)
# new
ap = tsp._apply
ap(b, new.released_ps(rows)); ap(b, new.gaussian_taus(rows, ctls[0]))
ap(b, new.check_pair(rows[0], control=ctls[0], source=(0.5, 0.6))); ap(b, new.check_pair(rows[1]))
ap(b, new.check_no_false_positive(rows, ctls, [(0.1, 0.2)] * 3)); ap(b, new.check_no_false_positive(rows, ctls))
b.power(new.power_no_false_positive(3, "x pairs", "source: Table 4a")); b.power(new.power_each_pair(6, "y pairs", "source: Table 4c"))
b.table(*new.table5([true, dis])); steps, w_new = new.baselines_wrong(true, dis); ap(b, steps); b.power(new.power_baselines(true)); b.power(new.power_baselines({**true, "baselines": {**true["baselines"], "pcs": bl(0.1, True)}}))
ap(b, new.persistence_taus(fig11, 4)); ap(b, new.check_persistence(fig11))
for d in (d1, d2): ap(b, new.descendant_readings(d, ps))
b.table(*new.table6(cfg, rows)); p1, built_new = new.power_table6(cfg, {"s": d1}); b.power(p1); p2, built_new2 = new.power_table6(cfg, {"s": d1, "g": d2}); b.power(p2)
ap(b, new.check_descendant(d1, True)); b.power(new.power_finetune_tokens(ps, 5e6)); b.power(new.power_finetune_tokens({**ps, "finetune_steps": 10**6}, 5e6))
assert w_old == w_new and built_old == built_new and built_old2 == built_new2
assert len(a.calls) == len(b.calls), (len(a.calls), len(b.calls))
bad = [(i, x, y) for i, (x, y) in enumerate(zip(a.calls, b.calls)) if repr(x) != repr(y)]
for i, x, y in bad[:5]:
    print(i, "\nOLD", x, "\nNEW", y)
print(f"{len(a.calls)} calls, kinds {sorted(set(c[0] for c in a.calls))}, differing: {len(bad)}")
