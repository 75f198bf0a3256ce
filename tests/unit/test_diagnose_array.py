"""The array-side diagnoses (IOPS ceilings, serial CPU domains, affinity, disk imbalance, background
operations) just under and just over their thresholds, with their sustain and recovery windows."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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
    now_state,
    ontap,
    op,
    snap,
    state,
    subjects,
    vol,
)

from sanlens.diagnose.history import BASELINE_WINDOWS, History
from sanlens.model import AggregateInfo, OntapView


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
    done = dict(fams["sanlens_background_operation_done_ratio"].samples)[labels]
    eta = dict(fams["sanlens_background_operation_eta_seconds"].samples)[labels]
    assert fams["sanlens_background_operation_eta_seconds"].label_names == (
        "cluster",
        "aggregate",
        "svm",
        "volume",
        "raid_group",
        "operation",
    )
    assert done == pytest.approx(0.16)  # (10 + 0.05 x 120) %
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


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3 * BASELINE_WINDOWS))
def test_history_baseline_is_the_median_of_the_last_windows(latencies: list[float]) -> None:
    """The baseline is the median of the volume's last BASELINE_WINDOWS latencies, however many came."""
    h = History(10)
    for i, lat in enumerate(latencies):
        h.add_ontap(oltp(60.0 * i, lat))
    assert h.baseline("c1", "s1", "v1") == statistics.median(latencies[-BASELINE_WINDOWS:])
