"""Host-disk counters that hold on real hosts: latency past 32-bit wraps, stable series identity, ALUA paths.

Expected values come from the workload (reads/s x seconds per read), never from sanlens' own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sanlens.config import HostTarget
from sanlens.hosts.cooking import HostCooker
from sanlens.hosts.exporter_scrape import parse_scrape
from sanlens.hosts.mapping import DiskMapping
from sanlens.hosts.registry import make_host_source
from sanlens.hosts.winrm import WinRMSource
from sanlens.model import Snapshot

MOD32_S = 2**32 * 1e-7  # 429.4967296 s: a uint32 count of 100 ns ticks, as windows_exporter scales it
PD = "windows_physical_disk_"


def _scrape(reads: float, numerator_s: float, integral_s: float | None = None, paths: str = "") -> str:
    """windows_exporter text for disk 1: reads, the Avg. Disk sec/Read numerator and optionally
    % Disk Read Time (read_seconds_total); ``paths`` appends textfile lines."""
    fams = [
        ("reads_total", reads),
        ("read_latency_seconds_total", numerator_s),
        ("read_bytes_total", reads * 8192),
    ]
    if integral_s is not None:
        fams.append(("read_seconds_total", integral_s))
    out = []
    for name, v in fams:
        out += [f"# HELP {PD}{name} x", f"# TYPE {PD}{name} counter", f'{PD}{name}{{disk="1"}} {v!r}']
    return "\n".join(out) + "\n" + paths


def _cook(cooker: HostCooker, t: float, text: str, mapping: DiskMapping | None = None) -> Snapshot:
    readings = parse_scrape(text)
    return cooker.cook(t, readings, {"1": mapping} if mapping else {})


@pytest.mark.parametrize("interval_s", [15.0, 60.0])
@pytest.mark.parametrize("reads_s, latency_s", [(1600.0, 0.010), (3200.0, 0.020), (5000.0, 0.040)])
def test_latency_from_the_64bit_integral_at_any_depth(
    reads_s: float, latency_s: float, interval_s: float
) -> None:
    """N = 16, 64, 200 reads outstanding: the numerator grows N s/s and wraps every 429.5/N s (it says
    nothing useful at 200 x 60 s = 28 wraps); the integral gives X x R exactly."""
    n = reads_s * latency_s
    c = HostCooker("sql01")
    start = 3.0e6  # seconds of read time accumulated before the first poll
    sums = [start, start + n * interval_s]
    reads = [1.0e5, 1.0e5 + reads_s * interval_s]
    _cook(c, 1000.0, _scrape(reads[0], sums[0] % MOD32_S, sums[0]))
    snap = _cook(c, 1000.0 + interval_s, _scrape(reads[1], sums[1] % MOD32_S, sums[1]))
    assert snap.view is not None
    [d] = snap.view.disks
    assert d.read_iops == pytest.approx(reads_s, rel=0.01)
    assert d.read_latency_s == pytest.approx(latency_s, rel=0.01)
    lat = dict(next(m for m in snap.metrics if m.name == "sanlens_host_disk_latency_seconds_total").samples)
    ops = dict(next(m for m in snap.metrics if m.name == "sanlens_host_disk_ops_total").samples)
    # what rate(latency)/rate(ops) reads in PromQL: the exposed counter is the integral itself
    assert lat[("sql01", "1", "read")] == sums[1]
    assert (sums[1] - sums[0]) / (ops[("sql01", "1", "read")] - reads[0]) == pytest.approx(
        latency_s, rel=0.01
    )


@pytest.mark.parametrize("reads_s, latency_s, interval_s", [(1600.0, 0.010, 15.0), (400.0, 0.020, 45.0)])
def test_32bit_numerator_alone_is_taken_modulo_2_32(
    reads_s: float, latency_s: float, interval_s: float
) -> None:
    """Without the integral (an exporter that lacks it), a drop of the numerator is a wrap, however far
    it falls: exact while the poll is shorter than 429.5/N s (N = 16 at 15 s: Δ = 240 s, a drop of 189 s)."""
    n = reads_s * latency_s
    assert n * interval_s < MOD32_S  # within the documented limit: at most one wrap per poll
    c = HostCooker("sql01")
    before = MOD32_S - 100.0
    after = (before + n * interval_s) % MOD32_S
    assert after < before  # it wrapped
    _cook(c, 0.0, _scrape(5000.0, before))
    snap = _cook(c, interval_s, _scrape(5000.0 + reads_s * interval_s, after))
    assert snap.view is not None
    assert snap.view.disks[0].read_latency_s == pytest.approx(latency_s, rel=0.01)
    lat = dict(next(m for m in snap.metrics if m.name == "sanlens_host_disk_latency_seconds_total").samples)
    assert lat[("sql01", "1", "read")] == pytest.approx(before + n * interval_s)


def test_host_disk_families_carry_host_disk_op_only() -> None:
    mapping = DiskMapping("81E3T+Qa9Ugx", "c1", "svm1", "sql_data", "/vol/sql_data/lun0", "serial")
    snap = _cook(HostCooker("sql01"), 0.0, _scrape(10.0, 1.0, 1.0), mapping)
    names = {m.name: m.label_names for m in snap.metrics}
    assert names.pop("sanlens_host_disk_info") == (
        "host",
        "disk",
        "lun_serial",
        "cluster",
        "svm",
        "volume",
        "lun",
        "drives",
        "data_class",
        "mapping",
    )
    assert names and all(n.startswith("sanlens_host_disk_") for n in names)
    for name, labels in names.items():
        assert labels in (("host", "disk"), ("host", "disk", "op")), name


def test_changed_lun_mapping_keeps_counter_identity() -> None:
    """A LUN moved to another SVM/volume, or an inventory that failed: the counters' series stay the
    same, only the info series changes."""
    c = HostCooker("sql01")
    a = DiskMapping("81E3T+Qa9Ugx", "c1", "svm1", "sql_data", "/vol/sql_data/lun0", "serial")
    b = DiskMapping("81E3T+Qa9Ugx", "c1", "svm2", "sql_new", "/vol/sql_new/lun0", "serial")
    s1 = _cook(c, 0.0, _scrape(100.0, 1.0, 1.0), a)
    s2 = _cook(c, 15.0, _scrape(200.0, 2.0, 2.0), b)
    s3 = _cook(c, 30.0, _scrape(300.0, 3.0, 3.0), None)  # the LUN inventory is gone: unmapped

    def keys(s: Snapshot) -> dict[str, set[tuple[str, ...]]]:
        return {m.name: {v for v, _ in m.samples} for m in s.metrics if m.name != "sanlens_host_disk_info"}

    assert keys(s1) == keys(s2) == keys(s3)
    info = [
        next(m for m in s.metrics if m.name == "sanlens_host_disk_info").samples[0][0] for s in (s1, s2, s3)
    ]
    assert info[0][3:7] == ("c1", "svm1", "sql_data", "/vol/sql_data/lun0")
    assert info[1][3:7] == ("c1", "svm2", "sql_new", "/vol/sql_new/lun0")
    assert info[2][-1] == "none"


def test_textfile_alua_states_give_optimized_paths() -> None:
    paths = (
        "# TYPE sanlens_windows_disk_paths gauge\n"
        'sanlens_windows_disk_paths{disk="1",state="active_optimized"} 2\n'
        'sanlens_windows_disk_paths{disk="1",state="active_unoptimized"} 2\n'
        'sanlens_windows_disk_paths{disk="1",state="standby"} 1\n'
    )
    [r] = parse_scrape(_scrape(1.0, 1.0, 1.0, paths))
    assert (r.paths, r.optimized_paths) == (4, 2)  # standby carries no I/O and is not active
    old = '# TYPE sanlens_windows_disk_paths gauge\nsanlens_windows_disk_paths{disk="1"} 4\n'
    [r] = parse_scrape(_scrape(1.0, 1.0, 1.0, old))
    assert (r.paths, r.optimized_paths) == (4, None)  # a count without states: not known
    src = make_host_source(HostTarget(name="sql01", url="http://h:9182"))
    snap = src.cooker.cook(0.0, parse_scrape(_scrape(1.0, 1.0, 1.0, paths)), {})
    assert snap.view is not None and snap.view.disks[0].optimized_paths == 2
    gauge = dict(next(m for m in snap.metrics if m.name == "sanlens_host_disk_optimized_paths").samples)
    assert gauge == {("sql01", "1"): 2.0}


class _Once:
    def __init__(self, docs: list[dict[str, object]]) -> None:
        self.docs = docs

    def run_ps(self, script: str) -> str:
        return json.dumps(self.docs.pop(0))


def _row(t: float, reads: int, numerator: int, integral: int | None) -> dict[str, object]:
    f = 10_000_000
    row: dict[str, object] = {
        "Name": "1 E:",
        "DiskReadsPerSec": reads % 2**32,
        "DiskWritesPerSec": 0,
        "DiskReadBytesPerSec": reads * 8192,
        "DiskWriteBytesPerSec": 0,
        "AvgDiskSecPerRead": numerator % 2**32,
        "AvgDiskSecPerRead_Base": reads % 2**32,
        "AvgDiskSecPerWrite": 0,
        "AvgDiskSecPerWrite_Base": 0,
        "PercentIdleTime": 0,
        "PercentIdleTime_Base": int(t * 1e7),
        "CurrentDiskQueueLength": 200,
        "AvgDiskQueueLength": 0,
        "SplitIOPerSec": 0,
        "Frequency_PerfTime": f,
        "Timestamp_PerfTime": int(t * f),
        "Timestamp_Sys100NS": int((t + 11644473600.0) * 1e7),
    }
    if integral is not None:
        row["PercentDiskReadTime"] = integral
        row["PercentDiskReadTime_Base"] = int(t * 1e7)
    return row


def _doc(row: dict[str, object], alua: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {
        "physical": [row],
        "disks": [{"Number": 1, "SerialNumber": "81E3T+Qa9Ugx"}],
        "mpio": [{"Name": "MPIO Disk1", "NumberPaths": 4, "SerialNumber": "81E3T+Qa9Ugx"}],
        "alua": alua or [],
    }


def test_winrm_latency_from_percent_disk_read_time_and_alua_states() -> None:
    """5,000 reads/s at 40 ms (N = 200) over 15 s: the uint32 numerator wraps 6 times a poll;
    PercentDiskReadTime (uint64, 100 ns) gives 40 ms. The DSM's path states give 2 optimized of 4."""
    t0, dt, reads_s, r = 1_700_000_000.0, 15.0, 5000, 0.040
    sum0 = 10**12  # 100 ns ticks of read time so far
    sum1 = sum0 + round(reads_s * dt * r * 1e7)
    n0 = 7 * 10**6
    n1 = n0 + reads_s * int(dt)
    alua = [{"Number": 1, "State": s, "Failed": 0} for s in (0, 0, 1, 1)] + [
        {"Number": 1, "State": 0, "Failed": 1}
    ]
    docs = [_doc(_row(t0, n0, sum0, sum0), alua), _doc(_row(t0 + dt, n1, sum1, sum1), alua)]
    src = WinRMSource(HostTarget(name="sql01", source="winrm", url="https://h:5986/wsman"), _Once(docs))
    src.poll()
    snap = src.poll()
    assert snap.view is not None
    [d] = snap.view.disks
    assert (sum1 - sum0) / 2**32 > 6  # the numerator wrapped 6 times in the poll
    assert d.read_latency_s == pytest.approx(r, rel=0.01)
    assert d.read_iops == pytest.approx(reads_s, rel=0.01)
    assert (d.optimized_paths, d.observed_paths) == (2, 4)  # the failed optimized path does not count
    lat = dict(next(m for m in snap.metrics if m.name == "sanlens_host_disk_latency_seconds_total").samples)
    assert lat[("sql01", "1", "read")] == pytest.approx(sum1 * 1e-7)


def test_winrm_without_the_integral_takes_the_numerator_modulo_2_32() -> None:
    t0, dt, reads_s, r = 1_700_000_000.0, 15.0, 1600, 0.010  # N = 16: 240 s of ticks per poll, one wrap
    n0 = 2**32 - 10**9
    n1 = n0 + round(reads_s * dt * r * 1e7)
    docs = [_doc(_row(t0, 100, n0, None)), _doc(_row(t0 + dt, 100 + reads_s * int(dt), n1, None))]
    src = WinRMSource(HostTarget(name="sql01", source="winrm", url="https://h:5986/wsman"), _Once(docs))
    src.poll()
    snap = src.poll()
    assert snap.view is not None
    assert snap.view.disks[0].read_latency_s == pytest.approx(r, rel=0.01)


def test_perfmon_latency_from_average_read_queue_length(tmp_path: Path) -> None:
    """A log at a 15 s interval with 200 reads outstanding: PDH's Avg. Disk sec/Read came out of a
    numerator that wrapped 6 times in the sample; Avg. Disk Read Queue Length / Disk Reads/sec does not."""
    from perfmon_logs import write_log

    cols = [
        "\\\\SQL01\\PhysicalDisk(1 E:)\\Disk Reads/sec",
        "\\\\SQL01\\PhysicalDisk(1 E:)\\Avg. Disk sec/Read",
        "\\\\SQL01\\PhysicalDisk(1 E:)\\Avg. Disk Read Queue Length",
    ]
    wrong = (200 * 15.0 % MOD32_S) / (5000 * 15.0)  # what a wrapped numerator cooks to
    p = write_log(
        tmp_path / "sql01.csv",
        cols,
        [(1_700_000_000.0, [5000, wrong, 200]), (1_700_000_015.0, [5000, wrong, 200])],
    )
    src = make_host_source(HostTarget(name="sql01", source="perfmon", files=[str(p)]))
    snap = src.poll()
    assert snap.view is not None
    assert snap.view.disks[0].read_latency_s == pytest.approx(200 / 5000, rel=0.01)
