"""The simulator's ONTAP QoS over HTTP: the counter tables qos, qos_volume, qos_detail and
qos_detail_volume, the workloads and policies collections, the CLI pass-throughs NetApp Harvest's
QoS templates read, LUN remote_ops, and the qos-throttle and indirect-io scenarios.

Latency components are worked out here from two samples on a hand-moved clock: per centre, visits
x (service + wait) per visit over the interval, divided by the workload's ops; they must add up to
the workload's latency and to the LUN latency the lun table serves."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from sanlens_sim.server import Simulator
from sim_client import Clock, record_counters, running

TABLES = "/api/cluster/counter/tables"
DT = 5.0
IN_PATH = {"CPU_nblade", "DELAY_CENTER_NETWORK", "CPU_dblade", "DELAY_CENTER_DISK_IO", "DELAY_CENTER_COP"}


def get(s: Simulator, path: str, **params: Any) -> Any:
    r = requests.get(s.url + path, params=params or None, timeout=10)
    r.raise_for_status()
    return r.json()


def all_records(s: Simulator, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every record, following the next links."""
    body = get(s, path, **params)
    out = list(body["records"])
    while "next" in body.get("_links", {}):
        body = requests.get(s.url + body["_links"]["next"]["href"], timeout=10).json()
        out += body["records"]
    return out


def table(s: Simulator, name: str, **params: Any) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    recs = all_records(s, f"{TABLES}/{name}/rows", fields="*", **params)
    return {r["id"]: ({p["name"]: p["value"] for p in r["properties"]}, record_counters(r)) for r in recs}


def sample(s: Simulator, clock: Clock) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two samples DT apart of qos, qos_detail, and the lun and namespace tables as "lun": (before, after)."""

    def one() -> dict[str, Any]:
        # every workload: the volumes' (qos_volume) and the policy groups' (qos), one centre property name
        out = {"qos": {**table(s, "qos_volume"), **table(s, "qos")}}
        detail = {
            rid: ({"resource.name" if k == "resource_name" else k: v for k, v in props.items()}, vals)
            for rid, (props, vals) in table(s, "qos_detail_volume").items()
        }
        out["qos_detail"] = {**detail, **table(s, "qos_detail")}
        out["lun"] = {**table(s, "lun"), **table(s, "namespace")}
        return out

    a = one()
    clock.t += DT
    return a, one()


def components(a: dict[str, Any], b: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per workload, seconds per op of each in-path centre (summed over nodes), and its latency."""
    ops: dict[str, float] = {}
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for rid, (props, vb) in b["qos"].items():
        va = a["qos"][rid][1]
        ops[props["name"]] = (vb["ops"] - va["ops"]) / DT
        if vb["ops"] > va["ops"]:
            out[props["name"]]["latency"] = (vb["latency"] - va["latency"]) / (vb["ops"] - va["ops"]) / 1e6
    for rid, (props, vb) in b["qos_detail"].items():
        va = a["qos_detail"][rid][1]
        if not vb["in_latency_path"]:
            continue
        workload = rid.split(":", 1)[1].rsplit(".", 1)[0]
        visits = vb["visits"] - va["visits"]
        if visits <= 0 or ops[workload] <= 0:
            continue
        per_visit = (vb["service_time"] - va["service_time"] + vb["wait_time"] - va["wait_time"]) / visits
        seconds_per_s = visits / DT * per_visit / 1e6
        centre = props["resource.name"]
        out[workload][centre] = out[workload].get(centre, 0.0) + seconds_per_s / ops[workload]
    return out


def lun_latency(a: dict[str, Any], b: dict[str, Any], rids: list[str]) -> float:
    """Seconds per op over the LUNs (or namespaces) ``rids``: Σ latency numerators / Σ ops."""
    num = den = 0.0
    for rid in rids:
        va, vb = a["lun"][rid][1], b["lun"][rid][1]
        for op in ("read", "write", "other"):
            num += vb[f"average_{op}_latency"] - va[f"average_{op}_latency"]
            den += vb[f"{op}_ops"] - va[f"{op}_ops"]
    return num / den / 1e6


def luns_of_workloads(s: Simulator, a: dict[str, Any]) -> dict[str, list[str]]:
    """Workload name -> lun-table row ids of the LUNs whose operations it counts."""
    wls = get(s, "/api/storage/qos/workloads", fields="name,volume,lun")["records"]
    own = {w["lun"] for w in wls if "lun" in w}
    out: dict[str, list[str]] = {}
    for w in wls:
        out[w["name"]] = [
            rid
            for rid, (props, _) in a["lun"].items()
            if (props["name"] == w["lun"] if "lun" in w else props["name"].split("/")[2] == w["volume"])
            and ("lun" in w or props["name"] not in own)
        ]
    return out


def check_breakdowns_add_up(s: Simulator, clock: Clock) -> dict[str, dict[str, float]]:
    a, b = sample(s, clock)
    comps = components(a, b)
    luns = luns_of_workloads(s, a)
    busy = [w for w, c in comps.items() if "latency" in c]
    assert busy, "workloads with operations"
    for w in busy:
        c = comps[w]
        parts = sum(v for k, v in c.items() if k != "latency")
        assert parts == pytest.approx(c["latency"], rel=0.01), w
        assert luns[w], w
        assert c["latency"] == pytest.approx(lun_latency(a, b, luns[w]), rel=0.05), w
    return comps


# ------------------------------------------------------------------ shapes
def test_workload_and_detail_rows_have_ontaps_shape() -> None:
    with running("mixed") as (s, _clock):
        nodes = len(get(s, "/api/cluster/nodes")["records"])
        wls = {w["uuid"]: w for w in get(s, "/api/storage/qos/workloads", fields="*")["records"]}
        rec = get(s, f"{TABLES}/qos_volume/rows", fields="*", max_records=1)["records"][0]
        props = [p["name"] for p in rec["properties"]]
        assert props == ["node.name", "name", "uuid"]
        values = {p["name"]: p["value"] for p in rec["properties"]}
        assert values["node.name"] == "(multiple-values)"
        assert rec["id"] == f"{values['name']}:{values['uuid']}"
        assert wls[values["uuid"]]["name"] == values["name"]
        assert values["name"] == f"{wls[values['uuid']]['volume']}-wid{wls[values['uuid']]['wid']}"
        assert rec["aggregation"] == {"count": nodes, "complete": True}
        assert {"ops", "latency", "read_ops", "write_ops", "read_latency", "write_latency"} <= {
            c["name"] for c in rec["counters"]
        }
        # the workload table holds only the policy groups' workloads (one volume in mixed has a policy)
        policy_rows = all_records(s, f"{TABLES}/qos/rows", fields="*")
        assert policy_rows and {wls[r["id"].rsplit(":", 1)[1]]["workload_class"] for r in policy_rows} == {
            "user_defined"
        }
        assert len(policy_rows) < get(s, f"{TABLES}/qos_volume/rows")["num_records"]
    with running("qos-throttle") as (s, _clock):
        for name, centre_prop in (("qos_detail", "resource.name"), ("qos_detail_volume", "resource_name")):
            row = get(s, f"{TABLES}/{name}/rows", fields="*", max_records=1)["records"][0]
            p = {x["name"]: x["value"] for x in row["properties"]}
            assert set(p) == {"node.name", centre_prop}
            assert row["id"].startswith(p["node.name"] + ":") and row["id"].endswith("." + p[centre_prop])
            assert {c["name"] for c in row["counters"]} == {
                "visits",
                "service_time",
                "wait_time",
                "in_latency_path",
            }


def test_schemas_say_what_the_counters_are() -> None:
    with running("healthy") as (s, _clock):
        vol = {c["name"]: c for c in get(s, f"{TABLES}/qos_volume")["counter_schemas"]}
        assert (vol["ops"]["type"], vol["ops"]["unit"]) == ("rate", "per_sec")
        for counter, base in (
            ("latency", "ops"),
            ("read_latency", "read_ops"),
            ("write_latency", "write_ops"),
        ):
            assert (vol[counter]["type"], vol[counter]["unit"]) == ("average", "microsec")
            assert vol[counter]["denominator"]["name"] == base
        assert {"name", "uuid", "node.name", "concurrency", "total_data"} <= set(vol)
        for name in ("qos_detail", "qos_detail_volume"):
            det = {c["name"]: c for c in get(s, f"{TABLES}/{name}")["counter_schemas"]}
            assert det["visits"]["type"] == "rate"
            for counter in ("service_time", "wait_time"):
                assert det[counter]["denominator"]["name"] == "visits"
            assert det["in_latency_path"]["type"] == "raw"
        listed = {t["name"] for t in get(s, TABLES)["records"]}
        assert {"qos", "qos_volume", "qos_detail", "qos_detail_volume"} <= listed


def test_old_ontap_has_no_qos_tables_but_has_workloads() -> None:
    with running("too-few-luns") as (s, _clock):  # ONTAP 9.8
        assert requests.get(s.url + f"{TABLES}/qos_detail/rows", timeout=10).status_code == 404
        assert get(s, "/api/storage/qos/workloads")["num_records"] > 0


# ------------------------------------------------------------------ breakdowns
@pytest.mark.parametrize("scenario", ["healthy", "mixed"])
def test_breakdowns_add_up_to_the_lun_latency(scenario: str) -> None:
    with running(scenario) as (s, clock):
        comps = check_breakdowns_add_up(s, clock)
        for w, c in comps.items():
            assert "DELAY_CENTER_QOS_LIMIT" not in c, w  # no policy, no QoS Max time
            assert "DELAY_CENTER_CLUSTER_INTERCONNECT" not in c, w
            if "latency" in c:
                assert "DELAY_CENTER_COP" in c, w  # a centre sanlens's mapping calls "other"
        background = [
            r
            for r in table(s, "qos_detail_volume").values()
            if r[0]["resource_name"] == "CPU_dblade_background"
        ]
        assert background and all(v["in_latency_path"] == 0 and v["visits"] > 0 for _, v in background)


def host_read_latency(s: Simulator, clock: Clock, host: str) -> dict[str, float]:
    """Windows host disk number -> read latency (s), from % Disk Read Time over reads."""

    def scrape() -> dict[tuple[str, str], float]:
        text = requests.get(f"{s.url}/windows/{host}/metrics", timeout=10).text
        return {
            (m.name, m.labels.get("disk", "")): m.value
            for fam in text_string_to_metric_families(text)
            for m in fam.samples
        }

    a = scrape()
    clock.t += DT
    b = scrape()
    p = "windows_physical_disk_"
    out = {}
    for (name, disk), v in b.items():
        if name == p + "reads_total" and disk != "0" and v > a[(name, disk)]:
            out[disk] = (b[(p + "read_seconds_total", disk)] - a[(p + "read_seconds_total", disk)]) / (
                v - a[(name, disk)]
            )
    return out


def test_qos_throttle_holds_the_workload_at_its_ceiling() -> None:
    with running("qos-throttle") as (s, clock):
        comps = check_breakdowns_add_up(s, clock)
        policies = {p["name"]: p for p in get(s, "/api/storage/qos/policies", fields="*")["records"]}
        wls = {w["name"]: w for w in get(s, "/api/storage/qos/workloads", fields="*")["records"]}
        (capped,) = [w for w in wls.values() if w.get("policy", {}).get("name") == "sql-cap"]
        assert capped["workload_class"] == "user_defined" and capped["volume"] == "sql_data"
        ceiling = policies["sql-cap"]["fixed"]["max_throughput_iops"]
        assert ceiling == 2000 and policies["sql-cap"]["fixed"]["capacity_shared"] is False
        a = table(s, "qos")
        clock.t += DT
        b = table(s, "qos")
        rid = f"{capped['name']}:{capped['uuid']}"
        ops = (b[rid][1]["ops"] - a[rid][1]["ops"]) / DT
        assert abs(ops - ceiling) <= 0.15 * ceiling
        c = comps[capped["name"]]
        parts = {k: v for k, v in c.items() if k != "latency"}
        assert max(parts, key=lambda k: parts[k]) == "DELAY_CENTER_QOS_LIMIT"
        assert parts["DELAY_CENTER_QOS_LIMIT"] > 0.5 * c["latency"] and c["latency"] >= 0.010
        # every other kind of policy exists: a LUN's own, a shared one, an adaptive one
        assert any("lun" in w and w["workload_class"] == "user_defined" for w in wls.values())
        assert policies["reports-shared"]["fixed"]["capacity_shared"] is True
        assert policies["reports-shared"]["object_count"] == 2
        assert policies["extreme-adaptive"]["adaptive"]["peak_iops"] == 12288
        # the host waits about as long as the LUN: not oversubscribed, not queue-limited
        luns = {
            r["serial_number"]: r["name"]
            for r in get(s, "/api/storage/luns", fields="serial_number,name")["records"]
        }
        assert sum(1 for p in luns.values() if p.startswith("/vol/sql_data/")) == 4
        lun_a = table(s, "lun")
        host = host_read_latency(s, clock, "sql01")
        lun_b = table(s, "lun")
        lun_reads = {
            props["name"]: (vb["average_read_latency"] - lun_a[rid][1]["average_read_latency"])
            / (vb["read_ops"] - lun_a[rid][1]["read_ops"])
            / 1e6
            for rid, (props, vb) in lun_b.items()
            if props["name"].startswith("/vol/sql_data/")
        }
        assert len(host) == 2
        lun_read = max(lun_reads.values())
        for latency in host.values():
            assert lun_read <= latency < 2 * lun_read and latency - lun_read < 0.001


def test_indirect_io_arrives_through_the_partner_node() -> None:
    with running("indirect-io") as (s, clock):
        comps = check_breakdowns_add_up(s, clock)
        (app,) = [w for w in comps if w.startswith("app_data-wid")]
        cluster = comps[app]["DELAY_CENTER_CLUSTER_INTERCONNECT"]
        assert 0.0003 <= cluster <= 0.001
        assert comps[app]["latency"] < 0.010
        a = table(s, "lun")
        clock.t += DT
        b = table(s, "lun")
        for rid, (props, vb) in b.items():
            va = a[rid][1]
            share = (vb["remote_ops"] - va["remote_ops"]) / (vb["total_ops"] - va["total_ops"])
            if props["name"].startswith("/vol/app_data/"):
                assert share >= 0.8
                assert vb["remote_bytes"] > va["remote_bytes"]
            else:
                assert share == 0.0
        # the interconnect rows sit on the node whose LIF received the operations, not the LUN's
        vol_node = {p["name"]: p["node.name"] for p, _ in table(s, "volume").values()}
        rows = table(s, "qos_detail_volume", id=f"*{app}.DELAY_CENTER_CLUSTER_INTERCONNECT")
        assert rows and all(p["node.name"] != vol_node["app_data"] for p, _ in rows.values())
        text = requests.get(f"{s.url}/linux/app01/metrics", timeout=10).text
        states = [
            m.labels["state"]
            for fam in text_string_to_metric_families(text)
            for m in fam.samples
            if m.name == "sanlens_linux_disk_access_state"
        ]
        assert states and set(states) == {"active/non-optimized"}


# ------------------------------------------------------------------ filters and paging
def test_row_filters_and_paging() -> None:
    with running("qos-throttle") as (s, _clock):
        wanted = {"CPU_dblade", "DELAY_CENTER_QOS_LIMIT"}
        rows = table(s, "qos_detail", query="|".join(sorted(wanted)), query_fields="properties.value")
        assert rows and {p["resource.name"] for p, _ in rows.values()} == wanted
        every = table(s, "qos_detail")
        assert len(rows) == sum(1 for p, _ in every.values() if p["resource.name"] in wanted)
        sql = table(s, "qos_detail_volume", id="*sql_data-wid*")
        assert sql and all(":sql_data-wid" in rid for rid in sql)
        only = get(s, f"{TABLES}/qos/rows", **{"counters.name": "ops|latency"})["records"]
        assert all({c["name"] for c in r["counters"]} == {"ops", "latency"} for r in only)
        bare = get(s, f"{TABLES}/qos/rows")["records"]
        assert bare and all("counters" not in r and "properties" not in r for r in bare)
        paged = all_records(s, f"{TABLES}/qos_detail/rows", max_records=7)
        assert [r["id"] for r in paged] == list(every)
        auto = get(s, "/api/storage/qos/workloads", workload_class="autovolume", fields="workload_class")
        assert auto["records"] and {r["workload_class"] for r in auto["records"]} == {"autovolume"}
        pages = all_records(s, "/api/storage/qos/workloads", max_records=2)
        assert len(pages) == get(s, "/api/storage/qos/workloads")["num_records"]
        assert set(get(s, "/api/storage/qos/policies", fields="name")["records"][0]) == {
            "uuid",
            "name",
            "_links",
        }


def test_cli_passthroughs_in_harvests_formats() -> None:
    with running("qos-throttle") as (s, _clock):
        fixed = {
            r["policy_group"]: r
            for r in get(
                s,
                "/api/private/cli/qos/policy-group",
                fields="uuid,class,is_shared,num_workloads,policy_group,throughput_policy,vserver",
                **{"class": "user_defined"},
            )["records"]
        }
        assert fixed["sql-cap"]["throughput_policy"] == "0-2000IOPS"
        assert fixed["esx-lun"]["throughput_policy"] == "300IOPS-5000IOPS"
        assert fixed["reports-shared"]["throughput_policy"] == "0-10000IOPS,400MB/s"
        assert fixed["reports-shared"]["is_shared"] is True and fixed["reports-shared"]["num_workloads"] == 2
        assert "extreme-adaptive" not in fixed
        (adaptive,) = get(s, "/api/private/cli/qos/adaptive-policy-group", fields="*")["records"]
        assert adaptive["peak_iops"] == "12288IOPS/TB" and adaptive["expected_iops"] == "6144IOPS/TB"
        assert (
            adaptive["absolute_min_iops"] == "1000IOPS" and adaptive["peak_iops_allocation"] == "used-space"
        )
        wl = {r["workload"]: r for r in get(s, "/api/private/cli/qos/workload", fields="*")["records"]}
        (capped,) = [r for r in wl.values() if r.get("policy_group") == "sql-cap"]
        assert capped["max_throughput"] == "2000IOPS" and capped["is_adaptive"] is False
        (lun,) = [r for r in wl.values() if "lun" in r]
        assert lun["policy_group"] == "esx-lun" and lun["min_throughput"] == "300IOPS"
        (adapt,) = [r for r in wl.values() if r["is_adaptive"]]
        # 12,288 IOPS per TB of used space: the volume's 1 TiB, 45 % used
        assert adapt["max_throughput"] == f"{int(12288 * 0.45)}IOPS"
        auto = [r for r in wl.values() if r["class"] == "autovolume"]
        assert auto and all("policy_group" not in r and r["max_throughput"] == "INF" for r in auto)


def test_docs_list_the_qos_scenarios_and_endpoints() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "simulator.md").read_text(encoding="utf-8")
    for needle in (
        "`qos-throttle`",
        "`indirect-io`",
        "/api/storage/qos/workloads",
        "/api/storage/qos/policies",
        "/api/private/cli/qos/policy-group",
        "/api/private/cli/qos/adaptive-policy-group",
        "/api/private/cli/qos/workload",
        "`qos_detail_volume`",
        "`remote_ops`",
    ):
        assert needle in text, needle
