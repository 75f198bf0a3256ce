"""Each diagnosis just under and just over its thresholds, with ONTAP-only, host-only and joined data.

Windows are zeroed (sustain_scale=0) where a test is about a boundary; the
sustain and recovery of the real windows are checked per diagnosis too.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest
from tests.builders import (
    AGGR_KEY,
    DISK_KEY,
    LUN_KEY,
    NODE_KEY,
    V98,
    V912,
    VOL_KEY,
    disk,
    disks,
    engine,
    feed,
    finding,
    hostview,
    lun,
    mapped,
    node,
    ontap,
    op,
    snap,
    state,
    subjects,
    vol,
)

from sanlens.diagnose.history import History
from sanlens.diagnose.host_queue_limited import luns_needed
from sanlens.diagnose.registry import REGISTRY
from sanlens.model import AggregateInfo, HostView, OntapView


def now_state(diagnosis: str, subject: str, *views: OntapView | HostView, **cfg: Any) -> int | None:
    """State after one evaluation with zero windows: the raw level the thresholds give."""
    e = engine(sustain_scale=0.0, **cfg)
    for v in views:
        e.update(snap(v))
    return state(e, diagnosis, subject)


# ------------------------------------------------------------------ san_oversubscription
def over_disk(**kw: Any) -> dict[str, Any]:
    base = dict(read_iops=300.0, write_iops=0.0, read_latency_s=1.5, write_latency_s=None, idle_ratio=0.7)
    return base | kw


def test_oversubscription_host_only_without_capacity_only_warns() -> None:
    assert now_state("san_oversubscription", DISK_KEY, hostview(0, disk(**over_disk()))) == 1


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
def queued(**kw: Any) -> dict[str, Any]:
    base = dict(read_iops=3000.0, write_iops=0.0, read_latency_s=0.003, write_latency_s=None)
    return base | dict(idle_ratio=0.0, queue_length=31.0) | kw


def hql(host_kw: dict[str, Any], lun_lat: float = 0.001, **ontap_kw: Any) -> int | None:
    h = hostview(0, mapped(**queued(**host_kw)))
    o = ontap(0, luns=(lun(read_iops=3000.0, write_iops=0.0, read_latency_s=lun_lat),), **ontap_kw)
    return now_state("host_queue_limited", DISK_KEY, o, h)


def test_queue_limited_fires_when_all_conditions_hold() -> None:
    assert hql({}) == 1  # 3 ms vs 1 ms, 31 of 32


@pytest.mark.parametrize(("qlen", "expected"), [(28.7, 0), (28.9, 1)])  # 0.9 x 32 = 28.8
def test_queue_limited_queue_fill_boundary(qlen: float, expected: int) -> None:
    assert hql({"queue_length": qlen}) == expected


@pytest.mark.parametrize(("r_host", "expected"), [(0.0039, 0), (0.0041, 1)])  # 2 x 2 ms
def test_queue_limited_latency_ratio_boundary(r_host: float, expected: int) -> None:
    assert hql({"read_latency_s": r_host}, lun_lat=0.002) == expected


@pytest.mark.parametrize(("r_host", "expected"), [(0.00149, 0), (0.00151, 1)])  # 0.5 ms + 1 ms
def test_queue_limited_latency_gap_boundary(r_host: float, expected: int) -> None:
    assert hql({"read_latency_s": r_host}, lun_lat=0.0005) == expected


def test_queue_limited_not_when_the_array_is_saturated() -> None:
    assert hql({}, nodes=(node(cpu_busy_ratio=0.85),)) == 0
    assert hql({}, nodes=(node(domain_busy={"kahuna": 0.95}),)) == 0
    assert hql({}, nodes=(node(cpu_busy_ratio=0.75, domain_busy={"kahuna": 0.85}),)) == 1


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
    demand = 31.0 / 0.0003  # the concurrency at the array's service time
    need = max(math.ceil(demand * 0.0003 / (0.75 * 32)), math.ceil(demand / 35000))
    assert f["evidence"]["luns_needed"] == need == 3
    assert f["evidence"]["demand_estimate_iops"] == pytest.approx(demand)
    assert "2048" in f["recommendation"] and "3 to carry" in f["recommendation"]


def test_queue_limited_too_few_luns_figures_need_a_smaller_gap() -> None:
    """The scenario table's too-few-luns figures (host 1.0 ms vs ONTAP 0.3 ms) miss the 1 ms gap."""
    h = hostview(0, mapped(**queued(read_iops=30000.0, read_latency_s=0.0010)))
    o = ontap(0, version=V98, luns=(lun(read_iops=30000.0, write_iops=0.0, read_latency_s=0.0003),))
    assert now_state("host_queue_limited", DISK_KEY, o, h) == 0
    cfg = {"thresholds": {"host_queue_limited": {"min_latency_gap_seconds": 0.0005}}}
    assert now_state("host_queue_limited", DISK_KEY, o, h, **cfg) == 1


# ------------------------------------------------------------------ lun / volume ceilings
@pytest.mark.parametrize(
    ("version", "iops", "expected"),
    [
        (V98, 27999.0, 0),
        (V98, 28001.0, 1),
        (V98, 35000.0, 2),
        (V912, 30000.0, 0),
        (V912, 79999.0, 0),
        (V912, 80001.0, 1),
        (None, 79999.0, 0),  # unknown version: the newer ceiling
    ],
)
def test_lun_ceiling_by_version(version: Any, iops: float, expected: int) -> None:
    o = ontap(0, version=version, luns=(lun(read_iops=iops, write_iops=0.0),))
    assert now_state("lun_iops_ceiling", LUN_KEY, o) == expected


def test_lun_ceiling_9_9_1_is_the_boundary_release() -> None:
    from sanlens.model import OntapVersion

    o = ontap(0, version=OntapVersion(9, 9, 1), luns=(lun(read_iops=30000.0, write_iops=0.0),))
    assert now_state("lun_iops_ceiling", LUN_KEY, o) == 0
    o = ontap(0, version=OntapVersion(9, 9, 0), luns=(lun(read_iops=30000.0, write_iops=0.0),))
    assert now_state("lun_iops_ceiling", LUN_KEY, o) == 1


def test_lun_ceiling_host_only_and_joined_subjects() -> None:
    e = engine(sustain_scale=0.0)
    e.update(snap(hostview(0, disk(read_iops=85000.0, write_iops=0.0))))  # unmapped: judged on host IOPS
    assert state(e, "lun_iops_ceiling", DISK_KEY) == 1
    e2 = engine(sustain_scale=0.0)
    e2.update(snap(ontap(0)))
    e2.update(snap(hostview(0, mapped(read_iops=85000.0))))
    assert subjects(e2, "lun_iops_ceiling") == {LUN_KEY}  # the LUN, not the disk


def test_lun_ceiling_recommends_more_luns_and_upgrade() -> None:
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0, version=V98, luns=(lun(read_iops=30000.0, write_iops=0.0),))))
    f = finding(e, "lun_iops_ceiling")
    assert f is not None and "9.9.1" in f["recommendation"] and "LUNs" in f["recommendation"]
    assert f["evidence"]["lun_ceiling_fraction"] == pytest.approx(30000 / 35000)


@pytest.mark.parametrize(
    ("version", "reads", "writes", "expected"),
    [
        (V98, 91999.0, 0.0, 0),  # 0.8 x 115K = 92K
        (V98, 92001.0, 0.0, 1),
        (V98, 64400.0, 27601.0, 2),  # 92001 with 30.001 % writes: write-heavy near the ceiling
        (V98, 115000.0, 0.0, 2),
        (V912, 191999.0, 0.0, 0),  # 0.8 x 240K = 192K
        (V912, 192001.0, 0.0, 1),
    ],
)
def test_volume_ceiling(version: Any, reads: float, writes: float, expected: int) -> None:
    v = vol(read_iops=reads, write_iops=writes, total_iops=reads + writes)
    assert now_state("volume_iops_ceiling", VOL_KEY, ontap(0, version=version, volumes=(v,))) == expected


def test_volume_ceiling_host_only_sums_disks_per_volume() -> None:
    h = hostview(0, mapped(read_iops=100000.0), mapped(disk="2", read_iops=100000.0))
    assert now_state("volume_iops_ceiling", VOL_KEY, h) == 1  # 200K + 2 x 100 writes >= 192K


# ------------------------------------------------------------------ cpu_domain_serial_bottleneck
@pytest.mark.parametrize(
    ("domains", "expected"),
    [
        ({"kahuna": 0.49, "wafl_exempt": 0.7}, 0),
        ({"kahuna": 0.51, "wafl_exempt": 0.7}, 1),
        ({"kahuna_legacy": 0.51}, 1),  # the name as this release reports it
        ({"kahuna": 0.6, "wafl_exempt": 2.0}, 1),  # 0.6 + 2.0/7 = 0.886
        ({"kahuna": 0.6, "wafl_exempt": 2.11}, 2),  # 0.6 + 2.11/7 = 0.901
        ({"kahuna": 0.1, "nwk_legacy": 0.91}, 2),  # another serial domain
        ({"kahuna": 0.1, "wafl_exempt": 5.0, "nwk_exempt": 3.0}, 0),  # parallel domains may pass 100 %
    ],
)
def test_cpu_domain_levels(domains: dict[str, float], expected: int) -> None:
    o = ontap(0, nodes=(node(domain_busy=domains),))
    assert now_state("cpu_domain_serial_bottleneck", NODE_KEY, o) == expected


def test_cpu_domain_sustains_15_minutes_and_has_no_host_subject() -> None:
    e = engine()
    hot = lambda t: [ontap(t, nodes=(node(domain_busy={"kahuna": 0.92}, cpu_busy_ratio=0.3),))]  # noqa: E731
    feed(e, 0, 840, 60, hot)
    assert state(e, "cpu_domain_serial_bottleneck", NODE_KEY) == 0
    feed(e, 900, 900, 60, hot)
    assert state(e, "cpu_domain_serial_bottleneck", NODE_KEY) == 2
    f = finding(e, "cpu_domain_serial_bottleneck")
    assert f is not None and "FlexGroup" in f["recommendation"] and "sysstat -M" in f["recommendation"]
    h = engine()
    h.update(snap(hostview(0, disk())))
    assert subjects(h, "cpu_domain_serial_bottleneck") == set()


# ------------------------------------------------------------------ volume_affinity_concentration
def affinity(share: float, domains: dict[str, float], aggr_iops: float = 10000.0) -> int | None:
    vols = (
        vol("v1", total_iops=aggr_iops * share),
        vol("v2", total_iops=aggr_iops * (1 - share)),
    )
    return now_state(
        "volume_affinity_concentration", AGGR_KEY, ontap(0, volumes=vols, nodes=(node(domain_busy=domains),))
    )


def test_affinity_boundaries() -> None:
    assert affinity(0.79, {"kahuna": 0.6}) == 0
    assert affinity(0.81, {"kahuna": 0.6}) == 1
    assert affinity(0.95, {"kahuna": 0.4, "wafl_exempt": 3.4}) == 0  # 3.4/7 = 0.486
    assert affinity(0.95, {"kahuna": 0.4, "wafl_exempt": 3.6}) == 1  # 3.6/7 = 0.514
    assert affinity(0.95, {"kahuna": 0.6}, aggr_iops=99.0) == 0  # near-idle aggregate


def test_affinity_one_volume_per_aggregate_and_empty_aggregates() -> None:
    o = ontap(
        0,
        volumes=(vol("v1", total_iops=5000.0),),
        nodes=(node(domain_busy={"kahuna": 0.9}),),
        aggregates=(AggregateInfo("c1", "aggr1", node="n1"), AggregateInfo("c1", "empty", node="n1")),
    )
    e = engine(sustain_scale=0.0)
    e.update(snap(o))
    assert state(e, "volume_affinity_concentration", AGGR_KEY) == 1
    assert state(e, "volume_affinity_concentration", "c1/empty") == 0


# ------------------------------------------------------------------ disk_busy_imbalance
def expansion(old: float = 0.25, new: float = 0.75, t: float = 0.0) -> OntapView:
    ds = disks("aggr1", [old] * 23, "rg0") + disks("aggr1", [old] * 23, "rg1", start=23)
    ds += disks("aggr1", [new] * 12, "rg2", start=46) + disks("aggr1", [new] * 12, "rg3", start=58)
    ds += disks("aggr1", [0.0] * 2, "", start=70, container="spare")
    return ontap(t, disks=ds)


def test_imbalance_after_expansion_evidence_matches_the_arithmetic() -> None:
    e = engine(sustain_scale=0.0)
    e.update(snap(expansion()))
    f = finding(e, "disk_busy_imbalance")
    assert f is not None and f["state"] == 1
    busy = [0.25] * 46 + [0.75] * 24  # spares excluded
    assert f["evidence"]["busy_cv_ratio"] == pytest.approx(statistics.pstdev(busy) / statistics.fmean(busy))
    assert f["evidence"]["busy_max_to_median_ratio"] == pytest.approx(3.0)
    # newest RAID group rg3 (0.75) over rg0..rg2: (46 x 0.25 + 12 x 0.75) / 58
    assert f["evidence"]["newest_raid_group_ratio"] == pytest.approx(0.75 / ((46 * 0.25 + 12 * 0.75) / 58))
    assert f["evidence"]["disks"] == 70
    assert "reallocation" in f["recommendation"]


def test_imbalance_boundaries() -> None:
    assert now_state("disk_busy_imbalance", AGGR_KEY, expansion(0.25, 0.5)) == 0  # busiest not > 50 %
    assert now_state("disk_busy_imbalance", AGGR_KEY, expansion(0.25, 0.51)) == 1
    assert now_state("disk_busy_imbalance", AGGR_KEY, expansion(0.25, 0.95)) == 2
    assert now_state("disk_busy_imbalance", AGGR_KEY, expansion(0.6, 0.6)) == 0  # balanced and busy
    # max/median just under / over 1.5 with a low CV: one disk of many
    base = [0.4] * 30
    assert now_state("disk_busy_imbalance", AGGR_KEY, ontap(0, disks=disks("aggr1", [*base, 0.59]))) == 0
    assert now_state("disk_busy_imbalance", AGGR_KEY, ontap(0, disks=disks("aggr1", [*base, 0.61]))) == 1
    assert (
        now_state("disk_busy_imbalance", AGGR_KEY, ontap(0, disks=disks("aggr1", [0.1, 0.9]))) == 0
    )  # < 3 disks


def test_imbalance_sustains_30_minutes() -> None:
    e = engine()
    feed(e, 0, 1740, 60, lambda t: [expansion(t=t)])
    assert state(e, "disk_busy_imbalance", AGGR_KEY) == 0
    feed(e, 1800, 1800, 60, lambda t: [expansion(t=t)])
    assert state(e, "disk_busy_imbalance", AGGR_KEY) == 1


# ------------------------------------------------------------------ background_operation_impact
def oltp(t: float, lat: float, ops: tuple = (), **kw: Any) -> OntapView:
    return ontap(t, volumes=(vol(avg_latency_s=lat),), background_ops=ops, **kw)


def rebuild_engine(lat: float, **cfg: Any) -> Any:
    e = engine(**cfg)
    feed(e, 0, 300, 60, lambda t: [oltp(t, 0.012)])  # baseline 12 ms
    feed(e, 360, 360 + 300, 60, lambda t: [oltp(t, lat, (op(percent=10 + 0.5 * (t - 360)),))])
    return e


@pytest.mark.parametrize(
    ("lat", "expected"), [(0.0167, 0), (0.0169, 1), (0.0359, 1), (0.0361, 2), (0.060, 2)]
)
def test_background_ratio_boundaries(lat: float, expected: int) -> None:  # 1.4 x 12 = 16.8; 3 x 12 = 36
    e = rebuild_engine(lat, sustain_scale=0.0)
    assert state(e, "background_operation_impact", AGGR_KEY) == expected


def test_background_progress_rate_and_eta() -> None:
    e = engine(sustain_scale=0.0)
    feed(e, 0, 300, 60, lambda t: [oltp(t, 0.012)])
    feed(e, 360, 480, 60, lambda t: [oltp(t, 0.060, (op(percent=10 + 0.05 * (t - 360)),))])
    fams = {m.name: m for m in e.metrics()}
    labels = ("c1", "aggr1", "", "", "/aggr1/plex0/rg0", "reconstruct")
    pct = dict(fams["sanlens_background_operation_percent_done"].samples)[labels]
    eta = dict(fams["sanlens_background_operation_eta_seconds"].samples)[labels]
    assert fams["sanlens_background_operation_eta_seconds"].label_names == (
        "cluster",
        "aggregate",
        "svm",
        "volume",
        "raid_group",
        "operation",
    )
    assert pct == pytest.approx(16.0)  # 10 + 0.05 x 120
    assert eta == pytest.approx((100 - 16.0) / 0.05)
    f = finding(e, "background_operation_impact")
    assert f is not None and f["evidence"]["baseline_latency_seconds"] == pytest.approx(0.012)
    assert f["evidence"]["latency_ratio"] == pytest.approx(5.0)
    assert "priority" in f["recommendation"] and "ETA" in f["recommendation"]


def test_background_sustain_and_recovery_when_the_rebuild_ends() -> None:
    e = engine()
    feed(e, 0, 300, 60, lambda t: [oltp(t, 0.012)])
    feed(e, 360, 600, 60, lambda t: [oltp(t, 0.060, (op(percent=t / 10),))])
    assert state(e, "background_operation_impact", AGGR_KEY) == 0  # 240 s < 300 s
    feed(e, 660, 660, 60, lambda t: [oltp(t, 0.060, (op(percent=t / 10),))])
    assert state(e, "background_operation_impact", AGGR_KEY) == 2
    feed(e, 720, 960, 60, lambda t: [oltp(t, 0.012)])  # done: no op, gauges gone
    assert state(e, "background_operation_impact", AGGR_KEY) == 2  # exit window not over
    assert not any(m.name.startswith("sanlens_background_operation") for m in e.metrics())
    feed(e, 1020, 1020, 60, lambda t: [oltp(t, 0.012)])
    assert state(e, "background_operation_impact", AGGR_KEY) == 0


def test_background_without_baseline_does_not_fire_and_move_touches_one_volume() -> None:
    e = engine(sustain_scale=0.0)
    feed(e, 0, 300, 60, lambda t: [oltp(t, 0.060, (op(),))])  # running since the first poll
    assert state(e, "background_operation_impact", AGGR_KEY) == 0
    e2 = engine(sustain_scale=0.0)
    two = lambda t, lat, move: [  # noqa: E731
        ontap(
            t,
            volumes=(
                vol("v1", avg_latency_s=lat, move_state="replicating" if move else "", move_percent=20.0),
                vol("v2", avg_latency_s=0.012),
            ),
        )
    ]
    feed(e2, 0, 300, 60, lambda t: two(t, 0.012, False))
    feed(e2, 360, 420, 60, lambda t: two(t, 0.020, True))
    f = finding(e2, "background_operation_impact")
    assert f is not None and f["evidence"]["latency_ratio"] == pytest.approx(0.020 / 0.012)
    assert "volume move" in f["recommendation"]


def test_history_baseline_freezes_during_the_operation() -> None:
    h = History(10)
    h.add_ontap(oltp(0, 0.010))
    h.add_ontap(oltp(60, 0.012))
    h.add_ontap(oltp(120, 0.090, (op(),)))
    assert h.baseline("c1", "s1", "v1") == pytest.approx(0.011)


# ------------------------------------------------------------------ latency_slo
@pytest.mark.parametrize(
    ("cls", "lat", "expected"),
    [("log", 0.0019, 0), ("log", 0.0021, 1), ("log", 0.0051, 2), ("tempdb", 0.0101, 1), ("data", 0.0201, 2)],
)
def test_latency_slo_classes(cls: str, lat: float, expected: int) -> None:
    v = hostview(0, disk(data_class=cls, read_latency_s=None, write_latency_s=lat, idle_ratio=0.0))
    assert now_state("latency_slo", DISK_KEY, v) == expected


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
        ontap(t, disks=disks("aggr1", [0.3, 0.32, 0.28, 0.31, 0.29, 0.3])),
        hostview(t, mapped()),
    ]
    feed(e, 0, 3600, 60, views)
    assert e.findings() == []
    ids = {m_id for m_id in REGISTRY}
    present = {d for d in ids if subjects(e, d)}
    assert present == ids  # every diagnosis has a subject to judge in a joined estate
