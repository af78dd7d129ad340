"""Pilot (2026-11-29): is α = 1 − ε at each layer a null with the real sweep's noise? ci sizes, Brown.

Run from the repository root: .venv/bin/python results/cpu-2026-11-29-cs-null/pilot/pilot.py 0.001
Prints each table (seeds × layers) minus its seed's mean over layers, its residual sd and blocked F p."""

import sys, time, numpy as np
from repro.causal_shift import experiments as cs, study
from repro.core import launch, stats, train as T
from repro.harness import profiles


def main():
    eps = float(sys.argv[1])
    sizes = profiles.get_profile("ci").sizes("causal_shift")
    tc = cs.gpt2_style(**sizes["model"])
    cfg = T.TrainConfig(**sizes["train"], vocab_size=sizes["model"]["vocab_size"], corpus="brown")
    tr, va, ident = T.corpus_tokens("brown", sizes["model"]["vocab_size"])
    L, seeds = tc.n_layer, sizes["seeds"]
    cells = [(cs.Variant(f"cut@{l}", "cut", l, 1 - eps), s) for s in seeds for l in range(L)]
    t0 = time.time()
    launch.train_jobs([cs.variant_job(tc, cfg, v, s, corpus="brown", data_identity=ident) for v, s in cells], 1, "cpu")
    vals = [
        study.Runs.val(cs.train_variant(tc, cfg, v, s, train_tokens=tr, val_tokens=va, data_identity=ident))
        for v, s in cells
    ]
    null = np.array(vals).reshape(len(seeds), L)
    real = study.train_runs(sizes, profile="ci").sweep_table()
    for name, t in (("real α=0.5", real), (f"null α={1 - eps}", null)):
        f = stats.blocked_f(t)
        print(
            name,
            np.round(t - t.mean(1, keepdims=True), 4).tolist(),
            "resid sd",
            round(float(np.sqrt(f.ms_error)), 4),
            "F p",
            round(f.p, 3),
        )
    print("seconds", round(time.time() - t0))


if __name__ == "__main__":
    main()
