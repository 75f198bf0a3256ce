"""ONTAP's QoS tables and inventory -> the view's QoS workloads and policies.

A workload's ops and latency come from ``qos_volume`` (autovolume workloads) or ``qos`` (every
workload; ``qos_volume`` wins for one both carry): ONTAP measures them at the protocol layer, so
the latency includes the QoS throttle's delay and the interconnect, unlike the volume's (WAFL).
Its identity (svm, volume, LUN, policy) comes from ``/api/storage/qos/workloads`` by the row's
uuid, since a row carries only the workload's name and uuid.

Where the latency goes comes from ``qos_detail_volume`` or ``qos_detail`` (the first that has
the workload): per centre, visits x (service_time + wait_time) is the seconds per second the
workload spends there. Summed over nodes and grouped into components, each component's share
of that time, all from one pair of responses, is applied to the workload's own latency: the
parts add up to the latency by construction. Dividing a centre's time by ops counted in another
request at another moment (NetApp Harvest's way, since removed) skews the parts, and is not done.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sanlens.ontap.catalogue import catalogue
from sanlens.ontap.cooking import CookedTable
from sanlens.ontap.inventory import Inventory
from sanlens.ontap.qos_centres import CENTRES, component, shares, split_instance
from sanlens.ontap.row_block import Row, RowBlock, RowRef
from sanlens.qos import QOS_COMPONENTS, QosPolicy, QosWorkload

# the tables, in the order each wins for a workload both carry
PERF_TABLES = ("qos_volume", "qos")
DETAIL_TABLES = ("qos_detail_volume", "qos_detail")
# the property naming a detail row's centre, by table
CENTRE_PROPERTY = {"qos_detail_volume": "resource_name", "qos_detail": "resource.name"}
MIB = 1024.0 * 1024.0  # ONTAP's MB/s of a throughput limit are binary, as its sizes
_AUTOVOLUME = re.compile(r"^(?P<volume>.+)-wid(?P<wid>\d+)$")
_PERF = {
    "ops": "iops",
    "read_ops": "read_iops",
    "write_ops": "write_iops",
    "latency": "latency_s",
    "read_latency": "read_latency_s",
    "write_latency": "write_latency_s",
}


def row_filter(table: str) -> dict[str, str]:
    """The query that keeps a detail table's rows to the centres the components are made of.

    A detail row's workload is only in its id, and a cluster's thousands of workloads would not fit
    a URL, so the rows are kept by centre instead: ONTAP's ``query`` over ``properties.value``
    matches a row whose property (the centre's name) is one of the mapping's, or a per-aggregate
    disk centre (``DISK_*``). Background centres (``CPU_raid``, ``CPU_exempt``, idle ...) are out of
    the operations' latency path anyway; a centre newer than the mapping is then not read, and its
    time goes to the other components' shares instead of ``other``."""
    if table not in DETAIL_TABLES:
        return {}
    return {"query": "|".join((*sorted(CENTRES), "DISK_*")), "query_fields": "properties.value"}


@dataclass
class QosState:
    """What the collector keeps between QoS polls: when it last read QoS, and what it cooked."""

    every: float  # seconds between QoS polls (0: every poll)
    slack: float  # a poll this much early is still on time (half a poll interval)
    at: float | None = None
    polls: int = 0
    workloads: tuple[QosWorkload, ...] = ()
    policies: tuple[QosPolicy, ...] = ()
    rows: dict[str, RowBlock] = field(default_factory=dict)  # the last rows /metrics exports

    def due(self, now: float) -> bool:
        """On the first two polls (the first rates need two samples), then every ``every`` seconds."""
        return self.at is None or self.polls < 2 or now - self.at >= self.every - self.slack

    def update(
        self,
        cluster: str,
        now: float,
        inv: Inventory,
        rows: Mapping[str, RowBlock],
        cooked: Mapping[str, CookedTable],
    ) -> None:
        """One QoS poll's rows and inventory, cooked into the workloads and policies the view keeps."""
        self.at, self.polls = now, self.polls + 1
        ids = Identities(inv)
        for table in PERF_TABLES:  # a row names its workload; the svm it is exported under is the inventory's
            block = rows.get(table)
            if block is None:
                continue
            svm = block.properties.setdefault("svm.name", [None] * len(block))
            for r in block.refs():
                if svm[r.i] is None:
                    svm[r.i] = ids.of(r.properties.get("uuid", ""), workload_name(r))["svm"]
        self.workloads = workloads(cluster, inv, cooked, ids)
        self.policies = policies(cluster, inv.qos_policies)
        cat = catalogue()
        self.rows = {t: r for t, r in rows.items() if t in cat and cat[t].schedule and cat[t].metrics}


def cooked_rows(t: CookedTable | None) -> Iterator[tuple[RowRef, dict[str, float]]]:
    """Each row of a table cooked column by column, with its scalar values by counter."""
    if t is None:
        return
    cols = [c for c in t.columns if not c.labelled]
    for i, row in enumerate(t.refs()):
        yield row, {c.counter: c.values[i] for c in cols if c.values[i] is not None}


def workload_name(row: Row) -> str:
    """A ``qos``/``qos_volume`` row's workload: its ``name``, else the id's part before ``:uuid``."""
    return row.properties.get("name") or row.instance.rsplit(":", 1)[0]


def unknown_workload(inv: Inventory, rows: Mapping[str, RowBlock]) -> bool:
    """Whether a row of the QoS tables names a workload the inventory lacks (created since it was read)."""
    names = {w["name"] for w in inv.qos_workloads.values()}
    return any(
        r.properties.get("uuid", "") not in inv.qos_workloads and workload_name(r) not in names
        for table in PERF_TABLES
        for r in (rows[table].refs() if table in rows else ())
    )


def centre_times(cooked: Mapping[str, CookedTable]) -> dict[str, dict[str, float]]:
    """workload -> component -> seconds per second its operations spend there, summed over nodes.

    Rows out of the latency path (``in_latency_path`` 0: background work, idle) add nothing; a
    centre the mapping does not know counts as ``other``. Read column by column: at 10,000 LUNs a
    detail table holds 30,000 rows, and a dict per row was most of the QoS fold."""
    out: dict[str, dict[str, float]] = {}
    for table in DETAIL_TABLES:
        t = cooked.get(table)
        if t is None:
            continue
        cols = {c.counter: c.values for c in t.columns if not c.labelled}
        absent: list[Any] = [None] * len(t.block)
        props = t.block.properties
        other = CENTRE_PROPERTY["qos_detail" if table == "qos_detail_volume" else "qos_detail_volume"]
        found: dict[str, dict[str, float]] = {}
        for instance, visits, service, wait, in_path, own_centre, other_centre in zip(
            t.block.instances,
            cols.get("visits", absent),
            cols.get("service_time", absent),
            cols.get("wait_time", absent),
            cols.get("in_latency_path", absent),
            props.get(CENTRE_PROPERTY[table]) or absent,
            props.get(other) or absent,
            strict=True,
        ):
            if not visits or in_path == 0:
                continue
            _, workload, centre = split_instance(instance, own_centre or other_centre or "")
            secs = visits * ((service or 0.0) + (wait or 0.0))
            times = found.setdefault(workload, {})
            comp = component(centre)
            times[comp] = times.get(comp, 0.0) + secs
        for workload, times in found.items():
            out.setdefault(workload, times)
    return out


def components(times: Mapping[str, float], latency_s: float | None) -> dict[str, float]:
    """Seconds per op per component: each component's share of ``times`` times the latency."""
    if latency_s is None or latency_s <= 0:
        return {}
    sh = shares(dict(times))
    return {c: sh[c] * latency_s for c in QOS_COMPONENTS if c in sh}


class Identities:
    """The workloads inventory, looked up by a row's uuid, else its name."""

    def __init__(self, inv: Inventory) -> None:
        self.inv = inv
        self.by_name = {w["name"]: w for w in inv.qos_workloads.values()}
        svms: dict[str, set[str]] = {}
        for svm, vol in inv.volumes:
            svms.setdefault(vol, set()).add(svm)
        self.volume_svm = {vol: next(iter(s)) for vol, s in svms.items() if len(s) == 1}

    def of(self, uuid: str, name: str) -> dict[str, str]:
        w = self.inv.qos_workloads.get(uuid) or self.by_name.get(name)
        if w is not None:
            return w
        # not in the inventory (refused, or newer than it): an autovolume name still says its volume
        m = _AUTOVOLUME.match(name)
        vol = m.group("volume") if m else ""
        return {
            "name": name,
            "class": "autovolume" if m else "",
            "wid": m.group("wid") if m else "",
            "policy": "",
            "svm": self.volume_svm.get(vol, ""),
            "volume": vol,
            "lun": "",
            "file": "",
            "qtree": "",
        }


def workloads(
    cluster: str, inv: Inventory, cooked: Mapping[str, CookedTable], ids: Identities | None = None
) -> tuple[QosWorkload, ...]:
    """Every workload with counter rows, with its latency's components where the detail tables
    have it; and the inventory's workloads of volumes and LUNs without rows (ops None), so a
    ceiling can still be judged from the volume's or LUN's own ops."""
    ids = ids or Identities(inv)
    perf: dict[str, tuple[dict[str, str], dict[str, float]]] = {}
    for table in PERF_TABLES:
        for row, v in cooked_rows(cooked.get(table)):
            name = workload_name(row)
            if name not in perf:
                perf[name] = (ids.of(row.properties.get("uuid", ""), name), v)
    times = centre_times(cooked)
    out = [
        _workload(cluster, inv, ident, {f: v[c] for c, f in _PERF.items() if c in v}, times.get(name, {}))
        for name, (ident, v) in perf.items()
    ]
    for w in inv.qos_workloads.values():
        if w["name"] not in perf and (w["volume"] or w["lun"]):
            out.append(_workload(cluster, inv, w, {}, {}))
    return tuple(out)


def _workload(
    cluster: str, inv: Inventory, w: Mapping[str, str], perf: dict[str, float], times: Mapping[str, float]
) -> QosWorkload:
    size = used = None
    if w["volume"] and not (w["lun"] or w["file"] or w["qtree"]):  # a volume's: its size, for adaptive QoS
        vol = inv.volumes.get((w["svm"], w["volume"]), {})
        size, avail = _num(vol.get("size")), _num(vol.get("available"))
        used = size - avail if size is not None and avail is not None else None
    return QosWorkload(
        cluster=cluster,
        svm=w["svm"],
        workload=w["name"],
        volume=w["volume"],
        lun=w["lun"],
        file=w["file"],
        qtree=w["qtree"],
        policy=w["policy"],
        wid=w["wid"],
        components=components(times, perf.get("latency_s")),
        size_bytes=size,
        used_bytes=used,
        **perf,
    )


def policies(cluster: str, records: list[dict[str, Any]]) -> tuple[QosPolicy, ...]:
    """``/api/storage/qos/policies`` records as policies: a fixed ceiling and floor (0 is none), or an
    adaptive one per TB of each workload's allocated or used space."""
    out = []
    for r in records:
        fixed, adaptive, svm = (_obj(r.get(k)) for k in ("fixed", "adaptive", "svm"))
        is_adaptive = any(_positive(adaptive.get(k)) for k in ("peak_iops", "expected_iops"))
        mbps = _positive(fixed.get("max_throughput_mbps"))
        out.append(
            QosPolicy(
                cluster=cluster,
                svm=str(svm.get("name", "")),
                name=str(r.get("name", "")),
                kind="adaptive" if is_adaptive else "fixed",
                shared=fixed.get("capacity_shared") is True,
                max_iops=_positive(fixed.get("max_throughput_iops")),
                max_bytes_s=mbps * MIB if mbps is not None else None,
                min_iops=_positive(fixed.get("min_throughput_iops")),
                peak_iops_per_tb=_positive(adaptive.get("peak_iops")),
                expected_iops_per_tb=_positive(adaptive.get("expected_iops")),
                absolute_min_iops=_positive(adaptive.get("absolute_min_iops")),
                peak_allocation=str(adaptive.get("peak_iops_allocation", "")),
                workloads=int(n) if (n := _num(r.get("object_count"))) is not None else None,
            )
        )
    return tuple(out)


def _obj(x: object) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _num(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _positive(x: object) -> float | None:
    v = _num(x)
    return v if v is not None and v > 0 else None
