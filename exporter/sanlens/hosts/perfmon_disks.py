"""Which columns of a PerfMon log are host disks: PhysicalDisk instances, else LogicalDisk volumes.

A PhysicalDisk's counters are the sums of its volumes', so a log is judged on one
object per host, never both. PhysicalDisk wins where it has per-disk counters: it is
what maps to a LUN, and its instance name (``"2 I: X:"``) lists the drive letters of
the volumes on it. A host logged with LogicalDisk counters only (what SQL Server
teams usually collect) is judged per volume instead: each instance (``H:``, or a
mount point such as ``C:\\MountPoints\\Data``) is a disk whose only drive is itself,
so a ``disks:`` entry with that ``drive`` maps it to its LUN.

Left out: ``_Total``; ``HarddiskVolumeN`` (a volume with neither a letter nor a
mount point to map it to a LUN by; mostly system and recovery partitions); and, in
a log with PhysicalDisk counters, volumes whose letter is on none of its
PhysicalDisk instances (a mount point, or a disk the log left out), since which
disk they add to cannot be told. The last two are named in ``notes``.
LogicalDisk has the same names as PhysicalDisk for every counter read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from sanlens.hosts.catalogue import PERFMON
from sanlens.hosts.mapping import normalize_drive
from sanlens.hosts.perfmon import LogHeader

# English disk counter (lower case) -> HostDiskStats field, from the PerfMon catalogue
DISK_COUNTERS = {c.name.lower(): c.feeds for c in PERFMON.counters}
DiskObject = Literal["PhysicalDisk", "LogicalDisk"]
PHYSICAL: DiskObject = "PhysicalDisk"
LOGICAL: DiskObject = "LogicalDisk"
# LogicalDisk counters of space, not I/O: expected in a log, never "not used"
_SPACE = frozenset({"% free space", "free megabytes"})
_NO_LETTER = re.compile(r"harddiskvolume\d+", re.IGNORECASE)

DiskColumn = tuple[str, tuple[str, ...], str]  # disk, drives, HostDiskStats field


@dataclass
class HostDisks:
    """One host's disks in the log: which object they are, and their names in log order."""

    object: DiskObject
    disks: list[str] = field(default_factory=list)
    covered: list[str] = field(default_factory=list)  # LogicalDisk volumes on a judged PhysicalDisk


@dataclass
class DiskSelection:
    """The disk columns of a log (column index -> disk, drives, field) and what was left out, why."""

    columns: dict[int, DiskColumn] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # counter paths of the chosen object not read
    hosts: dict[str, HostDisks] = field(default_factory=dict)  # host (upper case, "" = the log's)
    notes: list[str] = field(default_factory=list)

    def object_of(self, host: str) -> DiskObject | None:
        h = self.hosts.get(host.upper())
        return h.object if h else None


def _drives(instance: str) -> tuple[str, ...]:
    """``"2 I: X:"`` -> ("I:", "X:"): the letters a PhysicalDisk instance name lists."""
    _, _, rest = instance.partition(" ")
    return tuple(d.upper() for d in rest.split() if d.endswith(":"))


def _is_physical(obj: str) -> bool:
    return obj.lower() == "physicaldisk"


def _is_logical(obj: str) -> bool:
    return obj.lower() == "logicaldisk"


def select_disks(header: LogHeader) -> DiskSelection:
    """Per host of the log: its PhysicalDisk instances if it has per-disk counters, else its volumes."""
    out = DiskSelection()
    physical_hosts: set[str] = set()
    letters: dict[str, set[str]] = {}  # host -> drive letters on its PhysicalDisk instances
    for c in header.columns:
        if _is_physical(c.object) and c.instance.lower() != "_total":
            if c.counter.lower() in DISK_COUNTERS:
                physical_hosts.add(c.host.upper())
            letters.setdefault(c.host.upper(), set()).update(_drives(c.instance))
    spelling: dict[tuple[str, str], str] = {}  # one disk per volume, whatever the case of its columns
    no_letter: dict[str, None] = {}
    orphans: dict[str, dict[str, str]] = {}  # host -> volume (normalized) -> as first spelt
    for i, c in enumerate(header.columns):
        physical, logical = _is_physical(c.object), _is_logical(c.object)
        if not (physical or logical) or c.instance.lower() == "_total":
            continue
        host = c.host.upper()
        by_disk = host in physical_hosts  # this host is judged on its PhysicalDisk instances
        if logical and _NO_LETTER.fullmatch(c.instance.strip()):
            no_letter[c.instance.strip()] = None
            continue
        if logical and by_disk:
            drive = normalize_drive(c.instance)
            hd = out.hosts.setdefault(host, HostDisks(PHYSICAL))
            if drive in letters.get(host, set()):
                if drive not in hd.covered:
                    hd.covered.append(drive)
            else:
                orphans.setdefault(host, {}).setdefault(drive, c.instance.strip())
            continue
        name = DISK_COUNTERS.get(c.counter.lower())
        if name is None:
            if not (logical and c.counter.lower() in _SPACE):
                out.unknown.append(c.path)
            continue
        if physical:
            disk, drives = c.instance.partition(" ")[0], _drives(c.instance)
        else:
            drive = normalize_drive(c.instance)
            disk = spelling.setdefault((host, drive), drive if len(drive) == 2 else c.instance.strip())
            drives = (drive,)
        hd = out.hosts.setdefault(host, HostDisks(PHYSICAL if physical else LOGICAL))
        if disk not in hd.disks:
            hd.disks.append(disk)
        out.columns[i] = (disk, drives, name)
    if no_letter:
        names = ", ".join(list(no_letter)[:5]) + (", ..." if len(no_letter) > 5 else "")
        out.notes.append(
            f"LogicalDisk {names}: volume(s) with neither a drive letter nor a mount point to map "
            "to a LUN by: not judged"
        )
    for host, vols in orphans.items():
        names = ", ".join(list(vols.values())[:5]) + (", ..." if len(vols) > 5 else "")
        who = f"{header_host(header, host)}: " if len(physical_hosts) > 1 else ""
        out.notes.append(
            f"{who}LogicalDisk {names}: on none of the log's PhysicalDisk instances (a mount point, "
            "or a disk the log left out), so which disk it adds to is unknown: not judged"
        )
    return out


def header_host(header: LogHeader, host: str) -> str:
    """The host's name as the log first spells it."""
    return next((c.host for c in header.columns if c.host.upper() == host), host)
