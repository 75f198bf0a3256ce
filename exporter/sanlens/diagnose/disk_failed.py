"""disk_failed: ONTAP marked a disk broken.

RAID-DP rebuilds onto a spare and I/O continues, so this is a ticket (replace the
disk), not a page; the rebuild's effect on latency is background_operation_impact's
and a RAID group left without redundancy is aggregate_degraded's. A broken disk has
no counter row: the inventory's ``state`` / ``container_type`` (``broken``) is
what says so.
"""

from __future__ import annotations

from sanlens.diagnose.base import Context, Observation, Thresholds, labels
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads

SPEC = DiagnosisSpec(
    id="disk_failed",
    title="Disk failed",
    summary="ONTAP marked a disk broken (state or container type broken).",
    subject="ONTAP disk",
    thresholds=(),
    sustain_s=60.0,
    exit_s=300.0,
    severity={1: "disk broken"},
    fix="Replace the disk (`storage disk show -broken`); check that the aggregate has spares left.",
    evidence=(Evidence("broken_disks", "disks", "1 while the disk is broken", "broken disks"),),
    dashboard=Dashboard("sanlens-disks", ("cluster",)),
    reads=Reads(endpoints=("/api/storage/disks",)),
)
ID = SPEC.id


READS = frozenset({"ontap"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    out = []
    for view in ctx.ontap.values():
        for d in view.disks:
            broken = "broken" in (d.state, d.container)
            # the subject carries cluster and disk only: a broken disk is on no I/O path any more
            out.append(
                Observation(
                    ID,
                    f"{d.cluster}/{d.disk}",
                    labels(cluster=d.cluster, disk=d.disk),
                    1 if broken else 0,
                    float(broken),
                    {"broken_disks": float(broken)},
                    f"Disk {d.disk} ({d.cluster}, node {d.node}) is broken: replace it." if broken else "",
                )
            )
    return out
