"""001 "Transformers Are Born Biased" §3–4: structure of random-init transformers.

Encoded so far (the foundation's exemplars): BB-4 (Prop 2, Fig 5), BB-4.2 (Prop 4, Table 3),
BB-6 (Eq 2, Fig 9). Each experiment runs once per module (scoped fixture); the tests then assert
the source's numbers with tolerances built from the Monte-Carlo standard error across
independently drawn models (seeds), plus, where the source's statement is an infinite-width or
uniform-attention approximation, a stated allowance.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from repro import figures, init_bias, stats

# Closed forms are infinite-width (Gaussian-process) limits. At our widths (512–1024) a model's
# pairwise cosine carries an O(1/√d) fluctuation and a small finite-width bias; the source's own
# Monte Carlo differs from its closed forms by up to 0.008 (Table 3: 0.31 vs 1/π = 0.318,
# 0.49 vs 0.493). We allow 0.02 on top of 4 standard errors: ~2.5× that documented gap.
WIDTH_ALLOWANCE = 0.02
Z = 4.0  # standard errors: a two-sided 4σ band is missed by chance ~6e-5 of the time per number


# --------------------------------------------------------------------------- BB-4


@pytest.fixture(scope="module")
def mlp_stack(profile):
    return init_bias.mlp_stack_similarity(**profile.sizes("bb_4"))


@pytest.mark.claim("BB-4", source="001 §4.2 Prop 2, Fig 5, App A.1")
def test_relu_mlp0_contracts_along_the_arccos_map(claim, mlp_stack):
    relu, theory = mlp_stack.curves["relu"], mlp_stack.theory
    tol = [Z * s + WIDTH_ALLOWANCE for s in relu.sem]
    why = f"{Z:g} MC standard errors over {len(relu.values)} models + {WIDTH_ALLOWANCE} finite-width allowance"
    claim.record("ρ̄₁ after 1 ReLU MLP0 block", relu.mean[0], expected=1 / math.pi, tol=tol[0], why=why)
    for layer in (2, 3, mlp_stack.n_layer):
        claim.record(f"ρ̄_{layer} (arc-cosine recurrence)", relu.mean[layer - 1], expected=theory[layer - 1],
                     tol=tol[layer - 1], why=why)
    # Monotone rise: every step up is positive in every model (Prop 2: g(ρ) > ρ on [0, 1)).
    steps = np.diff(relu.values, axis=1)
    claim.record("smallest per-model rise ρ̄_{l+1} − ρ̄_l", steps.min(), expected=0.0, tol=0.0,
                 compare="ge", why="Prop 2: strictly increasing; no tolerance")
    # Fig 5's footnote 5: without norm or residual the signal's scale vanishes with depth (the
    # source's late drop of ρ̄ is attributed to it). Context only: at our depth and float32 the
    # scale shrinks but stays far from underflow, so we see no drop.
    claim.record("rms of ReLU MLP0 output, block L / block 1", relu_rms_ratio(mlp_stack), compare="none")
    claim.figure(figures.fig5_mlp_stack(mlp_stack), "fig5")
    claim.table("Fig 5 at our scale: mean ± SE per block " + str(mlp_stack.sizes),
                ["block l", "ReLU MLP0", "arc-cos theory", "tanh MLP0", "standard (LN+res)"],
                [[l + 1, f"{relu.mean[l]:.4f} ± {relu.sem[l]:.4f}", theory[l],
                  f"{mlp_stack.curves['tanh'].mean[l]:.5f} ± {mlp_stack.curves['tanh'].sem[l]:.5f}",
                  f"{mlp_stack.curves['standard'].mean[l]:.4f}"] for l in range(mlp_stack.n_layer)])
    assert np.all(np.abs(relu.mean - np.array(theory)) <= np.array(tol))
    assert steps.min() > 0


def relu_rms_ratio(res) -> float:
    return float(res.rms["relu"].mean[-1] / res.rms["relu"].mean[0])


@pytest.mark.claim("BB-4", source="001 §4.2 Prop 2 (tanh case), Fig 5")
def test_tanh_mlp0_keeps_sequences_orthogonal(claim, mlp_stack):
    tanh = mlp_stack.curves["tanh"]
    # Prop 2: E ρ̄ = 0 exactly for tanh (odd activation, independent inputs) — no width allowance.
    # Test every layer's mean against 0 with a t-test across models, Bonferroni over layers.
    t = tanh.mean / tanh.sem
    p = 2 * sps.t.sf(np.abs(t), df=len(tanh.values) - 1) * len(t)
    worst = int(np.argmax(np.abs(t)))
    claim.record("max |ρ̄_l| over blocks, tanh MLP0", float(np.abs(tanh.mean).max()), expected=0.0,
                 tol=float(Z * tanh.sem[worst]), why=f"{Z:g} MC standard errors of that block's mean")
    claim.record("Bonferroni t-test p of ρ̄_l = 0 (smallest over blocks)", float(min(1.0, p.min())),
                 expected=0.01, compare="ge", tol=0.0, why="reject 'ρ̄ = 0' only at p < 0.01")
    # ReLU vs tanh on identical weights (footnote 4): the final-layer gap is the contraction itself.
    assert p.min() >= 0.01
    assert np.all(np.abs(tanh.mean) <= Z * tanh.sem + 1e-12)


# --------------------------------------------------------------------------- BB-4.2


@pytest.fixture(scope="module")
def two_blocks(profile):
    sizes = profile.sizes("bb_4_2")
    return [init_bias.two_block_similarity(**{**sizes, "T": T}) for T in sizes["T"]]


@pytest.mark.claim("BB-4.2", source="001 §4.3 Table 3, Prop 4, App A.2")
def test_attention_amplifies_mlp_contraction(claim, two_blocks):
    why = f"{Z:g} MC standard errors over models + {WIDTH_ALLOWANCE} finite-width allowance"
    rows = []
    for res in two_blocks:
        th = res.theory
        for key, label, source in (("h", "h = MLP0(x)", 0.31), ("mlp_mlp", "MLP0∘MLP0", 0.49),
                                   ("attn_mlp", "Attn0∘MLP0", None)):
            c = getattr(res, key)
            claim.record(f"{label}, T={res.T}", c.mean[0], expected=th[key], tol=Z * c.sem[0] + WIDTH_ALLOWANCE,
                         why=why)
            rows.append([res.T, label, source if source is not None else (0.98 if res.T == 128 else "—"),
                         th[key], f"{c.mean[0]:.4f} ± {c.sem[0]:.4f}"])
    claim.table("Table 3: source vs theory vs measured (mean ± SE over models)",
                ["T", "setting", "source (T=128)", "theory", "measured"], rows)
    claim.figure(figures.table3_two_blocks(two_blocks), "table3")
    for res in two_blocks:
        for key in ("h", "mlp_mlp", "attn_mlp"):
            c = getattr(res, key)
            assert c.mean[0] == pytest.approx(res.theory[key], abs=Z * c.sem[0] + WIDTH_ALLOWANCE)
        # the amplification itself: Attn0 contracts more than a second MLP0, in every model
        assert np.all(res.attn_mlp.values > res.mlp_mlp.values)


# --------------------------------------------------------------------------- BB-6


@pytest.fixture(scope="module")
def positional(profile):
    return init_bias.positional_std(**profile.sizes("bb_6"))


# Eq 2 assumes uniform attention. At App B.1's init, pre-LN attention logits have std s ≈ 0.3,
# so Σ_j A_ij² ≈ e^{s²}/i: the std curve sits ~5% above 1/√i for i ≥ 2 while position 1 is exact.
# "Near-perfect overlap" (Fig 9) is asserted as a log-log slope within 0.05 of −1/2 (10% of the
# exponent, which covers that constant offset) and a pointwise match to Eq 2 with measured A.
SLOPE_TOL = 0.05


@pytest.mark.claim("BB-6", source="001 §4.4 Eq 2, Fig 9")
def test_positional_std_decays_as_inverse_sqrt(claim, positional):
    i = positional.positions
    slope, sem = stats.mean_sem([stats.loglog_slope(i, s).slope for s in positional.std.values])
    claim.record("log-log slope of std(o_i) vs i", slope, expected=-0.5, tol=SLOPE_TOL,
                 why="uniform-attention approximation of Eq 2; 10% of the exponent (see module)")
    claim.record("slope standard error over models", sem, compare="none")
    # Eq 2's mechanism, exactly: Var(o_i) = σ²·Σ_j A_ij² when the v_j are uncorrelated.
    ratio = positional.std.mean / (positional.std.mean[0] * np.sqrt(positional.attn_sq.mean))
    rel_sem = positional.std.sem / positional.std.mean
    worst = int(np.argmax(np.abs(ratio - 1)))
    claim.record("max |std(o_i) / (σ√ΣA²) − 1| (Eq 2 with measured A)", float(abs(ratio[worst] - 1)),
                 expected=0.0, tol=float(Z * rel_sem[worst] + 0.01), compare="le",
                 why=f"{Z:g} relative SEs + 1% for the v_j–A dependence that Eq 2 ignores")
    # Finding 6: the first token is the outlier — it alone keeps the full variance.
    outlier = positional.std.mean[0] / positional.std.mean[1:].max()
    claim.record("std(o_1) / max_{i>1} std(o_i)", outlier, expected=math.sqrt(2), tol=0.15, compare="abs",
                 why="uniform attention gives √2 against position 2; ±0.15 covers the e^{s²/2}≈5% offset")
    claim.figure(figures.fig9_positional_std(positional), "fig9")
    assert slope == pytest.approx(-0.5, abs=SLOPE_TOL)
    assert abs(ratio[worst] - 1) <= Z * rel_sem[worst] + 0.01
    assert outlier == pytest.approx(math.sqrt(2), abs=0.15)


# =========================================================================== 001 §3: Table 1 probes
#
# One pass per model (repro.probe) answers every length at once (prefix trick), so BB-1, BB-1.1,
# BB-1.3, BB-1x and BB-2.1 read the same probes. Sizes: profiles "bb_1" (the source's nano shape,
# 12L/12H/768d, |V| = 50,257, seeds 42 and 43; N and T smaller at ci).

ALPHA = 0.05  # the source's significance level (App B.2)


@pytest.fixture(scope="module")
def table1(profile, device):
    s = profile.sizes("bb_1")
    common = {k: s[k] for k in ("d_model", "n_layer", "n_head", "vocab_size", "n_seq", "lengths", "dtype")}
    return {(arch, seed): init_bias.preference_run(arch, seed=seed, device=device, **common)
            for arch in s["archs"] for seed in s["seeds"]}


@pytest.fixture(scope="module")
def uniform_baseline(profile):
    s = profile.sizes("bb_1")
    from repro.probe import uniform_rank_counts
    from repro.runtime import generator

    return (uniform_rank_counts(s["n_seq"], s["vocab_size"], generator(1), ranks=init_bias.RANKS),
            uniform_rank_counts(s["n_seq"], s["d_model"], generator(2), ranks=init_bias.RANKS))


def _rope(table1):
    return {k: v for k, v in table1.items() if k[0] == "rope-gpt2"}


def _size(run) -> str:
    s = run.sizes
    return f"{s['n_layer']}L/{s['d_model']}d, N={s['n_seq']}, {s['dtype']}"


def _cells(runs, attr: str = "top1"):
    """(seed, T, Top1) for every (seed, probe length) of `runs`; attr "top1" (next token) or "top_dim"."""
    return [(seed, T, getattr(run, attr)[i]) for (_, seed), run in runs.items() for i, T in enumerate(run.lengths)]


SOURCE_TABLE1 = {  # (arch, seed, T) -> (top-1 id, freq %, p) from 001 Table 1 (N = 10,000)
    ("rope-gpt2", 42, 64): (6336, 2.60, 4.55e-137), ("rope-gpt2", 42, 256): (30425, 4.85, 6.59e-285),
    ("rope-gpt2", 42, 1024): (666, 5.20, 6.75e-309), ("rope-gpt2", 43, 64): (7328, 3.00, 2.20e-162),
    ("rope-gpt2", 43, 256): (7328, 5.25, 2.42e-312), ("rope-gpt2", 43, 1024): (7328, 6.75, 0.0),
    ("llama", 42, 64): (18219, 0.06, 3.16e-2), ("llama", 42, 256): (19647, 0.06, 3.16e-2),
    ("llama", 42, 1024): (11048, 0.07, 1.40e-3), ("llama", 43, 64): (6479, 0.09, 1.90e-6),
    ("llama", 43, 256): (17743, 0.06, 3.16e-2), ("llama", 43, 1024): (21436, 0.07, 1.40e-3),
}


def _table1_rows(table1):
    rows = []
    for (arch, seed), run in table1.items():
        for i, T in enumerate(run.lengths):
            t = run.top1[i]
            rows.append([arch, seed, T, t.token, f"{t.freq * 100:.2f}", f"1e{t.log10_p:.1f}", "—"])
        for (a, s_, T), (tok, f, p) in SOURCE_TABLE1.items():
            if (a, s_) == (arch, seed):
                rows.append([arch, seed, T, tok, f"{f:.2f}", f"{p:.3g}", "source (N=10,000)"])
    return rows


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1", source="001 §3 Finding 1, Fig 1a, Table 1(a), App B.2")
def test_random_init_prefers_one_token(claim, table1, uniform_baseline):
    runs = _rope(table1)
    cells = _cells(runs)
    # Bonferroni over the cells too: every (seed, length) must be significant at 0.05 / cells.
    bar = math.log10(ALPHA / len(cells))
    for seed, T, t in cells:
        claim.record(f"top-1 freq, seed {seed}, T={T} ({_size(runs[('rope-gpt2', seed)])})", t.freq * 100,
                     compare="none", unit="%")
        claim.record(f"log10 Bonferroni p, seed {seed}, T={T}", t.log10_p, expected=bar, compare="le", tol=0.0,
                     why=f"p < {ALPHA}/{len(cells)} cells (App B.2's test, Bonferroni over cells)")
    run42 = runs[("rope-gpt2", 42)]
    T = run42.lengths[-1]
    ratio = run42.rank_counts[run42.at(T)][0] / uniform_baseline[0][0]
    claim.record(f"Fig 1a: top count / uniform-sampling top count (seed 42, T={T})", ratio, expected=58.5,
                 compare="none")
    claim.table("001 Table 1 (a) RoPE GPT-2 and (b) LLaMA-2 at our scale, with the source's rows",
                ["arch", "seed", "T", "top-1 id", "top-1 freq %", "p", "row"], _table1_rows(table1))
    claim.figure(figures.fig1a_preference(run42, T, uniform_baseline[0]), "fig1a")
    claim.figure(figures.table1_frequencies(table1), "table1")
    assert max(t.log10_p for _, _, t in cells) < bar


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1.1", source="001 §3 Finding 1.1, Table 1(a)-(b)")
@pytest.mark.parametrize("arch", ["rope-gpt2", "llama"])
def test_preference_holds_across_architectures(claim, table1, arch, profile):
    runs = {k: v for k, v in table1.items() if k[0] == arch}
    cells = _cells(runs)
    if arch == "llama" and profile.name == "ci":
        n = cells[0][2].n
        claim.not_reproduced((
            f"underpowered at ci: the source's LLaMA favourite has 0.06–0.09% of N = 10,000 predictions "
            f"(6–9 counts, p 1.9e-6…3.2e-2); at N = {n} that is {0.0006 * n:.2f}–{0.0009 * n:.2f} expected counts, "
            f"and a count of 3 is the least that reaches p < 0.05 at |V| = 50,257. Measured counts: "
            f"{[t.count for _, _, t in cells]}. Run --profile paper for the source's N."))
    for seed, T, t in cells:
        claim.record(f"{arch} log10 p, seed {seed}, T={T} ({t.count}/{t.n})", t.log10_p,
                     expected=math.log10(ALPHA), compare="le", tol=0.0, why="App B.2: p < 0.05 in every cell")
    assert all(t.p < ALPHA for _, _, t in cells)


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1.1", source="001 §3 Table 1(b): LLaMA-2 is far weaker")
def test_llama_preference_is_far_weaker(claim, table1):
    pairs = [(table1[("rope-gpt2", s)], table1[("llama", s)]) for (a, s) in table1 if a == "llama"]
    g_counts = sum(r.top1[i].count for r, _ in pairs for i in range(len(r.lengths)))
    l_counts = sum(l.top1[i].count for _, l in pairs for i in range(len(l.lengths)))
    # Same N per cell: under "equally strong", each top-1 count is as likely to come from either
    # architecture, so the LLaMA share of the pooled counts is Bin(total, 1/2). One-sided.
    p = sps.binomtest(l_counts, g_counts + l_counts, 0.5, alternative="less").pvalue
    claim.record("pooled top-1 counts, LLaMA / RoPE GPT-2", l_counts / g_counts, expected=1.0, compare="le",
                 tol=0.0, why="weaker: fewer counts")
    claim.record("one-sided binomial p, LLaMA share of pooled counts < 1/2", p, expected=0.01, compare="le", tol=0.0,
                 why="reject 'equally strong' at 1%")
    g_cos = np.mean([r.final_cosine[-1] for r, _ in pairs])
    l_cos = np.mean([l.final_cosine[-1] for _, l in pairs])
    claim.record("inter-sequence cosine of final-normed states, RoPE GPT-2", g_cos, compare="none")
    claim.record("inter-sequence cosine of final-normed states, LLaMA", l_cos, compare="none")
    claim.record("source: top-1 freq LLaMA / RoPE GPT-2 (Table 1, mean of rows)", (0.06 + 0.09 + 0.07) / (2.6 + 3.0 + 5.2),
                 compare="none")
    claim.figure(figures.table1_frequencies(table1), "table1b")
    assert l_counts < g_counts and p < 0.01


@pytest.fixture(scope="module")
def small_models(profile, device):
    s, small = profile.sizes("bb_1"), profile.sizes("bb_1_2")
    common = {k: s[k] for k in ("vocab_size", "n_seq", "lengths", "dtype")}
    return {("rope-gpt2", seed): init_bias.preference_run("rope-gpt2", seed=seed, device=device, keep_states=False,
                                                           **small, **common)
            for seed in s["seeds"]}


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1.2", source="001 §3 Finding 1.2, Table 1(a) vs (c)")
def test_preference_grows_with_length_and_size(claim, table1, small_models, profile):
    big = _rope(table1)
    lengths = next(iter(big.values())).lengths
    # Lengths: pooled over seeds, top-1 counts at the longest vs the shortest length. Under "no
    # trend" each pooled count is equally likely to come from either length: Bin(total, 1/2).
    long_ = sum(r.top1[-1].count for r in big.values())
    short = sum(r.top1[0].count for r in big.values())
    p_len = sps.binomtest(long_, long_ + short, 0.5, alternative="greater").pvalue
    # Size: pooled over seeds and lengths, the larger model's top-1 counts vs the smaller one's.
    large = sum(t.count for r in big.values() for t in r.top1)
    smaller = sum(t.count for r in small_models.values() for t in r.top1)
    p_size = sps.binomtest(large, large + smaller, 0.5, alternative="greater").pvalue
    cos_len = np.mean([r.final_cosine[-1] - r.final_cosine[0] for r in big.values()])
    cos_size = np.mean([big[k].final_cosine[-1] - small_models[k].final_cosine[-1] for k in big])
    b_size, s_size = _size(next(iter(big.values()))), _size(next(iter(small_models.values())))
    claim.record(f"pooled top-1 count, T={lengths[-1]} vs T={lengths[0]} ({b_size})", f"{long_} vs {short}",
                 compare="none")
    claim.record("one-sided binomial p: longer sequences, more extreme", p_len, expected=ALPHA, compare="le", tol=0.0,
                 why="App B.2's level; one test per direction")
    claim.record(f"pooled top-1 count, {b_size} vs {s_size}", f"{large} vs {smaller}", compare="none")
    claim.record("one-sided binomial p: larger model, more extreme", p_size, expected=ALPHA, compare="le", tol=0.0,
                 why="App B.2's level; one test per direction")
    claim.record(f"mechanism: final-normed cosine, T={lengths[-1]} minus T={lengths[0]}", cos_len, compare="none")
    claim.record("mechanism: final-normed cosine, larger minus smaller model", cos_size, compare="none")
    claim.table("Finding 1.2: top-1 frequency (%) by length and size (seeds pooled in the test)",
                ["model", "seed", *[f"T={T}" for T in lengths], "final-normed cosine at T_max"],
                [[_size(r), k[1], *[f"{t.freq * 100:.2f}" for t in r.top1], f"{r.final_cosine[-1]:.3f}"]
                 for runs in (big, small_models) for k, r in runs.items()])
    claim.figure(figures.table1_frequencies(big, small_models), "trend")
    if profile.name == "ci":  # measured at ci: neither trend is resolved (strict: a pass must update this)
        claim.not_reproduced((
            f"not resolved at ci: pooled top-1 counts {long_} (T={lengths[-1]}) vs {short} (T={lengths[0]}), "
            f"p = {p_len:.2g}; {large} ({b_size}) vs {smaller} ({s_size}), p = {p_size:.2g}. With N = "
            f"{next(iter(big.values())).sizes['n_seq']} the counts are 3–10, too few to resolve the source's "
            f"1.5–2× effects over a 4× length range; the contraction behind them does rise "
            f"(cosine +{cos_len:.3f} with length, {cos_size:+.3f} with size)."))
    assert p_len < ALPHA and p_size < ALPHA


@pytest.fixture(scope="module")
def directions(profile, device):
    return init_bias.direction_agreement(device=device, **profile.sizes("bb_2_2"))


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1.3", source="001 §3 Finding 1.3, Table 1")
def test_favourite_token_is_set_by_the_seed(claim, table1, directions):
    runs = _rope(table1)
    T = next(iter(runs.values())).lengths[-1]
    (k42, r42), (k43, r43) = list(runs.items())[:2]
    f42, f43 = r42.top1[-1].token, r43.top1[-1].token
    claim.record(f"favourite, seed {k42[1]} (T={T})", f42, compare="none")
    claim.record(f"favourite, seed {k43[1]} (T={T})", f43, compare="none")
    # Cross-frequencies: seed A's favourite among seed B's predictions. A shared, architecture-
    # given favourite would be as frequent in both; a seed-given one is at chance in the other.
    claim.record(f"freq of seed {k42[1]}'s favourite in seed {k43[1]}", r43.freq_of(f42, T) * 100, compare="none", unit="%")
    claim.record(f"freq of seed {k43[1]}'s favourite in seed {k42[1]}", r42.freq_of(f43, T) * 100, compare="none", unit="%")
    # Over many seeds: the contraction direction's token (Finding 2.2) is a property of the
    # model, not of histogram noise. Within a seed it is stable across lengths (paired prefixes);
    # between seeds it should almost never coincide.
    within = np.mean([len(set(r.contraction_token)) == 1 for r in runs.values()])
    toks = directions.direction_token
    m = len(toks)
    between = float(np.mean([toks[i] == toks[j] for i in range(m) for j in range(i + 1, m)]))
    claim.record(f"distinct direction tokens over {m} seeds", len(set(toks.tolist())), compare="none")
    claim.record("between-seed agreement of direction tokens (pairs)", between, expected=0.1, compare="le", tol=0.0,
                 why="an architecture-given favourite gives 1; we ask that at most 10% of seed pairs share it")
    claim.record("seeds whose direction token is the same at every length", within, compare="none")
    claim.figure(figures.fig_seed_favourites(runs, T), "cross")
    assert f42 != f43
    assert r43.freq_of(f42, T) < r42.top1[-1].freq and r42.freq_of(f43, T) < r43.top1[-1].freq
    assert between <= 0.1


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1x", source="001 §5 Finding 1 (extended), Fig 10")
def test_hidden_dimension_preference(claim, table1, uniform_baseline):
    runs = _rope(table1)
    cells = _cells(runs, "top_dim")
    bar = math.log10(ALPHA / len(cells))
    for seed, T, t in cells:
        claim.record(f"top dim {t.token}: freq, seed {seed}, T={T}", t.freq * 100, expected=100 / runs[("rope-gpt2", seed)].sizes["d_model"],
                     compare="none", unit="%")
        claim.record(f"log10 Bonferroni p (|V| → d), seed {seed}, T={T}", t.log10_p, expected=bar, compare="le", tol=0.0,
                     why=f"App B.2's test over d dimensions, Bonferroni over {len(cells)} cells")
    run = runs[("rope-gpt2", 42)]
    claim.figure(figures.fig10_token_and_dim(run, run.lengths[-1], *uniform_baseline), "fig10")
    assert max(t.log10_p for _, _, t in cells) < bar


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-2.1", source="001 §4 Finding 2.1, Fig 2")
def test_inter_sequence_contraction_grows_with_depth(claim, table1):
    runs = _rope(table1)
    T = next(iter(runs.values())).lengths[-1]
    for (_, seed), run in runs.items():
        c = run.layer_cosine[run.at(T)]
        tau = stats.kendall_tau(np.arange(len(c)), c)
        claim.record(f"seed {seed}: cosine after block 1 → block {len(c) - 1}", f"{c[1]:.3f} → {c[-1]:.3f}",
                     compare="none")
        claim.record(f"seed {seed}: Kendall τ(block, cosine)", tau.statistic, expected=0.0, compare="ge", tol=0.0,
                     why="a rising trend")
        claim.record(f"seed {seed}: Kendall p", tau.p, expected=0.01, compare="le", tol=0.0, why="trend at 1%")
        assert tau.statistic > 0 and tau.p < 0.01 and c[-1] > c[1]
    claim.figure(figures.fig2_layer_cosine(runs, T), "fig2")


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-2.2", source="001 §4 Finding 2.2")
def test_contraction_direction_names_the_favourite(claim, directions):
    agree = directions.agree
    k, m = int(agree.sum()), len(agree)
    ci = stats.binomial_ci(k, m)
    # Null: the direction token is unrelated to the favourite; it then coincides with the
    # favourite no more often than the favourite's own frequency (bounded by its max over models).
    p0 = float(directions.favourite_count.max() / directions.sizes["n_seq"])
    p = sps.binomtest(k, m, p0, alternative="greater").pvalue
    sig = directions.log10_p < math.log10(ALPHA)
    claim.record(f"agreement rate over {m} models ({directions.sizes['n_layer']}L, N={directions.sizes['n_seq']}, "
                 f"T={directions.sizes['T']})", k / m, expected=0.76, compare="none")
    claim.record("Wilson 95% CI", f"[{ci.low:.2f}, {ci.high:.2f}]", compare="none")
    claim.record(f"binomial p vs chance (p0 = {p0:.3f})", p, expected=0.01, compare="le", tol=0.0,
                 why="reject 'unrelated' at 1%")
    claim.record(f"agreement among the {int(sig.sum())} models with a significant favourite",
                 float(agree[sig].mean()) if sig.any() else float("nan"), compare="none")
    claim.figure(figures.fig_direction_agreement(directions), "agreement")
    assert p < 0.01


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-2.2", source="001 §4 Finding 2.2: the 76% rate")
def test_direction_agreement_rate_matches_source(claim, directions, profile):
    agree = directions.agree
    k, m = int(agree.sum()), len(agree)
    ci = stats.binomial_ci(k, m)
    if profile.name == "ci":
        claim.not_reproduced((
            f"rate {k}/{m} = {k / m:.2f} (95% CI {ci.low:.2f}–{ci.high:.2f}) vs the source's 0.76: at ci the "
            f"favourite is ill-determined (top counts {directions.favourite_count.min()}–"
            f"{directions.favourite_count.max()} of N = {directions.sizes['n_seq']}, {directions.sizes['n_layer']} "
            f"layers, T = {directions.sizes['T']}), so the histogram's mode often is not the model's favourite; "
            "the source used 12 layers, N = 2000, T = 1024 (--profile paper)"))
    claim.record("agreement rate; source's 76% inside our Wilson 95% CI", k / m, expected=0.76,
                 tol=max(0.76 - ci.low, ci.high - 0.76) if ci.low <= 0.76 <= ci.high else 0.0,
                 why="sampling error over models (Wilson 95%)", compare="abs")
    assert ci.low <= 0.76 <= ci.high


# =========================================================================== 001 §4.1: ablation


SOURCE_TABLE2 = {"full": 0.46, "attn-only": 1.11e-4, "mlp-only": 0.25}


@pytest.fixture(scope="module")
def ablation(profile, device):
    s = profile.sizes("bb_3")
    seeds = s.pop("seeds")
    return {v: [init_bias.ablation_run(v, seed=seed, device=device, **s) for seed in seeds]
            for v in init_bias.ABLATION_BLOCKS}


def _curves(ablation):
    return {v: init_bias.SeedCurves(np.array([r.layer_cosine for r in runs])) for v, runs in ablation.items()}


@pytest.mark.policy_dtype
@pytest.mark.claim("BB-3", source="001 §4.1 Table 2, Fig 3, Findings 3.1–3.2")
def test_mlp_drives_contraction_attention_alone_does_not(claim, ablation, uniform_baseline):
    sizes = ablation["full"][0].sizes
    final = {v: np.array([r.final_cosine for r in runs]) for v, runs in ablation.items()}
    rows = []
    for v, runs in ablation.items():
        claim.record(f"Table 2 avg sim, {v} (T={sizes['T']}, N={sizes['n_seq']}, {len(runs)} seeds)",
                     final[v].mean(), expected=SOURCE_TABLE2[v], compare="none")
        worst = max(r.top1.log10_p for r in runs)
        best = min(r.top1.log10_p for r in runs)
        rows.append([v, SOURCE_TABLE2[v], f"{final[v].mean():.4g}", f"{np.mean([r.top1.freq for r in runs]) * 100:.2f}",
                     f"1e{best:.1f} … 1e{worst:.1f}"])
    claim.table("001 Table 2 at our scale (source: full 0.46, attn-only 1.11e-4, MLP-only 0.25)",
                ["variant", "source avg sim", "measured avg sim", "top-1 freq %", "Bonferroni p over seeds"], rows)
    # Attention-only: no contraction. For independent inputs the pairwise cosine has mean 0 and
    # per-model SE ≈ √2/(N·√d); 0.01 is > 50 of those SEs at our N and d, and 40× below MLP-only.
    ATTN_ZERO = 0.01
    claim.record("attn-only |avg sim| (max over seeds)", np.abs(final["attn-only"]).max(), expected=0.0, tol=ATTN_ZERO,
                 why="≈ 0: far below MLP-only; >50 SEs of a null model's cosine", compare="abs")
    # "Flat" is judged against the other two variants, not against an exactly uniform histogram:
    # tokens with longer (random) embeddings win the argmax of a random direction more often, so
    # even a model with no contraction can reject exact uniformity at small N. Pooled over seeds,
    # under "as spiky as MLP-only" each top-1 count is as likely to come from either variant.
    for r in ablation["attn-only"]:
        claim.record(f"attn-only Bonferroni p, seed {r.seed} (top count {r.top1.count}/{r.top1.n})", r.top1.p,
                     expected=0.16, compare="none")
    a_cnt = sum(r.top1.count for r in ablation["attn-only"])
    m_cnt = sum(r.top1.count for r in ablation["mlp-only"])
    p_flat = sps.binomtest(a_cnt, a_cnt + m_cnt, 0.5, alternative="less").pvalue
    claim.record(f"one-sided binomial p: attn-only top-1 counts ({a_cnt}) below MLP-only's ({m_cnt})", p_flat,
                 expected=ALPHA, compare="le", tol=0.0, why="flat relative to MLP-only at 0.05")
    for v in ("mlp-only", "full"):
        claim.record(f"{v} histogram: largest Bonferroni p over seeds", max(r.top1.p for r in ablation[v]),
                     expected=ALPHA, compare="le", tol=0.0, why="spiky: significant at 0.05 in every seed")
    # Ordering full > MLP-only > attn-only in every seed (paired: same seed index).
    order = bool(np.all(final["full"] > final["mlp-only"]) and np.all(final["mlp-only"] > final["attn-only"]))
    claim.record("full > MLP-only > attn-only avg sim in every seed", order, compare="none")
    claim.figure(figures.fig3_ablation_histograms({v: runs[0] for v, runs in ablation.items()}, uniform_baseline[0]),
                 "fig3")
    claim.figure(figures.table2_bars({v: final[v].mean() for v in final}, SOURCE_TABLE2), "table2")
    mlp = ablation["mlp-only"]
    claim.figure(figures.fig4_mlp_only(np.mean([r.layer_cosine for r in mlp], 0),
                                       np.mean([r.layer_cosine_std for r in mlp], 0)), "fig4")
    assert np.abs(final["attn-only"]).max() <= ATTN_ZERO
    assert p_flat < ALPHA
    assert max(r.top1.p for r in ablation["mlp-only"] + ablation["full"]) < ALPHA
    assert order


@pytest.mark.policy_dtype
@pytest.mark.claim("BB-3.2a", source="001 §4.3 Finding 3.2a, Fig 7")
def test_attention_amplifies_mlp_contraction_layer_by_layer(claim, ablation):
    curves = _curves(ablation)
    full, mlp, attn = (curves[v].values for v in ("full", "mlp-only", "attn-only"))
    gap = full - mlp  # (seeds, L)
    claim.record("full − MLP-only at block 2 (mean over seeds)", gap[:, 1].mean(), compare="none")
    claim.record(f"full − MLP-only at block {gap.shape[1]}", gap[:, -1].mean(), compare="none")
    claim.record("smallest full − MLP-only over blocks ≥ 2 and seeds", gap[:, 1:].min(), expected=0.0, compare="ge",
                 tol=0.0, why="full above MLP-only from block 2 on, in every seed")
    # Widening: the seed-mean gap rises over blocks 2…L (Kendall trend test at 5%), and in every
    # seed the gap at the last block exceeds the gap at block 2.
    tau = stats.kendall_tau(np.arange(gap.shape[1] - 1), gap[:, 1:].mean(0))
    claim.record("Kendall τ of the seed-mean gap over blocks 2…L", tau.statistic, expected=0.0, compare="ge",
                 tol=0.0, why="a widening gap")
    claim.record("Kendall p of that trend", tau.p, expected=ALPHA, compare="le", tol=0.0, why="trend at 5%")
    claim.record("smallest (gap at block L − gap at block 2) over seeds", (gap[:, -1] - gap[:, 1]).min(),
                 expected=0.0, compare="ge", tol=0.0, why="wider at the end in every seed")
    claim.record(f"source at block 12 (Table 2): full − MLP-only", 0.46 - 0.25, compare="none")
    claim.record("attn-only max |cosine| over blocks and seeds", np.abs(attn).max(), expected=0.0, tol=0.01,
                 why="≈ 0 (see BB-3's ATTN_ZERO)")
    claim.figure(figures.fig7_layerwise(curves), "fig7")
    assert gap[:, 1:].min() > 0
    assert tau.statistic > 0 and tau.p < ALPHA and (gap[:, -1] - gap[:, 1]).min() > 0
    assert np.abs(attn).max() <= 0.01


# =========================================================================== 001 §4.2: LN and GELU


@pytest.fixture(scope="module")
def gelu_spread(profile):
    return init_bias.gelu_input_spread(**profile.sizes("bb_4_1"))


@pytest.mark.claim("BB-4.1", source="001 §4.2 Finding 4.1, Fig 6")
def test_layernorm_engages_gelu_asymmetry(claim, gelu_spread):
    th = gelu_spread.theory
    d = gelu_spread.sizes["d_model"]
    for key, source, half_unit in (("norm", 0.55, 0.005), ("nonorm", 0.011, 0.0005)):
        c = gelu_spread.std[key]
        tol = half_unit + Z * c.sem[0]
        claim.record(f"GELU input std, {'with' if key == 'norm' else 'without'} LN (d={d})", c.mean[0],
                     expected=source, tol=tol,
                     why=f"half a unit of the source's last digit + {Z:g} SE over {len(c.values)} models")
        claim.record(f"closed form (App B.1): {'0.02·√d' if key == 'norm' else '0.02²·√d'}", th[key], compare="none")
    cn, cx = gelu_spread.cosine["norm"], gelu_spread.cosine["nonorm"]
    claim.record("MLP output inter-sequence cosine with LN", cn.mean[0], compare="none")
    claim.record("MLP output inter-sequence cosine without LN", cx.mean[0], compare="none")
    claim.figure(figures.fig6_gelu(gelu_spread), "fig6")
    for key, source, half_unit in (("norm", 0.55, 0.005), ("nonorm", 0.011, 0.0005)):
        c = gelu_spread.std[key]
        assert abs(c.mean[0] - source) <= half_unit + Z * c.sem[0]
    # "which in turn causes contraction": the engaged asymmetry contracts, the symmetric range not
    assert np.all(cn.values > cx.values)


# =========================================================================== 001 §4.4: Prop 5, Fig 8


@pytest.fixture(scope="module")
def intra(profile):
    s = profile.sizes("bb_5")
    return [init_bias.intra_sequence_stack(**{**s, "T": T, "n_seq": n}) for T, n in zip(s["T"], s["n_seq"])]


# Fig 8's "close overlap" of standard attention and Attn0: at App B.1's init the attention
# logits have std ≈ 0.3, so softmax weights deviate from uniform by ~e^{s²}−1 ≈ 10% and the
# random W_V W_O mixes channels; we allow 0.05 in intra-sequence cosine (a tenth of its range
# over the first layers) on top of 4 SE.
OVERLAP_TOL = 0.05


@pytest.mark.claim("BB-5", source="001 §4.4 Finding 5, Fig 8")
def test_stacked_attention_contracts_within_sequences(claim, intra):
    for res in intra:
        s, a = res.standard, res.attn0
        diff = np.abs(s.mean - a.mean)
        tol = OVERLAP_TOL + Z * np.sqrt(s.sem**2 + a.sem**2)
        claim.record(f"T={res.T}: standard attention cosine after 1 → {len(s.mean)} layers",
                     f"{s.mean[0]:.3f} → {s.mean[-1]:.4f}", compare="none")
        claim.record(f"T={res.T}: max |standard − Attn0| over layers", diff.max(), expected=0.0,
                     tol=float(tol[np.argmax(diff)]), why=f"{OVERLAP_TOL} (see module) + {Z:g} SE")
        claim.record(f"T={res.T}: smallest per-layer rise (standard)", np.diff(s.mean).min(), expected=0.0,
                     compare="ge", tol=0.0, why="monotone in depth")
        assert np.all(diff <= tol) and np.all(np.diff(s.mean) > 0)
    short, long_ = intra[0], intra[-1]
    claim.record(f"layer-1 cosine, T={short.T} minus T={long_.T}", short.standard.mean[0] - long_.standard.mean[0],
                 expected=0.0, compare="ge", tol=0.0, why="shorter T contracts faster")
    closed = [init_bias.prop5_limit(l + 1) for l in range(1, len(short.standard.mean) + 1)]
    claim.figure(figures.fig8_intra_sequence(intra, closed), "fig8")
    assert np.all(short.standard.mean >= long_.standard.mean)


@pytest.mark.claim("BB-5", source="001 Prop 5, App A.3: closed form and layer indexing")
def test_prop5_closed_form_indexing(claim, intra):
    res = intra[-1]  # the source's long sequence (T = 512)
    mc = res.attn0  # after l averagings, l = 1 … L
    rows = []
    for L in range(2, len(mc.mean) + 1):
        cf = init_bias.prop5_limit(L)
        exact_lm1 = init_bias.attn0_exact(res.T, L - 1)[0]
        rows.append([L, f"{cf:.4f}", f"{mc.mean[L - 2]:.4f} ± {mc.sem[L - 2]:.4f}", f"{exact_lm1:.4f}",
                     f"{mc.mean[L - 1]:.4f}" if L - 1 < len(mc.mean) else "—"])
    claim.table(f"Prop 5 at T={res.T}: closed form ρ̄′(L) vs Attn0 Monte Carlo (L−1 and L averagings) and "
                "exact enumeration", ["L", "closed form", "MC, L−1 averagings", "exact, L−1 (T finite)",
                                      "MC, L averagings"], rows)
    # Indexing: L counts the input as a layer — the closed form for L matches L−1 averagings.
    # At L = 2, 3 the finite-T effect (exact enumeration) is ≤ 0.003; allow 4 SE + 0.005.
    for L in (2, 3):
        cf = init_bias.prop5_limit(L)
        tol = Z * mc.sem[L - 2] + 0.005
        claim.record(f"ρ̄′({L}) closed form vs MC after {L - 1} averagings", mc.mean[L - 2], expected=cf, tol=tol,
                     why="4 SE + 0.005 finite-T allowance (exact enumeration at this T)")
        claim.record(f"ρ̄′({L}) closed form vs MC after {L} averagings (the other indexing)", mc.mean[L - 1],
                     expected=cf, compare="none")
        assert abs(mc.mean[L - 2] - cf) <= tol
        assert abs(mc.mean[L - 1] - cf) > 0.05  # the other indexing is clearly wrong


@pytest.mark.claim("BB-5", source="001 Prop 5: closed form at every depth, and E ρ̄′ ≈ 1 − (1 − 1/T)/L²")
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "the closed form is the T → ∞ limit and is approached slowly: at T = 512 the L−1-averaging "
    "Monte Carlo (and exact enumeration) exceeds it from L ≈ 5 on (0.9996 vs 0.987 at L = 12; "
    "exact enumeration for 2 averagings gives 0.951 / 0.945 / 0.941 at T = 128 / 512 / 2048 → 0.938), "
    "and 1 − (1 − 1/T)/L² overstates the remaining gap 1 − ρ̄′ by ≫ 2× at depth"))
def test_prop5_closed_form_at_every_depth(claim, intra):
    ok = True
    for res in intra:
        mc = res.attn0
        for L in range(3, len(mc.mean) + 1):
            cf, approx, m = init_bias.prop5_limit(L), init_bias.prop5_approx(res.T, L), mc.mean[L - 2]
            tol = Z * mc.sem[L - 2] + 0.01
            claim.record(f"T={res.T}, L={L}: closed form − MC (L−1 averagings)", cf - m, expected=0.0, tol=tol,
                         why="4 SE + 0.01 ('≈')")
            # The approximation is about the rate 1 − ρ̄′ ∝ (1 − 1/T)/L²: judge the gap's ratio.
            ratio = (1 - approx) / max(1 - res.attn0_full.mean[L - 2], 1e-12)
            claim.record(f"T={res.T}, L={L}: (1 − approx) / (1 − MC)", ratio, expected=1.0, tol=0.5, compare="abs",
                         why="the gap within a factor ~2")
            ok &= abs(cf - m) <= tol and abs(ratio - 1) <= 0.5
    assert ok
