"""`sanlens analyze` says what it could judge: "nothing could be evaluated" is never "no diagnosis fired"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import fixture_path, pinned_copy

from perfmon_logs import disk_columns, write_log
from sanlens.cli import main

DATA = Path(__file__).parents[1] / "data"
T0 = 1_740_909_600.0  # 2025-03-02 10:00:00 UTC


def analyze(capsys: pytest.CaptureFixture[str], fmt: str, *files: Path) -> tuple[int, str, str]:
    rc = main(["analyze", *map(str, files), "--format", fmt, "--quiet"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def total_only(tmp_path: Path) -> Path:
    cols = disk_columns("SQL01", "_Total", ("Avg. Disk sec/Read", "Disk Reads/sec"))
    return write_log(tmp_path / "total.csv", cols, [(T0 + 15 * i, [0.5, 100.0]) for i in range(5)])


def test_a_total_only_log_judges_nothing_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = total_only(tmp_path)
    rc, out, _ = analyze(capsys, "json", log)
    doc = json.loads(out)
    assert rc == 0 and doc["evaluated"] is False and doc["diagnoses"] == []
    st = doc["inputs"][0]["status"]
    assert st["state"] == "nothing judged" and st["evaluated"] == []
    assert any("_Total" in s for s in st["skipped"])
    assert set(st["not_evaluated"]) >= {"latency_slo", "san_oversubscription", "host_queue_limited"}
    _, text, _ = analyze(capsys, "text", log)
    assert "nothing could be evaluated" in text and "none fired" not in text
    _, page, _ = analyze(capsys, "html", log)
    assert "Nothing could be evaluated" in page and "No diagnosis fired" not in page


def test_a_log_with_judged_disks_that_are_healthy_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [(T0 + 15 * i, [100.0, 10.0, 0.002, 0.001, 80.0, 1.0]) for i in range(6)]
    log = write_log(tmp_path / "ok.csv", disk_columns("SQL01", "1 E:"), rows)
    rc, out, _ = analyze(capsys, "json", log)
    doc = json.loads(out)
    assert rc == 0 and doc["evaluated"] is True and doc["diagnoses"] == []
    st = doc["inputs"][0]["status"]
    assert st["state"] == "judged"
    assert {"latency_slo", "san_oversubscription", "host_queue_limited"} <= set(st["evaluated"])
    assert st["analysis_intervals"] == 6  # one per row: a short log is judged as live would
    _, page, _ = analyze(capsys, "html", log)
    assert "No diagnosis fired" in page and "Nothing could be evaluated" not in page


def test_an_unreadable_input_keeps_its_error_in_json_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(
        '"(PDH-CSV 4.0) (UTC)(0)","\\\\H\\PhysicalDisk(1 E:)\\Disk Reads/sec"\n"01/01/2024 00:00:00.000","x"\n'
    )
    good = DATA / "perfmon" / "relog_sql01.csv"
    rc, out, err = analyze(capsys, "json", bad, good)
    assert rc == 2 and f"{bad}:2:2" in err
    doc = json.loads(out)
    st = {i["path"]: i["status"] for i in doc["inputs"]}
    assert st[str(bad)]["state"] == "error" and st[str(bad)]["errors"][0].startswith(
        f"{bad}:2:2: not a number"
    )
    assert st[str(good)]["state"] == "judged"
    rc, page, _ = analyze(capsys, "html", bad, good)
    assert rc == 2 and f"{bad}:2:2: not a number" in page and "could not be read" in page


def test_a_blg_renamed_to_csv_gets_the_relog_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "sql01.csv"
    f.write_bytes(b"\x11\x00\x00\x00\x00\x00\x00\x00" + bytes(range(256)) * 8)
    rc, out, err = analyze(capsys, "json", f)
    assert rc == 2 and "unrecognised" not in err
    assert "relog sql01.blg -f csv -o sql01.csv" in err
    assert "relog" in json.loads(out)["inputs"][0]["status"]["errors"][0]


def test_ontap_captures_whose_rows_were_all_skipped_judge_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    # the second poll first: every counter goes backwards, so every row is skipped
    a = fixture_path("ontap/restperf/volume-rows-2.json")
    b = fixture_path("ontap/restperf/volume-rows-1.json")
    rc = main(["analyze", str(a), str(b), "--interval", "60", "--format", "json", "--quiet"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["series"] == [] and doc["evaluated"] is False
    for i in doc["inputs"]:
        assert i["status"]["state"] == "nothing judged"
        assert any("every row was skipped" in s for s in i["status"]["skipped"])
    rc = main(["analyze", str(b), str(a), "--interval", "60", "--format", "json", "--quiet"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["evaluated"] is True and doc["inputs"][0]["status"]["state"] == "judged"


def test_text_lists_ontap_series_under_their_own_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lun = DATA / "ontap" / "lun-statistics-show-raw-samples.txt"  # 10:00 .. 10:02
    sysstat = pinned_copy(DATA / "ontap" / "sysstat-M.txt", tmp_path, T0 + 240)  # untimed: ends 10:04
    rc, text, _ = analyze(capsys, "text", lun, sysstat)
    assert rc == 0 and "counters: None" not in text
    lun_part, sysstat_part = text.split(str(sysstat) + "  (", 1)
    assert "lun(/vol/sqldata/lun0)\\average_read_latency" in lun_part
    assert "domain_busy[kahuna]" in sysstat_part and "lun(" not in sysstat_part.split("Diagnoses", 1)[0]
