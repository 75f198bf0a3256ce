"""Cluster inventory from the ONTAP REST collections.

Inventory gives the counters their meaning: which aggregate a volume lives on,
which disks form the newest RAID group, which LUN serial the hosts see. RAID and
volume-move state change minute to minute, so they are refreshed every poll.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sanlens.model import BackgroundOp, LunIdentity
from sanlens.ontap.capabilities import ASA_R2, UNIFIED, Capabilities
from sanlens.ontap.client import OntapClient, OntapNotFound


def _g(rec: Mapping[str, Any], path: str, default: Any = "") -> Any:
    """``a.b.c`` of a decoded record, ``default`` where a level is missing or not an object."""
    cur: Any = rec
    for part in path.split("."):
        if type(cur) is not dict and not isinstance(cur, Mapping):  # decoded JSON: dicts (no ABC check)
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
    namespaces: list[dict[str, Any]] = field(default_factory=list)  # NVMe namespaces, as `luns`
    # iSCSI and NVMe/TCP data LIFs: (svm, lif) -> {node, port, protocol, state}
    ip_lifs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    eth_ports: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (node, port) -> info
    zones: dict[str, str] = field(default_factory=dict)  # node -> ASA r2 storage availability zone
    # QoS, read on the QoS schedule: workload uuid -> identity; policy records as ONTAP gives them
    qos_workloads: dict[str, dict[str, str]] = field(default_factory=dict)
    qos_policies: list[dict[str, Any]] = field(default_factory=list)
    personality: str = UNIFIED


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
NAMESPACE_FIELDS = "name,uuid,svm.name,location.volume.name,location.node.name,os_type,status.state"
IP_LIF_FIELDS = "name,svm.name,location.node.name,location.port.name,services,state"
ETH_PORT_FIELDS = "name,node.name,speed,state"
ZONE_FIELDS = "name,nodes.name"
QOS_WORKLOAD_FIELDS = "uuid,name,workload_class,wid,policy.name,policy.uuid,svm.name,volume,lun,file,qtree"
QOS_POLICY_FIELDS = "uuid,name,svm.name,pgid,policy_class,object_count,scope,fixed,adaptive"
QOS_WORKLOADS = "/api/storage/qos/workloads"
QOS_POLICIES = "/api/storage/qos/policies"
# the data services of the IP LIFs a SAN front end uses, and the protocol each serves
SAN_SERVICES = {"data_iscsi": "iscsi", "data_nvme_tcp": "nvme_tcp"}


def _lun_record(r: Mapping[str, Any]) -> dict[str, Any]:
    """A LUN's or namespace's identity and state (both join host disks the same way)."""
    return {
        "svm": str(_g(r, "svm.name")),
        "volume": str(_g(r, "location.volume.name")),
        "lun": str(r.get("name", "")),
        "serial": str(r.get("serial_number", "")),
        "uuid": str(r.get("uuid", "")),
        "os_type": str(r.get("os_type", "")),
        "node": str(_g(r, "location.node.name")),
        "state": str(_g(r, "status.state")),
        # no space guarantee requested: a thin LUN, taken offline when its volume fills
        "thin": _thin(_g(r, "space.guarantee.requested", None)),
    }


def fetch_static(
    client: OntapClient, inv: Inventory, caps: Capabilities | None = None, release: str = ""
) -> None:
    """Nodes, LUNs and namespaces, aggregates (or ASA r2's zones) and disks: slow-changing, refreshed
    every few polls. Endpoints other than nodes and LUNs may be refused (``caps``): they stay empty."""
    caps = caps or Capabilities("")
    inv.personality = caps.personality
    inv.nodes = {
        str(r.get("name")): {
            "model": str(r.get("model", "")),
            "serial": str(r.get("serial_number", "")),
            "processors": _g(r, "controller.cpu.count", None),
        }
        for r in client.records("/api/cluster/nodes", {"fields": NODE_FIELDS})
    }
    inv.luns = [_lun_record(r) for r in client.records("/api/storage/luns", {"fields": LUN_FIELDS})]
    inv.namespaces = caps.optional(
        "/api/storage/namespaces",
        lambda: [
            _lun_record(r) for r in client.records("/api/storage/namespaces", {"fields": NAMESPACE_FIELDS})
        ],
        [],
        release,
    )
    inv.zones = {}
    if caps.personality == ASA_R2:  # no aggregates: storage availability zones, one per HA pair
        inv.aggregates = {}
        no_zones: list[dict[str, Any]] = []
        for z in caps.optional(
            "/api/storage/availability-zones",
            lambda: list(client.records("/api/storage/availability-zones", {"fields": ZONE_FIELDS})),
            no_zones,
            release,
        ):
            for n in z.get("nodes") or []:
                inv.zones[str(_g(n, "name"))] = str(z.get("name", ""))
    else:
        inv.aggregates = caps.optional("/api/storage/aggregates", lambda: _aggregates(client), {}, release)
    inv.disks = caps.optional("/api/storage/disks", lambda: _disks(client), {}, release)


def _aggregates(client: OntapClient) -> dict[str, dict[str, Any]]:
    return {
        str(r.get("name")): {
            "uuid": str(r.get("uuid", "")),
            "node": str(_g(r, "node.name")),
            "disk_type": str(_g(r, "block_storage.primary.disk_type")),
            "disk_count": _g(r, "block_storage.primary.disk_count", None),
            "state": str(r.get("state", "")),
        }
        for r in client.records("/api/storage/aggregates", {"fields": AGGR_FIELDS})
    }


def _disks(client: OntapClient) -> dict[str, dict[str, str]]:
    return {
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
    client: OntapClient,
    inv: Inventory,
    cluster: str,
    with_stats: bool,
    caps: Capabilities | None = None,
    release: str = "",
) -> list[dict[str, Any]]:
    """Volumes (with move state) and every aggregate's plexes (RAID state): fresh each poll.

    Returns the raw volume records so the statistics path can read their ``statistics``.
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
    caps = caps or Capabilities(cluster)
    for aggr, info in inv.aggregates.items():
        if not info["uuid"]:
            continue
        path = f"/api/storage/aggregates/{info['uuid']}/plexes"

        def read(path: str = path) -> list[dict[str, Any]]:
            return list(client.records(path, {"fields": "name,raid_groups,resync"}))

        no_plexes: list[dict[str, Any]] = []
        plexes = caps.optional("/api/storage/aggregates/{uuid}/plexes", read, no_plexes, release)
        for plex in plexes:
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
    inv.ip_lifs = caps.optional("/api/network/ip/interfaces", lambda: _ip_lifs(client), {}, release)
    inv.eth_ports = (
        caps.optional("/api/network/ethernet/ports", lambda: _eth_ports(client, inv.ip_lifs), {}, release)
        if inv.ip_lifs
        else {}
    )
    return vol_recs


def _ip_lifs(client: OntapClient) -> dict[tuple[str, str], dict[str, Any]]:
    """The iSCSI and NVMe/TCP data LIFs and the Ethernet port each sits on now."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in client.records("/api/network/ip/interfaces", {"fields": IP_LIF_FIELDS}):
        protocol = next((p for s, p in SAN_SERVICES.items() if s in (r.get("services") or ())), "")
        if protocol:
            out[(str(_g(r, "svm.name")), str(r.get("name", "")))] = {
                "node": str(_g(r, "location.node.name")),
                "port": str(_g(r, "location.port.name")),
                "protocol": protocol,
                "state": str(r.get("state", "")),
            }
    return out


def _eth_ports(
    client: OntapClient, lifs: Mapping[tuple[str, str], Mapping[str, Any]]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The Ethernet ports under SAN LIFs: state and speed (ONTAP gives Mbit/s), the front end's capacity."""
    used = {(x["node"], x["port"]) for x in lifs.values()}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in client.records("/api/network/ethernet/ports", {"fields": ETH_PORT_FIELDS}):
        key = (str(_g(r, "node.name")), str(r.get("name", "")))
        if key in used:
            speed = r.get("speed")
            mbps = float(speed) if isinstance(speed, int | float) and not isinstance(speed, bool) else 0.0
            out[key] = {"state": str(r.get("state", "")), "speed_gbps": mbps / 1000.0 if mbps > 0 else None}
    return out


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


def fetch_qos(client: OntapClient, inv: Inventory, caps: Capabilities, release: str = "") -> None:
    """QoS workloads and policies, on the QoS schedule. Either may be refused (an older release, a
    role without QoS): then only what needs it is lost, and the refusal is reported as any other."""
    inv.qos_workloads = caps.optional(QOS_WORKLOADS, lambda: _qos_workloads(client), {}, release)
    no_policies: list[dict[str, Any]] = []
    inv.qos_policies = caps.optional(
        QOS_POLICIES,
        lambda: list(client.records(QOS_POLICIES, {"fields": QOS_POLICY_FIELDS})),
        no_policies,
        release,
    )


def _qos_workloads(client: OntapClient) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for r in client.records(QOS_WORKLOADS, {"fields": QOS_WORKLOAD_FIELDS}):
        name = str(r.get("name", ""))
        out[str(r.get("uuid") or name)] = {
            "name": name,
            "class": str(r.get("workload_class", "")),
            "wid": str(r.get("wid", "")),
            "policy": str(_g(r, "policy.name")),
            "svm": str(_g(r, "svm.name")),
            **{k: _name_of(r.get(k)) for k in ("volume", "lun", "file", "qtree")},
        }
    return out


def _name_of(v: object) -> str:
    """A workload's volume, LUN, file or qtree: a name, or an object carrying one."""
    if isinstance(v, Mapping):
        return str(v.get("name") or v.get("path") or "")
    return "" if v is None else str(v)


def identities(cluster: str, inv: Inventory) -> tuple[LunIdentity, ...]:
    """The inventory's LUNs and namespaces as the hosts see them, for the join (sanlens.join)."""
    return (
        *(LunIdentity(cluster, x["svm"], x["volume"], x["lun"], x["serial"], x["node"]) for x in inv.luns),
        *(
            LunIdentity(
                cluster, x["svm"], x["volume"], x["lun"], "", x["node"], kind="namespace", uuid=x["uuid"]
            )
            for x in inv.namespaces
        ),
    )
