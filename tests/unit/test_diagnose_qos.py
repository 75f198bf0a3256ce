"""qos_throttle, indirect_io and the waterfall, each against arithmetic done here by hand."""

from __future__ import annotations

import pytest
from tests.builders import (
    LUN_KEY,
    LUN_PATH,
    engine,
    feed,
    finding,
    hostview,
    lun,
    mapped,
    now_state,
    ontap,
    policy,
    snap,
    workload,
)

from sanlens.diagnose.base import Context
from sanlens.diagnose.history import History
from sanlens.diagnose.qos_throttle import TB, ceiling
from sanlens.diagnose.waterfall import of_host_disk, of_subject, of_workload
from sanlens.model import HostView, OntapView
from sanlens.qos import QosPolicy

VOL_KEY = "c1/s1/v1"
THROTTLED = {"network": 0.0005, "cluster": 0.0003, "data": 0.0007, "qos_max": 0.035, "qos_min": 0.0035}


def _ctx(*views: OntapView | HostView) -> Context:
    ontap_views = {v.cluster: v for v in views if isinstance(v, OntapView)}
    hosts = {v.host: v for v in views if isinstance(v, HostView)}
    return Context(0.0, ontap_views, hosts, History())


# ------------------------------------------------------------------ qos_throttle
def test_qos_max_dominating_is_critical_and_names_the_policy() -> None:
    w = workload(iops=1200.0, latency_s=0.040, components=THROTTLED)
    o = ontap(0, qos_workloads=(w,), qos_policies=(policy(),))
    assert now_state("qos_throttle", VOL_KEY, o) == 2  # 35 / 40 ms = 0.875 >= 0.5
    e = engine(sustain_scale=0.0)
    e.update(snap(o))
    f = finding(e, "qos_throttle")
    assert f is not None
    assert f["evidence"]["qos_max_share_ratio"] == pytest.approx(0.035 / 0.040)
    assert f["evidence"]["ceiling_used_ratio"] == pytest.approx(1200 / 2000)
    assert "QoS policy cap" in f["recommendation"] and "2,000 IOPS" in f["recommendation"]
    assert "QoS Min adds 3.5 ms" in f["recommendation"]  # 3.5 of 40 ms >= 5 %: named too


def test_ops_within_15_percent_of_the_ceiling_warn_without_a_breakdown() -> None:
    # the statistics path: no components, the volume's ops against its policy's ceiling
    w = workload(iops=None, latency_s=None, components={})
    at = ontap(0, qos_workloads=(w,), qos_policies=(policy(),), volumes=(_vol(1750.0),))
    below = ontap(0, qos_workloads=(w,), qos_policies=(policy(),), volumes=(_vol(1650.0),))
    assert now_state("qos_throttle", VOL_KEY, at) == 1  # 1750 / 2000 = 0.875 >= 0.85
    assert now_state("qos_throttle", VOL_KEY, below) == 0  # 0.825


def _vol(iops: float):  # type: ignore[no-untyped-def]
    from tests.builders import vol

    return vol(total_iops=iops)


def test_a_shared_ceiling_counts_every_workload_of_the_policy() -> None:
    shared = policy(shared=True, workloads=2)
    a = workload(iops=900.0, components={})
    b = workload(workload="v2-wid101", volume="v2", wid="101", iops=900.0, components={})
    o = ontap(0, qos_workloads=(a, b), qos_policies=(shared,))
    # 900 each is 45 % of a private ceiling, but 1,800 of a shared 2,000 is 90 %
    assert now_state("qos_throttle", VOL_KEY, o) == 1
    assert now_state("qos_throttle", "c1/s1/v2", o) == 1
    private = ontap(0, qos_workloads=(a, b), qos_policies=(policy(),))
    assert now_state("qos_throttle", VOL_KEY, private) == 0


def test_adaptive_ceiling_scales_with_the_allocated_or_used_space() -> None:
    p = QosPolicy("c1", "s1", "aqos", kind="adaptive", peak_iops_per_tb=6144.0, absolute_min_iops=500.0)
    w = workload(policy="aqos", size_bytes=2 * TB, used_bytes=0.5 * TB)
    assert ceiling(p, w) == pytest.approx(6144.0 * 2)
    used = QosPolicy(
        "c1", "s1", "aqos", kind="adaptive", peak_iops_per_tb=6144.0, peak_allocation="used_space"
    )
    assert ceiling(used, w) == pytest.approx(6144.0 * 0.5)
    tiny = workload(policy="aqos", size_bytes=0.01 * TB)
    assert ceiling(p, tiny) == pytest.approx(500.0)  # the absolute minimum holds a small volume up


def test_a_healthy_workload_under_its_ceiling_is_ok() -> None:
    o = ontap(0, qos_workloads=(workload(),), qos_policies=(policy(),))
    assert now_state("qos_throttle", VOL_KEY, o) == 0


# ------------------------------------------------------------------ indirect_io
def test_remote_ops_share_fires_indirect_io_and_names_the_host_paths() -> None:
    o = ontap(0, luns=(lun(remote_iops=240.0),))  # 240 of 300 ops
    h = hostview(0, mapped(paths=4, optimized_paths=2, platform="linux"))
    assert now_state("indirect_io", LUN_KEY, o, h) == 1
    e = engine(sustain_scale=0.0)
    e.update(snap(o))
    e.update(snap(h))
    f = finding(e, "indirect_io")
    assert f is not None
    assert f["evidence"]["remote_share_ratio"] == pytest.approx(240 / 300)
    assert "group_by_prio" in f["recommendation"] and "2 of them ALUA optimized" in f["recommendation"]


def test_a_few_remote_ops_or_an_idle_lun_stay_ok() -> None:
    assert now_state("indirect_io", LUN_KEY, ontap(0, luns=(lun(remote_iops=30.0),))) == 0  # 10 %
    idle = lun(read_iops=5.0, write_iops=0.0, remote_iops=5.0)
    assert now_state("indirect_io", LUN_KEY, ontap(0, luns=(idle,))) == 0  # under min_iops


def test_without_remote_ops_the_cluster_component_judges() -> None:
    w = workload(latency_s=0.001, components={"network": 0.0002, "cluster": 0.0004, "data": 0.0004})
    o = ontap(0, luns=(lun(),), qos_workloads=(w,))
    assert now_state("indirect_io", LUN_KEY, o) == 1  # 0.4 of 1 ms >= 0.2


# ------------------------------------------------------------------ waterfall
def test_host_waterfall_adds_up_to_the_hosts_latency() -> None:
    # host: 300 IOPS at 45 ms; N = 300 x 0.045 = 13.5 in flight, under Q_eff = 32: no host queue
    d = mapped(read_latency_s=0.045, write_latency_s=0.045, queue_length=13.5)
    w = workload(latency_s=0.040, components=THROTTLED)
    o = ontap(0, luns=(lun(read_latency_s=0.040, write_latency_s=0.040),), qos_workloads=(w,))
    wf = of_host_disk(_ctx(o, hostview(0, d)), d)
    assert wf is not None
    assert sum(wf.parts.values()) == pytest.approx(0.045)
    assert wf.parts["transport"] == pytest.approx(0.005)
    assert "host_queue" not in wf.parts
    # ONTAP's 40 ms split by the workload's shares (which add up to 40 ms already)
    assert wf.parts["qos_max"] == pytest.approx(0.035)
    assert wf.dominant == ("qos_max", pytest.approx(0.035))
    assert list(wf.parts)[:2] == ["transport", "network"]  # path order


def test_host_queue_above_q_eff_by_littles_law() -> None:
    # 3,000 IOPS at 40 ms: N = 120 in flight against Q_eff = 32 x 1 path: R x (1 - 32/120) queued
    d = mapped(read_iops=3000.0, write_iops=0.0, read_latency_s=0.040, outstanding_io=None, queue_length=None)
    o = ontap(0, luns=(lun(read_iops=3000.0, write_iops=0.0, read_latency_s=0.010),))
    wf = of_host_disk(_ctx(o, hostview(0, d)), d)
    assert wf is not None
    queued = 0.040 * (1 - 32 / 120)
    assert wf.parts["host_queue"] == pytest.approx(queued)
    assert wf.parts["transport"] == pytest.approx(0.040 - queued - 0.010)
    assert wf.parts["array"] == pytest.approx(0.010)  # no QoS breakdown: one ONTAP part
    assert sum(wf.parts.values()) == pytest.approx(0.040)


def test_ontap_reporting_more_than_the_host_waited_is_scaled_to_fit() -> None:
    d = mapped(read_latency_s=0.002, write_latency_s=0.002)
    o = ontap(0, luns=(lun(read_latency_s=0.003, write_latency_s=0.003),))
    wf = of_host_disk(_ctx(o, hostview(0, d)), d)
    assert wf is not None
    assert "transport" not in wf.parts
    assert sum(wf.parts.values()) == pytest.approx(0.002)


def test_array_subjects_get_ontaps_components_alone() -> None:
    w = workload(latency_s=0.040, components=THROTTLED)
    wf = of_workload(w)
    assert wf is not None and sum(wf.parts.values()) == pytest.approx(0.040)
    o = ontap(0, qos_workloads=(w,))
    by_labels = of_subject(_ctx(o), {"cluster": "c1", "svm": "s1", "volume": "v1"})
    assert by_labels is not None and by_labels.parts == wf.parts


def test_findings_carry_their_waterfall_and_the_engine_exposes_its_components() -> None:
    w = workload(iops=1990.0, latency_s=0.040, components=THROTTLED)
    d = mapped(read_latency_s=0.045, write_latency_s=0.045, queue_length=13.5)
    views = lambda t: [  # noqa: E731
        ontap(t, luns=(lun(read_latency_s=0.040, write_latency_s=0.040),), qos_workloads=(w,),
              qos_policies=(policy(),)),
        hostview(t, d),
    ]  # fmt: skip
    e = engine(sustain_scale=0.0)
    feed(e, 0, 120, 60, views)
    slo = finding(e, "latency_slo", {"host": "sql01"})
    assert slo is not None and slo["waterfall"]["dominant"] == "qos_max"
    assert sum(slo["waterfall"]["parts"].values()) == pytest.approx(0.045)
    assert slo["causes"][0]["id"] == "qos_throttle"  # the ceiling explains the host's latency
    assert "Most of it is ONTAP QoS Max 35 ms of 45 ms (78 %)" in slo["recommendation"]
    series = {
        (
            dict(zip(m.label_names, v, strict=True))["subject"],
            dict(zip(m.label_names, v, strict=True))["component"],
        ): x
        for m in e.metrics()
        if m.name == "sanlens_latency_component_seconds"
        for v, x in m.samples
    }
    assert series[("sql01/disk 1", "qos_max")] == pytest.approx(0.035)
    assert series[(VOL_KEY, "qos_max")] == pytest.approx(0.035)


def test_oversubscription_counts_a_writes_wait_for_its_data_as_outside_the_array() -> None:
    """Writes at 30 ms on the host; ONTAP's LUN says 8 ms, 6 of them Network: the wait for the host's
    data over the fabric. Host / LUN is 3.75 (< 5, not over-subscribed by the LUN counter alone), but the
    array's own time is 8 - 6 = 2 ms: 15x, the fabric's."""
    d = mapped(read_iops=0.0, write_iops=300.0, write_latency_s=0.030, idle_ratio=0.9, queue_length=9.0)
    w = workload(latency_s=0.008, components={"network": 0.006, "data": 0.001, "disk": 0.001})
    o = ontap(0, luns=(lun(read_iops=0.0, write_iops=300.0, write_latency_s=0.008),), qos_workloads=(w,))
    h = hostview(0, d)
    assert now_state("san_oversubscription", "sql01/disk 1", o, h) == 2
    e = engine(sustain_scale=0.0)
    e.update(snap(o))
    e.update(snap(h))
    f = finding(e, "san_oversubscription")
    assert f is not None
    # transport 30 - 8 = 22 ms, plus all of the 6 ms Network (every op a write)
    assert f["evidence"]["outside_array_seconds"] == pytest.approx(0.028)
    assert f["evidence"]["host_to_array_latency_ratio"] == pytest.approx(0.030 / 0.002)
    no_breakdown = ontap(0, luns=(lun(read_iops=0.0, write_iops=300.0, write_latency_s=0.008),))
    assert now_state("san_oversubscription", "sql01/disk 1", no_breakdown, h) == 0  # 3.75x < 5x


def test_only_the_configured_top_n_of_ok_workloads_expose_their_components() -> None:
    slow = [
        workload(workload=f"v{i}-wid{i}", volume=f"v{i}", latency_s=0.001 * i, iops=100.0)
        for i in range(1, 6)
    ]
    o = ontap(0, qos_workloads=tuple(slow), qos_policies=(policy(),))

    def subjects(top_n: int) -> set[str]:
        e = engine(sustain_scale=0.0, waterfall_top_n=top_n)
        e.update(snap(o))
        fam = [m for m in e.metrics() if m.name == "sanlens_latency_component_seconds"]
        return {v[0] for m in fam for v, _ in m.samples}

    assert subjects(2) == {"c1/s1/v5", "c1/s1/v4"}  # the two slowest, every finding ok
    assert subjects(0) == set()


def test_a_volumes_cluster_time_judges_only_a_volume_of_one_lun() -> None:
    """Without remote ops, the Cluster component of a volume holding two LUNs cannot say which of them
    crosses the interconnect: evidence, not a finding; with one LUN it is that LUN's."""
    w = workload(latency_s=0.001, components={"network": 0.0002, "cluster": 0.0004, "data": 0.0004})
    two = (lun(), lun(lun="/vol/v1/lun1"))
    assert now_state("indirect_io", LUN_KEY, ontap(0, luns=two, qos_workloads=(w,))) is None
    assert now_state("indirect_io", LUN_KEY, ontap(0, luns=(lun(),), qos_workloads=(w,))) == 1
    remote = (lun(remote_iops=240.0), lun(lun="/vol/v1/lun1", remote_iops=0.0))
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0, luns=remote, qos_workloads=(w,))))
    f = finding(e, "indirect_io")
    assert f is not None and f["subject"]["lun"] == LUN_PATH
    assert f["evidence"]["cluster_seconds"] == pytest.approx(0.0004)  # the volume's, quoted beside
