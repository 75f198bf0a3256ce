"""lun_iops_ceiling: one LUN near the single-LUN IOPS ceiling of its ONTAP version.

A single LUN tops out near 35K IOPS before ONTAP 9.9.1 and near 100K from 9.9.1
(the judgement is shared with volume_iops_ceiling, see iops_ceiling.py).

- ONTAP-only and joined: every LUN, on the array's IOPS.
- Host-only: every host disk without a polled LUN behind it, on the host's IOPS,
  unless it is a local disk (``Context.san_disk``).
"""

from __future__ import annotations

from collections.abc import Mapping

from sanlens.diagnose import iops_ceiling
from sanlens.diagnose.base import Context, Observation, Thresholds, disk_key, disk_labels, of_lun
from sanlens.diagnose.host_advice import spread_how
from sanlens.diagnose.numeric import total
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads
from sanlens.model import OntapVersion

SPEC = DiagnosisSpec(
    id="lun_iops_ceiling",
    title="LUN near its IOPS ceiling",
    summary="Per-LUN IOPS >= 80 % of the ONTAP version's single-LUN ceiling (35K before 9.9.1, 100K from).",
    subject="LUN (or an unmapped host disk)",
    thresholds=iops_ceiling.thresholds(35000.0, 100000.0, 1e7),
    sustain_s=600.0,
    exit_s=600.0,
    severity=iops_ceiling.SEVERITY,
    fix="Spread the workload over more LUNs (8 per volume); upgrade to ONTAP 9.9.1 or later if older.",
    evidence=(
        Evidence("lun_iops", "ops/s", "reads + writes + other ops of the LUN", "LUN IOPS", "iops"),
        Evidence(
            "lun_ceiling_iops",
            "ops/s",
            "single-LUN ceiling of the cluster's ONTAP version",
            "ceiling",
            "iops",
        ),
        Evidence("lun_ceiling_fraction", "ratio", "LUN IOPS / ceiling", "of ceiling", "percent"),
        Evidence("host_iops", "ops/s", "reads + writes of an unmapped host disk", "host IOPS", "iops"),
        Evidence(
            "host_ceiling_iops",
            "ops/s",
            "the single-LUN ceiling the unmapped disk is held to",
            "host ceiling",
            "iops",
        ),
        Evidence("host_ceiling_fraction", "ratio", "host IOPS / ceiling"),
    ),
    dashboard=Dashboard("sanlens-lun-volume", ("cluster", "svm", "volume")),
    ordered=iops_ceiling.ORDERED,
    reads=Reads(tables=("lun", "namespace"), offline=("host", "lun")),
)
ID = SPEC.id
_EVIDENCE = {
    side: (f"{side}_iops", f"{side}_ceiling_iops", f"{side}_ceiling_fraction") for side in ("lun", "host")
}


def judge(
    iops: float | None, version: OntapVersion | None, t: Mapping[str, float], side: str = "lun"
) -> tuple[iops_ceiling.Judgement, dict[str, float | None]]:
    """An IOPS rate against the single-LUN ceiling, and its evidence, named for its ``side``
    (``lun``: the array's IOPS, ``host``: an unmapped host disk's)."""
    j = iops_ceiling.judge(iops, version, t)
    k_iops, k_ceiling, k_fraction = _EVIDENCE[side]
    return j, {k_iops: iops, k_ceiling: j.ceiling, k_fraction: j.fraction}


def advise(
    j: iops_ceiling.Judgement,
    iops: float | None,
    version: OntapVersion | None,
    t: Mapping[str, float],
    what: str,
    how: str = "",
) -> str:
    """What to do about a subject at or near its ceiling (asked only of one that is)."""
    if not j.level or j.fraction is None or iops is None:
        return ""
    upgrade = (
        f" Upgrading to ONTAP 9.9.1 or later raises the ceiling to {t['ceiling_iops']:.0f} IOPS."
        if iops_ceiling.older(version)
        else ""
    )
    return (
        f"{what} runs {iops:.0f} IOPS, {j.fraction * 100:.0f} % of the ~{j.ceiling:.0f} IOPS a single LUN "
        f"sustains on {iops_ceiling.release_words(version)}. Spread the workload over at least {max(j.spread, 2)} LUNs{how} (up to 8 "
        f"per volume) so no LUN runs near its ceiling.{upgrade}"
    )


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    return [o for part, _reads in PARTS for o in part(ctx, th)]


def evaluate_luns(ctx: Context, th: Thresholds) -> list[Observation]:
    """Every LUN against its ceiling: ONTAP's view alone, not judged again when only a host polled."""
    t = th[ID]
    out: list[Observation] = []
    for lun in ctx.luns():
        iops = total(lun.read_iops, lun.write_iops, lun.other_iops)
        version = ctx.version(lun.cluster)
        j, ev = judge(iops, version, t)
        advice = advise(j, iops, version, t, f"LUN {lun.lun} on {lun.cluster}") if j.level else ""
        out.append(of_lun(ID, lun, j.level, j.score, ev, advice))
    return out


def evaluate_disks(ctx: Context, th: Thresholds) -> list[Observation]:
    """Host disks whose LUN no cluster view holds, against the same ceiling."""
    t = th[ID]
    out: list[Observation] = []
    for d in ctx.host_disks():
        if ctx.lun_of(d) is not None or not ctx.san_disk(d):
            continue  # the LUN itself is the subject; a local disk is no LUN to spread
        iops = total(d.read_iops, d.write_iops)
        version = ctx.version(d.cluster) if d.cluster else None
        j, ev = judge(iops, version, t, side="host")
        advice = advise(j, iops, version, t, f"Host {d.host} disk {d.disk}", spread_how(d)) if j.level else ""
        out.append(Observation(ID, disk_key(d), disk_labels(d), j.level, j.score, ev, advice))
    return out


# the parts of evaluate() and what each reads of the Context, in the order their subjects are judged
PARTS = (
    (evaluate_luns, frozenset({"ontap", "history"})),
    (evaluate_disks, frozenset({"ontap", "hosts", "history"})),
)
