"""Counter cooking on hand-built REST rows: 2-D arrays paired by position, averages over a 1-D
array against a scalar base, and rows the cooker must refuse."""

from __future__ import annotations

from typing import Any

import pytest

from sanlens.ontap.cooking import CaptureError, CounterSpec, cook_row
from sanlens.ontap.counter_json import rows_from_response

SCHEMAS = {
    "lun": {
        # 2-D: rows = op kind, columns = size bucket (ONTAP's nested "counters" shape)
        "read_size_by_op": CounterSpec("delta", "", "none"),
        "ops_by_kind": CounterSpec("rate", "", "per_sec"),
        "latency_by_kind": CounterSpec("average", "total_ops", "microsec"),
        "total_ops": CounterSpec("rate", "", "per_sec"),
    }
}


def rec(two_d: list[tuple[str, list[int]]], by_kind: list[int], lat: list[int], total: int) -> dict[str, Any]:
    return {
        "counter_table": {"name": "lun"},
        "id": "svm1:/vol/db/lun0",
        "properties": [{"name": "name", "value": "/vol/db/lun0"}],
        "counters": [
            {
                "name": "read_size_by_op",
                "labels": ["<4KB", "=4KB", ">4KB"],
                "counters": [{"label": lbl, "values": vals} for lbl, vals in two_d],
            },
            {"name": "ops_by_kind", "values": by_kind, "labels": ["read", "write"]},
            {"name": "latency_by_kind", "values": lat, "labels": ["read", "write"]},
            {"name": "total_ops", "value": total},
        ],
    }


def test_two_d_counters_flatten_with_outer_and_inner_labels_paired_by_position() -> None:
    (a,) = rows_from_response(
        {"records": [rec([("read", [1, 2, 3]), ("write", [10, 20, 30])], [0, 0], [0, 0], 0)]}
    )
    assert a.labels["read_size_by_op"] == [
        "read.<4KB",
        "read.=4KB",
        "read.>4KB",
        "write.<4KB",
        "write.=4KB",
        "write.>4KB",
    ]
    assert a.counters["read_size_by_op"] == [1.0, 2.0, 3.0, 10.0, 20.0, 30.0]


def test_two_d_delta_rate_and_array_average_cook_to_hand_values() -> None:
    prev = rows_from_response(
        {"records": [rec([("read", [1, 2, 3]), ("write", [10, 20, 30])], [100, 50], [0, 0], 150)]}
    )
    cur = rows_from_response(
        {
            "records": [
                rec([("read", [5, 2, 9]), ("write", [10, 26, 30])], [700, 350], [1_200_000, 3_000], 1050)
            ]
        }
    )
    got = {(c.counter, c.label): c.value for c in cook_row(prev[0], cur[0], 30.0, SCHEMAS)}
    # delta: plain differences, labelled outer.inner
    assert got[("read_size_by_op", "read.<4KB")] == 4.0
    assert got[("read_size_by_op", "read.>4KB")] == 6.0
    assert got[("read_size_by_op", "write.=4KB")] == 6.0
    assert got[("read_size_by_op", "read.=4KB")] == 0.0
    # rate: (700 - 100) / 30 s and (350 - 50) / 30 s
    assert got[("ops_by_kind", "read")] == pytest.approx(20.0)
    assert got[("ops_by_kind", "write")] == pytest.approx(10.0)
    # average over the scalar base: 1.2e6 us / (1050 - 150) ops = 1333.3 us = 1.3333 ms per op
    assert got[("latency_by_kind", "read")] == pytest.approx(1_200_000 / 900 * 1e-6)
    assert got[("latency_by_kind", "write")] == pytest.approx(3_000 / 900 * 1e-6)


def test_two_d_shape_change_skips_that_counter_only() -> None:
    prev = rows_from_response({"records": [rec([("read", [1, 2, 3])], [100, 50], [0, 0], 150)]})
    cur = rows_from_response(
        {"records": [rec([("read", [1, 2, 3]), ("write", [1, 1, 1])], [400, 50], [0, 0], 450)]}
    )
    got = {(c.counter, c.label) for c in cook_row(prev[0], cur[0], 30.0, SCHEMAS)}
    assert not any(name == "read_size_by_op" for name, _ in got)
    assert ("ops_by_kind", "read") in got


def test_negative_delta_in_a_two_d_cell_drops_the_row() -> None:
    prev = rows_from_response({"records": [rec([("read", [5, 2, 3])], [100, 50], [0, 0], 150)]})
    cur = rows_from_response({"records": [rec([("read", [4, 2, 3])], [400, 50], [0, 0], 450)]})
    assert cook_row(prev[0], cur[0], 30.0, SCHEMAS) == []


def test_non_numeric_two_d_value_is_a_capture_error() -> None:
    bad = rec([("read", [1, 2, 3])], [0, 0], [0, 0], 0)
    bad["counters"][0]["counters"][0]["values"] = ["x", 2, 3]
    with pytest.raises(CaptureError, match="read_size_by_op"):
        rows_from_response({"records": [bad]})


def test_a_counter_that_restarted_above_its_last_value_drops_the_row() -> None:
    """A LUN doing 67 million ops/s or 555 GB/s is a counter restart, not a workload."""
    from sanlens.ontap.cooking import CounterRow

    def lun(read_ops: float, read_data: float) -> CounterRow:
        return CounterRow("lun", "/vol/v/l:1", {}, {"read_ops": read_ops, "read_data": read_data})

    assert {c.counter for c in cook_row(lun(1e6, 8e9), lun(1e6 + 6000, 8e9 + 4.9e7), 60.0)} == {
        "read_ops",
        "read_data",
    }
    assert cook_row(lun(1e6, 8e9), lun(1e6 + 4e9, 8e9 + 4.9e7), 60.0) == []  # 67M ops/s
    assert cook_row(lun(1e6, 8e9), lun(1e6 + 6000, 8e9 + 3.3e13), 60.0) == []  # 555 GB/s
