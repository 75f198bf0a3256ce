"""Host disk readings → ``sanlens_host_disk_*`` families and the cooked ``HostView``.

Every host source (windows_exporter, WinRM, PerfMon log) reduces a poll to
``DiskReading``s: cumulative counters in SI units. ``HostCooker`` unwraps them
to monotonic 64-bit values (Windows PERF_COUNTER_COUNTER and PERF_AVERAGE_TIMER
numerators are 32-bit and wrap), computes rates over the interval, and renders
both the exposition and the view the diagnoses read.

Latency comes from the 64-bit queue integrals (% Disk Read/Write Time, in seconds)
where the source has them: with N I/Os outstanding the integral grows N s/s, so
Δintegral/Δops is the mean latency (Little's law) and never wraps. The 32-bit
Avg. Disk sec/op numerator grows just as fast but wraps every 429.5/N s, which is
several times a poll under load; it is the fallback, taken modulo 2^32.

Counters carry ``host, disk[, op]`` only; the LUN a disk maps to is on
``sanlens_host_disk_info``, so a mapping that changes (a LUN moved, an inventory
that failed) never changes a counter's identity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sanlens.hosts.mapping import DiskMapping
from sanlens.model import HostDiskStats, HostView, Metric, MetricBuilder, Snapshot

WRAP32 = float(2**32)
# windows_exporter scales the 32-bit PERF_AVERAGE_TIMER numerator by 1e-7 s per tick.
WRAP32_LATENCY_S = WRAP32 * 1e-7

# counter field -> wrap modulus in its exposed unit (None: a 64-bit counter, a drop is a reset)
COUNTER_FIELDS: dict[str, float | None] = {
    "reads": WRAP32,
    "writes": WRAP32,
    "read_bytes": None,
    "write_bytes": None,
    "read_latency_s": WRAP32_LATENCY_S,
    "write_latency_s": WRAP32_LATENCY_S,
    "read_time_s": None,
    "write_time_s": None,
    "idle_s": None,
    "split_ios": WRAP32,
}

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
class DiskReading:
    """One disk in one poll; counters are cumulative (ops, bytes, seconds)."""

    disk: str  # PhysicalDisk number, e.g. "1"
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


def cumulative_rates(host: str, prev: DiskReading, cur: DiskReading, dt: float) -> HostDiskStats:
    """Rates from two unwrapped readings: IOPS, Avg. Disk sec/op = Δlatency/Δops, idle = Δidle/Δt."""

    def rate(name: str) -> float | None:
        d = _delta(getattr(prev, name), getattr(cur, name))
        return None if d is None or dt <= 0 else d / dt

    def per_op(integral: str, lat: str, ops: str) -> float | None:
        dl = _delta(getattr(prev, integral), getattr(cur, integral))
        if dl is None:  # no 64-bit integral in one of the polls: the 32-bit numerator, unwrapped
            dl = _delta(getattr(prev, lat), getattr(cur, lat))
        do = _delta(getattr(prev, ops), getattr(cur, ops))
        return None if dl is None or not do else dl / do

    idle = rate("idle_s")
    return HostDiskStats(
        host=host,
        disk=cur.disk,
        read_iops=rate("reads"),
        write_iops=rate("writes"),
        read_latency_s=per_op("read_time_s", "read_latency_s", "reads"),
        write_latency_s=per_op("write_time_s", "write_latency_s", "writes"),
        idle_ratio=None if idle is None else min(max(idle, 0.0), 1.0),
        queue_length=cur.queue_length,
        read_bytes_s=rate("read_bytes"),
        write_bytes_s=rate("write_bytes"),
        split_iops=rate("split_ios"),
    )


class HostCooker:
    """Per-source state between polls: unwrapping and the previous readings."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.unwrap = Unwrapper()
        self._prev: dict[str, DiskReading] = {}
        self._prev_ts: float | None = None

    def unwrap_reading(self, r: DiskReading, reset: bool = False) -> DiskReading:
        """The reading made monotonic; ``reset`` holds every counter of the disk still."""
        values: dict[str, Any] = {
            n: self.unwrap(r.disk, n, float(v), m, reset)
            for n, m in COUNTER_FIELDS.items()
            if (v := getattr(r, n)) is not None
        }
        return replace(r, **values)

    def _restarted(self, readings: list[DiskReading], dt: float | None) -> bool:
        """Whether the host's counters restarted since the last poll (reboot, exporter restart).

        A 64-bit counter (bytes, idle time, the queue integrals) never wraps, so its drop is a
        restart; so is a change no disk can make in the interval, read modulo 2^32 for a 32-bit
        count (a counter that restarts elsewhere than zero can come back above its last value).
        A restart is host-wide: then no counter of any disk gives a rate this interval, even one
        whose new value reads as a wrap or as growth.
        """
        for r in readings:
            for name, modulus in COUNTER_FIELDS.items():
                v = getattr(r, name)
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
        unwrapped = [self.unwrap_reading(r, restarted) for r in readings]
        self.unwrap.forget_except({r.disk for r in readings})
        stats: list[HostDiskStats] = []
        for r in unwrapped:
            m = mappings.get(r.disk, DiskMapping(r.serial))
            prev = None if restarted else self._prev.get(r.disk)
            if rates is not None and r.disk in rates:
                s = rates[r.disk]
            elif prev is not None and dt:
                s = cumulative_rates(self.host, prev, r, dt)
            else:
                s = HostDiskStats(self.host, r.disk, queue_length=r.queue_length)
            stats.append(
                replace(
                    s,
                    host=self.host,
                    disk=r.disk,
                    drives=r.drives,
                    lun_serial=m.lun_serial,
                    cluster=m.cluster,
                    svm=m.svm,
                    volume=m.volume,
                    lun=m.lun,
                    data_class=m.data_class,
                    queue_depth=m.queue_depth,
                    paths=m.paths,
                    observed_paths=m.observed_paths,
                    configured_paths=m.configured_paths,
                    optimized_paths=r.optimized_paths,
                )
            )
        self._prev = {r.disk: r for r in unwrapped}
        self._prev_ts = timestamp
        view = HostView(self.host, timestamp, dt, tuple(stats))
        return Snapshot(self.host, "host", timestamp, render(self.host, unwrapped, mappings), view)


def _latency(integral: float | None, numerator: float | None) -> float | None:
    """Σ latency to expose: the 64-bit queue integral where the source has it, else the numerator."""
    return integral if integral is not None else numerator


def render(host: str, readings: list[DiskReading], mappings: dict[str, DiskMapping]) -> tuple[Metric, ...]:
    """The ``sanlens_host_disk_*`` families of docs/metrics.md: identity on ``_info``, ``{host, disk[, op]}``
    on everything else."""
    b = MetricBuilder()
    for r in sorted(readings, key=lambda x: (len(x.disk), x.disk)):
        m = mappings.get(r.disk, DiskMapping(r.serial))
        lv = {"host": host, "disk": r.disk}
        b.add(
            "sanlens_host_disk_info",
            "info",
            "Host disk and the ONTAP LUN it maps to (mapping: serial, static, none); join it on (host, disk).",
            {
                **lv,
                "lun_serial": m.lun_serial,
                "cluster": m.cluster,
                "svm": m.svm,
                "volume": m.volume,
                "lun": m.lun,
                "drives": ",".join(r.drives),
                "data_class": m.data_class,
                "mapping": m.mapping,
            },
            1.0,
        )
        for op, ops in (("read", r.reads), ("write", r.writes)):
            if ops is not None:
                b.add(
                    "sanlens_host_disk_ops_total",
                    "counter",
                    "Disk operations completed.",
                    {**lv, "op": op},
                    ops,
                )
        for op, lat in (
            ("read", _latency(r.read_time_s, r.read_latency_s)),
            ("write", _latency(r.write_time_s, r.write_latency_s)),
        ):
            if lat is not None:
                b.add(
                    "sanlens_host_disk_latency_seconds_total",
                    "counter",
                    "Sum of operation latencies (the queue-length integral); divided by ops it is Avg. Disk sec/op.",
                    {**lv, "op": op},
                    lat,
                )
        for op, byt in (("read", r.read_bytes), ("write", r.write_bytes)):
            if byt is not None:
                b.add("sanlens_host_disk_bytes_total", "counter", "Bytes transferred.", {**lv, "op": op}, byt)
        if r.idle_s is not None:
            b.add(
                "sanlens_host_disk_idle_seconds_total",
                "counter",
                "Seconds the disk was idle; rate() is the idle ratio 0..1.",
                lv,
                r.idle_s,
            )
        if r.split_ios is not None:
            b.add(
                "sanlens_host_disk_split_ios_total",
                "counter",
                "I/Os split into several I/Os.",
                lv,
                r.split_ios,
            )
        if r.queue_length is not None:
            b.add(
                "sanlens_host_disk_queue_length",
                "gauge",
                "Current Disk Queue Length: requests outstanding at poll time.",
                lv,
                r.queue_length,
            )
        b.add(
            "sanlens_host_disk_queue_depth",
            "gauge",
            "Configured per-LUN queue depth at the HBA.",
            lv,
            m.queue_depth,
        )
        active = m.observed_paths if m.observed_paths is not None else m.paths
        b.add("sanlens_host_disk_paths", "gauge", "Active paths; Q_eff = queue_depth x paths.", lv, active)
        if r.optimized_paths is not None:
            b.add(
                "sanlens_host_disk_optimized_paths",
                "gauge",
                "ALUA Active/Optimized paths, the ones that carry I/O; Q_eff = queue_depth x optimized paths.",
                lv,
                r.optimized_paths,
            )
        b.add(
            "sanlens_host_disk_configured_paths",
            "gauge",
            "Paths the config says the disk should have (host or disk `paths`); fewer active is path loss.",
            lv,
            m.configured_paths,
        )
    return b.build()
