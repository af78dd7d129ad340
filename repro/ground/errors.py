"""The suite's errors: one-line, user-facing `ReproError` and the kinds the plugin reads apart.

The pytest plugin and the CLI print a `ReproError` as one line, without a traceback;
`MissingFixture` is a skip, `NotApplicable` a claim that does not apply to the model, and
`CacheUnusable` a cache that cannot take a write (DESIGN "Bad input, faults").
"""

from __future__ import annotations

import os
from pathlib import Path


class ReproError(RuntimeError):
    """A user-facing error: the message says what went wrong and what to do.

    The pytest plugin and the CLI print it as one line, without a traceback.
    """


class MissingFixture(ReproError):
    """An embedded fixture (a GGUF model, the Brown corpus) that has not been fetched: the
    message names the command that fetches it (`repro fetch NAME`, or `make fixtures`). What
    needs it cannot run on this machine yet (the pytest plugin skips it); nothing is wrong."""


class NotApplicable(ReproError):
    """The model lacks what a claim is about (untied embeddings for a claim read in one shared
    dictionary, a fused q/k/v projection where per-head keys are needed…): the pytest plugin reads
    it as the claim being *not applicable* to that model, with this message as the reason."""


class CacheUnusable(ReproError):
    """The cache cannot take what must be written: `REPRO_CACHE` lies under a file or is not a
    directory, or the cache is not writable (a read-only mount, another user's files) where a
    write is needed. `path` is what could not be written, `reason` the system's word for why.
    A writer whose write is optional (a stamp refresh, a memoised measurement, the dtype
    decision) catches it and goes on without."""

    def __init__(self, message: str, path: str | os.PathLike = "", reason: str = "") -> None:
        super().__init__(message)
        self.path, self.reason = Path(path), reason
