"""windows_exporter source: real format, two hand-built scrapes, mapping, wraps, errors."""

from __future__ import annotations

import re

import pytest
import responses
from tests.conftest import fixture_path
from tests.joining import joined

from sanlens.config import AuthConfig, HostDiskMapping, HostTarget, TLSConfig
from sanlens.errors import SourceError
from sanlens.hosts.exporter_scrape import parse_scrape
from sanlens.hosts.registry import make_host_source
from sanlens.hosts.windows_exporter import scrape_url
from sanlens.join.directory import LunDirectory, LunIdentity
from sanlens.urls import safe_url

URL = "http://win01.example:9182"


def scrape(
    reads: float,
    writes: float,
    rlat: float,
    wlat: float,
    idle: float,
    rbytes: float,
    wbytes: float,
    split: float,
    queued: float,
    busy: float | None = None,
) -> str:
    """A windows_exporter-style scrape (HELP/TYPE as in the real capture) for disk 1 plus _Total-free disk 0."""
    pd = "windows_physical_disk_"
    fams = [
        ("reads_total", "counter", reads),
        ("writes_total", "counter", writes),
        ("read_latency_seconds_total", "counter", rlat),
        ("write_latency_seconds_total", "counter", wlat),
        ("idle_seconds_total", "counter", idle),
        ("read_bytes_total", "counter", rbytes),
        ("write_bytes_total", "counter", wbytes),
        ("split_ios_total", "counter", split),
        ("requests_queued", "gauge", queued),
    ]
    if busy is not None:
        fams.append(("read_seconds_total", "counter", busy))
    out = []
    for name, typ, v in fams:
        out.append(f"# HELP {pd}{name} x\n# TYPE {pd}{name} {typ}")
        out.append(f'{pd}{name}{{disk="0"}} 5')
        out.append(f'{pd}{name}{{disk="1"}} {v}')
    out.append("# HELP windows_logical_disk_info info\n# TYPE windows_logical_disk_info gauge")
    out.append(
        'windows_logical_disk_info{disk="1",filesystem="NTFS",serial_number="A1B2",type="fixed",volume="E:",volume_name="SQLDATA"} 1'
    )
    out.append(
        'windows_logical_disk_info{disk="0",filesystem="NTFS",serial_number="C3",type="fixed",volume="C:",volume_name=""} 1'
    )
    out.append(
        'windows_logical_disk_info{disk="1",filesystem="NTFS",serial_number="",type="fixed",volume="HarddiskVolume5",volume_name=""} 1'
    )
    out.append("# HELP sanlens_windows_disk_info Get-Disk\n# TYPE sanlens_windows_disk_info gauge")
    out.append(
        'sanlens_windows_disk_info{disk="1",friendly_name="NETAPP LUN C-Mode",serial_number="81E3T+Qa9Ugx ",unique_id="600A0980383143"} 1'
    )
    return "\n".join(out) + "\n"


def target(**kw: object) -> HostTarget:
    return HostTarget(name="sql01", url=URL, **kw)  # type: ignore[arg-type]


def directory() -> LunDirectory:
    d = LunDirectory()
    d.publish(
        "cluster1",
        [
            LunIdentity("cluster1", "svm1", "sql_data", "/vol/sql_data/lun0", "81E3T+Qa9Ugx", "node1"),
            LunIdentity("cluster1", "svm1", "sql_log", "/vol/sql_log/lun0", "81E3T+Qa9Ugy", "node2"),
        ],
    )
    return d


def samples(snap: object, name: str) -> dict[tuple[str, ...], float]:
    [m] = [m for m in snap.metrics if m.name == name]  # type: ignore[attr-defined]
    return {vals: v for vals, v in m.samples}


def test_real_capture_help_and_type_are_accepted() -> None:
    """The real windows_exporter capture (HELP/TYPE only for disks) parses; our sample lines appended to it work."""
    text = fixture_path("windows/windows-exporter-e2e-output.prom").read_text()
    families = dict(re.findall(r"^# TYPE (windows_physical_disk_\S+) (\S+)$", text, re.M))
    # the metric names and types this source reads exist in the real capture
    for name, typ in [
        ("windows_physical_disk_reads_total", "counter"),
        ("windows_physical_disk_read_latency_seconds_total", "counter"),
        ("windows_physical_disk_idle_seconds_total", "counter"),
        ("windows_physical_disk_requests_queued", "gauge"),
        ("windows_physical_disk_split_ios_total", "counter"),
    ]:
        assert families[name] == typ
    assert parse_scrape(text) == []  # no disk samples in the capture: nothing invented
    # put samples right under the real HELP/TYPE lines, as a real exporter does
    lines = []
    for line in text.splitlines():
        lines.append(line)
        m = re.match(r"^# TYPE (windows_physical_disk_\S+) ", line)
        if m:
            lines.append(f'{m.group(1)}{{disk="2"}} 7')
    [r] = parse_scrape("\n".join(lines) + "\n")
    assert (r.disk, r.reads, r.queue_length, r.read_latency_s) == ("2", 7.0, 7.0, 7.0)


@responses.activate
def test_two_scrapes_rates_and_mapping_by_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    first = scrape(1000, 500, 10.0, 2.0, 100.0, 8_192_000, 4_096_000, 10, 3, busy=50.0)
    # 15 s later: +3000 reads, +1500 writes, +36 s of read queue integral (read_seconds_total) and a
    # numerator that says otherwise (+31 s), +3 s of write latency (no write integral: the numerator),
    # +6 s idle, +24 MiB read, +6 MiB written, +30 split IOs, 7 queued now
    second = scrape(
        4000, 2000, 41.0, 5.0, 106.0, 8_192_000 + 25_165_824, 4_096_000 + 6_291_456, 40, 7, busy=86.0
    )
    responses.get(re.compile(r"http://win01\.example:9182/metrics.*"), body=first)
    clock = iter([1000.0, 1015.0])
    src = joined(make_host_source(target()), directory())
    src.clock = lambda: next(clock)  # type: ignore[attr-defined]
    s1 = src.poll()
    assert s1.view is not None and s1.view.disks[1].read_iops is None  # no rates from one scrape
    assert (
        "collect%5B%5D=physical_disk" in responses.calls[0].request.url
        or "collect[]=physical_disk" in responses.calls[0].request.url
    )
    responses.replace(responses.GET, re.compile(r"http://win01\.example:9182/metrics.*"), body=second)
    s2 = src.poll()
    view = s2.view
    assert view is not None and view.interval_s == 15.0
    d = {x.disk: x for x in view.disks}["1"]
    assert d.read_iops == pytest.approx(3000 / 15)
    assert d.write_iops == pytest.approx(1500 / 15)
    assert d.read_latency_s == pytest.approx(36.0 / 3000)  # 12 ms, from the 64-bit integral
    assert d.write_latency_s == pytest.approx(3.0 / 1500)  # 2 ms
    assert d.idle_ratio == pytest.approx(6.0 / 15)
    assert d.queue_length == 7
    assert d.read_bytes_s == pytest.approx(25_165_824 / 15)
    assert d.write_bytes_s == pytest.approx(6_291_456 / 15)
    assert d.split_iops == pytest.approx(2.0)
    assert d.drives == ("E:",)
    assert (d.cluster, d.svm, d.volume, d.lun, d.lun_serial) == (
        "cluster1",
        "svm1",
        "sql_data",
        "/vol/sql_data/lun0",
        "81E3T+Qa9Ugx",
    )
    assert (d.queue_depth, d.paths, d.data_class) == (32, 1, "data")
    lv = ("sql01", "1")  # counters carry host and disk only; the LUN is on the info family
    ident = ("81E3T+Qa9Ugx", "cluster1", "svm1", "sql_data", "/vol/sql_data/lun0")
    assert samples(s2, "sanlens_host_disk_ops_total")[(*lv, "read")] == 4000
    assert samples(s2, "sanlens_host_disk_latency_seconds_total")[(*lv, "read")] == 86.0  # the integral
    assert samples(s2, "sanlens_host_disk_latency_seconds_total")[(*lv, "write")] == 5.0
    assert samples(s2, "sanlens_host_disk_idle_seconds_total")[lv] == 106.0
    assert samples(s2, "sanlens_host_disk_queue_length")[lv] == 7
    info = samples(s2, "sanlens_host_disk_info")
    assert info[(*lv, *ident, "E:", "data", "serial")] == 1.0
    assert info[("sql01", "0", "", "", "", "", "", "C:", "data", "none")] == 1.0
    assert all("busy" not in m.name for m in s2.metrics)


@responses.activate
def test_static_mapping_by_drive_with_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    body = scrape(1, 1, 0.1, 0.1, 1, 1, 1, 0, 0).replace('sanlens_windows_disk_info{disk="1"', 'x{disk="9"')
    responses.get(re.compile(r".*"), body=body)
    t = target(
        disks=[
            HostDiskMapping(
                drive="e",
                cluster="cluster1",
                svm="svm1",
                lun="/vol/sql_log/lun0",
                data_class="log",
                queue_depth=64,
                paths=4,
            )
        ]
    )
    snap = joined(make_host_source(t), directory()).poll()
    assert snap.view is not None
    d = {x.disk: x for x in snap.view.disks}["1"]
    assert (d.cluster, d.svm, d.volume, d.lun) == ("cluster1", "svm1", "sql_log", "/vol/sql_log/lun0")
    assert d.lun_serial == "81E3T+Qa9Ugy"  # from the directory, Windows reported none
    assert (d.data_class, d.queue_depth, d.paths, d.q_eff) == ("log", 64, 4, 256)
    ident = ("81E3T+Qa9Ugy", "cluster1", "svm1", "sql_log", "/vol/sql_log/lun0")
    assert samples(snap, "sanlens_host_disk_queue_depth")[("sql01", "1")] == 64
    assert samples(snap, "sanlens_host_disk_info")[("sql01", "1", *ident, "E:", "log", "static")] == 1


@responses.activate
def test_32bit_latency_wrap_is_unwrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    wrap = 2**32 * 1e-7  # 429.4967296 s: the 32-bit tick counter scaled by 1e-7
    responses.get(re.compile(r".*"), body=scrape(100, 0, wrap - 1.0, 0, 0, 0, 0, 0, 0))
    clock = iter([0.0, 10.0])
    src = make_host_source(target())
    src.clock = lambda: next(clock)  # type: ignore[attr-defined]
    src.poll()
    responses.replace(responses.GET, re.compile(r".*"), body=scrape(600, 0, 1.5, 0, 0, 0, 0, 0, 0))
    snap = src.poll()
    d = {x.disk: x for x in snap.view.disks}["1"]  # type: ignore[union-attr]
    assert d.read_latency_s == pytest.approx(2.5 / 500)  # 1 s before the wrap + 1.5 s after
    lv = ("sql01", "1", "read")
    exposed = samples(snap, "sanlens_host_disk_latency_seconds_total")[lv]
    assert exposed == pytest.approx(wrap + 1.5)


@responses.activate
def test_counter_reset_keeps_exposed_counter_monotonic(monkeypatch: pytest.MonkeyPatch) -> None:
    responses.get(re.compile(r".*"), body=scrape(5000, 0, 10, 0, 0, 1e12, 0, 0, 0))
    src = make_host_source(target())
    src.poll()
    responses.replace(responses.GET, re.compile(r".*"), body=scrape(20, 0, 0.5, 0, 0, 4096, 0, 0, 0))
    snap = src.poll()
    s = samples(snap, "sanlens_host_disk_bytes_total")
    # the interval with the reset is unknown: the exposed counter holds still, never jumps
    assert s[("sql01", "1", "read")] == 1e12
    responses.replace(responses.GET, re.compile(r".*"), body=scrape(30, 0, 0.6, 0, 0, 8192, 0, 0, 0))
    s = samples(src.poll(), "sanlens_host_disk_bytes_total")
    assert s[("sql01", "1", "read")] == 1e12 + 4096  # counted again after it


@responses.activate
def test_http_errors_become_source_errors_without_credentials(tmp_path: object) -> None:
    responses.get(re.compile(r".*"), status=401)
    t = target(auth=AuthConfig(username="mon", password="s3cret-pw"))
    t.url = "https://mon:s3cret-pw@win01.example:9182/"
    src = make_host_source(t)
    with pytest.raises(SourceError) as e:
        src.poll()
    assert e.value.reason == "auth" and "s3cret" not in str(e.value)
    assert responses.calls[0].request.headers["Authorization"].startswith("Basic ")
    responses.replace(responses.GET, re.compile(r".*"), body="garbage{{{ 1\n")
    with pytest.raises(SourceError) as e:
        src.poll()
    assert e.value.reason == "parse"


def test_tls_options() -> None:
    src = make_host_source(target(tls=TLSConfig(ca_file="/etc/ca.pem")))
    assert src.session.verify == "/etc/ca.pem"  # type: ignore[attr-defined]
    src = make_host_source(target())
    assert src.session.verify is True  # type: ignore[attr-defined]


def test_url_helpers() -> None:
    assert scrape_url("http://h:9182").startswith("http://h:9182/metrics?collect[]=logical_disk")
    assert scrape_url("http://sim/windows/sql01/metrics").startswith(
        "http://sim/windows/sql01/metrics?collect[]="
    )
    assert "textfile" in scrape_url("http://h:9182/")
    assert safe_url("https://u:pw@h:9182/metrics?x=1") == "https://h:9182/metrics"


def test_old_instance_format_with_drive_letters() -> None:
    text = '# TYPE windows_physical_disk_reads_total counter\nwindows_physical_disk_reads_total{disk="1 E: F:"} 3\nwindows_physical_disk_reads_total{disk="_Total"} 3\n'
    [r] = parse_scrape(text)
    assert (r.disk, r.drives, r.reads) == ("1", ("E:", "F:"), 3.0)
