"""When a target's data is too old to show or judge, and the clock that says so.

One rule for /metrics and /diagnoses: a target's data is stale once its last successful
poll was received more than ``stale_after(interval)`` ago. The exposition then stops
showing its data series (its health series stay) and the engine drops its view and the
findings of its subjects, at the same moment.

Ages are measured on the exporter's own receive clock, never on the sources' timestamps:
a Windows host whose clock runs minutes ahead, or an NTP step on either side, must not
make another source's data look old (or new).
"""

from __future__ import annotations

import time
from collections.abc import Callable

STALE_MIN_S = 300.0
"""A target's data is never stale sooner than this ..."""
STALE_INTERVALS = 5
"""... nor sooner than this many of its poll intervals."""


def stale_after(interval_s: float | None) -> float:
    """Seconds after its last successful poll that a target's data stops being shown and judged."""
    iv = interval_s if interval_s is not None and interval_s > 0 else 0.0
    return max(STALE_INTERVALS * iv, STALE_MIN_S)


class ReceiveClock:
    """Unix seconds that advance with the monotonic clock.

    Anchored to the wall clock once, at construction, so its readings are Unix times
    (``since`` timestamps stay meaningful) while differences between them are immune
    to NTP steps and to the clocks of the sources.
    """

    def __init__(
        self, wall: Callable[[], float] | None = None, mono: Callable[[], float] | None = None
    ) -> None:
        # looked up when called, not bound here: a test that replaces time.time and time.monotonic
        # with one hand-moved clock moves this one too
        self._mono = mono or (lambda: time.monotonic())
        self._offset = (wall or (lambda: time.time()))() - self._mono()

    def __call__(self) -> float:
        return self._offset + self._mono()
