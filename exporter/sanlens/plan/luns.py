"""`sanlens plan luns`: how many LUNs and volumes a workload needs.

From Little's law (outstanding I/O N = X·S), the host queue (Q_eff = Q·P, kept
25 % below full), the empirical per-LUN and per-volume IOPS ceilings of ONTAP
(before / from 9.9.1) and the 2048 outstanding commands a target port accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sanlens.model import OntapVersion
from sanlens.plan.inputs import check_positive

# Empirical ceilings (IOPS) of one LUN and one volume, before / from ONTAP 9.9.1,
# from NetApp's study of LUN and volume counts. Planning keeps 20 % headroom.
LUN_CEILING = (35_000.0, 100_000.0)
VOLUME_CEILING = (115_000.0, 240_000.0)
CEILING_USABLE = 0.8
QUEUE_TARGET = 0.75  # plan for a host queue at most 75 % full
LUNS_PER_VOLUME = 8
WRITE_HEAVY_SHARE = 0.30  # >= 30 % writes on one volume: split over 2 volumes
PORT_MAX_OUTSTANDING = 2048  # outstanding commands per FC target port


@dataclass
class Step:
    name: str
    formula: str
    value: float
    unit: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "formula": self.formula, "value": self.value, "unit": self.unit}


@dataclass
class LunPlan:
    inputs: dict[str, Any]
    steps: list[Step]
    luns: int
    volumes: int
    luns_per_volume: int
    port_check: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "plan": "luns",
            "inputs": self.inputs,
            "steps": [s.as_json() for s in self.steps],
            "result": {"luns": self.luns, "volumes": self.volumes, "luns_per_volume": self.luns_per_volume},
            "port_check": self.port_check,
            "notes": self.notes,
        }


def plan_luns(
    iops: float,
    write_ratio: float,
    version: OntapVersion,
    latency_ms: float = 1.0,
    queue_depth: int = 32,
    paths: int = 1,
    hosts: int = 1,
) -> LunPlan:
    """LUNs = max(⌈X·S/(0.75·Q_eff)⌉, ⌈X/X_lun⌉); volumes from the ceiling, write share and 8 LUNs/volume."""
    check_positive("iops", iops)
    check_positive("latency-ms", latency_ms)
    check_positive("queue-depth", queue_depth, integer=True)
    check_positive("paths", paths, integer=True)
    check_positive("hosts", hosts, integer=True)
    new = version.at_least(9, 9, 1)
    lun_ceiling = LUN_CEILING[new]
    vol_ceiling = VOLUME_CEILING[new]
    s = latency_ms / 1000.0
    steps: list[Step] = []

    n_out = iops * s
    steps.append(Step("outstanding_io", "N = X·S (Little's law)", n_out, "requests"))
    q_eff = queue_depth * paths
    steps.append(Step("q_eff", "Q_eff = Q·P", q_eff, "requests per LUN"))
    by_queue = max(1, math.ceil(n_out / (QUEUE_TARGET * q_eff)))
    steps.append(Step("luns_by_queue", "⌈N/(0.75·Q_eff)⌉", by_queue, "LUNs"))
    x_lun = CEILING_USABLE * lun_ceiling
    steps.append(
        Step("x_lun", f"X_lun = 0.8·{lun_ceiling:,.0f} (LUN ceiling, ONTAP {version})", x_lun, "IOPS")
    )
    by_ceiling = max(1, math.ceil(iops / x_lun))
    steps.append(Step("luns_by_ceiling", "⌈X/X_lun⌉", by_ceiling, "LUNs"))
    luns = max(by_queue, by_ceiling)
    steps.append(Step("luns", "max(luns_by_queue, luns_by_ceiling)", luns, "LUNs"))

    x_vol = CEILING_USABLE * vol_ceiling
    steps.append(
        Step("x_volume", f"X_vol = 0.8·{vol_ceiling:,.0f} (volume ceiling, ONTAP {version})", x_vol, "IOPS")
    )
    vols_ceiling = max(1, math.ceil(iops / x_vol))
    steps.append(Step("volumes_by_ceiling", "⌈X/X_vol⌉", vols_ceiling, "volumes"))
    vols_luns = max(1, math.ceil(luns / LUNS_PER_VOLUME))
    steps.append(Step("volumes_by_lun_count", f"⌈LUNs/{LUNS_PER_VOLUME}⌉", vols_luns, "volumes"))
    vols_write = 2 if write_ratio >= WRITE_HEAVY_SHARE else 1
    steps.append(Step("volumes_by_write_share", "2 if W ≥ 30 % else 1", vols_write, "volumes"))
    volumes = max(vols_ceiling, vols_luns, vols_write)
    steps.append(Step("volumes", "max(by ceiling, by LUN count, by write share)", volumes, "volumes"))
    luns = max(luns, volumes)  # every volume holds at least one LUN
    per_volume = math.ceil(luns / volumes)

    # Target ports: the worst case is every host filling every LUN's queue on each path.
    worst = hosts * luns * queue_depth
    expected = n_out / paths
    ports_needed = math.ceil(worst / PORT_MAX_OUTSTANDING)
    max_q = PORT_MAX_OUTSTANDING // (hosts * luns)
    port_ok = worst <= PORT_MAX_OUTSTANDING
    port_check = {
        "limit": PORT_MAX_OUTSTANDING,
        "worst_case_per_port": worst,
        "worst_case_formula": "H·LUNs·Q (every host fills every LUN queue on the port)",
        "expected_per_port": expected,
        "expected_formula": "N/P (Little's law spread over the paths)",
        "ok": port_ok,
        "max_queue_depth_for_limit": max_q,
        "port_sets_needed": ports_needed,
    }
    notes: list[str] = []
    if not new:
        # the whole plan again at 9.9.1, so the note gives the answer a later release gives
        later = plan_luns(iops, write_ratio, OntapVersion(9, 9, 1), latency_ms, queue_depth, paths, hosts)
        if (later.luns, later.volumes) != (luns, volumes):
            notes.append(
                f"ONTAP {version} is before 9.9.1: from 9.9.1 the per-LUN ceiling rises to "
                f"{LUN_CEILING[1]:,.0f} IOPS and the volume ceiling to {VOLUME_CEILING[1]:,.0f}, and this "
                f"plan answers {later.luns} LUN(s) on {later.volumes} volume(s)."
            )
    if vols_write > 1 and vols_write >= max(vols_ceiling, vols_luns):
        notes.append("Writes are ≥ 30 % of the load: spread the LUNs over 2 volumes.")
    if not port_ok:
        notes.append(
            f"{hosts} host(s)·{luns} LUN(s)·queue depth {queue_depth} = {worst} > {PORT_MAX_OUTSTANDING} "
            f"outstanding commands per target port: lower the queue depth to ≤ {max_q} or spread the hosts "
            f"over {ports_needed} times the target ports."
        )
    if expected > PORT_MAX_OUTSTANDING:
        notes.append("Even the expected outstanding I/O exceeds one port's limit: add target ports.")
    inputs = {
        "iops": iops,
        "write_ratio": write_ratio,
        "ontap_version": str(version),
        "latency_ms": latency_ms,
        "queue_depth": queue_depth,
        "paths": paths,
        "hosts": hosts,
    }
    return LunPlan(inputs, steps, luns, volumes, per_volume, port_check, notes)


def render_luns(plan: LunPlan) -> str:
    i = plan.inputs
    lines = [
        f"Workload: {i['iops']:,.0f} IOPS, {i['write_ratio']:.0%} writes, ONTAP {i['ontap_version']}, "
        f"service time {i['latency_ms']:g} ms, queue depth {i['queue_depth']} x {i['paths']} path(s), "
        f"{i['hosts']} host(s)",
        "",
        "Reasoning:",
    ]
    for s in plan.steps:
        v = f"{s.value:,.2f}".rstrip("0").rstrip(".")
        lines.append(f"  {s.name:<24} {s.formula:<58} = {v} {s.unit}".rstrip())
    pc = plan.port_check
    lines += [
        "",
        f"Target port check (limit {pc['limit']} outstanding commands per port):",
        f"  worst case  {pc['worst_case_formula']:<58} = {pc['worst_case_per_port']:,}",
        f"  expected    {pc['expected_formula']:<58} = {pc['expected_per_port']:,.1f}",
        f"  {'OK' if pc['ok'] else 'OVER THE LIMIT'}",
        "",
        f"Answer: {plan.luns} LUN(s) on {plan.volumes} volume(s), up to {plan.luns_per_volume} LUN(s) per volume.",
    ]
    lines += [f"  - {n}" for n in plan.notes]
    return "\n".join(lines) + "\n"
