"""`sanlens plan rebuild|migrate|bind`: a size and a priority turned into a duration.

Rates come from a documented profile (``profiles.yaml``); ``--profile FILE``
overrides it key by key. The built-in profile is an EMC CLARiiON's (FLARE 28: RAID 5,
6 and 10, priorities low to ASAP), not ONTAP's: every answer says so, with what ONTAP
has instead, and ONTAP's RAID types take a rate only from a profile that gives one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sanlens.plan.inputs import PlanError, check_positive

PRIORITIES = ("low", "medium", "high", "asap")
RAID_TYPES = ("r5", "r6", "r10")
ONTAP_RAID_TYPES = ("raid-dp", "raid-tec")  # rates only from a --profile that gives them
BUILT_IN = "clariion-flare28"
OTHER_ARRAY = (
    "These rates are an EMC CLARiiON's (FLARE 28: RAID 5, 6 and 10; priorities low, medium, high "
    "and ASAP), from its white paper, not ONTAP's. For an ONTAP system, time one operation there and "
    "give its rates with --profile."
)
ONTAP_INSTEAD = {
    "rebuild": "ONTAP reconstructs a RAID-DP (double parity) or RAID-TEC (triple parity) group; the share "
    "of the node's resources it takes is set per node with `storage raid-options modify -node <node> -name "
    "raid.reconstruct.perf_impact -value low|medium|high` (default medium; there is no ASAP).",
    "migrate": "On ONTAP a LUN moves with `lun move start`, or with its volume by `volume move start`, "
    "at ONTAP's own pace: these priorities are not its options.",
    "bind": "An ONTAP LUN is not zeroed when it is created (`lun create` returns at once): there is no "
    "bind time to plan.",
}
DISK_TYPES = ("fc15k", "fc10k", "sata", "sas", "ssd")
MB_PER_GB = 1024.0


def load_profile(path: str | Path | None = None) -> dict[str, Any]:
    """The packaged profile, merged key by key with an override file."""
    text = resources.files("sanlens.plan").joinpath("profiles.yaml").read_text("utf-8")
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
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "plan": self.operation,
            "inputs": self.inputs,
            "profile": self.profile,
            "notes": self.notes,
            "phases": self.phases,
            "seconds": self.seconds,
            "hours": self.seconds / 3600.0,
            "range_seconds": list(self.range_seconds) if self.range_seconds else None,
        }


def _factor(sec: dict[str, Any], key: str, name: str | None, option: str) -> float:
    table = sec.get(key) or {}
    if name in ONTAP_RAID_TYPES and name not in table:
        raise PlanError(
            f"--raid {name}: the profile has no rate for ONTAP's {name.upper()}; its rates are an EMC "
            f"CLARiiON's (RAID 5, 6 and 10). Time a reconstruction on the ONTAP system and give it with "
            f"--profile (rebuild.rate_mb_s and rebuild.raid_factor.{name})"
        )
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
    check_positive("size-gb", size_gb)
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
    name = str(p.get("profile", ""))
    notes = [OTHER_ARRAY, ONTAP_INSTEAD[operation]] if name == BUILT_IN else []
    return DurationPlan(operation, inputs, phases, total, rng, name, notes)


def _hms(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s"


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
    lines += [f"Note: {n}" for n in plan.notes]
    return "\n".join(lines) + "\n"
