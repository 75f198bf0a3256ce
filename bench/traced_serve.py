#!/usr/bin/env python3
"""`sanlens serve` under tracemalloc, for bench/soak.py: SIGUSR1 dumps a snapshot.

Run with PYTHONTRACEMALLOC=<frames> in the environment (tracing then starts before the
first import) and SANLENS_SNAPSHOT_DIR naming a folder. Each SIGUSR1 writes
``snapshot-<n>.pickle`` (``tracemalloc.Snapshot.dump``) and ``snapshot-<n>.json`` (the
traced total, RSS and glibc's ``mallinfo2``: what the C heap holds beyond what Python
traces) there. The product itself carries no debug endpoint; this stays in bench/.

A snapshot taken mid-poll counts that poll's decoded pages and rows as growth (tens of MB at
a few thousand LUNs), so it waits for a quiet moment: no poll, QoS read, judgement or render
running (up to ``QUIET_WAIT_S``; the JSON says whether one came).

    PYTHONTRACEMALLOC=25 SANLENS_SNAPSHOT_DIR=/tmp/s python bench/traced_serve.py serve --config c.yaml
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import signal
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

SNAPSHOT_DIR_ENV = "SANLENS_SNAPSHOT_DIR"
QUIET_WAIT_S = 120.0

_busy = [0]
_busy_lock = threading.Lock()


def _counted(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` counted in ``_busy`` while it runs."""

    def run(*args: Any, **kwargs: Any) -> Any:
        with _busy_lock:
            _busy[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            with _busy_lock:
                _busy[0] -= 1

    return run


def watch_work() -> None:
    """Count the work that holds transient memory: polls (with their recording), QoS reads,
    the engine's judgements and the renders."""
    from sanlens.diagnose.engine import Engine
    from sanlens.ontap.collector import OntapSource
    from sanlens.runtime.poller import Poller
    from sanlens.serve.exposition import Exposition

    for cls, name in (
        (Poller, "_work"),
        (OntapSource, "_read_qos"),
        (Engine, "evaluate_pending"),
        (Exposition, "refresh"),
    ):
        setattr(cls, name, _counted(getattr(cls, name)))


def wait_quiet(timeout: float) -> float | None:
    """Seconds waited until nothing counted runs (twice, 50 ms apart), None if it never was."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if _busy[0] == 0:
            time.sleep(0.05)
            if _busy[0] == 0:
                return time.monotonic() - t0
        time.sleep(0.02)
    return None


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost"
        )
    ]  # fmt: skip


def mallinfo() -> dict[str, int]:
    """glibc's view of the C heap (bytes): empty where there is no mallinfo2."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return {}
    if libc is None or not hasattr(libc, "mallinfo2"):
        return {}
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return {
        "arena": info.arena,  # main-heap bytes obtained by sbrk (other arenas included by glibc)
        "mmapped": info.hblkhd,
        "in_use": info.uordblks,
        "free": info.fordblks,  # held by malloc, not in use: fragmentation when it stays high
    }


def rss_bytes() -> int:
    try:
        m = re.search(r"^VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    except OSError:
        return 0
    return int(m[1]) * 1024 if m else 0


def install(folder: Path) -> None:
    """SIGUSR1 asks for a snapshot; a thread takes it at the next quiet moment."""
    folder.mkdir(parents=True, exist_ok=True)
    asked = threading.Semaphore(0)

    def dump(n: int) -> None:
        base = folder / f"snapshot-{n}"
        waited = wait_quiet(QUIET_WAIT_S)
        snap = tracemalloc.take_snapshot()
        current, peak = tracemalloc.get_traced_memory()
        meta = {
            "quiet_after_s": waited,
            "traced": current,
            "traced_peak": peak,
            "tracemalloc_overhead": tracemalloc.get_tracemalloc_memory(),
            "rss": rss_bytes(),
            "malloc": mallinfo(),
        }
        snap.dump(str(base) + ".pickle.tmp")
        Path(str(base) + ".json").write_text(json.dumps(meta))
        os.replace(str(base) + ".pickle.tmp", str(base) + ".pickle")  # the pickle last: the sign it is done

    def taker() -> None:
        n = 0
        while True:
            asked.acquire()
            n += 1
            dump(n)

    threading.Thread(target=taker, name="snapshot", daemon=True).start()
    signal.signal(signal.SIGUSR1, lambda signum, frame: asked.release())


def main() -> int:
    if not tracemalloc.is_tracing():
        tracemalloc.start(int(os.environ.get("PYTHONTRACEMALLOC") or 25))
    folder = os.environ.get(SNAPSHOT_DIR_ENV)
    if folder:
        watch_work()
        install(Path(folder))
    from sanlens.cli import main as sanlens_main

    return int(sanlens_main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
