"""Born biased (BB): structure of decoder transformers at random initialisation.

Reproduces 001 ("Transformers Are Born Biased") §3–5 — Findings 1–6 (Table 1, Figs 1a–10,
Tables 2–3, Props 2, 4, 5) with the closed forms of App A and the init and p-value of
App B.1–B.2 — for `claims/test_born_biased.py`. (BB-7, 001 §5 Fig 11, is a SeedPrint
lineage experiment and lives in `claims/test_seedprint.py`.)

- `init_bias`: App A's closed forms and the Monte-Carlo experiments that check them — the
  random-token preference runs (§3), inter-sequence contraction and its direction (§4), the
  full / attention-only / MLP-only ablations (§4.1–4.3), intra-sequence similarity and the
  positional std of the attention output (§4.4).
- `preference_probe`: the random-token preference probe of any causal LM — one hooked forward
  pass per batch answering every probe length at once (prefix trick), argmax with random
  ties, rank counts and the uniform-sampling baseline.
- `preference_stats`: the statistics the §3 preference claims read over Table 1's cells —
  App B.2's test against each head's own null with its negative control, power at the
  source's effect, the pooled-share trend power, Table 1's rows.
- `figures`: the matplotlib builders of 001's §3–4 figures and tables.
"""
