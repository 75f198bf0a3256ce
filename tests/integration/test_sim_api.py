"""The simulator's HTTP surface: shapes against the real captures, pagination, filters, control,
faults, TLS and the CLI. Every server is in-process on 127.0.0.1, port 0."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import fixture_path
from sanlens.cli import main
from sanlens_sim.server import Simulator

TABLES = ("lun", "volume", "system:node", "disk:constituent", "fcp_lif", "wafl")


class Clock:
    """A clock the test moves by hand, so rates come out exact without sleeping."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def sim() -> Iterator[Simulator]:
    s = Simulator("healthy").start()
    yield s
    s.stop()


def get(s: Simulator, path: str, **params: Any) -> requests.Response:
    return requests.get(s.url + path, params=params or None, timeout=10)


def q(name: str) -> str:
    return name.replace(":", "%3A")


# ------------------------------------------------------------------ shapes vs the real captures
def shape(v: Any) -> Any:
    """Key structure and value types; a list becomes the set of its distinct element shapes."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return ["list", sorted({json.dumps(shape(x), sort_keys=True) for x in v})]
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


OPTIONAL = {"aggregation", "next"}  # every row may carry aggregation; next only while pages remain


def assert_same_shape(ours: Any, real: Any, where: str = "$") -> None:
    so, sr = shape(ours), shape(real)
    _compare(so, sr, where)


def _compare(so: Any, sr: Any, where: str) -> None:
    if isinstance(sr, dict):
        assert isinstance(so, dict), f"{where}: expected an object, got {so}"
        missing = set(sr) - set(so) - OPTIONAL
        extra = set(so) - set(sr) - OPTIONAL
        assert not missing and not extra, f"{where}: missing {sorted(missing)}, extra {sorted(extra)}"
        for k in set(sr) & set(so):
            _compare(so[k], sr[k], f"{where}.{k}")
    elif isinstance(sr, list):
        assert isinstance(so, list), f"{where}: expected an array"
        real_elems = [json.loads(x) for x in sr[1]]
        for x in so[1]:
            elem = json.loads(x)
            # each of our element shapes must match one of the capture's element shapes
            errors = []
            for r in real_elems:
                try:
                    _compare(elem, r, f"{where}[]")
                    break
                except AssertionError as e:
                    errors.append(str(e))
            else:
                raise AssertionError(f"{where}[]: no capture element has our shape {elem}: {errors[:2]}")
    else:
        assert so == sr, f"{where}: type {so} != {sr}"


def load(rel: str) -> Any:
    return json.loads(fixture_path(rel).read_text())


def test_counter_schema_shapes_match_real_captures(sim: Simulator) -> None:
    real = load("ontap/restperf/volume-schema.json")
    for table in TABLES:
        ours = get(sim, f"/api/cluster/counter/tables/{q(table)}").json()
        assert_same_shape(ours, real, f"schema {table}")
    node = load("ontap/restperf/system-node-schema-vsim.json")
    assert_same_shape(get(sim, "/api/cluster/counter/tables/system%3Anode").json(), node)


def test_counter_row_shapes_match_real_captures(sim: Simulator) -> None:
    vol = load("ontap/restperf/volume-rows-1.json")
    node = load("ontap/restperf/system-node-rows-vsim-1.json")
    assert_same_shape(
        get(sim, "/api/cluster/counter/tables/volume/rows", fields="*").json(), vol, "volume rows"
    )
    # the same request as the capture (its self link): scalar counters plus aggregation
    ours = get(
        sim,
        "/api/cluster/counter/tables/system%3Anode/rows",
        fields="*",
        **{"counters.name": "cpu_busy|cpu_elapsed_time"},
    ).json()
    assert_same_shape(ours, node, "system:node rows")
    # array counters (domain_busy, cp_phase_times) and tables without a capture of their own:
    # the volume capture holds both scalar and array counter shapes
    for table in ("system:node", "lun", "disk:constituent", "fcp_lif", "wafl"):
        ours = get(sim, f"/api/cluster/counter/tables/{q(table)}/rows", fields="*").json()
        assert_same_shape(ours, vol, f"{table} rows")


def test_keyperf_statistics_shape_matches_real_capture(sim: Simulator) -> None:
    real = load("ontap/keyperf/volumes-statistics-1.json")
    ours = get(sim, "/api/storage/volumes", fields="uuid,statistics,svm.name,aggregates").json()
    assert_same_shape(ours, real, "volumes statistics")
    luns = get(sim, "/api/storage/luns", fields="statistics").json()
    assert_same_shape(luns["records"][0]["statistics"], real["records"][0]["statistics"], "lun statistics")


def test_domain_busy_is_an_array_with_labels_and_schema_types(sim: Simulator) -> None:
    schema = get(sim, "/api/cluster/counter/tables/system%3Anode").json()
    by = {c["name"]: c for c in schema["counter_schemas"]}
    real = {c["name"]: c for c in load("ontap/restperf/system-node-schema-vsim.json")["counter_schemas"]}
    for name in ("cpu_busy", "cpu_elapsed_time", "domain_busy"):
        assert (by[name]["type"], by[name]["unit"], by[name].get("denominator")) == (
            real[name]["type"],
            real[name]["unit"],
            real[name].get("denominator"),
        )
    vol_schema = {
        c["name"]: c for c in get(sim, "/api/cluster/counter/tables/volume").json()["counter_schemas"]
    }
    real_vol = {c["name"]: c for c in load("ontap/restperf/volume-schema.json")["counter_schemas"]}
    for name, c in vol_schema.items():
        if name in real_vol:
            assert (c["type"], c["unit"], c.get("denominator")) == (
                real_vol[name]["type"],
                real_vol[name]["unit"],
                real_vol[name].get("denominator"),
            ), name
    rec = get(
        sim, "/api/cluster/counter/tables/system%3Anode/rows", **{"counters.name": "domain_busy"}
    ).json()
    counters = rec["records"][0]["counters"]
    assert [c["name"] for c in counters] == ["domain_busy"]
    assert len(counters[0]["values"]) == len(counters[0]["labels"])
    assert {"idle", "kahuna", "wafl_exempt"} <= set(counters[0]["labels"])


def test_unknown_table_is_404_with_ontap_error_body(sim: Simulator) -> None:
    r = get(sim, "/api/cluster/counter/tables/nope")
    assert r.status_code == 404
    body = r.json()
    # ONTAP's "Table is not found" (code 8585320, as NetApp Harvest's pkg/errs/ontap.go names it)
    assert set(body["error"]) == {"message", "code"} and body["error"]["code"] == "8585320"


# ------------------------------------------------------------------ pagination and filters
def follow(s: Simulator, path: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
    first = get(s, path, **params).json()
    records, pages, body = list(first["records"]), 1, first
    while "next" in body["_links"]:
        body = requests.get(s.url + body["_links"]["next"]["href"], timeout=10).json()
        records += body["records"]
        pages += 1
        assert pages < 100
    return records, pages


def test_pagination_follows_next_links_to_every_record(sim: Simulator) -> None:
    every = get(sim, "/api/storage/luns", fields="serial_number").json()["records"]
    paged, pages = follow(sim, "/api/storage/luns", fields="serial_number", max_records=5)
    assert [r["uuid"] for r in paged] == [r["uuid"] for r in every]
    assert pages == math.ceil(len(every) / 5)
    rows, rpages = follow(
        sim, "/api/cluster/counter/tables/disk%3Aconstituent/rows", fields="*", max_records=7
    )
    disks = get(sim, "/api/storage/disks", fields="container_type").json()["records"]
    in_aggr = [d for d in disks if d["container_type"] == "aggregate"]
    assert len(rows) == len(in_aggr) and rpages == math.ceil(len(in_aggr) / 7)
    assert len({r["id"] for r in rows}) == len(rows)
    first = get(sim, "/api/cluster/counter/tables/lun/rows", max_records=3, fields="*").json()
    assert "start.id=" in first["_links"]["next"]["href"] and first["num_records"] == 3


def test_fields_projection_and_counter_filter(sim: Simulator) -> None:
    rec = get(sim, "/api/storage/luns", fields="serial_number,location.volume.name").json()["records"][0]
    assert set(rec) == {"uuid", "name", "serial_number", "location", "_links"}
    assert set(rec["location"]) == {"volume"} and set(rec["location"]["volume"]) == {"name"}
    bare = get(sim, "/api/storage/luns").json()["records"][0]
    assert set(bare) == {"uuid", "name", "_links"}
    rows = get(
        sim,
        "/api/cluster/counter/tables/lun/rows",
        fields="*",
        **{"counters.name": "read_ops|average_read_latency"},
    ).json()
    assert {c["name"] for c in rows["records"][0]["counters"]} == {"read_ops", "average_read_latency"}


# ------------------------------------------------------------------ counters and control
def row_counters(s: Simulator, table: str, **params: Any) -> dict[str, dict[str, Any]]:
    body = get(s, f"/api/cluster/counter/tables/{q(table)}/rows", fields="*", **params).json()
    out = {}
    for r in body["records"]:
        vals: dict[str, Any] = {}
        for c in r["counters"]:
            vals[c["name"]] = (
                dict(zip(c["labels"], c["values"], strict=True)) if "labels" in c else c["value"]
            )
        out[r["id"]] = vals
    return out


def test_counters_grow_at_the_scenario_rates() -> None:
    clock = Clock()
    with Simulator("healthy", clock=clock) as s:
        a = row_counters(s, "lun")
        clock.t += 10.0
        b = row_counters(s, "lun")
    lun = next(
        k for k in a if k.startswith("/vol/n01a_vol1/lun0:")
    )  # ONTAP's id: the LUN path, then its uuid
    # healthy: a volume serves 2500 ops over 2 LUNs, 70 % reads, 0.6 ms reads
    reads = (b[lun]["read_ops"] - a[lun]["read_ops"]) / 10.0
    assert reads == pytest.approx(2500 / 2 * 0.7, rel=0.01)
    lat_us = (b[lun]["average_read_latency"] - a[lun]["average_read_latency"]) / (
        b[lun]["read_ops"] - a[lun]["read_ops"]
    )
    assert lat_us == pytest.approx(600.0, rel=0.01)
    for key in a:
        for name, v in a[key].items():
            if isinstance(v, dict):  # array counters grow label by label
                assert all(b[key][name][lb] >= x for lb, x in v.items()), (key, name)
            else:
                assert b[key][name] >= v, (key, name)


def test_counters_are_monotonic_in_real_time(sim: Simulator) -> None:
    a = row_counters(sim, "system:node")
    time.sleep(0.3)
    b = row_counters(sim, "system:node")
    for node, vals in a.items():
        assert b[node]["cpu_elapsed_time"] > vals["cpu_elapsed_time"]
        for d, v in vals["domain_busy"].items():
            assert b[node]["domain_busy"][d] >= v


def test_set_scenario_keeps_counters_monotonic_and_changes_rates() -> None:
    clock = Clock()
    with Simulator("healthy", clock=clock) as s:
        clock.t += 5
        before = row_counters(s, "system:node")
        r = requests.post(s.url + "/-/sim/scenario", json={"scenario": "kahuna-bottleneck"}, timeout=10)
        assert r.status_code == 200 and r.json()["scenario"] == "kahuna-bottleneck"
        after = row_counters(s, "system:node")
        clock.t += 10
        later = row_counters(s, "system:node")
    node = next(k for k in before if k.startswith("sanlens-sim-01:"))
    for d, v in before[node]["domain_busy"].items():
        assert after[node]["domain_busy"][d] >= v
    assert after[node]["cpu_elapsed_time"] >= before[node]["cpu_elapsed_time"]
    dk = later[node]["domain_busy"]["kahuna"] - after[node]["domain_busy"]["kahuna"]
    de = later[node]["cpu_elapsed_time"] - after[node]["cpu_elapsed_time"]
    assert 100.0 * dk / de == pytest.approx(90.0, abs=0.5)  # the new scenario's Kahuna


def test_control_rejects_bad_input_with_400(sim: Simulator) -> None:
    url = sim.url + "/-/sim"
    cases = [
        ("/scenario", b"{not json"),
        ("/scenario", json.dumps({"scenario": "nope"}).encode()),
        ("/scenario", json.dumps({"scenario": "healthy", "colour": 3}).encode()),
        ("/scenario", json.dumps({"scenario": "healthy", "fa_ports": "two"}).encode()),
        ("/faults", json.dumps({"error_rate_5xx": 2}).encode()),
        ("/faults", json.dumps({"bogus": True}).encode()),
    ]
    for path, body in cases:
        r = requests.post(url + path, data=body, headers={"Content-Type": "application/json"}, timeout=10)
        assert r.status_code == 400, (path, body)
        assert r.json()["error"]["message"]
    state = get(sim, "/-/sim/state").json()
    assert (
        state["scenario"] == "healthy"
        and state["hosts"] == sim.hosts
        and state["cluster_name"] == sim.cluster_name
    )


# ------------------------------------------------------------------ faults
def faults(s: Simulator, **knobs: Any) -> None:
    r = requests.post(s.url + "/-/sim/faults", json=knobs, timeout=10)
    assert r.status_code == 200, r.text


def test_fault_status_401_and_5xx_and_latency(sim: Simulator) -> None:
    faults(sim, status_401=True)
    r = get(sim, "/api/cluster")
    assert r.status_code == 401 and r.json()["error"]["code"] == "6"
    assert get(sim, "/-/sim/state").status_code == 200  # control is never faulted
    faults(sim, status_401=False, error_rate_5xx=1.0)
    assert get(sim, "/api/cluster").status_code == 503
    faults(sim, error_rate_5xx=0.0, latency_ms=300)
    t0 = time.monotonic()
    assert get(sim, "/api/cluster").status_code == 200
    assert time.monotonic() - t0 >= 0.3


def test_fault_connection_reset(sim: Simulator) -> None:
    faults(sim, reset_rate=1.0)
    with pytest.raises(requests.ConnectionError):
        get(sim, "/api/cluster")
    faults(sim, reset_rate=0.0)
    assert get(sim, "/api/cluster").status_code == 200


def test_fault_malformed_json(sim: Simulator) -> None:
    faults(sim, malformed_json_rate=1.0)
    r = get(sim, "/api/storage/luns", fields="*")
    assert r.status_code == 200
    with pytest.raises(ValueError):
        json.loads(r.text)


def test_fault_counter_reset_once() -> None:
    clock = Clock()
    with Simulator("healthy", clock=clock) as s:
        clock.t += 5
        before = row_counters(s, "volume")
        faults(s, counter_reset=True)
        after = row_counters(s, "volume")
        clock.t += 5
        later = row_counters(s, "volume")
        assert get(s, "/-/sim/faults").json()["counter_reset"] is False
    key = next(iter(before))
    assert after[key]["total_ops"] < before[key]["total_ops"]  # went backwards once
    assert later[key]["total_ops"] > after[key]["total_ops"]  # and grows again


def test_fault_partial_aggregation_and_pagination_loop(sim: Simulator) -> None:
    faults(sim, partial_aggregation=True)
    recs = get(sim, "/api/cluster/counter/tables/system%3Anode/rows", fields="*").json()["records"]
    assert recs and all(r["aggregation"]["complete"] is False for r in recs)
    faults(sim, partial_aggregation=False, pagination_loop=True)
    a = get(sim, "/api/storage/volumes", max_records=2).json()
    b = requests.get(sim.url + a["_links"]["next"]["href"], timeout=10).json()
    assert b["_links"]["next"]["href"] == a["_links"]["next"]["href"]
    assert [r["uuid"] for r in b["records"]] == [r["uuid"] for r in a["records"]]


# ------------------------------------------------------------------ windows, TLS, CLI
def test_windows_endpoint_parses_and_serials_join_luns(sim: Simulator) -> None:
    serials = {
        r["serial_number"] for r in get(sim, "/api/storage/luns", fields="serial_number").json()["records"]
    }
    for host in sim.hosts:
        text = get(sim, f"/windows/{host}/metrics").text
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        for fam in (
            "windows_physical_disk_reads",
            "windows_physical_disk_read_latency_seconds",
            "windows_physical_disk_idle_seconds",
            "windows_physical_disk_requests_queued",
            "windows_logical_disk_reads",
            "sanlens_windows_disk_info",
        ):
            assert fam in fams, fam
        info = [s.labels for s in fams["sanlens_windows_disk_info"].samples]
        mapped = [lb for lb in info if lb["serial_number"] in serials]
        assert mapped, host
        assert all(lb["friendly_name"] == "NETAPP LUN C-Mode" for lb in mapped)
        assert any(lb["serial_number"] not in serials for lb in info)  # the local boot disk
    assert get(sim, "/windows/nohost/metrics").status_code == 404


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_tls_mode_serves_https() -> None:
    with Simulator("healthy", tls=True) as s:
        assert s.url.startswith("https://")
        r = requests.get(s.url + "/api/cluster", verify=False, timeout=10)
        assert r.status_code == 200 and r.json()["name"] == s.cluster_name
        assert s.cert_file is not None
        r2 = requests.get(s.url + "/api/cluster", verify=str(s.cert_file), timeout=10)
        assert r2.status_code == 200
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(s.url + "/api/cluster", timeout=10)  # verification on by default fails


def test_tls_without_cryptography_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(
        sys.modules, "cryptography", None
    )  # as if sanlens-sim had been installed without its dependencies
    assert main(["simulate", "--scenario", "healthy", "--tls"]) == 2
    err = capsys.readouterr().err
    assert "cryptography" in err and "pip install cryptography" in err


def test_cli_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sanlens", "simulate", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0
    for flag in ("--scenario", "--tls", "--fa-ports", "--ontap-version", "--luns"):
        assert flag in out.stdout


def test_every_catalogue_counter_and_property_is_served(sim: Simulator) -> None:
    """The catalogue is the source of truth: the simulator serves every counter and property it names."""
    from sanlens.ontap.catalogue import catalogue

    for name, tdef in catalogue().items():
        if not tdef.rest:
            continue
        schema = {
            c["name"]: c for c in get(sim, f"/api/cluster/counter/tables/{q(name)}").json()["counter_schemas"]
        }
        counters = set(tdef.counters)
        props = set(tdef.properties)
        assert counters | props <= set(schema), (name, sorted((counters | props) - set(schema)))
        for c in tdef.counters.values():
            s = schema[c.name]
            assert (s["type"], s["unit"]) == (c.spec.type, c.spec.unit), (name, c.name)
            assert (s.get("denominator") or {}).get("name", "") == c.spec.base, (name, c.name)
        body = get(sim, f"/api/cluster/counter/tables/{q(name)}/rows", fields="*").json()
        if not body["records"]:  # healthy has no iSCSI or NVMe objects: the demo estate has every kind
            with Simulator("mixed") as mixed:
                body = get(mixed, f"/api/cluster/counter/tables/{q(name)}/rows", fields="*").json()
        rec = body["records"][0]
        from sanlens_sim.ontap_tables import TABLES

        served = {c["name"] for c in rec["counters"]}
        # every counter the catalogue names; any other is one of ONTAP's own schema's (a QoS row carries
        # all of its table's counters, declared or not), never an invented one
        assert served >= counters | set(TABLES[name].string_counters), name
        assert served - counters - set(TABLES[name].string_counters) <= set(schema), name
        assert props <= {p["name"] for p in rec["properties"]}, name
        for c in rec["counters"]:
            if "values" in c:
                assert len(c["values"]) == len(c["labels"]) > 0, (name, c["name"])
