"""`sanlens analyze` on Linux iostat/sar captures: read, timed, joined by the config, diagnosed."""

from __future__ import annotations

import calendar
import json
import os
from pathlib import Path

import pytest

from conftest import pinned_copy
from sanlens.cli import main

ROOT = Path(__file__).parents[1] / "data"
LINUX = ROOT / "linux"
LUN = ROOT / "ontap" / "lun-statistics-show-raw-samples.txt"  # /vol/sqldata/lun0 on svm1, 10:00-10:02
T0 = calendar.timegm((2025, 3, 2, 10, 0, 0))
HEADER = (
    "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm"
    " w_await wareq-sz  aqu-sz  %util"
)


def iostat_xt(path: Path, reports: int, r_await_ms: float, util: float, step: int = 15) -> Path:
    """`iostat -xtN <step>` of ora01 (sysstat 12 columns): the report since boot, then ``reports`` more."""
    lines = ["Linux 5.14.0-362.el9.x86_64 (ora01) \t03/02/25 \t_x86_64_\t(16 CPU)", ""]
    for i in range(reports + 1):
        t = T0 + step * (i - 1) if i else T0 - 3600
        hh, mm, ss = (t // 3600) % 24, (t // 60) % 60, t % 60
        lines += [f"03/02/25 {hh:02d}:{mm:02d}:{ss:02d}", HEADER]
        aqu = (500 * r_await_ms + 100 * 1.0) / 1000
        lines.append(
            f"mpatha         500.00   4000.00     0.00   0.00 {r_await_ms:7.2f}     8.00  100.00    800.00"
            f"     0.00   0.00    1.00     8.00 {aqu:7.2f} {util:6.2f}"
        )
        lines.append(
            "sda              2.00     16.00     0.00   0.00    0.40     8.00    3.00     24.00     0.00   0.00"
            "    0.60     8.00    0.00   0.20"
        )
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def mapped_config(tmp_path: Path) -> Path:
    """ora01's multipath map mpatha mapped statically to /vol/sqldata/lun0 (sysstat prints no WWID)."""
    cfg = tmp_path / "sanlens.yaml"
    cfg.write_text(
        "hosts:\n  - name: ora01\n    url: http://ora01:9100\n    disks:\n"
        "      - disk: mpatha\n        svm: svm1\n        lun: /vol/sqldata/lun0\n"
    )
    return cfg


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    rc = main(["analyze", *argv, "--format", "json", "--quiet"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    return json.loads(cap.out)


def test_every_capture_reads_and_names_its_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the captures without times (iostat without -t) end at their files' modification time
    files = [pinned_copy(p, tmp_path, T0) for p in sorted(LINUX.glob("*.txt"))]
    doc = run_json(capsys, *map(str, files))
    kinds = {Path(i["path"]).name: i["kind"] for i in doc["inputs"]}
    assert kinds == {p.name: "linux-sar" if "sar" in p.name else "linux-iostat" for p in files}
    for i in doc["inputs"]:
        assert i["status"]["state"] == "judged", i
        assert "host_path_loss" in i["status"]["not_evaluated"]
    untimed = {
        Path(i["path"]).name: i["end"]
        for i in doc["inputs"]
        if "modification time" in i["status"].get("note", "")
    }
    assert untimed == {
        name: "2025-03-02T10:00:00Z"
        for name in (
            "linux-kernel-2b8bd423614c-iostat-x.txt",
            "linux-raid-list-nvme-iostat-x.txt",
            "marslo-ibook-rhel7-iostat-x.txt",
            "sysstat-tests-expected.iostat-x-ALL.txt",
        )
    }
    hosts = {h for i in doc["inputs"] for h in i["hosts"]}
    assert {"dc5-ssdfwtst3", "SYSSTAT.TEST"} <= hosts


def test_a_mapped_multipath_device_joins_its_lun_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 10:00:00 .. 10:03:00; each -t time ends its 15 s interval, so the host's span is 195 s and the
    # joined signature (from the LUN's first rate, 10:01:00) holds for more than half of it
    capture = iostat_xt(tmp_path / "ora01-iostat.txt", 13, r_await_ms=200.0, util=10.0)
    cfg = mapped_config(tmp_path)
    alone = {d["id"]: d for d in run_json(capsys, str(capture), str(LUN))["diagnoses"]}
    joined = {d["id"]: d for d in run_json(capsys, str(capture), str(LUN), "--config", str(cfg))["diagnoses"]}
    # host-only: slow and idle, nothing to compare with: a warning; the local sda is quiet
    assert alone["san_oversubscription"]["severity"] == "warning"
    assert alone["san_oversubscription"]["subject"]["disk"] == "mpatha"
    f = joined["san_oversubscription"]
    assert f["severity"] == "critical"
    assert (f["subject"]["host"], f["subject"]["lun"], f["subject"]["svm"]) == (
        "ora01",
        "/vol/sqldata/lun0",
        "svm1",
    )
    host = (500 * 0.2 + 100 * 0.001) / 600
    assert f["evidence"]["host_iops"] == pytest.approx(600.0)
    assert f["evidence"]["host_idle_ratio"] == pytest.approx(0.9)
    assert f["evidence"]["host_to_array_latency_ratio"] == pytest.approx(
        host / f["evidence"]["lun_latency_seconds"], rel=1e-6
    )
    assert "`multipath -ll` shows every path active" in f["recommendation"]
    # the report since boot (03/02/25 09:00:00) is not a judged interval
    assert f["since"] >= "2025-03-02T10:00:00Z"


def test_a_capture_without_times_is_placed_interval_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = iostat_xt(tmp_path / "t.txt", 4, r_await_ms=30.0, util=60.0).read_text()
    untimed = tmp_path / "untimed.txt"
    untimed.write_text("\n".join(x for x in text.splitlines() if not x.startswith("03/02/25 ")) + "\n")
    os.utime(untimed, (T0 + 60, T0 + 60))
    doc = run_json(capsys, str(untimed), "--interval", "15")
    (inp,) = doc["inputs"]
    assert inp["samples"] == 4  # the since-boot report left out
    assert "modification time" in inp["status"]["note"]
    # the last report ends at the modification time, each 15 s
    assert (inp["start"], inp["end"]) == ("2025-03-02T10:00:00Z", "2025-03-02T10:01:00Z")
    assert {d["id"] for d in doc["diagnoses"]} == {"latency_slo"}  # 30 ms data reads: critical objective


def test_the_report_charts_a_linux_disk_from_its_printed_columns() -> None:
    """Chart points are the capture's own columns: aqu-sz as I/Os in flight, 1 - %util as idle, await in s."""
    from sanlens.analyze.linux_inputs import read_iostat

    li = read_iostat(LINUX / "matrixzj-rhel6-multipath-iostat-xkt.txt", None).detail
    pts = li.chart_points()
    row = "dm-0 0.00 113133.00 0.00 164.00 0.00 566732.00 6911.37 150.71 846.07 0.00 846.07 6.10 100.00"
    text = (LINUX / "matrixzj-rhel6-multipath-iostat-xkt.txt").read_text()
    assert " ".join(next(x for x in text.splitlines() if x.startswith("dm-0")).split()) == row
    cols = row.split()
    host = li.host
    assert [v for _, v in pts[(host, "dm-0", (), "outstanding_io")]] == [pytest.approx(float(cols[8]))]
    assert [v for _, v in pts[(host, "dm-0", (), "write_latency_s")]] == [
        pytest.approx(float(cols[11]) / 1000)
    ]
    assert [v for _, v in pts[(host, "dm-0", (), "write_iops")]] == [pytest.approx(float(cols[4]))]
    assert [v for _, v in pts[(host, "dm-0", (), "idle_ratio")]] == [pytest.approx(1 - float(cols[13]) / 100)]


def test_the_html_report_draws_a_mapped_linux_disk_beside_its_lun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = iostat_xt(tmp_path / "ora01-iostat.txt", 13, r_await_ms=200.0, util=10.0)
    cfg = mapped_config(tmp_path)
    out = tmp_path / "report.html"
    argv = ["analyze", str(capture), str(LUN), "--config", str(cfg), "--format", "html", "-o", str(out)]
    rc = main([*argv, "--quiet"])
    assert rc == 0, capsys.readouterr().err
    html = out.read_text(encoding="utf-8")
    mpatha = html[html.index("ora01") :]
    for title in ("latency vs LUN /vol/sqldata/lun0", "% idle time", "mean I/Os in flight", "IOPS"):
        assert f"<h4>{title}</h4>" in mpatha, title
    assert "current queue length" not in html, "Linux captures print no instantaneous queue"
