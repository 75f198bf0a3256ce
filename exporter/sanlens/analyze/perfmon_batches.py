"""PerfMon rows as numeric batches (times, rows x columns), from the reader that suits the file.

Both readers yield the same ``Batch``: UTC epoch times and a float64 matrix where
NaN means "no sample" (a blank cell, or NaN/infinity written in it). Everything
downstream - statistics, percentiles, analysis intervals - folds whole batches
with numpy, so no Python loop touches each cell twice.

Which reader: Arrow's C++ reader is about three times faster on long logs but
costs ~0.3 s and ~80 MB before the first row, so it loses on short or wide logs
(a 5,963-column, 18 MB log: 0.4 s/101 MB with Arrow, 0.07 s/18 MB without).
``choose_engine`` picks Arrow only for logs long enough to repay that; a pipe is
always read by the Python reader, once.

Decimal commas: a German or French Windows writes ``"0,012"``. A log whose values
use only commas is read as such; one that mixes ``0,5`` and ``0.5`` is refused, since
which of them is a decimal mark is then a guess.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import numpy as np

from sanlens.analyze.perfmon_batch import Batch
from sanlens.analyze.source import InputSource
from sanlens.hosts.perfmon import PerfmonLog, PerfmonParseError, parse_timestamp

ARROW_MIN_BYTES = 32 << 20  # below this the Python reader finishes before Arrow has started
ARROW_MIN_ROWS = 5_000  # and a wide log with few rows gains nothing from column batches
_BATCH_CELLS = 1 << 18  # Python reader: about 2 MB of doubles per batch


_COMMA_NUMBER = re.compile(r"\s*[-+]?\d*,\d+(?:[eE][-+]?\d+)?\s*")


@contextlib.contextmanager
def _opened(log: PerfmonLog, source: InputSource | None) -> Iterator[InputSource]:
    """``source``, or the log's file opened for the length of the block."""
    if source is not None:
        yield source
    else:
        with InputSource.open(log.path) as s:
            yield s


def estimated_rows(source: InputSource | str, header_columns: int) -> int:
    """Rows in the log, from its size and the length of its first lines (no full read)."""
    with contextlib.ExitStack() as stack:
        if not isinstance(source, InputSource):
            source = stack.enter_context(InputSource.open(source))
        size = source.size or 0
        with source.stream() as f:
            head = f.read(1 << 20)
    lines = head.split(b"\n")
    body = [ln for ln in lines[1:-1] if ln.strip()]
    if not body:  # rows longer than the probe: about 8 bytes per cell
        return max(size // max(8 * (header_columns + 1), 1), 1)
    per_row = sum(len(ln) + 1 for ln in body) / len(body)
    return int((size - len(lines[0])) / per_row)


def choose_engine(log: PerfmonLog, requested: str = "auto", source: InputSource | None = None) -> str:
    """``arrow`` or ``python`` for this log: Arrow when forced, or when the log is long enough."""
    if requested == "python" or log.encoding not in ("utf-8", "utf-8-sig"):
        return "python"
    with _opened(log, source) as src:
        if not src.regular:
            return "python"  # a pipe is read once, by the reader that already holds it
        if requested != "arrow" and (
            (src.size or 0) < ARROW_MIN_BYTES or estimated_rows(src, len(log.header.columns)) < ARROW_MIN_ROWS
        ):
            return "python"
    # only now: importing the Arrow reader imports pyarrow (~0.1 s), more than a short log's reading
    from sanlens.analyze import perfmon_arrow

    return "arrow" if perfmon_arrow.available() else "python"


def python_batches(log: PerfmonLog, position: list[int] | None = None) -> Iterator[Batch]:
    """The Python reader: csv's C tokenizer, ``map(float)`` per clean row, cell by cell otherwise.

    ``position[0]`` follows the byte offset read so far (for progress)."""
    ncols = len(log.header.columns)
    size = max(16, _BATCH_CELLS // max(ncols, 1))
    rows: list[list[float]] = []
    times: list[float] = []
    first = 0
    raw = log._raw
    marks = _DecimalMark(log.path)
    for line, ts, cells in log.rows():
        if not rows:
            first = line
        if marks.comma:
            row = marks.comma_row(cells, line, ncols)
        else:
            try:
                row = list(map(float, cells))
                if marks.mark is None and "." in "".join(cells):
                    marks.mark = "."
            except ValueError:
                row = marks.slow_row(cells, line, ncols)
        rows.append(row)
        times.append(ts)
        if len(rows) >= size:
            if position is not None:
                with contextlib.suppress(OSError, ValueError):
                    position[0] = raw.tell()
            yield Batch(first, np.asarray(times), np.asarray(rows, dtype=np.float64))
            rows, times = [], []
    if rows:
        yield Batch(first, np.asarray(times), np.asarray(rows, dtype=np.float64))


class _DecimalMark:
    """Which decimal mark the log's values use, learnt from the first value that shows one."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.mark: str | None = None  # "." or ","
        self.where = ""  # the cell that decided it

    @property
    def comma(self) -> bool:
        return self.mark == ","

    def _learn(self, mark: str, cell: str, line: int, col: int) -> None:
        if self.mark is None:
            self.mark, self.where = mark, f"{cell.strip()[:20]!r} at line {line}"
        elif self.mark != mark:
            raise PerfmonParseError(
                f"{cell.strip()[:20]!r} uses a decimal {'comma' if mark == ',' else 'point'} but "
                f"{self.where} a decimal {'comma' if self.mark == ',' else 'point'}: "
                "a log must use one decimal mark",
                self.path,
                line,
                col,
            )

    def slow_row(self, cells: list[str], line: int, ncols: int) -> list[float]:
        """One row cell by cell: blanks are NaN, decimal commas are accepted while the log agrees."""
        row = [float("nan")] * ncols
        for i, cell in enumerate(cells):
            s = cell.strip()
            if not s:
                continue
            try:
                row[i] = float(s)
                if "." in s:
                    self._learn(".", s, line, i + 2)
                continue
            except ValueError:
                pass
            if _COMMA_NUMBER.fullmatch(s):
                self._learn(",", s, line, i + 2)
                row[i] = float(s.replace(",", "."))
                continue
            raise PerfmonParseError(f"not a number: {cell[:40]!r}", self.path, line, i + 2)
        return row

    def comma_row(self, cells: list[str], line: int, ncols: int) -> list[float]:
        """A row of a decimal-comma log: a point anywhere in it is the mix ``slow_row`` refuses."""
        joined = "\x1f".join(cells)
        if "." not in joined:
            try:
                return list(map(float, joined.replace(",", ".").split("\x1f")))
            except ValueError:
                pass
        return self.slow_row(cells, line, ncols)


def last_timestamp(log: PerfmonLog, source: InputSource | None = None) -> float | None:
    """UTC time of the log's last data row, read from its tail (None when it cannot be found there)."""
    if log.encoding == "utf-16":
        return None
    with _opened(log, source) as src:
        if not src.regular:
            return None  # a pipe has no tail to read ahead of its rows
        with src.stream() as f:
            f.seek(max(0, (src.size or 0) - (256 << 10)))
            tail = f.read(256 << 10).decode(log.encoding.replace("-sig", ""), errors="replace")
    for text in reversed(tail.splitlines()[1:]):
        cell = text.split(log.delimiter, 1)[0].strip().strip('"')
        try:
            return parse_timestamp(cell) + log.header.bias_minutes * 60.0
        except (ValueError, OverflowError):
            continue
    return None
