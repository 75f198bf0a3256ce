"""Parser for ONTAP's QoS latency breakdown text: where each workload's latency is spent.

Reads the output of ``qos statistics volume latency show``, ``qos statistics
workload latency show`` and the older ``qos statistics latency show`` (per policy
group). Each prints a header, a dashed ruler whose dash runs give the column
widths, then one row per workload, the first row ``-total-``; ``-iterations N``
repeats that block every interval. The columns differ between releases (later
ones print ``QoS Max``/``QoS Min`` where older ones print one ``QoS``, then add
``FlexCache``, ``SM Sync``, ``VA``, ``AVSCAN``; the newest rename ``Network``/
``Data`` to ``N-Blade``/``D-Blade``), so the header, not a fixed layout, names
the cells.

How the text maps onto rows:

- Each column is named by the header text above its dash run. Known columns get
  stable names (``COMPONENTS``); any other column is kept under its lower-cased
  name with spaces as ``_`` (the single ``QoS`` of older releases stays ``qos``:
  the command reference calls it the QoS subsystem, neither ceiling nor floor), so
  a new release loses nothing.
- Cells are ``646.73ms``, ``230us``, ``1.2s`` or ``0ms``; they become seconds. A
  ``-`` cell is a component ONTAP did not report and is left out.
- ``iteration`` counts blocks from 0: a new one starts at each header, and at a
  ``-total-`` row or a time line that follows rows of the current one. A time
  line (``date`` output, ``6/11/2025 18:51:00`` or ``cluster1 : 4/11/2018
  07:23:41``), as a capture script may print, stamps the rows after it.
- The components should add up to ``Latency``. Each printed cell is rounded to
  its last digit, so they must agree within half a last digit per cell. When
  they do not, the difference (``Latency`` minus the components) is added as
  component ``other``: positive when ONTAP accounts for part of the latency in
  no column, negative when the printed columns exceed it.
- Prompts, echoed commands, ``Warning:``/``Error:``/``Info:`` messages and
  terminal control codes (a refreshing display's) are skipped, each as one
  ``FILE:LINE: why`` note when the caller passes a list. Anything else that is
  neither a header, a ruler nor a row is a ``CaptureError`` naming its line.
- The echoed command's ``-vserver NAME`` (``-vserver`` narrows the rows to one
  SVM) is kept on the rows after it as ``svm``: the text names no SVM otherwise.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from sanlens.ontap.cli_capture import lines, parse_cli_time
from sanlens.ontap.cooking import CaptureError, CounterRow, Sample

TABLE = "qos_latency"
# Header text (lower-cased, spaces as "_") -> the component's stable name.
COMPONENTS = {
    "network": "network",
    "n_blade": "network",
    "cluster": "cluster",
    "data": "data",
    "d_blade": "data",
    "disk": "disk",
    "qos_max": "qos_max",
    "qos_min": "qos_min",
    "nvram": "nvram",
    "cloud": "cloud",
    "flexcache": "flexcache",
    "sm_sync": "sm_sync",
    "va": "va",
    "avscan": "avscan",
}
OTHER = "other"
_NAME_COLUMNS = ("workload", "policy_group")
_UNIT_S = {"us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_CELL = re.compile(r"^(\d+)(?:\.(\d+))?(us|µs|μs|ms|s)?$")
_HEADER = re.compile(r"^\s*(?:Workload|Policy Group)\s+(?:ID\s+)?Latency(?:\s|$)")
_RULER = re.compile(r"^[\s-]*-{3,}[\s-]*$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>78c]")
_NOTICE = re.compile(r"^(Warning|Error|Info|Notice): ")
_SESSION = re.compile(
    r"^(?:[\w.-]+::[\w*]*>|\(\s*qos statistics .*\)$|Press <space> to page down"
    r"|\d+ (?:entries were|entry was) displayed\.?$|There are no entries matching your query\.)"
)
_VSERVER = re.compile(r"(?:^|\s)-vserver\s+(?:\"([^\"]+)\"|([^\s)]+))")
_PATTERN = re.compile(r"[*|,!<>{}]")  # a query, not one SVM's name
_STAMP_NAMED = re.compile(r"^[\w.-]+\s*:\s*(\d{1,2}/\d{1,2}/\d{2,4} \d{1,2}:\d{2}:\d{2})$")
_STAMP_DATE = re.compile(
    r"^[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}:\d{2}:\d{2})(?: [A-Z]{1,5}[+-]?\d*)? (\d{4})$"
)


@dataclass(slots=True)
class QosLatencyRow:
    """One workload's latency and where it went, in seconds per operation."""

    iteration: int
    timestamp: float | None  # epoch seconds, when a time line came before the block
    workload: str  # ``-total-`` for the average over all workloads
    workload_id: str | None  # None for ``-total-`` and in per-policy-group output
    latency: float
    components: dict[str, float] = field(default_factory=dict)
    line: int = 0
    svm: str = ""  # the echoed command's -vserver; '' when the capture does not say
    policy_group: bool = False  # a ``Policy Group`` row (qos statistics latency show), not a workload


def parse_latency(text: str) -> tuple[float, float] | None:
    """A latency cell as (seconds, half its last printed digit in seconds), or None.

    The half digit is the rounding the cell may hide; an exact ``0ms`` hides none.
    """
    m = _CELL.match(text.strip())
    if m is None:
        return None
    whole, frac, unit = m[1], m[2] or "", m[3]
    if unit is None and (whole.strip("0") or frac.strip("0")):
        return None  # a bare number has no unit to read it in
    scale = _UNIT_S[unit or "s"]
    value = float(f"{whole}.{frac or 0}") * scale
    if not math.isfinite(value):
        return None
    return value, (0.0 if value == 0.0 else 0.5 * 10.0 ** -len(frac) * scale)


def column_key(header: str) -> str:
    """A header's text as a key: lower-cased, runs of spaces and hyphens as ``_``."""
    return re.sub(r"[\s-]+", "_", header.strip().lower())


@dataclass(slots=True)
class _Layout:
    """The columns one header and ruler announced."""

    names: list[str]  # stable names, one per column
    name_col: int
    id_col: int | None
    latency_col: int


def _layout(header: str, ruler: str, p: Path, n: int) -> _Layout:
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", ruler)]
    if header[spans[-1][1] :].strip():
        raise CaptureError(f"header text past the ruler's last column: {header.strip()[:60]!r}", p, n)
    keys, start = [], 0
    for _, end in spans:
        keys.append(column_key(header[start:end]))
        start = end
    if keys[0] not in _NAME_COLUMNS or "latency" not in keys or "" in keys:
        raise CaptureError(f"a header the ruler does not fit: {header.strip()[:60]!r}", p, n)
    names = [COMPONENTS.get(k, k) for k in keys]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise CaptureError(f"column {name!r} appears twice in the header", p, n)
        seen.add(name)
    if OTHER in seen:
        raise CaptureError(f"a column named {OTHER!r} collides with the residual's name", p, n)
    return _Layout(names, 0, names.index("id") if "id" in names else None, names.index("latency"))


def _timestamp(line: str) -> float | None:
    """The epoch seconds of a time line a capture script printed, or None."""
    t = parse_cli_time(line)
    if t is not None:
        return t
    m = _STAMP_NAMED.match(line)
    if m:
        return parse_cli_time(m[1])
    m = _STAMP_DATE.match(line)
    if m:
        try:
            when = dt.datetime.strptime(f"{m[1]} {m[2]} {m[4]} {m[3]}", "%b %d %Y %H:%M:%S")
        except ValueError:
            return None
        return when.replace(tzinfo=dt.UTC).timestamp()
    return None


class _Reader:
    """The state of one capture while its lines are read."""

    def __init__(self, path: Path, notes: list[str] | None) -> None:
        self.p = path
        self.notes = notes
        self.layout: _Layout | None = None
        self.pending: tuple[int, str] | None = None  # a header line waiting for its ruler
        self.iteration = 0
        self.in_block = 0  # rows read in the current iteration
        self.stamp: float | None = None
        self.svm = ""
        self.rows = 0
        self.error: tuple[int, str] | None = None  # the first ONTAP ``Error:`` message

    def note(self, n: int, text: str) -> None:
        if self.notes is not None:
            self.notes.append(f"{self.p}:{n}: {text}")

    def command_svm(self, text: str) -> None:
        """A prompt's command sets the SVM its rows are of ('' without one ``-vserver``); the
        parenthesised echo of an abbreviated command only adds one it names."""
        if "::" not in text and not text.startswith("("):
            return
        v = _VSERVER.search(text)
        name = (v[1] or v[2]) if v else ""
        if _PATTERN.search(name):
            name = ""
        if name or "::" in text:
            self.svm = name

    def next_iteration(self) -> None:
        if self.in_block:
            self.iteration += 1
            self.in_block = 0

    def feed(self, n: int, raw: str) -> QosLatencyRow | None:
        line = _ANSI.sub("", raw).rstrip()
        if self.pending is not None:
            if not line.strip():
                return None
            hn, header = self.pending
            self.pending = None
            if not _RULER.match(line):
                raise CaptureError("a header without its dashed ruler on the next line", self.p, hn)
            self.layout = _layout(header, line, self.p, hn)
            return None
        text = line.strip()
        if not text:
            return None
        if _HEADER.match(line):
            self.next_iteration()
            self.pending = (n, line)
            return None
        m = _NOTICE.match(text)
        if m:
            if m[1] == "Error" and self.error is None:
                self.error = (n, text)
            self.note(n, f"skipped ONTAP {m[1].lower()}: {text[:80]!r}")
            return None
        if _SESSION.match(text):
            self.command_svm(text)
            self.note(n, f"skipped session text: {text[:80]!r}")
            return None
        stamp = _timestamp(text)
        if stamp is not None:
            self.next_iteration()
            self.stamp = stamp
            return None
        return self.row(n, text)

    def row(self, n: int, text: str) -> QosLatencyRow:
        lay = self.layout
        if lay is None:
            raise CaptureError(
                f"not a QoS latency header or row: {text[:60]!r} (expected a header such as "
                "'Workload ID Latency Network ...' before the rows)",
                self.p,
                n,
            )
        cells = text.split()
        if len(cells) != len(lay.names):
            raise CaptureError(
                f"{len(cells)} cells under {len(lay.names)} header columns: {text[:60]!r}", self.p, n
            )
        workload = cells[lay.name_col]
        if workload == "-total-":
            self.next_iteration()
        wid = cells[lay.id_col] if lay.id_col is not None else None
        total: float | None = None
        slack = 0.0
        comps: dict[str, float] = {}
        for i, (name, cell) in enumerate(zip(lay.names, cells, strict=True)):
            if i in (lay.name_col, lay.id_col) or (cell == "-" and i != lay.latency_col):
                continue
            parsed = parse_latency(cell)
            if parsed is None:
                raise CaptureError(f"{name}: not a latency (us, ms or s): {cell!r}", self.p, n)
            slack += parsed[1]
            if i == lay.latency_col:
                total = parsed[0]
            else:
                comps[name] = parsed[0]
        assert total is not None
        residual = total - sum(comps.values())
        if abs(residual) > slack + 1e-12:
            comps[OTHER] = residual
        self.in_block += 1
        self.rows += 1
        return QosLatencyRow(
            self.iteration,
            self.stamp,
            workload,
            None if wid == "-" else wid,
            total,
            comps,
            n,
            self.svm,
            lay.names[lay.name_col] == "policy_group",
        )

    def finish(self) -> None:
        if self.pending is not None:
            raise CaptureError(
                "the capture ends after a header, before its dashed ruler", self.p, self.pending[0]
            )
        if self.rows == 0:
            if self.error is not None:
                raise CaptureError(self.error[1], self.p, self.error[0])
            raise CaptureError("no QoS latency rows (qos statistics ... latency show output)", self.p)


def iter_qos_latency_rows(
    path: str | Path, notes: list[str] | None = None, stream: BinaryIO | None = None
) -> Iterator[QosLatencyRow]:
    """The rows of a ``qos statistics ... latency show`` capture, in file order.

    ``notes``, when given, receives a ``FILE:LINE: why`` string per skipped line.
    ``stream``: the file's bytes, already open (a pipe included); ``path`` then only
    names it in messages. Raises ``CaptureError`` at the first line that is not
    QoS latency output, and when the capture holds no row.
    """
    p = Path(path)
    reader = _Reader(p, notes)
    for n, raw in lines(p, stream):
        row = reader.feed(n, raw)
        if row is not None:
            yield row
    reader.finish()


def iter_qos_latency_samples(
    path: str | Path, notes: list[str] | None = None, stream: BinaryIO | None = None
) -> Iterator[Sample]:
    """One Sample per iteration, a ``qos_latency`` CounterRow per workload.

    Counters are ``latency`` and each component, in seconds, already averaged over
    the interval; ``properties["workload_id"]`` holds the ID when printed and
    ``properties["svm"]`` the echoed command's ``-vserver``; ``properties["policy_group"]``
    names a policy group's row (``qos statistics latency show``).
    """
    block: list[CounterRow] = []
    stamp: float | None = None
    current = 0
    for r in iter_qos_latency_rows(path, notes, stream):
        if block and r.iteration != current:
            yield Sample(stamp, block)
            block = []
        current, stamp = r.iteration, r.timestamp
        props = {"workload_id": r.workload_id} if r.workload_id is not None else {}
        if r.svm:
            props["svm"] = r.svm
        if r.policy_group:
            props["policy_group"] = r.workload
        block.append(CounterRow(TABLE, r.workload, props, {"latency": r.latency, **r.components}))
    if block:
        yield Sample(stamp, block)
