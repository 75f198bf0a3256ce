"""Cooked counter rows -> the OntapView the diagnoses read, for live polls and offline captures alike.

Which cooked counter feeds which field is the catalogue's ``view`` key, which
rows a table feeds its ``view``, and a row's identity (svm, volume, lun, node,
disk, port) comes from the catalogue's labels, so the live collector and
``sanlens analyze`` cannot drift apart. The live path adds what only the
inventory knows (LUN serials, aggregates, RAID and move state, FC port speeds):
the small code per kind of row below.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sanlens.model import (
    AggregateInfo,
    BackgroundOp,
    DiskStats,
    EthPortStats,
    FcPortStats,
    LifStats,
    LunStats,
    NodeStats,
    OntapVersion,
    OntapView,
    VolumeStats,
)
from sanlens.ontap.catalogue import TableDef, catalogue
from sanlens.ontap.cooking import Cooked, CookedTable, CounterRow
from sanlens.ontap.inventory import Inventory
from sanlens.ontap.row_block import Row
from sanlens.qos import QosPolicy, QosWorkload

# (row, its label values, its cooked values by view field), as table_fields and row_fields yield them
FieldRows = Iterable[tuple[Row, dict[str, str], dict[str, Any]]]
_MOVE_DONE = ("done", "success", "failed", "aborted")


def view_fields(tdef: TableDef, values: list[Cooked]) -> dict[str, Any]:
    """Cooked values by view field: scalars (summed when several counters feed one) or label dicts."""
    out: dict[str, Any] = {}
    for c in values:
        cdef = tdef.counters.get(c.counter)
        if cdef is None or not cdef.view:
            continue
        v = c.value * cdef.view_scale
        if c.label:
            out.setdefault(cdef.view, {})[c.label] = v
        else:
            out[cdef.view] = out.get(cdef.view, 0.0) + v
    return out


def row_fields(cooked: Iterable[tuple[CounterRow, list[Cooked]]]) -> FieldRows:
    """Rows cooked one by one (offline captures) with their view fields."""
    cat = catalogue()
    for row, values in cooked:
        tdef = cat.get(row.table)
        if tdef is not None:
            yield row, tdef.label_values(row.properties, row.instance), view_fields(tdef, values)


def table_fields(tables: Iterable[CookedTable]) -> FieldRows:
    """Tables cooked column by column (live polls) with each row's view fields: each field is
    computed once per column, scaled and summed in the counters' order as ``view_fields`` does."""
    cat = catalogue()
    for t in tables:
        tdef = cat.get(t.table)
        n = len(t.block)
        if tdef is None or not n:
            continue
        fields: dict[str, list[Any]] = {}
        for col in t.columns:
            cdef = tdef.counters.get(col.counter)
            if cdef is None or not cdef.view:
                continue
            vs = cdef.view_scale
            have = fields.get(cdef.view)
            if col.labelled:
                have = fields.setdefault(cdef.view, [None] * n)
                for i, pairs in enumerate(col.values):
                    if pairs is None:
                        continue
                    for label, x in pairs:
                        if label:
                            d = have[i]
                            if not isinstance(d, dict):
                                d = have[i] = {}
                            d[label] = x * vs
                        else:
                            have[i] = (have[i] or 0.0) + x * vs
                continue
            if have is None:
                fields[cdef.view] = [None if x is None else 0.0 + x * vs for x in col.values]
            else:
                fields[cdef.view] = [
                    h if x is None else (h or 0.0) + x * vs for h, x in zip(have, col.values, strict=True)
                ]
        items = list(fields.items())
        ids, props = t.block.instances, t.block.properties
        labels = [(lab.name, lab.column(props, ids)) for lab in tdef.labels]
        for i, row in enumerate(t.refs()):
            yield row, {k: v[i] for k, v in labels}, {k: v[i] for k, v in items if v[i] is not None}


def _f(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) else None


def _int(x: object) -> int | None:
    return int(x) if isinstance(x, int | float) and x > 0 else None


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def measured(cls: type, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The view fields a row's counters (or Harvest's series) feed that ``cls`` holds, as keywords."""
    names = _field_names(cls)
    return {k: v for k, v in fields.items() if k in names}


@dataclass(frozen=True, slots=True)
class _Ctx:
    cluster: str
    inv: Inventory
    serial: dict[tuple[str, str], dict]  # (svm, path) -> the LUN's inventory
    namespaces: dict[tuple[str, str], dict]
    aggr_node: dict[str, str]


def _lun(ctx: _Ctx, row: Row, lab: dict[str, str], f: dict[str, Any]) -> LunStats:
    kind = row.table
    path = lab["lun"] if kind == "lun" else lab["namespace"]
    meta = (ctx.serial if kind == "lun" else ctx.namespaces).get((lab["svm"], path), {})
    node = lab.get("node") or meta.get("node", "")
    return LunStats(
        cluster=ctx.cluster,
        svm=lab["svm"],
        volume=lab["volume"] or meta.get("volume", ""),
        lun=path,
        serial=meta.get("serial", ""),
        node=node,
        state=str(meta.get("state", "")),
        thin=meta.get("thin"),
        kind=kind,
        zone=ctx.inv.zones.get(node, ""),
        **measured(LunStats, f),
    )


def _volume(ctx: _Ctx, row: Row, lab: dict[str, str], f: dict[str, Any]) -> VolumeStats:
    i = ctx.inv.volumes.get((lab["svm"], lab["volume"]), {})
    aggr = i.get("aggregate") or lab.get("aggregate", "")
    total = f.get("total_iops")
    parts = [f.get(k) for k in ("read_iops", "write_iops", "other_iops")]
    if total is None and any(x is not None for x in parts):
        total = sum(x or 0.0 for x in parts)
    return VolumeStats(
        cluster=ctx.cluster,
        svm=lab["svm"],
        volume=lab["volume"],
        aggregate=aggr,
        node=ctx.aggr_node.get(aggr, lab.get("node", "")),
        style=i.get("style", ""),
        move_state=i.get("move_state", ""),
        move_percent=_f(i.get("move_percent")),
        size_bytes=_f(i.get("size")),
        available_bytes=_f(i.get("available")),
        **{**measured(VolumeStats, f), "total_iops": total},
    )


def _node(ctx: _Ctx, row: Row, lab: dict[str, str], f: dict[str, Any]) -> NodeStats:
    name = lab["node"] or row.instance
    n = ctx.inv.nodes.get(name, {})
    procs = f.get("processors") or n.get("processors")
    if procs is None and isinstance(row.counters.get("cpu"), list):
        procs = len(row.counters["cpu"])  # type: ignore[arg-type]
    return NodeStats(
        cluster=ctx.cluster,
        node=name,
        model=row.properties.get("system_model") or n.get("model", ""),
        **{**measured(NodeStats, f), "processors": _int(procs)},
    )


def _disk(ctx: _Ctx, row: Row, lab: dict[str, str], f: dict[str, Any]) -> DiskStats:
    name = lab["disk"] or row.instance
    i = ctx.inv.disks.get(name, {})
    return DiskStats(
        cluster=ctx.cluster,
        disk=name,
        aggregate=i.get("aggregate") or lab.get("aggregate", ""),
        node=lab.get("node") or i.get("node", ""),
        raid_group=lab.get("raid_group") or ctx.inv.disk_raid_group.get(name, ""),
        disk_type=i.get("type", ""),
        container=i.get("container", ""),
        state=i.get("state", ""),
        raid_position=ctx.inv.disk_position.get(name, ""),
        **measured(DiskStats, f),
    )


def _fc_port(ctx: _Ctx, row: Row, lab: dict[str, str], f: dict[str, Any]) -> FcPortStats:
    p = ctx.inv.fc_ports.get((lab["node"], lab["port"]), {})
    return FcPortStats(
        cluster=ctx.cluster,
        node=lab["node"],
        port=lab["port"],
        speed_gbps=p.get("speed_gbps") or _speed_property(row.properties.get("link.speed", "")),
        state=p.get("state", ""),
        enabled=bool(p.get("enabled", True)),
        **measured(FcPortStats, f),
    )


def _lif(ctx: _Ctx, row: Row, lab: dict[str, str], f: dict[str, Any]) -> LifStats:
    """An iSCSI or NVMe-oF LIF row, with its port (and that port's speed) from the inventory."""
    inv = ctx.inv
    ip = inv.ip_lifs.get((lab["svm"], lab["lif"]), {})
    node = lab.get("node") or ip.get("node", "")
    port = ip.get("port") or lab.get("port", "")
    if row.table == "iscsi_lif":
        protocol = "iscsi"
    elif ip:
        protocol = str(ip.get("protocol", "nvme_tcp"))
    else:  # an NVMe LIF that is no IP interface sits on an FC port
        protocol = "nvme_fc" if (node, port) in inv.fc_ports else "nvme"
    if protocol == "nvme_fc":
        fc = inv.fc_ports.get((node, port), {})
        speed, state = fc.get("speed_gbps"), str(fc.get("state", ""))
    else:
        eth = inv.eth_ports.get((node, port), {})
        speed, state = eth.get("speed_gbps"), str(ip.get("state") or eth.get("state", ""))
    return LifStats(
        cluster=ctx.cluster,
        node=node,
        svm=lab["svm"],
        lif=lab["lif"],
        protocol=protocol,
        port=port,
        speed_gbps=speed,
        state=state,
        **measured(LifStats, f),
    )


def _eth_port(ctx: _Ctx, row: Row, lab: dict[str, str], f: dict[str, Any]) -> EthPortStats:
    """An Ethernet port's row, its speed from the row's ``link_speed`` or else the inventory's."""
    node, port = lab["node"], lab["port"]
    speed = link_speed_gbps(row.properties.get("link_speed", ""))
    return EthPortStats(
        cluster=ctx.cluster,
        node=node,
        port=port,
        speed_gbps=speed or ctx.inv.eth_ports.get((node, port), {}).get("speed_gbps"),
        **measured(EthPortStats, f),
    )


def link_speed_gbps(text: str) -> float | None:
    """An Ethernet link speed in Gbit/s from ONTAP's Mbit/s: nic_common's ``10000M``, a port's ``10000``;
    None for ``auto``, ``0`` or nothing."""
    try:
        mbps = float(text.strip().removesuffix("M"))
    except ValueError:
        return None
    return mbps / 1000.0 if math.isfinite(mbps) and mbps > 0 else None


# a table's ``view`` -> its row's view entry
_MAKERS: dict[str, Callable[[_Ctx, Row, dict[str, str], dict[str, Any]], Any]] = {
    "luns": _lun,
    "volumes": _volume,
    "nodes": _node,
    "disks": _disk,
    "fc_ports": _fc_port,
    "lifs": _lif,
    "eth_ports": _eth_port,
}


def build_view(
    cluster: str,
    ts: float,
    interval: float | None,
    version: OntapVersion | None,
    cooked: FieldRows,
    inventory: Inventory | None = None,
    qos_workloads: tuple[QosWorkload, ...] = (),
    qos_policies: tuple[QosPolicy, ...] = (),
) -> OntapView:
    """The view of cooked rows, each in the rows its table's ``view`` names, and the inventory's;
    the QoS workloads and policies come cooked (``ontap.qos_views``), from the last QoS poll."""
    cat = catalogue()
    inv = inventory or Inventory()
    ctx = _Ctx(
        cluster=cluster,
        inv=inv,
        serial={(x["svm"], x["lun"]): x for x in inv.luns},
        namespaces={(x["svm"], x["lun"]): x for x in inv.namespaces},
        aggr_node={a: i["node"] for a, i in inv.aggregates.items()},
    )
    views: dict[str, list[Any]] = {v: [] for v in _MAKERS}
    for row, lab, f in cooked:
        tdef = cat.get(row.table)
        if tdef is not None and tdef.view in _MAKERS:
            views[tdef.view].append(_MAKERS[tdef.view](ctx, row, lab, f))
    if inventory is not None:
        inventory_only(ctx, views)
    kinds: dict[str, Any] = {k: tuple(v) for k, v in views.items()}
    return OntapView(
        cluster=cluster,
        timestamp=ts,
        interval_s=interval,
        version=version,
        aggregates=_aggregates(cluster, inv),
        background_ops=(*inv.raid_ops, *_moves(cluster, inv)),
        personality=inv.personality,
        qos_workloads=qos_workloads,
        qos_policies=qos_policies,
        **kinds,
    )


def inventory_only(ctx: _Ctx, views: dict[str, list[Any]]) -> None:
    """What the inventory knows of objects that answered no counter row, added to ``views``."""
    cluster, inv = ctx.cluster, ctx.inv
    seen_vols = {(x.svm, x.volume) for x in views["volumes"]}
    for key, i in inv.volumes.items():  # volumes without counters still carry move state
        if key not in seen_vols and i.get("move_state"):
            views["volumes"].append(
                VolumeStats(
                    cluster=cluster,
                    svm=key[0],
                    volume=key[1],
                    aggregate=i["aggregate"],
                    node=ctx.aggr_node.get(i["aggregate"], ""),
                    style=i["style"],
                    move_state=i["move_state"],
                    move_percent=_f(i["move_percent"]),
                )
            )
    # an offline LUN serves no I/O and may answer no counter row: its inventory state is all
    # there is, and lun_not_online must still judge it
    seen_luns = {(x.kind, x.svm, x.lun) for x in views["luns"]}
    for kind, listed in (("lun", inv.luns), ("namespace", inv.namespaces)):
        for x in listed:
            if (kind, x["svm"], x["lun"]) not in seen_luns:
                views["luns"].append(
                    LunStats(
                        cluster=cluster,
                        svm=x["svm"],
                        volume=x.get("volume", ""),
                        lun=x["lun"],
                        serial=x.get("serial", ""),
                        node=x.get("node", ""),
                        state=str(x.get("state", "")),
                        thin=x.get("thin"),
                        kind=kind,
                        zone=inv.zones.get(x.get("node", ""), ""),
                    )
                )
    seen_nodes = {x.node for x in views["nodes"]}
    for name, n in inv.nodes.items():
        if name not in seen_nodes:
            views["nodes"].append(
                NodeStats(
                    cluster=cluster, node=name, model=n.get("model", ""), processors=_int(n.get("processors"))
                )
            )
    # a failed disk serves no I/O and has no counter row: its state is all there is
    seen_disks = {x.disk for x in views["disks"]}
    for name, i in inv.disks.items():
        if name not in seen_disks and "broken" in (i.get("state"), i.get("container")):
            views["disks"].append(
                DiskStats(
                    cluster=cluster,
                    disk=name,
                    aggregate=i.get("aggregate", ""),
                    node=i.get("node", ""),
                    disk_type=i.get("type", ""),
                    container=i.get("container", ""),
                    state=i.get("state", ""),
                    raid_position=inv.disk_position.get(name, ""),
                )
            )
    # a port whose link is down may answer no counter row either
    seen_ports = {(x.node, x.port) for x in views["fc_ports"]}
    for (node, port), p in inv.fc_ports.items():
        if (node, port) not in seen_ports:
            views["fc_ports"].append(
                FcPortStats(
                    cluster=cluster,
                    node=node,
                    port=port,
                    speed_gbps=p.get("speed_gbps"),
                    state=p.get("state", ""),
                    enabled=bool(p.get("enabled", True)),
                )
            )


def _aggregates(cluster: str, inv: Inventory) -> tuple[AggregateInfo, ...]:
    rebuilding = {op.aggregate for op in inv.raid_ops if op.operation == "reconstruct"}
    return tuple(
        AggregateInfo(
            cluster=cluster,
            aggregate=a,
            node=i["node"],
            disk_type=i["disk_type"],
            disk_count=_int(i["disk_count"]),
            state=str(i.get("state", "")),
            degraded_raid_groups=inv.degraded_raid_groups.get(a, 0),
            reconstructing=a in rebuilding,
        )
        for a, i in inv.aggregates.items()
    )


def _moves(cluster: str, inv: Inventory) -> tuple[BackgroundOp, ...]:
    return tuple(
        BackgroundOp(
            cluster=cluster,
            operation="volume_move",
            aggregate=i["aggregate"],
            volume=vol,
            svm=svm,
            percent=_f(i["move_percent"]),
        )
        for (svm, vol), i in inv.volumes.items()
        if i.get("move_state") and i["move_state"] not in _MOVE_DONE
    )


def _speed_property(text: str) -> float | None:
    """``link.speed`` as the fcp table prints it (``16``, ``16 Gb/s``, ``auto``)."""
    head = text.strip().split(" ")[0]
    try:
        v = float(head)
    except ValueError:
        return None
    return v if v > 0 else None
