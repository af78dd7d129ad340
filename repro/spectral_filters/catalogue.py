"""The SF claims: what each states, where its source states it, and the source's numbers.

Spectral filters and dark signals (003). One :class:`ClaimSpec` per claim ID, in CLAIMS.md's
order; ``NUMBERS``: every number of the source a claim test or a figure of this topic compares
against, each with its citation, read through :func:`number` (here, in the topic) or
``repro.harness.catalogue.number`` (the registry that collects every topic's entries). The
source's numbers are for LLaMA-2.
"""

from __future__ import annotations

from repro.ground.sources import ClaimSpec, SourceNumber, lookup, source

TOPIC = "SF"
TITLE = "Spectral filters and dark signals (003)"
#: Topic-wide definitions from CLAIMS.md that the single claims rely on.
NOTES = (
    "Bands: split the right singular vectors of W_u (and W_e) into 20 bands of d/20 (band 1 largest "
    "singular values). Φ_{u,j:k} = V V^T over bands j..k; Ψ_k = I − Φ_{e,k+1:20}Φ_{u,k+1:20} (Ψ_20 = I); "
    "Ω_{u,k} keeps bands 1..k plus band 20. U-dark = band 20 (last 5%). With tied embeddings W_e = W_u, "
    "so Ψ reduces accordingly. Source's numbers are for LLaMA-2."
)

CLAIMS: tuple[ClaimSpec, ...] = (
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
)

NUMBERS: dict[str, dict[str, SourceNumber]] = {
    "SF-1": {"we_sv_ratio": source(2.0, "003 §3: W_e's top singular value 'only twice as large as the second one'")},
    "SF-3": {
        "poor_nll": source(
            9.0, "003 App. C: under Φ_e filters of 13B/L0/MLP 'log-likelihood remains poor (around 9)' (Fig. 16)"
        )
    },
    "SF-4": {
        "sink_mlp": source(
            (3, 40),
            "003 §5, Fig. 9: in LLaMA-2 13B (40 layers, Table 1) 'the MLP at L3 blasts off a vector of large "
            "norm and almost completely U-dark': (layer, layers)",
        )
    },
    "SF-7": {
        "fig13": source(
            (12 / 40, 2.47, 2.74),
            "003 §6, Fig. 13: Ω_u,14 after L12 of LLaMA-2 13B's 40 layers: NLL "
            "2.47 → 2.74: (relative depth, NLL before, NLL after)",
        ),
        "removed": source(0.25, "003 §6, Fig. 13: Ω_u,14 suppresses 25% of the singular values"),
    },
    "SF-9": {
        "thresholds": source(
            (0.018, 0.01),
            "003 §7: HMLV token-layer pairs have mean received attention above "
            "τ_μ = .018 and variance below τ_σ = .01: (τ_μ, τ_σ)",
        ),
        "skip_last": source(4, "003 §7: the last 4 tokens of each sequence are ignored"),
        "ccnet405": source(
            (405, 13268), "003 §4: ccnet-405, 405 English prompts (13,268 tokens) from CCNET: (prompts, tokens)"
        ),
        "pairs_13b": source(
            (12236, 404748),
            "003 §7: 12,236 HMLV token-layer pairs for LLaMA-2 13B on ccnet-405 out of "
            "404,748 token-layer pairs considered: (HMLV, all)",
        ),
    },
    "SF-8": {
        "layers": source(40, "003 §2, Table 1: LLaMA-2 13B (the model of Table 4) has 40 layers"),
        "table4": source(
            {  # layer of 40 → (Ψ, Ω_u) generation
                3: (
                    "When, “b/3,on,h,a The “t The A,e,c,t,a,w,d, The,a,d,th, The,th, The, The,t,d, The,d, on,",
                    (
                        "Tuatara are one of the largest reptiles in the world and are native to New "
                        "Zealand. However, due to predation, habitat loss and the introduction of "
                        "mammalian predators, they are now limited to a few small islands. The tuatara "
                        "is a small lizard-like re"
                    ),
                ),
                5: (
                    (
                        "The first “tone” is the one, the first, the one, the first, the S, the first, "
                        "the, the, the, the, the, the, the, the, the, the, the, the, the, the, the, the"
                    ),
                    (
                        "A baby tuatara has been found for the first time in 200 years, according to a "
                        "new study. Tuatara are lizard-like reptiles that can be traced back to the time "
                        "of the dinosaurs, according to the study. The last time a tuat"
                    ),
                ),
                7: (
                    (
                        ", in the, The , in the, the , in the, The , the , the, and , the , the, the, "
                        "the, the, the, the, the, the, the, the, the, the,"
                    ),
                    (
                        "Tuatara are lizard-like reptiles that can be traced back to the time of the "
                        "dinosaurs. For the first time in 200 years, researchers have discovered a baby "
                        "tuatara on mainland New Zealand. Researchers from Massey University in New"
                    ),
                ),
                10: (
                    "a y/t, a right The half, but, the",
                    (
                        "The discovery was made by the Department of Conservation (DOC) and the "
                        "University of Otago, which have been working on a project to monitor tuatara on "
                        "the mainland. The last time a tuatara was found on the mainland was in the "
                        "1800s."
                    ),
                ),
                14: (
                    (
                        "Tuatara are lizard-like reptiles that can be traced back to the time of the "
                        "dinosaurs. For the first time in 200 years, researchers have discovered a baby "
                        "tuatara on mainland New Zealand. The E on a the, on the, the, at, 200, with, "
                        "from, on, the"
                    ),
                    (
                        "Tuatara are lizard-like reptiles that can be traced back to the time of the "
                        "dinosaurs. For the first time in 200 years, researchers have discovered a baby "
                        "tuatara on mainland New Zealand. The discovery of the tuatara, which is"
                    ),
                ),
                27: (
                    (
                        "The newborn, which is only the 13th of its kind, was discovered on the “danger” "
                        "Steph’, an, an, an, an, and the, and the, and the, and the, and the, and the, "
                        "and the, and the, and the, and the, and the"
                    ),
                    (
                        "This is the first time in 200 years that a baby tuatara has been found on the "
                        "mainland of New Zealand. The discovery was made by a group of researchers led "
                        "by the University of Otago. The tuatara was found on the east coast of the "
                        "North Island,"
                    ),
                ),
                36: (
                    (
                        "The Tuatara is an iconic New Zealand native. The reptiles can live for more "
                        "than 100 years and are found on the main islands of the country and a few "
                        "smaller islands. The last time a tuatara was born on the mainland was in 1895,"
                    ),
                    (
                        "The discovery was made in a cave system in the remote Waitomo district, 300 "
                        "kilometres south of Auckland. The young tuatara is about 10cm long and is the "
                        "first recorded sighting of a juvenile tuatara on the mainland. The cave system "
                        "is"
                    ),
                ),
            },
            "003 App. E, Table 4 (LLaMA-2 13B, 80% retained, the Tuatara prompt): layer → (Ψ, Ω_u) generation",
        ),
    },
}


def number(claim_id: str, key: str):
    """The source's number (or table) ``key`` of ``claim_id``, a SF claim, e.g. the tests' and figures' references."""
    return lookup(NUMBERS, claim_id, key).value
