"""CA-4's retraining experiment (`repro.context_axis.retraining.retraining_run`) at a CPU size:
a tenth of the declared fine-tune's steps at half its window length. Exploratory: below the
declared 1,000 steps a miss cannot contradict the claim and a pass is read here, not by the suite.
Run: .venv/bin/python results/cpu-2026-11-29-ca4-retrain/run.py smollm2-135m [steps]"""

import json
import sys
import time

import numpy as np
import torch

from repro.context_axis import retraining
from repro.core import plotting
from repro.core.models.pretrained import load_pretrained
from repro.ground.runtime import resolve_dtype

if __name__ == "__main__":
    name = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    r = dict(steps=steps, batch_size=8, seq_len=32, lr=1e-4, warmup_steps=10, windows=128)
    m, tok = load_pretrained(name)
    t0 = time.perf_counter()
    run = retraining.retraining_run(name, m, tok, r, "brown")
    cost, control = run.cost(), run.control_cost()
    out = {
        "model": name,
        "sizes": r,
        "corpus": "brown",
        "dtype": run.dtype,
        "policy_dtype": str(resolve_dtype("auto", torch.device("cpu"))),
        "nll_means": {k: float(v.mean()) for k, v in run.nll.items()},
        "cost_mean": float(cost.mean()),
        "cost_upper95": retraining.upper_bound(cost),
        "control_mean": float(control.mean()),
        "control_upper95": retraining.upper_bound(control),
        "bar": retraining.SEAMLESS_NATS,
        "windows_for_80pct_at_declared_steps": retraining.windows_for_power(float(np.std(cost, ddof=1))),
        "loss_first_last": {v: [run.losses[v][:5], run.losses[v][-5:]] for v in run.losses},
        "fine_tune_and_reading_s": run.wall_s,
        "wall_s": time.perf_counter() - t0,
    }
    fig = plotting.training_curves(
        {f"{v} fine-tune": run.losses[v] for v in retraining.VARIANTS},
        f"CA-4 {name}: fine-tuning loss, {steps} steps of 8 × 32 (each in its own mode)",
    )
    fig.savefig(f"results/cpu-2026-11-29-ca4-retrain/{name}-{steps}-loss.png", dpi=110, bbox_inches="tight")
    print(json.dumps(out, indent=1))
    with open(f"results/cpu-2026-11-29-ca4-retrain/{name}-{steps}.json", "w") as f:
        json.dump(out, f, indent=1)
