"""Subjects that hold through a missing evaluation, the engine's clock, stable identities and where
subjects come from (inventory, local disks); the rest of the engine's mechanics are in
test_diagnose_engine.py."""

from __future__ import annotations

from dataclasses import replace

from tests.builders import (
    DISK_KEY,
    LUN_KEY,
    LUN_PATH,
    T0,
    disk,
    engine,
    finding,
    hostview,
    lun,
    mapped,
    ontap,
    snap,
    state,
    subjects,
    vol,
)

from sanlens.config import DiagnoseConfig
from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import REGISTRY
from sanlens.freshness import STALE_MIN_S, stale_after
from sanlens.model import HostView, OntapView, Snapshot
from sanlens.ontap.inventory import Inventory
from sanlens.ontap.views import build_view

SLOW_LUN = lun(read_latency_s=0.030, write_latency_s=0.030)  # 30 ms: critical for class data


def series(e: Engine, name: str, **match: str) -> list[dict[str, str]]:
    out = []
    for m in e.metrics():
        if m.name == name:
            for values, _v in m.samples:
                lv = dict(zip(m.label_names, values, strict=True))
                if all(lv.get(k) == v for k, v in match.items()):
                    out.append(lv)
    return out


def received(view: OntapView | HostView, at: float) -> Snapshot:
    """The snapshot as ``sanlens serve`` stores it: stamped with the exporter's receive clock."""
    return replace(snap(view), received=at)


# ------------------------------------------------------------------ a subject missing once
def test_a_firing_subject_holds_through_one_evaluation_without_its_row() -> None:
    """A LUN row skipped once (counter reset at takeover, partial aggregation) keeps the alert firing."""
    e = engine()
    sustain = REGISTRY["latency_slo"].sustain_s
    for t in range(0, int(sustain) + 60, 60):
        e.update(snap(ontap(t, luns=(SLOW_LUN,))))
    assert state(e, "latency_slo", LUN_KEY) == 2
    since = finding(e, "latency_slo", {"lun": LUN_PATH})["since"]  # type: ignore[index]
    gap = int(sustain) + 60
    e.update(snap(ontap(gap, luns=())))  # the row is missing from this poll
    # the series an alert's for: watches is still there, at the same state
    assert [lv["subject"] for lv in series(e, "sanlens_diagnosis_state", diagnosis="latency_slo")] == [
        LUN_KEY
    ]
    assert state(e, "latency_slo", LUN_KEY) == 2
    e.update(snap(ontap(gap + 60, luns=(SLOW_LUN,))))
    assert state(e, "latency_slo", LUN_KEY) == 2
    assert finding(e, "latency_slo", {"lun": LUN_PATH})["since"] == since  # type: ignore[index]


def test_a_pending_sustain_window_is_not_restarted_by_a_missing_row() -> None:
    e = engine()
    sustain = REGISTRY["latency_slo"].sustain_s  # 300 s
    e.update(snap(ontap(0, luns=(SLOW_LUN,))))
    e.update(snap(ontap(60, luns=())))
    for t in range(120, int(sustain) + 1, 60):
        e.update(snap(ontap(t, luns=(SLOW_LUN,))))
    # the condition held from 0 s; only the 60 s poll lacked the row: the window ran on
    assert state(e, "latency_slo", LUN_KEY) == 2


def test_a_subject_missing_longer_than_the_staleness_bound_is_dropped() -> None:
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0, luns=(SLOW_LUN,))))
    assert state(e, "latency_slo", LUN_KEY) == 2
    bound = stale_after(60.0)  # the cluster polls every 60 s: 5 intervals, at least 300 s
    t = 60
    while t <= bound:
        e.update(snap(ontap(t, luns=())))
        assert state(e, "latency_slo", LUN_KEY) == 2, t
        t += 60
    e.update(snap(ontap(t, luns=())))
    assert state(e, "latency_slo", LUN_KEY) is None
    assert e.findings() == []


# ------------------------------------------------------------------ the engine's clock
def test_a_host_clock_minutes_ahead_does_not_make_the_array_stale() -> None:
    """WinRM stamps host views with the host's own clock (Timestamp_Sys100NS); engine time is the
    exporter's receive clock, so a host 10 minutes ahead leaves the ONTAP view judged."""
    e = engine(sustain_scale=0.0)
    skew = 600.0
    for t in range(0, 301, 60):
        e.update(received(ontap(t, luns=(SLOW_LUN,)), T0 + t + 0.5))
        e.update(received(hostview(t + skew, mapped()), T0 + t + 1.0))
    assert state(e, "latency_slo", LUN_KEY) == 2
    assert {LUN_KEY, DISK_KEY} <= subjects(e, "latency_slo")


def test_offline_replay_keeps_the_views_own_timestamps() -> None:
    """Without receive stamps (sanlens analyze), the views' own times are the timeline."""
    e = engine(sustain_scale=0.0)
    e.update(snap(hostview(0, disk(), host="old")))
    e.update(snap(ontap(STALE_MIN_S + 60)))
    assert "old/disk 1" not in subjects(e, "latency_slo")


def test_a_silent_source_goes_stale_on_the_clock_even_with_no_other_poll() -> None:
    """Every target failing: no snapshot arrives, yet the findings go when /metrics drops the series."""
    now = [T0]
    e = Engine(DiagnoseConfig(sustain_scale=0.0), deferred=True, clock=lambda: now[0])
    e.update(received(hostview(0, disk(read_latency_s=0.05, idle_ratio=0.0)), now[0]))
    assert e.evaluate_pending()
    assert finding(e, "latency_slo") is not None
    now[0] += stale_after(15.0) - 1
    assert not e.due() and not e.evaluate_pending()
    assert finding(e, "latency_slo") is not None
    now[0] += 2
    assert e.due()
    assert e.evaluate_pending()
    assert e.findings() == [] and subjects(e, "latency_slo") == set()


def test_forget_drops_a_removed_targets_findings_at_once() -> None:
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0, luns=(SLOW_LUN,))))
    e.update(snap(hostview(0, disk(read_latency_s=0.05, idle_ratio=0.0))))
    assert {f["subject"].get("host") or f["subject"]["cluster"] for f in e.findings()} == {"sql01", "c1"}
    e.forget("sql01")
    assert {f["subject"].get("host") or f["subject"]["cluster"] for f in e.findings()} == {"c1"}
    assert not series(e, "sanlens_diagnosis_state", host="sql01")


# ------------------------------------------------------------------ identity
def test_a_volume_move_keeps_a_lun_findings_identity() -> None:
    """The LUN's node changes with a volume move; the finding's labels must not, or for: restarts."""
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0, luns=(SLOW_LUN,))))
    moved = replace(SLOW_LUN, node="n2")
    e.update(snap(ontap(60, luns=(moved,), volumes=(vol(node="n2", aggregate="aggr2"),))))
    labelsets = {
        tuple(sorted(lv.items())) for lv in series(e, "sanlens_diagnosis_state", diagnosis="latency_slo")
    }
    assert len(labelsets) == 1
    (only,) = labelsets
    assert dict(only)["node"] == "" and dict(only)["lun"] == LUN_PATH
    # where it is now is on the info series, and in /diagnoses
    where = series(e, "sanlens_diagnosis_location_info", diagnosis="latency_slo", subject=LUN_KEY)
    assert [(lv["node"], lv["aggregate"]) for lv in where] == [("n2", "aggr2")]
    assert finding(e, "latency_slo", {"lun": LUN_PATH})["location"] == {"node": "n2", "aggregate": "aggr2"}  # type: ignore[index]


# ------------------------------------------------------------------ where subjects come from
def test_an_offline_lun_without_a_counter_row_is_judged_from_the_inventory() -> None:
    """An offline LUN serves no I/O and may answer no `lun` counter row: the inventory names it."""
    inv = Inventory()
    inv.luns = [
        {"svm": "s1", "volume": "v1", "lun": LUN_PATH, "serial": "80010ABC", "node": "n1", "state": "offline"}
    ]
    view = build_view("c1", T0, 60.0, None, [], inv)
    assert [(x.lun, x.state) for x in view.luns] == [(LUN_PATH, "offline")]
    e = engine(sustain_scale=0.0)
    e.update(snap(view))
    assert state(e, "lun_not_online", LUN_KEY) == 2


def test_a_local_disk_is_not_judged_as_a_san_lun() -> None:
    """A local NVMe tempdb disk at 80K IOPS: its serial is on no polled LUN, so the SAN diagnoses
    (queue, fabric, single-LUN ceiling) leave it alone; its latency objective still holds."""
    local = disk(
        disk="2",
        lun_serial="S4EWNX0R123456",
        data_class="tempdb",
        read_iops=60000.0,
        write_iops=20000.0,
        read_latency_s=0.0004,
        write_latency_s=0.0004,
        queue_length=32.0,
        idle_ratio=0.0,
    )
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0)))
    e.update(snap(hostview(0, local)))
    key = "sql01/disk 2"
    for did in ("lun_iops_ceiling", "host_queue_limited", "san_oversubscription"):
        assert key not in subjects(e, did), did
    assert state(e, "latency_slo", key) == 0
    # with no cluster polled (host-only), or no identity known (a PerfMon log), the host-only
    # signatures still apply: 80K IOPS is 80 % of the 100K single-LUN ceiling
    host_only = engine(sustain_scale=0.0)
    host_only.update(snap(hostview(0, local)))
    assert state(host_only, "lun_iops_ceiling", key) == 1


def test_a_subject_keeps_only_the_labels_it_names_and_its_series_carry_every_label() -> None:
    """Subject labels are kept for every subject at scale, so a LUN's hold its four names, not nine;
    its state series still carries every subject label, the ones it lacks empty."""
    from sanlens.diagnose.base import LABELS, lun_subject

    e = engine()
    for t in range(0, int(REGISTRY["latency_slo"].sustain_s) + 60, 60):
        e.update(snap(ontap(t, luns=(SLOW_LUN,))))
    _key, subject = lun_subject(SLOW_LUN)
    assert list(subject) == [k for k in LABELS if k in ("cluster", "svm", "volume", "lun")]
    assert all(subject.values())
    (lv,) = series(e, "sanlens_diagnosis_state", diagnosis="latency_slo")
    assert set(LABELS) <= set(lv)
    assert {k: lv[k] for k in LABELS if lv[k]} == subject
    assert lv["host"] == lv["node"] == lv["port"] == ""
