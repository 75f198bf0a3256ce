"""A site that runs NetApp Harvest and host exporters: sanlens reads everything from Prometheus alone.

One real Prometheus scrapes a real Harvest page (``tests/data/harvest``, captured against the
simulator's ``san-oversubscription`` scenario), the simulator's windows_exporter and node_exporter
pages, and ``sanlens serve``, whose clusters and hosts are all ``source: prometheus`` on that same
Prometheus. Then:

- the diagnoses fire from those series alone (the same ones the REST e2e finds), and the shipped
  rules (their ``for:`` cut to a second) page through the example Alertmanager config;
- sanlens's ``/metrics`` carries no ONTAP or host counters, only diagnoses, self-metrics and the
  identity and join info series (``*_info``, the hosts' queue and path settings);
- every panel query of the dashboards ``dashboards.series: harvest`` ships (the overview and the
  Harvest evidence dashboard) returns data, except the overview's host columns that need the host
  counters sanlens does not export in this mode, which are named here.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import ROOT, free_port
from dashboard_queries import SCRAPE_S, Check, checks_for
from fast_alerting import fast_alertmanager, fast_rules
from harness import Harness, harness, http_get  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

PAGE = ROOT / "tests" / "data" / "harvest" / "san-oversubscription.prom"
BOARDS = [
    ROOT / "dashboards" / "sanlens-overview.json",
    ROOT / "dashboards" / "harvest" / "sanlens-harvest-evidence.json",
]
DEADLINE_S = 90.0
# Overview host columns ranked and filled by the recording rules over sanlens_host_* counters, which a
# Prometheus-backed host does not export (its exporter's series are already in Prometheus).
EXPECTED_EMPTY = {
    **{
        (
            "sanlens-overview",
            "Hosts (worst $topn by disk latency)",
            ref,
        ): "host counters are the exporter's here"
        for ref in "BCDE"
    },
    **{
        ("sanlens-harvest-evidence", "Host outstanding IO vs Q_eff (engine evidence)", ref): (
            "host_queue_limited's evidence: san-oversubscription has no queue-limited host"
        )
        for ref in "AB"
    },
}
# Families sanlens may export when it reads Prometheus: its own, never another exporter's counters.
ALLOWED = ("sanlens_diagnosis_", "sanlens_exporter_", "sanlens_poll", "sanlens_target_", "sanlens_last_poll",
           "sanlens_config_", "sanlens_build_", "sanlens_scrape", "sanlens_background_", "sanlens_latency_component_", "process_", "python_")  # fmt: skip
JOIN = ("sanlens_ontap_cluster_info", "sanlens_host_disk_info", "sanlens_host_disk_queue_depth",
        "sanlens_host_disk_paths", "sanlens_host_disk_optimized_paths", "sanlens_host_disk_configured_paths",
        "sanlens_host_disk_multipath_info", "sanlens_host_disk_path_info")  # fmt: skip


def finite(result: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(r["value"][1])) for r in result)


def test_a_harvest_site_is_diagnosed_and_charted_from_prometheus_alone(harness: Harness) -> None:  # noqa: F811
    meta = json.loads(Path(str(PAGE) + ".json").read_text())
    sim = harness.start_simulator(meta["simulator_scenario"], **meta["simulator_knobs"])
    page = harness.serve_page(PAGE.read_bytes())
    addr = sim.url.removeprefix("http://")
    paths = {f"win-{h}": f"/windows/{h}/metrics" for h in sim.hosts}
    paths |= {f"linux-{h}": f"/linux/{h}/metrics" for h in sim.linux_hosts}
    port = free_port()
    pd = harness.start_fake_pagerduty()
    key_file = harness.write("pagerduty-routing-key", "R0UTINGKEY0123456789abcdef012345\n")
    key_file.chmod(0o600)
    am = harness.start_alertmanager(fast_alertmanager(pd.enqueue_url, key_file))
    prom = harness.start_prometheus(
        {"harvest": [page], "sanlens": [f"127.0.0.1:{port}"], **{job: [addr] for job in paths}},
        rule_files=[fast_rules(harness.path("sanlens.rules.yaml"))],
        metrics_paths=paths,
        scrape_interval=f"{SCRAPE_S}s",
        evaluation_interval=f"{SCRAPE_S}s",
        alertmanager=am,
    )
    data = meta["schedules"]["RestPerf"]["data"]
    hosts = [
        {"name": job.split("-", 1)[1], "source": "prometheus", "url": prom.url, "poll_interval": "2s",
         "exporter": "windows_exporter" if job.startswith("win-") else "node_exporter", "selector": f'job="{job}"'}
        for job in paths
    ]  # fmt: skip
    ontap = [{"name": sim.cluster_name, "source": "prometheus", "url": prom.url, "poll_interval": "2s",
              "harvest_data_interval": data}]  # fmt: skip
    exp = harness.start_exporter(sim, extra={"ontap": ontap, "hosts": hosts}, port=port)
    harness.wait_until(lambda: prom.targets_up("sanlens"), 30, what="Prometheus to scrape sanlens")

    dashboards = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in BOARDS}
    t0 = time.monotonic()
    passed: set[str] = set()
    left: list[Check] = []
    all_checks: list[Check] = []
    while True:
        try:
            all_checks = [c for d in dashboards.values() for c in checks_for(prom, d)]
        except AssertionError:  # a variable with no values yet
            all_checks = []
        for c in all_checks:
            if str(c) in passed:
                continue
            result = prom.query(c.expr)  # raises on a query Prometheus rejects
            if c.key in EXPECTED_EMPTY or (result and finite(result)):
                passed.add(str(c))
        left = [c for c in all_checks if str(c) not in passed]
        if all_checks and not left:
            break
        if time.monotonic() - t0 > DEADLINE_S:
            listing = "\n".join(f"  {c}" for c in left) or "  (variables unresolved)"
            raise AssertionError(f"{len(left)} of {len(all_checks)} queries still empty:\n{listing}")
        time.sleep(3)
    per_dash = {uid: sum(1 for c in all_checks if c.dashboard == uid) for uid in dashboards}
    assert per_dash["sanlens-harvest-evidence"] >= 12, per_dash

    firing = {r["metric"]["diagnosis"] for r in prom.query("sanlens_diagnosis_state > 0")}
    assert "san_oversubscription" in firing, firing
    # the host latency behind it is the one the host's own exporter shows, unwrapped by sanlens
    host_latency = prom.query('max(sanlens_diagnosis_evidence{diagnosis="san_oversubscription", '
                              'evidence="host_latency_seconds"})')  # fmt: skip
    assert host_latency and float(host_latency[0]["value"][1]) > 0.05

    # and it pages, as on a site polled by sanlens itself
    def paged() -> dict[str, Any] | None:
        for e in pd.bodies():
            payload = e.get("payload") or {}
            if e.get("event_action") == "trigger" and payload.get("class") == "SanlensSanOversubscription":
                return e
        return None

    event = harness.wait_until(paged, 60.0, 1.0, "a PagerDuty trigger for the over-subscription")
    assert event["payload"]["severity"] == "critical"
    assert event["payload"]["group"] == sim.cluster_name

    status, page_text = http_get(exp.url + "/metrics")
    assert status == 200
    names = {f.name for f in text_string_to_metric_families(page_text.decode())}
    foreign = sorted(n for n in names if not n.startswith(ALLOWED) and n not in JOIN)
    assert not foreign, f"sanlens re-exports series Prometheus already holds: {foreign}"
    assert {"sanlens_ontap_cluster_info", "sanlens_host_disk_info"} <= names
