"""Parser for ONTAP's ``statistics show -raw`` text, streamed in bounded memory into counter rows.

``statistics show -raw`` prints one block per instance (``Object:``,
``Instance:``, ``Start-time:``, ``End-time:``, ``Scope:``, ``Number of
Constituents:``) followed by a two-column ``Counter``/``Value`` table whose
widths the dashed ruler gives. Counter names never contain spaces; a long one
wraps onto the next line at column 4 with nothing in the value column. Long
values wrap onto lines whose counter column is blank. Array counters print
``-`` and then one line per element: its label right-aligned in the counter
column (a label too long for it starts at column 4 and runs into the value
column; it may contain spaces) and its value as the last token.

How the text maps onto rows:

- ``Number of Constituents: 2 (partial_aggregation)`` keeps the row with
  ``complete = False`` (the cooking policy decides) and stores
  ``properties["constituents"] = "2"`` and ``properties["aggregation"]``.
- ``properties["scope"]`` is the ``Scope:``. A node-scoped instance (its
  ``instance_uuid`` is ``<scope>:...``, its ``node_name`` is the scope, or its
  name is the object's, as for ``wafl``) is printed once per node under the
  same name, so its ``row.instance`` becomes ``<scope>`` when the name is the
  object's and ``<scope>:<name>`` otherwise, with ``properties["node"]`` the
  scope. Other instances keep their name; if two still share it within one
  sample, each is prefixed with its scope, or its ``instance_uuid`` when the
  scopes agree. These names depend only on each block, so they stay stable
  from sample to sample even when a node is missing from one.
- A sample ends at ONTAP's ``N entries were displayed.`` trailer, or when a
  block repeats an instance (same object, name, scope and uuid). N counts
  counter entries (an array is one); fewer read than N means lines were lost
  and is an error, more read is a note. A capture that ends after instance
  blocks without the trailer is cut short and is an error, unless it holds a
  single entry (ONTAP prints no trailer then).
- ``Warning:``/``Info:``/``Notice:`` messages and their indented continuation
  lines, login banners and CLI prompts are skipped. ``Error:`` messages are
  skipped too, unless the capture holds nothing else: then the error is the
  ``CaptureError``. Every skipped thing becomes one ``notes`` string,
  ``FILE:LINE: why``, when the caller passes a list.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from sanlens.ontap.cli_capture import lines, number, parse_cli_time
from sanlens.ontap.cooking import CaptureError, CounterRow, Sample

_HEADER = re.compile(r"^(Object|Instance|Start-time|End-time|Scope|Number of Constituents):\s*(.*)$")
_TRAILER = re.compile(r"^\s*(\d+) (?:entries were|entry was) displayed\.?\s*$")
_RULER = re.compile(r"^\s*(-{3,})\s+(-{3,})\s*$")
_NOTICE = re.compile(r"^(Warning|Error|Info|Notice): ")
_SESSION = re.compile(  # login banners, prompts, confirmations and the pager: session text, not output
    r"^(?:Last login time:|This is your first recorded login\.|Your privilege has changed since last login\."
    r"|There are no entries matching your query\.|Do you want to continue\? \{y\|n\}:"
    r"|Press <space> to page down|[\w.-]+::[\w*]*>(?:\s|$))"
)
_CONSTITUENTS = re.compile(r"^(\d+)\s*(?:\((\S+)\))?")


def _node_scoped(table: str, name: str, props: dict[str, str]) -> bool:
    scope = props.get("scope", "")
    if not scope:
        return False
    return (
        name == table
        or props.get("instance_uuid", "").startswith(f"{scope}:")
        or props.get("node_name") == scope
    )


class _Block:
    """One instance block while its lines are read."""

    __slots__ = ("array", "arrays", "end", "last", "name", "prev", "row", "start")

    def __init__(self, table: str, name: str) -> None:
        self.row = CounterRow(table, name)
        self.name = name
        self.start: float | None = None
        self.end: float | None = None
        self.last: str | None = None  # string counter whose value a wrapped line continues
        self.array: str | None = None  # array counter whose elements follow
        self.prev: str | None = None  # counter whose name a wrapped line may continue
        self.arrays: dict[str, int] = {}  # array counter -> its line, to report one printed empty


class _StatisticsReader:
    """The state of one ``statistics show -raw`` file; ``feed`` it lines, ``take`` finished samples."""

    def __init__(self, path: Path, notes: list[str] | None) -> None:
        self.p = path
        self.notes = notes
        self.ready: list[Sample] = []
        self.rows: list[CounterRow] = []
        self.seen: set[tuple[str, str, str, str]] = set()
        self.stamp: float | None = None
        self.table = ""
        self.block: _Block | None = None
        self.name_col, self.value_col = 4, 37
        self.entries = 0  # counter entries since the last trailer
        self.open_blocks = 0  # instance blocks since the last trailer
        self.any_block = False
        self.error: tuple[int, str] | None = None  # the first ONTAP ``Error:`` message
        self.notice: tuple[int, str, list[str], int] | None = None  # line, kind, text, continuation indent
        self.n = 0  # the last line that was not blank

    def take(self) -> list[Sample]:
        out, self.ready = self.ready, []
        return out

    def note(self, n: int, text: str) -> None:
        if self.notes is not None:
            self.notes.append(f"{self.p}:{n}: {text}")

    def fail(self, n: int, text: str) -> CaptureError:
        return CaptureError(text, self.p, n)

    def feed(self, n: int, raw: str) -> None:
        line = raw.rstrip()
        if line:
            self.n = n
        if self.notice is not None:
            indent = self.notice[3]
            if line.startswith(" " * indent) and line[indent : indent + 1].strip():
                self.notice[2].append(line.strip())
                return
            self.close_notice()
        if not line:
            return
        m = _NOTICE.match(line)
        if m:
            self.notice = (n, m[1], [line[m.end() :].strip()], m.end())
            return
        if _SESSION.match(line):
            self.note(n, f"skipped session text: {line.strip()[:80]!r}")
            return
        t = _TRAILER.match(line)
        if t:
            self.trailer(n, int(t[1]))
            return
        h = _HEADER.match(line)
        if h:
            self.header(n, h[1], h[2].strip())
            return
        if self.block is None:
            raise self.fail(n, f"unexpected text outside an instance block: {line.strip()[:60]!r}")
        ruler = _RULER.match(line)
        if ruler:
            self.name_col, self.value_col = ruler.start(1), ruler.start(2)
            return
        if line.split() == ["Counter", "Value"]:
            return
        self.counter_line(n, line)

    def close_notice(self) -> None:
        if self.notice is None:
            return
        n, kind, parts, _ = self.notice
        self.notice = None
        text = " ".join(parts)
        if kind == "Error" and self.error is None:
            self.error = (n, text)
        self.note(n, f"skipped ONTAP {kind.lower()}: {text}")

    def header(self, n: int, key: str, val: str) -> None:
        if key == "Object":
            self.close_block()
            self.table = val
            return
        if key == "Instance":
            if not self.table:
                raise self.fail(n, "'Instance:' before any 'Object:'")
            self.close_block()
            self.block = _Block(self.table, val)
            return
        b = self.block
        if b is None:
            raise self.fail(n, f"{key!r} outside an instance block")
        props = b.row.properties
        if key in ("Start-time", "End-time"):
            t = parse_cli_time(val)
            if t is None and val:
                self.note(n, f"{key} {val!r} is not a time ONTAP prints; the block gives the sample no time")
            if key == "Start-time":
                b.start = t
            else:
                b.end = t
        elif key == "Scope":
            props["scope"] = val
        else:
            m = _CONSTITUENTS.match(val)
            props["constituents"] = m[1] if m else val
            if m and m[2]:
                props["aggregation"] = m[2]
            b.row.complete = "partial" not in val.lower()

    def counter_line(self, n: int, line: str) -> None:
        b = self.block
        assert b is not None
        row = b.row
        indent = len(line) - len(line.lstrip(" "))
        tokens = line.split()
        if indent == self.name_col:
            if b.array and len(tokens) >= 3:  # a long array label, spaces and all, run into the value column
                self.element(n, line, tokens)
                return
            if len(tokens) == 1 and b.prev is not None:  # the wrapped rest of a counter name
                self.rename(b, b.prev + tokens[0])
                return
            name = tokens[0]
            text = line[indent + len(name) :].strip()
            if not text:
                raise self.fail(n, f"counter {name!r} has no value")
            self.entries += 1
            if name in row.counters or name in row.properties:
                self.note(n, f"{row.table} {b.name!r}: counter {name} printed twice; the later value is kept")
                row.counters.pop(name, None)
                row.properties.pop(name, None)
            b.array = b.last = None
            b.prev = name
            if text == "-":
                b.array = name
                b.arrays[name] = n
                row.counters[name] = []
                row.labels[name] = []
                return
            v = number(text)
            if v is None:
                row.properties[name] = text
                b.last = name
            else:
                row.counters[name] = v
            return
        if indent > self.name_col:
            if not line[: self.value_col].strip():  # nothing in the counter column: a wrapped value
                if b.last is None:
                    raise self.fail(
                        n, f"a wrapped value with no string value before it: {line.strip()[:60]!r}"
                    )
                row.properties[b.last] += line.strip()
                return
            if b.array and len(tokens) >= 2:
                self.element(n, line, tokens)
                return
        raise self.fail(n, f"cannot place this line: {line.strip()[:60]!r}")

    def element(self, n: int, line: str, tokens: list[str]) -> None:
        b = self.block
        assert b is not None and b.array is not None
        label = line.rsplit(None, 1)[0].strip()
        v = number(tokens[-1])
        if v is None:
            raise self.fail(n, f"array {b.array}: element {label!r} is not a number: {tokens[-1]!r}")
        arr = b.row.counters[b.array]
        assert isinstance(arr, list)
        arr.append(v)
        b.row.labels[b.array].append(label)
        b.prev = b.last = None

    @staticmethod
    def rename(b: _Block, new: str) -> None:
        old = b.prev
        assert old is not None
        row = b.row
        for d in (row.counters, row.properties, row.labels):
            if old in d:
                d[new] = d.pop(old)  # type: ignore[assignment]
        if b.array == old:
            b.array = new
            b.arrays[new] = b.arrays.pop(old)
        if b.last == old:
            b.last = new
        b.prev = new

    def close_block(self) -> None:
        b = self.block
        if b is None:
            return
        self.block = None
        row = b.row
        for name, line in b.arrays.items():
            if row.counters.get(name) == []:
                del row.counters[name], row.labels[name]
                self.note(line, f"{row.table} {b.name!r}: array {name} printed no elements; left out")
        props = row.properties
        name = b.name or props.get("instance_name", "")
        scope = props.get("scope", "")
        row.instance = name
        if _node_scoped(row.table, name, props):
            props["node"] = scope
            row.instance = scope if name == row.table else f"{scope}:{name}"
        key = (row.table, name, scope, props.get("instance_uuid", ""))
        if key in self.seen:  # the same instance again: a new sample begins
            self.close_sample()
        self.seen.add(key)
        self.rows.append(row)
        self.open_blocks += 1
        self.any_block = True
        t = b.end or b.start
        if t is not None and (self.stamp is None or t > self.stamp):
            self.stamp = t

    def close_sample(self) -> None:
        self.close_block()
        if not self.rows:
            return
        by_name: dict[tuple[str, str], list[CounterRow]] = {}
        for r in self.rows:
            by_name.setdefault((r.table, r.instance), []).append(r)
        for twins in by_name.values():
            if len(twins) < 2:
                continue
            field = "scope" if len({r.properties.get("scope", "") for r in twins}) > 1 else "instance_uuid"
            for r in twins:
                r.instance = f"{r.properties.get(field, '')}:{r.instance}"
        self.ready.append(Sample(self.stamp, self.rows))
        self.rows, self.seen, self.stamp = [], set(), None

    def trailer(self, n: int, shown: int) -> None:
        self.close_block()
        if shown > self.entries:
            read = self.entries
            raise self.fail(
                n, f"{shown} entries were displayed but {read} counter entries were read: lines are missing"
            )
        if shown < self.entries:
            self.note(
                n,
                f"{shown} entries were displayed but {self.entries} counter entries were read; "
                "the trailer is not trusted",
            )
        self.entries = self.open_blocks = 0
        self.close_sample()

    def finish(self) -> None:
        self.close_notice()
        self.close_block()
        if self.error is not None and not self.any_block:
            raise self.fail(self.error[0], f"the capture holds an ONTAP error: {self.error[1][:160]}")
        if self.open_blocks and self.entries != 1:
            after = f" (after ONTAP's error at line {self.error[0]})" if self.error else ""
            raise self.fail(
                self.n,
                f"the capture ends without ONTAP's 'N entries were displayed.' line: it is cut short{after}",
            )
        self.close_sample()


def iter_statistics_samples(
    path: str | Path, notes: list[str] | None = None, stream: BinaryIO | None = None
) -> Iterator[Sample]:
    """Yield one Sample per capture held in a ``statistics show -raw`` text file.

    ``notes``, when given, receives one ``FILE:LINE: why`` string per thing
    skipped (ONTAP warnings, banners, prompts, empty arrays, a trailer that
    undercounts), as the file is read. ``stream``: the file's bytes, already open
    (a pipe included); ``path`` then only names it in messages.
    """
    p = Path(path)
    reader = _StatisticsReader(p, notes)
    for n, line in lines(p, stream):
        reader.feed(n, line)
        yield from reader.take()
    reader.finish()
    yield from reader.take()
