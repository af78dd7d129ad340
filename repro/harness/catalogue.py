"""Catalogue of every claim the suite encodes, self-contained.

One :class:`ClaimSpec` per claim ID of the shared ``CLAIMS.md``, in its order, so that a
report (claims.json, report.md, the terminal table) can say what each ID means, where the
source states it and what number it gives, without the shared documents at hand.

``section`` was located by reading the source document itself (``seeds/<source>.txt``);
``statement``, ``source_values`` and ``notes`` follow ``CLAIMS.md``. A location prefix of a
``CLAIMS.md`` statement ("Prop 4 / Table 3:", "§2.3, Fig 3:") lives in ``section`` instead,
and the shared doc's advice on how to test a claim ("test it: …", "Derivable: …") in
``notes``. ``tests/test_catalogue.py`` checks the IDs (and the source values) against
``CLAIMS.md`` whenever that file is present.

:data:`NUMBERS` holds the sources' numbers themselves — every number a claim test or a figure
compares against or draws as the source's reference (Table 1, Table 2, Table 7, 58.5×, SF-7's
2.47 → 2.74, …), keyed by claim ID, each with its citation; claims and figures read them with
:func:`number` and define no copy of their own (``tests/test_catalogue.py`` scans for one).

Stdlib only: the pytest plugin imports this at collection time.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

#: Well-formed claim IDs: two-letter topic, number, optional ".n", optional letter
#: ("BB-4", "BB-4.2", "BB-3.2a", "BB-1x", "SF-10").
ID_PATTERN = re.compile(r"^(?P<topic>[A-Z]{2})-\d+(?:\.\d+)?[a-z]?$")


@dataclass(frozen=True)
class ClaimSpec:
    id: str  # "BB-4.2"
    topic: str  # "BB" (the ID's prefix, a key of TOPICS)
    source: str  # seed file stem, a key of SOURCES
    section: str  # where the source states it: "§4.3, Def. 3, Table 3, Prop. 4; App. A.2"
    statement: str  # one line, plain text
    source_values: str  # the source's numbers as CLAIMS.md gives them ("" if none)
    notes: str = ""  # "notes for our scale" (and testing advice) from CLAIMS.md

    @property
    def ref(self) -> str:
        """Short citation, e.g. ``001 §4.3, Def. 3, Table 3, Prop. 4; App. A.2``."""
        return f"{self.source.split('_', 1)[0]} {self.section}"


SOURCES: dict[str, str] = {
    "000_1f8d71c89e1cba16": (
        "Input–output alignment shift in causal LMs and residual attenuation/gating (causal-shift)"
    ),
    "001_30830f2cef648f58": (
        "Transformers Are Born Biased: Structural Inductive Biases at Random "
        "Initialization and Their Practical Consequences"
    ),
    "002_99105bcf00933aee": "Residual Stream and Transformer Internals (LLM Construction notes)",
    "003_cbe8077a37f546e7": "Spectral Filters, Dark Signals, and Attention Sinks",
    "004_5cfc762cf7f04663": "Rethinking causal mask: proposing context axis to decoder-attention",
}

TOPICS: dict[str, str] = {
    "BB": "Born biased: random-init structure (001 §3–4)",
    "SP": "SeedPrint fingerprinting (001 §6.1, App B.3)",
    "SK": "Attention sinks from positional variance (001 §6.2)",
    "CS": "Causal shift (000)",
    "RS": "Residual stream (002)",
    "SF": "Spectral filters and dark signals (003)",
    "CA": "Context axis (004)",
}

#: Topic-wide definitions from CLAIMS.md that the single claims rely on.
TOPIC_NOTES: dict[str, str] = {
    "SP": (
        "Algorithm 1 of the source: top-m mean-output dims of each model, intersection = "
        "identity dims, per-dim Kendall τ over n random inputs, one-sided t-test / "
        "Mann–Whitney U against a null built by the same pipeline on two N(0,I) matrices; "
        "same lineage iff p < 0.01. The authors' released code differs (bottom-k dims, row "
        "softmax at temperature 10, closed-form null p = 2·sf(z) with "
        "τ_std = √(2(2n+5)/(9n(n−1)))/√k); implement both and report both."
    ),
    "SF": (
        "Bands: split the right singular vectors of W_u (and W_e) into 20 bands of d/20 "
        "(band 1 largest singular values). Φ_{u,j:k} = V V^T over bands j..k; "
        "Ψ_k = I − Φ_{e,k+1:20}Φ_{u,k+1:20} (Ψ_20 = I); Ω_{u,k} keeps bands 1..k plus band "
        "20. U-dark = band 20 (last 5%). With tied embeddings W_e = W_u, so Ψ reduces "
        "accordingly. Source's numbers are for LLaMA-2."
    ),
    "CA": (
        "In slice c, positions ≤ c attend to each other bidirectionally and never see "
        "positions > c, through every layer. So the diagonal output at t equals the last "
        "position of a bidirectional pass over the prefix x[0..t] — an exact oracle for tests."
    ),
}

CLAIMS: tuple[ClaimSpec, ...] = (
    # ---- BB — born biased: random-init structure (001 §3–4) ----
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
    # ---- SP — SeedPrint fingerprinting (001 §6.1, App B.3) ----
    ClaimSpec(
        id="SP-1",
        topic="SP",
        source="001_30830f2cef648f58",
        section="§6.1.2, Table 4a; App. B.3.3, Table 9 (Qwen)",
        statement="Models that differ only in init seed do not match",
        source_values="Table 4a: p 0.34–0.68 (t), 0.34–0.57 (U)",
    ),
    ClaimSpec(
        id="SP-2",
        topic="SP",
        source="001_30830f2cef648f58",
        section="§6.1.2, Table 4b; App. B.3.2, Table 8 (baselines); App. B.3.3, Table 10 (Qwen)",
        statement="A trained model matches its own initialisation",
        source_values="Table 4b: p 4e-10 … 5.6e-4 (t)",
    ),
    ClaimSpec(
        id="SP-3",
        topic="SP",
        source="001_30830f2cef648f58",
        section="§6.1.2, Table 4c; App. B.3.3, Table 11 (Qwen)",
        statement="Same data and same data order do not make different seeds match",
        source_values="Table 4c: p 0.035–0.43",
    ),
    ClaimSpec(
        id="SP-4",
        topic="SP",
        source="001_30830f2cef648f58",
        section="§6.1.2, Table 5; App. B.3.2 (baselines); App. B.3.3, Table 12 (Qwen)",
        statement=(
            "Lineage survives continual training on a shifted corpus (stories, code) while "
            "distractors from another seed do not match; weight/representation baselines "
            "(Intrinsic, REEF/CKA, PCS, ICS at 0.8) fail on the code shift"
        ),
        source_values="Table 5",
    ),
    ClaimSpec(
        id="SP-5",
        topic="SP",
        source="001_30830f2cef648f58",
        section="§6.1.2 (“From early training to finetuning”), Table 6",
        statement="Fine-tuned descendants of a pretrained model match it",
        source_values="Table 6: p 1e-100 … 2e-3",
        notes=(
            "our scale: fine-tunes of the embedded models vs the originals; the two embedded "
            "models vs each other must not match"
        ),
    ),
    ClaimSpec(
        id="SP-6",
        topic="SP",
        source="001_30830f2cef648f58",
        section="§6.1.1 (Resolve (3)), Alg. 1 step 8; App. B.3.1, Fig. 13",
        statement=(
            "The null is sound: correlations between independently initialised models are "
            "~Gaussian around 0, and the test's false-positive rate at α=0.01 is ≈ 1%"
        ),
        source_values="Fig 13, App B.3.1",
        notes="measure the false-positive rate over many independent pairs",
    ),
    # ---- SK — attention sinks from positional variance (001 §6.2) ----
    ClaimSpec(
        id="SK-1",
        topic="SK",
        source="001_30830f2cef648f58",
        section="§6.2.1 (Positional Amplification / Attenuation); eq. 2 (§4.4)",
        statement=(
            "Positional amplification (o_i·√i) and attenuation (o_i·√(i/T)) equalise the "
            "per-position output variance at init"
        ),
        source_values="§6.2.1",
    ),
    ClaimSpec(
        id="SK-2",
        topic="SK",
        source="001_30830f2cef648f58",
        section="§6.2.1 (sink-rate definition, second “Finding 7”), Fig. 12; App. B.4 (pre-training setup)",
        statement=(
            "After pretraining, the baseline has a high sink rate; attenuation gives ~0, "
            "amplification far lower than baseline. Sink rate (Gu et al.): α¹_{l,h} = mean over "
            "queries of attention to the first token; a head is a sink head if α¹ > ε; "
            "rate = share of sink heads. ε = 0.25 in the source"
        ),
        source_values="Fig 12: lengths 32–512, 100 WikiText-2 sequences",
        notes="Gu et al.'s code uses ε = 0.3; make ε a parameter and report both",
    ),
    ClaimSpec(
        id="SK-3",
        topic="SK",
        source="001_30830f2cef648f58",
        section="§6.2.2, Table 7",
        statement="The interventions do not hurt language modelling",
        source_values=(
            "Table 7 PPL: baseline 21.33 / 30.36, amplification 21.95 / 28.70, attenuation "
            "21.02 / 30.48 (WikiText-2 / C4)"
        ),
    ),
    ClaimSpec(
        id="SK-4",
        topic="SK",
        source="001_30830f2cef648f58",
        section="§6.2.1 (sink-rate metric only; the source reports no value for these models)",
        statement=("(context) sink rate of the embedded real models on real text, as a reference point"),
        source_values="",
    ),
    # ---- CS — causal shift (000) ----
    ClaimSpec(
        id="CS-1",
        topic="CS",
        source="000_1f8d71c89e1cba16",
        section="§III, Table I, Fig. 2",
        statement=(
            "Logit lens over a tied dictionary: early layers decode (top-5) to the input token, "
            "late layers to the next token; the switch is deep in the network"
        ),
        source_values=("Fig 2: Gemma-2-2B, 1000 WikiText sequences, switch ≈ layer 17 of 26; Table I"),
    ),
    ClaimSpec(
        id="CS-2",
        topic="CS",
        source="000_1f8d71c89e1cba16",
        section="§III, Fig. 3",
        statement=(
            "Continuous measures agree across models: cosine to input embedding falls, cosine to "
            "output embedding rises, normalised projection on the input→output axis goes 0 → 1"
        ),
        source_values="Fig 3 (Gemma-2-2B, Llama-3.2-3B, Mistral-7B)",
    ),
    ClaimSpec(
        id="CS-3",
        topic="CS",
        source="000_1f8d71c89e1cba16",
        section="§IV (residual attenuation equation and the paragraph after it)",
        statement=("Residual attenuation x_{l+1} = α·x_l + F_l(LN(x_l)); α = 0 (no skip) degrades optimisation"),
        source_values="§IV",
    ),
    ClaimSpec(
        id="CS-4",
        topic="CS",
        source="000_1f8d71c89e1cba16",
        section="§IV (fixed residual attenuation), Fig. 4",
        statement=(
            "Single-layer fixed cut, ablated at each of 12 layers: cutting the first layer "
            "improves validation loss; cut placement is highly sensitive; a late cut is second "
            "best"
        ),
        source_values="Fig 4 (GPT-2 150M, 10B tokens)",
    ),
    ClaimSpec(
        id="CS-5",
        topic="CS",
        source="000_1f8d71c89e1cba16",
        section="§IV (learned gating), Fig. 5 (caption: the 11th layer; text: “the final layer”)",
        statement=(
            "Learned gating (distribution over layers, uniform at init) concentrates its mass on "
            "one late layer (11th of 12)"
        ),
        source_values="Fig 5",
    ),
    ClaimSpec(
        id="CS-6",
        topic="CS",
        source="000_1f8d71c89e1cba16",
        section="§IV, Table II (columns: baseline / fixed-cut / gating); §V",
        statement="Gating ≥ fixed cut ≥ baseline on held-out benchmarks",
        source_values="Table II: e.g. WikiText 28.46 / 28.62 / 28.75",
    ),
    # ---- RS — residual stream (002; a course page: headings, no numbered sections) ----
    ClaimSpec(
        id="RS-1",
        topic="RS",
        source="002_99105bcf00933aee",
        section="Main Theorems: Proposition “Residual Stream Decomposition”; Exercise (Core): 24 layers × 16 heads",
        statement=(
            "The final residual is exactly the sum of 1 + L·H + L terms: embedding, every head's "
            "output, every FFN's output"
        ),
        source_values="32L×32H → 1057; 24L×16H → 409",
    ),
    ClaimSpec(
        id="RS-2",
        topic="RS",
        source="002_99105bcf00933aee",
        section="“Direct Logit Attribution” (DLA_{l,h}(v) = u_vᵀ·a_{t,l,h} and the total-logit sum)",
        statement=(
            "Direct logit attribution: with the final norm's scale frozen, per-component dot "
            "products with u_v sum to the logit"
        ),
        source_values="",
    ),
    ClaimSpec(
        id="RS-3",
        topic="RS",
        source="002_99105bcf00933aee",
        section="“Pre-Norm vs Post-Norm”: Proposition “Pre-Norm Gradient Flow”; Exercise (Advanced): depth 48+",
        statement=(
            "Pre-norm keeps an identity gradient path; post-norm does not, so deep post-norm "
            "stacks (48+) lose gradient at early layers"
        ),
        source_values="",
    ),
    ClaimSpec(
        id="RS-4",
        topic="RS",
        source="002_99105bcf00933aee",
        section="“Pre-Norm vs Post-Norm”: Proposition “Pre-Norm Gradient Flow”, Failure Mode",
        statement="Pre-norm residual norm grows with depth",
        source_values="",
    ),
    ClaimSpec(
        id="RS-5",
        topic="RS",
        source="002_99105bcf00933aee",
        section="“FFN as Key-Value Memory” (Geva et al. 2021)",
        statement="FFN(x) = Σ_i max(w1_i·x, 0)·w2_i exactly (key–value memory view)",
        source_values="",
    ),
    ClaimSpec(
        id="RS-6",
        topic="RS",
        source="002_99105bcf00933aee",
        section="“Logit Lens” (definition and the paragraph after it)",
        statement="Logit lens: the correct next token's rank improves toward 1 with depth",
        source_values="",
    ),
    ClaimSpec(
        id="RS-7",
        topic="RS",
        source="002_99105bcf00933aee",
        section="“Attention Head Composition” (K-composition, induction heads)",
        statement=(
            "Composition: induction needs two attention layers (K-composition); a one-layer "
            "attention-only model cannot learn it, a two-layer one can"
        ),
        source_values="",
    ),
    ClaimSpec(
        id="RS-8",
        topic="RS",
        source="002_99105bcf00933aee",
        section="Common Confusions: “The logit lens is approximate, not exact” (tuned lens, Belrose et al. 2023)",
        statement=(
            "A tuned lens (one affine probe per layer) decodes intermediate layers better than "
            "the logit lens (lower KL to the final distribution)"
        ),
        source_values="",
    ),
    # ---- SF — spectral filters and dark signals (003; source's numbers for LLaMA-2) ----
    ClaimSpec(
        id="SF-1",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§3, Fig. 3, footnote 1",
        statement=(
            "The unembedding spectrum has one large leading singular value then a long flat tail "
            "that drops only at the very end; the top singular vector tracks token frequency"
        ),
        source_values="Fig 3",
    ),
    ClaimSpec(
        id="SF-2",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§3, eq. 1, Figs. 4–5",
        statement=(
            "Some components are equipped to read/write the dark subspace (eq. 1 projection "
            "norms); an early MLP writes mostly dark"
        ),
        source_values="Fig 4, 5",
    ),
    ClaimSpec(
        id="SF-3",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§4 (filters, eq. 2; ccnet-405), §4.1, Figs. 7–8; App. C, Fig. 19",
        statement=(
            "Filtering the residual after an early layer with Φ_{u,1:k}: NLL stays poor until "
            "the last (dark) band is included — a step at k = 20; filtering is worse than "
            "removing the same number of random directions"
        ),
        source_values="Fig 7, 8 (ccnet-405: 405 prompts, 13,268 tokens)",
    ),
    ClaimSpec(
        id="SF-4",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§5, Fig. 9; App. C, Fig. 18 (70B)",
        statement=(
            "The BoS/token-0 residual gets a large, almost entirely U-dark vector from an early "
            "MLP, kept until the last layers"
        ),
        source_values="Fig 9 (13B: MLP at L3)",
    ),
    ClaimSpec(
        id="SF-5",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§5, Fig. 10, Fig. 11 (left)",
        statement=(
            "Shavings swap (swap the filtered-out part with another sample at the same position; "
            "token 0 untouched) removes the step"
        ),
        source_values="Fig 10, 11 left",
    ),
    ClaimSpec(
        id="SF-6",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§5, Fig. 11 (middle)",
        statement="Filtering only token 0 shows the step",
        source_values="Fig 11 middle",
    ),
    ClaimSpec(
        id="SF-7",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§6, eq. 3, Fig. 11 (right), Figs. 12–13",
        statement=("Sink-preserving Ω filters keep NLL low while removing much of the spectrum"),
        source_values="Fig 13: 2.47 → 2.74 removing 25% with Ω_{u,14} after L12",
    ),
    ClaimSpec(
        id="SF-8",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§6.1, Table 2; App. E, Tables 4–5",
        statement=("Generations: Ψ filtering at early layers degenerates into repetition; Ω stays coherent"),
        source_values="Tables 2, 4, 5",
    ),
    ClaimSpec(
        id="SF-9",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="§7, eqs. 4–5, Fig. 15; App. F, Fig. 22",
        statement=(
            "High-mean low-variance attended tokens (mean > 0.018, var < 0.01) have higher U-dark "
            "ratio udr = ‖Φ_{u,20}h‖/‖(I−Φ_{u,20})h‖ and higher key dot product with token 0 "
            "than the population"
        ),
        source_values="Fig 15, 22",
    ),
    ClaimSpec(
        id="SF-10",
        topic="SF",
        source="003_cbe8077a37f546e7",
        section="App. D, eq. 6, Fig. 21",
        statement=(
            "Token 0's residual projected through W_v·W_o has much smaller norm than other tokens', for every head"
        ),
        source_values="App D, Fig 21",
    ),
    # ---- CA — context axis (004; a proposal without measurements) ----
    ClaimSpec(
        id="CA-1",
        topic="CA",
        source="004_5cfc762cf7f04663",
        section="§2.1, Algorithm 1",
        statement=(
            "Algorithm 1 builds M = max(C[None]·T[:,None], P), shape (B,1,S,S,S); M[c,i,j] = 1 "
            "(masked) iff j > max(i,c) or j is padding"
        ),
        source_values="",
    ),
    ClaimSpec(
        id="CA-2",
        topic="CA",
        source="004_5cfc762cf7f04663",
        section="§2.1, Fig. 1; §2.2, Fig. 2 (diagonal)",
        statement=("In slice c every token sees up to c; the diagonal slice i = c is the ordinary causal mask"),
        source_values="",
    ),
    ClaimSpec(
        id="CA-3",
        topic="CA",
        source="004_5cfc762cf7f04663",
        section="§2.2, Fig. 2; §3.1",
        statement=(
            "The diagonal read-out keeps the autoregressive constraint through any number of "
            "layers: output t never depends on tokens after t"
        ),
        source_values="",
    ),
    ClaimSpec(
        id="CA-4",
        topic="CA",
        source="004_5cfc762cf7f04663",
        section="§2.1 (no additional parameters), §2.2 (compatible with pretrained weights); §3.1",
        statement=("No new parameters; pretrained weights run unchanged in context-axis mode"),
        source_values="",
    ),
    ClaimSpec(
        id="CA-5",
        topic="CA",
        source="004_5cfc762cf7f04663",
        section="§2.3, Fig. 3",
        statement=("Zeroing the strictly-upper-triangular part (slices c < t) changes no diagonal output"),
        source_values="",
    ),
    ClaimSpec(
        id="CA-6",
        topic="CA",
        source="004_5cfc762cf7f04663",
        section="§2.3, Fig. 4",
        statement=(
            "Segment size k computes only k context slots per token and reuses the last one deeper; states O(S·k)"
        ),
        source_values="",
        notes="Derivable: k = 1 is exactly causal attention, k = S the full context axis",
    ),
    ClaimSpec(
        id="CA-7",
        topic="CA",
        source="004_5cfc762cf7f04663",
        section="§3.1 (L×L×L attention score matrix); §2.3 (sparsity at kernel level)",
        statement=("Cost grows with an S×S×S score tensor (vs S×S causal); sparsity brings it down"),
        source_values="",
        notes="measured in benchmarks/",
    ),
    ClaimSpec(
        id="CA-8",
        topic="CA",
        source="004_5cfc762cf7f04663",
        section="§1 (stochastic axis drop, segment-level refinement); §3.1 (training–inference mismatch; no empirical validation); §3.2",
        statement=(
            "The proposal's untested premise — training with the context axis (with stochastic "
            "axis drop) gives better token representations"
        ),
        source_values="",
        notes=("test it: held-out NLL vs an identical causal model, under causal-only and segment-level inference"),
    ),
)


def _index(claims: tuple[ClaimSpec, ...]) -> dict[str, ClaimSpec]:
    index: dict[str, ClaimSpec] = {}
    for spec in claims:
        if spec.id in index:
            raise ValueError(f"duplicate claim ID in repro/harness/catalogue.py: {spec.id}")
        index[spec.id] = spec
    return index


CATALOGUE: dict[str, ClaimSpec] = _index(CLAIMS)


class UnknownClaimError(KeyError):
    """An ID that is not in the catalogue; the message lists close matches."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


def suggestions(claim_id: str, n: int = 5) -> list[str]:
    """Catalogue IDs close to ``claim_id`` (case-insensitive), best first."""
    by_upper = {key.upper(): key for key in CATALOGUE}
    query = claim_id.strip().upper()
    close = difflib.get_close_matches(query, list(by_upper), n=n, cutoff=0.5)
    if not close:  # e.g. "BB" or "SF-": list the topic's IDs
        topic = query.split("-", 1)[0]
        close = [key for key in by_upper if key.startswith(topic + "-")][:n]
    return [by_upper[key] for key in close]


def get(claim_id: str) -> ClaimSpec:
    """The spec of ``claim_id``; an unknown ID raises :class:`UnknownClaimError` (a KeyError)."""
    try:
        return CATALOGUE[claim_id]
    except (KeyError, TypeError):
        pass
    close = suggestions(str(claim_id))
    hint = f"did you mean {', '.join(close)}?" if close else f"topics are {', '.join(TOPICS)}."
    raise UnknownClaimError(
        f"unknown claim ID {claim_id!r}: {hint} All {len(CATALOGUE)} IDs are listed in repro/harness/catalogue.py."
    )


# ---------------------------------------------------------------- the sources' numbers
#
# Every number a claim test or a figure compares against, or draws as the source's reference,
# defined here once, with where the source states it. Claim files, figures and topic modules
# read them through `number(claim_id, key)` (the shapes are the ones the tests index: tuples
# and dict keys as the tests use them); quantities derived from them (ratios, steps, effects)
# are computed where they are used. Our thresholds are not source numbers and stay in the
# tests. Keyed by the claim that states the number; a test of another claim may read it
# (CS-4 reads CS-6's Table II, SK-1 reads BB-6's eq. 2).


@dataclass(frozen=True)
class SourceNumber:
    value: Any  # a number, a tuple, or a read-only mapping (a table)
    cite: str  # where the source states it: "001 §4.3, Table 3 (T = 128)"


def _n(value: Any, cite: str) -> SourceNumber:
    """A catalogue entry; a table (dict) is stored read-only, so no test can edit it."""
    return SourceNumber(MappingProxyType(dict(value)) if isinstance(value, dict) else value, cite)


NUMBERS: dict[str, dict[str, SourceNumber]] = {
    # ---- BB (001 §3–4)
    "BB-1": {
        "table1": _n(
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
        "fig1a": _n(
            (58.5, 2000),
            "001 §3, Finding 1, Fig. 1(a): the most preferred token 58.5× as frequent as the "
            "random baseline, N = 2,000 sequences: (ratio, N)",
        ),
    },
    "BB-1.2": {
        "table1c": _n(
            {(42, 64): 3.95, (42, 256): 6.20, (42, 1024): 6.35, (43, 64): 5.20, (43, 256): 7.45, (43, 1024): 10.20},
            "001 §3, Table 1(c) RoPE-enhanced 1.2B GPT-2 (24L, 32H, 2048d), N = 10,000: (seed, T) → top-1 freq. %",
        )
    },
    "BB-2.2": {
        "agreement": _n(
            0.76,
            "001 §4, Finding 2.2: 76% overlap of the contraction direction's token and the "
            "favourite, over 100 random models, N = 2,000, T = 1,024",
        )
    },
    "BB-3": {
        "table2": _n(
            {"full": 0.46, "attn-only": 1.11e-4, "mlp-only": 0.25},
            "001 §4.1, Table 2: average pairwise cosine of last-token representations per variant",
        ),
        "attn_only_p": _n(0.16, "001 §4.1, Table 2: p of the self-attention-only variant's token histogram"),
    },
    "BB-4": {"rho1": _n(1 / math.pi, "001 §4.2, Prop. 2 (App. A.1): ρ̄₁ = 1/π after one ReLU MLP0 block")},
    "BB-4.1": {
        "gelu_std": _n(
            {"norm": 0.55, "nonorm": 0.011},
            "001 §4.2, Finding 4.1, Fig. 6: GELU input std σ ≈ 0.55 with LayerNorm, σ ≈ 0.011 without",
        )
    },
    "BB-4.2": {
        "table3": _n(
            {"h": 0.31, "mlp_mlp": 0.49, ("attn_mlp", 128): 0.98},
            "001 §4.3, Table 3: average pairwise cosine, h = MLP0(x) 0.31, MLP0∘MLP0 0.49, Attn0∘MLP0 0.98 (T = 128)",
        )
    },
    "BB-6": {"eq2_slope": _n(-0.5, "001 §4.4, eq. 2: the std of o_i falls as 1/√i, a log-log slope of −½")},
    # ---- SP (001 §6.1)
    "SP-1": {
        "table4a": _n(
            {
                (42, 2000): (0.357, 0.532),
                (123, 42): (0.678, 0.565),
                (1000, 123): (0.363, 0.335),
                (2000, 1000): (0.434, 0.481),
            },
            "001 §6.1.2, Table 4a: (seed a, seed b) → p (t-test, U-test), s_a vs s_b at init",
        )
    },
    "SP-2": {
        "table4b": _n(
            {42: (2.20e-8, 6.28e-8), 123: (7.09e-6, 1.37e-5), 1000: (5.58e-4, 2.81e-3), 2000: (4.00e-10, 1.27e-9)},
            "001 §6.1.2, Table 4b: seed → p (t-test, U-test), s_init vs s_base",
        )
    },
    "SP-3": {
        "table4c": _n(
            {
                (123, 1000): (0.385, 0.486),
                (1000, 2000): (0.035, 0.096),
                (42, 123): (0.426, 0.337),
                (2000, 42): (0.388, 0.287),
            },
            "001 §6.1.2, Table 4c: (seed a, seed b) → p (t-test, U-test), s_a init vs s_b base",
        )
    },
    "SP-4": {
        "table5": _n(
            {"the_stack (1000)": (0.0, 3.09e-69), "the_stack (123)": (0.732, 0.831)},
            "001 §6.1.2, Table 5, The Stack rows: p (t-test, U-test) of the true descendant (seed 1000) "
            "and the distractor (seed 123)",
        ),
        "baselines_wrong": _n(
            4, "001 §6.1.2, Table 5: all four baselines (Intrinsic, REEF, PCS, ICS) misattribute The Stack pair"
        ),
        "stack_pcs": _n(0.585, "001 §6.1.2, Table 5, the_stack (1000): PCS of the true code descendant"),
    },
    "SP-5": {
        "table6_pcs": _n(
            {"Llama-2-finance-7B": 0.9979, "Vicuna-1.5-7B": 0.9985},
            "001 §6.1.2, Table 6: PCS of a fine-tune against Llama-2-7B",
        ),
        "table6_tokens": _n(
            {
                "Llama-2-finance-7B": 5e6,
                "Vicuna-1.5-7B": 370e6,
                "Wizardmath-7B": 1.8e9,
                "Meditron-7B": 48e9,
                "CodeLlama-7B": 500e9,
            },
            "001 §6.1.2, Table 6 and its text: fine-tuning tokens of each Llama-2-7B descendant (all "
            "matched, p < 0.01; PCS 1.0000 for WizardMath and Meditron)",
        ),
    },
    # ---- SK (001 §6.2)
    "SK-1": {
        "scaled_slope": _n(
            0.0,
            "001 §6.2.1: amplification (o_i·√i) and attenuation (o_i·√(i/T)) equalise the "
            "per-position variance: a flat std, log-log slope 0",
        )
    },
    "SK-3": {
        "table7": _n(
            {"baseline": (21.33, 30.36), "amplification": (21.95, 28.70), "attenuation": (21.02, 30.48)},
            "001 §6.2.2, Table 7 (nano LLaMA-2, OpenWebText): variant → PPL (WikiText-2, C4)",
        )
    },
    # ---- CS (000)
    "CS-1": {
        "switch": _n(
            (17, 26),
            "000 §III, Fig. 2: Gemma-2-2B's transition occurs around layer 17, of its 26 (Table I): (layer, layers)",
        )
    },
    "CS-5": {
        "top_mass": _n(1.0, "000 §IV, Fig. 5 caption: one layer 'attracts all the mass of the probability'"),
        "top_layer": _n((11, 12), "000 §IV, Fig. 5 caption: the 11th of 12 layers: (layer, layers)"),
        "train_tokens": _n(
            10e9,
            "000 §IV: every variant (the gate's too) is a 150M GPT-2-style model trained on 10B tokens of Fineweb-Edu",
        ),
    },
    "CS-6": {
        # The source's Table II as printed: per benchmark (baseline, fixed cut, gating). The scores
        # are higher-is-better (the caption's bold marks the best, gating in every row; the text:
        # gating "matches or surpasses baseline accuracy"), not perplexities.
        "table2": _n(
            {
                "wikitext": (28.46, 28.62, 28.75),
                "lambada": (32.99, 33.38, 33.52),
                "openwebtext": (34.74, 34.84, 35.50),
                "fineweb-edu": (38.87, 38.98, 39.19),
            },
            "000 §IV, Table II: benchmark → (baseline, fixed-cut, gating) scores, higher is better",
        )
    },
    # ---- RS (002)
    "RS-1": {
        "terms": _n(
            {(32, 32): 1057, (24, 16): 409},
            "002 Proposition “Residual Stream Decomposition”: 32 layers × 32 heads → 1 + 1024 + 32 = 1057; "
            "Exercise (Core): 24 layers × 16 heads (409 = 1 + 24·16 + 24, the exercise's answer)",
        )
    },
    # ---- SF (003, LLaMA-2)
    "SF-1": {"we_sv_ratio": _n(2.0, "003 §3: W_e's top singular value 'only twice as large as the second one'")},
    "SF-3": {
        "poor_nll": _n(
            9.0, "003 App. C: under Φ_e filters of 13B/L0/MLP 'log-likelihood remains poor (around 9)' (Fig. 16)"
        )
    },
    "SF-7": {
        "fig13": _n(
            (12 / 40, 2.47, 2.74),
            "003 §6, Fig. 13: Ω_u,14 after L12 of LLaMA-2 13B's 40 layers: NLL "
            "2.47 → 2.74: (relative depth, NLL before, NLL after)",
        ),
        "removed": _n(0.25, "003 §6, Fig. 13: Ω_u,14 suppresses 25% of the singular values"),
    },
    "SF-9": {
        "thresholds": _n(
            (0.018, 0.01),
            "003 §7: HMLV token-layer pairs have mean received attention above "
            "τ_μ = .018 and variance below τ_σ = .01: (τ_μ, τ_σ)",
        ),
        "skip_last": _n(4, "003 §7: the last 4 tokens of each sequence are ignored"),
        "ccnet405": _n(
            (405, 13268), "003 §4: ccnet-405, 405 English prompts (13,268 tokens) from CCNET: (prompts, tokens)"
        ),
        "pairs_13b": _n(
            (12236, 404748),
            "003 §7: 12,236 HMLV token-layer pairs for LLaMA-2 13B on ccnet-405 out of "
            "404,748 token-layer pairs considered: (HMLV, all)",
        ),
    },
    "SF-8": {
        "layers": _n(40, "003 §2, Table 1: LLaMA-2 13B (the model of Table 4) has 40 layers"),
        "table4": _n(
            {  # layer of 40 → (Ψ, Ω_u) generation
                3: (
                    "When, “b/3,on,h,a The “t The A,e,c,t,a,w,d, The,a,d,th, The,th, The, The,t,d, The,d, on,",
                    "Tuatara are one of the largest reptiles in the world and are native to New Zealand. However, due to predation, habitat loss and the introduction of mammalian predators, they are now limited to a few small islands. The tuatara is a small lizard-like re",
                ),
                5: (
                    "The first “tone” is the one, the first, the one, the first, the S, the first, the, the, the, the, the, the, the, the, the, the, the, the, the, the, the, the",
                    "A baby tuatara has been found for the first time in 200 years, according to a new study. Tuatara are lizard-like reptiles that can be traced back to the time of the dinosaurs, according to the study. The last time a tuat",
                ),
                7: (
                    ", in the, The , in the, the , in the, The , the , the, and , the , the, the, the, the, the, the, the, the, the, the, the, the,",
                    "Tuatara are lizard-like reptiles that can be traced back to the time of the dinosaurs. For the first time in 200 years, researchers have discovered a baby tuatara on mainland New Zealand. Researchers from Massey University in New",
                ),
                10: (
                    "a y/t, a right The half, but, the",
                    "The discovery was made by the Department of Conservation (DOC) and the University of Otago, which have been working on a project to monitor tuatara on the mainland. The last time a tuatara was found on the mainland was in the 1800s.",
                ),
                14: (
                    "Tuatara are lizard-like reptiles that can be traced back to the time of the dinosaurs. For the first time in 200 years, researchers have discovered a baby tuatara on mainland New Zealand. The E on a the, on the, the, at, 200, with, from, on, the",
                    "Tuatara are lizard-like reptiles that can be traced back to the time of the dinosaurs. For the first time in 200 years, researchers have discovered a baby tuatara on mainland New Zealand. The discovery of the tuatara, which is",
                ),
                27: (
                    "The newborn, which is only the 13th of its kind, was discovered on the “danger” Steph’, an, an, an, an, and the, and the, and the, and the, and the, and the, and the, and the, and the, and the, and the",
                    "This is the first time in 200 years that a baby tuatara has been found on the mainland of New Zealand. The discovery was made by a group of researchers led by the University of Otago. The tuatara was found on the east coast of the North Island,",
                ),
                36: (
                    "The Tuatara is an iconic New Zealand native. The reptiles can live for more than 100 years and are found on the main islands of the country and a few smaller islands. The last time a tuatara was born on the mainland was in 1895,",
                    "The discovery was made in a cave system in the remote Waitomo district, 300 kilometres south of Auckland. The young tuatara is about 10cm long and is the first recorded sighting of a juvenile tuatara on the mainland. The cave system is",
                ),
            },
            "003 App. E, Table 4 (LLaMA-2 13B, 80% retained, the Tuatara prompt): layer → (Ψ, Ω_u) generation",
        ),
    },
}


class UnknownNumberError(KeyError):
    """A (claim, key) with no number in NUMBERS; the message names the claim's known keys."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


def source_number(claim_id: str, key: str) -> SourceNumber:
    """The entry ``key`` of ``claim_id``: its value and citation. An ID unknown to the
    catalogue raises :class:`UnknownClaimError`, a key unknown to the claim
    :class:`UnknownNumberError` (both KeyErrors)."""
    spec = get(claim_id)
    entries = NUMBERS.get(spec.id, {})
    if key in entries:
        return entries[key]
    known = f"its keys are {', '.join(repr(k) for k in entries)}" if entries else "it has none"
    raise UnknownNumberError(
        f"no source number {key!r} for claim {spec.id}: {known}. "
        "The sources' numbers are in NUMBERS, repro/harness/catalogue.py."
    )


def number(claim_id: str, key: str) -> Any:
    """The source's number (or table) ``key`` of ``claim_id``, e.g. ``number("BB-1", "fig1a")``."""
    return source_number(claim_id, key).value


def cite(claim_id: str, key: str) -> str:
    """Where the source states ``number(claim_id, key)``."""
    return source_number(claim_id, key).cite
