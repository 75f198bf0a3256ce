"""A live counter-table page of the common shape, decoded by msgspec straight into typed records.

At 10,000 LUNs a poll reads ~30 MB of rows pages. Decoded to dicts, every counter is a dict of two
keys that the cycle collector tracks and scans; decoded to these structs (``gc=False``: they hold
no reference cycles), a page decodes ~3x faster and the columns read attributes. Only the common
shape is typed: a page that differs anywhere (an id-less record, a number where a name is, a
property that is not a string) fails the typed decode, and the generic reader
(:func:`sanlens.ontap.counter_json.decode_records`) reads it, with its located errors and its
counting of garbage records. Both give the same columns for the same page (a hypothesis test).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from typing import Literal

import msgspec
from msgspec import UNSET, Struct, UnsetType

from sanlens.ontap.cooking import CaptureError
from sanlens.ontap.counter_json import KeptStrings, decode_records, flat_2d, is_number
from sanlens.ontap.row_block import RowBlock, put


class _Named(Struct, gc=False):
    name: str = ""


class _Property(Struct, gc=False):
    name: str
    value: str = ""


class _Inner(Struct, gc=False):
    """One outer label's values of a 2-D counter."""

    label: str = ""
    values: list[float] = []


class _Counter(Struct, gc=False):
    name: str
    value: int | float | str | UnsetType | None = UNSET
    values: list[float] | UnsetType = UNSET
    labels: list[str] | UnsetType | None = UNSET
    counters: list[_Inner] | UnsetType = UNSET


class _Aggregation(Struct, gc=False):
    complete: bool | None = None


class Record(Struct, gc=False):
    id: str | int
    counters: list[_Counter]
    properties: list[_Property] = []
    counter_table: _Named | None = None
    aggregation: _Aggregation | None = None


class _Href(Struct, gc=False):
    href: str | None = None


class _Links(Struct, gc=False):
    next: _Href | None = None


class RowsPage(Struct, gc=False):
    records: list[Record]
    links: _Links | None = msgspec.field(name="_links", default=None)

    def next_href(self) -> str | None:
        """``_links.next.href``; None on the last page."""
        nxt = self.links.next if self.links is not None else None
        return (nxt.href or None) if nxt is not None else None


_DECODER = msgspec.json.Decoder(RowsPage)


def read_page(body: bytes | bytearray, decoder: msgspec.json.Decoder[RowsPage] = _DECODER) -> RowsPage | None:
    """The page typed, or None when it is not of the common shape (the generic reader's turn)."""
    try:
        return decoder.decode(body)
    except (msgspec.MsgspecError, ValueError, OverflowError, RecursionError):
        return None  # bad UTF-8, nesting deeper than the decoder's stack: the generic reader says which


class PageReader:
    """A table's pages read typed, its counters' names taken from the names it asked for.

    A poll asks each table for its counters by name, so every counter of a page carries one of a few
    names. Decoded as a ``Literal`` of them, a name is the Literal's own string, already hashed, where
    a ``str`` field makes (hashes, frees) one string per counter: 90,000 a poll for 10,000 LUNs. A
    page holding another name (a release answering counters it was not asked for) is read by the
    common decoder, and failing that by the generic reader, with the same columns."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self._decoder = _named_decoder(names) if names else None

    def __call__(self, body: bytes | bytearray) -> RowsPage | None:
        page = read_page(body, self._decoder) if self._decoder is not None else None
        return page if page is not None else read_page(body)


@lru_cache(maxsize=64)
def _named_decoder(names: tuple[str, ...]) -> msgspec.json.Decoder[RowsPage]:
    """A page decoder whose counters' names are ``names`` (a table's are the same every poll)."""
    named = Literal.__getitem__(names)  # a Literal of names known only at run time
    counter = msgspec.defstruct("_NamedCounter", [("name", named)], bases=(_Counter,), gc=False)
    record = msgspec.defstruct("_NamedRecord", [("counters", list[counter])], bases=(Record,), gc=False)  # type: ignore[valid-type]
    page = msgspec.defstruct("_NamedPage", [("records", list[record])], bases=(RowsPage,), gc=False)  # type: ignore[valid-type]
    return msgspec.json.Decoder(page)


def decode_typed(
    block: RowBlock,
    recs: list[Record],
    where: str,
    first: int,
    kept: KeptStrings,
) -> int:
    """Append the records to ``block``'s columns as ``decode_records`` would; how many were read.

    A record the generic reader would count as garbage (an empty id, no counters) stops the read
    before it touches the block: the caller hands the rest of the page to ``decode_records``.
    """
    instances, complete, props_cols = block.instances, block.complete, block.properties
    one = kept.one
    for k, r in enumerate(recs):
        rid = r.id
        if rid == "" or not r.counters:
            return k
        i = len(instances)
        name_prop = None
        for p in r.properties:
            key, value = p.name, p.value
            value = one(value)
            col = props_cols.get(key)
            if col is not None and len(col) == i:
                col.append(value)
            else:
                put(props_cols, key, i, value)
            if key == "name":
                name_prop = value
        rid = str(rid or name_prop or first + k)
        rid = one(rid)
        instances.append(rid)
        agg = r.aggregation
        complete.append(not (agg is not None and agg.complete is False))
        try:
            _counters(r.counters, i, block, one)
        except _NotANumber as e:
            block.pad()
            raise CaptureError(f"records[{first + k}] counter {e.args[0]!r}: not a number", where) from None
    block.pad()
    return len(recs)


class _NotANumber(Exception):
    """A counter whose value is null, or an integer past a float's range."""


def _counters(counters: list[_Counter], i: int, block: RowBlock, one: Callable[[str], str]) -> None:
    """Row ``i``'s counters into the block's columns."""
    props_cols, counter_cols, label_cols = block.properties, block.counters, block.labels
    name = ""
    try:
        for c in counters:
            name, v = c.name, c.value
            if (type(v) is float or type(v) is int) and c.values is UNSET and c.counters is UNSET:
                x = float(v)
                col = counter_cols.get(name)
                if col is not None and len(col) == i:
                    col.append(x)
                else:
                    put(counter_cols, name, i, x)
            elif c.counters is not UNSET:
                inner = c.labels if type(c.labels) is list else []
                flat, flat_labels = flat_2d(inner, ((s.label, s.values) for s in c.counters))
                put(counter_cols, name, i, flat)
                put(label_cols, name, i, flat_labels)
            elif c.values is not UNSET:
                put(counter_cols, name, i, c.values)  # the page's own list: no copy
                put(label_cols, name, i, c.labels if type(c.labels) is list else [])
            elif v is not UNSET:
                if type(v) is str and not is_number(v):
                    v = one(v)
                    put(props_cols, name, i, v)  # a string-typed counter (fcp link.speed): a label
                elif type(v) is str or type(v) is int or type(v) is float:
                    put(counter_cols, name, i, float(v))
                else:
                    raise _NotANumber(name)
    except OverflowError:
        raise _NotANumber(name) from None


def decode_page(
    block: RowBlock,
    page: RowsPage,
    where: str,
    first: int,
    problems: Counter[str],
    kept: KeptStrings,
) -> int:
    """A typed page's records into ``block``; how many it held. From a record the generic reader
    would count as garbage on, the rest of the page is the generic reader's."""
    recs = page.records
    n = decode_typed(block, recs, where, first, kept)
    if n < len(recs):
        decode_records(block, msgspec.to_builtins(recs[n:]), where, first + n, problems, kept)
    return len(recs)
