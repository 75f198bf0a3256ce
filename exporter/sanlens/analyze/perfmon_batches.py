"""PerfMon rows as numeric batches (times, rows x columns), from the reader that suits the file.

Both readers yield the same ``Batch``: UTC epoch times and a float64 matrix where
NaN means "no sample" (a blank cell, or NaN/infinity written in it). Everything
downstream - statistics, percentiles, analysis intervals - folds whole batches
with numpy, so no Python loop touches each cell twice.

Which reader: Arrow's C++ reader is about three times faster on long logs but
costs ~0.3 s and ~80 MB before the first row, so it loses on short or wide logs
(a 5,963-column, 18 MB log: 0.4 s/101 MB with Arrow, 0.07 s/18 MB without).
``choose_engine`` picks Arrow only for logs long enough to repay that.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from sanlens.hosts.perfmon import PerfmonLog, PerfmonParseError, parse_timestamp

ARROW_MIN_BYTES = 32 << 20  # below this the Python reader finishes before Arrow has started
ARROW_MIN_ROWS = 5_000  # and a wide log with few rows gains nothing from column batches
_BATCH_CELLS = 1 << 18  # Python reader: about 2 MB of doubles per batch


@dataclass(frozen=True, slots=True)
class Batch:
    line: int  # file line of the first row (1-based)
    times: np.ndarray  # UTC epoch seconds, one per row
    values: np.ndarray  # rows x columns, NaN = no sample


def estimated_rows(path: str, header_columns: int) -> int:
    """Rows in the log, from its size and the length of its first lines (no full read)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(1 << 20)
    lines = head.split(b"\n")
    body = [ln for ln in lines[1:-1] if ln.strip()]
    if not body:  # rows longer than the probe: about 8 bytes per cell
        return max(size // max(8 * (header_columns + 1), 1), 1)
    per_row = sum(len(ln) + 1 for ln in body) / len(body)
    return int((size - len(lines[0])) / per_row)


def choose_engine(log: PerfmonLog, requested: str = "auto") -> str:
    """``arrow`` or ``python`` for this log: Arrow when forced, or when the log is long enough."""
    from sanlens.analyze import perfmon_arrow

    if requested == "python" or not perfmon_arrow.available():
        return "python"
    if log.encoding not in ("utf-8", "utf-8-sig"):
        return "python"
    if requested == "arrow":
        return "arrow"
    size = os.path.getsize(log.path)
    if size < ARROW_MIN_BYTES:
        return "python"
    return "arrow" if estimated_rows(log.path, len(log.header.columns)) >= ARROW_MIN_ROWS else "python"


def python_batches(log: PerfmonLog, position: list[int] | None = None) -> Iterator[Batch]:
    """The Python reader: csv's C tokenizer, ``map(float)`` per clean row, cell by cell otherwise.

    ``position[0]`` follows the byte offset read so far (for progress)."""
    ncols = len(log.header.columns)
    size = max(16, _BATCH_CELLS // max(ncols, 1))
    rows: list[list[float]] = []
    times: list[float] = []
    first = 0
    nan = float("nan")
    raw = log._raw
    for line, ts, cells in log.rows():
        if not rows:
            first = line
        try:
            row = list(map(float, cells))
        except ValueError:
            row = [nan] * ncols
            for i, cell in enumerate(cells):
                s = cell.strip()
                if not s:
                    continue
                try:
                    row[i] = float(s)
                except ValueError:
                    raise PerfmonParseError(f"not a number: {cell[:40]!r}", log.path, line, i + 2) from None
        rows.append(row)
        times.append(ts)
        if len(rows) >= size:
            if position is not None:
                position[0] = raw.tell()
            yield Batch(first, np.asarray(times), np.asarray(rows, dtype=np.float64))
            rows, times = [], []
    if rows:
        yield Batch(first, np.asarray(times), np.asarray(rows, dtype=np.float64))


def last_timestamp(log: PerfmonLog) -> float | None:
    """UTC time of the log's last data row, read from its tail (None when it cannot be found there)."""
    if log.encoding == "utf-16":
        return None
    size = os.path.getsize(log.path)
    with open(log.path, "rb") as f:
        f.seek(max(0, size - (256 << 10)))
        tail = f.read().decode(log.encoding.replace("-sig", ""), errors="replace")
    for text in reversed(tail.splitlines()[1:]):
        cell = text.split(log.delimiter, 1)[0].strip().strip('"')
        try:
            return parse_timestamp(cell) + log.header.bias_minutes * 60.0
        except ValueError:
            continue
    return None
