"""Counter rows, from a live poll or an offline capture, and how to cook them.

Every parser (REST rows JSON, ``statistics show -raw`` text, ``sysstat -M``)
yields :class:`CounterRow`; :func:`cook_row` turns two of them into values. A
counter's type, base and unit come from the cluster's own ``counter_schemas``
when there is one (live, or a schema file given to ``sanlens analyze``), else
from the catalogue (:mod:`sanlens.ontap.catalogue`), which knows both the REST
and the ``statistics``/ZAPI spellings. Cooked values carry the REST name.

Cooking follows the schema types: rate = Δc/Δt, average = Δc/Δbase,
percent = 100·Δc/Δbase, delta = Δc, raw = c, and the unit's SI factor
(microsec, millisec, kb_per_sec, mb, ...) is applied to every type but percent.
Every delta is taken before any division. A negative delta (reset, takeover)
drops the row; so does an incomplete aggregation, unless the table's policy
keeps it (``system:node``: one unreachable node must not blind every other
node's CPU view).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from sanlens.errors import SanlensError
from sanlens.ontap.catalogue import CounterSpec, catalogue, cooked_unit, unit_scale

Value = float | list[float]

__all__ = ["CaptureError", "Cooked", "CounterRow", "CounterSpec", "Sample", "cook_row"]


class CaptureError(SanlensError):
    """A capture file that cannot be read, located by file and line."""

    def __init__(self, message: str, path: str | Path = "", line: int | None = None) -> None:
        where = str(path) + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(slots=True)
class CounterRow:
    """One instance of one counter table at one moment: the shape every parser yields."""

    table: str
    instance: str
    properties: dict[str, str] = field(default_factory=dict)
    counters: dict[str, Value] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)  # array counter -> labels by position
    complete: bool = True
    sampled_at: float | None = None  # when ONTAP sampled the row (a `statistics` field's timestamp)


@dataclass(slots=True)
class Sample:
    timestamp: float | None  # epoch seconds, when the capture says
    rows: list[CounterRow]


# ----------------------------------------------------------------- cooking
class Cooked(NamedTuple):
    """One cooked value. A tuple, not a frozen dataclass: ~200,000 are made per poll at
    10,000 LUNs, and a tuple is three times cheaper to build."""

    table: str
    instance: str
    counter: str  # REST name
    label: str  # '' for scalar counters
    value: float
    unit: str


# Rates (in SI units, by the schema's unit) no instance reaches: 10 million ops/s, 100 GB/s.
# A counter growing faster restarted (takeover, reboot, a counter manager reset) somewhere
# above its last value; like a negative delta, that makes the row unusable for the interval.
MAX_RATE: dict[str, float] = {"per_sec": 1e7, "none": 1e7, "b_per_sec": 1e11, "kb_per_sec": 1e11}

# (spec, REST name, SI factor, cooked unit) per counter name as rows carry it
_Plan = dict[str, tuple[CounterSpec, str, float, str]]
_plans: dict[tuple[str, int], tuple[object, _Plan]] = {}


def _plan(table: str, live: Mapping[str, CounterSpec] | None) -> _Plan:
    key = (table, id(live))
    hit = _plans.get(key)
    if hit is not None and hit[0] is live:
        return hit[1]
    tdef = catalogue().get(table)
    plan: _Plan = {}
    if tdef is not None:
        for name, spec in tdef.specs().items():
            plan[name] = (
                spec,
                tdef.canonical(name),
                unit_scale(spec.unit),
                cooked_unit(spec.type, spec.unit),
            )
    for name, spec in (live or {}).items():
        canon = tdef.canonical(name) if tdef else name
        plan[name] = (spec, canon, unit_scale(spec.unit), cooked_unit(spec.type, spec.unit))
    if len(_plans) > 256:
        _plans.clear()
    _plans[key] = (live, plan)
    return plan


def keeps_partial(table: str) -> bool:
    tdef = catalogue().get(table)
    return tdef is not None and tdef.partial_aggregation == "keep"


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
    table, instance = cur.table, cur.instance
    if not (prev.complete and cur.complete) and not keeps_partial(table):
        return []
    # Hot path (10,000 LUN rows a poll): the plan is built once per table and schema.
    plan = _plan(table, (schemas or {}).get(table))
    prev_counters, cur_counters = prev.counters, cur.counters
    out: list[Cooked] = []
    append = out.append
    for name, cv in cur_counters.items():
        entry = plan.get(name)
        if entry is None:
            continue
        spec, canon, scale, unit = entry
        kind = spec.type
        if kind == "raw":
            for label, x in _labelled(cur, name, cv):
                append(Cooked(table, instance, canon, label, x * scale, unit))
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
            f = scale / dt
            values = [d * f for d in deltas]
            limit = MAX_RATE.get(spec.unit)
            if limit is not None and max(values, default=0.0) > limit:
                return []  # counters that restarted above their last values: the row is unusable
        elif kind == "delta":
            values = [d * scale for d in deltas] if scale != 1.0 else deltas
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
                f = scale / db
                values = [d * f for d in deltas]
            else:
                if db == 0:
                    continue
                values = [100.0 * d / db for d in deltas]
        if not is_list:
            append(Cooked(table, instance, canon, "", values[0], unit))
            continue
        for label, x in _labelled(cur, name, values):
            append(Cooked(table, instance, canon, label, x, unit))
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


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def rows_from_response(
    doc: Mapping[str, Any], where: str = "", table: str = "", first: int = 0
) -> list[CounterRow]:
    """Records of ``GET /api/cluster/counter/tables/{table}/rows`` as CounterRows.

    ``table`` names the rows whose record lacks ``counter_table`` (ONTAP sends it only when
    ``fields`` asks for it); ``first`` is the position of the first record in the whole
    collection (one page of several), for error messages and id-less rows.

    Hot path: ``dict`` checks, not ``Mapping`` (an ABC check per element costs ~0.3 s a poll at scale).
    """
    recs = doc.get("records")
    if not isinstance(recs, list):
        raise CaptureError("expected a counter-table rows response with a 'records' list", where)
    rows = []
    for n, r in enumerate(recs, start=first):
        if not isinstance(r, dict):
            raise CaptureError(f"records[{n}] is not an object", where)
        name = str(ct.get("name") or "") if isinstance(ct := r.get("counter_table"), dict) else ""
        listed = r.get("properties")
        props = {
            str(p.get("name")): str(p.get("value", ""))
            for p in (listed if isinstance(listed, list) else ())
            if isinstance(p, dict) and "name" in p
        }
        row = CounterRow(name or table, str(r.get("id") or props.get("name") or n), props)
        agg = r.get("aggregation")
        if isinstance(agg, dict) and agg.get("complete") is False:
            row.complete = False
        for c in listed if isinstance(listed := r.get("counters"), list) else ():
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
                    v = c["value"]
                    if isinstance(v, str) and not _is_number(v):
                        row.properties[name] = (
                            v  # a string-typed counter (fcp link.speed): a label, not a value
                        )
                    else:
                        row.counters[name] = float(v)
            except (TypeError, ValueError, AttributeError, OverflowError):
                raise CaptureError(f"records[{n}] counter {name!r}: not a number", where) from None
        rows.append(row)
    return rows


def _decode(raw: bytes, p: Path, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CaptureError(
            f"not UTF-8 text (byte {e.start + 1} of the line: {raw[e.start : e.start + 1]!r})", p, line
        ) from None


def iter_json_samples(path: str | Path) -> Iterator[Sample]:
    """One rows response per file, a JSON list of responses, or one response per line (NDJSON)."""
    p = Path(path)
    with open(p, "rb") as f:
        first = _decode(f.readline().removeprefix(b"\xef\xbb\xbf"), p, 1)
        try:
            doc = json.loads(first)
        except ValueError:
            doc = None
        if isinstance(doc, Mapping):  # NDJSON: stream line by line
            yield Sample(None, rows_from_response(doc, f"{p}:1"))
            for n, raw in enumerate(f, start=2):
                line = _decode(raw, p, n)
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
        text = [first]
        for n, raw in enumerate(f, start=2):
            text.append(_decode(raw, p, n))
        try:
            doc = json.loads("".join(text))
        except ValueError as e:
            raise CaptureError(
                f"not JSON: {e.args[0] if e.args else e}", p, getattr(e, "lineno", None)
            ) from None
    for i, d in enumerate(doc if isinstance(doc, list) else [doc]):
        if not isinstance(d, Mapping):
            raise CaptureError(f"{f'[{i}]' if doc is not d else 'the top level'} is not a JSON object", p)
        yield Sample(None, rows_from_response(d, str(p)))
