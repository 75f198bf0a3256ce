"""Declarative counter tables: ``tables/<table>.yaml`` says what to fetch and how to expose it.

Adding a table, a counter or a label is a data change: the collector is generic
over these specs (the way Harvest's per-object templates work).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from sanlens.errors import ConfigError
from sanlens.model import MetricBuilder, MetricType
from sanlens.ontap.offline import CounterRow


@dataclass(frozen=True, slots=True)
class LabelSpec:
    name: str
    prop: str
    split: str = ""
    index: int = 0

    def value(self, props: dict[str, str]) -> str:
        v = props.get(self.prop, "")
        if self.split and v:
            parts = v.split(self.split)
            return parts[self.index] if -len(parts) <= self.index < len(parts) else ""
        return v


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    help: str
    type: MetricType
    scale: float
    by: str  # extra label ('' for none)
    counters: tuple[tuple[str, str], ...]  # (label value, ONTAP counter); label '' when no `by`
    array: str = ""  # an array counter whose labels become the `by` label


@dataclass(frozen=True, slots=True)
class TableSpec:
    table: str
    labels: tuple[LabelSpec, ...]
    metrics: tuple[MetricSpec, ...]

    @property
    def counters(self) -> tuple[str, ...]:
        """The ONTAP counters to fetch (denominators are added by the schema)."""
        out: list[str] = []
        for m in self.metrics:
            for _, c in m.counters:
                out.append(c)
            if m.array:
                out.append(m.array)
        return tuple(dict.fromkeys(out))

    def label_values(self, row: CounterRow) -> dict[str, str]:
        return {lab.name: lab.value(row.properties) for lab in self.labels}

    def emit(self, row: CounterRow, base: dict[str, str], out: MetricBuilder) -> None:
        """Raw cumulative values of one row, in base units, into ``out``."""
        names0 = tuple(base)
        vals0 = tuple(base.values())
        for m in self.metrics:
            names = (*names0, m.by) if m.by else names0
            if m.array:
                values = row.counters.get(m.array)
                if not isinstance(values, list):
                    continue
                labels = row.labels.get(m.array) or []
                for i, x in enumerate(values):
                    lab = labels[i] if i < len(labels) else str(i)
                    out.add_tuple(m.name, m.type, m.help, names, (*vals0, lab), x * m.scale)
                continue
            for lab, counter in m.counters:
                v = row.counters.get(counter)
                if v is None or isinstance(v, list):
                    continue
                out.add_tuple(m.name, m.type, m.help, names, (*vals0, lab) if m.by else vals0, v * m.scale)


def _fail(where: str, msg: str) -> ConfigError:
    return ConfigError(msg, path=where, file="ontap/tables")


def parse_table(doc: Any, where: str) -> TableSpec:
    if not isinstance(doc, dict) or not isinstance(doc.get("table"), str):
        raise _fail(where, "a table spec needs a `table` name")
    labels = []
    for name, src in (doc.get("labels") or {}).items():
        if isinstance(src, str):
            labels.append(LabelSpec(str(name), src))
        elif isinstance(src, dict) and isinstance(src.get("property"), str):
            labels.append(
                LabelSpec(str(name), src["property"], str(src.get("split", "")), int(src.get("index", 0)))
            )
        else:
            raise _fail(f"{where}.labels.{name}", "expected a property name or {property, split, index}")
    metrics = []
    for i, m in enumerate(doc.get("metrics") or []):
        at = f"{where}.metrics[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            raise _fail(at, "a metric needs a `name`")
        mtype = str(m.get("type", "counter"))
        if mtype not in ("counter", "gauge"):
            raise _fail(f"{at}.type", f"expected counter or gauge, got {mtype!r}")
        if mtype == "counter" and not m["name"].endswith("_total"):
            raise _fail(f"{at}.name", "counter names end in _total")
        if "counters" in m:
            pairs = tuple((str(k), str(v)) for k, v in dict(m["counters"]).items())
            if not m.get("by"):
                raise _fail(f"{at}.by", "`counters` maps label values, so it needs `by`")
        elif "counter" in m:
            pairs = (("", str(m["counter"])),)
        elif "array" in m:
            pairs = ()
            if not m.get("by"):
                raise _fail(f"{at}.by", "an array metric needs `by` for its labels")
        else:
            raise _fail(at, "a metric needs `counter`, `counters` or `array`")
        metrics.append(
            MetricSpec(
                name=m["name"],
                help=str(m.get("help", "")),
                type=mtype,  # type: ignore[arg-type]
                scale=float(m.get("scale", 1.0)),
                by=str(m.get("by", "")),
                counters=pairs,
                array=str(m.get("array", "")),
            )
        )
    return TableSpec(doc["table"], tuple(labels), tuple(metrics))


def load_tables() -> dict[str, TableSpec]:
    """Every packaged table spec, keyed by ONTAP table name."""
    out: dict[str, TableSpec] = {}
    for f in sorted(resources.files("sanlens.ontap").joinpath("tables").iterdir(), key=lambda p: p.name):
        if f.name.endswith(".yaml"):
            spec = parse_table(yaml.safe_load(f.read_text(encoding="utf-8")), f.name)
            out[spec.table] = spec
    return out
