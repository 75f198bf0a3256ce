"""disk_busy_imbalance: some data disks of an aggregate work much harder than the rest.

The field case: an aggregate grown by new disks kept them hot, because new
writes landed on the free space there, until ``reallocate`` spread the data.
Within an aggregate's data disks (spares, broken disks and parity disks excluded: RAID 4,
RAID-DP and RAID-TEC keep parity on dedicated disks that are written with every stripe but
read only to rebuild, so under a read-heavy load they idle and would pass for an imbalance):

- CV of busy (stdev / mean) > 0.3, or max / median > 1.5, or mean busy of the
  newest RAID group / mean of the older ones > 1.5;
- and the busiest disk > 50 % busy (an idle imbalance hurts nobody);
- critical when the busiest disk is >= 90 % busy.

ONTAP-only and joined data behave alike (one subject per aggregate with disk
data); host-only data has no subject.
"""

from __future__ import annotations

import re
import statistics

from sanlens.diagnose.base import Context, Observation, Thresholds, labels, pct
from sanlens.diagnose.numeric import clamp01, num
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads, Threshold
from sanlens.model import DiskStats

SRC_REALLOC = "ONTAP aggregate expansion case: new disks stay hot until reallocate runs"

SPEC = DiagnosisSpec(
    id="disk_busy_imbalance",
    title="Disk busy imbalance in an aggregate (reallocate)",
    summary=(
        "Within an aggregate's data disks: CV of busy > 0.3, or max/median > 1.5, or newest RAID group / "
        "older > 1.5, with the busiest disk > 50 % busy."
    ),
    subject="aggregate",
    thresholds=(
        Threshold("cv", 0.3, "ratio", SRC_REALLOC, 0.01, 10.0, "above", "stdev / mean of disk busy"),
        Threshold("max_to_median", 1.5, "ratio", SRC_REALLOC, 1.0, 100.0, "above"),
        Threshold("newest_raid_group_ratio", 1.5, "ratio", SRC_REALLOC, 1.0, 100.0, "above"),
        Threshold(
            "min_max_busy_ratio", 0.5, "ratio", SRC_REALLOC, 0.0, 1.0, "above", "busiest disk must exceed"
        ),
        Threshold(
            "critical_max_busy_ratio",
            0.9,
            "ratio",
            "sanlens default: the hot disks are saturated",
            0.0,
            1.0,
            "above",
        ),
        Threshold(
            "min_disks",
            3.0,
            "disks",
            "sanlens default: statistics need a few disks",
            2.0,
            10000.0,
            "none",
        ),
    ),
    sustain_s=1800.0,
    exit_s=900.0,
    severity={1: "imbalance with a disk > 50 % busy", 2: "and the busiest disk >= 90 %"},
    fix="volume reallocation start / aggregate reallocation (HDD only).",
    evidence=(
        Evidence("busy_cv_ratio", "ratio", "stdev / mean of the data disks' busy", "busy CV"),
        Evidence("busy_max_ratio", "ratio", "busy of the busiest data disk", "busiest disk", "percent"),
        Evidence(
            "busy_max_to_median_ratio", "ratio", "busiest disk / median disk", "max/median busy", "multiple"
        ),
        Evidence("disks", "disks", "data disks with a busy value", "disks"),
        Evidence("busy_mean_ratio", "ratio", "mean busy of the data disks"),
        Evidence(
            "newest_raid_group_ratio",
            "ratio",
            "mean busy of the newest RAID group / the older ones",
            fmt="multiple",
        ),
        Evidence(
            "ontap_disk_seconds",
            "seconds",
            "the most ONTAP's Disk component adds to an operation among the aggregate's workloads",
        ),
    ),
    dashboard=Dashboard("sanlens-disks", ("cluster", "aggregate")),
    ordered=(("min_max_busy_ratio", "critical_max_busy_ratio"),),
    reads=Reads(
        tables=("disk:constituent",),
        endpoints=("/api/storage/aggregates", "/api/storage/aggregates/{uuid}/plexes", "/api/storage/disks"),
        offline=("disk", "disk:constituent", "raid"),
    ),
)
ID = SPEC.id
NOT_DATA = frozenset({"spare", "broken", "unassigned", "maintenance", "unknown"})
# RAID positions (plexes' raid_groups.disks.position) that hold parity, not data
PARITY = frozenset({"parity", "dparity", "tparity"})


def is_data_disk(d: DiskStats) -> bool:
    """In an aggregate, in use, and not a parity disk (an unknown position counts as data)."""
    return bool(d.aggregate) and d.container.lower() not in NOT_DATA and d.raid_position.lower() not in PARITY


def _rg_order(name: str) -> tuple[int, str]:
    """Natural order of RAID groups (rg2 < rg10); the last is the newest."""
    digits = re.findall(r"\d+", name.rsplit("/", 1)[-1])
    return (int(digits[-1]) if digits else -1, name)


def imbalance(disks: list[DiskStats]) -> dict[str, float | None]:
    """CV, max/median and newest-RG ratio of the disks' busy ratios."""
    busy = [b for d in disks if (b := num(d.busy_ratio)) is not None]
    out: dict[str, float | None] = {"disks": float(len(busy))}
    if not busy:
        return out
    mean = statistics.fmean(busy)
    med = statistics.median(busy)
    out.update(
        busy_mean_ratio=mean,
        busy_max_ratio=max(busy),
        busy_cv_ratio=statistics.pstdev(busy) / mean if mean > 0 else 0.0,
        busy_max_to_median_ratio=max(busy) / med if med > 0 else None,
    )
    groups: dict[str, list[float]] = {}
    for d in disks:
        b = num(d.busy_ratio)
        if b is not None and d.raid_group:
            groups.setdefault(d.raid_group, []).append(b)
    if len(groups) >= 2:
        order = sorted(groups, key=_rg_order)
        older = [b for g in order[:-1] for b in groups[g]]
        old_mean = statistics.fmean(older)
        out["newest_raid_group_ratio"] = (
            statistics.fmean(groups[order[-1]]) / old_mean if old_mean > 0 else None
        )
    return out


READS = frozenset({"ontap"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    t = th[ID]
    out: list[Observation] = []
    for cluster, view in ctx.ontap.items():
        by_aggr: dict[str, list[DiskStats]] = {a.aggregate: [] for a in view.aggregates}
        types = {a.aggregate: a.disk_type for a in view.aggregates}
        nodes = {a.aggregate: a.node for a in view.aggregates}
        for d in view.disks:
            if is_data_disk(d):
                by_aggr.setdefault(d.aggregate, []).append(d)
                types[d.aggregate] = types.get(d.aggregate) or d.disk_type
                nodes[d.aggregate] = nodes.get(d.aggregate) or d.node
        for aggr, disks in sorted(by_aggr.items()):
            ev = imbalance(disks)
            ev["ontap_disk_seconds"] = ctx.component_peak("aggregate", cluster, aggr, "disk")
            n = int(ev["disks"] or 0)
            level: int | None
            if n == 0:
                level = None if disks else 0
            elif n < t["min_disks"]:
                level = 0
            else:
                cv, mm, rg = (
                    ev.get("busy_cv_ratio"),
                    ev.get("busy_max_to_median_ratio"),
                    ev.get("newest_raid_group_ratio"),
                )
                top = ev["busy_max_ratio"] or 0.0
                skew = (
                    (cv is not None and cv > t["cv"])
                    or (mm is not None and mm > t["max_to_median"])
                    or (rg is not None and rg > t["newest_raid_group_ratio"])
                )
                level = (
                    (2 if top >= t["critical_max_busy_ratio"] else 1)
                    if skew and top > t["min_max_busy_ratio"]
                    else 0
                )
            factor = max(
                (ev.get("busy_cv_ratio") or 0.0) / t["cv"],
                (ev.get("busy_max_to_median_ratio") or 0.0) / t["max_to_median"],
                (ev.get("newest_raid_group_ratio") or 0.0) / t["newest_raid_group_ratio"],
            )
            score = clamp01(factor / 2) * clamp01(ev.get("busy_max_ratio") or 0.0)
            advice = ""
            if level:
                dtype = (types.get(aggr) or "").upper()
                hdd = dtype not in ("SSD", "SSD_NVM", "SSD-NVM", "SSD_CAP")
                fix = (
                    "Run `volume reallocation start -vserver <svm> -path /vol/<volume> -force true` on its "
                    "volumes (or aggregate reallocation) to spread the blocks; expect new disks to take extra "
                    "writes for a while after an expansion."
                    if hdd
                    else "This is an SSD aggregate: reallocation does not apply; look for a hot volume or LUN "
                    "placed on the new RAID group."
                )
                advice = (
                    f"Aggregate {aggr} on {cluster}: disk busy is uneven (CV {ev.get('busy_cv_ratio') or 0:.2f}, "
                    f"max/median {ev.get('busy_max_to_median_ratio') or 0:.2f}, newest RAID group "
                    f"{ev.get('newest_raid_group_ratio') or 0:.2f}x the older), busiest disk "
                    f"{pct(ev.get('busy_max_ratio'))}. {fix}"
                )
            out.append(
                Observation(
                    ID,
                    f"{cluster}/{aggr}",
                    labels(cluster=cluster, node=nodes.get(aggr, ""), aggregate=aggr),
                    level,
                    score,
                    ev,
                    advice,
                )
            )
    return out
