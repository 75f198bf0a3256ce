"""Parsers for ONTAP CLI text: ``statistics show -raw`` and nodeshell ``sysstat -M``.

Both are streamed line by line, so a capture of any length is read in bounded
memory, and both yield the row model of ``sanlens.ontap.offline``.

``statistics show -raw`` prints one block per instance (``Object:``,
``Instance:``, ``Start-time:``, ``End-time:``, ``Scope:``, ``Number of
Constituents:``) followed by a two-column ``Counter``/``Value`` table whose
widths the dashed ruler gives. Long values wrap onto lines whose counter column
is blank; array counters print ``-`` and then one line per element, its label
right-aligned in the counter column. A file holds several samples when an
instance repeats or a command's ``N entries were displayed.`` trailer closes one.

``sysstat -M`` prints a header (``ANY1+ .. AVG CPU0 .. Network Protocol ...
Kahuna WAFL_Ex(Kahu) ... Ops/s CP``), repeated every screenful, then one line
per interval. Domain columns are percent of one core; ``WAFL_Ex(Kahu)`` holds
WAFL_Ex with, in parentheses, the part of it that ran serially (Kahuna).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path

from sanlens.ontap.offline import CaptureError, CounterRow, Sample

_NUM = re.compile(r"^(-?\d+(?:\.\d+)?)(us|ms|s|%|b|kb|KB|MB|GB)?$")
_HEADER = re.compile(r"^(Object|Instance|Start-time|End-time|Scope|Number of Constituents):\s*(.*)$")
_TRAILER = re.compile(r"^\s*\d+ entries were displayed\.?\s*$")
_COUNTER = re.compile(r"^ {4}(\S+)(?:\s+(.*?))?\s*$")
_RULER = re.compile(r"^\s*(-{3,})\s+(-{3,})\s*$")


def parse_cli_time(text: str) -> float | None:
    """``6/11/2025 18:51:00`` (the cluster's local time; read as UTC) -> epoch seconds."""
    for fmt in ("%m/%d/%Y %H:%M:%S", "%m/%d/%y %H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return dt.datetime.strptime(text.strip(), fmt).replace(tzinfo=dt.UTC).timestamp()
        except ValueError:
            continue
    return None


def _number(text: str) -> float | None:
    m = _NUM.match(text.strip())
    return float(m[1]) if m else None


class _Block:
    __slots__ = ("array", "end", "last", "row", "start")

    def __init__(self, table: str) -> None:
        self.row = CounterRow(table, "")
        self.start: float | None = None
        self.end: float | None = None
        self.last: str | None = None  # counter whose value a wrapped line continues
        self.array: str | None = None  # array counter whose elements follow

    def finish(self) -> CounterRow:
        r = self.row
        for name in list(r.counters):
            v = r.counters[name]
            if isinstance(v, list) and not v:
                del r.counters[name]
        # string values wrapped across lines were kept as properties; numbers as counters
        if not r.instance:
            r.instance = r.properties.get("instance_name", "")
        return r


def iter_statistics_samples(path: str | Path) -> Iterator[Sample]:
    """Yield one Sample per capture held in a ``statistics show -raw`` text file."""
    p = Path(path)
    rows: list[CounterRow] = []
    seen: set[tuple[str, str]] = set()
    stamp: float | None = None
    block: _Block | None = None
    value_col = 37
    pending: dict[str, str] = {}  # header fields read before the first counter line

    def close_block() -> None:
        nonlocal block, stamp
        if block is None:
            return
        row = block.finish()
        key = (row.table, row.instance)
        if key in seen:
            raise CaptureError(f"instance {row.instance!r} twice in one sample", p)
        seen.add(key)
        rows.append(row)
        t = block.end or block.start
        if t is not None and (stamp is None or t > stamp):
            stamp = t
        block = None

    def close_sample() -> Sample | None:
        nonlocal rows, seen, stamp
        close_block()
        if not rows:
            return None
        s = Sample(stamp, rows)
        rows, seen, stamp = [], set(), None
        return s

    with open(p, encoding="utf-8-sig", errors="replace") as f:
        for n, raw in enumerate(f, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            if _TRAILER.match(line):
                s = close_sample()
                if s:
                    yield s
                continue
            h = _HEADER.match(line)
            if h:
                key, val = h[1], h[2].strip()
                if key == "Object":
                    close_block()
                    pending = {"Object": val}
                    continue
                if key == "Instance":
                    table = pending.get("Object", "")
                    if not table:
                        raise CaptureError("'Instance:' before any 'Object:'", p, n)
                    if (table, val) in seen:  # the same instance again: a new sample begins
                        s = close_sample()
                        if s:
                            yield s
                    block = _Block(table)
                    block.row.instance = val
                    continue
                if block is None:
                    raise CaptureError(f"{key!r} outside an instance block", p, n)
                if key == "Start-time":
                    block.start = parse_cli_time(val)
                elif key == "End-time":
                    block.end = parse_cli_time(val)
                elif key == "Scope":
                    block.row.properties["scope"] = val
                else:
                    block.row.complete = "partial" not in val.lower()
                continue
            if block is None:
                if line.lstrip().startswith(("Counter", "---")) or line.startswith(("Error", "error")):
                    if line.lower().startswith("error"):
                        raise CaptureError(f"the capture holds an ONTAP error: {line.strip()[:120]}", p, n)
                    continue
                raise CaptureError(f"unexpected text outside an instance block: {line.strip()[:60]!r}", p, n)
            stripped = line.strip()
            ruler = _RULER.match(line)
            if ruler:
                value_col = ruler.start(2)
                continue
            if stripped.startswith("Counter") and stripped.endswith("Value"):
                continue
            _counter_line(block, line, value_col, p, n)
    s = close_sample()
    if s:
        yield s


def _counter_line(block: _Block, line: str, value_col: int, p: Path, n: int) -> None:
    row = block.row
    if len(line) > 4 and line[4] != " " and line.startswith("    "):
        m = _COUNTER.match(line)
        if not m:
            raise CaptureError(f"cannot read counter line {line.strip()[:60]!r}", p, n)
        name, text = m[1], (m[2] or "")
        block.array = None
        block.last = None
        if text == "-":
            block.array = name
            row.counters[name] = []
            row.labels[name] = []
            return
        v = _number(text)
        if v is None:
            row.properties[name] = text
            block.last = name
        else:
            row.counters[name] = v
        return
    head, tail = line[:value_col], line[value_col:].strip()
    label = head.strip()
    if label and block.array:  # an array element: label in the counter column
        v = _number(tail)
        if v is None:
            raise CaptureError(f"array {block.array}: element {label!r} is not a number: {tail!r}", p, n)
        arr = row.counters[block.array]
        assert isinstance(arr, list)
        arr.append(v)
        row.labels[block.array].append(label)
        return
    if not label and block.last:  # a wrapped string value
        row.properties[block.last] += tail
        return
    if not label and block.array:  # a wrapped array label is not a thing ONTAP prints; be strict
        raise CaptureError(f"array {block.array}: element without a label", p, n)
    raise CaptureError(f"cannot place this line: {line.strip()[:60]!r}", p, n)


# ------------------------------------------------------------------ sysstat -M
_SYSSTAT_DOMAINS = {
    "network": "network",
    "protocol": "protocol",
    "cluster": "cluster",
    "storage": "storage",
    "raid": "raid",
    "raid_ex": "raid_exempt",
    "xor_ex": "xor_exempt",
    "target": "target",
    "kahuna": "kahuna",
    "wafl_ex": "wafl_exempt",
    "wafl_xclean": "wafl_xcleaner",
    "wafl_mpclean": "wafl_mpcleaner",
    "sm_exempt": "sm_exempt",
    "cifs": "cifs",
    "exempt": "exempt",
    "ssan_ex": "ssan_exempt",
    "nwk_exempt": "nwk_exempt",
    "nwk_legacy": "nwk_legacy",
    "intr": "intr",
    "host": "host",
}
_PCT = re.compile(r"^(\d+(?:\.\d+)?)%(?:\((\d+(?:\.\d+)?)%\))?$")


def iter_sysstat_samples(path: str | Path, node: str | None = None) -> Iterator[Sample]:
    """One Sample (one row, table ``sysstat``) per interval line of ``sysstat -M`` output.

    Counters: ``avg`` (percent of all cores), ``cpu`` and ``any`` (arrays, labels
    ``cpu0``.. and ``any1+``..), ``domain_busy`` (array, percent of one core,
    labels ONTAP's domain names, ``wafl_exempt_kahuna`` for the parenthesised
    WAFL_Ex share), ``ops`` and ``cp``. The values are already per-interval.
    """
    p = Path(path)
    node = node or p.stem
    header: list[str] | None = None
    with open(p, encoding="utf-8-sig", errors="replace") as f:
        for n, raw in enumerate(f, start=1):
            line = raw.strip()
            low = line.lower()
            if low.startswith("summary"):
                return  # the -c summary repeats the data as min/avg/max
            if not line or line.startswith("--") or "sysstat" in low or "::>" in line or low.endswith(">"):
                continue
            tokens = line.split()
            if "AVG" in tokens and any(t.upper().startswith("CPU") for t in tokens):
                header = tokens
                continue
            if header is None:
                raise CaptureError("data before the sysstat -M header (ANY1+ .. AVG CPU0 ..)", p, n)
            cells = re.sub(r"\(\s+", "(", line).split()
            if len(cells) != len(header):
                raise CaptureError(f"{len(cells)} values under {len(header)} header columns", p, n)
            yield Sample(None, [_sysstat_row(node, header, cells, p, n)])


def _sysstat_row(node: str, header: list[str], cells: list[str], p: Path, n: int) -> CounterRow:
    row = CounterRow("sysstat", node, {"node": node})
    cpu: list[float] = []
    cpu_l: list[str] = []
    anyc: list[float] = []
    any_l: list[str] = []
    dom: list[float] = []
    dom_l: list[str] = []
    for col, cell in zip(header, cells, strict=True):
        key = col.lower()
        if key in ("ops/s", "ops"):
            v = _number(cell)
            if v is None:
                raise CaptureError(f"{col}: not a number: {cell!r}", p, n)
            row.counters["ops"] = v
            continue
        m = _PCT.match(cell)
        if not m:
            raise CaptureError(f"{col}: expected a percent, got {cell!r}", p, n)
        v = float(m[1])
        if key == "avg":
            row.counters["avg"] = v
        elif key == "cp":
            row.counters["cp"] = v
        elif re.fullmatch(r"cpu\d+", key):
            cpu.append(v)
            cpu_l.append(key)
        elif re.fullmatch(r"any\d+\+", key):
            anyc.append(v)
            any_l.append(key)
        else:
            base = key.split("(")[0]
            dom.append(v)
            dom_l.append(_SYSSTAT_DOMAINS.get(base, base))
            if m[2] is not None:
                dom.append(float(m[2]))
                dom_l.append(_SYSSTAT_DOMAINS.get(base, base) + "_kahuna")
    for name, values, labels in (("cpu", cpu, cpu_l), ("any", anyc, any_l), ("domain_busy", dom, dom_l)):
        if values:
            row.counters[name] = values
            row.labels[name] = labels
    return row
