"""fc_port_down: an enabled FC target port has lost its link.

Every LUN its node serves loses the paths through that port: hosts fail over
to the others (half the bandwidth and queue on a two-port fabric) or, with bad
zoning, lose LUNs. ``/api/network/fc/ports`` reports ``state``; a port that lost
its link (``link_disconnected``) or that ONTAP took offline (``offlined_by_system``)
is down. A port never cabled (``link_not_connected``) and one an admin disabled
are not: nothing was lost.
"""

from __future__ import annotations

from sanlens.diagnose.base import Context, Observation, Thresholds, labels
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads

DOWN = frozenset({"link_disconnected", "offlined_by_system"})

SPEC = DiagnosisSpec(
    id="fc_port_down",
    title="FC target port down",
    summary="An enabled FC target port lost its link (link_disconnected) or ONTAP offlined it (offlined_by_system).",
    subject="FC port",
    thresholds=(),
    sustain_s=60.0,
    exit_s=300.0,
    severity={2: "enabled port link_disconnected or offlined_by_system"},
    fix="Check the SFP, cable and switch port; `network fcp adapter show -node N -adapter P`; re-enable the port.",
    evidence=(
        Evidence("enabled_ports", "ports", "1 when the port is administratively enabled", "enabled ports"),
    ),
    dashboard=Dashboard("sanlens-io-path", ("cluster",)),
    pages=True,
    reads=Reads(endpoints=("/api/network/fc/ports",)),
)
ID = SPEC.id


READS = frozenset({"ontap"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    out = []
    for view in ctx.ontap.values():
        for p in view.fc_ports:
            if not p.state:
                continue
            level = 2 if p.enabled and p.state in DOWN else 0
            advice = ""
            if level:
                advice = (
                    f"FC port {p.port} of node {p.node} ({p.cluster}) is {p.state}: the hosts' paths through it are "
                    "gone. Check its SFP, cable and switch port (`network fcp adapter show`)."
                )
            out.append(
                Observation(
                    ID,
                    f"{p.cluster}/{p.node}/{p.port}",
                    labels(cluster=p.cluster, node=p.node, port=p.port),
                    level,
                    float(level > 0),
                    {"enabled_ports": float(p.enabled)},
                    advice,
                )
            )
    return out
