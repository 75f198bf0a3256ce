"""OntapSource on the REAL restperf captures: cooking, skipped rows, exposition, fallback (responses mocks)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import responses

from conftest import fixture_path
from sanlens.config import OntapTarget
from sanlens.ontap import collector as collector_mod
from sanlens.ontap.collector import OntapSource

BASE = "https://c1.example"


def _fx(rel: str) -> Path:
    return Path(fixture_path(rel))


def _load(rel: str) -> dict[str, Any]:
    return json.loads((Path(rel) if rel.startswith("/") else _fx(rel)).read_text())


def _inventory(rsps: Any = responses, version: tuple[int, int, int] = (9, 12, 1)) -> None:
    g, m, n = version
    rsps.get(f"{BASE}/api/cluster", json={"name": "c1", "version": {"generation": g, "major": m, "minor": n}})
    for path in ("cluster/nodes", "storage/luns", "storage/namespaces", "storage/aggregates", "storage/disks",
                 "network/ip/interfaces"):  # fmt: skip
        rsps.get(f"{BASE}/api/{path}", json={"records": [], "num_records": 0})
    rsps.get(f"{BASE}/api/storage/volumes", json={"records": [], "num_records": 0})
    rsps.get(f"{BASE}/api/network/fc/ports", json={"records": [], "num_records": 0})


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _two_polls(monkeypatch: pytest.MonkeyPatch, table: str, schema: str, rows1: str, rows2: str,
               dt: float, **target: Any) -> tuple[Any, Any]:  # fmt: skip
    clock = Clock(1_000_000.0)
    monkeypatch.setattr(collector_mod.time, "time", clock)
    monkeypatch.setattr(collector_mod.time, "monotonic", clock)  # the receive clock (sanlens.freshness)
    q = table.replace(":", "%3A")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _inventory(rsps)
        rsps.get(f"{BASE}/api/cluster/counter/tables/{q}", json=_load(schema))
        rsps.get(f"{BASE}/api/cluster/counter/tables/{q}/rows", json=_load(rows1))
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=[table], **target))
        s1 = src.poll()
        rsps.replace(responses.GET, f"{BASE}/api/cluster/counter/tables/{q}/rows", json=_load(rows2))
        clock.t += dt
        s2 = src.poll()
        rows_call = next(c for c in rsps.calls if "/rows" in c.request.url)
    return (s1, s2, rows_call)  # type: ignore[return-value]


def test_volume_rows_cook_to_ops_per_second_and_latency_per_op(monkeypatch: pytest.MonkeyPatch) -> None:
    dt = 60.0
    s1, s2, call = _two_polls(monkeypatch, "volume", "ontap/restperf/volume-schema.json",
                              "ontap/restperf/volume-rows-1.json", "ontap/restperf/volume-rows-2.json", dt)  # fmt: skip
    assert "counters.name=" in call.request.url and "total_read_ops" in call.request.url
    assert s1.view.interval_s is None and s1.view.volumes == ()
    # independent arithmetic on the raw captures
    r1 = {r["id"]: r for r in _load("ontap/restperf/volume-rows-1.json")["records"]}
    r2 = {r["id"]: r for r in _load("ontap/restperf/volume-rows-2.json")["records"]}
    expected = {}
    for rid, b in r2.items():
        a = r1.get(rid)
        if a is None:
            continue
        ca = {c["name"]: c.get("value") for c in a["counters"]}
        cb = {c["name"]: c.get("value") for c in b["counters"]}
        d_ops = cb["total_read_ops"] - ca["total_read_ops"]
        d_lat = cb["read_latency"] - ca["read_latency"]
        name = {p["name"]: p["value"] for p in b["properties"]}["name"]
        expected[name] = (d_ops / dt, (d_lat / d_ops) * 1e-6 if d_ops >= 1 else None)
    got = {v.volume: (v.read_iops, v.read_latency_s) for v in s2.view.volumes}
    checked = 0
    for name, (iops, lat) in expected.items():
        assert got[name][0] == pytest.approx(iops)
        if lat is None:
            assert got[name][1] is None  # below the min-ops floor: no latency
        else:
            assert got[name][1] == pytest.approx(lat)
            checked += 1
    assert checked >= 1, "the capture must hold at least one volume with reads in the interval"
    # raw counters are exposed in base units: latency sums in seconds
    fam = {m.name: m for m in s2.metrics}["sanlens_ontap_volume_latency_seconds_total"]
    idx = fam.label_names.index("op")
    any_rid = next(iter(r2))
    raw = {c["name"]: c.get("value") for c in r2[any_rid]["counters"]}["read_latency"]
    assert any(lv[idx] == "read" and v == pytest.approx(raw * 1e-6) for lv, v in fam.samples)


def _derived_node_rows(tmp_path: Path) -> tuple[str, str, dict[str, bool]]:
    """Poll 2 = the real poll-1 rows advanced by known deltas; the last row's elapsed time goes backwards.

    (The real second capture repeats the first one's counters, so it cannot show cooking.)
    """
    doc = _load("ontap/restperf/system-node-rows-vsim-1.json")
    first = tmp_path / "rows1.json"
    first.write_text(json.dumps(doc))
    complete = {}
    for i, r in enumerate(doc["records"]):
        name = {p["name"]: p["value"] for p in r["properties"]}["name"]
        complete[name] = bool(r["aggregation"]["complete"])
        for c in r["counters"]:
            if c["name"] == "cpu_busy":
                c["value"] += 15_000_000
            if c["name"] == "cpu_elapsed_time":
                c["value"] += 60_000_000 if i < len(doc["records"]) - 1 else -1
    second = tmp_path / "rows2.json"
    second.write_text(json.dumps(doc))
    last = {p["name"]: p["value"] for p in doc["records"][-1]["properties"]}["name"]
    return str(first), str(second), {k: v for k, v in complete.items() if k != last} | {last: None}  # type: ignore[dict-item]


def _node_polls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **target: Any
) -> tuple[dict[str, float], dict]:
    r1, r2, complete = _derived_node_rows(tmp_path)
    _, s2, _ = _two_polls(monkeypatch, "system:node", "ontap/restperf/system-node-schema-vsim.json", r1, r2, 60.0,
                          **target)  # fmt: skip
    return {n.node: n.cpu_busy_ratio for n in s2.view.nodes if n.cpu_busy_ratio is not None}, complete


def test_system_node_keeps_incomplete_aggregation_rows(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One unreachable node must not blind the CPU view of the others: system:node keeps partial rows."""
    cooked, complete = _node_polls(monkeypatch, tmp_path)
    assert any(v is False for v in complete.values()), "the real capture has incomplete rows"
    assert set(cooked) == {k for k, v in complete.items() if v is not None}  # all but the reset row
    for v in cooked.values():
        assert v == pytest.approx(15e6 / 60e6)


def test_partial_rows_are_counted_per_table_and_policy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    r1, r2, _complete = _derived_node_rows(tmp_path)
    _, s2, _ = _two_polls(
        monkeypatch, "system:node", "ontap/restperf/system-node-schema-vsim.json", r1, r2, 60.0
    )
    fam = {m.name: m for m in s2.metrics}["sanlens_ontap_partial_aggregation_rows"]
    incomplete = sum(1 for r in _load(r2)["records"] if not r["aggregation"]["complete"])
    assert list(fam.samples) == [(("c1", "system:node", "keep"), float(incomplete))]


def test_tables_with_the_skip_policy_drop_incomplete_rows(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    docs = [_load("ontap/restperf/volume-rows-1.json"), _load("ontap/restperf/volume-rows-2.json")]
    victim = docs[1]["records"][0]["id"]
    docs[1]["records"][0]["aggregation"] = {"count": 2, "complete": False}
    paths = []
    for i, d in enumerate(docs):
        paths.append(tmp_path / f"v{i}.json")
        paths[-1].write_text(json.dumps(d))
    _, s2, _ = _two_polls(
        monkeypatch, "volume", "ontap/restperf/volume-schema.json", str(paths[0]), str(paths[1]), 60.0
    )
    name = {p["name"]: p["value"] for p in docs[1]["records"][0]["properties"]}["name"]
    cooked = {v.volume for v in s2.view.volumes}
    assert name not in cooked and cooked, victim
    _, s2, _ = _two_polls(monkeypatch, "volume", "ontap/restperf/volume-schema.json", str(paths[0]), str(paths[1]),
                          60.0, skip_incomplete_aggregation=False)  # fmt: skip
    assert name in {v.volume for v in s2.view.volumes}


@responses.activate
def test_counter_table_404_falls_back_to_statistics_fields() -> None:
    _inventory(responses, (9, 12, 1))
    responses.get(f"{BASE}/api/cluster/counter/tables/volume", status=404,
                  json={"error": {"message": "API not found", "code": "3"}})  # fmt: skip
    stats = _load("ontap/keyperf/volumes-statistics-1.json")
    responses.replace(responses.GET, f"{BASE}/api/storage/volumes", json=stats)
    responses.get(f"{BASE}/api/storage/luns", json={"records": []})
    responses.get(f"{BASE}/api/cluster/nodes", json={"records": []})
    src = OntapSource(OntapTarget(name="c1", url=BASE, tables=["volume"]))
    snap = src.poll()
    fam = {m.name: m for m in snap.metrics}["sanlens_ontap_volume_ops_total"]
    rec = next(r for r in stats["records"] if (r.get("statistics") or {}).get("iops_raw"))
    want = float(rec["statistics"]["iops_raw"]["read"])
    names = fam.label_names
    assert any(lv[names.index("volume")] == rec["name"] and lv[names.index("op")] == "read" and v == want
               for lv, v in fam.samples)  # fmt: skip
    assert src._fallback is True


@responses.activate
def test_older_ontap_uses_fallback_without_asking_for_counter_tables() -> None:
    _inventory(responses, (9, 8, 0))
    responses.get(f"{BASE}/api/cluster/nodes", json={"records": [{"name": "n1", "statistics": {
        "timestamp": "2024-07-29T16:14:56Z", "status": "ok",
        "processor_utilization_raw": 500, "processor_utilization_base": 1000}}]})  # fmt: skip
    src = OntapSource(OntapTarget(name="c1", url=BASE))
    snap = src.poll()
    assert not any("/counter/tables" in c.request.url for c in responses.calls)
    # processor_utilization is the average over the processors (Harvest's KeyPerf: node_avg_processor_busy)
    fams = {m.name: m for m in snap.metrics}
    assert "sanlens_ontap_node_cpu_busy_seconds_total" not in fams
    fam = fams["sanlens_ontap_node_average_processor_busy_seconds_total"]
    assert fam.samples[0][1] == pytest.approx(500e-6)


def test_each_table_is_cooked_against_the_time_its_rows_arrived(monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow table must not stretch the interval of the tables fetched before it."""
    clock = Clock(1_000_000.0)
    monkeypatch.setattr(collector_mod.time, "time", clock)
    monkeypatch.setattr(collector_mod.time, "monotonic", clock)  # the receive clock (sanlens.freshness)
    schema = {"name": "lun", "counter_schemas": [{"name": "read_ops", "type": "rate", "unit": "per_sec"}]}
    polls = iter([(0.0, 1000.0), (60.0, 7000.0)])  # (clock at the lun fetch, read_ops)

    def lun_rows(_req: Any) -> tuple[int, dict[str, str], str]:
        at, ops = next(polls)
        clock.t = 1_000_000.0 + at
        # no counter_table in the record: ONTAP leaves it out unless `fields` asks for it
        rec = {"id": "/vol/v1/l1:u1", "properties": [{"name": "name", "value": "/vol/v1/l1"},
               {"name": "svm.name", "value": "s1"}], "counters": [{"name": "read_ops", "value": ops}]}  # fmt: skip
        return 200, {}, json.dumps({"records": [rec], "num_records": 1})

    delays = iter([0.0, 25.0])

    def slow_volume(_req: Any) -> tuple[int, dict[str, str], str]:
        # tables are fetched concurrently: the delay must fall after the LUN rows were stamped, as it
        # does when a slow table really is slow, not between the LUN response and its stamp
        for _ in range(5000):
            if "lun" in src._fetched_at:
                break
            time.sleep(0.001)
        clock.t += next(delays)  # in the second poll the volume table takes 25 s after the LUNs arrived
        return 200, {}, json.dumps({"records": [], "num_records": 0})

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        _inventory(rsps)
        rsps.get(f"{BASE}/api/cluster/counter/tables/lun", json=schema)
        rsps.add_callback(responses.GET, f"{BASE}/api/cluster/counter/tables/lun/rows", callback=lun_rows)
        rsps.get(f"{BASE}/api/cluster/counter/tables/volume", json={"name": "volume", "counter_schemas": []})
        rsps.add_callback(
            responses.GET, f"{BASE}/api/cluster/counter/tables/volume/rows", callback=slow_volume
        )
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=["lun", "volume"]))
        src.poll()
        snap = src.poll()
    assert snap.view is not None, snap
    (lun,) = snap.view.luns
    assert lun.read_iops == pytest.approx(6000.0 / 60.0)  # not 6000 / (60 + 25)


def test_families_split_by_a_label_share_each_rows_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real volume page: the families split by ``op`` hold, for one op, one key tuple per row that
    they all share (a poll's keys are kept until the next one), each beside its own raw value."""
    _, s2, _ = _two_polls(monkeypatch, "volume", "ontap/restperf/volume-schema.json",
                          "ontap/restperf/volume-rows-1.json", "ontap/restperf/volume-rows-2.json", 60.0)  # fmt: skip
    split = [m for m in s2.metrics if m.name.startswith("sanlens_ontap_volume_") and "op" in m.label_names]
    reads = {m.name: [k for k in m.keys if k[m.label_names.index("op")] == "read"] for m in split}
    assert len(reads) >= 2 and all(reads.values()), sorted(reads)
    (first, *others) = reads.values()
    for keys in others:
        assert keys == first and all(a is b for a, b in zip(keys, first, strict=True))
    raw = {
        r["id"]: {c["name"]: c.get("value") for c in r["counters"]}
        for r in _load("ontap/restperf/volume-rows-2.json")["records"]
    }
    fam = {m.name: m for m in s2.metrics}["sanlens_ontap_volume_ops_total"]
    got = sorted(v for k, v in fam.samples if k[fam.label_names.index("op")] == "read")
    assert got == sorted(float(r["total_read_ops"]) for r in raw.values())
