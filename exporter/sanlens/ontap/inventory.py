"""Cluster inventory from the ONTAP REST collections, and the pre-9.11 statistics fallback.

Inventory gives the counters their meaning: which aggregate a volume lives on,
which disks form the newest RAID group, which LUN serial the hosts see. RAID and
volume-move state change minute to minute, so they are refreshed every poll.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sanlens.model import BackgroundOp
from sanlens.ontap.client import OntapClient, OntapNotFound
from sanlens.ontap.cooking import CounterRow


def _g(rec: Mapping[str, Any], path: str, default: Any = "") -> Any:
    cur: Any = rec
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return default
        cur = cur.get(part)
    return default if cur is None else cur


@dataclass
class Inventory:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {model, serial, processors}
    luns: list[dict[str, Any]] = field(default_factory=list)
    volumes: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (svm, vol) -> info
    aggregates: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # name -> {uuid, node, disk_type, disk_count}
    disks: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> info
    disk_raid_group: dict[str, str] = field(default_factory=dict)  # disk -> /aggr/plex0/rg0
    # disk -> its RAID position from the plexes (data, parity, dparity, tparity, copy, ...)
    disk_position: dict[str, str] = field(default_factory=dict)
    raid_ops: list[BackgroundOp] = field(default_factory=list)
    fc_ports: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (node, port) -> info
    degraded_raid_groups: dict[str, int] = field(default_factory=dict)  # aggregate -> degraded RAID groups


def _thin(requested: object) -> bool | None:
    """``space.guarantee.requested`` false is a thin LUN; absent (older releases) is unknown."""
    return (not requested) if isinstance(requested, bool) else None


LUN_FIELDS = (
    "name,uuid,serial_number,svm.name,location.volume.name,location.node.name,os_type,status.state,"
    "space.guarantee.requested"
)
VOLUME_FIELDS = (
    "name,uuid,svm.name,aggregates.name,aggregates.uuid,style,"
    "movement.state,movement.percent_complete,movement.destination_aggregate.name,"
    "space.size,space.available"
)
AGGR_FIELDS = "name,uuid,node.name,state,block_storage.primary.disk_type,block_storage.primary.disk_count"
DISK_FIELDS = "name,type,rpm,container_type,aggregates.name,node.name,state"
NODE_FIELDS = "name,uuid,model,serial_number,controller.cpu"
FC_PORT_FIELDS = "name,node.name,enabled,state,speed.maximum,fabric.connected,fabric.connected_speed"


def fetch_static(client: OntapClient, inv: Inventory) -> None:
    """Nodes, LUNs, aggregates and disks: slow-changing, refreshed every few polls."""
    inv.nodes = {
        str(r.get("name")): {
            "model": str(r.get("model", "")),
            "serial": str(r.get("serial_number", "")),
            "processors": _g(r, "controller.cpu.count", None),
        }
        for r in client.records("/api/cluster/nodes", {"fields": NODE_FIELDS})
    }
    inv.luns = [
        {
            "svm": str(_g(r, "svm.name")),
            "volume": str(_g(r, "location.volume.name")),
            "lun": str(r.get("name", "")),
            "serial": str(r.get("serial_number", "")),
            "os_type": str(r.get("os_type", "")),
            "node": str(_g(r, "location.node.name")),
            "state": str(_g(r, "status.state")),
            # no space guarantee requested: a thin LUN, taken offline when its volume fills
            "thin": _thin(_g(r, "space.guarantee.requested", None)),
        }
        for r in client.records("/api/storage/luns", {"fields": LUN_FIELDS})
    ]
    inv.aggregates = {
        str(r.get("name")): {
            "uuid": str(r.get("uuid", "")),
            "node": str(_g(r, "node.name")),
            "disk_type": str(_g(r, "block_storage.primary.disk_type")),
            "disk_count": _g(r, "block_storage.primary.disk_count", None),
            "state": str(r.get("state", "")),
        }
        for r in client.records("/api/storage/aggregates", {"fields": AGGR_FIELDS})
    }
    inv.disks = {
        str(r.get("name")): {
            "type": str(r.get("type", "")),
            "rpm": str(r.get("rpm", "")),
            "container": str(r.get("container_type", "")),
            "aggregate": str(_g(r, "aggregates")[0].get("name", "")) if _g(r, "aggregates") else "",
            "node": str(_g(r, "node.name")),
            "state": str(r.get("state", "")),
        }
        for r in client.records("/api/storage/disks", {"fields": DISK_FIELDS})
    }


def fetch_dynamic(
    client: OntapClient, inv: Inventory, cluster: str, with_stats: bool
) -> list[dict[str, Any]]:
    """Volumes (with move state) and every aggregate's plexes (RAID state): fresh each poll.

    Returns the raw volume records so the fallback can read their ``statistics``.
    """
    fields = VOLUME_FIELDS + (",statistics" if with_stats else "")
    vol_recs = list(client.records("/api/storage/volumes", {"fields": fields}))
    inv.volumes = {}
    for r in vol_recs:
        aggrs = r.get("aggregates") or []
        inv.volumes[(str(_g(r, "svm.name")), str(r.get("name", "")))] = {
            "aggregate": str(aggrs[0].get("name", "")) if aggrs else "",
            "style": str(r.get("style", "")),
            "move_state": str(_g(r, "movement.state")),
            "move_percent": _g(r, "movement.percent_complete", None),
            "size": _g(r, "space.size", None),
            "available": _g(r, "space.available", None),
        }
    ops: list[BackgroundOp] = []
    raid_of: dict[str, str] = {}
    position: dict[str, str] = {}
    degraded: dict[str, int] = {}
    for aggr, info in inv.aggregates.items():
        if not info["uuid"]:
            continue
        for plex in client.records(
            f"/api/storage/aggregates/{info['uuid']}/plexes", {"fields": "name,raid_groups,resync"}
        ):
            pname = str(plex.get("name", "plex0"))
            if _g(plex, "resync.active", False):
                ops.append(BackgroundOp(cluster, "resync", aggr, raid_group=f"/{aggr}/{pname}",
                                        percent=float(_g(plex, "resync.percent", 0))))  # fmt: skip
            for rg in plex.get("raid_groups") or []:
                path = f"/{aggr}/{pname}/{rg.get('name', '')}"
                if _g(rg, "degraded", False) is True:
                    degraded[aggr] = degraded.get(aggr, 0) + 1
                for d in rg.get("disks") or []:
                    raid_of[str(_g(d, "disk.name"))] = path
                    position[str(_g(d, "disk.name"))] = str(d.get("position") or "")
                for key, op in (("reconstruct", "reconstruct"), ("recomputing_parity", "recompute_parity")):
                    if _g(rg, f"{key}.active", False):
                        ops.append(BackgroundOp(cluster, op, aggr, raid_group=path,  # type: ignore[arg-type]
                                                percent=float(_g(rg, f"{key}.percent", 0))))  # fmt: skip
    inv.raid_ops = ops
    inv.disk_raid_group = raid_of
    inv.disk_position = position
    inv.degraded_raid_groups = degraded
    inv.fc_ports = fetch_fc_ports(client)
    return vol_recs


def fetch_fc_ports(client: OntapClient) -> dict[tuple[str, str], dict[str, Any]]:
    """FC target ports: state and negotiated speed (Gbit/s), the front end's capacity."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        recs = list(client.records("/api/network/fc/ports", {"fields": FC_PORT_FIELDS}))
    except OntapNotFound:  # a cluster without FC hardware or an older release
        return out
    for r in recs:
        speed = _g(r, "fabric.connected_speed", None)
        if not isinstance(speed, int | float) or speed <= 0:
            speed = None
        out[(str(_g(r, "node.name")), str(r.get("name", "")))] = {
            "state": str(r.get("state", "")),
            "enabled": bool(r.get("enabled", True)),
            "speed_gbps": float(speed) if speed is not None else None,
            "max_speed_gbps": _g(r, "speed.maximum", None),
        }
    return out


# ------------------------------------------------------------ pre-9.11 fallback
_KEYPERF = (("iops_raw", "ops"), ("latency_raw", "latency"), ("throughput_raw", "data"))
_NAMES = {
    "lun": {
        ("ops", "read"): "read_ops", ("ops", "write"): "write_ops", ("ops", "other"): "other_ops",
        ("latency", "read"): "average_read_latency", ("latency", "write"): "average_write_latency",
        ("data", "read"): "read_data", ("data", "write"): "write_data",
    },
    "volume": {
        ("ops", "read"): "total_read_ops", ("ops", "write"): "total_write_ops",
        ("ops", "other"): "total_other_ops", ("ops", "total"): "total_ops",
        ("latency", "read"): "read_latency", ("latency", "write"): "write_latency",
        ("latency", "other"): "other_latency",
        ("data", "read"): "bytes_read", ("data", "write"): "bytes_written",
    },
}  # fmt: skip


def keyperf_row(table: str, instance: str, props: dict[str, str], stats: Mapping[str, Any]) -> CounterRow:
    """A ``statistics`` object (iops_raw, latency_raw µs, throughput_raw) as a counter-table row."""
    row = CounterRow(table, instance, props)
    names = _NAMES[table]
    for group, kind in _KEYPERF:
        for op, v in (stats.get(group) or {}).items():
            name = names.get((kind, op))
            if name is not None and isinstance(v, int | float):
                row.counters[name] = float(v)
    return row


def fallback_rows(client: OntapClient, vol_recs: list[dict[str, Any]]) -> dict[str, list[CounterRow]]:
    """LUN, volume and node rows from the ``statistics`` fields, for ONTAP before 9.11."""
    luns = [
        keyperf_row(
            "lun",
            str(r.get("uuid") or r.get("name")),
            {
                "svm.name": str(_g(r, "svm.name")),
                "volume.name": str(_g(r, "location.volume.name")),
                "name": str(r.get("name", "")),
            },
            r.get("statistics") or {},
        )
        for r in client.records(
            "/api/storage/luns", {"fields": "name,uuid,svm.name,location.volume.name,statistics"}
        )
    ]
    vols = [
        keyperf_row(
            "volume",
            str(r.get("uuid") or r.get("name")),
            {"svm.name": str(_g(r, "svm.name")), "name": str(r.get("name", ""))},
            r.get("statistics") or {},
        )
        for r in vol_recs
    ]
    nodes = []
    for r in client.records("/api/cluster/nodes", {"fields": "name,uuid,statistics"}):
        st = r.get("statistics") or {}
        row = CounterRow("system:node", str(r.get("name")), {"name": str(r.get("name", ""))})
        # processor_utilization is the average over the node's processors (Harvest's KeyPerf template
        # exports it as node_avg_processor_busy), not ONTAP's busiest-domain cpu_busy
        if "processor_utilization_raw" in st and "processor_utilization_base" in st:
            row.counters["average_processor_busy_percent"] = float(st["processor_utilization_raw"])
            row.counters["cpu_elapsed_time"] = float(st["processor_utilization_base"])
        nodes.append(row)
    return {"lun": luns, "volume": vols, "system:node": nodes}
