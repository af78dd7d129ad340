"""The embedded models: two small real models shipped as pinned, checksummed GGUF fixtures
(`repro.ground.resources`), and the facts the tests check them against.

Tokenizers, as loaded (NOTES "Embedded pretrained models"):
- smollm2-135m: adds no special token by default; its bos_token is <|im_start|> (id 1) and its
  eos_token <|im_end|> (id 2), as in the upstream Instruct tokenizer.
- gemma3-270m: prepends <bos> (id 2) by default; eos is <eos> (id 1).
`repro.core.data.token_ids` adds <bos>/<eos> itself (add_special_tokens=False), so both behave
alike there; code that calls a tokenizer directly must mind the difference.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbeddedModel:
    """Facts about an embedded model (checked against the loaded config by the tests)."""

    name: str
    fixture: str  # key of repro.ground.resources.EMBEDDED_FIXTURES
    gguf_file: str
    family: str  # what model_family() returns for it
    n_layers: int
    d_model: int
    n_heads: int
    vocab_size: int
    tokenizer_adds_bos: bool
    upstream: str  # the original (unquantised) weights on the hub, for reference


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "smollm2-135m": EmbeddedModel(
        name="smollm2-135m",
        fixture="smollm2-135m",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        family="llama",
        n_layers=30,
        d_model=576,
        n_heads=9,
        vocab_size=49152,
        tokenizer_adds_bos=False,
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "gemma3-270m": EmbeddedModel(
        name="gemma3-270m",
        fixture="gemma3-270m",
        gguf_file="gemma-3-270m-q4_k_m.gguf",
        family="gemma",
        n_layers=18,
        d_model=640,
        n_heads=4,
        vocab_size=262144,
        tokenizer_adds_bos=True,
        upstream="google/gemma-3-270m",
    ),
}
