"""Progress of long phases (a model build, a training loop), said where people look.

Two channels, each the ecosystem's own:
- a tqdm bar on stderr where the caller draws one (tqdm's rule: drawn on a terminal, off where
  stderr is not one, so a CI log gets no carriage-return flood);
- `Heartbeat`: one line on the `repro.progress` logger at most every `every_s` seconds — what has
  been done, the elapsed time and, for a phase of known length, about how long it has left. Under
  pytest a test's stderr is captured, so a bar drawn inside a claim test is never seen; the claims
  plugin shows this logger's lines on pytest's terminal instead (`ClaimsSession`), unless `-q`.
  Outside pytest the logger has no handler at INFO, and nothing is printed twice.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Iterator

LOGGER = "repro.progress"
EVERY_S = 30.0  # a line every half minute at most: a 9-minute claim shows ~18, not a flood

log = logging.getLogger(LOGGER)


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    m, s = divmod(seconds, 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


class Heartbeat:
    """`tick(done)` inside a loop of `total` steps: a line on `repro.progress` when `every_s` has
    passed since the last (`every_s=0`: every tick — for tests), e.g. "train: 120/400 steps, 1m30s
    elapsed, ~3m30s left (loss 4.21)"."""

    def __init__(self, desc: str, total: int | None = None, unit: str = "steps", every_s: float = EVERY_S) -> None:
        self.desc, self.total, self.unit, self.every_s = desc, total, unit, every_s
        self.start = self.last = time.monotonic()
        self.done = 0

    def advance(self, n: int = 1, note: str = "") -> None:
        """`tick` for a loop that does not count itself: `n` more done."""
        self.done += n
        self.tick(self.done, note)

    def elapsed(self) -> str:
        """The time since the phase started, as the lines say it ("1m30s")."""
        return _duration(time.monotonic() - self.start)

    def line(self, done: int, note: str = "") -> str:
        elapsed = time.monotonic() - self.start
        of = f"/{self.total}" if self.total else ""
        text = f"{self.desc}: {done}{of} {self.unit}, {_duration(elapsed)} elapsed"
        if self.total and done:
            text += f", ~{_duration(elapsed * (self.total - done) / done)} left"
        return text + (f" ({note})" if note else "")

    def tick(self, done: int, note: str = "") -> None:
        now = time.monotonic()
        if now - self.last >= self.every_s or (self.every_s <= 0):
            self.last = now
            log.info(self.line(done, note))


@contextlib.contextmanager
def phase(desc: str) -> Iterator[None]:
    """A phase without steps to count (a dequantisation, a save): a line when it starts and one
    with its time when it ends, on `repro.progress`."""
    start = time.monotonic()
    log.info("%s …", desc)
    yield
    log.info("%s: done in %s", desc, _duration(time.monotonic() - start))
