"""The array's front end behind a LUN or namespace: which protocol carries it and how busy its ports are.

A SCSI LUN is served over FC target ports or iSCSI LIFs on Ethernet ports, an NVMe namespace
over NVMe/FC or NVMe/TCP LIFs. ONTAP does not tell which one a host uses for a LUN without the
igroup maps, so the protocol is the one carrying the most bytes on the LUN's node among those
that can serve it; the evidence is that protocol's own: FC ports' link utilization and
queue-full responses, or the LIFs' latency and the utilization of the ports under them.

An Ethernet port carries more than one protocol's LIFs: iSCSI and NVMe/TCP LIFs side by side, NAS
LIFs, VLANs over the same physical port (e0c-100 on e0c). Its own counters (nic_common) hold all
of that; where they are missing, the sum of the SAN LIFs over the port stands in, named so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sanlens.diagnose.base import Context, pct
from sanlens.model import LifStats, LunStats, OntapView, physical_port

PROTOCOL_NAMES = {"fcp": "FC", "iscsi": "iSCSI", "nvme_tcp": "NVMe/TCP", "nvme_fc": "NVMe/FC", "nvme": "NVMe"}
ETHERNET = frozenset({"iscsi", "nvme_tcp"})
# how a port's utilization was measured
PORT_COUNTERS = "port counters"
LIF_SUM = "LIF sum, port counters missing"


@dataclass(frozen=True, slots=True)
class FrontEnd:
    protocol: str = ""  # fcp, iscsi, nvme_tcp, nvme_fc ('' when the node shows no front-end data)
    port_utilization: float | None = None  # busiest port, share of its link's data rate
    queue_full_per_second: float | None = None  # FC target ports only
    lif_latency_s: float | None = None  # IOPS-weighted latency at the protocol's LIFs (iSCSI, NVMe)
    port: str = ""  # the busiest port (the physical one under a VLAN)
    port_basis: str = ""  # PORT_COUNTERS or LIF_SUM: what port_utilization was measured from

    @property
    def name(self) -> str:
        return PROTOCOL_NAMES.get(self.protocol, self.protocol)

    @property
    def port_evidence(self) -> str:
        """The busiest port's utilization in words, with what it was measured from."""
        if self.port_utilization is None:
            return ""
        return f"busiest {self.name} port {self.port} at {pct(self.port_utilization)} of link speed, by {self.port_basis}"


Load = tuple[float, str, str]  # utilization, port, basis


def _busiest(loads: list[Load]) -> Load | None:
    return max(loads, key=lambda x: x[0]) if loads else None


def _fc(view: OntapView, node: str) -> tuple[float, FrontEnd]:
    ports = [p for p in view.fc_ports if p.node == node] or list(view.fc_ports)
    qf = [p.queue_full for p in ports if p.queue_full is not None]
    rate = sum(qf) / view.interval_s if qf and view.interval_s else None
    moved = sum((p.read_bytes_s or 0.0) + (p.write_bytes_s or 0.0) for p in ports)
    top = _busiest([(u, p.port, PORT_COUNTERS) for p in ports if (u := p.utilization) is not None])
    if top is None:
        return moved, FrontEnd("fcp", None, rate)
    return moved, FrontEnd("fcp", top[0], rate, port=top[1], port_basis=top[2])


def _lif_sum(lifs: list[LifStats], port: str) -> Load | None:
    """The busier direction of ``lifs``' bytes over their port's data rate."""
    cap = next((c for x in lifs if (c := x.bytes_per_second_capacity)), None)
    if not cap:
        return None
    r = sum(x.read_bytes_s or 0.0 for x in lifs)
    w = sum(x.write_bytes_s or 0.0 for x in lifs)
    return max(r, w) / cap, port, LIF_SUM


def ethernet_ports(view: OntapView, node: str) -> dict[str, Load]:
    """Each physical Ethernet port of ``node`` under an iSCSI or NVMe/TCP LIF -> its load: from the
    port's own counters, every protocol and VLAN on it; else the sum of the SAN LIFs over it."""
    own = {p.port: p for p in view.eth_ports if p.node == node}
    over: dict[str, list[LifStats]] = {}
    for x in view.lifs:
        if x.node == node and x.protocol in ETHERNET:
            over.setdefault(physical_port(x.port), []).append(x)
    out: dict[str, Load] = {}
    for port, lifs in over.items():
        p = own.get(port)
        if p is not None and not p.speed_gbps:  # the row gave no speed: the LIFs' port speed
            p = dataclasses.replace(p, speed_gbps=next((x.speed_gbps for x in lifs if x.speed_gbps), None))
        if p is not None and (u := p.utilization) is not None:
            out[port] = (u, port, PORT_COUNTERS)
        elif (load := _lif_sum(lifs, port)) is not None:
            out[port] = load
    return out


def _port_loads(view: OntapView, node: str, protocol: str, lifs: list[LifStats]) -> list[Load]:
    """The loads of the ports under ``lifs``: Ethernet ports as ``ethernet_ports`` gives them, an
    NVMe/FC LIF's FC port from the fcp table's counters (NVMe/FC traffic included), else its LIFs' sum."""
    if protocol in ETHERNET:
        eth = ethernet_ports(view, node)
        return [eth[p] for p in dict.fromkeys(physical_port(x.port) for x in lifs) if p in eth]
    fc = {p.port: p for p in view.fc_ports if p.node == node}
    per_port: dict[str, list[LifStats]] = {}
    for x in lifs:
        per_port.setdefault(x.port, []).append(x)
    out = []
    for port, xs in per_port.items():
        fp = fc.get(port)
        u = fp.utilization if fp is not None and protocol == "nvme_fc" else None
        load = (u, port, PORT_COUNTERS) if u is not None else _lif_sum(xs, port)
        if load is not None:
            out.append(load)
    return out


def _lifs(view: OntapView, node: str, protocols: tuple[str, ...]) -> list[tuple[float, FrontEnd]]:
    out = []
    for protocol in protocols:
        lifs = [x for x in view.lifs if x.protocol == protocol and x.node == node]
        if not lifs:
            continue
        ops = lat = 0.0
        for x in lifs:
            for n, s in ((x.read_iops, x.read_latency_s), (x.write_iops, x.write_latency_s)):
                if n and s is not None:
                    ops, lat = ops + n, lat + n * s
        moved = sum((x.read_bytes_s or 0.0) + (x.write_bytes_s or 0.0) for x in lifs)
        top = _busiest(_port_loads(view, node, protocol, lifs))
        latency = lat / ops if ops else None
        if top is None:
            out.append((moved, FrontEnd(protocol, None, None, latency)))
        else:
            out.append((moved, FrontEnd(protocol, top[0], None, latency, port=top[1], port_basis=top[2])))
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
