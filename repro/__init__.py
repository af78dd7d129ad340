"""repro: published claims about transformer internals, reproduced as a pytest suite.

Three layers (DESIGN.md): `repro.harness` runs, judges, reports and compares claims;
`repro.core` holds the science several topics share (models, data, training, statistics,
lenses, shared plotting); one package per topic holds its experiments and figures, named as
its claim file `claims/test_<topic>.py` — `born_biased`, `seedprint`, `sinks`,
`spectral_filters`, `causal_shift`, `residual_stream`, `context_axis`. Nothing is re-exported
here: import the module you need.
"""
