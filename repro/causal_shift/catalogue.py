"""The CS claims: what each states, where its source states it, and the source's numbers.

Causal shift (000). One :class:`ClaimSpec` per claim ID, in CLAIMS.md's order; ``NUMBERS``:
every number of the source a claim test or a figure of this topic compares against, each with
its citation, read through :func:`number` (here, in the topic) or
``repro.harness.catalogue.number`` (the registry that collects every topic's entries).
"""

from __future__ import annotations

from repro.ground.sources import ClaimSpec, SourceNumber, lookup, source

TOPIC = "CS"
TITLE = "Causal shift (000)"
NOTES = ""

CLAIMS: tuple[ClaimSpec, ...] = (
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
)

NUMBERS: dict[str, dict[str, SourceNumber]] = {
    "CS-1": {
        "switch": source(
            (17, 26),
            "000 §III, Fig. 2: Gemma-2-2B's transition occurs around layer 17, of its 26 (Table I): (layer, layers)",
        )
    },
    "CS-5": {
        "top_mass": source(1.0, "000 §IV, Fig. 5 caption: one layer 'attracts all the mass of the probability'"),
        "top_layer": source((11, 12), "000 §IV, Fig. 5 caption: the 11th of 12 layers: (layer, layers)"),
        "train_tokens": source(
            10e9,
            "000 §IV: every variant (the gate's too) is a 150M GPT-2-style model trained on 10B tokens of Fineweb-Edu",
        ),
    },
    "CS-6": {
        # The source's Table II as printed: per benchmark (baseline, fixed cut, gating). The scores
        # are higher-is-better (the caption's bold marks the best, gating in every row; the text:
        # gating "matches or surpasses baseline accuracy"), not perplexities.
        "table2": source(
            {
                "wikitext": (28.46, 28.62, 28.75),
                "lambada": (32.99, 33.38, 33.52),
                "openwebtext": (34.74, 34.84, 35.50),
                "fineweb-edu": (38.87, 38.98, 39.19),
            },
            "000 §IV, Table II: benchmark → (baseline, fixed-cut, gating) scores, higher is better",
        )
    },
}


def number(claim_id: str, key: str):
    """The source's number (or table) ``key`` of ``claim_id``, a CS claim, e.g. the tests' and figures' references."""
    return lookup(NUMBERS, claim_id, key).value
