"""`sanlens plan`: size LUNs and volumes, or estimate rebuild/migrate/bind time.

``plan luns`` answers "how many LUNs and volumes does this workload need?" from
Little's law (outstanding I/O N = X·S), the host queue (Q_eff = Q·P, kept 25 %
below full), the empirical per-LUN and per-volume IOPS ceilings of ONTAP
(before / from 9.9.1) and the 2048 outstanding commands a target port accepts.
Every step is printed with its formula so the answer can be checked by hand.

``plan rebuild|migrate|bind`` turns a size and a priority into a duration with
a documented rate profile (``plan_profiles.yaml``; ``--profile FILE`` overrides
it key by key).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sanlens.errors import SanlensError
from sanlens.model import OntapVersion

# Empirical ceilings (IOPS) of one LUN and one volume, before / from ONTAP 9.9.1,
# from NetApp's study of LUN and volume counts. Planning keeps 20 % headroom.
LUN_CEILING = (35_000.0, 100_000.0)
VOLUME_CEILING = (115_000.0, 240_000.0)
CEILING_USABLE = 0.8
QUEUE_TARGET = 0.75  # plan for a host queue at most 75 % full
LUNS_PER_VOLUME = 8
WRITE_HEAVY_SHARE = 0.30  # >= 30 % writes on one volume: split over 2 volumes
PORT_MAX_OUTSTANDING = 2048  # outstanding commands per FC target port

PRIORITIES = ("low", "medium", "high", "asap")
RAID_TYPES = ("r5", "r6", "r10")
DISK_TYPES = ("fc15k", "fc10k", "sata", "sas", "ssd")
MB_PER_GB = 1024.0


class PlanError(SanlensError):
    """Bad input to `sanlens plan` (exit 2)."""


# ------------------------------------------------------------------ helpers
def parse_version(text: str) -> OntapVersion:
    m = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.(\d+))?\S*\s*", text or "")
    if not m:
        raise PlanError(f"--ontap-version: expected e.g. 9.8 or 9.12.1, got {text!r}")
    return OntapVersion(int(m[1]), int(m[2]), int(m[3] or 0), text.strip())


def parse_ratio(text: str) -> float:
    """0..1, or a percent such as ``30%``."""
    s = str(text).strip()
    try:
        v = float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
    except ValueError:
        raise PlanError(f"--write-ratio: expected 0..1 or a percent like 30%, got {text!r}") from None
    if not 0.0 <= v <= 1.0 or math.isnan(v):
        raise PlanError(f"--write-ratio: must be within 0..1 (or 0%..100%), got {text!r}")
    return v


def _positive(name: str, v: float, *, integer: bool = False) -> None:
    if math.isnan(v) or v <= 0 or (integer and v != int(v)):
        kind = "a positive integer" if integer else "positive"
        raise PlanError(f"--{name}: must be {kind}, got {v:g}")


# ----------------------------------------------------------------- plan luns
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
    _positive("iops", iops)
    _positive("latency-ms", latency_ms)
    _positive("queue-depth", queue_depth, integer=True)
    _positive("paths", paths, integer=True)
    _positive("hosts", hosts, integer=True)
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
        bigger = plan_luns_ceiling_only(iops, lun_ceiling=LUN_CEILING[1])
        if bigger < by_ceiling:
            notes.append(
                f"ONTAP {version} is before 9.9.1: from 9.9.1 the per-LUN ceiling rises to 100K IOPS "
                f"and {bigger} LUN(s) would carry this load."
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


def plan_luns_ceiling_only(iops: float, lun_ceiling: float) -> int:
    return max(1, math.ceil(iops / (CEILING_USABLE * lun_ceiling)))


# ------------------------------------------------------- rebuild/migrate/bind
def load_profile(path: str | Path | None = None) -> dict[str, Any]:
    """The packaged profile, merged key by key with an override file."""
    text = resources.files("sanlens.diagnose").joinpath("plan_profiles.yaml").read_text("utf-8")
    profile: dict[str, Any] = yaml.safe_load(text)
    if path is not None:
        try:
            override = yaml.safe_load(Path(path).read_text("utf-8"))
        except OSError as e:
            raise PlanError(f"--profile {path}: cannot read: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise PlanError(f"--profile {path}: not valid YAML: {e}") from None
        if override is not None and not isinstance(override, dict):
            raise PlanError(f"--profile {path}: expected a mapping at the top level")
        profile = _merge(profile, override or {})
    _validate_profile(profile, str(path or "built-in profile"))
    return profile


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _validate_profile(p: dict[str, Any], where: str) -> None:
    for op in ("migrate", "rebuild", "bind"):
        sec = p.get(op)
        if not isinstance(sec, dict):
            raise PlanError(f"{where}: {op}: missing section")
        rates = sec.get("rate_mb_s")
        if not isinstance(rates, dict):
            raise PlanError(f"{where}: {op}.rate_mb_s: expected a mapping of priority to MB/s")
        for prio in PRIORITIES:
            _check_number(f"{where}: {op}.rate_mb_s.{prio}", rates.get(prio))
        for key in ("disk_factor", "raid_factor"):
            for name, v in (sec.get(key) or {}).items():
                _check_number(f"{where}: {op}.{key}.{name}", v)
        rng = sec.get("asap_range_mb_s")
        if rng is not None:
            if not (isinstance(rng, list) and len(rng) == 2):
                raise PlanError(f"{where}: {op}.asap_range_mb_s: expected [low, high]")
            for v in rng:
                _check_number(f"{where}: {op}.asap_range_mb_s", v)
    _check_number(f"{where}: migrate.expansion_mb_s", p["migrate"].get("expansion_mb_s"))


def _check_number(where: str, v: object) -> None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0 or math.isinf(v):
        raise PlanError(f"{where}: expected a positive number, got {v!r}")


@dataclass
class DurationPlan:
    operation: str
    inputs: dict[str, Any]
    phases: list[dict[str, Any]]
    seconds: float
    range_seconds: tuple[float, float] | None
    profile: str

    def as_json(self) -> dict[str, Any]:
        return {
            "plan": self.operation,
            "inputs": self.inputs,
            "profile": self.profile,
            "phases": self.phases,
            "seconds": self.seconds,
            "hours": self.seconds / 3600.0,
            "range_seconds": list(self.range_seconds) if self.range_seconds else None,
        }


def _factor(sec: dict[str, Any], key: str, name: str | None, option: str) -> float:
    table = sec.get(key) or {}
    if name is None or not table:
        return 1.0
    if name not in table:
        raise PlanError(f"--{option} {name}: not in the profile's {key} ({', '.join(sorted(table))})")
    return float(table[name])


def plan_duration(
    operation: str,
    size_gb: float,
    priority: str,
    raid: str | None = None,
    disk_type: str | None = None,
    target_size_gb: float | None = None,
    profile: dict[str, Any] | None = None,
) -> DurationPlan:
    """time = size_MB / rate[priority]·disk factor·RAID factor (+ expansion for a bigger target)."""
    if operation not in ("rebuild", "migrate", "bind"):
        raise PlanError(f"unknown operation {operation!r}")
    _positive("size-gb", size_gb)
    if priority not in PRIORITIES:
        raise PlanError(f"--priority: one of {', '.join(PRIORITIES)}, got {priority!r}")
    p = profile if profile is not None else load_profile()
    sec = p[operation]
    rate = float(sec["rate_mb_s"][priority])
    factor = _factor(sec, "disk_factor", disk_type, "disk-type") * _factor(sec, "raid_factor", raid, "raid")
    mb = size_gb * MB_PER_GB
    main = mb / rate * factor
    phases = [
        {
            "phase": operation,
            "size_mb": mb,
            "rate_mb_s": rate,
            "time_factor": factor,
            "seconds": main,
            "formula": "size_MB / rate·factor",
        }
    ]
    total = main
    rng: tuple[float, float] | None = None
    if priority == "asap" and sec.get("asap_range_mb_s"):
        lo, hi = (float(v) for v in sec["asap_range_mb_s"])
        rng = (mb / hi * factor, mb / lo * factor)
    if target_size_gb is not None:
        if operation != "migrate":
            raise PlanError("--target-size-gb applies to migrate only")
        if not target_size_gb > size_gb:
            raise PlanError(f"--target-size-gb ({target_size_gb:g}) must exceed --size-gb ({size_gb:g})")
        extra = (target_size_gb - size_gb) * MB_PER_GB
        erate = float(sec["expansion_mb_s"])
        t = extra / erate
        phases.append(
            {
                "phase": "expansion",
                "size_mb": extra,
                "rate_mb_s": erate,
                "time_factor": 1.0,
                "seconds": t,
                "formula": "added_MB / expansion rate",
            }
        )
        total += t
        if rng:
            rng = (rng[0] + t, rng[1] + t)
    inputs = {
        "size_gb": size_gb,
        "priority": priority,
        "raid": raid,
        "disk_type": disk_type,
        "target_size_gb": target_size_gb,
    }
    return DurationPlan(operation, inputs, phases, total, rng, str(p.get("profile", "")))


# -------------------------------------------------------------------- output
def _hms(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s"


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


def render_duration(plan: DurationPlan) -> str:
    i = plan.inputs
    what = f"{plan.operation} of {i['size_gb']:g} GB at priority {i['priority']}"
    if i["raid"]:
        what += f", {i['raid']}"
    if i["disk_type"]:
        what += f", {i['disk_type']}"
    lines = [f"{what} (profile {plan.profile}):"]
    for ph in plan.phases:
        lines.append(
            f"  {ph['phase']:<10} {ph['size_mb']:,.0f} MB / {ph['rate_mb_s']:g} MB/s x {ph['time_factor']:g}"
            f" = {ph['seconds']:,.0f} s"
        )
    lines.append(f"Duration: {plan.seconds / 3600:.2f} h ({_hms(plan.seconds)})")
    if plan.range_seconds:
        lo, hi = plan.range_seconds
        lines.append(f"  range over the ASAP rate band: {lo / 3600:.2f} h .. {hi / 3600:.2f} h")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------- CLI
def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="plan_kind", metavar="KIND")
    sub.required = True
    lp = sub.add_parser("luns", help="LUNs and volumes for a workload (Little's law, ONTAP ceilings)")
    lp.add_argument("--iops", type=float, required=True, help="total IOPS of the workload (X)")
    lp.add_argument("--write-ratio", required=True, help="write share, 0..1 or a percent like 30%%")
    lp.add_argument("--ontap-version", required=True, help="e.g. 9.8 or 9.12.1 (ceilings change at 9.9.1)")
    lp.add_argument("--latency-ms", type=float, default=1.0, help="array service time S (default 1 ms)")
    lp.add_argument("--queue-depth", type=int, default=32, help="per-LUN HBA queue depth Q (default 32)")
    lp.add_argument("--paths", type=int, default=1, help="active paths per LUN P (default 1)")
    lp.add_argument("--hosts", type=int, default=1, help="hosts that map the LUNs H (default 1)")
    lp.add_argument("--format", choices=["text", "json"], default="text")
    for op, help_ in (
        ("rebuild", "time to rebuild one disk"),
        ("migrate", "time to migrate (and optionally expand) a LUN"),
        ("bind", "time to bind (zero) a new LUN"),
    ):
        op_p = sub.add_parser(op, help=help_)
        op_p.add_argument("--size-gb", type=float, required=True, help="size in GB (1 GB = 1024 MB)")
        op_p.add_argument("--priority", required=True, type=str.lower, choices=PRIORITIES)
        op_p.add_argument("--raid", type=str.lower, choices=RAID_TYPES, default=None)
        op_p.add_argument("--disk-type", type=str.lower, choices=DISK_TYPES, default=None)
        if op == "migrate":
            op_p.add_argument("--target-size-gb", type=float, default=None, help="expand into a bigger LUN")
        op_p.add_argument("--profile", default=None, help="YAML rate profile merged over the built-in one")
        op_p.add_argument("--format", choices=["text", "json"], default="text")


def run(args: argparse.Namespace) -> int:
    try:
        if args.plan_kind == "luns":
            plan: LunPlan | DurationPlan = plan_luns(
                args.iops,
                parse_ratio(args.write_ratio),
                parse_version(args.ontap_version),
                latency_ms=args.latency_ms,
                queue_depth=args.queue_depth,
                paths=args.paths,
                hosts=args.hosts,
            )
        else:
            plan = plan_duration(
                args.plan_kind,
                args.size_gb,
                args.priority,
                raid=args.raid,
                disk_type=args.disk_type,
                target_size_gb=getattr(args, "target_size_gb", None),
                profile=load_profile(args.profile),
            )
    except PlanError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.format == "json":
        json.dump(plan.as_json(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_luns(plan) if isinstance(plan, LunPlan) else render_duration(plan))
    return 0
