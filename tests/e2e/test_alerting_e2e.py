"""Paging end to end on loopback: simulator -> exporter -> Prometheus (the real rules) -> Alertmanager
(the example config) -> a PagerDuty Events v2 stand-in.

The rules and the Alertmanager config are the shipped files with only the clocks shortened
(every ``for:`` to 1s, group waits to a second) and the PagerDuty URL and key file pointed at the
test's own; everything else - expressions, templates, routing, inhibition, the receiver's
templates - is what users deploy.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT
from harness import Harness, harness  # noqa: F401  (fixture)
from sanlens.diagnose.registry import REGISTRY

pytestmark = pytest.mark.e2e

RULES = ROOT / "rules" / "sanlens.rules.yaml"
AM_CONFIG = ROOT / "examples" / "alertmanager" / "alertmanager.yml"
DIAGNOSIS = "cpu_domain_serial_bottleneck"
ALERT = "SanlensCpuDomainSerialBottleneck"
ROUTING_KEY = "R0UTINGKEY0123456789abcdef012345"  # what the test's key file holds (fake)
TRIGGER_TIMEOUT_S = 120.0
RESOLVE_TIMEOUT_S = 120.0


def fast_rules(path: Path) -> Path:
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    for group in doc["groups"]:
        group.pop("interval", None)
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "1s"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=100_000), encoding="utf-8")
    return path


def fast_alertmanager(enqueue_url: str, key_file: Path) -> dict[str, Any]:
    cfg = yaml.safe_load(AM_CONFIG.read_text(encoding="utf-8"))
    cfg["route"].update(group_wait="1s", group_interval="2s", repeat_interval="1h")
    for route in cfg["route"].get("routes", []):
        route.update(group_wait="1s", group_interval="2s")
    (pd,) = next(r for r in cfg["receivers"] if r["name"] == "pagerduty")["pagerduty_configs"]
    pd["routing_key_file"] = str(key_file)
    pd["url"] = enqueue_url
    return cfg


def events_for(pd_events: list[dict[str, Any]], subject: str) -> list[dict[str, Any]]:
    return [
        e for e in pd_events if (e.get("payload") or {}).get("custom_details", {}).get("subject") == subject
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
    assert payload["summary"] == f"[{sim.cluster_name}] {subject}: {title}."
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
    same_subject = events_for(pd.bodies(), subject)
    assert {e["dedup_key"] for e in same_subject} == {page["dedup_key"]}, "one subject, one incident"
    amalerts = am.alerts(subject=subject)
    muted = [a for a in amalerts if a["labels"]["severity"] == "warning"]
    assert muted and all(a["status"]["state"] == "suppressed" for a in muted), amalerts

    # --- resolve: the array recovers, the finding exits, the page resolves under the same key
    sim.set_scenario("healthy")
    t1 = time.monotonic()

    def resolved() -> dict[str, Any] | None:
        for e in events_for(pd.bodies(), subject):
            if e.get("event_action") == "resolve":
                return e
        return None

    done = harness.wait_until(resolved, RESOLVE_TIMEOUT_S, 1.0, "the PagerDuty resolve")
    print(f"resolve after {time.monotonic() - t1:.1f}s")
    assert done["dedup_key"] == page["dedup_key"]
    assert done["routing_key"] == ROUTING_KEY
    assert not [f for f in exp.diagnoses() if f["id"] == DIAGNOSIS and f["state"] > 0]
    assert not pd.rejected
