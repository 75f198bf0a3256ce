"""Cluster inventory from the ONTAP REST collections.

Inventory gives the counters their meaning: which aggregate a volume lives on,
which disks form the newest RAID group, which LUN serial the hosts see. Everything is read
in full every few minutes; RAID and volume-move state, which matter the minute they change,
are read every poll by change: the volumes moving and the aggregates with a sign of change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sanlens.model import BackgroundOp, LunIdentity
from sanlens.ontap import raid_state
from sanlens.ontap.capabilities import ASA_R2, UNIFIED, Capabilities
from sanlens.ontap.client_errors import OntapNotFound
from sanlens.ontap.records import get_path as _g

if TYPE_CHECKING:
    from sanlens.ontap.client import OntapClient


class Shared(dict[str, str]):
    """The values an inventory's records repeat (an SVM, volume, node, state), one string object each.

    An inventory is kept until the next full read, and each record decodes its own copy of these:
    at 10,000 LUNs and 15,000 QoS workloads about 6 MB of equal strings. Unique values (names,
    uuids, serials) are left alone. Not ``sys.intern``: interned strings are immortal on some
    interpreters (3.12 before 3.12.6, free-threaded builds), and volume names come and go."""

    def __call__(self, value: object) -> str:
        s = str(value)
        return self.setdefault(s, s)


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
    moving: set[tuple[str, str]] = field(default_factory=set)  # volumes with a move state at the last read
    raid: dict[str, raid_state.AggregateRaid] = field(default_factory=dict)  # aggregate -> its plexes' state
    shared: Shared = field(default_factory=Shared, repr=False, compare=False)  # begun again by each full read


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


def _lun_record(r: Mapping[str, Any], share: Shared) -> dict[str, Any]:
    """A LUN's or namespace's identity and state (both join host disks the same way)."""
    return {
        "svm": share(_g(r, "svm.name")),
        "volume": share(_g(r, "location.volume.name")),
        "lun": str(r.get("name", "")),
        "serial": str(r.get("serial_number", "")),
        "uuid": str(r.get("uuid", "")),
        "os_type": share(r.get("os_type", "")),
        "node": share(_g(r, "location.node.name")),
        "state": share(_g(r, "status.state")),
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
    inv.shared = share = Shared()
    inv.nodes = {
        str(r.get("name")): {
            "model": str(r.get("model", "")),
            "serial": str(r.get("serial_number", "")),
            "processors": _g(r, "controller.cpu.count", None),
        }
        for r in client.records("/api/cluster/nodes", {"fields": NODE_FIELDS})
    }
    inv.luns = [_lun_record(r, share) for r in client.records("/api/storage/luns", {"fields": LUN_FIELDS})]
    inv.namespaces = caps.optional(
        "/api/storage/namespaces",
        lambda: [
            _lun_record(r, share)
            for r in client.records("/api/storage/namespaces", {"fields": NAMESPACE_FIELDS})
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
    inv.disks = caps.optional("/api/storage/disks", lambda: _disks(client, share), {}, release)


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


def _disks(client: OntapClient, share: Shared) -> dict[str, dict[str, str]]:
    return {
        str(r.get("name")): {
            "type": share(r.get("type", "")),
            "rpm": share(r.get("rpm", "")),
            "container": share(r.get("container_type", "")),
            "aggregate": share(_g(r, "aggregates")[0].get("name", "")) if _g(r, "aggregates") else "",
            "node": share(_g(r, "node.name")),
            "state": share(r.get("state", "")),
        }
        for r in client.records("/api/storage/disks", {"fields": DISK_FIELDS})
    }


def _volume_info(r: Mapping[str, Any], share: Shared) -> dict[str, Any]:
    aggrs = r.get("aggregates") or []
    return {
        "uuid": str(r.get("uuid", "")),
        "aggregate": share(aggrs[0].get("name", "")) if aggrs and isinstance(aggrs[0], Mapping) else "",
        "style": share(r.get("style", "")),
        "move_state": share(_g(r, "movement.state")),
        "move_percent": _g(r, "movement.percent_complete", None),
        "size": _g(r, "space.size", None),
        "available": _g(r, "space.available", None),
    }


def _volume_key(r: Mapping[str, Any], share: Shared) -> tuple[str, str]:
    return (share(_g(r, "svm.name")), share(r.get("name", "")))


def fetch_dynamic(
    client: OntapClient,
    inv: Inventory,
    cluster: str,
    with_stats: bool,
    caps: Capabilities | None = None,
    release: str = "",
    full: bool = True,
) -> list[dict[str, Any]]:
    """Volumes (with move state), every aggregate's RAID state, FC ports, SAN LIFs and their ports.

    ``full`` reads every volume and every aggregate's plexes. Otherwise only what changed is read
    (:func:`_volume_changes`, :mod:`sanlens.ontap.raid_state`); a volume's space is then as the last
    full read found it. The statistics path reads every volume each poll for its ``statistics``,
    and the plexes by change as the tables path does.
    Returns the volume records read, so the statistics path can read their ``statistics``.
    """
    caps = caps or Capabilities(cluster)
    by_change = not full and not with_stats and bool(inv.volumes)
    if by_change:
        vol_recs = _volume_changes(client, inv)
    else:
        fields = VOLUME_FIELDS + (",statistics" if with_stats else "")
        vol_recs = list(client.records("/api/storage/volumes", {"fields": fields}))
        inv.volumes = {_volume_key(r, inv.shared): _volume_info(r, inv.shared) for r in vol_recs}
    inv.moving = {k for k, i in inv.volumes.items() if i["move_state"]}
    _raid(client, inv, cluster, caps, release, not full and bool(inv.raid))
    inv.fc_ports = fetch_fc_ports(client)
    inv.ip_lifs = caps.optional("/api/network/ip/interfaces", lambda: _ip_lifs(client), {}, release)
    inv.eth_ports = (
        caps.optional("/api/network/ethernet/ports", lambda: _eth_ports(client, inv.ip_lifs), {}, release)
        if inv.ip_lifs
        else {}
    )
    return vol_recs


def _volume_changes(client: OntapClient, inv: Inventory) -> list[dict[str, Any]]:
    """The volumes moving now, and those that were moving at the last read (to see a move end and
    the volume on its new aggregate): two filtered requests instead of every volume.

    ``movement.state=!"-"`` asks for volumes with a move state, ONTAP's notation for a value that is
    not empty (as NetApp Harvest filters its KeyPerf volumes on ``statistics.timestamp``)."""
    recs = list(client.records("/api/storage/volumes", {"fields": VOLUME_FIELDS, "movement.state": '!"-"'}))
    seen = {_volume_key(r, inv.shared) for r in recs}
    ended = [inv.volumes[k]["uuid"] for k in sorted(inv.moving - seen) if inv.volumes.get(k, {}).get("uuid")]
    if ended:
        recs += list(
            client.records("/api/storage/volumes", {"fields": VOLUME_FIELDS, "uuid": "|".join(ended)})
        )
    volumes = dict(inv.volumes)  # a new mapping: the last poll's view keeps the one it was built from
    for r in recs:
        volumes[_volume_key(r, inv.shared)] = _volume_info(r, inv.shared)
    listed = {_volume_key(r, inv.shared) for r in recs}
    for k in inv.moving - listed:  # was moving, now listed by neither request: deleted, or no move state
        if k in volumes:
            volumes[k] = {**volumes[k], "move_state": "", "move_percent": None}
    inv.volumes = volumes
    return recs


def _raid(
    client: OntapClient, inv: Inventory, cluster: str, caps: Capabilities, release: str, by_change: bool
) -> None:
    """Every aggregate's RAID state; by change, only the aggregates with a sign of one are read."""
    which: set[str] = set(inv.aggregates)
    if by_change and inv.aggregates:
        inv.aggregates = caps.optional(
            "/api/storage/aggregates", lambda: _aggregates(client), inv.aggregates, release
        )
        unsteady = caps.optional(
            "/api/storage/disks",
            lambda: list(client.records("/api/storage/disks", raid_state.UNSTEADY_DISK_QUERY)),
            None,
            release,
        )
        which = raid_state.to_reread(inv.aggregates, inv.raid, unsteady)

    def read(aggr: str) -> raid_state.AggregateRaid:
        return raid_state.read_aggregate(client, cluster, aggr, inv.aggregates[aggr], caps, release)

    inv.raid = raid_state.refresh(read, inv.aggregates, inv.raid, which)
    inv.raid_ops = [op for r in inv.raid.values() for op in r.ops]
    inv.disk_raid_group = {d: g for r in inv.raid.values() for d, g in r.raid_group_of.items()}
    inv.disk_position = {d: p for r in inv.raid.values() for d, p in r.position_of.items()}
    inv.degraded_raid_groups = {a: r.degraded for a, r in inv.raid.items() if r.degraded}


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


def fetch_qos(
    client: OntapClient, inv: Inventory, caps: Capabilities, release: str = "", workloads: bool = True
) -> None:
    """QoS policies and (``workloads``) workloads, on the QoS schedule. Either may be refused (an older
    release, a role without QoS): then only what needs it is lost, and the refusal is reported as any
    other. Policies are a few records and their ceilings are what an engineer edits: read every time;
    workloads are one per volume and LUN: read when the caller finds them due or incomplete."""
    if workloads:
        inv.qos_workloads = caps.optional(
            QOS_WORKLOADS, lambda: _qos_workloads(client, inv.shared), {}, release
        )
    no_policies: list[dict[str, Any]] = []
    inv.qos_policies = caps.optional(
        QOS_POLICIES,
        lambda: list(client.records(QOS_POLICIES, {"fields": QOS_POLICY_FIELDS})),
        no_policies,
        release,
    )


def _qos_workloads(client: OntapClient, share: Shared) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for r in client.records(QOS_WORKLOADS, {"fields": QOS_WORKLOAD_FIELDS}):
        name = str(r.get("name", ""))
        out[str(r.get("uuid") or name)] = {
            "name": name,
            "class": share(r.get("workload_class", "")),
            "wid": str(r.get("wid", "")),
            "policy": share(_g(r, "policy.name")),
            "svm": share(_g(r, "svm.name")),
            "volume": share(_name_of(r.get("volume"))),
            **{k: _name_of(r.get(k)) for k in ("lun", "file", "qtree")},
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
