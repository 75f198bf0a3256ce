"""volume_affinity_concentration: one volume carries its aggregate while the node is under serial pressure.

ONTAP spreads a volume's work over a limited set of affinities (Waffinity);
with one busy volume per aggregate, the node cannot use its cores. Fires when
the busiest volume carries >= 80 % of the aggregate's ops (and the aggregate
runs at least ``min_aggregate_iops``) while the aggregate's node shows Kahuna
>= 50 % of a core or wafl_exempt / (N_cpu - 1) >= 50 %. Warning only: this is
a layout advice; the node-level pain is cpu_domain_serial_bottleneck.

ONTAP-only and joined data behave alike (one subject per aggregate); host-only
data has no subject.
"""

from __future__ import annotations

from sanlens.diagnose.base import Context, Observation, Thresholds, kahuna, labels, pct, wafl_exempt
from sanlens.diagnose.numeric import clamp01, num, total
from sanlens.diagnose.spec import SRC_WAFFINITY, Dashboard, DiagnosisSpec, Evidence, Reads, Threshold

SPEC = DiagnosisSpec(
    id="volume_affinity_concentration",
    title="One volume carries its aggregate (affinity concentration)",
    summary="One volume carries >= 80 % of its aggregate's ops while the node shows serial or WAFL_Ex pressure.",
    subject="aggregate",
    thresholds=(
        Threshold(
            "volume_share", 0.8, "ratio", SRC_WAFFINITY, 0.1, 1.0, "above", "busiest volume / aggregate ops"
        ),
        Threshold("kahuna_pressure_ratio", 0.5, "ratio of one core", SRC_WAFFINITY, 0.05, 1.0, "above"),
        Threshold(
            "wafl_exempt_pressure_ratio",
            0.5,
            "ratio of one core",
            SRC_WAFFINITY,
            0.05,
            1.0,
            "above",
            "wafl_exempt / (N_cpu - 1)",
        ),
        Threshold(
            "min_aggregate_iops",
            100.0,
            "ops/s",
            "sanlens default: ignore near-idle aggregates",
            0.0,
            1e8,
            "above",
        ),
    ),
    sustain_s=900.0,
    exit_s=600.0,
    severity={1: "concentration with node pressure"},
    fix="More volumes per aggregate (>= 4), or a FlexGroup.",
    evidence=(
        Evidence("volumes", "volumes", "volumes on the aggregate", "volumes on the aggregate"),
        Evidence(
            "top_volume_share_ratio",
            "ratio",
            "busiest volume / aggregate ops",
            "top volume's ops share",
            "percent",
        ),
        Evidence(
            "kahuna_busy_ratio",
            "ratio of one core",
            "Kahuna busy of the aggregate's node",
            "Kahuna busy",
            "percent",
        ),
        Evidence("aggregate_iops", "ops/s", "sum of its volumes' IOPS", "aggregate IOPS", "iops"),
        Evidence("wafl_exempt_per_core_ratio", "ratio of one core", "wafl_exempt / (N_cpu - 1)"),
    ),
    dashboard=Dashboard("sanlens-ontap-cpu-domains", ("cluster", "node")),
    reads=Reads(
        tables=("volume", "system:node"),
        endpoints=("/api/storage/aggregates",),
        offline=("volume", "system:node", "sysstat"),
    ),
)
ID = SPEC.id


READS = frozenset({"ontap"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    t = th[ID]
    out: list[Observation] = []
    for cluster, view in ctx.ontap.items():
        aggr_nodes = {a.aggregate: a.node for a in view.aggregates}
        vols_by_aggr: dict[str, list[tuple[str, float | None]]] = {a: [] for a in aggr_nodes}
        for v in view.volumes:
            if not v.aggregate:
                continue
            iops = num(v.total_iops)
            vols_by_aggr.setdefault(v.aggregate, []).append(
                (v.volume, iops if iops is not None else total(v.read_iops, v.write_iops, v.other_iops))
            )
            if not aggr_nodes.get(v.aggregate):
                aggr_nodes[v.aggregate] = v.node
        for aggr, vols in sorted(vols_by_aggr.items()):
            node_name = aggr_nodes.get(aggr, "")
            known = [(name, i) for name, i in vols if i is not None]
            agg_iops = sum(i for _, i in known) if known else None
            top_name, top = max(known, key=lambda kv: kv[1], default=("", None))
            share = top / agg_iops if top is not None and agg_iops else None
            node = ctx.node(cluster, node_name) if node_name else None
            uk = kahuna(node) if node else None
            uw = wafl_exempt(node) if node else None
            n = node.processors if node else None
            uw_core = uw / (n - 1) if uw is not None and n and n > 1 else None
            pressure = (uk is not None and uk >= t["kahuna_pressure_ratio"]) or (
                uw_core is not None and uw_core >= t["wafl_exempt_pressure_ratio"]
            )
            ev: dict[str, float | None] = {
                "top_volume_share_ratio": share,
                "aggregate_iops": agg_iops,
                "volumes": float(len(vols)),
                "kahuna_busy_ratio": uk,
                "wafl_exempt_per_core_ratio": uw_core,
            }
            level: int | None
            if agg_iops is None:
                level = None if vols else 0
            else:
                level = int(
                    share is not None
                    and share >= t["volume_share"]
                    and agg_iops >= t["min_aggregate_iops"]
                    and pressure
                )
            advice = ""
            if level:
                advice = (
                    f"Aggregate {aggr} on {cluster}: volume {top_name} carries {pct(share)} of "
                    f"{agg_iops:.0f} IOPS ({len(vols)} volume(s)) while node {node_name} shows serial "
                    f"pressure (Kahuna {pct(uk)} of a core). Split the workload over >= 4 volumes on "
                    "this aggregate (8 on large controllers) or use a FlexGroup so WAFL can run it in parallel."
                )
            out.append(
                Observation(
                    ID,
                    f"{cluster}/{aggr}",
                    labels(cluster=cluster, node=node_name, aggregate=aggr),
                    level,
                    clamp01(share or 0.0) * (1.0 if pressure else 0.5),
                    ev,
                    advice,
                )
            )
    return out
