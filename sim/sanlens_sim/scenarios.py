"""The scenarios: field cases as simulated estates (docs/simulator.md, "Scenarios").

Each scenario is a pure function ``(knobs, phase) -> Builder``. A scenario with
a time line (a rebuild that starts after 30 s) lists its phase start offsets;
the server integrates the counters across phases, so rates change without a
counter ever going backwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sanlens_sim import qos_world
from sanlens_sim.builder import Builder
from sanlens_sim.scenario_array import (
    aggregate_expansion,
    healthy,
    kahuna_bottleneck,
    mixed,
    rebuild_during_oltp,
    rebuild_phases,
)
from sanlens_sim.scenario_base import ASA_R2, LEGACY, MODERN, KnobError, Knobs
from sanlens_sim.scenario_front_end import (
    asa_r2,
    deep_queue,
    iscsi,
    nvme_tcp,
    path_faults,
    san_oversubscription,
    shared_port,
    too_few_luns,
)
from sanlens_sim.scenario_qos import indirect_io, qos_throttle
from sanlens_sim.world import World


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    expected: tuple[str, ...]
    build: Callable[[Knobs, int], Builder]
    phases: Callable[[Knobs], list[float]] = lambda k: [0.0]
    version: tuple[int, int, int] = MODERN


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "healthy", "low latency, moderate load, balanced disks, 4 volumes per aggregate", (), healthy
        ),
        Scenario(
            "san-oversubscription",
            "host latency from too few front-end ports (fa_ports 2|4|6); array idle; a Windows and a "
            "Linux host",
            ("san_oversubscription", "latency_slo"),
            san_oversubscription,
        ),
        Scenario(
            "too-few-luns",
            "one LUN per host (Windows, Linux) at 30K IOPS, host queue full at depth 32 x 1 path (ONTAP "
            "9.8 by default)",
            ("host_queue_limited", "lun_iops_ceiling"),
            too_few_luns,
            version=LEGACY,
        ),
        Scenario(
            "kahuna-bottleneck",
            "Kahuna at 90 % of a core, CPU 30 %, one hot volume per aggregate",
            ("cpu_domain_serial_bottleneck", "volume_affinity_concentration"),
            kahuna_bottleneck,
        ),
        Scenario(
            "aggregate-expansion",
            "HDD aggregate: 46 old disks 25 % busy, 24 new disks 75 % busy",
            ("disk_busy_imbalance",),
            aggregate_expansion,
        ),
        Scenario(
            "rebuild-during-oltp",
            "OLTP at 12 ms, then a RAID reconstruct (0.5 %/s) at about 60 ms",
            ("background_operation_impact", "latency_slo"),
            rebuild_during_oltp,
            rebuild_phases(0.5),
        ),
        Scenario(
            "mixed",
            "the demo: oversubscription, Kahuna, disk imbalance and a rebuild at once, plus healthy subjects",
            (
                "san_oversubscription",
                "cpu_domain_serial_bottleneck",
                "disk_busy_imbalance",
                "background_operation_impact",
                "latency_slo",
            ),
            mixed,
            rebuild_phases(0.1),
        ),
        Scenario(
            "path-faults",
            "a host disk on 1 of 2 paths (Windows MPIO, and a Linux path device transport-offline), an "
            "offline LUN, a thin LUN in a full volume, an FC port down, a failed disk and an aggregate "
            "degraded without a spare",
            ("host_path_loss", "lun_not_online", "fc_port_down", "disk_failed", "aggregate_degraded"),
            path_faults,
        ),
        Scenario(
            "iscsi",
            "iSCSI: a Windows host over-subscribed behind two 10 GbE target ports near line rate "
            "(fa_ports: iSCSI ports per node), another queue-limited on one LUN",
            ("san_oversubscription", "host_queue_limited", "latency_slo"),
            iscsi,
        ),
        Scenario(
            "nvme-tcp",
            "NVMe-oF: a Linux host over-subscribed on NVMe/TCP namespaces behind two 10 GbE ports near "
            "line rate, another queue-limited on one namespace; NVMe/FC namespaces beside them",
            ("san_oversubscription", "host_queue_limited", "latency_slo"),
            nvme_tcp,
        ),
        Scenario(
            "asa-r2",
            "an ASA r2 system (ONTAP 9.16.1, keyperf statistics only, two availability zones) on FC: a "
            "Windows host over-subscribed, another queue-limited",
            ("san_oversubscription", "host_queue_limited", "latency_slo"),
            asa_r2,
            version=ASA_R2,
        ),
        Scenario(
            "deep-queue",
            "host disks 16, 64 and 200 reads deep (10, 20, 40 ms) on ALUA LUNs: 2 optimized + 2 "
            "non-optimized paths each",
            ("latency_slo",),
            deep_queue,
        ),
        Scenario(
            "qos-throttle",
            "a fixed QoS ceiling (sql-cap, 2,000 IOPS) holds a volume's Windows and Linux hosts at about "
            "25 ms, 24 ms of it QoS Max, the array idle; a LUN's own, a shared and an adaptive policy beside it",
            ("qos_throttle", "latency_slo"),
            qos_throttle,
        ),
        Scenario(
            "indirect-io",
            "a Linux and a Windows host reach their LUNs only through the partner node's LIFs (paths "
            "Active/Non-optimized): 90 % of the ops remote, 0.45 ms of cluster interconnect, latency healthy",
            ("indirect_io",),
            indirect_io,
        ),
        Scenario(
            "shared-port",
            "iSCSI and NVMe/TCP over one 10 GbE port per node (iSCSI on its VLAN e0e-100): the port at "
            "1.04 of its link while each protocol's LIFs alone read about half",
            ("san_oversubscription",),
            shared_port,
        ),
    )
}


def get(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise KnobError(f"unknown scenario {name!r}; known: {sorted(SCENARIOS)}") from None


def build_world(scenario: Scenario, knobs: Knobs, phase: int) -> World:
    b = scenario.build(knobs, phase)
    b.fill(knobs.nodes, knobs.luns, knobs.volumes, knobs.disks, knobs.hosts)
    w = b.build()
    qos_world.attach(w)
    return w
