"""The `statistics` collection path: ONTAP objects' raw cumulative counters as counter-table rows.

ASA r2 systems serve no counter tables, releases before 9.11 none of the ones sanlens
reads, and a site may prefer one request per object kind to a table walk: then the
``statistics`` field of LUNs, namespaces, volumes, nodes, FC and Ethernet ports and IP interfaces is the
source. ``statistics.yaml`` maps each object's fields onto the REST names of a counter
table, so the rows cook, build the view and export exactly as the tables' rows do.

Each record carries the time ONTAP sampled it (``statistics.timestamp``); a row's rate
interval is the difference of two such times, not of two polls, and a record whose
``status`` is not ``ok`` (or whose timestamp is ``-``) is not a sample at all.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from sanlens.ontap.capabilities import Capabilities
from sanlens.ontap.cooking import CounterRow
from sanlens.ontap.records import get_path

if TYPE_CHECKING:
    from sanlens.ontap.client import OntapClient


@dataclass(frozen=True)
class StatisticsObject:
    """One REST object kind whose ``statistics`` feed one counter table."""

    name: str
    endpoint: str
    table: str
    fields: tuple[str, ...]
    row_id: str
    properties: dict[str, str]  # table property -> the record's field
    counters: dict[str, str]  # statistics sub-field (iops_raw.read) -> table counter
    service: str = ""  # IP interfaces: the data service the LIF must offer
    only_with: tuple[str, ...] = ()  # objects read before it: it is read only when one of them gave rows

    @property
    def params(self) -> dict[str, str]:
        return {"fields": ",".join((*self.fields, "statistics"))}


def _asked(fields: Iterable[str], path: str) -> bool:
    """Whether ``fields=`` brings ``path``: itself or an enclosing object."""
    return any(path == f or path.startswith(f + ".") for f in fields)


def unasked(obj: StatisticsObject) -> tuple[str, ...]:
    """The record paths ``obj`` reads (row id, properties) that its ``fields`` do not ask for: ONTAP
    answers only what ``fields=`` names, so an unasked row id would key every row alike."""
    return tuple(p for p in (obj.row_id, *obj.properties.values()) if not _asked(obj.fields, p))


@functools.cache
def objects() -> dict[str, StatisticsObject]:
    """Every object of ``statistics.yaml``, keyed by its name (the table it feeds, or ``node``)."""
    doc = yaml.safe_load(
        resources.files("sanlens.ontap").joinpath("statistics.yaml").read_text(encoding="utf-8")
    )
    out = {
        str(name): StatisticsObject(
            str(name),
            str(o["endpoint"]),
            str(o["table"]),
            tuple(str(f) for f in o["fields"]),
            str(o["row_id"]),
            {str(k): str(v) for k, v in o["properties"].items()},
            {str(k): str(v) for k, v in o["counters"].items()},
            str(o.get("service", "")),
            tuple(str(x) for x in o.get("only_with", ())),
        )
        for name, o in doc["objects"].items()
    }
    names = list(out)
    for name, obj in out.items():
        if missing := unasked(obj):
            raise ValueError(f"statistics.yaml: {name} reads {', '.join(missing)} without asking for it")
        if any(o not in names[: names.index(name)] for o in obj.only_with):
            raise ValueError(f"statistics.yaml: {name} is read only with objects read before it")
    return out


def sample_time(stats: Mapping[str, Any]) -> float | None:
    """``statistics.timestamp`` as Unix seconds; None when ONTAP has no sample (``-``, absent, bad)."""
    text = stats.get("timestamp")
    if not isinstance(text, str) or not text or text == "-":
        return None
    try:
        t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.UTC)
    return t.timestamp()


def row_of(obj: StatisticsObject, rec: Mapping[str, Any]) -> CounterRow | None:
    """One record as a row of ``obj.table``; None when the record holds no usable sample.

    A record whose status is not ``ok`` is kept as an incomplete row: its counters may lack a
    part, so it is neither cooked nor exported (as a counter table's partial aggregation)."""
    stats = rec.get("statistics")
    if not isinstance(stats, Mapping):
        return None
    at = sample_time(stats)
    if at is None:
        return None
    if obj.service and obj.service not in (rec.get("services") or ()):
        return None
    props = {prop: str(get_path(rec, src, None) or "") for prop, src in obj.properties.items()}
    row = CounterRow(obj.table, str(get_path(rec, obj.row_id, None) or props.get("name", "")), props)
    row.sampled_at = at
    row.complete = str(stats.get("status", "ok")) == "ok"
    for field, counter in obj.counters.items():
        v = get_path(stats, field, None)
        if isinstance(v, int | float) and not isinstance(v, bool):
            row.counters[counter] = float(v)
    return row


def rows_of(obj: StatisticsObject, records: Iterable[Mapping[str, Any]]) -> list[CounterRow]:
    return [r for r in (row_of(obj, rec) for rec in records) if r is not None]


def fetch_rows(
    client: OntapClient, vol_recs: list[dict[str, Any]], caps: Capabilities, release: str = ""
) -> dict[str, list[CounterRow]]:
    """Rows of every table the statistics path feeds: one request per endpoint (the volumes' records
    come with the inventory's). LUNs and nodes must answer; the other endpoints may be refused."""
    objs = objects()
    out: dict[str, list[CounterRow]] = {}
    fetched: dict[str, list[dict[str, Any]]] = {objs["volume"].endpoint: vol_recs}
    for name, obj in objs.items():
        if obj.only_with and not any(out.get(objs[o].table) for o in obj.only_with):
            out.setdefault(obj.table, [])
            continue
        if obj.endpoint not in fetched:
            params = obj.params
            if obj.service:  # one request serves every LIF kind: ask for the union of their fields
                fields = {
                    f for o in objs.values() if o.endpoint == obj.endpoint for f in (*o.fields, "statistics")
                }
                params = {"fields": ",".join(sorted(fields))}
            get = lambda o=obj, p=params: list(client.records(o.endpoint, p))  # noqa: E731
            fetched[obj.endpoint] = (
                get() if name in REQUIRED else caps.optional(obj.endpoint, get, [], release)
            )
        out.setdefault(obj.table, []).extend(rows_of(obj, fetched[obj.endpoint]))
    return out


REQUIRED = frozenset({"lun", "volume", "node"})
