"""Small PerfMon CSV logs written by tests, in relog's shape (UTC, bias 0)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

DISK_COUNTERS = (
    "Disk Reads/sec",
    "Disk Writes/sec",
    "Avg. Disk sec/Read",
    "Avg. Disk sec/Write",
    "% Idle Time",
    "Current Disk Queue Length",
)


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%m/%d/%Y %H:%M:%S.000")


def write_log(
    path: Path, columns: Sequence[str], rows: Sequence[tuple[float, Sequence[float | None]]]
) -> Path:
    """``columns``: counter paths; ``rows``: (UTC epoch, values), None for a blank cell."""
    lines = ['"(PDH-CSV 4.0) (Coordinated Universal Time)(0)",' + ",".join(f'"{c}"' for c in columns)]
    for t, values in rows:
        cells = [" " if v is None else repr(float(v)) for v in values]
        lines.append(f'"{stamp(t)}",' + ",".join(f'"{c}"' for c in cells))
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return path


def disk_columns(host: str, instance: str, counters: Sequence[str] = DISK_COUNTERS) -> list[str]:
    return [f"\\\\{host}\\PhysicalDisk({instance})\\{c}" for c in counters]


def volume_columns(host: str, instance: str, counters: Sequence[str] = DISK_COUNTERS) -> list[str]:
    """LogicalDisk columns of one volume (``H:``, or a mount point): the same counter names as PhysicalDisk."""
    return [f"\\\\{host}\\LogicalDisk({instance})\\{c}" for c in counters]


# The SQL Server over-subscription case, as its teams log it: LogicalDisk counters only, per volume.
SQL_VOLUMES = ("H:", "I:", "X:")
SQL_COUNTERS = (*DISK_COUNTERS, "Disk Read Bytes/sec", "Split IO/Sec", "% Free Space")


def sql_volume_row(i: int) -> list[float]:
    """One row of one volume: 1.2 s reads, 0.9 s writes, 85 % idle, 60 IOPS (180 over three volumes).

    Reads and writes alternate 45/15 and 40/20 per second row by row, so an interval's IOPS-weighted
    latency differs from a plain mean of the rows and the arithmetic of the test can tell them apart.
    """
    reads = 45.0 if i % 2 == 0 else 40.0
    writes = 60.0 - reads
    return [reads, writes, 1.2, 0.9, 85.0, 2.0, reads * 65536, 0.5, 42.0]


def sql_volumes_log(
    path: Path,
    host: str = "SQL01",
    volumes: Sequence[str] = SQL_VOLUMES,
    rows: int = 40,
    t0: float = 1_740_909_600.0,
    step: float = 15.0,
    extra: Sequence[str] = ("_Total", "HarddiskVolume1"),
) -> Path:
    """A LogicalDisk-only log of ``volumes`` (plus ``extra`` instances, which carry 10x the I/O so a
    test sees if they were counted), ``rows`` rows ``step`` seconds apart."""
    columns: list[str] = []
    for v in (*volumes, *extra):
        columns += volume_columns(host, v, SQL_COUNTERS)
    data = []
    for i in range(rows):
        row = sql_volume_row(i)
        big = [x * 10 if k in (0, 1, 6) else x for k, x in enumerate(row)]
        data.append((t0 + i * step, row * len(volumes) + big * len(extra)))
    return write_log(path, columns, data)
