"""rules/sanlens.rules.yaml: promtool check + unit tests, full test coverage, registry parity, conventions;
examples/alertmanager/alertmanager.yml: amtool check-config and routing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT, require_tool
from sanlens.diagnose.registry import REGISTRY, alert_name

if str(ROOT) not in sys.path:  # mixin/ sits beside exporter/, not in the package
    sys.path.insert(0, str(ROOT))
import mixin.config

RULES = ROOT / "rules" / "sanlens.rules.yaml"
RULE_TESTS = sorted((ROOT / "rules" / "tests").glob("*.test.yaml"))
AM_CONFIG = ROOT / "examples" / "alertmanager" / "alertmanager.yml"
DASHBOARD_UIDS = {p.stem for p in (ROOT / "dashboards").glob("*.json")}
SEVERITY_OF_STATE = {1: "warning", 2: "critical"}
RECORD_NAME = re.compile(r"^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$")


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def rules() -> list[dict[str, Any]]:
    return [r for g in load(RULES)["groups"] for r in g["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [r for r in rules() if "alert" in r]


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd)


# ------------------------------------------------------------------ coverage bookkeeping
def coverage_gaps(rule_docs: list[dict[str, Any]], test_docs: list[dict[str, Any]]) -> list[str]:
    """What the promtool tests leave unproven: each (alert, severity) firing, each alert not firing,
    each recording rule evaluated."""
    firing: set[tuple[str, str]] = set()
    quiet: set[str] = set()
    recorded: set[str] = set()
    for doc in test_docs:
        for test in doc.get("tests") or []:
            for case in test.get("alert_rule_test") or []:
                exp = case.get("exp_alerts") or []
                if not exp:
                    quiet.add(case["alertname"])
                for a in exp:
                    firing.add((case["alertname"], (a.get("exp_labels") or {}).get("severity", "")))
            for case in test.get("promql_expr_test") or []:
                recorded.update(re.findall(r"[a-z_0-9]+:[a-z_0-9]+:[a-z_0-9]+", case["expr"]))
    gaps = []
    for r in rule_docs:
        if "alert" in r:
            sev = (r.get("labels") or {}).get("severity", "")
            if (r["alert"], sev) not in firing:
                gaps.append(f"{r['alert']} ({sev}) is never tested firing")
            if r["alert"] not in quiet:
                gaps.append(f"{r['alert']} is never tested not firing")
        elif r["record"] not in recorded:
            gaps.append(f"recording rule {r['record']} is never evaluated")
    return gaps


def test_every_rule_has_a_promtool_test() -> None:
    assert RULE_TESTS, "rules/tests/*.test.yaml missing"
    assert coverage_gaps(rules(), [load(p) for p in RULE_TESTS]) == []


def test_coverage_check_notices_an_untested_alert_and_rule() -> None:
    extra = [
        {"alert": "SanlensSomethingNew", "expr": "vector(1)", "labels": {"severity": "warning"}},
        {"record": "cluster:sanlens_new:rate5m", "expr": "vector(1)"},
    ]
    gaps = coverage_gaps(rules() + extra, [load(p) for p in RULE_TESTS])
    assert gaps == [
        "SanlensSomethingNew (warning) is never tested firing",
        "SanlensSomethingNew is never tested not firing",
        "recording rule cluster:sanlens_new:rate5m is never evaluated",
    ]


# ------------------------------------------------------------------ promtool
def test_promtool_check_rules() -> None:
    promtool = require_tool("promtool")
    p = run(promtool, "check", "rules", str(RULES))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"SUCCESS: {len(rules())} rules found" in p.stdout


@pytest.mark.parametrize("test_file", RULE_TESTS, ids=lambda p: p.name)
def test_promtool_unit_tests(test_file: Path) -> None:
    promtool = require_tool("promtool")
    p = run(promtool, "test", "rules", test_file.name, cwd=test_file.parent)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout


def test_promtool_tests_can_fail(tmp_path: Path) -> None:
    """A wrong expected evidence value must fail promtool (the tests compare annotations exactly)."""
    promtool = require_tool("promtool")
    src = ROOT / "rules" / "tests" / "diagnoses.test.yaml"
    doc = load(src)
    doc["rule_files"] = [str(RULES)]
    text = yaml.safe_dump(doc, sort_keys=False, width=100_000)
    assert "host latency 1.8s;" in text
    bad = tmp_path / "bad.test.yaml"
    bad.write_text(text.replace("host latency 1.8s;", "host latency 1.9s;"), encoding="utf-8")
    p = run(promtool, "test", "rules", str(bad))
    assert p.returncode != 0 and "FAILED" in p.stdout + p.stderr


# ------------------------------------------------------------------ single source, conventions
def test_rules_file_is_the_generators_output() -> None:
    p = run(sys.executable, str(ROOT / "rules" / "build.py"), "--check")
    assert p.returncode == 0, p.stderr


def test_generator_rebases_links(tmp_path: Path) -> None:
    out = tmp_path / "site.rules.yaml"
    p = run(
        sys.executable,
        str(ROOT / "rules" / "build.py"),
        "-o",
        str(out),
        "--runbook-base-url",
        "https://wiki.example.com/rb/",
        "--dashboard-base-url",
        "https://grafana.example.com",
        "--job-selector",
        'job="storage-exporter"',
        "--dashboard-uid-prefix",
        "acme-",
    )
    assert p.returncode == 0, p.stderr
    got = [r for g in load(out)["groups"] for r in g["rules"] if "alert" in r]
    assert len(got) == len(alerts())
    for r in got:
        assert r["annotations"]["runbook_url"].startswith("https://wiki.example.com/rb/")
        assert "//" not in r["annotations"]["runbook_url"].removeprefix("https://")
        assert r["annotations"]["dashboard_url"].startswith("https://grafana.example.com/d/acme-")
        assert_job_selected(r, 'job="storage-exporter"')
    (down,) = [r for r in got if r["alert"] == "SanlensExporterDown"]
    assert down["expr"] == 'up{job="storage-exporter"} == 0'


# the exporter's series in an expression, and in a description's `printf "..." | query` lookup
SERIES = re.compile(r'(?<![\w:"])(up|sanlens_[a-z_]+)(\{[^}]*\})?(?![\w(])')
LOOKUP = re.compile(r'printf "((?:up|sanlens_[a-z_]+)\{(?:[^"\\]|\\.)*\})"')


def assert_job_selected(rule: dict[str, Any], job: str) -> None:
    """Every exporter series an alert reads, in its expression or its evidence lookups, takes the job selector."""
    series = SERIES.findall(rule["expr"])
    assert series, rule["expr"]
    for name, sel in series:
        assert sel.startswith("{" + job), (rule["alert"], name, sel)
    for lookup in LOOKUP.findall(rule["annotations"]["description"]):
        assert lookup.replace('\\"', '"').split("{", 1)[1].startswith(job), (rule["alert"], lookup)


def test_every_alert_selects_the_exporters_job() -> None:
    for r in alerts():
        assert_job_selected(r, mixin.config.DEFAULT.job_selector)


def test_every_diagnosis_has_its_alerts_and_nothing_else() -> None:
    by_id: dict[str, set[str]] = {}
    for r in alerts():
        m = re.search(r'diagnosis="([a-z_]+)"', r["expr"])
        if m is None:
            assert r["alert"] in {
                "SanlensExporterDown",
                "SanlensTargetDown",
                "SanlensPollErrors",
                "SanlensStaleData",
                "SanlensSlowPolls",
                "SanlensBackgroundOperationRunning",
            }, r["alert"]
            continue
        did = m.group(1)
        assert did in REGISTRY, f"{r['alert']} selects unknown diagnosis {did}"
        assert r["alert"] == alert_name(did)
        by_id.setdefault(did, set()).add(r["labels"]["severity"])
    expected = {did: set(spec.alert_severities.values()) for did, spec in REGISTRY.items()}
    assert by_id == expected


# Who must act now (README, "Get paged"): these page; every other diagnosis is a ticket.
PAGING = {
    "latency_slo",
    "san_oversubscription",
    "host_queue_limited",
    "cpu_domain_serial_bottleneck",
    "background_operation_impact",
}


def test_only_the_paging_policy_pages() -> None:
    critical = {
        m.group(1)
        for r in alerts()
        if r["labels"]["severity"] == "critical" and (m := re.search(r'diagnosis="([a-z_]+)"', r["expr"]))
    }
    assert critical == PAGING | {d for d in REGISTRY if d.startswith(("host_path", "lun_not", "fc_port"))}
    for did in {
        "lun_iops_ceiling",
        "volume_iops_ceiling",
        "disk_busy_imbalance",
        "volume_affinity_concentration",
    }:
        assert not REGISTRY[did].pages, did


def test_every_diagnosis_alert_carries_its_incident_and_lists_the_affected() -> None:
    for r in alerts():
        if "diagnosis=" not in r["expr"]:
            continue
        assert "group_left (incident, role)" in r["expr"] and "sanlens_diagnosis_incident" in r["expr"], r
        assert "sanlens_diagnosis_incident" in r["annotations"]["affected"], r["alert"]
        assert "$labels.incident" in r["annotations"]["description"], r["alert"]


def test_alert_conventions() -> None:
    names = set()
    for r in alerts():
        name, ann = r["alert"], r["annotations"]
        names.add(name)
        assert re.fullmatch(r"Sanlens[A-Z][A-Za-z]+", name), name
        assert r["labels"]["severity"] in {"critical", "warning", "info"}
        assert "{{" not in ann["summary"], f"{name}: summary must be static"
        assert "$labels" in ann["description"], f"{name}: description must quote the subject"
        runbook = ann["runbook_url"]
        assert (ROOT / "docs" / "runbooks" / runbook.rsplit("/", 1)[1]).is_file(), runbook
        m = re.search(r"/d/([a-z-]+)/", ann["dashboard_url"])
        assert m and m.group(1) in DASHBOARD_UIDS, ann["dashboard_url"]
        if "diagnosis=" in r["expr"]:
            assert "sanlens_diagnosis_evidence" in ann["description"], f"{name}: no evidence quoted"
            assert r.get("for"), f"{name}: diagnosis alerts need a for: clause"
    assert {"SanlensLatencySlo", "SanlensExporterDown", "SanlensStaleData", "SanlensSlowPolls"} <= names


def test_exporter_runbook_shows_the_health_alerts_as_generated() -> None:
    text = (ROOT / "docs" / "runbooks" / "sanlens_exporter.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(Sanlens[A-Za-z]+)` \| `([^`]+)` \|", text, re.M))
    assert rows
    for r in alerts():
        if r["alert"] in rows:
            assert rows[r["alert"]] == r["expr"], r["alert"]


def test_recording_rule_names_follow_level_metric_operations() -> None:
    recs = [r["record"] for r in rules() if "record" in r]
    assert len(recs) >= 10
    for name in recs:
        assert RECORD_NAME.match(name), name
        assert name.split(":")[1].startswith("sanlens_"), name
        assert "percent" not in name, f"{name}: utilization is a ratio (0..1)"
    needed = (
        "host_disk_latency",
        "lun_latency",
        "volume_latency",
        "host_disk_ops",
        "lun_ops",
        "bytes",
        "fcp_",
    )
    for part in (*needed, "volume_ops", "idle", "domain_busy", "write"):
        assert any(part in n for n in recs), part


# ------------------------------------------------------------------ Alertmanager example
def test_alertmanager_config_checks() -> None:
    amtool = require_tool("amtool")
    p = run(amtool, "check-config", str(AM_CONFIG))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout


def routes_test(receiver: str, *labels: str) -> subprocess.CompletedProcess[str]:
    amtool = require_tool("amtool")
    return run(
        amtool,
        "config",
        "routes",
        "test",
        f"--config.file={AM_CONFIG}",
        f"--verify.receivers={receiver}",
        *labels,
    )


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        (
            [
                "alertname=SanlensSanOversubscription",
                "severity=critical",
                "cluster=c1",
                "subject=sql01/disk 1",
                "incident=san_oversubscription:c1/sql01",
                "role=cause",
            ],
            "pagerduty",
        ),
        (
            [
                "alertname=SanlensLatencySlo",
                "severity=critical",
                "cluster=c1",
                "subject=c1/svm1/vol/db/lun0",
                "incident=latency_slo:c1/svm1/vol/db/lun0",
                "role=cause",
            ],
            "pagerduty",
        ),
        (
            [
                "alertname=SanlensLatencySlo",
                "severity=warning",
                "cluster=c1",
                "subject=c1/svm1/vol/db/lun0",
                "incident=latency_slo:c1/svm1/vol/db/lun0",
            ],
            "tickets",
        ),
        (
            [
                "alertname=SanlensDiskBusyImbalance",
                "severity=warning",
                "cluster=c1",
                "incident=disk_busy_imbalance:c1/aggr1",
            ],
            "tickets",
        ),
        (["alertname=SanlensExporterDown", "severity=critical", "instance=e:9842"], "pagerduty"),
        (["alertname=SanlensTargetDown", "severity=warning", "kind=ontap", "target=c1"], "tickets"),
        (
            ["alertname=SanlensBackgroundOperationRunning", "severity=info", "cluster=c1", "aggregate=a"],
            "null",
        ),
    ],
)
def test_alertmanager_routes(labels: list[str], receiver: str) -> None:
    p = routes_test(receiver, *labels)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == receiver


def test_alertmanager_routes_verify_can_fail() -> None:
    p = routes_test("pagerduty", "severity=info")
    assert p.returncode != 0


def test_alertmanager_config_keeps_the_key_out_and_groups_per_incident() -> None:
    text = AM_CONFIG.read_text(encoding="utf-8")
    cfg = yaml.safe_load(text)
    (pd,) = next(r for r in cfg["receivers"] if r["name"] == "pagerduty")["pagerduty_configs"]
    assert "routing_key_file" in pd and "routing_key" not in pd and "service_key" not in pd
    assert "severity" in pd["severity"] and pd["send_resolved"] is True
    assert {"evidence", "runbook", "dashboard", "incident", "affected"} <= set(pd["details"])
    assert cfg["route"]["group_by"] == ["cluster", "incident"]
    assert cfg["route"]["receiver"] == "tickets", "what is not matched is a ticket, never a page"
    warnings_page = [
        r
        for r in cfg["route"]["routes"]
        if r["receiver"] == "pagerduty" and 'severity="critical"' not in r["matchers"]
    ]
    assert not warnings_page, warnings_page
    ticket = next(r for r in cfg["receivers"] if r["name"] == "tickets")
    assert ticket["webhook_configs"] and "pagerduty_configs" not in ticket
    by_target = {tuple(i["target_matchers"]): i for i in cfg["inhibit_rules"]}
    assert set(by_target[('severity="warning"',)]["equal"]) == {"cluster", "incident"}
    symptoms = by_target[('role="symptom"',)]
    assert symptoms["source_matchers"] == ['severity="critical"', 'role="cause"']
    assert set(symptoms["equal"]) == {"cluster", "incident"}
    assert any(r["receiver"] == "null" for r in cfg["route"]["routes"])
    assert "null" in {r["name"] for r in cfg["receivers"]}
