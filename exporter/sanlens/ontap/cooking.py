"""Counter rows, from a live poll or an offline capture, and how to cook them.

The live poll decodes each table's rows into columns (:class:`~sanlens.ontap.row_block.RowBlock`);
offline parsers (REST rows JSON in :mod:`sanlens.ontap.counter_json`, ``statistics show -raw``
text, ``sysstat -M``) yield :class:`CounterRow`. :func:`cook_table` cooks two polls' blocks,
paired by instance (:func:`pair`), column by column; :func:`cook_row` is one row of it. A
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

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from sanlens.errors import SanlensError
from sanlens.ontap.catalogue import CounterSpec, catalogue, cooked_unit, unit_scale
from sanlens.ontap.row_block import CounterRow, RowBlock, RowRef, Value

__all__ = [
    "CaptureError",
    "Cooked",
    "CookedColumn",
    "CookedTable",
    "CounterRow",
    "CounterSpec",
    "Sample",
    "cook_row",
    "cook_table",
    "pair",
]


class CaptureError(SanlensError):
    """A capture file that cannot be read, located by file and line."""

    def __init__(self, message: str, path: str | Path = "", line: int | None = None) -> None:
        where = str(path) + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {message}" if where else message)


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


class CookedColumn(NamedTuple):
    """One counter of one table, cooked for every row of a :class:`CookedTable`.

    ``values[i]`` is the value of ``rows[i]``: a float, None where that row has none, or for an
    array counter the ``(label, value)`` pairs of the row."""

    counter: str  # REST name
    unit: str
    labelled: bool
    values: list[Any]


@dataclass(slots=True)
class CookedTable:
    """One table's cooked values column by column: the rows that gave at least one value."""

    table: str
    block: RowBlock  # those rows: ``columns[k].values[i]`` is row ``i``'s
    columns: list[CookedColumn]

    def refs(self) -> Iterator[RowRef]:
        return self.block.refs()


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
    table = cur.table
    t = cook_table(RowBlock.of_rows(table, [prev]), RowBlock.of_rows(table, [cur]), [dt], schemas, min_ops)
    instance = cur.instance
    out: list[Cooked] = []
    if not len(t.block):
        return out
    for col in t.columns:
        v = col.values[0]
        if v is None:
            continue
        if col.labelled:
            out.extend(Cooked(table, instance, col.counter, label, x, col.unit) for label, x in v)
        else:
            out.append(Cooked(table, instance, col.counter, "", v, col.unit))
    return out


class Paired(NamedTuple):
    """Two polls' rows of one table, aligned by instance, and each row's interval."""

    prev: RowBlock
    cur: RowBlock
    dts: list[float | None]
    stale: list[int]  # positions in the earlier poll of rows ONTAP has not sampled since: wait for one


def pair(prev: RowBlock, cur: RowBlock, dt: float) -> Paired:
    """The rows of ``cur`` whose instance ``prev`` holds, each beside it, ``dt`` apart; a statistics
    field's row (``sampled_at``) runs between the two times ONTAP sampled it instead."""
    if prev.instances == cur.instances and cur.sampled_at is None:  # the steady case: the same rows
        return Paired(prev, cur, [dt] * len(cur), [])
    at = prev.index()
    pi: list[int] = []
    ci: list[int] = []
    dts: list[float | None] = []
    stale: list[int] = []
    for i, inst in enumerate(cur.instances):
        j = at.get(inst)
        if j is None:
            continue
        row_dt = dt
        if cur.sampled_at is not None and prev.sampled_at is not None:
            now, then = cur.sampled_at[i], prev.sampled_at[j]
            if now is not None and then is not None:
                row_dt = now - then
                if row_dt <= 0:
                    stale.append(j)
                    continue
        pi.append(j)
        ci.append(i)
        dts.append(row_dt)
    return Paired(prev.take(pi), cur.take(ci), dts, stale)


def cook_table(
    prevs: RowBlock,
    curs: RowBlock,
    dts: list[float | None],
    schemas: Mapping[str, Mapping[str, CounterSpec]] | None = None,
    min_ops: float = 0.0,
) -> CookedTable:
    """Cook each row of ``curs`` against the same position of ``prevs`` (``dts[i]`` apart), one
    counter at a time across all rows: the plan, the kind and the unit are decided once per
    counter, and the arithmetic runs as list comprehensions over whole columns.

    A row is dropped whole when a counter went backwards (reset, takeover) or a rate is beyond
    any instance's reach (restarted above its last value); a row with incomplete aggregation is
    dropped unless the table's policy keeps it.
    """
    table = curs.table
    if not keeps_partial(table) and not (all(prevs.complete) and all(curs.complete)):
        keep = [i for i, (p, c) in enumerate(zip(prevs.complete, curs.complete, strict=True)) if p and c]
        prevs, curs, dts = prevs.take(keep), curs.take(keep), [dts[i] for i in keep]
    n = len(curs)
    if not n:
        return CookedTable(table, curs, [])
    plan = _plan(table, (schemas or {}).get(table))
    dropped: set[int] = set()
    columns: list[CookedColumn] = []
    one_dt = dts[0] if dts.count(dts[0]) == n else _MIXED
    absent = [None] * n

    def column(name: str, rows: RowBlock) -> Sequence[Any]:
        return rows.counters.get(name) or absent

    def deltas(name: str) -> tuple[list[Any], bool]:
        """Per row: the delta, a list of deltas, or None (absent, or arrays of other lengths); and
        whether every row has a scalar delta (the comprehension raises on None or a list)."""
        cv, pv = column(name, curs), column(name, prevs)
        try:
            return [c - p for c, p in zip(cv, pv, strict=True)], True
        except TypeError:
            return [_delta(c, p) for c, p in zip(cv, pv, strict=True)], False

    bases_of: dict[str, list[float | None]] = {}

    def bases(spec: CounterSpec) -> list[float | None]:
        got = bases_of.get(spec.base)
        if got is None:
            got = bases_of[spec.base] = _base_deltas(column(spec.base, curs), column(spec.base, prevs))
        return got

    for name in curs.counters:
        entry = plan.get(name)
        if entry is None:
            continue
        spec, canon, scale, unit = entry
        kind = spec.type
        vals: list[Any] | None
        if kind == "raw":
            cv = column(name, curs)
            try:
                vals, labelled = [x * scale for x in cv], False
            except TypeError:
                labelled = any(type(x) is list for x in cv)
                vals = [
                    None
                    if x is None
                    else list(
                        _labelled(curs, i, name, [y * scale for y in x] if type(x) is list else x * scale)
                    )
                    if labelled
                    else x * scale
                    for i, x in enumerate(cv)
                ]
            columns.append(CookedColumn(canon, unit, labelled, vals))
            continue
        ds, plain = deltas(name)
        if plain:
            if min(ds) < 0:
                dropped.update(i for i, d in enumerate(ds) if d < 0)
            vals = _cook_floats(spec, scale, ds, bases, dts, one_dt, min_ops, dropped)
        else:
            _note_backwards(ds, dropped)
            vals = _cook_mixed(spec, scale, ds, bases, dts, min_ops, dropped)
        if vals is None:
            continue
        labelled = not plain and any(type(v) is list for v in vals)
        if labelled:
            vals = [None if v is None else list(_labelled(curs, i, name, v)) for i, v in enumerate(vals)]
        columns.append(CookedColumn(canon, unit, labelled, vals))
    # the rows that gave a value and were not dropped
    if not dropped and any(None not in c.values for c in columns):
        return CookedTable(table, curs, columns)
    keep = [i for i in range(n) if i not in dropped and any(c.values[i] is not None for c in columns)]
    if len(keep) == n:
        return CookedTable(table, curs, columns)
    return CookedTable(
        table,
        curs.take(keep),
        [c._replace(values=[c.values[i] for i in keep]) for c in columns],
    )


_MIXED = object()  # rows of one table cooked over different intervals


def _delta(c: Value | None, p: Value | None) -> float | list[float] | None:
    if c is None or p is None:
        return None
    if type(c) is list or type(p) is list:
        pl, cl = _as_list(p), _as_list(c)
        if len(pl) != len(cl):
            return None
        return [x - y for x, y in zip(cl, pl, strict=True)]
    return c - p  # type: ignore[operator]


def _note_backwards(ds: list[Any], dropped: set[int]) -> None:
    for i, d in enumerate(ds):
        if d is None:
            continue
        if type(d) is list:
            if any(x < 0 for x in d):
                dropped.add(i)
        elif d < 0:
            dropped.add(i)


def _base_deltas(cv: Sequence[Any], pv: Sequence[Any]) -> list[float | None]:
    """The base counter's delta per row (a one-element array counts as a scalar); None where unusable."""
    try:
        return [b if b >= 0 else None for b in [c - p for c, p in zip(cv, pv, strict=True)]]
    except TypeError:
        pass
    out: list[float | None] = []
    for c, p in zip(cv, pv, strict=True):
        if c is None or p is None or (type(c) is list) != (type(p) is list):
            out.append(None)
            continue
        if type(c) is list:
            if len(c) != 1 or len(p) != 1:
                out.append(None)
                continue
            c, p = c[0], p[0]
        b = c - p
        out.append(b if b >= 0 else None)
    return out


def _cook_floats(
    spec: CounterSpec,
    scale: float,
    ds: list[float],
    bases: Any,
    dts: list[float | None],
    one_dt: object,
    min_ops: float,
    dropped: set[int],
) -> list[float | None] | None:
    """A column of scalar deltas, every row present: the common case, a comprehension per kind."""
    kind = spec.type
    if kind == "rate":
        if one_dt is not _MIXED:
            if not one_dt or one_dt <= 0:  # type: ignore[operator]
                return None
            f = scale / one_dt  # type: ignore[operator]
            vals: list[float | None] = [d * f for d in ds]
        else:
            vals = [d * (scale / t) if t and t > 0 else None for d, t in zip(ds, dts, strict=True)]
        _over_limit(spec, vals, dropped)
        return vals
    if kind == "delta":
        return [d * scale for d in ds] if scale != 1.0 else list(ds)
    bs = bases(spec)
    if kind == "average":
        return [
            d * (scale / b) if b is not None and b > min_ops and b != 0 else None
            for d, b in zip(ds, bs, strict=True)
        ]
    return [100.0 * d / b if b else None for d, b in zip(ds, bs, strict=True)]


def _over_limit(spec: CounterSpec, vals: list[Any], dropped: set[int]) -> None:
    limit = MAX_RATE.get(spec.unit)
    if limit is None:
        return
    for i, v in enumerate(vals):
        if v is None:
            continue
        top = max(v, default=0.0) if type(v) is list else v
        if top > limit:
            dropped.add(i)


def _cook_mixed(
    spec: CounterSpec,
    scale: float,
    ds: list[Any],
    bases: Any,
    dts: list[float | None],
    min_ops: float,
    dropped: set[int],
) -> list[Any]:
    """A column with absent rows or array counters: row by row, the same arithmetic."""
    kind = spec.type
    if kind == "rate":
        vals: list[Any] = []
        for d, t in zip(ds, dts, strict=True):
            if d is None or not t or t <= 0:
                vals.append(None)
                continue
            f = scale / t
            vals.append([x * f for x in d] if type(d) is list else d * f)
        _over_limit(spec, vals, dropped)
        return vals
    if kind == "delta":
        if scale == 1.0:
            return list(ds)
        return [None if d is None else [x * scale for x in d] if type(d) is list else d * scale for d in ds]
    bs = bases(spec)
    out: list[Any] = []
    for d, b in zip(ds, bs, strict=True):
        if d is None or b is None:
            out.append(None)
        elif kind == "average":
            if b <= min_ops or b == 0:
                out.append(None)
            else:
                f = scale / b
                out.append([x * f for x in d] if type(d) is list else d * f)
        elif b == 0:
            out.append(None)
        else:
            out.append([100.0 * x / b for x in d] if type(d) is list else 100.0 * d / b)
    return out


def _labelled(rows: RowBlock, i: int, name: str, v: Value) -> Iterator[tuple[str, float]]:
    if isinstance(v, list):
        yield from zip(rows.labels_of(name, i, len(v)), v, strict=True)
    else:
        yield "", v
