"""Does CS-4's layer effect hold on other data orders? (2026-11-29, a reviewer's question.)

decide-cs-seeds trains every cell on data order 0, so seeds replicate the initial weights only.
Here seeds 0-5 are trained again on data orders 1 and 2 (the baseline and the α = 0.5 cut at every
layer; decide-cs-seeds' sizes on the mix), and the layer effect is read per order and with orders
as blocks (layer tested against the layer × order interaction, on the cell means over seeds).
Run from the repository root: .venv/bin/python results/cpu-2026-11-29-cs-null/orders/orders.py
"""

import time

import numpy as np

from repro.causal_shift import experiments as cs
from repro.causal_shift import study
from repro.core import launch, stats
from repro.core import train as T
from repro.harness import profiles

SEEDS, ORDERS = range(6), (1, 2)


def main():
    sizes = profiles.get_profile("decide-cs-seeds").sizes("causal_shift")
    tc = cs.gpt2_style(**sizes["model"])
    V = sizes["model"]["vocab_size"]
    cfg0 = T.TrainConfig(**sizes["train"], vocab_size=V, corpus="mix")
    tr, va, ident = T.corpus_tokens("mix", V)
    L, a = tc.n_layer, sizes["cut_alpha"]
    variants = [cs.Variant("baseline")] + [cs.Variant(f"cut@{l}", "cut", l, a) for l in range(L)]
    cells = [(cfg0.replace(data_seed=d), v, s) for d in ORDERS for s in SEEDS for v in variants]
    t0 = time.time()
    launch.train_jobs([cs.variant_job(tc, c, v, s, corpus="mix", data_identity=ident) for c, v, s in cells], 1, "cpu")
    kw = dict(train_tokens=tr, val_tokens=va, data_identity=ident, corpus="mix")
    val = [study.Runs.val(cs.train_variant(tc, c, v, s, **kw)) for c, v, s in cells]
    rel = {}  # order -> (seeds, layers) cut − baseline
    v = np.array(val).reshape(len(ORDERS), len(SEEDS), L + 1)
    for i, d in enumerate(ORDERS):
        rel[d] = v[i, :, 1:] - v[i, :, :1]
    runs = study.train_runs(sizes, corpus="mix", profile="decide-cs-seeds")  # order 0, from the cache
    base0 = np.array([study.Runs.val(r) for r in runs.baseline])[list(SEEDS)]
    rel[0] = runs.sweep_table()[list(SEEDS)] - base0[:, None]
    print(f"trained/loaded {len(cells)} models in {time.time() - t0:.0f} s")
    for d in sorted(rel):
        f = stats.blocked_f(rel[d])
        t = stats.paired_t(rel[d][:, 0], np.zeros(len(SEEDS)), "less")
        print(
            f"order {d}: cut − baseline per layer, mean over {len(SEEDS)} seeds {np.round(rel[d].mean(0), 4).tolist()}; "
            f"blocked F p {f.p:.3g}; layer 0 < baseline one-sided p {t.p:.3g}"
        )
    means = np.array([rel[d].mean(0) for d in sorted(rel)])  # (orders, layers)
    f = stats.blocked_f(means)
    print(
        f"orders as blocks (cell means, layer against layer × order): F {f.statistic:.3g} on "
        f"({f.df_treatments}, {f.df_error}) df, p {f.p:.3g}; layer × order sd {np.sqrt(f.ms_error):.4f}"
    )


if __name__ == "__main__":
    main()
