"""Host source that follows PerfMon CSV/TSV logs being written (``source: perfmon``).

Each poll reads only the tail of each configured file and uses its newest
complete row: PerfMon has already cooked the rates (Disk Reads/sec, Avg. Disk
sec/Read, % Idle Time ...). Counters for the exposition are integrated from those
rates over the row timestamps, so the sanlens_host_disk_* families look the same
as with the other sources. Memory stays bounded whatever the file size. The disks
are the log's PhysicalDisk instances, or its LogicalDisk volumes where it has no
per-disk PhysicalDisk counters (``sanlens.hosts.perfmon_disks``).

Latency: PerfMon cooks Avg. Disk sec/Read from the uint32 PERF_AVERAGE_TIMER
numerator over the sample interval, so with N reads outstanding it is wrong once
the interval exceeds 429.5/N s (N = 200 at a 15 s interval: the numerator wraps
6 times). Avg. Disk Read Queue Length comes from the uint64 read-queue integral
and is never capped, so where the log has it, latency = queue length / Disk
Reads/sec (Little's law), exact at any depth. % Disk Read Time is the same
integral but PDH caps it at 100 when it formats the value, so it is not used.
"""

from __future__ import annotations

import csv
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from sanlens.config import HostTarget
from sanlens.errors import SourceError
from sanlens.hosts.cooking import DiskReading
from sanlens.hosts.perfmon import LogHeader, PerfmonLog, PerfmonParseError, parse_timestamp, to_float
from sanlens.hosts.perfmon_disks import DISK_COUNTERS as DISK_COUNTERS  # the catalogue's, by name
from sanlens.hosts.perfmon_disks import select_disks
from sanlens.hosts.sources import HostSource
from sanlens.model import HostDiskStats

log = logging.getLogger(__name__)

TAIL_BYTES = 256 * 1024


def littles_law(queue: float | None, iops: float | None, avg_sec: float | None) -> float | None:
    """Mean latency = average queue length / ops per second where both were logged (exact at any
    depth); else the logged Avg. Disk sec/op, which the 32-bit numerator bounds (see above)."""
    if queue is not None and iops:
        return queue / iops
    return avg_sec


def disk_columns(header: LogHeader) -> tuple[dict[int, tuple[str, tuple[str, ...], str]], list[str]]:
    """Column index -> (disk, drives, field) for the log's disks (see ``perfmon_disks``); plus the
    disk counters not read."""
    sel = select_disks(header)
    return sel.columns, sel.unknown


@dataclass
class _Followed:
    path: str
    header: LogHeader | None = None
    encoding: str = "utf-8"
    delimiter: str = ","
    columns: dict[int, tuple[str, tuple[str, ...], str]] = field(default_factory=dict)
    size: int = 0


class PerfmonSource(HostSource):
    kind = "perfmon"

    def __init__(self, target: HostTarget) -> None:
        super().__init__(target)
        self.files = [_Followed(p) for p in target.files]
        self._totals: dict[tuple[str, str], float] = {}
        self._last_ts: float | None = None

    def _open(self, f: _Followed) -> None:
        try:
            with PerfmonLog(f.path) as plog:
                f.header, f.encoding, f.delimiter = plog.header, plog.encoding, plog.delimiter
        except PerfmonParseError as e:
            raise SourceError(str(e), reason="parse") from None
        if f.encoding == "utf-16":
            raise SourceError(
                f"{f.path}: UTF-16 logs cannot be followed; write the log as CSV (ANSI/UTF-8)", reason="parse"
            )
        sel = select_disks(f.header)
        f.columns = sel.columns
        if sel.unknown:
            log.warning(
                "%s: %d disk counter(s) not recognised (localized?), e.g. %s",
                f.path,
                len(sel.unknown),
                sel.unknown[0],
            )
        for note in sel.notes:
            log.warning("%s: %s", f.path, note)
        if not f.columns:
            log.warning(
                "%s: no English PhysicalDisk or LogicalDisk counters found; nothing to report from it", f.path
            )

    def _newest_row(self, f: _Followed) -> tuple[float, list[str]] | None:
        try:
            size = os.path.getsize(f.path)
            if f.header is None or size < f.size:  # new or truncated/rotated file
                self._open(f)
            f.size = size
            with open(f.path, "rb") as fh:
                fh.seek(max(0, size - TAIL_BYTES))
                tail = fh.read().decode(f.encoding.replace("-sig", ""), errors="replace")
        except OSError as e:
            raise SourceError(f"{f.path}: {e.strerror}", reason="io") from None
        assert f.header is not None
        width = len(f.header.columns) + 1
        lines = tail.splitlines(keepends=True)
        for line in reversed(lines[1:] if size > TAIL_BYTES else lines):
            if not line.endswith(("\n", "\r")):
                continue  # being written
            cells = next(csv.reader([line], delimiter=f.delimiter), [])
            if len(cells) != width:
                continue
            try:
                ts = parse_timestamp(cells[0])
            except ValueError:
                continue
            return ts + f.header.bias_minutes * 60.0, cells[1:]
        return None

    def read(self) -> tuple[float, list[DiskReading], dict[str, HostDiskStats] | None, float | None]:
        newest: tuple[float, dict[str, dict[str, float]], dict[str, tuple[str, ...]]] | None = None
        for f in self.files:
            row = self._newest_row(f)
            if row is None:
                continue
            ts, cells = row
            values: dict[str, dict[str, float]] = {}
            drives: dict[str, tuple[str, ...]] = {}
            for i, (disk, drv, name) in f.columns.items():
                try:
                    value = to_float(cells[i])
                except ValueError:
                    continue
                if value is not None:
                    values.setdefault(disk, {})[name] = value
                    drives[disk] = drv
            if newest is None or ts > newest[0]:
                newest = (ts, values, drives)
        if newest is None:
            raise SourceError(
                f"host {self.name}: no complete data row in {', '.join(self.target.files)}", reason="parse"
            )
        ts, values, drives = newest
        dt = ts - self._last_ts if self._last_ts is not None and ts > self._last_ts else 0.0
        if self._last_ts is None or ts > self._last_ts:
            self._last_ts = ts
        readings, rates = [], {}
        for disk, vals in sorted(values.items()):
            idle = vals.get("idle_ratio")
            stats = HostDiskStats(
                host=self.name,
                disk=disk,
                read_iops=vals.get("read_iops"),
                write_iops=vals.get("write_iops"),
                read_latency_s=littles_law(
                    vals.get("read_queue"), vals.get("read_iops"), vals.get("read_latency_s")
                ),
                write_latency_s=littles_law(
                    vals.get("write_queue"), vals.get("write_iops"), vals.get("write_latency_s")
                ),
                idle_ratio=None if idle is None else min(max(idle / 100.0, 0.0), 1.0),
                queue_length=vals.get("queue_length"),
                read_bytes_s=vals.get("read_bytes_s"),
                write_bytes_s=vals.get("write_bytes_s"),
                split_iops=vals.get("split_iops"),
            )
            rates[disk] = stats
            readings.append(self._integrate(disk, drives.get(disk, ()), stats, dt))
        return ts, readings, rates, dt or None

    def _integrate(self, disk: str, drives: tuple[str, ...], s: HostDiskStats, dt: float) -> DiskReading:
        """Counters from rates: ops += IOPS·dt, latency += sec/op·IOPS·dt, idle += ratio·dt."""
        incr = {
            "reads": (s.read_iops or 0.0) * dt,
            "writes": (s.write_iops or 0.0) * dt,
            "read_bytes": (s.read_bytes_s or 0.0) * dt,
            "write_bytes": (s.write_bytes_s or 0.0) * dt,
            "read_latency_s": (s.read_latency_s or 0.0) * (s.read_iops or 0.0) * dt,
            "write_latency_s": (s.write_latency_s or 0.0) * (s.write_iops or 0.0) * dt,
            "idle_s": (s.idle_ratio or 0.0) * dt,
            "split_ios": (s.split_iops or 0.0) * dt,
        }
        totals: dict[str, Any] = {}
        for name, add in incr.items():
            key = (disk, name)
            self._totals[key] = self._totals.get(key, 0.0) + add
            totals[name] = self._totals[key]
        return DiskReading(disk=disk, drives=drives, queue_length=s.queue_length, **totals)
