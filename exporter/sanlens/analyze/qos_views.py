"""The QoS workloads of an offline run, joined to the counter views the engine judges.

The engine holds one ``OntapView`` per cluster, and each new one replaces the last: a view with
only QoS workloads would hide the LUNs of the view before it. So, as ``sanlens serve`` polls QoS
on a slower schedule of its own and judges its latest result with every poll, a QoS interval
rides on the next counter view of its cluster while that cluster's counter captures are live
(their last view is not stale, :func:`sanlens.freshness.stale_after`), and is judged on a view of
its own otherwise (QoS captures alone, or outside the counter captures' time).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable, Iterator

from sanlens.freshness import stale_after
from sanlens.model import OntapVersion, OntapView, Snapshot
from sanlens.qos import QosWorkload

QosInterval = tuple[float, float | None, tuple[QosWorkload, ...]]  # time, seconds it spans, workloads


def with_qos(
    counters: Iterable[Snapshot], qos: Iterable[QosInterval], cluster: str, version: OntapVersion | None
) -> Iterator[Snapshot]:
    """The counter snapshots carrying the QoS workloads of their time, plus QoS-only snapshots
    where no counter view is live; both streams in time order."""
    tagged: Iterator[tuple[float, int, Snapshot | None, QosInterval | None]] = heapq.merge(
        ((s.timestamp, 0, s, None) for s in counters),
        ((q[0], 1, None, q) for q in qos),
        key=lambda x: (x[0], x[1]),
    )
    live: tuple[float, float | None] | None = None  # the last counter view: time, interval
    latest: QosInterval | None = None
    pending: QosInterval | None = None
    for t, _tag, item, q in tagged:
        if item is not None:
            view = item.view
            if isinstance(view, OntapView):
                live = (t, view.interval_s)
                if latest is not None and t - latest[0] <= stale_after(latest[1]) and view.cluster == cluster:
                    item = dataclasses.replace(item, view=dataclasses.replace(view, qos_workloads=latest[2]))
                pending = None
            yield item
            continue
        assert q is not None
        latest = q
        if live is not None and t - live[0] <= stale_after(live[1]):
            pending = q  # the next counter view carries it
        else:
            pending = None
            yield _alone(q, cluster, version)
    if pending is not None:
        yield _alone(pending, cluster, version)


def _alone(q: QosInterval, cluster: str, version: OntapVersion | None) -> Snapshot:
    t, interval, workloads = q
    return Snapshot(
        cluster, "ontap", t, view=OntapView(cluster, t, interval, version, qos_workloads=workloads)
    )
