"""ONTAP's query syntax for filtering records: ``<field>=<expr>`` query parameters.

An expression is one or more alternatives separated by ``|``; an alternative matches when any
value of the field does (``!`` before it inverts that). A term is a literal (case-insensitive;
numbers compare as numbers), a pattern with ``*`` wildcards, a comparison ``<n``, ``>n``, ``<=n``,
``>=n``, a range ``lo..hi`` or a double-quoted literal (``"-"``, ``" "``, ``""``). A record without
the field matches no filter on it, as ONTAP leaves out records a field does not apply to.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# Query parameters that steer the request rather than filter records.
RESERVED = frozenset(
    {
        "fields",
        "max_records",
        "return_records",
        "return_timeout",
        "ignore_unknown_fields",
        "order_by",
        "privilege_level",
        "query",
        "query_fields",
        "counters.name",
    }
)


def filters(query: Mapping[str, str]) -> dict[str, str]:
    """The record filters of a request: every parameter that is neither reserved nor ``start.*``."""
    return {k: v for k, v in query.items() if k not in RESERVED and not k.startswith("start.")}


def flag(query: Mapping[str, str], name: str, default: bool) -> bool:
    raw = query.get(name)
    return default if raw is None else raw.strip().lower() == "true"


def values_at(rec: Any, path: str) -> list[Any]:
    """Every scalar at a dotted ``path`` of a record, through nested objects and arrays."""
    out: list[Any] = []
    _collect(rec, path.split("."), out)
    return out


def _collect(v: Any, path: list[str], out: list[Any]) -> None:
    if isinstance(v, list):
        for x in v:
            _collect(x, path, out)
    elif not path:
        if not isinstance(v, dict):
            out.append(v)
    elif isinstance(v, dict) and path[0] in v:
        _collect(v[path[0]], path[1:], out)


def matches(rec: Any, field: str, expr: str) -> bool:
    vals = values_at(rec, field)
    if not vals:
        return False
    for alt in _split(expr):
        negate = alt.startswith("!")
        term = alt[1:] if negate else alt
        hit = any(_term(term, v) for v in vals)
        if hit != negate:
            return True
    return False


def match_all(rec: Any, wanted: Mapping[str, str]) -> bool:
    return all(matches(rec, f, e) for f, e in wanted.items())


def _split(expr: str) -> Iterator[str]:
    """Alternatives separated by ``|`` outside double quotes."""
    cur: list[str] = []
    quoted = False
    for ch in expr:
        if ch == '"':
            quoted = not quoted
        if ch == "|" and not quoted:
            yield "".join(cur)
            cur = []
        else:
            cur.append(ch)
    yield "".join(cur)


def text(v: Any) -> str:
    """A value as ONTAP's query compares it (booleans ``true``/``false``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _number(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _term(term: str, v: Any) -> bool:
    s = text(v)
    if len(term) >= 2 and term[0] == term[-1] == '"':
        return s == term[1:-1]
    for op in ("<=", ">=", "<", ">"):
        if term.startswith(op):
            return _compare(op, s, term[len(op) :])
    if ".." in term:
        lo, _, hi = term.partition("..")
        return _compare(">=", s, lo) and _compare("<=", s, hi)
    if "*" in term:
        pattern = ".*".join(re.escape(p) for p in term.split("*"))
        return re.fullmatch(pattern, s, re.IGNORECASE) is not None
    a, b = _number(s), _number(term)
    if a is not None and b is not None:
        return a == b
    return s.lower() == term.lower()


def _compare(op: str, s: str, bound: str) -> bool:
    a, b = _number(s), _number(bound)
    left: Any = a if a is not None and b is not None else s.lower()
    right: Any = b if a is not None and b is not None else bound.lower()
    if op == "<=":
        return bool(left <= right)
    if op == ">=":
        return bool(left >= right)
    if op == "<":
        return bool(left < right)
    return bool(left > right)
