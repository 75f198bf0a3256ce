"""Assembles a consistent simulated :class:`~sanlens_sim.world.World`.

Scenarios (``scenarios.py``) describe their subjects with :class:`Builder`; the
builder keeps the topology consistent (volume ops are the sum of their LUNs,
node ops the sum of their volumes, host disks carry the ops of their LUN) and
``fill`` pads the estate with healthy objects up to the scale knobs.
"""

from __future__ import annotations

from dataclasses import replace

from sanlens_sim.host_builder import HostBuilder
from sanlens_sim.world import (
    ETHERNET_PORT_NAMES,
    ETHERNET_PROTOCOLS,
    FC_PORT_NAMES,
    HEALTHY_DOMAINS,
    SAN_PROTOCOLS,
    Aggregate,
    Disk,
    Host,
    IoRates,
    Lif,
    Lun,
    Node,
    QosPolicy,
    RaidGroup,
    Volume,
    World,
    lun_serial,
    stable_uuid,
    unit_hash,
)


def io_for(ops: float, read_share: float, read_ms: float, write_ms: float, io_kb: float = 8.0) -> IoRates:
    r, w = ops * read_share, ops * (1.0 - read_share)
    return IoRates(
        read_ops=r,
        write_ops=w,
        read_lat_us=read_ms * 1000.0,
        write_lat_us=write_ms * 1000.0,
        read_bytes=r * io_kb * 1024,
        write_bytes=w * io_kb * 1024,
    )


class Builder(HostBuilder):
    """Builds a consistent :class:`World`; scenarios add their subjects, ``fill`` pads to the scale knobs."""

    def __init__(self, cluster: str, version: tuple[int, int, int]) -> None:
        self.cluster = cluster
        self.version = version
        self.nodes: list[Node] = []
        self.aggregates: list[Aggregate] = []
        self.volumes: list[Volume] = []
        self.luns: list[Lun] = []
        self.spares: list[Disk] = []
        self.hosts: list[Host] = []
        self.filler_aggrs: list[Aggregate] = []
        self.filler_vols: list[Volume] = []
        self.personality = "unified"
        self.lifs_per_node = 2  # FC LIFs per node
        self.fc_speed_gbps = 16
        # LIFs per node of the other protocols (2 when not set), made only for protocols in use
        self.protocol_lifs: dict[str, int] = {}
        self.eth_speed_gbps = 25
        self.fa_queue_full: dict[
            str, float
        ] = {}  # node -> per port, per second: an over-subscribed front end
        self.down_ports: set[tuple[str, str]] = set()  # (node, port) whose link is lost
        self.qos_policies: list[QosPolicy] = []
        self._bay: dict[str, int] = {}
        self._by_vol: dict[tuple[str, str], list[Lun]] = {}

    # -- topology
    def node(self, domains: dict[str, float] | None = None, cpus: int = 8, model: str = "AFF-A400") -> Node:
        i = len(self.nodes) + 1
        name = f"{self.cluster}-{i:02d}"
        n = Node(
            name,
            stable_uuid(self.cluster, name),
            f"7219{i:08d}",
            model,
            cpus,
            dict(domains or HEALTHY_DOMAINS),
        )
        self.nodes.append(n)
        return n

    def _disk(self, node: Node, dtype: str) -> Disk:
        stack = self.nodes.index(node) + 1
        k = self._bay.get(node.name, 0)
        self._bay[node.name] = k + 1
        name = f"{stack}.{k // 24}.{k % 24}"
        return Disk(name, stable_uuid(self.cluster, "disk", name), node.name, dtype)

    def aggregate(
        self,
        node: Node,
        raid_groups: list[tuple[int, float]],
        disk_type: str = "ssd",
        name: str | None = None,
        raid_type: str = "raid_dp",
    ) -> Aggregate:
        """``raid_groups``: (disks, busy 0..1) per RAID group, oldest first."""
        name = name or f"aggr{len(self.aggregates) + 1}_{node.name.rsplit('-', 1)[-1]}"
        rgs = []
        for g, (count, busy) in enumerate(raid_groups):
            disks = []
            for p in range(count):
                d = self._disk(node, disk_type)
                d.aggregate, d.raid_group = name, f"/{name}/plex0/rg{g}"
                d.position = (
                    "parity" if p == 0 else "dparity" if p == 1 and raid_type == "raid_dp" else "data"
                )
                # a small deterministic spread around the group's busy (±8 % relative)
                d.busy = max(0.0, min(1.0, busy * (0.92 + 0.16 * unit_hash(self.cluster, d.name))))
                disks.append(d)
            rgs.append(RaidGroup(f"rg{g}", disks))
        a = Aggregate(name, stable_uuid(self.cluster, "aggr", name), node.name, disk_type, raid_type, rgs)
        self.aggregates.append(a)
        return a

    def spare(self, node: Node, dtype: str = "ssd") -> Disk:
        d = self._disk(node, dtype)
        d.container_type, d.position = "spare", ""
        self.spares.append(d)
        return d

    def volume(
        self,
        aggr: Aggregate,
        name: str,
        ops: float,
        read_share: float = 0.7,
        lat_ms: tuple[float, float] = (0.5, 0.8),
        luns: int = 2,
        svm: str = "svm1",
        io_kb: float = 8.0,
        protocol: str = "fcp",
    ) -> Volume:
        """A volume whose ``ops`` are spread evenly over ``luns`` LUNs (NVMe namespaces when
        ``protocol`` is nvme_tcp or nvme_fc), which its hosts reach over ``protocol``."""
        assert protocol in SAN_PROTOCOLS, protocol
        v = Volume(name, stable_uuid(self.cluster, "vol", svm, name), svm, aggr.name, aggr.node)
        self.volumes.append(v)
        nvme = protocol.startswith("nvme")
        for i in range(luns):
            path = f"/vol/{name}/{'ns' if nvme else 'lun'}{i}"
            lun = Lun(
                path,
                stable_uuid(self.cluster, "lun", svm, path),
                lun_serial(self.cluster, svm, path),
                svm,
                name,
                aggr.node,
                io_for(ops / luns, read_share, *lat_ms, io_kb=io_kb),
                os_type="linux" if nvme else "windows_2008",
                protocol=protocol,
            )
            self.luns.append(lun)
            self._by_vol.setdefault((svm, name), []).append(lun)
        return v

    def luns_of(self, v: Volume) -> list[Lun]:
        return self._by_vol.get((v.svm, v.name), [])

    # -- QoS and indirect I/O
    def qos_policy(self, policy: QosPolicy, *objects: Volume | Lun) -> QosPolicy:
        """Add a QoS policy group and set it on ``objects`` (volumes or LUNs)."""
        self.qos_policies.append(policy)
        for o in objects:
            o.qos_policy = policy.name
        return policy

    @staticmethod
    def delay(lun: Lun, qos_max_us: float = 0.0, qos_min_us: float = 0.0) -> None:
        """The QoS ceiling (and other workloads' floors) hold ``lun``'s operations this long each:
        the LUN's latency grows by it, its volume's (WAFL's) does not."""
        lun.qos_max_us, lun.qos_min_us = qos_max_us, qos_min_us
        _slower(lun.io, qos_max_us + qos_min_us)

    @staticmethod
    def indirect(lun: Lun, node: Node, share: float, interconnect_us: float) -> None:
        """``share`` of ``lun``'s operations arrive through ``node``'s LIFs (not the LUN's node) and
        cross the cluster interconnect, ``interconnect_us`` each: the LUN's latency grows by it."""
        lun.remote_node, lun.remote_share, lun.interconnect_us = node.name, share, interconnect_us
        _slower(lun.io, share * interconnect_us)

    # -- scale padding
    def fill(
        self,
        nodes: int | None = None,
        luns: int | None = None,
        volumes: int | None = None,
        disks: int | None = None,
        hosts: int | None = None,
    ) -> None:
        """Pad with healthy objects up to the requested counts (never removes scenario subjects)."""
        while nodes is not None and len(self.nodes) < nodes:
            self.node()
        n_vol = max(0, (volumes or 0) - len(self.volumes))
        n_lun = max(0, (luns or 0) - len(self.luns))
        n_disk = max(0, (disks or 0) - len(self.disks_all()))
        if n_vol == 0 and n_lun > 0:
            n_vol = max(1, n_lun // 8)
        if n_vol:
            self._fill_aggregates(n_vol, n_disk)
            n_disk = max(0, (disks or 0) - len(self.disks_all()))
            per_lun_ops = min(300.0, 15000.0 * len(self.nodes) / max(1, n_lun or n_vol))
            base, extra = divmod(n_lun, n_vol) if n_lun else (0, 0)
            for i in range(n_vol):
                a = self.filler_aggrs[i % len(self.filler_aggrs)]
                k = base + (1 if i < extra else 0)
                v = self.volume(a, f"fill_vol{i:05d}", per_lun_ops * max(k, 1), luns=k, lat_ms=(0.4, 0.7))
                self.filler_vols.append(v)
        # remaining disks: spares spread over the nodes
        for i in range(n_disk):
            self.spare(self.nodes[i % len(self.nodes)])
        while hosts is not None and len([h for h in self.hosts if h.os == "windows"]) < hosts:
            self._fill_host()

    def disks_all(self) -> list[Disk]:
        return [d for a in self.aggregates for d in a.disks] + self.spares

    def _fill_aggregates(self, n_vol: int, n_disk: int) -> None:
        per_node = 2
        count = max(1, min(len(self.nodes) * per_node, (n_vol + 3) // 4))
        per_aggr = max(3, min(72, n_disk // count)) if n_disk else 12
        for i in range(count):
            node = self.nodes[i % len(self.nodes)]
            ng = -(-per_aggr // 24)
            groups = [(per_aggr // ng + (1 if j < per_aggr % ng else 0), 0.25) for j in range(ng)]
            self.filler_aggrs.append(self.aggregate(node, groups, name=f"fill_aggr{i:03d}"))

    def _fill_host(self) -> None:
        h = self.host(f"sql{len([x for x in self.hosts if x.os == 'windows']) + 1:02d}")
        pool = [x for v in self.filler_vols for x in self.luns_of(v)] or self.luns
        taken = {d.lun_key for hh in self.hosts for d in hh.disks}
        free = [x for x in pool if x.key not in taken]
        for lun in free[:4]:
            self.host_disk(
                h, lun, (lun.io.read_lat_us / 1000 + 0.3, lun.io.write_lat_us / 1000 + 0.3), 0.8, 1.0
            )

    # -- finish
    def build(self) -> World:
        """Roll LUN ops up to volumes, nodes and each protocol's LIFs."""
        by_vol: dict[tuple[str, str], IoRates] = {}
        for lun in self.luns:
            by_vol.setdefault((lun.svm, lun.volume), IoRates()).add(_wafl_io(lun))
        for v in self.volumes:
            io = by_vol.get((v.svm, v.name), IoRates())
            # WAFL sees a little metadata ("other") work on every busy volume
            io.other_ops = 0.02 * io.total_ops
            io.other_lat_us = 150.0 if io.other_ops else 0.0
            v.io = io
        lifs: list[Lif] = []
        for n in self.nodes:
            vols = [v for v in self.volumes if v.node == n.name]
            n.total_ops = sum(v.io.total_ops for v in vols)
            n.read_ops = sum(v.io.read_ops for v in vols)
            n.write_ops = sum(v.io.write_ops for v in vols)
            lifs += self._node_lifs(n)
        return World(
            self.cluster,
            self.version,
            self.nodes,
            self.aggregates,
            self.volumes,
            self.luns,
            lifs,
            self.spares,
            self.hosts,
            self.personality,
            self.qos_policies,
        )

    def _node_lifs(self, n: Node) -> list[Lif]:
        """The node's LIFs, one per target port: FC always, the other protocols when some LUN uses
        them. Each protocol's LIFs share the io of that protocol's LUNs on the node evenly; FC and
        NVMe/FC LIFs take FC ports in turn, iSCSI and NVMe/TCP LIFs Ethernet ports."""
        used = {x.protocol for x in self.luns}
        out: list[Lif] = []
        taken = {False: 0, True: 0}  # ports used so far, by "is Ethernet"
        for proto in SAN_PROTOCOLS:
            if proto != "fcp" and proto not in used:
                continue
            node_io = IoRates()
            for lun in self.luns:
                if lun.protocol != proto:
                    continue
                remote = lun.remote_share if lun.remote_node else 0.0
                if lun.node == n.name:  # the LUN's ops less those arriving at another node's LIFs
                    node_io.add(_scaled(lun.io, 1.0 - remote) if remote else lun.io)
                elif lun.remote_node == n.name and remote:
                    node_io.add(_scaled(lun.io, remote))
            eth = proto in ETHERNET_PROTOCOLS
            k = max(1, self.lifs_per_node if proto == "fcp" else self.protocol_lifs.get(proto, 2))
            names = ETHERNET_PORT_NAMES if eth else FC_PORT_NAMES
            for j in range(k):
                share = IoRates(
                    read_ops=node_io.read_ops / k,
                    write_ops=node_io.write_ops / k,
                    other_ops=node_io.other_ops / k,
                    read_lat_us=node_io.read_lat_us,
                    write_lat_us=node_io.write_lat_us,
                    read_bytes=node_io.read_bytes / k,
                    write_bytes=node_io.write_bytes / k,
                )
                port = names[taken[eth] % len(names)]
                taken[eth] += 1
                down = (n.name, port) in self.down_ports
                out.append(
                    Lif(
                        f"{n.name}_{LIF_TAGS[proto]}_{j + 1}",
                        n.name,
                        "svm1",
                        share,
                        port,
                        self.eth_speed_gbps if eth else self.fc_speed_gbps,
                        0.0 if eth else self.fa_queue_full.get(n.name, 0.0),
                        ("down" if down else "up") if eth else ("link_disconnected" if down else "online"),
                        proto,
                    )
                )
        return out


def _slower(io: IoRates, us: float) -> None:
    io.read_lat_us += us
    io.write_lat_us += us
    if io.other_ops:
        io.other_lat_us += us


def _scaled(io: IoRates, k: float) -> IoRates:
    """``io``'s ops and bytes times ``k``, the same latencies."""
    return replace(
        io,
        read_ops=io.read_ops * k,
        write_ops=io.write_ops * k,
        other_ops=io.other_ops * k,
        read_bytes=io.read_bytes * k,
        write_bytes=io.write_bytes * k,
    )


def _wafl_io(lun: Lun) -> IoRates:
    """The LUN's I/O as its volume (WAFL) counts it: without the QoS and interconnect time."""
    us = lun.front_us
    if not us:
        return lun.io
    io = lun.io
    other = io.other_lat_us - us if io.other_ops else io.other_lat_us
    return replace(io, read_lat_us=io.read_lat_us - us, write_lat_us=io.write_lat_us - us, other_lat_us=other)


# The protocol's part of a LIF's name (node_fc_1, node_iscsi_1, ...).
LIF_TAGS = {"fcp": "fc", "iscsi": "iscsi", "nvme_tcp": "nvmetcp", "nvme_fc": "nvmefc"}
