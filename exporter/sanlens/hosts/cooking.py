"""Host disk readings → ``sanlens_host_disk_*`` families and the cooked ``HostView``.

Every host source (windows_exporter, WinRM, PerfMon log, node_exporter) reduces a poll
to ``DiskReading``s: cumulative counters in SI units. ``HostCooker`` unwraps them to
monotonic 64-bit values at the wrap points the source's catalogue gives
(``hosts/catalogue.py``: Windows operation counts and PERF_AVERAGE_TIMER numerators
are 32-bit, and so is every Linux diskstats time, and its counts on a 32-bit kernel),
computes rates over the interval, and renders both the exposition and the view the diagnoses
read. A source that counts busy time (Linux io_ticks) rather than idle time gives idle = 1 - busy,
with busy bounded by the requests in flight (``hosts/busy_time.py``: kernels from 5.0 until
2024 charge a whole jiffy per I/O start).

Latency comes from the 64-bit queue integrals (% Disk Read/Write Time, in seconds)
where the source has them: with N I/Os outstanding the integral grows N s/s, so
Δintegral/Δops is the mean latency (Little's law) and never wraps. The 32-bit
Avg. Disk sec/op numerator grows just as fast but wraps every 429.5/N s, which is
several times a poll under load; it is the fallback, taken modulo 2^32. Linux's read and
write time sums are the same integrals in 32-bit milliseconds: they wrap only after 49.7/N
days, and are unwrapped the same way. Their rates are the mean reads and writes in flight;
Linux's field 11 (``queue_time_s``) is not, since 5.0: it sums the durations of discards and
flushes too, which are kept apart (an fstrim on a thin LUN would otherwise read as a full queue).

Counters carry ``host, disk[, op]`` only; the LUN a disk maps to is on
``sanlens_host_disk_info``, so a mapping that changes (a LUN moved, an inventory
that failed) never changes a counter's identity.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sanlens.hosts.busy_time import bounded_busy, idle_from_busy, in_flight
from sanlens.hosts.catalogue import WINDOWS_EXPORTER, WRAP32
from sanlens.hosts.disk_families import render
from sanlens.hosts.mapping import DiskMapping
from sanlens.model import HostDiskStats, HostPathStats, HostView, Platform, Snapshot

log = logging.getLogger(__name__)

# windows_exporter scales the 32-bit PERF_AVERAGE_TIMER numerator by 1e-7 s per tick.
WRAP32_LATENCY_S = WRAP32 * 1e-7

# counter field -> wrap modulus in its exposed unit (None: a 64-bit counter, a drop is a reset);
# the Windows sources' widths, from their catalogue. Other sources pass their own to HostCooker.
Moduli = Mapping[str, float | None]
COUNTER_FIELDS: dict[str, float | None] = WINDOWS_EXPORTER.moduli()
# counters of one path device (a Linux sdX under its multipath map)
PATH_FIELDS = (
    "reads",
    "writes",
    "read_bytes",
    "write_bytes",
    "read_time_s",
    "write_time_s",
    "busy_s",
    "queue_time_s",
    "discards",
    "discard_time_s",
    "flushes",
    "flush_time_s",
)

# busy time as counted above its bound by this much is worth a log line (the kernel counts per I/O start)
BOUND_NOTE = 0.1

# Per-second changes no single disk makes (a PCIe 5.0 x16 link moves ~64 GB/s; the fastest
# devices do a few million IOPS): a counter that grows faster has restarted, not counted.
MAX_RATE: dict[str, float] = {
    "reads": 1e7,
    "writes": 1e7,
    "read_bytes": 1e11,
    "write_bytes": 1e11,
    "split_ios": 1e7,
}


@dataclass(frozen=True, slots=True)
class PathReading:
    """One path device of a multipathed disk in one poll (Linux: an sdX under its dm map)."""

    path: str
    state: str = ""  # SCSI device state (running, offline, transport-offline, ...) or NVMe (live, ...)
    access_state: str = ""  # ALUA access_state, where the host exports it
    reads: float | None = None
    writes: float | None = None
    read_bytes: float | None = None
    write_bytes: float | None = None
    read_time_s: float | None = None
    write_time_s: float | None = None
    busy_s: float | None = None
    queue_time_s: float | None = None
    discards: float | None = None
    discard_time_s: float | None = None
    flushes: float | None = None
    flush_time_s: float | None = None


@dataclass(frozen=True, slots=True)
class DiskReading:
    """One disk in one poll; counters are cumulative (ops, bytes, seconds)."""

    disk: str  # PhysicalDisk number ("1"), or a Linux multipath map's name ("mpatha")
    drives: tuple[str, ...] = ()
    serial: str = ""
    paths: int | None = None  # MPIO paths seen on the host, when known
    optimized_paths: int | None = None  # of those, ALUA Active/Optimized, when the host reports states
    reads: float | None = None
    writes: float | None = None
    read_bytes: float | None = None
    write_bytes: float | None = None
    read_latency_s: float | None = None  # Σ seconds of all reads (32-bit Avg. Disk sec/Read numerator)
    write_latency_s: float | None = None
    read_time_s: float | None = None  # % Disk Read Time integral in seconds (64-bit): also Σ read latency
    write_time_s: float | None = None
    idle_s: float | None = None
    split_ios: float | None = None
    queue_length: float | None = None  # current, not cumulative
    busy_s: float | None = None  # seconds with an I/O in flight (Linux io_ticks): idle = 1 - rate
    queue_time_s: float | None = None  # Linux field 11: Σ durations of completed requests of every kind
    discards: float | None = None
    discard_time_s: float | None = None
    flushes: float | None = None
    flush_time_s: float | None = None
    wwid: str = ""  # SCSI WWID (Linux: the multipath map's), the key of the LUN join
    aliases: tuple[str, ...] = ()  # other names a static `disks:` entry may use (the kernel's dm-N)
    platform: Platform = "windows"
    local: bool = False  # the source knows it is no SAN LUN
    known_paths: int | None = None  # paths the host lists for the disk, failed ones included
    queue_depth: int | None = None  # per-LUN queue depth the host reports
    path_readings: tuple[PathReading, ...] = ()


@dataclass
class Unwrapper:
    """Turns wrapping or resetting raw counters into monotonic values.

    A drop of a counter with a modulus (a 32-bit one) is a wrap: at high queue depth the
    latency numerators wrap every few seconds, so a wrap can leave the value anywhere
    below its last one. A drop of a 64-bit counter, or a restart the caller detected from
    other counters (``reset``), holds the value still: it continues from the last exposed one.
    """

    _state: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # key -> (raw, offset)

    def last_raw(self, disk: str, name: str) -> float | None:
        prev = self._state.get((disk, name))
        return None if prev is None else prev[0]

    def __call__(self, disk: str, name: str, raw: float, modulus: float | None, reset: bool = False) -> float:
        """The monotonic value of ``raw``; ``reset`` (the whole source restarted) holds it still."""
        key = (disk, name)
        prev = self._state.get(key)
        offset = 0.0
        if prev is not None:
            last_raw, offset = prev
            if reset:
                offset += last_raw - raw  # whatever the new raw value, this interval's change is unknown
            elif raw < last_raw:
                if modulus is not None and last_raw < modulus:
                    offset += modulus
                else:
                    # a reset: the interval's change is unknown (a restarted counter need not start
                    # near zero), so the exposed value holds still rather than jump by the new raw value
                    offset += last_raw - raw
        self._state[key] = (raw, offset)
        return raw + offset

    def forget_except(self, disks: set[str]) -> None:
        for key in [k for k in self._state if k[0] not in disks]:
            del self._state[key]


RateFn = Callable[[DiskReading, DiskReading, float], HostDiskStats]

LABELS = ("host", "disk")  # of every host-disk counter and gauge; the LUN identity is on the info family


def _delta(prev: float | None, cur: float | None) -> float | None:
    return None if prev is None or cur is None else cur - prev


def _ratio01(x: float | None) -> float | None:
    return None if x is None else min(max(x, 0.0), 1.0)


class _Rates:
    """Rates between two unwrapped readings of a disk or of a path device."""

    def __init__(self, prev: object, cur: object, dt: float) -> None:
        self.prev, self.cur, self.dt = prev, cur, dt

    def rate(self, name: str) -> float | None:
        d = _delta(getattr(self.prev, name), getattr(self.cur, name))
        return None if d is None or self.dt <= 0 else d / self.dt

    def per_op(self, integral: str, ops: str, numerator: str = "") -> float | None:
        """Δintegral / Δops: the mean latency by Little's law (the 32-bit numerator as a fallback)."""
        dl = _delta(getattr(self.prev, integral), getattr(self.cur, integral))
        if dl is None and numerator:  # no 64-bit integral in one of the polls: the numerator, unwrapped
            dl = _delta(getattr(self.prev, numerator), getattr(self.cur, numerator))
        do = _delta(getattr(self.prev, ops), getattr(self.cur, ops))
        return None if dl is None or not do else dl / do

    def in_flight_rw(self) -> float | None:
        """Mean reads and writes in flight: the rates of their time sums (Little's law)."""
        r, w = self.rate("read_time_s"), self.rate("write_time_s")
        return None if r is None and w is None else max(r or 0.0, 0.0) + max(w or 0.0, 0.0)

    def in_flight_all(self) -> float | None:
        """Mean requests of every kind in flight: what can keep the device busy."""
        return in_flight(
            (
                (self.rate("reads"), self.per_op("read_time_s", "reads")),
                (self.rate("writes"), self.per_op("write_time_s", "writes")),
                (self.rate("discards"), self.per_op("discard_time_s", "discards")),
                (self.rate("flushes"), self.per_op("flush_time_s", "flushes")),
            )
        )

    def idle(self) -> float | None:
        """Idle ratio from idle time (Windows) or, failing that, from busy time (Linux io_ticks)
        bounded by the requests in flight."""
        idle = self.rate("idle_s")
        if idle is not None:
            return _ratio01(idle)
        return idle_from_busy(self.rate("busy_s"), self.in_flight_all())


def _path_stats(
    prev: DiskReading, cur: DiskReading, dt: float, reset: frozenset[str]
) -> tuple[HostPathStats, ...]:
    before = {p.path: p for p in prev.path_readings}
    out = []
    for p in cur.path_readings:
        q = before.get(p.path)
        if q is None or p.path in reset:
            out.append(HostPathStats(p.path, p.state, p.access_state))
            continue
        r = _Rates(q, p, dt)
        out.append(
            HostPathStats(
                p.path,
                p.state,
                p.access_state,
                read_iops=r.rate("reads"),
                write_iops=r.rate("writes"),
                read_latency_s=r.per_op("read_time_s", "reads"),
                write_latency_s=r.per_op("write_time_s", "writes"),
                read_bytes_s=r.rate("read_bytes"),
                write_bytes_s=r.rate("write_bytes"),
                busy_ratio=bounded_busy(r.rate("busy_s"), r.in_flight_all()),
                outstanding_io=r.in_flight_rw(),
            )
        )
    return tuple(out)


def cumulative_rates(
    host: str, prev: DiskReading, cur: DiskReading, dt: float, path_reset: frozenset[str] = frozenset()
) -> HostDiskStats:
    """Rates from two unwrapped readings: IOPS, Avg. Disk sec/op = Δlatency/Δops, idle = Δidle/Δt
    (or 1 - Δbusy/Δt, busy bounded by the requests in flight), the mean reads and writes in flight
    (Linux: Δread time/Δt + Δwrite time/Δt), discards and flushes apart, and the same per path device."""
    r = _Rates(prev, cur, dt)
    linux = cur.platform == "linux"
    return HostDiskStats(
        host=host,
        disk=cur.disk,
        read_iops=r.rate("reads"),
        write_iops=r.rate("writes"),
        read_latency_s=r.per_op("read_time_s", "reads", "read_latency_s"),
        write_latency_s=r.per_op("write_time_s", "writes", "write_latency_s"),
        idle_ratio=r.idle(),
        queue_length=cur.queue_length,
        read_bytes_s=r.rate("read_bytes"),
        write_bytes_s=r.rate("write_bytes"),
        split_iops=r.rate("split_ios"),
        outstanding_io=r.in_flight_rw() if linux else None,
        discard_iops=r.rate("discards"),
        discard_latency_s=r.per_op("discard_time_s", "discards"),
        flush_iops=r.rate("flushes"),
        flush_latency_s=r.per_op("flush_time_s", "flushes"),
        reported_busy_ratio=_ratio01(r.rate("busy_s")),
        path_stats=_path_stats(prev, cur, dt, path_reset),
    )


class HostCooker:
    """Per-source state between polls: unwrapping and the previous readings.

    ``moduli``: each cumulative field's wrap point, from the source's catalogue (the Windows
    widths by default).
    """

    def __init__(self, host: str, moduli: Moduli | None = None) -> None:
        self.host = host
        self.moduli: Moduli = COUNTER_FIELDS if moduli is None else moduli
        self.kernel = ""  # the host's kernel release, where its source names it (Linux node_uname_info)
        self._told_bound = False
        self.unwrap = Unwrapper()
        self._prev: dict[str, DiskReading] = {}
        self._prev_ts: float | None = None

    def unwrap_reading(self, r: DiskReading, reset: bool = False) -> DiskReading:
        """The reading made monotonic; ``reset`` holds every counter of the disk still."""
        values: dict[str, Any] = {
            n: self.unwrap(r.disk, n, float(v), m, reset)
            for n, m in self.moduli.items()
            if (v := getattr(r, n, None)) is not None
        }
        if r.path_readings:
            values["path_readings"] = tuple(self._unwrap_path(r.disk, p, reset) for p in r.path_readings)
        return replace(r, **values)

    def _unwrap_path(self, disk: str, p: PathReading, reset: bool) -> PathReading:
        key = f"{disk}/{p.path}"
        values: dict[str, Any] = {
            n: self.unwrap(key, n, float(v), self.moduli.get(n), reset)
            for n in PATH_FIELDS
            if (v := getattr(p, n)) is not None
        }
        return replace(p, **values)

    def _path_resets(self, r: DiskReading) -> frozenset[str]:
        """Path devices whose counters restarted (a path removed and found again): no rates this interval."""
        out = set()
        for p in r.path_readings:
            key = f"{r.disk}/{p.path}"
            for n in PATH_FIELDS:
                v, last = getattr(p, n), self.unwrap.last_raw(key, n)
                if v is not None and last is not None and self.moduli.get(n) is None and v < last:
                    out.add(p.path)
        return frozenset(out)

    def _restarted(self, readings: list[DiskReading], dt: float | None) -> bool:
        """Whether the host's counters restarted since the last poll (reboot, exporter restart).

        A 64-bit counter (bytes, idle time, the queue integrals) never wraps, so its drop is a
        restart; so is a change no disk can make in the interval, read modulo 2^32 for a 32-bit
        count (a counter that restarts elsewhere than zero can come back above its last value).
        A restart is host-wide: then no counter of any disk gives a rate this interval, even one
        whose new value reads as a wrap or as growth.
        """
        for r in readings:
            for name, modulus in self.moduli.items():
                v = getattr(r, name, None)
                last = None if v is None else self.unwrap.last_raw(r.disk, name)
                if v is None or last is None:
                    continue
                if modulus is None and v < last:
                    return True
                grew = v - last if v >= last or modulus is None else (v - last) % modulus
                limit = MAX_RATE.get(name)
                if limit is not None and dt and grew > limit * dt:
                    return True
        return False

    def _tell_bound(self, s: HostDiskStats) -> None:
        """Say once per host that its busy time was bounded, naming the kernel that counted it."""
        busy = s.reported_busy_ratio
        if (
            self._told_bound
            or busy is None
            or s.idle_ratio is None
            or busy - (1.0 - s.idle_ratio) < BOUND_NOTE
        ):
            return
        self._told_bound = True
        log.info(
            "host %s disk %s: busy time as counted %.0f %%, bounded by the requests in flight to %.0f %%%s",
            self.host,
            s.disk,
            100.0 * busy,
            100.0 * (1.0 - s.idle_ratio),
            f" (kernel {self.kernel})" if self.kernel else "",
        )

    def cook(
        self,
        timestamp: float,
        readings: list[DiskReading],
        mappings: dict[str, DiskMapping],
        rates: dict[str, HostDiskStats] | None = None,
        interval_s: float | None = None,
    ) -> Snapshot:
        """Build the snapshot; ``rates`` (WinRM, PerfMon) overrides the rates from cumulative deltas."""
        dt = (
            interval_s
            if interval_s is not None
            else (timestamp - self._prev_ts if self._prev_ts is not None else None)
        )
        restarted = self._restarted(readings, dt)
        path_resets = {r.disk: self._path_resets(r) for r in readings if r.path_readings}
        unwrapped = [self.unwrap_reading(r, restarted) for r in readings]
        self.unwrap.forget_except(
            {r.disk for r in readings} | {f"{r.disk}/{p.path}" for r in readings for p in r.path_readings}
        )
        stats: list[HostDiskStats] = []
        for r in unwrapped:
            m = mappings.get(r.disk, DiskMapping(r.serial))
            prev = None if restarted else self._prev.get(r.disk)
            if rates is not None and r.disk in rates:
                s = rates[r.disk]
            elif prev is not None and dt:
                s = cumulative_rates(self.host, prev, r, dt, path_resets.get(r.disk, frozenset()))
                self._tell_bound(s)
            else:
                s = HostDiskStats(
                    self.host,
                    r.disk,
                    queue_length=r.queue_length,
                    path_stats=tuple(HostPathStats(p.path, p.state, p.access_state) for p in r.path_readings),
                )
            stats.append(
                replace(
                    s,
                    host=self.host,
                    disk=r.disk,
                    drives=r.drives,
                    **m.stats_fields(),
                    observed_paths=m.observed_paths,
                    configured_paths=m.configured_paths,
                    optimized_paths=r.optimized_paths,
                    platform=r.platform,
                    local=r.local,
                    kernel=self.kernel,
                )
            )
        self._prev = {r.disk: r for r in unwrapped}
        self._prev_ts = timestamp
        view = HostView(self.host, timestamp, dt, tuple(stats))
        return Snapshot(self.host, "host", timestamp, render(self.host, unwrapped, mappings), view)
