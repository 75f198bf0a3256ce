"""lun_iops_ceiling: one LUN near the single-LUN IOPS ceiling of its ONTAP version.

NetApp's LUN/volume count study: a single LUN tops out near 35K IOPS before
ONTAP 9.9.1 and near 100K from 9.9.1 (the version comes from the cluster's
``OntapView.version``; unknown means the newer ceiling, to avoid false alarms).

- ONTAP-only and joined: every LUN, on the array's IOPS.
- Host-only: every host disk without a polled LUN behind it, on the host's IOPS.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from sanlens.diagnose.base import (
    Context,
    Observation,
    Thresholds,
    ceiling,
    clamp01,
    disk_key,
    disk_labels,
    labels,
    lun_key,
    total,
)
from sanlens.model import OntapVersion

ID = "lun_iops_ceiling"


def judge(
    iops: float | None, version: OntapVersion | None, t: Mapping[str, float], what: str
) -> tuple[int | None, float, dict[str, float | None], str]:
    """(level, score, evidence, advice) of an IOPS rate against a version ceiling."""
    cap = ceiling(version, t["ceiling_pre_9_9_1_iops"], t["ceiling_iops"])
    frac = iops / cap if iops is not None else None
    ev: dict[str, float | None] = {"iops": iops, "ceiling_iops": cap, "ceiling_fraction": frac}
    if frac is None:
        return None, 0.0, ev, ""
    level = 2 if frac >= t["critical_fraction"] else 1 if frac >= t["warning_fraction"] else 0
    advice = ""
    if level:
        ver = f"ONTAP {version}" if version else "an ONTAP of unknown version"
        luns = math.ceil((iops or 0.0) / (t["warning_fraction"] * cap * 0.9))
        upgrade = (
            f" Upgrading to ONTAP 9.9.1 or later raises the ceiling to {t['ceiling_iops']:.0f} IOPS."
            if version is not None and not version.at_least(9, 9, 1)
            else ""
        )
        advice = (
            f"{what} runs {iops:.0f} IOPS, {frac * 100:.0f} % of the ~{cap:.0f} IOPS a single LUN "
            f"sustains on {ver}. Spread the workload over at least {max(luns, 2)} LUNs (up to 8 per "
            f"volume) so no LUN runs near its ceiling.{upgrade}"
        )
    return level, clamp01(frac), ev, advice


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    t = th[ID]
    out: list[Observation] = []
    for lun in ctx.luns():
        iops = total(lun.read_iops, lun.write_iops, lun.other_iops)
        level, score, ev, advice = judge(iops, ctx.version(lun.cluster), t, f"LUN {lun.lun} on {lun.cluster}")
        out.append(
            Observation(
                ID,
                lun_key(lun.cluster, lun.svm, lun.lun),
                labels(cluster=lun.cluster, node=lun.node, svm=lun.svm, volume=lun.volume, lun=lun.lun),
                level,
                score,
                {"lun_" + k: v for k, v in ev.items()},
                advice,
            )
        )
    for d in ctx.host_disks():
        if ctx.lun_of(d) is not None:
            continue  # the LUN itself is the subject
        iops = total(d.read_iops, d.write_iops)
        version = ctx.version(d.cluster) if d.cluster else None
        level, score, ev, advice = judge(iops, version, t, f"Host {d.host} disk {d.disk}")
        out.append(
            Observation(
                ID, disk_key(d), disk_labels(d), level, score, {"host_" + k: v for k, v in ev.items()}, advice
            )
        )
    return out
