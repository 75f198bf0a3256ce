"""The simulator behaves as ONTAP does where the numbers depend on it, and the real collector copes:
partial aggregation lowers the sums, cpu_busy follows the busiest domain, an upgrade changes the
schema, a missing table answers 404, parity disks idle under reads. Expectations are computed here
from the scenario's definition and the served raw counters."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from sanlens.config import OntapTarget
from sanlens.diagnose import disk_busy_imbalance as imbalance
from sanlens.ontap.collector import OntapSource
from sanlens_sim.server import Simulator
from sim_client import record_counters, running


def rows(s: Simulator, table: str, **params: str) -> dict[str, dict[str, Any]]:
    r = requests.get(f"{s.url}/api/cluster/counter/tables/{table.replace(':', '%3A')}/rows",
                     params={"fields": "*", **params}, timeout=10)  # fmt: skip
    r.raise_for_status()
    out = {}
    for rec in r.json()["records"]:
        vals: dict[str, Any] = {"_aggregation": rec["aggregation"], **record_counters(rec)}
        out[rec["id"]] = vals
    return out


def faults(s: Simulator, **knobs: Any) -> None:
    requests.post(f"{s.url}/-/sim/faults", json=knobs, timeout=10).raise_for_status()


# ----------------------------------------------------------------- partial aggregation
def test_partial_aggregation_lowers_the_summed_rows_by_the_missing_node() -> None:
    with running("healthy") as (s, _clock):
        nodes = len(s.estate.world().nodes)
        assert nodes >= 2
        full = rows(s, "lun")
        node_full = rows(s, "system:node")
        faults(s, partial_aggregation=True)
        part = rows(s, "lun")
        node_part = rows(s, "system:node")
    for rid, f in full.items():
        p = part[rid]
        assert f["_aggregation"] == {"count": nodes, "complete": True}
        assert p["_aggregation"] == {"count": nodes - 1, "complete": False}
        # one node's constituent (an equal part of each node) is not in the sum
        assert p["read_ops"] == pytest.approx(f["read_ops"] * (nodes - 1) / nodes, abs=1)
        assert p["average_read_latency"] == pytest.approx(
            f["average_read_latency"] * (nodes - 1) / nodes, abs=1
        )
    for rid, f in node_full.items():  # a node's own row is not a sum over nodes: flagged, not lowered
        assert node_part[rid]["_aggregation"]["complete"] is False
        assert node_part[rid]["cpu_busy"] == f["cpu_busy"]


def test_collector_exposes_no_counter_for_partial_rows_and_the_view_keeps_system_node() -> None:
    with running("healthy", real_time=True) as (s, _clock):
        src = OntapSource(OntapTarget(name="c1", url=s.url, tables=["lun", "system:node"]))
        try:
            whole = {m.name: m for m in src.poll().metrics}
            time.sleep(0.5)
            src.poll()
            faults(s, partial_aggregation=True)
            time.sleep(0.5)
            snap = src.poll()
        finally:
            src.close()
    fams = {m.name: m for m in snap.metrics}
    luns = len(s.estate.world().luns)
    assert len({lv[:4] for lv, _ in whole["sanlens_ontap_lun_ops_total"].samples}) == luns
    for fam in ("sanlens_ontap_lun_ops_total", "sanlens_ontap_node_cpu_busy_seconds_total",
                "sanlens_ontap_node_domain_busy_seconds_total"):  # fmt: skip
        assert fam not in fams, fam
    gauge = {lv[1]: v for lv, v in fams["sanlens_ontap_partial_aggregation_rows"].samples}
    assert gauge == {"lun": float(luns), "system:node": float(len(s.estate.world().nodes))}
    procs = {lv[1]: v for lv, v in fams["sanlens_ontap_node_processors"].samples}  # from the inventory
    assert procs == {n.name: float(n.cpus) for n in s.estate.world().nodes}
    assert all(x.read_iops is None for x in snap.view.luns)  # no rate from a partial sum either
    assert {n.node for n in snap.view.nodes if n.domain_busy} == {n.name for n in s.estate.world().nodes}


# ----------------------------------------------------------------- cpu_busy
def test_simulated_cpu_busy_follows_the_busiest_domain() -> None:
    with running("kahuna-bottleneck") as (s, clock):
        world = s.estate.world()
        a = rows(s, "system:node")
        clock.t += 10
        b = rows(s, "system:node")
    by_name = {n.name: n for n in world.nodes}
    hot_seen = False
    for rid, vb in b.items():
        va = a[rid]
        node = by_name[rid.split(":")[0]]
        el = vb["cpu_elapsed_time"] - va["cpu_elapsed_time"]
        avg = (vb["average_processor_busy_percent"] - va["average_processor_busy_percent"]) / el
        busy = (vb["cpu_busy"] - va["cpu_busy"]) / el
        # independent: the scenario's domains, percent of one core
        mean = sum(v for k, v in node.domains.items() if k != "idle") / (100.0 * node.cpus)
        kahuna = node.domains.get("kahuna", 0.0) / 100.0
        assert avg == pytest.approx(mean, rel=1e-3)
        # ONTAP: limited by a domain maxing out (a single-threaded one: one core) or by all idle
        # cycles gone, whichever comes first
        single = max(node.domains.get(d, 0.0) for d in ("kahuna", "raid", "target", "storage")) / 100.0
        assert busy == pytest.approx(max(mean, single), rel=1e-3)
        hot_seen = hot_seen or (kahuna >= 0.85 and busy >= 0.85 and avg <= 0.4)
    assert hot_seen, "kahuna-bottleneck has a node whose cpu_busy follows Kahuna while the average is low"


# ----------------------------------------------------------------- upgrade and a missing table
def test_an_upgrade_changes_the_schema_and_the_collector_follows_at_the_next_poll() -> None:
    with running("healthy", real_time=True, ontap_version="9.11.1") as (s, _clock):
        schema = requests.get(f"{s.url}/api/cluster/counter/tables/lun", timeout=10).json()
        assert "queue_full" not in {c["name"] for c in schema["counter_schemas"]}
        src = OntapSource(OntapTarget(name="c1", url=s.url, tables=["lun"]))
        try:
            before = {m.name: m for m in src.poll().metrics}
            s.set_scenario("healthy", ontap_version="9.12.1")
            time.sleep(0.2)
            after = {m.name: m for m in src.poll().metrics}
        finally:
            src.close()
    missing = {lv[2] for lv, _ in before["sanlens_ontap_counter_missing"].samples}
    assert missing == {"queue_full"}
    assert "sanlens_ontap_lun_queue_full_total" not in before
    assert "sanlens_ontap_counter_missing" not in after
    assert len(after["sanlens_ontap_lun_queue_full_total"].samples) == len(s.estate.world().luns)
    ((labels, _),) = after["sanlens_ontap_cluster_info"].samples
    assert labels == ("c1", "9.12.1", "unified", "tables")


def test_missing_table_fault_answers_ontaps_404_and_the_poll_survives() -> None:
    with running("healthy") as (s, _clock):
        faults(s, missing_table="fcp")
        r = requests.get(f"{s.url}/api/cluster/counter/tables/fcp/rows", timeout=10)
        assert r.status_code == 404 and r.json() == {
            "error": {"message": "Table is not found", "code": "8585320"}
        }
        listed = requests.get(f"{s.url}/api/cluster/counter/tables", timeout=10).json()["records"]
        assert "fcp" not in {t["name"] for t in listed}
        src = OntapSource(OntapTarget(name="c1", url=s.url, tables=["lun", "fcp"]))
        try:
            fams = {m.name: m for m in src.poll().metrics}
        finally:
            src.close()
    assert [lv for lv, _ in fams["sanlens_ontap_counter_table_missing"].samples] == [("c1", "fcp")]
    assert "sanlens_ontap_fcp_port_ops_total" not in fams
    assert len({lv[:4] for lv, _ in fams["sanlens_ontap_lun_ops_total"].samples}) == len(
        s.estate.world().luns
    )


# ----------------------------------------------------------------- parity disks
def test_parity_disks_idle_under_reads_and_the_diagnosis_judges_data_disks_only() -> None:
    with running("rebuild-during-oltp", real_time=True, rebuild_after_s=10_000) as (s, _clock):
        src = OntapSource(OntapTarget(name="c1", url=s.url, tables=["disk:constituent"]))
        try:
            src.poll()
            time.sleep(1.0)
            view = src.poll().view
        finally:
            src.close()
        world = s.estate.world()
    by_name = {d.name: d for d in world.disks}
    aggregate_disks = [d for d in view.disks if d.aggregate]
    assert aggregate_disks and all(d.raid_position == by_name[d.disk].position for d in aggregate_disks)
    parity = [d for d in aggregate_disks if d.raid_position in imbalance.PARITY]
    data = [d for d in aggregate_disks if d.raid_position == "data"]
    assert parity and data
    assert all(d.read_iops == 0 for d in parity)
    for d in parity:  # the write part of the busy a data disk of its group carries
        assert d.busy_ratio == pytest.approx(by_name[d.disk].busy * 0.4, rel=1e-3)
    assert not any(imbalance.is_data_disk(d) for d in parity)
