"""Where the time of an I/O goes, from the host disk down to ONTAP's components: one waterfall.

For a host disk joined to its LUN or namespace the parts are, in path order:

- ``host_queue``: time waiting in the host above what its queues can have in flight. By
  Little's law N = X * R; with N above Q_eff (per-LUN queue depth x paths that carry I/O), an
  I/O spends R * (1 - Q_eff / N) queued in the host and the rest outstanding to the array.
- ``transport``: the host's latency less the host queue and ONTAP's latency for the LUN (the
  fabric, HBAs, the front-end ports and everything between the host's and ONTAP's clocks).
- ONTAP's components (:data:`sanlens.qos.QOS_COMPONENTS`) from the LUN's QoS workload: each
  component's share of the workload's latency applied to the LUN's own latency (the LUN's
  counters, at the SCSI layer, include the QoS throttle's delay and the interconnect); ``array``
  when ONTAP's latency is known but no breakdown is.

The parts add up to the host's latency. When ONTAP reports more time than the host waited
(counters sampled over different moments), transport is 0 and ONTAP's parts are scaled to fit.
A LUN, namespace or volume without a host gets ONTAP's components alone, adding up to its
latency. A host disk with no array data behind it (unmapped, or its LUN not polled) has none:
transport is what is left of the host's time after ONTAP's, so without ONTAP's it is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from sanlens.diagnose.base import Context, labels, lun_key, volume_key
from sanlens.diagnose.numeric import num, total, weighted_latency
from sanlens.model import HostDiskStats, LunStats, VolumeStats
from sanlens.qos import QOS_COMPONENTS, QosWorkload

HOST_PARTS = ("host_queue", "transport")
ARRAY = "array"  # ONTAP's latency when no breakdown is known
PARTS = (*HOST_PARTS, *QOS_COMPONENTS, ARRAY)
# How the report and the alerts name each part.
NAMES: dict[str, str] = {
    "host_queue": "host queue",
    "transport": "transport (fabric and front end)",
    "network": "ONTAP Network",
    "cluster": "ONTAP Cluster (interconnect)",
    "data": "ONTAP Data",
    "disk": "ONTAP Disk",
    "qos_max": "ONTAP QoS Max",
    "qos_min": "ONTAP QoS Min",
    "nvram": "ONTAP NVRAM",
    "cloud": "ONTAP Cloud",
    "flexcache": "ONTAP FlexCache",
    "sm_sync": "ONTAP SM Sync",
    "va": "ONTAP VA",
    "avscan": "ONTAP AVSCAN",
    "other": "ONTAP other",
    ARRAY: "ONTAP (no breakdown)",
}


@dataclass(frozen=True, slots=True)
class Waterfall:
    latency_s: float  # the subject's latency: the host's for a host disk, ONTAP's for an array subject
    parts: Mapping[str, float] = field(default_factory=dict)  # seconds per operation, in PARTS order
    workload: str = ""  # the QoS workload whose breakdown is used

    @property
    def dominant(self) -> tuple[str, float] | None:
        if not self.parts:
            return None
        name = max(self.parts, key=lambda k: self.parts[k])
        return name, self.parts[name]

    def as_dict(self) -> dict[str, object]:
        dom = self.dominant
        return {
            "latency_seconds": round(self.latency_s, 9),
            "parts": {k: round(v, 9) for k, v in self.parts.items()},
            "dominant": dom[0] if dom else "",
            "workload": self.workload,
        }


def _ontap_parts(ontap_s: float, w: QosWorkload | None) -> dict[str, float]:
    """ONTAP's latency split by the workload's component shares (or one ``array`` part)."""
    if w is None or not w.components:
        return {ARRAY: ontap_s}
    comp_total = sum(v for v in w.components.values() if v > 0)
    if comp_total <= 0:
        return {ARRAY: ontap_s}
    return {k: ontap_s * v / comp_total for k, v in w.components.items() if v > 0}


def _ordered(parts: Mapping[str, float]) -> dict[str, float]:
    return {k: parts[k] for k in PARTS if parts.get(k, 0.0) > 0.0}


def of_workload(w: QosWorkload, latency_s: float | None = None) -> Waterfall | None:
    """ONTAP's components of a workload, scaled to ``latency_s`` (a LUN's own) when given."""
    lat = num(latency_s) if latency_s is not None else num(w.latency_s)
    if lat is None or lat <= 0 or not w.components:
        return None
    return Waterfall(lat, _ordered(_ontap_parts(lat, w)), w.workload)


def of_lun(ctx: Context, lun: LunStats) -> Waterfall | None:
    lat = weighted_latency(lun.read_iops, lun.write_iops, lun.read_latency_s, lun.write_latency_s)
    w = ctx.qos_workload(lun.cluster, lun.svm, lun.volume, lun.lun)
    if w is None:
        return None
    return of_workload(w, lat)


def of_volume(ctx: Context, vol: VolumeStats) -> Waterfall | None:
    w = ctx.qos_workload(vol.cluster, vol.svm, vol.volume)
    return of_workload(w) if w is not None else None


def of_host_disk(ctx: Context, d: HostDiskStats) -> Waterfall | None:
    """The host disk's latency split from its queue to ONTAP's components (see the module)."""
    r = weighted_latency(d.read_iops, d.write_iops, d.read_latency_s, d.write_latency_s)
    if r is None or r <= 0:
        return None
    x = total(d.read_iops, d.write_iops) or 0.0
    n = num(d.outstanding_io)
    if n is None:
        n = x * r
    queue = r * (1.0 - d.q_eff / n) if n > d.q_eff > 0 else 0.0
    outstanding = r - queue
    lun = ctx.lun_of(d)
    w = ctx.qos_workload(d.cluster, d.svm, d.volume, d.lun) if d.mapped else None
    ontap_s: float | None = None
    if lun is not None:
        ontap_s = weighted_latency(lun.read_iops, lun.write_iops, lun.read_latency_s, lun.write_latency_s)
    if ontap_s is None and w is not None:
        ontap_s = num(w.latency_s)
    if ontap_s is None:
        return None  # no array data: the time past the host's queue cannot be split, so none is named
    parts: dict[str, float] = {"host_queue": queue}
    ontap_s = max(ontap_s, 0.0)
    scale = min(1.0, outstanding / ontap_s) if ontap_s > 0 else 1.0
    parts["transport"] = max(outstanding - ontap_s, 0.0)
    parts.update(_ontap_parts(ontap_s * scale, w))
    return Waterfall(r, _ordered(parts), w.workload if w is not None and w.components else "")


def of_subject(ctx: Context, labels: Mapping[str, str]) -> Waterfall | None:
    """The waterfall of a finding's subject: a host disk, a LUN or namespace, or a volume."""
    cluster, svm = labels.get("cluster", ""), labels.get("svm", "")
    host, disk = labels.get("host", ""), labels.get("disk", "")
    if host and disk:
        hv = ctx.hosts.get(host)
        for d in hv.disks if hv is not None else ():
            if d.disk == disk:
                return of_host_disk(ctx, d)
        return None
    if labels.get("lun"):
        lun = ctx.lun(cluster, svm, labels["lun"])
        return of_lun(ctx, lun) if lun is not None else None
    if labels.get("volume"):
        vol = ctx.volume(cluster, svm, labels["volume"])
        if vol is not None:
            return of_volume(ctx, vol)
        w = ctx.qos_workload(cluster, svm, labels["volume"])
        return of_workload(w) if w is not None else None
    return None


def describe(wf: Waterfall) -> str:
    """``ONTAP QoS Max 38.2 ms of 40.1 ms (95 %)``: the dominant part, for advice and alerts."""
    dom = wf.dominant
    if dom is None or wf.latency_s <= 0:
        return ""
    name, secs = dom
    return f"{NAMES.get(name, name)} {_ms(secs)} of {_ms(wf.latency_s)} ({secs / wf.latency_s * 100:.0f} %)"


def _ms(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.3g} ms"


# (subject key, subject labels, waterfall), as the engine exposes them
Exposed = tuple[str, Mapping[str, str], Waterfall]

# The slowest workloads whose components are exposed even while every finding is ok: a dashboard's
# top-N, at a cost of a few series, not one per workload of the estate (diagnose.waterfall_top_n).
TOP_N = 10


class _Subject(Protocol):
    key: str
    labels: Mapping[str, str]


def exposed(ctx: Context, active: Iterable[_Subject], top_n: int = TOP_N) -> list[Exposed]:
    """The waterfalls to expose: every non-ok finding's subject (once), then the ``top_n`` slowest
    QoS workloads with a breakdown."""
    out: list[Exposed] = []
    seen: set[str] = set()
    for t in active:
        if t.key in seen:
            continue
        seen.add(t.key)
        wf = of_subject(ctx, t.labels)
        if wf is not None:
            out.append((t.key, t.labels, wf))
    ranked = sorted(
        (
            w
            for v in ctx.ontap.values()
            for w in v.qos_workloads
            if w.components and (num(w.latency_s) or 0) > 0
        ),
        key=lambda w: (-(w.latency_s or 0.0), w.cluster, w.workload),
    )
    for w in ranked[:top_n]:
        key = (
            lun_key(w.cluster, w.svm, w.lun)
            if w.lun
            else volume_key(w.cluster, w.svm, w.volume or w.workload)
        )
        if key in seen:
            continue
        seen.add(key)
        wf = of_workload(w)
        if wf is not None:
            out.append((key, labels(cluster=w.cluster, svm=w.svm, volume=w.volume, lun=w.lun), wf))
    return out
