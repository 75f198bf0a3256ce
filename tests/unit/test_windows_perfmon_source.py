"""`source: perfmon` follows the newest rows of a log being written; mapping rules."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sanlens.config import HostDiskMapping, HostTarget
from sanlens.errors import SourceError
from sanlens.hosts.mapping import normalize_drive, resolve
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory, LunIdentity

HDR = (
    '"(PDH-CSV 4.0) (UTC)(0)","\\\\SQL01\\PhysicalDisk(1 E:)\\Disk Reads/sec",'
    '"\\\\SQL01\\PhysicalDisk(1 E:)\\Avg. Disk sec/Read","\\\\SQL01\\PhysicalDisk(1 E:)\\% Idle Time",'
    '"\\\\SQL01\\PhysicalDisk(1 E:)\\Current Disk Queue Length","\\\\SQL01\\PhysicalDisk(_Total)\\Disk Reads/sec",'
    '"\\\\SQL01\\Physikalischer Datentr\\u00e4ger(1 E:)\\Lesevorg\\u00e4nge/s",'
    '"\\\\SQL01\\PhysicalDisk(1 E:)\\Disk Queue Weirdness"\r\n'
)


def test_follows_newest_complete_row(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    p = tmp_path / "sql01.csv"
    p.write_text(
        HDR + '"01/15/2024 09:00:00.000"," "," "," ","1"," "," "," "\r\n'
        '"01/15/2024 09:00:15.000","200","0.010","40","3","200","1","1"\r\n',
        newline="",
    )
    t = HostTarget(
        name="sql01",
        source="perfmon",
        files=[str(p)],
        disks=[HostDiskMapping(disk="1", cluster="c1", svm="svm1", lun="/vol/sql_data/lun0")],
    )
    src = make_host_source(t)
    with caplog.at_level(logging.WARNING):
        s1 = src.poll()
    assert "not recognised" in caplog.text  # the unknown PhysicalDisk counter is reported, not fatal
    assert s1.view is not None
    [d] = s1.view.disks
    assert (d.disk, d.drives, d.read_iops, d.read_latency_s, d.idle_ratio, d.queue_length) == (
        "1",
        ("E:",),
        200.0,
        0.010,
        0.40,
        3.0,
    )
    assert (d.lun, d.volume) == ("/vol/sql_data/lun0", "sql_data")
    # a new row 15 s later, plus a half-written one that must be ignored
    with open(p, "a", newline="") as f:
        f.write('"01/15/2024 09:00:30.000","100","0.020","60","5","100","1","1"\r\n"01/15/2024 09:00:4')
    s2 = src.poll()
    [d] = s2.view.disks  # type: ignore[union-attr]
    assert (d.read_iops, d.read_latency_s, d.queue_length) == (100.0, 0.020, 5.0)
    assert s2.view.interval_s == 15.0  # type: ignore[union-attr]
    ops = {v[0][-1]: v[1] for m in s2.metrics if m.name == "sanlens_host_disk_ops_total" for v in m.samples}
    lat = {
        v[0][-1]: v[1]
        for m in s2.metrics
        if m.name == "sanlens_host_disk_latency_seconds_total"
        for v in m.samples
    }
    assert ops["read"] == pytest.approx(100 * 15)  # integrated: 100 IOPS x 15 s
    assert lat["read"] == pytest.approx(0.020 * 100 * 15)


def test_missing_file_is_a_source_error(tmp_path: Path) -> None:
    src = make_host_source(HostTarget(name="h", source="perfmon", files=[str(tmp_path / "nope.csv")]))
    with pytest.raises(SourceError) as e:
        src.poll()
    assert e.value.reason == "io"


def test_resolve_precedence_and_overrides() -> None:
    d = LunDirectory()
    d.publish("c1", [LunIdentity("c1", "svm1", "v1", "/vol/v1/lun0", "SERIAL000001")])
    t = HostTarget(
        name="h",
        url="http://x",
        queue_depth=16,
        paths=2,
        data_class="log",
        disks=[HostDiskMapping(disk="3", queue_depth=128)],
    )
    m = resolve(t, d, "1", ("F:",), " serial000001 ")
    assert (m.mapping, m.lun, m.volume, m.queue_depth, m.paths, m.data_class) == (
        "serial",
        "/vol/v1/lun0",
        "v1",
        16,
        2,
        "log",
    )
    m = resolve(t, d, "3", (), "UNKNOWN", observed_paths=4)
    assert (m.mapping, m.lun, m.queue_depth, m.paths, m.lun_serial) == ("none", "", 128, 4, "UNKNOWN")
    assert normalize_drive("e") == "E:" and normalize_drive("e:\\") == "E:"


def test_follows_a_logicaldisk_only_log_per_volume(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A log of LogicalDisk counters only: each volume is a disk, mapped by its drive letter."""
    counters = ("Disk Reads/sec", "Avg. Disk sec/Read", "% Idle Time")
    cols = [
        f"\\\\SQL01\\LogicalDisk({v})\\{c}"
        for v in ("H:", "_Total", "HarddiskVolume2", "X:")
        for c in counters
    ]
    hdr = '"(PDH-CSV 4.0) (UTC)(0)",' + ",".join(f'"{c}"' for c in cols) + "\r\n"
    row = ["60", "1.2", "85", "600", "1.2", "85", "600", "0.001", "10", "40", "0.9", "80"]
    p = tmp_path / "sql01.csv"
    p.write_text(hdr + '"01/15/2024 09:00:00.000",' + ",".join(f'"{v}"' for v in row) + "\r\n", newline="")
    t = HostTarget(
        name="sql01",
        source="perfmon",
        files=[str(p)],
        disks=[HostDiskMapping(drive="h", cluster="c1", svm="svm1", lun="/vol/sql_data/lun0")],
    )
    with caplog.at_level(logging.WARNING):
        s = make_host_source(t).poll()
    assert "HarddiskVolume2" in caplog.text  # left out, and said so
    assert s.view is not None
    disks = {d.disk: d for d in s.view.disks}
    assert set(disks) == {"H:", "X:"}  # neither _Total nor the volume without a letter
    h, x = disks["H:"], disks["X:"]
    assert (h.drives, h.read_iops, h.read_latency_s, h.idle_ratio) == (("H:",), 60.0, 1.2, 0.85)
    assert (x.drives, x.read_iops, x.read_latency_s, x.idle_ratio) == (("X:",), 40.0, 0.9, 0.80)
    assert (h.lun, x.lun) == ("/vol/sql_data/lun0", "")
