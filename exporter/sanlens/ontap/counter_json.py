"""ONTAP's counter-table JSON read as columns and CounterRows: schema documents, rows responses and their captures.

The live poll (``sanlens.ontap.collector``) and ``sanlens analyze`` both read the REST shape
``GET /api/cluster/counter/tables/{table}[/rows]``; this turns it into the rows and counter specs
that :mod:`sanlens.ontap.cooking` cooks, every failure a located :class:`CaptureError`.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from sanlens.ontap.catalogue import CounterSpec
from sanlens.ontap.cooking import CaptureError, CounterRow, Sample
from sanlens.ontap.row_block import RowBlock, put


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


def record_problem(r: object) -> str | None:
    """Why a live counter-table record is garbage (``no_id``, ``no_counters``), None when it is a row.

    ONTAP gives every row its ``id`` and the counters asked for: a record without them would become
    a row named by its position, with nothing in it, and a poll of nothing but such rows would pass
    for a healthy one. Captures keep id-less rows (``rows_from_response``); the live poll does not
    (``decode_records`` with ``problems``).
    """
    if not isinstance(r, dict):
        return "not_object"
    rid = r.get("id")
    if not (type(rid) is str and rid) and type(rid) is not int:
        return "no_id"
    counters = r.get("counters")
    if type(counters) is not list:
        return "no_counters"
    head = counters[0] if counters else None
    if type(head) is dict and "name" in head:  # the common case, without a generator per record
        return None
    if not any(type(c) is dict and "name" in c for c in counters):
        return "no_counters"
    return None


def _floats(x: object) -> list[float]:
    """A JSON array of numbers; anything else (``"12345"`` would iterate as 1, 2, 3, 4, 5) is refused."""
    if not isinstance(x, list):
        raise TypeError("not an array")
    return [float(v) for v in x]


def _strings(x: object) -> list[str]:
    if x is None:
        return []
    if not isinstance(x, list):
        raise TypeError("not an array")
    return [str(v) for v in x]


def flat_2d(inner: list[str], subs: Iterable[tuple[str, list[float]]]) -> tuple[list[float], list[str]]:
    """A 2-D counter's values in one list, each labelled ``outer.inner`` (an inner label past
    the listed ones is its position)."""
    flat: list[float] = []
    labels: list[str] = []
    for outer, vals in subs:
        flat.extend(vals)
        labels.extend(f"{outer}.{inner[j] if j < len(inner) else j}" for j in range(len(vals)))
    return flat, labels


def is_number(text: str) -> bool:
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
    """
    recs = doc.get("records")
    if not isinstance(recs, list):
        raise CaptureError("expected a counter-table rows response with a 'records' list", where)
    block = RowBlock(table)
    names = decode_records(block, recs, where, first)
    rows = block.rows()
    for r, name in zip(rows, names, strict=True):
        r.table = name or table
    return rows


class KeptStrings:
    """One object per distinct id and property value of a table, kept from one poll to the next.

    A table's ids and names come back every poll. Decoded afresh, each poll's copies would outlive
    the poll (the block is kept for the next deltas, the view reads its names) while the page they
    came from is freed around them: survivors scattered over Python's arenas, which return to the
    system only when empty. Kept, a poll's strings are the last poll's objects (their hashes
    already computed) and the page's copies die with the page. The kept object is its own key, so
    no page's copy outlives its page, and only the strings of the latest poll are kept: the
    table's own size bounds it.
    """

    __slots__ = ("last", "now")

    def __init__(self) -> None:
        self.last: dict[str, str] = {}
        self.now: dict[str, str] = {}

    def new_poll(self) -> None:
        # ``last`` still holds strings when the previous read stopped part way (a reset, a bad
        # page): they are the last complete poll's, which the rows kept for the deltas hold
        self.last, self.now = (self.last | self.now if self.last else self.now), {}

    def done(self) -> None:
        """The table is read: what the last poll had and this one did not is dropped."""
        self.last = {}

    def one(self, s: str) -> str:
        """The string equal to ``s`` that is kept: the last poll's, else ``s`` itself."""
        now = self.now
        k = now.get(s)
        if k is None:
            k = self.last.pop(s, s)
            now[k] = k
        return k


def decode_records(
    block: RowBlock,
    recs: list[Any],
    where: str = "",
    first: int = 0,
    problems: Counter[str] | None = None,
    kept: KeptStrings | None = None,
) -> list[str]:
    """Append rows records to ``block``'s columns; each record's ``counter_table`` name ('' when absent).

    ``first`` is the position of ``recs[0]`` in the whole collection (pages appended one by one).
    With ``problems`` (the live poll), a record ``record_problem`` finds garbage is counted there by
    its problem and left out; without it (captures), every object record is a row. With ``kept``,
    ids and property values are the objects it keeps (:class:`KeptStrings`).
    Hot path: ``dict`` checks, not ``Mapping`` (an ABC check per element costs ~0.3 s a poll at
    scale), and a value appended to its counter's column, with no object per row.
    """
    instances, complete = block.instances, block.complete
    props_cols, counter_cols, label_cols = block.properties, block.counters, block.labels
    one = kept.one if kept is not None else None
    names: list[str] = []
    for n, r in enumerate(recs, start=first):
        if not isinstance(r, dict):
            raise CaptureError(f"records[{n}] is not an object", where)
        if problems is not None and (problem := record_problem(r)) is not None:
            problems[problem] += 1
            continue
        i = len(instances)
        names.append(str(ct.get("name") or "") if isinstance(ct := r.get("counter_table"), dict) else "")
        listed = r.get("properties")
        rid = r.get("id")
        name_prop = None
        for p in listed if type(listed) is list else ():
            if type(p) is dict and "name" in p:
                key, value = str(p["name"]), str(p.get("value", ""))
                if one is not None:
                    value = one(value)
                put(props_cols, key, i, value)
                if key == "name":
                    name_prop = value
        rid = str(rid or name_prop or n)
        if one is not None:
            rid = one(rid)
        instances.append(rid)
        agg = r.get("aggregation")
        complete.append(not (isinstance(agg, dict) and agg.get("complete") is False))
        for c in listed if isinstance(listed := r.get("counters"), list) else ():
            if type(c) is not dict or "name" not in c:
                continue
            name = c["name"]
            if type(name) is not str:
                name = str(name)
            v = c.get("value")
            try:
                # the common case first: one number (a bool is neither int nor float by type)
                if (type(v) is float or type(v) is int) and "values" not in c and "counters" not in c:
                    x = float(v)  # an int past a float's range: OverflowError, below
                    col = counter_cols.get(name)
                    if col is not None and len(col) == i:
                        col.append(x)
                    else:
                        put(counter_cols, name, i, x)
                elif "counters" in c:  # 2-D: one {"label", "values"} per outer label, inner labels shared
                    subs = c["counters"]
                    if subs is not None and not isinstance(subs, list):
                        raise TypeError("not an array")
                    flat, flat_labels = flat_2d(
                        _strings(c.get("labels")),
                        ((str(sub.get("label", "")), _floats(sub.get("values") or [])) for sub in subs or []),
                    )
                    put(counter_cols, name, i, flat)
                    put(label_cols, name, i, flat_labels)
                elif "values" in c:
                    put(counter_cols, name, i, _floats(c["values"]))
                    put(label_cols, name, i, _strings(c.get("labels")))
                elif "value" in c:
                    if isinstance(v, str) and not is_number(v):
                        if one is not None:
                            v = one(v)
                        put(props_cols, name, i, v)  # a string-typed counter (fcp link.speed): a label
                    elif type(v) in (int, float, str):
                        put(counter_cols, name, i, float(v))  # type: ignore[arg-type]
                    else:  # null, an object, an array: float() would take True as 1
                        raise TypeError("not a number")
            except (TypeError, ValueError, AttributeError, OverflowError):
                block.pad()
                raise CaptureError(f"records[{n}] counter {name!r}: not a number", where) from None
    block.pad()
    return names


def _decode(raw: bytes, p: Path, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CaptureError(
            f"not UTF-8 text (byte {e.start + 1} of the line: {raw[e.start : e.start + 1]!r})", p, line
        ) from None


def _loads(text: str, p: Path, line: int | None = None) -> Any:
    """``json.loads``, its failures a CaptureError at FILE[:LINE] (deep nesting included)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise CaptureError("not JSON this reader accepts: nested too deeply", p, line) from None
    except ValueError as e:
        where = line if line is not None else getattr(e, "lineno", None)
        raise CaptureError(f"not JSON: {e.args[0] if e.args else e}", p, where) from None


def iter_json_samples(path: str | Path, stream: BinaryIO | None = None) -> Iterator[Sample]:
    """One rows response per file, a JSON list of responses, or one response per line (NDJSON).

    ``stream`` is the input already opened (a pipe, or a file read once by ``sanlens analyze``).
    """
    p = Path(path)
    with contextlib.ExitStack() as stack:
        f = stream if stream is not None else stack.enter_context(open(p, "rb"))
        first = _decode(f.readline().removeprefix(b"\xef\xbb\xbf"), p, 1)
        try:
            doc = json.loads(first)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, Mapping):  # NDJSON: stream line by line
            yield Sample(None, rows_from_response(doc, f"{p}:1"))
            for n, raw in enumerate(f, start=2):
                line = _decode(raw, p, n)
                if not line.strip():
                    continue
                doc = _loads(line, p, n)
                if not isinstance(doc, Mapping):
                    raise CaptureError("expected a JSON object per line", p, n)
                yield Sample(None, rows_from_response(doc, f"{p}:{n}"))
            return
        text = [first]
        for n, raw in enumerate(f, start=2):
            text.append(_decode(raw, p, n))
        doc = _loads("".join(text), p)
    for i, d in enumerate(doc if isinstance(doc, list) else [doc]):
        if not isinstance(d, Mapping):
            raise CaptureError(f"{f'[{i}]' if doc is not d else 'the top level'} is not a JSON object", p)
        yield Sample(None, rows_from_response(d, str(p)))
