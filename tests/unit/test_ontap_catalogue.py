"""The counter catalogue against facts we did not write, and what the collector does with it.

``../shared/reference/ontap-rest-counters.tsv`` lists ONTAP's REST counter names, their
ZAPI/CLI spellings, units, types and bases; the real ``counter_schemas`` captures
type the ``volume`` and ``system:node`` tables.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import responses

from conftest import fixture_path
from sanlens.config import OntapTarget
from sanlens.ontap import collector as collector_mod
from sanlens.ontap.catalogue import catalogue
from sanlens.ontap.collector import OntapSource
from sanlens.ontap.cooking import CounterRow, CounterSpec, cook_row

BASE = "https://c1.example"
REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "ontap-rest-counters.tsv"


def _reference() -> list[dict[str, str]]:
    if not REFERENCE.exists():
        import os

        if os.environ.get("CI") == "true":
            pytest.fail(f"{REFERENCE} is missing in CI")
        pytest.skip(f"{REFERENCE} not present (../shared is beside the project in CI)")
    with REFERENCE.open(encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_every_catalogue_counter_matches_the_reference_names_units_types_and_bases() -> None:
    ref = {(r["table"], r["rest_counter"]): r for r in _reference()}
    cat = catalogue()
    checked = 0
    for (table, name), r in ref.items():
        tdef = cat.get(table)
        if tdef is None:
            continue  # lif, iscsi_lif: not polled
        c = tdef.counters.get(name)
        assert c is not None, f"{table} {name} is in the reference but not in the catalogue"
        assert (c.spec.type, c.spec.unit, c.spec.base) == (r["type"], r["unit"], r["base"]), (table, name)
        assert c.zapi == r["zapi_counter"], (table, name)
        checked += 1
    assert checked >= 140


def test_the_counters_sanlens_uses_are_real_rest_names() -> None:
    """Every counter sanlens asks a cluster for is in the reference or a real counter_schemas capture."""
    names = {(r["table"], r["rest_counter"]) for r in _reference()}
    for rel in ("ontap/restperf/volume-schema.json", "ontap/restperf/system-node-schema-vsim.json"):
        doc = json.loads(Path(fixture_path(rel)).read_text())
        names |= {(doc["name"], c["name"]) for c in doc["counter_schemas"]}
    # the real `statistics catalog counter show -object lun` (CLI names, the same for these counters)
    cli = Path(fixture_path("ontap/statperf/lun-statistics-catalog.txt")).read_text(encoding="utf-8")
    lun_cli = {line.split("\u00b7")[2] for line in cli.splitlines() if line.startswith("lun\u00b7")}
    assert {"other_ops", "read_ops", "avg_read_latency"} <= lun_cli
    # the NVMe tables' names as a real client (NetApp Harvest's RestPerf templates) requests them
    harvest = Path(__file__).parents[1] / "data" / "ontap" / "restperf-counter-names.tsv"
    names |= {
        (t, c)
        for t, c in (
            line.split("\t") for line in harvest.read_text().splitlines() if not line.startswith("#")
        )
    }
    bases_only = {("disk:constituent", "base_for_disk_busy")}  # a denominator the reference does not list
    for table, tdef in catalogue().items():
        if not tdef.rest:
            continue
        for c in tdef.wanted:
            known = (table, c) in names or (table, c) in bases_only
            known = known or (table == "lun" and tdef.counters[c].zapi in lun_cli)
            assert known, f"{table} {c} is not an ONTAP REST name"


def test_the_three_old_spellings_are_gone_from_what_is_fetched() -> None:
    cat = catalogue()
    assert {"average_read_latency", "average_write_latency"} <= set(cat["lun"].wanted)
    assert not {"avg_read_latency", "avg_write_latency"} & set(cat["lun"].wanted)
    assert {"disk_busy_percent", "user_read_count", "user_write_count"} <= set(cat["disk:constituent"].wanted)
    assert not {"disk_busy", "user_reads", "user_writes"} & set(cat["disk:constituent"].wanted)
    assert {"average_read_latency", "average_write_latency"} <= set(cat["fcp_lif"].wanted)
    # the CLI spellings still resolve, for `statistics show` captures
    assert cat["lun"].resolve("avg_read_latency") is cat["lun"].counters["average_read_latency"]
    assert cat["disk:constituent"].resolve("disk_busy").name == "disk_busy_percent"  # type: ignore[union-attr]


# ------------------------------------------------------------------ units
def _rows(table: str, a: dict[str, Any], b: dict[str, Any]) -> tuple[CounterRow, CounterRow]:
    return CounterRow(table, "x", counters=a), CounterRow(table, "x", counters=b)


def test_delta_microseconds_cook_to_seconds_and_data_rates_to_bytes() -> None:
    p, c = _rows(
        "system:node",
        {"cpu_elapsed_time": 1_000_000_000.0, "disk_data_read": 5_000.0, "avg_processor_busy": 0.0},
        {"cpu_elapsed_time": 1_060_000_000.0, "disk_data_read": 5_600.0, "avg_processor_busy": 15_000_000.0},
    )
    got = {x.counter: (x.value, x.unit) for x in cook_row(p, c, 60.0)}
    assert got["cpu_elapsed_time"] == (pytest.approx(60.0), "seconds")  # 60e6 µs, not 60e6 "seconds"
    assert got["disk_data_read"] == (pytest.approx(600.0 / 60.0), "bytes_per_second")  # raw bytes, see below
    # the CLI spelling avg_processor_busy cooks as the REST percent over cpu_elapsed_time
    assert got["average_processor_busy_percent"] == (pytest.approx(25.0), "percent")


def test_the_live_schema_unit_wins_over_the_catalogue() -> None:
    p, c = _rows(
        "lun",
        {"average_read_latency": 0.0, "read_ops": 0.0},
        {"average_read_latency": 600.0, "read_ops": 2.0},
    )
    live = {"lun": {"average_read_latency": CounterSpec("average", "read_ops", "millisec")}}
    got = {x.counter: x.value for x in cook_row(p, c, 1.0, live)}
    assert got["average_read_latency"] == pytest.approx(0.3)  # 300 ms per op, in seconds


# ------------------------------------------------------------------ missing counters
def _schema_without(table: str, drop: str) -> dict[str, Any]:
    tdef = catalogue()[table]
    schemas = [
        {"name": c.name, "type": c.spec.type, "unit": c.spec.unit}
        | ({"denominator": {"name": c.spec.base}} if c.spec.base else {})
        for c in tdef.counters.values()
        if c.name != drop
    ]
    return {"name": table, "counter_schemas": schemas}


def test_a_counter_the_cluster_lacks_is_logged_once_and_exposed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    t = [1_000_000.0]
    monkeypatch.setattr(collector_mod.time, "time", lambda: t[0])
    caplog.set_level(logging.WARNING)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.get(
            f"{BASE}/api/cluster", json={"name": "c1", "version": {"generation": 9, "major": 13, "minor": 1}}
        )
        for path in ("cluster/nodes", "storage/luns", "storage/namespaces", "storage/aggregates", "storage/disks",
                     "storage/volumes", "network/fc/ports", "network/ip/interfaces"):  # fmt: skip
            rsps.get(f"{BASE}/api/{path}", json={"records": [], "num_records": 0})
        rsps.get(
            f"{BASE}/api/cluster/counter/tables/lun", json=_schema_without("lun", "average_write_latency")
        )
        rsps.get(f"{BASE}/api/cluster/counter/tables/lun/rows", json={"records": [], "num_records": 0})
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=["lun"], schema_refresh=0))
        s1 = src.poll()
        t[0] += 60
        src.poll()
        asked = [c.request.url for c in rsps.calls if "/lun/rows" in c.request.url]
    lines = [r.getMessage() for r in caplog.records if "lacks" in r.getMessage()]
    assert len(lines) == 1 and "average_write_latency" in lines[0] and "9.13.1" in lines[0]
    fam = {m.name: m for m in s1.metrics}["sanlens_ontap_counter_missing"]
    assert list(fam.samples) == [(("c1", "lun", "average_write_latency"), 1.0)]
    assert asked and all("average_write_latency" not in u for u in asked)  # never asked for


@pytest.mark.parametrize(
    ("counters", "message"),
    [
        ({"a": {"type": "ratee", "unit": "none"}}, "counters.a.type: expected one of"),
        (
            {"a": {"type": "average", "unit": "microsec", "base": "b"}},
            "counters.a.base: base 'b' is not in the table",
        ),
        (
            {"a": {"type": "rate", "unit": "per_sec", "metric": "sanlens_x_total"}},
            "is not declared under metrics",
        ),
    ],
)
def test_a_bad_catalogue_entry_is_a_located_error(counters: dict[str, Any], message: str) -> None:
    from sanlens.errors import ConfigError
    from sanlens.ontap.catalogue import parse_table

    with pytest.raises(ConfigError, match=message):
        parse_table({"table": "t", "counters": counters}, "t.yaml")


def test_a_by_metric_needs_a_label_value_unless_the_counter_is_an_array() -> None:
    from sanlens.errors import ConfigError
    from sanlens.ontap.catalogue import parse_table

    metrics = {"sanlens_x_total": {"type": "counter", "by": "op"}}
    with pytest.raises(ConfigError, match="give the label value"):
        parse_table({"table": "t", "metrics": metrics, "counters": {"a": {"type": "rate", "unit": "per_sec",
                     "metric": "sanlens_x_total"}}}, "t.yaml")  # fmt: skip
    t = parse_table({"table": "t", "metrics": metrics, "counters": {"a": {"type": "rate", "unit": "per_sec",
                     "metric": "sanlens_x_total", "array": True}}}, "t.yaml")  # fmt: skip
    assert t.counters["a"].array and t.wanted == ("a",)


def test_kb_per_sec_data_counters_count_bytes_in_a_real_capture() -> None:
    """A real node's cumulative data counters are only plausible as bytes over its uptime."""
    import re

    text = (Path(__file__).parents[1] / "data" / "ontap" / "real" / "system-node-partial-1.txt").read_text()
    block = text.split("Instance: sti78-vsim-ucs188i\n", 1)[1].split("\nObject:", 1)[0]

    def raw(counter: str) -> float:
        m = re.search(rf"^ {{4}}{counter}\s+(\d+)\s*$", block, re.M)
        assert m, counter
        return float(m[1])

    uptime_s = raw("cpu_elapsed_time") * 1e-6  # ~12 days
    assert 10 * 86400 < uptime_s < 14 * 86400
    as_bytes = raw("disk_data_written") / uptime_s
    assert 1e5 < as_bytes < 1e6  # ~400 KB/s of consistency points on an idle simulator
    assert as_bytes * 1024 > 3e8  # read as KB: 400 MB/s sustained for 12 days, which a simulator cannot do
    assert catalogue()["system:node"].counters["disk_data_written"].spec.unit == "kb_per_sec"
    from sanlens.ontap.catalogue import unit_scale

    assert unit_scale("kb_per_sec") == 1.0


@pytest.mark.parametrize(
    ("table", "capture"),
    [
        ("volume", "ontap/restperf/volume-schema.json"),
        ("system:node", "ontap/restperf/system-node-schema-vsim.json"),
    ],
)
def test_used_counters_match_a_real_counter_schema(table: str, capture: str) -> None:
    """volume and system:node are not in the reference TSV: their real counter_schemas type them."""
    doc = json.loads(Path(fixture_path(capture)).read_text())
    real = {c["name"]: c for c in doc["counter_schemas"]}
    tdef = catalogue()[table]
    for name in tdef.wanted:
        c, r = tdef.counters[name], real.get(name)
        assert r is not None, f"{table} {name} is not in the real schema"
        base = (r.get("denominator") or {}).get("name", "")
        assert (c.spec.type, c.spec.unit, c.spec.base) == (r["type"], r["unit"], base), (table, name)


def test_every_exported_counter_says_what_it_measures_and_each_table_its_source() -> None:
    for t in catalogue().values():
        if not t.rest:
            continue
        assert t.source, f"{t.table}: no `source` naming where its counters were checked"
        for c in t.counters.values():
            if c.metric:
                assert c.doc, f"{t.table} {c.name} is exported without a `doc`"
