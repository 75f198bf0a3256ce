"""volume_iops_ceiling: one FlexVol near the per-volume IOPS ceiling of its ONTAP version.

NetApp's LUN/volume count study: a volume tops out near 115K IOPS before ONTAP
9.9.1 and near 240K from 9.9.1. Write-heavy load (write share >= 30 %) on one
volume near its ceiling is critical: the study's advice is two volumes.

- ONTAP-only and joined: every volume, on the array's IOPS.
- Host-only: host disks statically mapped to a volume that is not polled are
  summed per (cluster, svm, volume), on the hosts' IOPS (version unknown: the
  newer ceiling).
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
    labels,
    num,
    total,
    volume_key,
)
from sanlens.model import OntapVersion

ID = "volume_iops_ceiling"


def _judge(
    iops: float | None,
    writes: float | None,
    reads: float | None,
    version: OntapVersion | None,
    t: Mapping[str, float],
    what: str,
) -> tuple[int | None, float, dict[str, float | None], str]:
    cap = ceiling(version, t["ceiling_pre_9_9_1_iops"], t["ceiling_iops"])
    frac = iops / cap if iops is not None else None
    rw = total(reads, writes)
    share = (writes or 0.0) / rw if rw else None
    ev: dict[str, float | None] = {
        "volume_iops": iops,
        "volume_ceiling_iops": cap,
        "volume_ceiling_fraction": frac,
        "volume_write_share_ratio": share,
    }
    if frac is None:
        return None, 0.0, ev, ""
    write_heavy = share is not None and share >= t["write_share"]
    level = 0
    if frac >= t["warning_fraction"]:
        level = 2 if frac >= t["critical_fraction"] or write_heavy else 1
    advice = ""
    if level:
        vols = max(math.ceil((iops or 0.0) / (t["warning_fraction"] * cap * 0.9)), 2 if write_heavy else 1, 2)
        ver = f"ONTAP {version}" if version else "an ONTAP of unknown version"
        upgrade = (
            f" Upgrading to ONTAP 9.9.1 or later raises it to {t['ceiling_iops']:.0f} IOPS."
            if version is not None and not version.at_least(9, 9, 1)
            else ""
        )
        advice = (
            f"{what} runs {iops:.0f} IOPS ({(share or 0) * 100:.0f} % writes), {frac * 100:.0f} % of the "
            f"~{cap:.0f} IOPS one volume sustains on {ver}. Spread the workload over {vols} volumes with "
            f"up to 8 LUNs each{' (write-heavy load wants 2 volumes at least)' if write_heavy else ''}."
            f"{upgrade}"
        )
    return level, clamp01(frac), ev, advice


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    t = th[ID]
    out: list[Observation] = []
    for v in ctx.volumes():
        iops = num(v.total_iops)
        if iops is None:
            iops = total(v.read_iops, v.write_iops, v.other_iops)
        level, score, ev, advice = _judge(
            iops, v.write_iops, v.read_iops, ctx.version(v.cluster), t, f"Volume {v.volume} on {v.cluster}"
        )
        lv = labels(cluster=v.cluster, node=v.node, svm=v.svm, volume=v.volume, aggregate=v.aggregate)
        out.append(Observation(ID, volume_key(v.cluster, v.svm, v.volume), lv, level, score, ev, advice))
    sums: dict[tuple[str, str, str], list[float | None]] = {}
    for d in ctx.host_disks():
        if not d.volume or ctx.volume(d.cluster, d.svm, d.volume) is not None:
            continue
        acc = sums.setdefault((d.cluster, d.svm, d.volume), [None, None])
        acc[0] = total(acc[0], d.read_iops)
        acc[1] = total(acc[1], d.write_iops)
    for (cluster, svm, volume), (reads, writes) in sorted(sums.items()):
        level, score, ev, advice = _judge(
            total(reads, writes), writes, reads, ctx.version(cluster), t, f"Volume {volume} (host view)"
        )
        lv = labels(cluster=cluster, svm=svm, volume=volume)
        out.append(Observation(ID, volume_key(cluster, svm, volume), lv, level, score, ev, advice))
    return out
