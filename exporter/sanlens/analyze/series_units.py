"""The unit of a PerfMon counter, so its statistics print in human units (ms, MB/s, IOPS, %).

ONTAP series carry their unit from the counter schema; a PerfMon column only has its counter's
name, which says it: ``Avg. Disk sec/Read`` is seconds, ``Disk Read Bytes/sec`` bytes per
second, ``Disk Reads/sec`` I/Os per second, ``% Idle Time`` percent. Units are those of
:data:`sanlens.analyze.charts.UNITS`; a counter none of the rules knows is a plain number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_IOPS = ("disk reads/sec", "disk writes/sec", "disk transfers/sec")


def perfmon_unit(counter: str) -> str:
    c = counter.strip().lower()
    if c.startswith("avg. disk sec/"):
        return "seconds"
    if c.startswith("%"):
        return "percent"
    if "bytes/sec" in c:
        return "bytes_per_second"
    if c in _IOPS:
        return "iops"
    if c.endswith("/sec"):
        return "per_second"
    if "queue length" in c:
        return "count"
    return ""


def sysstat_unit(column: str) -> str:
    """The unit of an iostat or sar column as sysstat prints it (``r_await`` ms, ``rkB/s``, ``%util``)."""
    c = column.strip()
    if c.startswith("%"):
        return "percent"
    if c.endswith("await") or c == "svctm":
        return "milliseconds"
    if c.endswith("kB/s"):
        return "kilobytes_per_second"
    if c.endswith("MB/s"):
        return "megabytes_per_second"
    if c.endswith("sec/s"):
        return "sectors_per_second"
    if c in ("r/s", "w/s", "d/s", "f/s", "tps"):
        return "iops"
    if c.endswith("rqm/s"):
        return "per_second"
    if c.endswith("areq-sz"):
        return "kilobytes"
    if c == "avgrq-sz":
        return "sectors"
    if c in ("aqu-sz", "avgqu-sz"):
        return "count"
    return ""


def series_unit(series: Mapping[str, Any]) -> str:
    """A JSON series row's unit: its own, else (a PerfMon column) the one its counter's name says."""
    unit = series.get("unit")
    if unit:
        return str(unit)
    return perfmon_unit(str(series.get("counter") or ""))
