"""The fake ONTAP QoS counter tables: ``qos`` and ``qos_volume`` (one row per workload) and
``qos_detail`` and ``qos_detail_volume`` (one row per node x workload x centre).

Served from ONTAP's own schemas (the ``qos_volume`` one as a 9.12 cluster answers it, from
NetApp Harvest's restperf test data), not from the exporter's catalogue: a client that reads a
subset of the counters must still meet the table as ONTAP serves it. Rows are
``{counter_table, id, properties, counters, aggregation, _links}`` as the real ones; a workload
row's ``node.name`` is ``(multiple-values)`` (its constituents are summed over the nodes).

Requests honour ``fields``, ``counters.name``, ``max_records`` with ``next`` links, and record
filters: ``id=<expr>`` (NetApp Harvest asks ``id=*<workload>*|...``), ``query=<expr>`` with
``query_fields=properties.value`` (Harvest keeps only the centres it maps that way), and any other
``<field>=<expr>`` on the row (:mod:`sanlens_sim.ontap_query`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from sanlens_sim import ontap_query, ontap_tables, qos_world
from sanlens_sim.estate import Estate
from sanlens_sim.ontap_api import ApiError, Json, asa_r2_refusal, page
from sanlens_sim.ontap_tables import COUNTER_TABLES_SINCE, TABLE_NOT_FOUND, RowOptions
from sanlens_sim.qos_world import Centre, Workload
from sanlens_sim.world import World

TABLES_PREFIX = "/api/cluster/counter/tables"
READ_IO_TYPES = (
    "cache",
    "pmem",
    "ext_cache",
    "disk",
    "bamboo_ssd",
    "hya_hdd",
    "hya_cache",
    "hya_non_cache",
    "cloud",
    "fc_miss",
    "cloud_s2c",
)


@dataclass(frozen=True)
class Counter:
    name: str
    type: str
    unit: str
    base: str = ""
    description: str = ""
    labels: tuple[str, ...] = ()


# In the order a 9.12 cluster lists a qos_volume row's counters.
WORKLOAD_COUNTERS = (
    Counter("latency", "average", "microsec", "ops", "Average response time of the workload's requests."),
    Counter("ops", "rate", "per_sec", "", "Operations the workload completed, per second."),
    Counter("read_data", "rate", "b_per_sec", "", "Bytes read per second by the workload."),
    Counter("read_io_type_base", "raw", "none", "", "WAFL read requests: the base of read_io_type_percent."),
    Counter("read_latency", "average", "microsec", "read_ops", "Average response time of reads."),
    Counter("read_ops", "rate", "per_sec", "", "Read operations completed per second."),
    Counter("sequential_reads_percent", "percent", "percent", "sequential_reads_base", "Sequential reads."),
    Counter("sequential_reads_base", "raw", "none", "", "Reads: the base of sequential_reads_percent."),
    Counter(
        "sequential_writes_percent", "percent", "percent", "sequential_writes_base", "Sequential writes."
    ),
    Counter("sequential_writes_base", "raw", "none", "", "Writes: the base of sequential_writes_percent."),
    Counter("total_data", "rate", "b_per_sec", "", "Bytes read and written per second by the workload."),
    Counter("write_data", "rate", "b_per_sec", "", "Bytes written per second by the workload."),
    Counter("write_latency", "average", "microsec", "write_ops", "Average response time of writes."),
    Counter("write_ops", "rate", "per_sec", "", "Write operations completed per second."),
    Counter("concurrency", "rate", "none", "", "Average number of the workload's concurrent requests."),
    Counter(
        "read_io_type_percent",
        "percent",
        "percent",
        "read_io_type_base",
        "Reads served from each component (buffer cache, disk, ...).",
        READ_IO_TYPES,
    ),
)
OTHER_OPS = Counter("other_ops", "rate", "per_sec", "", "Operations other than reads and writes, per second.")
DETAIL_COUNTERS = (
    Counter(
        "visits", "rate", "per_sec", "", "Visits of the workload's operations to the centre, per second."
    ),
    Counter("service_time", "average", "microsec", "visits", "Service time per visit to the centre."),
    Counter("wait_time", "average", "microsec", "visits", "Time queued per visit to the centre."),
    Counter("in_latency_path", "raw", "none", "", "1 when the centre is in the operations' latency path."),
)


@dataclass(frozen=True)
class QosTable:
    name: str
    counters: tuple[Counter, ...]
    detail: bool  # rows are centres (qos_detail*), not workloads
    volume_only: bool  # only the volumes' workloads (qos_volume, qos_detail_volume)
    centre_prop: str = ""

    @property
    def properties(self) -> tuple[str, ...]:
        return ("node.name", self.centre_prop) if self.detail else ("node.name", "name", "uuid")


TABLES: dict[str, QosTable] = {
    t.name: t
    for t in (
        QosTable("qos", (*WORKLOAD_COUNTERS, OTHER_OPS), False, False),
        QosTable("qos_volume", WORKLOAD_COUNTERS, False, True),
        QosTable("qos_detail", DETAIL_COUNTERS, True, False, "resource.name"),
        QosTable("qos_detail_volume", DETAIL_COUNTERS, True, True, "resource_name"),
    )
}


def _href(name: str) -> str:
    return f"{TABLES_PREFIX}/{urllib.parse.quote(name, safe='')}"


def _table(w: World, name: str, missing: str) -> QosTable:
    if w.asa_r2:
        raise asa_r2_refusal()
    if w.version < COUNTER_TABLES_SINCE:
        raise ApiError(404, "API not found", "4")
    table = TABLES.get(name)
    if table is None or name == missing:
        raise ApiError(404, *TABLE_NOT_FOUND)
    return table


def table_list(w: World, missing: str = "") -> list[Json]:
    """The QoS tables :mod:`sanlens_sim.ontap_tables` does not list already."""
    return [
        {"name": n, "description": f"The {n} counter table.", "_links": {"self": {"href": _href(n)}}}
        for n in TABLES
        if n != missing and n not in ontap_tables.TABLES
    ]


def _counters(table: QosTable) -> list[Counter]:
    """ONTAP's counters of the table, and any other the catalogue declares for it."""
    out = list(table.counters)
    known = {c.name for c in out}
    served = ontap_tables.TABLES.get(table.name)
    for c in served.tdef.counters.values() if served else ():
        if c.name not in known:
            out.append(Counter(c.name, c.spec.type, c.spec.unit, c.spec.base, c.name, c.labels))
    return out


def schema(w: World, name: str, missing: str = "") -> Json:
    table = _table(w, name, missing)
    schemas: list[Json] = [
        {"name": p, "description": f"Property {p}", "type": "string", "unit": "none"}
        for p in table.properties
    ]
    for c in _counters(table):
        s: Json = {"name": c.name, "description": c.description, "type": c.type, "unit": c.unit}
        if c.base:
            s["denominator"] = {"name": c.base}
        schemas.append(s)
    schemas.sort(key=lambda s: s["name"])
    return {
        "name": name,
        "description": f"The {name} counter table.",
        "counter_schemas": schemas,
        "_links": {"self": {"href": _href(name)}},
    }


def _properties(table: QosTable, obj: Workload | Centre) -> list[Json]:
    return [{"name": k, "value": v} for k, v in qos_world.row_properties(obj, table.centre_prop).items()]


# The last filtered rows per (world, table, filter): a client pages through one filtered collection
# with the same filter, and filtering 40,000 detail rows again for each of its pages took minutes.
_KEPT: dict[tuple[Any, ...], tuple[World, list[Any]]] = {}


def _keep(w: World, table: QosTable, objs: list[Any], query: Mapping[str, str]) -> list[Any]:
    """The rows that pass the request's filters (``id``, ``query``/``query_fields``, any field)."""
    conds = ontap_query.filters(query)
    text = query.get("query")
    if not conds and text is None:
        return objs
    key = (id(w), table.name, tuple(sorted(conds.items())), text, query.get("query_fields"))
    hit = _KEPT.get(key)
    if hit is not None and hit[0] is w:
        return hit[1]
    if len(_KEPT) > 64:
        _KEPT.clear()
    out = _filter(table, objs, conds, text, query)
    _KEPT[key] = (w, out)
    return out


def _filter(
    table: QosTable, objs: list[Any], conds: Mapping[str, str], text: str | None, query: Mapping[str, str]
) -> list[Any]:
    fields = [f.strip() for f in query.get("query_fields", "id,properties.value").split(",") if f.strip()]
    out = []
    for o in objs:
        rec = {"id": o.row_id, "properties": _properties(table, o)}
        if not ontap_query.match_all(rec, conds):
            continue
        if text is not None and not any(ontap_query.matches(rec, f, text) for f in fields):
            continue
        out.append(o)
    return out


def rows(
    estate: Estate,
    w: World,
    t: float,
    name: str,
    raw_path: str,
    query: dict[str, str],
    opts: RowOptions,
    loop: bool = False,
) -> Json:
    """One page of a QoS table's rows at time ``t``: the catalogue's counters when it declares the
    table (:func:`sanlens_sim.ontap_tables.rows`), else ONTAP's own."""
    table = _table(w, name, opts.missing_table)
    objs: list[Any] = _keep(
        w, table, list(qos_world.table_objects(w, table.detail, table.volume_only)), query
    )
    build: Callable[[list[Any]], list[Json]]
    if name in ontap_tables.TABLES:
        build = partial(_catalogue_rows, estate, w, t, table, opts)
    else:
        build = partial(_own_rows, estate, w, t, table, opts)
    return page(objs, [o.row_id for o in objs], "id", build, None, raw_path, query, loop=loop)


def _catalogue_rows(
    estate: Estate, w: World, t: float, table: QosTable, opts: RowOptions, chunk: list[Any]
) -> list[Json]:
    """The catalogue's counters (:func:`sanlens_sim.ontap_tables.rows`) and the rest of ONTAP's: a real
    row carries every counter of its schema (read_io_type_percent, sequential_*), declared or not."""
    out = ontap_tables.rows(estate, w, table.name, t, opts, chunk)
    declared = ontap_tables.TABLES[table.name].tdef.counters
    extra = [
        c
        for c in table.counters
        if c.name not in declared and (opts.counters is None or c.name in opts.counters)
    ]
    if not extra or not opts.with_counters:
        return out
    cs = estate.counters["qos_detail" if table.detail else "qos"]
    for rec, o in zip(out, chunk, strict=True):
        idx = cs.index.get(o.key)
        vals = cs.row(idx, t) if idx is not None else [0.0] * len(cs.names)
        rec.setdefault("counters", []).extend(_counter(c, o, vals, cs.col) for c in extra)
    return out


def _own_rows(
    estate: Estate, w: World, t: float, table: QosTable, opts: RowOptions, chunk: list[Any]
) -> list[Json]:
    cs = estate.counters["qos_detail" if table.detail else "qos"]
    counters = [c for c in table.counters if opts.counters is None or c.name in opts.counters]
    out: list[Json] = []
    for o in chunk:
        rec: Json = {"counter_table": {"name": table.name}, "id": o.row_id}
        if opts.with_properties:
            rec["properties"] = _properties(table, o)
        if opts.with_counters:
            idx = cs.index.get(o.key)
            vals = cs.row(idx, t) if idx is not None else [0.0] * len(cs.names)
            rec["counters"] = [_counter(c, o, vals, cs.col) for c in counters]
        rec["aggregation"] = {"count": max(len(w.nodes), 1), "complete": True}
        rec["_links"] = {
            "self": {"href": f"{_href(table.name)}/rows/{urllib.parse.quote(o.row_id, safe='')}"}
        }
        out.append(rec)
    return out


def _counter(c: Counter, o: Any, vals: list[float], col: Mapping[str, int]) -> Json:
    if c.name == "in_latency_path":
        return {"name": c.name, "value": 1 if o.in_path else 0}
    if c.labels:
        per = [vals[col[f"{c.name}#{lb}"]] if f"{c.name}#{lb}" in col else 0.0 for lb in c.labels]
        return {"name": c.name, "values": [int(v) for v in per], "labels": list(c.labels)}
    j = col.get(c.name)
    return {"name": c.name, "value": int(vals[j]) if j is not None else 0}


def answer(
    estate: Estate,
    w: World,
    t: float,
    rest: str,
    raw_path: str,
    query: dict[str, str],
    opts: RowOptions,
    loop: bool,
) -> Json | None:
    """``rest`` (the path after the tables' prefix) answered when it names a QoS table's schema or
    rows; None when it names another table (or a single row, which no table serves here)."""
    name, _, sub = rest.partition("/rows")
    if name not in TABLES or sub:
        return None
    if "/rows" in rest:
        return rows(estate, w, t, name, raw_path, query, opts, loop)
    return schema(w, name, opts.missing_table)
