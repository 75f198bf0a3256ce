"""Streaming reader for PerfMon CSV/TSV logs (relog, typeperf, Performance Monitor).

The header row names each column with a counter path ``\\\\HOST\\Object(instance)\\Counter``;
every following row is a local timestamp and one formatted value per counter. The
first cell of the header, ``(PDH-CSV 4.0) (<time zone>)(<bias>)``, gives the bias in
minutes that turns local time into UTC (UTC = local + bias).

Rows are yielded one at a time as lists of strings from the csv module's C reader,
so memory stays bounded whatever the file size; numeric conversion is left to the
consumer, which can batch it (see ``sanlens.analyze.perfmon_summary``).
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, cast

from sanlens.errors import SanlensError

Kind = Literal["perfmon-csv", "perfmon-tsv"]

# typeperf prints these to the console (and so into redirected output) after the data.
_TRAILERS = (
    "exiting, please wait",
    "the command completed successfully",
    "error:",
)
_HEADER = re.compile(r"^\(PDH-(CSV|TSV) (\d+(?:\.\d+)?)\)\s*(?:\((.*)\))?\s*\((-?\d+)\)\s*$", re.IGNORECASE)
_CSV_FIELD_LIMIT = 1 << 20  # one cell may hold a long counter path, never a megabyte
MAX_HEADER_CHARS = (
    _CSV_FIELD_LIMIT * 4
)  # ~10,000 long counter paths: a longer first line is no PerfMon header
MAX_BIAS_MINUTES = 24 * 60  # Windows biases lie within -14 h .. +12 h
# UTC times a report can print (datetime's years 1..9999), a day inside either end
_MIN_UTC = -62135596800.0 + 86400
_MAX_UTC = 253402300799.0 - 86400


class PerfmonParseError(SanlensError):
    """A PerfMon log that cannot be read; names the file, line and column (1-based)."""

    def __init__(self, message: str, path: str = "", line: int | None = None, column: int | None = None):
        self.path, self.line, self.column, self.message = path, line, column, message
        where = path or "<perfmon>"
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class CounterPath:
    """One parsed column header; ``path`` is exactly as in the file."""

    path: str
    host: str
    object: str
    instance: str
    counter: str

    @property
    def key(self) -> tuple[str, str, str]:
        """Case-insensitive identity (object, instance, counter) for matching known counters."""
        return (self.object.lower(), self.instance.lower(), self.counter.lower())


def parse_counter_path(text: str) -> CounterPath | None:
    r"""``\\HOST\Object(instance)\Counter`` (host optional); None when it is not a counter path.

    Instances may hold parentheses, commas, ``#n`` and backslashes (mount points);
    counter names may hold parentheses but never a backslash, so the instance runs
    to the last ``)\``.
    """
    s = text
    host = ""
    if s.startswith("\\\\"):
        end = s.find("\\", 2)
        if end < 0:
            return None
        host, s = s[2:end], s[end + 1 :]
    elif s.startswith("\\"):
        s = s[1:]
    else:
        return None
    paren, slash = s.find("("), s.find("\\")
    if slash < 0:
        return None
    if 0 <= paren < slash:
        close = s.rfind(")\\")
        if close < paren:
            return None
        obj, instance, counter = s[:paren], s[paren + 1 : close], s[close + 2 :]
    else:
        obj, instance, counter = s[:slash], "", s[slash + 1 :]
    if not obj or not counter:
        return None
    return CounterPath(text, host, obj, instance, counter)


@dataclass(frozen=True, slots=True)
class LogHeader:
    kind: Kind
    version: str
    timezone: str
    bias_minutes: int
    columns: tuple[CounterPath, ...]
    unparsed: tuple[str, ...] = ()  # header cells that are not counter paths (reported, kept as columns)


def _sniff_encoding(head: bytes) -> str:
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    first_line = head.split(b"\n", 1)[0]
    try:
        first_line.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252"  # an ANSI log from a localized Windows
    return "utf-8"


class PerfmonLog:
    """Open a log and read its header; iterate ``rows()`` for (line, utc_epoch, cells)."""

    def __init__(self, path: str | Path, stream: BinaryIO | None = None) -> None:
        self.path = str(path)
        if self.path.lower().endswith(".blg"):
            raise PerfmonParseError(
                f"binary PerfMon logs (.blg) cannot be read; convert it first: "
                f"relog {Path(self.path).name} -f csv -o {Path(self.path).with_suffix('.csv').name}",
                self.path,
            )
        try:
            self._raw: BinaryIO = stream if stream is not None else open(self.path, "rb")  # noqa: SIM115
        except OSError as e:
            raise PerfmonParseError(f"cannot open: {e.strerror}", self.path) from None
        try:
            self.header = self._read_header()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> PerfmonLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fail(self, message: str, line: int | None = None, column: int | None = None) -> PerfmonParseError:
        return PerfmonParseError(message, self.path, line, column)

    def _read_header(self) -> LogHeader:
        buffered: Any = self._raw if hasattr(self._raw, "peek") else io.BufferedReader(cast(Any, self._raw))
        self._raw = buffered
        head = bytes(buffered.peek(4096)[:4096])
        looks_binary = head.startswith(b"\x00") or b"\x00\x00" in head[:64]
        if looks_binary and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            stem = Path(self.path).stem
            raise self._fail(
                f"this is a binary PerfMon log (.blg), not CSV/TSV text; give it its .blg name and convert "
                f"it: relog {stem}.blg -f csv -o {stem}.csv",
                1,
            )
        encoding = _sniff_encoding(head)
        self.encoding = encoding
        self._text = io.TextIOWrapper(self._raw, encoding=encoding, errors="strict", newline="")
        first = self._safe_readline(1)
        if len(first) >= MAX_HEADER_CHARS and not first.endswith(("\n", "\r")):
            raise self._fail(
                f"the first line is longer than {MAX_HEADER_CHARS} characters: not a PerfMon header row", 1
            )
        stripped = first.lstrip("\ufeff").strip("\r\n")
        if not stripped:
            raise self._fail("empty file: expected a PerfMon header line", 1)
        delimiter = "\t" if stripped.count("\t") > stripped.count(",") else ","
        csv.field_size_limit(_CSV_FIELD_LIMIT)
        try:
            cells = next(csv.reader([stripped], delimiter=delimiter))
        except csv.Error as e:
            raise self._fail(f"malformed header: {e}", 1) from None
        m = _HEADER.match(cells[0].strip()) if cells else None
        if not m:
            raise self._fail(
                'not a PerfMon CSV/TSV log: the first cell must be "(PDH-CSV 4.0) (<time zone>)(<bias>)"',
                1,
                1,
            )
        kind: Kind = "perfmon-tsv" if m.group(1).upper() == "TSV" else "perfmon-csv"
        if (kind == "perfmon-tsv") != (delimiter == "\t"):
            delimiter = "\t" if kind == "perfmon-tsv" else ","
            cells = next(csv.reader([stripped], delimiter=delimiter))
        self.delimiter = delimiter
        columns: list[CounterPath] = []
        unparsed: list[str] = []
        for i, cell in enumerate(cells[1:], start=2):
            cp = parse_counter_path(cell)
            if cp is None:
                if not cell.strip():
                    raise self._fail("empty counter name in the header", 1, i)
                unparsed.append(cell)
                cp = CounterPath(cell, "", "", "", cell)
            columns.append(cp)
        if not columns:
            raise self._fail("the header names no counters", 1)
        bias = int(m.group(4))
        if abs(bias) > MAX_BIAS_MINUTES:
            raise self._fail(
                f"time-zone bias {m.group(4)[:20]} minutes is out of range (at most {MAX_BIAS_MINUTES})", 1, 1
            )
        return LogHeader(kind, m.group(2), m.group(3) or "", bias, tuple(columns), tuple(unparsed))

    def _safe_readline(self, line: int) -> str:
        try:
            return self._text.readline(MAX_HEADER_CHARS)
        except UnicodeDecodeError as e:
            raise self._fail(f"not {self.encoding} text: {e.reason}", line) from None

    def rows(self) -> Iterator[tuple[int, float, list[str]]]:
        """Yield (line number, UTC epoch seconds, counter cells) per data row.

        Cells are the raw strings: ``" "`` or ``""`` mean no sample. Trailer lines
        written by typeperf and blank lines are skipped.
        """
        width = len(self.header.columns) + 1
        bias_s = self.header.bias_minutes * 60.0
        reader = csv.reader(self._bounded_lines(width), delimiter=self.delimiter, strict=True)
        offset = 1  # the header line was read before the csv reader started
        day_cache: dict[str, float] = {}
        try:
            for cells in reader:
                line = reader.line_num + offset
                n = len(cells)
                if n == width:
                    try:
                        ts = parse_timestamp(cells[0], day_cache)
                    except ValueError as e:
                        if self.delimiter.join(cells).strip().lower().startswith(_TRAILERS):
                            continue
                        raise self._fail(str(e), line, 1) from None
                    utc = ts + bias_s
                    if not _MIN_UTC <= utc <= _MAX_UTC:
                        raise self._fail(
                            f"{cells[0][:40]!r} with the header's bias of {self.header.bias_minutes} minutes "
                            "falls outside the years 1..9999",
                            line,
                            1,
                        )
                    yield line, utc, cells[1:]
                    continue
                if n == 0 or (n == 1 and not cells[0].strip()):
                    continue
                if self.delimiter.join(cells).strip().lower().startswith(_TRAILERS):
                    continue
                raise self._fail(
                    f"row has {n} cells, the header has {width}",
                    line,
                    min(n, width) + 1 if n < width else width + 1,
                )
        except csv.Error as e:
            raise self._fail(
                f"malformed {self.header.kind[8:].upper()}: {e}", reader.line_num + offset
            ) from None
        except UnicodeDecodeError as e:
            raise self._fail(f"not {self.encoding} text: {e.reason}", reader.line_num + offset + 1) from None

    def _bounded_lines(self, width: int) -> Iterator[str]:
        """The log's lines, each at most what ``width`` cells can fill: a runaway row is refused, not read."""
        limit = _CSV_FIELD_LIMIT + width * 256
        line = 1
        while True:
            text = self._text.readline(limit + 1)
            if not text:
                return
            line += 1
            if len(text) > limit:
                raise self._fail(
                    f"a row longer than {limit} characters for {width} columns: not a PerfMon data row", line
                )
            yield text


def parse_timestamp(text: str, day_cache: dict[str, float] | None = None) -> float:
    """``MM/DD/YYYY HH:MM:SS[.fff]`` (local time of the log) → epoch seconds, not yet shifted by the bias.

    Raises ValueError. Whole days are cached, since every row of a log repeats them.
    """
    day = text[:10]
    base = day_cache.get(day) if day_cache is not None else None
    try:
        if base is None:
            if len(text) < 19 or text[2] != "/" or text[5] != "/" or text[10] != " ":
                raise ValueError
            base = _days_from_civil(int(text[6:10]), int(text[0:2]), int(text[3:5])) * 86400.0
            if day_cache is not None:
                if len(day_cache) > 4096:
                    day_cache.clear()
                day_cache[day] = base
        if text[13] != ":" or text[16] != ":":
            raise ValueError
        h, mi, sec = int(text[11:13]), int(text[14:16]), float(text[17:])
        if h > 23 or mi > 59 or not 0 <= sec < 61:
            raise ValueError
    except (ValueError, IndexError):
        raise ValueError(f"bad timestamp {text[:40]!r} (expected MM/DD/YYYY HH:MM:SS.fff)") from None
    return base + h * 3600 + mi * 60 + sec


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (validates the date)."""
    import datetime as _dt

    return (_dt.date(y, m, d) - _dt.date(1970, 1, 1)).days


def to_float(cell: str) -> float | None:
    """A PerfMon value cell: None for a blank (no sample), else the number; ValueError if neither."""
    s = cell.strip()
    if not s:
        return None
    return float(s)
