"""WinRM raw-counter formulas (hand-computed vectors) and the source with a fake transport."""

from __future__ import annotations

import json

import pytest
from tests.joining import joined

from sanlens.config import HostTarget
from sanlens.errors import SanlensError, SourceError
from sanlens.hosts import rawcounters as rc
from sanlens.hosts.winrm import SCRIPT, WinRMSource
from sanlens.join.directory import LunDirectory, LunIdentity

F = 10_000_000  # Frequency_PerfTime, ticks per second


def test_average_timer_plain() -> None:
    # 200 reads took 2_000_000 ticks in all = 0.2 s → 1 ms per read
    assert rc.average_timer(5_000_000, 7_000_000, 1000, 1200, F) == pytest.approx(0.001)


def test_average_timer_across_32bit_wrap() -> None:
    # numerator 4_294_000_000 → 1_032_704: Δ = 2^32 - 4_294_000_000 + 1_032_704 = 2_000_000 ticks
    assert rc.average_timer(4_294_000_000, 1_032_704, 4_294_967_200, 104, F) == pytest.approx(0.2 / 200)


def test_average_timer_no_ops() -> None:
    assert rc.average_timer(1, 5, 7, 7, F) is None


def test_counter_counter_rate_and_wrap() -> None:
    # 3000 reads over 15 s of perf time
    assert rc.counter_counter(100, 3100, 0, 15 * F, F) == pytest.approx(200.0)
    # 32-bit wrap: 4_294_967_000 → 2704 is Δ 3000
    assert rc.counter_counter(4_294_967_000, 2704, 0, 15 * F, F) == pytest.approx(200.0)
    # a 64-bit bulk counter does not wrap at 2^32, and a drop is a reset
    assert rc.counter_counter(1 << 33, (1 << 33) + 15_000, 0, 15 * F, F, wrap32=False) == pytest.approx(
        1000.0
    )
    assert rc.counter_counter(5000, 10, 0, F, F, wrap32=False) is None
    assert rc.counter_counter(1, 2, 5, 5, F) is None


def test_precision_100ns_timer_clamped() -> None:
    assert rc.precision_100ns_timer(0, 105_000_000, 0, 150_000_000) == pytest.approx(70.0)
    assert rc.precision_100ns_timer(0, 160_000_000, 0, 150_000_000) == 100.0  # clamped
    assert rc.precision_100ns_timer(50, 0, 0, 150_000_000) == 0.0
    assert rc.precision_100ns_timer(0, 1, 10, 10) is None


def test_queuelen_100ns_and_raw() -> None:
    # queue-length integral grew by 4.5e8 over 15 s (1.5e8 x 100 ns) → average queue 3
    assert rc.queuelen_100ns(0, 450_000_000, 0, 150_000_000) == pytest.approx(3.0)
    assert rc.raw(31) == 31.0


def _row(name: str, t_s: float, **kw: int) -> dict[str, object]:
    base = {
        "Name": name,
        "DiskReadsPerSec": 0,
        "DiskWritesPerSec": 0,
        "DiskReadBytesPerSec": 0,
        "DiskWriteBytesPerSec": 0,
        "AvgDiskSecPerRead": 0,
        "AvgDiskSecPerRead_Base": 0,
        "AvgDiskSecPerWrite": 0,
        "AvgDiskSecPerWrite_Base": 0,
        "PercentIdleTime": 0,
        "PercentIdleTime_Base": 0,
        "CurrentDiskQueueLength": 0,
        "AvgDiskQueueLength": 0,
        "SplitIOPerSec": 0,
        "Frequency_PerfTime": F,
        "Timestamp_PerfTime": int(t_s * F),
        "Timestamp_Sys100NS": int((t_s + 11644473600.0 + 1_700_000_000) * 1e7),
    }
    base.update(kw)
    return base


class FakeTransport:
    def __init__(self, outputs: list[str]) -> None:
        self.outputs, self.scripts = outputs, []

    def run_ps(self, script: str) -> str:
        self.scripts.append(script)
        return self.outputs.pop(0)


def _doc(rows: list[dict[str, object]]) -> str:
    return json.dumps(
        {
            "physical": rows,
            "logical": {"Name": "E:", "CurrentDiskQueueLength": 0, "Timestamp_Sys100NS": 1},
            "disks": [
                {
                    "Number": 1,
                    "SerialNumber": "81E3T+Qa9Ugx",
                    "UniqueId": "600A09",
                    "FriendlyName": "NETAPP LUN",
                },
                {"Number": 0, "SerialNumber": None, "UniqueId": "x", "FriendlyName": "Virtual Disk"},
            ],
            "mpio": {"Name": "MPIO Disk1", "NumberPaths": 4, "SerialNumber": "81E3T+Qa9Ugx"},
        }
    )


def test_winrm_source_two_polls_with_wrap() -> None:
    first = _row(
        "1 E:",
        100.0,
        DiskReadsPerSec=4_294_966_296,  # 1000 before the 32-bit wrap
        AvgDiskSecPerRead=4_294_000_000,
        AvgDiskSecPerRead_Base=10,
        AvgDiskSecPerWrite=0,
        AvgDiskSecPerWrite_Base=0,
        DiskReadBytesPerSec=1 << 40,
        PercentIdleTime=0,
        PercentIdleTime_Base=0,
        CurrentDiskQueueLength=3,
    )
    # 15 s later: 3000 reads (wrapped), latency Δ = 2^32 - 4_294_000_000 + 35_032_704 = 36_000_000 ticks (3.6 s)
    second = _row(
        "1 E:",
        115.0,
        DiskReadsPerSec=2000,
        AvgDiskSecPerRead=35_032_704,
        AvgDiskSecPerRead_Base=3010,
        DiskWritesPerSec=1500,
        AvgDiskSecPerWrite=3_000_000,
        AvgDiskSecPerWrite_Base=1500,
        DiskReadBytesPerSec=(1 << 40) + 15 * 65536,
        PercentIdleTime=60_000_000,
        PercentIdleTime_Base=150_000_000,
        CurrentDiskQueueLength=7,
        SplitIOPerSec=45,
    )
    transport = FakeTransport([_doc([first, _row("0 C:", 100.0)]), _doc([second, _row("0 C:", 115.0)])])
    d = LunDirectory()
    d.publish("c1", [LunIdentity("c1", "svm1", "sql_data", "/vol/sql_data/lun0", "81E3T+Qa9Ugx")])
    src = joined(
        WinRMSource(HostTarget(name="sql01", source="winrm", url="https://sql01:5986/wsman"), transport), d
    )
    src.poll()
    snap = src.poll()
    assert transport.scripts[0] == SCRIPT and "Win32_PerfRawData_PerfDisk_PhysicalDisk" in SCRIPT
    assert "Get-Disk" in SCRIPT and "MPIO_DISK_INFO" in SCRIPT and "Frequency_PerfTime" in SCRIPT
    assert snap.view is not None and snap.view.interval_s == pytest.approx(15.0)
    disk = {x.disk: x for x in snap.view.disks}["1"]
    assert disk.read_iops == pytest.approx(3000 / 15)
    assert disk.read_latency_s == pytest.approx(3.6 / 3000)  # 1.2 ms
    assert disk.write_iops == pytest.approx(100.0)
    assert disk.write_latency_s == pytest.approx(0.3 / 1500)
    assert disk.idle_ratio == pytest.approx(0.4)
    assert disk.queue_length == 7
    assert disk.read_bytes_s == pytest.approx(65536.0)
    assert disk.split_iops == pytest.approx(3.0)
    assert disk.drives == ("E:",)
    assert (disk.lun, disk.paths, disk.q_eff) == ("/vol/sql_data/lun0", 4, 128)  # MPIO paths by serial
    [lat] = [m for m in snap.metrics if m.name == "sanlens_host_disk_latency_seconds_total"]
    read_lat = {v[0][-1]: v[1] for v in lat.samples if v[0][1] == "1"}["read"]
    assert read_lat == pytest.approx((2**32 + 35_032_704) / F)  # unwrapped, monotonic
    [ops] = [m for m in snap.metrics if m.name == "sanlens_host_disk_ops_total"]
    assert {v[0][-1]: v[1] for v in ops.samples if v[0][1] == "1"}["read"] == 2**32 + 2000


def test_winrm_bad_output_is_a_parse_error() -> None:
    src = WinRMSource(
        HostTarget(name="h", source="winrm", url="https://h:5986/wsman"),
        FakeTransport(["not json", json.dumps({"physical": []})]),
    )
    with pytest.raises(SourceError) as e:
        src.poll()
    assert e.value.reason == "parse"
    with pytest.raises(SourceError, match="no PhysicalDisk"):
        src.poll()


def test_missing_pywinrm_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def fake_import(name: str, *a: object, **kw: object) -> object:
        if name == "winrm":
            raise ImportError("no winrm")
        return real_import(name, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(SanlensError, match=r"sanlens\[winrm\]"):
        WinRMSource(HostTarget(name="h", source="winrm", url="https://h:5986/wsman"))
