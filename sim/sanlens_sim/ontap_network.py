"""The fake ONTAP network collections: FC target ports, IP interfaces and Ethernet ports.

FC ports carry keyperf ``statistics`` and IP interfaces their throughput, from
:mod:`sanlens_sim.estate` at the instant of the request; the CLI pass-through
(:mod:`sanlens_sim.ontap_cli`) lists the same LIFs and ports.
"""

from __future__ import annotations

from sanlens.model import iso_utc
from sanlens_sim.estate import Estate
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


def ethernet_port_uuid(w: World, x: Lif) -> str:
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


def ethernet_ports(w: World) -> list[Lif]:
    """One Ethernet port per (node, port) an iSCSI or NVMe/TCP LIF uses."""
    seen: dict[tuple[str, str], Lif] = {}
    for x in w.ip_lifs:
        seen.setdefault((x.node, x.port), x)
    return list(seen.values())


def ethernet_port_records(w: World, page: list[Lif]) -> list[Json]:
    """``/api/network/ethernet/ports``: speed in Mbit/s, as ONTAP reports it."""
    out = []
    for x in page:
        uuid = ethernet_port_uuid(w, x)
        out.append(
            {
                "uuid": uuid,
                "name": x.port,
                "node": {"name": x.node, "uuid": node_uuid(w, x.node)},
                "type": "physical",
                "enabled": True,
                "state": "down" if x.port_state == "down" else "up",
                "speed": x.speed_gbps * 1000,
                "mtu": 9000,
                "mac_address": "00:a0:98:" + ":".join(uuid[i : i + 2] for i in (0, 2, 4)),
                "broadcast_domain": {"name": "Default", "ipspace": {"name": "Default"}},
                "_links": {"self": {"href": f"/api/network/ethernet/ports/{uuid}"}},
            }
        )
    return out
