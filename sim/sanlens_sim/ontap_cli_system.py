"""The rows of ONTAP's CLI ``show`` commands for nodes and the network: ``system node``, ``network
interface`` (every SAN LIF, FC ones included, as the CLI lists them) and ``network port`` (the
Ethernet ports, those of :mod:`sanlens_sim.ontap_network`); :mod:`sanlens_sim.ontap_cli` answers them.
"""

from __future__ import annotations

from sanlens_sim.estate import UPTIME_S, Estate
from sanlens_sim.ontap_api import Json
from sanlens_sim.ontap_collections import node_location
from sanlens_sim.ontap_network import ethernet_port_records, ethernet_ports, fc_lif_wwpn, ip_address
from sanlens_sim.world import World

# ------------------------------------------------------------------ system node show
MAX_AGGR_SIZE = 800 * 2**40
MAX_VOL_SIZE = 300 * 2**40
MAX_NODE_VOLUMES = 1000


def node_rows(estate: Estate, w: World, t: float) -> list[Json]:
    cs = estate.counters["node"]
    out = []
    for n in w.nodes:
        busy = cs.value(n.name, "cpu_busy", t) if n.name in cs.index else 0.0
        out.append(
            {
                "node": n.name,
                "location": node_location(w),
                "model": n.model,
                "serialnumber": n.serial,
                "uuid": n.uuid,
                "uptime": int(UPTIME_S + t - estate.started),
                "health": True,
                "eligibility": True,
                "vendor": "NetApp",
                "max_aggr_size": MAX_AGGR_SIZE,
                "max_vol_size": MAX_VOL_SIZE,
                "max_node_vvols": MAX_NODE_VOLUMES,
                "cpu_busy_time": int(busy / 1e6),  # seconds
            }
        )
    return out


# ------------------------------------------------------------------ network interface / port show
# the CLI's data-protocol values of the simulated LIFs' protocols (a list field: one each here)
DATA_PROTOCOL = {"fcp": "fcp", "nvme_fc": "fc-nvme", "iscsi": "iscsi", "nvme_tcp": "nvme-tcp"}


def interface_rows(estate: Estate, w: World, t: float) -> list[Json]:
    out: list[Json] = []
    for x in w.lifs:
        up = x.port_state != "down" if x.ethernet else x.port_state == "online"
        row: Json = {
            "vserver": x.svm,
            "lif": x.name,
            "role": "data",
            "data_protocol": [DATA_PROTOCOL[x.protocol]],
            "address": ip_address(w, x) if x.ethernet else fc_lif_wwpn(w, x),
            "home_node": x.node,
            "home_port": x.port,
            "curr_node": x.node,
            "curr_port": x.port,
            "status_admin": "up",
            "status_oper": "up" if up else "down",
            "is_home": True,
        }
        if x.ethernet:
            row["netmask"] = "255.255.255.0"
        out.append(row)
    return out


def port_rows(estate: Estate, w: World, t: float) -> list[Json]:
    """The Ethernet ports of the REST collection, in the CLI's fields (speed in Mbit/s as text)."""
    return [
        {
            "node": r["node"]["name"],
            "port": r["name"],
            "link": r["state"],
            "mtu": r["mtu"],
            "ipspace": r["broadcast_domain"]["ipspace"]["name"],
            "broadcast_domain": r["broadcast_domain"]["name"],
            "type": r["type"],
            "role": "data",
            "duplex_admin": "auto",
            "duplex_oper": "full",
            "flowcontrol_admin": "none",
            "speed_admin": "auto",
            "speed_oper": str(int(r["speed"])),
            "health_status": "healthy",
        }
        for r in ethernet_port_records(w, ethernet_ports(w))
    ]
