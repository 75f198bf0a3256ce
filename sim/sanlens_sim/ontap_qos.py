"""The fake ONTAP QoS collections, ``/api/storage/qos/workloads`` and ``/api/storage/qos/policies``,
and the CLI pass-through rows NetApp Harvest's QoS templates read (``qos policy-group``, ``qos
adaptive-policy-group``, ``qos workload``; :mod:`sanlens_sim.ontap_cli` serves them).

The REST records follow ONTAP's shapes (a workload's ``policy`` and ``svm`` with HAL links; a
policy's ``fixed`` or ``adaptive`` block); the CLI rows its text formats, which Harvest parses:
``throughput_policy`` ``<min>-<max>`` of ``2000IOPS``, ``400MB/s``, ``2000IOPS,400MB/s``, ``0`` or
``INF``; adaptive ``6144IOPS/TB``; allocations ``allocated-space``/``used-space``.
"""

from __future__ import annotations

from collections.abc import Callable

from sanlens_sim.estate import Estate
from sanlens_sim.ontap_api import Json, svm_uuid
from sanlens_sim.qos_world import Workload, pgid_of, policy_of, workloads_of
from sanlens_sim.world import QosPolicy, World, stable_uuid

TB = 2.0**40  # ONTAP sizes adaptive QoS per binary terabyte
WORKLOADS = "/api/storage/qos/workloads"
POLICIES = "/api/storage/qos/policies"


def policy_uuid(w: World, p: QosPolicy) -> str:
    return stable_uuid(w.cluster, "qos-policy", p.svm, p.name)


def _svm(w: World, svm: str) -> Json:
    u = svm_uuid(w, svm)
    return {"uuid": u, "name": svm, "_links": {"self": {"href": f"/api/svm/svms/{u}"}}}


def workload_records(w: World) -> list[Json]:
    out: list[Json] = []
    for x in w.qos_workloads:
        rec: Json = {"uuid": x.uuid, "name": x.name, "workload_class": x.klass, "wid": x.wid}
        p = policy_of(w, x.svm, x.policy) if x.policy else None
        if p is not None:
            u = policy_uuid(w, p)
            rec["policy"] = {"uuid": u, "name": p.name, "_links": {"self": {"href": f"{POLICIES}/{u}"}}}
        rec["svm"] = _svm(w, x.svm)
        rec["volume"] = x.volume
        if x.lun:
            rec["lun"] = x.lun
        rec["_links"] = {"self": {"href": f"{WORKLOADS}/{x.uuid}"}}
        out.append(rec)
    return out


def policy_records(w: World) -> list[Json]:
    out: list[Json] = []
    for p in w.qos_policies:
        u = policy_uuid(w, p)
        rec: Json = {
            "uuid": u,
            "name": p.name,
            "svm": _svm(w, p.svm),
            "pgid": pgid_of(w, p),
            "policy_class": "user_defined",
            "object_count": len(workloads_of(w, p)),
            "scope": "svm",
        }
        if p.kind == "adaptive":
            rec["adaptive"] = {
                "expected_iops": int(p.expected_iops_tb),
                "expected_iops_allocation": p.expected_allocation,
                "peak_iops": int(p.peak_iops_tb),
                "peak_iops_allocation": p.peak_allocation,
                "absolute_min_iops": int(p.absolute_min_iops),
                "block_size": p.block_size,
            }
        else:
            rec["fixed"] = {
                "max_throughput_iops": int(p.max_iops),
                "max_throughput_mbps": int(p.max_mbps),
                "min_throughput_iops": int(p.min_iops),
                "min_throughput_mbps": int(p.min_mbps),
                "capacity_shared": p.shared,
            }
        rec["_links"] = {"self": {"href": f"{POLICIES}/{u}"}}
        out.append(rec)
    return out


Build = Callable[[list[Json]], list[Json]]


def _records(make: Callable[[World], list[Json]]) -> Callable[[World], tuple[list[Json], Build]]:
    def collection(w: World) -> tuple[list[Json], Build]:
        return make(w), lambda chunk: chunk

    return collection


# path -> (the collection's records, the build of a page of them), for the handler's paging
COLLECTIONS = {WORKLOADS: _records(workload_records), POLICIES: _records(policy_records)}


# ------------------------------------------------------------------ CLI text formats
def xput(iops: float, mbps: float, none: str) -> str:
    """A throughput as the CLI prints it: ``2000IOPS``, ``400MB/s``, both comma-joined, or ``none``."""
    parts = [f"{int(iops)}IOPS"] if iops else []
    if mbps:
        parts.append(f"{mbps:g}MB/s")
    return ",".join(parts) or none


def ceiling_iops(w: World, p: QosPolicy, x: Workload) -> float:
    """The IOPS ceiling ``p`` gives workload ``x``: fixed, or adaptive by its volume's size."""
    if p.kind != "adaptive":
        return p.max_iops
    v = next(v for v in w.volumes if v.svm == x.svm and v.name == x.volume)
    size = v.size_bytes * (v.used_ratio if p.peak_allocation == "used_space" else 1.0)
    return max(p.absolute_min_iops, p.peak_iops_tb * size / TB)


def _cli(text: str) -> str:
    return text.replace("_", "-")


# ------------------------------------------------------------------ CLI rows
POLICY_GROUP_FIELDS = (
    "uuid",
    "class",
    "pgid",
    "is_shared",
    "num_workloads",
    "throughput_policy",
    "max_throughput",
    "min_throughput",
)
ADAPTIVE_FIELDS = (
    "uuid",
    "pgid",
    "expected_iops",
    "peak_iops",
    "absolute_min_iops",
    "expected_iops_allocation",
    "peak_iops_allocation",
    "block_size",
    "num_workloads",
)
WORKLOAD_FIELDS = (
    "uuid",
    "class",
    "wid",
    "policy_group",
    "max_throughput",
    "min_throughput",
    "is_adaptive",
    "volume",
    "lun",
    "file",
    "qtree",
)


def policy_group_rows(estate: Estate, w: World, t: float) -> list[Json]:
    """``qos policy-group show``: the fixed policy groups."""
    out: list[Json] = []
    for p in w.qos_policies:
        if p.kind == "adaptive":
            continue
        hi, lo = xput(p.max_iops, p.max_mbps, "INF"), xput(p.min_iops, p.min_mbps, "0")
        out.append(
            {
                "policy_group": p.name,
                "vserver": p.svm,
                "uuid": policy_uuid(w, p),
                "class": "user_defined",
                "pgid": pgid_of(w, p),
                "is_shared": p.shared,
                "num_workloads": len(workloads_of(w, p)),
                "throughput_policy": f"{lo}-{hi}",
                "max_throughput": hi,
                "min_throughput": lo,
            }
        )
    return out


def adaptive_policy_group_rows(estate: Estate, w: World, t: float) -> list[Json]:
    """``qos adaptive-policy-group show``."""
    return [
        {
            "policy_group": p.name,
            "vserver": p.svm,
            "uuid": policy_uuid(w, p),
            "pgid": pgid_of(w, p),
            "expected_iops": f"{int(p.expected_iops_tb)}IOPS/TB",
            "peak_iops": f"{int(p.peak_iops_tb)}IOPS/TB",
            "absolute_min_iops": f"{int(p.absolute_min_iops)}IOPS",
            "expected_iops_allocation": _cli(p.expected_allocation),
            "peak_iops_allocation": _cli(p.peak_allocation),
            "block_size": p.block_size.upper(),
            "num_workloads": len(workloads_of(w, p)),
        }
        for p in w.qos_policies
        if p.kind == "adaptive"
    ]


def workload_rows(estate: Estate, w: World, t: float) -> list[Json]:
    """``qos workload show``: every workload; ``policy_group`` and ``lun`` only where they apply."""
    out: list[Json] = []
    for x in w.qos_workloads:
        p = policy_of(w, x.svm, x.policy) if x.policy else None
        row: Json = {"workload": x.name, "uuid": x.uuid, "class": x.klass, "wid": x.wid}
        if p is not None:
            row["policy_group"] = p.name
        if p is None:
            row["max_throughput"], row["min_throughput"] = "INF", "0"
        elif p.kind == "adaptive":
            row["max_throughput"], row["min_throughput"] = xput(ceiling_iops(w, p, x), 0.0, "INF"), "0"
        else:
            row["max_throughput"] = xput(p.max_iops, p.max_mbps, "INF")
            row["min_throughput"] = xput(p.min_iops, p.min_mbps, "0")
        row["is_adaptive"] = p is not None and p.kind == "adaptive"
        row["vserver"], row["volume"] = x.svm, x.volume
        if x.lun:
            row["lun"] = x.lun.rsplit("/", 1)[-1]
        out.append(row)
    return out
