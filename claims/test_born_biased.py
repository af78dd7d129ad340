"""001 "Transformers Are Born Biased" §3–4: structure of random-init transformers.

Each experiment runs once per module (scoped fixture); the tests then assert the source's numbers
through `claim.check`, with tolerances built from the Monte-Carlo standard error across
independently drawn models (seeds), plus, where the source's statement is an infinite-width or
uniform-attention approximation, a stated allowance. Every passing claim puts at least one
negative control through the same comparison, built from what its fixture already has (tanh on
ReLU's weights, the layers without LayerNorm, the head fed isotropic states, the value vectors
before aggregation, the other layer indexing, …); strict xfails record their power at the
source's effect.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from repro.born_biased import figures, init_bias, preference_stats
from repro.core import plotting, stats
from repro.ground.runtime import derive_seed
from repro.harness import catalogue, profiles

# Closed forms are infinite-width (Gaussian-process) limits. At our widths (512–1024) a model's
# pairwise cosine carries an O(1/√d) fluctuation and a small finite-width bias; the source's own
# Monte Carlo differs from its closed forms by up to 0.008 (Table 3: 0.31 vs 1/π = 0.318,
# 0.49 vs 0.493). We allow 0.02 on top of 4 standard errors: ~2.5× that documented gap.
WIDTH_ALLOWANCE = 0.02
Z = 4.0  # standard errors: a two-sided 4σ band is missed by chance ~6e-5 of the time per number


# --------------------------------------------------------------------------- BB-4


SOURCE_RHO1 = catalogue.number("BB-4", "rho1")  # Prop 2: 1/π


@pytest.fixture(scope="module")
def mlp_stack(profile, device):
    return init_bias.mlp_stack_similarity(device=device, **profile.sizes("bb_4"))


@pytest.mark.claim("BB-4")
def test_relu_mlp0_contracts_along_the_arccos_map(claim, mlp_stack):
    """Control: tanh MLP0 on the *same* weights (the source's footnote 4), whose ρ̄ stays at 0,
    through the same comparison with the arc-cosine recurrence and the same monotonicity check."""
    relu, tanh, theory = mlp_stack.curves["relu"], mlp_stack.curves["tanh"], mlp_stack.theory
    tol = [Z * s + WIDTH_ALLOWANCE for s in relu.sem]
    why = f"{Z:g} MC standard errors over {len(relu.values)} models + {WIDTH_ALLOWANCE} finite-width allowance"
    L = mlp_stack.n_layer
    # Fig 5's footnote 5: without norm or residual the signal's scale vanishes with depth (the
    # source's late drop of ρ̄ is attributed to it). Context only: at our depth and float32 the
    # scale shrinks but stays far from underflow, so we see no drop.
    claim.record("rms of ReLU MLP0 output, block L / block 1", mlp_stack.relu_rms_ratio())
    claim.figure(figures.fig5_mlp_stack(mlp_stack), "fig5")
    claim.table(
        "Fig 5 at our scale: mean ± SE per block " + str(mlp_stack.sizes),
        ["block l", "ReLU MLP0", "arc-cos theory", "tanh MLP0", "standard (LN+res)"],
        [
            [
                l + 1,
                f"{relu.mean[l]:.4f} ± {relu.sem[l]:.4f}",
                theory[l],
                f"{tanh.mean[l]:.5f} ± {tanh.sem[l]:.5f}",
                f"{mlp_stack.curves['standard'].mean[l]:.4f}",
            ]
            for l in range(L)
        ],
    )
    ctl = "tanh MLP0 on the same weights (symmetric: ρ̄ stays 0)"
    for l in range(L):
        control = dict(control=float(tanh.mean[l]), control_name=ctl) if l in (0, L - 1) else {}
        name = "ρ̄₁ after 1 ReLU MLP0 block" if l == 0 else f"ρ̄_{l + 1} (arc-cosine recurrence)"
        claim.check(
            name,
            float(relu.mean[l]),
            float(theory[l]),
            compare="abs",
            tol=tol[l],
            why=why,
            source=round(SOURCE_RHO1, 4) if l == 0 else None,
            **control,
        )
    # Monotone rise: every step up is positive in every model (Prop 2: g(ρ) > ρ on [0, 1)).
    claim.check(
        "smallest per-model rise ρ̄_{l+1} − ρ̄_l",
        float(np.diff(relu.values, axis=1).min()),
        0.0,
        compare="ge",
        why="Prop 2: increasing in every model; no tolerance",
        control=float(np.diff(tanh.values, axis=1).min()),
        control_name=ctl,
    )


@pytest.mark.claim("BB-4")
def test_tanh_mlp0_keeps_sequences_orthogonal(claim, mlp_stack):
    """Prop 2: E ρ̄ = 0 exactly for tanh (odd activation, independent inputs) — no width allowance.
    Every block's mean is tested against 0 with a t-test across models, Bonferroni over blocks.
    Control: ReLU MLP0 on the same weights, through the same two tests."""
    tanh, relu = mlp_stack.curves["tanh"], mlp_stack.curves["relu"]
    claim.record("max |ρ̄_l| over blocks, tanh MLP0", float(np.abs(tanh.mean).max()))
    ctl = "ReLU MLP0 on the same weights (asymmetric)"
    claim.check(
        "Bonferroni t-test p of ρ̄_l = 0 (smallest over blocks)",
        init_bias.bonferroni_zero_mean_p(tanh),
        0.01,
        compare="ge",
        why="reject 'ρ̄ = 0' only at p < 0.01",
        control=init_bias.bonferroni_zero_mean_p(relu),
        control_name=ctl,
    )
    claim.check(
        "largest |ρ̄_l| / SE_l over blocks, tanh MLP0",
        float(np.abs(tanh.mean / tanh.sem).max()),
        Z,
        compare="le",
        why=f"every block within {Z:g} MC standard errors of 0",
        control=float(np.abs(relu.mean / relu.sem).max()),
        control_name=ctl,
    )


# --------------------------------------------------------------------------- BB-4.2


@pytest.fixture(scope="module")
def two_blocks(profile, device):
    sizes = profile.sizes("bb_4_2")
    return [init_bias.two_block_similarity(device=device, **{**sizes, "T": T}) for T in sizes["T"]]


SOURCE_TABLE3 = catalogue.number("BB-4.2", "table3")  # 001 Table 3 (T = 128)


@pytest.mark.claim("BB-4.2")
def test_attention_amplifies_mlp_contraction(claim, two_blocks):
    """Control: the second MLP0 (no attention) put through Attn0∘MLP0's comparison with
    T/(T+π−1)."""
    why = f"{Z:g} MC standard errors over models + {WIDTH_ALLOWANCE} finite-width allowance"
    rows = []
    for res in two_blocks:
        for key, label in (("h", "h = MLP0(x)"), ("mlp_mlp", "MLP0∘MLP0"), ("attn_mlp", "Attn0∘MLP0")):
            c = getattr(res, key)
            rows.append(
                [
                    res.T,
                    label,
                    SOURCE_TABLE3.get(key, SOURCE_TABLE3.get((key, res.T), "—")),
                    res.theory[key],
                    f"{c.mean[0]:.4f} ± {c.sem[0]:.4f}",
                ]
            )
    claim.table(
        "Table 3: source vs theory vs measured (mean ± SE over models)",
        ["T", "setting", "source (T=128)", "theory", "measured"],
        rows,
    )
    claim.figure(figures.table3_two_blocks(two_blocks), "table3")
    for res in two_blocks:
        for key, label in (("h", "h = MLP0(x)"), ("mlp_mlp", "MLP0∘MLP0"), ("attn_mlp", "Attn0∘MLP0")):
            c = getattr(res, key)
            control = {}
            if key == "attn_mlp":
                control = dict(
                    control=float(res.mlp_mlp.mean[0]), control_name="MLP0∘MLP0 (a second MLP, no attention)"
                )
            claim.check(
                f"{label}, T={res.T}",
                float(c.mean[0]),
                float(res.theory[key]),
                compare="abs",
                tol=float(Z * c.sem[0] + WIDTH_ALLOWANCE),
                why=why,
                source=SOURCE_TABLE3.get(key, SOURCE_TABLE3.get((key, res.T))),
                **control,
            )
        # the amplification itself: Attn0 contracts more than a second MLP0, in every model
        claim.check(
            f"T={res.T}: smallest per-model (Attn0∘MLP0 − MLP0∘MLP0)",
            float((res.attn_mlp.values - res.mlp_mlp.values).min()),
            0.0,
            compare="ge",
            why="Prop 4: attention amplifies the MLP's contraction more than a second MLP, in every model",
        )


# --------------------------------------------------------------------------- BB-6


@pytest.fixture(scope="module")
def positional(profile, device):
    return init_bias.positional_std(device=device, **profile.sizes("bb_6"))


# Eq 2 assumes uniform attention. At App B.1's init, pre-LN attention logits have std s ≈ 0.3,
# so Σ_j A_ij² ≈ e^{s²}/i: the std curve sits ~5% above 1/√i for i ≥ 2 while position 1 is exact.
# "Near-perfect overlap" (Fig 9) is asserted as a log-log slope within 0.05 of −1/2 (10% of the
# exponent, which covers that constant offset) and a pointwise match to Eq 2 with measured A.
SLOPE_TOL = 0.05


@pytest.mark.claim("BB-6")
def test_positional_std_decays_as_inverse_sqrt(claim, positional):
    """Controls, each through its check: the value vectors v_j before aggregation (flat in
    position) for the 1/√i slope; Eq 2 with uniform A (1/i) in place of the measured A for the
    pointwise match (the ~5% softmax offset must be resolved); position 2 against the rest for
    the first token's outlier ratio (√(3/2) by Eq 2, not √2)."""
    i = positional.positions
    slope, sem = stats.mean_sem([stats.loglog_slope(i, s).slope for s in positional.std.values])
    v_slope = float(np.mean([stats.loglog_slope(i, s).slope for s in positional.value_std.values]))
    claim.record("slope standard error over models", sem)
    claim.check(
        "log-log slope of std(o_i) vs i",
        slope,
        -0.5,
        compare="abs",
        tol=SLOPE_TOL,
        why="uniform-attention approximation of Eq 2; 10% of the exponent (see module)",
        control=v_slope,
        control_name="std of the value vectors v_j (before aggregation)",
    )
    # Eq 2's mechanism, exactly: Var(o_i) = σ²·Σ_j A_ij² when the v_j are uncorrelated.
    std = positional.std.mean
    ratio = std / (std[0] * np.sqrt(positional.attn_sq.mean))
    uniform = std / (std[0] * np.sqrt(1.0 / i))
    rel_sem = positional.std.sem / std
    worst = int(np.argmax(np.abs(ratio - 1)))
    claim.check(
        "max |std(o_i) / (σ√ΣA²) − 1| (Eq 2 with measured A)",
        float(abs(ratio[worst] - 1)),
        0.0,
        compare="le",
        tol=float(Z * rel_sem[worst] + 0.01),
        why=f"{Z:g} relative SEs + 1% for the v_j–A dependence that Eq 2 ignores",
        control=float(np.abs(uniform - 1).max()),
        control_name="Eq 2 with uniform attention (ΣA² = 1/i)",
    )
    # Finding 6: the first token is the outlier — it alone keeps the full variance.
    claim.check(
        "std(o_1) / max_{i>1} std(o_i)",
        float(std[0] / std[1:].max()),
        math.sqrt(2),
        compare="abs",
        tol=0.15,
        why="uniform attention gives √2 against position 2; ±0.15 covers the e^{s²/2}≈5% offset",
        control=float(std[1] / std[2:].max()),
        control_name="position 2 against positions > 2",
    )
    claim.figure(plotting.fig9_positional_std(positional), "fig9")


# =========================================================================== 001 §3: Table 1 probes
#
# One pass per model (repro.born_biased.preference_probe) answers every length at once (prefix trick), so BB-1, BB-1.1,
# BB-1.3, BB-1x and BB-2.1 read the same probes. Sizes: profiles "bb_1" (the source's nano shape,
# 12L/12H/768d, |V| = 50,257, seeds 42 and 43; N and T smaller at ci).
#
# The null. App B.2 tests the favourite's count against exact uniformity over the vocabulary, but
# a model that contracts nothing is not uniform: its final states would be independent isotropic
# vectors, and tokens whose head rows are longer win the argmax more often (at N = 400 a top count
# of 3 is then ~1.7× as likely as under uniformity, 4 ~2.8×, 5 ~5×). So the asserted p is App
# B.2's Bonferroni formula with each token's own rate under that null — the same head fed isotropic
# final states — computed from the head's row norms (init_bias.gaussian_argmax_rates; it matches a
# 20,000-state simulation through the real heads, see there). It costs one pass over the head's
# norms; App B.2's uniform p stays beside it as context. Each model also puts one draw of N
# isotropic states through its own final norm and head (≈ one LM-head pass): that draw is the
# negative control — "the same embeddings and no contraction" — and goes through every assertion
# the model's own predictions go through.

ALPHA = 0.05  # the source's significance level (App B.2)


@pytest.fixture(scope="module")
def table1(profile, device):
    return init_bias.preference_runs(device=device, null=True, **profile.sizes("bb_1"))


@pytest.fixture(scope="module")
def uniform_baseline(profile):
    s = profile.sizes("bb_1")
    return init_bias.uniform_baselines(s["n_seq"], s["vocab_size"], s["d_model"])


def _rope(table1):
    return {k: v for k, v in table1.items() if k[0] == "rope-gpt2"}


SOURCE_TABLE1 = catalogue.number("BB-1", "table1")  # (arch, seed, T) -> (top-1 id, freq %, p), 001 Table 1(a)-(b)
SOURCE_TABLE1C = catalogue.number("BB-1.2", "table1c")  # (seed, T) -> top-1 freq %, 001 Table 1(c): 1.2B RoPE GPT-2
SOURCE_FIG1A = catalogue.number("BB-1", "fig1a")  # 001 Fig 1a: (top token's ratio to the random baseline's top, N)


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1")
def test_random_init_prefers_one_token(claim, table1, uniform_baseline):
    """Finding 1 in App B.2's protocol, against the head's own null (module comment): every
    (seed, length) cell significant at 0.05 / cells. Fig 1a's ratio — the top count over the top
    count of N uniform draws — is compared with the source's 58.5× with its 95% interval; our
    threshold is one count above what the head's null reaches in 99% of draws (a model that
    contracts nothing gets there ≤ 1% of the time). The source's 58.5× is at N = 2,000 and an
    unstated length; the ratio grows with N (the baseline's top count barely moves), so it is also
    shown as the top-1 frequency it implies and at our N."""
    runs = _rope(table1)
    cells = preference_stats.cells(runs)
    bar = math.log10(ALPHA / len(cells))
    run42 = runs[("rope-gpt2", 42)]
    n, V = run42.sizes["n_seq"], run42.sizes["vocab_size"]
    rate = preference_stats.weakest_source_freq(SOURCE_TABLE1, "rope-gpt2")
    power, n80 = preference_stats.power_every_cell(runs, rate, bar)
    claim.power(
        power,
        effect=f"a favourite at {rate:.2%} of predictions in every cell (Table 1(a)'s weakest, T = 64)",
        effect_value=rate,
        basis="source: 001 Table 1(a), the weakest RoPE GPT-2 top-1 frequency (T = 64)",
        test=f"App B.2's Bonferroni top-count test against the head's null, log10 p ≤ {bar:.2f} in every cell",
        sample=f"{len(runs)} seeds × {len(run42.lengths)} lengths, N = {n} sequences per cell",
        method="closed form: exact binomial tail against the critical count of the head's null, cells "
        "independent (the lengths share prefixes: approximate)",
        decide=f"N = {n80} per cell",
    )
    T = run42.lengths[-1]
    claim.table(
        "001 Table 1 (a) RoPE GPT-2 and (b) LLaMA-2 at our scale, with the source's rows",
        ["arch", "seed", "T", "top-1 id", "top-1 freq %", "p (App B.2, uniform)", "p (head's null)", "row"],
        preference_stats.table1_rows(table1, SOURCE_TABLE1),
    )
    claim.figure(figures.fig1a_preference(run42, T, uniform_baseline[0]), "fig1a")
    claim.figure(figures.table1_frequencies(table1), "table1")
    preference_stats.check_significance(
        claim,
        runs,
        bar,
        f"p < {ALPHA}/{len(cells)} in every cell (App B.2's test, the head's null, Bonferroni over cells)",
        "",
    )
    # Fig 1a: the ratio, with its interval, against the source's 58.5×
    uniform = np.full(V, 1.0 / V)
    base = init_bias.expected_top_count(n, uniform)
    k99 = init_bias.null_top_count_quantile(n, run42.null_rates, 0.99)
    ratio_src, n_src = SOURCE_FIG1A
    f_src = ratio_src * init_bias.expected_top_count(n_src, uniform) / n_src
    claim.record(f"random baseline: expected top count of {n} uniform draws (Fig 1a's red line at rank 1)", base)
    claim.record(f"Fig 1a's {ratio_src}× at N = {n_src} as a top-1 frequency", f_src * 100, unit="%")
    claim.record(f"Fig 1a's {ratio_src}× at our N = {n} (the same frequency)", f_src * n / base)
    t64 = [f for (a, _, TT), (_, f, _) in SOURCE_TABLE1.items() if a == "rope-gpt2" and TT == 64]
    claim.record(
        f"Table 1(a) at T = 64 (N = 10,000) as a ratio at our N = {n}",
        f"{min(t64) / 100 * n / base:.1f}–{max(t64) / 100 * n / base:.1f}",
    )
    for (_, seed), run in runs.items():
        t = run.top1[run.at(T)]
        ci = stats.binomial_ci(t.count, n)
        ratio = t.count / base
        claim.record(
            f"Fig 1a ratio, seed {seed}, T={T}: 95% interval (Wilson, on the count)",
            f"{ratio:.2f} [{ci.low * n / base:.2f}, {ci.high * n / base:.2f}]; source's at our N "
            f"{f_src * n / base:.1f} {'inside' if ci.low <= f_src <= ci.high else 'outside'}",
        )
        claim.check(
            f"Fig 1a: top-1 count / random baseline's top count, seed {seed}, T={T}",
            ratio,
            (k99 + 1) / base,
            compare="ge",
            source=ratio_src,
            control=run.null_draw_top1().count / base,
            control_name="N isotropic final states through the same norm and head",
            why=f"one count above the head's null 99th percentile ({k99} of {n}): a model without contraction "
            "reaches it ≤ 1% of the time",
        )


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1.1")
@pytest.mark.parametrize("arch", ["rope-gpt2", "llama"])
def test_preference_holds_across_architectures(claim, table1, arch, profile):
    """App B.2's test (p < 0.05) in every cell of each architecture, against each head's own null.
    Power: at the source's weakest favourite of that architecture (Table 1, T = 64). LLaMA's
    favourite holds well under 0.1% of the predictions in Table 1(b), so at small N its expected
    count is a fraction of one and the test cannot see it: the power says at which N it could."""
    runs = {k: v for k, v in table1.items() if k[0] == arch}
    n = next(iter(runs.values())).sizes["n_seq"]
    bar = math.log10(ALPHA)
    rate = preference_stats.weakest_source_freq(SOURCE_TABLE1, arch)
    power, n80 = preference_stats.power_every_cell(runs, rate, bar)
    claim.power(
        power,
        effect=f"{arch}: a favourite at {rate:.2%} of predictions in every cell (Table 1's weakest at T = 64)",
        effect_value=rate,
        basis=f"source: 001 Table 1({'a' if arch == 'rope-gpt2' else 'b'}), the weakest {arch} top-1 frequency "
        "(T = 64)",
        test=f"App B.2's top-count test against the head's null at α = {ALPHA} in every cell",
        sample=f"{len(runs)} seeds × {len(next(iter(runs.values())).lengths)} lengths, N = {n} sequences per cell",
        method="closed form: exact binomial tail against the critical count of the head's null, cells "
        "independent (the lengths share prefixes: approximate)",
        decide=f"N = {n80} per cell",
    )
    if arch == "llama" and profile.name == "ci":
        counts = [t.count for _, _, t in preference_stats.cells(runs)]
        claim.not_reproduced(
            f"at N = {n} per cell the source's LLaMA favourite is expected {rate * n:.2f} times, below the count the "
            f"test needs, so the cells cannot reach p < {ALPHA} (power {power:.2g}; 80% at N = {n80}). Measured top "
            f"counts: {counts}."
        )
    preference_stats.check_significance(
        claim, runs, bar, f"App B.2: p < {ALPHA} in every cell (against the head's own null)", f"{arch}: "
    )


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1.1")
def test_llama_preference_is_far_weaker(claim, table1, profile):
    """ "Far weaker" as a bound on the effect, not only its sign: LLaMA's pooled top-1 count at most
    half of RoPE GPT-2's (its share of the two pooled counts ≤ 1/3; the source's ratio, Table 1
    means, is ≈ 0.015). Same N per cell, so under "at least half as strong" LLaMA's share of the
    pooled counts is Bin(total, ≥ 1/3): one-sided exact test at 1%. Control: the same test between
    the two RoPE GPT-2 seeds (one architecture, not far weaker; a test of the sign alone — share
    < 1/2 — let this control pass at the paper's N = 10,000: seeds 42 and 43 differ, 739 vs 905,
    p = 2e-5 at the paper profile, results/h100-2026-11-25/). Power, at the source's effect only (no measured count
    enters it): RoPE GPT-2's favourite at Table 1(a)'s weakest frequency (T = 64) moved to each of
    our lengths by Table 1(a)'s own length trend; at the source's ratio (≈ 0.015) LLaMA's favourite
    is below its head's noise floor, so its pooled top count is that floor's expectation (the top
    count of N draws from its head's null rates, init_bias.expected_top_count), held fixed, and
    RoPE GPT-2's pooled count binomial (init_bias.power_at_most_share)."""
    pairs = [(table1[("rope-gpt2", s)], table1[("llama", s)]) for (a, s) in table1 if a == "llama"]
    g_counts = sum(r.top1[i].count for r, _ in pairs for i in range(len(r.lengths)))
    l_counts = sum(l.top1[i].count for _, l in pairs for i in range(len(l.lengths)))
    share = 1 / 3  # LLaMA / RoPE ≤ 1/2: "far" means at least a factor of two
    p = stats.binomial_p(l_counts, g_counts + l_counts, share, alternative="less")
    seeds = [sum(t.count for t in r.top1) for r, _ in pairs]
    p_ctl = stats.binomial_p(min(seeds), sum(seeds), share, alternative="less")
    g_cos = np.mean([r.final_cosine[-1] for r, _ in pairs])
    l_cos = np.mean([l.final_cosine[-1] for _, l in pairs])
    claim.record("inter-sequence cosine of final-normed states, RoPE GPT-2", g_cos)
    claim.record("inter-sequence cosine of final-normed states, LLaMA", l_cos)
    src = {
        a: np.mean([f for (aa, _, _), (_, f, _) in SOURCE_TABLE1.items() if aa == a]) for a in ("rope-gpt2", "llama")
    }
    claim.record("source: top-1 freq LLaMA / RoPE GPT-2 (Table 1, mean of rows)", src["llama"] / src["rope-gpt2"])
    claim.record("pooled top-1 counts, LLaMA vs RoPE GPT-2", f"{l_counts} vs {g_counts}")
    n_cells = sum(len(r.lengths) for r, _ in pairs)
    n = pairs[0][0].sizes["n_seq"]

    rate64 = preference_stats.weakest_source_freq(SOURCE_TABLE1, "rope-gpt2")
    g_rate = float(np.mean([rate64 * SOURCE_LENGTH_RATIO ** math.log(T / 64, 4) for T in pairs[0][0].lengths]))

    def floor(N: int) -> int:  # LLaMA's pooled top count at its heads' noise floor
        return round(sum(init_bias.expected_top_count(N, l.null_rates) * len(l.lengths) for _, l in pairs))

    def power_at(N: int) -> float:
        return init_bias.power_at_most_share(floor(N), n_cells * N, g_rate, share, 0.01)

    n80 = stats.n_for_power(power_at, n_max=1_000_000)
    claim.power(
        power_at(n),
        effect=f"LLaMA's favourite at {src['llama'] / src['rope-gpt2']:.3f}× RoPE GPT-2's "
        f"(Table 1 means), RoPE GPT-2's at {g_rate:.2%} over our lengths (Table 1(a)'s "
        f"weakest {rate64:.2%} at T = 64, ×{SOURCE_LENGTH_RATIO:.2f} per 4× of length)",
        effect_value=src["llama"] / src["rope-gpt2"],
        basis="source: 001 Table 1(a)–(b) (the ratio of their means; Table 1(a)'s weakest frequency and "
        "length trend for RoPE GPT-2)",
        test="exact one-sided binomial test at 1% of LLaMA's share of the pooled top-1 counts ≤ 1/3",
        sample=f"{len(pairs)} seeds × {len(pairs[0][0].lengths)} lengths per architecture, N = {n} per cell",
        method=f"closed form: exact, LLaMA's pooled count at its heads' expected noise floor ({floor(n)} at "
        f"this N), RoPE GPT-2's ~ Bin({n_cells}·N, {g_rate:.4f})",
        decide=f"N = {n80} per cell",
    )
    claim.figure(figures.table1_frequencies(table1), "table1b")
    if profile.name == "ci":  # measured at ci: RoPE GPT-2's counts are too few (strict: a pass must update this)
        claim.not_reproduced(
            f"at N = {n} per cell RoPE GPT-2's favourite is counted {g_counts} times over {n_cells} cells and LLaMA's "
            f"noise floor {l_counts}: too few to bound the ratio below 1/2 at 1% (p = {p:.2g}; power "
            f"{power_at(n):.2g}, 80% at N = {n80}). The sign alone holds: ratio {l_counts / max(g_counts, 1):.2f}."
        )
    claim.check(
        "pooled top-1 counts, LLaMA / RoPE GPT-2",
        l_counts / max(g_counts, 1),
        share / (1 - share),
        compare="le",
        source=round(src["llama"] / src["rope-gpt2"], 4),
        why="far weaker: at most half as many pooled top-1 counts",
    )
    claim.check(
        "one-sided binomial p, LLaMA share of pooled counts ≤ 1/3 (ratio ≤ 1/2)",
        float(p),
        0.01,
        compare="le",
        why="reject 'at least half as strong' at 1%",
        control=float(p_ctl),
        control_name=f"the same test between RoPE GPT-2 seeds (pooled counts {seeds})",
    )


@pytest.fixture(scope="module")
def other_size(profile, device):
    """bb_1's probe of RoPE GPT-2 at bb_1_2's shape: smaller than bb_1's at ci (4 layers), the
    source's 1.2B (24L/2048d) at paper — larger."""
    sizes = profiles.bb_1_2_sizes(profile)
    return init_bias.preference_runs(device=device, keep_states=False, **sizes)


# The source's trend effects as ratios of top-1 frequencies, in the source's own rows:
# length — Table 1(a) (the nano model, our shape), per 4× of length (its four 4× steps, geometric
# mean); size — Table 1(c) 1.2B over Table 1(a) nano at equal length (six cells, geometric mean).
def _model_scale(runs) -> int:
    """Non-embedding weights of a probe run's shape, ∝ n_layer · d_model²: which model is larger."""
    s = next(iter(runs.values())).sizes
    return s["n_layer"] * s["d_model"] ** 2


SOURCE_LENGTH_RATIO = preference_stats.geomean(
    [
        SOURCE_TABLE1[("rope-gpt2", s, 4 * T)][1] / SOURCE_TABLE1[("rope-gpt2", s, T)][1]
        for s in (42, 43)
        for T in (64, 256)
    ]
)
SOURCE_SIZE_RATIO = preference_stats.geomean(
    [f / SOURCE_TABLE1[("rope-gpt2", s, T)][1] for (s, T), f in SOURCE_TABLE1C.items()]
)


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1.2")
def test_preference_grows_with_length_and_size(claim, table1, other_size, profile):
    """Lengths: pooled over seeds, top-1 counts at the longest vs the shortest length; size:
    pooled over seeds and lengths, the larger model's top-1 counts vs the smaller one's (which
    of bb_1's and bb_1_2's shapes is larger depends on the profile: 4 → 12 layers at d = 768 at
    ci, 12L/768d → the source's 1.2B at paper; a paper run on one H200 compared them the wrong way
    round before, 2026-11-26). Under "no trend" each pooled count is equally likely to come from
    either side: Bin(total, 1/2), one-sided at App B.2's level. Power: the same two tests when the
    longer (larger) side's frequency is the source's ratio times our shorter (smaller) side's
    (exact, see init_bias.power_pooled_share), every frequency the source's: our nano model's at
    Table 1(a)'s weakest (T = 64) moved to each length by Table 1(a)'s own trend, the other size's
    by Table 1(c)'s ratio; at ci our size step is smaller than the source's (nano → 1.2B), so that
    half's power is optimistic there."""
    big = _rope(table1)
    lengths = next(iter(big.values())).lengths
    n = next(iter(big.values())).sizes["n_seq"]
    long_ = sum(r.top1[-1].count for r in big.values())
    short = sum(r.top1[0].count for r in big.values())
    p_len = stats.binomial_p(long_, long_ + short, 0.5, alternative="greater")
    larger_runs, smaller_runs = sorted((big, other_size), key=_model_scale, reverse=True)
    large = sum(t.count for r in larger_runs.values() for t in r.top1)
    smaller = sum(t.count for r in smaller_runs.values() for t in r.top1)
    p_size = stats.binomial_p(large, large + smaller, 0.5, alternative="greater")
    cos_len = np.mean([r.final_cosine[-1] - r.final_cosine[0] for r in big.values()])
    cos_size = np.mean([larger_runs[k].final_cosine[-1] - smaller_runs[k].final_cosine[-1] for k in big])
    b_size, s_size = (preference_stats.size_label(next(iter(runs.values()))) for runs in (larger_runs, smaller_runs))
    # power at the source's effects, every frequency from the source (docstring); bb_1's model is
    # Table 1(a)'s nano shape
    rate64 = preference_stats.weakest_source_freq(SOURCE_TABLE1, "rope-gpt2")
    nano = [rate64 * SOURCE_LENGTH_RATIO ** math.log(T / 64, 4) for T in lengths]
    f_short = nano[0]
    f_small = float(np.mean(nano)) / (SOURCE_SIZE_RATIO if larger_runs is big else 1.0)
    steps = math.log(lengths[-1] / lengths[0], 4)
    r_len = SOURCE_LENGTH_RATIO**steps
    power_at = functools.partial(
        preference_stats.trend_power,
        n_seeds=len(big),
        n_lengths=len(lengths),
        length_ratio=r_len,
        f_short=f_short,
        size_ratio=SOURCE_SIZE_RATIO,
        f_small=f_small,
        alpha=ALPHA,
    )
    n80 = stats.n_for_power(power_at, n_max=200_000)
    claim.power(
        power_at(n),
        effect=f"top-1 frequency ×{r_len:.2f} from T={lengths[0]} to T={lengths[-1]} (Table 1(a): "
        f"×{SOURCE_LENGTH_RATIO:.2f} per 4× of length) and ×{SOURCE_SIZE_RATIO:.2f} for the "
        "larger model (Table 1(c) over (a))",
        effect_value=r_len,
        basis="source: 001 Table 1(a) (length trend, weakest frequency at T = 64) and Table 1(c) over (a) (size ratio)",
        test=f"two one-sided pooled-share binomial tests at {ALPHA}, both must reject",
        sample=f"{len(big)} seeds × {len(lengths)} lengths × 2 model sizes, N = {n} per cell",
        method=f"closed form: exact over both pooled counts; shorter/smaller-side frequencies from the source "
        f"({f_short:.2%}, {f_small:.2%})",
        decide=f"N = {n80} per cell",
    )
    claim.record(f"pooled top-1 count, T={lengths[-1]} vs T={lengths[0]} ({b_size})", f"{long_} vs {short}")
    claim.record(f"pooled top-1 count, {b_size} vs {s_size}", f"{large} vs {smaller}")
    claim.record(f"mechanism: final-normed cosine, T={lengths[-1]} minus T={lengths[0]}", cos_len)
    claim.record("mechanism: final-normed cosine, larger minus smaller model", cos_size)
    claim.table(
        "Finding 1.2: top-1 frequency (%) by length and size (seeds pooled in the test)",
        ["model", "seed", *[f"T={T}" for T in lengths], "final-normed cosine at T_max"],
        [
            [
                preference_stats.size_label(r),
                k[1],
                *[f"{t.freq * 100:.2f}" for t in r.top1],
                f"{r.final_cosine[-1]:.3f}",
            ]
            for runs in (big, other_size)
            for k, r in runs.items()
        ],
    )
    claim.figure(figures.table1_frequencies(big, other_size), "trend")
    if profile.name == "ci":  # measured at ci: neither trend is resolved (strict: a pass must update this)
        claim.not_reproduced(
            f"neither trend is resolved in top-1 counts at ci: pooled counts {long_} (T={lengths[-1]}) vs {short} "
            f"(T={lengths[0]}), p = {p_len:.2g}; {large} ({b_size}) vs {smaller} ({s_size}), p = {p_size:.2g}; the "
            f"contraction behind them does rise (final-normed cosine {cos_len:+.3f} with length, {cos_size:+.3f} "
            "with size)."
        )
    claim.check(
        "one-sided binomial p: longer sequences, more extreme",
        float(p_len),
        ALPHA,
        compare="le",
        why="App B.2's level; one test per direction",
    )
    claim.check(
        "one-sided binomial p: larger model, more extreme",
        float(p_size),
        ALPHA,
        compare="le",
        why="App B.2's level; one test per direction",
    )


SOURCE_AGREEMENT = catalogue.number("BB-2.2", "agreement")  # 001 Finding 2.2: 100 random models, N = 2,000


@pytest.fixture(scope="module")
def directions(profile, device):
    return init_bias.direction_agreement(device=device, **profile.sizes("bb_2_2"))


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1.3")
def test_favourite_token_is_set_by_the_seed(claim, table1, directions, profile):
    """Cross-frequencies: seed A's favourite among seed B's predictions. A shared, architecture-
    given favourite would be as frequent in both; a seed-given one is at chance in the other. The
    favourite is chosen on one half of the probes and both frequencies are counted on the other
    half (`preference_stats.held_out_favourite`): chosen and counted on the same probes, its own
    frequency would carry the selection's luck (winner's curse) — a model without any favourite
    would pass. Control for that check: seed A's draw of N isotropic final states through its
    own norm and head (no favourite), through the same split. Over many seeds: the contraction
    direction's token (Finding 2.2) should almost never coincide between seeds. Control: the
    same agreement between one seed's direction tokens at its different probe lengths (one
    model: the favourite must coincide). Power of the held-out checks: at Table 1(a)'s weakest
    favourite (T = 64, moved to our T by its length trend) in its own model and at chance (1/V)
    in the other, the other tokens at the head's null rates (preference_stats.held_out_power)."""
    runs = _rope(table1)
    T = next(iter(runs.values())).lengths[-1]
    (k42, r42), (k43, r43) = list(runs.items())[:2]
    f42, f43 = r42.top1[-1].token, r43.top1[-1].token
    n = r42.sizes["n_seq"]
    claim.record(f"favourite, seed {k42[1]} (T={T})", f42)
    claim.record(f"favourite, seed {k43[1]} (T={T})", f43)
    toks = directions.direction_token
    m = len(toks)
    between = float(np.mean([toks[i] == toks[j] for i in range(m) for j in range(i + 1, m)]))
    within = float(
        np.mean(
            [
                np.mean([a == b for i, a in enumerate(r.contraction_token) for b in r.contraction_token[i + 1 :]])
                for r in runs.values()
            ]
        )
    )
    claim.record(f"distinct direction tokens over {m} seeds", len(set(toks.tolist())))
    claim.figure(figures.fig_seed_favourites(runs, T), "cross")
    claim.check(
        f"favourites of seeds {k42[1]} and {k43[1]} differ",
        bool(f42 != f43),
        compare="true",
        why="Table 1: different seeds, different top-1 IDs",
    )
    claim.check(
        "between-seed agreement of direction tokens (pairs)",
        between,
        0.1,
        compare="le",
        why="an architecture-given favourite gives 1; we ask that at most 10% of seed pairs share it",
        control=within,
        control_name="agreement within one seed, across its probe lengths (pairs)",
    )
    V, i = r42.sizes["vocab_size"], r42.at(T)
    rate = preference_stats.weakest_source_freq(SOURCE_TABLE1, "rope-gpt2") * SOURCE_LENGTH_RATIO ** math.log(T / 64, 4)

    def power_at(N: int) -> float:  # both seeds' checks must pass (independent models)
        return float(np.prod([preference_stats.held_out_power(N, rate, r.null_rates, 1 / V) for r in runs.values()]))

    n80 = stats.n_for_power(power_at, n_max=100_000)
    claim.power(
        power_at(n),
        effect=f"each seed's favourite at {rate:.2%} of its own predictions (T = {T}), at chance "
        "(1/V) in the other seed",
        effect_value=rate,
        basis="source: 001 Table 1(a), the weakest RoPE GPT-2 top-1 frequency (T = 64), moved to our T by "
        "Table 1(a)'s length trend",
        test="favourite chosen on the first half of the probes; held-out count in its own model at least one "
        "above the other seed's, for both seeds",
        sample=f"{len(runs)} seeds, N = {n} probes (T = {T}) each, split in halves",
        method="closed form: exact binomials for the selection (the other tokens at the head's null rates, a "
        "tie or a wrong token counted as a miss: a lower bound) and the held-out counts",
        decide=f"N = {n80} probes per seed" if n80 else "more than 100,000 probes per seed",
    )
    held = {
        k[1]: preference_stats.held_out_favourite(r.next_token[i], o.next_token[i], V)
        for (k, r), (_, o) in (((k42, r42), (k43, r43)), ((k43, r43), (k42, r42)))
    }
    if profile.name in ("ci", "long"):  # long probes at ci's sizes; measured at ci (strict: a pass must update this)
        claim.not_reproduced(
            f"chosen on half of the N = {n} probes (T = {T}) and counted on the other half, the favourites are not "
            "resolved: "
            + "; ".join(
                f"seed {s}'s (token {h.token}) {h.own:.2%} in its own model vs {h.other:.2%}" for s, h in held.items()
            )
            + f" (full-N favourites {f42}, {f43} at {r42.top1[-1].freq:.2%}, {r43.top1[-1].freq:.2%}; Table 1(a)'s "
            f"weakest at this T {rate:.2%}). Chosen and counted on the same probes, the check passed on the "
            f"selection's own luck (winner's curse). Power {power_at(n):.2g} at the source's frequency; 80% at "
            f"N = {n80} per seed."
        )
    for (ka, ra), (kb, rb) in (((k42, r42), (k43, r43)), ((k43, r43), (k42, r42))):
        fav = held[ka[1]]
        null = preference_stats.held_out_favourite(ra.null_next_token, rb.next_token[i], V)
        claim.record(
            f"seed {ka[1]}: favourite on the first {n - fav.n_held} probes, counted on the other "
            f"{fav.n_held}: own vs seed {kb[1]}",
            f"token {fav.token}: {fav.own:.2%} vs {fav.other:.2%}",
        )
        claim.record(
            f"seed {ka[1]}'s isotropic draw, chosen and counted on the same {n} probes (the winner's curse "
            "this split removes): own freq",
            float(np.bincount(ra.null_next_token).max() / n) * 100,
            unit="%",
        )
        claim.check(
            f"seed {ka[1]}'s favourite (chosen on half the probes): its own freq − its freq in seed {kb[1]}, "
            "held-out half",
            (fav.own - fav.other) * 100,
            100 / fav.n_held,
            compare="ge",
            unit="%",
            why="seed-given: more frequent in its own model, by at least one held-out prediction",
            control=(null.own - null.other) * 100,
            control_name=f"seed {ka[1]}'s N isotropic final states through its norm and head (no favourite)",
        )


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-1x")
def test_hidden_dimension_preference(claim, table1, uniform_baseline):
    """Which hidden dimension of the last block's output is largest, against uniform over d is
    App B.2's test; but a model without contraction would still favour the dimensions with the
    larger spread. The asserted null: each dimension independent N(0, std_j²) with the measured
    per-dimension std over sequences (the spread without the shared offset that the contraction
    adds), its argmax rates by quadrature (init_bias.gaussian_argmax_rates), and App B.2's
    Bonferroni formula with those rates. Control: N draws from that null (per seed, at the
    longest length), through the same test."""
    runs = _rope(table1)
    cells = preference_stats.cells(runs, "top_dim")
    bar = math.log10(ALPHA / len(cells))
    worst, controls = [], []
    for (_, seed), run in runs.items():
        n, d = run.sizes["n_seq"], run.sizes["d_model"]
        for i, T in enumerate(run.lengths):
            t = run.top_dim[i]
            rates = run.dim_null_rates(i)
            worst.append(init_bias.null_top_log10_p(t.count, n, rates))
            claim.record(f"seed {seed}, T={T}: top dim {t.token}, {t.count}/{n}", t.freq * 100, unit="%")
            claim.record(
                f"seed {seed}, T={T}: log10 p vs the spread null (App B.2's vs uniform: {t.log10_p:.2f}; "
                f"null's top rate {rates.max() * d:.2f}× uniform)",
                worst[-1],
            )
        i = len(run.lengths) - 1
        rng = np.random.default_rng(derive_seed("bb1x-null-draw", seed))
        draw = np.argmax(rng.standard_normal((n, d)) * run.dim_std[i], axis=1)
        controls.append(init_bias.null_top_log10_p(np.bincount(draw).max(), n, run.dim_null_rates(i)))
    run = runs[("rope-gpt2", 42)]
    claim.figure(figures.fig10_token_and_dim(run, run.lengths[-1], *uniform_baseline), "fig10")
    claim.check(
        f"largest log10 p over the {len(cells)} cells, vs the per-dimension spread null",
        max(worst),
        bar,
        compare="le",
        why=f"App B.2's test over d dimensions with the spread null, Bonferroni over {len(cells)} cells",
        control=min(controls),
        control_name="N draws of independent N(0, std_j²) (the null; the stronger seed's)",
    )


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-2.1")
def test_inter_sequence_contraction_grows_with_depth(claim, table1):
    """A rising trend of the inter-sequence cosine over blocks (Kendall τ). Control: the same
    cosines in a shuffled block order (no depth trend), through the same trend test."""
    runs = _rope(table1)
    T = next(iter(runs.values())).lengths[-1]
    for (_, seed), run in runs.items():
        c = run.layer_cosine[run.at(T)]
        tau = stats.kendall_tau(np.arange(len(c)), c)
        shuffled = np.random.default_rng(derive_seed("bb21-shuffle", seed)).permutation(len(c))
        tau_ctl = stats.kendall_tau(shuffled, c)
        claim.record(f"seed {seed}: cosine after block 1 → block {len(c) - 1}", f"{c[1]:.3f} → {c[-1]:.3f}")
        claim.check(f"seed {seed}: Kendall τ(block, cosine)", tau.statistic, 0.0, compare="ge", why="a rising trend")
        claim.check(
            f"seed {seed}: Kendall p",
            tau.p,
            0.01,
            compare="le",
            why="trend at 1%",
            control=tau_ctl.p,
            control_name="the same cosines against a shuffled block order",
        )
        claim.check(
            f"seed {seed}: cosine after block {len(c) - 1} − after block 1",
            float(c[-1] - c[1]),
            0.0,
            compare="ge",
            why="higher at the end than after the first block",
        )
    claim.figure(figures.fig2_layer_cosine(runs, T), "fig2")


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-2.2")
def test_contraction_direction_names_the_favourite(claim, directions):
    """Null: the direction token is unrelated to the favourite; it then coincides with the
    favourite no more often than the favourite's own frequency (bounded by its max over models).
    Control: each model's direction token against the *next* model's favourite (unrelated by
    construction), through the same binomial test."""
    agree = directions.agree
    k, m = int(agree.sum()), len(agree)
    ci = stats.binomial_ci(k, m)
    p0 = float(directions.favourite_count.max() / directions.sizes["n_seq"])
    p = stats.binomial_p(k, m, p0, alternative="greater")
    k_ctl = int((directions.direction_token == np.roll(directions.favourite, -1)).sum())
    p_ctl = stats.binomial_p(k_ctl, m, p0, alternative="greater")
    sig = directions.log10_p < math.log10(ALPHA)
    claim.record(
        f"agreement rate over {m} models ({directions.sizes['n_layer']}L, N={directions.sizes['n_seq']}, "
        f"T={directions.sizes['T']})",
        k / m,
        source=SOURCE_AGREEMENT,
    )
    claim.record("Wilson 95% CI", f"[{ci.low:.2f}, {ci.high:.2f}]")
    claim.record(
        f"agreement among the {int(sig.sum())} models with a significant favourite",
        float(agree[sig].mean()) if sig.any() else float("nan"),
    )
    claim.figure(figures.fig_direction_agreement(directions), "agreement")
    claim.check(
        f"binomial p vs chance (p0 = {p0:.3f})",
        float(p),
        0.01,
        compare="le",
        why="reject 'unrelated' at 1%",
        control=float(p_ctl),
        control_name=f"direction token vs the next model's favourite ({k_ctl}/{m} agree)",
    )


@pytest.mark.policy_dtype
@pytest.mark.xdist_group("born_biased-probes")  # the Table 1 probes: one worker builds them
@pytest.mark.claim("BB-2.2")
def test_direction_agreement_rate_matches_source(claim, directions, profile):
    """The source's 76% inside our Wilson 95% interval. Power: by simulation
    (init_bias.mode_agreement_power) — if the direction names each model's true favourite 76% of
    the time, how often does our interval contain 0.76 when our favourite is the mode of N
    predictions, with each model's measured top counts as its rates? At small N the mode is
    often not the model's favourite, which dilutes the rate."""
    agree = directions.agree
    k, m = int(agree.sum()), len(agree)
    ci = stats.binomial_ci(k, m)
    n, V = directions.sizes["n_seq"], directions.sizes["vocab_size"]

    def power_at(N: int, sims: int = 1000) -> float:
        return init_bias.mode_agreement_power(
            directions.rank_counts, n, V, SOURCE_AGREEMENT, sims=sims, n_scale=N / n, seed=derive_seed("bb22-power")
        )

    n80 = stats.n_for_power(lambda N: power_at(N, 400), n_max=100_000)
    claim.power(
        power_at(n),
        effect=f"the direction names the true favourite in {SOURCE_AGREEMENT:.0%} of models",
        effect_value=SOURCE_AGREEMENT,
        basis="source: 001 Finding 2.2 (76% over 100 random models)",
        test="the source's rate inside our Wilson 95% interval",
        sample=f"{m} models × N = {n} predictions",
        method=f"simulation, 1,000 replicates of {m} models; nuisance: each model's token rates its measured "
        f"top-{directions.rank_counts.shape[1]} counts / N (plug-in, optimistic; the favourite half a "
        "count ahead)",
        decide=f"N ≈ {n80} predictions per model (same models, T)",
    )
    if profile.name == "ci":
        claim.not_reproduced(
            f"rate {k}/{m} = {k / m:.2f} (95% CI {ci.low:.2f}–{ci.high:.2f}): at ci the favourite is ill-determined "
            f"(top counts {directions.favourite_count.min()}–{directions.favourite_count.max()} of N = {n}, "
            f"{directions.sizes['n_layer']} layers, T = {directions.sizes['T']}), so the histogram's mode often is "
            "not the model's favourite; the source used 12 layers, N = 2000, T = 1024 (--profile paper)"
        )
    claim.record(f"agreement rate over {m} models", k / m, source=SOURCE_AGREEMENT)
    claim.check(
        "agreement rate: upper end of our Wilson 95% CI",
        ci.high,
        SOURCE_AGREEMENT,
        compare="ge",
        source=SOURCE_AGREEMENT,
        why="the source's rate inside our interval (sampling error over models)",
    )
    claim.check(
        "agreement rate: lower end of our Wilson 95% CI",
        ci.low,
        SOURCE_AGREEMENT,
        compare="le",
        source=SOURCE_AGREEMENT,
        why="the source's rate inside our interval (sampling error over models)",
    )


# =========================================================================== 001 §4.1: ablation


SOURCE_TABLE2 = catalogue.number("BB-3", "table2")  # 001 Table 2: avg pairwise cosine per variant
SOURCE_ATTN_ONLY_P = catalogue.number("BB-3", "attn_only_p")  # 001 Table 2: attn-only p


@pytest.fixture(scope="module")
def ablation(profile, device):
    return init_bias.ablation_runs(device=device, **profile.sizes("bb_3"))


@pytest.mark.policy_dtype
@pytest.mark.claim("BB-3")
def test_mlp_drives_contraction_attention_alone_does_not(claim, ablation, uniform_baseline):
    """Controls: MLP-only through attn-only's "≈ 0" check; full against MLP-only through the
    "flat relative to MLP-only" test; attn-only through the "spiky" test. The histograms' p is
    App B.2's against each tied head's own null (see the §3 comment), uniform as context."""
    sizes = ablation["full"][0].sizes
    final = {v: np.array([r.final_cosine for r in runs]) for v, runs in ablation.items()}
    rows = []
    for v, runs in ablation.items():
        claim.record(
            f"Table 2 avg sim, {v} (T={sizes['T']}, N={sizes['n_seq']}, {len(runs)} seeds)",
            final[v].mean(),
            source=SOURCE_TABLE2[v],
        )
        worst = max(r.null_log10_p for r in runs)
        best = min(r.null_log10_p for r in runs)
        rows.append(
            [
                v,
                SOURCE_TABLE2[v],
                f"{final[v].mean():.4g}",
                f"{np.mean([r.top1.freq for r in runs]) * 100:.2f}",
                f"1e{best:.1f} … 1e{worst:.1f}",
            ]
        )
    claim.table(
        "001 Table 2 at our scale (source: " + ", ".join(f"{v} {x:.3g}" for v, x in SOURCE_TABLE2.items()) + ")",
        ["variant", "source avg sim", "measured avg sim", "top-1 freq %", "p over seeds (head's null)"],
        rows,
    )
    # Attention-only: no contraction. For independent inputs the pairwise cosine has mean 0 and
    # per-model SE ≈ √2/(N·√d); 0.01 is > 50 of those SEs at our N and d, and 40× below MLP-only.
    ATTN_ZERO = 0.01
    claim.check(
        "attn-only |avg sim| (max over seeds)",
        float(np.abs(final["attn-only"]).max()),
        0.0,
        compare="abs",
        tol=ATTN_ZERO,
        why="≈ 0: far below MLP-only; >50 SEs of a null model's cosine",
        control=float(np.abs(final["mlp-only"]).max()),
        control_name="MLP-only (contracts)",
    )
    # "Flat" is judged against the other two variants, not against an exactly uniform histogram.
    # Pooled over seeds, under "as spiky as MLP-only" each top-1 count is as likely to come from
    # either variant.
    for r in ablation["attn-only"]:
        claim.record(
            f"attn-only seed {r.seed}: top count {r.top1.count}/{r.top1.n}, log10 p vs uniform (head's null: "
            f"{r.null_log10_p:.2f})",
            r.top1.log10_p,
            source=SOURCE_ATTN_ONLY_P,
        )
    count = {v: sum(r.top1.count for r in runs) for v, runs in ablation.items()}
    p_flat = stats.binomial_p(count["attn-only"], count["attn-only"] + count["mlp-only"], 0.5, alternative="less")
    p_ctl = stats.binomial_p(count["full"], count["full"] + count["mlp-only"], 0.5, alternative="less")
    claim.check(
        f"one-sided binomial p: attn-only top-1 counts ({count['attn-only']}) below MLP-only's ({count['mlp-only']})",
        float(p_flat),
        ALPHA,
        compare="le",
        why="flat relative to MLP-only at 0.05",
        control=float(p_ctl),
        control_name=f"full ({count['full']}) against MLP-only",
    )
    for v in ("mlp-only", "full"):
        claim.check(
            f"{v} histogram: largest log10 p over seeds (head's null)",
            max(r.null_log10_p for r in ablation[v]),
            math.log10(ALPHA),
            compare="le",
            why="spiky: significant at 0.05 in every seed",
            control=max(r.null_log10_p for r in ablation["attn-only"]),
            control_name="attn-only",
        )
    # Ordering full > MLP-only > attn-only in every seed (paired: same seed index).
    claim.check(
        "smallest per-seed (full − MLP-only) avg sim",
        float((final["full"] - final["mlp-only"]).min()),
        0.0,
        compare="ge",
        why="Table 2's order: full above MLP-only in every seed",
    )
    claim.check(
        "smallest per-seed (MLP-only − attn-only) avg sim",
        float((final["mlp-only"] - final["attn-only"]).min()),
        0.0,
        compare="ge",
        why="Table 2's order: MLP-only above attn-only in every seed",
    )
    claim.figure(
        figures.fig3_ablation_histograms({v: runs[0] for v, runs in ablation.items()}, uniform_baseline[0]), "fig3"
    )
    claim.figure(figures.table2_bars({v: final[v].mean() for v in final}, SOURCE_TABLE2), "table2")
    mlp = ablation["mlp-only"]
    claim.figure(
        figures.fig4_mlp_only(np.mean([r.layer_cosine for r in mlp], 0), np.mean([r.layer_cosine_std for r in mlp], 0)),
        "fig4",
    )


@pytest.mark.policy_dtype
@pytest.mark.claim("BB-3.2a")
def test_attention_amplifies_mlp_contraction_layer_by_layer(claim, ablation):
    """Controls: attn-only in place of full for "above MLP-only from block 2 on"; the gap in a
    shuffled block order for the widening trend; MLP-only for attn-only's "≈ 0"."""
    curves = init_bias.ablation_curves(ablation)
    full, mlp, attn = (curves[v].values for v in ("full", "mlp-only", "attn-only"))
    gap = full - mlp  # (seeds, L)
    claim.record("full − MLP-only at block 2 (mean over seeds)", gap[:, 1].mean())
    claim.record(f"full − MLP-only at block {gap.shape[1]}", gap[:, -1].mean())
    claim.record("source at block 12 (Table 2): full − MLP-only", SOURCE_TABLE2["full"] - SOURCE_TABLE2["mlp-only"])
    claim.check(
        "smallest full − MLP-only over blocks ≥ 2 and seeds",
        float(gap[:, 1:].min()),
        0.0,
        compare="ge",
        why="full above MLP-only from block 2 on, in every seed",
        control=float((attn - mlp)[:, 1:].min()),
        control_name="attn-only in place of full",
    )
    # Widening: the seed-mean gap rises over blocks 2…L (Kendall trend test at 5%), and in every
    # seed the gap at the last block exceeds the gap at block 2.
    g = gap[:, 1:].mean(0)
    tau = stats.kendall_tau(np.arange(len(g)), g)
    tau_ctl = stats.kendall_tau(np.random.default_rng(derive_seed("bb32a-shuffle")).permutation(len(g)), g)
    claim.check(
        "Kendall τ of the seed-mean gap over blocks 2…L", tau.statistic, 0.0, compare="ge", why="a widening gap"
    )
    claim.check(
        "Kendall p of that trend",
        tau.p,
        ALPHA,
        compare="le",
        why="trend at 5%",
        control=tau_ctl.p,
        control_name="the same gaps against a shuffled block order",
    )
    claim.check(
        "smallest (gap at block L − gap at block 2) over seeds",
        float((gap[:, -1] - gap[:, 1]).min()),
        0.0,
        compare="ge",
        why="wider at the end in every seed",
    )
    claim.check(
        "attn-only max |cosine| over blocks and seeds",
        float(np.abs(attn).max()),
        0.0,
        compare="abs",
        tol=0.01,
        why="≈ 0 (see BB-3's ATTN_ZERO)",
        control=float(np.abs(mlp).max()),
        control_name="MLP-only",
    )
    claim.figure(figures.fig7_layerwise(curves), "fig7")


# =========================================================================== 001 §4.2: LN and GELU


@pytest.fixture(scope="module")
def gelu_spread(profile, device):
    return init_bias.gelu_input_spread(device=device, **profile.sizes("bb_4_1"))


SOURCE_GELU_STD = catalogue.number("BB-4.1", "gelu_std")  # 001 Finding 4.1 / Fig 6
GELU_ENGAGED = 0.5  # gelu_asymmetry: half of ReLU's (1), the source's asymmetric reference
CONTRACTED = 0.05  # inter-sequence cosine of the MLP output


@pytest.mark.claim("BB-4.1")
def test_layernorm_engages_gelu_asymmetry(claim, gelu_spread):
    """What LayerNorm adds, asserted on the same weights with and without it (the control): its
    GELU inputs reach the asymmetric range — GELU's even part u·(Φ(u) − ½) at least half its odd
    part u/2 in rms (init_bias.gelu_asymmetry: 0 where GELU is linear, 1 for ReLU) — and, "which
    in turn", the MLP output's inter-sequence cosine is clearly positive: ≥ 0.05, where GELU at
    half ReLU's asymmetry (σ ≈ 0.4) gives ≈ 0.07 in closed form, > 100 standard errors of
    independent outputs' cosine at our N and d, and a sixth of ReLU MLP0's 1/π. The source's stds
    (0.55 / 0.011) are App B.1's init formula (0.02·√d and 0.02²·√d: LN(x) has unit variance,
    raw embeddings 0.02) and are shown as context only."""
    th = gelu_spread.theory
    d = gelu_spread.sizes["d_model"]
    for key in ("norm", "nonorm"):
        c = gelu_spread.std[key]
        claim.record(
            f"GELU input std, {'with' if key == 'norm' else 'without'} LN (d={d}); "
            f"App B.1's formula {'0.02·√d' if key == 'norm' else '0.02²·√d'} = {th[key]:.4g}",
            c.mean[0],
            source=SOURCE_GELU_STD[key],
        )
    a, c = gelu_spread.asymmetry, gelu_spread.cosine
    claim.figure(figures.fig6_gelu(gelu_spread), "fig6")
    claim.check(
        "GELU asymmetry (rms even / odd part) of its inputs with LN, smallest over models",
        float(a["norm"].values.min()),
        GELU_ENGAGED,
        compare="ge",
        why="in GELU's asymmetric range: at least half as asymmetric as ReLU (1)",
        control=float(a["nonorm"].values.max()),
        control_name="the same weights without LN",
    )
    claim.check(
        "MLP output inter-sequence cosine with LN, smallest over models",
        float(c["norm"].values.min()),
        CONTRACTED,
        compare="ge",
        why="'which in turn causes contraction' (see docstring)",
        control=float(c["nonorm"].values.max()),
        control_name="the same weights without LN",
    )


# =========================================================================== 001 §4.4: Prop 5, Fig 8


@pytest.fixture(scope="module")
def intra(profile, device):
    s = profile.sizes("bb_5")
    return [
        init_bias.intra_sequence_stack(device=device, **{**s, "T": T, "n_seq": n}) for T, n in zip(s["T"], s["n_seq"])
    ]


# Fig 8's "close overlap" of standard attention and Attn0: at App B.1's init the attention
# logits have std ≈ 0.3, so softmax weights deviate from uniform by ~e^{s²}−1 ≈ 10% and the
# random W_V W_O mixes channels; we allow 0.05 in intra-sequence cosine (a tenth of its range
# over the first layers) on top of 4 SE.
OVERLAP_TOL = 0.05
TOWARD_ONE = 0.9  # "converges toward 1" (Fig 8): within 0.1 of 1 after the last layer


@pytest.mark.claim("BB-5")
def test_stacked_attention_contracts_within_sequences(claim, intra):
    """Control (the null of Finding 5, §4.4: "the aggregation of value vectors in self-attention
    contracts token representations"): the same stacks without the averaging — every token
    attends to itself alone, so each layer is x_i ↦ W_O W_V LN(x_i) with the same weights, norms
    and depth — through the same "toward 1" comparison. Whatever contracts without mixing
    positions (LayerNorm, the product of random projections) would pass it; context: its mean
    |cosine| (alignment up to sign) and the inputs' cosine (zero layers)."""
    for res in intra:
        s, a, null = res.standard, res.attn0, res.no_averaging
        claim.record(f"T={res.T}: inputs' cosine (0 layers)", float(res.inputs.mean()))
        claim.record(
            f"T={res.T}: without the averaging, mean |cosine| after {len(null.mean)} layers (up to sign)",
            float(res.no_averaging_abs.mean()),
        )
        diff = np.abs(s.mean - a.mean)
        tol = OVERLAP_TOL + Z * np.sqrt(s.sem**2 + a.sem**2)
        worst = int(np.argmax(diff - tol))
        claim.record(
            f"T={res.T}: standard attention cosine after 1 → {len(s.mean)} layers",
            f"{s.mean[0]:.3f} → {s.mean[-1]:.4f}",
        )
        claim.check(
            f"T={res.T}: |standard − Attn0| at the worst layer ({worst + 1})",
            float(diff[worst]),
            0.0,
            compare="abs",
            tol=float(tol[worst]),
            why=f"{OVERLAP_TOL} (see module) + {Z:g} SE, at every layer",
        )
        claim.check(
            f"T={res.T}: smallest per-layer rise (standard)",
            float(np.diff(s.mean).min()),
            0.0,
            compare="ge",
            why="monotone in depth",
        )
        claim.check(
            f"T={res.T}: standard attention cosine after {len(s.mean)} layers",
            float(s.mean[-1]),
            TOWARD_ONE,
            compare="ge",
            why="'converges toward 1' (Fig 8): within 0.1 of 1",
            control=float(null.mean[-1]),
            control_name=f"the same {len(null.mean)} layers without the averaging (attention = identity)",
        )
    short, long_ = intra[0], intra[-1]
    claim.check(
        f"smallest per-layer (T={short.T} minus T={long_.T}) cosine",
        float((short.standard.mean - long_.standard.mean).min()),
        0.0,
        compare="ge",
        why="shorter T contracts faster, at every layer",
    )
    closed = [init_bias.prop5_limit(l + 1) for l in range(1, len(short.standard.mean) + 1)]
    claim.figure(figures.fig8_intra_sequence(intra, closed), "fig8")


@pytest.mark.claim("BB-5")
def test_prop5_closed_form_indexing(claim, intra):
    """Indexing: L counts the input as a layer — the closed form for L matches L−1 averagings.
    At L = 2, 3 the finite-T effect (exact enumeration) is ≤ 0.003; allow 4 SE + 0.005. Control:
    the other indexing (L averagings) through the same comparison."""
    res = intra[-1]  # the source's long sequence (T = 512)
    mc = res.attn0  # after l averagings, l = 1 … L
    rows = []
    for L in range(2, len(mc.mean) + 1):
        cf = init_bias.prop5_limit(L)
        exact_lm1 = init_bias.attn0_exact(res.T, L - 1)[0]
        rows.append(
            [
                L,
                f"{cf:.4f}",
                f"{mc.mean[L - 2]:.4f} ± {mc.sem[L - 2]:.4f}",
                f"{exact_lm1:.4f}",
                f"{mc.mean[L - 1]:.4f}" if L - 1 < len(mc.mean) else "—",
            ]
        )
    claim.table(
        f"Prop 5 at T={res.T}: closed form ρ̄′(L) vs Attn0 Monte Carlo (L−1 and L averagings) and exact enumeration",
        ["L", "closed form", "MC, L−1 averagings", "exact, L−1 (T finite)", "MC, L averagings"],
        rows,
    )
    for L in (2, 3):
        cf = init_bias.prop5_limit(L)
        claim.check(
            f"ρ̄′({L}) closed form vs MC after {L - 1} averagings (T={res.T})",
            float(mc.mean[L - 2]),
            cf,
            compare="abs",
            tol=float(Z * mc.sem[L - 2] + 0.005),
            why="4 SE + 0.005 finite-T allowance (exact enumeration at this T)",
            control=float(mc.mean[L - 1]),
            control_name=f"MC after {L} averagings (the other indexing)",
        )


# Prop 5's closed form ρ̄′(L) is the T → ∞ limit of the mean intra-sequence cosine after L−1
# averagings, and finite T approaches it slowly — the steps shrink like T^−1 after one averaging,
# T^−½ after three, and ever more slowly with depth (exact enumeration: after three averagings,
# whose limit is ρ̄′(4) = 0.938, 0.951 / 0.945 / 0.941 at T = 128 / 512 / 2048). So the closed form
# is compared with exact enumeration (infinite width; the Monte Carlo at T = 512 matches it, see
# the indexing test) at T = 256 … 2048, extrapolated to T → ∞ by Aitken's Δ² — only at depths
# where the approach has turned geometric (the step shrinks by ≤ 0.9 per doubling of T in both
# triplets; beyond, the remaining correction exceeds nine last steps and no extrapolation from
# these T is trustworthy). T = 16 is far from the limit at every depth and is context only.
ENUM_T = (256, 512, 1024, 2048)
GEOMETRIC = 0.9
APPROX_TOL = 0.01  # "≈": the closed form within 0.01, as in the source's "accurate for L ≥ 3"


@pytest.mark.claim("BB-5")
def test_prop5_closed_form_at_every_depth(claim, intra):
    """Where the T → ∞ limit is reachable (module comment), the extrapolated enumeration against
    the closed form (within 0.01 plus the extrapolation's own shift between triplets), and the
    source's approximation's gap 1 − ρ̄′ against the extrapolated gap (within a factor ~2, as the
    approximation is about the rate). Control: the other indexing (L averagings) through the
    closed-form comparison. Context: the approximation against the closed form at L = 12 (the
    source's own gap), and the T = 16 Monte Carlo against both."""
    n_max = len(intra[-1].attn0.mean)  # averagings (layers) in the Monte Carlo
    exact = {T: init_bias.attn0_exact_depths(T, n_max) for T in ENUM_T}
    rows, compared = [], []
    for L in range(3, n_max + 1):
        n = L - 1  # averagings
        x = [exact[T][n - 1] for T in ENUM_T]
        a, b = init_bias.extrapolate_doublings(*x[:3]), init_bias.extrapolate_doublings(*x[1:])
        ok = 0 < a.ratio <= GEOMETRIC and 0 < b.ratio <= GEOMETRIC
        cf, approx = init_bias.prop5_limit(L), init_bias.prop5_approx(10**12, L)
        rows.append(
            [
                L,
                f"{cf:.4f}",
                f"{approx:.4f}",
                *[f"{v:.4f}" for v in x],
                f"{b.ratio:.3f}",
                f"{b.limit:.4f}" if ok else "not reached",
            ]
        )
        if ok:
            compared.append((L, cf, approx, b, abs(b.limit - a.limit)))
    claim.table(
        "Prop 5: closed form, the source's approximation (T → ∞) and exact enumeration after L−1 averagings",
        [
            "L",
            "closed form",
            "1 − 1/L²",
            *[f"exact, T={T}" for T in ENUM_T],
            "step ratio per doubling",
            "extrapolated T → ∞",
        ],
        rows,
    )
    L12 = init_bias.prop5_limit(12)
    claim.record(
        "the source's own approximation vs its closed form at L = 12: 1 − 1/L² vs ρ̄′(12)",
        f"{init_bias.prop5_approx(10**12, 12):.4f} vs {L12:.4f} (gap 1 − ρ̄′: {1 / 144:.4f} vs {1 - L12:.4f}, "
        f"ratio {(1 / 144) / (1 - L12):.2f})",
    )
    short = intra[0]
    claim.record(
        f"context, T={short.T} (finite T: the limit does not apply): MC after {n_max - 1} averagings − ρ̄′({n_max})",
        float(short.attn0.mean[n_max - 2] - init_bias.prop5_limit(n_max)),
    )
    claim.record(
        f"depths where the T → ∞ limit is reached from T ≤ {ENUM_T[-1]}",
        f"L = {compared[0][0]} … {compared[-1][0]} (of 3 … {n_max})" if compared else "none",
    )
    for L, cf, approx, ext, shift in compared:
        control = {}
        if L == compared[0][0]:
            other = init_bias.extrapolate_doublings(*[exact[T][L - 1] for T in ENUM_T[1:]])
            control = dict(control=other.limit - cf, control_name=f"{L} averagings (the other indexing), extrapolated")
        claim.check(
            f"L={L}: extrapolated exact enumeration (T → ∞) − closed form",
            ext.limit - cf,
            0.0,
            compare="abs",
            tol=APPROX_TOL + shift,
            why=f"'≈' within {APPROX_TOL}, plus the extrapolation's shift between triplets ({shift:.1g})",
            **control,
        )
        claim.check(
            f"L={L}: (1 − approx) / (1 − extrapolated), T → ∞",
            (1 - approx) / (1 - ext.limit),
            1.0,
            compare="abs",
            tol=0.5,
            why="the approximation is about the rate 1 − ρ̄′ ∝ 1/L²: within a factor ~2",
        )
