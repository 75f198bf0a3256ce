"""The fake ONTAP REST API: inventory collections, keyperf ``statistics`` and counter tables.

Shapes follow the real captures in ``../shared/fixtures/ontap`` (HAL ``_links``,
``records``/``num_records``, counter rows with ``properties``/``counters``,
array counters as ``values``+``labels``, ``aggregation``). Counter values come
from :mod:`sanlens.sim.estate` at the instant of the request.
"""

from __future__ import annotations

import datetime as _dt
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sanlens.sim.estate import CP_PHASES, Estate
from sanlens.sim.world import DOMAINS, Aggregate, Disk, Lif, Lun, Node, Volume, World, stable_uuid

COUNTER_TABLES_SINCE = (9, 11, 0)
DEFAULT_MAX_RECORDS = 10000

Json = dict[str, Any]


class ApiError(Exception):
    """An ONTAP error answer: HTTP status plus ``{"error": {"message", "code"}}``."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code

    def body(self) -> Json:
        return {"error": {"message": self.message, "code": self.code}}


def not_found(what: str) -> ApiError:
    return ApiError(404, f'entry doesn\'t exist: "{what}"', "4")


# ------------------------------------------------------------------ counter schemas
@dataclass(frozen=True)
class C:
    """One counter schema: ONTAP name, type, unit, denominator, description; ``labels`` for arrays."""

    name: str
    type: str
    unit: str
    desc: str
    denominator: str | None = None
    labels: tuple[str, ...] = ()


def _rate(name: str, desc: str, unit: str = "per_sec") -> C:
    return C(name, "rate", unit, desc)


def _avg(name: str, base: str, desc: str) -> C:
    return C(name, "average", "microsec", desc, base)


def _io_counters(
    ops: tuple[str, str, str, str], data: tuple[str, str], lat: tuple[str, str, str, str]
) -> list[C]:
    r, w, o, t = ops
    return [
        _rate(r, "Number of read operations per second"),
        _rate(w, "Number of write operations per second"),
        _rate(o, "Number of other operations per second"),
        _rate(t, "Total number of operations per second"),
        _rate(data[0], "Bytes read per second", "b_per_sec"),
        _rate(data[1], "Bytes written per second", "b_per_sec"),
        _avg(lat[0], r, "Average read latency in microseconds"),
        _avg(lat[1], w, "Average write latency in microseconds"),
        _avg(lat[2], o, "Average latency of other operations in microseconds"),
        _avg(lat[3], t, "Average latency of all operations in microseconds"),
    ]


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    kind: str  # Estate counter kind
    counters: list[C]
    properties: list[tuple[str, str]]
    objects: Callable[[World], list[Any]]
    key: Callable[[Any], str]
    row_id: Callable[[World, Any], str]
    props: Callable[[World, Any], list[tuple[str, Any]]]
    raw: Callable[[Any], dict[str, float]] = field(default=lambda o: {})


def _svm_uuid(w: World, svm: str) -> str:
    return stable_uuid(w.cluster, "svm", svm)


def _node_uuid(w: World, node: str) -> str:
    return stable_uuid(w.cluster, node)


def _lun_props(w: World, x: Lun) -> list[tuple[str, Any]]:
    return [
        ("node.name", x.node),
        ("svm.name", x.svm),
        ("svm.uuid", _svm_uuid(w, x.svm)),
        ("volume.name", x.volume),
        ("name", x.path),
        ("uuid", x.uuid),
    ]


def _vol_props(w: World, x: Volume) -> list[tuple[str, Any]]:
    return [
        ("node.name", x.node),
        ("node.uuid", _node_uuid(w, x.node)),
        ("svm.name", x.svm),
        ("svm.uuid", _svm_uuid(w, x.svm)),
        ("parent_aggregate", x.aggregate),
        ("name", x.name),
        ("uuid", x.uuid),
    ]


def _node_props(w: World, n: Node) -> list[tuple[str, Any]]:
    return [
        ("node.name", n.name),
        ("system_model", n.model),
        ("ontap_version", version_full(w)),
        ("serial_no", n.serial),
        ("hostname", n.name),
        ("name", n.name),
        ("uuid", n.uuid),
    ]


def _disk_props(w: World, d: Disk) -> list[tuple[str, Any]]:
    return [
        ("node.name", d.node),
        ("node.uuid", _node_uuid(w, d.node)),
        ("name", d.name),
        ("raid_group", d.raid_group),
        ("raid_type", "raid_dp"),
        ("disk_speed", d.rpm),
        ("physical_disk_name", d.name),
    ]


def _lif_props(w: World, x: Lif) -> list[tuple[str, Any]]:
    return [
        ("node.name", x.node),
        ("svm.name", x.svm),
        ("port.name", x.name.rsplit("_", 1)[-1] + "a"),
        ("name", x.name),
    ]


TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            "lun",
            "The LUN table reports activity and performance of SCSI LUNs.",
            "lun",
            _io_counters(
                ("read_ops", "write_ops", "other_ops", "total_ops"),
                ("read_data", "write_data"),
                ("avg_read_latency", "avg_write_latency", "avg_other_latency", "avg_latency"),
            ),
            [
                ("node.name", "Node"),
                ("svm.name", "SVM"),
                ("svm.uuid", "SVM UUID"),
                ("volume.name", "Volume"),
                ("name", "LUN path"),
                ("uuid", "LUN UUID"),
            ],
            lambda w: w.luns,
            lambda x: x.key,
            lambda w, x: f"{x.svm}:{x.path}",
            _lun_props,
        ),
        Table(
            "volume",
            "Counter Manager table for exporting volume performance counters.",
            "volume",
            [
                *_io_counters(
                    ("total_read_ops", "total_write_ops", "total_other_ops", "total_ops"),
                    ("bytes_read", "bytes_written"),
                    ("read_latency", "write_latency", "other_latency", "average_latency"),
                ),
                _rate("fcp.read_ops", "Number of block protocol read operations per second from the volume"),
                _rate("fcp.write_ops", "Number of block protocol write operations per second to the volume"),
                _rate("fcp.read_data", "Bytes read per second via block protocol", "b_per_sec"),
                _rate("fcp.write_data", "Bytes written per second via block protocol", "b_per_sec"),
                _avg("fcp.read_latency", "fcp.read_ops", "Average time to process FCP read operations"),
                _avg("fcp.write_latency", "fcp.write_ops", "Average time to process FCP write operations"),
            ],
            [
                ("node.name", "Name of the Node"),
                ("node.uuid", "UUID for the node"),
                ("svm.name", "SVM name"),
                ("svm.uuid", "SVM UUID"),
                ("parent_aggregate", "The name of the aggregate hosting this volume"),
                ("name", "This is the name of the volume counter row"),
                ("uuid", "DSID/MSID of this volume row"),
            ],
            lambda w: w.volumes,
            lambda x: f"{x.svm}:{x.name}",
            lambda w, x: f"{x.node}:{x.svm}:{x.name}:{x.uuid}",
            _vol_props,
        ),
        Table(
            "system:node",
            "The System table reports general system activity, per node.",
            "node",
            [
                C(
                    "cpu_busy",
                    "percent",
                    "percent",
                    "System CPU resource utilization (average over processors)",
                    "cpu_elapsed_time",
                ),
                C("cpu_elapsed_time", "delta", "microsec", "Elapsed time since boot"),
                C(
                    "average_processor_busy_percent",
                    "percent",
                    "percent",
                    "Average processor utilization across active processors in the system",
                    "cpu_elapsed_time",
                ),
                C(
                    "total_processor_busy",
                    "percent",
                    "percent",
                    "Total processor utilization of active processors in the system",
                    "cpu_elapsed_time",
                ),
                C(
                    "total_processor_busy_time",
                    "delta",
                    "microsec",
                    "Total processor time of active processors in the system",
                ),
                C("idle_time", "delta", "microsec", "Processor idle time"),
                C(
                    "domain_busy",
                    "percent",
                    "percent",
                    "Array of processor time in percentage spent in various domains",
                    "cpu_elapsed_time",
                    DOMAINS,
                ),
                C("num_processors", "raw", "none", "Total number of processors in the system"),
                _rate("total_ops", "Total number of operations per second"),
                _rate("read_ops", "Read operations per second"),
                _rate("write_ops", "Write operations per second"),
                _rate("other_ops", "All other operations per second"),
                _rate("fcp_ops", "Number of FCP operations per second"),
            ],
            [
                ("node.name", "Node name"),
                ("system_model", "System model"),
                ("ontap_version", "ONTAP version"),
                ("serial_no", "Serial number"),
                ("hostname", "Host name"),
                ("name", "Node name"),
                ("uuid", "Node UUID"),
            ],
            lambda w: w.nodes,
            lambda x: x.name,
            lambda w, x: f"{x.name}:{x.uuid}",
            _node_props,
            lambda n: {"num_processors": float(n.cpus)},
        ),
        Table(
            "disk:constituent",
            "The disk:constituent table reports activity of the disks (constituents) of aggregates.",
            "disk",
            [
                C(
                    "disk_busy",
                    "percent",
                    "percent",
                    "The utilization percent of the disk",
                    "base_for_disk_busy",
                ),
                C("base_for_disk_busy", "delta", "none", "Base for disk_busy calculation"),
                _rate(
                    "total_transfers", "Total number of disk operations involving data transfer per second"
                ),
                _rate("user_reads", "Number of disk read operations initiated each second for user data"),
                _rate("user_writes", "Number of disk write operations initiated each second for user data"),
                _rate("user_read_blocks", "Number of blocks transferred for user read operations per second"),
                _rate(
                    "user_write_blocks", "Number of blocks transferred for user write operations per second"
                ),
                _avg(
                    "user_read_latency",
                    "user_read_blocks",
                    "Average latency per block in microseconds for user read operations",
                ),
                _avg(
                    "user_write_latency",
                    "user_write_blocks",
                    "Average latency per block in microseconds for user write operations",
                ),
            ],
            [
                ("node.name", "Node"),
                ("node.uuid", "Node UUID"),
                ("name", "Disk name"),
                ("raid_group", "RAID group path /aggregate/plex/rg"),
                ("raid_type", "RAID type"),
                ("disk_speed", "Disk RPM"),
                ("physical_disk_name", "Physical disk name"),
            ],
            lambda w: [d for a in w.aggregates for d in a.disks],
            lambda x: x.name,
            lambda w, x: f"{x.node}:{x.name}",
            _disk_props,
        ),
        Table(
            "fcp_lif",
            "The fcp_lif table reports activity of the FC logical interfaces.",
            "lif",
            _io_counters(
                ("read_ops", "write_ops", "other_ops", "total_ops"),
                ("read_data", "write_data"),
                ("avg_read_latency", "avg_write_latency", "avg_other_latency", "avg_latency"),
            ),
            [
                ("node.name", "Node"),
                ("svm.name", "SVM"),
                ("port.name", "Physical port"),
                ("name", "LIF name"),
            ],
            lambda w: w.lifs,
            lambda x: f"{x.svm}:{x.name}",
            lambda w, x: f"{x.svm}:{x.name}",
            _lif_props,
        ),
        Table(
            "wafl",
            "The WAFL table reports WAFL consistency point activity, per node.",
            "wafl",
            [
                C("cp_count", "delta", "none", "Number of consistency points"),
                C("total_cp_msecs", "delta", "millisec", "Milliseconds spent in consistency points"),
                C(
                    "cp_phase_times",
                    "delta",
                    "millisec",
                    "Array of milliseconds spent in each CP phase",
                    labels=tuple(label for label, _ in CP_PHASES),
                ),
            ],
            [("node.name", "Node"), ("name", "Node name")],
            lambda w: w.nodes,
            lambda x: x.name,
            lambda w, x: x.name,
            lambda w, x: [("node.name", x.name), ("name", x.name)],
        ),
    )
}


def version_full(w: World) -> str:
    g, m, n = w.version
    return f"NetApp Release {g}.{m}.{n}: Tue Jan 10 14:31:20 UTC 2023"


def has_counter_tables(w: World) -> bool:
    return w.version >= COUNTER_TABLES_SINCE


def schema(w: World, name: str) -> Json:
    table = _table(w, name)
    schemas: list[Json] = [
        {"name": p, "description": d, "type": "string", "unit": "none"} for p, d in table.properties
    ]
    for c in table.counters:
        s: Json = {"name": c.name, "description": c.desc, "type": c.type, "unit": c.unit}
        if c.denominator:
            s["denominator"] = {"name": c.denominator}
        schemas.append(s)
    schemas.sort(key=lambda s: s["name"])
    href = f"/api/cluster/counter/tables/{urllib.parse.quote(name, safe='')}"
    return {
        "name": name,
        "description": table.description,
        "counter_schemas": schemas,
        "_links": {"self": {"href": href}},
    }


def _table(w: World, name: str) -> Table:
    if not has_counter_tables(w):
        raise ApiError(404, "API not found", "4")
    table = TABLES.get(name)
    if table is None:
        raise ApiError(404, f'Table "{name}" not found.', "4")
    return table


def table_list(w: World) -> list[Json]:
    if not has_counter_tables(w):
        raise ApiError(404, "API not found", "4")
    return [
        {
            "name": n,
            "_links": {"self": {"href": f"/api/cluster/counter/tables/{urllib.parse.quote(n, safe='')}"}},
        }
        for n in TABLES
    ]


@dataclass
class RowOptions:
    counters: set[str] | None  # None = all
    with_properties: bool
    with_counters: bool
    incomplete: Callable[[int], bool] = field(default=lambda i: False)


def _quote_id(rid: str) -> str:
    return (
        urllib.parse.quote(rid, safe="")
        if any(ch in rid for ch in "%?#& ")
        else rid.replace(":", "%3A").replace("/", "%2F")
    )


def rows(estate: Estate, w: World, name: str, t: float, opts: RowOptions, page: list[Any]) -> list[Json]:
    """The rows of ``page`` (objects of the table) at time ``t``."""
    table = _table(w, name)
    cs = estate.counters[table.kind]
    wanted = [c for c in table.counters if opts.counters is None or c.name in opts.counters]
    # column plan, once per request: (name, scalar column or None, array columns, labels)
    plan = [
        (c.name, cs.col.get(c.name), [cs.col[f"{c.name}#{lb}"] for lb in c.labels], list(c.labels))
        for c in wanted
    ]
    prefix = f"/api/cluster/counter/tables/{urllib.parse.quote(name, safe='')}/rows/"
    zeros = [0.0] * len(cs.names)
    out: list[Json] = []
    for i, obj in enumerate(page):
        rid = table.row_id(w, obj)
        rec: Json = {"counter_table": {"name": name}, "id": rid}
        if opts.with_properties:
            rec["properties"] = [{"name": k, "value": str(v)} for k, v in table.props(w, obj)]
        if opts.with_counters:
            idx = cs.index.get(table.key(obj))
            vals = cs.row(idx, t) if idx is not None else zeros
            raw = table.raw(obj)
            counters: list[Json] = []
            for cname, j, cols, labels in plan:
                if labels:
                    counters.append({"name": cname, "values": [int(vals[k]) for k in cols], "labels": labels})
                elif cname in raw:
                    counters.append({"name": cname, "value": int(raw[cname])})
                else:
                    counters.append({"name": cname, "value": int(vals[j]) if j is not None else 0})
            rec["counters"] = counters
        rec["aggregation"] = {"count": 2, "complete": not opts.incomplete(i)}
        rec["_links"] = {"self": {"href": prefix + _quote_id(rid)}}
        out.append(rec)
    return out


# ------------------------------------------------------------------ inventory collections
def iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _keyperf(estate: Estate, kind: str, key: str, t: float, names: tuple[str, ...]) -> Json:
    """``statistics`` in the keyperf shape: iops_raw, latency_raw (µs), throughput_raw (bytes)."""
    cs = estate.counters[kind]
    idx = cs.index.get(key)
    vals = cs.row(idx, t) if idx is not None else [0.0] * len(cs.names)

    def v(n: str) -> int:
        j = cs.col.get(n)
        return int(vals[j]) if j is not None else 0

    r, w, o, rl, wl, ol, rb, wb = (v(n) for n in names)
    return {
        "timestamp": iso(t),
        "status": "ok",
        "latency_raw": {"other": ol, "total": rl + wl + ol, "read": rl, "write": wl},
        "iops_raw": {"read": r, "write": w, "other": o, "total": r + w + o},
        "throughput_raw": {"read": rb, "write": wb, "other": 0, "total": rb + wb},
    }


LUN_STATS = (
    "read_ops",
    "write_ops",
    "other_ops",
    "avg_read_latency",
    "avg_write_latency",
    "avg_other_latency",
    "read_data",
    "write_data",
)
VOL_STATS = (
    "total_read_ops",
    "total_write_ops",
    "total_other_ops",
    "read_latency",
    "write_latency",
    "other_latency",
    "bytes_read",
    "bytes_written",
)


def cluster_record(w: World) -> Json:
    g, m, n = w.version
    return {
        "name": w.cluster,
        "uuid": w.uuid,
        "version": {"full": version_full(w), "generation": g, "major": m, "minor": n},
        "_links": {"self": {"href": "/api/cluster"}},
    }


def node_records(estate: Estate, w: World, page: list[Node], t: float) -> list[Json]:
    cs = estate.counters["node"]
    out = []
    for n in page:
        vals = cs.row(cs.index[n.name], t)
        busy, elapsed = vals[cs.col["cpu_busy"]], vals[cs.col["cpu_elapsed_time"]]
        out.append(
            {
                "uuid": n.uuid,
                "name": n.name,
                "model": n.model,
                "serial_number": n.serial,
                "system_id": n.serial[-10:],
                "state": "up",
                "controller": {
                    "cpu": {"count": n.cpus, "processor": "Intel(R) Xeon(R) Silver 4210 CPU @ 2.20GHz"}
                },
                "version": cluster_record(w)["version"],
                "statistics": {
                    "timestamp": iso(t),
                    "status": "ok",
                    "processor_utilization_raw": int(busy),
                    "processor_utilization_base": int(elapsed),
                },
                "metric": {
                    "timestamp": iso(t),
                    "duration": "PT15S",
                    "status": "ok",
                    "processor_utilization": round(100.0 * n.cpu_busy),
                },
                "_links": {"self": {"href": f"/api/cluster/nodes/{n.uuid}"}},
            }
        )
    return out


def lun_records(estate: Estate, w: World, page: list[Lun], t: float, with_stats: bool) -> list[Json]:
    out = []
    for x in page:
        rec: Json = {
            "uuid": x.uuid,
            "svm": {"name": x.svm, "uuid": _svm_uuid(w, x.svm)},
            "name": x.path,
            "location": {
                "logical_unit": x.path.rsplit("/", 1)[-1],
                "node": {"name": x.node, "uuid": _node_uuid(w, x.node)},
                "volume": {"name": x.volume, "uuid": stable_uuid(w.cluster, "vol", x.svm, x.volume)},
            },
            "os_type": x.os_type,
            "serial_number": x.serial,
            "status": {"state": "online", "container_state": "online", "mapped": True, "read_only": False},
            "space": {"size": 536870912000},
        }
        if with_stats:
            rec["statistics"] = _keyperf(estate, "lun", x.key, t, LUN_STATS)
        rec["_links"] = {"self": {"href": f"/api/storage/luns/{x.uuid}"}}
        out.append(rec)
    return out


def volume_records(estate: Estate, w: World, page: list[Volume], t: float, with_stats: bool) -> list[Json]:
    aggr_uuid = {a.name: a.uuid for a in w.aggregates}
    out = []
    for v in page:
        rec: Json = {
            "uuid": v.uuid,
            "name": v.name,
            "aggregates": [{"name": v.aggregate, "uuid": aggr_uuid.get(v.aggregate, "")}],
            "svm": {"name": v.svm, "uuid": _svm_uuid(w, v.svm)},
            "style": "flexvol",
            "type": "rw",
            "state": "online",
        }
        if v.moving:
            dest, pct = v.moving
            rec["movement"] = {
                "state": "replicating",
                "percent_complete": int(pct),
                "destination_aggregate": {"name": dest, "uuid": aggr_uuid.get(dest, "")},
            }
        if with_stats:
            rec["statistics"] = _keyperf(estate, "volume", f"{v.svm}:{v.name}", t, VOL_STATS)
        rec["_links"] = {"self": {"href": f"/api/storage/volumes/{v.uuid}"}}
        out.append(rec)
    return out


_DISK_CLASS = {"ssd": "solid_state", "sas": "performance", "fsas": "capacity"}


def aggregate_records(w: World, page: list[Aggregate]) -> list[Json]:
    return [
        {
            "uuid": a.uuid,
            "name": a.name,
            "node": {"name": a.node, "uuid": _node_uuid(w, a.node)},
            "state": "online",
            "block_storage": {
                "primary": {
                    "disk_count": len(a.disks),
                    "disk_type": a.disk_type,
                    "disk_class": _DISK_CLASS.get(a.disk_type, "performance"),
                    "raid_type": a.raid_type,
                    "raid_size": max(len(rg.disks) for rg in a.raid_groups),
                },
                "hybrid_cache": {"enabled": False},
            },
            "_links": {"self": {"href": f"/api/storage/aggregates/{a.uuid}"}},
        }
        for a in page
    ]


def plex_records(estate: Estate, w: World, aggr_uuid: str, t: float) -> list[Json]:
    for a in w.aggregates:
        if a.uuid == aggr_uuid:
            break
    else:
        raise not_found(aggr_uuid)
    groups = []
    for rg in a.raid_groups:
        pct = estate.reconstruct_percent(rg.reconstruct, t) if rg.reconstruct else 0.0
        active = rg.reconstruct is not None and pct < 100.0
        groups.append(
            {
                "name": rg.name,
                "cache_tier": False,
                "degraded": active,
                "recomputing_parity": {"active": False, "percent": 0},
                "reconstruct": {"active": active, "percent": int(pct) if active else 0},
                "disks": [
                    {
                        "disk": {"name": d.name},
                        "position": d.position,
                        "state": "reconstructing" if active and d.state == "reconstructing" else "normal",
                        "type": d.type,
                        "usable_size": 960197124096 if d.type == "ssd" else 1200000000000,
                    }
                    for d in rg.disks
                ],
            }
        )
    return [
        {
            "aggregate": {"name": a.name, "uuid": a.uuid},
            "name": "plex0",
            "online": True,
            "state": "normal",
            "pool": "pool0",
            "resync": {"active": False, "percent": 0},
            "raid_groups": groups,
            "_links": {"self": {"href": f"/api/storage/aggregates/{a.uuid}/plexes/plex0"}},
        }
    ]


def disk_records(w: World, page: list[Disk]) -> list[Json]:
    aggr_uuid = {a.name: a.uuid for a in w.aggregates}
    out = []
    for d in page:
        rec: Json = {
            "name": d.name,
            "uid": d.uid.replace("-", "").upper()[:32],
            "serial_number": d.uid.replace("-", "")[:8].upper(),
            "model": "X357_S163A3T8ATE" if d.type == "ssd" else "X425_HCBFE1T2A10",
            "vendor": "NETAPP",
            "type": d.type,
            "class": _DISK_CLASS.get(d.type, "performance"),
            "rpm": d.rpm,
            "container_type": d.container_type,
            "node": {"name": d.node, "uuid": _node_uuid(w, d.node)},
            "home_node": {"name": d.node, "uuid": _node_uuid(w, d.node)},
            "state": "spare" if d.container_type == "spare" else d.state,
        }
        if d.aggregate:
            rec["aggregates"] = [{"name": d.aggregate, "uuid": aggr_uuid.get(d.aggregate, "")}]
        rec["_links"] = {"self": {"href": f"/api/storage/disks/{d.name}"}}
        out.append(rec)
    return out


def svm_records(w: World, page: list[str]) -> list[Json]:
    return [
        {
            "uuid": _svm_uuid(w, s),
            "name": s,
            "state": "running",
            "_links": {"self": {"href": f"/api/svm/svms/{_svm_uuid(w, s)}"}},
        }
        for s in page
    ]


# ------------------------------------------------------------------ fields projection
KEY_FIELDS = ("uuid", "name", "aggregate", "_links")


def parse_fields(raw: str | None) -> list[list[str]] | None:
    """``fields=a,b.c`` → paths; ``*``/``**`` → None (everything)."""
    if raw is None:
        return []
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    if any(p in ("*", "**") for p in parts):
        return None
    return [p.split(".") for p in parts]


def project(rec: Json, paths: list[list[str]] | None) -> Json:
    """Keep the key fields plus the requested paths (ONTAP returns only keys without ``fields``)."""
    if paths is None:
        return rec
    out: Json = {k: rec[k] for k in KEY_FIELDS if k in rec}
    for p in paths:
        _copy(rec, out, p)
    # keep the record's own key order, as ONTAP does
    return {k: out[k] for k in rec if k in out}


def _copy(src: Json, dst: Json, path: list[str]) -> None:
    head = path[0]
    if head not in src:
        return
    v = src[head]
    if len(path) == 1:
        dst[head] = v
    elif isinstance(v, dict):
        sub = dst.get(head)
        if not isinstance(sub, dict) or sub is v:
            sub = {} if sub is None else dict(sub)
            dst[head] = sub
        _copy(v, sub, path[1:])
        dst[head] = {k: sub[k] for k in v if k in sub}
    elif isinstance(v, list):
        cur = dst.get(head)
        items = [dict(x) for x in cur] if isinstance(cur, list) else [{} for _ in v]
        for item, s in zip(items, v, strict=True):
            if isinstance(s, dict):
                _copy(s, item, path[1:])
        dst[head] = items
