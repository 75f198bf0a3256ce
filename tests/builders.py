"""Builders for synthetic OntapView/HostView timelines fed to the diagnose engine (no tests here).

Time is synthetic: T0 plus seconds, so sustain and exit windows can be crossed
exactly without waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from sanlens.config import DiagnoseConfig
from sanlens.diagnose.engine import Engine
from sanlens.model import (
    AggregateInfo,
    BackgroundOp,
    DiskStats,
    HostDiskStats,
    HostView,
    LunStats,
    NodeStats,
    OntapVersion,
    OntapView,
    Snapshot,
    VolumeStats,
)
from sanlens.qos import QosPolicy, QosWorkload

T0 = 1_700_000_000.0
V98 = OntapVersion(9, 8, 0)
V912 = OntapVersion(9, 12, 1)
LUN_PATH = "/vol/v1/lun0"


def disk(**kw: Any) -> HostDiskStats:
    """A healthy, unmapped host disk: 300 IOPS at 2 ms, 80 % idle, queue 1 of 32."""
    base = HostDiskStats(
        host="sql01",
        disk="1",
        read_iops=200.0,
        write_iops=100.0,
        read_latency_s=0.002,
        write_latency_s=0.002,
        idle_ratio=0.8,
        queue_length=1.0,
    )
    return replace(base, **kw)


def mapped(**kw: Any) -> HostDiskStats:
    """A host disk mapped to c1/s1 LUN /vol/v1/lun0."""
    return disk(lun_serial="80010ABC", cluster="c1", svm="s1", volume="v1", lun=LUN_PATH, **kw)


def lun(**kw: Any) -> LunStats:
    base = LunStats(
        "c1",
        "s1",
        "v1",
        LUN_PATH,
        serial="80010ABC",
        node="n1",
        read_iops=200.0,
        write_iops=100.0,
        read_latency_s=0.0005,
        write_latency_s=0.0005,
    )
    return replace(base, **kw)


def vol(name: str = "v1", **kw: Any) -> VolumeStats:
    base = VolumeStats(
        "c1",
        "s1",
        name,
        aggregate="aggr1",
        node="n1",
        read_iops=200.0,
        write_iops=100.0,
        total_iops=300.0,
        avg_latency_s=0.0005,
    )
    return replace(base, **kw)


def node(**kw: Any) -> NodeStats:
    base = NodeStats(
        "c1",
        "n1",
        processors=8,
        cpu_busy_ratio=0.3,
        average_processor_busy_ratio=0.3,
        domain_busy={"kahuna": 0.1, "wafl_exempt": 0.7, "nwk_exempt": 0.3, "idle": 4.0},
    )
    return replace(base, **kw)


def disks(aggr: str, busy: Iterable[float], rg: str = "rg0", start: int = 0, **kw: Any) -> list[DiskStats]:
    kw.setdefault("container", "aggregate")
    return [
        DiskStats(
            "c1",
            f"1.0.{start + i}",
            aggregate=aggr,
            node="n1",
            raid_group=f"/{aggr}/plex0/{rg}",
            disk_type="SAS",
            busy_ratio=b,
            **kw,
        )
        for i, b in enumerate(busy)
    ]


def workload(**kw: Any) -> QosWorkload:
    """Volume v1's QoS workload in policy ``cap`` (2,000 IOPS): 500 IOPS at 0.5 ms, no throttle time."""
    base = QosWorkload(
        "c1",
        "s1",
        "v1-wid100",
        volume="v1",
        policy="cap",
        wid="100",
        iops=500.0,
        latency_s=0.0005,
        components={"network": 0.0001, "data": 0.0002, "disk": 0.0002},
    )
    return replace(base, **kw)


def policy(**kw: Any) -> QosPolicy:
    """Fixed policy ``cap``: a 2,000 IOPS ceiling per workload."""
    return replace(QosPolicy("c1", "s1", "cap", max_iops=2000.0, workloads=1), **kw)


def ontap(
    t: float, version: OntapVersion | None = V912, interval: float | None = 60.0, **kw: Any
) -> OntapView:
    """An ONTAP view at T0 + t; by default one healthy LUN, volume, node and aggregate."""
    kw.setdefault("luns", (lun(),))
    kw.setdefault("volumes", (vol(),))
    kw.setdefault("nodes", (node(),))
    kw.setdefault("aggregates", (AggregateInfo("c1", "aggr1", node="n1", disk_type="SAS"),))
    return OntapView("c1", T0 + t, interval, version, **{k: tuple(v) for k, v in kw.items()})


def hostview(t: float, *ds: HostDiskStats, host: str = "sql01", interval: float | None = 15.0) -> HostView:
    return HostView(host, T0 + t, interval, tuple(ds))


def snap(view: OntapView | HostView) -> Snapshot:
    if isinstance(view, OntapView):
        return Snapshot(view.cluster, "ontap", view.timestamp, view=view)
    return Snapshot(view.host, "host", view.timestamp, view=view)


def engine(**kw: Any) -> Engine:
    return Engine(DiagnoseConfig(**kw))


def feed(
    eng: Engine,
    start: float,
    end: float,
    step: float,
    views: Callable[[float], Iterable[OntapView | HostView]],
) -> float:
    """Feed ``views(t)`` for t in [start, end] every ``step`` seconds; returns the last t."""
    t = start
    last = start
    while t <= end + 1e-9:
        for v in views(t):
            eng.update(snap(v))
        last = t
        t += step
    return last


def state(eng: Engine, diagnosis: str, subject: str) -> int | None:
    """State of one subject, None when the diagnosis did not judge it.

    Non-ok states are read from sanlens_diagnosis_state (the series alerts use); ok
    subjects have no series, so they come from the engine's list of judged subjects."""
    judged = eng.subject_states(diagnosis)
    for m in eng.metrics():
        if m.name == "sanlens_diagnosis_state":
            names = m.label_names
            for values, v in m.samples:
                lv = dict(zip(names, values, strict=True))
                if lv["diagnosis"] == diagnosis and lv["subject"] == subject:
                    assert judged.get(subject) == int(v)
                    return int(v)
    assert judged.get(subject) in (0, None), f"{diagnosis} {subject}: non-ok without a series"
    return judged.get(subject)


def subjects(eng: Engine, diagnosis: str) -> set[str]:
    return set(eng.subject_states(diagnosis))


def finding(eng: Engine, diagnosis: str, subject: dict[str, str] | None = None) -> dict[str, Any] | None:
    for f in eng.findings():
        if f["id"] == diagnosis and (
            subject is None or all(f["subject"].get(k) == v for k, v in subject.items())
        ):
            return f
    return None


def now_state(diagnosis: str, subject: str, *views: OntapView | HostView, **cfg: Any) -> int | None:
    """State after one evaluation with zero windows: the raw level the thresholds give."""
    e = engine(sustain_scale=0.0, **cfg)
    for v in views:
        e.update(snap(v))
    return state(e, diagnosis, subject)


def op(operation: str = "reconstruct", percent: float | None = 10.0, **kw: Any) -> BackgroundOp:
    kw.setdefault("aggregate", "aggr1")
    kw.setdefault("raid_group", "/aggr1/plex0/rg0")
    return BackgroundOp("c1", operation, percent=percent, **kw)  # type: ignore[arg-type]


DISK_KEY = "sql01/disk 1"
LUN_KEY = "c1/s1/vol/v1/lun0"
VOL_KEY = "c1/s1/v1"
NODE_KEY = "c1/n1"
AGGR_KEY = "c1/aggr1"
