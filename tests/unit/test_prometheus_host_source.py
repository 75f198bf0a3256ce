"""A host read from a Prometheus query API (``source: prometheus``): the query, the scrape times, the
32-bit wraps that ``rate()`` would take for resets, and each way the API can fail."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import responses
import yaml

from sanlens.config import Duration, HostTarget
from sanlens.config.load import load_config_text
from sanlens.errors import ConfigError, SourceError
from sanlens.hosts.catalogue import WINDOWS_EXPORTER
from sanlens.hosts.prometheus_source import PrometheusHostSource, latest
from sanlens.model import HostView

PROM = "http://prom.example:9090"
API = f"{PROM}/api/v1/query"
SEL = 'instance="db1:9182"'
WRAP = 2**32 * 1e-7  # the Avg. Disk sec/Read numerator: 2^32 ticks of 100 ns


def target(**kw: Any) -> HostTarget:
    base: dict[str, Any] = dict(
        name="db1", source="prometheus", exporter="windows_exporter", url=PROM, selector=SEL,
        poll_interval=Duration(15),
    )  # fmt: skip
    return HostTarget(**(base | kw))


def series(name: str, values: list[tuple[float, float]], **labels: str) -> dict[str, Any]:
    return {"metric": {"__name__": name, **labels}, "values": [[t, repr(v)] for t, v in values]}


def windows_page(
    t: float, reads: float, read_lat: float, read_time: float | None = None
) -> list[dict[str, Any]]:
    """One disk's counters at scrape time ``t`` (with an older sample before it, as a range returns)."""
    out = [
        series("windows_physical_disk_reads_total", [(t - 15, 0.0), (t, reads)], disk="1"),
        series("windows_physical_disk_read_latency_seconds_total", [(t, read_lat)], disk="1"),
        series("windows_physical_disk_idle_seconds_total", [(t, t * 0.5)], disk="1"),
        series("windows_logical_disk_info", [(t, 1.0)], disk="1", volume="E:"),
    ]
    if read_time is not None:
        out.append(series("windows_physical_disk_read_seconds_total", [(t, read_time)], disk="1"))
    return out


def answer(result: list[dict[str, Any]], kind: str = "matrix") -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": kind, "result": result}}


def test_one_instant_query_of_a_range_selector_names_the_hosts_families_and_selector() -> None:
    with responses.RequestsMock() as rsps:
        rsps.get(API, json=answer(windows_page(1000.0, 100.0, 1.0)))
        src = PrometheusHostSource(target())
        src.poll()
        (call,) = rsps.calls
    q = parse_qs(urlsplit(call.request.url).query)["query"][0]
    assert q.startswith('{__name__=~"') and q.endswith("}[60s]"), q  # 2 x 15 s, at least a minute
    assert SEL in q
    for family in WINDOWS_EXPORTER.fields():
        assert family in q
    assert "sanlens_windows_disk_info" in q and "windows_logical_disk_info" in q
    assert src.queries == 1


def test_rates_divide_by_the_scrapes_interval_and_unwrap_a_32_bit_numerator() -> None:
    """Prometheus scraped 30 s apart while sanlens polled twice; the latency numerator wrapped once in
    between (rate() would read it as a reset)."""
    before = WRAP - 2.0  # 2 s short of the wrap
    after = 4.0  # 2 s to the wrap + 4 s after it: 6 s of latency over 3000 reads = 2 ms
    with responses.RequestsMock() as rsps:
        rsps.get(API, json=answer(windows_page(1000.0, 10_000.0, before)))
        rsps.get(API, json=answer(windows_page(1030.0, 13_000.0, after)))
        src = PrometheusHostSource(target())
        src.poll()
        snap = src.poll()
    assert isinstance(snap.view, HostView)
    assert snap.view.interval_s == pytest.approx(30.0)
    (disk,) = snap.view.disks
    assert disk.read_iops == pytest.approx(3000.0 / 30.0)
    assert disk.read_latency_s == pytest.approx(6.0 / 3000.0)
    assert disk.drives == ("E:",)


def test_a_poll_without_a_new_scrape_cooks_nothing_new() -> None:
    with responses.RequestsMock() as rsps:
        rsps.get(API, json=answer(windows_page(1000.0, 10_000.0, 1.0)))
        rsps.get(API, json=answer(windows_page(1030.0, 13_000.0, 7.0)))
        rsps.get(API, json=answer(windows_page(1030.0, 13_000.0, 7.0)))
        src = PrometheusHostSource(target())
        src.poll()
        second = src.poll()
        third = src.poll()
    assert third is second, "the same scrape again: the last snapshot stands (no zero-interval rates)"
    assert second.view is not None and second.view.disks[0].read_iops == pytest.approx(100.0)


def test_only_the_newest_scrape_counts_a_vanished_series_is_not_current() -> None:
    result = [
        series("windows_physical_disk_reads_total", [(990.0, 5.0), (1000.0, 10.0)], disk="1"),
        series("windows_physical_disk_reads_total", [(940.0, 7.0)], disk="2"),  # gone 60 s ago
    ]
    scraped, samples = latest(result, tolerance_s=7.5)
    assert scraped == 1000.0
    assert samples == [("windows_physical_disk_reads_total", {"disk": "1"}, 10.0)]


def test_the_join_is_exported_not_the_exporters_counters_again() -> None:
    with responses.RequestsMock() as rsps:
        rsps.get(API, json=answer(windows_page(1000.0, 100.0, 1.0)))
        rsps.get(API, json=answer(windows_page(1015.0, 400.0, 2.0)))
        src = PrometheusHostSource(target())
        src.poll()
        snap = src.poll()
    names = {m.name for m in snap.metrics}
    assert "sanlens_host_disk_info" in names
    assert not any(n.endswith("_total") for n in names), names


def test_linux_hosts_go_through_the_node_exporter_parser() -> None:
    wwid = "3600a098038314359725d516c69733471"
    result = [
        series("node_disk_reads_completed_total", [(t, 1000.0 * (t - 1000))], device="dm-0") for t in (1000.0,)
    ] + [
        series("node_disk_info", [(1000.0, 1.0)], device="dm-0"),
        series("node_dmmultipath_device_info", [(1000.0, 1.0)], device="mpatha", sysfs_name="dm-0", uuid=f"mpath-{wwid}"),
        series("node_disk_busy", [(1000.0, 55.0)], node="n1"),  # Harvest's, not diskstats: never read
    ]  # fmt: skip
    with responses.RequestsMock() as rsps:
        rsps.get(API, json=answer(result))
        src = PrometheusHostSource(target(exporter="node_exporter", selector='instance="ora1:9100"'))
        snap = src.poll()
        q = parse_qs(urlsplit(rsps.calls[0].request.url).query)["query"][0]
    assert "node_dmmultipath_device_info" in q and "node_disk_busy" not in q.replace("node_disk_busy_", "")
    assert isinstance(snap.view, HostView)
    assert [d.disk for d in snap.view.disks] == ["mpatha"]
    assert snap.view.disks[0].platform == "linux"


@pytest.mark.parametrize(
    ("status", "body", "reason", "words"),
    [
        (503, {"status": "error"}, "http", "HTTP 503"),
        (200, {"status": "error", "error": "parse error at char 3"}, "api", "parse error at char 3"),
        (200, answer([], "vector"), "parse", "expected a matrix"),
        (200, answer([]), "stale", 'instance="db1:9182"'),
        (200, "not json", "parse", "not a Prometheus query API answer"),
    ],
)
def test_failures_name_what_went_wrong(status: int, body: Any, reason: str, words: str) -> None:
    with responses.RequestsMock() as rsps:
        if isinstance(body, str):
            rsps.get(API, body=body, status=status)
        else:
            rsps.get(API, json=body, status=status)
        src = PrometheusHostSource(target())
        with pytest.raises(SourceError) as e:
            src.poll()
    assert e.value.reason == reason and words in str(e.value)


def test_credentials_in_the_url_are_never_echoed() -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.get(API, status=500)
        src = PrometheusHostSource(target(url="http://u:s3cret@prom.example:9090"))
        with pytest.raises(SourceError) as e:
            src.poll()
    assert "s3cret" not in str(e.value)


@pytest.mark.parametrize(
    ("host", "words"),
    [
        ({"exporter": "windows_exporter", "url": PROM}, "needs a selector"),
        ({"selector": SEL, "url": PROM}, "needs exporter"),
        ({"selector": SEL, "exporter": "node_exporter"}, "needs the url of a Prometheus query API"),
    ],
)
def test_a_prometheus_host_without_its_keys_is_refused_with_a_message(
    host: dict[str, Any], words: str
) -> None:
    doc = {"hosts": [{"name": "db1", "source": "prometheus", **host}]}
    with pytest.raises(ConfigError, match=words):
        load_config_text(yaml.safe_dump(doc))
