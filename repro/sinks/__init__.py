"""Attention sinks (SK): sinks from positional variance, and positional amplification /
attenuation.

Reproduces 001 §4.4 (eq. 2) and §6.2 (§6.2.1 sink rate, Fig 12; §6.2.2, Table 7; the nano
LLaMA pre-training of App B.4) for `claims/test_sinks.py`.

- `experiments`: the sink metric (the source's and Gu et al.'s forms) and sink rate, attention
  recording of the first-token columns from each model's own eager attention, positional
  scaling o_i·√i / o_i·√(i/T) through the AttentionInterface, the nano LLaMA variants trained
  through `repro.core.train`, SK-3's perplexity ratio bound and its power, and SK-4's reading of
  a pretrained model with its random-init twin.
- `init_std`: SK-1, eq. 2 / Fig 9 on the three variants at init (the std profiles of o_i, their
  log-log slopes per init, and the identities that make the three slopes one measurement).
- `trio`: SK-2/SK-3's trained trio (baseline, amplification, attenuation) with its sink curves
  and held-out NLL, its description, SK-2's paired test of amplification against the baseline
  and its records, SK-3's perplexity ratios, records and negative controls (models of the same
  run a real harm makes worse).
- `budget`: the effect models at our training budget behind SK-2/SK-3's power (the baseline's
  first-token attention and the variants' training-loss gap, fitted to the trio's own
  trajectory) and the two claims' power declarations.
- `over_seeds`: SK-2 read over the trios of several seeds (decide-sinks): attenuation's check a
  lower confidence bound over seeds, its power against a declared alternative and its size at the
  edge (`SK2_PREREG`, fixed before any seeded run).
- `cli`: `repro sk2-seed`, one of SK-2's further seeds trained and stored ahead of the claim run
  (decide-sinks split over GPU calls).
- `figures`: Fig 9 with the variants (SK-1) and the sink rate against sequence length (Fig 12:
  the trio, and a pretrained model as the reference).
"""

from repro.ground.topic import BpeRow, Topic


def _bpe_rows(prof) -> list[BpeRow]:
    return [("sinks", "SK-2, SK-3", prof.sizes("sinks")["model"]["vocab_size"])]


TOPIC = Topic(
    package="sinks",
    order=3,
    bpe_rows=_bpe_rows,
    commands=("repro.sinks.cli:add_sk2_seed",),
    # decide-sinks at toy sizes (its three seeds' trios, SK-2's checks over seeds): 2 layers of 32
    # wide, 4 steps of 2 × 32 tokens, 4 held-out windows of 32
    toy={
        "sinks": dict(
            model=dict(n_layer=2, n_head=2, d_model=32),
            train=dict(steps=4, batch_size=2, seq_len=32, warmup_steps=0, eval_every=4, eval_batches=1),
            eval=dict(lengths=(32,), n_seq=4, batch=4, ppl_windows=4),
        )
    },
)
