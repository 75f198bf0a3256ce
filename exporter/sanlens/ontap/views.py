"""Cooked counter rows -> the OntapView the diagnoses read, for live polls and offline captures alike.

Which cooked counter feeds which field is the catalogue's ``view`` key, and a
row's identity (svm, volume, lun, node, disk, port) comes from the catalogue's
labels, so the live collector and ``sanlens analyze`` cannot drift apart. The
live path adds what only the inventory knows (LUN serials, aggregates, RAID and
move state, FC port speeds).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sanlens.model import (
    AggregateInfo,
    BackgroundOp,
    DiskStats,
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

# (row, its cooked values by view field), as table_fields and row_fields yield them
FieldRows = Iterable[tuple[CounterRow, dict[str, Any]]]
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
            yield row, view_fields(tdef, values)


def table_fields(tables: Iterable[CookedTable]) -> FieldRows:
    """Tables cooked column by column (live polls) with each row's view fields: each field is
    computed once per column, scaled and summed in the counters' order as ``view_fields`` does."""
    cat = catalogue()
    for t in tables:
        tdef = cat.get(t.table)
        if tdef is None or not t.rows:
            continue
        n = len(t.rows)
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
        for i, row in enumerate(t.rows):
            yield row, {k: v[i] for k, v in items if v[i] is not None}


def _f(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) else None


def _int(x: object) -> int | None:
    return int(x) if isinstance(x, int | float) and x > 0 else None


def build_view(
    cluster: str,
    ts: float,
    interval: float | None,
    version: OntapVersion | None,
    cooked: FieldRows,
    inventory: Inventory | None = None,
) -> OntapView:
    cat = catalogue()
    inv = inventory or Inventory()
    aggr_node = {a: i["node"] for a, i in inv.aggregates.items()}
    serial = {(x["svm"], x["lun"]): x for x in inv.luns}
    namespaces = {(x["svm"], x["lun"]): x for x in inv.namespaces}
    lifs: list[LifStats] = []
    luns: list[LunStats] = []
    vols: list[VolumeStats] = []
    nodes: list[NodeStats] = []
    disks: list[DiskStats] = []
    ports: list[FcPortStats] = []
    seen_vols: set[tuple[str, str]] = set()
    seen_nodes: set[str] = set()
    seen_disks: set[str] = set()
    seen_ports: set[tuple[str, str]] = set()
    for row, f in cooked:
        tdef = cat.get(row.table)
        if tdef is None:
            continue
        lab = tdef.label_values(row.properties, row.instance)
        if row.table in ("lun", "namespace"):
            kind = row.table
            path = lab["lun"] if kind == "lun" else lab["namespace"]
            meta = (serial if kind == "lun" else namespaces).get((lab["svm"], path), {})
            node = lab.get("node") or meta.get("node", "")
            luns.append(
                LunStats(
                    cluster,
                    lab["svm"],
                    lab["volume"] or meta.get("volume", ""),
                    path,
                    meta.get("serial", ""),
                    node,
                    f.get("read_iops"),
                    f.get("write_iops"),
                    f.get("other_iops"),
                    f.get("read_latency_s"),
                    f.get("write_latency_s"),
                    f.get("read_bytes_s"),
                    f.get("write_bytes_s"),
                    str(meta.get("state", "")),
                    meta.get("thin"),
                    kind,
                    inv.zones.get(node, ""),
                )
            )
        elif row.table in ("iscsi_lif", "nvmf_lif"):
            lifs.append(_lif(cluster, row.table, lab, f, inv))
        elif row.table == "volume":
            key = (lab["svm"], lab["volume"])
            seen_vols.add(key)
            i = inv.volumes.get(key, {})
            aggr = i.get("aggregate") or lab.get("aggregate", "")
            parts = [f.get(k) for k in ("read_iops", "write_iops", "other_iops")]
            total = f.get("total_iops")
            if total is None and any(x is not None for x in parts):
                total = sum(x or 0.0 for x in parts)
            vols.append(
                VolumeStats(
                    cluster,
                    key[0],
                    key[1],
                    aggr,
                    aggr_node.get(aggr, lab.get("node", "")),
                    i.get("style", ""),
                    parts[0],
                    parts[1],
                    parts[2],
                    total,
                    f.get("read_latency_s"),
                    f.get("write_latency_s"),
                    f.get("avg_latency_s"),
                    i.get("move_state", ""),
                    _f(i.get("move_percent")),
                    _f(i.get("size")),
                    _f(i.get("available")),
                )
            )
        elif row.table in ("system:node", "sysstat"):
            name = lab["node"] or row.instance
            seen_nodes.add(name)
            n = inv.nodes.get(name, {})
            procs = f.get("processors") or n.get("processors")
            if procs is None and isinstance(row.counters.get("cpu"), list):
                procs = len(row.counters["cpu"])  # type: ignore[arg-type]
            nodes.append(
                NodeStats(
                    cluster,
                    name,
                    row.properties.get("system_model") or n.get("model", ""),
                    _int(procs),
                    f.get("cpu_busy_ratio"),
                    f.get("domain_busy", {}),
                    f.get("average_processor_busy_ratio"),
                )
            )
        elif row.table == "disk:constituent":
            name = lab["disk"] or row.instance
            i = inv.disks.get(name, {})
            rg = lab.get("raid_group") or inv.disk_raid_group.get(name, "")
            aggr = i.get("aggregate") or lab.get("aggregate", "")
            disks.append(
                DiskStats(
                    cluster,
                    name,
                    aggr,
                    lab.get("node") or i.get("node", ""),
                    rg,
                    i.get("type", ""),
                    i.get("container", ""),
                    f.get("busy_ratio"),
                    f.get("read_iops"),
                    f.get("write_iops"),
                    i.get("state", ""),
                    inv.disk_position.get(name, ""),
                )
            )
            seen_disks.add(name)
        elif row.table == "fcp":
            p = inv.fc_ports.get((lab["node"], lab["port"]), {})
            speed = p.get("speed_gbps") or _speed_property(row.properties.get("link.speed", ""))
            ports.append(
                FcPortStats(
                    cluster,
                    lab["node"],
                    lab["port"],
                    speed,
                    p.get("state", ""),
                    f.get("read_iops"),
                    f.get("write_iops"),
                    f.get("read_bytes_s"),
                    f.get("write_bytes_s"),
                    f.get("queue_full"),
                    f.get("threshold_full"),
                    f.get("link_errors"),
                    bool(p.get("enabled", True)),
                )
            )
            seen_ports.add((lab["node"], lab["port"]))
    if inventory is not None:
        for key, i in inv.volumes.items():  # volumes without counters still carry move state
            if key not in seen_vols and i.get("move_state"):
                vols.append(
                    VolumeStats(
                        cluster,
                        key[0],
                        key[1],
                        i["aggregate"],
                        aggr_node.get(i["aggregate"], ""),
                        i["style"],
                        move_state=i["move_state"],
                        move_percent=_f(i["move_percent"]),
                    )
                )
        # an offline LUN serves no I/O and may answer no counter row: its inventory state is all
        # there is, and lun_not_online must still judge it
        seen_luns = {(x.kind, x.svm, x.lun) for x in luns}
        for kind, listed in (("lun", inv.luns), ("namespace", inv.namespaces)):
            for x in listed:
                if (kind, x["svm"], x["lun"]) not in seen_luns:
                    luns.append(
                        LunStats(cluster, x["svm"], x.get("volume", ""), x["lun"], x.get("serial", ""),
                                 x.get("node", ""), state=str(x.get("state", "")), thin=x.get("thin"),
                                 kind=kind, zone=inv.zones.get(x.get("node", ""), ""))
                    )  # fmt: skip
        for name, n in inv.nodes.items():
            if name not in seen_nodes:
                nodes.append(NodeStats(cluster, name, n.get("model", ""), _int(n.get("processors"))))
        # a failed disk serves no I/O and has no counter row: its state is all there is
        for name, i in inv.disks.items():
            if name not in seen_disks and "broken" in (i.get("state"), i.get("container")):
                disks.append(
                    DiskStats(cluster, name, i.get("aggregate", ""), i.get("node", ""), "", i.get("type", ""),
                              i.get("container", ""), state=i.get("state", ""),
                              raid_position=inv.disk_position.get(name, ""))
                )  # fmt: skip
        # a port whose link is down may answer no counter row either
        for (node_name, port), p in inv.fc_ports.items():
            if (node_name, port) not in seen_ports:
                ports.append(
                    FcPortStats(cluster, node_name, port, p.get("speed_gbps"), p.get("state", ""),
                                enabled=bool(p.get("enabled", True)))
                )  # fmt: skip
    rebuilding = {op.aggregate for op in inv.raid_ops if op.operation == "reconstruct"}
    aggrs = tuple(
        AggregateInfo(
            cluster,
            a,
            i["node"],
            i["disk_type"],
            _int(i["disk_count"]),
            str(i.get("state", "")),
            inv.degraded_raid_groups.get(a, 0),
            a in rebuilding,
        )
        for a, i in inv.aggregates.items()
    )
    moves = tuple(
        BackgroundOp(cluster, "volume_move", i["aggregate"], vol, svm, percent=_f(i["move_percent"]))
        for (svm, vol), i in inv.volumes.items()
        if i.get("move_state") and i["move_state"] not in _MOVE_DONE
    )
    return OntapView(
        cluster,
        ts,
        interval,
        version,
        tuple(luns),
        tuple(vols),
        tuple(nodes),
        tuple(disks),
        aggrs,
        tuple(inv.raid_ops) + moves,
        tuple(ports),
        tuple(lifs),
        inv.personality,
    )


def _lif(cluster: str, table: str, lab: dict[str, str], f: dict[str, Any], inv: Inventory) -> LifStats:
    """An iSCSI or NVMe-oF LIF row, with its port (and that port's speed) from the inventory."""
    ip = inv.ip_lifs.get((lab["svm"], lab["lif"]), {})
    node = lab.get("node") or ip.get("node", "")
    port = ip.get("port") or lab.get("port", "")
    if table == "iscsi_lif":
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
        cluster,
        node,
        lab["svm"],
        lab["lif"],
        protocol,
        port,
        speed,
        state,
        f.get("read_iops"),
        f.get("write_iops"),
        f.get("read_latency_s"),
        f.get("write_latency_s"),
        f.get("read_bytes_s"),
        f.get("write_bytes_s"),
        f.get("protocol_errors"),
    )


def _speed_property(text: str) -> float | None:
    """``link.speed`` as the fcp table prints it (``16``, ``16 Gb/s``, ``auto``)."""
    head = text.strip().split(" ")[0]
    try:
        v = float(head)
    except ValueError:
        return None
    return v if v > 0 else None
