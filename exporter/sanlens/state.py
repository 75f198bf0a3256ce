"""Shared runtime state and the background pollers.

Sources poll on their own schedule in threads; a scrape only reads the latest
immutable snapshots stored here, so it never touches ONTAP or a host.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sanlens.errors import SourceError
from sanlens.freshness import ReceiveClock, stale_after
from sanlens.join import LunDirectory
from sanlens.model import Metric, Snapshot
from sanlens.urls import redact

log = logging.getLogger(__name__)

POLL_DEADLINE_RATIO = 0.8
"""Share of its interval a poll may run before it is abandoned (reason ``deadline``).

Per-request timeouts restart with every byte received, so a server that trickles its
answer would hold a poll forever; only an overall deadline bounds it."""
MIN_POLL_DEADLINE_S = 2.0
"""Floor of that deadline, so that a test or demo interval of a second or two does not
abandon polls that merely take longer than the interval."""


def poll_budget(
    interval: float, ratio: float = POLL_DEADLINE_RATIO, floor: float = MIN_POLL_DEADLINE_S
) -> float:
    """Seconds a poll of ``interval`` may run: a share of the interval, not below the floor."""
    return max(interval * ratio, floor)


MIN_INTERVAL_S = 0.1
"""A shorter interval (or zero, negative, NaN) is read as this, so a poller never spins."""
BACKOFF_MAX_INTERVALS = 2.0
"""Failing polls back off to at most this many intervals, so a target is polled again
within about two intervals of the end of an outage."""
BACKOFF_MAX_S = 300.0
"""... and the backoff never exceeds five minutes (a longer interval is kept as it is)."""
BACKOFF_JITTER = 0.2
"""A backed-off wait is shortened by up to this share, so targets that failed together
do not retry in lockstep."""
ABORT_GRACE_S = 0.5
"""How long a poller waits for an aborted poll's worker to return before going on."""
_MAX_WAIT_S = 1e6  # one wait call; threading rejects timeouts beyond threading.TIMEOUT_MAX
_STOP_CHECK_S = 0.1  # slice of each wait when the poller also watches a shared stop event
_ERROR_PAUSE_S = 1.0  # after an unexpected error in the poller itself


class Source(Protocol):
    """One polled target: an ONTAP cluster or a host."""

    name: str
    kind: str  # "ontap" | "windows_exporter" | "winrm" | "perfmon" | "node_exporter"
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
    """Latest snapshot and health per target; thread-safe by swapping immutable values under a lock.

    ``clock`` is the exporter's receive clock (sanlens.freshness): every snapshot is stamped
    with it on arrival, and a target whose last one is older than ``stale_after`` its
    interval loses its data series (``expire``); its health series stay.
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._lock = threading.Lock()
        self.snapshots: dict[str, Snapshot] = {}
        self.status: dict[str, TargetStatus] = {}
        self.engine: Engine | None = None
        self.clock: Callable[[], float] = clock or ReceiveClock()
        self.started = time.time()
        self.generation = 0  # bumped on every change a /metrics body shows
        self.changed = threading.Condition(self._lock)
        self._stamps: dict[str, int] = {}  # target -> generation its snapshot arrived in
        self.observers: list[Callable[[Snapshot], None]] = []  # told of every stored snapshot
        self.directory: LunDirectory | None = None  # the host-array join, for its status series

    def _bump(self) -> None:
        """Under the lock: something the exposition shows changed."""
        self.generation += 1
        self.changed.notify_all()

    def touch(self) -> None:
        """Something outside the snapshots changed (the engine's config): render again."""
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

    def record_success(self, snap: Snapshot, duration: float) -> None:
        if snap.received is None:
            snap = dataclasses.replace(snap, received=self.clock())
        for observe in self.observers:
            try:
                observe(snap)
            except Exception:
                log.exception("observer failed on %s", snap.target)
        with self._lock:
            st = self.status.setdefault(snap.target, TargetStatus(snap.target, snap.kind))
            self.snapshots[snap.target] = snap
            st.up, st.polls, st.last_success, st.last_duration = True, st.polls + 1, snap.timestamp, duration
            self._bump()
            self._stamps[snap.target] = self.generation
        if self.engine is not None:
            try:
                self.engine.update(snap)
            except Exception:  # a diagnosis bug must not stop polling
                log.exception("diagnosis engine failed on %s", snap.target)
            if not getattr(self.engine, "deferred", False):  # a deferred one says when it has judged
                with self._lock:
                    self._bump()

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


def _abort(source: Source) -> None:
    abort = getattr(source, "abort", None)
    if abort is None:
        return
    try:
        abort()
    except Exception:
        log.debug("abort %s failed", source.name, exc_info=True)


def sane_interval(interval: object) -> float:
    """A source's interval as a usable number of seconds (at least MIN_INTERVAL_S; may be inf)."""
    try:
        value = float(interval)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return MIN_INTERVAL_S
    return value if value > MIN_INTERVAL_S else MIN_INTERVAL_S  # NaN compares false


def backoff(interval: float, failures: int, rand: Callable[[], float] = random.random) -> float:
    """Seconds from the start of one poll to the next after ``failures`` failures in a row.

    The interval doubles per failure up to two intervals and five minutes (never below the
    interval itself), less up to 20% jitter; any failure count and any interval are fine.
    """
    interval = sane_interval(interval)
    if failures <= 1:
        return interval
    cap = min(BACKOFF_MAX_INTERVALS * interval, BACKOFF_MAX_S)
    grown = min(interval * 2.0 ** min(failures - 1, 64), cap)
    return max(interval, grown * (1.0 - BACKOFF_JITTER * rand()))


@dataclass(eq=False)
class _Attempt:
    """One poll in its worker thread; the poller's condition guards every field."""

    start: float
    outcome: str | None = None  # "ok" or the failure reason, once recorded in time
    abandoned: bool = False  # past its deadline or the poller halted: its result is dropped
    finished: bool = False  # the worker returned (an abandoned one may run long after)


class Poller(threading.Thread):
    """Polls one source until halted, each poll in a worker thread bounded by a deadline.

    At most one poll per target runs at a time: while an abandoned one is still running,
    the next is skipped and counted (reason ``busy``). Failures back off (see ``backoff``).
    ``stop`` is an optional shared event that ends the poller too; ``halt`` ends it at once.
    """

    def __init__(
        self,
        source: Source,
        state: State,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        deadline_ratio: float = POLL_DEADLINE_RATIO,
        min_deadline: float = MIN_POLL_DEADLINE_S,
        rand: Callable[[], float] = random.random,
    ) -> None:
        super().__init__(name=f"poll-{source.name}", daemon=True)
        self.source, self.state, self.stop_event, self.clock = source, state, stop, clock
        self.deadline_ratio, self.min_deadline, self.rand = deadline_ratio, min_deadline, rand
        self.failures = 0  # in a row; drives the backoff
        self._cond = threading.Condition()
        self._halt_requested = False
        self._current: _Attempt | None = None
        self._close_pending = False  # the last worker closes the source when it returns
        self._slice = _MAX_WAIT_S if stop is None else _STOP_CHECK_S
        state.register(source.name, source.kind, source.interval)

    @property
    def stopped(self) -> bool:
        return self._halt_requested or (self.stop_event is not None and self.stop_event.is_set())

    def deadline(self, interval: float) -> float:
        """Seconds a poll may run: a share of the interval, not below ``min_deadline``."""
        return poll_budget(interval, self.deadline_ratio, self.min_deadline)

    def halt(self) -> None:
        """Stop polling. From its return on, no poll of this poller writes to the state."""
        with self._cond:
            self._halt_requested = True
            running = self._current is not None and not self._current.finished
            if self._current is not None:
                self._current.abandoned = True
            self._cond.notify_all()
        if running:
            _abort(self.source)

    def run(self) -> None:
        try:
            while not self.stopped:
                try:
                    self._wait_until(self._cycle())
                except Exception as e:  # a bug here must not end the polling of this target
                    log.exception("poller %s: unexpected error, polling on", self.source.name)
                    self.failures += 1
                    with contextlib.suppress(Exception):
                        self.state.record_failure(
                            self.source.name, self.source.kind, "internal", type(e).__name__, None
                        )
                    with self._cond:
                        self._cond.wait_for(lambda: self.stopped, _ERROR_PAUSE_S)
        finally:
            self._finish()

    # ------------------------------------------------------------ one poll
    def _cycle(self) -> float:
        """Run (or skip) one poll; returns the clock time the next one starts."""
        name, kind = self.source.name, self.source.kind
        interval = sane_interval(self.source.interval)
        start = self.clock()
        with self._cond:
            previous = self._current  # busy only if abandoned and still running, not merely ending
            busy = previous is not None and previous.outcome is None and not previous.finished
            attempt = None if busy else _Attempt(start)
            if attempt is not None:
                self._current = attempt
        if attempt is None:
            self.failures += 1
            self.state.record_failure(name, kind, "busy", "the previous poll is still running", None)
            log.warning(
                "poll %s skipped: the previous one, abandoned at its deadline, is still running", name
            )
            return start + backoff(interval, self.failures, self.rand)
        try:
            self._start_worker(attempt)
        except BaseException:  # e.g. no thread to be had: this poll never ran, the next one may
            with self._cond:
                attempt.finished = True
            raise
        deadline = start + self.deadline(interval)
        with self._cond:
            while attempt.outcome is None and not attempt.abandoned and not self.stopped:
                left = deadline - self.clock()
                if left <= 0:
                    attempt.abandoned = True
                    break
                self._cond.wait(min(left, self._slice))
            overran = attempt.abandoned and not self.stopped
            outcome = attempt.outcome
        if overran:
            self.failures += 1
            spent = self.clock() - start
            self.state.record_failure(name, kind, "deadline", f"poll abandoned after {spent:.1f}s", spent)
            log.warning("poll %s abandoned at its deadline after %.1fs", name, spent)
        if overran or (self.stopped and not attempt.finished):
            _abort(self.source)  # a poll stuck on a trickling answer ends now, its connections cut
            with self._cond:  # and its worker returns at once, so the next poll is not "busy"
                self._cond.wait_for(lambda: attempt.finished or self._halt_requested, ABORT_GRACE_S)
        elif outcome is not None:
            self.failures = 0 if outcome == "ok" else self.failures + 1
        return start + backoff(interval, self.failures, self.rand)

    def _start_worker(self, attempt: _Attempt) -> None:
        threading.Thread(target=self._work, args=(attempt,), name=f"{self.name}-work", daemon=True).start()

    def _work(self, attempt: _Attempt) -> None:
        """The poll itself; its result is recorded only if the poller still waits for it."""
        name = self.source.name
        try:
            snap, reason, message = self._poll()
            duration = self.clock() - attempt.start
            with self._cond:
                if attempt.abandoned:
                    why = "its poller stopped" if self.stopped else "past its deadline"
                    log.info("poll %s ended after %.1fs, %s: result dropped", name, duration, why)
                    return
                try:
                    if snap is not None:
                        self.state.record_success(snap, duration)
                    else:
                        self.state.record_failure(name, self.source.kind, reason, message, duration)
                        log.warning("poll %s failed (%s): %s", name, reason, message)
                except Exception:
                    log.exception("poll %s: recording its result failed", name)
                    reason = reason or "internal"
                attempt.outcome = reason or "ok"
        finally:
            with self._cond:
                attempt.finished = True
                close = self._close_pending and attempt is self._current
                self._cond.notify_all()
            if close:
                self._close_source()

    def _poll(self) -> tuple[Snapshot | None, str, str]:
        """(snapshot, "", "") or (None, reason, message): every exception becomes a reason."""
        try:
            snap = self.source.poll()
        except SourceError as e:
            return None, e.reason or "error", redact(str(e))  # shown at /status and in the log
        except Exception as e:  # unexpected: keep polling, count it
            log.exception("poll %s crashed", self.source.name)
            return None, "internal", type(e).__name__
        if not isinstance(snap, Snapshot):
            return None, "internal", f"poll returned {type(snap).__name__}, not a snapshot"
        return snap, "", ""

    # ------------------------------------------------------------ waiting, ending
    def _wait_until(self, when: float) -> None:
        with self._cond:
            while not self.stopped:
                left = when - self.clock()
                if not left > 0:
                    return
                self._cond.wait(min(left, self._slice))

    def _finish(self) -> None:
        """Close the source now, or when the poll still running returns."""
        with self._cond:
            current = self._current
            if current is not None and not current.finished:
                current.abandoned = True
                self._close_pending = True
                return
        self._close_source()

    def _close_source(self) -> None:
        try:
            self.source.close()
        except Exception:
            log.debug("close %s failed", self.source.name, exc_info=True)
