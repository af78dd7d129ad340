"""The RS claims: what each states, where its source states it, and the source's numbers.

Residual stream (002). One :class:`ClaimSpec` per claim ID, in CLAIMS.md's order; ``NUMBERS``:
every number of the source a claim test or a figure of this topic compares against, each with
its citation, read through :func:`number` (here, in the topic) or
``repro.harness.catalogue.number`` (the registry that collects every topic's entries). The
source is a course page: headings, no numbered sections.
"""

from __future__ import annotations

from repro.ground.sources import ClaimSpec, SourceNumber, lookup, source

TOPIC = "RS"
TITLE = "Residual stream (002)"
NOTES = ""

CLAIMS: tuple[ClaimSpec, ...] = (
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
)

NUMBERS: dict[str, dict[str, SourceNumber]] = {
    "RS-1": {
        "terms": source(
            {(32, 32): 1057, (24, 16): 409},
            "002 Proposition “Residual Stream Decomposition”: 32 layers × 32 heads → 1 + 1024 + 32 = 1057; "
            "Exercise (Core): 24 layers × 16 heads (409 = 1 + 24·16 + 24, the exercise's answer)",
        )
    }
}


def number(claim_id: str, key: str):
    """The source's number (or table) ``key`` of ``claim_id``, a RS claim, e.g. the tests' and figures' references."""
    return lookup(NUMBERS, claim_id, key).value
