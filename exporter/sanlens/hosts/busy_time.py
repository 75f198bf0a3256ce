"""Linux busy time (diskstats field 10, iostat's ``%util``) read as an idle ratio that holds on every kernel.

From 5.0 the block layer's ``update_io_ticks`` adds a whole jiffy whenever a request starts in a
jiffy the counter has not yet charged (kernel ``Documentation/admin-guide/iostats.rst``: "since 5.0
this field counts jiffies when at least one request was started or completed"). Short I/Os at low
queue depth then read busy most of the time: at HZ=250, 500 reads/s of 0.3 ms charge up to 500 of 250
jiffies a second, so ~88 % busy against the 15 % the device was. "block: support to account io_ticks
precisely" (upstream 99dc422335d8, mainline 6.10, backported to 6.1.93 and other stable branches in
June 2024) charges only jiffies with a request in flight; a kernel's version alone does not say
which a host runs.

A device can only be busy while at least one request is in flight, and the share of time with one
or more in flight is at most the mean number in flight. That mean is Little's law over each kind's
completions (rate x mean time, reads, writes, discards and flushes alike, since any of them keeps the
device busy), so ``busy <= min(1, Σ rate x await)`` on every kernel, and the bound costs nothing
where busy time is already right. Its limit is the same clock: a request counts in the interval it
completes, so an interval that ends with a long request still in flight reads less busy than it was.
"""

from __future__ import annotations

from collections.abc import Iterable


def in_flight(pairs: Iterable[tuple[float | None, float | None]]) -> float | None:
    """Mean requests in flight by Little's law: Σ rate x mean time over the kinds that report both.

    None when nothing completed: a request's time is counted when it completes, so a device busy
    with requests that never complete (a hung path) would otherwise read as idle.
    """
    total, completed = 0.0, False
    for rate, await_s in pairs:
        if rate is not None and await_s is not None and rate > 0:
            total += rate * max(await_s, 0.0)
            completed = True
    return total if completed else None


def bounded_busy(busy_ratio: float | None, mean_in_flight: float | None) -> float | None:
    """The busy ratio no greater than the mean number in flight (nor outside 0..1)."""
    if busy_ratio is None:
        return None
    busy = busy_ratio if mean_in_flight is None else min(busy_ratio, mean_in_flight)
    return min(max(busy, 0.0), 1.0)


def idle_from_busy(busy_ratio: float | None, mean_in_flight: float | None) -> float | None:
    """Idle = 1 - busy, with busy bounded by the mean number in flight."""
    busy = bounded_busy(busy_ratio, mean_in_flight)
    return None if busy is None else 1.0 - busy
