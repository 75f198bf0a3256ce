"""The host-path diagnoses (san_oversubscription, host_queue_limited, latency_slo) just under and just
over their thresholds, with ONTAP-only, host-only and joined data; the array-side ones are in
test_diagnose_array.py.

Windows are zeroed (sustain_scale=0) where a test is about a boundary; the
sustain and recovery of the real windows are checked per diagnosis too.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from tests.builders import (
    DISK_KEY,
    LUN_KEY,
    V98,
    disk,
    disks,
    engine,
    feed,
    finding,
    hostview,
    lun,
    mapped,
    node,
    now_state,
    ontap,
    policy,
    snap,
    state,
    subjects,
    vol,
    workload,
)

from sanlens.diagnose.host_queue_limited import luns_needed
from sanlens.diagnose.registry import REGISTRY
from sanlens.model import AggregateInfo, FcPortStats


# ------------------------------------------------------------------ san_oversubscription
def over_disk(**kw: Any) -> dict[str, Any]:
    base = dict(read_iops=300.0, write_iops=0.0, read_latency_s=1.5, write_latency_s=None, idle_ratio=0.7)
    return base | kw


def test_oversubscription_host_only_without_capacity_only_warns() -> None:
    assert now_state("san_oversubscription", DISK_KEY, hostview(0, disk(**over_disk()))) == 1


def oversubscription_advice(e_cfg: dict[str, Any], *views: Any) -> tuple[int, str]:
    e = engine(sustain_scale=0.0, **e_cfg)
    for v in views:
        e.update(snap(v))
    f = finding(e, "san_oversubscription")
    assert f is not None
    return f["state"], f["recommendation"]


def test_oversubscription_held_at_warning_says_why_and_what_lifts_it() -> None:
    """Host-only at 1.2 s: past the critical objective, yet a warning; the advice says so."""
    slow = hostview(0, disk(**over_disk(read_latency_s=1.2)))
    state_, advice = oversubscription_advice({}, slow)
    assert state_ == 1
    assert "Held at warning" in advice and "data critical objective (20 ms)" in advice
    assert "no ONTAP data is joined" in advice
    assert "ONTAP target" in advice and "ONTAP capture" in advice
    assert "diagnose.backend_iops_capacity" in advice
    # with the capacity it pages, and nothing is held
    state_, advice = oversubscription_advice({"backend_iops_capacity": 10000.0}, slow)
    assert state_ == 2 and "Held at warning" not in advice
    # a latency past the warning objective only is a warning on its own merits
    state_, advice = oversubscription_advice({}, hostview(0, disk(**over_disk(read_latency_s=0.015))))
    assert state_ == 1 and "Held at warning" not in advice


@pytest.mark.parametrize(("idle", "expected"), [(0.49, 0), (0.51, 2)])
def test_oversubscription_idle_boundary(idle: float, expected: int) -> None:
    v = hostview(0, disk(**over_disk(idle_ratio=idle)))
    assert now_state("san_oversubscription", DISK_KEY, v, backend_iops_capacity=10000.0) == expected


@pytest.mark.parametrize(
    ("capacity", "expected"), [(588.0, 0), (612.0, 2)]
)  # E = 300/588 = 0.51; 300/612 = 0.49
def test_oversubscription_backend_utilization_boundary(capacity: float, expected: int) -> None:
    v = hostview(0, disk(**over_disk()))
    assert now_state("san_oversubscription", DISK_KEY, v, backend_iops_capacity=capacity) == expected


@pytest.mark.parametrize(("lat", "expected"), [(0.0199, 1), (0.0201, 2), (0.0099, 0)])
def test_oversubscription_latency_class_boundary(lat: float, expected: int) -> None:
    v = hostview(0, disk(**over_disk(read_latency_s=lat)))
    assert now_state("san_oversubscription", DISK_KEY, v, backend_iops_capacity=10000.0) == expected


@pytest.mark.parametrize(("lun_lat", "expected"), [(0.0101, 0), (0.0099, 2)])  # 50 ms / 5 = 10 ms
def test_oversubscription_joined_needs_5x_the_lun_latency(lun_lat: float, expected: int) -> None:
    h = hostview(0, mapped(**over_disk(read_latency_s=0.050)))
    o = ontap(0, luns=(lun(read_iops=300.0, write_iops=0.0, read_latency_s=lun_lat),))
    assert now_state("san_oversubscription", DISK_KEY, o, h) == expected


def test_oversubscription_joined_busy_disks_mean_no_headroom() -> None:
    h = hostview(0, mapped(**over_disk()))
    idle_disks = ontap(0, disks=disks("aggr1", [0.2] * 6))
    busy_disks = ontap(0, disks=disks("aggr1", [0.6] * 6))
    assert now_state("san_oversubscription", DISK_KEY, idle_disks, h) == 2
    assert now_state("san_oversubscription", DISK_KEY, busy_disks, h) == 0


def test_oversubscription_has_no_subject_with_ontap_only_data() -> None:
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0)))
    assert subjects(e, "san_oversubscription") == set()


def test_oversubscription_sustains_10_minutes_and_recovers_when_ports_are_added() -> None:
    e = engine(backend_iops_capacity=10000.0)
    bad = lambda t: [hostview(t, disk(**over_disk()))]  # noqa: E731
    feed(e, 0, 585, 15, bad)
    assert state(e, "san_oversubscription", DISK_KEY) == 0
    feed(e, 600, 600, 15, bad)
    assert state(e, "san_oversubscription", DISK_KEY) == 2
    f = finding(e, "san_oversubscription")
    assert f is not None and "target ports" in f["recommendation"] and "fan-in" in f["recommendation"]
    good = lambda t: [hostview(t, disk(**over_disk(read_latency_s=0.003)))]  # noqa: E731
    feed(e, 615, 615 + 585, 15, good)
    assert state(e, "san_oversubscription", DISK_KEY) == 2
    feed(e, 1215, 1215, 15, good)
    assert state(e, "san_oversubscription", DISK_KEY) == 0


# ------------------------------------------------------------------ host_queue_limited
def queued(n: float = 31.0, **kw: Any) -> dict[str, Any]:
    """A host disk with ``n`` I/Os outstanding on average: IOPS = n / latency (Little's law), 3 ms."""
    lat = kw.get("read_latency_s", 0.003)
    base = dict(read_iops=n / lat, write_iops=0.0, read_latency_s=0.003, write_latency_s=None)
    return base | dict(idle_ratio=0.0, queue_length=n) | kw


def hql(host_kw: dict[str, Any], lun_lat: float = 0.001, **ontap_kw: Any) -> int | None:
    h = hostview(0, mapped(**queued(**host_kw)))
    o = ontap(0, luns=(lun(read_iops=3000.0, write_iops=0.0, read_latency_s=lun_lat),), **ontap_kw)
    return now_state("host_queue_limited", DISK_KEY, o, h)


def test_queue_limited_fires_when_all_conditions_hold() -> None:
    assert hql({}) == 1  # 3 ms vs 1 ms, 31 of 32


@pytest.mark.parametrize(("n", "expected"), [(28.7, 0), (28.9, 1)])  # 0.9 x 32 = 28.8
def test_queue_limited_queue_fill_boundary(n: float, expected: int) -> None:
    assert hql({"n": n}) == expected


def test_queue_limited_reads_the_mean_outstanding_io_not_an_instantaneous_sample() -> None:
    # 10,333 IOPS at 3 ms keep 31 I/Os outstanding on average (Little's law); the one queue sample
    # taken at poll time may catch a dip (2) or a burst (60): neither is the interval's load
    assert hql({"queue_length": 2.0}) == 1
    assert hql({"n": 20.0, "queue_length": 60.0}) == 0  # 20 of 32 on average: not full


def test_queue_limited_sustains_through_dips_of_the_sampled_queue() -> None:
    e = engine()
    o = lambda t: ontap(t, luns=(lun(read_iops=3000.0, write_iops=0.0, read_latency_s=0.001),))  # noqa: E731
    # every other poll samples the queue between bursts (2 of 32): the mean stays at 31
    views = lambda t: [o(t), hostview(t, mapped(**queued(queue_length=2.0 if t % 30 else 31.0)))]  # noqa: E731
    feed(e, 0, REGISTRY["host_queue_limited"].sustain_s, 15, views)
    assert state(e, "host_queue_limited", DISK_KEY) == 1


def test_queue_limited_counts_only_the_paths_that_carry_io() -> None:
    # queue depth 16 on 4 MPIO paths, 2 of them ALUA active/optimized: the non-optimized pair carries
    # no I/O, so Q_eff = 16 x 2 = 32 and 31 outstanding fill it (over 4 paths it would be 64, half full)
    alua = {"queue_depth": 16, "paths": 4, "observed_paths": 4}
    assert hql(alua | {"optimized_paths": 2}) == 1
    assert hql(alua) == 0  # the host reports no path states: all 4 count
    f_disk = mapped(**queued(**alua, optimized_paths=2))
    assert f_disk.q_eff == 16 * 2


@pytest.mark.parametrize(("r_host", "expected"), [(0.0039, 0), (0.0041, 1)])  # 2 x 2 ms
def test_queue_limited_latency_ratio_boundary(r_host: float, expected: int) -> None:
    assert hql({"read_latency_s": r_host}, lun_lat=0.002) == expected


@pytest.mark.parametrize(("r_host", "expected"), [(0.00149, 0), (0.00151, 1)])  # 0.5 ms + 1 ms
def test_queue_limited_latency_gap_boundary(r_host: float, expected: int) -> None:
    assert hql({"read_latency_s": r_host}, lun_lat=0.0005) == expected


def test_queue_limited_not_when_the_array_is_saturated() -> None:
    assert hql({}, nodes=(node(average_processor_busy_ratio=0.85),)) == 0
    assert hql({}, nodes=(node(domain_busy={"kahuna": 0.95}),)) == 0
    assert hql({}, nodes=(node(average_processor_busy_ratio=0.75, domain_busy={"kahuna": 0.85}),)) == 1


def test_queue_limited_not_when_the_disk_is_mostly_idle() -> None:
    # 31 outstanding on average yet idle 60 % of the time: the I/O waits outside the host queue
    # (san_oversubscription's signature, idle >= 0.5), so the queue is not what limits it
    assert hql({"idle_ratio": 0.6}) == 0
    assert hql({"idle_ratio": 0.4}) == 1


def test_queue_limited_critical_at_5x() -> None:
    assert hql({"read_latency_s": 0.0051}) == 2


def test_queue_limited_littles_law_when_no_queue_length() -> None:
    # 10000 IOPS x 3 ms = 30 outstanding >= 28.8
    assert hql({"queue_length": None, "read_iops": 10000.0}) == 1
    assert hql({"queue_length": None, "read_iops": 9000.0}) == 0  # 27


def test_queue_limited_host_only_full_queue_at_low_latency_warns() -> None:
    assert now_state("host_queue_limited", DISK_KEY, hostview(0, disk(**queued()))) == 1
    slow = disk(**queued(read_latency_s=0.030))  # the array may be the slow part: no claim
    assert now_state("host_queue_limited", DISK_KEY, hostview(0, slow)) == 0


def test_luns_needed_formula() -> None:
    # X = 30000, S = 0.3 ms, Q_eff = 32: X*S = 9 outstanding / 24 -> 1; 30000 / 35000 -> 1
    assert luns_needed(30000, 0.0003, 32, 35000) == 1
    # X = 103333: ceil(31 / 24) = 2; ceil(103333 / 35000) = 3
    assert luns_needed(103333, 0.0003, 32, 35000) == 3
    # queue-bound: X = 50000, S = 2 ms -> 100 outstanding / 24 -> 5
    assert luns_needed(50000, 0.002, 32, 100000) == math.ceil(100 / 24)


def test_queue_limited_recommendation_sizes_luns_and_mentions_port_limit() -> None:
    e = engine(sustain_scale=0.0)
    h = hostview(0, mapped(**queued(read_iops=30000.0, read_latency_s=0.0014, queue_length=31.0)))
    o = ontap(0, version=V98, luns=(lun(read_iops=30000.0, write_iops=0.0, read_latency_s=0.0003),))
    e.update(snap(o))
    e.update(snap(h))
    f = finding(e, "host_queue_limited")
    assert f is not None
    demand = 30000.0 * 0.0014 / 0.0003  # the mean concurrency (X x R_host) at the array's service time
    need = max(math.ceil(demand * 0.0003 / (0.75 * 32)), math.ceil(demand / 35000))
    assert f["evidence"]["luns_needed"] == need == 4
    assert f["evidence"]["demand_estimate_iops"] == pytest.approx(demand)
    assert "2048" in f["recommendation"] and "4 to carry" in f["recommendation"]


def test_queue_limited_too_few_luns_figures_need_a_smaller_gap() -> None:
    """The scenario table's too-few-luns figures (host 1.0 ms vs ONTAP 0.3 ms) miss the 1 ms gap."""
    h = hostview(0, mapped(**queued(read_iops=30000.0, read_latency_s=0.0010)))
    o = ontap(0, version=V98, luns=(lun(read_iops=30000.0, write_iops=0.0, read_latency_s=0.0003),))
    assert now_state("host_queue_limited", DISK_KEY, o, h) == 0
    cfg = {"thresholds": {"host_queue_limited": {"min_latency_gap_seconds": 0.0005}}}
    assert now_state("host_queue_limited", DISK_KEY, o, h, **cfg) == 1


# ------------------------------------------------------------------ latency_slo
@pytest.mark.parametrize(
    ("cls", "lat", "expected"),
    [("log", 0.0019, 0), ("log", 0.0021, 1), ("log", 0.0051, 2), ("tempdb", 0.0101, 1), ("data", 0.0201, 2)],
)
def test_latency_slo_classes(cls: str, lat: float, expected: int) -> None:
    v = hostview(0, disk(data_class=cls, read_latency_s=None, write_latency_s=lat, idle_ratio=0.0))
    assert now_state("latency_slo", DISK_KEY, v) == expected


def test_latency_slo_advice_names_the_objective_its_severity_crossed() -> None:
    def advice(lat: float) -> tuple[str, str]:
        e = engine(sustain_scale=0.0)
        e.update(snap(hostview(0, disk(read_latency_s=lat, write_latency_s=0.001, idle_ratio=0.1))))
        f = finding(e, "latency_slo")
        assert f is not None
        return f["severity"], f["recommendation"]

    severity, text = advice(0.016)
    assert severity == "warning"
    assert "read latency 16 ms is above the data warning objective (10 ms)" in text
    assert "below its critical one (20 ms)" in text and "critical objective" not in text
    severity, text = advice(0.060)
    assert severity == "critical"
    assert "read latency 60 ms is above the data critical objective (20 ms; warning from 10 ms)" in text
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0, luns=(lun(read_latency_s=0.003, write_latency_s=0.001),))))
    e.update(snap(hostview(0, mapped(data_class="log", idle_ratio=0.0))))
    lun_finding = next(x for x in e.findings() if x["id"] == "latency_slo" and "host" not in x["subject"])
    assert lun_finding["severity"] == "warning"
    assert (
        "read latency 3 ms is above the log warning objective (2 ms), below its critical one (5 ms)"
        in (lun_finding["recommendation"])
    )


def test_latency_slo_tempdb_can_be_configured_apart_and_min_iops_filters_idle_ops() -> None:
    v = hostview(0, disk(data_class="tempdb", read_latency_s=0.0101, idle_ratio=0.0))
    cfg = {"thresholds": {"latency_slo": {"tempdb_warning_seconds": 0.015, "tempdb_critical_seconds": 0.03}}}
    assert now_state("latency_slo", DISK_KEY, v, **cfg) == 0
    rare = hostview(0, disk(read_iops=4.0, read_latency_s=0.5, write_latency_s=0.001, idle_ratio=0.99))
    assert now_state("latency_slo", DISK_KEY, rare) == 0  # 4 reads/s at 500 ms: below min_iops


def test_latency_slo_lun_takes_the_class_of_its_host_disk() -> None:
    o = ontap(0, luns=(lun(write_latency_s=0.003, read_latency_s=0.001),))
    assert now_state("latency_slo", LUN_KEY, o) == 0  # data class: 3 ms is fine
    h = hostview(0, mapped(data_class="log", idle_ratio=0.0))
    assert now_state("latency_slo", LUN_KEY, o, h) == 1  # log class: 3 ms >= 2 ms


# ------------------------------------------------------------------ cross-checks
def test_healthy_estate_fires_nothing_over_an_hour() -> None:
    e = engine()
    views = lambda t: [  # noqa: E731
        ontap(
            t,
            disks=disks("aggr1", [0.3, 0.32, 0.28, 0.31, 0.29, 0.3]),
            luns=(lun(state="online", thin=True, remote_iops=0.0),),
            volumes=(vol(size_bytes=100e9, available_bytes=40e9),),
            qos_workloads=(workload(),),
            qos_policies=(policy(),),
            fc_ports=(FcPortStats("c1", "n1", "0c", speed_gbps=32.0, state="online"),),
            aggregates=(AggregateInfo("c1", "aggr1", node="n1", state="online"),),
        ),
        hostview(t, mapped(observed_paths=2, configured_paths=2)),
    ]
    feed(e, 0, 3600, 60, views)
    assert e.findings() == []
    ids = {m_id for m_id in REGISTRY}
    present = {d for d in ids if subjects(e, d)}
    assert present == ids  # every diagnosis has a subject to judge in a joined estate
