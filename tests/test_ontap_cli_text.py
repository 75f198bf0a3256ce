"""Parsers of ONTAP CLI text: `statistics show -raw` (real captures) and `sysstat -M`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import fixture_path

from sanlens.ontap.cli_text import iter_statistics_samples, iter_sysstat_samples, parse_cli_time
from sanlens.ontap.offline import CaptureError, cook_row

DATA = Path(__file__).parent / "data" / "ontap"
OSC = "/vol/osc_iscsi_vol01/osc_iscsi_vol01"


def _value_in_text(text: str, instance: str, counter: str) -> str:
    """The raw cell of one counter of one instance, read straight from the text with a regex."""
    block = text.split(f"Instance: {instance}\n", 1)[1].split("\nObject:", 1)[0]
    m = re.search(rf"^ {{4}}{re.escape(counter)}\s+(\S+)\s*$", block, re.M)
    assert m, counter
    return m[1]


def test_real_capture_blocks_and_values() -> None:
    path = fixture_path("ontap/statperf/lun-statistics-show-raw-1.txt")
    text = path.read_text()
    samples = list(iter_statistics_samples(path))
    assert len(samples) == 1
    rows = samples[0].rows
    assert len(rows) == text.count("\nObject: lun\n")
    row = next(r for r in rows if r.instance == OSC)
    assert row.table == "lun" and row.complete
    for counter in ("read_ops", "write_ops", "read_data", "write_ops_sent"):
        assert row.counters[counter] == float(_value_in_text(text, OSC, counter))
    # microsecond and percent suffixes are stripped
    assert row.counters["avg_read_latency"] == float(
        _value_in_text(text, OSC, "avg_read_latency").removesuffix("us")
    )
    # wrapped string values are joined back together
    assert row.properties["instance_name"] == OSC
    assert row.properties["instance_uuid"] == "d32abf06-0327-4d06-bb9d-1c19c8eeea01"
    assert row.properties["vserver_name"] == "osc"
    # array counters keep their labels by position
    assert row.labels["read_align_histo"] == [str(i) for i in range(8)]
    assert row.counters["read_align_histo"][2] == 70069.0
    assert samples[0].timestamp == parse_cli_time("6/11/2025 18:51:00")


def test_cooked_across_the_two_real_captures() -> None:
    a = fixture_path("ontap/statperf/lun-statistics-show-raw-1.txt")
    b = fixture_path("ontap/statperf/lun-statistics-show-raw-2.txt")
    ta, tb = a.read_text(), b.read_text()
    ra = next(r for r in next(iter_statistics_samples(a)).rows if r.instance == OSC)
    rb = next(r for r in next(iter_statistics_samples(b)).rows if r.instance == OSC)
    d_sent = float(_value_in_text(tb, OSC, "read_ops_sent")) - float(_value_in_text(ta, OSC, "read_ops_sent"))
    histo0 = [
        re.search(r"read_align_histo\s+-\n\s+0\s+(\d+)", t.split(f"Instance: {OSC}\n")[1])[1]
        for t in (ta, tb)
    ]
    d_h0 = float(histo0[1]) - float(histo0[0])
    assert d_sent == 110000 and d_h0 == 100000
    interval = 60.0  # the captures carry equal timestamps: the interval comes from the user
    cooked = {(c.counter, c.label): c for c in cook_row(ra, rb, interval)}
    assert cooked[("read_ops_sent", "")].value == d_sent  # delta
    assert cooked[("read_align_histo", "0")].value == pytest.approx(
        100 * d_h0 / d_sent
    )  # percent of read_ops_sent
    assert cooked[("read_align_histo", "0")].unit == "percent"
    d_ops = float(_value_in_text(tb, OSC, "read_ops")) - float(_value_in_text(ta, OSC, "read_ops"))
    assert cooked[("read_ops", "")].value == pytest.approx(d_ops / interval)  # rate
    # no read ops moved, so there is no read latency to report
    assert ("avg_read_latency", "") not in cooked
    # without an interval, rates are left out rather than guessed
    assert ("read_ops", "") not in {(c.counter, c.label) for c in cook_row(ra, rb, None)}


def test_one_file_with_several_samples() -> None:
    samples = list(iter_statistics_samples(DATA / "lun-statistics-show-raw-samples.txt"))
    assert [s.timestamp for s in samples] == [parse_cli_time(f"3/2/2025 10:0{i}:00") for i in range(3)]
    r0, r1 = samples[0].rows[0], samples[1].rows[0]
    c = {x.counter: x.value for x in cook_row(r0, r1, samples[1].timestamp - samples[0].timestamp)}
    assert c["read_ops"] == pytest.approx((11_800_000 - 10_000_000) / 60)
    assert c["avg_read_latency"] == pytest.approx(
        (5.9e9 - 5.0e9) / (11_800_000 - 10_000_000) * 1e-6
    )  # 0.5 ms


def test_reset_and_partial_aggregation_drop_the_row() -> None:
    samples = list(iter_statistics_samples(DATA / "lun-statistics-show-raw-samples.txt"))
    r0, r1 = samples[0].rows[0], samples[1].rows[0]
    assert cook_row(r1, r0, 60.0) == []  # negative deltas: a reset
    r1.complete = False
    assert cook_row(r0, r1, 60.0) == []


@pytest.mark.parametrize(
    "text",
    [
        "Instance: /vol/a/b\n",
        "Object: lun\nInstance: /vol/a/b\n    Counter   Value\n    -------- --------\n    read_ops 1\n"
        "                 x  notanumber\n",
        "garbage before anything\n",
    ],
)
def test_malformed_statistics_text_is_a_located_error(tmp_path: Path, text: str) -> None:
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(CaptureError, match=r"bad\.txt"):
        list(iter_statistics_samples(f))


def test_sysstat_m_columns() -> None:
    samples = list(iter_sysstat_samples(DATA / "sysstat-M.txt", node="cluster1-01"))
    assert len(samples) == 4  # the repeated header is not a sample
    row = samples[1].rows[0]
    assert row.instance == "cluster1-01"
    assert row.counters["avg"] == 31.0
    assert row.counters["cpu"] == [30.0, 32.0, 31.0, 31.0]
    dom = dict(zip(row.labels["domain_busy"], row.counters["domain_busy"], strict=True))
    assert dom["kahuna"] == 90.0 and dom["wafl_exempt"] == 8.0 and dom["wafl_exempt_kahuna"] == 3.0
    assert dom["network"] == 11.0 and row.counters["ops"] == 21510.0
    # Σ domains ≈ N_cpu·AVG (percent of one core each)
    total = sum(v for k, v in dom.items() if not k.endswith("_kahuna"))
    assert total == pytest.approx(4 * row.counters["avg"], abs=6)


def test_sysstat_column_mismatch_is_located(tmp_path: Path) -> None:
    f = tmp_path / "s.txt"
    f.write_text(" AVG CPU0 CPU1 Kahuna\n 30% 29% 31%\n")
    with pytest.raises(CaptureError, match=r"s\.txt:2"):
        list(iter_sysstat_samples(f))
