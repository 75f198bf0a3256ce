"""windows_exporter ``/metrics`` text for a simulated host (physical_disk, logical_disk, textfile).

Families, HELP texts and types follow windows_exporter's own output. The
``disk`` label is the disk number (windows_exporter 0.30+). windows_exporter
has no disk serial numbers, so each host also serves our textfile-collector
families ``sanlens_windows_disk_info`` (serial = the ONTAP LUN serial) and
``sanlens_windows_disk_paths`` (active MPIO paths).
"""

from __future__ import annotations

from sanlens.exposition import escape_label_value, format_value
from sanlens.sim.estate import Estate
from sanlens.sim.world import Host

# (suffix, type, HELP text, counter name in the estate or None for gauges handled below)
_PD_FAMILIES = (
    (
        "idle_seconds_total",
        "counter",
        "Seconds that the disk was idle (PhysicalDisk.PercentIdleTime)",
        "idle",
    ),
    (
        "read_bytes_total",
        "counter",
        "The number of bytes transferred from the disk during read operations (PhysicalDisk.DiskReadBytesPerSec)",
        "read_bytes",
    ),
    (
        "read_latency_seconds_total",
        "counter",
        "Shows the average time, in seconds, of a read operation from the disk (PhysicalDisk.AvgDiskSecPerRead)",
        "read_latency",
    ),
    (
        "read_seconds_total",
        "counter",
        "Seconds that the disk was busy servicing read requests (PhysicalDisk.PercentDiskReadTime)",
        "read_seconds",
    ),
    (
        "read_write_latency_seconds_total",
        "counter",
        "Shows the time, in seconds, of the average disk transfer (PhysicalDisk.AvgDiskSecPerTransfer)",
        "read_write_latency",
    ),
    (
        "reads_total",
        "counter",
        "The number of read operations on the disk (PhysicalDisk.DiskReadsPerSec)",
        "reads",
    ),
    (
        "requests_queued",
        "gauge",
        "The number of requests queued to the disk (PhysicalDisk.CurrentDiskQueueLength)",
        None,
    ),
    (
        "split_ios_total",
        "counter",
        "The number of I/Os to the disk were split into multiple I/Os (PhysicalDisk.SplitIOPerSec)",
        "split_ios",
    ),
    (
        "write_bytes_total",
        "counter",
        "The number of bytes transferred to the disk during write operations (PhysicalDisk.DiskWriteBytesPerSec)",
        "write_bytes",
    ),
    (
        "write_latency_seconds_total",
        "counter",
        "Shows the average time, in seconds, of a write operation to the disk (PhysicalDisk.AvgDiskSecPerWrite)",
        "write_latency",
    ),
    (
        "write_seconds_total",
        "counter",
        "Seconds that the disk was busy servicing write requests (PhysicalDisk.PercentDiskWriteTime)",
        "write_seconds",
    ),
    (
        "writes_total",
        "counter",
        "The number of write operations on the disk (PhysicalDisk.DiskWritesPerSec)",
        "writes",
    ),
)


def render(estate: Estate, host: Host, t: float) -> str:
    cs = estate.counters["hostdisk"]
    rows = {}
    for d in host.disks:
        idx = cs.index.get(f"{host.name}/{d.number}")
        rows[d.number] = cs.row(idx, t) if idx is not None else [0.0] * len(cs.names)
    lines: list[str] = []
    for prefix, obj in (("windows_physical_disk_", "PhysicalDisk"), ("windows_logical_disk_", "LogicalDisk")):
        for suffix, typ, help_, counter in _PD_FAMILIES:
            name = prefix + suffix
            lines.append(f"# HELP {name} {help_.replace('PhysicalDisk', obj)}")
            lines.append(f"# TYPE {name} {typ}")
            for d in host.disks:
                label = d.number if obj == "PhysicalDisk" else d.drive
                key = "disk" if obj == "PhysicalDisk" else "volume"
                value = float(round(d.queue)) if counter is None else rows[d.number][cs.col[counter]]
                lines.append(f'{name}{{{key}="{escape_label_value(label)}"}} {format_value(value)}')
    lines.append(
        "# HELP windows_logical_disk_info A metric with a constant '1' value labeled with logical disk information"
    )
    lines.append("# TYPE windows_logical_disk_info gauge")
    for d in host.disks:
        lines.append(
            f'windows_logical_disk_info{{disk="{d.number}",filesystem="NTFS",readonly="0",serial_number="",'
            f'volume="{d.drive}",volume_name="{"System" if d.number == "0" else "SQLData"}"}} 1'
        )
    lines.append(
        "# HELP windows_logical_disk_size_bytes Total space in bytes, updates every 10-15 min (LogicalDisk.PercentFreeSpace_Base)"
    )
    lines.append("# TYPE windows_logical_disk_size_bytes gauge")
    for d in host.disks:
        lines.append(f'windows_logical_disk_size_bytes{{volume="{d.drive}"}} {format_value(d.size_bytes)}')
    lines.append(
        "# HELP windows_logical_disk_free_bytes Free space in bytes, updates every 10-15 min (LogicalDisk.PercentFreeSpace)"
    )
    lines.append("# TYPE windows_logical_disk_free_bytes gauge")
    for d in host.disks:
        lines.append(
            f'windows_logical_disk_free_bytes{{volume="{d.drive}"}} {format_value(d.size_bytes * 0.4)}'
        )
    lines.append(
        "# HELP sanlens_windows_disk_info Disk identity written by the sanlens textfile script (Get-Disk)"
    )
    lines.append("# TYPE sanlens_windows_disk_info gauge")
    for d in host.disks:
        uid = "600A0980" + d.serial.encode().hex().upper() if d.lun_key else ""
        lines.append(
            f'sanlens_windows_disk_info{{disk="{d.number}",friendly_name="{escape_label_value(d.friendly_name)}",'
            f'serial_number="{escape_label_value(d.serial)}",unique_id="{uid}"}} 1'
        )
    lines.append("# HELP sanlens_windows_disk_paths Active MPIO paths of the disk (sanlens textfile script)")
    lines.append("# TYPE sanlens_windows_disk_paths gauge")
    for d in host.disks:
        lines.append(f'sanlens_windows_disk_paths{{disk="{d.number}"}} {d.paths}')
    lines.append(
        "# HELP windows_exporter_collector_success windows_exporter: Whether the collector was successful."
    )
    lines.append("# TYPE windows_exporter_collector_success gauge")
    for coll in ("logical_disk", "physical_disk", "textfile"):
        lines.append(f'windows_exporter_collector_success{{collector="{coll}"}} 1')
    return "\n".join(lines) + "\n"
