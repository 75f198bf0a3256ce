"""Bounded history the diagnoses need beyond the latest poll.

- per volume, a latency baseline taken only while no background operation
  touches it, so "1.4x the latency from before the operation" has a meaning;
- per background operation, its progress samples, for an ETA from the
  observed rate rather than a guess.
"""

from __future__ import annotations

import statistics
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from sanlens.diagnose.numeric import num, weighted_latency
from sanlens.model import BackgroundOp, HostView, OntapVersion, OntapView, VolumeStats

BASELINE_WINDOWS = 30  # pre-operation latency samples kept per volume
# ONTAP movement.state values of a move that is not (or no longer) moving data
IDLE_MOVE_STATES = frozenset({"", "done", "success", "failed", "aborted", "paused", "cutover_complete"})

OpKey = tuple[str, str, str, str, str, str]  # cluster, operation, aggregate, raid_group, svm, volume


@dataclass(frozen=True, slots=True)
class Progress:
    percent: float | None
    rate_per_s: float | None  # percent per second, observed
    eta_s: float | None
    started: float  # first time sanlens saw the operation


class Window:
    """A volume's last ``BASELINE_WINDOWS`` latencies, oldest overwritten first: 8 bytes each in an
    array, where a deque kept a float object each (5,000 volumes keep 150,000). The median read
    back does not depend on their order."""

    __slots__ = ("next", "values")

    def __init__(self) -> None:
        self.values: array[float] = array("d")
        self.next = 0  # the slot the next value overwrites once the window is full

    def append(self, value: float) -> None:
        if len(self.values) < BASELINE_WINDOWS:
            self.values.append(value)
            return
        self.values[self.next] = value
        self.next = (self.next + 1) % BASELINE_WINDOWS


def op_key(op: BackgroundOp) -> OpKey:
    return (op.cluster, op.operation, op.aggregate, op.raid_group, op.svm, op.volume)


def volume_latency(v: VolumeStats) -> float | None:
    avg = num(v.avg_latency_s)
    if avg is not None:
        return avg
    return weighted_latency(v.read_iops, v.write_iops, v.read_latency_s, v.write_latency_s)


def active_ops(view: OntapView) -> list[BackgroundOp]:
    """The view's background operations, plus volume moves seen only on the volume record."""
    ops = [op for op in view.background_ops if op.operation != "volume_move" or op.volume]
    moving = {(op.svm, op.volume) for op in ops if op.operation == "volume_move"}
    for v in view.volumes:
        if v.move_state.lower() not in IDLE_MOVE_STATES and (v.svm, v.volume) not in moving:
            ops.append(
                BackgroundOp(view.cluster, "volume_move", v.aggregate, v.volume, v.svm, "", v.move_percent)
            )
    return ops


def op_aggregate(view: OntapView, op: BackgroundOp) -> str:
    """The aggregate a background operation is charged to (a move: its volume's aggregate)."""
    if op.operation == "volume_move":
        for v in view.volumes:
            if v.svm == op.svm and v.volume == op.volume and v.aggregate:
                return v.aggregate
    return op.aggregate


def affected_volumes(view: OntapView, op: BackgroundOp) -> list[VolumeStats]:
    """RAID work slows every volume on its aggregate; a move slows the volume that moves."""
    if op.operation == "volume_move":
        return [v for v in view.volumes if v.svm == op.svm and v.volume == op.volume]
    return [v for v in view.volumes if v.aggregate and v.aggregate == op.aggregate]


class History:
    def __init__(self, size: int = 240) -> None:
        self.size = max(int(size), 2)  # progress samples kept per operation
        self._versions: dict[str, OntapVersion] = {}
        self._baseline: dict[tuple[str, str, str], Window] = {}
        self._progress: dict[OpKey, deque[tuple[float, float]]] = {}
        self._first_seen: dict[OpKey, float] = {}
        self.generation = 0  # moves whenever what the diagnoses read here may have changed

    # ---------------------------------------------------------------- feed
    def add_host(self, view: HostView) -> None:
        """Nothing of a host's past is needed yet: whole views are never kept (at 10,000 LUNs
        one is megabytes), only the few numbers the diagnoses read back."""

    def add_ontap(self, view: OntapView) -> None:
        self.generation += 1
        if view.version is not None:
            self._versions[view.cluster] = view.version
        ops = active_ops(view)
        busy = {(v.svm, v.volume) for op in ops for v in affected_volumes(view, op)}
        present = set()
        for v in view.volumes:
            key = (view.cluster, v.svm, v.volume)
            present.add(key)
            lat = volume_latency(v)
            if lat is not None and (v.svm, v.volume) not in busy:
                window = self._baseline.get(key)
                if window is None:
                    window = self._baseline[key] = Window()
                window.append(lat)
        for key in [k for k in self._baseline if k[0] == view.cluster and k not in present]:
            del self._baseline[key]
        self._track_progress(view, ops)

    def _track_progress(self, view: OntapView, ops: Iterable[BackgroundOp]) -> None:
        seen = set()
        for op in ops:
            k = op_key(op)
            seen.add(k)
            self._first_seen.setdefault(k, view.timestamp)
            if op.percent is None:
                continue
            samples = self._progress.setdefault(k, deque(maxlen=self.size))
            if samples and (op.percent < samples[-1][1] or view.timestamp <= samples[-1][0]):
                if op.percent < samples[-1][1]:  # restarted: the old rate means nothing
                    samples.clear()
                else:
                    continue
            samples.append((view.timestamp, float(op.percent)))
        for k in [k for k in self._first_seen if k[0] == view.cluster and k not in seen]:
            self._first_seen.pop(k, None)
            self._progress.pop(k, None)

    def forget(self, source: str) -> None:
        self.generation += 1
        self._versions.pop(source, None)
        for key in [k for k in self._baseline if k[0] == source]:
            del self._baseline[key]
        for op in [k for k in self._first_seen if k[0] == source]:
            self._first_seen.pop(op, None)
            self._progress.pop(op, None)

    # ---------------------------------------------------------------- read
    def version(self, cluster: str) -> OntapVersion | None:
        return self._versions.get(cluster)

    def baseline(self, cluster: str, svm: str, volume: str) -> float | None:
        """Median latency of the volume while no background operation touched it."""
        window = self._baseline.get((cluster, svm, volume))
        return statistics.median(window.values) if window is not None and window.values else None

    def progress(self, op: BackgroundOp) -> Progress:
        k = op_key(op)
        started = self._first_seen.get(k, 0.0)
        samples = self._progress.get(k)
        if not samples:
            return Progress(op.percent, None, None, started)
        (t0, p0), (t1, p1) = samples[0], samples[-1]
        rate = (p1 - p0) / (t1 - t0) if t1 > t0 else None
        eta = (100.0 - p1) / rate if rate and rate > 0 else None
        return Progress(p1, rate, max(eta, 0.0) if eta is not None else None, started)
