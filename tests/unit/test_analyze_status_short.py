"""`sanlens analyze` says why it could not judge: a capture too short to sustain a finding, the
diagnoses of the array's own state on a host log, an ONTAP capture of one sample; and a finding
ends where its condition last held, not where the exit window let it go."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfmon_logs import disk_columns, write_log
from sanlens.cli import main

DATA = Path(__file__).parents[1] / "data"
T0 = 1_740_909_600.0  # 2025-03-02 10:00:00 UTC
ARRAY_STATE = ("lun_not_online", "fc_port_down", "disk_failed", "aggregate_degraded")

# One `iostat -xt` report of a disk at 900 ms writes and 100 % busy (sysstat 12 columns).
IOSTAT_ONE = """Linux 5.14.0-284.el9.x86_64 (db01) \t03/02/2025 \t_x86_64_\t(8 CPU)

03/02/2025 10:00:00 AM
Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz  aqu-sz  %util
sdb             10.00     80.00     0.00   0.00    5.00     8.00  200.00   1600.00     0.00   0.00  900.00     8.00  180.00 100.00

"""
# One interval of `sar -dp` (sysstat 11 columns): 900 ms per I/O, 100 % busy.
SAR_ONE = """Linux 3.10.0-957.27.2.el7.x86_64 (db02)  03/02/2025  _x86_64_  (4 CPU)

10:00:00 AM       DEV       tps  rd_sec/s  wr_sec/s  avgrq-sz  avgqu-sz     await     svctm     %util
10:01:00 AM       sdb    210.00    160.00   3200.00     16.00    189.00    900.00      4.76    100.00

"""


def run(capsys: pytest.CaptureFixture[str], fmt: str, *files: Path) -> tuple[int, str]:
    rc = main(["analyze", *map(str, files), "--format", fmt, "--quiet"])
    return rc, capsys.readouterr().out


def status(capsys: pytest.CaptureFixture[str], *files: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    rc, out = run(capsys, "json", *files)
    assert rc == 0
    doc = json.loads(out)
    return doc, doc["inputs"][0]["status"]


def test_one_iostat_report_says_a_finding_needs_two_intervals_and_what_to_capture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "db01-iostat.txt"
    f.write_text(IOSTAT_ONE)
    doc, st = status(capsys, f)
    assert doc["diagnoses"] == [] and st["analysis_intervals"] == 1
    assert st["intervals_needed"] == 2
    assert "too short to sustain a finding: 1 interval, and a finding must hold for at least 2" in st["note"]
    assert "capture 20 minutes or more, e.g. `iostat -dxt 60 30`" in st["note"]
    _, text = run(capsys, "text", f)
    assert "note: too short to sustain a finding" in text and "iostat -dxt 60 30" in text
    assert "judged over 1 interval (one per row)" in text
    assert "none could fire: every input judged was too short to sustain a finding" in text
    assert "none fired on the subjects" not in text
    _, page = run(capsys, "html", f)
    assert "too short to sustain a finding" in page


def test_one_sar_interval_says_the_same_with_the_sar_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "db02-sar.txt"
    f.write_text(SAR_ONE)
    doc, st = status(capsys, f)
    assert doc["inputs"][0]["kind"] == "linux-sar" and st["analysis_intervals"] == 1
    assert st["intervals_needed"] == 2 and "too short to sustain a finding: 1 interval" in st["note"]
    assert "`sar -dp 60 30`" in st["note"]


def _slow_log(path: Path, rows: int, slow: int | None = None) -> Path:
    """A disk logged every 15 s, reads and writes at 200 ms for the first ``slow`` rows (all by
    default), 2 ms after; 90 % idle throughout."""
    slow = rows if slow is None else slow
    data = [
        (T0 + 15.0 * i, [500.0, 100.0, lat, lat, 90.0, 2.0])
        for i in range(rows)
        for lat in [0.2 if i < slow else 0.002]
    ]
    return write_log(path, disk_columns("SQL01", "1 E:"), data)


def test_a_one_row_perfmon_log_says_it_is_too_short_and_a_two_row_one_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, st = status(capsys, _slow_log(tmp_path / "one.csv", 1))
    assert doc["diagnoses"] == [] and st["intervals_needed"] == 2
    assert "too short to sustain a finding: 1 interval, and a finding must hold for at least 2" in st["note"]
    assert '`typeperf "\\PhysicalDisk(*)\\*" -si 15 -sc 120 -f CSV -o disks.csv`' in st["note"]
    doc, st = status(capsys, _slow_log(tmp_path / "two.csv", 2))
    assert doc["diagnoses"] and "intervals_needed" not in st and "too short" not in st.get("note", "")


def test_array_state_diagnoses_on_a_host_log_say_they_read_the_arrays_inventory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    iostat = tmp_path / "db01-iostat.txt"
    iostat.write_text(IOSTAT_ONE)
    for f in (_slow_log(tmp_path / "sql01.csv", 4), DATA / "perfmon" / "relog_sql01.csv", iostat):
        _, st = status(capsys, f)
        for did in ARRAY_STATE:
            why = st["not_evaluated"][did]
            assert "no disk had the I/O" not in why
            assert "state in the array's inventory (ONTAP REST" in why, why
    _, st = status(capsys, iostat)
    assert st["not_evaluated"]["lun_not_online"] == (
        "judges each LUN's state in the array's inventory (ONTAP REST, polled by `sanlens serve`), "
        "which neither a host log nor a counter capture carries"
    )


def test_a_one_sample_capture_says_rates_need_two_captures(capsys: pytest.CaptureFixture[str]) -> None:
    doc, st = status(capsys, DATA / "ontap" / "real" / "wafl-two-nodes.txt")
    assert doc["evaluated"] is False and st["state"] == "nothing judged"
    why = st["skipped"][-1]
    assert why.startswith(
        "no counter could be cooked from this capture: it holds one sample of wafl, and rates and averages "
        "need two captures"
    ), why


def test_a_finding_ends_at_the_last_interval_its_condition_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 30 slow rows (10:00:00 .. 10:07:15), then 50 healthy ones: latency_slo's windows are 300 s
    # (its own, the log being long enough), so it is still up for 5 minutes after the last slow row
    rc, out = run(capsys, "json", _slow_log(tmp_path / "sql01.csv", 80, slow=30))
    assert rc == 0
    found = {d["id"]: d for d in json.loads(out)["diagnoses"]}
    slo = found["latency_slo"]
    assert slo["severity"] == "critical" and slo["active_at_end"] is False
    assert (slo["since"], slo["until"]) == ("2025-03-02T10:00:00Z", "2025-03-02T10:07:15Z")


def test_two_ontap_captures_are_one_interval_and_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (DATA / "ontap" / "lun-statistics-show-raw-samples.txt").read_text().splitlines(keepends=True)
    two = tmp_path / "lun-2.txt"
    two.write_text("".join(lines[:37]))  # its first two captures, 10:00 and 10:01
    doc, st = status(capsys, two)
    assert doc["inputs"][0]["samples"] == 2 and st["state"] == "judged"
    assert st["intervals_needed"] == 2 and "too short to sustain a finding: 1 interval" in st["note"]
    assert "`statistics show -object lun -raw` once a minute, 30 times" in st["note"]
    _, st = status(capsys, DATA / "ontap" / "lun-statistics-show-raw-samples.txt")  # three: two intervals
    assert "intervals_needed" not in st and "too short" not in st.get("note", "")
