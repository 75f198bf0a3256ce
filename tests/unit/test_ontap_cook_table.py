"""Column-wise cooking (``cook_table``) against a row-by-row reference of the documented rules.

The reference below restates the cooking rules of ``sanlens.ontap.cooking`` one row at a time
(rate = Δc·scale/Δt, delta, average = Δc·scale/Δbase above min_ops, percent = 100·Δc/Δbase,
raw = c·scale; a counter that went backwards or a rate beyond any instance drops the row; an
incomplete row is dropped). Hypothesis builds tables whose rows mix every shape the column
paths must tell apart: absent counters, arrays, bases of other shapes, resets, rates that
restarted high, intervals that differ per row or are unknown.
"""

from __future__ import annotations

from array import array
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sanlens.ontap.catalogue import unit_scale
from sanlens.ontap.cooking import MAX_RATE, CounterRow, CounterSpec, cook_row, cook_table
from sanlens.ontap.row_block import RowBlock

SCHEMA = {
    "ops": CounterSpec("rate", "", "per_sec"),
    "base_ops": CounterSpec("rate", "", "per_sec"),
    "lat": CounterSpec("average", "base_ops", "microsec"),
    "busy": CounterSpec("percent", "base_time", "none"),
    "base_time": CounterSpec("delta", "", "none"),
    "errors": CounterSpec("delta", "", "millisec"),
    "size": CounterSpec("raw", "", "microsec"),
}
TABLE = "test_cook_table"  # not in the catalogue: the live schema alone decides
MIN_OPS = 0.5


def reference(prev: CounterRow, cur: CounterRow, dt: float | None) -> list[tuple[str, str, float]] | None:
    """(counter, label, value) of one row, or None when the row is dropped."""
    if not (prev.complete and cur.complete):
        return None
    out: list[tuple[str, str, float]] = []

    def emit(name: str, v: Any) -> None:
        if isinstance(v, list):
            labels = cur.labels.get(name) or []
            out.extend((name, labels[i] if i < len(labels) else str(i), x) for i, x in enumerate(v))
        else:
            out.append((name, "", v))

    for name, cv in cur.counters.items():
        spec = SCHEMA.get(name)
        if spec is None:
            continue
        scale = unit_scale(spec.unit)
        if spec.type == "raw":
            emit(name, [x * scale for x in cv] if isinstance(cv, list) else cv * scale)
            continue
        pv = prev.counters.get(name)
        if pv is None:
            continue
        cl, pl = (cv if isinstance(cv, list) else [cv]), (pv if isinstance(pv, list) else [pv])
        if len(cl) != len(pl):
            continue
        d = [c - p for c, p in zip(cl, pl, strict=True)]
        if any(x < 0 for x in d):
            return None
        shape = isinstance(cv, list) or isinstance(pv, list)
        if spec.type == "rate":
            if not dt or dt <= 0:
                continue
            vals = [x * (scale / dt) for x in d]
            if max(vals) > MAX_RATE[spec.unit]:
                return None
        elif spec.type == "delta":
            vals = [x * scale for x in d]
        else:
            pb, cb = prev.counters.get(spec.base), cur.counters.get(spec.base)
            if pb is None or cb is None or isinstance(pb, list) != isinstance(cb, list):
                continue
            if isinstance(cb, list):
                if len(cb) != 1 or len(pb) != 1:  # type: ignore[arg-type]
                    continue
                pb, cb = pb[0], cb[0]  # type: ignore[index]
            db = cb - pb  # type: ignore[operator]
            if db < 0 or db == 0 or (spec.type == "average" and db <= MIN_OPS):
                continue
            vals = [x * (scale / db) for x in d] if spec.type == "average" else [100.0 * x / db for x in d]
        emit(name, vals if shape else vals[0])
    return out or None


def block(rows: list[CounterRow]) -> RowBlock:
    return RowBlock.of_rows(TABLE, rows)


def flat(table: Any) -> dict[str, list[tuple[str, str, float]]]:
    got: dict[str, list[tuple[str, str, float]]] = {r.instance: [] for r in table.refs()}
    for col in table.columns:
        for row, v in zip(table.refs(), col.values, strict=True):
            if v is None:
                continue
            if col.labelled:
                got[row.instance] += [(col.counter, label, x) for label, x in v]
            else:
                got[row.instance].append((col.counter, "", v))
    return got


counter_value = st.one_of(
    st.floats(0, 1e9, allow_nan=False),
    st.lists(st.floats(0, 1e9, allow_nan=False), min_size=1, max_size=3),
    st.none(),
)


@st.composite
def row_pair(draw: Any, i: int) -> tuple[CounterRow, CounterRow, float | None]:
    prev = CounterRow(TABLE, f"i{i}", complete=draw(st.booleans()) or draw(st.booleans()))
    cur = CounterRow(TABLE, f"i{i}", complete=draw(st.booleans()) or draw(st.booleans()))
    for name in draw(st.permutations([*SCHEMA, "unknown"])):
        p, c = draw(counter_value), draw(st.one_of(counter_value, st.floats(-1e3, 1e12, allow_nan=False)))
        if isinstance(p, float) and draw(st.booleans()) and isinstance(c, float):
            c = p + abs(c) % 1e6  # mostly growing counters, so rows survive
        if p is not None:
            prev.counters[name] = p
        if c is not None:
            cur.counters[name] = c
            if isinstance(c, list):
                cur.labels[name] = [f"l{j}" for j in range(draw(st.integers(0, len(c))))]
    dt = draw(st.sampled_from([60.0, 60.0, 30.0, 0.0, None]))
    return prev, cur, dt


@st.composite
def tables(draw: Any) -> list[tuple[CounterRow, CounterRow, float | None]]:
    n = draw(st.integers(1, 6))
    return [draw(row_pair(i)) for i in range(n)]


@settings(max_examples=300)
@given(tables())
def test_a_table_cooked_by_columns_equals_each_row_cooked_by_the_rules(rows: Any) -> None:
    prevs, curs, dts = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    got = flat(cook_table(block(prevs), block(curs), dts, {TABLE: SCHEMA}, MIN_OPS))
    want = {c.instance: v for p, c, dt in rows if (v := reference(p, c, dt)) is not None}
    assert set(got) == set(want)
    for instance, values in want.items():
        assert sorted(got[instance]) == sorted(values), instance


@settings(max_examples=200)
@given(tables())
def test_a_table_cooked_against_the_compacted_rows_a_poll_keeps_equals_the_rules(rows: Any) -> None:
    """A poll keeps its rows for the next one's deltas with float columns as arrays: cooking against
    them gives what the rules give, and exactly what cooking against the lists gives."""
    prevs, curs, dts = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    kept = block(prevs).compacted()
    assert all((type(col) is array) == all(type(x) is float for x in col) for col in kept.counters.values())
    got = cook_table(kept, block(curs), dts, {TABLE: SCHEMA}, MIN_OPS)
    assert got == cook_table(block(prevs), block(curs), dts, {TABLE: SCHEMA}, MIN_OPS)
    want = {c.instance: v for p, c, dt in rows if (v := reference(p, c, dt)) is not None}
    assert flat(got).keys() == want.keys()
    for instance, values in want.items():
        assert sorted(flat(got)[instance]) == sorted(values), instance


def test_compacting_keeps_every_value_and_its_kind() -> None:
    b = block(
        [
            CounterRow(TABLE, "a", counters={"ops": 1.0, "lat": 2.0, "size": [1.0, 2.0]}),
            CounterRow(TABLE, "b", counters={"ops": 3.5, "size": [4.0]}),
        ]
    )
    k = b.compacted()
    assert k.counters["ops"] == array("d", [1.0, 3.5])
    assert k.counters["lat"] == [2.0, None] and k.counters["size"] == [[1.0, 2.0], [4.0]]
    assert k.rows() == b.rows() and k.instances is b.instances
    joined = k.joined(b)  # rows gone stale are joined to the fresh ones as lists
    assert joined.counters["ops"] == [1.0, 3.5, 1.0, 3.5] and joined.rows() == [*b.rows(), *b.rows()]


@settings(max_examples=100)
@given(tables())
def test_one_row_cooked_alone_is_that_row_of_its_table(rows: Any) -> None:
    prevs, curs, dts = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    whole = flat(cook_table(block(prevs), block(curs), dts, {TABLE: SCHEMA}, MIN_OPS))
    for p, c, dt in rows:
        alone = [(x.counter, x.label, x.value) for x in cook_row(p, c, dt, {TABLE: SCHEMA}, MIN_OPS)]
        assert sorted(alone) == sorted(whole.get(c.instance, []))


def test_the_common_table_takes_the_comprehension_path_and_keeps_every_row() -> None:
    prevs = [
        CounterRow(TABLE, f"i{i}", counters={"ops": 100.0 * i, "lat": 5e6, "base_ops": 1e3}) for i in range(4)
    ]
    curs = [
        CounterRow(
            TABLE,
            f"i{i}",
            counters={"ops": 100.0 * i + 600 * i, "lat": 5e6 + 2e4 * i, "base_ops": 1e3 + 10 * i},
        )
        for i in range(4)
    ]
    t = cook_table(block(prevs), block(curs), [60.0] * 4, {TABLE: SCHEMA}, MIN_OPS)
    assert [r.instance for r in t.refs()] == ["i0", "i1", "i2", "i3"]
    cols = {c.counter: c.values for c in t.columns}
    assert cols["ops"] == [0.0, 10.0, 20.0, 30.0]  # 600·i ops over 60 s
    assert cols["lat"][0] is None  # no ops: no latency
    assert cols["lat"][1:] == [2e4 * i * 1e-6 / (10 * i) for i in (1, 2, 3)]  # 2 ms each
