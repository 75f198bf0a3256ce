"""ONTAP behaviours real clusters show: partial aggregation, cpu_busy vs the average, upgrades,
a missing counter table, parity disks. Cluster answers are the real restperf captures or shapes
built from them (responses mocks); expectations are computed here from the raw numbers."""

from __future__ import annotations

import copy
import json
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import responses
from tests.builders import (
    AGGR_KEY,
    DISK_KEY,
    NODE_KEY,
    engine,
    finding,
    hostview,
    lun,
    mapped,
    ontap,
    snap,
    state,
)

from conftest import fixture_path
from sanlens.config import OntapTarget
from sanlens.model import AggregateInfo, DiskStats, NodeStats
from sanlens.ontap.collector import OntapSource

BASE = "https://c1.example"
NODE_Q = "system%3Anode"


def _load(rel: str) -> dict[str, Any]:
    return json.loads(Path(fixture_path(rel)).read_text())


def _inventory(rsps: Any, version: tuple[int, int, int] = (9, 12, 1), full: str = "") -> None:
    g, m, n = version
    v = {"generation": g, "major": m, "minor": n, "full": full or f"NetApp Release {g}.{m}.{n}"}
    rsps.get(f"{BASE}/api/cluster", json={"name": "c1", "version": v})
    for path in ("cluster/nodes", "storage/luns", "storage/namespaces", "storage/aggregates", "storage/disks",
                 "storage/volumes", "network/ip/interfaces"):  # fmt: skip
        rsps.get(f"{BASE}/api/{path}", json={"records": [], "num_records": 0})
    rsps.get(f"{BASE}/api/network/fc/ports", json={"records": [], "num_records": 0})


def _fams(snap: Any) -> dict[str, Any]:
    return {m.name: m for m in snap.metrics}


def _series(fam: Any, label: str) -> dict[str, float]:
    i = fam.label_names.index(label)
    return {lv[i]: v for lv, v in fam.samples}


# ----------------------------------------------------------------- 1. partial aggregation
def test_incomplete_system_node_rows_export_no_counters_but_keep_the_row() -> None:
    """The real capture: three rows with aggregation.complete false, one complete. Only the
    complete row's counters reach /metrics; the gauge counts the others."""
    doc = _load("ontap/restperf/system-node-rows-vsim-1.json")
    names = {r["id"]: {p["name"]: p["value"] for p in r["properties"]}["node.name"] for r in doc["records"]}
    complete = {names[r["id"]] for r in doc["records"] if r["aggregation"]["complete"]}
    incomplete = {names[r["id"]] for r in doc["records"] if not r["aggregation"]["complete"]}
    assert complete and incomplete, "the capture holds both kinds of rows"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _inventory(rsps)
        rsps.get(f"{BASE}/api/cluster/counter/tables/{NODE_Q}",
                 json=_load("ontap/restperf/system-node-schema-vsim.json"))  # fmt: skip
        rsps.get(f"{BASE}/api/cluster/counter/tables/{NODE_Q}/rows", json=doc)
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=["system:node"]))
        snap = src.poll()
    fams = _fams(snap)
    for fam in ("sanlens_ontap_node_cpu_busy_seconds_total", "sanlens_ontap_node_cpu_elapsed_seconds_total"):
        assert set(_series(fams[fam], "node")) == complete, fam
    busy = {
        names[r["id"]]: c["value"] for r in doc["records"] for c in r["counters"] if c["name"] == "cpu_busy"
    }
    for node in complete:
        assert _series(fams["sanlens_ontap_node_cpu_busy_seconds_total"], "node")[node] == pytest.approx(
            busy[node] * 1e-6
        )
    partial = fams["sanlens_ontap_partial_aggregation_rows"]
    assert list(partial.samples) == [(("c1", "system:node", "keep"), float(len(incomplete)))]


def test_skip_incomplete_aggregation_false_still_keeps_partial_sums_off_metrics() -> None:
    """The knob widens what the diagnoses see; a dropped sum is never a counter sample."""
    docs = [_load("ontap/restperf/volume-rows-1.json"), _load("ontap/restperf/volume-rows-2.json")]
    docs[1]["records"][0]["aggregation"] = {"count": 1, "complete": False}
    victim = {p["name"]: p["value"] for p in docs[1]["records"][0]["properties"]}["name"]
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _inventory(rsps)
        rsps.get(f"{BASE}/api/cluster/counter/tables/volume", json=_load("ontap/restperf/volume-schema.json"))
        rsps.get(f"{BASE}/api/cluster/counter/tables/volume/rows", json=docs[0])
        target = OntapTarget(name="c1", url=BASE, tables=["volume"], skip_incomplete_aggregation=False)
        src = OntapSource(target)
        first = _series(_fams(src.poll())["sanlens_ontap_volume_bytes_total"], "volume")
        rsps.replace(responses.GET, f"{BASE}/api/cluster/counter/tables/volume/rows", json=docs[1])
        second = _series(_fams(src.poll())["sanlens_ontap_volume_bytes_total"], "volume")
    assert victim in first and victim not in second
    assert set(second) == set(first) - {victim}


# ----------------------------------------------------------------- 2. cpu_busy vs the average
def _node_rows(busy: float, avg: float, kahuna: float, elapsed: float) -> dict[str, Any]:
    """One system:node row in the real capture's shape; values are microseconds."""
    doc = copy.deepcopy(_load("ontap/restperf/system-node-rows-vsim-1.json"))
    rec = next(r for r in doc["records"] if r["aggregation"]["complete"])
    rec["counters"] = [
        {"name": "cpu_busy", "value": busy},
        {"name": "average_processor_busy_percent", "value": avg},
        {"name": "cpu_elapsed_time", "value": elapsed},
        {"name": "num_processors", "value": 8},
        {"name": "domain_busy", "values": [kahuna, 0], "labels": ["kahuna", "wafl_exempt"]},
    ]
    doc["records"] = [rec]
    return doc


def test_cpu_busy_follows_the_busiest_domain_and_the_average_is_its_own_field() -> None:
    """Kahuna near a full core: ONTAP's cpu_busy says 92 %, the processors average 25 %. The view
    keeps both, the average is exported, and the serial-bottleneck evidence says "average CPU 25 %"."""
    t0 = 1e12
    e = 60e6  # 60 s of elapsed time, microseconds
    p1 = _node_rows(busy=0.5 * t0, avg=0.2 * t0, kahuna=0.3 * t0, elapsed=t0)
    p2 = _node_rows(
        busy=0.5 * t0 + 0.92 * e, avg=0.2 * t0 + 0.25 * e, kahuna=0.3 * t0 + 0.95 * e, elapsed=t0 + e
    )
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _inventory(rsps)
        rsps.get(f"{BASE}/api/cluster/counter/tables/{NODE_Q}",
                 json=_load("ontap/restperf/system-node-schema-vsim.json"))  # fmt: skip
        rsps.get(f"{BASE}/api/cluster/counter/tables/{NODE_Q}/rows", json=p1)
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=["system:node"]))
        src.poll()
        rsps.replace(responses.GET, f"{BASE}/api/cluster/counter/tables/{NODE_Q}/rows", json=p2)
        snap = src.poll()
    (node,) = [n for n in snap.view.nodes if n.domain_busy]
    assert node.cpu_busy_ratio == pytest.approx(0.92)
    assert node.average_processor_busy_ratio == pytest.approx(0.25)
    avg_fam = _fams(snap)["sanlens_ontap_node_average_processor_busy_seconds_total"]
    assert list(_series(avg_fam, "node").values()) == [pytest.approx((0.2 * t0 + 0.25 * e) * 1e-6)]
    level, f = _judge("cpu_domain_serial_bottleneck", NODE_KEY, ontap(0, nodes=(replace(node, node="n1"),)))
    assert level == 2  # Kahuna at 95 % of its core
    assert f["evidence"]["node_cpu_busy_ratio"] == pytest.approx(0.25)
    assert "average CPU is 25 %" in f["recommendation"]


def test_serial_bottleneck_evidence_is_the_average_not_cpu_busy() -> None:
    node = NodeStats("c1", "n1", processors=8, cpu_busy_ratio=0.93, average_processor_busy_ratio=0.22,
                     domain_busy={"kahuna": 0.93, "wafl_exempt": 0.4})  # fmt: skip
    _, f = _judge("cpu_domain_serial_bottleneck", NODE_KEY, ontap(0, nodes=(node,)))
    assert f["evidence"]["node_cpu_busy_ratio"] == 0.22
    assert "average CPU is 22 %" in f["recommendation"]


def test_host_queue_gate_reads_the_average_cpu_not_the_busiest_domain() -> None:
    """A node whose cpu_busy is 88 % because one serial domain is at 88 % of its core, with the
    processors 30 % busy on average, is not saturated (the serial gate is at 90 %)."""
    hot = NodeStats("c1", "n1", processors=8, cpu_busy_ratio=0.88, average_processor_busy_ratio=0.30,
                    domain_busy={"kahuna": 0.88})  # fmt: skip
    h = hostview(0, mapped(read_iops=31.0 / 0.003, write_iops=0.0, read_latency_s=0.003, write_latency_s=None,
                           idle_ratio=0.0, queue_length=31.0))  # fmt: skip
    o = ontap(0, luns=(lun(read_iops=3000.0, write_iops=0.0, read_latency_s=0.001),), nodes=(hot,))
    level, f = _judge("host_queue_limited", DISK_KEY, o, h)
    assert level == 1
    assert f["evidence"]["node_cpu_busy_ratio"] == 0.30
    busy = replace(hot, average_processor_busy_ratio=0.85)  # the processors themselves are the limit
    assert _judge("host_queue_limited", DISK_KEY, ontap(0, luns=o.luns, nodes=(busy,)), h)[0] == 0


def _judge(diagnosis: str, subject: str, *views: Any) -> tuple[int | None, dict[str, Any]]:
    e = engine(sustain_scale=0.0)
    for v in views:
        e.update(snap(v))
    return state(e, diagnosis, subject), finding(e, diagnosis) or {}


# ----------------------------------------------------------------- 3. upgrade and a missing table
def _lun_schema(with_queue_full: bool) -> dict[str, Any]:
    names = [("read_ops", "rate", "per_sec", ""), ("write_ops", "rate", "per_sec", "")]
    if with_queue_full:
        names.append(("queue_full", "rate", "per_sec", ""))
    return {
        "name": "lun",
        "counter_schemas": [
            {"name": n, "type": t, "unit": u, **({"denominator": {"name": b}} if b else {})}
            for n, t, u, b in names
        ],
    }


def _lun_rows(ops: float, queue_full: bool = True) -> dict[str, Any]:
    """A lun row as ONTAP answers it: only the counters the release has."""
    counters = [{"name": "read_ops", "value": ops}] + (
        [{"name": "queue_full", "value": 7}] if queue_full else []
    )
    rec = {
        "id": "/vol/v1/l1:u1",
        "properties": [{"name": "name", "value": "/vol/v1/l1"}, {"name": "svm.name", "value": "s1"}],
        "counters": counters,
        "aggregation": {"count": 2, "complete": True},
    }
    return {"records": [rec], "num_records": 1}


def test_an_upgrade_rereads_the_counter_schema_at_once() -> None:
    """9.11.1 lacks a counter, 9.12.1 has it: the poll right after the upgrade uses the new schema
    (a schema cached for 24 h regardless of the version would keep the counter missing for a day)."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _inventory(rsps, (9, 11, 1))
        schema = rsps.get(f"{BASE}/api/cluster/counter/tables/lun", json=_lun_schema(False))
        rows = rsps.get(f"{BASE}/api/cluster/counter/tables/lun/rows", json=_lun_rows(100, queue_full=False))
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=["lun"]))
        before = _fams(src.poll())
        assert "queue_full" in _series(before["sanlens_ontap_counter_missing"], "counter")
        assert "sanlens_ontap_lun_queue_full_total" not in before
        rsps.replace(responses.GET, f"{BASE}/api/cluster",
                     json={"name": "c1", "version": {"generation": 9, "major": 12, "minor": 1,
                                                     "full": "NetApp Release 9.12.1"}})  # fmt: skip
        rsps.replace(responses.GET, f"{BASE}/api/cluster/counter/tables/lun", json=_lun_schema(True))
        rsps.replace(responses.GET, f"{BASE}/api/cluster/counter/tables/lun/rows", json=_lun_rows(200))
        after = _fams(src.poll())
        asked = [c.request.url for c in rsps.calls if "/lun/rows" in c.request.url]
        # the new schema's counter is asked for from the first poll after the upgrade
        assert "queue_full" not in asked[0] and "queue_full" in asked[-1]
    assert rows.call_count == 1
    assert schema.call_count == 1  # the old release's schema, read once
    assert "queue_full" not in _series(after["sanlens_ontap_counter_missing"], "counter")
    assert [v for _, v in after["sanlens_ontap_lun_queue_full_total"].samples] == [7.0]
    assert str(src.version) == "9.12.1"


def test_one_missing_counter_table_costs_only_that_table(caplog: pytest.LogCaptureFixture) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _inventory(rsps)
        rsps.get(f"{BASE}/api/cluster/counter/tables/lun", json=_lun_schema(True))
        rsps.get(f"{BASE}/api/cluster/counter/tables/lun/rows", json=_lun_rows(100))
        rsps.get(f"{BASE}/api/cluster/counter/tables/fcp", status=404,
                 json={"error": {"message": "Table is not found", "code": "8585320"}})  # fmt: skip
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=["lun", "fcp"]))
        with caplog.at_level("WARNING", logger="sanlens.ontap.collector"):
            snap = src.poll()
            src.poll()
    fams = _fams(snap)
    assert list(fams["sanlens_ontap_counter_table_missing"].samples) == [(("c1", "fcp"), 1.0)]
    assert _series(fams["sanlens_ontap_lun_ops_total"], "op") == {"read": 100.0}
    assert not src._fallback
    logged = [r for r in caplog.records if "no counter table fcp" in r.getMessage()]
    assert len(logged) == 1  # reported once, not every poll


# ----------------------------------------------------------------- 5. parity disks
def _disks_14_2() -> list[DiskStats]:
    data = [DiskStats("c1", f"1.0.{i}", "aggr1", "n1", "/aggr1/plex0/rg0", "sas", "aggregate", 0.60,
                      raid_position="data") for i in range(14)]  # fmt: skip
    parity = [DiskStats("c1", f"1.0.{14 + i}", "aggr1", "n1", "/aggr1/plex0/rg0", "sas", "aggregate", 0.05,
                        raid_position=pos) for i, pos in enumerate(("parity", "dparity"))]  # fmt: skip
    return data + parity


def test_parity_disks_do_not_make_a_read_heavy_raid_dp_group_look_unbalanced() -> None:
    disks = _disks_14_2()
    busy = [d.busy_ratio or 0.0 for d in disks]
    cv_all = statistics.pstdev(busy) / statistics.fmean(busy)
    assert cv_all == pytest.approx(0.34, abs=0.01) and cv_all > 0.3  # what counting parity would judge
    aggr = AggregateInfo("c1", "aggr1", "n1", "sas", 16)
    level, _ = _judge("disk_busy_imbalance", AGGR_KEY, ontap(0, disks=disks, aggregates=(aggr,)))
    assert level == 0


def test_a_hot_data_disk_still_counts_with_parity_excluded() -> None:
    disks = _disks_14_2()
    disks[0] = DiskStats("c1", "1.0.0", "aggr1", "n1", "/aggr1/plex0/rg0", "sas", "aggregate", 0.98,
                         raid_position="data")  # fmt: skip
    data = [d.busy_ratio or 0.0 for d in disks if d.raid_position == "data"]
    aggr = AggregateInfo("c1", "aggr1", "n1", "sas", 16)
    level, f = _judge("disk_busy_imbalance", AGGR_KEY, ontap(0, disks=disks, aggregates=(aggr,)))
    assert f["evidence"]["busy_max_to_median_ratio"] == pytest.approx(max(data) / statistics.median(data))
    assert f["evidence"]["disks"] == 14.0
    assert level == 2  # 0.98 / 0.60 > 1.5 and the hot disk >= 90 %


@responses.activate
def test_raid_positions_come_from_the_plexes_into_the_view() -> None:
    _inventory(responses)
    responses.replace(responses.GET, f"{BASE}/api/storage/aggregates", json={"records": [
        {"name": "aggr1", "uuid": "a1", "node": {"name": "n1"}, "block_storage": {"primary": {
            "disk_type": "sas", "disk_count": 3}}}]})  # fmt: skip
    responses.replace(responses.GET, f"{BASE}/api/storage/disks", json={"records": [
        {"name": d, "type": "sas", "container_type": "aggregate", "aggregates": [{"name": "aggr1"}],
         "node": {"name": "n1"}, "state": "present"} for d in ("1.0.0", "1.0.1", "1.0.2")]})  # fmt: skip
    # the plex shape of ONTAP's REST reference example (raid_groups[].disks[].position)
    responses.get(f"{BASE}/api/storage/aggregates/a1/plexes", json={"records": [{"name": "plex0",
        "raid_groups": [{"name": "rg0", "disks": [
            {"disk": {"name": "1.0.0"}, "position": "dparity"},
            {"disk": {"name": "1.0.1"}, "position": "parity"},
            {"disk": {"name": "1.0.2"}, "position": "data"}]}]}]})  # fmt: skip
    src = OntapSource(OntapTarget(name="c1", url=BASE, tables=[]))
    src.poll()
    assert src.inventory.disk_position == {"1.0.0": "dparity", "1.0.1": "parity", "1.0.2": "data"}
