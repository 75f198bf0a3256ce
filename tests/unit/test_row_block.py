"""A table's rows as columns (``RowBlock``): decoded, paired across polls and labelled as rows would be.

The decoder is held to a reading of ONTAP's rows records written here one record at a time from the
REST shape (``id``, ``properties[]``, ``counters[]`` of ``value``, ``values`` + ``labels`` or 2-D
``counters``, ``aggregation.complete``); pairing, to cooking each instance alone against its own
earlier row; label columns, to each row's label value.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sanlens.ontap.catalogue import LabelDef, catalogue
from sanlens.ontap.cooking import CounterRow, CounterSpec, cook_row, cook_table, pair
from sanlens.ontap.counter_json import KeptStrings, decode_records
from sanlens.ontap.row_block import RowBlock

pytestmark = pytest.mark.unit

TABLE = "test_row_block"  # not in the catalogue: the schema below decides
SCHEMA = {
    "ops": CounterSpec("rate", "", "per_sec"),
    "lat": CounterSpec("average", "ops", "microsec"),
    "hist": CounterSpec("rate", "", "per_sec"),
}
NAMES = ["ops", "lat", "hist", "speed"]

number = st.one_of(st.integers(0, 10**9), st.floats(0, 1e9, allow_nan=False))


@st.composite
def counter(draw: Any, name: str) -> dict[str, Any]:
    shape = draw(st.sampled_from(["value", "value", "values", "2d", "text"]))
    if shape == "value":
        return {"name": name, "value": draw(number)}
    if shape == "text":
        return {"name": name, "value": draw(st.sampled_from(["32Gb", "1000", "auto"]))}
    if shape == "values":
        vals = draw(st.lists(number, min_size=1, max_size=3))
        return {"name": name, "values": vals, "labels": [f"l{j}" for j in range(len(vals))]}
    subs = [
        {"label": f"o{k}", "values": draw(st.lists(number, min_size=1, max_size=2))}
        for k in range(draw(st.integers(1, 2)))
    ]
    return {"name": name, "labels": ["a", "b"], "counters": subs}


@st.composite
def record(draw: Any, n: int) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": f"i{n}"}
    props = draw(st.lists(st.sampled_from(["name", "node", "svm"]), max_size=3))  # a name may repeat
    if props:
        rec["properties"] = [{"name": p, "value": f"{p}{draw(st.integers(0, 3))}"} for p in props]
    names = draw(st.lists(st.sampled_from(NAMES), max_size=5))  # absent, and repeated: the last wins
    rec["counters"] = [draw(counter(name)) for name in names]
    if draw(st.booleans()):
        rec["aggregation"] = {"count": 2, "complete": draw(st.booleans())}
    return rec


def read_one(rec: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], dict[str, list[str]], bool]:
    """One record's properties, counters, array labels and completeness, read from the REST shape."""
    props = {p["name"]: p["value"] for p in rec.get("properties", [])}
    counters: dict[str, Any] = {}
    labels: dict[str, list[str]] = {}
    for c in rec["counters"]:
        name = c["name"]
        if "counters" in c:
            counters[name] = [float(v) for s in c["counters"] for v in s["values"]]
            labels[name] = [
                f"{s['label']}.{c['labels'][j] if j < len(c['labels']) else j}"
                for s in c["counters"]
                for j in range(len(s["values"]))
            ]
        elif "values" in c:
            counters[name], labels[name] = [float(v) for v in c["values"]], c["labels"]
        elif isinstance(c["value"], str) and not c["value"].isdigit():
            props[name] = c["value"]  # a string counter (fcp link.speed) is a label
        else:
            counters[name] = float(c["value"])
    complete = rec.get("aggregation", {}).get("complete", True) is not False
    return props, counters, labels, complete


@settings(max_examples=200)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(*(record(k) for k in range(n)))))
def test_pages_decoded_into_columns_hold_each_record_as_read_alone(recs: tuple[dict[str, Any], ...]) -> None:
    block = RowBlock(TABLE)
    cut = len(recs) // 2  # two pages, the second appended to the first's columns
    decode_records(block, list(recs[:cut]), first=0)
    decode_records(block, list(recs[cut:]), first=cut)
    assert block.instances == [r["id"] for r in recs]
    n = len(recs)
    for cols in (block.properties, block.counters, block.labels):
        assert all(len(c) == n for c in cols.values())
    for i, (rec, ref) in enumerate(zip(recs, block.refs(), strict=True)):
        props, counters, labels, complete = read_one(rec)
        assert dict(ref.properties) == props
        assert dict(ref.counters) == counters
        assert dict(ref.labels) == labels
        assert ref.complete == complete
        (row,) = RowBlock.of_rows(TABLE, block.take([i]).rows()).rows()
        assert (row.properties, row.counters, row.labels) == (props, counters, labels)


GARBAGE = {  # records a live poll must not take for rows, each with the problem it counts as
    "no_id": [
        {"counters": [{"name": "ops", "value": 1}]},
        {"id": "", "counters": [{"name": "ops", "value": 1}]},
    ],
    "no_counters": [{"id": "g"}, {"id": "g", "counters": []}, {"id": "g", "counters": [{"value": 1}, 7]}],
}


@settings(max_examples=100)
@given(
    st.lists(st.one_of(st.just(None), st.sampled_from(sorted(GARBAGE))), min_size=1, max_size=10),
    st.data(),
)
def test_a_live_page_leaves_out_garbage_records_and_counts_each_by_its_problem(
    kinds: list[str | None], data: Any
) -> None:
    recs: list[dict[str, Any]] = []
    for k, kind in enumerate(kinds):
        row = record(k).filter(lambda r: bool(r["counters"]))  # a row carries a counter
        recs.append(data.draw(row) if kind is None else data.draw(st.sampled_from(GARBAGE[kind])))
    live, alone = RowBlock(TABLE), RowBlock(TABLE)
    problems: Counter[str] = Counter()
    decode_records(live, recs, first=0, problems=problems)
    good = [r for r, kind in zip(recs, kinds, strict=True) if kind is None]
    decode_records(alone, good)
    assert live.instances == alone.instances == [r["id"] for r in good]
    assert (live.properties, live.counters, live.labels, live.complete) == (
        alone.properties, alone.counters, alone.labels, alone.complete
    )  # fmt: skip
    assert problems == Counter(kind for kind in kinds if kind is not None)


@settings(max_examples=50)
@given(st.lists(st.integers(0, 30).flatmap(record), min_size=1, max_size=8), st.integers(0, 7))
def test_kept_strings_make_a_poll_read_the_last_polls_string_objects_and_keep_only_the_latest(
    recs: list[dict[str, Any]], gone: int
) -> None:
    page = json.dumps(recs)  # each poll decodes its own copies, as a response does
    first, second, plain = RowBlock(TABLE), RowBlock(TABLE), RowBlock(TABLE)
    kept = KeptStrings()
    firsts: set[int] = set()
    for block in (first, second):
        kept.new_poll()
        decode_records(block, json.loads(page), first=0, kept=kept)
        firsts = firsts or {id(s) for s in kept.now.values()}
    decode_records(plain, json.loads(page))
    assert (second.instances, second.properties) == (plain.instances, plain.properties)
    assert all(a is b for a, b in zip(first.instances, second.instances, strict=True))
    for key, col in second.properties.items():
        assert all(a is b for a, b in zip(first.properties[key], col, strict=True))
    # what is kept is the first poll's objects alone: no copy from the second page outlives it
    assert all(k is v and id(k) in firsts for k, v in kept.now.items())
    kept.done()
    assert kept.last == {}
    # a record gone from the next poll: its strings are no longer kept
    later = [r for k, r in enumerate(recs) if k != gone % len(recs)]
    kept.new_poll()
    decode_records(RowBlock(TABLE), json.loads(json.dumps(later)), first=0, kept=kept)
    read = RowBlock(TABLE)
    decode_records(read, later)
    wanted = {*read.instances, *(v for col in read.properties.values() for v in col if v is not None)}
    offered = {r["id"] for r in later} | {
        x
        for r in later
        for x in [p["value"] for p in r.get("properties", [])] + [c.get("value") for c in r["counters"]]
        if isinstance(x, str)
    }  # a value a later one of the same name replaced is kept too, for one poll
    assert wanted <= set(kept.now) <= offered


@settings(max_examples=50)
@given(st.lists(st.integers(0, 30).flatmap(record), min_size=2, max_size=8), st.integers(0, 7))
def test_a_read_stopped_part_way_leaves_the_last_complete_polls_strings_for_the_next(
    recs: list[dict[str, Any]], cut: int
) -> None:
    """A reset or a bad page ends a table's read before ``done``: the next read still finds the
    objects the last complete poll's rows hold, not fresh copies for the records it did not reach."""
    page = json.dumps(recs)
    complete, after = RowBlock(TABLE), RowBlock(TABLE)
    kept = KeptStrings()
    kept.new_poll()
    decode_records(complete, json.loads(page), first=0, kept=kept)
    kept.done()
    kept.new_poll()  # a read that stops after its first records
    decode_records(
        RowBlock(TABLE), json.loads(json.dumps(recs[: 1 + cut % (len(recs) - 1)])), first=0, kept=kept
    )
    kept.new_poll()
    decode_records(after, json.loads(page), first=0, kept=kept)
    assert all(a is b for a, b in zip(complete.instances, after.instances, strict=True))
    for key, col in after.properties.items():
        assert all(a is b for a, b in zip(complete.properties[key], col, strict=True))


def rows_of(instances: list[str], seed: int, scale: float) -> list[CounterRow]:
    rnd = random.Random(seed)
    out = []
    for inst in instances:
        r = CounterRow(TABLE, inst, {"name": inst})
        r.counters = {"ops": scale * rnd.randint(1, 100), "lat": scale * rnd.randint(0, 10**6)}
        if rnd.random() < 0.3:
            r.counters["hist"] = [scale * rnd.randint(1, 9), scale * rnd.randint(1, 9)]
            r.labels["hist"] = ["<1ms", "<2ms"]
        if rnd.random() < 0.1:
            del r.counters["ops"]
        out.append(r)
    return out


@settings(max_examples=100)
@given(
    st.lists(st.sampled_from([f"lun{k}" for k in range(12)]), unique=True, max_size=12),
    st.lists(st.sampled_from([f"lun{k}" for k in range(12)]), unique=True, max_size=12),
    st.integers(0, 1000),
)
def test_two_polls_paired_by_instance_cook_as_each_instance_alone(
    before: list[str], after: list[str], seed: int
) -> None:
    """Rows come in any order, some gone and some new: each is cooked against its own earlier row."""
    prev_rows, cur_rows = rows_of(before, seed, 1.0), rows_of(after, seed, 3.0)
    p = pair(RowBlock.of_rows(TABLE, prev_rows), RowBlock.of_rows(TABLE, cur_rows), 60.0)
    assert p.cur.instances == [i for i in after if i in before] == p.prev.instances
    got = cook_table(p.prev, p.cur, p.dts, {TABLE: SCHEMA})
    by_instance: dict[str, list[tuple[str, str, float]]] = {ref.instance: [] for ref in got.refs()}
    for c in got.columns:
        for ref, v in zip(got.refs(), c.values, strict=True):
            if v is not None:
                by_instance[ref.instance] += [
                    (c.counter, lab, x) for lab, x in (v if c.labelled else [("", v)])
                ]
    by_instance = {k: sorted(v) for k, v in by_instance.items()}
    earlier = {r.instance: r for r in prev_rows}
    want = {}
    for r in cur_rows:
        if r.instance in earlier:
            alone = cook_row(earlier[r.instance], r, 60.0, {TABLE: SCHEMA})
            if alone:
                want[r.instance] = sorted((c.counter, c.label, c.value) for c in alone)
    assert by_instance == want


def test_a_statistics_row_not_sampled_again_waits_and_the_others_run_between_their_samples() -> None:
    prev = RowBlock.of_rows(TABLE, rows_of(["a", "b", "c"], 1, 1.0))
    cur = RowBlock.of_rows(TABLE, rows_of(["c", "b", "a"], 1, 2.0))
    prev.sampled_at, cur.sampled_at = [100.0, 100.0, 100.0], [130.0, 100.0, 145.0]
    p = pair(prev, cur, 60.0)
    assert p.cur.instances == ["c", "a"] and p.dts == [30.0, 45.0]
    assert [prev.instances[j] for j in p.stale] == ["b"]
    plain = RowBlock.of_rows(TABLE, rows_of(["a", "b", "c"], 1, 1.0))
    steady = pair(plain.take([0, 1, 2]), plain, 60.0)  # the same rows in the same order: used as they are
    assert steady.cur is plain and steady.dts == [60.0] * 3 and steady.stale == []


@settings(max_examples=200)
@given(st.data())
def test_a_label_column_is_each_rows_label_value(data: Any) -> None:
    """``LabelDef.column`` over a block is ``LabelDef.value`` row by row: catalogued labels and any other."""
    labels = [lab for t in catalogue().values() for lab in t.labels]
    made = st.builds(
        LabelDef,
        st.just("x"),
        st.lists(st.sampled_from(["id", "name", "svm"]), min_size=1, max_size=3, unique=True).map(tuple),
        st.sampled_from(["", ":", "/"]),
        st.integers(-3, 3),
    )
    lab = data.draw(st.one_of(st.sampled_from(labels), made))
    words = st.sampled_from(["", "a", "x:y", "p:q:r", "node1:lun0", "-", "/vol/v/l"])
    n = data.draw(st.integers(1, 5))
    ids = [data.draw(words) for _ in range(n)]
    props = {src: [data.draw(st.one_of(st.none(), words)) for _ in range(n)] for src in lab.sources}
    rows = [{k: v for k, c in props.items() if (v := c[i]) is not None} for i in range(n)]
    assert lab.column(props, ids) == [lab.value(r, ids[i]) for i, r in enumerate(rows)]


def test_a_counter_first_seen_on_a_later_row_is_absent_before_it_and_a_repeat_wins() -> None:
    block = RowBlock(TABLE)
    decode_records(
        block,
        [
            {"id": "a", "counters": [{"name": "ops", "value": 1}]},
            {"id": "b", "counters": [{"name": "lat", "value": 2}, {"name": "lat", "value": 3}]},
            {"id": "c", "counters": [{"name": "ops", "value": 4}]},
        ],
    )
    assert block.counters == {"ops": [1.0, None, 4.0], "lat": [None, 3.0, None]}


def test_two_blocks_joined_hold_each_row_as_it_was() -> None:
    a = RowBlock.of_rows(TABLE, rows_of(["a", "b"], 2, 1.0))
    b = RowBlock.of_rows(TABLE, [CounterRow(TABLE, "c", {"svm": "s1"}, {"ops": 5.0}, sampled_at=30.0)])
    both = a.joined(b)
    assert both.instances == ["a", "b", "c"] and both.sampled_at == [None, None, 30.0]
    assert [(r.properties, r.counters, r.labels) for r in both.rows()] == [
        (r.properties, r.counters, r.labels) for r in [*a.rows(), *b.rows()]
    ]


def test_an_array_value_past_its_listed_labels_is_named_by_position() -> None:
    block = RowBlock.of_rows(
        TABLE, [CounterRow(TABLE, "a", counters={"hist": [1.0, 2.0, 3.0]}, labels={"hist": ["<1ms"]})]
    )
    assert block.labels_of("hist", 0, 3) == ["<1ms", "1", "2"]
    assert block.labels_of("ops", 0, 2) == ["0", "1"]
