"""The fake ONTAP counter tables (``/api/cluster/counter/tables``): schemas and rows.

Every catalogue table the exporter reads is served, with ONTAP's row shape
(``properties``/``counters``, array counters as ``values``+``labels``,
``aggregation``). Counter values come from :mod:`sanlens_sim.estate` at the
instant of the request.

Two release and fault behaviours follow ONTAP's:

- a table's counter schema belongs to a release: :data:`COUNTERS_SINCE` lists the
  counters the simulated releases add, so an upgrade (a scenario switch with a newer
  ``ontap_version``) changes the schema under a running exporter;
- ``aggregation``: a ``lun`` or ``volume`` row is the sum of one constituent per node
  (I/O is counted on the node it arrives at). A row that misses a node's constituent
  says ``complete: false`` with ``count`` the constituents that answered, and its
  values lack that node's part, as the real sums do.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sanlens.ontap.catalogue import CounterDef, TableDef, catalogue
from sanlens_sim import qos_world
from sanlens_sim.estate import CP_PHASES, UPTIME_S, Estate, NicPort, nic_ports
from sanlens_sim.ontap_api import ApiError, Json, asa_r2_refusal, disk_uid, node_uuid, svm_uuid, version_full
from sanlens_sim.world import DOMAINS, Disk, Lif, Lun, Node, Volume, World

COUNTER_TABLES_SINCE = (9, 11, 0)
# (table, counter) -> the first simulated release that has it. A simulator device to exercise
# schema changes across an upgrade (ONTAP's counter schemas do differ between releases);
# which counter is illustrative, not a claim about a particular release.
COUNTERS_SINCE: dict[tuple[str, str], tuple[int, int, int]] = {("lun", "queue_full"): (9, 12, 0)}
# Tables whose rows sum one constituent per node: a missing node lowers the sum.
SUMMED_TABLES = frozenset({"lun", "volume"})
# The QoS tables: (rows are centres, only the volumes' workloads, the centre's property name).
# Their rows carry the catalogue's counters when it declares the table; sanlens_sim.ontap_qos_tables
# answers them (filters, and ONTAP's own schema and rows when the catalogue does not declare one).
QOS_TABLES = {
    "qos": (False, False, ""),
    "qos_volume": (False, True, ""),
    "qos_detail": (True, False, "resource.name"),
    "qos_detail_volume": (True, True, "resource_name"),
}
# ONTAP's answer for a counter table it does not have (code as NetApp Harvest's errs.TableNotFound).
TABLE_NOT_FOUND = ("Table is not found", "8585320")


@dataclass(frozen=True)
class Table:
    """How one catalogue table maps onto the simulated world: its objects, row ids and properties."""

    tdef: TableDef
    kind: str  # Estate counter kind
    objects: Callable[[World], list[Any]]
    key: Callable[[Any], str]
    row_id: Callable[[World, Any], str]
    props: Callable[[World, Any], dict[str, Any]]
    raw: Callable[[Any], dict[str, float]] = field(default=lambda o: {})
    string_counters: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.tdef.table


def _lun_props(w: World, x: Lun) -> dict[str, Any]:
    return {
        "name": x.path,
        "svm.name": x.svm,
        "svm.uuid": svm_uuid(w, x.svm),
        "volume.name": x.volume,
        "node.name": x.node,
        "uuid": x.uuid,
    }


def _vol_props(w: World, x: Volume) -> dict[str, Any]:
    return {
        "node.name": x.node,
        "node.uuid": node_uuid(w, x.node),
        "svm.name": x.svm,
        "svm.uuid": svm_uuid(w, x.svm),
        "parent_aggregate": x.aggregate,
        "name": x.name,
        "uuid": x.uuid,
    }


def _node_props(w: World, n: Node) -> dict[str, Any]:
    return {
        "node.name": n.name,
        "system_model": n.model,
        "ontap_version": version_full(w),
        "serial_no": n.serial,
        "system_id": n.serial[-10:],
        "hostname": n.name,
        "name": n.name,
        "uuid": n.uuid,
    }


def _disk_props(w: World, d: Disk) -> dict[str, Any]:
    return {
        "node.name": d.node,
        "node.uuid": node_uuid(w, d.node),
        "name": d.name,
        "physical_disk_id": disk_uid(d),
        "physical_disk_name": d.name,
        "raid_group": d.raid_group,
        "raid.type": "raid_dp",
        "speed": d.rpm,
    }


def _lif_props(w: World, x: Lif) -> dict[str, Any]:
    return {"node.name": x.node, "svm.name": x.svm, "port.id": f"{x.node}:{x.port}", "name": x.name}


def _ns_props(w: World, x: Lun) -> dict[str, Any]:
    return {"name": x.path, "svm.name": x.svm, "svm.uuid": svm_uuid(w, x.svm), "uuid": x.uuid}


def _iscsi_lif_props(w: World, x: Lif) -> dict[str, Any]:
    return {"node.name": x.node, "svm.name": x.svm, "name": x.name}


def _nvmf_lif_props(w: World, x: Lif) -> dict[str, Any]:
    return {"node.name": x.node, "svm.name": x.svm, "port_id": f"{x.node}:{x.port}", "name": x.name}


def _fcport_props(w: World, x: Lif) -> dict[str, Any]:
    return {
        "node.name": x.node,
        "node.uuid": node_uuid(w, x.node),
        "name": x.port,
        "link.speed": x.speed_gbps,
    }


def _nic_props(w: World, p: NicPort) -> dict[str, Any]:
    """A physical Ethernet port's properties: ``link_speed`` in Mbit/s with ONTAP's ``M``."""
    return {
        "node.name": p.node,
        "link_speed": f"{p.speed_gbps * 1000}M",
        "link_current_state": "up" if p.up else "down",
        "type": "nic_ixl",
    }


def _tables() -> dict[str, Table]:
    cat = catalogue()
    specs = (
        Table(
            cat["lun"],
            "lun",
            lambda w: w.plain_luns,
            lambda x: x.key,
            lambda w, x: f"{x.path}:{x.uuid}",
            _lun_props,
        ),
        Table(
            cat["namespace"],
            "lun",
            lambda w: w.namespaces,
            lambda x: x.key,
            lambda w, x: f"{x.path}:{x.uuid}",
            _ns_props,
        ),
        Table(
            cat["volume"],
            "volume",
            lambda w: w.volumes,
            lambda x: f"{x.svm}:{x.name}",
            lambda w, x: f"{x.node}:{x.svm}:{x.name}:{x.uuid}",
            _vol_props,
        ),
        Table(
            cat["system:node"],
            "node",
            lambda w: w.nodes,
            lambda x: x.name,
            lambda w, x: f"{x.name}:{x.uuid}",
            _node_props,
            lambda n: {"num_processors": float(n.cpus), "memory": 131072.0, "uptime": UPTIME_S, "time": 0.0},
        ),
        Table(
            cat["disk:constituent"],
            "disk",
            lambda w: [d for a in w.aggregates for d in a.disks],
            lambda x: x.name,
            lambda w, x: f"{x.node}:{x.name}:{disk_uid(x)}",
            _disk_props,
            lambda d: {"capacity": 915715.0 if d.type == "ssd" else 1144641.0},
        ),
        Table(
            cat["fcp_lif"],
            "lif",
            lambda w: [x for x in w.lifs if x.protocol == "fcp"],
            lambda x: f"{x.svm}:{x.name}",
            lambda w, x: f"{x.svm}:{x.name}",
            _lif_props,
        ),
        Table(
            cat["iscsi_lif"],
            "lif",
            lambda w: [x for x in w.lifs if x.protocol == "iscsi"],
            lambda x: f"{x.svm}:{x.name}",
            lambda w, x: f"{x.svm}:{x.name}",
            _iscsi_lif_props,
        ),
        Table(
            cat["nvmf_lif"],
            "lif",
            lambda w: [x for x in w.lifs if x.protocol.startswith("nvme")],
            lambda x: f"{x.svm}:{x.name}",
            lambda w, x: f"{x.svm}:{x.name}",
            _nvmf_lif_props,
        ),
        Table(
            cat["fcp"],
            "fcport",
            lambda w: w.fc_lifs,
            lambda x: f"{x.node}:{x.port}",
            lambda w, x: f"{x.node}:{x.port}",
            _fcport_props,
            string_counters=("link.speed",),
        ),
        Table(
            cat["nic_common"],
            "nic",
            nic_ports,
            lambda x: f"{x.node}:{x.name}",
            lambda w, x: f"{x.node}:{x.name}",
            _nic_props,
        ),
        Table(
            cat["wafl"],
            "wafl",
            lambda w: w.nodes,
            lambda x: x.name,
            lambda w, x: f"{x.name}:kernel:wafl",
            lambda w, x: {"node.name": x.name, "name": "wafl"},
            lambda n: {"memory_free": 56683.0, "memory_used": 4280.0},
        ),
    )
    qos = tuple(_qos_table(cat[n], *how) for n, how in QOS_TABLES.items() if n in cat)
    served = {t.name for t in (*specs, *qos)}
    missing = [n for n, t in cat.items() if t.rest and n not in served]
    assert not missing, f"catalogue tables the simulator does not serve: {missing}"
    return {t.name: t for t in (*specs, *qos)}


def _qos_table(tdef: TableDef, detail: bool, volume_only: bool, centre_prop: str) -> Table:
    return Table(
        tdef,
        "qos_detail" if detail else "qos",
        lambda w: qos_world.table_objects(w, detail, volume_only),
        lambda x: x.key,
        lambda w, x: x.row_id,
        lambda w, x: qos_world.row_properties(x, centre_prop),
        (lambda c: {"in_latency_path": 1.0 if c.in_path else 0.0}) if detail else (lambda o: {}),
    )


TABLES: dict[str, Table] = _tables()


def _labels(table: Table, c: CounterDef) -> tuple[str, ...]:
    if c.name == "domain_busy" and table.name == "system:node":
        return DOMAINS  # the simulated release's domains
    if c.name == "cp_phase_times":
        return tuple(label for label, _ in CP_PHASES)
    return c.labels


def has_counter_tables(w: World) -> bool:
    return w.version >= COUNTER_TABLES_SINCE


def has_counter(w: World, table: str, counter: str) -> bool:
    """Whether the simulated release's schema of ``table`` has ``counter``."""
    since = COUNTERS_SINCE.get((table, counter))
    return since is None or w.version >= since


def schema(w: World, name: str, missing: str = "") -> Json:
    table = _table(w, name, missing)
    schemas: list[Json] = [
        {"name": p, "description": f"Property {p}", "type": "string", "unit": "none"}
        for p in table.tdef.properties
    ]
    for c in table.tdef.counters.values():
        if not has_counter(w, name, c.name):
            continue
        s: Json = {
            "name": c.name,
            "description": f"{c.name} ({c.spec.type}, {c.spec.unit})",
            "type": c.spec.type,
            "unit": c.spec.unit,
        }
        if c.spec.base:
            s["denominator"] = {"name": c.spec.base}
        schemas.append(s)  # array labels come with the rows, as ONTAP's do
    schemas.sort(key=lambda s: s["name"])
    href = f"/api/cluster/counter/tables/{urllib.parse.quote(name, safe='')}"
    return {
        "name": name,
        "description": f"The {name} counter table.",
        "counter_schemas": schemas,
        "_links": {"self": {"href": href}},
    }


def _refuse_old_or_asa_r2(w: World) -> None:
    """ASA r2 serves no counter tables (its clients read keyperf ``statistics``); nor do
    releases before 9.11."""
    if w.asa_r2:
        raise asa_r2_refusal()
    if not has_counter_tables(w):
        raise ApiError(404, "API not found", "4")


def _table(w: World, name: str, missing: str = "") -> Table:
    _refuse_old_or_asa_r2(w)
    table = TABLES.get(name)
    if table is None or name == missing:
        raise ApiError(404, *TABLE_NOT_FOUND)
    return table


def table_list(w: World, missing: str = "") -> list[Json]:
    _refuse_old_or_asa_r2(w)
    return [
        {
            "name": n,
            "description": f"The {n} counter table.",
            "_links": {"self": {"href": f"/api/cluster/counter/tables/{urllib.parse.quote(n, safe='')}"}},
        }
        for n in TABLES
        if n != missing
    ]


@dataclass
class RowOptions:
    counters: set[str] | None  # None = all
    with_properties: bool
    with_counters: bool
    incomplete: Callable[[int], bool] = field(default=lambda i: False)
    missing_table: str = ""  # fault: this table answers 404


def _quote_id(rid: str) -> str:
    return (
        urllib.parse.quote(rid, safe="")
        if any(ch in rid for ch in "%?#& ")
        else rid.replace(":", "%3A").replace("/", "%2F")
    )


def rows(estate: Estate, w: World, name: str, t: float, opts: RowOptions, page: list[Any]) -> list[Json]:
    """The rows of ``page`` (objects of the table) at time ``t``.

    Counters the scenarios do not drive stay plausible: rates and deltas (errors, other
    protocols) at zero, averages at 100 µs per op of their base, percents at 5 % of it.
    """
    table = _table(w, name, opts.missing_table)
    cs = estate.counters[table.kind]
    wanted = [
        c
        for c in table.tdef.counters.values()
        if (opts.counters is None or c.name in opts.counters) and has_counter(w, name, c.name)
    ]
    nodes = max(len(w.nodes), 1)
    # a row missing one node's constituent keeps (n-1)/n of the sum (each node carries an equal part)
    kept = (nodes - 1) / nodes if name in SUMMED_TABLES else 1.0
    plan = []
    for c in wanted:
        labels = _labels(table, c)
        cols = [cs.col.get(f"{c.name}#{lb}") for lb in labels]
        base = table.tdef.counters.get(c.spec.base)
        plan.append((c, cs.col.get(c.name), cols, list(labels), cs.col.get(base.name) if base else None))
    prefix = f"/api/cluster/counter/tables/{urllib.parse.quote(name, safe='')}/rows/"
    zeros = [0.0] * len(cs.names)
    out: list[Json] = []
    for i, obj in enumerate(page):
        rid = table.row_id(w, obj)
        partial = opts.incomplete(i)
        scale = kept if partial else 1.0
        rec: Json = {"counter_table": {"name": name}, "id": rid}
        if opts.with_properties:
            rec["properties"] = [{"name": k, "value": str(v)} for k, v in table.props(w, obj).items()]
        if opts.with_counters:
            idx = cs.index.get(table.key(obj))
            vals = cs.row(idx, t) if idx is not None else zeros
            raw = table.raw(obj)
            counters: list[Json] = []
            for c, j, cols, arr_labels, jb in plan:
                if c.spec.type == "raw":
                    v = raw.get(c.name, 0.0)
                elif j is not None:
                    v = vals[j]
                else:
                    v = _filler(c.spec.type, vals[jb] if jb is not None else 0.0)
                f = 1.0 if c.spec.type == "raw" else scale
                if arr_labels:
                    per = [vals[k] if k is not None else 0.0 for k in cols]
                    if not any(per) and j is None:
                        per = [v if n == 0 else 0.0 for n in range(len(arr_labels))]
                    counters.append(
                        {"name": c.name, "values": [int(x * f) for x in per], "labels": arr_labels}
                    )
                else:
                    counters.append({"name": c.name, "value": int(v * f)})
            for k in table.string_counters:  # string-typed counters, as ONTAP serves link.speed
                if opts.counters is None or k in opts.counters:
                    counters.append({"name": k, "value": str(table.props(w, obj).get(k, ""))})
            rec["counters"] = counters
        rec["aggregation"] = {"count": nodes - 1 if partial else nodes, "complete": not partial}
        rec["_links"] = {"self": {"href": prefix + _quote_id(rid)}}
        out.append(rec)
    return out


def _filler(kind: str, base: float) -> float:
    if kind == "average":
        return 100.0 * base
    if kind == "percent":
        return 0.05 * base
    return 0.0  # rates and deltas nothing drives: errors, other protocols, stay at zero
