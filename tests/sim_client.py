"""The simulator on a hand-moved clock, and its counter rows as a test reads them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sanlens_sim.server import Simulator


class Clock:
    """A clock the test moves by hand, so counter deltas are exact."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


@contextmanager
def running(scenario: str, real_time: bool = False, **knobs: Any) -> Iterator[tuple[Simulator, Clock]]:
    """The simulator on a hand-moved clock, or on the wall clock when the exporter's own poll
    timing must agree with the counters (``real_time``)."""
    clock = Clock()
    s = Simulator(scenario, port=0, clock=time.time if real_time else clock, **knobs).start()
    try:
        yield s, clock
    finally:
        s.stop()


def record_counters(rec: dict[str, Any]) -> dict[str, Any]:
    """One counter-table record's counters by name; an array counter as a dict by its labels."""
    return {
        c["name"]: dict(zip(c["labels"], c["values"], strict=True)) if "labels" in c else c["value"]
        for c in rec["counters"]
    }
