"""Per-counter min/max/mean of a PerfMon log, in one streaming pass.

Speed matters (1 GB logs): rows without blanks are converted with ``map(float)``
and gathered in small batches, then each column's min/max/sum is taken by the C
builtins over the transposed batch, so no Python-level loop touches each cell.
Rows with blank cells (typeperf's first row, gaps) take a slower per-cell path.
With the optional pyarrow extra, clean UTF-8 logs go through Arrow's C++ reader first
(``perfmon_arrow``); anything it will not vouch for comes back here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sanlens.hosts.perfmon import CounterPath, PerfmonLog, PerfmonParseError
from sanlens.model import iso_utc

_BATCH = 256


@dataclass
class ColumnStats:
    column: CounterPath
    samples: int = 0
    min: float = float("inf")
    max: float = float("-inf")
    total: float = 0.0

    @property
    def mean(self) -> float | None:
        return self.total / self.samples if self.samples else None

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


def summarize(path: str | Path, engine: str = "auto") -> LogSummary:
    """Stream one log; raise PerfmonParseError (with line and column) on malformed input.

    ``engine``: "auto" tries pyarrow first when it is installed, "python" never does.
    """
    with PerfmonLog(path) as log:
        cols = [ColumnStats(c) for c in log.header.columns]
        summary = LogSummary(str(path), log.header.kind, cols)
        if log.header.unparsed:
            summary.warnings.append(
                f"{len(log.header.unparsed)} header cell(s) are not counter paths, e.g. {log.header.unparsed[0]!r}"
            )
        if engine == "auto":
            # Imported here: pyarrow costs ~80 MB and a third of a second, which ONTAP-only
            # analyses should not pay.
            from sanlens.analyze.perfmon_arrow import summarize_arrow

            if summarize_arrow(log, summary):
                summary.engine = "arrow"
                return summary
        batch: list[list[float]] = []
        n = 0
        first = last = None
        for line, ts, cells in log.rows():
            if first is None:
                first = ts
            last = ts
            n += 1
            try:
                row = list(map(float, cells))
            except ValueError:
                row = []
            if not row or sum(row) * 0.0 != 0.0:  # a blank, text, NaN or infinity: cell by cell
                _slow_row(cols, cells, log, line)
                continue
            batch.append(row)
            if len(batch) >= _BATCH:
                _fold(cols, batch)
                batch = []
        if batch:
            _fold(cols, batch)
        summary.samples, summary.start, summary.end = n, first, last
    return summary


def _fold(cols: list[ColumnStats], batch: list[list[float]]) -> None:
    n = len(batch)
    for st, values in zip(cols, zip(*batch, strict=True), strict=True):
        lo, hi = min(values), max(values)
        if lo < st.min:
            st.min = lo
        if hi > st.max:
            st.max = hi
        st.total += sum(values)
        st.samples += n


def _slow_row(cols: list[ColumnStats], cells: list[str], log: PerfmonLog, line: int) -> None:
    for i, (st, cell) in enumerate(zip(cols, cells, strict=True), start=2):
        s = cell.strip()
        if not s:
            continue
        try:
            v = float(s)
        except ValueError:
            raise PerfmonParseError(f"not a number: {cell[:40]!r}", log.path, line, i) from None
        if v * 0.0 != 0.0:  # NaN or infinity is not a sample
            continue
        st.samples += 1
        st.total += v
        if v < st.min:
            st.min = v
        if v > st.max:
            st.max = v


__all__ = ["ColumnStats", "LogSummary", "PerfmonParseError", "summarize"]
