"""001 §5–6.1 SeedPrint: initialisation biases persist through training and fingerprint a lineage.

One module-scoped "zoo" trains (or loads from the checkpoint cache) the source's lineage at our
scale — LLaMA-style models with seeds 42, 123, 1000, 2000 pre-trained on Brown with one data
order, a distractor (seed 123, another data order), and continual training of seed 1000 and
of the distractor on the standard-library code corpus — and reads every model's responses to
the same random token sequences once. The tests then apply both SeedPrint variants
(`repro.seedprint`: Algorithm 1 as written, and the authors' released variant) to the pairs of
Tables 4a/4b/4c/5, and the four baselines of App B.3.2 where the source reports them.

Verdicts are asserted for Algorithm 1 (the published method; its t and U tests both, at the
source's α = 0.01). The released variant is measured and tabled on every pair but not asserted:
it is a different method, and the tables show where it disagrees.
"""
from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import torch
from scipy import stats as sps

from repro import figures, seedprint as sp, stats
from repro import fingerprint_baselines as fb
from repro.lineage import Lineage, LineageConfig, finetune_pretrained

ALPHA = sp.ALPHA
WHY_ALPHA = "001 §6.1.1: same lineage iff p < 0.01"


# --------------------------------------------------------------------------- shared experiment


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("seedprint")


@pytest.fixture(scope="module")
def lab(sizes):
    return Lineage(LineageConfig.from_sizes(sizes["lineage"]))


@pytest.fixture(scope="module")
def spcfg(sizes):
    return sp.SeedPrintConfig(n=sizes["n"], length=sizes["length"], m=sizes["m"], inputs="tokens", seed=0)


class Zoo:
    """Models of the lineage experiment and their responses (n × d) to one set of random inputs."""

    def __init__(self, lab: Lineage, seeds, cfg: sp.SeedPrintConfig) -> None:
        self.lab, self.cfg = lab, cfg
        self.models: dict[str, torch.nn.Module] = {}
        self.results = {}
        for s in seeds:
            self.models[f"init{s}"] = lab.init(s)
            self.results[f"base{s}"] = lab.base(s, data_seed=0)
            self.models[f"base{s}"] = self.results[f"base{s}"].model
        # Table 5: the distractor is seed 123 trained with a *different* data order, then both it
        # and the true base (seed 1000) continue on the shifted corpus
        self.results["base123'"] = lab.base(123, data_seed=1)
        self.models["base123'"] = self.results["base123'"].model
        for name, seed in (("base1000", 1000), ("base123'", 123)):
            r = lab.continual(self.results[name], seed=seed, corpus="stdlib-code", data_seed=0)
            self.results[f"{name}+code"] = r
            self.models[f"{name}+code"] = r.model
        self.inputs = sp.random_inputs(self.models[f"init{seeds[0]}"], cfg)
        self.responses = {k: sp.responses(m, self.inputs, batch_size=100) for k, m in self.models.items()}

    def compare(self, a: str, b: str, same: bool) -> dict:
        r = sp.compare(self.responses[a], self.responses[b], self.cfg)
        return dict(pair=f"{a} vs {b}", same=same, p_t=r.paper.p_t, p_u=r.paper.p_u,
                    n_dims=len(r.paper.dims), mean_tau=float(np.mean(r.paper.taus)) if len(r.paper.taus) else float("nan"),
                    p_released=r.released.p, z_released=r.released.z)


@pytest.fixture(scope="module")
def zoo(lab, sizes, spcfg):
    torch.manual_seed(0)
    return Zoo(lab, sizes["seeds"], spcfg)


@pytest.fixture(scope="module")
def reef_inputs(lab):
    """64 Brown validation windows of 32 tokens: REEF's "same samples" for both models."""
    _, val, _ = lab.corpus("brown")
    starts = torch.linspace(0, val.numel() - 33, 64).long()
    return val[starts.unsqueeze(1) + torch.arange(32)]


def _row(r: dict, source: tuple | None = None) -> list:
    out = [r["pair"], "same" if r["same"] else "different", f"{r['p_t']:.3g}", f"{r['p_u']:.3g}", r["n_dims"],
           f"{r['mean_tau']:.4f}", f"{r['p_released']:.3g}"]
    return out + (list(source) if source is not None else [])


COLUMNS = ["pair", "lineage", "Alg.1 p (t)", "Alg.1 p (U)", "|S|", "mean τ on S", "released p"]


def _record_pair(claim, r: dict) -> None:
    for key, label in (("p_t", "t-test"), ("p_u", "U-test")):
        claim.record(f"{r['pair']}: Alg. 1 {label} p", r[key], expected=ALPHA, tol=0.0,
                     compare="le" if r["same"] else "ge", why=WHY_ALPHA)
    claim.record(f"{r['pair']}: released-variant p (not asserted)", r["p_released"], compare="none")


def _verdict_ok(r: dict) -> bool:
    hit = r["p_t"] < ALPHA and r["p_u"] < ALPHA
    miss = r["p_t"] >= ALPHA and r["p_u"] >= ALPHA
    return hit if r["same"] else miss


# --------------------------------------------------------------------------- SP-1 (Table 4a)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-1", source="001 §6.1.2 Table 4a")
def test_different_seeds_do_not_match(claim, zoo, lab, spcfg):
    source = {(42, 2000): (0.357, 0.532), (123, 42): (0.678, 0.565), (1000, 123): (0.363, 0.335),
              (2000, 1000): (0.434, 0.481)}
    rows = [zoo.compare(f"init{a}", f"init{b}", same=False) for a, b in source]
    for r in rows:
        _record_pair(claim, r)
    # §6.1.1 also states Algorithm 1 with Gaussian input embeddings. Measured here on the same
    # init pair: both models pass the shared input straight through the residual stream, so two
    # unrelated inits correlate on every dimension. Recorded, not asserted (tokens are the default).
    gcfg = sp.SeedPrintConfig(**{**spcfg.__dict__, "inputs": "gaussian"})
    g = sp.seedprint(zoo.models["init42"], zoo.models["init123"], gcfg)
    claim.record("init42 vs init123 with Gaussian inputs: Alg. 1 t-test p (independent inits!)", g.paper.p_t,
                 compare="none")
    claim.record("init42 vs init123 with Gaussian inputs: mean τ on S", float(np.mean(g.paper.taus)), compare="none")
    claim.table("Table 4a: different init seeds (tokens inputs); source p (t, U) in the last columns",
                COLUMNS + ["source p (t)", "source p (U)"], [_row(r, s) for r, s in zip(rows, source.values())]
                + [["init42 vs init123, Gaussian inputs", "different", f"{g.paper.p_t:.3g}", f"{g.paper.p_u:.3g}",
                    len(g.paper.dims), f"{np.mean(g.paper.taus):.4f}", f"{g.released.p:.3g}", "—", "—"]])
    claim.figure(figures.seedprint_pvalues(rows, "Table 4a: different seeds (should not match)"), "table4a")
    assert all(_verdict_ok(r) for r in rows)


# --------------------------------------------------------------------------- SP-2 (Table 4b, Table 8)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-2", source="001 §6.1.2 Table 4b; App B.3.2 Table 8")
def test_trained_model_matches_its_init(claim, zoo, sizes, reef_inputs):
    source = {42: (2.20e-8, 6.28e-8), 123: (7.09e-6, 1.37e-5), 1000: (5.58e-4, 2.81e-3), 2000: (4.00e-10, 1.27e-9)}
    rows, table = [], []
    for s in sizes["seeds"]:
        r = zoo.compare(f"init{s}", f"base{s}", same=True)
        rows.append(r)
        _record_pair(claim, r)
        base = fb.all_baselines(zoo.models[f"init{s}"], zoo.models[f"base{s}"], reef_inputs)
        for name, b in base.items():
            claim.record(f"{r['pair']}: {name} similarity (baseline, threshold 0.8)", b.similarity, compare="none")
        table.append(_row(r, source.get(s, ("—", "—"))) + [f"{base[k].similarity:.3f}" for k in fb.METHODS])
        claim.record(f"base{s} val loss (nats/token)", zoo.results[f"base{s}"].final_val_loss, compare="none")
    claim.table("Table 4b (+ Table 8 baselines): init vs its own trained model",
                COLUMNS + ["source p (t)", "source p (U)", "Intrinsic", "REEF", "PCS", "ICS"], table)
    claim.figure(figures.seedprint_pvalues(rows, "Table 4b: init vs trained descendant (should match)"), "table4b")
    assert all(_verdict_ok(r) for r in rows)


# --------------------------------------------------------------------------- SP-3 (Table 4c)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-3", source="001 §6.1.2 Table 4c")
def test_same_data_order_does_not_make_seeds_match(claim, zoo):
    source = {(123, 1000): (0.385, 0.486), (1000, 2000): (0.035, 0.096), (42, 123): (0.426, 0.337),
              (2000, 42): (0.388, 0.287)}
    rows = [zoo.compare(f"init{a}", f"base{b}", same=False) for a, b in source]
    for r in rows:
        _record_pair(claim, r)
    claim.table("Table 4c: same data, same order, different init seeds (init_i vs base_j)",
                COLUMNS + ["source p (t)", "source p (U)"], [_row(r, s) for r, s in zip(rows, source.values())])
    claim.figure(figures.seedprint_pvalues(rows, "Table 4c: init_i vs base_j, same data order"), "table4c")
    assert all(_verdict_ok(r) for r in rows)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-3", source="001 §6.1.2 Table 4c, extended to trained vs trained")
def test_trained_models_with_one_data_order_do_not_match(claim, zoo, sizes, profile):
    """Stronger than the source's pairs: two *trained* models that saw the same batches in the
    same order, every pair of the four seeds; each test (t and U) must keep p ≥ α."""
    rows = [zoo.compare(f"base{a}", f"base{b}", same=False) for a, b in itertools.combinations(sizes["seeds"], 2)]
    for r in rows:
        _record_pair(claim, r)
    claim.table("Table 4c extended: base_i vs base_j (same data, same order)", COLUMNS, [_row(r) for r in rows])
    claim.figure(figures.seedprint_pvalues(rows, "base_i vs base_j, same data order"), "table4c_trained")
    false_pos = [r for r in rows if not _verdict_ok(r)]
    if profile.name == "ci":  # measured at ci (deterministic on CPU); a pass must update this
        claim.not_reproduced((
            "at ci base1000 vs base2000 is flagged by the U-test (p = 0.0036; t-test p = 0.015; mean τ 0.12 on "
            "9 identity dims). Between trained models the per-dim τ's are over-dispersed (std ≈ 0.2 across "
            "dims vs τ_std(n=1000) = 0.021 for independent samples: the models learned shared features with "
            "per-dim signs), so a one-sided test against the N(0, I) null of Alg. 1 rejects more often than "
            "α when the few identity dims happen to lean positive. The released variant flags base42 vs "
            "base123 and base42 vs base1000 (p ≈ 1e-10)."))
    assert not false_pos, f"pairs flagged as one lineage: {[r['pair'] for r in false_pos]}"


# --------------------------------------------------------------------------- SP-4 (Table 5)


@pytest.fixture(scope="module")
def table5(zoo, reef_inputs):
    out = []
    for suspect, same in (("base1000+code", True), ("base123'+code", False)):
        r = zoo.compare("base1000", suspect, same=same)
        r["baselines"] = fb.all_baselines(zoo.models["base1000"], zoo.models[suspect], reef_inputs)
        r["val_loss"] = zoo.results[suspect].final_val_loss
        out.append(r)
    return out


def _table5(claim, rows) -> None:
    claim.table("Table 5 (code shift only): base seed 1000 vs continual-trained suspects; source: "
                "the_stack (1000) p 0 / 3.1e-69, Intrinsic 0.489, REEF 0.557, PCS 0.585, ICS 0.123; "
                "the_stack (123) 0.732 / 0.831, 0.445, 0.580, 0.301, 0.026",
                COLUMNS + ["Intrinsic", "REEF", "PCS", "ICS", "suspect code val loss"],
                [_row(r) + [f"{r['baselines'][k].similarity:.3f}" for k in fb.METHODS] + [f"{r['val_loss']:.3f}"]
                 for r in rows])


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-4", source="001 §6.1.2 Table 5 (The Stack rows)")
def test_lineage_survives_continual_training_on_code(claim, zoo, table5):
    for r in table5:
        _record_pair(claim, r)
    claim.record("base1000 val loss on Brown before the code shift", zoo.results["base1000"].final_val_loss,
                 compare="none")
    _table5(claim, table5)
    claim.figure(figures.seedprint_pvalues(table5, "Table 5: continual training on stdlib code"), "table5")
    assert all(_verdict_ok(r) for r in table5)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-4", source="001 §6.1.2 Table 5: baselines fail on the code shift")
def test_baselines_fail_on_the_code_shift(claim, table5, profile):
    true, distractor = table5
    wrong = {}
    for k in fb.METHODS:
        t, d = true["baselines"][k], distractor["baselines"][k]
        claim.record(f"{k}: similarity, true code descendant (threshold 0.8)", t.similarity, compare="none")
        claim.record(f"{k}: similarity, code distractor (threshold 0.8)", d.similarity, compare="none")
        wrong[k] = (not t.same_lineage) or d.same_lineage
    claim.record("baselines misattributing the code pair (source: 4 of 4)", sum(wrong.values()), expected=4,
                 tol=0.0, compare="ge", why="Table 5: every baseline errs on The Stack")
    _table5(claim, table5)
    claim.figure(figures.baseline_bars(table5, fb.THRESHOLD), "table5_baselines")
    if profile.name == "ci":  # measured at ci (deterministic on CPU); a pass must update this
        claim.not_reproduced((
            "3 of 4 baselines err at ci, not 4: PCS attributes correctly (0.89 for the true code descendant, "
            "0.38 for the distractor) — 150 continual steps move the weights far less than the source's "
            "continual pre-training on The Stack; Intrinsic (0.96 / 0.96) and REEF (0.90 / 0.87) call the "
            "distractor a descendant, ICS (0.77) misses the true one"))
    assert all(wrong.values()), f"baselines that attribute correctly: {[k for k, v in wrong.items() if not v]}"


# --------------------------------------------------------------------------- BB-7 (Fig 11)


@pytest.mark.policy_dtype
@pytest.mark.claim("BB-7", source="001 §5 Finding 7, Fig 11")
def test_bias_persists_through_training(claim, zoo, lab, spcfg, sizes):
    """τ between init 42 and each checkpoint of its own training on init 42's top-m mean dims,
    against checkpoints of seed 123's training (the different-seed baseline)."""
    steps = sorted(zoo.results["base42"].snapshots)
    m = spcfg.m
    init = zoo.responses["init42"]
    dims = sorted(torch.topk(init.double().mean(0), m).indices.tolist())
    lineage, baseline, ps = [], [], []
    for step in steps:
        own = sp.responses(lab.snapshot(zoo.results["base42"], step, 42), zoo.inputs, batch_size=100)
        other = sp.responses(lab.snapshot(zoo.results["base123"], step, 123), zoo.inputs, batch_size=100)
        lineage.append(sp.kendall_per_dim(init.numpy(), own.numpy(), dims))
        baseline.append(sp.kendall_per_dim(init.numpy(), other.numpy(), dims))
        p = sps.mannwhitneyu(lineage[-1], baseline[-1], alternative="greater").pvalue
        ps.append(min(1.0, p * (len(steps) - 1)) if step > 0 else float("nan"))
        claim.record(f"step {step}: mean τ, same init (top-{m} dims)", float(lineage[-1].mean()), compare="none")
        claim.record(f"step {step}: mean τ, other-seed baseline", float(baseline[-1].mean()), compare="none")
        if step > 0:
            claim.record(f"step {step}: Mann–Whitney p (lineage > baseline), Bonferroni", ps[-1], expected=ALPHA,
                         tol=0.0, compare="le", why="shifted upward at every checkpoint; α = 0.01 after Bonferroni")
    claim.figure(figures.fig11_persistence(steps, lineage, baseline, m), "fig11")
    assert all(p < ALPHA for s, p in zip(steps, ps) if s > 0)


# --------------------------------------------------------------------------- SP-5 (Table 6)


@pytest.fixture(scope="module")
def finetunes(pretrained, model_names, sizes):
    ps = sizes["pretrained"]
    cfg = sp.SeedPrintConfig(n=ps["n"], length=ps["length"], m=ps["m"], seed=0)
    out = {}
    for name in model_names:
        base, tok = pretrained(name)
        tuned = copy.deepcopy(base)
        ft = finetune_pretrained(tuned, tok, name=name, steps=ps["finetune_steps"], lr=ps["finetune_lr"],
                                 batch_size=ps["finetune_batch"], seq_len=ps["finetune_seq_len"])
        x = sp.random_inputs(base, cfg)
        fa = sp.responses(base, x, batch_size=50)
        fb_ = sp.responses(tuned, x, batch_size=50)
        r = sp.compare(fa, fb_, cfg)
        tokens = ps["finetune_steps"] * ps["finetune_batch"] * ps["finetune_seq_len"]
        out[name] = dict(pair=f"{name} vs {name}+code ft", same=True, p_t=r.paper.p_t, p_u=r.paper.p_u,
                         n_dims=len(r.paper.dims), mean_tau=float(np.mean(r.paper.taus)), p_released=r.released.p,
                         z_released=r.released.z, tokens=tokens, val=(ft.history[0]["val_loss"], ft.final_val_loss))
        del tuned
    return cfg, out


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-5", source="001 §6.1.2 Table 6")
def test_finetuned_pretrained_models_match(claim, finetunes, pretrained, model_names):
    cfg, out = finetunes
    rows = list(out.values())
    for name, r in out.items():
        _record_pair(claim, r)
        claim.record(f"{name}: fine-tune tokens (code, embeddings frozen)", r["tokens"], compare="none")
        claim.record(f"{name}: code val loss before → after", f"{r['val'][0]:.3f} → {r['val'][1]:.3f}", compare="none")
    if len(model_names) >= 2:
        # Two unrelated pretrained models: different tokenizers and widths, so they read the same
        # random *word strings* (each through its own tokenizer) and are compared on their first
        # min(d_a, d_b) hidden dimensions — a null pair of two trained models.
        (a, (ma, ta)), (b, (mb, tb)) = [(n, pretrained(n)) for n in model_names[:2]]
        texts = sp.random_word_texts(cfg.n, 3 * cfg.length, seed=0)
        fa = sp.responses(ma, sp.text_inputs(ta, texts, cfg.length), batch_size=50)
        fb_ = sp.responses(mb, sp.text_inputs(tb, texts, cfg.length), batch_size=50)
        w = min(fa.shape[1], fb_.shape[1])
        r = sp.compare(fa[:, :w], fb_[:, :w], cfg)
        cross = dict(pair=f"{a} vs {b} (first {w} dims, word inputs)", same=False, p_t=r.paper.p_t, p_u=r.paper.p_u,
                     n_dims=len(r.paper.dims), mean_tau=float(np.mean(r.paper.taus)) if len(r.paper.taus) else float("nan"),
                     p_released=r.released.p, z_released=r.released.z)
        _record_pair(claim, cross)
        rows.append(cross)
    claim.table(f"Table 6 at our scale: embedded models vs short code fine-tunes (n={cfg.n}, length={cfg.length}, "
                f"m={cfg.m}); source: Llama-2-7B descendants, U-test p 1.3e-41 … 2.0e-3",
                COLUMNS, [_row(r) for r in rows])
    claim.figure(figures.seedprint_pvalues(rows, "Table 6: pretrained models vs fine-tunes"), "table6")
    assert all(_verdict_ok(r) for r in rows)


# --------------------------------------------------------------------------- SP-6 (App B.3.1, Fig 13)


@pytest.fixture(scope="module")
def null_pairs(lab, sizes, spcfg, zoo):
    """All pairs of `n_null_models` independent inits (seeds 10_000 + i) on the zoo's inputs."""
    seeds = [10_000 + i for i in range(sizes["n_null_models"])]
    resp = {s: sp.responses(lab.init(s), zoo.inputs, batch_size=100) for s in seeds}
    rows, pooled = [], []
    for a, b in itertools.combinations(seeds, 2):
        r = sp.compare(resp[a], resp[b], spcfg)
        rows.append((r.paper.p_t, r.paper.p_u, r.released.p))
        pooled.extend(r.paper.taus.tolist())
    return np.array(rows), np.array(pooled), len(seeds)


@pytest.mark.claim("SP-6", source="001 App B.3.1 (Fig 13); §6.1.1 Resolve (3)")
def test_null_false_positive_rate(claim, null_pairs, spcfg):
    """Sound means the rate is not above α (Wilson lower bound ≤ α). Algorithm 1's p is the mean
    of 10 p's against one τ set, which is conservative: the measured rate sits below α."""
    ps, _, n_models = null_pairs
    n_pairs = len(ps)
    ok, rows = True, []
    for j, label in enumerate(("Alg. 1 t-test", "Alg. 1 U-test", "released variant")):
        k = int((ps[:, j] < ALPHA).sum())
        ci = stats.binomial_ci(k, n_pairs)
        claim.record(f"{label}: false-positive rate over {n_pairs} pairs of {n_models} independent inits",
                     k / n_pairs, compare="none")
        if j < 2:  # asserted for the published test; the released variant is measured only
            claim.record(f"{label}: Wilson 95% lower bound of the false-positive rate", ci.low, expected=ALPHA,
                         tol=0.0, compare="le", why="a sound test's FPR is ≤ α: the lower bound must not exceed α")
            ok &= ci.low <= ALPHA
        rows.append([label, k, n_pairs, f"{k / n_pairs:.4f}", f"{ci.low:.4f}–{ci.high:.4f}"])
    claim.table("SP-6: false-positive rate at α = 0.01 (pairs share models, so the binomial CI is optimistic)",
                ["test", "false positives", "pairs", "rate", "Wilson 95% CI"], rows)
    assert ok


@pytest.mark.claim("SP-6", source="001 App B.3.1, Fig 13: the null is ~Gaussian around 0")
def test_null_correlations_are_gaussian_around_zero(claim, null_pairs, spcfg, profile):
    _, pooled, _ = null_pairs
    if profile.name == "ci":  # measured at ci (deterministic on CPU); a pass must update this
        claim.not_reproduced((
            "centred at 0 (mean 1.7e-4 ± 4e-4) but not exactly Gaussian at ci: D'Agostino–Pearson p = 0.005 over "
            "the ~3,000 pooled τ's of 496 init pairs, std 1.07× the independent-sample τ_std(n = 1000) — a "
            "mixture of pairs whose outputs share slightly different amounts of structure has heavier tails. "
            "The false-positive rate is unaffected (0/496: Algorithm 1's averaged p is conservative)"))
    sigma = sp.tau_std(spcfg.n)
    sem = pooled.std(ddof=1) / np.sqrt(len(pooled))
    claim.record("mean τ over identity dims of independent pairs", float(pooled.mean()), expected=0.0,
                 tol=4 * sem, why="4 standard errors of the pooled mean (pairs share models: optimistic)")
    claim.record("std of τ / τ_std(n) of independent samples", float(pooled.std(ddof=1) / sigma), compare="none")
    normal_p = float(sps.normaltest(pooled).pvalue)
    claim.record("excess kurtosis of the pooled τ's (Gaussian: 0)", float(sps.kurtosis(pooled)), compare="none")
    claim.record("D'Agostino–Pearson normality p of the pooled τ's", normal_p, expected=ALPHA, tol=0.0,
                 compare="ge", why="'closely follows a Gaussian': normality not rejected at 0.01")
    claim.figure(figures.fig13_null(pooled, sigma, spcfg.n), "fig13")
    assert abs(pooled.mean()) <= 4 * sem
    assert normal_p >= ALPHA
