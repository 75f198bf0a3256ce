"""qos_throttle: a QoS ceiling holds the workload down; ONTAP delays its operations on purpose.

The common cause of "high latency, low IOPS" on a shared ONTAP system, and one the other
diagnoses cannot see: the LUN's counters (SCSI layer) include the throttle's delay, so the host
waits about as long as ONTAP reports (not san_oversubscription) and ONTAP looks idle (not a CPU
or disk cause). Two signatures, either enough (Active IQ Unified Manager flags a workload whose
operations stay near its ceiling):

- ONTAP's QoS Max component is at least ``qos_max_share`` of the workload's latency (from the
  ``qos_detail`` tables or ``qos statistics ... latency show``): critical, the ceiling is what the
  host waits for;
- the workload's operations stay within 15 % of its ceiling (``ceiling_used_ratio``): fixed (per
  workload, or summed over the policy's workloads when the ceiling is shared) or adaptive (peak
  IOPS per TB of the workload's allocated or used space, at least the absolute minimum): warning,
  it runs at its ceiling and any more demand is delayed.

QoS Min time (other workloads' floors taking this one's share) is quoted beside it. Throughput
(MB/s) ceilings are not judged: the workload's bytes are not in its view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sanlens.diagnose.base import Context, Observation, Thresholds, labels, lun_key, ms, pct, volume_key
from sanlens.diagnose.numeric import clamp01, num, total
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads, Threshold
from sanlens.qos import QosPolicy, QosWorkload

SRC_AIQUM = "Active IQ Unified Manager: a workload whose ops stay near its QoS ceiling is being throttled"
SRC_QOS_LATENCY = (
    "ONTAP qos statistics volume latency show: QoS Max is the time the ceiling adds per operation"
)
TB = 2.0**40  # ONTAP sizes adaptive QoS in binary terabytes

SPEC = DiagnosisSpec(
    id="qos_throttle",
    title="QoS ceiling throttles the workload",
    summary=(
        "ONTAP's QoS Max component dominates the workload's latency, or its ops stay within 15 % of "
        "its ceiling (fixed, adaptive, or shared and summed over the policy's workloads)."
    ),
    subject="QoS workload (volume or LUN)",
    thresholds=(
        Threshold(
            "qos_max_share", 0.5, "ratio", SRC_QOS_LATENCY, 0.05, 1.0, "above", "QoS Max / workload latency"
        ),
        Threshold(
            "ceiling_used_ratio", 0.85, "ratio", SRC_AIQUM, 0.5, 1.0, "above", "workload ops / its ceiling"
        ),
        Threshold(
            "min_iops",
            10.0,
            "ops/s",
            "sanlens default: an idle workload is not held by its ceiling",
            0.0,
            1e6,
            "above",
        ),
    ),
    sustain_s=600.0,
    exit_s=600.0,
    severity={1: "ops within 15 % of the ceiling, or QoS Max dominates the latency", 2: "QoS Max dominates"},
    fix=(
        "Raise or remove the QoS ceiling (qos policy-group modify -max-throughput), or move the workload "
        "to a policy that fits its demand; a shared ceiling is divided among all its workloads."
    ),
    evidence=(
        Evidence(
            "qos_max_seconds", "seconds", "ONTAP's QoS Max component per operation", "QoS Max", "duration"
        ),
        Evidence(
            "workload_latency_seconds",
            "seconds",
            "the workload's latency inside ONTAP",
            "workload latency",
            "duration",
        ),
        Evidence("qos_max_share_ratio", "ratio", "QoS Max / workload latency", "QoS Max share", "percent"),
        Evidence("workload_iops", "ops/s", "the workload's (or shared policy's) ops", "ops", "iops"),
        Evidence("ceiling_iops", "ops/s", "the policy's effective IOPS ceiling", "ceiling", "iops"),
        Evidence("ceiling_used_ratio", "ratio", "ops / ceiling", "of its ceiling", "percent"),
        Evidence("qos_min_seconds", "seconds", "ONTAP's QoS Min component: other workloads' floors"),
    ),
    dashboard=Dashboard("sanlens-latency-breakdown", ("cluster", "svm", "volume")),
    reads=Reads(
        tables=("qos", "qos_volume", "qos_detail", "qos_detail_volume"),
        endpoints=("/api/storage/qos/policies", "/api/storage/qos/workloads"),
        offline=("qos_latency", "qos_detail_volume", "qos_volume"),
    ),
)
ID = SPEC.id
READS = frozenset({"ontap"})


def ceiling(policy: QosPolicy, w: QosWorkload) -> float | None:
    """The IOPS ceiling the workload is held to (for a shared fixed policy: the whole policy's)."""
    if policy.kind == "adaptive":
        size = w.used_bytes if policy.peak_allocation == "used_space" else w.size_bytes
        peak = policy.peak_iops_per_tb
        if peak is None:
            return None
        got = peak * size / TB if size else None
        floor = policy.absolute_min_iops
        if got is None:
            return floor
        return max(got, floor or 0.0)
    return policy.max_iops if policy.max_iops else None


def _ops(ctx: Context, w: QosWorkload) -> float | None:
    """The workload's ops: its own counters, else its LUN's or volume's (the statistics path)."""
    if num(w.iops) is not None:
        return w.iops
    if w.lun:
        lun = ctx.lun(w.cluster, w.svm, w.lun)
        if lun is not None:
            return total(lun.read_iops, lun.write_iops, lun.other_iops)
    if w.volume and not w.lun:
        vol = ctx.volume(w.cluster, w.svm, w.volume)
        if vol is not None:
            return num(vol.total_iops)
    return None


def _shared_ops(ctx: Context, members: Iterable[QosWorkload]) -> float | None:
    vals = [_ops(ctx, m) for m in members]
    known = [v for v in vals if v is not None]
    return sum(known) if known else None


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    t = th[ID]
    out: list[Observation] = []
    for cluster, view in ctx.ontap.items():
        members: dict[str, list[QosWorkload]] = {}
        for w in view.qos_workloads:
            if w.policy:
                members.setdefault(f"{w.svm}/{w.policy}", []).append(w)
        for w in view.qos_workloads:
            policy = ctx.qos_policies.get((cluster, w.svm, w.policy)) if w.policy else None
            if policy is None:
                # svm-scoped names miss a cluster-scoped policy: look it up by name alone
                policy = (
                    next((p for p in view.qos_policies if p.name == w.policy), None) if w.policy else None
                )
            qmax = w.components.get("qos_max") if w.components else None
            if policy is None and not qmax:
                continue  # no ceiling and no throttle time: nothing to judge
            out.append(_judge(ctx, t, w, policy, members.get(f"{w.svm}/{w.policy}", [w])))
    return out


def _judge(
    ctx: Context, th: Mapping[str, float], w: QosWorkload, policy: QosPolicy | None, group: list[QosWorkload]
) -> Observation:
    lat = num(w.latency_s)
    qmax = w.components.get("qos_max", 0.0) if w.components else None
    qmin = w.components.get("qos_min") if w.components else None
    share = qmax / lat if qmax is not None and lat else None
    shared = policy is not None and policy.kind == "fixed" and policy.shared and len(group) > 1
    ops = _shared_ops(ctx, group) if shared else _ops(ctx, w)
    cap = ceiling(policy, w) if policy is not None else None
    used = ops / cap if ops is not None and cap else None
    busy = ops is not None and ops >= th["min_iops"]
    dominates = share is not None and share >= th["qos_max_share"]
    at_cap = used is not None and used >= th["ceiling_used_ratio"] and busy
    level: int | None
    if share is None and used is None:
        level = None if ops is None else 0
    else:
        level = 2 if dominates and (busy or ops is None) else 1 if at_cap or dominates else 0
    subject = (
        lun_key(w.cluster, w.svm, w.lun) if w.lun else volume_key(w.cluster, w.svm, w.volume or w.workload)
    )
    lab = labels(cluster=w.cluster, svm=w.svm, volume=w.volume, lun=w.lun)
    ev: dict[str, float | None] = {
        "qos_max_seconds": qmax,
        "qos_min_seconds": qmin,
        "workload_latency_seconds": lat,
        "qos_max_share_ratio": share,
        "workload_iops": ops,
        "ceiling_iops": cap,
        "ceiling_used_ratio": used,
    }
    score = clamp01(max(share or 0.0, (used or 0.0) if busy else 0.0))
    return Observation(ID, subject, lab, level, score, ev, _advice(level or 0, w, policy, ev, shared))


def _advice(
    level: int, w: QosWorkload, policy: QosPolicy | None, ev: dict[str, float | None], shared: bool
) -> str:
    if not level:
        return ""
    what = f"LUN {w.lun}" if w.lun else f"volume {w.volume or w.workload}"
    text = f"{what} on {w.cluster} (QoS workload {w.workload})"
    if policy is not None:
        kind = "adaptive" if policy.kind == "adaptive" else ("fixed, shared" if policy.shared else "fixed")
        cap, ops, used = ev["ceiling_iops"], ev["workload_iops"], ev["ceiling_used_ratio"]
        text += f" is held by QoS policy {policy.name} ({kind}"
        text += f", ceiling {cap:,.0f} IOPS)" if cap else ")"
        if ops is not None and cap:
            whose = "the policy's workloads run" if shared else "it runs"
            text += f"; {whose} {ops:,.0f} IOPS, {pct(used)} of the ceiling"
    else:
        text += " is throttled by a QoS ceiling"
    if ev["qos_max_seconds"] and ev["workload_latency_seconds"]:
        text += (
            f"; QoS Max adds {ms(ev['qos_max_seconds'])} of its {ms(ev['workload_latency_seconds'])} "
            f"({pct(ev['qos_max_share_ratio'])})"
        )
    qmin = ev["qos_min_seconds"]
    if qmin and ev["workload_latency_seconds"] and qmin >= 0.05 * ev["workload_latency_seconds"]:
        text += f"; QoS Min adds {ms(qmin)} more (other workloads' floors take its share)"
    how = (
        f"qos policy-group modify -policy-group {policy.name} -max-throughput <higher>"
        if policy is not None and policy.kind == "fixed"
        else "a larger adaptive policy group (or a larger volume, for a used/allocated-space ceiling)"
        if policy is not None
        else "the workload's policy group"
    )
    return (
        f"{text}. The array is not slow: it delays these operations on purpose. Raise or remove the "
        f"ceiling ({how}), or move the workload to a policy that fits its demand."
    )
