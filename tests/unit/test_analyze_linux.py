"""`sanlens analyze` on Linux iostat/sar captures: read, timed, joined by the config, diagnosed."""

from __future__ import annotations

import calendar
import json
import os
from pathlib import Path

import pytest

from conftest import pinned_copy
from sanlens.analyze.offline_join import host_mapper
from sanlens.cli import main
from sanlens.config.load import load_config_text
from sanlens.model import HostDiskStats

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


def test_an_fstrim_is_no_write_latency_nor_a_full_queue(capsys: pytest.CaptureFixture[str]) -> None:
    """sar's tps and await count the fstrim's 1,000 discards/s at 40 ms: read as writes they would be a
    30.92 ms write latency. The intervals with discards judge no latency, and the status says why.
    iostat -x prints the discards apart, and its aqu-sz (40.21, every kind's time) is no read and
    write queue: 0.2 of them are in flight, far from the 32 the LUN queue allows."""
    doc = run_json(capsys, str(LINUX / "constructed-fstrim-sysstat12-sar-dp.txt"))
    assert not {d["id"] for d in doc["diagnoses"]} & {"latency_slo", "host_queue_limited"}
    (inp,) = doc["inputs"]
    assert any("moved discards (dkB/s > 0)" in s for s in inp["status"]["skipped"])
    doc = run_json(capsys, str(LINUX / "constructed-fstrim-sysstat12-iostat-xt.txt"))
    assert not {d["id"] for d in doc["diagnoses"]} & {"latency_slo", "host_queue_limited"}


def _views(name: str, config: str | None = None) -> dict[str, HostDiskStats]:
    """The last HostView's disks of a capture, mapped through ``config`` (YAML text)."""
    from sanlens.analyze.linux_inputs import read_iostat

    li = read_iostat(LINUX / name, None).detail
    cfg = load_config_text(config) if config else None
    (*_, last) = li.snapshots(host_mapper(cfg, "c1"))
    assert last.view is not None
    return {d.disk: d for d in last.view.disks}


def test_nvme_paths_are_summed_into_their_namespace() -> None:
    """The kernel counted the I/O on the hidden per-controller devices only: the namespace is their sum,
    its latency weighted by their IOPS, and the paths are no disks of their own."""
    disks = _views("constructed-nvme-multipath-paths-only-iostat-xt.txt")
    assert set(disks) == {"nvme0n1", "nvme1n1"}
    ns = disks["nvme0n1"]
    assert (ns.read_iops, ns.write_iops) == (6000.0, 2000.0)
    assert ns.read_latency_s == pytest.approx((3000 * 0.20 + 3000 * 0.30) / 6000 / 1000)
    assert ns.write_latency_s == pytest.approx((1000 * 0.40 + 1000 * 0.50) / 2000 / 1000)
    assert ns.read_bytes_s == 24000 * 1024 and ns.outstanding_io == pytest.approx(1.00 + 1.40)  # aqu-sz
    assert ns.idle_ratio is None  # a union of busy times is no sum
    assert ns.observed_paths == 2
    assert [(p.path, p.read_iops) for p in ns.path_stats] == [("nvme0c0n1", 3000.0), ("nvme0c1n1", 3000.0)]
    assert disks["nvme1n1"].read_iops == 50.0 and not disks["nvme1n1"].path_stats


MPATHA = (
    "hosts:\n  - name: ora02\n    url: http://ora02:9100\n    disks:\n"
    "      - disk: mpatha\n        svm: svm1\n        lun: /vol/sqldata/lun0\n"
)


def test_a_mapped_maps_scsi_paths_are_no_disks_of_their_own() -> None:
    """iostat -N names the map; its paths are the SCSI disks whose bytes sum to the map's. Idle SCSI
    devices (non-optimized paths) are left out; the boot disk, whose I/O fits no map, stays."""
    disks = _views("constructed-dm-multipath-iostat-xtN.txt", MPATHA)
    assert set(disks) == {"sda", "rhel-root", "mpatha"}
    m = disks["mpatha"]
    assert m.lun == "/vol/sqldata/lun0" and m.read_iops == 500.0 and m.observed_paths == 2
    assert [p.path for p in m.path_stats] == ["sdc", "sdd"]
    # without a mapped map nothing tells a path from a disk: every device is judged as printed
    assert set(_views("constructed-dm-multipath-iostat-xtN.txt")) == {
        "sda", "sdc", "sdd", "sde", "sdf", "rhel-root", "mpatha"
    }  # fmt: skip


def test_a_real_multipath_capture_groups_its_path_under_the_mapped_map() -> None:
    """RHEL 6 request-based dm-multipath: dm-0's 566,732 kB/s of writes are its path sda's (sdb idle);
    dm-1 on top of it is no path of anything."""
    cfg = MPATHA.replace("ora02", "matrixzj-rhel6-multipath-iostat-xkt").replace("mpatha", "dm-0")
    disks = _views("matrixzj-rhel6-multipath-iostat-xkt.txt", cfg)
    assert set(disks) == {"dm-0", "dm-1"}
    assert [p.path for p in disks["dm-0"].path_stats] == ["sda"] and disks["dm-0"].write_iops == 164.0


def test_sar_without_p_names_scsi_paths_by_their_major() -> None:
    """``sar -d`` without ``-p`` prints devM-N: majors 8, 65-71 and 128-135 are SCSI disks, 253 here the
    mapped map; the boot disk dev8-0, whose bytes fit no map, stays a disk."""
    from sanlens.analyze.linux_paths import dm_groups

    def row(kb: float) -> dict[str, float]:
        return {"read_iops": kb / 8, "read_bytes_s": kb * 1024, "write_bytes_s": 0.0}

    reports = [
        {"dev8-0": row(40), "dev8-16": row(1000 * k), "dev65-0": row(1000 * k), "dev253-0": row(2000 * k)}
        for k in (1, 2, 3)
    ]
    groups, idle = dm_groups(reports, list(reports[0]), lambda d: d == "dev253-0")
    assert {m: set(p) for m, p in groups.items()} == {"dev253-0": {"dev8-16", "dev65-0"}} and not idle


def test_a_kernel_that_charges_a_jiffy_per_io_start_hides_no_idle_disk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """iostat's %util is the kernel's busy time: 92 % on a 5.15 kernel for 0.40 requests in flight
    (500 reads/s x 0.3 ms + 10 writes/s x 25 ms). Read as printed the disk is 8 % idle and its 25 ms log
    writes look like a busy disk's; bounded by the requests in flight it is 60 % idle, the SAN's
    signature, and the advice names the kernel that counted it."""
    doc = run_json(capsys, str(LINUX / "constructed-short-io-kernel515-iostat-xt.txt"))
    (f,) = [d for d in doc["diagnoses"] if d["id"] == "san_oversubscription"]
    assert f["subject"]["disk"] == "sdb"
    in_flight = 500 * 0.0003 + 10 * 0.025
    assert f["evidence"]["host_idle_ratio"] == pytest.approx(1 - in_flight)
    assert "Busy time as counted 92 %, bounded by the requests in flight to 40 %" in f["recommendation"]
    assert "kernel 5.15.0-91-generic" in f["recommendation"]
    assert "waterfall" not in f or not f["waterfall"], "no array data: the host's time is not split"
