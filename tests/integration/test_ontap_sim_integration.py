"""The real exporter against the simulator on loopback: scrape /metrics over HTTP, parse, check two polls."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sanlens.config import Config, DiagnoseConfig, Duration, OntapTarget
from sanlens.ontap.collector import OntapSource
from sanlens.runtime.exporter import Exporter
from sanlens_sim.server import Simulator

ARCH_LABELS = {
    "sanlens_ontap_lun_ops_total": {"cluster", "svm", "volume", "lun", "op"},
    "sanlens_ontap_lun_latency_seconds_total": {"cluster", "svm", "volume", "lun", "op"},
    "sanlens_ontap_volume_ops_total": {"cluster", "svm", "volume", "op"},
    "sanlens_ontap_node_domain_busy_seconds_total": {"cluster", "node", "domain"},
    "sanlens_ontap_node_cpu_elapsed_seconds_total": {"cluster", "node"},
    "sanlens_ontap_disk_busy_seconds_total": {"cluster", "node", "aggregate", "disk"},
    "sanlens_ontap_fcp_lif_ops_total": {"cluster", "node", "svm", "lif", "port", "op"},
    "sanlens_ontap_lun_info": {"cluster", "svm", "volume", "lun", "serial", "os_type", "node"},
    "sanlens_ontap_disk_info": {
        "cluster",
        "node",
        "disk",
        "aggregate",
        "raid_group",
        "raid_position",
        "type",
        "rpm",
        "container",
        "state",
    },
}


def scrape(port: int) -> dict[str, dict[tuple, float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


@pytest.fixture
def running() -> object:
    sim = Simulator(scenario="healthy", port=0)
    sim.start()
    cfg = Config(
        listen="127.0.0.1:0",
        ontap=[OntapTarget(name="c1", url=sim.url, poll_interval=Duration(1.0))],
        diagnose=DiagnoseConfig(sustain_scale=0.01),
    )
    exp = Exporter(cfg)
    exp.start()
    yield exp
    exp.stop()
    sim.stop()


def _polls(m: dict[str, dict[tuple, float]]) -> float:
    return sum(v for k, v in m.get("sanlens_polls_total", {}).items() if ("target", "c1") in k)


def test_exporter_scrapes_simulator_series_with_names_labels_units_and_monotonic_counters(
    running: Exporter,
) -> None:
    port = running.port
    deadline = time.monotonic() + 30
    first: dict[str, dict[tuple, float]] = {}
    while time.monotonic() < deadline:
        first = scrape(port)
        if _polls(first) >= 1 and "sanlens_ontap_lun_ops_total" in first:
            break
        time.sleep(0.3)
    assert "sanlens_ontap_lun_ops_total" in first, "no ONTAP series within 30 s"
    n1 = _polls(first)
    while time.monotonic() < deadline and _polls(second := scrape(port)) < n1 + 1:
        time.sleep(0.3)
    assert _polls(second) >= n1 + 1, "no second poll within 30 s"

    for name, labels in ARCH_LABELS.items():
        assert name in second, f"{name} missing"
        for key in second[name]:
            assert {k for k, _ in key} == labels, f"{name} labels {key}"
    assert second["sanlens_target_up"][(("kind", "ontap"), ("target", "c1"))] == 1.0
    # every aggregate's RAID groups carry parity disks, named as the plex reports them
    positions: dict[str, set[str]] = {}
    for key in second["sanlens_ontap_disk_info"]:
        d = dict(key)
        if d["aggregate"]:
            positions.setdefault(d["aggregate"], set()).add(d["raid_position"])
    assert positions and all({"data", "parity"} <= p for p in positions.values()), positions
    # counters never go backwards between polls, and most of them moved
    moved = 0
    for name, series in second.items():
        if not name.endswith("_total") or not name.startswith("sanlens_ontap_"):
            continue
        for key, v in series.items():
            if key in first.get(name, {}):
                assert v >= first[name][key], f"{name}{dict(key)} went backwards"
                moved += v > first[name][key]
    assert moved > 100
    # units: seconds, not microseconds. A healthy LUN serves ~1 ms per op.
    ops = second["sanlens_ontap_lun_ops_total"]
    lat = second["sanlens_ontap_lun_latency_seconds_total"]
    per_op = []
    for key, v in lat.items():
        d_lat = v - first["sanlens_ontap_lun_latency_seconds_total"].get(key, v)
        d_ops = ops[key] - first["sanlens_ontap_lun_ops_total"].get(key, ops[key])
        if d_ops > 10:
            per_op.append(d_lat / d_ops)
    assert per_op and all(1e-5 < x < 0.05 for x in per_op), per_op
    # domain busy as a fraction of one core: sum over domains ~ processors
    dom = second["sanlens_ontap_node_domain_busy_seconds_total"]
    el = second["sanlens_ontap_node_cpu_elapsed_seconds_total"]
    procs = second["sanlens_ontap_node_processors"]
    node = dict(next(iter(el)))["node"]
    total = sum(v for k, v in dom.items() if dict(k)["node"] == node)
    el_v = next(v for k, v in el.items() if dict(k)["node"] == node)
    n_cpu = next(v for k, v in procs.items() if dict(k)["node"] == node)
    assert total / el_v == pytest.approx(n_cpu, rel=0.15)


# ------------------------------------------------------------------ the simulator's FC front end
def test_fc_ports_and_the_fcp_table_feed_the_view_and_the_exposition() -> None:
    from sanlens_sim.server import Simulator

    with Simulator(scenario="san-oversubscription", port=0) as sim:
        src = OntapSource(OntapTarget(name="c1", url=sim.url, tables=["fcp", "lun"]))
        src.poll()
        time.sleep(1.1)
        snap = src.poll()
        ports = requests_json(sim.url + "/api/network/fc/ports?fields=*")["records"]
    view = snap.view
    assert view is not None and view.fc_ports
    by_port = {(p.node, p.port): p for p in view.fc_ports}
    assert {(r["node"]["name"], r["name"]) for r in ports} == set(by_port)
    for r in ports:
        p = by_port[(r["node"]["name"], r["name"])]
        assert p.speed_gbps == r["fabric"]["connected_speed"] and p.state == r["state"]
        # utilization: the busier direction over FC's 100 MB/s per Gbit/s
        assert p.utilization == pytest.approx(
            max(p.read_bytes_s or 0, p.write_bytes_s or 0) / (p.speed_gbps * 1e8)
        )
    # the over-subscribed front end turns commands away; queue_full is a delta, so a count per interval
    assert max(p.queue_full or 0 for p in view.fc_ports) > 0
    names = {m.name for m in snap.metrics}
    assert {"sanlens_ontap_fcp_port_queue_full_total", "sanlens_ontap_fcp_port_bytes_total",
            "sanlens_ontap_fc_port_data_rate_bytes_per_second", "sanlens_ontap_fcp_port_link_errors_total"} <= names  # fmt: skip


def requests_json(url: str) -> Any:
    import requests

    r = requests.get(url, auth=("admin", "x"), timeout=10, verify=False)
    r.raise_for_status()
    return r.json()
