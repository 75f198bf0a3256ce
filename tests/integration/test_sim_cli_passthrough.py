"""The simulator's CLI pass-through (``/api/private/cli/...``) and the REST requests of NetApp
Harvest's Rest collector (objects Aggregate, Disk, Lun, Node, Volume; LIF, NetPort and Cluster on
the iSCSI and NVMe/TCP scenarios) and KeyPerf collector (Volume), against ONTAP 9.12.1 (the
simulator's default).

``HARVEST_REQUESTS`` are the requests a Harvest poller (templates conf/rest/9.12.0/{aggr,disk,lun,
node,volume}.yaml, conf/keyperf/9.11.1/volume.yaml and their plugins) sent to the simulator in
``bench/harvest_conformance.py``, kept here as data so CI checks them without Go or Harvest: every
one answers 200 with every field it asks for, and the CLI's values agree with the REST collections.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from typing import Any

import pytest
import requests

from sanlens_sim.server import Simulator
from sim_client import Clock, running

# The fields KeyPerf's volume template (conf/keyperf/9.11.1/volume.yaml) asks /api/storage/volumes for.
KEYPERF_VOLUME_FIELDS = ",".join(
    (
        "name",
        "statistics",
        *(f"statistics.iops_raw.{k}" for k in ("other", "read", "total", "write")),
        *(f"statistics.latency_raw.{k}" for k in ("other", "read", "total", "write")),
        *(
            f"statistics.nfs_ops_raw.{op}.{k}"
            for op in ("access", "getattr", "lookup", "read", "setattr", "write")
            for k in ("count", "total_time")
        ),
        "statistics.status",
        *(f"statistics.throughput_raw.{k}" for k in ("other", "read", "total", "write")),
        "statistics.timestamp",
        "style",
        "svm.name",
    )
)

# (collector:object, href) as Harvest builds them (its query string, unencoded).
HARVEST_REQUESTS: tuple[tuple[str, str], ...] = (
    (
        "Rest:Lun",
        "api/private/cli/lun?return_records=true&fields=lun,node,path,qtree,serial_hex,size,size_used,"
        "state,uuid,volume,vserver&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "Rest:Volume",
        "api/private/cli/volume?return_records=true&fields=aggr_list,autosize_grow_threshold_percent,"
        "autosize_mode,autosize_shrink_threshold_percent,available,clone_parent_name,clone_parent_vserver,"
        "clone_volume,compression_space_saved,compression_space_saved_percent,dedupe_space_saved,"
        "dedupe_space_saved_percent,expected_available,files,files_used,filesystem_size,instance_uuid,"
        "is_encrypted,is_sis_volume,is_space_enforcement_logical,is_space_reporting_logical,junction_path,"
        "logical_available,logical_used,logical_used_by_afs,logical_used_by_snapshots,logical_used_percent,"
        "max_autosize,min_autosize,nodes,overwrite_reserve,overwrite_reserve_used,percent_snapshot_space,"
        "percent_used,performance_tier_inactive_user_data,performance_tier_inactive_user_data_percent,"
        "physical_used,physical_used_percent,sis_space_saved,sis_space_saved_percent,size,"
        "size_available_for_snapshots,size_used_by_snapshots,snaplock_type,snapshot_count,snapshot_policy,"
        "snapshot_reserve_available,snapshot_reserve_size,snapshot_space_used,space_mgmt_try_first,state,"
        "tags,tiering_minimum_cooling_days,tiering_policy,total,type,used,volume,volume_style_extended,"
        "vserver,vsroot&is_constituent=*&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "Rest:Volume",
        "api/private/cli/volume/efficiency/stat?return_records=true&fields=num_compress_attempts,"
        "num_compress_fail,volume,vserver&privilege_level=diagnostic&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "Rest:Volume",
        "api/private/cli/volume/footprint?return_records=true&fields=delayed_free_footprint,"
        "flexvol_metadata_footprint,total_footprint,total_metadata_footprint,volume,"
        "volume_blocks_footprint_bin0,volume_blocks_footprint_bin0_percent,volume_blocks_footprint_bin1,"
        "volume_blocks_footprint_bin1_percent,volume_guarantee_footprint,vserver&max_records=500"
        "&ignore_unknown_fields=true",
    ),
    (
        "Rest:Volume",
        "api/private/cli/volume/snapshot/autodelete?return_records=true&fields=enabled,volume,vserver"
        "&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "Rest:Volume",
        "api/storage/volumes?return_records=true&fields=anti_ransomware.dry_run_start_time,"
        "anti_ransomware.state,clone.parent_snapshot.name,clone.split_estimate,is_object_store,name,"
        "snapmirror.destinations.is_cloud,snapmirror.destinations.is_ontap,snapmirror.is_protected,svm.name"
        "&is_constituent=false&max_records=500",
    ),
    (
        "Rest:Volume",
        "api/storage/disks?return_records=true&fields=aggregates.name,protection_mode"
        "&protection_mode=!data|full&max_records=500",
    ),
    (
        "Rest:Aggregate",
        "api/storage/aggregates?return_records=true&fields=*,block_storage,inode_attributes,space"
        "&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "Rest:Aggregate",
        "api/private/cli/aggr?return_records=true&fields=aggregate,node,root,state,uuid&root=true"
        "&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "Rest:Aggregate",
        "api/private/cli/aggr/show-space?return_records=true&fields=aggregate_name,bin_num,"
        'object_store_logical_used,object_store_physical_used,tier_name&tier_name=!" "|""&max_records=500',
    ),
    (
        "Rest:Disk",
        "api/storage/disks?return_records=true&fields=bay,bytes_per_sector,container_type,home_node.name,"
        "model,name,node.name,node.uuid,outage.reason.message,pool,sector_count,serial_number,shelf.uid,"
        "state,stats.average_latency,stats.power_on_hours,uid,usable_size&max_records=500"
        "&ignore_unknown_fields=true",
    ),
    (
        "Rest:Disk",
        "api/private/cli/disk?return_records=true&fields=disk_io_kbps_total,path_count,sectors_read,"
        "sectors_written,type,uid&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "Rest:Node",
        "api/cluster/nodes?return_records=true&fields=*&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "Rest:Node",
        "api/private/cli/node?return_records=true&fields=cpu_busy_time,health,max_aggr_size,max_node_vvols,"
        "max_vol_size,node,vendor&max_records=500&ignore_unknown_fields=true",
    ),
    (
        "KeyPerf:Volume",
        f"api/storage/volumes?return_records=true&fields={KEYPERF_VOLUME_FIELDS}"
        '&statistics.timestamp=!"-"&style=!flexgroup&max_records=500&ignore_unknown_fields=true',
    ),
    (
        "KeyPerf:Volume",
        f"api/storage/volumes?return_records=true&fields={KEYPERF_VOLUME_FIELDS}"
        '&is_constituent=true&statistics.timestamp=!"-"&max_records=500&ignore_unknown_fields=true',
    ),
    (
        "KeyPerf:Volume",
        "api/private/cli/volume?return_records=true&fields=aggr_list,nodes,volume,vserver&is_constituent=*"
        "&max_records=500&ignore_unknown_fields=true",
    ),
)

# Requests whose filters leave nothing in the simulated estate: no root aggregate (only data
# aggregates are simulated), no self-encrypting disk, no FlexGroup constituent.
EXPECTED_EMPTY = {
    "api/private/cli/aggr": "root=true",
    "api/storage/disks": "protection_mode=!data|full",
    "api/storage/volumes": "is_constituent=true",
}

# Fields that apply to nothing in the simulated estate, left out as ONTAP leaves out a field
# whose value is "-": no FlexClone, no NAS junction, no tags, no tiering, no FabricPool, no
# anti-ransomware dry run, no failed disk (healthy disks have no outage).
NOT_APPLICABLE = {
    "api/private/cli/volume": {
        "clone_parent_name",
        "clone_parent_vserver",
        "junction_path",
        "tags",
        "tiering_minimum_cooling_days",
    },
    "api/private/cli/aggr/show-space": {"object_store_logical_used", "object_store_physical_used"},
    "api/storage/volumes": {
        "anti_ransomware.dry_run_start_time",
        "clone.parent_snapshot.name",
        "clone.split_estimate",
    },
    "api/storage/disks": {"outage.reason.message"},
}


def split(href: str) -> tuple[str, dict[str, str]]:
    path, _, qs = href.partition("?")
    return path, dict(urllib.parse.parse_qsl(qs, keep_blank_values=True))


def url_of(s: Simulator, path: str, query: dict[str, str]) -> str:
    return f"{s.url}/{path}?{urllib.parse.urlencode(query, safe=',*|!')}"


def follow(s: Simulator, first: str) -> tuple[list[dict[str, Any]], int]:
    """Every record of a paged answer, and the number of pages."""
    url, out, pages = first, [], 0
    while url:
        r = requests.get(url, timeout=10)
        assert r.status_code == 200, (url, r.text)
        body = r.json()
        out += body["records"]
        assert body["num_records"] == len(body["records"])
        pages += 1
        assert pages < 200
        nxt = body.get("_links", {}).get("next", {}).get("href")
        url = s.url + nxt if nxt else ""
    return out, pages


def has(rec: Any, dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    if isinstance(rec, list):
        return bool(rec) and all(has(x, dotted) for x in rec)
    if not isinstance(rec, dict) or head not in rec:
        return False
    return has(rec[head], rest) if rest else True


@pytest.fixture(scope="module")
def sim() -> Any:
    s = Simulator("mixed").start()
    yield s
    s.stop()


# ------------------------------------------------------------------ Harvest's requests
@pytest.mark.parametrize(
    ("who", "href"), HARVEST_REQUESTS, ids=[f"{w}-{i}" for i, (w, _) in enumerate(HARVEST_REQUESTS)]
)
def test_harvest_request_is_answered_with_every_field(sim: Simulator, who: str, href: str) -> None:
    path, query = split(href)
    recs, _ = follow(sim, url_of(sim, path, query))
    empty_because = EXPECTED_EMPTY.get(path, "")
    name, _, value = empty_because.partition("=")
    if empty_because and query.get(name) == value:
        assert recs == [], f"{who}: {empty_because} should match nothing in the simulated estate"
        return
    assert recs, f"{who}: no records for {href}"
    fields = query["fields"].split(",")
    skip = NOT_APPLICABLE.get(path, set())
    if "*" in fields:  # Harvest asks for everything plus its hidden fields
        fields = [f for f in fields if f != "*"]
    for f in fields:
        if f in skip:
            continue
        missing = [r for r in recs if not has(r, f)]
        assert not missing, f"{who}: {len(missing)}/{len(recs)} records lack {f!r} ({href})"
    if path.startswith("api/private/cli/"):
        # every field Harvest asks for is one the command has, even without ignore_unknown_fields
        strict = {k: v for k, v in query.items() if k != "ignore_unknown_fields"}
        r = requests.get(url_of(sim, path, strict), timeout=10)
        assert r.status_code == 200, r.text
        for rec in recs:
            assert not (set(rec) & skip), f"{path}: a not-applicable field is present: {set(rec) & skip}"


# ------------------------------------------------------------------ CLI values agree with REST
def cli(s: Simulator, command: str, fields: str, **query: str) -> list[dict[str, Any]]:
    recs, _ = follow(s, url_of(s, f"api/private/cli/{command}", {"fields": fields, **query}))
    return recs


def rest(s: Simulator, path: str, fields: str) -> list[dict[str, Any]]:
    recs, _ = follow(s, url_of(s, path.lstrip("/"), {"fields": fields}))
    return recs


def test_cli_luns_are_the_rest_luns_with_serial_in_hex(sim: Simulator) -> None:
    ours = {r["path"]: r for r in cli(sim, "lun", "serial,serial_hex,volume,node,lun,uuid,size,state,qtree")}
    luns = {
        r["name"]: r for r in rest(sim, "/api/storage/luns", "serial_number,location,svm.name,space,status")
    }
    assert set(ours) == set(luns) and len(ours) > 10  # LUNs only: namespaces are not `lun show`'s
    for path, c in ours.items():
        r = luns[path]
        assert c["serial"] == r["serial_number"]
        assert c["serial_hex"] == r["serial_number"].encode("ascii").hex()
        assert bytes.fromhex(c["serial_hex"]).decode("ascii") == r["serial_number"]
        assert c["serial_hex"] == c["serial_hex"].lower() and len(c["serial_hex"]) == 24
        assert c["vserver"] == r["svm"]["name"]
        assert (c["volume"], c["node"], c["lun"]) == (
            r["location"]["volume"]["name"],
            r["location"]["node"]["name"],
            r["location"]["logical_unit"],
        )
        assert (c["uuid"], c["size"], c["state"], c["qtree"]) == (
            r["uuid"],
            r["space"]["size"],
            r["status"]["state"],
            "",
        )


def test_cli_volumes_aggregates_disks_nodes_agree_with_rest(sim: Simulator) -> None:
    vols = {
        (r["svm"]["name"], r["name"]): r
        for r in rest(sim, "/api/storage/volumes", "svm.name,space,aggregates")
    }
    cvols = cli(sim, "volume", "instance_uuid,size,used,available,aggr_list,nodes,percent_used,total")
    assert {(c["vserver"], c["volume"]) for c in cvols} == set(vols)
    for c in cvols:
        r = vols[(c["vserver"], c["volume"])]
        assert c["instance_uuid"] == r["uuid"]
        assert (c["size"], c["used"], c["available"]) == (
            r["space"]["size"],
            r["space"]["used"],
            r["space"]["available"],
        )
        assert c["aggr_list"] == [a["name"] for a in r["aggregates"]]
        assert c["percent_used"] == round(100 * c["used"] / c["total"])

    aggrs = {r["name"]: r for r in rest(sim, "/api/storage/aggregates", "node,state,space,volume_count")}
    caggrs = cli(sim, "aggr", "uuid,node,state,usedsize,size,volcount")
    assert {c["aggregate"] for c in caggrs} == set(aggrs)
    for c in caggrs:
        r = aggrs[c["aggregate"]]
        assert (c["uuid"], c["node"], c["state"]) == (r["uuid"], r["node"]["name"], r["state"])
        assert (c["size"], c["usedsize"]) == (
            r["space"]["block_storage"]["size"],
            r["space"]["block_storage"]["used"],
        )
        assert (
            c["volcount"]
            == r["volume_count"]
            == sum(1 for c2 in cvols if c2["aggr_list"] == [c["aggregate"]])
        )
    # a volume's nodes are its aggregate's node
    for c in cvols:
        assert c["nodes"] == [aggrs[c["aggr_list"][0]]["node"]["name"]]

    disks = {r["name"]: r for r in rest(sim, "/api/storage/disks", "uid,type,container_type")}
    cdisks = cli(sim, "disk", "uid,type,container_type,sectors_read,sectors_written,path_count")
    assert {c["disk"] for c in cdisks} == set(disks)
    for c in cdisks:
        r = disks[c["disk"]]
        assert (c["uid"], c["type"], c["container_type"]) == (
            r["uid"],
            r["type"].upper(),
            r["container_type"],
        )
    assert any(c["sectors_written"] > 0 for c in cdisks)

    nodes = {r["name"]: r for r in rest(sim, "/api/cluster/nodes", "serial_number,model,uptime,location")}
    cnodes = cli(sim, "node", "serialnumber,model,uptime,location,health,cpu_busy_time")
    assert {c["node"] for c in cnodes} == set(nodes)
    for c in cnodes:
        r = nodes[c["node"]]
        assert (c["serialnumber"], c["model"], c["location"]) == (
            r["serial_number"],
            r["model"],
            r["location"],
        )
        assert abs(c["uptime"] - r["uptime"]) <= 1 and c["health"] is True


def test_cli_counters_follow_the_clock() -> None:
    with running("healthy") as (s, clock):
        a = {r["node"]: r["cpu_busy_time"] for r in cli(s, "node", "cpu_busy_time")}
        d1 = {r["disk"]: r["sectors_written"] for r in cli(s, "disk", "sectors_written")}
        clock.t += 100.0
        b = {r["node"]: r["cpu_busy_time"] for r in cli(s, "node", "cpu_busy_time")}
        d2 = {r["disk"]: r["sectors_written"] for r in cli(s, "disk", "sectors_written")}
        state = requests.get(s.url + "/-/sim/state", timeout=10).json()
    # healthy: 150 % of one core busy over 8 CPUs, cpu_busy follows the busiest domain or the average
    for n in a:
        assert 0 < b[n] - a[n] <= 100
    assert all(d2[k] >= d1[k] for k in d1) and any(d2[k] > d1[k] for k in d1)
    assert state["counts"]["disks"] == len(d1)


# ------------------------------------------------------------------ paging, counts, filters
def test_cli_paging_follows_next_links_and_return_records_counts(sim: Simulator) -> None:
    every = cli(sim, "lun", "serial")
    first = requests.get(
        url_of(sim, "api/private/cli/lun", {"fields": "serial", "max_records": "5"}), timeout=10
    )
    body = first.json()
    assert body["num_records"] == 5 and "start.vserver=" in body["_links"]["next"]["href"]
    assert "start.path=" in body["_links"]["next"]["href"]
    paged, pages = follow(sim, url_of(sim, "api/private/cli/lun", {"fields": "serial", "max_records": "5"}))
    assert paged == every and pages == math.ceil(len(every) / 5)
    last = cli(sim, "lun", "serial", max_records=str(len(every)))
    assert last == every
    single = requests.get(
        url_of(sim, "api/private/cli/lun", {"max_records": str(len(every))}), timeout=10
    ).json()
    assert "_links" not in single  # the last page has no next link
    assert set(single["records"][0]) == {"vserver", "path"}  # no fields: the keys alone

    count = requests.get(url_of(sim, "api/private/cli/lun", {"return_records": "false"}), timeout=10).json()
    assert count == {"num_records": len(every)}
    vols = requests.get(
        url_of(sim, "api/storage/volumes", {"return_records": "false", "style": "flexvol"}), timeout=10
    ).json()
    assert vols["num_records"] == len(cli(sim, "volume", "size")) and "records" not in vols
    bad = requests.get(
        url_of(sim, "api/private/cli/lun", {"start.vserver": "nope", "start.path": "x"}), timeout=10
    )
    assert bad.status_code == 400


def test_cli_filters_fields_and_unknown_names(sim: Simulator) -> None:
    luns = cli(sim, "lun", "volume,state,size")
    oltp = cli(sim, "lun", "volume", path="/vol/oltp_db/*")
    assert oltp and {r["volume"] for r in oltp} == {"oltp_db"}
    assert len(oltp) == sum(1 for r in luns if r["volume"] == "oltp_db")
    assert cli(sim, "lun", "state", state="!online") == []
    assert len(cli(sim, "lun", "size", size=">=1")) == len(luns)
    assert cli(sim, "lun", "size", size="<1") == []
    assert len(cli(sim, "lun", "volume", volume="oltp_db|erp1")) == sum(
        1 for r in luns if r["volume"] in ("oltp_db", "erp1")
    )
    assert len(cli(sim, "aggr", "root", root="false")) == len(cli(sim, "aggr", "root"))
    # the CLI's long command names answer as the short ones
    assert cli(sim, "storage/aggregate", "uuid,node") == cli(sim, "aggr", "uuid,node")
    assert cli(sim, "system/node", "vendor") == cli(sim, "node", "vendor")
    assert cli(sim, "storage/disk", "uid") == cli(sim, "disk", "uid")

    unknown = requests.get(url_of(sim, "api/private/cli/lun", {"fields": "serial,nope"}), timeout=10)
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "262179"
    assert "nope" in unknown.json()["error"]["message"]
    lenient = cli(sim, "lun", "serial,nope", ignore_unknown_fields="true")
    assert lenient and all(set(r) == {"vserver", "path", "serial"} for r in lenient)
    bad_filter = requests.get(url_of(sim, "api/private/cli/lun", {"nope": "1"}), timeout=10)
    assert bad_filter.status_code == 400
    missing = requests.get(url_of(sim, "api/private/cli/nope", {}), timeout=10)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "3"


def test_keyperf_volume_statistics_and_filters(sim: Simulator) -> None:
    keyperf = next(h for w, h in HARVEST_REQUESTS if w == "KeyPerf:Volume" and "style=" in h)
    path, query = split(keyperf)
    recs, _ = follow(sim, url_of(sim, path, query))
    vols = cli(sim, "volume", "size")
    assert len(recs) == len(vols)
    for r in recs:
        st = r["statistics"]
        assert st["status"] == "ok" and st["timestamp"]
        for op in ("access", "getattr", "lookup", "read", "setattr", "write"):
            assert st["nfs_ops_raw"][op] == {"count": 0, "total_time": 0}  # SAN volumes serve no NFS
        assert (
            st["iops_raw"]["total"]
            == st["iops_raw"]["read"] + st["iops_raw"]["write"] + st["iops_raw"]["other"]
        )
    # nfs_ops_raw only when named: a plain fields=statistics keeps the real capture's shape
    plain = rest(sim, "/api/storage/volumes", "statistics")
    assert plain and all("nfs_ops_raw" not in r["statistics"] for r in plain)
    assert rest(sim, "/api/storage/volumes", "statistics.nfs_ops_raw.read.count")[0]["statistics"] == {
        "nfs_ops_raw": {"read": {"count": 0}}
    }
    # the filters ONTAP would apply
    none, _ = follow(
        sim, url_of(sim, "api/storage/volumes", {"fields": "name", "statistics.timestamp": '"-"'})
    )
    assert none == []
    flex, _ = follow(sim, url_of(sim, "api/storage/volumes", {"fields": "name", "is_constituent": "false"}))
    assert len(flex) == len(vols)
    one = vols[0]["volume"]
    named, _ = follow(sim, url_of(sim, "api/storage/volumes", {"fields": "name", "name": one}))
    assert [r["name"] for r in named] == [one]
    paged, pages = follow(
        sim, url_of(sim, "api/storage/volumes", {"fields": "name", "style": "flexvol", "max_records": "4"})
    )
    assert len(paged) == len(vols) and pages == math.ceil(len(vols) / 4)


def test_counters_stay_put_without_the_clock() -> None:
    clock = Clock()
    with Simulator("healthy", clock=clock) as s:
        a = cli(s, "node", "cpu_busy_time")
        b = cli(s, "node", "cpu_busy_time")
    assert a == b


# ------------------------------------------------------------------ iSCSI and NVMe/TCP front ends
# What Harvest's Rest LIF, NetPort and Cluster objects (conf/rest/9.12.0/{lif,netport}.yaml,
# conf/rest/9.10.0/cluster.yaml) and RestPerf Namespace (conf/restperf/9.12.0/namespace.yaml) sent
# to the simulator's iscsi and nvme-tcp scenarios in bench/harvest_conformance.py.
FRONT_END_REQUESTS: tuple[tuple[str, str], ...] = (
    (
        "Rest:LIF",
        "api/private/cli/network/interface?fields=address,data_protocol,lif,vserver"
        "&ignore_unknown_fields=true&max_records=500&return_records=true",
    ),
    (
        "Rest:NetPort",
        "api/private/cli/network/port?fields=duplex_admin,duplex_oper,flowcontrol_admin,health_status,node,"
        "port,role,speed_admin&ignore_unknown_fields=true&max_records=500&return_records=true",
    ),
)
IFGRP_REQUEST = (
    "api/private/cli/network/port/ifgrp?fields=activeports,distr_func,down_ports,ifgrp,node,ports,up_ports"
    "&ignore_unknown_fields=true&max_records=500&return_records=true"
)
STORAGE_CLUSTER_REQUEST = (
    "api/storage/cluster?fields=block_storage,block_storage.available"
    "&ignore_unknown_fields=true&max_records=500&return_records=true"
)
NAMESPACE_ROWS_REQUEST = (
    "api/cluster/counter/tables/namespace/rows?counters.name=average_other_latency|average_read_latency|"
    "average_write_latency|other_ops|read_data|read_ops|remote.other_ops|remote.read_data|remote.read_ops|"
    "remote.write_data|remote.write_ops|write_data|write_ops&fields=*&max_records=500&return_records=true"
)


@pytest.mark.parametrize("scenario", ["iscsi", "nvme-tcp"])
def test_harvest_front_end_requests_are_answered(scenario: str) -> None:
    protocol = {"iscsi": "iscsi", "nvme-tcp": "nvme-tcp"}[scenario]
    with Simulator(scenario) as s:
        for who, href in FRONT_END_REQUESTS:
            path, query = split(href)
            recs, _ = follow(s, url_of(s, path, query))
            assert recs, f"{who}: no records"
            for f in query["fields"].split(","):
                assert all(has(r, f) for r in recs), f"{who}: a record lacks {f!r}"
            strict = {k: v for k, v in query.items() if k != "ignore_unknown_fields"}
            assert requests.get(url_of(s, path, strict), timeout=10).status_code == 200, who
        # the CLI lists every SAN LIF (FC ones with their WWPN); each IP LIF of the REST collection
        # is there by (vserver, lif) with its address and its data protocol, the key Harvest joins on
        lifs = {(r["vserver"], r["lif"]): r for r in cli(s, "network/interface", "address,data_protocol")}
        ip = rest(s, "/api/network/ip/interfaces", "name,svm.name,ip.address,services")
        assert ip
        for r in ip:
            row = lifs[(r["svm"]["name"], r["name"])]
            assert row["address"] == r["ip"]["address"]
            assert row["data_protocol"] == [protocol]
        fc = [r for r in lifs.values() if r["data_protocol"] == ["fcp"]]
        assert all(re.fullmatch(r"(?:[0-9a-f]{2}:){7}[0-9a-f]{2}", r["address"]) for r in fc)
        # ports: the Ethernet ports under those LIFs, speed in Mbit/s as the REST port gives it
        ports = {(r["node"], r["port"]): r for r in cli(s, "network/port", "speed_oper,link")}
        eth = rest(s, "/api/network/ethernet/ports", "name,node.name,speed,state")
        assert set(ports) == {(r["node"]["name"], r["name"]) for r in eth}
        for r in eth:
            assert ports[(r["node"]["name"], r["name"])]["speed_oper"] == str(int(r["speed"]))
        # no interface group in the simulated estate: an empty answer, not a 404
        path, query = split(IFGRP_REQUEST)
        assert follow(s, url_of(s, path, query))[0] == []
        # the cluster's block storage is its aggregates' space
        path, query = split(STORAGE_CLUSTER_REQUEST)
        r = requests.get(url_of(s, path, query), timeout=10)
        assert r.status_code == 200
        block = r.json()["block_storage"]
        aggrs = rest(s, "/api/storage/aggregates", "space.block_storage.size,space.block_storage.available")
        assert block["available"] == sum(a["space"]["block_storage"]["available"] for a in aggrs)
        assert block["size"] == sum(a["space"]["block_storage"]["size"] for a in aggrs)
        # RestPerf Namespace asks for the namespace table's remote.* counters too
        if scenario == "nvme-tcp":
            path, query = split(NAMESPACE_ROWS_REQUEST)
            rows, _ = follow(s, url_of(s, path, query))
            assert rows
            wanted = set(query["counters.name"].split("|"))
            for row in rows:
                assert {c["name"] for c in row["counters"]} == wanted


# What Harvest's Rest StorageUnit object (conf/rest/asar2/9.16.0/storage_unit.yaml) asked the
# simulator's asa-r2 scenario for, where Harvest reads an ASA r2 system with KeyPerf (no RestPerf).
STORAGE_UNIT_REQUEST = (
    "api/storage/storage-units?fields=anti_ransomware.state,class,consistency_group.name,location.node.name,"
    "location.storage_availability_zone.name,location.volume.name,maps,name,os_type,space,"
    "space.efficiency_ratio,space.physical_used,space.size,space.used,status.state,svm.name,type,uuid"
    "&ignore_unknown_fields=true&max_records=500&return_records=true"
)


def test_harvest_storage_unit_request_on_asa_r2_is_answered() -> None:
    with Simulator("asa-r2") as s:
        path, query = split(STORAGE_UNIT_REQUEST)
        recs, _ = follow(s, url_of(s, path, query))
        assert recs
        for f in query["fields"].split(","):
            if f == "consistency_group.name":  # a storage unit in no consistency group has none
                assert not any(has(r, f) for r in recs)
                continue
            assert all(has(r, f) for r in recs), f"a storage unit lacks {f!r}"
        # the counter tables Harvest probes for RestPerf are refused, so it reads KeyPerf instead
        probe = requests.get(f"{s.url}/api/cluster/counter/tables?return_records=false", timeout=10)
        assert probe.status_code == 404
