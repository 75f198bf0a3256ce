"""The host counter catalogue: the names each source reads, their widths and what they feed."""

from __future__ import annotations

import dataclasses

import pytest

from sanlens.hosts.catalogue import (
    CATALOGUES,
    NODE_EXPORTER,
    PERFMON,
    WINDOWS_EXPORTER,
    WINRM,
    linux_word_bits,
)
from sanlens.hosts.cooking import COUNTER_FIELDS, DiskReading
from sanlens.hosts.exporter_scrape import parse_scrape
from sanlens.hosts.perfmon_source import DISK_COUNTERS
from sanlens.hosts.winrm import SCRIPT
from sanlens.model import HostDiskStats

READING_FIELDS = {f.name for f in dataclasses.fields(DiskReading)}
STATS_FIELDS = {f.name for f in dataclasses.fields(HostDiskStats)}

# node_exporter 1.12's diskstats families (collector/diskstats_linux.go, diskstats_common.go) that
# carry I/O counts, bytes and times; merges and sector counts of discards feed nothing here
NODE_DISKSTATS = {
    "node_disk_reads_completed_total",
    "node_disk_writes_completed_total",
    "node_disk_read_bytes_total",
    "node_disk_written_bytes_total",
    "node_disk_read_time_seconds_total",
    "node_disk_write_time_seconds_total",
    "node_disk_io_now",
    "node_disk_io_time_seconds_total",
    "node_disk_io_time_weighted_seconds_total",
    "node_disk_discards_completed_total",
    "node_disk_discard_time_seconds_total",
    "node_disk_flush_requests_total",
    "node_disk_flush_requests_time_seconds_total",
}


def test_every_counter_feeds_a_field_that_exists() -> None:
    for cat in CATALOGUES.values():
        fields = STATS_FIELDS | {"read_queue", "write_queue"} if cat.cooked else READING_FIELDS
        for c in cat.counters:
            assert c.feeds in fields, (cat.source, c.name, c.feeds)
        assert len({c.name for c in cat.counters}) == len(cat.counters), cat.source


def test_windows_widths_are_the_perfdisk_classes() -> None:
    # Win32_PerfRawData_PerfDisk_PhysicalDisk: counts and PERF_AVERAGE_TIMER numerators uint32 (100 ns
    # ticks scaled by 1e-7 s in windows_exporter), bytes and PERF_PRECISION_100NS_TIMER integrals uint64
    m = WINDOWS_EXPORTER.moduli()
    assert m["reads"] == m["writes"] == m["split_ios"] == 2.0**32
    assert m["read_latency_s"] == pytest.approx(2**32 * 100e-9)  # 429.5 s
    assert m["read_time_s"] is m["idle_s"] is m["read_bytes"] is None
    assert m == COUNTER_FIELDS  # the cooker's default is the Windows table
    assert WINDOWS_EXPORTER.utilization == "idle"


def test_linux_times_wrap_at_2_to_the_32_milliseconds_and_counts_do_not() -> None:
    m = NODE_EXPORTER.moduli()
    for time_field in (
        "read_time_s",
        "write_time_s",
        "busy_s",
        "queue_time_s",
        "discard_time_s",
        "flush_time_s",
    ):
        assert m[time_field] == pytest.approx(4294967.296), time_field  # 49.7 days of milliseconds
    for count in ("reads", "writes", "read_bytes", "write_bytes", "discards", "flushes"):
        assert m[count] is None, count
    assert NODE_EXPORTER.utilization == "busy"
    assert {c.name for c in NODE_EXPORTER.counters} == NODE_DISKSTATS


def test_the_windows_exporter_parser_reads_exactly_the_catalogued_families() -> None:
    lines = []
    for i, c in enumerate(WINDOWS_EXPORTER.counters):
        lines.append(f"# TYPE {c.name} {'gauge' if c.width is None else 'counter'}")
        lines.append(f'{c.name}{{disk="1"}} {i + 1}')
    (r,) = parse_scrape("\n".join(lines) + "\n")
    for i, c in enumerate(WINDOWS_EXPORTER.counters):
        assert getattr(r, c.feeds) == i + 1, c.name


def test_the_winrm_script_selects_every_catalogued_property() -> None:
    for c in WINRM.counters:
        assert c.name in SCRIPT, c.name


def test_perfmon_reads_the_english_physicaldisk_counters_it_cooks_from() -> None:
    # PerfMon logs hold PDH-cooked values: rates, Avg. Disk sec/op and the uncapped queue lengths
    assert DISK_COUNTERS["disk reads/sec"] == "read_iops"
    assert DISK_COUNTERS["avg. disk sec/write"] == "write_latency_s"
    assert DISK_COUNTERS["% idle time"] == "idle_ratio"
    assert DISK_COUNTERS["avg. disk read queue length"] == "read_queue"
    assert "% disk read time" not in DISK_COUNTERS  # PDH caps it at 100 when it formats the log
    assert PERFMON.cooked and PERFMON.moduli() == {}


def test_a_32_bit_kernels_counts_and_sectors_wrap_at_2_to_the_32_and_its_times_as_ever() -> None:
    m64, m32 = NODE_EXPORTER.moduli(64), NODE_EXPORTER.moduli(32)
    for count in ("reads", "writes", "discards", "flushes"):
        assert m32[count] == 2.0**32, count
    for sectors in ("read_bytes", "write_bytes"):
        assert m32[sectors] == 2.0**32 * 512, sectors
    for time_field in ("read_time_s", "busy_s", "queue_time_s"):
        assert m32[time_field] == m64[time_field], time_field
    assert [linux_word_bits(m) for m in ("i686", "armv7l", "x86_64", "aarch64", "")] == [32, 32, 64, 64, 64]
