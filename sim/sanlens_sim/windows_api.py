"""A simulated Windows host as its sources see it: windows_exporter ``/metrics`` text and the
raw CIM classes the WinRM source reads.

Families, HELP texts and types follow windows_exporter's own output. The
``disk`` label is the disk number (windows_exporter 0.30+). windows_exporter
has no disk serial numbers, so each host also serves our textfile-collector
families ``sanlens_windows_disk_info`` (serial = the ONTAP LUN serial) and
``sanlens_windows_disk_paths`` (MPIO paths, by ALUA state where the disk has one).

Widths follow Win32_PerfRawData_PerfDisk_PhysicalDisk: operation counts and the
PERF_AVERAGE_TIMER numerators (Avg. Disk sec/op, in 100 ns ticks) are uint32 and
wrap modulo 2^32, which at N I/Os outstanding happens every 429.5/N s; bytes and
the PERF_PRECISION_100NS_TIMER integrals (% Disk Read/Write Time, % Idle Time)
are uint64 and never wrap. windows_exporter multiplies both timers by 1e-7 s.
"""

from __future__ import annotations

from typing import Any

from sanlens.serve.exposition import escape_label_value, format_value
from sanlens_sim.estate import Estate
from sanlens_sim.world import Host, HostDisk

MOD32 = 1 << 32
TICK_S = 1e-7  # 100 ns: the unit of the disk timers and of Frequency_PerfTime = 10 MHz
FREQUENCY_PERFTIME = 10_000_000
FILETIME_EPOCH_S = 11644473600.0  # 1601-01-01 to 1970-01-01
# estate counters that the real source holds in 32 bits: counts, and timers in 100 ns ticks
_COUNT32 = ("reads", "writes", "split_ios")
_TICKS32 = ("read_latency", "write_latency", "read_write_latency")
# MPIO_DSM_Path_V2.TargetPortGroup_State (the SPC-4 asymmetric access state) -> textfile label
ALUA_STATES = {
    0: "active_optimized",
    1: "active_unoptimized",
    2: "standby",
    3: "unavailable",
    15: "transitioning",
}


def _u32(count: float) -> int:
    return int(count) % MOD32


def _ticks(seconds: float) -> int:
    return round(seconds / TICK_S)


def exposed(counter: str, value: float) -> float:
    """An estate counter as windows_exporter exposes it: 32-bit ones wrapped, timers in seconds."""
    if counter in _COUNT32:
        return float(_u32(value))
    if counter in _TICKS32:
        return (_ticks(value) % MOD32) * TICK_S
    return value


def path_states(d: HostDisk) -> dict[int, int]:
    """TargetPortGroup_State -> number of paths; empty when the disk reports no ALUA states."""
    if d.optimized_paths is None:
        return {}
    return {0: d.optimized_paths, 1: max(d.paths - d.optimized_paths, 0)}


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


def render(estate: Estate, host: Host, t: float, clock_offset_s: float = 0.0) -> str:
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
                value = (
                    float(round(d.queue))
                    if counter is None
                    else exposed(counter, rows[d.number][cs.col[counter]])
                )
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
    lines.append(
        "# HELP sanlens_windows_disk_paths MPIO paths of the disk, by ALUA state where MPIO reports it "
        "(sanlens textfile script)"
    )
    lines.append("# TYPE sanlens_windows_disk_paths gauge")
    for d in host.disks:
        states = path_states(d)
        if not states:
            lines.append(f'sanlens_windows_disk_paths{{disk="{d.number}"}} {d.paths}')
        for code, n in states.items():
            lines.append(f'sanlens_windows_disk_paths{{disk="{d.number}",state="{ALUA_STATES[code]}"}} {n}')
    # the time collector: the host's own clock, as windows_exporter reports it
    lines.append(
        "# HELP windows_time_current_timestamp_seconds Current time as reported by the operating system, in unix time."
    )
    lines.append("# TYPE windows_time_current_timestamp_seconds gauge")
    lines.append(f"windows_time_current_timestamp_seconds {format_value(t + clock_offset_s)}")
    lines.append(
        "# HELP windows_exporter_collector_success windows_exporter: Whether the collector was successful."
    )
    lines.append("# TYPE windows_exporter_collector_success gauge")
    for coll in ("logical_disk", "physical_disk", "textfile", "time"):
        lines.append(f'windows_exporter_collector_success{{collector="{coll}"}} 1')
    return "\n".join(lines) + "\n"


def winrm_document(estate: Estate, host: Host, t: float, clock_offset_s: float = 0.0) -> dict[str, Any]:
    """What the WinRM source's PowerShell returns (``sanlens.hosts.winrm.SCRIPT``) for this host at ``t``.

    Win32_PerfRawData_PerfDisk_PhysicalDisk rows with the widths of the real class: uint32
    counts and Avg. Disk sec/op numerators (ticks of Frequency_PerfTime, here 10 MHz as on
    Windows 10 and later), uint64 bytes and 100 ns integrals whose base is a 100 ns timestamp.
    """
    cs = estate.counters["hostdisk"]
    # the host's wall clock (FILETIME), ``clock_offset_s`` off the real time; Timestamp_PerfTime is
    # the performance counter, which counts from boot and no clock setting moves
    now_100ns = round((t + clock_offset_s + FILETIME_EPOCH_S) / TICK_S)
    perf_time = round(t * FREQUENCY_PERFTIME)
    physical: list[dict[str, Any]] = []
    disks: list[dict[str, Any]] = []
    mpio: list[dict[str, Any]] = []
    alua: list[dict[str, Any]] = []
    for d in host.disks:
        idx = cs.index.get(f"{host.name}/{d.number}")
        row = cs.row(idx, t) if idx is not None else [0.0] * len(cs.names)

        def c(name: str, row: list[float] = row) -> float:
            return row[cs.col[name]]

        physical.append(
            {
                "Name": f"{d.number} {d.drive}",
                "DiskReadsPerSec": _u32(c("reads")),
                "DiskWritesPerSec": _u32(c("writes")),
                "DiskReadBytesPerSec": int(c("read_bytes")),
                "DiskWriteBytesPerSec": int(c("write_bytes")),
                "AvgDiskSecPerRead": _ticks(c("read_latency")) % MOD32,
                "AvgDiskSecPerRead_Base": _u32(c("reads")),
                "AvgDiskSecPerWrite": _ticks(c("write_latency")) % MOD32,
                "AvgDiskSecPerWrite_Base": _u32(c("writes")),
                "PercentDiskReadTime": _ticks(c("read_seconds")),
                "PercentDiskReadTime_Base": now_100ns,
                "PercentDiskWriteTime": _ticks(c("write_seconds")),
                "PercentDiskWriteTime_Base": now_100ns,
                "PercentIdleTime": _ticks(c("idle")),
                "PercentIdleTime_Base": now_100ns,
                "CurrentDiskQueueLength": round(d.queue),
                "AvgDiskQueueLength": _ticks(c("read_seconds") + c("write_seconds")),
                "SplitIOPerSec": _u32(c("split_ios")),
                "Frequency_PerfTime": FREQUENCY_PERFTIME,
                "Timestamp_PerfTime": perf_time,
                "Timestamp_Sys100NS": now_100ns,
            }
        )
        disks.append(
            {
                "Number": int(d.number),
                "SerialNumber": d.serial,
                "UniqueId": "600A0980" + d.serial.encode().hex().upper() if d.lun_key else d.serial,
                "FriendlyName": d.friendly_name,
            }
        )
        if d.lun_key:
            mpio.append({"Name": f"MPIO Disk{d.number}", "NumberPaths": d.paths, "SerialNumber": d.serial})
        for code, n in path_states(d).items():
            alua.extend({"Number": int(d.number), "State": code, "Failed": 0} for _ in range(n))
    return {"physical": physical, "logical": [], "disks": disks, "mpio": mpio, "alua": alua}
