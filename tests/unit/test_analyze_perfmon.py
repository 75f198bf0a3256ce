"""`sanlens analyze` on our small PerfMon sample logs: JSON shape and statistics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sanlens.cli import main

DATA = Path(__file__).parents[1] / "data" / "perfmon"


def _analyze_json(capsys: pytest.CaptureFixture[str], *files: Path) -> dict:
    rc = main(["analyze", "--format", "json", *map(str, files)])
    out = capsys.readouterr().out
    assert rc == 0
    return json.loads(out)


def _series(doc: dict, counter_path: str) -> dict:
    [s] = [s for s in doc["series"] if s["path"] == counter_path]
    return s


def test_relog_csv_summary(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _analyze_json(capsys, DATA / "relog_sql01.csv")
    [inp] = doc["inputs"]
    assert inp["kind"] == "perfmon-csv"
    assert inp["hosts"] == ["SQL01"]  # SQL01 and sql01 are one host
    assert inp["samples"] == 4 and inp["counters"] == 8
    # 09:00:00 and 09:00:45 Pacific Standard Time (bias 480 minutes) in UTC
    assert (inp["start"], inp["end"]) == ("2024-01-15T17:00:00Z", "2024-01-15T17:00:45Z")
    assert len(doc["series"]) == 8
    lat = _series(doc, r"\\SQL01\PhysicalDisk(1 E:)\Avg. Disk sec/Read")
    # first row is " " (no sample); the three values 0.012, 0.020, 0.016
    assert lat["samples"] == 3
    assert lat["min"] == pytest.approx(0.012) and lat["max"] == pytest.approx(0.020)
    assert lat["mean"] == pytest.approx((0.012 + 0.020 + 0.016) / 3)
    assert (lat["host"], lat["object"], lat["instance"], lat["counter"]) == (
        "SQL01",
        "PhysicalDisk",
        "1 E:",
        "Avg. Disk sec/Read",
    )
    q = _series(doc, r"\\SQL01\PhysicalDisk(1 E:)\Current Disk Queue Length")
    assert q["samples"] == 4 and q["mean"] == pytest.approx((3 + 4 + 6 + 2) / 4)
    net = _series(doc, r"\\SQL01\Network Interface(Intel(R) Ethernet 10G, Port #2)\Bytes Total/sec")
    assert net["samples"] == 2 and net["mean"] == pytest.approx(2000.0)  # "" cell is no sample
    idle = _series(doc, r"\\SQL01\PhysicalDisk(1 E:)\% Idle Time")
    assert (idle["min"], idle["max"]) == (35.5, 60.0)


def test_tsv_and_typeperf_together(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _analyze_json(capsys, DATA / "perfmon_fs02.tsv", DATA / "typeperf_web03.csv")
    kinds = [i["kind"] for i in doc["inputs"]]
    assert kinds == ["perfmon-tsv", "perfmon-csv"]
    tsv, typeperf = doc["inputs"]
    assert tsv["start"] == "2023-12-31T22:59:59.500Z"  # bias -60: one hour earlier in UTC
    assert typeperf["samples"] == 2  # the console trailers are not samples
    rd = _series(doc, r"\\FS02\LogicalDisk(C:\mount\data)\Avg. Disk sec/Read")
    assert rd["instance"] == r"C:\mount\data" and rd["samples"] == 2 and rd["mean"] == pytest.approx(0.002)
    mem = _series(doc, r"\\WEB03\Memory\Available MBytes")
    assert mem["instance"] == "" and mem["mean"] == pytest.approx((2048 + 2040) / 2)


def test_column_without_any_sample_has_null_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "blank.csv"
    p.write_text(
        '"(PDH-CSV 4.0) (UTC)(0)","\\\\H\\Memory\\Available MBytes"\n"01/01/2024 00:00:00.000"," "\n'
    )
    doc = _analyze_json(capsys, p)
    [s] = doc["series"]
    assert s["samples"] == 0 and s["min"] is None and s["mean"] is None


def test_text_format_is_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(DATA / "relog_sql01.csv")]) == 0
    out = capsys.readouterr().out
    assert "samples" in out and "mean" in out
    line = next(x for x in out.splitlines() if "Avg. Disk sec/Read" in x)
    cells = line.split()
    # seconds per read, printed in ms with its unit: 0.012, 0.020 and 0.016 s
    assert cells[-7:-2] == ["ms", "3", "12", "20", "16"]
    # p95 and p99 of three samples are the largest (nearest rank), within the sketch's 1 %
    assert float(cells[-2]) == pytest.approx(20, rel=0.01) and float(cells[-1]) == pytest.approx(20, rel=0.01)
    assert "e+" not in out and "e-0" not in out, "no scientific notation"


def test_bad_file_reports_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "bad.csv"
    p.write_text(
        '"(PDH-CSV 4.0) (UTC)(0)","\\\\H\\Memory\\Available MBytes"\n"01/01/2024 00:00:00.000","abc"\n'
    )
    assert main(["analyze", "--format", "json", str(p)]) == 2
    captured = capsys.readouterr()
    assert "bad.csv:2:2" in captured.err and "not a number" in captured.err
    doc = json.loads(captured.out)
    assert doc["series"] == [] and doc["diagnoses"] == [] and doc["evaluated"] is False
    [entry] = doc["inputs"]  # the failed input stays in the report, with its FILE:LINE:COLUMN error
    assert entry["status"]["state"] == "error"
    assert entry["status"]["errors"] == [next(x[7:] for x in captured.err.splitlines() if "bad.csv:2:2" in x)]


def test_blg_is_refused_with_relog_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "log.blg"
    p.write_bytes(b"\x00binary")
    assert main(["analyze", str(p)]) == 2
    assert "relog log.blg -f csv -o log.csv" in capsys.readouterr().err


def test_unknown_input_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("hello\n")
    assert main(["analyze", str(p)]) == 2
    assert "unrecognised input" in capsys.readouterr().err
