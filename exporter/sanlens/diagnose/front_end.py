"""The array's front end behind a LUN or namespace: which protocol carries it and how busy its ports are.

A SCSI LUN is served over FC target ports or iSCSI LIFs on Ethernet ports, an NVMe namespace
over NVMe/FC or NVMe/TCP LIFs. ONTAP does not tell which one a host uses for a LUN without the
igroup maps, so the protocol is the one carrying the most bytes on the LUN's node among those
that can serve it; the evidence is that protocol's own: FC ports' link utilization and
queue-full responses, or the LIFs' latency and their Ethernet ports' utilization.
"""

from __future__ import annotations

from dataclasses import dataclass

from sanlens.diagnose.base import Context
from sanlens.model import LunStats, OntapView

PROTOCOL_NAMES = {"fcp": "FC", "iscsi": "iSCSI", "nvme_tcp": "NVMe/TCP", "nvme_fc": "NVMe/FC", "nvme": "NVMe"}


@dataclass(frozen=True, slots=True)
class FrontEnd:
    protocol: str = ""  # fcp, iscsi, nvme_tcp, nvme_fc ('' when the node shows no front-end data)
    port_utilization: float | None = None  # busiest port, share of its link's data rate
    queue_full_per_second: float | None = None  # FC target ports only
    lif_latency_s: float | None = None  # IOPS-weighted latency at the protocol's LIFs (iSCSI, NVMe)

    @property
    def name(self) -> str:
        return PROTOCOL_NAMES.get(self.protocol, self.protocol)


def _fc(view: OntapView, node: str) -> tuple[float, FrontEnd]:
    ports = [p for p in view.fc_ports if p.node == node] or list(view.fc_ports)
    utils = [u for p in ports if (u := p.utilization) is not None]
    qf = [p.queue_full for p in ports if p.queue_full is not None]
    rate = sum(qf) / view.interval_s if qf and view.interval_s else None
    moved = sum((p.read_bytes_s or 0.0) + (p.write_bytes_s or 0.0) for p in ports)
    return moved, FrontEnd("fcp", max(utils) if utils else None, rate)


def _lifs(view: OntapView, node: str, protocols: tuple[str, ...]) -> list[tuple[float, FrontEnd]]:
    out = []
    for protocol in protocols:
        lifs = [x for x in view.lifs if x.protocol == protocol and x.node == node]
        if not lifs:
            continue
        per_port: dict[str, tuple[float, float, float | None]] = {}
        for x in lifs:  # several LIFs may share a port: their bytes add up on it
            r, w, cap = per_port.get(x.port, (0.0, 0.0, None))
            per_port[x.port] = (
                r + (x.read_bytes_s or 0.0),
                w + (x.write_bytes_s or 0.0),
                x.bytes_per_second_capacity or cap,
            )
        utils = [max(r, w) / cap for r, w, cap in per_port.values() if cap]
        ops = lat = 0.0
        for x in lifs:
            for n, s in ((x.read_iops, x.read_latency_s), (x.write_iops, x.write_latency_s)):
                if n and s is not None:
                    ops, lat = ops + n, lat + n * s
        moved = sum(r + w for r, w, _ in per_port.values())
        out.append(
            (moved, FrontEnd(protocol, max(utils) if utils else None, None, lat / ops if ops else None))
        )
    return out


def front_end(ctx: Context, lun: LunStats) -> FrontEnd:
    """The front end that most plausibly carries ``lun``: the busiest protocol that can serve it."""
    view = ctx.ontap.get(lun.cluster)
    if view is None:
        return FrontEnd()
    if lun.kind == "namespace":
        candidates = _lifs(view, lun.node, ("nvme_tcp", "nvme_fc", "nvme"))
    else:
        candidates = _lifs(view, lun.node, ("iscsi",))
        # FC ports of other nodes stand in only where the node shows no front end of its own
        if any(p.node == lun.node for p in view.fc_ports) or (view.fc_ports and not candidates):
            candidates.append(_fc(view, lun.node))
    if not candidates:
        return FrontEnd()
    return max(candidates, key=lambda c: c[0])[1]
