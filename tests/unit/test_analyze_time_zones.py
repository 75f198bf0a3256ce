"""`sanlens analyze`: inputs in different time zones, captures that date themselves, and a config
that names hosts or disks the inputs do not have."""

from __future__ import annotations

import calendar
import datetime as dt
import json
import re
from pathlib import Path

import pytest

from conftest import pinned_copy
from perfmon_logs import disk_columns, write_log
from sanlens.analyze.time_zones import localize, parse_zone
from sanlens.cli import main

DATA = Path(__file__).parents[1] / "data"
LUN = DATA / "ontap" / "lun-statistics-show-raw-samples.txt"
SYSSTAT = DATA / "ontap" / "sysstat-M.txt"
IOSTAT = DATA / "linux" / "constructed-fstrim-sysstat12-iostat-xt.txt"
T0 = calendar.timegm((2025, 3, 2, 10, 0, 0))  # the LUN capture's first Start-time, as printed
CONFIG = (
    "hosts:\n  - name: {host}\n    source: perfmon\n    files: [sql01.csv]\n    queue_depth: 16\n"
    "    paths: 2\n    disks:\n      - {key}: '{value}'\n        svm: svm1\n        lun: /vol/sqldata/lun0\n"
)
SYSSTAT_ROWS = SYSSTAT.read_text().splitlines()[1:]  # the header and rows, without the prompt line


def analyze(capsys: pytest.CaptureFixture[str], *argv: str, rc: int = 0) -> tuple[dict, str]:
    code = main(["analyze", *argv, "--format", "json", "--quiet"])
    cap = capsys.readouterr()
    assert code == rc, cap.err
    return (json.loads(cap.out) if cap.out else {}), cap.err


def found(doc: dict) -> dict[str, dict]:
    return {d["id"]: d for d in doc["diagnoses"]}


def pacific_log(path: Path) -> Path:
    """The slow SQL01 disk logged 10:00 .. 10:02 Pacific (18:00 .. 18:02 UTC), as the log says."""
    rows = [(T0 + 15.0 * i, [500.0, 100.0, 0.2, 0.2, 90.0, 2.0]) for i in range(9)]
    write_log(path, disk_columns("SQL01", "1 E:"), rows)
    path.write_text(
        path.read_text().replace("(Coordinated Universal Time)(0)", "(Pacific Standard Time)(480)")
    )
    return path


def config(tmp_path: Path, host: str = "SQL01", key: str = "disk", value: str = "1") -> str:
    cfg = tmp_path / "sanlens.yaml"
    cfg.write_text(CONFIG.format(host=host, key=key, value=value))
    return str(cfg)


# ------------------------------------------------------------------ zones
def test_inputs_hours_apart_say_so_and_the_zone_joins_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, cfg = str(pacific_log(tmp_path / "sql01.csv")), config(tmp_path)
    apart, err = analyze(capsys, log, str(LUN), "--config", cfg)
    assert found(apart)["san_oversubscription"]["severity"] == "warning"
    assert "warning: host and array inputs do not overlap in time, 8 h apart" in err
    assert f"give --tz=-08:00 (or --input-tz {LUN}=-08:00" in err
    for inp in apart["inputs"]:
        assert any("do not overlap in time, 8 h apart" in w for w in inp["status"]["warnings"])
    assert main(["analyze", log, str(LUN), "--config", cfg, "--format", "html", "--quiet"]) == 0
    assert "warning: host and array inputs do not overlap in time, 8 h apart" in capsys.readouterr().out
    for zone in (["--tz", "America/Los_Angeles"], ["--tz=-08:00"], ["--input-tz", f"{LUN}=UTC-8"]):
        joined, err = analyze(capsys, log, str(LUN), "--config", cfg, *zone)
        f = found(joined)["san_oversubscription"]
        assert f["severity"] == "critical" and "lun_latency_seconds" in f["evidence"], zone
        assert "overlap" not in err
        lun = next(i for i in joined["inputs"] if i["path"] == str(LUN))
        assert lun["start"] == "2025-03-02T18:00:00Z"
        assert lun["zone"] in ("America/Los_Angeles", "UTC-08:00")


def test_a_perfmon_log_keeps_its_own_zone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = str(pacific_log(tmp_path / "sql01.csv"))
    doc, err = analyze(capsys, log, "--input-tz", f"{log}=Europe/Berlin")
    assert doc["inputs"][0]["start"].startswith("2025-03-02T18:00:00")
    assert f"warning: {log}: carries its own time zone (the log's header): --input-tz is not applied" in err


def test_zone_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, err = analyze(capsys, str(LUN), "--tz", "Mars/Olympus", rc=2)
    assert "time zone 'Mars/Olympus' is not known" in err
    _, err = analyze(capsys, str(LUN), "--input-tz", "other.txt=UTC", rc=2)
    assert "other.txt: named by --input-tz or --input-start but not among the inputs" in err


def test_zone_arithmetic() -> None:
    la = parse_zone("America/Los_Angeles")
    assert localize(T0, la) == T0 + 8 * 3600  # 10:00 PST is 18:00 UTC
    assert localize(calendar.timegm((2025, 7, 1, 10, 0, 0)), la) == calendar.timegm((2025, 7, 1, 17, 0, 0))
    assert localize(T0, parse_zone("+05:30")) == T0 - 5.5 * 3600
    assert localize(T0, parse_zone("UTC")) == T0


def test_linux_text_is_moved_into_its_zone(capsys: pytest.CaptureFixture[str]) -> None:
    plain, _ = analyze(capsys, str(IOSTAT))
    moved, _ = analyze(capsys, str(IOSTAT), "--tz", "Asia/Kolkata")
    ends = [dt.datetime.fromisoformat(d["inputs"][0]["end"].replace("Z", "+00:00")) for d in (plain, moved)]
    assert (ends[0] - ends[1]).total_seconds() == 5.5 * 3600
    assert moved["inputs"][0]["zone"] == "Asia/Kolkata"


# ---------------------------------------------------------------- sysstat
def test_an_undated_sysstat_says_its_time_is_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sysstat = pinned_copy(SYSSTAT, tmp_path, T0 + 240)
    doc, err = analyze(capsys, str(sysstat))
    assert (
        f"warning: {sysstat}: the capture prints no date: its 4 samples are placed to end at the file's "
        f"modification time, 2025-03-02T10:04:00Z; if it was taken at another time, pass --input-start "
        f"{sysstat}=YYYY-MM-DDTHH:MM:SS"
    ) in err
    assert any("prints no date" in w for w in doc["inputs"][0]["status"]["warnings"])
    # --input-start places it, in --tz's zone
    doc, err = analyze(
        capsys, str(sysstat), "--input-start", f"{sysstat}=2025-03-02 02:01:37", "--tz", "America/Los_Angeles"
    )
    assert "prints no date" not in err
    assert doc["inputs"][0]["start"] == "2025-03-02T10:01:37Z"
    assert doc["inputs"][0]["end"] == "2025-03-02T10:01:40Z"


@pytest.mark.parametrize(
    ("date_line", "tz", "first"),
    [
        # cluster date show: the node's time with its offset; --tz does not move it
        ("cluster1-01   3/2/2025 02:01:00 -08:00 America/Los_Angeles", "Europe/Berlin", "10:01:01"),
        # nodeshell date: a zone abbreviation sanlens does not read; --tz names it
        ("Sun Mar  2 02:01:00 PST 2025", "America/Los_Angeles", "10:01:01"),
        ("Sun Mar  2 10:01:00 GMT 2025", None, "10:01:01"),
    ],
)
def test_a_sysstat_is_dated_by_its_date_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], date_line: str, tz: str | None, first: str
) -> None:
    path = tmp_path / "cap.txt"
    lines = ["cluster1::> cluster date show", "Node      Date                      Time zone", "-" * 40]
    lines += [date_line, "cluster1::> node run -node cluster1-01 -command sysstat -M 1", *SYSSTAT_ROWS]
    path.write_text("\n".join(lines) + "\n")
    doc, err = analyze(capsys, str(path), *(["--tz", tz] if tz else []))
    assert "prints no date" not in err and "error" not in err
    assert doc["inputs"][0]["start"] == f"2025-03-02T{first}Z"
    f = found(doc)["cpu_domain_serial_bottleneck"]
    assert f["since"] == f"2025-03-02T{first}Z"


def test_a_sysstat_date_without_zone_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cap.txt"
    path.write_text("\n".join(["Sun Mar  2 02:01:00 PST 2025", "cluster1-01> sysstat -M 1", *SYSSTAT_ROWS]))
    _, err = analyze(capsys, str(path))
    assert f"{path}: dated by its date line 1, which names no zone: read as UTC; give its zone" in err


def test_sysstat_node_cluster_and_interval_come_from_its_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sysstat = pinned_copy(
        SYSSTAT, tmp_path, T0 + 240
    )  # its prompt: cluster1::> ... -node cluster1-01 "sysstat -M 1"
    doc, _ = analyze(capsys, str(sysstat))
    f = found(doc)["cpu_domain_serial_bottleneck"]
    assert f["subject"] == {"cluster": "cluster1", "node": "cluster1-01"}
    assert (f["since"], f["until"]) == ("2025-03-02T10:03:57Z", "2025-03-02T10:04:00Z")  # 1 s apart
    assert {s["instance"] for s in doc["series"]} == {"cluster1-01"}
    # --cluster still wins
    doc, _ = analyze(capsys, str(sysstat), "--cluster", "prod")
    assert found(doc)["cpu_domain_serial_bottleneck"]["subject"]["cluster"] == "prod"


def test_a_nodeshell_prompt_names_the_node_and_the_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "capture.txt"
    path.write_text("\n".join(["cluster1-02*> sysstat -c 4 -M 5", *SYSSTAT_ROWS]) + "\n")
    pinned = pinned_copy(path, tmp_path / "pinned", T0 + 240)
    doc, _ = analyze(capsys, str(pinned))
    assert {s["instance"] for s in doc["series"]} == {"cluster1-02"}
    assert doc["inputs"][0]["start"] == "2025-03-02T10:03:45Z"  # 4 samples 5 s apart
    assert found(doc)["cpu_domain_serial_bottleneck"]["subject"]["cluster"] == "offline"


# ---------------------------------------------------------------- config
def utc_log(path: Path) -> Path:
    rows = [(T0 + 15.0 * i, [500.0, 100.0, 0.2, 0.2, 90.0, 2.0]) for i in range(9)]
    return write_log(path, disk_columns("SQL01", "1 E:"), rows)


def test_a_config_host_that_matches_nothing_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(utc_log(tmp_path / "sql01.csv"))
    doc, err = analyze(capsys, log, str(LUN), "--config", config(tmp_path, host="sql1"))
    assert found(doc)["san_oversubscription"]["severity"] == "warning"
    text = (
        "config hosts[0] 'sql1' matches no host in the inputs (SQL01): did you mean 'SQL01'? "
        "Its 1 disk mapping(s) map nothing"
    )
    assert f"warning: {text}" in err
    assert text in doc["inputs"][0]["status"]["warnings"]
    # host names match case-insensitively, as in DNS and Windows
    doc, err = analyze(capsys, log, str(LUN), "--config", config(tmp_path, host="sql01"))
    assert found(doc)["san_oversubscription"]["severity"] == "critical"
    assert "config hosts" not in err


def test_a_config_drive_that_matches_nothing_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(utc_log(tmp_path / "sql01.csv"))
    doc, err = analyze(capsys, log, str(LUN), "--config", config(tmp_path, key="drive", value="Q:"))
    assert found(doc)["san_oversubscription"]["severity"] == "warning"
    text = (
        "config hosts[0] (SQL01) disks[0] drive 'Q:' matches no disk of SQL01 in the inputs (disks: 1 E:). "
        "It maps nothing: those disks are judged host-only"
    )
    assert f"warning: {text}" in err
    assert text in doc["inputs"][0]["status"]["warnings"]
    doc, err = analyze(capsys, log, str(LUN), "--config", config(tmp_path, key="drive", value="e"))
    assert found(doc)["san_oversubscription"]["severity"] == "critical" and "config hosts" not in err


def test_a_sysstat_dated_by_its_file_beside_older_host_data_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(utc_log(tmp_path / "sql01.csv"))  # 2025-03-02 10:00 .. 10:02
    sysstat = pinned_copy(SYSSTAT, tmp_path / "ontap", calendar.timegm((2026, 11, 27, 20, 0, 0)))
    _, err = analyze(capsys, log, str(sysstat))
    assert (
        "warning: host and array inputs do not overlap in time, 635 d 10 h apart: host "
        f"{log} 2025-03-02T10:00:00Z .. 2025-03-02T10:02:00Z, ONTAP {sysstat} 2026-11-27T19:59:57Z .. "
        f"2026-11-27T20:00:00Z; no host disk is joined to its data. {sysstat} is placed by the file's "
        f"modification time: pass --input-start {sysstat}=YYYY-MM-DDTHH:MM:SS (its first sample)"
    ) in err
    _, err = analyze(capsys, log, str(sysstat), "--input-start", f"{sysstat}=2025-03-02T10:00:30")
    assert "overlap" not in err


def test_iso_iostat_times_keep_their_own_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    iso = tmp_path / "db7-iostat.txt"
    text = IOSTAT.read_text()
    iso.write_text(re.sub(r"^03/02/25 (\d\d:\d\d:\d\d)$", r"2025-03-02T\1+0100", text, flags=re.M))
    plain, _ = analyze(capsys, str(iso))
    moved, err = analyze(capsys, str(iso), "--input-tz", f"{iso}=Asia/Kolkata")
    assert plain["inputs"][0]["end"] == moved["inputs"][0]["end"]
    assert f"{iso}: its times carry their own offset (S_TIME_FORMAT=ISO): --input-tz is not applied" in err
