"""The pollers: deadline, one poll in flight, backoff, surviving anything, halting at once."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from sanlens.errors import SourceError
from sanlens.model import Snapshot
from sanlens.runtime.poller import (
    BACKOFF_MAX_S,
    MIN_INTERVAL_S,
    Poller,
    backoff,
    sane_interval,
)
from sanlens.store import State


class FakeSource:
    """A source whose poll runs ``behave``; counts polls and the most run at once."""

    kind = "ontap"

    def __init__(self, behave: Callable[[int], Snapshot], interval: float = 0.2, name: str = "t1") -> None:
        self.name, self.interval, self.behave = name, interval, behave
        self.polls = 0
        self.running = 0
        self.max_running = 0
        self.closed = threading.Event()
        self._lock = threading.Lock()

    def poll(self) -> Snapshot:
        with self._lock:
            self.polls += 1
            n = self.polls
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            return self.behave(n)
        finally:
            with self._lock:
                self.running -= 1

    def close(self) -> None:
        self.closed.set()


def snap(name: str = "t1") -> Snapshot:
    return Snapshot(target=name, kind="ontap", timestamp=time.time())


def wait_for(check: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    until = time.monotonic() + timeout
    while not check():
        if time.monotonic() > until:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def pollers() -> object:
    started: list[Poller] = []
    yield started
    for p in started:
        p.halt()
    for p in started:
        p.join(2)


def run(pollers: list[Poller], source: FakeSource, state: State, **kw: object) -> Poller:
    p = Poller(source, state, **kw)  # type: ignore[arg-type]
    pollers.append(p)
    p.start()
    return p


# ------------------------------------------------------------------ backoff
@pytest.mark.parametrize("failures", [0, 1, 2, 10, 64, 1025, 10**6, 10**18])
@pytest.mark.parametrize("interval", [0.0, -1.0, math.nan, 0.05, 1.0, 15.0, 60.0, 3600.0, 1e300, math.inf])
def test_backoff_takes_any_failure_count_and_interval(failures: int, interval: float) -> None:
    iv = sane_interval(interval)
    ceiling = max(iv, min(2 * iv, BACKOFF_MAX_S))
    for r in (0.0, 0.5, 0.999):
        wait = backoff(interval, failures, lambda r=r: r)
        assert iv <= wait <= ceiling
    assert sane_interval(interval) >= MIN_INTERVAL_S


def test_backoff_grows_to_two_intervals_and_five_minutes_with_jitter() -> None:
    assert backoff(15.0, 0) == backoff(15.0, 1) == 15.0
    assert backoff(15.0, 50, lambda: 0.0) == 30.0
    assert backoff(15.0, 50, lambda: 0.999) == pytest.approx(24.0, abs=0.01)
    assert len({backoff(15.0, 5) for _ in range(20)}) > 1  # jittered
    assert backoff(200.0, 9, lambda: 0.0) == BACKOFF_MAX_S
    assert backoff(3600.0, 9, lambda: 0.0) == 3600.0  # a long interval is never shortened


# ------------------------------------------------------------------ the deadline
def test_poll_past_its_deadline_is_abandoned_and_never_writes_its_snapshot(pollers: list[Poller]) -> None:
    release = threading.Event()

    def hang(n: int) -> Snapshot:
        if n == 1:
            release.wait(10)
        return snap()

    state, source = State(), FakeSource(hang, interval=0.4)
    started = time.monotonic()
    run(pollers, source, state, deadline_ratio=0.5, min_deadline=0.0)  # deadline 0.2 s
    wait_for(lambda: state.view()[1]["t1"].errors.get("deadline", 0) >= 1, what="the deadline")
    st = state.view()[1]["t1"]
    assert not st.up
    assert st.last_duration is not None and 0.18 <= st.last_duration < 0.6
    assert time.monotonic() - started < 1.0
    # the next ticks find the abandoned poll still running: skipped and counted, never run beside it
    wait_for(lambda: state.view()[1]["t1"].errors.get("busy", 0) >= 1, what="a skipped poll")
    assert source.polls == 1
    release.set()
    wait_for(lambda: "t1" in state.view()[0], what="a later poll's snapshot")
    assert source.max_running == 1
    first_written = state.view()[0]["t1"]
    assert first_written.timestamp > started + 0.4  # a later poll, not the abandoned one


def test_poll_longer_than_its_interval_but_within_the_deadline_runs_back_to_back(
    pollers: list[Poller],
) -> None:
    state = State()
    source = FakeSource(lambda n: (time.sleep(0.15), snap())[1], interval=0.1)
    run(pollers, source, state, min_deadline=1.0)
    wait_for(lambda: state.view()[1]["t1"].polls >= 5, what="five polls")
    st = state.view()[1]["t1"]
    assert st.errors == {} and st.up
    assert source.max_running == 1


def test_abandoned_poll_that_ends_later_writes_nothing(pollers: list[Poller]) -> None:
    release = threading.Event()
    state = State()
    source = FakeSource(lambda n: (release.wait(10), snap())[1], interval=30.0)
    run(pollers, source, state, deadline_ratio=0.01, min_deadline=0.0)  # deadline 0.3 s, next poll in 30 s
    wait_for(lambda: state.view()[1]["t1"].errors.get("deadline", 0) == 1, what="the deadline")
    release.set()
    wait_for(lambda: source.running == 0, what="the abandoned poll to end")
    time.sleep(0.1)
    snaps, status = state.view()
    assert snaps == {}
    assert status["t1"].polls == 1 and not status["t1"].up


# ------------------------------------------------------------------ surviving
def test_poller_survives_every_kind_of_failure_and_recovers(pollers: list[Poller]) -> None:
    def flaky(n: int) -> Snapshot:
        failures: list[BaseException] = [
            RuntimeError("boom"),
            SourceError("denied", reason="auth"),
            OverflowError("int too large"),
            KeyError("x"),
        ]
        if n <= len(failures):
            raise failures[n - 1]
        if n == len(failures) + 1:
            return None  # type: ignore[return-value]  # a broken source
        return snap()

    state = State()
    p = run(pollers, FakeSource(flaky, interval=0.1), state)
    # the poller publishes the success, then clears its count of failures in a row
    wait_for(lambda: state.view()[1]["t1"].up and p.failures == 0, timeout=10, what="recovery")
    st = state.view()[1]["t1"]
    assert st.errors == {"internal": 4, "auth": 1}
    assert p.is_alive()


def test_poller_survives_1025_failures_in_a_row(pollers: list[Poller]) -> None:
    def fail(n: int) -> Snapshot:
        raise SourceError("down", reason="connection")

    state = State()
    source = FakeSource(fail, interval=0.1)
    p = Poller(source, state)
    pollers.append(p)
    p.failures = 1024
    p.start()
    wait_for(lambda: p.failures >= 1026, what="two more failures")
    assert p.is_alive()
    assert state.view()[1]["t1"].errors["connection"] >= 2


def test_a_poll_that_cannot_start_does_not_wedge_the_poller(pollers: list[Poller]) -> None:
    class NoThreadOnce(Poller):
        starts = 0

        def _start_worker(self, attempt: Any) -> None:
            self.starts += 1
            if self.starts == 1:
                raise RuntimeError("can't start new thread")
            super()._start_worker(attempt)

    state = State()
    p = NoThreadOnce(FakeSource(lambda n: snap(), interval=0.1), state)
    pollers.append(p)
    p.start()
    wait_for(lambda: state.view()[1]["t1"].up, what="the next poll")
    assert state.view()[1]["t1"].errors == {"internal": 1}
    assert p.is_alive()


@pytest.mark.parametrize("interval", [1e12, 1e300, math.inf])
def test_poller_survives_a_huge_interval_and_still_halts_at_once(
    pollers: list[Poller], interval: float
) -> None:
    state = State()
    source = FakeSource(lambda n: snap(), interval=interval)
    p = run(pollers, source, state)
    wait_for(lambda: state.view()[1]["t1"].up, what="the first poll")
    time.sleep(0.2)
    assert p.is_alive() and source.polls == 1
    t = time.monotonic()
    p.halt()
    p.join(1)
    assert not p.is_alive() and time.monotonic() - t < 0.5
    assert source.closed.is_set()


def test_zero_interval_does_not_spin(pollers: list[Poller]) -> None:
    state = State()
    source = FakeSource(lambda n: snap(), interval=0.0)
    run(pollers, source, state)
    time.sleep(0.5)
    assert 1 <= source.polls <= 0.5 / MIN_INTERVAL_S + 2


def test_recovers_within_two_intervals_after_a_long_outage(pollers: list[Poller]) -> None:
    down = threading.Event()
    down.set()

    def maybe(n: int) -> Snapshot:
        if down.is_set():
            raise SourceError("refused", reason="connection")
        return snap()

    state = State()
    p = run(pollers, FakeSource(maybe, interval=0.2), state)
    wait_for(lambda: p.failures >= 8, what="a long outage")
    down.clear()
    t = time.monotonic()
    wait_for(lambda: state.view()[1]["t1"].up, what="recovery")
    assert time.monotonic() - t <= 2 * 0.2 + 0.3


# ------------------------------------------------------------------ halting
def test_halt_returns_at_once_with_a_hung_poll_and_the_worker_closes_the_source(
    pollers: list[Poller],
) -> None:
    release = threading.Event()
    state = State()
    source = FakeSource(lambda n: (release.wait(10), snap())[1], interval=60.0)
    p = run(pollers, source, state)
    wait_for(lambda: source.running == 1, what="the poll to start")
    t = time.monotonic()
    p.halt()
    p.join(1)
    assert not p.is_alive() and time.monotonic() - t < 0.5
    assert not source.closed.is_set()  # not under the running poll's feet
    release.set()
    assert source.closed.wait(2)
    assert state.view()[0] == {}  # nor did the halted poll write


def test_shared_stop_event_ends_the_poller(pollers: list[Poller]) -> None:
    stop = threading.Event()
    state = State()
    p = run(pollers, FakeSource(lambda n: snap(), interval=60.0), state, stop=stop)
    wait_for(lambda: state.view()[1]["t1"].polls == 1, what="the first poll")
    stop.set()
    p.join(1)
    assert not p.is_alive()


# ------------------------------------------------------------------ state
def test_state_forgets_a_target_and_a_skipped_poll_keeps_the_last_duration() -> None:
    state = State()
    state.register("a", "ontap", 60)
    state.record_success(snap("a"), 1.5)
    state.record_failure("a", "ontap", "busy", "still running", None)
    st = state.view()[1]["a"]
    assert st.last_duration == 1.5 and st.errors == {"busy": 1} and not st.up
    state.register("a", "windows_exporter", 15)
    assert state.view()[1]["a"].kind == "windows_exporter"
    state.forget("a")
    assert state.view() == ({}, {})
    assert state.ready()
