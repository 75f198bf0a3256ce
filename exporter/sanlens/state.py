"""Shared runtime state and the background pollers.

Sources poll on their own schedule in threads; a scrape only reads the latest
immutable snapshots stored here, so it never touches ONTAP or a host.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sanlens.errors import SourceError
from sanlens.model import Metric, Snapshot

log = logging.getLogger(__name__)


class Source(Protocol):
    """One polled target: an ONTAP cluster or a host."""

    name: str
    kind: str  # "ontap" | "windows_exporter" | "winrm" | "perfmon"
    interval: float

    def poll(self) -> Snapshot:
        """Return a fresh snapshot, or raise SourceError (with a reason) on failure."""
        ...

    def close(self) -> None: ...


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
    """Latest snapshot and health per target; thread-safe by swapping immutable values under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.snapshots: dict[str, Snapshot] = {}
        self.status: dict[str, TargetStatus] = {}
        self.engine: Engine | None = None
        self.started = time.time()

    def register(self, name: str, kind: str, interval: float | None = None) -> None:
        with self._lock:
            st = self.status.setdefault(name, TargetStatus(name, kind))
            if interval is not None:
                st.interval = float(interval)

    def record_success(self, snap: Snapshot, duration: float) -> None:
        with self._lock:
            st = self.status.setdefault(snap.target, TargetStatus(snap.target, snap.kind))
            self.snapshots[snap.target] = snap
            st.up, st.polls, st.last_success, st.last_duration = True, st.polls + 1, snap.timestamp, duration
        if self.engine is not None:
            try:
                self.engine.update(snap)
            except Exception:  # a diagnosis bug must not stop polling
                log.exception("diagnosis engine failed on %s", snap.target)

    def record_failure(self, name: str, kind: str, reason: str, message: str, duration: float) -> None:
        with self._lock:
            st = self.status.setdefault(name, TargetStatus(name, kind))
            st.up, st.polls, st.last_duration = False, st.polls + 1, duration
            st.errors[reason] = st.errors.get(reason, 0) + 1
            st.last_error = message

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


class Poller(threading.Thread):
    """Polls one source forever; failures back off exponentially (auth failures too), with jitter."""

    def __init__(
        self, source: Source, state: State, stop: threading.Event, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(name=f"poll-{source.name}", daemon=True)
        self.source, self.state, self.stop_event, self.clock = source, state, stop, clock
        state.register(source.name, source.kind, source.interval)

    def run(self) -> None:
        failures = 0
        while not self.stop_event.is_set():
            start = self.clock()
            try:
                snap = self.source.poll()
            except SourceError as e:
                failures += 1
                self.state.record_failure(
                    self.source.name, self.source.kind, e.reason, str(e), self.clock() - start
                )
                log.warning("poll %s failed (%s): %s", self.source.name, e.reason, e)
            except Exception as e:  # unexpected: keep polling, count it
                failures += 1
                self.state.record_failure(
                    self.source.name, self.source.kind, "internal", type(e).__name__, self.clock() - start
                )
                log.exception("poll %s crashed", self.source.name)
            else:
                failures = 0
                self.state.record_success(snap, self.clock() - start)
            elapsed = self.clock() - start
            wait = max(self.source.interval - elapsed, 0.0)
            if failures:
                backoff = min(self.source.interval * (2 ** (failures - 1)), 600.0)
                wait = max(wait, backoff * random.uniform(0.8, 1.2))
            self.stop_event.wait(wait)
        try:
            self.source.close()
        except Exception:
            log.debug("close %s failed", self.source.name, exc_info=True)
