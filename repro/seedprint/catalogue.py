"""The SP claims: what each states, where its source states it, and the source's numbers.

SeedPrint fingerprinting (001 §6.1, App B.3). One :class:`ClaimSpec` per claim ID, in
CLAIMS.md's order; ``NUMBERS``: every number of the source a claim test or a figure of this
topic compares against, each with its citation, read through :func:`number` (here, in the topic)
or ``repro.harness.catalogue.number`` (the registry that collects every topic's entries).
"""

from __future__ import annotations

from repro.ground.sources import ClaimSpec, SourceNumber, lookup, source

TOPIC = "SP"
TITLE = "SeedPrint fingerprinting (001 §6.1, App B.3)"
#: Topic-wide definitions from CLAIMS.md that the single claims rely on.
NOTES = (
    "Algorithm 1 of the source: top-m mean-output dims of each model, intersection = identity dims, "
    "per-dim Kendall τ over n random inputs, one-sided t-test / Mann–Whitney U against a null built by "
    "the same pipeline on two N(0,I) matrices; same lineage iff p < 0.01. The authors' released code "
    "(YnezT0311/SeedPrints @ 4a39abc4fd566b714f3529fe20b8fc82fe293fc2: seedprint.py run_test, run by "
    "run_table1.sh … run_table5.sh; LeaFBench's correlation_test.test_lineage) runs another test: the "
    "bottom-k dims of both models' raw mean responses intersected (coset; k = 400 of the 768-dim toy "
    "models for Tables 4a–5, 400 of Llama-2-7B's 4096 for Table 6, in proportion at our widths; "
    "LeaFBench: the base's bottom int(0.1·D), undefined τ's dropped), a row softmax at temperature 10 "
    "over those columns only, the mean per-dim Kendall τ against a closed-form null (z = τ̄ / (τ_std/√k), "
    "τ_std = √(2(2n+5)/(9n(n−1))), p = 2·sf(z)); Gaussian inputs with a fresh init's embedding "
    "statistics. Both are implemented (seedprint.algorithm, seedprint.released) and reported; "
    "Algorithm 1 decides the claims."
)


CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="SP-1",
        topic="SP",
        source="001_30830f2cef648f58",
        section="§6.1.2, Table 4a; App. B.3.3, Table 9 (Qwen)",
        statement="Models that differ only in init seed do not match",
        source_values="Table 4a: p 0.34–0.68 (t), 0.34–0.57 (U)",
        notes=(
            "CLAIMS.md's t range misreads Table 4a: its t-test p's are 0.357–0.678, i.e. 0.36–0.68 "
            "(the 0.34 is the U column's smallest, 0.335); the tests read the table (NUMBERS['SP-1'])"
        ),
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
)

NUMBERS: dict[str, dict[str, SourceNumber]] = {
    "SP-1": {
        "table4a": source(
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
        "table4b": source(
            {42: (2.20e-8, 6.28e-8), 123: (7.09e-6, 1.37e-5), 1000: (5.58e-4, 2.81e-3), 2000: (4.00e-10, 1.27e-9)},
            "001 §6.1.2, Table 4b: seed → p (t-test, U-test), s_init vs s_base",
        )
    },
    "SP-3": {
        "table4c": source(
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
        "table5": source(
            {"the_stack (1000)": (0.0, 3.09e-69), "the_stack (123)": (0.732, 0.831)},
            "001 §6.1.2, Table 5, The Stack rows: p (t-test, U-test) of the true descendant (seed 1000) "
            "and the distractor (seed 123)",
        ),
        "baselines_wrong": source(
            4, "001 §6.1.2, Table 5: all four baselines (Intrinsic, REEF, PCS, ICS) misattribute The Stack pair"
        ),
        "stack_pcs": source(0.585, "001 §6.1.2, Table 5, the_stack (1000): PCS of the true code descendant"),
    },
    "SP-5": {
        "table6_pcs": source(
            {"Llama-2-finance-7B": 0.9979, "Vicuna-1.5-7B": 0.9985},
            "001 §6.1.2, Table 6: PCS of a fine-tune against Llama-2-7B",
        ),
        "table6_tokens": source(
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
}


def number(claim_id: str, key: str):
    """The source's number (or table) ``key`` of ``claim_id``, a SP claim, e.g. the tests' and figures' references."""
    return lookup(NUMBERS, claim_id, key).value
