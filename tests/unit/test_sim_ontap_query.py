"""ONTAP's query syntax as the simulator applies it to records (``<field>=<expr>`` parameters)."""

from __future__ import annotations

from typing import Any

import pytest

from sanlens_sim.ontap_query import filters, flag, match_all, matches, values_at

REC: dict[str, Any] = {
    "name": "vol1",
    "size": 1000,
    "is_constituent": False,
    "style": "flexvol",
    "statistics": {"timestamp": "2026-01-01T00:00:00Z"},
    "aggregates": [{"name": "aggr1"}, {"name": "aggr2"}],
    "tier_name": "Performance Tier",
}


@pytest.mark.parametrize(
    ("field", "expr", "hit"),
    [
        ("name", "vol1", True),
        ("name", "VOL1", True),  # string matches ignore case
        ("name", "vol2", False),
        ("name", "vol*", True),
        ("name", "*2", False),
        ("name", "!vol1", False),
        ("name", "!vol2", True),
        ("name", "vol2|vol1", True),
        ("style", "!flexgroup", True),
        ("is_constituent", "false", True),
        ("is_constituent", "true", False),
        ("is_constituent", "*", True),
        ("size", "1000", True),
        ("size", "1e3", True),  # numbers compare as numbers
        ("size", ">999", True),
        ("size", "<=999", False),
        ("size", "500..1000", True),
        ("size", "1001..2000", False),
        ("statistics.timestamp", '!"-"', True),
        ("statistics.timestamp", '"-"', False),
        ("aggregates.name", "aggr2", True),  # any element of an array
        ("aggregates.name", "aggr3", False),
        ("tier_name", '!" "|""', True),
        ("tier_name", '" "', False),
        ("protection_mode", "!data|full", False),  # a record without the field matches nothing
    ],
)
def test_matches(field: str, expr: str, hit: bool) -> None:
    assert matches(REC, field, expr) is hit


def test_filters_leave_out_the_request_parameters() -> None:
    q = {
        "fields": "a,b",
        "max_records": "5",
        "return_records": "true",
        "return_timeout": "15",
        "ignore_unknown_fields": "true",
        "privilege_level": "diagnostic",
        "start.uuid": "x",
        "style": "!flexgroup",
        "is_constituent": "*",
    }
    assert filters(q) == {"style": "!flexgroup", "is_constituent": "*"}
    assert match_all(REC, filters(q))
    assert not match_all(REC, {"style": "!flexgroup", "name": "other"})


def test_flags_and_values() -> None:
    assert flag({"return_records": "false"}, "return_records", True) is False
    assert flag({}, "return_records", True) is True
    assert flag({"ignore_unknown_fields": "TRUE"}, "ignore_unknown_fields", False) is True
    assert values_at(REC, "aggregates.name") == ["aggr1", "aggr2"]
    assert values_at(REC, "statistics") == []  # an object is no scalar value
