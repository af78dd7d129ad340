"""Born biased (BB): structure of decoder transformers at random initialisation.

Reproduces 001 ("Transformers Are Born Biased") §3–5 — Findings 1–6 (Table 1, Figs 1a–10,
Tables 2–3, Props 2, 4, 5) with the closed forms of App A and the init and p-value of
App B.1–B.2 — for `claims/test_born_biased.py`. (BB-7, 001 §5 Fig 11, is a SeedPrint
lineage experiment and lives in `claims/test_seedprint.py`.)

- `closed_forms`: App A — the arc-cosine recurrence (Prop 2), Attn0∘MLP0 (Prop 4), Prop 5's limit
  and approximation, Prop 5 at finite T by exact enumeration and its extrapolation to T → ∞.
- `init_bias`: the Monte-Carlo experiments of §4 on random-init TinyDecoder stacks — MLP0 stacks
  (Fig 5), two blocks (Table 3), the positional std of the attention output (Eq 2, Fig 9),
  intra-sequence similarity (Fig 8), GELU's inputs with and without LayerNorm (Fig 6) — and what
  the claims read off them (Eq 2's reading, the depth trend with its shuffled control).
- `preference_probe`: the random-token preference probe of any causal LM — one hooked forward
  pass per batch answering every probe length at once (prefix trick), argmax with random
  ties, rank counts and the uniform-sampling baseline.
- `preference_runs`: §3's probe runs of random-init HF models (Table 1's row groups, the
  uniform baselines) and Finding 2.2's direction agreement over many models.
- `head_null`: the head's own null of App B.2's test — each token's argmax rate for isotropic
  final states, the top count's distribution, p, quantiles and power under those rates.
- `preference_stats`: the statistics the §3 claims read over Table 1's cells — the source's
  effects (weakest frequency, length and size trends), Fig 1a's ratio, "far weaker", the trends,
  the held-out favourite, the hidden-dimension cells, Finding 2.2's agreement test.
- `preference_power`: the powers of those tests and each claim's declaration for `claim.power`.
- `ablation_study`: §4.1's full / attention-only / MLP-only ablation (Table 2, Figs 3, 4, 7).
- `records`: what §4's claim tests write beyond their headline checks — context records and the
  checks repeated per block or T — and `Row` / `Rows`, the readings handed to the claim file.
- `probe_records`: the same for §3's probe claims (Table 1) — context records, the checks
  repeated per seed or cell, and the reasons of the strict xfails.
- `tables`: the report's tables (Fig 5, Tables 1–3, Finding 1.2, Prop 5).
- `figures`: the matplotlib builders of 001's §3–4 figures and tables.
- `catalogue`, `sizes`: the topic's claims with the source's numbers, and its sizes per profile.
"""

from repro.ground.topic import Topic

TOPIC = Topic(
    package="born_biased",
    order=1,
    # Born biased's probe rows and the rows of the decide chunks decide-bb-probes and
    # decide-bb-direction, at toy sizes: two layers of 32 wide and a vocabulary of 256 keep the
    # models' build and probe under a second each; the larger RoPE GPT-2 of BB-1.2 stays the larger
    # (n_layer · d_model² 12,288 against 2,048).
    toy={
        "bb_1": dict(d_model=32, n_layer=2, n_head=2, vocab_size=256, n_seq=64, lengths=(4, 8, 16)),
        "bb_1_2": dict(d_model=64, n_layer=3, n_head=2),
        "bb_2_2": dict(d_model=32, n_layer=2, n_head=2, vocab_size=256, n_seq=64, T=16, n_models=4),
    },
)
