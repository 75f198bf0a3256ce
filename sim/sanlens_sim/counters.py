"""Cumulative counters from wall-clock time x rates, integrated piecewise.

A :class:`CounterSet` holds, for one kind of object (LUNs, volumes, nodes, ...),
one row per object and one column per counter. Its value at time ``t`` is
``base + Σ_segment rate_segment · overlap(segment, t)``: the scenario's phases
(a rebuild that starts after 30 s) and live scenario switches are segments, so
the counters never go backwards and any poll timing gives consistent deltas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Rates = Mapping[str, float]


class CounterSet:
    """Counters of one object kind: rows ``keys`` x columns ``names``."""

    def __init__(
        self,
        keys: Sequence[str],
        names: Sequence[str],
        phases: Sequence[tuple[float, Sequence[Rates]]],
        base: Sequence[Sequence[float]],
    ) -> None:
        """``phases``: (absolute start time, one rate mapping per key), sorted by start."""
        self.keys = list(keys)
        self.names = list(names)
        self.index = {k: i for i, k in enumerate(self.keys)}
        self.col = {n: j for j, n in enumerate(self.names)}
        self.base = [list(row) for row in base]
        self.segments: list[tuple[float, list[list[float]]]] = [
            (start, [[float(r.get(n, 0.0)) for n in self.names] for r in rates]) for start, rates in phases
        ]

    @classmethod
    def build(
        cls,
        keys: Sequence[str],
        names: Sequence[str],
        phases: Sequence[tuple[float, Sequence[Rates]]],
        initial: Sequence[Rates],
        previous: CounterSet | None,
        now: float,
    ) -> CounterSet:
        """A new set starting at ``now``; rows also present in ``previous`` continue from its values."""
        base: list[list[float]] = []
        for i, k in enumerate(keys):
            row = [float(initial[i].get(n, 0.0)) for n in names]
            if previous is not None and k in previous.index:
                old = previous.row(previous.index[k], now)
                for j, n in enumerate(names):
                    pj = previous.col.get(n)
                    if pj is not None:
                        row[j] = old[pj]
            base.append(row)
        return cls(keys, names, phases, base)

    def row(self, i: int, t: float) -> list[float]:
        """The cumulative values of row ``i`` at time ``t``."""
        out = list(self.base[i])
        segs = self.segments
        for s, (start, rates) in enumerate(segs):
            if t <= start:
                break
            end = segs[s + 1][0] if s + 1 < len(segs) else t
            dt = min(t, end) - start
            if dt <= 0:
                continue
            r = rates[i]
            for j, v in enumerate(r):
                if v:
                    out[j] += v * dt
        return out

    def value(self, key: str, name: str, t: float) -> float:
        return self.row(self.index[key], t)[self.col[name]]

    def rate(self, key: str, name: str, t: float) -> float:
        """The rate in force at ``t`` (for tests and ``/-/sim/state``)."""
        current = self.segments[0][1]
        for start, rates in self.segments:
            if start <= t:
                current = rates
        return current[self.index[key]][self.col[name]]

    def reset(self, now: float) -> None:
        """Counter reset (reboot, takeover): every counter restarts from zero at ``now``."""
        self.base = [[0.0] * len(self.names) for _ in self.keys]
        kept: list[tuple[float, list[list[float]]]] = []
        for s, (start, rates) in enumerate(self.segments):
            end = self.segments[s + 1][0] if s + 1 < len(self.segments) else float("inf")
            if end <= now:
                continue
            kept.append((max(start, now), rates))
        self.segments = kept
