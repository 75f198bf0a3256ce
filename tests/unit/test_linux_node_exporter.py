"""node_exporter pages → Linux disk readings → cooked rates, against arithmetic done here on the counters.

The pages use node_exporter 1.12's exact family names, HELP/TYPE lines and label sets
(collector/diskstats_linux.go, diskstats_common.go, dmmultipath_linux.go); the rates expected
below are computed in the test from the two pages' values, never read back from the code.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from tests.joining import joined

from sanlens.config import HostTarget
from sanlens.errors import SourceError
from sanlens.hosts.catalogue import NODE_EXPORTER
from sanlens.hosts.cooking import HostCooker
from sanlens.hosts.mapping import DiskMapping
from sanlens.hosts.node_exporter import (
    NodeExporterSource,
    node_scrape_url,
    parse_node_exporter,
    parse_page,
    readings,
)
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory, LunIdentity
from sanlens.model import HostDiskStats, Snapshot

SERIAL = "81CYr]Qlis4q"  # the LUN behind `3600a098038314359725d516c69733471 dm-22 NETAPP,LUN C-Mode`
WWID = "3600a098038314359725d516c69733471"
MS32 = 2**32 / 1000.0  # where node_exporter's seconds wrap: the kernel's 32-bit millisecond counts

# node_exporter family -> the estate key of the dev dict below
COUNTERS = {
    "node_disk_reads_completed_total": "reads",
    "node_disk_writes_completed_total": "writes",
    "node_disk_read_bytes_total": "rbytes",
    "node_disk_written_bytes_total": "wbytes",
    "node_disk_read_time_seconds_total": "rtime",
    "node_disk_write_time_seconds_total": "wtime",
    "node_disk_io_time_seconds_total": "io",
    "node_disk_io_time_weighted_seconds_total": "weighted",
    "node_disk_discards_completed_total": "discards",
    "node_disk_discard_time_seconds_total": "dtime",
    "node_disk_flush_requests_total": "flushes",
    "node_disk_flush_requests_time_seconds_total": "ftime",
    "node_disk_io_now": "now",
}
HELP = {
    "node_disk_reads_completed_total": "The total number of reads completed successfully.",
    "node_disk_writes_completed_total": "The total number of writes completed successfully.",
    "node_disk_read_bytes_total": "The total number of bytes read successfully.",
    "node_disk_written_bytes_total": "The total number of bytes written successfully.",
    "node_disk_read_time_seconds_total": "The total number of seconds spent by all reads.",
    "node_disk_write_time_seconds_total": "This is the total number of seconds spent by all writes.",
    "node_disk_io_time_seconds_total": "Total seconds spent doing I/Os.",
    "node_disk_io_time_weighted_seconds_total": "The weighted # of seconds spent doing I/Os.",
    "node_disk_discards_completed_total": "The total number of discards completed successfully.",
    "node_disk_discard_time_seconds_total": "This is the total number of seconds spent by all discards.",
    "node_disk_flush_requests_total": "The total number of flush requests completed successfully",
    "node_disk_flush_requests_time_seconds_total": "This is the total number of seconds spent by all flush requests.",
    "node_disk_io_now": "The number of I/Os currently in progress.",
}


@dataclass
class Page:
    """A node_exporter page, built from per-device counter values."""

    devices: dict[str, dict[str, float]]
    info: dict[str, dict[str, str]] = field(default_factory=dict)
    dm: dict[str, tuple[str, str]] = field(default_factory=dict)  # dm-N -> (name, uuid)
    multipath: dict[str, tuple[str, str, dict[str, str]]] | None = None  # name -> (dm-N, uuid, paths)
    textfile: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    def text(self) -> str:
        out: list[str] = []
        for name in sorted(COUNTERS):
            typ = "gauge" if name == "node_disk_io_now" else "counter"
            out += [f"# HELP {name} {HELP[name]}", f"# TYPE {name} {typ}"]
            out += [
                f'{name}{{device="{d}"}} {v[COUNTERS[name]]:.17g}'
                for d, v in sorted(self.devices.items())
                if COUNTERS[name] in v
            ]
        out += ["# HELP node_disk_info Info of /sys/block/<block_device>.", "# TYPE node_disk_info gauge"]
        for d in sorted(self.devices):
            i = {"model": "", "path": "", "revision": "", "serial": "", "wwn": "", **self.info.get(d, {})}
            out.append(
                f'node_disk_info{{device="{d}",major="8",minor="0",model="{i["model"]}",path="{i["path"]}",'
                f'revision="{i["revision"]}",rotational="0",serial="{i["serial"]}",wwn="{i["wwn"]}"}} 1'
            )
        out += [
            "# HELP node_disk_device_mapper_info Info about disk device mapper.",
            "# TYPE node_disk_device_mapper_info gauge",
        ]
        out += [
            f'node_disk_device_mapper_info{{device="{d}",lv_layer="",lv_name="",name="{n}",uuid="{u}",vg_name=""}} 1'
            for d, (n, u) in sorted(self.dm.items())
        ]
        if self.multipath is not None:
            out += [
                "# HELP node_dmmultipath_device_info Non-numeric information about a DM-multipath device.",
                "# TYPE node_dmmultipath_device_info gauge",
            ]
            for name, (sysfs, uuid, _paths) in sorted(self.multipath.items()):
                out.append(
                    f'node_dmmultipath_device_info{{device="{name}",sysfs_name="{sysfs}",uuid="{uuid}"}} 1'
                )
            out += [
                "# HELP node_dmmultipath_path_state Reports the underlying device state for a multipath path, "
                "as read from /sys/block/<dev>/device/state.",
                "# TYPE node_dmmultipath_path_state gauge",
            ]
            for name, (_sysfs, _uuid, paths) in sorted(self.multipath.items()):
                out += [
                    f'node_dmmultipath_path_state{{device="{name}",path="{p}",state="{st}"}} 1'
                    for p, st in sorted(paths.items())
                ]
        return "\n".join([*out, *self.textfile, *self.extra]) + "\n"


def dev(**kw: float) -> dict[str, float]:
    return dict(kw)


def host_page(t_ms: float, sdc_failed: bool = False, weighted0: float = 5_000.0) -> Page:
    """ora01 at some instant: mpatha (dm-2) on sdb + sdc, a local nvme0n1 under LVM (dm-0)."""
    k = t_ms / 1000.0  # seconds since the first page
    # the map: 2,000 reads/s at 4 ms and 500 writes/s at 1 ms, busy 60 %, 8.5 in flight on average
    mp = dev(
        reads=1e9 + 2000 * k,
        writes=4e8 + 500 * k,
        rbytes=8e12 + 2000 * 8192 * k,
        wbytes=3e12 + 500 * 65536 * k,
        rtime=1000.0 + 2000 * 0.004 * k,
        wtime=300.0 + 500 * 0.001 * k,
        io=700.0 + 0.6 * k,
        weighted=weighted0 + 8.5 * k,
        discards=10.0 + 5 * k,
        flushes=20.0 + 2 * k,
        now=9,
    )
    share_b = 1.0 if sdc_failed else 0.5
    sdb = dev(
        reads=5e8 + 2000 * share_b * k,
        writes=2e8 + 500 * share_b * k,
        rtime=400.0 + 2000 * share_b * 0.0035 * k,
        wtime=100.0 + 500 * share_b * 0.0008 * k,
        io=300.0 + 0.55 * k,
        weighted=2000.0 + 4.0 * k,
        now=4,
    )
    sdc = dev(
        reads=5e8 + (0 if sdc_failed else 1000 * k),
        writes=2e8 + (0 if sdc_failed else 250 * k),
        rtime=400.0,
        wtime=100.0,
        io=300.0,
        weighted=2000.0,
        now=0,
    )
    nvme = dev(reads=7e6 + 50 * k, writes=9e6 + 80 * k, rtime=10.0, wtime=20.0, io=50.0 + 0.01 * k, now=0)
    lvm = dict(nvme)
    return Page(
        devices={"dm-2": mp, "sdb": sdb, "sdc": sdc, "nvme0n1": nvme, "dm-0": lvm},
        info={
            "sdb": {"model": "LUN_C-Mode", "serial": SERIAL, "wwn": "0x600a098038314359"},
            "sdc": {"model": "LUN_C-Mode", "serial": SERIAL, "wwn": "0x600a098038314359"},
            "nvme0n1": {"model": "SAMSUNG EHFTF55LURSY-000Y9", "serial": "S252B6CU1HG3M1"},
        },
        dm={"dm-2": ("mpatha", "mpath-" + WWID), "dm-0": ("system-root", "LVM-" + "x" * 64)},
        multipath={"mpatha": ("dm-2", "mpath-" + WWID, {"sdb": "running", "sdc": "running"})},
        textfile=[
            "# TYPE sanlens_linux_disk_queue_depth gauge",
            'sanlens_linux_disk_queue_depth{device="sdb"} 64',
            'sanlens_linux_disk_queue_depth{device="sdc"} 32',
            "# TYPE sanlens_linux_disk_access_state gauge",
            'sanlens_linux_disk_access_state{device="sdb",state="active/optimized"} 1',
            'sanlens_linux_disk_access_state{device="sdc",state="active/non-optimized"} 1',
        ],
        # NetApp Harvest's family for ONTAP disks: a prefix match would take it for diskstats
        extra=[
            "# HELP node_disk_busy Harvest: disk busy percent",
            "# TYPE node_disk_busy gauge",
            'node_disk_busy{datacenter="dc1",cluster="c1",disk="1.0.3",node="n1"} 87',
        ],
    )


def by_disk(snap: Snapshot) -> dict[str, HostDiskStats]:
    assert snap.view is not None
    return {d.disk: d for d in snap.view.disks}  # type: ignore[union-attr]


def sample(snap: Snapshot, family: str, **labels: str) -> float:
    for m in snap.metrics:
        if m.name == family:
            for values, v in m.samples:
                lv = dict(zip(m.label_names, values, strict=True))
                if all(lv.get(k) == x for k, x in labels.items()):
                    return v
    raise AssertionError(f"no {family}{labels}")


def test_a_multipath_map_is_one_disk_named_by_its_dm_name_with_its_wwid_and_path_devices() -> None:
    rs = {r.disk: r for r in parse_node_exporter(host_page(0.0).text())}
    assert set(rs) == {"mpatha", "nvme0n1"}  # the paths, the LVM dm and the map's dm-N are no disks
    m = rs["mpatha"]
    assert m.wwid == WWID and m.serial == SERIAL and m.aliases == ("dm-2",)
    assert [p.path for p in m.path_readings] == ["sdb", "sdc"]
    assert m.paths == 2 and m.known_paths == 2
    assert m.optimized_paths == 1  # sdc is ALUA active/non-optimized
    assert m.queue_depth == 32  # the lowest of its usable path devices'
    assert m.platform == "linux" and not m.local
    # node_disk_busy (Harvest's, on the same page) is neither a counter nor a device of the host
    assert set(parse_page(host_page(0.0).text()).stats) == {"dm-0", "dm-2", "nvme0n1", "sdb", "sdc"}
    local = rs["nvme0n1"]
    assert local.local and local.wwid == "" and local.serial == "S252B6CU1HG3M1"


def test_a_failed_path_device_leaves_one_active_of_two_listed() -> None:
    page = host_page(0.0)
    assert page.multipath is not None
    sysfs, uuid, _ = page.multipath["mpatha"]
    page.multipath["mpatha"] = (sysfs, uuid, {"sdb": "running", "sdc": "transport-offline"})
    (m,) = [r for r in parse_node_exporter(page.text()) if r.disk == "mpatha"]
    assert (m.paths, m.known_paths) == (1, 2)
    assert {p.path: p.state for p in m.path_readings} == {"sdb": "running", "sdc": "transport-offline"}
    assert m.queue_depth == 64  # only sdb carries I/O now


def _cook(pages: list[tuple[float, Page]]) -> list[Snapshot]:
    cooker = HostCooker("ora01", NODE_EXPORTER.moduli())
    out = []
    for t, page in pages:
        rs = parse_node_exporter(page.text())
        maps = {r.disk: DiskMapping(r.serial, queue_depth=r.queue_depth or 32) for r in rs}
        out.append(cooker.cook(t, rs, maps))
    return out


def test_rates_per_op_busy_and_in_flight_follow_the_counters() -> None:
    p0, p1 = host_page(0.0), host_page(15_000.0)
    _, s1 = _cook([(100.0, p0), (115.0, p1)])
    d = by_disk(s1)["mpatha"]
    a, b = p0.devices["dm-2"], p1.devices["dm-2"]
    dt = 15.0
    assert d.read_iops == pytest.approx((b["reads"] - a["reads"]) / dt)
    assert d.write_iops == pytest.approx((b["writes"] - a["writes"]) / dt)
    assert d.read_latency_s == pytest.approx((b["rtime"] - a["rtime"]) / (b["reads"] - a["reads"]))
    assert d.write_latency_s == pytest.approx((b["wtime"] - a["wtime"]) / (b["writes"] - a["writes"]))
    assert d.idle_ratio == pytest.approx(1.0 - (b["io"] - a["io"]) / dt)
    assert d.outstanding_io == pytest.approx((b["rtime"] - a["rtime"] + b["wtime"] - a["wtime"]) / dt)
    assert d.read_bytes_s == pytest.approx((b["rbytes"] - a["rbytes"]) / dt)
    assert d.queue_length == b["now"]
    assert d.platform == "linux"
    paths = {p.path: p for p in d.path_stats}
    pa, pb = p0.devices["sdb"], p1.devices["sdb"]
    assert paths["sdb"].read_iops == pytest.approx((pb["reads"] - pa["reads"]) / dt)
    assert paths["sdb"].read_latency_s == pytest.approx(
        (pb["rtime"] - pa["rtime"]) / (pb["reads"] - pa["reads"])
    )
    assert paths["sdb"].busy_ratio == pytest.approx((pb["io"] - pa["io"]) / dt)
    # reads and writes in flight from their own time sums, not field 11 (which counts every kind)
    assert paths["sdb"].outstanding_io == pytest.approx(
        (pb["rtime"] - pa["rtime"] + pb["wtime"] - pa["wtime"]) / dt
    )
    # exposed: counters as node_exporter gave them, discards and flushes as ops of their own
    assert sample(s1, "sanlens_host_disk_ops_total", disk="mpatha", op="discard") == b["discards"]
    assert sample(s1, "sanlens_host_disk_busy_seconds_total", disk="mpatha") == b["io"]
    assert sample(s1, "sanlens_host_disk_queue_seconds_total", disk="mpatha") == b["weighted"]
    assert sample(s1, "sanlens_host_disk_multipath_info", disk="mpatha", device="dm-2", wwid=WWID) == 1.0
    assert (
        sample(s1, "sanlens_host_disk_path_ops_total", disk="mpatha", path="sdc", op="read")
        == (p1.devices["sdc"]["reads"])
    )
    assert sample(s1, "sanlens_host_disk_queue_depth", disk="mpatha") == 32


def test_the_32_bit_millisecond_time_sums_wrap_and_stay_exact() -> None:
    # the read time sum sits 20 s below 2^32 ms and grows 8 s/s, the weighted time 8.5 s/s: both wrap
    # within the 15 s interval
    start = MS32 - 20.0
    p0, p1 = host_page(0.0, weighted0=start), host_page(15_000.0, weighted0=start)
    for page in (p0, p1):
        page.devices["dm-2"]["rtime"] += start - 1000.0
    for name in ("rtime", "weighted"):
        p1.devices["dm-2"][name] -= MS32
        assert 0 < p1.devices["dm-2"][name] < p0.devices["dm-2"][name]  # the page really shows a drop
    _, s1 = _cook([(0.0, p0), (15.0, p1)])
    d = by_disk(s1)["mpatha"]
    assert d.read_latency_s == pytest.approx(0.004)
    assert d.outstanding_io == pytest.approx(8.5)
    assert d.read_iops == pytest.approx(2000.0)  # a wrap is no restart: the other counters give rates
    exposed = sample(s1, "sanlens_host_disk_queue_seconds_total", disk="mpatha")
    assert exposed - p0.devices["dm-2"]["weighted"] == pytest.approx(8.5 * 15.0)


def test_a_reboot_gives_no_rates_for_that_interval() -> None:
    p0, p1 = host_page(0.0), host_page(15_000.0)
    p1.devices["dm-2"]["reads"] = 1234.0  # a 64-bit count that fell back: the host restarted
    _, s1 = _cook([(0.0, p0), (15.0, p1)])
    d = by_disk(s1)["mpatha"]
    assert d.read_iops is None and d.read_latency_s is None


def test_a_path_device_that_fails_stops_counting_and_the_other_carries_the_map() -> None:
    p0, p1 = host_page(0.0, sdc_failed=True), host_page(15_000.0, sdc_failed=True)
    _, s1 = _cook([(0.0, p0), (15.0, p1)])
    paths = {p.path: p for p in by_disk(s1)["mpatha"].path_stats}
    assert paths["sdc"].read_iops == 0.0
    assert paths["sdb"].read_iops == pytest.approx(by_disk(s1)["mpatha"].read_iops or 0.0)


def test_without_the_dmmultipath_collector_paths_come_from_the_devices_udev_identity() -> None:
    page = host_page(0.0)
    page.multipath = None
    # one path device named by the 12-character serial (sg3_utils), the other by the NAA hex
    page.info["sdc"] = {"model": "LUN_C-Mode", "serial": WWID[1:], "wwn": "0x600a098038314359"}
    (m,) = [r for r in parse_node_exporter(page.text()) if r.disk == "mpatha"]
    assert m.wwid == WWID and m.aliases == ("dm-2",)
    assert sorted(p.path for p in m.path_readings) == ["sdb", "sdc"]
    assert m.paths == 2 and all(p.state == "" for p in m.path_readings)


def test_the_16_digit_wwn_is_never_taken_for_a_lun_identity() -> None:
    page = host_page(0.0)
    page.multipath, page.dm = None, {}
    page.info["sdb"] = {"model": "SOME_ARRAY", "serial": "", "wwn": "0x600a098038314359"}
    rs = {r.disk: r for r in parse_node_exporter(page.text())}
    assert rs["sdb"].wwid == "" and rs["sdb"].local


def test_a_single_path_lun_without_multipath_is_its_own_disk() -> None:
    page = host_page(0.0)
    page.multipath, page.dm = None, {}
    del page.devices["sdc"], page.devices["dm-2"]
    rs = {r.disk: r for r in parse_node_exporter(page.text())}
    assert rs["sdb"].wwid == WWID and rs["sdb"].known_paths == 1 and not rs["sdb"].local


def test_scrape_url_asks_for_the_block_device_collectors_unless_the_url_names_its_own() -> None:
    assert node_scrape_url("http://h:9100") == (
        "http://h:9100/metrics?collect[]=diskstats&collect[]=dmmultipath&collect[]=nvme"
        "&collect[]=nvmesubsystem&collect[]=textfile&collect[]=uname"
    )
    assert node_scrape_url("https://h:9100/node/metrics?x=1", ["diskstats"]) == (
        "https://h:9100/node/metrics?x=1&collect[]=diskstats"
    )
    own = "http://h:9100/metrics?collect[]=diskstats"
    assert node_scrape_url(own) == own


class _Resp:
    def __init__(self, status: int, text: str) -> None:
        self.status_code, self.text = status, text


def _target() -> HostTarget:
    return HostTarget(name="ora01", url="http://ora01:9100")


def test_a_collector_node_exporter_lacks_is_dropped_and_the_scrape_repeated() -> None:
    src = NodeExporterSource(_target())
    asked: list[str] = []
    page = host_page(0.0).text()

    def fetch(url: str) -> Any:
        asked.append(url)
        if "dmmultipath" in url:
            return _Resp(400, "Couldn't create filtered metrics handler: missing collector: dmmultipath")
        return _Resp(200, page)

    src.fetch = fetch  # type: ignore[method-assign]
    src.clock = lambda: 1000.0  # type: ignore[method-assign]
    snap = src.poll()
    assert len(asked) == 2 and "dmmultipath" not in asked[1] and "diskstats" in asked[1]
    assert src.collectors == ["diskstats", "nvme", "nvmesubsystem", "textfile", "uname"]
    assert "mpatha" in by_disk(snap)
    src.close()


def test_other_http_errors_and_pages_without_diskstats_are_source_errors() -> None:
    src = NodeExporterSource(_target())
    src.fetch = lambda url: _Resp(500, "boom")  # type: ignore[method-assign]
    with pytest.raises(SourceError) as e:
        src.poll()
    assert e.value.reason == "http"
    src.fetch = lambda url: _Resp(200, "# TYPE node_load1 gauge\nnode_load1 0.5\n")  # type: ignore[method-assign]
    with pytest.raises(SourceError) as e:
        src.poll()
    assert e.value.reason == "parse" and "diskstats" in str(e.value)
    src.close()


def test_the_map_joins_its_lun_by_wwid_and_make_host_source_builds_the_source() -> None:
    directory = LunDirectory()
    directory.publish("c1", [LunIdentity("c1", "svm1", "oradata", "/vol/oradata/lun0", SERIAL)])
    target = _target()
    object.__setattr__(target, "source", "node_exporter")  # the config's Literal does not list it yet
    source = make_host_source(target)
    assert isinstance(source, NodeExporterSource)
    src = joined(source, directory)
    src.fetch = lambda url: _Resp(200, host_page(0.0).text())  # type: ignore[attr-defined]
    d = by_disk(src.poll())["mpatha"]
    assert (d.cluster, d.svm, d.lun, d.lun_serial) == ("c1", "svm1", "/vol/oradata/lun0", SERIAL)
    assert (d.observed_paths, d.configured_paths) == (2, 2)
    src.close()


def test_parse_page_rejects_text_that_is_not_prometheus() -> None:
    with pytest.raises(ValueError):
        parse_page('node_disk_reads_completed_total{device="sda" 1\n')
    assert readings(parse_page("")) == []


def uname(release: str, machine: str = "x86_64") -> list[str]:
    """node_exporter's uname collector, as a 1.x release writes it."""
    return [
        "# HELP node_uname_info Labeled system information as provided by the uname system call.",
        "# TYPE node_uname_info gauge",
        f'node_uname_info{{domainname="(none)",machine="{machine}",nodename="ora01",release="{release}",'
        f'sysname="Linux",version="#101-Ubuntu SMP"}} 1',
    ]


def _polled(pages: list[tuple[float, Page]], caplog: pytest.LogCaptureFixture) -> Snapshot:
    """The last of NodeExporterSource's polls of ``pages`` at their times."""
    caplog.set_level(logging.INFO, logger="sanlens.hosts.cooking")
    src = NodeExporterSource(_target())
    texts, times = iter([p.text() for _, p in pages]), iter([t for t, _ in pages])
    src.fetch = lambda url: _Resp(200, next(texts))  # type: ignore[method-assign]
    src.clock = lambda: next(times)  # type: ignore[method-assign]
    snaps = [src.poll() for _ in pages]
    src.close()
    return snaps[-1]


def test_busy_time_counted_per_io_start_is_bounded_by_the_requests_in_flight(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 5.15 kernel charges a jiffy at each I/O start (update_io_ticks before 99dc422335d8): 500 reads/s of
    0.3 ms read 88 % busy at HZ=250 while 0.15 of a request is in flight on average."""
    pages = []
    for t_ms in (0.0, 15_000.0):
        page = host_page(t_ms)
        page.extra += uname("5.15.0-91-generic")
        k = t_ms / 1000.0
        for name, share in (("dm-2", 1.0), ("sdb", 0.5), ("sdc", 0.5)):
            page.devices[name].update(
                reads=1e6 + 500 * share * k,
                writes=1e6,
                rtime=50.0 + 500 * share * 0.0003 * k,
                wtime=20.0,
                io=100.0 + 0.88 * k,
                weighted=60.0 + 500 * share * 0.0003 * k,
                discards=0.0,
                flushes=0.0,
            )
        pages.append((100.0 + k, page))
    d = by_disk(_polled(pages, caplog))["mpatha"]
    assert (
        "busy time as counted 88 %, bounded by the requests in flight to 15 % (kernel 5.15.0-91-generic)"
        in (caplog.text)
    )
    assert d.read_iops == pytest.approx(500.0) and d.read_latency_s == pytest.approx(0.0003)
    assert d.reported_busy_ratio == pytest.approx(0.88)  # as the kernel counted it
    assert d.idle_ratio == pytest.approx(1.0 - 500 * 0.0003)  # 85 % idle, not 12 %
    assert d.kernel == "5.15.0-91-generic"  # named to the diagnoses' advice
    for path in d.path_stats:
        assert path.busy_ratio == pytest.approx(250 * 0.0003)


def test_busy_time_a_device_really_had_is_left_as_counted() -> None:
    p0, p1 = host_page(0.0), host_page(15_000.0)
    _, s1 = _cook([(0.0, p0), (15.0, p1)])
    d = by_disk(s1)["mpatha"]
    assert d.reported_busy_ratio == pytest.approx(0.6) and d.idle_ratio == pytest.approx(0.4)


def test_discards_counted_in_field_11_stay_apart_from_reads_and_writes_in_flight() -> None:
    """An fstrim on a thin LUN: 2,000 discards/s of 40 ms each. Since 5.0 field 11 sums every completed
    request's duration, so it grows 80 s/s more; the reads and writes in flight stay 8.5."""
    pages = []
    for t_ms in (0.0, 15_000.0):
        page = host_page(t_ms)
        k = t_ms / 1000.0
        mp = page.devices["dm-2"]
        mp.update(
            discards=1e5 + 2000 * k,
            dtime=4e3 + 2000 * 0.040 * k,
            flushes=500.0 + 10 * k,
            ftime=2.0 + 10 * 0.002 * k,
            weighted=5_000.0 + (8.5 + 80.0 + 0.02) * k,
        )
        pages.append((k, page))
    _, s1 = _cook(pages)
    d = by_disk(s1)["mpatha"]
    assert d.outstanding_io == pytest.approx(8.5)
    assert d.discard_iops == pytest.approx(2000.0) and d.discard_latency_s == pytest.approx(0.040)
    assert d.flush_iops == pytest.approx(10.0) and d.flush_latency_s == pytest.approx(0.002)
    assert d.read_iops == pytest.approx(2000.0) and d.write_iops == pytest.approx(500.0)
    # field 11 is still exposed as the kernel counts it
    assert sample(s1, "sanlens_host_disk_queue_seconds_total", disk="mpatha") == pytest.approx(
        pages[1][1].devices["dm-2"]["weighted"]
    )


WRAP_COUNT = 2**32


def _wrapping_writes(machine: str) -> list[tuple[float, Page]]:
    """Two pages 15 s apart across which mpatha's write count (and its sectors) cross 2^32, as an
    ``unsigned long`` does on a 32-bit kernel."""
    pages = []
    for t_ms in (0.0, 15_000.0):
        page = host_page(t_ms)
        page.extra += uname("4.19.0-27-686-pae" if machine != "x86_64" else "4.19.0-27-amd64", machine)
        k = t_ms / 1000.0
        mp = page.devices["dm-2"]
        mp["writes"] = (WRAP_COUNT - 3000.0 + 500 * k) % WRAP_COUNT
        mp["wbytes"] = (512.0 * (WRAP_COUNT - 100_000.0) + 500 * 65536 * k) % (512.0 * WRAP_COUNT)
        pages.append((k, page))
    assert pages[1][1].devices["dm-2"]["writes"] < pages[0][1].devices["dm-2"]["writes"]
    return pages


@pytest.mark.parametrize("machine", ["i686", "armv7l"])
def test_a_32_bit_kernels_counts_wrap_at_2_32_and_are_no_restart(
    machine: str, caplog: pytest.LogCaptureFixture
) -> None:
    d = by_disk(_polled(_wrapping_writes(machine), caplog))["mpatha"]
    assert d.write_iops == pytest.approx(500.0)
    assert d.write_bytes_s == pytest.approx(500 * 65536.0)
    assert d.read_iops == pytest.approx(2000.0)  # the other disks' and counters' rates are kept too


def test_on_a_64_bit_kernel_the_same_drop_is_a_restart(caplog: pytest.LogCaptureFixture) -> None:
    d = by_disk(_polled(_wrapping_writes("x86_64"), caplog))["mpatha"]
    assert d.write_iops is None and d.read_iops is None
