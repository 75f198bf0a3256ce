"""Attribution: which causes on a symptom's I/O path explain it, and the incident each finding joins."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import DISK_KEY, T0, disk, engine, feed, hostview, mapped, node, ontap

from sanlens.diagnose.attribution import (
    ROLE_CAUSE,
    ROLE_SYMPTOM,
    Seen,
    attribute,
    by_incident,
    incident,
    incident_order,
)
from sanlens.diagnose.base import Context, labels
from sanlens.diagnose.history import History
from sanlens.diagnose.registry import REGISTRY

LUN_KEY = "c1/s1/vol/v1/lun0"
SLO_DISK = Seen(
    "latency_slo",
    DISK_KEY,
    labels(host="sql01", disk="1", cluster="c1", svm="s1", volume="v1", lun="/vol/v1/lun0"),
    2,
    2,
    0.9,
)
SLO_LUN = Seen("latency_slo", LUN_KEY, labels(cluster="c1", node="n1", svm="s1", volume="v1", lun="/vol/v1/lun0"), 2, 2, 0.8)  # fmt: skip


def ctx() -> Context:
    return Context(T0, {"c1": ontap(0)}, {}, History(100))


def seen(did: str, key: str, state: int = 2, level: int = 2, score: float = 0.5, **lb: str) -> Seen:
    return Seen(did, key, labels(**lb), state, level, score)


def test_a_node_cause_explains_the_host_disk_and_the_lun_behind_it() -> None:
    kahuna = seen("cpu_domain_serial_bottleneck", "c1/n1", cluster="c1", node="n1")
    other = seen("cpu_domain_serial_bottleneck", "c1/n2", cluster="c1", node="n2")
    att = attribute([SLO_DISK, SLO_LUN, kahuna, other], REGISTRY, ctx())
    # the host disk carries no node label: its LUN's node is found through the LUN
    assert att.causes[("latency_slo", DISK_KEY)] == [("cpu_domain_serial_bottleneck", "c1/n1")]
    assert att.causes[("latency_slo", LUN_KEY)] == [("cpu_domain_serial_bottleneck", "c1/n1")]
    inc = "cpu_domain_serial_bottleneck:c1/n1"
    assert att.incidents[("latency_slo", DISK_KEY)] == (inc, ROLE_SYMPTOM)
    assert att.incidents[("cpu_domain_serial_bottleneck", "c1/n1")] == (inc, ROLE_CAUSE)
    assert att.affected(inc) == [
        ("cpu_domain_serial_bottleneck", "c1/n1"),
        ("latency_slo", LUN_KEY),
        ("latency_slo", DISK_KEY),
    ]


def test_the_aggregate_is_found_through_the_volume() -> None:
    rebuild = seen("background_operation_impact", "c1/aggr1", cluster="c1", node="n1", aggregate="aggr1")
    elsewhere = seen("background_operation_impact", "c1/aggr2", cluster="c1", node="n1", aggregate="aggr2")
    att = attribute([SLO_LUN, rebuild, elsewhere], REGISTRY, ctx())
    assert att.causes[("latency_slo", LUN_KEY)] == [("background_operation_impact", "c1/aggr1")]


def test_primary_cause_is_the_worst_then_paging_then_nearest() -> None:
    oversub = seen("san_oversubscription", DISK_KEY, state=1, host="sql01", disk="1", cluster="c1")
    kahuna = seen("cpu_domain_serial_bottleneck", "c1/n1", state=2, cluster="c1", node="n1")
    ceiling = seen("lun_iops_ceiling", LUN_KEY, state=2, cluster="c1", svm="s1", lun="/vol/v1/lun0")
    att = attribute([SLO_DISK, oversub, kahuna, ceiling], REGISTRY, ctx())
    # critical before warning; among criticals the paging one; the non-paging ceiling after it
    assert att.causes[("latency_slo", DISK_KEY)] == [
        ("cpu_domain_serial_bottleneck", "c1/n1"),
        ("lun_iops_ceiling", LUN_KEY),
        ("san_oversubscription", DISK_KEY),
    ]
    near = attribute([SLO_DISK, seen("san_oversubscription", DISK_KEY, state=2, host="sql01", disk="1"), kahuna], REGISTRY, ctx())  # fmt: skip
    assert near.causes[("latency_slo", DISK_KEY)][0] == ("san_oversubscription", DISK_KEY)


def test_a_pending_cause_already_explains_but_an_ok_one_does_not() -> None:
    pending = seen("cpu_domain_serial_bottleneck", "c1/n1", state=0, level=1, cluster="c1", node="n1")
    att = attribute([SLO_DISK, pending], REGISTRY, ctx())
    assert att.incidents[("latency_slo", DISK_KEY)] == ("cpu_domain_serial_bottleneck:c1/n1", ROLE_SYMPTOM)
    assert ("cpu_domain_serial_bottleneck", "c1/n1") not in att.incidents  # no series before it is active
    gone = seen("cpu_domain_serial_bottleneck", "c1/n1", state=0, level=0, cluster="c1", node="n1")
    att = attribute([SLO_DISK, gone], REGISTRY, ctx())
    assert att.incidents[("latency_slo", DISK_KEY)] == (f"latency_slo:{DISK_KEY}", ROLE_CAUSE)
    assert ("latency_slo", DISK_KEY) not in att.causes


def test_a_host_wide_cause_is_one_incident_for_all_its_disks() -> None:
    spec = REGISTRY["san_oversubscription"]
    a = incident(spec, "sql01/disk 1", labels(host="sql01", disk="1", cluster="c1"))
    b = incident(spec, "sql01/disk 2", labels(host="sql01", disk="2", cluster="c1"))
    assert a == b == "san_oversubscription:c1/sql01"
    assert (
        incident(REGISTRY["lun_iops_ceiling"], LUN_KEY, labels(cluster="c1")) == f"lun_iops_ceiling:{LUN_KEY}"
    )


def test_the_engine_exposes_incidents_and_causes() -> None:
    """Kahuna saturated on n1 and the host disk on its LUN slow: one incident, the relation exposed."""
    e = engine(sustain_scale=0.0)
    hot = node(domain_busy={"kahuna": 0.97, "wafl_exempt": 0.7, "idle": 4.0})
    slow = mapped(read_latency_s=0.05, write_latency_s=0.05, idle_ratio=0.1)
    feed(e, 0, 120, 15, lambda t: [ontap(t, nodes=(hot,)), hostview(t, slow)])
    att = e.attribution()
    # the node's Kahuna first (critical, paging); the one-volume aggregate feeding it after it
    assert att.causes[("latency_slo", DISK_KEY)] == [
        ("cpu_domain_serial_bottleneck", "c1/n1"),
        ("volume_affinity_concentration", "c1/aggr1"),
    ]
    fams = {m.name: [dict(zip(m.label_names, v, strict=True)) for v, _ in m.samples] for m in e.metrics()}
    incidents = {
        (s["diagnosis"], s["subject"]): (s["incident"], s["role"]) for s in fams["sanlens_diagnosis_incident"]
    }
    assert incidents[("latency_slo", DISK_KEY)] == ("cpu_domain_serial_bottleneck:c1/n1", "symptom")
    assert incidents[("cpu_domain_serial_bottleneck", "c1/n1")] == (
        "cpu_domain_serial_bottleneck:c1/n1",
        "cause",
    )
    causes = fams["sanlens_diagnosis_cause"]
    assert {"diagnosis": "latency_slo", "subject": DISK_KEY, "cause_diagnosis": "cpu_domain_serial_bottleneck", "cause_subject": "c1/n1"} in causes  # fmt: skip
    # every non-ok finding has exactly one incident
    states = {(s["diagnosis"], s["subject"]) for s in fams["sanlens_diagnosis_state"]}
    assert set(incidents) == states


def test_diagnoses_json_names_the_incident_and_the_causes() -> None:
    e = engine(sustain_scale=0.0)
    hot = node(domain_busy={"kahuna": 0.97, "wafl_exempt": 0.7, "idle": 4.0})
    slow = mapped(read_latency_s=0.05, write_latency_s=0.05, idle_ratio=0.1)
    feed(e, 0, 120, 15, lambda t: [ontap(t, nodes=(hot,)), hostview(t, slow)])
    by_id = {(f["id"], f["subject"].get("host", "")): f for f in e.findings()}
    slo = by_id[("latency_slo", "sql01")]
    assert slo["incident"] == "cpu_domain_serial_bottleneck:c1/n1" and slo["role"] == "symptom"
    assert slo["causes"][0] == {"id": "cpu_domain_serial_bottleneck", "subject": "c1/n1"}
    cause = by_id[("cpu_domain_serial_bottleneck", "")]
    assert (cause["incident"], cause["role"], cause["causes"]) == (
        "cpu_domain_serial_bottleneck:c1/n1",
        "cause",
        [],
    )


def slow_host_and_its_oversubscribed_disk() -> list[dict[str, Any]]:
    """sql01's disk over-subscribed (critical cause) and slow (its latency_slo symptom, which sorts first
    among equally bad findings), and sql02's disk slow with nothing to explain it (warning)."""
    e = engine(sustain_scale=0.0)
    bad = mapped(read_latency_s=1.5, write_latency_s=1.2, idle_ratio=0.7)
    lone = disk(host="sql02", read_latency_s=0.016, write_latency_s=0.016, idle_ratio=0.1)
    feed(e, 0, 60, 15, lambda t: [ontap(t), hostview(t, bad), hostview(t, lone, host="sql02")])
    return e.findings()


def test_findings_by_incident_put_each_cause_before_the_symptoms_it_explains() -> None:
    findings = slow_host_and_its_oversubscribed_disk()
    # worst first puts the symptom ahead of its own cause
    assert [(f["id"], f["role"]) for f in findings][:2] == [("latency_slo", "symptom"), ("san_oversubscription", "cause")]  # fmt: skip
    groups = by_incident(findings)
    assert [(g["incident"], g["state"], g["severity"]) for g in groups] == [
        ("san_oversubscription:c1/sql01", 2, "critical"),
        ("latency_slo:sql02/disk 1", 1, "warning"),
    ]
    first, lone = groups
    assert [(f["id"], f["subject"]["host"]) for f in first["causes"]] == [("san_oversubscription", "sql01")]
    assert [(f["id"], f["subject"]["host"]) for f in first["symptoms"]] == [("latency_slo", "sql01")]
    # a symptom nothing explains is its own incident's cause
    assert [(f["id"], f["role"]) for f in lone["causes"]] == [("latency_slo", "cause")] and not lone[
        "symptoms"
    ]
    flat = incident_order(findings)
    assert [(f["id"], f["role"], f["subject"]["host"]) for f in flat] == [
        ("san_oversubscription", "cause", "sql01"),
        ("latency_slo", "symptom", "sql01"),
        ("latency_slo", "cause", "sql02"),
    ]
    assert sorted(map(json.dumps, flat)) == sorted(map(json.dumps, findings))  # every finding, unchanged


def test_by_incident_keeps_a_symptom_whose_cause_is_pending_and_a_finding_without_incident() -> None:
    def f(did: str, state: int, score: float, inc: str, role: str) -> dict[str, Any]:
        severity = {1: "warning", 2: "critical"}[state]
        return {
            "id": did,
            "state": state,
            "severity": severity,
            "score": score,
            "incident": inc,
            "role": role,
        }

    findings = [
        f("latency_slo", 2, 1.0, "cpu_domain_serial_bottleneck:c1/n1", "symptom"),  # its cause still pending
        f("latency_slo", 2, 0.9, "san_oversubscription:c1/sql01", "symptom"),
        f("san_oversubscription", 1, 0.8, "san_oversubscription:c1/sql01", "cause"),
        f("san_oversubscription", 1, 0.7, "san_oversubscription:c1/sql01", "cause"),  # another disk, one host
        f("disk_failed", 1, 0.5, "", ""),
        f("lun_not_online", 1, 0.4, "", ""),
    ]
    groups = by_incident(findings)
    assert [(g["incident"], len(g["causes"]), len(g["symptoms"]), g["severity"]) for g in groups] == [
        ("cpu_domain_serial_bottleneck:c1/n1", 0, 1, "critical"),
        ("san_oversubscription:c1/sql01", 2, 1, "critical"),
        ("", 1, 0, "warning"),
        ("", 1, 0, "warning"),
    ]
    assert [g["causes"][0]["score"] for g in groups[1:]] == [0.8, 0.5, 0.4]
    assert [x["score"] for x in incident_order(findings)] == [1.0, 0.8, 0.7, 0.9, 0.5, 0.4]
