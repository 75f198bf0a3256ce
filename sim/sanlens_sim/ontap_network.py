"""The fake ONTAP network collections: FC target ports, IP interfaces and Ethernet ports.

FC ports carry keyperf ``statistics``, IP interfaces and Ethernet ports their throughput, from
:mod:`sanlens_sim.estate` at the instant of the request. Ethernet ports are the physical ports under
the iSCSI and NVMe/TCP LIFs and the VLANs over them a LIF sits on; the CLI pass-through
(:mod:`sanlens_sim.ontap_cli`) lists the same LIFs and ports.
"""

from __future__ import annotations

from dataclasses import dataclass

from sanlens.model import iso_utc
from sanlens_sim.estate import Estate, NicPort, nic_ports
from sanlens_sim.ontap_api import Json, node_uuid, svm_uuid
from sanlens_sim.ontap_collections import LUN_STATS, keyperf
from sanlens_sim.world import Lif, World, stable_uuid


def fc_port_records(
    w: World, page: list[Lif], estate: Estate | None = None, t: float = 0.0, with_stats: bool = False
) -> list[Json]:
    """``/api/network/fc/ports``: one FC target port per simulated FC LIF; ``statistics`` (IOPS,
    latency, throughput, raw and cumulative, as NetApp documents for FC ports since 9.8) when asked."""
    out = []
    for x in page:
        uuid = stable_uuid(w.cluster, "fcport", x.node, x.port)
        if with_stats and estate is not None:
            stats = {"statistics": keyperf(estate, "fcport", f"{x.node}:{x.port}", t, LUN_STATS)}
        else:
            stats = {}
        out.append(
            {
                "uuid": uuid,
                "name": x.port,
                "node": {"name": x.node, "uuid": node_uuid(w, x.node)},
                "description": f"Fibre Channel Target Adapter {x.port} (QLogic 2742 (2742), rev. 2, 32G)",
                "enabled": True,
                "state": x.port_state,
                "physical_protocol": "fibre_channel",
                "supported_protocols": ["fcp"],
                "speed": {"configured": "auto", "maximum": "32"},
                "wwnn": "20:00:00:50:56:b4:" + uuid[-5:-3] + ":" + uuid[-2:],
                "wwpn": "20:01:00:50:56:b4:" + uuid[-5:-3] + ":" + uuid[-2:],
                "fabric": {
                    "connected": x.port_state == "online",
                    "connected_speed": x.speed_gbps,
                    "name": "20:00:00:05:33:a1:b2:c3",
                    "port_address": "10100",
                    "switch_port": f"brocade1:{x.port}",
                },
                "transceiver": {
                    "form_factor": "SFP",
                    "manufacturer": "FINISAR CORP",
                    "capabilities": [8, 16, 32],
                },
                "_links": {"self": {"href": f"/api/network/fc/ports/{uuid}"}},
                **stats,
            }
        )
    return out


SERVICES = {"iscsi": ["data_iscsi"], "nvme_tcp": ["data_nvme_tcp"]}


def ip_interface_uuid(w: World, x: Lif) -> str:
    return stable_uuid(w.cluster, "lif", x.svm, x.name)


def ethernet_port_uuid(w: World, x: Lif | EthPort) -> str:
    return stable_uuid(w.cluster, "ethport", x.node, x.port)


def fc_lif_wwpn(w: World, x: Lif) -> str:
    """An FC or NVMe/FC LIF's own WWPN (its address; the port under it has another)."""
    u = stable_uuid(w.cluster, "fclif", x.svm, x.name)
    return "20:0a:00:a0:98:" + ":".join(u[i : i + 2] for i in (0, 2, 4))


def ip_address(w: World, x: Lif) -> str:
    """An iSCSI or NVMe/TCP LIF's address: a subnet per node, a host number per LIF on it."""
    nodes = [n.name for n in w.nodes]
    same = [y for y in w.ip_lifs if y.node == x.node]
    return f"192.168.{nodes.index(x.node) + 10}.{10 + same.index(x)}"


def ip_interface_records(estate: Estate, w: World, page: list[Lif], t: float, with_stats: bool) -> list[Json]:
    """``/api/network/ip/interfaces``: the iSCSI and NVMe/TCP data LIFs (FC LIFs are not IP
    interfaces). ``statistics.throughput_raw``: read is what the LIF sent (host reads), write
    what it received."""
    cs = estate.counters["lif"]
    out = []
    for x in page:
        node = {"name": x.node, "uuid": node_uuid(w, x.node)}
        port = {"name": x.port, "uuid": ethernet_port_uuid(w, x), "node": {"name": x.node}}
        rec: Json = {
            "uuid": ip_interface_uuid(w, x),
            "name": x.name,
            "svm": {"name": x.svm, "uuid": svm_uuid(w, x.svm)},
            "ip": {
                "address": ip_address(w, x),
                "netmask": "24",
                "family": "ipv4",
            },
            "enabled": True,
            "state": "down" if x.port_state == "down" else "up",
            "scope": "svm",
            "ipspace": {"name": "Default"},
            "services": list(SERVICES.get(x.protocol, [])),
            "location": {"is_home": True, "node": node, "port": port, "home_node": node, "home_port": port},
        }
        if with_stats:
            idx = cs.index.get(f"{x.svm}:{x.name}")
            vals = cs.row(idx, t) if idx is not None else [0.0] * len(cs.names)
            rb = int(vals[cs.col["read_data"]]) if "read_data" in cs.col else 0
            wb = int(vals[cs.col["write_data"]]) if "write_data" in cs.col else 0
            rec["statistics"] = {
                "timestamp": iso_utc(t),
                "status": "ok",
                "throughput_raw": {"read": rb, "write": wb, "total": rb + wb},
            }
        rec["_links"] = {"self": {"href": f"/api/network/ip/interfaces/{rec['uuid']}"}}
        out.append(rec)
    return out


@dataclass(frozen=True)
class EthPort:
    """An Ethernet port ``/api/network/ethernet/ports`` lists: a physical port, or a VLAN over one."""

    node: str
    port: str
    nic: NicPort  # the physical port (itself, for a physical port)

    @property
    def vlan(self) -> bool:
        return self.port != self.nic.name


def ethernet_ports(w: World) -> list[EthPort]:
    """The physical ports under the iSCSI and NVMe/TCP LIFs, each followed by the VLANs over it a LIF uses."""
    out = []
    for p in nic_ports(w):
        out.append(EthPort(p.node, p.name, p))
        out += [EthPort(p.node, v, p) for v in dict.fromkeys(x.port for x in p.lifs) if v != p.name]
    return out


def _throughput(estate: Estate, e: EthPort, t: float) -> tuple[int, int]:
    """A port's cumulative bytes (sent, received): a physical port's own counters, a VLAN's its LIFs'."""
    if not e.vlan:
        cs = estate.counters["nic"]
        idx = cs.index.get(f"{e.node}:{e.port}")
        vals = cs.row(idx, t) if idx is not None else [0.0] * len(cs.names)
        return int(vals[cs.col["transmit_bytes"]]), int(vals[cs.col["receive_bytes"]])
    cs = estate.counters["lif"]
    sent = received = 0
    for x in e.nic.lifs:
        idx = cs.index.get(f"{x.svm}:{x.name}")
        if x.port == e.port and idx is not None:
            vals = cs.row(idx, t)
            sent += int(vals[cs.col["read_data"]])
            received += int(vals[cs.col["write_data"]])
    return sent, received


def ethernet_port_records(
    w: World, page: list[EthPort], estate: Estate | None = None, t: float = 0.0, with_stats: bool = False
) -> list[Json]:
    """``/api/network/ethernet/ports``: speed in Mbit/s, as ONTAP reports it; a VLAN names its base port
    (ONTAP names it ``<base>-<tag>``). ``statistics.throughput_raw`` (since 9.8) when asked: read is what
    the port sent, write what it received, as on IP interfaces."""
    out = []
    for x in page:
        uuid = ethernet_port_uuid(w, x)
        rec: Json = {
            "uuid": uuid,
            "name": x.port,
            "node": {"name": x.node, "uuid": node_uuid(w, x.node)},
            "type": "vlan" if x.vlan else "physical",
            "enabled": True,
            "state": "up" if x.nic.up else "down",
            "speed": x.nic.speed_gbps * 1000,
            "mtu": 9000,
            "mac_address": "00:a0:98:" + ":".join(uuid[i : i + 2] for i in (0, 2, 4)),
            "broadcast_domain": {"name": "Default", "ipspace": {"name": "Default"}},
        }
        if x.vlan:
            base = EthPort(x.node, x.nic.name, x.nic)
            rec["vlan"] = {
                "tag": int(x.port.rpartition("-")[2]),
                "base_port": {
                    "name": base.port,
                    "node": {"name": x.node},
                    "uuid": ethernet_port_uuid(w, base),
                },
            }
        if with_stats and estate is not None:
            sent, received = _throughput(estate, x, t)
            rec["statistics"] = {
                "timestamp": iso_utc(t),
                "status": "ok",
                "throughput_raw": {"read": sent, "write": received, "total": sent + received},
            }
        rec["_links"] = {"self": {"href": f"/api/network/ethernet/ports/{uuid}"}}
        out.append(rec)
    return out
