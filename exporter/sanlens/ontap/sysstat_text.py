"""Parser for nodeshell ``sysstat -M`` text: one ``sysstat`` counter row per interval line.

``sysstat -M`` prints a header (``ANY1+ .. AVG CPU0 .. Network Protocol ...
Kahuna WAFL_Ex(Kahu) ... Ops/s CP``), repeated every screenful, then one line
per interval. Domain columns are percent of one core; ``WAFL_Ex(Kahu)`` holds
WAFL_Ex with, in parentheses, the part of it that ran serially (Kahuna).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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
_PCT = re.compile(r"^(\d+(?:\.\d+)?)%(?:\((\d+(?:\.\d+)?)%\))?$")


def iter_sysstat_samples(
    path: str | Path, node: str | None = None, notes: list[str] | None = None, stream: BinaryIO | None = None
) -> Iterator[Sample]:
    """One Sample (one row, table ``sysstat``) per interval line of ``sysstat -M`` output.

    Counters: ``avg`` (percent of all cores), ``cpu`` and ``any`` (arrays, labels
    ``cpu0``.. and ``any1+``..), ``domain_busy`` (array, percent of one core,
    labels ONTAP's domain names, ``wafl_exempt_kahuna`` for the parenthesised
    WAFL_Ex share), ``ops`` and ``cp``. The values are already per-interval.
    ``notes``, when given, receives a ``FILE:LINE: why`` string per skipped
    prompt or command line and for a skipped ``-c`` summary. ``stream``: the file's
    bytes, already open (a pipe included); ``path`` then only names it in messages.
    """
    p = Path(path)
    node = node or p.stem
    header: list[str] | None = None
    for n, raw in lines(p, stream):
        line = raw.strip()
        low = line.lower()
        if low.startswith("summary"):
            if notes is not None:
                notes.append(f"{p}:{n}: skipped the -c summary: it repeats the intervals as min/avg/max")
            return
        if not line or line.startswith("--"):
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
