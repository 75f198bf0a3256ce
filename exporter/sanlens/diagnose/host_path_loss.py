"""host_path_loss: a host disk runs on fewer active paths than it is configured for.

MPIO (or dm-multipath) hides a lost path: I/O keeps flowing on the others, at half
the queue (Q_eff = queue depth x paths) and with no redundancy left. The host reports
its active paths (sanlens's textfile script, WinRM's MPIO query, node_exporter's
dmmultipath path states); the config says how many each disk should have (``paths``
of the host or of one disk), and a Linux disk should have at least the path devices
it still lists. Fewer active than that pages: the next failure on that path is an outage.

Host-only and joined data behave alike (one subject per host disk); a disk whose
host does not report paths is not judged.
"""

from __future__ import annotations

from sanlens.diagnose.base import Context, Observation, Thresholds, of_disk
from sanlens.diagnose.host_advice import path_check
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence

SPEC = DiagnosisSpec(
    id="host_path_loss",
    title="Host disk lost a path",
    summary="Fewer active multipath paths than configured for the disk (host or disk `paths`).",
    subject="host disk",
    thresholds=(),
    sustain_s=60.0,
    exit_s=300.0,
    severity={2: "active paths < configured paths"},
    fix=(
        "Find the failed HBA port, cable, switch port or zone (Windows: mpclaim -s -d; Linux: multipath -ll; "
        "the switch's port state) and restore it."
    ),
    evidence=(
        Evidence("active_paths", "paths", "multipath paths the host reports active now", "active paths"),
        Evidence("configured_paths", "paths", "paths the config says the disk should have", "configured"),
    ),
    dashboard=Dashboard("sanlens-io-path", ("cluster", "host")),
    pages=True,
    # the disks of one host lose their paths together (an HBA, a cable, a switch): one incident
    incident_by=("cluster", "host"),
)
ID = SPEC.id


READS = frozenset({"hosts"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    out = []
    for d in ctx.host_disks():
        active, want = d.observed_paths, d.configured_paths
        if active is None or want is None:
            continue
        level = 2 if active < want else 0
        advice = ""
        if level:
            advice = (
                f"Host {d.host} disk {d.disk}: {active} of {want} paths active. I/O runs on the rest with "
                f"{d.queue_depth * max(active, 1)} instead of {d.queue_depth * want} outstanding commands and no "
                f"redundancy: {path_check(d)}."
            )
        out.append(
            of_disk(
                ID,
                d,
                level,
                1.0 - active / want if want else 0.0,
                {"active_paths": float(active), "configured_paths": float(want)},
                advice,
            )
        )
    return out
