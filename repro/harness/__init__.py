"""The roof: how a claim is run, judged, reported and compared — no transformer science.

It sits above every topic package and may import them; nothing below imports it (the layer
rule: `tests/test_layers.py`, the import-linter contract in pyproject.toml). It knows no claim:
`catalogue`, `profiles` and `plan` are registries that collect what each topic declares in its
own `catalogue.py` and `sizes.py`.

- `plugin`: the pytest entry — options, fixtures (`claim`, `profile`, `device`, `pretrained`,
  ...), each test's verdict, `pytest_report_teststatus` (contradicted "C", inconclusive "I").
- `options`: the command-line options and their checks; `collection`: claim markers, keywords,
  `--claim`, xdist groups.
- `claim`: the `claim` fixture's object (`record`, `check`, `power`, `table`, `figure`, ...).
- `session`: `ClaimsSession`, a run's state as a registered plugin object (collection, outcomes,
  the partial file, the end-of-run writes and the baseline comparison).
- `report`: records, outcomes, verdicts; `writers`: claims.json, report.md, the terminal table;
  `provenance`: claims.json's `run` (versions, git, checksums).
- `topics`: the registry: every package under ``repro/`` but the floors, with its manifest
  (``TOPIC = Topic(...)`` in its ``__init__.py``: CLAIMS.md order, toy sizes, BPE rows, commands).
- `catalogue`: every claim ID, collected from the topics the registry finds.
- `profiles`: sizes per experiment per profile, collected from the topics; ``BUDGET_S``.
- `plan`, `plan_corpus`: ``repro plan`` — per row: models, parameters, tokens, FLOPs, memory, time
  on the device the run would use; the corpus and vocabulary checks.
- `calibration` (+ ``device_times.json``): the plan's rows against the GPU times measured in
  ``results/``, the host rates fitted on them; `toy`: an opt-in plugin (``-p repro.harness.toy``)
  that runs a decide chunk at toy sizes on a CPU.
- `decide`: ``repro plan --profile decide`` — the chunks that would decide the claims the ci run
  left inconclusive (each topic's `DECIDE`), their minutes on a device, the commands.
- `baseline` (+ ``baselines/``), `compare`, `history`, `side_by_side`, `scorecard`: committed
  baselines, ``repro compare``, artifacts/history.jsonl, verdicts across runs and models, the
  verdict per claim at each scale.
- `cli`: the ``repro`` command (parsers built without importing torch: ``repro --help`` is
  instant; a topic's own commands, e.g. ``repro seedprint``, live in the topic).
- `bench`: benchmark helpers (in-run matmul ceiling, peak memory in a fresh process).
"""
