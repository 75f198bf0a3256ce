"""aggregate_degraded: an aggregate without full RAID redundancy and nothing restoring it, or not online.

A RAID group is degraded from a disk failure until its reconstruct completes.
While a reconstruct runs, the spare is doing its job (its latency cost is
background_operation_impact's); a degraded group with no reconstruct has no
spare to rebuild onto: one more failure in it loses data. An aggregate whose
state is not ``online`` serves none of its volumes.

Read from the inventory: plexes' ``raid_groups[].degraded`` and
``reconstruct.active``, and the aggregate's ``state``.
"""

from __future__ import annotations

from sanlens.diagnose.base import Context, Observation, Thresholds, labels
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads

SPEC = DiagnosisSpec(
    id="aggregate_degraded",
    title="Aggregate degraded",
    summary="A degraded RAID group with no reconstruct running (no spare), or the aggregate not online.",
    subject="aggregate",
    thresholds=(),
    sustain_s=60.0,
    exit_s=300.0,
    severity={1: "degraded RAID group without reconstruct, or aggregate not online"},
    fix="Add a spare of the right type and size so the reconstruct starts; replace the failed disk.",
    evidence=(
        Evidence(
            "degraded_raid_groups", "groups", "RAID groups without full redundancy", "degraded RAID groups"
        ),
        Evidence(
            "offline_aggregates",
            "aggregates",
            "1 while the aggregate's state is not online",
            "offline aggregates",
        ),
    ),
    dashboard=Dashboard("sanlens-disks", ("cluster", "aggregate")),
    reads=Reads(endpoints=("/api/storage/aggregates", "/api/storage/aggregates/{uuid}/plexes")),
)
ID = SPEC.id


READS = frozenset({"ontap"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    out = []
    for view in ctx.ontap.values():
        for a in view.aggregates:
            if not a.state:
                continue
            offline = a.state != "online"
            exposed = a.degraded_raid_groups > 0 and not a.reconstructing
            level = 1 if offline or exposed else 0
            advice = ""
            if offline:
                advice = (
                    f"Aggregate {a.aggregate} ({a.cluster}) is {a.state}: none of its volumes are served."
                )
            elif exposed:
                advice = (
                    f"Aggregate {a.aggregate} ({a.cluster}) has {a.degraded_raid_groups} degraded RAID group(s) "
                    "and no reconstruct: there is no spare to rebuild onto. Add a spare; replace the failed disk."
                )
            out.append(
                Observation(
                    ID,
                    f"{a.cluster}/{a.aggregate}",
                    labels(cluster=a.cluster, node=a.node, aggregate=a.aggregate),
                    level,
                    float(level),
                    {
                        "degraded_raid_groups": float(a.degraded_raid_groups),
                        "offline_aggregates": float(offline),
                    },
                    advice,
                )
            )
    return out
