"""Every simulator scenario through the real exporter: the diagnoses of docs/simulator.md fire, no other.

Each case runs an in-process Simulator and a sanlens Exporter (demo config, 2 s
polls, windows scaled by 0.02 so the longest 30-minute sustain is 36 s) and
reads /diagnoses and /metrics over HTTP. The cases run in parallel threads so
the whole module stays near two minutes.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sanlens.config import DiagnoseConfig, Duration
from sanlens.demo import demo_config
from sanlens.runtime.exporter import Exporter
from sanlens_sim.server import Simulator

pytestmark = pytest.mark.e2e

SCALE = 0.02
POLL_S = 2.0
SETTLE_S = 50.0  # longest scaled sustain (36 s) plus polls: an unexpected finding would have shown
DEADLINE_S = 110.0
BATCH = 5  # cases run side by side

# docs/simulator.md, "Scenarios and what they must make sanlens find"
CASES: dict[str, tuple[str, dict[str, Any], set[str]]] = {
    "healthy": ("healthy", {}, set()),
    "oversub-2": ("san-oversubscription", {"fa_ports": 2}, {"san_oversubscription", "latency_slo"}),
    "oversub-4": ("san-oversubscription", {"fa_ports": 4}, {"san_oversubscription", "latency_slo"}),
    "oversub-6": ("san-oversubscription", {"fa_ports": 6}, set()),
    "too-few-luns-9.8": ("too-few-luns", {}, {"host_queue_limited", "lun_iops_ceiling"}),
    "too-few-luns-9.12": ("too-few-luns", {"ontap_version": "9.12.1"}, {"host_queue_limited"}),
    "kahuna": ("kahuna-bottleneck", {}, {"cpu_domain_serial_bottleneck", "volume_affinity_concentration"}),
    "expansion": ("aggregate-expansion", {}, {"disk_busy_imbalance"}),
    "rebuild": ("rebuild-during-oltp", {}, {"background_operation_impact", "latency_slo"}),
    "path-faults": (
        "path-faults",
        {},
        {"host_path_loss", "lun_not_online", "fc_port_down", "disk_failed", "aggregate_degraded"},
    ),
    "iscsi": ("iscsi", {}, {"san_oversubscription", "host_queue_limited", "latency_slo"}),
    "nvme-tcp": ("nvme-tcp", {}, {"san_oversubscription", "host_queue_limited", "latency_slo"}),
    "asa-r2": ("asa-r2", {}, {"san_oversubscription", "host_queue_limited", "latency_slo"}),
    "qos-throttle": ("qos-throttle", {}, {"qos_throttle", "latency_slo"}),
    "indirect-io": ("indirect-io", {}, {"indirect_io"}),
    # the reconstruct at 0.4 %/s instead of 0.1: it starts when it ships (30 s) and still outlasts the
    # run, but its ETA (two whole percents of progress) shows within the run however loaded the machine
    "mixed": (
        "mixed",
        {"rebuild_rate_pct_s": 0.4},
        {
            "san_oversubscription",
            "cpu_domain_serial_bottleneck",
            "disk_busy_imbalance",
            "background_operation_impact",
            "latency_slo",
        },
    ),
}
CRITICAL_EXPECTED = {"oversub-2": {"san_oversubscription"}, "oversub-4": {"san_oversubscription"}}


@dataclass
class Outcome:
    ever: dict[str, int] = field(default_factory=dict)  # id -> worst state seen in /diagnoses
    first: dict[str, float] = field(default_factory=dict)  # id -> seconds into the run it first showed
    final: dict[str, int] = field(default_factory=dict)
    metric_states: dict[str, int] = field(default_factory=dict)  # id -> worst sanlens_diagnosis_state
    background_gauges: bool = False
    error: str = ""
    seconds: float = 0.0
    findings: list[dict[str, Any]] = field(default_factory=list)  # the last /diagnoses
    cluster_info: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)  # /diagnoses/inputs at the end


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as r:
        return bytes(r.read())


def _run(scenario: str, knobs: dict[str, Any], expected: set[str], out: Outcome) -> None:
    start = time.monotonic()
    sim = Simulator(scenario=scenario, port=0, **knobs)
    exporter = None
    try:
        sim.start()
        cfg = demo_config(
            sim.url, sim.cluster_name, sim.hosts, "127.0.0.1:0", scenario, linux_hosts=sim.linux_hosts
        )
        for t in [*cfg.ontap, *cfg.hosts]:
            t.poll_interval = Duration(POLL_S)
        cfg.diagnose = DiagnoseConfig(sustain_scale=SCALE)
        exporter = Exporter(cfg)
        exporter.start()
        base = f"http://127.0.0.1:{exporter.port}"
        while True:
            time.sleep(POLL_S)
            findings = json.loads(_get(base + "/diagnoses"))
            out.findings = findings
            out.final = {}
            for f in findings:
                out.final[f["id"]] = max(out.final.get(f["id"], 0), int(f["state"]))
                out.ever[f["id"]] = max(out.ever.get(f["id"], 0), int(f["state"]))
            elapsed = time.monotonic() - start
            for did in out.ever:
                out.first.setdefault(did, round(elapsed))
            # a rebuild's ETA needs two polls a whole percent apart: on a loaded machine the polls stretch,
            # so the run waits for it (up to the deadline) as it waits for the expected findings
            wants_eta = "background_operation_impact" in expected and not out.background_gauges
            if wants_eta and elapsed >= SETTLE_S / 2:
                out.background_gauges = b"sanlens_background_operation_eta_seconds{" in _get(
                    base + "/metrics"
                )
                wants_eta = not out.background_gauges
            done = expected <= set(out.final) and elapsed >= SETTLE_S and not wants_eta
            if done or elapsed >= DEADLINE_S:
                break
        out.inputs = json.loads(_get(base + "/diagnoses/inputs"))
        for fam in text_string_to_metric_families(_get(base + "/metrics").decode()):
            if fam.name == "sanlens_diagnosis_state":
                for s in fam.samples:
                    did = s.labels["diagnosis"]
                    out.metric_states[did] = max(out.metric_states.get(did, 0), int(s.value))
            if fam.name == "sanlens_ontap_cluster_info" and fam.samples:
                out.cluster_info = dict(fam.samples[0].labels)
            if fam.name.startswith("sanlens_background_operation_eta_seconds") and fam.samples:
                out.background_gauges = True
    except Exception as e:  # reported by the test of this case
        out.error = f"{type(e).__name__}: {e}"
    finally:
        if exporter is not None:
            exporter.stop()
        sim.stop()
        out.seconds = time.monotonic() - start


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    """Every case's run, BATCH at a time: the windows are scaled to seconds but a poll is not, so a
    process running all of them at once (one interpreter lock, two cores) stretches polls past the
    windows and a scenario's phase change shows as a finding the run never meant."""
    results = {name: Outcome() for name in CASES}
    names = list(CASES)
    for i in range(0, len(names), BATCH):
        threads = [
            threading.Thread(target=_run, args=(*CASES[name], results[name]), name=f"e2e-{name}", daemon=True)
            for name in names[i : i + BATCH]
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(DEADLINE_S + 60)
    return results


@pytest.mark.parametrize("case", sorted(CASES))
def test_scenario_fires_exactly_its_diagnoses(case: str, outcomes: dict[str, Outcome]) -> None:
    _scenario, _knobs, expected = CASES[case]
    out = outcomes[case]
    assert not out.error, out.error
    assert set(out.final) >= expected, f"{case}: expected {sorted(expected)}, firing {out.final}"
    assert set(out.ever) == expected, (
        f"{case}: fired at some point {out.ever} (first at s {out.first}, run of {out.seconds:.0f} s), "
        f"expected {sorted(expected)}"
    )
    for did in expected:  # the same story on /metrics
        assert out.metric_states.get(did, 0) >= 1, (did, out.metric_states)
    unexpected_critical = {d for d, s in out.metric_states.items() if s == 2 and d not in expected}
    assert not unexpected_critical, f"{case}: critical but not expected: {unexpected_critical}"
    for did in CRITICAL_EXPECTED.get(case, set()):
        assert out.ever.get(did) == 2, (case, did, out.ever)
    if "background_operation_impact" in expected:
        assert out.background_gauges, (
            f"no sanlens_background_operation_eta_seconds while a rebuild runs (run of {out.seconds:.0f} s)"
        )


# the protocol each SAN scenario's front end speaks, and what its evidence must show
PROTOCOL_CASES = {
    "iscsi": ("ethernet_port_utilization_ratio", "iSCSI", "unified", "tables"),
    "nvme-tcp": ("ethernet_port_utilization_ratio", "NVMe/TCP", "unified", "tables"),
    "asa-r2": ("fc_port_utilization_ratio", "FC", "asa-r2", "statistics"),
}


@pytest.mark.parametrize("case", sorted(PROTOCOL_CASES))
def test_each_san_protocol_is_judged_with_its_own_front_end(case: str, outcomes: dict[str, Outcome]) -> None:
    """iSCSI and NVMe/TCP: the Ethernet ports under the LIFs near line rate (two 10 GbE ports carrying 2.36 GB/s
    of reads: 94 %); ASA r2: read from the statistics fields, no counter table, the same diagnoses."""
    port_key, protocol, personality, collection = PROTOCOL_CASES[case]
    out = outcomes[case]
    assert not out.error, out.error
    assert (out.cluster_info.get("personality"), out.cluster_info.get("collection")) == (
        personality,
        collection,
    )
    over = [f for f in out.findings if f["id"] == "san_oversubscription" and f["state"] > 0]
    assert over, out.findings
    if protocol == "FC":  # ASA r2: FC port throughput from /api/network/fc/ports statistics
        assert 0 < over[0]["evidence"][port_key] < 1, over[0]["evidence"]
    else:
        # 2 s polls on a loaded 2-core machine: each rate's interval jitters by a few tens of ms
        assert over[0]["evidence"][port_key] == pytest.approx(0.944, abs=0.1)
        assert over[0]["evidence"]["lif_latency_seconds"] < 0.005, "the array's LIFs answer fast"
        assert "fc_port_utilization_ratio" not in over[0]["evidence"]
    assert f"{protocol}" in over[0]["recommendation"] or protocol == "FC", over[0]["recommendation"]
    queued = [f for f in out.findings if f["id"] == "host_queue_limited" and f["state"] > 0]
    assert queued, out.findings
    if case == "nvme-tcp":
        assert "nvme connect" in queued[0]["recommendation"]


def test_what_a_cluster_cannot_give_is_named_per_diagnosis(outcomes: dict[str, Outcome]) -> None:
    """ASA r2: no aggregates and no CPU domains (statistics fields only), said per diagnosis at
    /diagnoses/inputs; a unified cluster polled through its tables starves nothing."""
    asa, mixed = outcomes["asa-r2"], outcomes["mixed"]
    assert not asa.error and not mixed.error
    (cluster,) = [v for v in asa.inputs.values() if v["kind"] == "ontap"]
    assert (cluster["personality"], cluster["collection"]) == ("asa-r2", "statistics")
    starved = cluster["starved"]
    assert starved["disk_busy_imbalance"] == sorted(
        [
            "ASA r2 has no aggregates",
            "the statistics fields carry no disk busy (counter table disk:constituent)",
        ]
    )
    assert "cpu_domain_serial_bottleneck" in starved and "san_oversubscription" not in starved
    assert not (set(starved) & set(asa.final)), "a starved diagnosis must not fire"
    (unified,) = [v for v in mixed.inputs.values() if v["kind"] == "ontap"]
    assert (unified["collection"], unified["starved"], unified["tables_missing"]) == ("tables", {}, [])
    assert {v["kind"] for v in mixed.inputs.values()} == {"ontap", "host"}


def test_a_qos_ceiling_is_named_as_the_cause_not_the_fabric(outcomes: dict[str, Outcome]) -> None:
    """The host waits about as long as ONTAP reports, most of it QoS Max: the throttle is the cause
    of every host's latency, its policy named, and the waterfall says where the time went."""
    out = outcomes["qos-throttle"]
    assert not out.error, out.error
    throttled = [f for f in out.findings if f["id"] == "qos_throttle" and f["state"] > 0]
    assert throttled and all("sql-cap" in f["recommendation"] for f in throttled), throttled
    slow = [f for f in out.findings if f["id"] == "latency_slo" and f["subject"].get("host")]
    assert slow, out.findings
    for f in slow:
        assert f["waterfall"]["dominant"] == "qos_max", f["waterfall"]
        assert f["causes"] and f["causes"][0]["id"] == "qos_throttle", f["causes"]


def test_indirect_io_shows_the_interconnect_in_the_waterfall(outcomes: dict[str, Outcome]) -> None:
    out = outcomes["indirect-io"]
    assert not out.error, out.error
    (f, *_) = [f for f in out.findings if f["id"] == "indirect_io" and f["state"] > 0]
    assert f["evidence"]["remote_share_ratio"] > 0.5, f["evidence"]
    assert f["waterfall"] and f["waterfall"]["parts"].get("cluster", 0) > 0, f["waterfall"]


def test_every_waterfall_adds_up_to_its_subjects_latency(outcomes: dict[str, Outcome]) -> None:
    """Host queue, transport and ONTAP's components add up to the host's (or the array's) mean latency
    within 5 %, in every scenario's findings."""
    checked = 0
    for case, out in outcomes.items():
        for f in out.findings:
            wf = f.get("waterfall")
            if not wf:
                continue
            checked += 1
            assert sum(wf["parts"].values()) == pytest.approx(wf["latency_seconds"], rel=0.05), (
                case,
                f["id"],
                wf,
            )
    assert checked >= 10, "waterfalls in the scenarios' findings"
