"""The SK claims: what each states, where its source states it, and the source's numbers.

Attention sinks from positional variance (001 §6.2). One :class:`ClaimSpec` per claim ID, in
CLAIMS.md's order; ``NUMBERS``: every number of the source a claim test or a figure of this
topic compares against, each with its citation, read through :func:`number` (here, in the topic)
or ``repro.harness.catalogue.number`` (the registry that collects every topic's entries).
"""

from __future__ import annotations

from repro.ground.sources import ClaimSpec, SourceNumber, lookup, source

TOPIC = "SK"
TITLE = "Attention sinks from positional variance (001 §6.2)"
NOTES = ""

CLAIMS: tuple[ClaimSpec, ...] = (
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
)

NUMBERS: dict[str, dict[str, SourceNumber]] = {
    "SK-1": {
        "scaled_slope": source(
            0.0,
            "001 §6.2.1: amplification (o_i·√i) and attenuation (o_i·√(i/T)) equalise the "
            "per-position variance: a flat std, log-log slope 0",
        )
    },
    "SK-3": {
        "table7": source(
            {"baseline": (21.33, 30.36), "amplification": (21.95, 28.70), "attenuation": (21.02, 30.48)},
            "001 §6.2.2, Table 7 (nano LLaMA-2, OpenWebText): variant → PPL (WikiText-2, C4)",
        )
    },
}


def number(claim_id: str, key: str):
    """The source's number (or table) ``key`` of ``claim_id``, a SK claim, e.g. the tests' and figures' references."""
    return lookup(NUMBERS, claim_id, key).value
