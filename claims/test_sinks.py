"""001 §6.2 Attention sinks: positional variance at init, and the sinks of nano LLaMA models
trained with positional amplification / attenuation (SK-1 … SK-4).

SK-1 reads 001 Eq 2 / Fig 9 on the three variants at init (the same initial weights SK-2
trains): Gaussian inputs, the std of the first attention layer's output per position, its
log-log slope per seed. SK-2/SK-3 train three identical nano LLaMA-style models (baseline,
amplification o_i·√i, attenuation o_i·√(i/T); one seed, one data order) on Brown through
`repro.train` and compare sink rates on held-out Brown windows at several lengths (001 Fig 12)
and held-out perplexity on Brown and on the stdlib-code corpus (001 Table 7). SK-4 is the
real-model reference row: the embedded pretrained models' sink rates on Brown text.

Windows of every kind start with <bos> (the trained models see <bos> at position 0 of every
training window: `TrainConfig.lead_token`), so "the first token" is the same token in training
and in every measurement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from scipy import stats as sps

from repro import data, figures, sinks
from repro import train as T
from repro.runtime import ReproError, resolve_autocast
from repro.stats import loglog_slope, mean_sem

# 001 Table 7 (Nano LLaMA-2, OpenWebText): PPL on WikiText-2 / C4
TABLE7 = {"baseline": (21.33, 30.36), "amplification": (21.95, 28.70), "attenuation": (21.02, 30.48)}

# "Comparable or better" (SK-3): the variant's perplexity may exceed the baseline's by at most
# 3%, the largest gap the source itself calls competitive (amplification on WikiText-2,
# 21.95 / 21.33 = +2.9%). Tested on the upper 95% confidence bound of the mean per-window NLL
# difference (paired t over held-out windows), i.e. PPL ratio ≤ 1.03 with 95% confidence.
PPL_MARGIN = 1.03

# SK-1: Eq 2 assumes uniform attention; at App B.1's init the attention logits have std ≈ 0.3,
# which puts Σ_j A_ij² ≈ 5% above 1/i (BB-6): the slope of log std against log i stays within
# 0.05 (10% of the −½ exponent) of Eq 2's value; the same bound for "flat" (slope 0).
SLOPE_TOL = 0.05

# SK-2 "attenuation ≈ 0": at most one sink head in the model on average (the metric's
# resolution is one head of L·H), at every length.

# (claim, profile) → why the claim does not hold at that profile (decided from measurements)
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("SK-2", "ci"): (
        "the ci budget (800 steps of 16 × 64 Brown tokens, ≈ 0.8M tokens per model) is far below the one at which "
        "the baseline develops sinks, so the comparison cannot be made: no baseline head crosses ε. Measured on this "
        "machine (6L × 128 llama, lr 3e-3, wd 0.5, <bos>-led windows): 1,500 steps of 16 × 64, of 32 × 64 (lr 6e-3 / "
        "wd 1.0 and lr 1e-2 / wd 0.5) and 1,000 steps of 8 × 256 left every head below 0.23; at 64 × 64 the first "
        "head crossed 0.25 at step ≈ 1,100 (≈ 4.5M tokens, ≈ 5 min per model on 2 cores). `--profile long` trains "
        "the three models at that budget."),
    ("SK-3 amplification", "ci"): (
        "amplification (o_i·√i) costs in-domain perplexity at the ci budget: Brown PPL ≈ 1.25× the baseline's "
        "(232 vs 186), far past the 3% margin, while it is ≈ 0.73× the baseline's on the shifted stdlib-code corpus "
        "— the same split as Table 7 (worse on WikiText-2, better on C4), much larger. Undertrained models (800 "
        "steps); attenuation is comparable or better on both sets."),
    ("SK-3 amplification", "long"): (
        "amplification still costs perplexity once the baseline has sinks (1,600 steps of 64 × 64): Brown PPL "
        "1.15× the baseline's (111.3 vs 96.9) and stdlib code 1.11× (3,269 vs 2,933), both past the 3% margin; "
        "attenuation is comparable on Brown (1.003×) and better on code (0.65×)."),
}


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("sinks")


# --------------------------------------------------------------------------- SK-1


@pytest.fixture(scope="module")
def init_profiles(sizes):
    s = sizes["init"]
    return {k: sinks.init_std_profile(k, sizes["model"], sizes["train"]["seq_len"], s["seeds"], s["n_seq"])
            for k in sinks.SCALINGS}


@pytest.mark.claim("SK-1", source="001 §4.4 Eq 2, §6.2.1")
def test_positional_scaling_flattens_the_std_at_init(claim, init_profiles, sizes):
    """Baseline: std of o_i ∝ 1/√i (slope −½); amplification (√i) and attenuation (√(i/T)):
    flat (slope 0) — on the nano LLaMA variants' first attention layer at init."""
    target = {"baseline": -0.5, "amplification": 0.0, "attenuation": 0.0}
    slopes = {}
    for kind, res in init_profiles.items():
        i = res.positions
        per_seed = [loglog_slope(i, s).slope for s in res.std.values]
        mean, sem = mean_sem(per_seed)
        half = float(sps.t.ppf(0.975, len(per_seed) - 1)) * sem
        slopes[kind] = (mean, half)
        claim.record(f"{kind}: log-log slope of std(o_i) against i (mean over {len(per_seed)} inits)", mean,
                     expected=target[kind], tol=SLOPE_TOL, why="Eq 2's uniform-attention approximation: 10% "
                     "of the exponent covers the e^{s²} offset of init attention (module note)")
        claim.record(f"{kind}: 95% t-interval half-width of the slope over inits", half, compare="none")
    claim.record("first layer's Σ_j A_ij² × i at the last position (1 under uniform attention)",
                 float(init_profiles["baseline"].attn_sq.mean[-1] * init_profiles["baseline"].positions[-1]),
                 compare="none")
    base = init_profiles["baseline"]
    variants = {f"{k} (√i)" if k == "amplification" else f"{k} (√(i/T))": init_profiles[k]
                for k in ("amplification", "attenuation")}
    claim.figure(figures.fig9_positional_std(base, variants), "fig9_variants")
    for kind, (mean, half) in slopes.items():
        assert abs(mean - target[kind]) <= SLOPE_TOL, f"{kind}: slope {mean:.3f}"
        assert half < SLOPE_TOL, f"{kind}: the slope is not resolved (±{half:.3f})"


# --------------------------------------------------------------------------- SK-2, SK-3: the trained trio


@dataclass
class Trio:
    results: dict[str, T.TrainResult]
    cfg: T.TrainConfig
    curves: dict[str, sinks.SinkCurve]
    nll: dict[str, dict[str, torch.Tensor]]  # kind → held-out set → per-window NLL (n,)
    n_windows: dict[str, int]
    layers_heads: int


def _accelerator(profile):
    """`paper`: training under `accelerate launch` (the source trained with DDP on 2 GPUs)."""
    if profile.name != "paper":
        return None
    try:
        from accelerate import Accelerator
    except ImportError as err:  # pragma: no cover - accelerate ships with the suite's deps
        raise ReproError("the paper profile of the sink claims trains under accelerate; pip install accelerate") from err
    bf16 = resolve_autocast("auto", "cuda" if torch.cuda.is_available() else "cpu")  # the dtype policy
    return Accelerator(mixed_precision="bf16" if bf16 else "no")


@pytest.fixture(scope="module")
def trio(sizes, profile) -> Trio:
    V = sizes["model"]["vocab_size"]
    tok = data.brown_tokenizer(V)
    cfg = T.TrainConfig(**sizes["train"], vocab_size=V, lead_token=tok.bos_token_id)
    train_tokens, val_tokens, ident = T.corpus_tokens("brown", V)
    accelerator = _accelerator(profile)
    results = {k: sinks.train_variant(k, sizes["model"], cfg, sizes["seed"], train_tokens=train_tokens,
                                      val_tokens=val_tokens, data_identity=ident, accelerator=accelerator)
               for k in sinks.SCALINGS}
    ev = sizes["eval"]
    lengths = [n for n in ev["lengths"] if n <= cfg.seq_len]
    windows = {n: data.bos_windows(tok, "test", ev["n_seq"], n, who="SK-2") for n in lengths}
    curves = {k: sinks.sink_curve(r.model, windows, batch=ev["batch"]) for k, r in results.items()}
    _, code_val, _ = T.corpus_tokens("stdlib-code", V)
    held_out = {"brown": T.val_windows(cfg, val_tokens, ev["ppl_windows"]),
                "stdlib-code": T.val_windows(cfg, code_val, ev["ppl_windows"])}
    nll = {k: {name: T.window_losses(r.model, w) for name, w in held_out.items()} for k, r in results.items()}
    m = sizes["model"]
    return Trio(results, cfg, curves, nll, {n: w.shape[0] for n, w in held_out.items()}, m["n_layer"] * m["n_head"])


def _describe(trio: Trio, sizes) -> str:
    m, c = sizes["model"], trio.cfg
    return (f"{m['n_layer']}L × {m['d_model']} × {m['n_head']}H llama, Brown BPE {m['vocab_size']}, "
            f"{c.steps} steps of {c.batch_size} × {c.seq_len} tokens, lr {c.lr:g}, wd {c.weight_decay:g}")


def _wilcoxon_less(a: torch.Tensor, b: torch.Tensor) -> float:
    """One-sided paired Wilcoxon signed-rank p-value for a < b over sequences (1.0 when a == b
    everywhere: no evidence)."""
    d = (a - b).double().numpy()
    if not np.any(d != 0):
        return 1.0
    return float(sps.wilcoxon(d, alternative="less", zero_method="wilcox").pvalue)


@pytest.mark.policy_dtype
@pytest.mark.claim("SK-2", source="001 §6.2.1, Fig 12")
def test_sink_rates_after_pretraining(claim, trio, sizes, profile):
    """Baseline: a clear sink rate at every length; attenuation: ≈ 0 (≤ one head); amplification:
    significantly below the baseline (paired over held-out sequences, Bonferroni over lengths)."""
    form, eps = "source", sinks.EPSILON["source"]
    lengths = trio.curves["baseline"].lengths
    one_head = 1.0 / trio.layers_heads
    claim.record("training", _describe(trio, sizes), compare="none")
    for kind in sinks.SCALINGS:
        for f in sinks.FORMS:
            for n in lengths:
                claim.record(f"{kind}: sink rate, ε = {sinks.EPSILON[f]} ({f} form), T = {n}",
                             trio.curves[kind].mean(f, n), compare="none")
        claim.record(f"{kind}: largest mean α¹ of any head, T = {lengths[-1]}",
                     float(trio.curves[kind].alpha[form][lengths[-1]].mean(0).max()), compare="none")
    claim.record("α¹ of a head with uniform causal attention, T = " + str(lengths[-1]),
                 sinks.expected_uniform_importance(lengths[-1]), compare="none")
    p_amp = {n: min(1.0, len(lengths) * _wilcoxon_less(trio.curves["amplification"].rates[form][n],
                                                       trio.curves["baseline"].rates[form][n]))
             for n in lengths}
    for n in lengths:
        claim.record(f"amplification < baseline at T = {n}: Bonferroni one-sided Wilcoxon p", p_amp[n],
                     expected=0.01, compare="le", why="paired over held-out sequences; 1% after Bonferroni")
        claim.record(f"attenuation sink rate at T = {n}", trio.curves["attenuation"].mean(form, n), expected=one_head,
                     compare="le", why="≈ 0 read as at most one sink head of L·H on average (the metric's resolution)")
    rows = {k: trio.curves[k].row(form) for k in sinks.SCALINGS}
    claim.figure(figures.sink_rate_by_length({k: (lengths, r) for k, r in rows.items()},
                                             f"001 Fig 12: sink rate (ε = {eps}) on held-out Brown, "
                                             f"{sizes['eval']['n_seq']} sequences per length"), "fig12")
    claim.figure(figures.training_curves({k: r.losses for k, r in trio.results.items()},
                                         "SK-2: training loss of the three variants (same data order)"), "training")
    base = np.array(rows["baseline"])
    measured = (f"baseline {np.round(base, 3).tolist()}, amplification {np.round(rows['amplification'], 3).tolist()}, "
                f"attenuation {np.round(rows['attenuation'], 3).tolist()} at T = {list(lengths)}")
    claim.not_reproduced_if(NOT_REPRODUCED, ("SK-2", profile.name), measured)
    # a baseline without sinks cannot test the claim: at least one sink head at every length
    assert base.min() >= one_head, f"the baseline has no sinks: {measured}"
    assert max(rows["attenuation"]) <= one_head, measured
    assert all(p < 0.01 for p in p_amp.values()) and np.all(np.array(rows["amplification"]) < base), measured


def _upper_ratio(d: torch.Tensor) -> tuple[float, float]:
    """exp(mean d) and exp(upper one-sided 95% t bound of mean d) for per-window NLL
    differences d: the perplexity ratio and its upper confidence bound."""
    x = d.double().numpy()
    mean, sem = float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))
    return math.exp(mean), math.exp(mean + float(sps.t.ppf(0.95, len(x) - 1)) * sem)


@pytest.mark.policy_dtype
@pytest.mark.claim("SK-3", source="001 §6.2.2, Table 7")
@pytest.mark.parametrize("kind", ["amplification", "attenuation"])
def test_interventions_do_not_hurt_language_modelling(claim, trio, sizes, profile, kind):
    """Held-out perplexity on Brown (the training domain) and on stdlib code (a shifted domain),
    next to Table 7; the variant is comparable to or better than the baseline on both: PPL
    ratio ≤ PPL_MARGIN with 95% confidence (see the module note)."""
    ppl = {k: {name: math.exp(float(v.mean())) for name, v in trio.nll[k].items()} for k in sinks.SCALINGS}
    if kind == "amplification":  # the table once per run
        rows = [[k, round(ppl[k]["brown"], 2), round(ppl[k]["stdlib-code"], 2), *TABLE7[k]] for k in sinks.SCALINGS]
        claim.table(f"001 Table 7 next to ours: perplexity ({_describe(trio, sizes)}; {trio.n_windows['brown']} "
                    f"windows of {trio.cfg.seq_len} tokens per set)",
                    ["model", "Brown (ours)", "stdlib code (ours)", "WikiText-2 (source)", "C4 (source)"], rows)
    upper = {}
    for name in trio.nll[kind]:
        claim.record(f"{kind}: perplexity on held-out {name} (baseline {ppl['baseline'][name]:.2f})",
                     ppl[kind][name], compare="none")
        ratio, upper[name] = _upper_ratio(trio.nll[kind][name] - trio.nll["baseline"][name])
        claim.record(f"{kind} / baseline perplexity on {name}", ratio,
                     expected=TABLE7[kind][0] / TABLE7["baseline"][0] if name == "brown" else
                     TABLE7[kind][1] / TABLE7["baseline"][1], compare="none")
        claim.record(f"{kind} / baseline perplexity on {name}: upper 95% bound", upper[name], expected=PPL_MARGIN,
                     compare="le", why="the largest gap the source calls competitive (Table 7: +2.9%); paired "
                     f"t over {trio.n_windows[name]} held-out windows")
    measured = ", ".join(f"{name} ≤ {u:.3f}" for name, u in upper.items())
    claim.not_reproduced_if(NOT_REPRODUCED, (f"SK-3 {kind}", profile.name), measured)
    assert all(u <= PPL_MARGIN for u in upper.values()), measured


# --------------------------------------------------------------------------- SK-4


@pytest.mark.claim("SK-4", source="001 §6.2.1 (context: Gu et al. 2024)")
def test_pretrained_models_sink_rates(claim, model_name, pretrained, trio, sizes):
    """The reference row: sink rates of a real pretrained model on Brown text at several
    lengths, both metric forms. Gu et al. find sinks in every auto-regressive LM they measured;
    asserted: at least one sink head (source form, ε = 0.25) at every length."""
    model, tok = pretrained(model_name)
    p = sizes["pretrained"]
    windows = {n: data.bos_windows(tok, "test", p["n_seq"], n, who=f"--model {model_name}: SK-4")
               for n in p["lengths"]}
    curve = sinks.sink_curve(model, windows, batch=p["batch"])
    L, H = curve.alpha["source"][curve.lengths[0]].shape[1:]
    for f in sinks.FORMS:
        for n in curve.lengths:
            claim.record(f"{model_name}: sink rate, ε = {sinks.EPSILON[f]} ({f} form), T = {n}", curve.mean(f, n),
                         compare="none")
    claim.record(f"{model_name}: heads", L * H, compare="none")
    series = {k: (trio.curves[k].lengths, trio.curves[k].row("source")) for k in sinks.SCALINGS}
    series[model_name] = (curve.lengths, curve.row("source"))
    claim.figure(figures.sink_rate_by_length(series, f"001 Fig 12 with {model_name} as the real-model reference "
                                                     f"(ε = {sinks.EPSILON['source']}, Brown)"), "fig12_reference")
    rates = curve.row("source")
    assert min(rates) >= 1.0 / (L * H), f"{model_name}: no sink head at some length: {np.round(rates, 3).tolist()}"

