"""The diagnoses, in their one fixed order, and the validation of their configuration.

Each diagnosis is one module: its ``SPEC`` (sanlens.diagnose.spec) beside its
``evaluate``. ``MODULES`` is the only list of them; the engine runs it and
``REGISTRY`` (id -> spec) is built from it, so code, metrics, ``/diagnoses``,
runbooks, alert rules and dashboards all key off the same ids. A bad threshold
override becomes an error that names ``diagnose.thresholds.<id>.<name>``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from sanlens.diagnose import (
    aggregate_degraded,
    background_operation_impact,
    cpu_domain_serial_bottleneck,
    disk_busy_imbalance,
    disk_failed,
    fc_port_down,
    host_path_loss,
    host_queue_limited,
    indirect_io,
    latency_slo,
    lun_iops_ceiling,
    lun_not_online,
    qos_throttle,
    san_oversubscription,
    volume_affinity_concentration,
    volume_iops_ceiling,
)
from sanlens.diagnose.base import Context, Observation, Thresholds
from sanlens.diagnose.spec import SEVERITY, DiagnosisSpec, alert_name
from sanlens.errors import ConfigError

if TYPE_CHECKING:  # the config model describes its thresholds from this registry
    from pydantic import BaseModel

    from sanlens.config.plain import DiagnoseSection

__all__ = [
    "IDS",
    "MODULES",
    "REGISTRY",
    "SEVERITY",
    "WINDOW_HELP",
    "WINDOW_KEYS",
    "WINDOW_RANGE",
    "Diagnosis",
    "alert_name",
    "check",
    "plainly_valid",
    "relax",
    "resolve",
    "thresholds_model",
    "validate_config",
    "windows",
]


class Diagnosis(Protocol):
    """A diagnosis module: its spec and a pure function of the joined views and thresholds."""

    SPEC: DiagnosisSpec

    def evaluate(self, ctx: Context, th: Thresholds) -> list[Observation]: ...


# Every diagnosis module, in the order of the rules and metrics.
MODULES: tuple[Diagnosis, ...] = (
    latency_slo,
    san_oversubscription,
    host_queue_limited,
    qos_throttle,
    indirect_io,
    lun_iops_ceiling,
    volume_iops_ceiling,
    cpu_domain_serial_bottleneck,
    volume_affinity_concentration,
    disk_busy_imbalance,
    background_operation_impact,
    host_path_loss,
    lun_not_online,
    fc_port_down,
    disk_failed,
    aggregate_degraded,
)
REGISTRY: dict[str, DiagnosisSpec] = {m.SPEC.id: m.SPEC for m in MODULES}
IDS: tuple[str, ...] = tuple(REGISTRY)
WINDOW_KEYS = ("sustain_seconds", "exit_seconds")
WINDOW_RANGE = (0.0, 86400.0)
"""Seconds a diagnosis' sustain or exit window may be overridden to."""
WINDOW_HELP = {
    "sustain_seconds": "how long the signature must hold before the state rises (seconds; sustain_scale applies)",
    "exit_seconds": "how long it must stay past the relaxed thresholds before the state falls (seconds; sustain_scale applies)",
}


# ------------------------------------------------------------- thresholds
def _threshold_field(t: Any) -> Any:
    from pydantic import Field

    help_ = f"{t.help.rstrip('.')} ({t.unit})" if t.help else t.unit
    return (float, Field(default=t.default, ge=t.min, le=t.max, description=help_))


@functools.cache
def thresholds_model() -> type[BaseModel]:
    """``diagnose.thresholds`` as a model: per diagnosis id, its thresholds and windows with the specs' ranges."""
    from pydantic import BaseModel, ConfigDict, Field, create_model

    class Overrides(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, hide_input_in_errors=True)

    lo, hi = WINDOW_RANGE
    windows = {k: (float, Field(default=None, ge=lo, le=hi, description=h)) for k, h in WINDOW_HELP.items()}
    ids: dict[str, Any] = {}
    for did, spec in REGISTRY.items():
        fields: dict[str, Any] = {**{t.name: _threshold_field(t) for t in spec.thresholds}, **windows}
        ids[did] = (create_model(f"Thresholds_{did}", __base__=Overrides, **fields), None)
    return create_model("Thresholds", __base__=Overrides, **ids)


# (low, high) of every name a diagnosis' overrides may set: its thresholds' ranges and the windows'
_RANGES: dict[str, dict[str, tuple[float, float]]] = {
    did: {**{t.name: (t.min, t.max) for t in spec.thresholds}, **dict.fromkeys(WINDOW_KEYS, WINDOW_RANGE)}
    for did, spec in REGISTRY.items()
}


def plainly_valid(thresholds: Mapping[Any, Any]) -> bool:
    """Whether every override is a known diagnosis' known name set to a finite int or float in range.

    Such overrides are ones the thresholds model accepts, so checking them needs neither pydantic
    nor the model's build (a run of ``analyze`` without a config passes only its own windows).
    Anything else goes to the model, which words the refusal.
    """
    for did, values in thresholds.items():
        ranges = _RANGES.get(did) if isinstance(did, str) else None
        if ranges is None or not isinstance(values, Mapping):
            return False
        for name, value in values.items():
            bounds = ranges.get(name) if isinstance(name, str) else None
            if bounds is None or type(value) not in (int, float) or not math.isfinite(value):
                return False
            if not bounds[0] <= value <= bounds[1]:
                return False
    return True


def _word(loc: tuple[Any, ...], kind: str, value: Any) -> str:
    """One refusal of the thresholds model, in the registry's words."""
    spec = REGISTRY.get(str(loc[0]))
    if kind == "extra_forbidden" and len(loc) == 1:
        return f"unknown diagnosis (known: {', '.join(sorted(REGISTRY))})"
    if kind in ("model_type", "dict_type"):
        return "expected a mapping of threshold names to numbers"
    if spec is None:
        return f"is not valid ({kind})"
    if kind == "extra_forbidden":
        return (
            f"unknown threshold (allowed: {', '.join([t.name for t in spec.thresholds] + list(WINDOW_KEYS))})"
        )
    if kind in ("greater_than_equal", "less_than_equal") and isinstance(value, int | float):
        (lo, hi), unit = WINDOW_RANGE, "seconds"
        if loc[1] not in WINDOW_KEYS:
            t = spec.threshold(str(loc[1]))
            lo, hi, unit = t.min, t.max, t.unit
        return f"{value:g} is out of range [{lo:g}, {hi:g}] {unit}"
    return f"expected a number, got {value!r}"


def _errors(dc: DiagnoseSection) -> list[ConfigError]:
    """The thresholds' problems: the generated model's refusals, then each ordered pair kept in order."""
    base = "diagnose.thresholds"
    out: list[ConfigError] = []
    if not plainly_valid(dc.thresholds or {}):
        from pydantic import ValidationError

        try:
            thresholds_model().model_validate(dc.thresholds or {})
        except ValidationError as e:
            for err in e.errors(include_url=False):
                loc = err["loc"]
                out.append(
                    ConfigError(_word(loc, err["type"], err["input"]), path=".".join([base, *map(str, loc)]))
                )
    for did, values in (dc.thresholds or {}).items():
        spec = REGISTRY.get(did)
        if spec is None or not isinstance(values, Mapping):
            continue
        merged = {**spec.defaults(), **{k: v for k, v in values.items() if isinstance(v, int | float)}}
        for lo_name, hi_name in spec.ordered:
            if merged[lo_name] > merged[hi_name]:
                out.append(
                    ConfigError(
                        f"must not exceed {hi_name} ({merged[hi_name]:g})", path=f"{base}.{did}.{lo_name}"
                    )
                )
    return out


def check(dc: DiagnoseSection) -> list[str]:
    """Every problem of the diagnose section, as ``path: message`` strings (empty when valid)."""
    return [f"{e.path}: {e.message}" for e in _errors(dc)]


def validate_config(dc: DiagnoseSection) -> None:
    """Raise ConfigError for the first bad setting of the diagnose section (the message counts the others)."""
    errs = _errors(dc)
    if errs:
        first = errs[0]
        more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
        raise ConfigError(first.message + more, path=first.path)


def resolve(dc: DiagnoseSection) -> dict[str, dict[str, float]]:
    """Effective thresholds per id: defaults overlaid with the (validated) config."""
    validate_config(dc)
    out: dict[str, dict[str, float]] = {}
    for did, spec in REGISTRY.items():
        values = spec.defaults()
        values.update(
            {k: float(v) for k, v in (dc.thresholds or {}).get(did, {}).items() if k not in WINDOW_KEYS}
        )
        out[did] = values
    return out


def relax(th: Thresholds) -> dict[str, dict[str, float]]:
    """The hysteresis (exit) thresholds: every threshold moved 10 % towards 'ok'."""
    return {
        did: {name: REGISTRY[did].threshold(name).relaxed(v) for name, v in values.items()}
        for did, values in th.items()
    }


def windows(dc: DiagnoseSection) -> dict[str, tuple[float, float]]:
    """(sustain, exit) seconds per id, after overrides and ``sustain_scale``."""
    out = {}
    for did, spec in REGISTRY.items():
        over = (dc.thresholds or {}).get(did, {})
        sustain = float(over.get("sustain_seconds", spec.sustain_s))
        exit_ = float(over.get("exit_seconds", spec.exit_s))
        out[did] = (sustain * dc.sustain_scale, exit_ * dc.sustain_scale)
    return out
