"""The front end's Ethernet port utilization is the physical port's, from its own counters.

An Ethernet port carries every LIF on it: iSCSI and NVMe/TCP side by side, NAS LIFs, VLANs over it
(e0c-100 on e0c). NetApp Harvest's nic plugin (cmd/collectors/restperf/plugins/nic/nic.go) takes a
port's utilization from nic_common's receive_bytes and transmit_bytes over its link_speed (Mbit/s,
125,000 bytes/s each): the larger of the two directions. Where the port's counters are missing, the
sum of the SAN LIFs over the physical port stands in, and says so.
"""

from __future__ import annotations

import pytest

from sanlens.diagnose.base import Context
from sanlens.diagnose.front_end import LIF_SUM, PORT_COUNTERS, front_end
from sanlens.diagnose.history import History
from sanlens.model import EthPortStats, LifStats, LunStats, OntapView, physical_port

MB = 1e6
TEN_GBE = 10 * 125 * MB  # 1,250 MB/s


def _lif(name: str, protocol: str, port: str, read_mb: float, node: str = "n1") -> LifStats:
    return LifStats("c1", node, "s1", name, protocol, port=port, speed_gbps=10.0, read_bytes_s=read_mb * MB,
                    write_bytes_s=0.0, read_iops=1000.0, read_latency_s=0.001)  # fmt: skip


def _ctx(lifs: tuple[LifStats, ...], ports: tuple[EthPortStats, ...] = ()) -> Context:
    view = OntapView("c1", 0.0, 60.0, lifs=lifs, eth_ports=ports)
    return Context(0.0, {"c1": view}, {}, History())


LUN = LunStats("c1", "s1", "v1", "/vol/v1/lun0", node="n1")
NAMESPACE = LunStats("c1", "s1", "v2", "/vol/v2/ns0", node="n1", kind="namespace")
# an iSCSI LIF on the VLAN e0c-100 and an NVMe/TCP LIF on e0c itself: one 10 GbE link
SHARED = (_lif("iscsi1", "iscsi", "e0c-100", 700.0), _lif("nvme1", "nvme_tcp", "e0c", 600.0))


def test_a_vlan_is_on_its_base_port() -> None:
    assert physical_port("e0c-100") == "e0c" and physical_port("a0a-200") == "a0a"
    assert physical_port("e0c") == "e0c" and physical_port("a0a") == "a0a" and physical_port("") == ""


def test_two_protocols_on_one_port_read_the_ports_own_counters() -> None:
    """700 + 600 MB/s of reads on one 10 GbE port: 1.04 of its link, not 0.56 and 0.48 per LIF."""
    port = EthPortStats("c1", "n1", "e0c", speed_gbps=10.0, rx_bytes_s=20 * MB, tx_bytes_s=1300 * MB)
    ctx = _ctx(SHARED, (port,))
    for subject in (LUN, NAMESPACE):
        fe = front_end(ctx, subject)
        assert fe.port_utilization == pytest.approx(1300 * MB / TEN_GBE) == pytest.approx(1.04)
        assert (fe.port, fe.port_basis) == ("e0c", PORT_COUNTERS)
    assert front_end(ctx, LUN).protocol == "iscsi" and front_end(ctx, NAMESPACE).protocol == "nvme_tcp"


def test_nas_traffic_on_the_port_counts() -> None:
    """The port's counters hold traffic no SAN LIF sees (NAS LIFs): the link is busier than the LIFs."""
    lifs = (_lif("iscsi1", "iscsi", "e0d", 300.0),)
    port = EthPortStats("c1", "n1", "e0d", speed_gbps=10.0, rx_bytes_s=900 * MB, tx_bytes_s=450 * MB)
    fe = front_end(_ctx(lifs, (port,)), LUN)
    assert fe.port_utilization == pytest.approx(900 * MB / TEN_GBE)  # full duplex: the busier direction
    assert fe.port_basis == PORT_COUNTERS


def test_without_port_counters_the_lifs_over_the_physical_port_add_up_and_say_so() -> None:
    """No nic_common rows (a release or role without the table): every SAN LIF over the physical port,
    of either protocol and VLAN, summed; the evidence names the stand-in."""
    fe = front_end(_ctx(SHARED), LUN)
    assert fe.port_utilization == pytest.approx(1.04)
    assert (fe.port, fe.port_basis) == ("e0c", LIF_SUM) and LIF_SUM == "LIF sum, port counters missing"
    assert (
        fe.port_evidence == "busiest iSCSI port e0c at 104 % of link speed, by LIF sum, port counters missing"
    )


def test_a_port_row_without_a_speed_takes_its_lifs_port_speed() -> None:
    port = EthPortStats("c1", "n1", "e0c", rx_bytes_s=0.0, tx_bytes_s=1300 * MB)
    fe = front_end(_ctx(SHARED, (port,)), LUN)
    assert fe.port_utilization == pytest.approx(1.04) and fe.port_basis == PORT_COUNTERS


def test_another_nodes_port_is_not_this_ones() -> None:
    other = EthPortStats("c1", "n2", "e0c", speed_gbps=10.0, rx_bytes_s=0.0, tx_bytes_s=1200 * MB)
    fe = front_end(_ctx(SHARED, (other,)), LUN)
    assert fe.port_basis == LIF_SUM and fe.port_utilization == pytest.approx(1.04)
