"""Causal shift (CS): the input–output alignment shift across depth, and residual attenuation.

Reproduces 000 (input–output alignment shift in autoregressive transformers) §III (Table I,
Figs 2–3) and §IV (residual attenuation, Figs 4–5, Table II) for `claims/test_causal_shift.py`.

- `experiments`: alignment profiles (every layer decoded through the tied dictionary; cosines
  and the input→output projection as the logit lens reads it), switch layers with bootstrap
  CIs, `ResidualGate` (fixed cut or learned gate, by forward hooks on any model's blocks), the
  Table II evaluators, and the trained variants (through `repro.core.train`, or
  `repro.core.launch` with ``--train-procs``).
- `study`: the experiments the claims read, one call per fixture of the claim file: a
  pretrained model's §III reading (profile, random-init twins, switch layers, Table I panel)
  and Fig 3's early-to-late changes over the twins (`depth_excess`), §IV's trained variants,
  Table II's scores and rows, and the context records of CS-2 and CS-6. Models and windows go
  on the run's `--device`.
- `power`: the claims' power at declared effects — CS-1's switch depth, CS-2's three changes,
  CS-4's paired cut test, CS-5's gate at our budget (from our own gate's snapshots) and CS-6's
  order on every benchmark — as `claim.power`'s keywords.
- `figures`: the builders of Figs 2–5 and Table II.
"""

from repro.ground.topic import BpeRow, Topic


def _bpe_rows(prof) -> list[BpeRow]:
    return [("causal_shift", "CS-3…CS-6", prof.sizes("causal_shift")["model"]["vocab_size"])]


TOPIC = Topic(package="causal_shift", order=4, bpe_rows=_bpe_rows)
