"""000 Causal shift: input→output alignment across depth and residual attenuation, CS-1 … CS-6.

CS-1/CS-2 read the embedded tied-embedding models (or `--model`) over Brown test windows led
by <bos>: every layer's state goes through the final norm and is decoded by the tied dictionary
(the logit lens; `repro.causal_shift.alignment_profile`). The source used 1,000 WikiText
sequences; the number we use is recorded.

CS-3 … CS-6 train the source's GPT-2-style model small (4 layers at ci) on Brown BPE, every
variant from the same initial weights and data order: the baseline (three seeds, for the
seed-to-seed spread), a fixed cut (α = 0.5) at each layer, α = 0 at the middle layer
(three seeds, against the baseline's), and the learned gate. Where our measurement contradicts the source at this scale
the test is a strict xfail whose records hold the measured numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
from scipy import stats as sps

from repro import causal_shift as cs
from repro import data, figures
from repro import train as T
from repro.runtime import resolve_dtype

SOURCE_SWITCH = (17, 26)  # 000 Fig 2: Gemma-2-2B switches at ≈ layer 17 of 26

# (claim, model) → why the claim does not hold on that embedded model (measured at ci)
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("CS-1", "smollm2-135m"): (
        "the input alignment collapses after the first block (top-5 input match 82% at the embeddings, 5% from "
        "layer 1 on) while the target match starts at ≈ 15% (frequent tokens) and climbs only in the second half "
        "(≈ 53% at the output): the target curve overtakes the input curve at layer ≈ 0.9, not deep in the network."),
    ("CS-1", "gemma3-270m"): (
        "the input alignment holds for one block only (99% → 67% → 2% at layer 2), so the target curve overtakes "
        "it at layer ≈ 3.6 of 18 in a regime where neither matches; the target alignment itself builds late "
        "(≥ 20% only from layer 12)."),
    # profile-level (key: the profile's name): the 4-layer models trained at ci
    ("CS-4", "ci"): (
        "cutting the first layer changes the validation loss by −0.013 / −0.043 / +0.051 nats over three paired "
        "seeds (p ≈ 0.48): within seed noise at 4 layers × 300 steps of Brown. The seed-0 sweep does rank layer 0 "
        "first and the last layer second, as Fig 4 does, and the layer matters (spread ≈ 5 seed-sd)."),
    ("CS-5", "ci"): (
        "after 300 steps the gate has moved from 0.25 each to ≈ [0.28, 0.22, 0.24, 0.27]: towards the first and the "
        "last layer (the sweep's two best cuts), far from putting its mass on one late layer (the source: 10B tokens)."),
    ("CS-6", "ci"): (
        "gating ≥ fixed cut ≥ baseline holds on stdlib code only: on Brown test accuracy gating is lowest "
        "(9.3% vs 9.8% / 9.7%) and on last-word NLL the fixed cut is best; the gaps are ≤ 0.5 points, the size of "
        "seed noise at this scale."),
}


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("causal_shift")


# --------------------------------------------------------------------------- CS-1, CS-2


@dataclass
class Reading:
    name: str
    profile: cs.AlignmentProfile
    switch: dict
    ci: dict
    panel: list
    n_seq: int


@pytest.fixture(scope="module")
def reading(model_name, pretrained, sizes) -> Reading:
    m, tok = pretrained(model_name)
    a = sizes["align"]
    ids = data.bos_windows(tok, "test", a["n_seq"], a["seq_len"] + 1, who=f"--model {model_name}: the causal-shift claims",
                           device=next(m.parameters()).device)
    dtype = resolve_dtype(a["compute_dtype"], ids.device)
    p = cs.alignment_profile(m, ids, k=a["k"], compute_dtype=dtype)
    panel = cs.decoded_panel(m, ids[0], tok, a["panel_start"])
    return Reading(model_name, p, cs.switch_layers(p), cs.bootstrap_switch(p, a["n_boot"]), panel, ids.shape[0])


@pytest.mark.policy_dtype
@pytest.mark.claim("CS-1", source="000 §III, Fig 2, Table I")
def test_switch_from_input_to_target_is_deep(claim, reading):
    r, p = reading, reading.profile
    L = p.n_layers
    inp, tgt = p.mean("input_match"), p.mean("target_match")
    sw = r.switch["match"]
    lo, hi, share = r.ci["match"]
    half = cs.level_crossing(tgt, 0.5 * tgt[-1])
    claim.record(f"{r.name}: sequences × tokens (source: 1,000 WikiText sequences)", f"{r.n_seq} × {p.n_tokens // r.n_seq}")
    claim.record(f"{r.name}: top-{p.k} input match at the embeddings", float(inp[0]), expected=0.5, compare="ge",
                 tol=0.0, why="'early layers decode to the input token': most tokens")
    claim.record(f"{r.name}: top-{p.k} target match at the last layer", float(tgt[-1]), expected=0.3, compare="ge",
                 tol=0.0, why="'late layers decode to the next token': a large share, and more than the input")
    claim.record(f"{r.name}: switch layer (target overtakes input) / L", sw / L, expected=SOURCE_SWITCH[0] / SOURCE_SWITCH[1],
                 compare="ge", tol=SOURCE_SWITCH[0] / SOURCE_SWITCH[1] - 0.5,
                 why="'the switch is deep in the network': in the deeper half (the source's 17/26 = 0.65, less 0.15)")
    claim.record(f"{r.name}: switch layer, 95% bootstrap CI over sequences", f"{sw:.2f} [{lo:.2f}, {hi:.2f}] of {L}")
    claim.record(f"{r.name}: layer where the target match reaches half its final value", half)
    claim.figure(figures.alignment_matches(p, sw, f"000 Fig 2 — {r.name} ({r.n_seq} Brown windows)"), f"{r.name}_fig2")
    claim.table(f"000 Table I — {r.name}: top-1 decodings by layer (grouped)", ["layers", *[f"#{i}" for i in range(len(r.panel[0]) - 1)]],
                r.panel)
    claim.not_reproduced_if(NOT_REPRODUCED, ("CS-1", r.name), f"switch {sw:.2f} of {L} [{lo:.2f}, {hi:.2f}]; input match "
                                  f"{np.round(inp[:3], 2).tolist()}…, target match at L {tgt[-1]:.2f}")
    assert inp[0] >= 0.5 and tgt[-1] >= 0.3 and tgt[-1] > inp[-1] and sw / L >= 0.5


@pytest.mark.policy_dtype
@pytest.mark.claim("CS-2", source="000 §III, Fig 3")
def test_continuous_measures_agree(claim, reading):
    r, p = reading, reading.profile
    q = max(1, (p.n_layers + 1) // 4)
    first, last = slice(0, q), slice(-q, None)
    m = {k: p.mean(k) for k in ("cos_in", "cos_out", "projection")}
    falls = float(m["cos_in"][first].mean() - m["cos_in"][last].mean())
    rises = float(m["cos_out"][last].mean() - m["cos_out"][first].mean())
    proj = float(m["projection"][last].mean() - m["projection"][first].mean())
    claim.record(f"{r.name}: cos(h, e_in), first − last quarter of layers", falls, expected=0.0, compare="ge", tol=0.0,
                 why="'cosine to the input embedding falls'")
    claim.record(f"{r.name}: cos(h, e_out), last − first quarter", rises, expected=0.0, compare="ge", tol=0.0,
                 why="'cosine to the output embedding rises'")
    claim.record(f"{r.name}: projection, last − first quarter", proj, expected=0.0, compare="ge", tol=0.0,
                 why="'goes 0 → 1': towards the output token")
    claim.record(f"{r.name}: projection at the embeddings / at the last layer",
                 f"{m['projection'][0]:.2f} / {m['projection'][-1]:.2f}")
    claim.record(f"{r.name}: last-quarter projection", float(m["projection"][last].mean()), expected=0.5, compare="ge",
                 tol=0.0, why="past the midpoint of the input→output axis by the end")
    for k in ("match", "cosine", "projection"):
        lo, hi, _ = r.ci[k]
        claim.record(f"{r.name}: switch by {k}", f"{r.switch[k]:.2f} [{lo:.2f}, {hi:.2f}]")
    claim.figure(figures.alignment_measures({r.name: p}, f"000 Fig 3 — {r.name}"), f"{r.name}_fig3")
    claim.not_reproduced_if(NOT_REPRODUCED, ("CS-2", r.name), f"Δcos_in {falls:.3f}, Δcos_out {rises:.3f}, Δprojection {proj:.3f}")
    assert falls > 0 and rises > 0 and proj > 0 and m["projection"][last].mean() >= 0.5


# --------------------------------------------------------------------------- CS-3 … CS-6: training


@dataclass
class Runs:
    tc: object
    cfg: T.TrainConfig
    baseline: list  # TrainResult per seed
    cuts: list  # TrainResult per layer (seed 0, α = cut_alpha)
    first_cut: list  # the cut at layer 0, per seed (seed 0 = cuts[0]), paired with `baseline`
    alpha0: list  # α = 0 at the middle layer, per seed
    gate: T.TrainResult
    gate_variant: cs.Variant
    middle: int

    @staticmethod
    def val(r: T.TrainResult) -> float:
        return float(r.history[-1]["val_loss"])


@pytest.fixture(scope="module")
def runs(sizes, device) -> Runs:
    tc = cs.gpt2_style(**sizes["model"])
    cfg = T.TrainConfig(**sizes["train"], vocab_size=sizes["model"]["vocab_size"])
    tr, va, ident = T.corpus_tokens("brown", sizes["model"]["vocab_size"])
    kw = dict(train_tokens=tr, val_tokens=va, data_identity=ident, device=device)
    L, a = tc.n_layer, sizes["cut_alpha"]
    middle = L // 2
    seeds = sizes["seeds"]
    baseline = [cs.train_variant(tc, cfg, cs.Variant("baseline"), s, **kw) for s in seeds]
    cuts = [cs.train_variant(tc, cfg, cs.Variant(f"cut@{l}", "cut", l, a), seeds[0], **kw) for l in range(L)]
    first = [cuts[0]] + [cs.train_variant(tc, cfg, cs.Variant("cut@0", "cut", 0, a), s, **kw) for s in seeds[1:]]
    alpha0 = [cs.train_variant(tc, cfg, cs.Variant(f"cut@{middle} α=0", "cut", middle, 0.0), s, **kw) for s in seeds]
    gv = cs.Variant("gating", "learned", alpha=a)
    gate = cs.train_variant(tc, cfg.replace(snapshot_steps=sizes["gate_snapshots"]), gv, seeds[0], **kw)
    return Runs(tc, cfg, baseline, cuts, first, alpha0, gate, gv, middle)


def _setting(claim, runs: Runs, sizes) -> None:
    m, t = sizes["model"], sizes["train"]
    claim.record("model (source: GPT-2 150M, 12 layers, 10B Fineweb-Edu tokens)",
                 f"{m['n_layer']} layers × {m['d_model']}, V = {m['vocab_size']}, {t['steps']} steps × "
                 f"{t['batch_size']} × {t['seq_len']} Brown tokens")


@pytest.mark.policy_dtype
@pytest.mark.claim("CS-3", source="000 §IV")
def test_no_skip_trains_worse(claim, runs, sizes, profile):
    _setting(claim, runs, sizes)
    zero = np.array([Runs.val(r) for r in runs.alpha0])
    one = np.array([Runs.val(r) for r in runs.baseline])
    t = sps.ttest_rel(zero, one, alternative="greater")
    claim.record(f"val loss, α = 0 at layer {runs.middle} (per seed)", np.round(zero, 4).tolist())
    claim.record("val loss, α = 1 (the baseline, per seed)", np.round(one, 4).tolist())
    claim.record("mean paired difference (α = 0 minus α = 1)", float((zero - one).mean()), expected=0.0, compare="ge",
                 tol=0.0, why="'fully suppressing the residual connection degraded optimization'; here α = 0 at one "
                               "(middle) layer, the source's single-layer setting, not at every layer")
    claim.record("one-sided paired t-test p", float(t.pvalue), expected=0.05, compare="le", tol=0.0,
                 why=f"{len(zero)} seeds, same initial weights and data order per pair; conventional α")
    curves = {f"α = 0 at layer {runs.middle} (seed {s})": r.losses for s, r in zip(sizes["seeds"], runs.alpha0)}
    curves.update({f"baseline (seed {s})": r.losses for s, r in zip(sizes["seeds"], runs.baseline)})
    claim.figure(figures.training_curves(curves, f"000 §IV — no skip at layer {runs.middle} vs the baseline"),
                 "alpha0_curves")
    claim.not_reproduced_if(NOT_REPRODUCED, ("CS-3", profile.name), f"Δ {float((zero - one).mean()):.4f}, p {float(t.pvalue):.3g}")
    assert (zero - one).mean() > 0 and t.pvalue <= 0.05


@pytest.mark.policy_dtype
@pytest.mark.claim("CS-4", source="000 §IV, Fig 4")
def test_fixed_cut_sweep(claim, runs, sizes, profile):
    _setting(claim, runs, sizes)
    base_all = np.array([Runs.val(r) for r in runs.baseline])
    base, sd = float(base_all[0]), float(base_all.std(ddof=1))
    cut = np.array([Runs.val(r) for r in runs.cuts])
    L = len(cut)
    for l, v in enumerate(cut):
        claim.record(f"val loss − baseline, cut at layer {l}", float(v - base))
    claim.record("baseline val loss, sd over seeds", f"{base:.4f} ± {sd:.4f} ({len(base_all)} seeds)")
    order = np.argsort(cut)
    first = np.array([Runs.val(r) for r in runs.first_cut])
    t = sps.ttest_rel(first, base_all, alternative="less")
    claim.record("cut at layer 0 − baseline, per seed (same init and data order)", np.round(first - base_all, 4).tolist())
    claim.record("cut at layer 0 − baseline, mean over seeds", float((first - base_all).mean()), expected=0.0,
                 compare="le", tol=0.0, why="'cutting the first layer improves validation loss'")
    claim.record("one-sided paired t-test p (cut at layer 0 < baseline)", float(t.pvalue), expected=0.05, compare="le",
                 tol=0.0, why=f"{len(first)} seeds, paired; conventional α. Seeds change the initial weights only "
                               "(one data order), so seed spread is a lower bound on run-to-run noise")
    claim.record("spread of the sweep (max − min) / seed sd", float((cut.max() - cut.min()) / sd), expected=2.0,
                 compare="ge", tol=0.0, why="'highly sensitive to the layer': beyond seed noise")
    claim.record("second-best cut layer / L", float(order[1] / L), expected=0.5, compare="ge", tol=0.0,
                 why="'a late cut is second best'")
    claim.figure(figures.cut_sweep(cut, base, sd, f"000 Fig 4 — {L}-layer GPT-2-style model on Brown"), "fig4")
    claim.not_reproduced_if(NOT_REPRODUCED, ("CS-4", profile.name), f"cut − baseline per layer {np.round(cut - base, 4).tolist()}, "
                                        f"seed sd {sd:.4f}")
    assert (first - base_all).mean() < 0 and t.pvalue <= 0.05 and (cut.max() - cut.min()) >= 2 * sd and order[1] >= L / 2


@pytest.mark.policy_dtype
@pytest.mark.claim("CS-5", source="000 §IV, Fig 5")
def test_learned_gate_concentrates_late(claim, runs, sizes, profile):
    hist = cs.gate_history(runs.gate, runs.tc, runs.gate_variant)
    final = hist[max(hist)]
    L = len(final)
    top = int(final.argmax())
    claim.record("π at init (uniform)", np.round(hist[min(hist)], 4).tolist())
    claim.record("π after training", np.round(final, 4).tolist())
    claim.record("largest π", float(final.max()), expected=0.5, compare="ge", tol=0.0,
                 why="'attracts all the mass': at least half of it")
    claim.record("layer of the largest π / L (source: 11th of 12)", (top + 1) / L, expected=0.5, compare="ge", tol=0.0,
                 why="a late layer")
    claim.figure(figures.gate_distribution(hist, f"000 Fig 5 — learned gate, {L} layers"), "fig5")
    claim.not_reproduced_if(NOT_REPRODUCED, ("CS-5", profile.name), f"π {np.round(final, 3).tolist()}")
    assert final.max() >= 0.5 and (top + 1) / L >= 0.5


@pytest.fixture(scope="module")
def table2(runs, sizes):
    """Baseline, best fixed cut (by Brown validation loss), gating on held-out Brown (test
    split), stdlib code (validation split) and last-word accuracy on Brown test sentences."""
    tok = data.brown_tokenizer(sizes["model"]["vocab_size"])
    T1 = runs.cfg.seq_len + 1
    n = sizes["eval"]["windows"]
    brown = data.windows(tok, "test", n, T1)
    _, code_val, _ = T.corpus_tokens("stdlib-code", sizes["model"]["vocab_size"])
    starts = torch.linspace(0, code_val.numel() - T1 - 1, n).long()
    code = torch.stack([code_val[s:s + T1] for s in starts])
    items = cs.last_word_items(tok, [d.text for d in data.brown_split("test")], max_items=sizes["eval"]["last_word_items"],
                               max_tokens=runs.cfg.seq_len)
    best = int(np.argmin([Runs.val(r) for r in runs.cuts]))
    models = {"baseline": runs.baseline[0].model, f"fixed cut (layer {best})": runs.cuts[best].model,
              "gating": runs.gate.model}
    out = {}
    for name, m in models.items():
        m.eval()
        acc, nll = cs.last_word_scores(m, items)
        out[name] = {"brown": cs.loss_and_accuracy(m, brown), "code": cs.loss_and_accuracy(m, code),
                     "last_word": acc, "last_word_nll": nll}
    return out, len(items), best


@pytest.mark.policy_dtype
@pytest.mark.claim("CS-6", source="000 §IV, Table II")
def test_gating_beats_fixed_cut_beats_baseline(claim, table2, profile):
    res, n_items, best = table2
    names = list(res)
    acc = [[bench, *[100 * res[n][key][1] for n in names]]
           for bench, key in (("Brown test (acc %)", "brown"), ("stdlib code (acc %)", "code"))]
    # the last-word task is ordered by its NLL: at this scale every model's last-word accuracy
    # is 0 (measured), and ties at 0 say nothing
    lw = [f"last word, Brown ({n_items} sentences, NLL)", *[res[n]["last_word_nll"] for n in names]]
    other = [[b, *[res[n][k][0] for n in names]] for b, k in (("Brown test (loss)", "brown"), ("stdlib code (loss)", "code"))]
    other.append([f"last word, Brown ({n_items} sentences, acc %)", *[100 * res[n]["last_word"] for n in names]])
    claim.table("000 Table II — baseline / best fixed cut (by Brown validation loss) / gating",
                ["benchmark", *names], [[r[0], *[round(v, 3) for v in r[1:]]] for r in acc + [lw] + other])
    claim.figure(figures.benchmark_bars([[r[0].split(" (")[0], *r[1:]] for r in acc], "next-token accuracy (%)",
                                        "000 Table II on Brown / code"), "table2")
    holds = [r[3] >= r[2] >= r[1] for r in acc] + [lw[3] <= lw[2] <= lw[1]]
    for r, h in zip(acc, holds):
        claim.record(f"{r[0]}: gating ≥ fixed cut ≥ baseline", f"{r[3]:.2f} ≥ {r[2]:.2f} ≥ {r[1]:.2f}: {h}")
    claim.record(f"{lw[0]}: gating ≤ fixed cut ≤ baseline", f"{lw[3]:.3f} ≤ {lw[2]:.3f} ≤ {lw[1]:.3f}: {holds[-1]}")
    claim.record("benchmarks where the order holds", sum(holds), expected=len(holds), compare="ge", tol=0.0,
                 why="'across all evaluated benchmarks'")
    claim.not_reproduced_if(NOT_REPRODUCED, ("CS-6", profile.name), f"the order holds on {sum(holds)} of {len(holds)} benchmarks")
    assert all(holds)
