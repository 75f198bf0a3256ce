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
