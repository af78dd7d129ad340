"""Residual stream (RS): the stream as a sum of terms, and what reads it.

Reproduces 002 (Residual Stream and Transformer Internals) — "Residual Stream Decomposition",
"Direct Logit Attribution", "Pre-Norm vs Post-Norm" (gradient flow, failure mode), "FFN as
Key-Value Memory", "Logit Lens" and its tuned-lens caveat, "Attention Head Composition" — for
`claims/test_residual_stream.py`. The logit and tuned lens themselves are shared and live in
`repro.core.lens`.

- `decomposition`: the 1 + L·H + L decomposition with plain forward hooks (and the configs of
  the source's two counting examples), direct logit attribution through the frozen final norm,
  RS-1's and RS-2's exactness against float32 rounding with their one-term-left-out controls
  (`sum_check`, `dla_check`), the FFN key–value rewrite, residual norms and gradient flow pre /
  post norm.
- `induction`: the repeated-random-sequence task of RS-7 (one- vs two-layer attention-only
  models).
- `study`: the experiments the claims read, one call per fixture of the claim file: every
  model's residual stream on the run's corpus, the random-init models, the decompositions,
  RS-3's gradient flows and the post-norm check's power, RS-4's norm curves and post-norm
  control, RS-5's FFN rewrite, RS-6's rank curves, RS-7's runs, RS-8's tuned against logit lens
  with its state-independent control; the one-sided Kendall trend test and the geometric mean
  the claims assert with. Models and tensors go on the run's `--device`.
- `figures`: the builders of the DLA bars and term-norm heat map (at the last token), FFN rewrite error, residual
  norms, gradient ratios, lens rank / KL and induction curves.
"""

from repro.ground.topic import BpeRow, Topic


def _bpe_rows(prof) -> list[BpeRow]:
    """RS-1/2/4's random-init inputs, and RS-3's gradient models at the topic's vocabulary
    (`study.GRAD_V`, imported here only when `repro plan` asks: it imports torch)."""
    from repro.residual_stream.study import GRAD_V

    return [
        ("residual_stream", "RS-1, RS-2, RS-4", prof.sizes("residual_stream")["random_init"]["vocab_size"]),
        ("residual_stream", "RS-3", GRAD_V),
    ]


TOPIC = Topic(package="residual_stream", order=5, bpe_rows=_bpe_rows)
