"""One streaming pass over a PerfMon log: per-counter statistics, percentiles and the disk intervals.

Speed matters (1 GB logs): rows arrive in numeric batches (``perfmon_batches``,
from the Python or the Arrow reader, chosen by the file's shape) and every
statistic is folded per batch by numpy. The same pass folds the disk columns
(PhysicalDisk, or LogicalDisk volumes in a log without per-disk PhysicalDisk
counters: ``sanlens.hosts.perfmon_disks``) into analysis intervals
(``host_intervals``) for the diagnose engine, so a log is read once, whatever its size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sanlens.analyze.host_intervals import HostIntervals
from sanlens.analyze.perfmon_batch import Batch
from sanlens.analyze.perfmon_batches import choose_engine, estimated_rows, last_timestamp, python_batches
from sanlens.analyze.quantiles import ColumnQuantiles
from sanlens.analyze.source import InputSource, as_source
from sanlens.hosts.perfmon import CounterPath, PerfmonLog, PerfmonParseError
from sanlens.hosts.perfmon_disks import DiskSelection, select_disks
from sanlens.model import iso_utc

Progress = Callable[[int], None]  # bytes read so far
# Values near the float maximum (1e308) overflow a plain sum; the same sum scaled down by a
# power of two (exact) cannot, and still gives the mean.
_SCALE = 2.0**-600


@dataclass
class ColumnStats:
    column: CounterPath
    samples: int = 0
    min: float = float("inf")
    max: float = float("-inf")
    total: float = 0.0
    p95: float | None = None
    p99: float | None = None
    scaled_total: float = 0.0  # the sum times _SCALE: finite where ``total`` overflows

    @property
    def mean(self) -> float | None:
        if not self.samples:
            return None
        if math.isfinite(self.total):
            return self.total / self.samples
        return self.scaled_total / self.samples / _SCALE  # may still be inf: the JSON writes null

    def as_json(self) -> dict[str, Any]:
        c = self.column
        return {
            "path": c.path,
            "host": c.host,
            "object": c.object,
            "instance": c.instance,
            "counter": c.counter,
            "samples": self.samples,
            "min": self.min if self.samples else None,
            "max": self.max if self.samples else None,
            "mean": self.mean,
            "p95": self.p95,
            "p99": self.p99,
        }


@dataclass
class LogSummary:
    path: str
    kind: str
    columns: list[ColumnStats]
    samples: int = 0
    start: float | None = None
    end: float | None = None
    warnings: list[str] = field(default_factory=list)
    engine: str = "python"  # or "arrow": which reader produced the statistics
    intervals: HostIntervals | None = None  # disk columns, for the engine and the charts
    unknown_disk_counters: list[str] = field(default_factory=list)
    disks: DiskSelection = field(default_factory=DiskSelection)  # which object's instances are the disks

    @property
    def hosts(self) -> list[str]:
        seen: dict[str, str] = {}
        for c in self.columns:
            if c.column.host:
                seen.setdefault(c.column.host.upper(), c.column.host)
        return sorted(seen.values(), key=str.upper)

    def input_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "hosts": self.hosts,
            "samples": self.samples,
            "counters": len(self.columns),
            "start": iso_utc(self.start, milliseconds=True),
            "end": iso_utc(self.end, milliseconds=True),
        }


class _Fold:
    """Column statistics of the batches seen so far."""

    def __init__(self, ncols: int, intervals: HostIntervals) -> None:
        self.n = np.zeros(ncols, dtype=np.int64)
        self.lo = np.full(ncols, np.inf)
        self.hi = np.full(ncols, -np.inf)
        self.total = np.zeros(ncols)
        self.scaled = np.zeros(ncols)
        self.q = ColumnQuantiles(ncols)
        self.intervals = intervals
        self.rows = 0
        self.first: float | None = None
        self.last: float | None = None

    def add(self, b: Batch) -> None:
        v = b.values
        ok = np.isfinite(v)
        self.n += ok.sum(axis=0)
        self.lo = np.fmin(self.lo, np.where(ok, v, np.inf).min(axis=0))
        self.hi = np.fmax(self.hi, np.where(ok, v, -np.inf).max(axis=0))
        clean = np.where(ok, v, 0.0)
        self.total += clean.sum(axis=0)
        self.scaled += (clean * _SCALE).sum(axis=0)
        self.q.add(v)
        self.intervals.add(b.times, v)
        if self.first is None:
            self.first = float(b.times[0])
        self.last = float(b.times[-1])
        self.rows += len(b.times)

    def fill(self, summary: LogSummary) -> None:
        p95s, p99s = self.q.quantiles((0.95, 0.99))
        for i, st in enumerate(summary.columns):
            st.samples = int(self.n[i])
            st.total = float(self.total[i])
            st.scaled_total = float(self.scaled[i])
            if st.samples:
                st.min, st.max = float(self.lo[i]), float(self.hi[i])
                p95, p99 = p95s[i], p99s[i]
                # a bucket's representative may sit just outside the data: clamp to the range seen
                st.p95 = None if p95 is None else min(max(p95, st.min), st.max)
                st.p99 = None if p99 is None else min(max(p99, st.min), st.max)
        summary.samples, summary.start, summary.end = self.rows, self.first, self.last
        summary.intervals = self.intervals


def summarize(
    path: str | Path | InputSource,
    engine: str = "auto",
    progress: Progress | None = None,
    step: float | None = None,
) -> LogSummary:
    """Stream one log; raise PerfmonParseError (with line and column) on malformed input.

    ``engine``: "auto" picks the reader by the file's shape, "arrow" prefers Arrow
    whenever it is installed, "python" never uses it. ``step``: the shortest
    analysis interval in seconds (default: one row, or whatever keeps the log
    within ``host_intervals.MAX_STEPS`` intervals).
    """
    source = as_source(path)
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            # overflow (values near 1e308) is handled where it matters, not printed as a numpy warning
            return _summarize(source, engine, progress, step)
    finally:
        if not isinstance(path, InputSource):
            source.close()


def _summarize(source: InputSource, engine: str, progress: Progress | None, step: float | None) -> LogSummary:
    path = source.name
    with PerfmonLog(path, source.stream()) as log:
        header = log.header
        selection = select_disks(header)
        cols = selection.columns
        spelling: dict[str, str] = {}  # one host per name, whatever the letter case of its columns
        hosts = {
            i: spelling.setdefault(h.upper(), h)
            for i in cols
            if (h := header.columns[i].host or Path(path).stem)
        }
        disk_cols = {i: (hosts[i], *cols[i]) for i in cols}
        summary = LogSummary(str(path), header.kind, [ColumnStats(c) for c in header.columns])
        summary.unknown_disk_counters = selection.unknown
        summary.disks = selection
        if header.unparsed:
            summary.warnings.append(
                f"{len(header.unparsed)} header cell(s) are not counter paths, e.g. {header.unparsed[0]!r}"
            )
        end = last_timestamp(log, source)
        chosen = choose_engine(log, engine, source)
        fold: _Fold | None = None
        if chosen == "arrow":
            # here, not above: importing the Arrow reader imports pyarrow, which only a long log needs
            from sanlens.analyze.perfmon_arrow import NotClean, arrow_batches

            fold = _Fold(len(header.columns), HostIntervals(disk_cols, end, step))
            per_row = (source.size or 0) / max(estimated_rows(source, len(header.columns)), 1)
            try:
                for b in arrow_batches(log, source):
                    fold.add(b)
                    if progress is not None:
                        progress(int(fold.rows * per_row))
            except NotClean:
                fold = None
        if fold is None:
            chosen = "python"
            fold = _Fold(len(header.columns), HostIntervals(disk_cols, end, step))
            position = [0]
            for b in python_batches(log, position):
                fold.add(b)
                if progress is not None:
                    progress(position[0])
        summary.engine = chosen
        fold.fill(summary)
    return summary


__all__ = ["ColumnStats", "LogSummary", "PerfmonParseError", "summarize"]
