"""background_operation_impact: a rebuild, resync, parity recompute or volume move slows the volumes it touches.

A RAID reconstruct/resync/recompute_parity slows every volume on its aggregate;
a volume move slows the volume that moves. The engine keeps each volume's
latency baseline from polls when no operation touched it (history.py); the
finding fires when an affected volume's latency is >= 1.4x that baseline
(critical >= 3x: EMC's CLARiiON paper shows an ASAP-priority rebuild can
quadruple OLTP response time), and at least ``min_latency_seconds``.

ONTAP-only and joined data behave alike (one subject per aggregate). Host-only
data has no subject: the operation is only visible on the array. Without a
pre-operation baseline (sanlens started mid-operation) nothing fires, but the
progress and ETA gauges are still exposed.
"""

from __future__ import annotations

from sanlens.diagnose.base import Context, Observation, Thresholds, labels, ms
from sanlens.diagnose.history import active_ops, affected_volumes, op_aggregate, volume_latency
from sanlens.diagnose.numeric import clamp01
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads, Threshold
from sanlens.model import BackgroundOp

SRC_CLARIION = (
    "EMC CLARiiON FLARE 28 rebuild/migrate priorities: ASAP priority can quadruple OLTP response time"
)


def _ratio(name: str, default: float) -> Threshold:
    return Threshold(name, default, "ratio", SRC_CLARIION, 1.0, 100.0, "above", "latency / pre-op baseline")


SPEC = DiagnosisSpec(
    id="background_operation_impact",
    title="Background operation hurts latency",
    summary=(
        "A RAID reconstruct, resync, parity recompute or volume move is active and latency of the affected "
        "volumes is >= 1.4x its baseline from before the operation."
    ),
    subject="aggregate",
    thresholds=(
        _ratio("latency_ratio_warning", 1.4),
        _ratio("latency_ratio_critical", 3.0),
        Threshold(
            "min_latency_seconds",
            0.002,
            "seconds",
            "sanlens default: sub-2 ms latency hurts nobody",
            0.0,
            10.0,
            "above",
        ),
    ),
    sustain_s=300.0,
    exit_s=300.0,
    severity={1: "latency >= 1.4x baseline", 2: "latency >= 3x baseline"},
    fix="Lower the operation's priority, or schedule it off-peak.",
    evidence=(
        Evidence(
            "active_operations",
            "operations",
            "RAID operations and volume moves running on the aggregate",
            "active operations",
        ),
        Evidence(
            "done_ratio", "ratio", "progress of the operation behind the worst latency", "done", "percent"
        ),
        Evidence("eta_seconds", "seconds", "time left at the observed progress rate", "ETA", "duration"),
        Evidence(
            "volume_latency_seconds",
            "seconds",
            "latency of the worst affected volume",
            "volume latency",
            "duration",
        ),
        Evidence(
            "latency_ratio",
            "ratio",
            "that volume's latency / its baseline",
            "latency vs baseline",
            "multiple",
        ),
        Evidence("baseline_latency_seconds", "seconds", "the volume's latency before the operation"),
        Evidence(
            "ontap_disk_seconds",
            "seconds",
            "the most ONTAP's Disk component adds to an operation among the aggregate's workloads",
        ),
    ),
    dashboard=Dashboard("sanlens-disks", ("cluster", "aggregate")),
    ordered=(("latency_ratio_warning", "latency_ratio_critical"),),
    pages=True,
    reads=Reads(
        tables=("volume",),
        endpoints=("/api/storage/aggregates", "/api/storage/aggregates/{uuid}/plexes"),
        offline=("volume", "disk", "disk:constituent"),
    ),
)
ID = SPEC.id


def _eta_text(eta: float | None) -> str:
    if eta is None:
        return "ETA unknown yet"
    if eta >= 3600:
        return f"ETA {eta / 3600:.1f} h"
    return f"ETA {eta / 60:.0f} min"


READS = frozenset({"ontap", "history"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    t = th[ID]
    out: list[Observation] = []
    for cluster, view in ctx.ontap.items():
        aggrs = {a.aggregate: a.node for a in view.aggregates}
        for v in view.volumes:
            if v.aggregate:
                aggrs.setdefault(v.aggregate, v.node)
        ops_by_aggr: dict[str, list[BackgroundOp]] = {}
        for op in active_ops(view):
            a = op_aggregate(view, op)
            ops_by_aggr.setdefault(a, []).append(op)
            aggrs.setdefault(a, "")
        for aggr, node in sorted(aggrs.items()):
            ops = ops_by_aggr.get(aggr, [])
            worst: tuple[float, str, float, float] | None = None  # ratio, volume, latency, baseline
            worst_op: BackgroundOp | None = None
            for candidate in ops:
                for v in affected_volumes(view, candidate):
                    lat = volume_latency(v)
                    base = ctx.history.baseline(cluster, v.svm, v.volume)
                    if lat is None or not base or lat < t["min_latency_seconds"]:
                        continue
                    ratio = lat / base
                    if worst is None or ratio > worst[0]:
                        worst, worst_op = (ratio, v.volume, lat, base), candidate
            chosen = worst_op or (ops[0] if ops else None)
            prog = ctx.history.progress(chosen) if chosen else None
            ev: dict[str, float | None] = {
                "active_operations": float(len(ops)),
                "latency_ratio": worst[0] if worst else None,
                "volume_latency_seconds": worst[2] if worst else None,
                "baseline_latency_seconds": worst[3] if worst else None,
                "done_ratio": prog.percent / 100.0 if prog and prog.percent is not None else None,
                "eta_seconds": prog.eta_s if prog else None,
                "ontap_disk_seconds": ctx.component_peak("aggregate", cluster, aggr, "disk"),
            }
            level = 0
            if worst is not None:
                ratio = worst[0]
                level = (
                    2
                    if ratio >= t["latency_ratio_critical"]
                    else 1
                    if ratio >= t["latency_ratio_warning"]
                    else 0
                )
            advice = ""
            if level and chosen is not None and worst is not None:
                what = chosen.operation.replace("_", " ")
                where = (
                    f" of {chosen.raid_group}"
                    if chosen.raid_group
                    else (f" of volume {chosen.volume}" if chosen.volume else "")
                )
                pct_txt = f"{prog.percent:.0f} % done, " if prog and prog.percent is not None else ""
                advice = (
                    f"A {what}{where} on aggregate {aggr} ({cluster}) is running ({pct_txt}"
                    f"{_eta_text(prog.eta_s if prog else None)}), and volume {worst[1]} answers in "
                    f"{ms(worst[2])}, {worst[0]:.1f}x its {ms(worst[3])} baseline from before the operation. "
                    "Lower the operation's priority (for RAID work `storage raid-options modify -node <node> "
                    "-name raid.reconstruct.perf_impact -value low`; for a move, throttle or defer the cutover) "
                    "or let it run off-peak: at its highest priority a rebuild can quadruple OLTP response time."
                )
            out.append(
                Observation(
                    ID,
                    f"{cluster}/{aggr}",
                    labels(cluster=cluster, node=node, aggregate=aggr),
                    level,
                    clamp01((worst[0] if worst else 1.0) / (2 * t["latency_ratio_critical"])) if ops else 0.0,
                    ev,
                    advice,
                )
            )
    return out


def progress_samples(ctx: Context) -> list[tuple[dict[str, str], float | None, float | None]]:
    """(labels, percent done, ETA seconds) for every active operation, for the gauges."""
    out = []
    for cluster, view in ctx.ontap.items():
        for op in active_ops(view):
            prog = ctx.history.progress(op)
            lv = {
                "cluster": cluster,
                "aggregate": op_aggregate(view, op),
                "svm": op.svm,
                "volume": op.volume,
                "raid_group": op.raid_group,
                "operation": op.operation,
            }
            out.append((lv, prog.percent, prog.eta_s))
    return out
