"""How `sanlens serve` keeps Python's memory manager from pausing scrapes or bloating.

A poll of a large cluster leaves about a million long-lived, acyclic objects (counter
rows, views, rendered pieces) that replace the previous poll's. The cycle collector
would scan them again and again, holding the interpreter lock for 100-300 ms each time,
which is what a scrape waits for. Reference counting frees them when the next poll
replaces them, so after each poll they are moved out of the collector's view
(``gc.freeze``); a full collection still runs now and then for whatever cycles exist.

A failed poll breaks the "acyclic" premise: its exception's traceback and the futures that
hold the exception form cycles with the frames' locals (the poll's pages and rows). Frozen
by ``settle``, they would wait minutes for the full collection while a fault fails poll
after poll, so ``release`` clears those frames' locals first.

The C allocator matters as much: glibc gives each thread that allocates its own arena
(up to 8 per core), so the poll, table, render and engine threads each keep their own
high-water mark of freed memory. Two arenas, large blocks always mapped on their own (glibc
would otherwise move them into the heap once one is freed), and handing freed pages back after
each poll (``malloc_trim``) keep the resident size near what is actually in use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import time
import traceback
from typing import TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E", bound=BaseException)

FULL_COLLECT_EVERY_S = 300.0
"""How often the frozen objects are scanned after all, for cyclic garbage among them."""

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc mallopt parameters
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024
"""Blocks this large (a response body, a table's lists) are mapped on their own and unmapped when
freed. glibc's default starts here too but raises itself after each such free, up to 32 MB, and
then serves them from the heap, where the holes they leave pin pages between polls."""

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
    """Call before the threads start: they then share MALLOC_ARENAS malloc arenas, and large blocks
    are mapped on their own (MMAP_THRESHOLD)."""
    if _LIBC is None:
        return
    for name, param, value in (
        ("M_ARENA_MAX", _M_ARENA_MAX, MALLOC_ARENAS),
        ("M_MMAP_THRESHOLD", _M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    ):
        if not _LIBC.mallopt(param, value):
            log.debug("mallopt(%s) refused", name)


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


def release(exc: BaseException) -> None:
    """Call on an exception that ends a poll, before ``settle``: drops what its frames hold.

    The frames of its traceback (and of the exceptions it chains) have finished; their
    locals (decoded pages, the rows of the tables fetched before the failure, futures)
    go now by reference counting, so the cycle left for the collector is a few small objects.
    """
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)  # frames still running are left as they are
        todo += [e.__cause__, e.__context__]


def released(exc: E) -> E:
    """``exc`` after :func:`release`, for an exception a poll keeps (a table the cluster lacks):
    kept, it would hold its frames' pages and rows until the full collection."""
    release(exc)
    return exc
