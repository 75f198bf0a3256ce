"""A Linux host read back from Prometheus learns its kernel from ``node_uname_info`` as a direct scrape does:
on a 32-bit machine a diskstats count that passes 2^32 wraps, where ``rate()`` and a 64-bit reading see a
restart."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from sanlens.config import Duration, HostTarget
from sanlens.hosts.prometheus_source import PrometheusHostSource
from sanlens.model import HostView

PROM = "http://prom.example:9090"
API = f"{PROM}/api/v1/query"
WWID = "3600a098038314359725d516c69733471"
WRAP = 2**32


def series(name: str, t: float, value: float, **labels: str) -> dict[str, Any]:
    return {"metric": {"__name__": name, **labels}, "values": [[t - 15, repr(value)], [t, repr(value)]]}


def scrape(t: float, writes: float, machine: str) -> dict[str, Any]:
    """mpatha (dm-0) at scrape time ``t``: 2,000 reads/s since t = 1000, ``writes`` as the kernel shows them."""
    result = [
        series("node_disk_reads_completed_total", t, 1e6 + 2000.0 * (t - 1000.0), device="dm-0"),
        series("node_disk_writes_completed_total", t, writes, device="dm-0"),
        series("node_disk_info", t, 1.0, device="dm-0"),
        series("node_dmmultipath_device_info", t, 1.0, device="mpatha", sysfs_name="dm-0", uuid=f"mpath-{WWID}"),
        series("node_uname_info", t, 1.0, machine=machine, release="5.10.0-28-armmp", sysname="Linux",
               nodename="edge1", domainname="(none)", version="#1 SMP Debian"),
    ]  # fmt: skip
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def polled(machine: str) -> tuple[HostView, str]:
    target = HostTarget(name="edge1", source="prometheus", exporter="node_exporter", url=PROM,
                        selector='instance="edge1:9100"', poll_interval=Duration(15))  # fmt: skip
    with responses.RequestsMock() as rsps:
        rsps.get(API, json=scrape(1000.0, WRAP - 3000.0, machine))
        rsps.get(API, json=scrape(1015.0, 4500.0, machine))  # 7,500 writes later: past 2^32
        src = PrometheusHostSource(target)
        src.poll()
        snap = src.poll()
        query = parse_qs(urlsplit(rsps.calls[0].request.url).query)["query"][0]
    assert isinstance(snap.view, HostView)
    return snap.view, query


def test_a_32_bit_hosts_write_count_wraps_and_every_rate_is_kept() -> None:
    view, query = polled("armv7l")
    assert "node_uname_info" in query
    (d,) = view.disks
    assert d.write_iops == pytest.approx(7500.0 / 15.0)
    assert d.read_iops == pytest.approx(2000.0)


def test_on_a_64_bit_host_the_same_drop_is_a_restart() -> None:
    view, _ = polled("aarch64")
    (d,) = view.disks
    assert d.write_iops is None and d.read_iops is None
