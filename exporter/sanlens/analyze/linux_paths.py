"""Path devices in iostat/sar captures, grouped under the disk the application uses.

``/proc/diskstats`` lists a multipathed disk once per path as well as once as the disk, and
sysstat prints every line; judged as disks, the paths would be extra SAN disks. The live reader
(``hosts/node_scrape.py``) groups them by what node_exporter says; a capture says less:

- NVMe native multipath: each controller C adds a hidden ``nvme<S>c<C>n<N>`` under the namespace
  ``nvme<S>n<N>``; the names alone give the relation. Where the namespace's own line shows no I/O
  (kernels that count it on the hidden devices only) the namespace is the sum of its paths: rates
  and bytes add, latencies weight by their op's rate, the mean numbers in flight add, and busy time
  is unknown (a union of busy times is no sum). A namespace not printed at all is made the same way.
- dm-multipath: sysstat prints the map (``dm-3``, ``mpatha`` with ``iostat -N`` / ``sar -p``) and its
  SCSI paths (``sdc``) without their relation. A map counts when the config maps it to a LUN; its
  paths are the SCSI disks the config does not map whose bytes, summed, are the map's in every
  report (the paths carry the map's requests, clones of the same bytes). SCSI disks that moved
  nothing in the whole capture are left out once a mapped map is there: a standby or non-optimized
  path carries no I/O, and an idle local disk has nothing to judge. SCSI disks whose I/O fits no map
  stay disks (a local boot disk).

``sar -d`` without ``-p`` prints ``devM-N``: SCSI disks are still told by their major, NVMe paths not.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sanlens.hosts.linux_devices import NVME_PATH

Row = dict[str, float]
# a kernel disk's own name, never a device-mapper map's (``mpatha``, a WWID, ``vg-lv``)
_KERNEL_DISK = re.compile(
    r"^(x?[shv]d[a-z]+|nvme\d+(c\d+)?n\d+|mmcblk\d+|md\d+|sr\d+|loop\d+|z?ram\d+|fd\d+)$"
)
# a SCSI disk: by name, or as ``sar -d`` without ``-p`` names it (``dev8-32``; SCSI disk majors 8, 65-71, 128-135)
_SCSI = re.compile(r"^sd[a-z]+$|^dev(8|6[5-9]|7[01]|12[89]|13[0-5])-\d+$")
_RATES = ("read_iops", "write_iops", "discard_iops", "flush_iops", "read_bytes_s", "write_bytes_s")
_OPS = ("read", "write", "discard", "flush")
_IO = ("read_iops", "write_iops", "discard_iops", "flush_iops")
MAX_SEARCH = 16  # active SCSI disks searched exhaustively for a map's paths (2^16 subsets)
REL_TOL = 0.05  # paths' summed bytes against the map's: requests straddling the interval's edges
ABS_TOL = 8 * 1024.0  # bytes/s: each printed kB/s (or MB/s, to 5 kB/s) is rounded


@dataclass
class PathGroups:
    """Disk -> its path devices, and the devices that are no disk of their own."""

    nvme: dict[str, tuple[str, ...]] = field(default_factory=dict)
    dm: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)  # paths and idle SCSI devices: not judged as disks

    def paths(self, disk: str) -> tuple[str, ...]:
        return self.nvme.get(disk) or self.dm.get(disk) or ()


def nvme_groups(devices: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Namespace ``nvme<S>n<N>`` -> its hidden per-controller devices ``nvme<S>c<C>n<N>``, by name."""
    out: dict[str, list[str]] = {}
    for d in devices:
        m = NVME_PATH.match(d)
        if m:
            out.setdefault(f"nvme{m[1]}n{m[3]}", []).append(d)
    return {h: tuple(sorted(p, key=lambda x: (len(x), x))) for h, p in out.items()}


def has_io(row: Row | None) -> bool:
    return row is not None and any((row.get(f) or 0.0) > 0 for f in _IO)


def summed(rows: Sequence[Row]) -> Row:
    """Several path devices as one disk: rates and numbers in flight add, latencies weight by their
    op's rate; busy time is left out."""
    out: Row = {}
    for f in (*_RATES, "outstanding_io"):
        vals = [r[f] for r in rows if f in r]
        if vals:
            out[f] = sum(vals)
    for op in _OPS:
        pairs = [(r.get(f"{op}_iops") or 0.0, r[f"{op}_latency_s"]) for r in rows if f"{op}_latency_s" in r]
        if pairs:
            total = sum(w for w, _ in pairs)
            out[f"{op}_latency_s"] = sum(w * x for w, x in pairs) / total if total > 0 else 0.0
    return out


def compose(devices: dict[str, Row], groups: PathGroups) -> dict[str, Row]:
    """One report's rows per disk: a namespace whose own line shows no I/O is the sum of its paths."""
    out: dict[str, Row] = {}
    for d, row in devices.items():
        if d not in groups.hidden:
            out[d] = row
    for head, paths in groups.nvme.items():
        rows = [devices[p] for p in paths if p in devices]
        if not has_io(devices.get(head)) and any(has_io(r) for r in rows):
            out[head] = summed(rows)
    return out


def _bytes(row: Row | None) -> float:
    return 0.0 if row is None else (row.get("read_bytes_s") or 0.0) + (row.get("write_bytes_s") or 0.0)


def is_dm_map(device: str) -> bool:
    """Whether a device name is a device-mapper device's: ``dm-N``, or a dm name no kernel disk has."""
    return device.startswith("dm-") or not (_KERNEL_DISK.match(device) or _SCSI.match(device))


def _match(map_bytes: list[float], cands: dict[str, list[float]]) -> tuple[str, ...]:
    """The candidates whose bytes sum to the map's in every report (the closest such set), or ()."""
    names = sorted(cands, key=lambda x: (len(x), x))
    totals = {c: sum(cands[c]) for c in names}
    want_total = sum(map_bytes)
    slack = REL_TOL * want_total + ABS_TOL * len(map_bytes)
    best: tuple[float, tuple[str, ...]] | None = None
    for k in range(1, len(names) + 1):
        for subset in itertools.combinations(names, k):
            if abs(sum(totals[c] for c in subset) - want_total) > slack:
                continue
            worst = 0.0
            for i, want in enumerate(map_bytes):
                miss = abs(sum(cands[c][i] for c in subset) - want)
                if miss > REL_TOL * want + ABS_TOL:
                    break
                worst = max(worst, miss)
            else:
                if best is None or worst < best[0]:
                    best = (worst, subset)
    return best[1] if best else ()


def dm_groups(
    reports: Sequence[dict[str, Row]], devices: Iterable[str], mapped: Callable[[str], bool]
) -> tuple[dict[str, tuple[str, ...]], set[str]]:
    """(mapped map -> its SCSI paths, idle SCSI devices) of a capture; nothing without a mapped map."""
    devs = list(devices)
    maps = [d for d in devs if is_dm_map(d) and mapped(d)]
    if not maps:
        return {}, set()
    scsi = [d for d in devs if _SCSI.match(d) and not mapped(d)]
    series = {d: [_bytes(r.get(d)) for r in reports] for d in scsi}
    idle = {d for d in scsi if not any(has_io(r.get(d)) for r in reports) and not any(series[d])}
    free = {d: s for d, s in series.items() if d not in idle}
    out: dict[str, tuple[str, ...]] = {}
    for m in sorted(maps, key=lambda x: (len(x), x)):
        want = [_bytes(r.get(m)) for r in reports]
        if max(want, default=0.0) <= 4 * ABS_TOL or not free:
            continue  # too little I/O to tell its paths from the rounding
        # a path never moves more than its map
        fits = {
            d: s
            for d, s in free.items()
            if all(x <= w * (1 + REL_TOL) + ABS_TOL for x, w in zip(s, want, strict=True))
        }
        if not fits or len(fits) > MAX_SEARCH:
            continue
        paths = _match(want, fits)
        if paths:
            out[m] = paths
            for p in paths:
                free.pop(p)
    return out, idle
