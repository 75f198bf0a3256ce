"""Counter rows: one instance as a :class:`CounterRow`, or one table's rows as columns (:class:`RowBlock`).

A poll of a cluster with 10,000 LUNs reads tens of thousands of rows. Held as one list per counter
(and per property) instead of one object and two dicts per row, decoding appends to a few lists,
the cooker subtracts whole columns, and /metrics walks a column per family. A :class:`RowRef` reads
one row where a consumer wants a row (the view's objects); offline parsers yield CounterRows, which
enter a block through :meth:`RowBlock.of_rows`."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Value = float | list[float]


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


class Row(Protocol):
    """What reading one row takes: a :class:`CounterRow`, or a :class:`RowRef` into a block."""

    @property
    def table(self) -> str: ...
    @property
    def instance(self) -> str: ...
    @property
    def properties(self) -> Mapping[str, str]: ...
    @property
    def counters(self) -> Mapping[str, Value]: ...


@dataclass(slots=True)
class RowBlock:
    """Rows of ``table``: position ``i`` in every list is one instance. None marks a value the row lacks."""

    table: str
    instances: list[str] = field(default_factory=list)
    properties: dict[str, list[str | None]] = field(default_factory=dict)
    # float, list[float] or None; a column of floats alone may be an array (``compacted``)
    counters: dict[str, MutableSequence[Any]] = field(default_factory=dict)
    labels: dict[str, list[list[str] | None]] = field(default_factory=dict)  # array counter -> per row
    complete: list[bool] = field(default_factory=list)
    sampled_at: list[float | None] | None = None  # when ONTAP sampled each row (statistics fields)

    def __len__(self) -> int:
        return len(self.instances)

    @classmethod
    def of_rows(cls, table: str, rows: Iterable[CounterRow]) -> RowBlock:
        """The columns of rows parsed one by one (captures, the statistics fields)."""
        b = cls(table)
        sampled: list[float | None] = []
        for i, r in enumerate(rows):
            b.instances.append(r.instance)
            b.complete.append(r.complete)
            sampled.append(r.sampled_at)
            for k, v in r.properties.items():
                put(b.properties, k, i, v)
            for k, x in r.counters.items():
                put(b.counters, k, i, x)
            for k, lab in r.labels.items():
                put(b.labels, k, i, lab)
        b.pad()
        if any(s is not None for s in sampled):
            b.sampled_at = sampled
        return b

    def pad(self) -> None:
        """Lengthen columns that stop before the last row (their later rows lack the value)."""
        n = len(self.instances)
        for cols in (self.properties, self.counters, self.labels):
            for col in cols.values():
                if len(col) < n:
                    col.extend([None] * (n - len(col)))

    def compacted(self) -> RowBlock:
        """The same rows, each counter column that holds a float in every row as one ``array('d')``.

        What a poll keeps for the next one's deltas: at 10,000 LUNs about 300,000 floats, each an
        object of its own in a list (32 bytes) where an array holds 8, and none of them left behind
        in the allocator's pools when the next poll replaces them. A column with a gap (None) or an
        array counter stays a list."""
        cols: dict[str, MutableSequence[Any]] = {}
        for k, col in self.counters.items():
            try:
                cols[k] = col if type(col) is array else array("d", col)
            except (TypeError, OverflowError):
                cols[k] = col
        return RowBlock(
            self.table, self.instances, self.properties, cols, self.labels, self.complete, self.sampled_at
        )

    def take(self, at: list[int]) -> RowBlock:
        """The rows at positions ``at``, in that order."""
        return RowBlock(
            self.table,
            [self.instances[i] for i in at],
            {k: [c[i] for i in at] for k, c in self.properties.items()},
            {k: [c[i] for i in at] for k, c in self.counters.items()},
            {k: [c[i] for i in at] for k, c in self.labels.items()},
            [self.complete[i] for i in at],
            None if self.sampled_at is None else [self.sampled_at[i] for i in at],
        )

    def joined(self, other: RowBlock) -> RowBlock:
        """The rows of this block, then those of ``other`` (of the same table)."""
        n, m = len(self), len(other)

        def cat(a: Mapping[str, Iterable[Any]], b: Mapping[str, Iterable[Any]]) -> dict[str, Any]:
            return {
                k: [*(a.get(k) or [None] * n), *(b.get(k) or [None] * m)] for k in dict.fromkeys([*a, *b])
            }

        sampled = None
        if self.sampled_at is not None or other.sampled_at is not None:
            sampled = (self.sampled_at or [None] * n) + (other.sampled_at or [None] * m)
        return RowBlock(
            self.table,
            self.instances + other.instances,
            cat(self.properties, other.properties),
            cat(self.counters, other.counters),
            cat(self.labels, other.labels),
            self.complete + other.complete,
            sampled,
        )

    def labels_of(self, name: str, i: int, n: int) -> list[str]:
        """Row ``i``'s labels of array counter ``name`` for its ``n`` values; a value past the listed
        labels is named by its position."""
        col = self.labels.get(name)
        listed = (col[i] if col is not None else None) or []
        return listed[:n] + [str(j) for j in range(len(listed), n)]

    def index(self) -> dict[str, int]:
        """Each instance's position."""
        return {inst: i for i, inst in enumerate(self.instances)}

    def refs(self) -> Iterator[RowRef]:
        return (RowRef(self, i) for i in range(len(self.instances)))

    def rows(self) -> list[CounterRow]:
        """Each row as a :class:`CounterRow` (captures, whose parsers and tests take rows)."""
        out = []
        for i, inst in enumerate(self.instances):
            r = CounterRow(
                self.table,
                inst,
                {k: p for k, c in self.properties.items() if (p := c[i]) is not None},
                {k: x for k, c in self.counters.items() if (x := c[i]) is not None},
                {k: lab for k, c in self.labels.items() if (lab := c[i]) is not None},
                self.complete[i],
            )
            if self.sampled_at is not None:
                r.sampled_at = self.sampled_at[i]
            out.append(r)
        return out


def put(cols: MutableMapping[str, Any], key: str, i: int, v: Any) -> None:
    """Row ``i``'s value in column ``key``: a later one of the same name wins, as in a dict."""
    col = cols.get(key)
    if col is None:
        col = cols[key] = [None] * i
    else:
        have = len(col)
        if have > i:
            col[i] = v
            return
        if have < i:
            col.extend([None] * (i - have))
    col.append(v)


class _Cell(Mapping[str, Any]):
    """One row of a block's columns, read as a mapping of what the row holds."""

    __slots__ = ("_cols", "_i")

    def __init__(self, cols: Mapping[str, Sequence[Any]], i: int) -> None:
        self._cols, self._i = cols, i

    def __getitem__(self, key: str) -> Any:
        col = self._cols.get(key)
        v = None if col is None else col[self._i]
        if v is None:
            raise KeyError(key)
        return v

    def get(self, key: str, default: Any = None) -> Any:
        col = self._cols.get(key)
        v = None if col is None else col[self._i]
        return default if v is None else v

    def __contains__(self, key: object) -> bool:
        col = self._cols.get(key) if isinstance(key, str) else None
        return col is not None and col[self._i] is not None

    def __iter__(self) -> Iterator[str]:
        return (k for k, c in self._cols.items() if c[self._i] is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class RowRef:
    """Row ``i`` of a block, read as a CounterRow is: for consumers that build one object per row."""

    __slots__ = ("block", "i")

    def __init__(self, block: RowBlock, i: int) -> None:
        self.block, self.i = block, i

    @property
    def table(self) -> str:
        return self.block.table

    @property
    def instance(self) -> str:
        return self.block.instances[self.i]

    @property
    def properties(self) -> Mapping[str, str]:
        return _Cell(self.block.properties, self.i)

    @property
    def counters(self) -> Mapping[str, Value]:
        return _Cell(self.block.counters, self.i)

    @property
    def labels(self) -> Mapping[str, list[str]]:
        return _Cell(self.block.labels, self.i)

    @property
    def complete(self) -> bool:
        return self.block.complete[self.i]
