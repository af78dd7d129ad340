"""The CA claims: what each states, where its source states it, and the source's numbers.

Context axis (004). One :class:`ClaimSpec` per claim ID, in CLAIMS.md's order; ``NUMBERS``:
every number of the source a claim test or a figure of this topic compares against, each with
its citation, read through :func:`number` (here, in the topic) or
``repro.harness.catalogue.number`` (the registry that collects every topic's entries). The
source is a proposal without measurements.
"""

from __future__ import annotations

from repro.ground.sources import ClaimSpec, SourceNumber, lookup

TOPIC = "CA"
TITLE = "Context axis (004)"
#: Topic-wide definitions from CLAIMS.md that the single claims rely on.
NOTES = (
    "In slice c, positions ≤ c attend to each other bidirectionally and never see positions > c, through "
    "every layer. So the diagonal output at t equals the last position of a bidirectional pass over the "
    "prefix x[0..t] — an exact oracle for tests."
)

CLAIMS: tuple[ClaimSpec, ...] = (
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
        section=(
            "§1 (stochastic axis drop, segment-level refinement); §3.1 (training–inference mismatch; "
            "no empirical validation); §3.2"
        ),
        statement=(
            "The proposal's untested premise — training with the context axis (with stochastic "
            "axis drop) gives better token representations"
        ),
        source_values="",
        notes=("test it: held-out NLL vs an identical causal model, under causal-only and segment-level inference"),
    ),
)

NUMBERS: dict[str, dict[str, SourceNumber]] = {}


def number(claim_id: str, key: str):
    """The source's number (or table) ``key`` of ``claim_id``, a CA claim, e.g. the tests' and figures' references."""
    return lookup(NUMBERS, claim_id, key).value
