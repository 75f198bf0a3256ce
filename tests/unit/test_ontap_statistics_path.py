"""The `statistics` collection path and per-cluster capabilities, on real captures (responses mocks).

Rates are checked against independent arithmetic on ONTAP's own records: two real
`GET /api/storage/volumes?fields=statistics` answers 141 s apart (their `statistics.timestamp`).
"""

from __future__ import annotations

import calendar
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import responses

from conftest import fixture_path
from sanlens.config import OntapTarget
from sanlens.ontap import statistics
from sanlens.ontap.collector import OntapSource

BASE = "https://c1.example"
EMPTY = {"records": [], "num_records": 0}
NOT_FOUND = {"error": {"message": "API not found", "code": "3"}}


def _keyperf(n: int) -> dict[str, Any]:
    return json.loads(Path(fixture_path(f"ontap/keyperf/volumes-statistics-{n}.json")).read_text())


def _epoch(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))


def _cluster(rsps: Any, version: tuple[int, int, int], asa_r2: bool = False) -> None:
    g, m, n = version
    rsps.get(
        f"{BASE}/api/cluster",
        json={
            "name": "c1",
            "version": {"generation": g, "major": m, "minor": n},
            "san_optimized": asa_r2,
            "disaggregated": asa_r2,
        },
    )


def _volumes_in_turn(rsps: Any, docs: list[dict[str, Any]]) -> None:
    answers = iter(docs)

    def volumes(_req: Any) -> tuple[int, dict[str, str], str]:
        return 200, {}, json.dumps(next(answers))

    rsps.add_callback(responses.GET, f"{BASE}/api/storage/volumes", callback=volumes)


def test_volume_statistics_cook_over_ontaps_own_sample_times() -> None:
    one, two = _keyperf(1), _keyperf(2)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _cluster(rsps, (9, 14, 1))
        for path in (
            "cluster/nodes",
            "storage/luns",
            "storage/aggregates",
            "storage/disks",
            "network/fc/ports",
        ):
            rsps.get(f"{BASE}/api/{path}", json=EMPTY)
        for path in ("storage/namespaces", "network/ip/interfaces"):
            rsps.get(f"{BASE}/api/{path}", status=404, json=NOT_FOUND)
        _volumes_in_turn(rsps, [one, two])
        src = OntapSource(OntapTarget(name="c1", url=BASE, collection="statistics"))
        first = src.poll()
        second = src.poll()  # a few ms later by our clock: the rates run between ONTAP's timestamps
        assert not any("/counter/tables" in c.request.url for c in rsps.calls)
    assert first.view.volumes == () or all(v.read_iops is None for v in first.view.volumes)
    got = {v.volume: v for v in second.view.volumes}
    checked = 0
    for b in two["records"]:
        a = next(r for r in one["records"] if r["uuid"] == b["uuid"])
        sa, sb = a["statistics"], b["statistics"]
        dt = _epoch(sb["timestamp"]) - _epoch(sa["timestamp"])
        assert dt == 141.0
        d_ops = sb["iops_raw"]["read"] - sa["iops_raw"]["read"]
        d_lat = sb["latency_raw"]["read"] - sa["latency_raw"]["read"]
        d_bytes = sb["throughput_raw"]["write"] - sa["throughput_raw"]["write"]
        v = got[b["name"]]
        assert v.read_iops == pytest.approx(d_ops / dt)
        if d_ops >= 1:
            assert v.read_latency_s == pytest.approx(d_lat / d_ops * 1e-6)  # latency_raw is microseconds
            checked += 1
        assert v.write_iops == pytest.approx((sb["iops_raw"]["write"] - sa["iops_raw"]["write"]) / dt)
        assert d_bytes >= 0
    assert checked >= 1, "the captures hold a volume with reads between them"
    info = {m.name: m for m in second.metrics}["sanlens_ontap_cluster_info"]
    labels = dict(zip(info.label_names, info.samples[0][0], strict=True))
    assert (labels["personality"], labels["collection"]) == ("unified", "statistics")
    missing = {m.name: m for m in second.metrics}["sanlens_ontap_endpoint_missing"]
    assert {s[0][1] for s in missing.samples} == {"/api/storage/namespaces", "/api/network/ip/interfaces"}


def test_a_record_with_no_new_sample_is_not_a_zero_rate() -> None:
    """ONTAP's statistics move at its own pace: an unchanged timestamp means no sample, not an idle volume."""
    one = _keyperf(1)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _cluster(rsps, (9, 14, 1))
        for path in ("cluster/nodes", "storage/luns", "storage/namespaces", "storage/aggregates", "storage/disks",
                     "network/fc/ports", "network/ip/interfaces"):  # fmt: skip
            rsps.get(f"{BASE}/api/{path}", json=EMPTY)
        _volumes_in_turn(rsps, [one, one, _keyperf(2)])
        src = OntapSource(OntapTarget(name="c1", url=BASE, collection="statistics"))
        src.poll()
        same = src.poll()
        moved = src.poll()
    assert all(v.read_iops is None for v in same.view.volumes)
    assert any(v.read_iops for v in moved.view.volumes), "the next real sample cooks against the first"


def test_a_sample_whose_status_is_not_ok_is_neither_cooked_nor_exported() -> None:
    obj = statistics.objects()["volume"]
    rec = _keyperf(1)["records"][0]
    bad = {**rec, "statistics": {**rec["statistics"], "status": "partial_no_response"}}
    row = statistics.row_of(obj, bad)
    assert row is not None and row.complete is False
    assert statistics.row_of(obj, {**rec, "statistics": {**rec["statistics"], "timestamp": "-"}}) is None
    good = statistics.row_of(obj, rec)
    assert good is not None and good.complete
    assert good.counters["read_latency"] == rec["statistics"]["latency_raw"]["read"]
    assert good.sampled_at == _epoch(rec["statistics"]["timestamp"])


def test_an_asa_r2_system_is_read_from_statistics_and_its_refusals_cost_only_what_needs_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    stats = _keyperf(1)["records"][0]["statistics"]
    lun = {"name": "/vol/su1/lun1", "uuid": "u-l1", "serial_number": "81E3T+Qa9Ugx", "svm": {"name": "s1"},
           "location": {"volume": {"name": "su1"}, "node": {"name": "n1"}}, "status": {"state": "online"},
           "statistics": stats}  # fmt: skip
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _cluster(rsps, (9, 16, 1), asa_r2=True)
        rsps.get(f"{BASE}/api/cluster/nodes", json={"records": [{"name": "n1"}, {"name": "n2"}]})
        rsps.get(f"{BASE}/api/storage/luns", json={"records": [lun]})
        rsps.get(f"{BASE}/api/storage/availability-zones",
                 json={"records": [{"name": "saz1", "nodes": [{"name": "n1"}, {"name": "n2"}]}]})  # fmt: skip
        for path in ("storage/aggregates", "storage/namespaces"):
            rsps.get(f"{BASE}/api/{path}", status=404, json=NOT_FOUND)
        for path in ("storage/disks", "storage/volumes", "network/fc/ports", "network/ip/interfaces"):
            rsps.get(f"{BASE}/api/{path}", json=EMPTY)
        src = OntapSource(OntapTarget(name="c1", url=BASE))
        snap = src.poll()
        src.poll()
        asked = [c.request.url for c in rsps.calls]
    assert not any("/counter/tables" in u for u in asked), "ASA r2 serves no counter tables: never asked"
    assert not any("/storage/aggregates" in u for u in asked), "ASA r2 has no aggregates: never asked"
    assert src.caps.personality == "asa-r2" and src._fallback
    (x,) = [x for x in snap.view.luns if x.lun == "/vol/su1/lun1"]
    assert (x.zone, x.kind, x.serial) == ("saz1", "lun", "81E3T+Qa9Ugx")
    fams = {m.name: m for m in snap.metrics}
    assert {s[0][1] for s in fams["sanlens_ontap_endpoint_missing"].samples} == {"/api/storage/namespaces"}
    assert {s[0][1:] for s in fams["sanlens_ontap_availability_zone_info"].samples} == {
        ("saz1", "n1"),
        ("saz1", "n2"),
    }
    assert sum("refuses /api/storage/namespaces" in r.getMessage() for r in caplog.records) == 1, (
        "logged once"
    )
    said = [r.getMessage() for r in caplog.records if "ASA r2 system" in r.getMessage()]
    assert len(said) == 1 and "disk_busy_imbalance" in said[0], (
        "the diagnoses that cannot apply are named once"
    )


def test_a_forbidden_optional_endpoint_is_reported_and_a_forbidden_lun_list_is_not_hidden() -> None:
    """A least-privilege role without a newer endpoint loses only that endpoint; without LUNs, the poll fails."""
    from sanlens.errors import SourceError

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _cluster(rsps, (9, 12, 1))
        for path in ("cluster/nodes", "storage/luns", "storage/aggregates", "storage/disks", "storage/volumes",
                     "network/fc/ports"):  # fmt: skip
            rsps.get(f"{BASE}/api/{path}", json=EMPTY)
        rsps.get(
            f"{BASE}/api/storage/namespaces",
            status=403,
            json={"error": {"message": "not authorized", "code": "6"}},
        )
        rsps.get(f"{BASE}/api/network/ip/interfaces", json=EMPTY)
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=[]))
        snap = src.poll()
        fam = {m.name: m for m in snap.metrics}["sanlens_ontap_endpoint_missing"]
        assert [s[0][1:] for s in fam.samples] == [("/api/storage/namespaces", "forbidden")]
        rsps.replace(
            responses.GET,
            f"{BASE}/api/storage/luns",
            status=403,
            json={"error": {"message": "no", "code": "6"}},
        )
        src._inventory_at = 0.0
        with pytest.raises(SourceError, match="permission denied"):
            src.poll()


def _stats(ts: str, ops: tuple[int, int], lat_us: tuple[int, int], data: tuple[int, int]) -> dict[str, Any]:
    """A ``statistics`` field in the shape of the real volume capture: raw cumulative values."""
    return {
        "timestamp": ts,
        "status": "ok",
        "iops_raw": {"read": ops[0], "write": ops[1], "other": 0, "total": sum(ops)},
        "latency_raw": {"read": lat_us[0], "write": lat_us[1], "other": 0, "total": sum(lat_us)},
        "throughput_raw": {"read": data[0], "write": data[1], "other": 0, "total": sum(data)},
    }


def test_lun_and_fc_port_statistics_cook_to_hand_arithmetic() -> None:
    """LUNs and FC ports read through their statistics fields: rates over ONTAP's own sample times,
    latency as the latency delta over the ops delta (µs), bytes per second; the same cooking as the
    volumes of the real capture, on the other objects that carry one."""
    t1, t2 = "2026-11-24T10:00:00Z", "2026-11-24T10:01:15Z"  # 75 s apart
    lun = {"name": "/vol/v1/l1", "uuid": "u-l1", "svm": {"name": "s1"},
           "location": {"volume": {"name": "v1"}, "node": {"name": "n1"}}}  # fmt: skip
    port = {"name": "0e", "uuid": "u-p1", "node": {"name": "n1"}, "state": "online", "enabled": True,
            "fabric": {"connected_speed": 32}}  # fmt: skip
    luns = [
        {**lun, "statistics": _stats(t1, (1_000_000, 400_000), (900_000_000, 1_000_000_000), (8_192_000_000, 1_638_400_000))},
        {**lun, "statistics": _stats(t2, (1_150_000, 460_000), (1_035_000_000, 1_090_000_000), (9_420_800_000, 2_129_920_000))},
    ]  # fmt: skip
    ports = [
        {**port, "statistics": _stats(t1, (5_000_000, 2_000_000), (2_500_000_000, 1_200_000_000), (40_960_000_000, 16_384_000_000))},
        {**port, "statistics": _stats(t2, (5_300_000, 2_120_000), (2_650_000_000, 1_284_000_000), (43_417_600_000, 17_367_040_000))},
    ]  # fmt: skip
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _cluster(rsps, (9, 14, 1))
        for path in ("cluster/nodes", "storage/volumes", "storage/aggregates", "storage/disks"):
            rsps.get(f"{BASE}/api/{path}", json=EMPTY)
        for path in ("storage/namespaces", "network/ip/interfaces"):
            rsps.get(f"{BASE}/api/{path}", status=404, json=NOT_FOUND)
        for path, recs in (("storage/luns", luns), ("network/fc/ports", ports)):
            answers = iter([{"records": [r], "num_records": 1} for r in (recs[0], recs[0], recs[1], recs[1])])

            def answer(_req: Any, answers: Any = answers) -> tuple[int, dict[str, str], str]:
                return 200, {}, json.dumps(next(answers))

            rsps.add_callback(responses.GET, f"{BASE}/api/{path}", callback=answer)
        src = OntapSource(OntapTarget(name="c1", url=BASE, collection="statistics"))
        src.poll()
        second = src.poll()
    dt = 75.0
    (x,) = [v for v in second.view.luns if v.lun == "/vol/v1/l1"]
    assert x.read_iops == pytest.approx(150_000 / dt) and x.write_iops == pytest.approx(60_000 / dt)
    assert x.read_latency_s == pytest.approx(135_000_000 / 150_000 * 1e-6)  # 900 µs per read
    assert x.write_latency_s == pytest.approx(90_000_000 / 60_000 * 1e-6)  # 1.5 ms per write
    assert x.read_bytes_s == pytest.approx(1_228_800_000 / dt) and x.write_bytes_s == pytest.approx(
        491_520_000 / dt
    )
    (p,) = second.view.fc_ports
    assert p.read_bytes_s == pytest.approx((43_417_600_000 - 40_960_000_000) / dt)
    assert p.write_bytes_s == pytest.approx((17_367_040_000 - 16_384_000_000) / dt)
    # FC runs at 100 MB/s per Gbit/s: the busier direction over 32G's 3,200 MB/s
    assert p.utilization == pytest.approx(max(p.read_bytes_s, p.write_bytes_s) / 3.2e9)


def _project(rec: Any, paths: list[list[str]]) -> Any:
    """``rec`` cut to ``paths``, nothing else: a ``fields=`` answer with no field it did not ask for."""
    out: dict[str, Any] = {}
    for path in paths:
        src, dst = rec, out
        for i, part in enumerate(path):
            if not isinstance(src, dict) or part not in src:
                break
            if i == len(path) - 1:
                dst[part] = src[part]
            else:
                src, dst = src[part], dst.setdefault(part, {})
    return out


def _strict(rsps: Any, path: str, first: list[dict[str, Any]], later: list[dict[str, Any]]) -> None:
    """``path`` answering only the fields each request names: ``first`` to its first request for
    statistics (and every one before), ``later`` after it."""
    asked = {"statistics": 0}

    def answer(req: Any) -> tuple[int, dict[str, str], str]:
        from urllib.parse import parse_qs, urlparse

        fields = parse_qs(urlparse(req.url).query).get("fields", [""])[0]
        paths = [f.split(".") for f in fields.split(",") if f]
        recs = later if asked["statistics"] else first
        if any(p[0] == "statistics" for p in paths):
            asked["statistics"] += 1
        out = [_project(r, paths) for r in recs]
        return 200, {}, json.dumps({"records": out, "num_records": len(out)})

    rsps.add_callback(responses.GET, f"{BASE}/api/{path}", callback=answer)


def test_every_statistics_object_asks_for_the_fields_it_reads() -> None:
    """ONTAP answers only what ``fields=`` names: a row id or property not asked for is never there."""
    for name, obj in statistics.objects().items():
        assert statistics.unasked(obj) == (), name
    assert "uuid" in statistics.objects()["fcp"].fields


def test_fc_ports_of_two_nodes_with_one_name_stay_two_rows_when_ontap_answers_only_the_fields_asked() -> None:
    """Both nodes have an FC port 0e: the rows are keyed by the port's uuid, so the request must ask for it."""
    t1, t2 = "2026-11-24T10:00:00Z", "2026-11-24T10:01:15Z"  # 75 s apart
    ports = [
        {"name": "0e", "uuid": f"u-{node}-0e", "node": {"name": node}, "state": "online", "enabled": True,
         "fabric": {"connected_speed": 32}}
        for node in ("n1", "n2")
    ]  # fmt: skip
    sent = {"n1": (40_960_000_000, 43_417_600_000), "n2": (1_000_000_000, 1_750_000_000)}

    def at(i: int) -> list[dict[str, Any]]:
        ts = (t1, t2)[i]
        return [
            {**p, "statistics": _stats(ts, (1000 * (i + 1), 0), (0, 0), (sent[p["node"]["name"]][i], 0))}
            for p in ports
        ]

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _cluster(rsps, (9, 14, 1))
        for path in (
            "cluster/nodes",
            "storage/volumes",
            "storage/luns",
            "storage/aggregates",
            "storage/disks",
        ):
            rsps.get(f"{BASE}/api/{path}", json=EMPTY)
        for path in ("storage/namespaces", "network/ip/interfaces"):
            rsps.get(f"{BASE}/api/{path}", status=404, json=NOT_FOUND)
        _strict(rsps, "network/fc/ports", at(0), at(1))
        src = OntapSource(OntapTarget(name="c1", url=BASE, collection="statistics"))
        src.poll()
        second = src.poll()
    got = {(p.node, p.port): p for p in second.view.fc_ports}
    assert set(got) == {("n1", "0e"), ("n2", "0e")}
    assert got[("n1", "0e")].read_bytes_s == pytest.approx((43_417_600_000 - 40_960_000_000) / 75.0)
    assert got[("n2", "0e")].read_bytes_s == pytest.approx(750_000_000 / 75.0)


def test_ethernet_port_statistics_give_the_front_end_the_physical_ports_load() -> None:
    """No counter tables: the Ethernet ports' statistics (throughput_raw since 9.8) are the port's own
    bytes. An iSCSI LIF on the VLAN e0c-100 (700 MB/s of reads) and an NVMe/TCP LIF on e0c (600 MB/s)
    share one 10 GbE link: 1.04 of it. Without the ports' samples the LIFs over e0c add up, named so."""
    from sanlens.diagnose.base import Context
    from sanlens.diagnose.front_end import LIF_SUM, PORT_COUNTERS, front_end
    from sanlens.diagnose.history import History
    from sanlens.model import LunStats

    t1, t2 = "2026-11-24T10:00:00Z", "2026-11-24T10:01:40Z"  # 100 s apart
    node = {"name": "n1"}
    lifs = [
        {"name": "iscsi1", "uuid": "u-iscsi1", "svm": {"name": "s1"}, "services": ["data_iscsi"], "state": "up",
         "location": {"node": node, "port": {"name": "e0c-100", "node": node}}},
        {"name": "nvme1", "uuid": "u-nvme1", "svm": {"name": "s1"}, "services": ["data_nvme_tcp"], "state": "up",
         "location": {"node": node, "port": {"name": "e0c", "node": node}}},
    ]  # fmt: skip
    lif_sent = {"iscsi1": 700e6, "nvme1": 600e6}  # bytes per second
    eth = [
        {"name": "e0c", "uuid": "u-e0c", "node": node, "type": "physical", "state": "up", "speed": 10000},
        {"name": "e0c-100", "uuid": "u-e0c-100", "node": node, "type": "vlan", "state": "up", "speed": 10000},
    ]
    # the physical port: both LIFs' reads sent, and NAS writes received no SAN LIF carries
    port_rate = {"e0c": (1300e6, 50e6), "e0c-100": (700e6, 0.0)}  # (sent, received) per second

    def throughput(ts: str, i: int, sent: float, received: float) -> dict[str, Any]:
        s, r = int(1e12 + i * 100 * sent), int(1e12 + i * 100 * received)
        return {"timestamp": ts, "status": "ok", "throughput_raw": {"read": s, "write": r, "total": s + r}}

    def lif_recs(i: int) -> list[dict[str, Any]]:
        ts = (t1, t2)[i]
        return [{**x, "statistics": throughput(ts, i, lif_sent[x["name"]], 0.0)} for x in lifs]

    def eth_recs(i: int) -> list[dict[str, Any]]:
        ts = (t1, t2)[i]
        return [{**p, "statistics": throughput(ts, i, *port_rate[p["name"]])} for p in eth]

    def poll_twice(with_ports: bool) -> Any:
        with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
            _cluster(rsps, (9, 14, 1))
            for path in ("cluster/nodes", "storage/volumes", "storage/luns", "storage/aggregates",
                         "storage/disks", "network/fc/ports"):  # fmt: skip
                rsps.get(f"{BASE}/api/{path}", json=EMPTY)
            rsps.get(f"{BASE}/api/storage/namespaces", status=404, json=NOT_FOUND)
            _strict(rsps, "network/ip/interfaces", lif_recs(0), lif_recs(1))
            if with_ports:
                _strict(rsps, "network/ethernet/ports", eth_recs(0), eth_recs(1))
            else:  # ports that carry no sample: their speeds alone
                _strict(rsps, "network/ethernet/ports", eth, eth)
            src = OntapSource(OntapTarget(name="c1", url=BASE, collection="statistics"))
            src.poll()
            return src.poll().view

    lun = LunStats("c1", "s1", "v1", "/vol/v1/lun0", node="n1")
    view = poll_twice(with_ports=True)
    ports = {(p.node, p.port): p for p in view.eth_ports}
    assert ports[("n1", "e0c")].tx_bytes_s == pytest.approx(1300e6)
    assert ports[("n1", "e0c")].rx_bytes_s == pytest.approx(50e6)
    assert ports[("n1", "e0c")].speed_gbps == pytest.approx(10.0)
    fe = front_end(Context(0.0, {"c1": view}, {}, History()), lun)
    assert (fe.protocol, fe.port, fe.port_basis) == ("iscsi", "e0c", PORT_COUNTERS)
    assert fe.port_utilization == pytest.approx(1.04)

    view = poll_twice(with_ports=False)
    assert view.eth_ports == ()
    fe = front_end(Context(0.0, {"c1": view}, {}, History()), lun)
    assert (fe.port, fe.port_basis) == ("e0c", LIF_SUM) and fe.port_utilization == pytest.approx(1.04)
