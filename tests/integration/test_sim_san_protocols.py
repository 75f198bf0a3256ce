"""Every ONTAP SAN in the simulator: iSCSI, NVMe-oF namespaces and the ASA r2 personality.

Record fields are checked against the names NetApp Harvest's templates read (conf/rest/9.12.0
namespace.yaml, lif.yaml, netport.yaml; conf/keyperf/9.15.0 namespace.yaml, lif.yaml;
conf/rest/asar2/9.16.0 storage_unit.yaml, availability_zone.yaml; conf/keyperf/asar2/9.16.0
storage_unit.yaml). Rates are worked out by hand from the scenarios of docs/simulator.md and
compared with counter deltas over a hand-moved clock."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import pytest
import requests

from sanlens.config import OntapTarget
from sanlens.diagnose.base import Context
from sanlens.diagnose.front_end import LIF_SUM, PORT_COUNTERS, front_end
from sanlens.diagnose.history import History
from sanlens.model import LunStats, OntapView
from sanlens.ontap.collector import OntapSource
from sanlens_sim.server import Simulator
from sim_client import Clock, record_counters, running

DT = 10.0
NODE1, NODE2, NODE4 = "sanlens-sim-01", "sanlens-sim-02", "sanlens-sim-04"


def get(s: Simulator, path: str, **params: Any) -> requests.Response:
    return requests.get(s.url + path, params=params or None, timeout=10)


def records(s: Simulator, path: str, **params: Any) -> list[dict[str, Any]]:
    r = get(s, path, **params)
    assert r.status_code == 200, (path, r.text)
    out: list[dict[str, Any]] = r.json()["records"]
    return out


def at(rec: Any, dotted: str) -> Any:
    """The value at a dotted path (Harvest's field notation); ``#`` walks into every list item."""
    cur = rec
    for part in dotted.split("."):
        if part == "#":
            assert isinstance(cur, list) and cur, dotted
            cur = cur[0]
            continue
        assert isinstance(cur, dict) and part in cur, (dotted, part, rec)
        cur = cur[part]
    return cur


def has_fields(rec: dict[str, Any], fields: tuple[str, ...]) -> None:
    for f in fields:
        at(rec, f)


def rows(s: Simulator, table: str) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    body = get(s, f"/api/cluster/counter/tables/{table}/rows", fields="*").json()
    return {
        r["id"]: ({p["name"]: p["value"] for p in r["properties"]}, record_counters(r))
        for r in body["records"]
    }


def row_rates(s: Simulator, clock: Clock, table: str) -> dict[str, tuple[dict[str, str], dict[str, float]]]:
    """Per row: its properties and each counter's increase per second over DT."""
    a = rows(s, table)
    clock.t += DT
    b = rows(s, table)
    return {
        k: (p, {n: (v - a[k][1][n]) / DT for n, v in c.items() if isinstance(v, int)})
        for k, (p, c) in b.items()
    }


def stat_rates(s: Simulator, clock: Clock, path: str, key: str = "name") -> dict[str, dict[str, float]]:
    """Per record (by ``key``): each ``statistics`` *_raw figure's increase per second over DT."""

    def read() -> dict[str, dict[str, int]]:
        out = {}
        for r in records(s, path, fields=f"{key},statistics"):
            st = r["statistics"]
            out[r[key]] = {
                f"{group}.{k}": v
                for group in ("iops_raw", "latency_raw", "throughput_raw")
                for k, v in st.get(group, {}).items()
            }
        return out

    a = read()
    clock.t += DT
    b = read()
    return {k: {n: (v - a[k][n]) / DT for n, v in b[k].items()} for k in b}


# ------------------------------------------------------------------ /api/cluster
@pytest.mark.parametrize(("scenario", "flag"), [("iscsi", False), ("nvme-tcp", False), ("asa-r2", True)])
def test_cluster_says_san_optimized_and_disaggregated_on_asa_r2_only(scenario: str, flag: bool) -> None:
    with running(scenario) as (s, _):
        body = get(s, "/api/cluster", fields="*").json()
        assert (body["san_optimized"], body["disaggregated"]) == (flag, flag)
        assert (body["version"]["generation"], body["version"]["major"]) == ((9, 16) if flag else (9, 12))


# ------------------------------------------------------------------ shapes against Harvest's field names
NAMESPACE_FIELDS = (
    "uuid",
    "name",
    "svm.name",
    "location.node.name",
    "location.volume.name",
    "os_type",
    "status.state",
    "status.read_only",
    "space.size",
    "space.used",
    "space.block_size",
    "subsystem_map.nsid",
    "subsystem_map.subsystem.name",
)
KEYPERF_FIELDS = (
    *(
        f"statistics.{g}.{k}"
        for g in ("iops_raw", "latency_raw")
        for k in ("read", "write", "other", "total")
    ),
    *(f"statistics.throughput_raw.{k}" for k in ("read", "write", "total")),
    "statistics.timestamp",
    "statistics.status",
)
LIF_FIELDS = (
    "uuid",
    "name",
    "svm.name",
    "ip.address",
    "ipspace.name",
    "location.node.name",
    "location.port.name",
    "location.home_node.name",
    "location.home_port.name",
    "location.is_home",
    "services",
    "state",
    "enabled",
    "statistics.throughput_raw.read",
    "statistics.throughput_raw.write",
    "statistics.throughput_raw.total",
    "statistics.timestamp",
    "statistics.status",
)
NET_PORT_FIELDS = (
    "uuid",
    "name",
    "node.name",
    "speed",
    "state",
    "type",
    "enabled",
    "mtu",
    "broadcast_domain.name",
    "broadcast_domain.ipspace.name",
)
STORAGE_UNIT_FIELDS = (
    "uuid",
    "name",
    "type",
    "svm.name",
    "os_type",
    "status.state",
    "location.node.name",
    "location.volume.name",
    "location.storage_availability_zone.name",
    "maps",
    "space.size",
    "space.used",
    "space.physical_used",
    "space.efficiency_ratio",
)
ZONE_FIELDS = ("uuid", "name", "nodes.#.name", "space.size", "space.available", "space.physical_used",
               "space.physical_used_percent")  # fmt: skip


def test_namespaces_carry_harvests_fields_and_only_namespaces() -> None:
    with running("nvme-tcp") as (s, _):
        recs = records(s, "/api/storage/namespaces", fields="*")
        assert len(recs) == 5  # ora01_data: 2; ora02_db: 1; esx_nvmefc: 2
        for r in recs:
            has_fields(
                {k: v for k, v in r.items() if k != "subsystem_map"}, NAMESPACE_FIELDS[:-2] + KEYPERF_FIELDS
            )
            assert r["name"] == f"/vol/{r['location']['volume']['name']}/{r['location']['namespace']}"
            assert r["statistics"]["timestamp"] != "-"
        mapped = [r for r in recs if r["location"]["volume"]["name"].startswith("ora01")]
        assert len(mapped) == 2
        for r in mapped:
            has_fields(r, NAMESPACE_FIELDS)
            assert r["subsystem_map"]["subsystem"]["name"] == "ora01"
        assert len({r["subsystem_map"]["nsid"] for r in mapped}) == 2


def test_ip_interfaces_are_the_ethernet_data_lifs_with_harvests_fields() -> None:
    with running("iscsi") as (s, _):
        recs = records(s, "/api/network/ip/interfaces", fields="*")
        # 2 iSCSI LIFs per node (fa_ports 2), FC LIFs are no IP interfaces
        assert sorted(r["name"] for r in recs) == sorted(
            f"{n}_iscsi_{j}" for n in (NODE1, NODE2) for j in (1, 2)
        )
        for r in recs:
            has_fields(r, LIF_FIELDS)
            assert r["services"] == ["data_iscsi"] and r["state"] == "up"
            assert r["location"]["port"]["name"].startswith("e")
        assert len({r["ip"]["address"] for r in recs}) == 4
    with running("nvme-tcp") as (s, _):
        recs = records(s, "/api/network/ip/interfaces", fields="services,name")
        assert {tuple(r["services"]) for r in recs} == {("data_nvme_tcp",)}
        assert not any("nvmefc" in r["name"] or "_fc_" in r["name"] for r in recs)


def test_ethernet_ports_one_per_port_an_ethernet_lif_uses_with_speed_in_mbit() -> None:
    with running("iscsi") as (s, _):
        lifs = records(s, "/api/network/ip/interfaces", fields="location.node.name,location.port.name")
        used = {(r["location"]["node"]["name"], r["location"]["port"]["name"]) for r in lifs}
        ports = records(s, "/api/network/ethernet/ports", fields="*")
        assert {(p["node"]["name"], p["name"]) for p in ports} == used
        assert len(ports) == len(used) == 4
        for p in ports:
            has_fields(p, NET_PORT_FIELDS)
            assert (p["speed"], p["state"], p["type"]) == (10000, "up", "physical")
    with running("nvme-tcp") as (s, _):
        assert {p["speed"] for p in records(s, "/api/network/ethernet/ports", fields="speed")} == {10000}


def test_fields_projection_and_paging_on_the_new_collections() -> None:
    with running("nvme-tcp") as (s, _):
        for path in ("/api/storage/namespaces", "/api/network/ip/interfaces", "/api/network/ethernet/ports"):
            every = records(s, path, fields="*")
            # without fields: keys only (ONTAP returns name and uuid)
            for r in records(s, path):
                assert set(r) <= {"uuid", "name", "_links"}, (path, r)
            # a nested field keeps only its branch
            branch = "node" if "ports" in path else "svm"
            r = records(s, path, fields=f"{branch}.name")[0]
            assert set(r) - {"uuid", "name", "_links"} == {branch}
            assert set(r[branch]) == {"name"}
            # one record a page, next links until the end
            seen, href = [], f"{path}?max_records=1&fields=uuid"
            while href:
                body = requests.get(s.url + href, timeout=10).json()
                assert body["num_records"] == 1
                seen += [x["uuid"] for x in body["records"]]
                href = body["_links"].get("next", {}).get("href")
            assert seen == [x["uuid"] for x in every], path
        # statistics only when asked for
        assert "statistics" not in records(s, "/api/storage/namespaces", fields="name")[0]


# ------------------------------------------------------------------ counter tables move at the world's rates
def test_iscsi_lif_rows_move_at_the_rates_of_their_nodes_iscsi_luns() -> None:
    """sql01: 10,000 IOPS, 90 % reads of 256 KiB, 1 ms, on node 1's two iSCSI LIFs; sql02: one LUN at
    30,000 IOPS, 65 % reads of 8 KiB, 0.3 ms, on node 2's two."""
    with running("iscsi") as (s, clock):
        got = row_rates(s, clock, "iscsi_lif")
        assert set(got) == {f"svm1:{n}_iscsi_{j}" for n in (NODE1, NODE2) for j in (1, 2)}
        for rid, (props, r) in got.items():
            assert set(props) >= {"name", "node.name", "svm.name"}
            node1 = props["node.name"] == NODE1
            reads, writes = (4500.0, 500.0) if node1 else (9750.0, 5250.0)
            assert r["iscsi_read_ops"] == pytest.approx(reads, rel=1e-6), rid
            assert r["iscsi_write_ops"] == pytest.approx(writes, rel=1e-6), rid
            assert r["cmd_transferred"] == pytest.approx(reads + writes, rel=1e-6), rid
            io = 262144.0 if node1 else 8192.0
            assert r["read_data"] == pytest.approx(reads * io, rel=1e-6), rid
            assert r["write_data"] == pytest.approx(writes * io, rel=1e-6), rid
            lat_us = 1000.0 if node1 else 300.0
            assert r["average_read_latency"] / r["iscsi_read_ops"] == pytest.approx(lat_us, rel=1e-6), rid
            assert r["protocol_errors"] == 0


def test_iscsi_ethernet_ports_of_the_oversubscribed_node_run_near_line_rate() -> None:
    """2 x 4,500 reads/s x 256 KiB = 2.36 GB/s over two 10 Gbit/s ports: 94.4 % each, sent side."""
    with running("iscsi") as (s, clock):
        speed = {
            (p["node"]["name"], p["name"]): p["speed"]
            for p in records(s, "/api/network/ethernet/ports", fields="*")
        }
        where = {
            r["name"]: (r["location"]["node"]["name"], r["location"]["port"]["name"])
            for r in records(s, "/api/network/ip/interfaces", fields="location")
        }
        got = stat_rates(s, clock, "/api/network/ip/interfaces")
        for lif, r in got.items():
            port = where[lif]
            util = r["throughput_raw.read"] * 8 / (speed[port] * 1e6)
            if port[0] == NODE1:
                assert util == pytest.approx(4500 * 262144 * 8 / 1e10, rel=1e-6), lif
                assert util > 0.9
            else:
                assert util < 0.1, lif
            assert r["throughput_raw.total"] == pytest.approx(
                r["throughput_raw.read"] + r["throughput_raw.write"]
            )


def test_iscsi_lif_count_follows_fa_ports_and_shares_the_io() -> None:
    with running("iscsi", fa_ports=4) as (s, clock):
        got = {k: r for k, (p, r) in row_rates(s, clock, "iscsi_lif").items() if p["node.name"] == NODE1}
        assert len(got) == 4
        assert {round(r["iscsi_read_ops"], 6) for r in got.values()} == {2250.0}


def test_nvmf_lif_rows_count_nvme_tcp_and_nvme_fc_lifs_at_their_namespaces_rates() -> None:
    """ora01_data: 10,000 IOPS, 90 % reads of 256 KiB at 1 ms on node 1's two NVMe/TCP LIFs; ora02_db:
    30,000 IOPS, 65 % reads of 8 KiB at 0.3 ms on node 2's; esx_nvmefc: 6,000 IOPS, 70 % reads of 32 KiB
    on node 2's two NVMe/FC LIFs."""
    with running("nvme-tcp") as (s, clock):
        got = row_rates(s, clock, "nvmf_lif")
        expect = {f"svm1:{NODE1}_nvmetcp_{j}": (4500.0, 500.0, 262144.0, 1000.0) for j in (1, 2)}
        expect |= {f"svm1:{NODE2}_nvmetcp_{j}": (9750.0, 5250.0, 8192.0, 300.0) for j in (1, 2)}
        expect |= {f"svm1:{NODE2}_nvmefc_{j}": (2100.0, 900.0, 32768.0, 300.0) for j in (1, 2)}
        # node 1's NVMe/FC LIFs carry no namespace: idle
        idle = {f"svm1:{NODE1}_nvmefc_{j}" for j in (1, 2)}
        assert set(got) == set(expect) | idle
        for rid, (reads, writes, io, lat_us) in expect.items():
            props, r = got[rid]
            assert set(props) >= {"name", "node.name", "svm.name", "port_id"}
            assert r["read_ops"] == pytest.approx(reads, rel=1e-6), rid
            assert r["write_ops"] == pytest.approx(writes, rel=1e-6), rid
            assert r["total_ops"] == pytest.approx(reads + writes, rel=1e-6), rid
            assert r["read_data"] == pytest.approx(reads * io, rel=1e-6), rid
            assert r["write_data"] == pytest.approx(writes * io, rel=1e-6), rid
            assert r["average_read_latency"] / r["read_ops"] == pytest.approx(lat_us, rel=1e-6), rid
        for rid in idle:
            assert got[rid][1]["read_ops"] == 0.0
        # NVMe/TCP on Ethernet ports, NVMe/FC on FC ports (after the FC LIFs' 0c, 0d)
        assert got[f"svm1:{NODE1}_nvmetcp_1"][0]["port_id"] == f"{NODE1}:e0e"
        assert got[f"svm1:{NODE2}_nvmefc_1"][0]["port_id"] == f"{NODE2}:0e"


def test_namespace_rows_move_at_each_namespaces_rate() -> None:
    """Each ora01 namespace: 5,000 IOPS, 4,500 reads and 500 writes of 256 KiB, both at 1 ms."""
    with running("nvme-tcp") as (s, clock):
        got = row_rates(s, clock, "namespace")
        assert len(got) == 5
        ora = {rid: v for rid, v in got.items() if v[0]["name"].startswith("/vol/ora01_data")}
        assert len(ora) == 2
        for rid, (props, r) in ora.items():
            assert rid == f"{props['name']}:{props['uuid']}"
            assert props["svm.name"] == "svm1"
            assert r["read_ops"] == pytest.approx(4500.0, rel=1e-6)
            assert r["write_ops"] == pytest.approx(500.0, rel=1e-6)
            assert r["read_data"] == pytest.approx(4500.0 * 262144, rel=1e-6)
            assert r["average_read_latency"] == pytest.approx(4500.0 * 1000.0, rel=1e-6)
            assert r["average_write_latency"] == pytest.approx(500.0 * 1000.0, rel=1e-6)


def test_fcp_port_table_counts_nvme_fc_traffic_and_fcp_lif_only_fc_lifs() -> None:
    with running("nvme-tcp") as (s, clock):
        ports = row_rates(s, clock, "fcp")
        # node 2: FC LIFs on 0c, 0d; NVMe/FC LIFs on 0e, 0f carry esx_nvmefc's 2 x 2,100 reads of 32 KiB
        for port in ("0e", "0f"):
            assert ports[f"{NODE2}:{port}"][1]["read_data"] == pytest.approx(2100.0 * 32768, rel=1e-6)
            assert ports[f"{NODE2}:{port}"][1]["write_data"] == pytest.approx(900.0 * 32768, rel=1e-6)
        assert not any(k.split(":")[1].startswith("e") for k in ports)  # no Ethernet port is an FC port
        fc_ports = records(s, "/api/network/fc/ports", fields="name,node.name")
        assert {f"{p['node']['name']}:{p['name']}" for p in fc_ports} == set(ports)
        lifs = rows(s, "fcp_lif")
        assert lifs and all("_fc_" in rid for rid in lifs)


def test_namespaces_never_appear_as_luns() -> None:
    with running("nvme-tcp") as (s, _):
        ns = {r["uuid"] for r in records(s, "/api/storage/namespaces", fields="uuid")}
        luns = records(s, "/api/storage/luns", fields="name,uuid")
        table = rows(s, "lun")
        assert len(ns) == 5 and luns and table
        assert not ns & {r["uuid"] for r in luns}
        assert not ns & {p["uuid"] for p, _ in table.values()}
        assert not any("/ns" in r["name"] for r in luns)
        assert len(table) == len(luns) == 6  # app1..app3 on node 2: 2 LUNs each
        assert not {p["uuid"] for p, _ in rows(s, "namespace").values()} - ns


# ------------------------------------------------------------------ ASA r2
def test_asa_r2_refuses_counter_tables_aggregates_and_plexes() -> None:
    with running("asa-r2") as (s, _):
        aggr_uuid = s.estate.world().aggregates[0].uuid
        for path in (
            "/api/cluster/counter/tables",
            "/api/cluster/counter/tables/lun",
            "/api/cluster/counter/tables/lun/rows",
            "/api/cluster/counter/tables/system%3Anode/rows",
            "/api/storage/aggregates",
            f"/api/storage/aggregates/{aggr_uuid}",
            f"/api/storage/aggregates/{aggr_uuid}/plexes",
        ):
            r = get(s, path, fields="*")
            assert r.status_code == 404, path
            assert r.json()["error"]["code"] == "3", path
    with running("iscsi") as (s, _):  # a unified cluster serves them and no ASA r2 collection
        assert get(s, "/api/cluster/counter/tables").status_code == 200
        assert get(s, "/api/storage/aggregates").status_code == 200
        assert get(s, "/api/storage/storage-units").status_code == 404
        assert get(s, "/api/storage/availability-zones").status_code == 404


def test_asa_r2_volumes_name_no_aggregate_and_disks_are_shared() -> None:
    with running("asa-r2") as (s, _):
        vols = records(s, "/api/storage/volumes", fields="name,aggregates")
        assert vols and all(v["aggregates"] == [] for v in vols)
        disks = records(s, "/api/storage/disks", fields="*")
        assert disks and {d["container_type"] for d in disks} == {"shared"}
        assert not any("aggregates" in d for d in disks)


def test_asa_r2_storage_units_are_every_lun_and_namespace_with_harvests_fields() -> None:
    with running("asa-r2") as (s, _):
        units = records(s, "/api/storage/storage-units", fields="*")
        luns = {r["uuid"] for r in records(s, "/api/storage/luns")}
        ns = {r["uuid"] for r in records(s, "/api/storage/namespaces")}
        assert len(ns) == 2 and luns
        assert {u["uuid"] for u in units} == luns | ns
        for u in units:
            has_fields(u, STORAGE_UNIT_FIELDS + KEYPERF_FIELDS)
            assert u["type"] == ("namespace" if u["uuid"] in ns else "lun")
        zone = {
            u["location"]["node"]["name"]: u["location"]["storage_availability_zone"]["name"] for u in units
        }
        assert zone[NODE1] == zone[NODE2] != zone[NODE4]
        hot = next(u for u in units if u["name"] == "/vol/sql02_db/lun0")
        assert [m["host_group"]["name"] for m in hot["maps"]] == ["sql02"]


def test_asa_r2_availability_zones_one_per_ha_pair() -> None:
    with running("asa-r2") as (s, _):
        zones = records(s, "/api/storage/availability-zones", fields="*")
        assert len(zones) == 2
        for z in zones:
            has_fields(z, ZONE_FIELDS)
            assert z["space"]["available"] + z["space"]["physical_used"] == z["space"]["size"]
        assert [[n["name"] for n in z["nodes"]] for z in zones] == [
            [NODE1, NODE2],
            ["sanlens-sim-03", NODE4],
        ]


def test_asa_r2_storage_unit_statistics_move_at_the_worlds_rates() -> None:
    """sql02's one LUN: 30,000 IOPS, 19,500 reads at 300 us and 10,500 writes of 8 KiB; sql01's two
    LUNs: 300 IOPS each (fa_ports 2), 70 % reads at 1 ms."""
    with running("asa-r2") as (s, clock):
        got = stat_rates(s, clock, "/api/storage/storage-units")
        hot = got["/vol/sql02_db/lun0"]
        assert hot["iops_raw.read"] == pytest.approx(19500.0, rel=1e-6)
        assert hot["iops_raw.write"] == pytest.approx(10500.0, rel=1e-6)
        assert hot["iops_raw.total"] == pytest.approx(30000.0, rel=1e-6)
        assert hot["latency_raw.read"] / hot["iops_raw.read"] == pytest.approx(300.0, rel=1e-6)
        assert hot["throughput_raw.read"] == pytest.approx(19500.0 * 8192, rel=1e-6)
        for i in (0, 1):
            slow = got[f"/vol/sql01_data/lun{i}"]
            assert slow["iops_raw.total"] == pytest.approx(300.0, rel=1e-6)
            assert slow["latency_raw.read"] / slow["iops_raw.read"] == pytest.approx(1000.0, rel=1e-6)
        # the same counters through /api/storage/luns and /api/storage/namespaces
        lun = stat_rates(s, clock, "/api/storage/luns")["/vol/sql02_db/lun0"]
        assert lun["iops_raw.total"] == pytest.approx(30000.0, rel=1e-6)
        ns = stat_rates(s, clock, "/api/storage/namespaces")
        assert {round(r["iops_raw.total"], 6) for r in ns.values()} == {1000.0}


@pytest.mark.parametrize(
    ("table", "scenario"), [("iscsi_lif", "iscsi"), ("nvmf_lif", "nvme-tcp"), ("namespace", "nvme-tcp")]
)
def test_new_tables_serve_every_catalogue_counter_and_property(table: str, scenario: str) -> None:
    from sanlens.ontap.catalogue import catalogue

    tdef = catalogue()[table]
    with running(scenario) as (s, _):
        schema = {
            c["name"]: c for c in get(s, f"/api/cluster/counter/tables/{table}").json()["counter_schemas"]
        }
        assert set(tdef.counters) | set(tdef.properties) <= set(schema)
        for c in tdef.counters.values():
            assert (schema[c.name]["type"], schema[c.name]["unit"]) == (c.spec.type, c.spec.unit), c.name
            assert (schema[c.name].get("denominator") or {}).get("name", "") == c.spec.base, c.name
        got = rows(s, table)
        assert got
        for props, counters in got.values():
            assert set(counters) == set(tdef.counters)
            assert set(tdef.properties) <= set(props)


# ------------------------------------------------------------------ Ethernet ports: nic_common, VLANs
# shared-port: on node 1, 700 MB/s of iSCSI reads on the VLAN e0e-100 and 600 MB/s of NVMe/TCP reads on e0e,
# one 10 GbE port (1,250 MB/s): 1,300 MB/s sent, 1.04 of the link; each protocol alone 0.56 and 0.48
SHARED_ISCSI_BYTES, SHARED_NVME_BYTES = 700e6, 600e6
TEN_GBE_BYTES = 10e9 / 8
NAS_RX_BYTES = 20e6  # NAS clients' writes on every port under a SAN LIF: in the port's counters only
SAN_LIF_TABLES = ["iscsi_lif", "nvmf_lif", "lun", "namespace"]


def table_rates(s: Simulator, clock: Clock, table: str) -> dict[str, tuple[dict[str, str], dict[str, float]]]:
    """``row_rates``, or nothing where the scenario's cluster has no row in ``table``."""
    if not get(s, f"/api/cluster/counter/tables/{table}/rows", fields="*").json().get("records"):
        return {}
    return row_rates(s, clock, table)


def lif_ports(s: Simulator) -> dict[str, tuple[str, str]]:
    """Each iSCSI and NVMe/TCP LIF -> (node, the port it sits on), as /api/network/ip/interfaces says."""
    return {
        r["name"]: (r["location"]["node"]["name"], r["location"]["port"]["name"])
        for r in records(s, "/api/network/ip/interfaces", fields="name,location")
    }


def base_port(port: str) -> str:
    """ONTAP names a VLAN ``<base>-<tag>``."""
    base, _, tag = port.rpartition("-")
    return base if base and tag.isdigit() else port


def port_uuids(s: Simulator) -> dict[str, tuple[str, str]]:
    return {
        p["uuid"]: (p["node"]["name"], p["name"])
        for p in records(s, "/api/network/ethernet/ports", fields="*")
    }


@pytest.mark.parametrize("scenario", ["iscsi", "nvme-tcp", "shared-port"])
def test_nic_common_rows_carry_every_san_lif_over_the_physical_port_and_nas_writes(scenario: str) -> None:
    with running(scenario) as (s, clock):
        where = lif_ports(s)
        sent: dict[str, float] = {}
        received: dict[str, float] = {}
        counted = set()
        for table in ("iscsi_lif", "nvmf_lif"):
            for props, r in table_rates(s, clock, table).values():
                if props["name"] not in where:  # NVMe/FC LIFs: on FC ports
                    assert "nvmefc" in props["name"], props
                    continue
                node, port = where[props["name"]]
                assert props["node.name"] == node
                key = f"{node}:{base_port(port)}"
                sent[key] = sent.get(key, 0.0) + r["read_data"]
                received[key] = received.get(key, 0.0) + r["write_data"]
                counted.add(props["name"])
        assert counted == set(where)  # every IP LIF is in one of the two tables
        nic = row_rates(s, clock, "nic_common")
        assert set(nic) == set(sent)
        for rid, (props, r) in nic.items():
            assert props["node.name"] == rid.split(":")[0] and props["link_speed"] == "10000M"
            assert r["transmit_bytes"] == pytest.approx(sent[rid], rel=1e-6), rid
            assert r["receive_bytes"] == pytest.approx(received[rid] + NAS_RX_BYTES, rel=1e-6), rid
        if scenario == "iscsi":  # node 1: two ports each sending 4,500 reads/s of 256 KiB
            for port in {p for n, p in where.values() if n == NODE1}:
                assert nic[f"{NODE1}:{port}"][1]["transmit_bytes"] == pytest.approx(4500 * 262144, rel=1e-6)
        if scenario == "shared-port":
            shared = nic[f"{NODE1}:e0e"][1]
            assert shared["transmit_bytes"] == pytest.approx(SHARED_ISCSI_BYTES + SHARED_NVME_BYTES, rel=1e-6)
            assert shared["transmit_bytes"] / TEN_GBE_BYTES == pytest.approx(1.04, rel=1e-6)
            assert shared["receive_bytes"] == pytest.approx(NAS_RX_BYTES, rel=1e-6)  # reads only: NAS writes


def test_shared_port_lists_the_vlan_over_its_physical_port() -> None:
    with running("shared-port") as (s, _):
        ports = {
            (p["node"]["name"], p["name"]): p for p in records(s, "/api/network/ethernet/ports", fields="*")
        }
        assert {k for k in ports if k[0] == NODE1} == {(NODE1, "e0e"), (NODE1, "e0e-100")}
        phys, vlan = ports[(NODE1, "e0e")], ports[(NODE1, "e0e-100")]
        assert phys["type"] == "physical" and "vlan" not in phys
        assert vlan["type"] == "vlan"
        assert vlan["vlan"]["tag"] == 100
        assert vlan["vlan"]["base_port"]["name"] == "e0e"
        assert vlan["vlan"]["base_port"]["node"]["name"] == NODE1
        assert vlan["vlan"]["base_port"]["uuid"] == phys["uuid"] != vlan["uuid"]
        assert vlan["speed"] == phys["speed"] == 10000
        # the iSCSI LIF sits on the VLAN, the NVMe/TCP LIF on the physical port itself
        lifs = {
            r["name"]: r for r in records(s, "/api/network/ip/interfaces", fields="name,services,location")
        }
        on = {
            r["services"][0]: r["location"]["port"]
            for r in lifs.values()
            if r["location"]["node"]["name"] == NODE1
        }
        assert (on["data_iscsi"]["name"], on["data_iscsi"]["uuid"]) == ("e0e-100", vlan["uuid"])
        assert (on["data_nvme_tcp"]["name"], on["data_nvme_tcp"]["uuid"]) == ("e0e", phys["uuid"])


@pytest.mark.parametrize("scenario", ["iscsi", "nvme-tcp", "shared-port"])
def test_ethernet_port_statistics_move_with_nic_common(scenario: str) -> None:
    """A physical port's statistics.throughput_raw: read is what it sent (nic_common transmit_bytes), write
    what it received (receive_bytes); a VLAN's are its LIFs'."""
    with running(scenario) as (s, clock):
        names = port_uuids(s)
        nic = {rid: r for rid, (_, r) in row_rates(s, clock, "nic_common").items()}
        stats = stat_rates(s, clock, "/api/network/ethernet/ports", key="uuid")
        physical = {
            f"{node}:{port}": stats[u] for u, (node, port) in names.items() if base_port(port) == port
        }
        assert set(physical) == set(nic)
        for rid, r in physical.items():
            assert r["throughput_raw.read"] == pytest.approx(nic[rid]["transmit_bytes"], rel=1e-6), rid
            assert r["throughput_raw.write"] == pytest.approx(nic[rid]["receive_bytes"], rel=1e-6), rid
            assert r["throughput_raw.total"] == pytest.approx(
                r["throughput_raw.read"] + r["throughput_raw.write"], rel=1e-6
            )
        if scenario == "shared-port":
            vlan = next(stats[u] for u, k in names.items() if k == (NODE1, "e0e-100"))
            assert vlan["throughput_raw.read"] == pytest.approx(SHARED_ISCSI_BYTES, rel=1e-6)
            assert vlan["throughput_raw.write"] == 0.0
            assert physical[f"{NODE1}:e0e"]["throughput_raw.read"] == pytest.approx(
                SHARED_ISCSI_BYTES + SHARED_NVME_BYTES, rel=1e-6
            )


# ------------------------------------------------------------------ the exporter's front end on the shared port
def _exporter_view(s: Simulator, **target: Any) -> OntapView:
    """The view after three polls, the last two 2.0 s apart and 0.05 s past a whole second: ONTAP's
    statistics.timestamp has whole seconds, so both samples sit in the same place of their second. The first
    poll (inventory, schemas) is the slow one and takes no part in the rates."""
    src = OntapSource(OntapTarget(name="c1", url=s.url, **target))
    try:
        src.poll()
        start = math.floor(time.time()) + 1.05
        time.sleep(start - time.time())
        src.poll()
        time.sleep(start + 2.0 - time.time())
        return src.poll().view
    finally:
        src.close()


def _node1_shared_luns(view: OntapView) -> list[LunStats]:
    luns = [x for x in view.luns if x.node == NODE1 and x.volume in ("sql01_data", "ora01_data")]
    assert {(x.volume, x.kind) for x in luns} == {("sql01_data", "lun"), ("ora01_data", "namespace")}
    return luns


@pytest.mark.parametrize(
    ("target", "rel"),
    [
        ({}, 0.03),
        ({"collection": "statistics"}, 0.05),
        ({"collection": "statistics", "tables": SAN_LIF_TABLES}, 0.05),
    ],
    ids=["nic_common", "port-statistics", "port-statistics-tables-listed"],
)
def test_exporter_judges_both_protocols_on_the_shared_physical_port(
    target: dict[str, Any], rel: float
) -> None:
    """From the port's own counters (nic_common, or the statistics path's port statistics): 1,300 MB/s
    sent over the 10 GbE e0e, 1.04 of its link, for the iSCSI LUNs and the NVMe/TCP namespaces alike."""
    with running("shared-port", real_time=True) as (s, _):
        view = _exporter_view(s, **target)
    ctx = Context(0.0, {"c1": view}, {}, History())
    e0e = next(p for p in view.eth_ports if (p.node, p.port) == (NODE1, "e0e"))
    assert e0e.tx_bytes_s == pytest.approx(SHARED_ISCSI_BYTES + SHARED_NVME_BYTES, rel=rel)
    assert e0e.rx_bytes_s == pytest.approx(NAS_RX_BYTES, rel=rel)
    want = (SHARED_ISCSI_BYTES + SHARED_NVME_BYTES) / TEN_GBE_BYTES
    for lun in _node1_shared_luns(view):
        fe = front_end(ctx, lun)
        assert fe.protocol == ("iscsi" if lun.kind == "lun" else "nvme_tcp"), lun.lun
        assert (fe.port, fe.port_basis) == ("e0e", PORT_COUNTERS), lun.lun
        assert fe.port_utilization == pytest.approx(want, rel=rel), lun.lun
        assert fe.port_utilization > 1.0 and PORT_COUNTERS in fe.port_evidence


@pytest.mark.parametrize(
    ("target", "faults"),
    [({"tables": SAN_LIF_TABLES}, {}), ({}, {"missing_table": "nic_common"})],
    ids=["not-polled", "cluster-lacks-table"],
)
def test_exporter_without_port_counters_sums_every_san_lif_over_the_physical_port(
    target: dict[str, Any], faults: dict[str, str]
) -> None:
    """No nic_common rows and no port statistics: the iSCSI LIF on e0e-100 and the NVMe/TCP LIF on e0e add up
    on e0e (700 + 600 MB/s, 1.04 of the link, without the NAS writes), named as the LIF sum."""
    with running("shared-port", real_time=True) as (s, _):
        if faults:
            requests.post(f"{s.url}/-/sim/faults", json=faults, timeout=10).raise_for_status()
        view = _exporter_view(s, **target)
    assert view.eth_ports == ()
    ctx = Context(0.0, {"c1": view}, {}, History())
    lifs = {x.protocol: x for x in view.lifs if x.node == NODE1 and x.protocol in ("iscsi", "nvme_tcp")}
    assert (lifs["iscsi"].port, lifs["nvme_tcp"].port) == ("e0e-100", "e0e")
    assert lifs["iscsi"].read_bytes_s == pytest.approx(SHARED_ISCSI_BYTES, rel=0.03)
    assert lifs["nvme_tcp"].read_bytes_s == pytest.approx(SHARED_NVME_BYTES, rel=0.03)
    want = (SHARED_ISCSI_BYTES + SHARED_NVME_BYTES) / TEN_GBE_BYTES
    for lun in _node1_shared_luns(view):
        fe = front_end(ctx, lun)
        assert (fe.port, fe.port_basis) == ("e0e", LIF_SUM), lun.lun
        assert fe.port_utilization == pytest.approx(want, rel=0.03), lun.lun
        assert LIF_SUM in fe.port_evidence and "e0e" in fe.port_evidence


def test_front_end_with_the_port_rows_removed_falls_back_to_the_lif_sum() -> None:
    """The same view with and without its port rows: 1.04 either way on the shared port, the basis named."""
    with running("shared-port", real_time=True) as (s, _):
        view = _exporter_view(s)
    assert view.eth_ports
    for v, basis in ((view, PORT_COUNTERS), (dataclasses.replace(view, eth_ports=()), LIF_SUM)):
        ctx = Context(0.0, {"c1": v}, {}, History())
        for lun in _node1_shared_luns(v):
            fe = front_end(ctx, lun)
            assert (fe.port, fe.port_basis) == ("e0e", basis), lun.lun
            assert fe.port_utilization == pytest.approx(1.04, rel=0.03), lun.lun
