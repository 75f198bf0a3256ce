"""The fake ONTAP REST API: inventory collections, keyperf ``statistics`` and counter tables.

Shapes follow the real captures in ``../shared/fixtures/ontap`` (HAL ``_links``,
``records``/``num_records``, counter rows with ``properties``/``counters``,
array counters as ``values``+``labels``, ``aggregation``). Counter values come
from :mod:`sanlens.sim.estate` at the instant of the request.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sanlens.model import iso_utc
from sanlens.ontap.catalogue import CounterDef, TableDef, catalogue
from sanlens.sim.estate import CP_PHASES, UPTIME_S, Estate
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


# ------------------------------------------------------------------ counter tables
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


def _svm_uuid(w: World, svm: str) -> str:
    return stable_uuid(w.cluster, "svm", svm)


def _node_uuid(w: World, node: str) -> str:
    return stable_uuid(w.cluster, node)


def _disk_uid(d: Disk) -> str:
    h = d.uid.replace("-", "").upper()
    return ":".join(h[i : i + 8] for i in range(0, 32, 8))


def _lun_props(w: World, x: Lun) -> dict[str, Any]:
    return {
        "name": x.path,
        "svm.name": x.svm,
        "svm.uuid": _svm_uuid(w, x.svm),
        "volume.name": x.volume,
        "node.name": x.node,
        "uuid": x.uuid,
    }


def _vol_props(w: World, x: Volume) -> dict[str, Any]:
    return {
        "node.name": x.node,
        "node.uuid": _node_uuid(w, x.node),
        "svm.name": x.svm,
        "svm.uuid": _svm_uuid(w, x.svm),
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
        "node.uuid": _node_uuid(w, d.node),
        "name": d.name,
        "physical_disk_id": _disk_uid(d),
        "physical_disk_name": d.name,
        "raid_group": d.raid_group,
        "raid.type": "raid_dp",
        "speed": d.rpm,
    }


def _lif_props(w: World, x: Lif) -> dict[str, Any]:
    return {"node.name": x.node, "svm.name": x.svm, "port.id": f"{x.node}:{x.port}", "name": x.name}


def _fcport_props(w: World, x: Lif) -> dict[str, Any]:
    return {
        "node.name": x.node,
        "node.uuid": _node_uuid(w, x.node),
        "name": x.port,
        "link.speed": x.speed_gbps,
    }


def _tables() -> dict[str, Table]:
    cat = catalogue()
    specs = (
        Table(
            cat["lun"],
            "lun",
            lambda w: w.luns,
            lambda x: x.key,
            lambda w, x: f"{x.path}:{x.uuid}",
            _lun_props,
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
            lambda w, x: f"{x.node}:{x.name}:{_disk_uid(x)}",
            _disk_props,
            lambda d: {"capacity": 915715.0 if d.type == "ssd" else 1144641.0},
        ),
        Table(
            cat["fcp_lif"],
            "lif",
            lambda w: w.lifs,
            lambda x: f"{x.svm}:{x.name}",
            lambda w, x: f"{x.svm}:{x.name}",
            _lif_props,
        ),
        Table(
            cat["fcp"],
            "fcport",
            lambda w: w.lifs,
            lambda x: f"{x.node}:{x.port}",
            lambda w, x: f"{x.node}:{x.port}",
            _fcport_props,
            string_counters=("link.speed",),
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
    missing = [n for n, t in cat.items() if t.rest and n not in {t.name for t in specs}]
    assert not missing, f"catalogue tables the simulator does not serve: {missing}"
    return {t.name: t for t in specs}


TABLES: dict[str, Table] = _tables()


def _labels(table: Table, c: CounterDef) -> tuple[str, ...]:
    if c.name == "domain_busy" and table.name == "system:node":
        return DOMAINS  # the simulated release's domains
    if c.name == "cp_phase_times":
        return tuple(label for label, _ in CP_PHASES)
    return c.labels


def version_full(w: World) -> str:
    g, m, n = w.version
    return f"NetApp Release {g}.{m}.{n}: Tue Jan 10 14:31:20 UTC 2023"


def has_counter_tables(w: World) -> bool:
    return w.version >= COUNTER_TABLES_SINCE


def schema(w: World, name: str) -> Json:
    table = _table(w, name)
    schemas: list[Json] = [
        {"name": p, "description": f"Property {p}", "type": "string", "unit": "none"}
        for p in table.tdef.properties
    ]
    for c in table.tdef.counters.values():
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
            "description": f"The {n} counter table.",
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
    """The rows of ``page`` (objects of the table) at time ``t``.

    Counters the scenarios do not drive stay plausible: rates and deltas (errors, other
    protocols) at zero, averages at 100 µs per op of their base, percents at 5 % of it.
    """
    table = _table(w, name)
    cs = estate.counters[table.kind]
    wanted = [c for c in table.tdef.counters.values() if opts.counters is None or c.name in opts.counters]
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
                if arr_labels:
                    per = [vals[k] if k is not None else 0.0 for k in cols]
                    if not any(per) and j is None:
                        per = [v if n == 0 else 0.0 for n in range(len(arr_labels))]
                    counters.append({"name": c.name, "values": [int(x) for x in per], "labels": arr_labels})
                else:
                    counters.append({"name": c.name, "value": int(v)})
            for k in table.string_counters:  # string-typed counters, as ONTAP serves link.speed
                if opts.counters is None or k in opts.counters:
                    counters.append({"name": k, "value": str(table.props(w, obj).get(k, ""))})
            rec["counters"] = counters
        rec["aggregation"] = {"count": 2, "complete": not opts.incomplete(i)}
        rec["_links"] = {"self": {"href": prefix + _quote_id(rid)}}
        out.append(rec)
    return out


def _filler(kind: str, base: float) -> float:
    if kind == "average":
        return 100.0 * base
    if kind == "percent":
        return 0.05 * base
    return 0.0  # rates and deltas nothing drives: errors, other protocols, stay at zero


# ------------------------------------------------------------------ inventory collections
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
        "timestamp": iso_utc(t),
        "status": "ok",
        "latency_raw": {"other": ol, "total": rl + wl + ol, "read": rl, "write": wl},
        "iops_raw": {"read": r, "write": w, "other": o, "total": r + w + o},
        "throughput_raw": {"read": rb, "write": wb, "other": 0, "total": rb + wb},
    }


LUN_STATS = (
    "read_ops",
    "write_ops",
    "other_ops",
    "average_read_latency",
    "average_write_latency",
    "average_other_latency",
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
                "uptime": int(UPTIME_S + t - estate.started),
                "ha": {
                    "enabled": len(w.nodes) > 1,
                    "partners": [
                        {"name": p.name, "uuid": p.uuid}
                        for p in w.nodes
                        if p.name != n.name and w.nodes.index(p) // 2 == w.nodes.index(n) // 2
                    ],
                },
                "statistics": {
                    "timestamp": iso_utc(t),
                    "status": "ok",
                    "processor_utilization_raw": int(busy),
                    "processor_utilization_base": int(elapsed),
                },
                "metric": {
                    "timestamp": iso_utc(t),
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
            "shelf": {"uid": stable_uuid(w.cluster, "shelf", d.node)[:16]},
            "bay": _bay(d.name),
            "usable_size": 960197124096 if d.type == "ssd" else 1200000000000,
        }
        if d.aggregate:
            rec["aggregates"] = [{"name": d.aggregate, "uuid": aggr_uuid.get(d.aggregate, "")}]
        rec["_links"] = {"self": {"href": f"/api/storage/disks/{d.name}"}}
        out.append(rec)
    return out


def fc_port_records(w: World, page: list[Lif]) -> list[Json]:
    """``/api/network/fc/ports``: one FC target port per simulated FC LIF."""
    out = []
    for x in page:
        uuid = stable_uuid(w.cluster, "fcport", x.node, x.port)
        out.append(
            {
                "uuid": uuid,
                "name": x.port,
                "node": {"name": x.node, "uuid": _node_uuid(w, x.node)},
                "description": f"Fibre Channel Target Adapter {x.port} (QLogic 2742 (2742), rev. 2, 32G)",
                "enabled": True,
                "state": "online",
                "physical_protocol": "fibre_channel",
                "supported_protocols": ["fcp"],
                "speed": {"configured": "auto", "maximum": "32"},
                "wwnn": "20:00:00:50:56:b4:" + uuid[-5:-3] + ":" + uuid[-2:],
                "wwpn": "20:01:00:50:56:b4:" + uuid[-5:-3] + ":" + uuid[-2:],
                "fabric": {
                    "connected": True,
                    "connected_speed": x.speed_gbps,
                    "name": "20:00:00:05:33:a1:b2:c3",
                    "port_address": "10100",
                    "switch_port": f"brocade1:{x.port}",
                },
                "transceiver": {
                    "form_factor": "SFP",
                    "manufacturer": "FINISAR CORP",
                    "capabilities": [8, 16, 32],
                },
                "_links": {"self": {"href": f"/api/network/fc/ports/{uuid}"}},
            }
        )
    return out


def _bay(name: str) -> int:
    tail = name.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0


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
