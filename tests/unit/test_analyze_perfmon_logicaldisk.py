"""`sanlens analyze` judges LogicalDisk volumes when a log has no per-disk PhysicalDisk counters.

SQL Server teams log ``\\LogicalDisk(H:)\\Avg. Disk sec/Read``; the over-subscription case this
product is built on names drives H:, I: and X:. Where PhysicalDisk counters are there too, a
PhysicalDisk's counters are the sums of its volumes', so only the PhysicalDisks are judged.
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest

from perfmon_logs import (
    SQL_COUNTERS,
    SQL_VOLUMES,
    disk_columns,
    sql_volume_row,
    sql_volumes_log,
    volume_columns,
    write_log,
)
from sanlens.analyze.perfmon_summary import summarize
from sanlens.cli import main
from sanlens.hosts.mapping import DiskMapping
from sanlens.hosts.perfmon import PerfmonLog
from sanlens.hosts.perfmon_disks import select_disks

ONTAP = Path(__file__).parents[1] / "data" / "ontap"
LUN = ONTAP / "lun-statistics-show-raw-samples.txt"  # /vol/sqldata/lun0 of svm1, 10:00 .. 10:02
T0 = 1_740_909_600.0  # 2025-03-02 10:00:00 UTC, the LUN capture's first sample


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    rc = main(["analyze", *argv, "--format", "json", "--quiet"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    return json.loads(cap.out)


def findings(doc: dict) -> dict[tuple[str, str], dict]:
    """(diagnosis, disk) -> finding."""
    return {(d["id"], d["subject"]["disk"]): d for d in doc["diagnoses"]}


def no_mapping(host: str, disk: str, drives: tuple[str, ...]) -> DiskMapping:
    return DiskMapping()


def logged(path: Path) -> dict[str, list[float]]:
    """Every column of a log by counter path, read with the csv module: no sanlens code involved."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return {name: [float(r[k]) for r in rows[1:]] for k, name in enumerate(rows[0]) if k}


def test_a_logicaldisk_only_log_is_judged_per_volume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = sql_volumes_log(tmp_path / "sql01.csv")
    doc = run_json(capsys, str(log))
    st = doc["inputs"][0]["status"]
    assert st["state"] == "judged" and doc["evaluated"] is True
    assert {"latency_slo", "san_oversubscription", "host_queue_limited"} <= set(st["evaluated"])
    assert st["note"] == "judged 3 LogicalDisk volumes (no PhysicalDisk counters in the log): H:, I:, X:"
    assert any("HarddiskVolume1" in s and "not judged" in s for s in st["skipped"])
    found = findings(doc)
    assert {disk for _id, disk in found} == set(SQL_VOLUMES)  # neither _Total nor HarddiskVolume1
    for v in SQL_VOLUMES:
        slo, over = found[("latency_slo", v)], found[("san_oversubscription", v)]
        assert slo["severity"] == "critical"
        assert over["severity"] == "warning"  # host-only: no utilization evidence
        assert over["subject"]["host"] == "SQL01"
        ev = over["evidence"]
        assert ev["host_read_latency_seconds"] == pytest.approx(1.2)
        assert ev["host_write_latency_seconds"] == pytest.approx(0.9)
        assert ev["host_idle_ratio"] == pytest.approx(0.85)
        assert ev["host_latency_seconds"] == pytest.approx(max(1.2, 0.9))
    # 180 IOPS over the three volumes, whichever row each finding's evidence is from
    assert sum(found[("san_oversubscription", v)]["evidence"]["host_iops"] for v in SQL_VOLUMES) == 180
    assert main(["analyze", str(log), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "note: judged 3 LogicalDisk volumes (no PhysicalDisk counters in the log)" in text


def test_volume_values_match_the_logged_numbers(tmp_path: Path) -> None:
    log = sql_volumes_log(tmp_path / "sql01.csv", rows=12)
    s = summarize(log, step=30.0)  # two rows per interval: rates averaged, latencies IOPS-weighted
    assert s.intervals is not None
    assert {(h, d, dr) for h, d, dr, _f in s.intervals.columns} == {("SQL01", v, (v,)) for v in SQL_VOLUMES}
    cols = logged(log)
    snaps = list(s.intervals.snapshots(no_mapping))
    assert len(snaps) == 6
    for k, snap in enumerate(snaps):
        assert snap.view is not None
        rows = slice(2 * k, 2 * k + 2)
        by_disk = {d.disk: d for d in snap.view.disks}
        assert set(by_disk) == set(SQL_VOLUMES)
        for v, d in by_disk.items():
            col = {c: cols[f"\\\\SQL01\\LogicalDisk({v})\\{c}"][rows] for c in SQL_COUNTERS}
            reads, writes = col["Disk Reads/sec"], col["Disk Writes/sec"]
            assert d.read_iops == pytest.approx(statistics.fmean(reads))
            assert d.write_iops == pytest.approx(statistics.fmean(writes))
            rl = sum(r * x for r, x in zip(reads, col["Avg. Disk sec/Read"], strict=True)) / sum(reads)
            wl = sum(w * x for w, x in zip(writes, col["Avg. Disk sec/Write"], strict=True)) / sum(writes)
            assert (d.read_latency_s, d.write_latency_s) == (pytest.approx(rl), pytest.approx(wl))
            assert d.idle_ratio == pytest.approx(statistics.fmean(col["% Idle Time"]) / 100)
            assert d.queue_length == pytest.approx(statistics.fmean(col["Current Disk Queue Length"]))
            assert d.read_bytes_s == pytest.approx(statistics.fmean(col["Disk Read Bytes/sec"]))
            assert d.split_iops == pytest.approx(statistics.fmean(col["Split IO/Sec"]))
        # the host's total: three volumes' rows, not _Total's or HarddiskVolume1's ten-fold I/O
        row0, row1 = sql_volume_row(2 * k), sql_volume_row(2 * k + 1)
        want = 3 * ((row0[0] + row0[1]) + (row1[0] + row1[1])) / 2
        assert sum((d.read_iops or 0) + (d.write_iops or 0) for d in snap.view.disks) == pytest.approx(want)
        assert want == 180


def test_total_and_unlettered_volumes_are_left_out(tmp_path: Path) -> None:
    log = sql_volumes_log(
        tmp_path / "sql01.csv", rows=2, extra=("_Total", "HarddiskVolume1", "HarddiskVolume12")
    )
    with PerfmonLog(log) as p:
        sel = select_disks(p.header)
    assert {d for d, _dr, _f in sel.columns.values()} == set(SQL_VOLUMES)
    assert sel.object_of("sql01") == "LogicalDisk" and sel.hosts["SQL01"].disks == list(SQL_VOLUMES)
    [note] = sel.notes
    assert "HarddiskVolume1, HarddiskVolume12" in note
    assert sel.unknown == []  # % Free Space is a space counter, expected in a log, not "not used"
    # a _Total-only LogicalDisk log judges nothing and says why
    only = write_log(
        tmp_path / "total.csv",
        volume_columns("SQL01", "_Total"),
        [(T0 + 15 * i, [100.0] * 6) for i in range(3)],
    )
    s = summarize(only)
    assert not s.intervals


def test_total_only_logicaldisk_log_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(T0 + 15 * i, [0.5, 100.0]) for i in range(4)]
    log = write_log(
        tmp_path / "total.csv",
        volume_columns("SQL01", "_Total", ("Avg. Disk sec/Read", "Disk Reads/sec")),
        rows,
    )
    st = run_json(capsys, str(log))["inputs"][0]["status"]
    assert st["state"] == "nothing judged"
    assert any("LogicalDisk(_Total)" in s for s in st["skipped"])


def test_mixed_log_judges_the_physicaldisks_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PhysicalDisk "1 H:" and "2 I: X:" with the volumes on them: the disks, never their volumes again."""
    disk1 = [60.0, 20.0, 1.2, 0.9, 85.0, 2.0]
    disk2 = [120.0, 40.0, 1.2, 0.9, 85.0, 4.0]  # I: and X: together
    volume = [60.0, 20.0, 1.2, 0.9, 85.0, 2.0]
    cols = disk_columns("SQL01", "1 H:") + disk_columns("SQL01", "2 I: X:")
    vols = ("H:", "I:", "X:", "Y:", r"C:\MountPoints\Data", "_Total", "HarddiskVolume3")
    for v in vols:
        cols += volume_columns("SQL01", v)
    rows = [(T0 + 15 * i, disk1 + disk2 + volume * len(vols)) for i in range(6)]
    log = write_log(tmp_path / "mixed.csv", cols, rows)
    s = summarize(log)
    assert s.intervals is not None
    assert {(d, dr) for _h, d, dr, _f in s.intervals.columns} == {("1", ("H:",)), ("2", ("I:", "X:"))}
    for snap in s.intervals.snapshots(no_mapping):
        assert snap.view is not None
        by_disk = {d.disk: d for d in snap.view.disks}
        assert set(by_disk) == {"1", "2"}
        # the disk's own numbers: no volume added to them
        assert (by_disk["2"].read_iops, by_disk["2"].write_iops) == (120.0, 40.0)
        assert sum((d.read_iops or 0) + (d.write_iops or 0) for d in by_disk.values()) == 80 + 160
    doc = run_json(capsys, str(log))
    st = doc["inputs"][0]["status"]
    assert st["note"] == "judged 2 PhysicalDisks; LogicalDisk H:, I:, X: on them not judged again"
    [orphans] = [x for x in st["skipped"] if "none of the log's PhysicalDisk" in x]
    assert "Y:" in orphans and r"C:\MountPoints\Data" in orphans and "_Total" not in orphans
    assert {disk for _id, disk in findings(doc)} == {"1", "2"}


def test_physicaldisk_total_only_falls_back_to_the_volumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cols = disk_columns("SQL01", "_Total") + volume_columns("SQL01", "H:")
    rows = [(T0 + 15 * i, [600.0] * 6 + sql_volume_row(i)[:6]) for i in range(6)]
    st = run_json(capsys, str(write_log(tmp_path / "t.csv", cols, rows)))["inputs"][0]["status"]
    assert st["state"] == "judged"
    assert st["note"] == "judged 1 LogicalDisk volume (no per-disk PhysicalDisk counters in the log): H:"


def test_config_maps_volumes_to_luns_by_drive_letter_and_mount_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 10:00:00 .. 10:02:00, as the LUN capture
    log = sql_volumes_log(
        tmp_path / "sql01.csv", volumes=("H:", "I:", r"C:\MountPoints\Data"), rows=9, extra=()
    )
    cfg = tmp_path / "sanlens.yaml"
    cfg.write_text(
        "hosts:\n  - name: SQL01\n    source: perfmon\n    files: [sql01.csv]\n    disks:\n"
        "      - drive: 'H:'\n        svm: svm1\n        lun: /vol/sqldata/lun0\n"
        "      - drive: 'i'\n        svm: svm1\n        lun: /vol/sqllog/lun0\n"
        "      - drive: 'C:\\MountPoints\\Data\\'\n        svm: svm1\n        lun: /vol/sqlmp/lun0\n"
    )
    doc = run_json(capsys, str(log), str(LUN), "--config", str(cfg))
    found = findings(doc)
    lun_of = {disk: f["subject"].get("lun") for (_id, disk), f in found.items()}
    assert lun_of == {
        "H:": "/vol/sqldata/lun0",
        "I:": "/vol/sqllog/lun0",
        r"C:\MountPoints\Data": "/vol/sqlmp/lun0",
    }
    # H:'s LUN is in the capture: the joined signature (host >> LUN latency, idle disk) is critical
    joined = found[("san_oversubscription", "H:")]
    assert joined["severity"] == "critical"
    assert joined["evidence"]["host_to_array_latency_ratio"] >= 5
    # the others' LUNs were not captured: host-only, a warning
    assert found[("san_oversubscription", "I:")]["severity"] == "warning"


def test_each_host_of_a_log_is_judged_on_its_own_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Relogged from two hosts: SQL01 with PhysicalDisk counters, SQL02 with LogicalDisk ones only."""
    cols = disk_columns("SQL01", "1 H:") + volume_columns("SQL01", "H:") + volume_columns("SQL02", "H:")
    rows = [(T0 + 15 * i, sql_volume_row(i)[:6] * 3) for i in range(6)]
    log = write_log(tmp_path / "two.csv", cols, rows)
    s = summarize(log)
    assert s.intervals is not None
    assert {(h, d) for h, d, _dr, _f in s.intervals.columns} == {("SQL01", "1"), ("SQL02", "H:")}
    st = run_json(capsys, str(log))["inputs"][0]["status"]
    assert st["note"] == (
        "SQL01: judged 1 PhysicalDisk; LogicalDisk H: on it not judged again; "
        "SQL02: judged 1 LogicalDisk volume (no PhysicalDisk counters in the log): H:"
    )
