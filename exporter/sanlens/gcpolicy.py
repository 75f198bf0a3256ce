"""How `sanlens serve` keeps Python's memory manager from pausing scrapes or bloating.

A poll of a large cluster leaves about a million long-lived, acyclic objects (counter
rows, views, rendered pieces) that replace the previous poll's. The cycle collector
would scan them again and again, holding the interpreter lock for 100-300 ms each time,
which is what a scrape waits for. Reference counting frees them when the next poll
replaces them, so after each poll they are moved out of the collector's view
(``gc.freeze``); a full collection still runs now and then for whatever cycles exist.

The C allocator matters as much: glibc gives each thread that allocates its own arena
(up to 8 per core), so the poll, table, render and engine threads each keep their own
high-water mark of freed memory. Two arenas, and handing freed pages back after each
poll (``malloc_trim``), keep the resident size near what is actually in use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import time

log = logging.getLogger(__name__)

FULL_COLLECT_EVERY_S = 300.0
"""How often the frozen objects are scanned after all, for cyclic garbage among them."""

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc mallopt parameter

_lock = threading.Lock()
_last_full = time.monotonic()


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None  # glibc only


_LIBC = _libc()


def limit_arenas() -> None:
    """Call before the threads start: they then share MALLOC_ARENAS malloc arenas."""
    if _LIBC is not None and not _LIBC.mallopt(_M_ARENA_MAX, MALLOC_ARENAS):
        log.debug("mallopt(M_ARENA_MAX) refused")


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
        if _LIBC is not None:
            _LIBC.malloc_trim(0)  # freed pages back to the system
