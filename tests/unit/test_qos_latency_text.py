"""ONTAP QoS latency breakdown text: real captures parse, add up, and garbage is refused by line."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sanlens.ontap.cooking import CaptureError
from sanlens.ontap.qos_latency_text import (
    OTHER,
    QosLatencyRow,
    iter_qos_latency_rows,
    iter_qos_latency_samples,
    parse_latency,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "ontap" / "qos"
SAMPLES = sorted(p.name for p in DATA.glob("*.txt"))


def rows_of(name: str) -> list[QosLatencyRow]:
    return list(iter_qos_latency_rows(DATA / name))


def rows_from(text: str, name: str = "capture.txt") -> list[QosLatencyRow]:
    return list(iter_qos_latency_rows(name, stream=io.BytesIO(text.encode())))


# The test's own reading of a cell, kept apart from the parser's: seconds and half a last digit.
_SCALE = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def cell_seconds(cell: str) -> tuple[float, float]:
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?(us|ms|s)", cell)
    assert m, cell
    digits = len(m[2] or "")
    value = float(cell[: -len(m[3])]) * _SCALE[m[3]]
    return value, (0.0 if value == 0 else 0.5 * 10**-digits * _SCALE[m[3]])


def printed_rows(name: str) -> dict[str, tuple[tuple[float, float], list[tuple[float, float]]]]:
    """Each data row of a sample file as (Latency cell, component cells), read by column position."""
    text = (DATA / name).read_text().splitlines()
    ruler = next(i for i, line in enumerate(text) if line.startswith("---"))
    header = text[ruler - 1].split()
    first = 3 if header[1] == "ID" else 2  # name, [ID], Latency, components...
    out = {}
    for line in text[ruler + 1 :]:
        cells = line.split()
        out[cells[0]] = (cell_seconds(cells[first - 1]), [cell_seconds(c) for c in cells[first:]])
    return out


def test_every_sample_file_is_covered() -> None:
    assert SAMPLES == [
        "policy-group-latency-at-limit.txt",
        "policy-group-latency-before-limit.txt",
        "volume-latency-qos-min-aqos.txt",
        "volume-latency-vsim-avscan.txt",
        "workload-latency-qos-max-total.txt",
    ]


@pytest.mark.parametrize(
    ("name", "workloads", "ids"),
    [
        ("volume-latency-vsim-avscan.txt", ["-total-", "test2-wid34121"], [None, "34121"]),
        ("policy-group-latency-before-limit.txt", ["-total-", "User-Best-Effort", "svm1-sql"], [None] * 3),
        ("policy-group-latency-at-limit.txt", ["-total-", "svm1-sql", "User-Best-Effort"], [None] * 3),
        ("volume-latency-qos-min-aqos.txt", ["vol1-wid21368", "vol2-wid19287"], ["21368", "19287"]),
        ("workload-latency-qos-max-total.txt", ["-total-"], [None]),
    ],
)
def test_real_sample_parses(name: str, workloads: list[str], ids: list[str | None]) -> None:
    notes: list[str] = []
    rows = list(iter_qos_latency_rows(DATA / name, notes))
    assert [r.workload for r in rows] == workloads
    assert [r.workload_id for r in rows] == ids
    assert {r.iteration for r in rows} == {0}
    assert all(r.timestamp is None for r in rows)
    assert notes and all(":1: skipped session text" in n or ":2: skipped session text" in n for n in notes)


@pytest.mark.parametrize("name", SAMPLES)
def test_components_add_up_to_latency(name: str) -> None:
    """With ``other`` included the components are the Latency column exactly; without it they
    agree with the printed cells within the rounding of each cell, by the test's own arithmetic."""
    printed = printed_rows(name)
    for r in rows_of(name):
        (lat, lat_slack), comps = printed[r.workload]
        assert r.latency == pytest.approx(lat, abs=1e-12)
        printed_sum = sum(v for v, _ in comps)
        slack = lat_slack + sum(s for _, s in comps)
        parsed_sum = sum(r.components.values())
        if OTHER in r.components:
            assert abs(lat - printed_sum) > slack
            assert r.components[OTHER] == pytest.approx(lat - printed_sum, abs=1e-12)
            assert parsed_sum == pytest.approx(lat, abs=1e-12)
        else:
            assert abs(lat - printed_sum) <= slack + 1e-12
            assert parsed_sum == pytest.approx(printed_sum, abs=1e-12)


def test_components_that_add_up_have_no_residual() -> None:
    # 284us + 106us + 4us = 394us; 108 + 147 + 220 = 475us; 113us + 172us + 342us + 3.64ms = 4.267ms ~ 4.27ms
    assert OTHER not in rows_of("volume-latency-vsim-avscan.txt")[1].components
    assert all(OTHER not in r.components for r in rows_of("policy-group-latency-before-limit.txt"))
    assert all(OTHER not in r.components for r in rows_of("policy-group-latency-at-limit.txt"))


def test_components_that_do_not_add_up_keep_the_residual_as_other() -> None:
    vol1, vol2 = rows_of("volume-latency-qos-min-aqos.txt")
    # 879.73ms - (283 + 9 + 498 + 184 + 216)us - 877.99ms = 0.55ms not in any column
    assert vol1.components[OTHER] == pytest.approx(0.55e-3, abs=1e-9)
    # 736.25ms - (401 + 8 + 734 + 166 + 199)us - 734.91ms = -0.168ms: the columns exceed Latency
    assert vol2.components[OTHER] == pytest.approx(-0.168e-3, abs=1e-9)
    (total,) = rows_of("workload-latency-qos-max-total.txt")
    # 48.38ms - 3.04ms - 48us - 717us - 125us - 17.09ms - 2us = 27.358ms
    assert total.components[OTHER] == pytest.approx(27.358e-3, abs=1e-9)


def _dominant(r: QosLatencyRow) -> str:
    return max((k for k in r.components if k != OTHER), key=lambda k: r.components[k])


@pytest.mark.parametrize(
    ("name", "workload", "component", "seconds"),
    [
        ("volume-latency-vsim-avscan.txt", "test2-wid34121", "network", 284e-6),
        ("policy-group-latency-before-limit.txt", "User-Best-Effort", "network", 598e-6),
        ("policy-group-latency-at-limit.txt", "svm1-sql", "qos", 3.65e-3),  # the 200 IOPS ceiling
        ("volume-latency-qos-min-aqos.txt", "vol1-wid21368", "qos_min", 877.99e-3),
        ("volume-latency-qos-min-aqos.txt", "vol2-wid19287", "qos_min", 734.91e-3),
        ("workload-latency-qos-max-total.txt", "-total-", "qos_max", 17.09e-3),
    ],
)
def test_dominant_component(name: str, workload: str, component: str, seconds: float) -> None:
    (r,) = [r for r in rows_of(name) if r.workload == workload]
    assert _dominant(r) == component
    assert r.components[component] == pytest.approx(seconds, abs=1e-12)


def test_stable_component_names_across_releases() -> None:
    (avscan,) = [r for r in rows_of("volume-latency-vsim-avscan.txt") if r.workload_id]
    assert set(avscan.components) == {
        "network", "cluster", "data", "disk", "qos_max", "qos_min", "nvram",
        "cloud", "flexcache", "sm_sync", "va", "avscan",
    }  # fmt: skip
    older = rows_of("policy-group-latency-before-limit.txt")[0]
    assert set(older.components) == {"network", "cluster", "data", "disk", "qos", "nvram", "cloud"}


@pytest.mark.parametrize(
    ("cell", "seconds"),
    [("646.73ms", 0.64673), ("635.60ms", 0.6356), ("230us", 230e-6), ("4.00us", 4e-6), ("0ms", 0.0),
     ("0", 0.0), ("1.5s", 1.5), ("2s", 2.0), ("12µs", 12e-6)],
)  # fmt: skip
def test_units(cell: str, seconds: float) -> None:
    parsed = parse_latency(cell)
    assert parsed is not None
    assert parsed[0] == pytest.approx(seconds, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("cell", ["5", "1.5", "12ns", "ms", "-1ms", "1,5ms", "1.2.3ms", "", "9" * 400 + "s"])
def test_not_a_latency(cell: str) -> None:
    assert parse_latency(cell) is None


HEAD = "Workload            ID    Latency    Network    Cluster       Data       Disk\n"
RULE = "--------------- ------ ---------- ---------- ---------- ---------- ----------\n"


def test_mixed_units_in_one_row() -> None:
    (r,) = rows_from(HEAD + RULE + "vol9-wid9          9      1.20s    200.00ms  0ms  1.00s  0us\n")
    assert r.latency == pytest.approx(1.2)
    assert r.components == pytest.approx({"network": 0.2, "cluster": 0.0, "data": 1.0, "disk": 0.0})


def test_missing_columns() -> None:
    text = (
        "Workload            ID    Latency    Network\n"
        "--------------- ------ ---------- ----------\n"
        "vol1-wid1            1     1.00ms   400.00us\n"
    )
    (r,) = rows_from(text)
    assert r.components == pytest.approx({"network": 0.4e-3, OTHER: 0.6e-3})


def test_unknown_and_renamed_columns_are_kept() -> None:
    text = (
        "Workload            ID    Latency    N-Blade    Cluster    D-Blade       Disk  Ops Delay\n"
        "--------------- ------ ---------- ---------- ---------- ---------- ---------- ----------\n"
        "vol1-wid1            1     1.00ms   100.00us        0ms   200.00us   300.00us   400.00us\n"
    )
    (r,) = rows_from(text)
    assert r.components == pytest.approx(
        {"network": 1e-4, "cluster": 0.0, "data": 2e-4, "disk": 3e-4, "ops_delay": 4e-4}
    )


def test_dash_cell_is_a_component_not_reported() -> None:
    (r,) = rows_from(
        HEAD + RULE + "vol1-wid1            1     1.00ms   500.00us          -   500.00us        0ms\n"
    )
    assert "cluster" not in r.components and OTHER not in r.components


def test_iterations_and_time_lines() -> None:
    block = (DATA / "volume-latency-vsim-avscan.txt").read_text()
    rows = rows_from(block + "\n" + block)
    assert [r.iteration for r in rows] == [0, 0, 1, 1]
    body = block.splitlines()[4:]
    rows = rows_from(
        "\n".join([*block.splitlines()[2:], *body, "Fri Nov 27 15:01:30 UTC 2026", *body]) + "\n"
    )
    assert [r.iteration for r in rows] == [0, 0, 1, 1, 2, 2]  # a -total- row opens each block
    assert [r.timestamp for r in rows][:4] == [None] * 4
    assert rows[4].timestamp == rows[5].timestamp == 1795791690.0
    stamped = rows_from("cluster1 : 4/11/2018 07:23:41\n" + block)
    assert {r.timestamp for r in stamped} == {1523431421.0}


def test_samples_group_each_iteration() -> None:
    block = (DATA / "volume-latency-qos-min-aqos.txt").read_text()
    samples = list(iter_qos_latency_samples("x.txt", stream=io.BytesIO((block + block).encode())))
    assert len(samples) == 2
    row = samples[0].rows[0]
    assert (row.table, row.instance, row.properties) == (
        "qos_latency",
        "vol1-wid21368",
        {"workload_id": "21368"},
    )
    assert row.counters["latency"] == pytest.approx(0.87973)
    assert row.counters["qos_min"] == pytest.approx(0.87799)


def test_refresh_display_control_codes_are_skipped() -> None:
    block = (DATA / "policy-group-latency-at-limit.txt").read_text()
    rows = rows_from("\x1b[H\x1b[2J" + block)
    assert len(rows) == 3


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("hello world\n", 1, "not a QoS latency header or row"),
        ("\n\n" + HEAD + RULE + "vol1-wid1  1  1.00ms  0ms\n", 5, "4 cells under 7 header columns"),
        (HEAD + RULE + "vol1-wid1 1 1.00ms 0ms 0ms 0ms 12parsecs\n", 3, "disk: not a latency"),
        (HEAD + RULE + "vol1-wid1 1 - 0ms 0ms 0ms 0ms\n", 3, "latency: not a latency"),
        (HEAD + "vol1-wid1 1 1.00ms 0ms 0ms 0ms 0ms\n", 1, "without its dashed ruler"),
        (HEAD, 1, "ends after a header"),
        ("Workload            ID    Latency Network\n" + RULE, 1, "the ruler does not fit"),
        ("Workload  ID  Latency  Disk  Disk\n--------  --  -------  ----  ----\n", 1, "appears twice"),
        (
            HEAD + RULE + "vol1-wid1 1 1.00ms 0ms 0ms 0ms 0ms\nrandom text here\n",
            4,
            "3 cells under 7 header columns",
        ),
    ],
)
def test_garbage_is_refused_with_its_line(text: str, line: int, why: str) -> None:
    with pytest.raises(CaptureError, match=rf"capture\.txt:{line}: .*{re.escape(why)}"):
        rows_from(text)


def test_nothing_but_an_error_is_that_error() -> None:
    with pytest.raises(CaptureError, match=r"capture\.txt:2: Error: .*not found"):
        rows_from(
            "cluster1::> qos statistics volume latency show -volume nope\nError: volume nope not found\n"
        )


def test_empty_capture_is_refused() -> None:
    with pytest.raises(CaptureError, match="no QoS latency rows"):
        rows_from("")


def test_undecodable_bytes_are_refused_with_their_line() -> None:
    data = (HEAD + RULE).encode() + b"vol1-wid1 1 \xff1.00ms 0ms 0ms 0ms 0ms\n"
    with pytest.raises(CaptureError, match=r"capture\.txt:3: not UTF-8"):
        list(iter_qos_latency_rows("capture.txt", stream=io.BytesIO(data)))


_REAL = [(DATA / n).read_text() for n in SAMPLES]
_TOKENS = [*" \t\n-:>.()0123456789usmIDLatencyWorkloadQoSMax\x1b[", "-total-", "ms", "us", "Latency", "---"]
_NOISE = st.lists(st.sampled_from(_TOKENS), max_size=60).map("".join)


@given(st.lists(st.one_of(st.sampled_from(_REAL), _NOISE, st.text(max_size=40)), max_size=6))
def test_fuzz_never_tracebacks(parts: list[str]) -> None:
    try:
        rows = rows_from("".join(parts))
    except CaptureError:
        return
    for r in rows:  # with the residual, the components are the total
        if OTHER in r.components:
            assert sum(r.components.values()) == pytest.approx(r.latency, rel=1e-9, abs=1e-12)


@given(st.sampled_from(_REAL), st.integers(0, 2000), st.text(max_size=5))
def test_fuzz_mutated_samples_never_traceback(text: str, at: int, insert: str) -> None:
    at %= len(text) + 1
    with contextlib.suppress(CaptureError):
        rows_from(text[:at] + insert + text[at + len(insert) :])


@pytest.mark.parametrize("name", SAMPLES)
def test_analyze_detects_and_lists_the_capture(name: str) -> None:
    from sanlens.analyze.cli import analyze_file
    from sanlens.analyze.ontap_inputs import OntapInput, detect_qos_latency

    path = DATA / name
    assert detect_qos_latency(path, path.read_bytes())
    result = analyze_file(path)
    try:
        assert result.input["kind"] == "ontap-qos-latency"
        assert result.input["objects"] == ["qos_latency"]
        assert result.input["instances"] == len(rows_of(name))
    finally:
        assert isinstance(result.detail, OntapInput)
        result.detail.close()


def test_analyze_leaves_other_ontap_text_to_its_readers() -> None:
    from sanlens.analyze.ontap_inputs import detect_qos_latency

    performance = (
        "Workload            ID     IOPS       Throughput    Latency\n"
        "--------------- ------ -------- ---------------- ----------\n"
        "-total-              -     4097      1111.90MB/s   216.87ms\n"
    )
    assert not detect_qos_latency(Path("perf.txt"), performance.encode())
    for other in (DATA.parent / "sysstat-M.txt", DATA.parent / "real" / "wafl-two-nodes.txt"):
        assert not detect_qos_latency(other, other.read_bytes()[:4096])
