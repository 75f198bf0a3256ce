"""ONTAP's QoS tables and endpoints: cooked into workloads whose components add up to their latency,
read on a schedule of their own, and a refusal costing only what needs it (responses mocks)."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections import Counter
from typing import Any

import pytest
import responses
from hypothesis import given, settings
from hypothesis import strategies as st

from sanlens.config import Duration, OntapTarget
from sanlens.model import OntapView, Snapshot
from sanlens.ontap import collector as collector_mod
from sanlens.ontap.collector import OntapSource
from sanlens.ontap.cooking import CookedColumn, CookedTable, cook_table
from sanlens.ontap.counter_json import rows_from_response
from sanlens.ontap.inventory import Inventory
from sanlens.ontap.qos_centres import component, split_instance
from sanlens.ontap.qos_views import CENTRE_PROPERTY, centre_times, policies, row_filter, workloads
from sanlens.ontap.row_block import RowBlock

BASE = "https://c1.example"
DT = 60.0


def perf_rec(table: str, name: str, uuid: str, c: dict[str, float]) -> dict[str, Any]:
    """A qos / qos_volume record in the shape ONTAP 9.12 serves (NetApp Harvest's restperf testdata)."""
    return {
        "counter_table": {"name": table},
        "id": f"{name}:{uuid}",
        "properties": [
            {"name": "node.name", "value": "(multiple-values)"},
            {"name": "name", "value": name},
            {"name": "uuid", "value": uuid},
        ],
        "counters": [{"name": k, "value": v} for k, v in c.items()],
        "aggregation": {"count": 2, "complete": True},
    }


def perf(ops: float, lat: float, rops: float, rlat: float, wops: float, wlat: float) -> dict[str, float]:
    return {"ops": ops, "latency": lat, "read_ops": rops, "read_latency": rlat, "write_ops": wops,
            "write_latency": wlat, "read_data": 0, "write_data": 0, "total_data": 0, "concurrency": 0}  # fmt: skip


def detail_rec(table: str, node: str, workload: str, centre: str, visits: float, svc: float, wait: float,
               in_path: float = 1) -> dict[str, Any]:  # fmt: skip
    prop = "resource_name" if table == "qos_detail_volume" else "resource.name"
    return {
        "counter_table": {"name": table},
        "id": f"{node}:{workload}.{centre}",
        "properties": [{"name": "node.name", "value": node}, {"name": prop, "value": centre}],
        "counters": [
            {"name": "visits", "value": visits},
            {"name": "service_time", "value": svc},
            {"name": "wait_time", "value": wait},
            {"name": "in_latency_path", "value": in_path},
        ],
    }


# (node, centre, Δvisits, Δservice µs, Δwait µs, in_latency_path) of workload vol1-wid100 over DT
CENTRES = [
    ("n1", "CPU_nblade", 6000, 300_000, 0, 1),
    ("n1", "DELAY_CENTER_QOS_LIMIT", 3000, 0, 1_200_000, 1),
    ("n1", "CPU_dblade", 1000, 30_000, 10_000, 1),
    ("n2", "CPU_dblade", 5000, 150_000, 50_000, 1),
    ("n2", "DISK_SSD_aggr1", 2000, 400_000, 0, 1),
    ("n2", "CPU_raid", 9000, 9_000_000, 0, 0),  # background: out of the latency path
    ("n2", "DELAY_CENTER_SOMETHING_NEW", 100, 6_000, 0, 1),  # a centre the mapping does not know
]
BY_COMPONENT = {"network": 300_000, "qos_max": 1_200_000, "data": 240_000, "disk": 400_000, "other": 6_000}


def samples() -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Two responses of each table, DT apart: vol1 (in qos_volume and qos), a LUN's policy workload (qos
    only) and vol2 with a single op in the interval."""
    base = (1000, 400_000, 600, 300_000, 400, 100_000)
    vol1 = perf(*base)
    # +6000 ops at 800 µs, +4000 reads at 900 µs, +2000 writes at 600 µs
    vol1b = perf(7000, 400_000 + 6000 * 800, 4600, 300_000 + 4000 * 900, 2400, 100_000 + 2000 * 600)
    lun1, lun1b = perf(0, 0, 0, 0, 0, 0), perf(3000, 3000 * 2000, 0, 0, 3000, 3000 * 2000)
    vol2, vol2b = perf(10, 1000, 10, 1000, 0, 0), perf(11, 1500, 11, 1500, 0, 0)
    out = {
        "qos_volume": (
            [perf_rec("qos_volume", "vol1-wid100", "u1", vol1), perf_rec("qos_volume", "vol2-wid200", "u2", vol2)],
            [perf_rec("qos_volume", "vol1-wid100", "u1", vol1b), perf_rec("qos_volume", "vol2-wid200", "u2", vol2b)],
        ),
        "qos": (
            [perf_rec("qos", "vol1-wid100", "u1", perf(*base)), perf_rec("qos", "pg_lun1", "u3", lun1)],
            [perf_rec("qos", "vol1-wid100", "u1", vol1b), perf_rec("qos", "pg_lun1", "u3", lun1b)],
        ),
    }  # fmt: skip
    t = "qos_detail_volume"
    first = [detail_rec(t, n, "vol1-wid100", c, 10, 100, 100, p) for n, c, *_, p in CENTRES]
    second = [detail_rec(t, n, "vol1-wid100", c, 10 + v, 100 + s, 100 + w, p) for n, c, v, s, w, p in CENTRES]
    first.append(detail_rec(t, "n1", "vol2-wid200", "CPU_dblade", 0, 0, 0))
    second.append(detail_rec(t, "n1", "vol2-wid200", "CPU_dblade", 1, 500, 0))
    out[t] = (first, second)
    return out


def inventory() -> Inventory:
    inv = Inventory()
    inv.volumes = {("svm1", "vol1"): {"size": 2e12, "available": 5e11}, ("svm1", "vol2"): {}}
    inv.qos_workloads = {
        "u1": {"name": "vol1-wid100", "class": "autovolume", "wid": "100", "policy": "", "svm": "svm1",
               "volume": "vol1", "lun": "", "file": "", "qtree": ""},
        "u3": {"name": "pg_lun1", "class": "user_defined", "wid": "300", "policy": "gold", "svm": "svm1",
               "volume": "vol3", "lun": "/vol/vol3/lun1", "file": "", "qtree": ""},
        "u4": {"name": "vol4-wid400", "class": "autovolume", "wid": "400", "policy": "", "svm": "svm1",
               "volume": "vol4", "lun": "", "file": "", "qtree": ""},
    }  # fmt: skip
    return inv


def cook(min_ops: float = 1.0) -> dict[str, CookedTable]:
    out = {}
    for table, (a, b) in samples().items():
        prev = RowBlock.of_rows(table, rows_from_response({"records": a}, table=table))
        cur = RowBlock.of_rows(table, rows_from_response({"records": b}, table=table))
        ops = 0.0 if table.startswith("qos_detail") else min_ops
        out[table] = cook_table(prev, cur, [DT] * len(cur), None, ops)
    return out


def test_a_workloads_components_are_shares_of_its_centres_time_applied_to_its_latency() -> None:
    ws = {w.workload: w for w in workloads("c1", inventory(), cook())}
    w = ws["vol1-wid100"]
    assert (w.svm, w.volume, w.lun, w.wid) == ("svm1", "vol1", "", "100")
    assert w.iops == pytest.approx(6000 / DT)
    assert (w.read_iops, w.write_iops) == (pytest.approx(4000 / DT), pytest.approx(2000 / DT))
    assert w.latency_s == pytest.approx(800e-6)
    assert (w.read_latency_s, w.write_latency_s) == (pytest.approx(900e-6), pytest.approx(600e-6))
    # each component: its service + wait over all nodes, over all in-path time, times 800 µs
    total = sum(s + q for _, _, _, s, q, p in CENTRES if p)
    assert total == sum(BY_COMPONENT.values())
    assert set(w.components) == set(BY_COMPONENT)
    for comp, us in BY_COMPONENT.items():
        assert w.components[comp] == pytest.approx(us / total * 800e-6, rel=1e-12), comp
    assert abs(sum(w.components.values()) - 800e-6) < 1e-9
    assert w.dominant is not None and w.dominant[0] == "qos_max"
    assert (w.size_bytes, w.used_bytes) == (2e12, 1.5e12)


def test_centre_time_is_visits_times_service_plus_wait_summed_over_nodes() -> None:
    times = centre_times(cook())["vol1-wid100"]
    # CPU_dblade on n1 and n2: (30,000 + 10,000 + 150,000 + 50,000) µs over 60 s
    assert times["data"] == pytest.approx(240_000e-6 / DT)
    assert "CPU_raid" not in times and times.get("other") == pytest.approx(6_000e-6 / DT)
    assert sum(times.values()) == pytest.approx(sum(BY_COMPONENT.values()) * 1e-6 / DT)


def reference_times(cooked: dict[str, CookedTable]) -> dict[str, dict[str, float]]:
    """The centre times restated row by row: each row's values and centre, summed per workload and
    component; the first detail table that has a workload wins."""
    out: dict[str, dict[str, float]] = {}
    for table, other in (("qos_detail_volume", "qos_detail"), ("qos_detail", "qos_detail_volume")):
        t = cooked.get(table)
        found: dict[str, dict[str, float]] = {}
        for i, row in enumerate(t.refs() if t is not None else ()):
            v = {c.counter: c.values[i] for c in t.columns if c.values[i] is not None}
            if not v.get("visits") or v.get("in_latency_path", 1.0) == 0:
                continue
            centre = row.properties.get(CENTRE_PROPERTY[table]) or row.properties.get(
                CENTRE_PROPERTY[other], ""
            )
            _, workload, centre = split_instance(row.instance, centre)
            comp = component(centre)
            times = found.setdefault(workload, {})
            times[comp] = times.get(comp, 0.0) + v["visits"] * (
                v.get("service_time", 0.0) + v.get("wait_time", 0.0)
            )
        for workload, times in found.items():
            out.setdefault(workload, times)
    return out


maybe = st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False))


@st.composite
def detail_tables(draw: Any) -> dict[str, CookedTable]:
    out = {}
    for table in draw(st.sets(st.sampled_from(["qos_detail_volume", "qos_detail"]))):
        n = draw(st.integers(0, 12))
        centres = st.sampled_from(
            ["CPU_dblade", "DISK_SSD_aggr1", "NETWORK", "QOS_MAX", "CPU_raid", "a.b", ""]
        )
        instances = [
            f"n{draw(st.integers(1, 2))}:{draw(st.sampled_from(['v1-wid1', 'v.2-wid2', 'lun3']))}.{draw(centres)}"
            for _ in range(n)
        ]
        block = RowBlock(table, instances, complete=[True] * n)
        for prop in draw(st.sets(st.sampled_from(sorted(CENTRE_PROPERTY.values())))):
            block.properties[prop] = [draw(st.one_of(st.none(), centres)) for _ in range(n)]
        columns = [
            CookedColumn(name, "", False, [draw(maybe) for _ in range(n)])
            for name in draw(st.sets(st.sampled_from(["visits", "service_time", "wait_time"])))
        ]
        if draw(st.booleans()):
            columns.append(
                CookedColumn(
                    "in_latency_path", "", False, [draw(st.sampled_from([None, 0.0, 1.0])) for _ in range(n)]
                )
            )
        out[table] = CookedTable(table, block, columns)
    return out


@settings(max_examples=300)
@given(detail_tables())
def test_centre_times_read_by_columns_are_the_row_by_row_sums(cooked: dict[str, CookedTable]) -> None:
    got, want = centre_times(cooked), reference_times(cooked)
    assert got.keys() == want.keys()
    for workload, times in want.items():
        assert got[workload] == pytest.approx(times), workload


def test_one_entry_per_workload_and_a_workload_below_min_ops_has_no_components() -> None:
    got = workloads("c1", inventory(), cook(min_ops=1.0))
    names = Counter(w.workload for w in got)
    assert names == {"vol1-wid100": 1, "vol2-wid200": 1, "pg_lun1": 1, "vol4-wid400": 1}
    ws = {w.workload: w for w in got}
    vol2 = ws["vol2-wid200"]
    assert vol2.iops == pytest.approx(1 / DT) and vol2.latency_s is None and vol2.components == {}
    assert vol2.svm == "svm1" and vol2.volume == "vol2", "not in the inventory: the autovolume name says it"
    lun = ws["pg_lun1"]
    assert (lun.lun, lun.policy, lun.iops, lun.latency_s) == (
        "/vol/vol3/lun1",
        "gold",
        50.0,
        pytest.approx(2e-3),
    )
    assert lun.components == {}, "no detail rows for it"
    inv_only = ws["vol4-wid400"]
    assert inv_only.iops is None and inv_only.volume == "vol4", "the inventory's workloads without rows stay"


def test_fixed_shared_and_adaptive_policies() -> None:
    recs = [
        {"uuid": "p1", "name": "gold", "svm": {"name": "svm1"}, "pgid": 5, "policy_class": "user_defined",
         "object_count": 3, "fixed": {"max_throughput_iops": 5000, "max_throughput_mbps": 100,
                                      "min_throughput_iops": 0, "capacity_shared": True}},
        {"uuid": "p2", "name": "aqos", "svm": {"name": "svm1"}, "object_count": 1,
         "adaptive": {"expected_iops": 1000, "peak_iops": 2000, "absolute_min_iops": 500,
                      "expected_iops_allocation": "allocated_space", "peak_iops_allocation": "used_space",
                      "block_size": "any"}},
    ]  # fmt: skip
    gold, aqos = policies("c1", recs)
    assert (gold.kind, gold.shared, gold.max_iops, gold.min_iops, gold.workloads) == (
        "fixed",
        True,
        5000,
        None,
        3,
    )
    assert gold.max_bytes_s == 100 * 1024 * 1024
    assert (aqos.kind, aqos.peak_iops_per_tb, aqos.expected_iops_per_tb, aqos.absolute_min_iops) == (
        "adaptive", 2000, 1000, 500)  # fmt: skip
    assert aqos.peak_allocation == "used_space" and aqos.max_iops is None and not aqos.shared


def test_detail_rows_are_asked_for_their_four_counters_and_the_mapped_centres_only() -> None:
    f = row_filter("qos_detail")
    assert f["query_fields"] == "properties.value"
    assert {"CPU_nblade", "DELAY_CENTER_QOS_LIMIT", "DISK_*"} <= set(f["query"].split("|"))
    assert row_filter("qos") == {} and row_filter("lun") == {}


# ----------------------------------------------------------------- live polls (responses)
def view(snap: Snapshot) -> OntapView:
    assert isinstance(snap.view, OntapView)
    return snap.view


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


SCHEMAS = {
    "qos_volume": [("ops", "rate", "per_sec", ""), ("latency", "average", "microsec", "ops"),
                   ("read_ops", "rate", "per_sec", ""), ("read_latency", "average", "microsec", "read_ops"),
                   ("write_ops", "rate", "per_sec", ""), ("write_latency", "average", "microsec", "write_ops")],
    "qos_detail_volume": [("visits", "rate", "per_sec", ""), ("service_time", "average", "microsec", "visits"),
                          ("wait_time", "average", "microsec", "visits"), ("in_latency_path", "raw", "none", "")],
}  # fmt: skip
SCHEMAS["qos"] = SCHEMAS["qos_volume"]


def _schema(table: str) -> dict[str, Any]:
    return {"name": table, "counter_schemas": [
        {"name": n, "type": t, "unit": u, **({"denominator": {"name": b}} if b else {})} for n, t, u, b in SCHEMAS[table]]}  # fmt: skip


POLICY_RECS = [{"uuid": "p1", "name": "gold", "svm": {"name": "svm1"}, "object_count": 1,
                "fixed": {"max_throughput_iops": 5000, "capacity_shared": False}}]  # fmt: skip
WORKLOAD_RECS = [{"uuid": "u1", "name": "vol1-wid100", "workload_class": "autovolume", "wid": 100,
                  "svm": {"name": "svm1"}, "volume": "vol1"},
                 {"uuid": "u3", "name": "pg_lun1", "workload_class": "user_defined", "wid": 300,
                  "policy": {"name": "gold"}, "svm": {"name": "svm1"}, "volume": "vol3", "lun": "/vol/vol3/lun1"}]  # fmt: skip


def _mock(rsps: Any, calls: Counter[str], refuse: bool = False) -> None:
    rsps.get(
        f"{BASE}/api/cluster", json={"name": "c1", "version": {"generation": 9, "major": 12, "minor": 1}}
    )
    for path in ("cluster/nodes", "storage/luns", "storage/namespaces", "storage/aggregates", "storage/disks",
                 "network/ip/interfaces", "network/fc/ports"):  # fmt: skip
        rsps.get(f"{BASE}/api/{path}", json={"records": [], "num_records": 0})
    vols = [{"name": "vol1", "svm": {"name": "svm1"}, "space": {"size": 2e12, "available": 5e11}},
            {"name": "vol2", "svm": {"name": "svm1"}}]  # fmt: skip
    rsps.get(f"{BASE}/api/storage/volumes", json={"records": vols, "num_records": 2})
    if refuse:
        rsps.get(
            f"{BASE}/api/storage/qos/workloads", status=403, json={"error": {"message": "not authorized"}}
        )
        rsps.get(f"{BASE}/api/storage/qos/policies", status=404, json={"error": {"message": "not found"}})
    else:
        rsps.get(f"{BASE}/api/storage/qos/workloads", json={"records": WORKLOAD_RECS, "num_records": 2})
        rsps.get(f"{BASE}/api/storage/qos/policies", json={"records": POLICY_RECS, "num_records": 1})
    data = samples()
    for table in ("qos", "qos_volume", "qos_detail_volume"):
        rsps.get(f"{BASE}/api/cluster/counter/tables/{table}", json=_schema(table))

        def rows(req: Any, table: str = table) -> tuple[int, dict[str, str], str]:
            calls[table] += 1
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(req.url).query)
            calls[f"{table} {query.get('counters.name', [''])[0]} {query.get('query', [''])[0][:10]}"] += 1
            recs = data[table][min(calls[table], 2) - 1]
            return 200, {}, json.dumps({"records": recs, "num_records": len(recs)})

        rsps.add_callback(responses.GET, f"{BASE}/api/cluster/counter/tables/{table}/rows", callback=rows)


def test_qos_is_read_on_the_first_polls_then_only_when_due_and_the_view_keeps_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(1_000_000.0)
    monkeypatch.setattr(collector_mod.time, "time", clock)
    monkeypatch.setattr(collector_mod.time, "monotonic", clock)
    calls: Counter[str] = Counter()
    target = OntapTarget(name="c1", url=BASE, tables=["qos", "qos_volume", "qos_detail_volume"],
                         poll_interval=Duration(60), qos_interval=Duration(180))  # fmt: skip
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _mock(rsps, calls)
        src = OntapSource(target)
        read: list[int] = []
        views = []
        for _ in range(6):  # polls at 0, 60, 120, 180, 240, 300 s
            snap = src.poll()
            src.qos_reader.wait()  # a QoS read runs beside the poll that starts it; the next poll folds it
            read.append(calls["qos_detail_volume"])
            views.append(snap)
            clock.t += DT
        workload_calls = len(
            [c for c in rsps.calls if (c.request.url or "").startswith(f"{BASE}/api/storage/qos/workloads")]
        )
    # read at 0 and 60 (the first rates need two samples), then 180 s after the last read, less half a poll
    assert read == [1, 2, 2, 2, 3, 3]
    assert workload_calls == 3
    assert calls["qos_detail_volume visits|service_time|wait_time|in_latency_path CPU_dblade"] == 3
    assert all(not w.components for w in view(views[1]).qos_workloads), "one read: no rates yet"
    second = {w.workload: w for w in view(views[2]).qos_workloads}  # the poll after the second read
    assert second["vol1-wid100"].latency_s == pytest.approx(800e-6)
    assert abs(sum(second["vol1-wid100"].components.values()) - 800e-6) < 1e-9
    for snap in views[3:5]:  # between QoS polls: the last QoS figures, and their counters still exported
        assert view(snap).qos_workloads == view(views[2]).qos_workloads
        fams = {m.name: m for m in snap.metrics}
        assert "sanlens_ontap_qos_workload_ops_total" in fams
    fams = {m.name: m for m in views[2].metrics}
    ops = {dict(zip(fams["sanlens_ontap_qos_workload_ops_total"].label_names, lv, strict=True))["workload"]: v
           for lv, v in fams["sanlens_ontap_qos_workload_ops_total"].samples}  # fmt: skip
    assert ops == {"vol1-wid100": 7000.0, "pg_lun1": 3000.0}, "only the qos table is exported, raw"
    lat = fams["sanlens_ontap_qos_workload_latency_seconds_total"]
    svms = {lv[lat.label_names.index("svm")] for lv, _ in lat.samples}
    assert svms == {"svm1"}, "the svm comes from the workloads inventory"
    info = fams["sanlens_ontap_qos_workload_info"]
    rows = [dict(zip(info.label_names, lv, strict=True)) for lv, _ in info.samples]
    assert {"cluster": "c1", "svm": "svm1", "workload": "pg_lun1", "volume": "vol3", "lun": "/vol/vol3/lun1",
            "policy": "gold"} in rows  # fmt: skip
    ceiling = fams["sanlens_ontap_qos_policy_max_ops_per_second"]
    assert [v for _, v in ceiling.samples] == [5000.0]
    assert "sanlens_ontap_qos_detail" not in " ".join(fams), "the detail rows are never exported"


@pytest.mark.parametrize("every", [0, 60])
def test_a_qos_interval_of_zero_or_the_poll_interval_reads_qos_every_poll(
    monkeypatch: pytest.MonkeyPatch, every: int
) -> None:
    clock = Clock(1_000_000.0)
    monkeypatch.setattr(collector_mod.time, "time", clock)
    monkeypatch.setattr(collector_mod.time, "monotonic", clock)
    calls: Counter[str] = Counter()
    target = OntapTarget(
        name="c1", url=BASE, tables=["qos_volume"], poll_interval=Duration(60), qos_interval=Duration(every)
    )
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _mock(rsps, calls)
        src = OntapSource(target)
        for _ in range(4):
            src.poll()
            src.qos_reader.wait()
            clock.t += DT
    assert calls["qos_volume"] == 4


def test_a_refused_qos_endpoint_costs_only_the_identities(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(1_000_000.0)
    monkeypatch.setattr(collector_mod.time, "time", clock)
    monkeypatch.setattr(collector_mod.time, "monotonic", clock)
    calls: Counter[str] = Counter()
    target = OntapTarget(
        name="c1", url=BASE, tables=["qos_volume", "qos_detail_volume"], poll_interval=Duration(60)
    )
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _mock(rsps, calls, refuse=True)
        src = OntapSource(target)
        for _ in range(2):  # two reads, each folded by the poll after it
            src.poll()
            src.qos_reader.wait()
            clock.t += DT
        snap = src.poll()
    assert snap.inputs is not None
    assert snap.inputs["endpoints_missing"] == {
        "/api/storage/qos/policies": "not_found",
        "/api/storage/qos/workloads": "forbidden",
    }
    missing = {m.name: m for m in snap.metrics}["sanlens_ontap_endpoint_missing"]
    assert len(missing.samples) == 2
    ws = {w.workload: w for w in view(snap).qos_workloads}
    w = ws["vol1-wid100"]
    assert (w.svm, w.volume, w.policy) == ("svm1", "vol1", ""), "the autovolume name and the volumes say it"
    assert abs(sum(w.components.values()) - 800e-6) < 1e-9
    assert view(snap).qos_policies == ()


def test_a_slow_or_failing_qos_read_never_holds_up_or_fails_the_poll(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """qos_detail can take minutes on a large cluster: the poll that starts a read returns without it,
    and a read that fails costs only the QoS figures (the next read is tried when due)."""
    clock = Clock(1_000_000.0)
    monkeypatch.setattr(collector_mod.time, "time", clock)
    monkeypatch.setattr(collector_mod.time, "monotonic", clock)
    calls: Counter[str] = Counter()
    release = threading.Event()
    target = OntapTarget(
        name="c1",
        url=BASE,
        tables=["lun", "qos_volume"],
        poll_interval=Duration(60),
        qos_interval=Duration(0),
    )
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _mock(rsps, calls)
        rsps.get(f"{BASE}/api/cluster/counter/tables/lun", json={"counter_schemas": []})
        rsps.get(f"{BASE}/api/cluster/counter/tables/lun/rows", json={"records": [], "num_records": 0})
        slow_rows = next(r for r in rsps.registered() if str(r.url).endswith("/qos_volume/rows"))
        inner = slow_rows.callback

        def held(req: Any) -> Any:
            release.wait(10)
            return inner(req)

        slow_rows.callback = held
        src = OntapSource(target)
        started = time.perf_counter()
        snap = src.poll()
        assert time.perf_counter() - started < 5, "the poll did not wait for the QoS read"
        assert src.qos_pending() and view(snap).qos_workloads == ()
        release.set()
        src.qos_reader.wait()
        clock.t += DT
        assert view(src.poll()).qos_workloads, "the next poll folds the finished read"
        src.qos_reader.wait()
        rsps.replace(responses.GET, f"{BASE}/api/storage/qos/workloads", body=ConnectionError("reset"))
        clock.t += DT
        before = view(src.poll()).qos_workloads
        src.qos_reader.wait()
        clock.t += DT
        after = src.poll()  # folds the failed read: the poll still succeeds, the last QoS figures stay
        src.close()
    assert view(after).qos_workloads == before
    assert any("QoS read failed" in r.getMessage() for r in caplog.records), caplog.text
