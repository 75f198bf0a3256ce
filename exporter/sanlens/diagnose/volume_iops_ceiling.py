"""volume_iops_ceiling: one FlexVol near the per-volume IOPS ceiling of its ONTAP version.

A volume tops out near 115K IOPS before ONTAP 9.9.1 and near 240K from 9.9.1
(the judgement is shared with lun_iops_ceiling, see iops_ceiling.py). Write-heavy
load (write share >= 30 %) on one volume near its ceiling is critical: the
study's advice is two volumes.

- ONTAP-only and joined: every volume, on the array's IOPS.
- Host-only: host disks statically mapped to a volume that is not polled are
  summed per (cluster, svm, volume), on the hosts' IOPS (version unknown: the
  newer ceiling).
"""

from __future__ import annotations

from collections.abc import Mapping

from sanlens.diagnose import iops_ceiling
from sanlens.diagnose.base import Context, Observation, Thresholds, volume_subject
from sanlens.diagnose.numeric import num, total
from sanlens.diagnose.spec import SRC_LUN_STUDY, Dashboard, DiagnosisSpec, Evidence, Reads, Threshold
from sanlens.model import OntapVersion

SPEC = DiagnosisSpec(
    id="volume_iops_ceiling",
    title="Volume near its IOPS ceiling",
    summary="Per-volume IOPS >= 80 % of the version ceiling (115K before 9.9.1, 240K from 9.9.1).",
    subject="volume",
    thresholds=(
        *iops_ceiling.thresholds(115000.0, 240000.0, 1e8),
        Threshold(
            "write_share",
            0.3,
            "ratio",
            SRC_LUN_STUDY,
            0.0,
            1.0,
            "above",
            "write share at which a volume near its ceiling is critical (write-heavy load wants 2 volumes)",
        ),
    ),
    sustain_s=600.0,
    exit_s=600.0,
    severity={
        1: "IOPS >= 80 % of the ceiling",
        2: "IOPS >= the ceiling, or >= 80 % with write share >= 30 %",
    },
    fix="Spread the workload: 8 LUNs per volume, 2 volumes for write-heavy load; upgrade to 9.9.1+.",
    evidence=(
        Evidence(
            "volume_iops", "ops/s", "total ops of the volume (or read + write + other)", "volume IOPS", "iops"
        ),
        Evidence(
            "volume_ceiling_iops",
            "ops/s",
            "per-volume ceiling of the cluster's ONTAP version",
            "ceiling",
            "iops",
        ),
        Evidence("volume_ceiling_fraction", "ratio", "volume IOPS / ceiling", "of ceiling", "percent"),
        Evidence("volume_write_share_ratio", "ratio", "writes / (reads + writes)", "write share", "percent"),
    ),
    dashboard=Dashboard("sanlens-lun-volume", ("cluster", "svm", "volume")),
    ordered=iops_ceiling.ORDERED,
    reads=Reads(tables=("volume",), offline=("volume",)),
)
ID = SPEC.id


def _judge(
    iops: float | None,
    writes: float | None,
    reads: float | None,
    version: OntapVersion | None,
    t: Mapping[str, float],
) -> tuple[iops_ceiling.Judgement, dict[str, float | None]]:
    """A volume's IOPS against its ceiling (a write-heavy one's warning is critical), and its evidence."""
    rw = total(reads, writes)
    share = (writes or 0.0) / rw if rw else None
    j = iops_ceiling.judge(iops, version, t, escalate=share is not None and share >= t["write_share"])
    return j, {
        "volume_iops": iops,
        "volume_ceiling_iops": j.ceiling,
        "volume_ceiling_fraction": j.fraction,
        "volume_write_share_ratio": share,
    }


def _advise(
    j: iops_ceiling.Judgement,
    ev: Mapping[str, float | None],
    version: OntapVersion | None,
    t: Mapping[str, float],
    what: str,
) -> str:
    """What to do about a volume at or near its ceiling (asked only of one that is)."""
    iops, share = ev["volume_iops"], ev["volume_write_share_ratio"]
    if not j.level or j.fraction is None or iops is None:
        return ""
    write_heavy = share is not None and share >= t["write_share"]
    vols = max(j.spread, 2 if write_heavy else 1, 2)
    upgrade = (
        f" Upgrading to ONTAP 9.9.1 or later raises it to {t['ceiling_iops']:.0f} IOPS."
        if iops_ceiling.older(version)
        else ""
    )
    return (
        f"{what} runs {iops:.0f} IOPS ({(share or 0) * 100:.0f} % writes), {j.fraction * 100:.0f} % of the "
        f"~{j.ceiling:.0f} IOPS one volume sustains on {iops_ceiling.release_words(version)}. Spread the workload over {vols} volumes with "
        f"up to 8 LUNs each{' (write-heavy load wants 2 volumes at least)' if write_heavy else ''}."
        f"{upgrade}"
    )


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    return [o for part, _reads in PARTS for o in part(ctx, th)]


def evaluate_volumes(ctx: Context, th: Thresholds) -> list[Observation]:
    """Every volume against its ceiling: ONTAP's view alone, not judged again when only a host polled."""
    t = th[ID]
    out: list[Observation] = []
    for v in ctx.volumes():
        iops = num(v.total_iops)
        if iops is None:
            iops = total(v.read_iops, v.write_iops, v.other_iops)
        version = ctx.version(v.cluster)
        j, ev = _judge(iops, v.write_iops, v.read_iops, version, t)
        advice = _advise(j, ev, version, t, f"Volume {v.volume} on {v.cluster}") if j.level else ""
        # identity only: a volume move changes its aggregate and node (sanlens_diagnosis_location_info)
        key, lv = volume_subject(v.cluster, v.svm, v.volume)
        out.append(Observation(ID, key, lv, j.level, j.score, ev, advice))
    return out


def evaluate_host_volumes(ctx: Context, th: Thresholds) -> list[Observation]:
    """Volumes no cluster view holds, from the IOPS of the host disks on their LUNs."""
    t = th[ID]
    out: list[Observation] = []
    sums: dict[tuple[str, str, str], list[float | None]] = {}
    for d in ctx.host_disks():
        if not d.volume or ctx.volume(d.cluster, d.svm, d.volume) is not None:
            continue
        acc = sums.setdefault((d.cluster, d.svm, d.volume), [None, None])
        acc[0] = total(acc[0], d.read_iops)
        acc[1] = total(acc[1], d.write_iops)
    for (cluster, svm, volume), (reads, writes) in sorted(sums.items()):
        version = ctx.version(cluster)
        j, ev = _judge(total(reads, writes), writes, reads, version, t)
        advice = _advise(j, ev, version, t, f"Volume {volume} (host view)") if j.level else ""
        key, lv = volume_subject(cluster, svm, volume)
        out.append(Observation(ID, key, lv, j.level, j.score, ev, advice))
    return out


# the parts of evaluate() and what each reads of the Context, in the order their subjects are judged
PARTS = (
    (evaluate_volumes, frozenset({"ontap", "history"})),
    (evaluate_host_volumes, frozenset({"ontap", "hosts", "history"})),
)
