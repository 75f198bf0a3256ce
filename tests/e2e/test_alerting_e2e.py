"""Paging end to end on loopback: simulator -> exporter -> Prometheus (the real rules) -> Alertmanager
(the example config) -> a PagerDuty Events v2 stand-in and a ticket webhook.

The rules and the Alertmanager config are the shipped files with only the clocks shortened
(every ``for:`` to 1s, group waits to a second) and the PagerDuty URL and key file pointed at the
test's own; everything else - expressions, templates, routing, inhibition, the receiver's
templates - is what users deploy.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from fast_alerting import fast_alertmanager, fast_rules
from harness import Harness, harness  # noqa: F401  (fixture)
from sanlens.diagnose.registry import REGISTRY

pytestmark = pytest.mark.e2e

DIAGNOSIS = "cpu_domain_serial_bottleneck"
ALERT = "SanlensCpuDomainSerialBottleneck"
ROUTING_KEY = "R0UTINGKEY0123456789abcdef012345"  # what the test's key file holds (fake)
TRIGGER_TIMEOUT_S = 120.0
RESOLVE_TIMEOUT_S = 120.0


class TicketWebhook:
    """A loopback stand-in for the ticket bridge: records Alertmanager's webhook notifications."""

    def __init__(self) -> None:
        self.notifications: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with outer._lock:
                    outer.notifications.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, name="ticket-webhook", daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/alertmanager"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def alerts(self) -> list[dict[str, Any]]:
        with self._lock:
            return [a for n in self.notifications for a in n.get("alerts", [])]


def events_for(pd_events: list[dict[str, Any]], incident: str) -> list[dict[str, Any]]:
    return [
        e for e in pd_events if (e.get("payload") or {}).get("custom_details", {}).get("incident") == incident
    ]


def test_page_triggers_with_evidence_and_resolves_with_the_same_dedup_key(harness: Harness) -> None:  # noqa: F811
    pd = harness.start_fake_pagerduty()
    key_file = harness.write("pagerduty-routing-key", ROUTING_KEY + "\n")
    key_file.chmod(0o600)
    am = harness.start_alertmanager(fast_alertmanager(pd.enqueue_url, key_file))
    sim = harness.start_simulator("kahuna-bottleneck")
    exp = harness.start_exporter(sim, ontap_interval=1.0, host_interval=1.0, sustain_scale=0.02)
    prom = harness.start_prometheus(
        {"sanlens": [exp.address]},
        rule_files=[fast_rules(harness.path("sanlens.rules.yaml"))],
        alertmanager=am,
    )

    # --- trigger: the critical page for the node whose Kahuna domain is saturated
    def critical_trigger() -> dict[str, Any] | None:
        for e in pd.bodies():
            payload = e.get("payload") or {}
            wanted = (e.get("event_action"), payload.get("class"), payload.get("severity"))
            if wanted == ("trigger", ALERT, "critical"):
                return e
        return None

    t0 = time.monotonic()
    page = harness.wait_until(critical_trigger, TRIGGER_TIMEOUT_S, 1.0, "a critical PagerDuty trigger")
    print(f"trigger after {time.monotonic() - t0:.1f}s")
    payload, details = page["payload"], page["payload"]["custom_details"]
    subject = details["subject"]
    incident = details["incident"]
    assert incident == f"{DIAGNOSIS}:{subject}", "a node's bottleneck is its own incident"

    # it is the exporter's finding, for the node the exporter names
    findings = [f for f in exp.diagnoses() if f["id"] == DIAGNOSIS and f["state"] == 2]
    assert findings, exp.diagnoses()
    nodes = {f["subject"]["node"] for f in findings}
    assert subject in {f"{sim.cluster_name}/{n}" for n in nodes}
    node = subject.split("/", 1)[1]
    firing = [a["labels"] for a in prom.alerts("firing") if a["labels"]["alertname"] == ALERT]
    assert {"critical", "warning"} <= {lb["severity"] for lb in firing if lb.get("node") == node}, firing

    assert page["routing_key"] == ROUTING_KEY
    assert page["dedup_key"]
    title = REGISTRY[DIAGNOSIS].title
    assert payload["summary"] == f"[{sim.cluster_name}] {incident}: {title}."
    assert payload["group"] == sim.cluster_name
    assert page["client"] == "sanlens"
    # evidence quoted from the exporter's own gauges, with units
    assert f"Critical {DIAGNOSIS} on {subject}" in details["evidence"]
    for text in ("Kahuna busy (of one core) ", "average CPU ", "processors "):
        assert text in details["evidence"], details["evidence"]
    # the quoted Kahuna busy is the exporter's (humanizePercentage of the gauge Prometheus scraped)
    kahuna = next(f["evidence"]["kahuna_busy_ratio"] for f in findings if f["subject"]["node"] == node)
    m = re.search(r"Kahuna busy \(of one core\) ([0-9.]+)%;", details["evidence"])
    assert m and float(m.group(1)) == pytest.approx(kahuna * 100, abs=5), (kahuna, details["evidence"])
    assert float(m.group(1)) >= 90, "critical means the serial domain is at 90 % of a core or more"
    assert details["runbook"].strip().endswith(f"docs/runbooks/{DIAGNOSIS}.md")
    assert (
        "/d/sanlens-ontap-cpu-domains/" in details["dashboard"] and f"var-node={node}" in details["dashboard"]
    )
    hrefs = [link["href"] for link in page.get("links", [])]
    assert any(h.endswith(f"{DIAGNOSIS}.md") for h in hrefs) and any("/d/" in h for h in hrefs)
    # the warning for the same subject is inhibited: no event for this subject carries severity warning
    # once the critical is out (the first event may still be the warning if it won the race)
    same_incident = events_for(pd.bodies(), incident)
    assert {e["dedup_key"] for e in same_incident} == {page["dedup_key"]}, "one root cause, one incident"
    amalerts = am.alerts(subject=subject)
    muted = [a for a in amalerts if a["labels"]["severity"] == "warning"]
    assert muted and all(a["status"]["state"] == "suppressed" for a in muted), amalerts

    # --- resolve: the array recovers, the finding exits, the page resolves under the same key
    sim.set_scenario("healthy")
    t1 = time.monotonic()

    def resolved() -> dict[str, Any] | None:
        for e in events_for(pd.bodies(), incident):
            if e.get("event_action") == "resolve":
                return e
        return None

    done = harness.wait_until(resolved, RESOLVE_TIMEOUT_S, 1.0, "the PagerDuty resolve")
    print(f"resolve after {time.monotonic() - t1:.1f}s")
    assert done["dedup_key"] == page["dedup_key"]
    assert done["routing_key"] == ROUTING_KEY
    assert not [f for f in exp.diagnoses() if f["id"] == DIAGNOSIS and f["state"] > 0]
    assert not pd.rejected


# The mixed demo's root causes (docs/simulator.md): by the severity policy three page and one is
# a ticket; the 14 latency findings behind them (the rebuild's LUNs and host disks, the
# over-subscribed host's disks) are symptoms and open nothing of their own.
MIXED_PAGES = {
    "san_oversubscription:{cluster}/sql01": {"sql01/disk 1", "sql01/disk 2"},
    # the Linux host behind the same front end (node_exporter, dm-multipath): its own page
    "san_oversubscription:{cluster}/ora01": {"ora01/disk mpatha", "ora01/disk mpathb"},
    "cpu_domain_serial_bottleneck:{cluster}/{cluster}-02": {"{cluster}/{cluster}-02"},
    "background_operation_impact:{cluster}/aggr_oltp": {
        "{cluster}/aggr_oltp",
        "sql03/disk 1",
        "sql03/disk 2",
        "{cluster}/svm1/vol/oltp_db/lun0",
        "{cluster}/svm1/vol/oltp_aux1/lun0",
    },
}
MIXED_TICKETS = {"disk_busy_imbalance:{cluster}/aggr_sas_exp"}
MIXED_TIMEOUT_S = 150.0
MIXED_SETTLE_S = 20.0  # after the last root cause paged: time for a stray symptom page to show


def test_mixed_demo_pages_once_per_root_cause_and_tickets_the_rest(harness: Harness) -> None:  # noqa: F811
    pd = harness.start_fake_pagerduty()
    tickets = TicketWebhook()
    harness.add_cleanup("ticket-webhook", tickets.stop)
    key_file = harness.write("pagerduty-routing-key", ROUTING_KEY + "\n")
    key_file.chmod(0o600)
    am = harness.start_alertmanager(fast_alertmanager(pd.enqueue_url, key_file, tickets.url))
    sim = harness.start_simulator("mixed")
    exp = harness.start_exporter(sim, ontap_interval=1.0, host_interval=1.0, sustain_scale=0.02)
    harness.start_prometheus(
        {"sanlens": [exp.address]},
        rule_files=[fast_rules(harness.path("sanlens.rules.yaml"))],
        alertmanager=am,
    )
    c = sim.cluster_name
    pages = {k.format(cluster=c): {s.format(cluster=c) for s in v} for k, v in MIXED_PAGES.items()}
    ticketed = {k.format(cluster=c) for k in MIXED_TICKETS}

    def triggered() -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for e in pd.bodies():
            if e.get("event_action") == "trigger":
                out.setdefault(e["dedup_key"], e)  # the latest trigger of each incident wins
                out[e["dedup_key"]] = e
        return out

    def all_paged_and_ticketed() -> bool | None:
        incidents = {e["payload"]["custom_details"]["incident"] for e in triggered().values()}
        ticket_incidents = {a["labels"].get("incident") for a in tickets.alerts()}
        return (pages.keys() <= incidents and ticketed <= ticket_incidents) or None

    t0 = time.monotonic()
    harness.wait_until(all_paged_and_ticketed, MIXED_TIMEOUT_S, 1.0, "a page per root cause and the ticket")
    print(f"every root cause paged or ticketed after {time.monotonic() - t0:.1f}s")
    time.sleep(MIXED_SETTLE_S)

    # the exporter's own story: 18+ findings, all in the four root causes' incidents
    findings = exp.diagnoses()
    symptoms = [f for f in findings if f["id"] == "latency_slo"]
    assert len(symptoms) >= 10, findings
    by_incident: dict[str, set[tuple[str, str]]] = {}
    for s in exp_metric_samples(exp, "sanlens_diagnosis_incident"):
        by_incident.setdefault(s["incident"], set()).add((s["diagnosis"], s["subject"]))
    assert set(by_incident) == pages.keys() | ticketed, by_incident

    # one PagerDuty incident per paging root cause, each naming what it slows down
    incidents = triggered()
    print(f"PagerDuty incidents: {len(incidents)} for {len(findings)} findings")
    assert len(incidents) == len(pages), sorted(
        e["payload"]["custom_details"]["incident"] for e in incidents.values()
    )
    for event in incidents.values():
        details = event["payload"]["custom_details"]
        wanted = pages[details["incident"]]
        for subject in wanted:
            assert subject in details["affected"], (details["incident"], subject, details["affected"])
        assert details["affected"].startswith(f"{len(by_incident[details['incident']])}: "), details[
            "affected"
        ]
        assert "SanlensLatencySlo" not in details["alerts"], "a symptom whose cause pages stays off the pager"
    # warnings never page; they reach the ticket queue, grouped by incident too
    assert {e["payload"]["severity"] for e in pd.bodies()} == {"critical"}
    assert {a["labels"]["severity"] for a in tickets.alerts()} <= {"warning"}
    imbalance = [a for a in tickets.alerts() if a["labels"]["alertname"] == "SanlensDiskBusyImbalance"]
    assert imbalance and imbalance[0]["annotations"]["affected"].startswith("1: ")
    assert not pd.rejected
    # the symptoms are in Alertmanager, muted by their paging cause
    slo = [a for a in am.alerts() if a["labels"]["alertname"] == "SanlensLatencySlo"]
    assert slo and all(a["status"]["state"] == "suppressed" for a in slo), [a["status"] for a in slo]


def exp_metric_samples(exp: Any, family: str) -> list[dict[str, str]]:
    from prometheus_client.parser import text_string_to_metric_families

    return [
        s.labels
        for f in text_string_to_metric_families(exp.metrics_text())
        if f.name == family
        for s in f.samples
    ]


PATH_PAGES = {"host_path_loss", "fc_port_down", "lun_not_online"}
PATH_TICKETS = {"disk_failed", "aggregate_degraded", "lun_not_online"}


def test_san_path_faults_page_and_the_rest_is_ticketed(harness: Harness) -> None:  # noqa: F811
    """The simulator's path-faults scenario: lost paths page, a failed disk and a degraded aggregate are
    tickets; every alert names its incident."""
    pd = harness.start_fake_pagerduty()
    tickets = TicketWebhook()
    harness.add_cleanup("ticket-webhook", tickets.stop)
    key_file = harness.write("pagerduty-routing-key", ROUTING_KEY + "\n")
    key_file.chmod(0o600)
    am = harness.start_alertmanager(fast_alertmanager(pd.enqueue_url, key_file, tickets.url))
    sim = harness.start_simulator("path-faults")
    hosts = [
        {"name": h, "url": f"{sim.url}/windows/{h}/metrics", "poll_interval": "1s", "paths": 2}
        for h in sim.hosts
    ]
    exp = harness.start_exporter(sim, ontap_interval=1.0, sustain_scale=0.02, extra={"hosts": hosts})
    harness.start_prometheus(
        {"sanlens": [exp.address]},
        rule_files=[fast_rules(harness.path("sanlens.rules.yaml"))],
        alertmanager=am,
    )

    def paged() -> set[str]:
        return {
            e["payload"]["custom_details"]["incident"].split(":", 1)[0]
            for e in pd.bodies()
            if e.get("event_action") == "trigger"
        }

    def ticketed() -> set[str]:
        return {a["labels"].get("incident", "").split(":", 1)[0] for a in tickets.alerts()}

    t0 = time.monotonic()
    harness.wait_until(
        lambda: (paged() >= PATH_PAGES and ticketed() >= PATH_TICKETS) or None,
        MIXED_TIMEOUT_S,
        1.0,
        "the path faults paged and ticketed",
    )
    print(f"path faults paged and ticketed after {time.monotonic() - t0:.1f}s")
    c = sim.cluster_name
    pages = {
        e["payload"]["custom_details"]["incident"] for e in pd.bodies() if e.get("event_action") == "trigger"
    }
    assert f"host_path_loss:{c}/sql01" in pages
    assert f"fc_port_down:{c}/{c}-02/0d" in pages
    assert f"lun_not_online:{c}/svm1/n02a_vol1" in pages
    assert paged() == PATH_PAGES, "only the path faults page"
    tickets_by_alert = {a["labels"]["alertname"]: a for a in tickets.alerts()}
    assert (
        tickets_by_alert["SanlensLunNotOnline"]["labels"]["incident"] == f"lun_not_online:{c}/svm1/full_vol"
    )
    assert tickets_by_alert["SanlensDiskFailed"]["labels"]["incident"] == f"disk_failed:{c}/1.0.12"
    assert tickets_by_alert["SanlensAggregateDegraded"]["labels"]["incident"] == (
        f"aggregate_degraded:{c}/aggr_sas_nospare"
    )
    assert {e["payload"]["severity"] for e in pd.bodies()} == {"critical"}
