"""The BB claims: what each states, where its source states it, and the source's numbers.

Born biased: random-init structure (001 §3–4). One :class:`ClaimSpec` per claim ID, in
CLAIMS.md's order; ``NUMBERS``: every number of the source a claim test or a figure of this
topic compares against, each with its citation, read through :func:`number` (here, in the topic)
or ``repro.harness.catalogue.number`` (the registry that collects every topic's entries).
"""

from __future__ import annotations

import math

from repro.ground.sources import ClaimSpec, SourceNumber, lookup, source

TOPIC = "BB"
TITLE = "Born biased: random-init structure (001 §3–4)"
NOTES = ""

CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="BB-1",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§3 (Finding 1, footnote 2), Fig. 1(a) (§1), Table 1(a); App. B.1 (init), App. B.2 (p-value)",
        statement=(
            "A randomly initialised GPT-style LM, fed uniform random token sequences, predicts "
            "one token far more often than chance; Bonferroni-corrected binomial p ≪ 0.05 (B.2 "
            "formula: p = min(1, V·P[X ≥ k_max]), X~Bin(N, 1/V))"
        ),
        source_values=(
            "Fig 1a: top token 58.5× the random baseline; Table 1(a) nano RoPE-GPT-2 "
            "(12L,12H,768d): top-1 freq 2.60–6.75%, p ≤ 4.6e-137"
        ),
        notes=(
            "GPT-style init of B.1 (N(0,0.02), residual projections 0.02/√(2L)); embedding and "
            "LM head fixed across seeds (footnote 2). Smaller d, L, N at ci scale"
        ),
    ),
    ClaimSpec(
        id="BB-1.1",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§3, Finding 1.1, Table 1(a)–(b)",
        statement=(
            "The preference holds across architectures, scales and lengths; LLaMA-style (RMSNorm+SwiGLU) is far weaker"
        ),
        source_values="Table 1(b) nano LLaMA-2: 0.06–0.09%, p 1.9e-6 … 3.2e-2",
        notes="parametrise arch ∈ {RoPE GPT-2 (LayerNorm+GELU), LLaMA}",
    ),
    ClaimSpec(
        id="BB-1.2",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§3, Finding 1.2, Table 1(a), (c)",
        statement="The larger the model and the longer the sequence, the more extreme the preference",
        source_values=("Table 1(c) 1.2B: 3.95→6.35% (seed 42), 5.20→10.20% (seed 43) from T=64 to 1024"),
        notes="trend across ≥3 lengths and ≥2 widths/depths",
    ),
    ClaimSpec(
        id="BB-1.3",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§3, Finding 1.3, Table 1; App. B.2 (embedding and LM head fixed across seeds)",
        statement="The favourite token is set by the init seed: different seeds, different top-1 IDs",
        source_values="Table 1: seed 42 vs 43 differ",
        notes="several seeds",
    ),
    ClaimSpec(
        id="BB-1x",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§5, Finding 1 (Extended), Fig. 10",
        statement=("The same extreme preference appears for which hidden dimension is largest at the final layer"),
        source_values="Fig 10",
    ),
    ClaimSpec(
        id="BB-2.1",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4, Finding 2.1, Fig. 2",
        statement=(
            "Inter-sequence contraction: pairwise cosine similarity of last-token representations "
            "across sequences grows with depth"
        ),
        source_values="Fig 2",
    ),
    ClaimSpec(
        id="BB-2.2",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4, Finding 2.2 (logits as in eq. 1, §2.1)",
        statement=(
            "The contraction direction (mean normalised last-token rep through W_U) points at the favourite token"
        ),
        source_values="76% agreement over 100 random models, N=2000, T=1024",
        notes="≥ 30 models at ci scale, report the rate with a CI",
    ),
    ClaimSpec(
        id="BB-3",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4.1, Findings 3.1–3.2, Fig. 3, Table 2",
        statement=(
            "Ablation (Gaussian inputs with the embedding's mean/std): attention-only no "
            "contraction, MLP-only contracts, full contracts most; token histogram flat / spiky "
            "/ most extreme"
        ),
        source_values=("Table 2: full 0.46 (p≈0), attn-only 1.11e-4 (p=0.16), MLP-only 0.25 (p≈0); Fig 3"),
    ),
    ClaimSpec(
        id="BB-3.2a",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4.3, Finding 3.2a, Fig. 7",
        statement=("Layer by layer, full > MLP-only from layer 2 on, gap widening; attn-only stays ~0"),
        source_values="Fig 7",
    ),
    ClaimSpec(
        id="BB-4",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4.2, Finding 4, Def. 1, Prop. 2, Fig. 5 (footnote 5); App. A.1, eq. 3",
        statement=(
            "Stacked ReLU MLP0 (no norm, no residual): ρ̄₁ = 1/π, ρ̄ₗ rises monotonically to 1 "
            "via the arc-cosine map ρ ↦ (√(1−ρ²) + (π − arccos ρ)ρ)/π; tanh keeps ρ̄ = 0"
        ),
        source_values="Prop 2, Fig 5",
        notes=(
            "Monte Carlo vs closed form, tolerance from the MC standard error; note Fig 5's late "
            "drop (vanishing variance)"
        ),
    ),
    ClaimSpec(
        id="BB-4.1",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4.2, Finding 4.1, Fig. 6",
        statement=(
            "LayerNorm pushes GELU inputs into its asymmetric range: pre-activation std ≈ 0.55 "
            "with LN vs ≈ 0.011 without"
        ),
        source_values="Fig 6",
        notes="under B.1 init",
    ),
    ClaimSpec(
        id="BB-4.2",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4.3, Def. 3, Table 3, Prop. 4; App. A.2",
        statement=("h = MLP0(x) → 0.31 (theory 1/π); MLP0∘MLP0 → 0.49 (theory 0.493); Attn0∘MLP0 → T/(T+π−1)"),
        source_values="Table 3: 0.31 / 0.49 / 0.98 at T=128",
        notes="parametrise T",
    ),
    ClaimSpec(
        id="BB-5",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4.4, Finding 5, Fig. 8, Prop. 5; App. A.3",
        statement=(
            "Stacked self-attention at init raises intra-sequence cosine similarity toward 1, "
            "faster for short T; uniform Attn0 tracks standard attention; "
            "E ρ̄′(T,L) ≈ 1 − (1 − 1/T)/L² for L ≥ 3; closed form "
            "ρ̄′(L) = (L−2)!/(2L−4)! Σ_{k=0}^{L−2} (L−2+k)!/k! (2/3)^{L−1−k}"
        ),
        source_values="Fig 8 (T=16, 512; L=12)",
        notes="check the closed form against Monte Carlo and state which layer indexing matches",
    ),
    ClaimSpec(
        id="BB-6",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§4.4, Finding 6, eq. 2, Fig. 9",
        statement=(
            "After value aggregation in a random-init causal attention block, the output std at "
            "position i falls as 1/√i; the first token is the outlier"
        ),
        source_values="Fig 9 (T=32): near-perfect overlap",
    ),
    ClaimSpec(
        id="BB-7",
        topic="BB",
        source="001_30830f2cef648f58",
        section="§5, Finding 7, Fig. 11",
        statement=(
            "Bias persists through training — correlation between an init model and its trained "
            "checkpoints on the top-m (m=50) biased dims stays above a different-seed baseline"
        ),
        source_values="Fig 11",
        notes="tiny models trained on the embedded corpus",
    ),
)

NUMBERS: dict[str, dict[str, SourceNumber]] = {
    "BB-1": {
        "table1": source(
            {  # (arch, seed, T) -> (top-1 id, top-1 freq %, p)
                ("rope-gpt2", 42, 64): (6336, 2.60, 4.55e-137),
                ("rope-gpt2", 42, 256): (30425, 4.85, 6.59e-285),
                ("rope-gpt2", 42, 1024): (666, 5.20, 6.75e-309),
                ("rope-gpt2", 43, 64): (7328, 3.00, 2.20e-162),
                ("rope-gpt2", 43, 256): (7328, 5.25, 2.42e-312),
                ("rope-gpt2", 43, 1024): (7328, 6.75, 0.0),
                ("llama", 42, 64): (18219, 0.06, 3.16e-2),
                ("llama", 42, 256): (19647, 0.06, 3.16e-2),
                ("llama", 42, 1024): (11048, 0.07, 1.40e-3),
                ("llama", 43, 64): (6479, 0.09, 1.90e-6),
                ("llama", 43, 256): (17743, 0.06, 3.16e-2),
                ("llama", 43, 1024): (21436, 0.07, 1.40e-3),
            },
            "001 §3, Table 1(a) RoPE-enhanced nano GPT-2 and (b) nano LLaMA-2 (12L, 12H, 768d), N = 10,000: "
            "(arch, seed, T) → (top-1 ID, top-1 freq. %, p); p 0.00 (underflow, †) as 0.0",
        ),
        "fig1a": source(
            (58.5, 2000),
            "001 §3, Finding 1, Fig. 1(a): the most preferred token 58.5× as frequent as the "
            "random baseline, N = 2,000 sequences: (ratio, N)",
        ),
    },
    "BB-1.2": {
        "table1c": source(
            {(42, 64): 3.95, (42, 256): 6.20, (42, 1024): 6.35, (43, 64): 5.20, (43, 256): 7.45, (43, 1024): 10.20},
            "001 §3, Table 1(c) RoPE-enhanced 1.2B GPT-2 (24L, 32H, 2048d), N = 10,000: (seed, T) → top-1 freq. %",
        ),
        "size_step": source(
            {"nano": (12, 768), "1.2B": (24, 2048)},
            "001 §3, Table 1(a) nano RoPE GPT-2 (12L, 768d) and Table 1(c) 1.2B GPT-2 (24L, 2048d): "
            "model → (n_layer, d_model)",
        ),
    },
    "BB-2.2": {
        "agreement": source(
            0.76,
            "001 §4, Finding 2.2: 76% overlap of the contraction direction's token and the "
            "favourite, over 100 random models, N = 2,000, T = 1,024",
        )
    },
    "BB-3": {
        "table2": source(
            {"full": 0.46, "attn-only": 1.11e-4, "mlp-only": 0.25},
            "001 §4.1, Table 2: average pairwise cosine of last-token representations per variant",
        ),
        "attn_only_p": source(0.16, "001 §4.1, Table 2: p of the self-attention-only variant's token histogram"),
    },
    "BB-4": {"rho1": source(1 / math.pi, "001 §4.2, Prop. 2 (App. A.1): ρ̄₁ = 1/π after one ReLU MLP0 block")},
    "BB-4.1": {
        "gelu_std": source(
            {"norm": 0.55, "nonorm": 0.011},
            "001 §4.2, Finding 4.1, Fig. 6: GELU input std σ ≈ 0.55 with LayerNorm, σ ≈ 0.011 without",
        )
    },
    "BB-4.2": {
        "table3": source(
            {"h": 0.31, "mlp_mlp": 0.49, ("attn_mlp", 128): 0.98},
            "001 §4.3, Table 3: average pairwise cosine, h = MLP0(x) 0.31, MLP0∘MLP0 0.49, Attn0∘MLP0 0.98 (T = 128)",
        )
    },
    "BB-6": {"eq2_slope": source(-0.5, "001 §4.4, eq. 2: the std of o_i falls as 1/√i, a log-log slope of −½")},
}


def number(claim_id: str, key: str):
    """The source's number (or table) ``key`` of ``claim_id``, a BB claim, e.g. the tests' and figures' references."""
    return lookup(NUMBERS, claim_id, key).value
