"""indirect_io: the host reaches its LUN through the partner node; every operation crosses the interconnect.

ONTAP serves a LUN directly only on the node that owns it; I/O that arrives at a LIF on another
node is forwarded over the cluster interconnect (ONTAP counts it in the LUN's ``remote_ops``, and
QoS puts its time in the Cluster component). ALUA reports those paths as non-optimized, so a
host on a correct multipath policy does not use them; it does when its policy ignores ALUA
(round robin over every path), when its optimized paths are gone, or after a LIF or volume
moved away from the LUN's node. It costs latency and interconnect bandwidth, and no other
diagnosis names it.

Fires when the LUN's remote operations are at least ``remote_share`` of its operations, or,
where the remote count is not known, ONTAP's Cluster component is at least ``cluster_share`` of
its workload's latency. Warning only: the fix is a path or placement change, rarely urgent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from sanlens.diagnose.base import Context, Observation, Thresholds, ms, of_lun, pct
from sanlens.diagnose.numeric import clamp01, num, total
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads, Threshold
from sanlens.model import HostDiskStats, LunStats

SRC_ALUA = (
    "ONTAP SAN administration: ALUA reports paths through the LUN's own node (and its HA partner, "
    "when the LUN is on it) as optimized; I/O through any other LIF is indirect and crosses the "
    "cluster interconnect"
)

SPEC = DiagnosisSpec(
    id="indirect_io",
    title="Indirect I/O: the LUN is reached through another node",
    summary=(
        "A high share of the LUN's operations arrives through a LIF on another node (ONTAP remote_ops), "
        "or ONTAP's Cluster (interconnect) component is a large part of its latency."
    ),
    subject="LUN or namespace",
    thresholds=(
        Threshold("remote_share", 0.25, "ratio", SRC_ALUA, 0.01, 1.0, "above", "remote ops / LUN ops"),
        Threshold(
            "cluster_share",
            0.2,
            "ratio",
            SRC_ALUA,
            0.01,
            1.0,
            "above",
            "ONTAP Cluster component / workload latency (when remote ops are not known)",
        ),
        Threshold(
            "min_iops",
            20.0,
            "ops/s",
            "sanlens default: a near-idle LUN's paths say little",
            0.0,
            1e6,
            "above",
        ),
    ),
    sustain_s=600.0,
    exit_s=600.0,
    severity={1: "a high share of indirect I/O"},
    fix=(
        "Use the host's ALUA-aware multipath policy (Windows MPIO: Round Robin with Subset or Least Queue "
        "Depth over optimized paths; Linux: group_by_prio with prio alua), restore the optimized paths, "
        "or bring the LIF home (network interface revert) or the volume back to the LUN's LIF node."
    ),
    evidence=(
        Evidence("remote_share_ratio", "ratio", "remote ops / LUN ops", "indirect share", "percent"),
        Evidence("remote_iops", "ops/s", "ops that arrived through another node", "indirect ops", "iops"),
        Evidence("lun_iops", "ops/s", "the LUN's ops"),
        Evidence(
            "cluster_seconds",
            "seconds",
            "ONTAP's Cluster component per operation",
            "interconnect",
            "duration",
        ),
        Evidence("cluster_share_ratio", "ratio", "Cluster component / workload latency"),
        Evidence("host_optimized_paths", "paths", "ALUA optimized paths the host reports for its disk"),
        Evidence("host_paths", "paths", "active paths the host reports for its disk"),
    ),
    dashboard=Dashboard("sanlens-latency-breakdown", ("cluster", "svm", "volume")),
    reads=Reads(tables=("lun", "qos_detail", "qos_detail_volume"), offline=("lun", "qos_latency")),
)
ID = SPEC.id
# ONTAP's view and the hosts' mapping, not their counters: a host's poll does not judge 10,000 LUNs again
# (the host's path counts quoted beside a finding are as of the cluster's last poll)
READS = frozenset({"ontap", "mapping"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    t = th[ID]
    hosts: dict[tuple[str, str, str], HostDiskStats] = ctx.mapped_luns
    per_volume = Counter((lun.cluster, lun.svm, lun.volume) for lun in ctx.luns())
    return [
        _judge(
            ctx,
            t,
            lun,
            hosts.get((lun.cluster, lun.svm, lun.lun)),
            per_volume[(lun.cluster, lun.svm, lun.volume)],
        )
        for lun in ctx.luns()
    ]


def _judge(
    ctx: Context, t: Mapping[str, float], lun: LunStats, disk: HostDiskStats | None, volume_luns: int
) -> Observation:
    ops = total(lun.read_iops, lun.write_iops, lun.other_iops)
    remote = num(lun.remote_iops)
    share = remote / ops if remote is not None and ops else None
    w = ctx.qos_workload(lun.cluster, lun.svm, lun.volume, lun.lun)
    # a volume's workload speaks for all its LUNs, not for which of them crosses the interconnect: its
    # Cluster time is evidence beside a LUN's remote ops, and judges alone only for a volume of one LUN
    own = w is not None and (w.lun == lun.lun or volume_luns == 1)
    cl = w.components.get("cluster") if w is not None and w.components else None
    cl_share = cl / w.latency_s if cl is not None and w is not None and w.latency_s else None
    busy = ops is not None and ops >= t["min_iops"]
    level: int | None
    if ops is None:
        level = None
    elif not busy:
        level = 0
    elif share is not None:
        level = int(share >= t["remote_share"])
    elif cl_share is not None and own:
        level = int(cl_share >= t["cluster_share"])
    else:
        level = None  # neither remote ops nor a breakdown: nothing to judge it on
    ev: dict[str, float | None] = {
        "remote_share_ratio": share,
        "remote_iops": remote,
        "lun_iops": ops,
        "cluster_seconds": cl,
        "cluster_share_ratio": cl_share,
        "host_optimized_paths": float(disk.optimized_paths)
        if disk and disk.optimized_paths is not None
        else None,
        "host_paths": float(disk.paths) if disk else None,
    }
    score = clamp01(max(share or 0.0, cl_share or 0.0))
    return of_lun(ID, lun, level, score, ev, _advice(level, lun, disk, ev) if level else "")


def _advice(level: int, lun: LunStats, disk: HostDiskStats | None, ev: dict[str, float | None]) -> str:
    if not level:
        return ""
    what = "namespace" if lun.kind == "namespace" else "LUN"
    text = f"{what} {lun.lun} on {lun.cluster} (node {lun.node or '?'})"
    if ev["remote_share_ratio"] is not None:
        text += f": {pct(ev['remote_share_ratio'])} of its {ev['lun_iops'] or 0:,.0f} IOPS arrive through another node"
    if ev["cluster_seconds"]:
        text += f"; the interconnect adds {ms(ev['cluster_seconds'])} per operation"
    if disk is not None:
        text += f". Host {disk.host} disk {disk.disk} uses {disk.paths} active path(s)"
        if disk.optimized_paths is not None:
            text += f", {disk.optimized_paths} of them ALUA optimized"
        how = (
            "multipath -ll: the policy must group paths by ALUA priority (path_grouping_policy group_by_prio, "
            "prio alua)"
            if disk.platform == "linux"
            else "mpclaim -s -d: the MPIO policy must prefer optimized paths (Round Robin with Subset or "
            "Least Queue Depth) and the DSM must see ALUA"
        )
        text += f"; check {how}"
    return (
        f"{text}. Bring the traffic home: restore the LUN's optimized paths, revert a LIF that moved "
        f"(network interface revert), or move the volume back to the node its hosts log in to."
    )
