"""Where a QoS workload's time goes, from ``statistics show -raw`` captures of the QoS objects.

``statistics show -object workload_detail_volume -raw`` (and ``-object workload_detail``; REST
``qos_detail_volume``/``qos_detail``) prints one instance per node, workload and centre,
``{node}:{workload}.{centre}``, with ``visits`` (a rate), ``service_time`` and ``wait_time``
(averages in microseconds per visit, base ``visits``) and ``in_latency_path`` (raw, 1 when the
centre's time is part of an operation's latency). The raw averages are the summed microseconds,
so between two captures ``Δservice_time + Δwait_time`` is the time spent in the centre: visits x
(service + wait) per visit, without dividing by anything. Centres are folded into latency
components with :mod:`sanlens.ontap.qos_centres`, summed over the workload's nodes.

Those times are consistent with each other only as shares of one pair of captures; the seconds
each component adds to an operation are the shares applied to the workload's own latency, read
from ``statistics show -object workload_volume`` (or ``workload``; REST ``qos_volume``/``qos``):
``Δlatency / Δops`` (microseconds, base ``ops``). Without that object only the shares are known.

:class:`DetailCooker` is fed the rows of each sample in time order (parsing is
:mod:`sanlens.ontap.statistics_text`'s) and returns what each interval shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from sanlens.ontap.cooking import CounterRow
from sanlens.ontap.qos_centres import DETAIL_TABLES, WORKLOAD_TABLES, component, split_instance

_WID = re.compile(r"^(?P<volume>.+)-wid(?P<wid>\d+)$")
US = 1e-6


def volume_of(workload: str) -> tuple[str, str]:
    """(volume, wid) of a volume's workload name ``<volume>-wid<id>``; ('', '') for any other name."""
    m = _WID.match(workload)
    return (m["volume"], m["wid"]) if m else ("", "")


def _name(row: CounterRow) -> str:
    """The instance name as ONTAP printed it, before statistics_text prefixed a node scope."""
    text = row.properties.get("instance_name")
    if text:
        return text
    node = row.properties.get("node", "")
    if node and row.instance.startswith(node + ":") and row.instance.count(":") > 1:
        return row.instance[len(node) + 1 :]
    return row.instance


def _svm(row: CounterRow) -> str:
    p = row.properties
    return p.get("vserver_name") or p.get("vserver") or p.get("svm") or ""


def _value(row: CounterRow, name: str) -> float | None:
    v = row.counters.get(name)
    return v if isinstance(v, float | int) else None


@dataclass(slots=True)
class WorkloadTimes:
    """One workload over one interval: microseconds spent per component (all nodes), and its
    latency and ops when the capture set holds its ``workload_volume`` row."""

    workload: str
    svm: str = ""
    busy_us: dict[str, float] = field(default_factory=dict)
    latency_s: float | None = None
    iops: float | None = None
    ops: float = 0.0  # operations over the interval, summed over the rows (nodes) that count them
    latency_us: float | None = None  # their summed latency, microseconds (None: not counted)

    def shares(self) -> dict[str, float]:
        """Each component's share of the time in the latency path (empty when none was spent)."""
        total = sum(v for v in self.busy_us.values() if v > 0)
        return {k: v / total for k, v in self.busy_us.items() if v > 0} if total > 0 else {}

    def seconds_per_op(self) -> dict[str, float]:
        """The shares applied to the workload's latency; empty without that latency."""
        if self.latency_s is None:
            return {}
        return {k: s * self.latency_s for k, s in self.shares().items()}


@dataclass(slots=True)
class DetailCooker:
    """Cooks consecutive samples of the QoS objects; ``skipped`` counts rows left out and why."""

    prev: dict[tuple[str, str], CounterRow] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    def feed(
        self, rows: Iterable[CounterRow], dt: float | None
    ) -> tuple[list[WorkloadTimes], list[WorkloadTimes]]:
        """(breakdowns, latencies) of the interval ending at this sample: per workload, the
        centres' time (from the detail rows) and the latency and ops (from the workload rows);
        ``dt`` seconds since the previous sample (None: ops per second unknown)."""
        detail: dict[str, WorkloadTimes] = {}
        latency: dict[str, WorkloadTimes] = {}
        for row in rows:
            key = (row.table, row.instance)
            prev = self.prev.get(key)
            self.prev[key] = row
            if prev is None:
                continue
            if not (prev.complete and row.complete):
                self._skip("incomplete aggregation (a node was unreachable)")
            elif row.table in DETAIL_TABLES:
                self._detail(prev, row, detail)
            elif row.table in WORKLOAD_TABLES:
                self._latency(prev, row, latency)
        for w in latency.values():
            w.latency_s = w.latency_us / w.ops * US if w.latency_us is not None and w.ops > 0 else None
            w.iops = w.ops / dt if dt else None
        return list(detail.values()), list(latency.values())

    def _skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def _detail(self, prev: CounterRow, row: CounterRow, out: dict[str, WorkloadTimes]) -> None:
        if _value(row, "in_latency_path") == 0:
            return  # background or idle time: no operation waits for it
        centre = row.properties.get("resource_name") or row.properties.get("resource.name") or ""
        _node, workload, centre = split_instance(_name(row), centre)
        spent = 0.0
        for name in ("service_time", "wait_time"):
            a, b = _value(prev, name), _value(row, name)
            if a is None or b is None:
                continue
            if b < a:
                self._skip(f"counter reset or takeover ({name} went backwards)")
                return
            spent += b - a
        w = out.setdefault(workload, WorkloadTimes(workload, _svm(row)))
        comp = component(centre)
        w.busy_us[comp] = w.busy_us.get(comp, 0.0) + spent

    def _latency(self, prev: CounterRow, row: CounterRow, out: dict[str, WorkloadTimes]) -> None:
        workload = _name(row).rsplit(":", 1)[-1]
        lat = (_value(prev, "latency"), _value(row, "latency"))
        ops = (_value(prev, "ops"), _value(row, "ops"))
        if ops[0] is None or ops[1] is None:
            return
        d_ops = ops[1] - ops[0]
        if d_ops < 0 or (lat[0] is not None and lat[1] is not None and lat[1] < lat[0]):
            self._skip("counter reset or takeover (ops or latency went backwards)")
            return
        w = out.setdefault(workload, WorkloadTimes(workload, _svm(row)))
        w.ops += d_ops
        if lat[0] is not None and lat[1] is not None:
            w.latency_us = (w.latency_us or 0.0) + lat[1] - lat[0]
