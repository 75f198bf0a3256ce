"""lun_not_online: a LUN ONTAP does not serve, or a thin LUN whose volume is about to take it offline.

- critical: the LUN's state is not ``online`` (offline, nvfail, space-error,
  foreign-lun-error): its hosts have lost it.
- warning: the LUN is thin (no space guarantee) and its volume is nearly full;
  ONTAP takes such a LUN offline on the first write it has no space for.

ONTAP-only and joined data behave alike (one subject per LUN, from the inventory:
``status.state``, ``space.guarantee.requested``, and the volume's ``space.size``
and ``space.available``).
"""

from __future__ import annotations

from sanlens.diagnose.base import Context, Observation, Thresholds, of_lun, pct
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads, Threshold

SRC_SPACE = "ONTAP: a thin (non-space-reserved) LUN goes offline when its volume runs out of space"

SPEC = DiagnosisSpec(
    id="lun_not_online",
    title="LUN not online, or about to go offline",
    summary="LUN state not online (critical); a thin LUN's volume nearly full (warning).",
    subject="LUN",
    thresholds=(
        Threshold(
            name="volume_used_ratio",
            default=0.95,
            unit="ratio",
            source=SRC_SPACE,
            min=0.5,
            max=1.0,
            help="used share of a volume holding thin LUNs at which they are at risk",
        ),
    ),
    sustain_s=60.0,
    exit_s=300.0,
    severity={1: "thin LUN, volume used >= 95 %", 2: "LUN state not online"},
    fix="Bring the LUN online (lun online); for space, grow the volume or enable autosize, delete snapshots.",
    evidence=(
        Evidence("offline_luns", "LUNs", "1 while the LUN's state is not online", "offline LUNs"),
        Evidence("volume_used_ratio", "ratio", "used share of the LUN's volume", "volume used", "percent"),
        Evidence("volume_available_bytes", "bytes", "free space of the LUN's volume", "volume free", "iops"),
    ),
    dashboard=Dashboard("sanlens-lun-volume", ("cluster", "svm", "volume")),
    pages=True,
    # LUNs go offline per volume (it filled, it went offline): one incident per volume
    incident_by=("cluster", "svm", "volume"),
    reads=Reads(endpoints=("/api/storage/namespaces",)),
)
ID = SPEC.id


READS = frozenset({"ontap"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    limit = th[ID]["volume_used_ratio"]
    out = []
    for lun in ctx.luns():
        vol = ctx.volume(lun.cluster, lun.svm, lun.volume)
        used = avail = None
        if vol is not None and vol.size_bytes and vol.available_bytes is not None:
            avail = vol.available_bytes
            used = 1.0 - avail / vol.size_bytes
        if not lun.state and used is None:
            continue  # nothing to judge (an offline capture, an older inventory)
        offline = bool(lun.state) and lun.state != "online"
        at_risk = bool(lun.thin) and used is not None and used >= limit
        level = 2 if offline else 1 if at_risk else 0
        advice = ""
        if offline:
            advice = (
                f"LUN {lun.lun} ({lun.cluster}/{lun.svm}) is {lun.state}: its hosts have lost it. "
                f"`lun show -path {lun.lun} -fields state` says why; for space-error grow volume {lun.volume}."
            )
        elif at_risk:
            advice = (
                f"Volume {lun.volume} ({lun.cluster}/{lun.svm}) is {pct(used)} used and LUN {lun.lun} is thin: "
                "ONTAP takes it offline on the first write without space. Grow the volume, enable autosize, "
                "or delete snapshots."
            )
        out.append(
            of_lun(
                ID,
                lun,
                level,
                1.0 if offline else (used or 0.0),
                {
                    "offline_luns": None if not lun.state else float(offline),
                    "volume_used_ratio": used,
                    "volume_available_bytes": avail,
                },
                advice,
            )
        )
    return out
