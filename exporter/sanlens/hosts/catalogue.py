"""The host counter catalogue: per source, every counter sanlens reads, its width, unit and what it feeds.

The ONTAP tables name their counters in ``ontap/tables/*.yaml``; this is the same idea
for hosts, kept as Python data so it ships with the package without packaging changes.
Each source's parser maps names to ``DiskReading`` fields from here, and the cooker takes
each field's wrap point from here, so a new source is mostly a new table:

- ``width`` is how many bits the host keeps the counter in. Windows keeps operation
  counts and the Avg. Disk sec/op numerators in 32 bits (PERF_COUNTER_COUNTER,
  PERF_AVERAGE_TIMER); Linux prints every diskstats time in 32 bits (``%u`` milliseconds
  in the kernel's ``diskstats_show``/``part_stat_show``: 49.7 days of busy time, or
  49.7/N days of a time sum at N requests in flight) and its counts and sectors in
  ``unsigned long``: 64 bits on a 64-bit kernel, 32 on a 32-bit one (i686, armv7l, ...), where
  a busy disk's count wraps within weeks. ``width="32/64"`` marks those: their width is the
  kernel's word, which the source learns from ``node_uname_info``'s ``machine``.
- ``tick`` is one raw count in SI units (100 ns, 1 ms, one sector of 512 bytes), so a
  32-bit counter wraps at ``2**32 * tick`` in the unit the parser hands on.
- ``utilization`` says whether the source counts idle time (Windows % Idle Time) or busy
  time (Linux io_ticks): the cooker turns either into the idle ratio the diagnoses read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

WRAP32 = float(2**32)
Width = Literal[32, 64, "32/64"]  # "32/64": the kernel's word (unsigned long)

# ``uname -m`` of 32-bit Linux kernels (node_uname_info's ``machine``): their ``unsigned long`` is 32 bits.
# A machine not listed (x86_64, aarch64, ppc64le, s390x, mips64, sparc64, riscv64, ...) has a 64-bit word.
LINUX_32BIT_MACHINES = frozenset(
    {"i386", "i486", "i586", "i686", "armv5tel", "armv6l", "armv7l", "arm", "mips", "mipsel", "ppc",
     "powerpc", "s390", "sparc", "m68k", "sh4", "parisc", "riscv32"}
)  # fmt: skip


def linux_word_bits(machine: str) -> Literal[32, 64]:
    """The width of a Linux kernel's ``unsigned long`` from ``uname -m``; 64 when not known."""
    return 32 if machine.strip().lower() in LINUX_32BIT_MACHINES else 64


@dataclass(frozen=True, slots=True)
class HostCounter:
    """One counter (or gauge) of one host source."""

    name: str  # as the source spells it: a family, a CIM property or a PerfMon counter
    feeds: str  # the DiskReading field it fills (a HostDiskStats rate for PerfMon's cooked values)
    # bits the host keeps it in ("32/64": the kernel's word); None for a gauge or a value already cooked
    width: Width | None
    unit: str  # unit of the value as the source serves it
    tick: float = 1.0  # one raw count of the host's counter, in the SI unit handed on
    doc: str = ""

    def modulus(self, word_bits: Literal[32, 64] = 64) -> float | None:
        """Where the value handed on wraps: 2^32 raw counts for a 32-bit counter; None never wraps."""
        bits = word_bits if self.width == "32/64" else self.width
        return WRAP32 * self.tick if bits == 32 else None


@dataclass(frozen=True, slots=True)
class SourceCatalogue:
    source: str
    counters: tuple[HostCounter, ...]
    utilization: Literal["idle", "busy"]
    cooked: bool = False  # values are rates PDH already cooked (PerfMon logs), not cumulative counters
    note: str = ""

    def fields(self) -> dict[str, str]:
        """Source name -> the field it feeds."""
        return {c.name: c.feeds for c in self.counters}

    def moduli(self, word_bits: Literal[32, 64] = 64) -> dict[str, float | None]:
        """Cumulative field -> its wrap point (None: 64 bits, a drop is a restart); gauges left out.
        ``word_bits``: the host kernel's word, for the counters kept in it."""
        if self.cooked:
            return {}
        return {c.feeds: c.modulus(word_bits) for c in self.counters if c.width is not None}


def _c(
    name: str, feeds: str, width: Width | None, unit: str, tick: float = 1.0, doc: str = ""
) -> HostCounter:
    return HostCounter(name, feeds, width, unit, tick, doc)


_WE = "windows_physical_disk_"
WINDOWS_EXPORTER = SourceCatalogue(
    "windows_exporter",
    (
        _c(_WE + "reads_total", "reads", 32, "count", doc="Disk Reads/sec raw, PERF_COUNTER_COUNTER"),
        _c(_WE + "writes_total", "writes", 32, "count", doc="Disk Writes/sec raw, PERF_COUNTER_COUNTER"),
        _c(_WE + "read_bytes_total", "read_bytes", 64, "bytes", doc="PERF_COUNTER_BULK_COUNT"),
        _c(_WE + "write_bytes_total", "write_bytes", 64, "bytes", doc="PERF_COUNTER_BULK_COUNT"),
        _c(
            _WE + "read_latency_seconds_total",
            "read_latency_s",
            32,
            "seconds",
            1e-7,
            "Avg. Disk sec/Read numerator, PERF_AVERAGE_TIMER in 100 ns ticks: wraps every 429.5/N s",
        ),
        _c(_WE + "write_latency_seconds_total", "write_latency_s", 32, "seconds", 1e-7, "as read"),
        _c(
            _WE + "read_seconds_total",
            "read_time_s",
            64,
            "seconds",
            1e-7,
            "% Disk Read Time, PERF_PRECISION_100NS_TIMER: the read-queue integral (Little's law)",
        ),
        _c(_WE + "write_seconds_total", "write_time_s", 64, "seconds", 1e-7, "as read"),
        _c(_WE + "idle_seconds_total", "idle_s", 64, "seconds", 1e-7, "% Idle Time"),
        _c(_WE + "split_ios_total", "split_ios", 32, "count", doc="Split IO/Sec raw"),
        _c(_WE + "requests_queued", "queue_length", None, "count", doc="Current Disk Queue Length"),
    ),
    "idle",
)

WINRM = SourceCatalogue(
    "winrm",
    (
        _c("DiskReadsPerSec", "reads", 32, "count"),
        _c("DiskWritesPerSec", "writes", 32, "count"),
        _c("DiskReadBytesPerSec", "read_bytes", 64, "bytes"),
        _c("DiskWriteBytesPerSec", "write_bytes", 64, "bytes"),
        # ticks of Frequency_PerfTime, unwrapped by the source before it divides by the frequency
        _c(
            "AvgDiskSecPerRead",
            "read_latency_s",
            32,
            "ticks",
            1e-7,
            "base AvgDiskSecPerRead_Base (uint32 ops)",
        ),
        _c("AvgDiskSecPerWrite", "write_latency_s", 32, "ticks", 1e-7, "base AvgDiskSecPerWrite_Base"),
        _c("PercentDiskReadTime", "read_time_s", 64, "100ns", 1e-7, "the read-queue integral"),
        _c("PercentDiskWriteTime", "write_time_s", 64, "100ns", 1e-7, "the write-queue integral"),
        _c("PercentIdleTime", "idle_s", 64, "100ns", 1e-7),
        _c("SplitIOPerSec", "split_ios", 32, "count"),
        _c("CurrentDiskQueueLength", "queue_length", None, "count"),
    ),
    "idle",
    note="Win32_PerfRawData_PerfDisk_PhysicalDisk; rates over Timestamp_PerfTime / Frequency_PerfTime",
)

PERFMON = SourceCatalogue(
    "perfmon",
    (
        _c("Disk Reads/sec", "read_iops", None, "per second"),
        _c("Disk Writes/sec", "write_iops", None, "per second"),
        _c(
            "Avg. Disk sec/Read", "read_latency_s", None, "seconds", doc="wrong once the interval > 429.5/N s"
        ),
        _c("Avg. Disk sec/Write", "write_latency_s", None, "seconds"),
        _c("% Idle Time", "idle_ratio", None, "percent"),
        _c("Current Disk Queue Length", "queue_length", None, "count"),
        _c("Disk Read Bytes/sec", "read_bytes_s", None, "bytes per second"),
        _c("Disk Write Bytes/sec", "write_bytes_s", None, "bytes per second"),
        _c("Split IO/Sec", "split_iops", None, "per second"),
        _c(
            "Avg. Disk Read Queue Length",
            "read_queue",
            None,
            "count",
            doc="uint64 integral: latency by Little's law",
        ),
        _c("Avg. Disk Write Queue Length", "write_queue", None, "count"),
    ),
    "idle",
    cooked=True,
    note="values PDH cooked over each sample interval; integrated back to counters by the source",
)

_ND = "node_disk_"
_MS = 1e-3  # diskstats keeps times in milliseconds
NODE_EXPORTER = SourceCatalogue(
    "node_exporter",
    (
        _c(_ND + "reads_completed_total", "reads", "32/64", "count", doc="diskstats field 1 (unsigned long)"),
        _c(_ND + "writes_completed_total", "writes", "32/64", "count", doc="field 5 (unsigned long)"),
        _c(_ND + "read_bytes_total", "read_bytes", "32/64", "bytes", 512.0, doc="field 3, sectors x 512"),
        _c(_ND + "written_bytes_total", "write_bytes", "32/64", "bytes", 512.0, doc="field 7, sectors x 512"),
        _c(
            _ND + "read_time_seconds_total",
            "read_time_s",
            32,
            "seconds",
            _MS,
            "field 4, ms: Σ of each read's time from issue to completion; Δ/Δreads = r_await, "
            "Δ/Δt = reads in flight",
        ),
        _c(_ND + "write_time_seconds_total", "write_time_s", 32, "seconds", _MS, "field 8, ms; w_await"),
        _c(
            _ND + "io_time_seconds_total",
            "busy_s",
            32,
            "seconds",
            _MS,
            "field 10 (io_ticks), ms: from 5.0 until 'block: support to account io_ticks precisely' "
            "(6.10, 6.1.93) a whole jiffy at each I/O start; bounded by the requests in flight",
        ),
        _c(
            _ND + "io_time_weighted_seconds_total",
            "queue_time_s",
            32,
            "seconds",
            _MS,
            "field 11, ms: since 5.0 the summed duration of completed requests of every kind, discards "
            "and flushes included, not a queue integral; exposed, not read for reads and writes in flight",
        ),
        _c(_ND + "discards_completed_total", "discards", "32/64", "count", doc="field 12 (kernel 4.18+)"),
        _c(_ND + "discard_time_seconds_total", "discard_time_s", 32, "seconds", _MS, "field 15, ms"),
        _c(_ND + "flush_requests_total", "flushes", "32/64", "count", doc="field 16 (kernel 5.5+)"),
        _c(_ND + "flush_requests_time_seconds_total", "flush_time_s", 32, "seconds", _MS, "field 17, ms"),
        _c(_ND + "io_now", "queue_length", None, "count", doc="field 9: I/Os in flight at the scrape"),
    ),
    "busy",
    note="/proc/diskstats through node_exporter's diskstats collector (label device = sda, dm-3)",
)

CATALOGUES: dict[str, SourceCatalogue] = {
    c.source: c for c in (WINDOWS_EXPORTER, WINRM, PERFMON, NODE_EXPORTER)
}
