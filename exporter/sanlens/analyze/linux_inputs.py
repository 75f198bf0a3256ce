"""Linux sysstat captures (``iostat -x``, ``sar -d``) as inputs of `sanlens analyze`.

Each capture is one host (the name in sysstat's first line, else the file's stem) and
becomes ``HostView``s in time order, one per report (at most ``MAX_STEPS``: consecutive
reports are then averaged, latencies weighted by their IOPS), each disk mapped to its
LUN through the same config ``serve`` reads: a ``hosts[].disks`` entry naming the device
as the capture prints it (``dm-3``; ``mpatha`` with ``iostat -N`` or ``sar -p``). sysstat
prints no WWID, so the automatic join is live-only (node_exporter).

Path devices are no disks of their own (``analyze/linux_paths.py``): an NVMe namespace's hidden
per-controller devices are its paths by name, a config-mapped multipath map's SCSI paths are the
SCSI disks whose bytes sum to the map's; each disk lists them as its ``path_stats``.

Partitions, CD drives, loop and RAM devices are left out. A capture without times
(``iostat`` without ``-t``) is placed like an ONTAP capture without times: its last
report at the file's modification time, reports ``--interval`` seconds apart (60 s
unless given).
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sanlens.analyze.analysis import Analysis
from sanlens.analyze.charts import Points
from sanlens.analyze.host_intervals import MAX_STEPS, DiskColumn, Mapper
from sanlens.analyze.linux_paths import PathGroups, compose, dm_groups, nvme_groups
from sanlens.analyze.series_units import sysstat_unit
from sanlens.analyze.source import InputSource, as_source
from sanlens.errors import SanlensError
from sanlens.model import HostDiskStats, HostPathStats, HostView, Snapshot, iso_utc
from sanlens.ontap.cli_capture import text_head

if TYPE_CHECKING:  # the sysstat text parser loads when a capture is read: sniffing does not need it
    from sanlens.hosts.linux_text import Capture

DEFAULT_INTERVAL_S = 60.0
MAX_LINE = 1 << 20
# HostDiskStats fields an interval keeps: rates average, latencies weight by their op's rate
_MEAN = (
    "read_iops",
    "write_iops",
    "discard_iops",
    "flush_iops",
    "read_bytes_s",
    "write_bytes_s",
    "idle_ratio",
    "reported_busy_ratio",
    "outstanding_io",
)
_WEIGHTED = tuple((f"{k}_latency_s", f"{k}_iops") for k in ("read", "write", "discard", "flush"))
_CHARTED = ("read_latency_s", "write_latency_s", "idle_ratio", "outstanding_io", "read_iops", "write_iops")
_FIRST = re.compile(r"^Linux \S+ \([^)]*\)", re.M)
_DEVICE_HEADER = re.compile(r"^\s*Device:?\s.*\b(r/s|rrqm/s)|\s(r/s|rrqm/s)\s.*\sDevice\s*$", re.M)
_SAR_DEV = re.compile(r"^\d\d:\d\d:\d\d(?: [AP]M)?\s+(?:DEV\s|.*\sDEV\s*$)", re.M)


def detect_iostat(path: Path, head: bytes) -> bool:
    t = text_head(head)
    return bool(_DEVICE_HEADER.search(t)) and not _SAR_DEV.search(t)


def detect_sar(path: Path, head: bytes) -> bool:
    t = text_head(head)
    return bool(_FIRST.search(t) or _SAR_DEV.search(t)) and bool(_SAR_DEV.search(t))


@dataclass
class LinuxInput:
    """A read capture and where its reports sit in time."""

    capture: Capture
    host: str
    times: list[tuple[float, float]] = field(default_factory=list)  # (start, end) per report
    placed: bool = False  # no times in the capture: placed at the file's modification time
    mtime: float | None = None  # the file's modification time when it was opened
    groups: PathGroups | None = None  # path devices under their disks (``group``)

    @property
    def path(self) -> str:
        return self.capture.path

    @property
    def kind(self) -> str:
        return self.capture.kind

    @property
    def start(self) -> float | None:
        return self.times[0][0] if self.times else None

    @property
    def end(self) -> float | None:
        return self.times[-1][1] if self.times else None

    @property
    def step(self) -> float | None:
        if len(self.times) < 2:
            return (self.times[0][1] - self.times[0][0]) if self.times else None
        return (self.times[-1][1] - self.times[0][1]) / (len(self.times) - 1)

    def place(self, interval: float | None) -> None:
        """Each report's (start, end): from the capture's times, else ``interval`` apart up to the mtime."""
        reports = self.capture.reports
        ends = [r.end for r in reports]
        gap = interval or DEFAULT_INTERVAL_S
        if all(e is not None for e in ends) and ends:
            known = [float(e) for e in ends if e is not None]
            self.placed = False
        else:
            last = self.mtime if self.mtime is not None else os.path.getmtime(self.path)
            known = [last - (len(reports) - 1 - i) * gap for i in range(len(reports))]
            self.placed = True
        times = []
        for i, (r, end) in enumerate(zip(reports, known, strict=True)):
            if r.start is not None and r.start < end:
                start = r.start
            elif i > 0 and known[i - 1] < end:
                start = known[i - 1]
            elif i + 1 < len(known) and known[i + 1] > end:
                start = end - (known[i + 1] - end)
            else:
                start = end - gap
            times.append((start, end))
        self.times = times

    def group(self, mapper: Mapper | None = None) -> PathGroups:
        """Path devices under their disks: NVMe by name; dm-multipath where ``mapper`` maps the map."""
        reports = [r.devices for r in self.capture.reports]
        seen = self._whole()
        groups = PathGroups(nvme=nvme_groups(seen))
        for paths in groups.nvme.values():
            groups.hidden.update(paths)
        if mapper is not None:
            host = self.host
            groups.dm, idle = dm_groups(reports, seen, lambda d: bool(mapper(host, d, ()).lun))
            groups.hidden.update(idle, *groups.dm.values())
        self.groups = groups
        return groups

    def _whole(self) -> list[str]:
        from sanlens.hosts.linux_text import whole_disk

        seen: dict[str, None] = {}
        for r in self.capture.reports:
            for d in r.devices:
                if whole_disk(d):
                    seen.setdefault(d, None)
        return list(seen)

    def disks(self) -> list[str]:
        """The disks judged: whole disks that are no other disk's path, NVMe namespaces even when only
        their paths are printed."""
        groups = self.groups or self.group()
        out: dict[str, None] = {}
        for d in self._whole():
            if d in groups.hidden:
                head = next((h for h, p in groups.nvme.items() if d in p), None)
                if head is not None:
                    out.setdefault(head, None)
            else:
                out.setdefault(d, None)
        return list(out)

    def folded(
        self, max_steps: int = MAX_STEPS
    ) -> Iterator[tuple[float, float, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]]:
        """(start, end, cooked fields per disk, per path device) for at most ``max_steps`` groups of
        reports."""
        reports = self.capture.reports
        groups = self.groups or self.group()
        group = max(1, math.ceil(len(reports) / max_steps))
        devices = self.disks()
        paths = sorted(groups.hidden)
        composed = [compose(r.devices, groups) for r in reports]
        for g in range(0, len(reports), group):
            chunk = list(range(g, min(g + group, len(reports))))
            start, end = self.times[chunk[0]][0], self.times[chunk[-1]][1]
            per_device = {}
            for device in devices:
                rows = [composed[i][device] for i in chunk if device in composed[i]]
                if rows:
                    per_device[device] = _fold(rows)
            per_path = {}
            for p in paths:
                rows = [reports[i].devices[p] for i in chunk if p in reports[i].devices]
                if rows:
                    per_path[p] = _fold(rows)
            yield start, end, per_device, per_path

    def snapshots(self, mapper: Mapper) -> Iterator[Snapshot]:
        """One HostView per (folded) report, in time order."""
        groups = self.group(mapper)
        for start, end, per_device, per_path in self.folded():
            disks = []
            for device, values in per_device.items():
                m = mapper(self.host, device, ())
                paths = groups.paths(device)
                extra: dict[str, Any] = {}
                if paths:
                    extra["observed_paths"] = len(paths)
                    extra["path_stats"] = tuple(_path_stats(p, per_path.get(p, {})) for p in paths)
                disks.append(
                    HostDiskStats(
                        self.host,
                        device,
                        **m.stats_fields(),
                        platform="linux",
                        kernel=self.capture.kernel,
                        **values,
                        **extra,
                    )
                )
            yield Snapshot(self.host, "host", end, view=HostView(self.host, end, end - start, tuple(disks)))

    def chart_points(self, max_points: int = 400) -> dict[DiskColumn, Points]:
        """The report's chart series per device, in the fields the PerfMon charts use."""
        out: dict[DiskColumn, list[tuple[float, float]]] = {}
        for _start, end, per_device, _paths in self.folded(max_points):
            for device, values in per_device.items():
                for name in _CHARTED:
                    v = values.get(name)
                    if v is not None and math.isfinite(v):
                        out.setdefault((self.host, device, (), name), []).append((end, float(v)))
        return {c: pts for c, pts in out.items()}

    @property
    def steps(self) -> int:
        n = len(self.capture.reports)
        return math.ceil(n / max(1, math.ceil(n / MAX_STEPS))) if n else 0

    def input_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "hosts": [self.host],
            "samples": len(self.capture.reports),
            "counters": len(self.series()),
            "start": iso_utc(self.start),
            "end": iso_utc(self.end),
        }

    def series(self) -> list[dict[str, Any]]:
        """Per device and printed column: samples, min, max, mean (the report's counter table)."""
        acc: dict[tuple[str, str], list[float]] = {}
        for r in self.capture.reports:
            for device, raw in r.raw.items():
                for col, v in raw.items():
                    acc.setdefault((device, col), []).append(v)
        return [
            {
                "path": f"{device} {col}",
                "host": self.host,
                "object": "device",
                "instance": device,
                "counter": col,
                "unit": sysstat_unit(col),
                "samples": len(vals),
                "min": min(vals),
                "max": max(vals),
                "mean": sum(vals) / len(vals),
            }
            for (device, col), vals in acc.items()
        ]


def _path_stats(path: str, v: dict[str, Any]) -> HostPathStats:
    """A path device's own columns (sysstat prints no path state)."""
    return HostPathStats(
        path,
        read_iops=v.get("read_iops"),
        write_iops=v.get("write_iops"),
        read_latency_s=v.get("read_latency_s"),
        write_latency_s=v.get("write_latency_s"),
        read_bytes_s=v.get("read_bytes_s"),
        write_bytes_s=v.get("write_bytes_s"),
        busy_ratio=v.get("reported_busy_ratio"),
        outstanding_io=v.get("outstanding_io"),
    )


def _fold(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Several reports of one device as one interval: rates averaged, latencies IOPS-weighted."""
    if len(rows) == 1:
        return dict(rows[0])
    out: dict[str, Any] = {}
    for name in _MEAN:
        vals = [r[name] for r in rows if name in r]
        if vals:
            out[name] = sum(vals) / len(vals)
    for lat, ops in _WEIGHTED:
        pairs = [(r.get(ops, 0.0), r[lat]) for r in rows if lat in r]
        if pairs:
            total = sum(w for w, _ in pairs)
            out[lat] = sum(w * x for w, x in pairs) / total if total > 0 else max(x for _, x in pairs)
    return out


def _bounded_lines(f: io.TextIOWrapper, name: str) -> Iterator[str]:
    """The lines of ``f``, none longer than ``MAX_LINE``: a runaway line is no sysstat output."""
    for n, line in enumerate(iter(lambda: f.readline(MAX_LINE + 1), ""), start=1):
        if len(line) > MAX_LINE:
            raise SanlensError(f"{name}:{n}: a line longer than {MAX_LINE} characters: not sysstat text")
        yield line


def read_capture(parser: str) -> Callable[[Path | InputSource, Any], Analysis]:
    """The ``sanlens.analyze.cli`` reader of one kind: an ``Analysis`` whose detail is a LinuxInput.
    ``parser``: the name of its parse function in ``sanlens.hosts.linux_text``."""

    def read(path: Path | InputSource, opts: Any) -> Analysis:
        from sanlens.hosts import linux_text
        from sanlens.hosts.linux_text import LinuxTextError

        parse: Callable[[str, Any], Capture] = getattr(linux_text, parser)
        source = as_source(path)
        try:
            with io.TextIOWrapper(source.stream(), encoding="utf-8", errors="replace") as f:
                cap = parse(source.name, _bounded_lines(f, source.name))
            mtime = source.mtime
        except LinuxTextError as e:
            raise SanlensError(str(e)) from None
        except OSError as e:
            raise SanlensError(f"{source.name}: cannot read: {e.strerror}") from None
        finally:
            if not isinstance(path, InputSource):
                source.close()
        li = LinuxInput(cap, cap.host or source.path.stem, mtime=mtime)
        li.place(None)
        warnings = list(cap.warnings)
        if cap.since_boot_dropped:
            warnings.append("the first report (averages since boot) is left out")
        return Analysis(li.input_json(), li.series(), warnings, li)

    return read


read_iostat = read_capture("parse_iostat")
read_sar = read_capture("parse_sar_disk")
DETECTORS = (("linux-iostat", detect_iostat, read_iostat), ("linux-sar", detect_sar, read_sar))
