"""The roof: how a claim is run, judged, reported and compared — no transformer science.

It sits above every topic package and imports them; nothing below imports it (the ground floor,
`repro.ground`, holds run-time policy and downloads).

It reproduces no source section itself; it turns the claims of the five source documents
(`catalogue`, from the shared CLAIMS.md) into pytest runs with records, verdicts and reports.

- `plugin`: the pytest plugin (options ``--profile --device --model --corpus --baseline
  --train-procs --artifacts``, the ``claim`` marker and fixture, record collection, each
  test's verdict, report writing, the comparison with the committed baseline); its
  ``pretrained`` fixture loads pretrained models lazily through `repro.core.models.pretrained`.
- `report`: records, verdicts, claims.json / report.md / the terminal table.
- `catalogue`: every claim ID — source, section, statement, the source's numbers.
- `profiles`: sizes per experiment per profile (ci, long, paper) and ``BUDGET_S``.
- `cli`: the ``repro`` command (its parsers built without importing torch: ``repro --help`` is instant).
- `baseline`: committed baselines per profile-device-dtype (``baselines/``, ``repro baseline``).
- `compare`: ``repro compare`` — verdict changes, drift in each record's noise, wall-time ratios.
- `history`: artifacts/history.jsonl and ``repro history CLAIM``.
- `plan`: ``repro plan`` — per experiment row: models, parameters, tokens, FLOPs, memory, time on
  the device the run would use (this CPU at a matmul rate timed now, or a GPU; ``--device``).
- `bench`: benchmark helpers (in-run matmul ceiling, peak memory in a fresh process).
"""
