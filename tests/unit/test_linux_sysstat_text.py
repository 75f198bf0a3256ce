"""iostat -x and sar -d captures (tests/data/linux, see its README) read into SI values, held against
arithmetic done here on the printed columns: units, Little's law, the sysstat ratios."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pytest

from conftest import ROOT
from sanlens.hosts.linux_text import (
    Capture,
    LinuxTextError,
    parse_date,
    parse_iostat,
    parse_sar_disk,
    parse_timestamp_line,
    whole_disk,
)

DATA = ROOT / "tests" / "data" / "linux"


def read(name: str) -> Capture:
    path = DATA / name
    parse = parse_sar_disk if "sar" in name else parse_iostat
    with open(path, encoding="utf-8") as f:
        return parse(str(path), f)


def printed(name: str, header_word: str) -> list[tuple[list[str], list[str]]]:
    """Every (header, row) as printed, the device moved first, read here without the parser."""
    out = []
    header: list[str] | None = None
    last = False
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        cells = line.split()
        if cells and cells[0].count(":") == 2 and cells[0][:2].isdigit():  # sar's time stamp
            cells = cells[2:] if len(cells) > 1 and cells[1] in ("AM", "PM") else cells[1:]
        if not cells or cells[0] == "Average:":
            header = None if not cells else header
            continue
        words = [c.rstrip(":") for c in cells]
        if header_word in (words[0], words[-1]):
            last = words[-1] == header_word
            header = [header_word, *(words[:-1] if last else words[1:])]
            continue
        if header is not None and len(cells) == len(header):
            row = [cells[-1], *cells[:-1]] if last else cells
            out.append((header, [c.replace(",", ".") if i else c for i, c in enumerate(row)]))
    return out


def column(header: list[str], row: list[str], name: str) -> float:
    return float(row[header.index(name)])


# ------------------------------------------------------------------ iostat -x
@pytest.mark.parametrize(
    "name",
    [
        "linux-kernel-2b8bd423614c-iostat-x.txt",
        "marslo-ibook-rhel7-iostat-x.txt",
        "matrixzj-rhel6-multipath-iostat-xkt.txt",
        "linux-raid-list-nvme-iostat-x.txt",
        "sysstat-tests-expected.iostat-x-ALL.txt",
    ],
)
def test_iostat_columns_become_si_values(name: str) -> None:
    cap = read(name)
    rows = printed(name, "Device")
    assert rows
    last = cap.reports[-1]
    for header, row in rows[-len(last.devices) :]:
        dev = row[0]
        got = last.devices[dev]
        assert got["read_iops"] == pytest.approx(column(header, row, "r/s"))
        assert got["write_iops"] == pytest.approx(column(header, row, "w/s"))
        assert got["read_latency_s"] == pytest.approx(column(header, row, "r_await") / 1000.0)
        assert got["write_latency_s"] == pytest.approx(column(header, row, "w_await") / 1000.0)
        assert got["read_bytes_s"] == pytest.approx(column(header, row, "rkB/s") * 1024.0)
        util = column(header, row, "%util") / 100.0
        assert got["reported_busy_ratio"] == pytest.approx(util)
        # busy no more than the mean number in flight (Little's law over every kind printed)
        flight = sum(
            column(header, row, f"{k}/s") * column(header, row, f"{k}_await") / 1000.0
            for k in "rwdf"
            if f"{k}_await" in header
        )
        assert got["idle_ratio"] == pytest.approx(1.0 - min(max(min(util, flight), 0.0), 1.0))
        aqu = "aqu-sz" if "aqu-sz" in header else "avgqu-sz"
        # aqu-sz holds every kind's time: the reads and writes in flight are what discards and flushes leave
        other = sum(
            column(header, row, f"{k}/s") * column(header, row, f"{k}_await")
            for k in "df"
            if f"{k}/s" in header
        )
        assert got["outstanding_io"] == pytest.approx(max(column(header, row, aqu) - other / 1000.0, 0.0))


@pytest.mark.parametrize(
    ("name", "device", "interval_s"),
    [
        ("linux-kernel-2b8bd423614c-iostat-x.txt", "sdb", 10.0),  # `iostat -x 10`, 12 ms HDD reads
        ("marslo-ibook-rhel7-iostat-x.txt", "sda", 1e6),  # the report since boot
        ("marslo-ibook-rhel7-iostat-x.txt", "dm-0", 1e6),
        ("linux-raid-list-nvme-iostat-x.txt", "nvme0n1", 1.0),  # 1.3 M IOPS at 0.31 ms
        ("marslo-ibook-rhel7-sar-bdp.txt", "sda", 1.0),  # `sar -d 1`, 3.33 ms
    ],
)
def test_littles_law_holds_on_real_captures_within_the_printed_rounding(
    name: str, device: str, interval_s: float
) -> None:
    """aqu-sz (the queue integral's rate) = r/s x r_await + w/s x w_await (completions), to within what
    rounding each printed value to two decimals can move the product, plus the requests in flight at
    the interval's edges (N x R / T: the integral counts them, the completions not yet)."""
    d = read(name).reports[-1].devices[device]
    x_r, x_w = d["read_iops"], d["write_iops"]
    r_r, r_w = d["read_latency_s"] * 1000, d["write_latency_s"] * 1000
    little = (x_r * r_r + x_w * r_w) / 1000.0
    half = 0.005  # every column is printed to two decimals
    rounding = half + (x_r * half + r_r * half + x_w * half + r_w * half) / 1000.0
    edges = little * max(d["read_latency_s"], d["write_latency_s"]) / interval_s
    assert abs(d["outstanding_io"] - little) <= rounding + edges, (little, d["outstanding_io"])


def test_at_saturation_requests_straddling_one_second_intervals_break_the_law() -> None:
    """dm-0 at 846 ms over 1 s intervals: completions and the integral disagree by 8 %. A tolerance that
    would pass it would hide a wrong column."""
    d = read("matrixzj-rhel6-multipath-iostat-xkt.txt").reports[-1].devices["dm-0"]
    little = d["write_iops"] * d["write_latency_s"]
    assert 0.05 < abs(d["outstanding_io"] - little) / little < 0.15


def test_sysstat_12_ratios_tie_the_columns_read_to_the_ones_left() -> None:
    """rareq-sz = rkB/s / r/s and %rrqm = rrqm/s / (rrqm/s + r/s): the columns read are the right ones."""
    name = "sysstat-tests-expected.iostat-x-ALL.txt"
    cap = read(name)
    checked = 0
    for dev, raw in cap.reports[-1].raw.items():
        d = cap.reports[-1].devices[dev]
        if d["read_iops"] > 0:
            assert raw["rareq-sz"] == pytest.approx(
                d["read_bytes_s"] / 1024.0 / d["read_iops"], abs=0.01 + 0.03
            )
            pct = 100.0 * raw["rrqm/s"] / (raw["rrqm/s"] + d["read_iops"])
            assert raw["%rrqm"] == pytest.approx(pct, abs=0.2)
            checked += 1
    assert checked == 3  # sdq, sdr, sds


def test_the_first_iostat_report_since_boot_is_left_out() -> None:
    cap = read("sysstat-tests-expected.iostat-x-ALL.txt")
    assert cap.since_boot_dropped and len(cap.reports) == 1
    # the second block's sdq: 6.42 r/s (the first, since boot, printed 6.87)
    assert cap.reports[0].devices["sdq"]["read_iops"] == 6.42
    assert cap.host == "SYSSTAT.TEST" and cap.date == dt.date(2020, 6, 1)
    assert "f/s" in cap.columns and "d/s" in cap.columns


def test_a_single_report_is_kept() -> None:
    cap = read("linux-kernel-2b8bd423614c-iostat-x.txt")
    assert not cap.since_boot_dropped and len(cap.reports) == 1
    assert cap.reports[0].devices["sdb"]["read_iops"] == 82.5  # read through the decimal comma


def test_the_t_time_line_dates_the_report() -> None:
    cap = read("matrixzj-rhel6-multipath-iostat-xkt.txt")
    want = dt.datetime(2019, 12, 25, 3, 17, 34, tzinfo=dt.UTC).timestamp()
    assert cap.reports[0].end == want
    assert set(cap.reports[0].devices) == {"sdb", "sda", "dm-0", "dm-1"}


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("06/01/20 12:53:20", dt.datetime(2020, 6, 1, 12, 53, 20, tzinfo=dt.UTC)),
        ("12/25/2019 03:17:34 AM", dt.datetime(2019, 12, 25, 3, 17, 34, tzinfo=dt.UTC)),
        ("12/25/2019 12:05:00 AM", dt.datetime(2019, 12, 25, 0, 5, 0, tzinfo=dt.UTC)),
        ("12/25/2019 12:05:00 PM", dt.datetime(2019, 12, 25, 12, 5, 0, tzinfo=dt.UTC)),
        ("2020-06-01T12:53:20+0200", dt.datetime(2020, 6, 1, 10, 53, 20, tzinfo=dt.UTC)),
        ("2020-06-01T12:53:20", dt.datetime(2020, 6, 1, 12, 53, 20, tzinfo=dt.UTC)),
    ],
)
def test_iostat_time_lines(text: str, want: dt.datetime) -> None:
    assert parse_timestamp_line(text) == want.timestamp()


def test_impossible_times_are_no_time_lines() -> None:
    assert parse_timestamp_line("2020-13-45T25:61:61+9999") is None
    assert parse_timestamp_line("02/30/2024 10:00:00") is None
    assert parse_timestamp_line("06/01/20 25:00:00") is None


def test_dates_month_first_unless_the_month_would_exceed_twelve() -> None:
    assert parse_date("01/15/2021") == dt.date(2021, 1, 15)
    assert parse_date("15/01/2021") == dt.date(2021, 1, 15)
    assert parse_date("06/01/20") == dt.date(2020, 6, 1)
    assert parse_date("2021-01-15") == dt.date(2021, 1, 15)
    assert parse_date("2017年06月26日") is None


def test_human_readable_and_basic_iostat_are_refused_with_the_reason() -> None:
    human = "Device            r/s     rkB/s\nsda              1.2k      3.4M\n"
    with pytest.raises(LinuxTextError, match="human"):
        parse_iostat("h.txt", io.StringIO(human))
    basic = "Device             tps    kB_read/s    kB_wrtn/s    kB_read    kB_wrtn\nsda 1.0 2.0 3.0 4 5\n"
    with pytest.raises(LinuxTextError, match="iostat -x"):
        parse_iostat("b.txt", io.StringIO(basic))


def test_pretty_output_puts_the_device_last() -> None:
    text = (
        "     r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz"
        "  aqu-sz  %util Device\n"
        "    6.90    222.14     0.39   5.38   12.58    32.21    1.69     57.08     1.36  44.55    9.61    33.71"
        "    0.10   0.46 sda\n"
    )
    d = parse_iostat("p.txt", io.StringIO(text)).reports[0].devices["sda"]
    assert d["read_iops"] == 6.90 and d["write_latency_s"] == pytest.approx(0.00961)


# ------------------------------------------------------------------ sar -d
def test_sysstat_12_sar_dev_with_restarts_and_the_device_last() -> None:
    name = "sysstat-tests-expected.sar-dev.txt"
    cap = read(name)
    assert cap.restarts == 2 and cap.date == dt.date(2019, 4, 18)
    day = dt.datetime(2019, 4, 18, tzinfo=dt.UTC).timestamp()
    assert [r.end - day for r in cap.reports] == [13 * 3600 + 20 * 60 + s for s in (19, 29, 39, 49)] + [
        13 * 3600 + 54 * 60 + 35
    ]
    # each interval from the previous line, the one after the restarts from its section header
    assert [r.end - r.start for r in cap.reports if r.start is not None] == [10.0, 10.0, 10.0, 10.0, 20.0]
    rows = [r for h, r in printed(name, "DEV")]
    hdr = next(h for h, _ in printed(name, "DEV"))
    for report, row in zip(cap.reports, rows, strict=True):
        d = report.devices["sda"]
        tps = column(hdr, row, "tps")
        moved = column(hdr, row, "rkB/s") + column(hdr, row, "wkB/s") + column(hdr, row, "dkB/s")
        if tps:  # areq-sz = kB moved per transfer, discards included (rd_stats.c: nr_ios counts dc_ios)
            assert column(hdr, row, "areq-sz") == pytest.approx(moved / tps, abs=0.01)
        if column(hdr, row, "dkB/s"):  # the last row: 1.6 transfers/s, every byte a discard
            assert "read_iops" not in d and "write_latency_s" not in d
            continue
        assert d["read_iops"] + d["write_iops"] == pytest.approx(tps)
        assert d["read_latency_s"] == d["write_latency_s"] == pytest.approx(column(hdr, row, "await") / 1000)
    assert [w for w in cap.warnings if w.startswith("sda: 1 sar -d interval moved discards")]


def test_sysstat_11_sar_with_am_pm_times_another_activity_and_sectors() -> None:
    name = "marslo-ibook-rhel7-sar-bdp.txt"
    cap = read(name)
    assert cap.host == "dc5-ssdfwtst3" and len(cap.reports) == 1
    r = cap.reports[0]
    assert r.end == dt.datetime(2021, 1, 15, 5, 44, 21, tzinfo=dt.UTC).timestamp() and r.end - r.start == 1.0
    assert set(r.devices) == {"sda", "centos-root", "centos-swap"}  # the sar -b section is no disk
    hdr, row = next((h, x) for h, x in printed(name, "DEV") if x[0] == "sda")
    d = r.devices["sda"]
    assert d["read_bytes_s"] == column(hdr, row, "rd_sec/s") * 512
    assert d["read_iops"] == column(hdr, row, "tps")  # all bytes read: all transfers are reads
    # avgrq-sz: sectors per transfer
    assert column(hdr, row, "avgrq-sz") == pytest.approx(
        column(hdr, row, "rd_sec/s") / column(hdr, row, "tps"), abs=0.01
    )


def test_sar_past_midnight_moves_to_the_next_day() -> None:
    text = (
        "Linux 5.14.0 (db1) \t03/31/2024 \t_x86_64_\t(8 CPU)\n\n"
        "11:59:50 PM       DEV       tps     rkB/s     wkB/s     dkB/s   areq-sz    aqu-sz     await     %util\n"
        "11:59:59 PM       sda     10.00     40.00      0.00      0.00      4.00      0.01      1.00      1.00\n"
        "12:00:09 AM       sda     20.00     80.00      0.00      0.00      4.00      0.02      1.00      2.00\n"
    )
    cap = parse_sar_disk("m.txt", io.StringIO(text))
    ends = [dt.datetime.fromtimestamp(r.end, dt.UTC) for r in cap.reports if r.end is not None]
    assert ends == [
        dt.datetime(2024, 3, 31, 23, 59, 59, tzinfo=dt.UTC),
        dt.datetime(2024, 4, 1, 0, 0, 9, tzinfo=dt.UTC),
    ]


def test_partitions_cd_drives_and_groups_are_no_disks() -> None:
    assert [
        d
        for d in ("sda", "sda1", "dm-3", "nvme0n1", "nvme0n1p2", "sr0", "loop3", "ALL", "mpatha")
        if whole_disk(d)
    ] == [
        "sda",
        "dm-3",
        "nvme0n1",
        "mpatha",
    ]


def test_files_are_named_by_their_readme() -> None:
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for p in Path(DATA).glob("*.txt"):
        assert f"`{p.name}`" in readme, p.name


# ------------------------------------------------------------------ discards (a host running fstrim)
FSTRIM_IOSTAT = "constructed-fstrim-sysstat12-iostat-xt.txt"
FSTRIM_SAR = "constructed-fstrim-sysstat12-sar-dp.txt"


def test_iostat_keeps_discards_and_flushes_apart() -> None:
    """sysstat 12's d/s d_await and f/s f_await are their own ops: reads and writes stay as printed, and
    aqu-sz (the queue integral) = Σ rate x await over all four kinds."""
    cap = read(FSTRIM_IOSTAT)
    # the since-boot report left out
    rows = [r for h, r in printed(FSTRIM_IOSTAT, "Device") if r[0] == "sdb"][1:]
    hdr = next(h for h, _ in printed(FSTRIM_IOSTAT, "Device"))
    assert len(rows) == len(cap.reports) == 6
    for report, row in zip(cap.reports, rows, strict=True):
        d = report.devices["sdb"]
        for kind, rate, lat in (
            ("read", "r/s", "r_await"),
            ("write", "w/s", "w_await"),
            ("discard", "d/s", "d_await"),
        ):
            assert d[f"{kind}_iops"] == column(hdr, row, rate)
            assert d[f"{kind}_latency_s"] == pytest.approx(column(hdr, row, lat) / 1000)
        assert d["flush_iops"] == column(hdr, row, "f/s")
        assert d["flush_latency_s"] == pytest.approx(column(hdr, row, "f_await") / 1000)
        # aqu-sz (diskstats field 11) is every kind's time; the reads and writes in flight are theirs alone
        little = {k: column(hdr, row, f"{k}/s") * column(hdr, row, f"{k}_await") / 1000 for k in "rwdf"}
        assert column(hdr, row, "aqu-sz") == pytest.approx(sum(little.values()), abs=0.005)
        assert d["outstanding_io"] == pytest.approx(little["r"] + little["w"], abs=0.005)
    trim = cap.reports[-1].devices["sdb"]
    assert trim["discard_iops"] == 1000.0 and trim["write_latency_s"] == pytest.approx(0.001)
    assert not cap.warnings


def test_sar_tps_and_await_count_discards_so_reads_and_writes_are_left_unknown() -> None:
    """sar -d (sysstat 12.1.2+) counts discards in tps and await (rd_stats.c: nr_ios = rd_ios + wr_ios +
    dc_ios; await over rd_ticks + wr_ticks + dc_ticks), as the iostat -x of the same seconds shows. An
    fstrim's 1,000 discards/s at 40 ms are no writes: where dkB/s > 0, reads and writes are unknown."""
    sar, io = read(FSTRIM_SAR), read(FSTRIM_IOSTAT)
    sar_rows = [r for h, r in printed(FSTRIM_SAR, "DEV") if r[0] == "sdb"]
    hdr = next(h for h, _ in printed(FSTRIM_SAR, "DEV"))
    io_rows = [r for h, r in printed(FSTRIM_IOSTAT, "Device") if r[0] == "sdb"][1:]
    ih = next(h for h, _ in printed(FSTRIM_IOSTAT, "Device"))
    assert [r.end for r in sar.reports] == [r.end for r in io.reports]
    trimmed = 0
    for report, row, irow in zip(sar.reports, sar_rows, io_rows, strict=True):
        ops = {k: column(ih, irow, f"{k}/s") for k in "rwd"}
        ticks = sum(ops[k] * column(ih, irow, f"{k}_await") for k in "rwd")
        assert column(hdr, row, "tps") == pytest.approx(sum(ops.values()))  # flushes are not counted
        assert column(hdr, row, "await") == pytest.approx(ticks / sum(ops.values()), abs=0.005)
        d = report.devices["sdb"]
        assert d["reported_busy_ratio"] == column(hdr, row, "%util") / 100
        # busy no more than tps x await: exact over every kind sar counts
        bound = column(hdr, row, "tps") * column(hdr, row, "await") / 1000
        assert d["idle_ratio"] == pytest.approx(1 - min(column(hdr, row, "%util") / 100, bound, 1.0))
        if column(hdr, row, "dkB/s") > 0:
            trimmed += 1
            assert not {
                "read_iops",
                "write_iops",
                "read_latency_s",
                "write_latency_s",
                "outstanding_io",
            } & set(d)
            assert d["write_bytes_s"] == column(hdr, row, "wkB/s") * 1024
        else:
            # no discards: tps is reads and writes, split by their byte share (an estimate: 150/150 of 200/100)
            assert d["read_iops"] + d["write_iops"] == pytest.approx(ops["r"] + ops["w"])
            assert d["write_latency_s"] == pytest.approx(column(hdr, row, "await") / 1000)
    assert trimmed == 4
    (warning,) = sar.warnings
    assert warning.startswith("sdb: 4 sar -d intervals moved discards") and "iostat -x" in warning
