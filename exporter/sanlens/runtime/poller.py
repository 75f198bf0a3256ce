"""The background pollers: each source polled on its own schedule, in a thread.

A poll runs in a worker thread bounded by a deadline; its result goes to a ``Sink`` (the
runtime's ``Pipeline``: join, store, engine; or a bare ``State``), so a scrape only ever
reads what is stored and never touches ONTAP or a host.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sanlens.errors import SourceError
from sanlens.model import Snapshot
from sanlens.source import MIN_POLL_DEADLINE_S, POLL_DEADLINE_RATIO, Source, poll_budget
from sanlens.urls import redact

log = logging.getLogger(__name__)

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


class Sink(Protocol):
    """Where a poller's results go."""

    def register(self, name: str, kind: str, interval: float | None = None) -> None: ...

    def record_success(self, snap: Snapshot, duration: float) -> object: ...

    def record_failure(
        self, name: str, kind: str, reason: str, message: str, duration: float | None
    ) -> None: ...


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
        sink: Sink,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        deadline_ratio: float = POLL_DEADLINE_RATIO,
        min_deadline: float = MIN_POLL_DEADLINE_S,
        rand: Callable[[], float] = random.random,
    ) -> None:
        super().__init__(name=f"poll-{source.name}", daemon=True)
        self.source, self.sink, self.stop_event, self.clock = source, sink, stop, clock
        self.deadline_ratio, self.min_deadline, self.rand = deadline_ratio, min_deadline, rand
        self.failures = 0  # in a row; drives the backoff
        self._cond = threading.Condition()
        self._halt_requested = False
        self._current: _Attempt | None = None
        self._close_pending = False  # the last worker closes the source when it returns
        self._slice = _MAX_WAIT_S if stop is None else _STOP_CHECK_S
        sink.register(source.name, source.kind, source.interval)

    @property
    def stopped(self) -> bool:
        return self._halt_requested or (self.stop_event is not None and self.stop_event.is_set())

    def deadline(self, interval: float) -> float:
        """Seconds a poll may run: a share of the interval, not below ``min_deadline``."""
        return poll_budget(interval, self.deadline_ratio, self.min_deadline)

    def halt(self) -> None:
        """Stop polling. From its return on, no poll of this poller writes to its sink."""
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
                        self.sink.record_failure(
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
            self.sink.record_failure(name, kind, "busy", "the previous poll is still running", None)
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
            self.sink.record_failure(name, kind, "deadline", f"poll abandoned after {spent:.1f}s", spent)
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
                        self.sink.record_success(snap, duration)
                    else:
                        self.sink.record_failure(name, self.source.kind, reason, message, duration)
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
