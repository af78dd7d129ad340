"""SeedPrint (SP): is model B descended from model A, from initialisation-induced biases?

Reproduces 001 §5 (Fig 11, BB-7), §6.1 (Algorithm 1, Tables 4–6) and App B.3 (Kendall τ, the
Gaussian null, Fig 13; the passive baselines of B.3.2), with the lineages of App B.4 at our
scale, for `claims/test_seedprint.py`; `repro seedprint` (the command) runs `algorithm`.

- `algorithm`: Algorithm 1 as the paper writes it, the matched and aligned tests, and both
  tests on the same responses (random token or Gaussian inputs, hidden state or logits).
- `released`: the authors' released test, read from their public code (YnezT0311/SeedPrints at
  a cited commit): coset bottom-k, softmax over the selected columns, closed-form null, k rules.
- `fingerprint_baselines`: the Intrinsic, REEF (CKA), PCS and ICS baselines (App B.3.2);
  `block_weights`: each block's attention and MLP matrices across families, which they read.
- `lineage`: init → base → continual / fine-tune lineages, trained through `repro.core.train`.
- `evaluation`: what `repro seedprint` answers are worth — detection and false-alarm rates
  per mode on descendants, function-preserving rewrites and unrelated pairs.
- `transforms`: function-preserving rewrites of a model's weights (residual basis, MLP units
  and heads permuted, scales folded into a norm).
- `study`: the lineage study the claims read — the zoo of App B.4 and its responses, REEF's
  windows, Table 4b's and Table 5's pairs with the baselines, the Gaussian-input pair, the null
  calibration (App B.3.1), Table 6's fine-tuned descendants and Fig 11's persistence.
- `verdicts`: how the claims record, table and decide what `study` measured (the pair checks,
  the Holm families, Tables 5–6, Fig 11, the powers); `null_verdicts`: the null calibration's
  records and SP-6's false-positive-rate tests and bound, Fig 13's τ's.
- `figures`: the builders of Tables 4–6 (p-values), Fig 11, Fig 13 and the baseline bars.
"""

from repro.ground.topic import BpeRow, Topic


def _bpe_rows(prof) -> list[BpeRow]:
    return [("seedprint", "SP-1…SP-6, BB-7", prof.sizes("seedprint")["lineage"]["vocab_size"])]


TOPIC = Topic(
    package="seedprint",
    order=2,
    bpe_rows=_bpe_rows,
    commands=("repro.seedprint.cli:add_seedprint", "repro.seedprint.cli:add_seedprint_eval"),
)
