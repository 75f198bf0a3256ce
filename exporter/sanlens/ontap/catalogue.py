"""The counter catalogue: ``tables/<table>.yaml`` is the only place that names ONTAP counters.

Each table lists its counters by their REST names (ONTAP 9.12+), with the
``statistics show`` / ZAPI spelling captures carry, the type, unit and base a
cluster's ``counter_schemas`` would give (the live schema wins), the exported
metric and the field of the cooked view each feeds. The live collector, the
offline cooker, the view builder and the simulator all read it, so adding a
table or a counter is a data change (Harvest's per-object templates work the
same way). A counter's ``harvest`` key names the series NetApp Harvest exports
for it, and a table's ``harvest`` block how those series are queried and keyed,
so the view read from Harvest follows the same declarations.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from sanlens.errors import ConfigError
from sanlens.model import MetricType

TYPES = ("rate", "average", "percent", "delta", "raw")
# SI factor of each ONTAP unit, applied when cooking every type but `percent`.
UNIT_SCALE: dict[str, float] = {
    "microsec": 1e-6,
    "millisec": 1e-3,
    "sec": 1.0,
    "per_sec": 1.0,
    "b_per_sec": 1.0,
    # ONTAP's schema says kb_per_sec for system:node's *_data_* counters, but the raw values
    # count bytes: a real 12-day-old simulator's `statistics show -raw` has disk_data_written
    # at 4.2e11 (420 GB, ~400 KB/s over its uptime; as KB it would be 400 MB/s, sustained, on
    # virtual disks). The capture wins: no scaling.
    "kb_per_sec": 1.0,
    "mb": 1024.0 * 1024.0,
    "percent": 1.0,
    "none": 1.0,
}
# The cooked unit of each (type, ONTAP unit).
_COOKED_UNIT = {
    "microsec": "seconds",
    "millisec": "seconds",
    "sec": "seconds",
    "per_sec": "per_second",
    "b_per_sec": "bytes_per_second",
    "kb_per_sec": "bytes_per_second",
    "mb": "bytes",
    "percent": "percent",
}
PARTIAL_POLICIES = ("skip", "keep")
# when a table is read: "" every poll; "qos" on the target's QoS schedule (``qos_interval``), for
# ONTAP's QoS tables, whose rows are many and whose figures change slowly enough
SCHEDULES = ("", "qos")


def unit_scale(unit: str) -> float:
    return UNIT_SCALE.get(unit, 1.0)


def cooked_unit(type_: str, unit: str) -> str:
    if type_ == "percent":
        return "percent"
    if type_ == "rate" and unit == "none":
        return "per_second"
    return _COOKED_UNIT.get(unit, "count" if type_ in ("delta", "raw") else unit)


@dataclass(frozen=True, slots=True)
class CounterSpec:
    """How to cook one counter: ONTAP's type, denominator and unit."""

    type: str  # rate | average | percent | delta | raw
    base: str = ""
    unit: str = "none"


@dataclass(frozen=True, slots=True)
class CounterDef:
    name: str  # REST name
    spec: CounterSpec
    zapi: str = ""
    labels: tuple[
        str, ...
    ] = ()  # array labels the simulator serves; () for scalars and release-dependent arrays
    array: bool = False
    view: str = ""  # cooked-view field it feeds
    view_scale: float = 1.0
    harvest: str = ""  # the family NetApp Harvest exports it as
    metric: str = ""  # exported family
    label: str = ""  # value of the family's `by` label
    export_scale: float | None = None  # raw -> exported unit; None: from the unit
    used: bool = False
    doc: str = ""  # what ONTAP says the counter measures, and where that was checked (docs/metrics.md)

    def export_factor(self, unit: str | None = None) -> float:
        if self.export_scale is not None:
            return self.export_scale
        return unit_scale(unit or self.spec.unit)

    @property
    def harvest_factor(self) -> float:
        """Harvest's value -> the view field's unit. Harvest cooks as ONTAP does and keeps ONTAP's
        unit (microseconds per op, percent), so the factor is the cooker's unit scale and view scale."""
        return (1.0 if self.spec.type == "percent" else unit_scale(self.spec.unit)) * self.view_scale


@dataclass(frozen=True, slots=True)
class HarvestInfo:
    """A Harvest info family (``*_labels``, value 1): labels only, read by its own aggregation."""

    name: str
    by: tuple[str, ...]  # the labels read
    join: tuple[str, ...] = ()  # the row's labels it joins on; () when code reads it apart
    # labels the host join needs: a page whose series all lack one is named (an older Harvest)
    required: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HarvestDef:
    """How a table's Harvest series are read: one instant query per ``query`` name (tables that share
    it share one), aggregated ``by`` these labels, one view row per ``key`` seen in a ``rows`` family."""

    query: str
    by: tuple[str, ...]
    key: tuple[str, ...]
    rows: tuple[str, ...]
    info: tuple[HarvestInfo, ...] = ()
    # tables that stand in for one another (the front end: FC ports, iSCSI and NVMe LIFs): Harvest
    # exports a family only for objects that exist, so only their absence together says it reads none
    group: str = ""


@dataclass(frozen=True, slots=True)
class LabelDef:
    name: str
    sources: tuple[str, ...]  # row properties, first non-empty wins; `id` is the row id
    split: str = ""
    index: int = 0
    export: bool = True

    def value(self, props: Mapping[str, str], row_id: str) -> str:
        for src in self.sources:
            v = row_id if src == "id" else props.get(src, "")
            if v:
                return self._part(v)
        return ""

    def column(self, props: Mapping[str, Sequence[str | None]], ids: Sequence[str]) -> list[str]:
        """:meth:`value` of every row of a block's columns (``props``: property -> value per row)."""
        first: Sequence[str | None] | None = None  # per row, the first source's non-empty value
        for src in self.sources:
            col = ids if src == "id" else props.get(src)
            if col is not None:
                first = col if first is None else [a or b for a, b in zip(first, col, strict=True)]
        if first is None:
            return [""] * len(ids)
        if not self.split:
            return [v or "" for v in first]
        return [self._part(v) if v else "" for v in first]

    def _part(self, v: str) -> str:
        if self.split and self.split in v:
            parts = v.split(self.split)
            return parts[self.index] if -len(parts) <= self.index < len(parts) else ""
        return v


@dataclass(frozen=True, slots=True)
class MetricDef:
    name: str
    type: MetricType
    help: str
    by: str = ""


@dataclass(frozen=True)
class TableDef:
    table: str
    partial_aggregation: str
    row_id: str
    properties: tuple[str, ...]
    labels: tuple[LabelDef, ...]
    metrics: dict[str, MetricDef]
    counters: dict[str, CounterDef]
    aliases: dict[str, str] = field(default_factory=dict)  # zapi name -> REST name
    rest: bool = True  # served by /api/cluster/counter/tables (False: a CLI capture format)
    source: str = ""  # where the counters' types, units and meanings were checked
    view: str = ""  # the OntapView rows it feeds (luns, volumes, nodes, disks, fc_ports, lifs, eth_ports)
    harvest: HarvestDef | None = None  # how NetApp Harvest exports it; None when sanlens reads none
    schedule: str = ""  # "" every poll; "qos" on the target's QoS schedule

    @property
    def harvest_counters(self) -> tuple[CounterDef, ...]:
        """The counters read from Harvest's series, in the table's order."""
        return tuple(c for c in self.counters.values() if c.harvest)

    def resolve(self, name: str) -> CounterDef | None:
        """The catalogue entry for a REST or ZAPI/CLI counter name."""
        c = self.counters.get(name)
        if c is None:
            alias = self.aliases.get(name)
            c = self.counters.get(alias) if alias else None
        return c

    def canonical(self, name: str) -> str:
        return name if name in self.counters else self.aliases.get(name, name)

    @property
    def wanted(self) -> tuple[str, ...]:
        """The counters sanlens uses from this table, with their bases, by REST name."""
        out: list[str] = []
        for c in self.counters.values():
            if c.used:
                out.append(c.name)
                if c.spec.base:
                    out.append(c.spec.base)
        return tuple(dict.fromkeys(out))

    @property
    def export_labels(self) -> tuple[LabelDef, ...]:
        return tuple(lab for lab in self.labels if lab.export)

    def label_values(self, props: Mapping[str, str], row_id: str) -> dict[str, str]:
        return {lab.name: lab.value(props, row_id) for lab in self.labels}

    def specs(self) -> dict[str, CounterSpec]:
        """Cooking specs under both spellings (offline captures carry either)."""
        out = {n: c.spec for n, c in self.counters.items()}
        for alias, rest in self.aliases.items():
            out.setdefault(alias, self._alias_spec(self.counters[rest].spec))
        return out

    def _alias_spec(self, spec: CounterSpec) -> CounterSpec:
        if not spec.base:
            return spec
        base = self.counters.get(spec.base)
        return CounterSpec(spec.type, base.zapi if base and base.zapi else spec.base, spec.unit)


def _fail(where: str, msg: str) -> ConfigError:
    return ConfigError(msg, path=where, file="ontap/tables")


def _as_list(v: Any) -> list[str]:
    if isinstance(v, list):
        return [str(x) for x in v]
    return [str(v)]


def parse_table(doc: Any, where: str) -> TableDef:
    if not isinstance(doc, dict) or not isinstance(doc.get("table"), str):
        raise _fail(where, "a table needs a `table` name")
    policy = str(doc.get("partial_aggregation", "skip"))
    if policy not in PARTIAL_POLICIES:
        raise _fail(f"{where}.partial_aggregation", f"expected one of {PARTIAL_POLICIES}, got {policy!r}")
    schedule = str(doc.get("schedule", ""))
    if schedule not in SCHEDULES:
        raise _fail(f"{where}.schedule", f"expected one of {SCHEDULES}, got {schedule!r}")
    labels = []
    for name, src in (doc.get("labels") or {}).items():
        if not isinstance(src, dict) or "from" not in src:
            raise _fail(f"{where}.labels.{name}", "expected {from: [properties], split, index, export}")
        labels.append(
            LabelDef(
                name=str(name),
                sources=tuple(_as_list(src["from"])),
                split=str(src.get("split", "")),
                index=int(src.get("index", 0)),
                export=bool(src.get("export", True)),
            )
        )
    metrics: dict[str, MetricDef] = {}
    for name, m in (doc.get("metrics") or {}).items():
        at = f"{where}.metrics.{name}"
        mtype = str((m or {}).get("type", "counter"))
        if mtype not in ("counter", "gauge"):
            raise _fail(f"{at}.type", f"expected counter or gauge, got {mtype!r}")
        if mtype == "counter" and not str(name).endswith("_total"):
            raise _fail(at, "counter names end in _total")
        metrics[str(name)] = MetricDef(
            name=str(name),
            type=mtype,  # type: ignore[arg-type]
            help=str(m.get("help", "")),
            by=str(m.get("by", "")),
        )
    counters: dict[str, CounterDef] = {}
    aliases: dict[str, str] = {}
    for name, c in (doc.get("counters") or {}).items():
        at = f"{where}.counters.{name}"
        if not isinstance(c, dict):
            raise _fail(at, "expected a mapping")
        ctype = str(c.get("type", ""))
        if ctype not in TYPES:
            raise _fail(f"{at}.type", f"expected one of {TYPES}, got {ctype!r}")
        metric = str(c.get("metric", ""))
        if metric and metric not in metrics:
            raise _fail(f"{at}.metric", f"{metric!r} is not declared under metrics")
        is_array = bool(c.get("array") or c.get("labels"))
        if metric and metrics[metric].by and not c.get("label") and not is_array:
            raise _fail(f"{at}.label", f"{metric} has `by: {metrics[metric].by}`: give the label value")
        raw_labels = c.get("labels")
        arr = tuple(_as_list(raw_labels)) if raw_labels else ()
        zapi = str(c.get("zapi", name))
        scale = c.get("export_scale")
        vs = float(c.get("view_scale", 1.0))
        if not math.isfinite(vs):
            raise _fail(f"{at}.view_scale", "not a finite number")
        counters[str(name)] = CounterDef(
            str(name),
            CounterSpec(ctype, str(c.get("base", "")), str(c.get("unit", "none"))),
            zapi=zapi,
            labels=arr,
            array=is_array,
            view=str(c.get("view", "")),
            view_scale=vs,
            harvest=str(c.get("harvest", "")),
            metric=metric,
            label=str(c.get("label", "")),
            export_scale=float(scale) if scale is not None else None,
            used=bool(c.get("view") or metric or c.get("use")),
            doc=str(c.get("doc", "")),
        )
        if zapi != name:
            aliases[zapi] = str(name)
    for c in counters.values():
        if c.spec.base and c.spec.base not in counters:
            raise _fail(f"{where}.counters.{c.name}.base", f"base {c.spec.base!r} is not in the table")
    return TableDef(
        table=doc["table"],
        partial_aggregation=policy,
        row_id=str(doc.get("row_id", "{name}")),
        properties=tuple(_as_list(doc.get("properties") or [])),
        labels=tuple(labels),
        metrics=metrics,
        counters=counters,
        aliases=aliases,
        rest=bool(doc.get("rest", True)),
        source=str(doc.get("source", "")),
        view=str(doc.get("view", "")),
        harvest=parse_harvest(doc.get("harvest"), counters, f"{where}.harvest", doc["table"]),
        schedule=schedule,
    )


def _labels(v: Any, where: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise _fail(where, "expected a list of label names")
    return tuple(v)


def parse_harvest(doc: Any, counters: Mapping[str, CounterDef], where: str, table: str) -> HarvestDef | None:
    """A table's ``harvest`` block: {query, by, key, rows, info: {family: {by, join, required}}, group}."""
    fed = [c for c in counters.values() if c.harvest]
    if doc is None:
        if fed:
            raise _fail(where, f"{fed[0].name} names a Harvest family: the table needs a harvest block")
        return None
    if not isinstance(doc, dict):
        raise _fail(where, "expected a mapping")
    by = _labels(doc.get("by"), f"{where}.by")
    key = _labels(doc.get("key", list(by)), f"{where}.key")
    if not set(key) <= set(by):
        raise _fail(f"{where}.key", "the row key must be among the `by` labels")
    info = []
    for name, i in (doc.get("info") or {}).items():
        at = f"{where}.info.{name}"
        if not isinstance(i, dict):
            raise _fail(at, "expected {by, join, required}")
        ib = _labels(i.get("by"), f"{at}.by")
        join = _labels(i["join"], f"{at}.join") if "join" in i else ()
        required = _labels(i["required"], f"{at}.required") if "required" in i else ()
        if not set(join) <= set(ib) & set(key) or not set(required) <= set(ib):
            raise _fail(at, "join labels must be read and in the row key; required labels must be read")
        info.append(HarvestInfo(name=str(name), by=ib, join=join, required=required))
    families = {c.harvest for c in fed} | {i.name for i in info}
    rows = _labels(doc.get("rows"), f"{where}.rows")
    if not set(rows) <= families:
        raise _fail(f"{where}.rows", f"{sorted(set(rows) - families)} are not families the table reads")
    for c in fed:
        if c.view == "" or (c.spec.base and c.spec.type == "average" and not counters[c.spec.base].harvest):
            raise _fail(
                f"{where}", f"{c.name}: a Harvest family feeds a view field, an average its base's too"
            )
    return HarvestDef(
        query=str(doc.get("query", table)),
        by=by,
        key=key,
        rows=rows,
        info=tuple(info),
        group=str(doc.get("group", "")),
    )


@functools.cache
def catalogue() -> dict[str, TableDef]:
    """Every packaged table, keyed by ONTAP table name."""
    import yaml  # here, not at import: a run that reads no ONTAP table never loads YAML

    out: dict[str, TableDef] = {}
    folder = resources.files("sanlens.ontap").joinpath("tables")
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if f.name.endswith(".yaml"):
            t = parse_table(yaml.safe_load(f.read_text(encoding="utf-8")), f.name)
            out[t.table] = t
    return out


def table(name: str) -> TableDef | None:
    return catalogue().get(name)
