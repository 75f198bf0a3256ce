"""A live rows page read through the typed decoder gives what the generic reader gives.

The typed decoder (msgspec) reads the common shape; anything else falls to ``decode_records``,
wholly (the page does not type) or from the first garbage record on. Either way the columns, the
garbage counted and the errors must be the generic reader's: the reference here is
``decode_records`` over ``orjson.loads`` of the same bytes, the reader a live poll used before.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_row_block import GARBAGE, NAMES, TABLE, record
from tests.conftest import fixture_path

from sanlens.ontap.cooking import CaptureError
from sanlens.ontap.counter_json import KeptStrings, decode_records
from sanlens.ontap.row_block import RowBlock
from sanlens.ontap.rows_page import PageReader, RowsPage, decode_page, read_page

pytestmark = pytest.mark.unit

ODD = [  # records of shapes the typed decoder refuses or stops at, each read as before
    {"id": 7, "counters": [{"name": "ops", "value": 1}]},  # an integer id
    {"id": 0, "counters": [{"name": "ops", "value": 1}]},  # named by its position
    {"id": 0, "properties": [{"name": "name", "value": "n0"}], "counters": [{"name": "ops", "value": 2}]},
    {"id": "p", "properties": [{"name": "node", "value": 5}], "counters": [{"name": "ops", "value": 1}]},
    {"id": "q", "properties": [{"value": "x"}], "counters": [{"name": "ops", "value": 1}]},
    {"id": "b", "counters": [{"name": "ops", "value": 1}, {"name": 9, "value": 2}]},
    {"id": "s", "counters": [{"name": "hist", "values": [1, 2], "labels": None}]},
    {"id": "t", "counters": [{"name": "hist", "labels": ["a"], "counters": None}]},
    {"id": "u", "counters": [{"name": "ops", "value": 10**25}], "counter_table": {"name": "lun"}},
    {"id": "v", "counters": [{"name": "ops"}], "aggregation": {"complete": None}},
    {"id": "w", "counters": [{"name": "ops", "value": "1e3"}], "_links": {"self": {"href": "/x"}}},
]
BAD = [  # a counter the generic reader refuses: the page cannot be trusted
    {"id": "n", "counters": [{"name": "ops", "value": None}]},
    {"id": "t", "counters": [{"name": "ops", "value": True}]},
    {"id": "o", "counters": [{"name": "ops", "value": {"x": 1}}]},
]


def generic(body: bytes, first: int, kept: KeptStrings) -> tuple[RowBlock, Counter[str], str | None]:
    block, problems = RowBlock(TABLE), Counter[str]()
    try:
        decode_records(block, orjson.loads(body)["records"], TABLE, first, problems, kept)
    except CaptureError as e:
        return block, problems, str(e)
    return block, problems, None


def live(
    body: bytes, first: int, kept: KeptStrings, reader: Callable[[bytes], RowsPage | None] = read_page
) -> tuple[RowBlock, Counter[str], str | None, bool]:
    """As the collector reads a page: typed when it types, the generic reader otherwise."""
    block, problems = RowBlock(TABLE), Counter[str]()
    page = reader(body)
    try:
        if page is None:
            decode_records(block, orjson.loads(body)["records"], TABLE, first, problems, kept)
        else:
            assert decode_page(block, page, TABLE, first, problems, kept) == len(page.records)
    except CaptureError as e:
        return block, problems, str(e), page is not None
    return block, problems, None, page is not None


def columns(b: RowBlock) -> tuple[Any, ...]:
    return b.instances, b.properties, b.counters, b.labels, b.complete


@settings(max_examples=300)
@given(
    st.lists(
        st.one_of(
            st.integers(0, 30).flatmap(record).filter(lambda r: bool(r["counters"])),
            st.sampled_from([g for gs in GARBAGE.values() for g in gs] + ODD + BAD),
        ),
        min_size=1,
        max_size=10,
    ),
    st.integers(0, 5000),
    st.booleans(),
)
def test_a_page_read_typed_gives_the_generic_readers_columns_counts_and_errors(
    recs: list[dict[str, Any]], first: int, has_next: bool
) -> None:
    doc: dict[str, Any] = {"records": recs, "num_records": len(recs)}
    if has_next:
        doc["_links"] = {"next": {"href": "/api/cluster/counter/tables/t/rows?start.id=x"}}
    body = json.dumps(doc).encode()  # orjson would refuse 10**25
    kept_a, kept_b = KeptStrings(), KeptStrings()
    ref, ref_problems, ref_error = generic(body, first, kept_a)
    got, got_problems, got_error, _ = live(body, first, kept_b)
    assert got_error == ref_error
    if ref_error is None:
        assert columns(got) == columns(ref)
        assert got_problems == ref_problems
        assert kept_b.now == kept_a.now  # the same strings kept for the next poll
        page = read_page(body)
        if page is not None:
            assert page.next_href() == (doc["_links"]["next"]["href"] if has_next else None)


@settings(max_examples=100)
@given(st.lists(st.integers(0, 30).flatmap(record).filter(lambda r: bool(r["counters"])), min_size=1))
def test_a_page_of_the_common_shape_is_read_typed(recs: list[dict[str, Any]]) -> None:
    """Every shape ONTAP's counter tables give (scalars, arrays, 2-D arrays, string counters,
    partial aggregation) types: the fast reader is the one a healthy poll uses."""
    body = orjson.dumps({"records": recs, "_links": {"self": {"href": "/x"}}})
    assert isinstance(read_page(body), RowsPage)
    assert live(body, 0, KeptStrings())[3]


@settings(max_examples=150)
@given(
    st.lists(st.integers(0, 30).flatmap(record).filter(lambda r: bool(r["counters"])), min_size=1),
    st.sets(st.sampled_from(NAMES)),
)
def test_a_tables_reader_gives_the_generic_readers_columns_whether_or_not_the_page_holds_other_names(
    recs: list[dict[str, Any]], asked: set[str]
) -> None:
    """A table's reader names its counters by the names the poll asked for; a page holding another
    name (``asked`` short of the page's) is read by the common decoder instead, to the same columns."""
    body = orjson.dumps({"records": recs})
    reader = PageReader(tuple(sorted(asked)))
    ref, ref_problems, ref_error = generic(body, 0, KeptStrings())
    got, got_problems, got_error, typed = live(body, 0, KeptStrings(), reader)
    assert typed and got_error == ref_error
    if ref_error is None:
        assert columns(got) == columns(ref) and got_problems == ref_problems
    page = reader(body)
    assert page is not None
    held = {c["name"] for r in recs for c in r["counters"]}
    named = held <= asked  # every name the page holds was asked for: the names are the reader's own
    assert type(page).__name__ == ("_NamedPage" if named and asked else "RowsPage")
    if named and asked:
        assert all(any(c.name is a for a in reader.names) for r in page.records for c in r.counters)


def test_a_garbage_record_mid_page_hands_the_rest_to_the_generic_reader_which_counts_it() -> None:
    good = [{"id": f"r{k}", "counters": [{"name": "ops", "value": k}]} for k in range(4)]
    body = orjson.dumps(
        {"records": [*good[:2], {"id": "", "counters": [{"name": "ops", "value": 1}]}, *good[2:]]}
    )
    block, problems, error, typed = live(body, 10, KeptStrings())
    assert typed and error is None
    assert block.instances == ["r0", "r1", "r2", "r3"]
    assert block.counters["ops"] == [0.0, 1.0, 2.0, 3.0]
    assert problems == Counter({"no_id": 1})


def test_a_null_counter_is_refused_at_its_record_and_counter_as_the_generic_reader_says() -> None:
    body = orjson.dumps(
        {"records": [{"id": "a", "counters": [{"name": "ops", "value": 1}, {"name": "lat", "value": None}]}]}
    )
    assert read_page(body) is not None
    assert live(body, 3, KeptStrings())[2] == f"{TABLE}: records[3] counter 'lat': not a number"


def test_an_integer_past_a_floats_range_is_refused_not_raised() -> None:
    """orjson refuses the whole answer (``malformed``); the typed reader reads the integer and
    refuses its record the way the generic reader refuses a number it cannot hold."""
    body = b'{"records":[{"id":"a","counters":[{"name":"ops","value":1' + b"0" * 400 + b"}]}]}"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(body)
    assert live(body, 0, KeptStrings())[2] == f"{TABLE}: records[0] counter 'ops': not a number"


@pytest.mark.parametrize(
    "body",
    [
        b'{"records":[{"id":"a","zz":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b',"counters":[{"name":"x","value":1}]}]}',
        b'{"records":[{"id":"a\xff","counters":[{"name":"x","value":1}]}]}',
        b'{"records":[{"id":"\\ud800","counters":[{"name":"x","value":1}]}]}',
        b'{"records":[{"id":"a","counters":[{"name":"x","value":1e400}]}]}',
        b"\xef\xbb\xbf{}",
        b"",
    ],
    ids=["deep nesting in a skipped field", "bad UTF-8", "lone surrogate", "float overflow", "BOM", "empty"],
)
def test_an_answer_the_typed_decoder_cannot_read_is_left_to_the_generic_reader(body: bytes) -> None:
    """Whatever the typed decoder raises, the page is the generic reader's, which names the fault
    (``malformed``) or reads the page as before."""
    assert read_page(body) is None


@pytest.mark.parametrize(
    "capture",
    [
        "ontap/restperf/system-node-rows-vsim-1.json",
        "ontap/restperf/system-node-rows-vsim-2.json",
        "ontap/restperf/volume-rows-1.json",
        "ontap/restperf/volume-rows-2.json",
    ],
)
def test_a_real_clusters_rows_page_is_read_typed_into_the_generic_readers_columns(capture: str) -> None:
    """Pages a real ONTAP sent (partial aggregation, many properties) take the typed path, so the
    fast reader is not the simulator's alone, and read as the generic reader reads them."""
    body = fixture_path(capture).read_bytes()
    ref, ref_problems, ref_error = generic(body, 0, KeptStrings())
    got, got_problems, got_error, typed = live(body, 0, KeptStrings())
    assert typed
    assert ref_error is None and got_error is None
    assert len(got) > 0 and columns(got) == columns(ref) and got_problems == ref_problems
    # as a poll reads it: typed with the names it asked for (here, every name the page holds)
    reader = PageReader(
        tuple(sorted({c["name"] for r in orjson.loads(body)["records"] for c in r["counters"]}))
    )
    named, named_problems, named_error, typed = live(body, 0, KeptStrings(), reader)
    assert typed and type(reader(body)).__name__ == "_NamedPage" and named_error is None
    assert columns(named) == columns(ref) and named_problems == ref_problems
