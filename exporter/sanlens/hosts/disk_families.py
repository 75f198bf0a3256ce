"""The ``sanlens_host_disk_*`` families of docs/metrics.md, rendered from a poll's unwrapped readings.

``HostCooker`` (:mod:`sanlens.hosts.cooking`) makes the readings monotonic and computes the view;
this writes what /metrics exposes of them: identity on ``sanlens_host_disk_info``,
``{host, disk[, op]}`` on every counter and gauge, and each path device of a multipathed disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sanlens.hosts.mapping import DiskMapping
from sanlens.model import Metric, MetricBuilder

if TYPE_CHECKING:  # the cooker renders its readings here
    from sanlens.hosts.cooking import DiskReading


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
        for op, ops in (
            ("read", r.reads),
            ("write", r.writes),
            ("discard", r.discards),
            ("flush", r.flushes),
        ):
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
            ("discard", r.discard_time_s),
            ("flush", r.flush_time_s),
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
        if r.busy_s is not None:
            b.add(
                "sanlens_host_disk_busy_seconds_total",
                "counter",
                "Seconds with at least one I/O in flight (Linux io_ticks); 1 - rate() is the idle ratio.",
                lv,
                r.busy_s,
            )
        if r.queue_time_s is not None:
            b.add(
                "sanlens_host_disk_queue_seconds_total",
                "counter",
                "Sum of every I/O's time in flight (the queue-length integral); rate() is the mean I/Os in "
                "flight (iostat aqu-sz).",
                lv,
                r.queue_time_s,
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
        if r.wwid:
            b.add(
                "sanlens_host_disk_multipath_info",
                "info",
                "A Linux disk's dm-multipath map: its kernel device (dm-N) and SCSI WWID.",
                {**lv, "device": next(iter(r.aliases), ""), "wwid": r.wwid},
                1.0,
            )
        _render_paths(b, lv, r)
    return b.build()


def _render_paths(b: MetricBuilder, lv: dict[str, str], r: DiskReading) -> None:
    """The ``sanlens_host_disk_path_*`` families: each path device of a multipathed disk."""
    for p in sorted(r.path_readings, key=lambda x: (len(x.path), x.path)):
        pv = {**lv, "path": p.path}
        b.add(
            "sanlens_host_disk_path_info",
            "info",
            "A path device of a multipathed disk: its device state (running, transport-offline, ...) and "
            "ALUA access state where exported.",
            {**pv, "state": p.state, "access_state": p.access_state},
            1.0,
        )
        for family, help_, pairs in (
            (
                "sanlens_host_disk_path_ops_total",
                "Operations completed on the path device.",
                (("read", p.reads), ("write", p.writes)),
            ),
            (
                "sanlens_host_disk_path_latency_seconds_total",
                "Sum of the path device's operation latencies; divided by its ops, seconds per op.",
                (("read", p.read_time_s), ("write", p.write_time_s)),
            ),
            (
                "sanlens_host_disk_path_bytes_total",
                "Bytes transferred through the path device.",
                (("read", p.read_bytes), ("write", p.write_bytes)),
            ),
        ):
            for op, v in pairs:
                if v is not None:
                    b.add(family, "counter", help_, {**pv, "op": op}, v)
        if p.busy_s is not None:
            b.add(
                "sanlens_host_disk_path_busy_seconds_total",
                "counter",
                "Seconds the path device had at least one I/O in flight.",
                pv,
                p.busy_s,
            )
