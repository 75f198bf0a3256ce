"""Parser for nodeshell ``sysstat -M`` text: one ``sysstat`` counter row per interval line.

``sysstat -M`` prints a header (``ANY1+ .. AVG CPU0 .. Network Protocol ...
Kahuna WAFL_Ex(Kahu) ... Ops/s CP``), repeated every screenful, then one line
per interval. Domain columns are percent of one core; ``WAFL_Ex(Kahu)`` holds
WAFL_Ex with, in parentheses, the part of it that ran serially (Kahuna).

The lines around the output say what the columns cannot: the prompt names the
node (``cluster1-01>`` or ``cluster1::> node run -node cluster1-01 ...``) and the
cluster, the command gives the interval (``sysstat -M 1``; 15 s when it gives
none), and a ``date`` or ``cluster date show`` line before it dates the samples.
They land in ``SysstatFacts``; a line of output printed without them is still read.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from sanlens.ontap.cli_capture import lines, number
from sanlens.ontap.cooking import CaptureError, CounterRow, Sample

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
_CLUSTER_PROMPT = re.compile(r"^([\w.-]+)::[\w*]*>\s*(.*)$")
_NODE_PROMPT = re.compile(r"^([\w.-]+)\*?>\s*(.*)$")
_RUN_NODE = re.compile(r"\brun\s+(?:-node\s+)?[\"']?([\w.-]+)")
_SYSSTAT_ARGS = re.compile(r"\bsysstat\b([^\"';]*)")
_SESSION = re.compile(  # around a date or a nodeshell: not output
    r"^(?:Node\s+Date\s+Time\s*zone|Type 'exit' or 'Ctrl-D' to return to the CLI"
    r"|\d+ entries were displayed\.|Last login time:)",
    re.I,
)
DEFAULT_INTERVAL_S = 15.0  # sysstat's own interval when the command gives none
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
# nodeshell ``date``: Sun Mar  2 10:00:00 PST 2025 (the abbreviation is read only for UTC/GMT)
_NODE_DATE = re.compile(
    r"^(?:[A-Z][a-z]{2}\s+)?([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d\d):(\d\d):(\d\d)\s+(?:([A-Z]{1,5})\s+)?(\d{4})$"
)
# ``cluster date show`` (or ``date``) row: cluster1-01  3/2/2025 10:00:00 -08:00 America/Los_Angeles
_CLUSTER_DATE = re.compile(
    r"^(?:([\w.-]+)\s+)?(\d{1,2})/(\d{1,2})/(\d{4})\s+(\d\d):(\d\d):(\d\d)\s+([+-])(\d\d):(\d\d)(?:\s+\S+)?$"
)
# ISO date (``date -Iseconds``, ``date '+%F %T'``): 2025-03-02T10:00:00-08:00
_ISO_DATE = re.compile(r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(Z|[+-]\d\d:?\d\d)?$")
_PCT = re.compile(r"^(\d+(?:\.\d+)?)%(?:\((\d+(?:\.\d+)?)%\))?$")


@dataclass
class SysstatFacts:
    """What a ``sysstat -M`` capture says about itself besides its rows.

    ``interval``: the command's (None when no command line was captured);
    ``date``: epoch seconds of the last date line before the samples, UTC when ``zoned``,
    else the wall clock of an unnamed zone read as UTC; ``dated``: samples timed from it.
    """

    cluster: str | None = None
    nodes: list[str] = field(default_factory=list)
    interval: float | None = None
    date: float | None = None
    date_line: int | None = None
    zoned: bool = False
    dated: int = 0
    fallback_interval: float | None = None  # --interval, for a date without a command


def iter_sysstat_samples(
    path: str | Path,
    node: str | None = None,
    notes: list[str] | None = None,
    stream: BinaryIO | None = None,
    facts: SysstatFacts | None = None,
) -> Iterator[Sample]:
    """One Sample (one row, table ``sysstat``) per interval line of ``sysstat -M`` output.

    Counters: ``avg`` (percent of all cores), ``cpu`` and ``any`` (arrays, labels
    ``cpu0``.. and ``any1+``..), ``domain_busy`` (array, percent of one core,
    labels ONTAP's domain names, ``wafl_exempt_kahuna`` for the parenthesised
    WAFL_Ex share), ``ops`` and ``cp``. The values are already per-interval.
    ``notes``, when given, receives a ``FILE:LINE: why`` string per skipped
    prompt or command line and for a skipped ``-c`` summary. ``stream``: the file's
    bytes, already open (a pipe included); ``path`` then only names it in messages.
    ``facts`` receives node, cluster, interval and date from the lines around the output;
    samples after a date line carry their time (the date plus one interval per line).
    """
    p = Path(path)
    facts = facts if facts is not None else SysstatFacts()
    named = node
    node = node or p.stem
    header: list[str] | None = None
    since_date = 0
    for n, raw in lines(p, stream):
        line = raw.strip()
        low = line.lower()
        date = _date(line)
        if date is not None:
            facts.date, facts.zoned, facts.date_line = date[0], date[1], n
            since_date = 0
            continue
        prompt = _prompt(line)
        if prompt is not None:
            cluster, on, interval = prompt
            facts.cluster = cluster or facts.cluster
            if on and not named:
                node = on
            if interval is not None:
                facts.interval = interval
            continue
        if low.startswith("summary"):
            if notes is not None:
                notes.append(f"{p}:{n}: skipped the -c summary: it repeats the intervals as min/avg/max")
            return
        if not line or line.startswith("--"):
            continue
        if _SESSION.match(line):
            continue
        if "sysstat" in low or "::>" in line or low.endswith(">"):
            if notes is not None:
                notes.append(f"{p}:{n}: skipped a prompt or command line: {line[:80]!r}")
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
        if node not in facts.nodes:
            facts.nodes.append(node)
        t = None
        if facts.date is not None:
            since_date += 1
            t = facts.date + since_date * (facts.interval or facts.fallback_interval or 60.0)
            facts.dated += 1
        yield Sample(t, [_sysstat_row(node, header, cells, p, n)])


def _prompt(line: str) -> tuple[str | None, str | None, float | None] | None:
    """(cluster, node, interval) of a prompt or command line that runs sysstat; None for other lines."""
    m = _CLUSTER_PROMPT.match(line)
    if m:
        cluster, cmd = m[1], m[2]
        node = _RUN_NODE.search(cmd)
        on = node[1] if node and node[1] not in ("local", "-command") else None
    else:
        m = _NODE_PROMPT.match(line)
        if not m:
            return None
        cluster, on, cmd = None, m[1], m[2]
    args = _SYSSTAT_ARGS.search(cmd)
    interval = None
    if args:
        tokens = args[1].split()
        interval = DEFAULT_INTERVAL_S
        skip = False
        for tok in tokens:
            if skip:
                skip = False
            elif tok == "-c":
                skip = True
            elif tok.isdigit() and int(tok) > 0:
                interval = float(tok)
    return cluster, on, interval


def _date(line: str) -> tuple[float, bool] | None:
    """(epoch seconds, whether the line named its zone) of a date line; None for other lines."""
    m = _NODE_DATE.match(line)
    if m and m[1] in _MONTHS:
        wall = dt.datetime(int(m[7]), _MONTHS.index(m[1]) + 1, int(m[2]), int(m[3]), int(m[4]), int(m[5]))
        return wall.replace(tzinfo=dt.UTC).timestamp(), (m[6] or "") in ("UTC", "GMT", "Z")
    m = _CLUSTER_DATE.match(line)
    if m:
        wall = dt.datetime(int(m[4]), int(m[2]), int(m[3]), int(m[5]), int(m[6]), int(m[7]))
        offset = dt.timedelta(hours=int(m[9]), minutes=int(m[10])) * (-1 if m[8] == "-" else 1)
        return wall.replace(tzinfo=dt.timezone(offset)).timestamp(), True
    m = _ISO_DATE.match(line)
    if m:
        try:
            when = dt.datetime.fromisoformat(m[1] + (m[2] or "").replace("Z", "+00:00"))
        except ValueError:
            return None
        return when.replace(tzinfo=when.tzinfo or dt.UTC).timestamp(), m[2] is not None
    return None


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
            v = number(cell)
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
