"""How `sanlens serve` keeps Python's cycle collector from pausing scrapes.

A poll of a large cluster leaves about a million long-lived, acyclic objects (counter
rows, views, rendered pieces) that replace the previous poll's. The cycle collector
would scan them again and again, holding the interpreter lock for 100-300 ms each time,
which is what a scrape waits for. Reference counting frees them when the next poll
replaces them, so after each poll they are moved out of the collector's view
(``gc.freeze``); a full collection still runs now and then for whatever cycles exist.
"""

from __future__ import annotations

import gc
import threading
import time

FULL_COLLECT_EVERY_S = 3600.0
"""How often the frozen objects are scanned after all, for cyclic garbage among them."""

_lock = threading.Lock()
_last_full = time.monotonic()


def settle() -> None:
    """Call after a poll or an evaluation: what it kept is long-lived; stop scanning it."""
    global _last_full
    with _lock:
        now = time.monotonic()
        if now - _last_full >= FULL_COLLECT_EVERY_S:
            _last_full = now
            gc.unfreeze()
            gc.collect()
        gc.freeze()
