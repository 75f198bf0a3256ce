"""`sanlens analyze` takes PerfMon latency from the queue integral where the log has it.

PerfMon cooks Avg. Disk sec/Read from a uint32 count of 100 ns ticks over the sample
interval; with N reads outstanding it wraps every 429.5/N s, so at depth a 15 s log
carries nonsense there. Avg. Disk Read Queue Length comes from the uint64 integral.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.perfmon_logs import disk_columns, write_log

from sanlens.analyze.perfmon_summary import summarize
from sanlens.hosts.mapping import DiskMapping

COUNTERS = (
    "Disk Reads/sec",
    "Disk Writes/sec",
    "Avg. Disk sec/Read",
    "Avg. Disk sec/Write",
    "Avg. Disk Read Queue Length",
    "Avg. Disk Write Queue Length",
    "% Idle Time",
)
TICKS = 2**32  # the PERF_AVERAGE_TIMER numerator's modulus, 100 ns ticks


def _wrapped_average(latency_s: float, iops: float, interval_s: float) -> float:
    """What PDH shows for Avg. Disk sec/op when its uint32 numerator wrapped in the interval."""
    ticks = latency_s * iops * interval_s * 1e7
    return (ticks % TICKS) * 1e-7 / (iops * interval_s)


@pytest.mark.parametrize("outstanding", [16, 64, 200])
def test_latency_from_the_queue_integral_at_depth(tmp_path: Path, outstanding: int) -> None:
    reads, writes, step = 5_000.0, 1_000.0, 15.0
    read_s, write_s = outstanding / reads, 4 / writes  # Little's law: N = X x R
    row = [
        reads,
        writes,
        _wrapped_average(read_s, reads, step),
        _wrapped_average(write_s, writes, step),
        outstanding,
        4.0,
        10.0,
    ]
    rows = [(1_700_000_000 + i * step, row) for i in range(20)]
    log = write_log(tmp_path / "deep.csv", disk_columns("SQL01", "1 E:", COUNTERS), rows)
    summary = summarize(log)
    assert summary.intervals is not None
    views = [s.view for s in summary.intervals.snapshots(lambda h, d, dr: DiskMapping(""))]
    assert views
    for v in views:
        [disk] = v.disks
        assert disk.read_latency_s == pytest.approx(read_s, rel=1e-9)
        assert disk.write_latency_s == pytest.approx(write_s, rel=1e-9)
    if outstanding >= 64:  # the logged average is wrong there: the test would see it
        assert abs(row[2] - read_s) > 0.1 * read_s


def test_without_the_queue_counters_the_logged_average_is_used(tmp_path: Path) -> None:
    columns = disk_columns("SQL01", "1 E:", ("Disk Reads/sec", "Avg. Disk sec/Read"))
    rows = [(1_700_000_000 + i * 15.0, [100.0, 0.004 + 0.001 * (i % 2)]) for i in range(4)]
    summary = summarize(write_log(tmp_path / "plain.csv", columns, rows))
    assert summary.intervals is not None
    got = [
        s.view.disks[0].read_latency_s for s in summary.intervals.snapshots(lambda h, d, dr: DiskMapping(""))
    ]
    assert got == pytest.approx([0.004, 0.005, 0.004, 0.005])
