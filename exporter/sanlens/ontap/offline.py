"""Counter rows from offline ONTAP captures, and how to cook them.

A live collector reads each table's counter schema from ONTAP. Offline there is
no cluster to ask, so this module carries the types and bases of the counters
the diagnoses use, for ``lun``, ``volume``, ``system:node``, ``disk:constituent``,
``fcp_lif`` and ``wafl`` (facts from ONTAP's counter catalogues; both the REST
and the ``statistics``/ZAPI spellings). A ``counter_schemas`` JSON file given to
``sanlens analyze`` overrides them.

Cooking follows the schema types: rate = Δc/Δt, average = Δc/Δbase,
percent = 100·Δc/Δbase, delta = Δc, raw = c. Every delta is taken before any
division; a negative delta (reset, takeover) or an incomplete aggregation drops
the row. Microsecond averages become seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sanlens.errors import SanlensError

Value = float | list[float]


class CaptureError(SanlensError):
    """A capture file that cannot be read, located by file and line."""

    def __init__(self, message: str, path: str | Path = "", line: int | None = None) -> None:
        where = str(path) + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True, slots=True)
class CounterSpec:
    type: str  # rate | average | percent | delta | raw
    base: str = ""
    unit: str = "none"  # ONTAP unit: per_sec, b_per_sec, microsec, percent, none, ...


@dataclass(slots=True)
class CounterRow:
    """One instance of one counter table at one moment: the shape every offline parser yields."""

    table: str
    instance: str
    properties: dict[str, str] = field(default_factory=dict)
    counters: dict[str, Value] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)  # array counter -> labels by position
    complete: bool = True


@dataclass(slots=True)
class Sample:
    timestamp: float | None  # epoch seconds, when the capture says
    rows: list[CounterRow]


def _s(type_: str, base: str = "", unit: str = "none") -> CounterSpec:
    return CounterSpec(type_, base, unit)


_RATE, _BPS, _US = "per_sec", "b_per_sec", "microsec"

# Ops, bytes and latency as both `lun` and `fcp_lif` name them (avg_* and average_* spellings).
_SAN_IO: dict[str, CounterSpec] = {
    "read_ops": _s("rate", unit=_RATE),
    "write_ops": _s("rate", unit=_RATE),
    "other_ops": _s("rate", unit=_RATE),
    "total_ops": _s("rate", unit=_RATE),
    "read_data": _s("rate", unit=_BPS),
    "write_data": _s("rate", unit=_BPS),
}
for _prefix in ("avg", "average"):
    _SAN_IO[f"{_prefix}_read_latency"] = _s("average", "read_ops", _US)
    _SAN_IO[f"{_prefix}_write_latency"] = _s("average", "write_ops", _US)
    _SAN_IO[f"{_prefix}_other_latency"] = _s("average", "other_ops", _US)
    _SAN_IO[f"{_prefix}_latency"] = _s("average", "total_ops", _US)

BUILTIN: dict[str, dict[str, CounterSpec]] = {
    "lun": {
        **_SAN_IO,
        "queue_full": _s("rate", unit=_RATE),
        "remote_ops": _s("rate", unit=_RATE),
        "remote_bytes": _s("rate", unit=_BPS),
        "read_ops_sent": _s("delta"),
        "write_ops_sent": _s("delta"),
        "read_align_histo": _s("percent", "read_ops_sent", "percent"),
        "write_align_histo": _s("percent", "write_ops_sent", "percent"),
        "read_align_histogram": _s("percent", "read_ops_sent", "percent"),
        "write_align_histogram": _s("percent", "write_ops_sent", "percent"),
        "read_partial_blocks": _s("percent", "read_ops", "percent"),
        "write_partial_blocks": _s("percent", "write_ops", "percent"),
        "unmap_reqs": _s("delta"),
        "caw_reqs": _s("delta"),
    },
    "volume": {
        "total_read_ops": _s("rate", unit=_RATE),
        "total_write_ops": _s("rate", unit=_RATE),
        "total_other_ops": _s("rate", unit=_RATE),
        "total_ops": _s("rate", unit=_RATE),
        "read_ops": _s("rate", unit=_RATE),
        "write_ops": _s("rate", unit=_RATE),
        "other_ops": _s("rate", unit=_RATE),
        "bytes_read": _s("rate", unit=_BPS),
        "bytes_written": _s("rate", unit=_BPS),
        "read_data": _s("rate", unit=_BPS),
        "write_data": _s("rate", unit=_BPS),
        "read_latency": _s("average", "total_read_ops", _US),
        "write_latency": _s("average", "total_write_ops", _US),
        "other_latency": _s("average", "total_other_ops", _US),
        "average_latency": _s("average", "total_ops", _US),
        "avg_latency": _s("average", "total_ops", _US),
    },
    "system:node": {
        "cpu_busy": _s("percent", "cpu_elapsed_time", "percent"),
        "cpu_elapsed_time": _s("delta", unit=_US),
        "domain_busy": _s("percent", "cpu_elapsed_time", "percent"),
        "domain_shared": _s("percent", "cpu_elapsed_time", "percent"),
        "idle": _s("percent", "cpu_elapsed_time", "percent"),
        "num_processors": _s("raw"),
        "total_ops": _s("rate", unit=_RATE),
        "read_ops": _s("rate", unit=_RATE),
        "write_ops": _s("rate", unit=_RATE),
        "other_ops": _s("rate", unit=_RATE),
        "fcp_ops": _s("rate", unit=_RATE),
        "iscsi_ops": _s("rate", unit=_RATE),
        "read_latency": _s("average", "read_ops", _US),
        "write_latency": _s("average", "write_ops", _US),
        "other_latency": _s("average", "other_ops", _US),
        "total_latency": _s("average", "total_ops", _US),
    },
    "disk:constituent": {
        "disk_busy": _s("percent", "base_for_disk_busy", "percent"),
        "base_for_disk_busy": _s("delta"),
        "io_pending": _s("average", "base_for_disk_busy"),
        "io_queued": _s("average", "base_for_disk_busy"),
        "total_transfers": _s("rate", unit=_RATE),
        "user_reads": _s("rate", unit=_RATE),
        "user_writes": _s("rate", unit=_RATE),
        "cp_reads": _s("rate", unit=_RATE),
        "user_read_blocks": _s("rate", unit=_RATE),
        "user_write_blocks": _s("rate", unit=_RATE),
        "user_read_latency": _s("average", "user_read_blocks", _US),
        "user_write_latency": _s("average", "user_write_blocks", _US),
        "disk_capacity": _s("raw"),
    },
    "fcp_lif": dict(_SAN_IO),
    "wafl": {
        "cp_count": _s("delta"),
        "total_cp_msecs": _s("delta", unit="millisec"),
        "cp_phase_times": _s("percent", "total_cp_msecs", "percent"),
        "read_io_type": _s("percent", "read_io_type_base", "percent"),
        "read_io_type_base": _s("delta"),
        "wafl_memory_used": _s("raw"),
        "wafl_memory_free": _s("raw"),
    },
    # nodeshell `sysstat -M`: already per-interval values
    "sysstat": {
        "avg": _s("raw", unit="percent"),
        "cpu": _s("raw", unit="percent"),
        "any": _s("raw", unit="percent"),
        "domain_busy": _s("raw", unit="percent"),
        "cp": _s("raw", unit="percent"),
        "ops": _s("raw", unit=_RATE),
    },
}

# cooked unit of each ONTAP unit, after microseconds become seconds
COOKED_UNIT = {
    "per_sec": "per_second",
    "b_per_sec": "bytes_per_second",
    "kb_per_sec": "kilobytes_per_second",
    "microsec": "seconds",
    "millisec": "milliseconds",
    "percent": "percent",
}


def cooked_unit(spec: CounterSpec) -> str:
    if spec.type == "percent":
        return "percent"
    if spec.type == "average" and spec.unit not in COOKED_UNIT:
        return "per_op"
    if spec.type == "delta":
        return COOKED_UNIT.get(spec.unit, "count")
    return COOKED_UNIT.get(spec.unit, spec.unit)


# ----------------------------------------------------------------- cooking
@dataclass(frozen=True, slots=True)
class Cooked:
    table: str
    instance: str
    counter: str
    label: str  # '' for scalar counters
    value: float
    unit: str


def _as_list(v: Value) -> list[float]:
    return v if isinstance(v, list) else [v]


def cook_row(
    prev: CounterRow,
    cur: CounterRow,
    dt: float | None,
    schemas: Mapping[str, Mapping[str, CounterSpec]] | None = None,
    min_ops: float = 0.0,
) -> list[Cooked]:
    """Cooked values of one instance between two samples; [] when the row must be skipped.

    ``dt`` None (unknown interval) leaves rate counters out. Averages whose base
    moved by no more than ``min_ops`` are left out (no ops, no latency).
    """
    if not (prev.complete and cur.complete):
        return []
    # Hot path (10,000 LUN rows a poll): table lookups hoisted, scalars without list boxing.
    table, instance = cur.table, cur.instance
    sch = (schemas or {}).get(table) or {}
    builtin = BUILTIN.get(table) or {}
    prev_counters, cur_counters = prev.counters, cur.counters
    out: list[Cooked] = []
    append = out.append
    for name, cv in cur_counters.items():
        spec = sch.get(name) or builtin.get(name)
        if spec is None:
            continue
        kind = spec.type
        unit = cooked_unit(spec)
        if kind == "raw":
            for label, x in _labelled(cur, name, cv):
                append(Cooked(table, instance, name, label, x, unit))
            continue
        pv = prev_counters.get(name)
        if pv is None:
            continue
        is_list = type(cv) is list
        if is_list or type(pv) is list:
            pl, cl = _as_list(pv), _as_list(cv)
            if len(pl) != len(cl):
                continue
            deltas = [c - p for c, p in zip(cl, pl, strict=True)]
            if any(d < 0 for d in deltas):
                return []  # counter reset or takeover: the whole row is unusable
        else:
            d0 = cv - pv  # type: ignore[operator]
            if d0 < 0:
                return []
            deltas = [d0]
        if kind == "rate":
            if not dt or dt <= 0:
                continue
            values = [d / dt for d in deltas]
        elif kind == "delta":
            values = deltas
        else:  # average, percent
            pb, cb = prev_counters.get(spec.base), cur_counters.get(spec.base)
            if pb is None or cb is None or (type(pb) is list) != (type(cb) is list):
                continue
            if type(cb) is list:  # a one-element array base counts as a scalar
                if len(cb) != 1 or len(pb) != 1:  # type: ignore[arg-type]
                    continue
                pb, cb = pb[0], cb[0]  # type: ignore[index]
            db = cb - pb  # type: ignore[operator]
            if db < 0:
                continue
            if kind == "average":
                if db <= min_ops or db == 0:
                    continue
                scale = 1e-6 / db if spec.unit == "microsec" else 1.0 / db
                values = [d * scale for d in deltas]
            else:
                if db == 0:
                    continue
                values = [100.0 * d / db for d in deltas]
        if not is_list:
            append(Cooked(table, instance, name, "", values[0], unit))
            continue
        for label, x in _labelled(cur, name, values):
            append(Cooked(table, instance, name, label, x, unit))
    return out


def _labelled(row: CounterRow, name: str, v: Value) -> Iterator[tuple[str, float]]:
    if isinstance(v, list):
        labels = row.labels.get(name) or []
        for i, x in enumerate(v):
            yield (labels[i] if i < len(labels) else str(i)), x
    else:
        yield "", v


# -------------------------------------------------------- JSON counter rows
def parse_schema_doc(doc: Mapping[str, Any]) -> tuple[str, dict[str, CounterSpec]]:
    """``GET /api/cluster/counter/tables/{table}`` with ``counter_schemas`` -> (table, specs)."""
    table = str(doc.get("name") or "")
    specs: dict[str, CounterSpec] = {}
    for c in doc.get("counter_schemas") or []:
        if not isinstance(c, Mapping) or "name" not in c:
            continue
        base = c.get("denominator") or {}
        specs[str(c["name"])] = CounterSpec(
            str(c.get("type") or "raw"),
            str(base.get("name") or "") if isinstance(base, Mapping) else "",
            str(c.get("unit") or "none"),
        )
    return table, specs


def rows_from_response(doc: Mapping[str, Any], where: str = "") -> list[CounterRow]:
    """Records of ``GET /api/cluster/counter/tables/{table}/rows`` as CounterRows.

    Hot path: ``dict`` checks, not ``Mapping`` (an ABC check per element costs ~0.3 s a poll at scale).
    """
    recs = doc.get("records")
    if not isinstance(recs, list):
        raise CaptureError("expected a counter-table rows response with a 'records' list", where)
    rows = []
    for n, r in enumerate(recs):
        if not isinstance(r, dict):
            raise CaptureError(f"records[{n}] is not an object", where)
        table = str((r.get("counter_table") or {}).get("name") or "")
        props = {
            str(p.get("name")): str(p.get("value", ""))
            for p in r.get("properties") or []
            if isinstance(p, dict) and "name" in p
        }
        row = CounterRow(table, str(r.get("id") or props.get("name") or n), props)
        agg = r.get("aggregation")
        if isinstance(agg, dict) and agg.get("complete") is False:
            row.complete = False
        for c in r.get("counters") or []:
            if not isinstance(c, dict) or "name" not in c:
                continue
            name = str(c["name"])
            try:
                if "counters" in c:  # 2-D: one {"label", "values"} per outer label, inner labels shared
                    inner = [str(x) for x in c.get("labels") or []]
                    flat: list[float] = []
                    flat_labels: list[str] = []
                    for sub in c["counters"] or []:
                        outer = str(sub.get("label", ""))
                        vals = [float(x) for x in sub.get("values") or []]
                        flat.extend(vals)
                        flat_labels.extend(
                            f"{outer}.{inner[j] if j < len(inner) else j}" for j in range(len(vals))
                        )
                    row.counters[name] = flat
                    row.labels[name] = flat_labels
                elif "values" in c:
                    row.counters[name] = [float(x) for x in c["values"]]
                    row.labels[name] = [str(x) for x in c.get("labels") or []]
                elif "value" in c:
                    row.counters[name] = float(c["value"])
            except (TypeError, ValueError, AttributeError):
                raise CaptureError(f"records[{n}] counter {name!r}: not a number", where) from None
        rows.append(row)
    return rows


def iter_json_samples(path: str | Path) -> Iterator[Sample]:
    """One rows response per file, a JSON list of responses, or one response per line (NDJSON)."""
    p = Path(path)
    with open(p, encoding="utf-8-sig") as f:
        first = f.readline()
        try:
            doc = json.loads(first)
        except ValueError:
            doc = None
        if isinstance(doc, Mapping):  # NDJSON: stream line by line
            yield Sample(None, rows_from_response(doc, f"{p}:1"))
            for n, line in enumerate(f, start=2):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except ValueError as e:
                    raise CaptureError(f"not JSON: {e}", p, n) from None
                if not isinstance(doc, Mapping):
                    raise CaptureError("expected a JSON object per line", p, n)
                yield Sample(None, rows_from_response(doc, f"{p}:{n}"))
            return
        try:
            doc = json.loads(first + f.read())
        except ValueError as e:
            raise CaptureError(f"not JSON: {e}", p) from None
    for d in doc if isinstance(doc, list) else [doc]:
        if not isinstance(d, Mapping):
            raise CaptureError("expected JSON objects", p)
        yield Sample(None, rows_from_response(d, str(p)))
