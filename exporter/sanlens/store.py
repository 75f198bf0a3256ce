"""The store of what the polls brought: the latest snapshot and health of each target.

Sources poll on their own schedule in threads (``sanlens.runtime.poller``); the pipeline stores
each result here (``sanlens.runtime.pipeline``), and a scrape only reads the latest immutable
snapshots, so it never touches ONTAP or a host.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sanlens.freshness import ReceiveClock, stale_after
from sanlens.model import Metric, Snapshot

log = logging.getLogger(__name__)


class Engine(Protocol):
    """The diagnosis engine as the runtime sees it."""

    def update(self, snapshot: Snapshot) -> None: ...

    def findings(self) -> Sequence[Mapping[str, object]]:
        """Findings in the /diagnoses JSON shape."""
        ...

    def metrics(self) -> tuple[Metric, ...]: ...


@dataclass
class TargetStatus:
    name: str
    kind: str
    up: bool = False
    polls: int = 0
    last_success: float | None = None
    last_duration: float | None = None
    errors: dict[str, int] = field(default_factory=dict)
    last_error: str = ""
    interval: float | None = None  # configured poll interval, seconds (for staleness alerts)


class State:
    """Latest snapshot and health per target; thread-safe by swapping immutable values under a lock.

    ``clock`` is the exporter's receive clock (sanlens.freshness): every snapshot is stamped
    with it on arrival, and a target whose last one is older than ``stale_after`` its
    interval loses its data series (``expire``); its health series stay.
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._lock = threading.Lock()
        self.snapshots: dict[str, Snapshot] = {}
        self.status: dict[str, TargetStatus] = {}
        self.clock: Callable[[], float] = clock or ReceiveClock()
        self.started = time.time()
        self.generation = 0  # bumped on every change a /metrics body shows
        self.changed = threading.Condition(self._lock)
        self._stamps: dict[str, int] = {}  # target -> generation its snapshot arrived in

    def _bump(self) -> None:
        """Under the lock: something the exposition shows changed."""
        self.generation += 1
        self.changed.notify_all()

    def touch(self) -> None:
        """Something outside the snapshots changed (the engine's findings or config): render again."""
        with self._lock:
            self._bump()

    def wait_for_change(self, seen: int, timeout: float) -> int:
        """Block until the generation moves past ``seen`` (or the timeout); the current one."""
        with self._lock:
            self.changed.wait_for(lambda: self.generation != seen, timeout)
            return self.generation

    def snapshots_with_stamps(self) -> tuple[dict[str, Snapshot], dict[str, int]]:
        with self._lock:
            return dict(self.snapshots), dict(self._stamps)

    def release_metrics(self, name: str, stamp: int) -> None:
        """Drop a rendered snapshot's series objects (their text is cached): keeps the view only."""
        with self._lock:
            snap = self.snapshots.get(name)
            if snap is not None and self._stamps.get(name) == stamp and snap.metrics:
                self.snapshots[name] = dataclasses.replace(snap, metrics=())

    def register(self, name: str, kind: str, interval: float | None = None) -> None:
        """Declare a target (again, after a reload: its kind and interval may have changed)."""
        with self._lock:
            st = self.status.setdefault(name, TargetStatus(name, kind))
            st.kind = kind
            if interval is not None:
                st.interval = float(interval)
            self._bump()

    def forget(self, name: str) -> None:
        """Drop a target that left the config, so its series and readiness go with it."""
        with self._lock:
            self.status.pop(name, None)
            self.snapshots.pop(name, None)
            self._stamps.pop(name, None)
            self._bump()

    def expire(self) -> list[str]:
        """Drop the data series of every target whose last success is older than its staleness
        bound (sanlens.freshness, the engine's rule too); its health series stay. The names dropped."""
        now = self.clock()
        with self._lock:
            gone = []
            for name, snap in self.snapshots.items():
                if snap.received is not None and now - snap.received > stale_after(self._interval(snap)):
                    gone.append(name)
            for name in gone:
                del self.snapshots[name]
                self._stamps.pop(name, None)
            if gone:
                self._bump()
        for name in gone:
            log.warning("target %s: no successful poll for too long; its data series are withdrawn", name)
        return gone

    def _interval(self, snap: Snapshot) -> float | None:
        """The interval staleness is counted in: the view's own (what the engine counts in), else
        the configured one."""
        iv = getattr(snap.view, "interval_s", None)
        if iv is None:
            st = self.status.get(snap.target)
            iv = st.interval if st is not None else None
        return iv

    def record_success(self, snap: Snapshot, duration: float) -> Snapshot:
        """Store a poll's snapshot, stamped with the receive clock; the snapshot as stored."""
        if snap.received is None:
            snap = dataclasses.replace(snap, received=self.clock())
        with self._lock:
            st = self.status.setdefault(snap.target, TargetStatus(snap.target, snap.kind))
            self.snapshots[snap.target] = snap
            st.up, st.polls, st.last_success, st.last_duration = True, st.polls + 1, snap.timestamp, duration
            self._bump()
            self._stamps[snap.target] = self.generation
        return snap

    def record_failure(self, name: str, kind: str, reason: str, message: str, duration: float | None) -> None:
        """Count a failed poll; ``duration`` None (a poll skipped, not run) keeps the last one."""
        with self._lock:
            st = self.status.setdefault(name, TargetStatus(name, kind))
            st.up, st.polls = False, st.polls + 1
            if duration is not None:
                st.last_duration = duration
            st.errors[reason] = st.errors.get(reason, 0) + 1
            st.last_error = message
            self._bump()

    def view(self) -> tuple[dict[str, Snapshot], dict[str, TargetStatus]]:
        with self._lock:
            return dict(self.snapshots), {k: _copy(v) for k, v in self.status.items()}

    def ready(self) -> bool:
        """Ready once every target has been polled at least once (successfully or not)."""
        with self._lock:
            return all(st.polls > 0 for st in self.status.values())


def _copy(st: TargetStatus) -> TargetStatus:
    return TargetStatus(
        st.name,
        st.kind,
        st.up,
        st.polls,
        st.last_success,
        st.last_duration,
        dict(st.errors),
        st.last_error,
        st.interval,
    )
