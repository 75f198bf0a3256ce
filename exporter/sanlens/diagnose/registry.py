"""The single source of every diagnosis id: title, thresholds, windows, runbook, alert.

Code, metrics, ``/diagnoses``, runbooks, alert rules and dashboards all key off
these ids, so a diagnosis is added here first. Thresholds carry their unit, the
source they come from and a validation range; ``validate_config`` turns a bad
override into an error that names ``diagnose.thresholds.<id>.<name>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from sanlens.config import Config, DiagnoseConfig
from sanlens.errors import ConfigError

Direction = Literal["above", "below", "none"]

# Hysteresis: a finding leaves only once its values are past 0.9 x the threshold.
HYSTERESIS = 0.9
SEVERITY = {0: "ok", 1: "warning", 2: "critical"}
WINDOW_KEYS = ("sustain_seconds", "exit_seconds")

SRC_LATENCY = (
    "Microsoft SQL Server storage guidance: data files 10 ms good / 20 ms poor, "
    "log files 2 ms good / 5 ms poor (DESIGN.md diagnosis table)"
)
SRC_MS_OVERSUB = (
    "Microsoft SQL Server SAN over-subscription case: seconds of host latency with disks "
    "> 50 % idle, cured by 2 -> 4 -> 6 front-end adapters"
)
SRC_LUN_STUDY = "NetApp LUN/volume count study: per-LUN and per-volume IOPS ceilings before/after ONTAP 9.9.1"
SRC_WAFFINITY = "ONTAP Waffinity/Kahuna domain analysis with sysstat -M (Kahuna is serial: one core at most)"
SRC_REALLOC = "ONTAP aggregate expansion case: new disks stay hot until reallocate runs"
SRC_CLARIION = (
    "EMC CLARiiON FLARE 28 rebuild/migrate priorities: ASAP priority can quadruple OLTP response time"
)


@dataclass(frozen=True, slots=True)
class Threshold:
    """One configurable threshold. ``direction`` says which side trips it (for hysteresis)."""

    name: str
    default: float
    unit: str
    source: str
    min: float
    max: float
    direction: Direction = "above"
    help: str = ""

    def relaxed(self, value: float) -> float:
        """The exit value: 0.9 x an 'above' threshold, threshold / 0.9 for a 'below' one."""
        if self.direction == "above":
            return value * HYSTERESIS
        if self.direction == "below":
            return value / HYSTERESIS
        return value


@dataclass(frozen=True, slots=True)
class DiagnosisSpec:
    id: str
    title: str
    summary: str
    subject: str  # what one finding is about: host disk, lun, volume, node, aggregate
    thresholds: tuple[Threshold, ...]
    sustain_s: float
    exit_s: float
    severity: Mapping[int, str]  # state -> when it is reached
    fix: str

    @property
    def runbook(self) -> str:
        return f"docs/runbooks/{self.id}.md"

    @property
    def alert(self) -> str:
        return alert_name(self.id)

    def threshold(self, name: str) -> Threshold:
        for t in self.thresholds:
            if t.name == name:
                return t
        raise KeyError(f"{self.id} has no threshold {name!r}")

    def defaults(self) -> dict[str, float]:
        return {t.name: t.default for t in self.thresholds}


def alert_name(diagnosis_id: str) -> str:
    """``san_oversubscription`` -> ``SanlensSanOversubscription``."""
    return "Sanlens" + "".join(p.capitalize() for p in diagnosis_id.split("_"))


def _t(
    name: str,
    default: float,
    unit: str,
    source: str,
    lo: float,
    hi: float,
    direction: Direction = "above",
    help_: str = "",
) -> Threshold:
    return Threshold(name, default, unit, source, lo, hi, direction, help_)


def _latency(name: str, default: float, help_: str) -> Threshold:
    return _t(name, default, "seconds", SRC_LATENCY, 0.0001, 60.0, "above", help_)


_SPECS = (
    DiagnosisSpec(
        id="latency_slo",
        title="Latency above its class objective",
        summary="Host disk or ONTAP LUN latency above the thresholds of its data class (data, log, tempdb).",
        subject="host disk or LUN",
        thresholds=(
            _latency("data_warning_seconds", 0.010, "data files: warning"),
            _latency("data_critical_seconds", 0.020, "data files: critical"),
            _latency("log_warning_seconds", 0.002, "transaction log: warning"),
            _latency("log_critical_seconds", 0.005, "transaction log: critical"),
            _latency("tempdb_warning_seconds", 0.010, "tempdb: warning (like data unless configured)"),
            _latency("tempdb_critical_seconds", 0.020, "tempdb: critical (like data unless configured)"),
            _t(
                "min_iops",
                5.0,
                "ops/s",
                "sanlens default: the latency of a near-idle disk says nothing",
                0.0,
                1e6,
                "above",
                "an op's latency counts only when that op runs at least this often",
            ),
        ),
        sustain_s=300.0,
        exit_s=300.0,
        severity={1: "latency >= class warning", 2: "latency >= class critical"},
        fix="The catch-all: look at the other diagnoses of the same subject for the cause.",
    ),
    DiagnosisSpec(
        id="san_oversubscription",
        title="SAN over-subscription (fabric / front-end bottleneck)",
        summary=(
            "Host latency above its class threshold while the host disk is mostly idle and the array "
            "has headroom; with array data, host latency >= 5x the LUN latency."
        ),
        subject="host disk",
        thresholds=(
            _t("min_idle_ratio", 0.5, "ratio", SRC_MS_OVERSUB, 0.0, 1.0, "above", "host disk % idle / 100"),
            _t(
                "max_backend_utilization",
                0.5,
                "ratio",
                "DESIGN.md: spindle-equivalent utilization E = backend IOPS / capacity < 0.5",
                0.0,
                1.0,
                "below",
                "host IOPS / backend_iops_capacity, or mean busy of the LUN's aggregate disks",
            ),
            _t(
                "min_host_to_array_latency_ratio",
                5.0,
                "ratio",
                SRC_MS_OVERSUB,
                1.0,
                1000.0,
                "above",
                "host latency / ONTAP LUN latency (joined data only)",
            ),
        ),
        sustain_s=600.0,
        exit_s=600.0,
        severity={
            1: "latency >= class warning (or critical without any utilization evidence)",
            2: "latency >= class critical, idle, headroom (and >= 5x the LUN latency when joined)",
        },
        fix="Add FC target ports or paths; check fan-in (7:1 to 12:1), zoning and HBA queue depth.",
    ),
    DiagnosisSpec(
        id="host_queue_limited",
        title="Host queue limited (too few LUNs)",
        summary=(
            "The host queue is full (N >= 0.9 Q_eff) and host latency is well above the array's "
            "(R_host >= 2 S_array and R_host - S_array >= 1 ms) while the array is not saturated."
        ),
        subject="host disk",
        thresholds=(
            _t("min_latency_ratio", 2.0, "ratio", SRC_LUN_STUDY, 1.0, 1000.0, "above", "R_host / S_array"),
            _t(
                "min_latency_gap_seconds",
                0.001,
                "seconds",
                "DESIGN.md: R_host - S_array >= 1 ms",
                0.0,
                10.0,
                "above",
                "R_host - S_array",
            ),
            _t(
                "queue_fill_ratio",
                0.9,
                "ratio",
                "DESIGN.md: outstanding IO >= 0.9 Q_eff",
                0.1,
                1.0,
                "above",
                "outstanding IO / (queue depth x paths)",
            ),
            _t(
                "max_node_cpu_ratio",
                0.8,
                "ratio",
                "sanlens default: an array node above 80 % CPU is itself the limit",
                0.1,
                1.0,
                "below",
                "average CPU of the LUN's node",
            ),
            _t(
                "max_serial_domain_ratio",
                0.9,
                "ratio of one core",
                SRC_WAFFINITY,
                0.1,
                1.0,
                "below",
                "busiest serial CPU domain of the LUN's node",
            ),
            _t(
                "critical_latency_ratio",
                5.0,
                "ratio",
                "sanlens default: the host queue adds 4x the array's own service time",
                1.0,
                1000.0,
                "above",
                "R_host / S_array at which the finding is critical",
            ),
            _t(
                "target_queue_fill",
                0.75,
                "ratio",
                "DESIGN.md: N_luns = ceil(X S_array / (0.75 Q_eff))",
                0.1,
                1.0,
                "none",
                "queue fill aimed at when sizing LUNs (recommendation only)",
            ),
        ),
        sustain_s=600.0,
        exit_s=600.0,
        severity={1: "all conditions hold", 2: "and R_host >= critical_latency_ratio x S_array"},
        fix="More LUNs: N = max(ceil(X S_array / (0.75 Q_eff)), ceil(X / X_lun)); <= 2048 commands per port.",
    ),
    DiagnosisSpec(
        id="lun_iops_ceiling",
        title="LUN near its IOPS ceiling",
        summary="Per-LUN IOPS >= 80 % of the ONTAP version's single-LUN ceiling (35K before 9.9.1, 100K from).",
        subject="LUN (or an unmapped host disk)",
        thresholds=(
            _t("ceiling_pre_9_9_1_iops", 35000.0, "ops/s", SRC_LUN_STUDY, 1000.0, 1e7, "none"),
            _t("ceiling_iops", 100000.0, "ops/s", SRC_LUN_STUDY, 1000.0, 1e7, "none"),
            _t("warning_fraction", 0.8, "ratio", SRC_LUN_STUDY, 0.1, 2.0, "above", "IOPS / ceiling"),
            _t("critical_fraction", 1.0, "ratio", SRC_LUN_STUDY, 0.1, 2.0, "above", "IOPS / ceiling"),
        ),
        sustain_s=600.0,
        exit_s=600.0,
        severity={1: "IOPS >= 80 % of the ceiling", 2: "IOPS >= the ceiling"},
        fix="Spread the workload over more LUNs (8 per volume); upgrade to ONTAP 9.9.1 or later if older.",
    ),
    DiagnosisSpec(
        id="volume_iops_ceiling",
        title="Volume near its IOPS ceiling",
        summary="Per-volume IOPS >= 80 % of the version ceiling (115K before 9.9.1, 240K from 9.9.1).",
        subject="volume",
        thresholds=(
            _t("ceiling_pre_9_9_1_iops", 115000.0, "ops/s", SRC_LUN_STUDY, 1000.0, 1e8, "none"),
            _t("ceiling_iops", 240000.0, "ops/s", SRC_LUN_STUDY, 1000.0, 1e8, "none"),
            _t("warning_fraction", 0.8, "ratio", SRC_LUN_STUDY, 0.1, 2.0, "above", "IOPS / ceiling"),
            _t("critical_fraction", 1.0, "ratio", SRC_LUN_STUDY, 0.1, 2.0, "above", "IOPS / ceiling"),
            _t(
                "write_share",
                0.3,
                "ratio",
                SRC_LUN_STUDY,
                0.0,
                1.0,
                "above",
                "write share at which a volume near its ceiling is critical (write-heavy load wants 2 volumes)",
            ),
        ),
        sustain_s=600.0,
        exit_s=600.0,
        severity={
            1: "IOPS >= 80 % of the ceiling",
            2: "IOPS >= the ceiling, or >= 80 % with write share >= 30 %",
        },
        fix="Spread the workload: 8 LUNs per volume, 2 volumes for write-heavy load; upgrade to 9.9.1+.",
    ),
    DiagnosisSpec(
        id="cpu_domain_serial_bottleneck",
        title="Serial CPU domain bottleneck (Waffinity / Kahuna)",
        summary=(
            "Kahuna busy >= 50 % of one core (warning); serial occupancy U_K + U_W/(N_cpu-1) >= 90 % or any "
            "single-threaded domain >= 90 % (critical). Average CPU may be low."
        ),
        subject="node",
        thresholds=(
            _t("kahuna_warning_ratio", 0.5, "ratio of one core", SRC_WAFFINITY, 0.05, 1.0, "above"),
            _t("serial_critical_ratio", 0.9, "ratio of one core", SRC_WAFFINITY, 0.05, 1.0, "above"),
        ),
        sustain_s=900.0,
        exit_s=600.0,
        severity={1: "Kahuna >= 50 % of a core", 2: "serial occupancy or a serial domain >= 90 %"},
        fix="Spread load across >= 4 volumes per aggregate (8 on large controllers) or use a FlexGroup.",
    ),
    DiagnosisSpec(
        id="volume_affinity_concentration",
        title="One volume carries its aggregate (affinity concentration)",
        summary="One volume carries >= 80 % of its aggregate's ops while the node shows serial or WAFL_Ex pressure.",
        subject="aggregate",
        thresholds=(
            _t(
                "volume_share",
                0.8,
                "ratio",
                SRC_WAFFINITY,
                0.1,
                1.0,
                "above",
                "busiest volume / aggregate ops",
            ),
            _t("kahuna_pressure_ratio", 0.5, "ratio of one core", SRC_WAFFINITY, 0.05, 1.0, "above"),
            _t(
                "wafl_exempt_pressure_ratio",
                0.5,
                "ratio of one core",
                SRC_WAFFINITY,
                0.05,
                1.0,
                "above",
                "wafl_exempt / (N_cpu - 1)",
            ),
            _t(
                "min_aggregate_iops",
                100.0,
                "ops/s",
                "sanlens default: ignore near-idle aggregates",
                0.0,
                1e8,
                "above",
            ),
        ),
        sustain_s=900.0,
        exit_s=600.0,
        severity={1: "concentration with node pressure"},
        fix="More volumes per aggregate (>= 4), or a FlexGroup.",
    ),
    DiagnosisSpec(
        id="disk_busy_imbalance",
        title="Disk busy imbalance in an aggregate (reallocate)",
        summary=(
            "Within an aggregate's data disks: CV of busy > 0.3, or max/median > 1.5, or newest RAID group / "
            "older > 1.5, with the busiest disk > 50 % busy."
        ),
        subject="aggregate",
        thresholds=(
            _t("cv", 0.3, "ratio", SRC_REALLOC, 0.01, 10.0, "above", "stdev / mean of disk busy"),
            _t("max_to_median", 1.5, "ratio", SRC_REALLOC, 1.0, 100.0, "above"),
            _t("newest_raid_group_ratio", 1.5, "ratio", SRC_REALLOC, 1.0, 100.0, "above"),
            _t(
                "min_max_busy_ratio", 0.5, "ratio", SRC_REALLOC, 0.0, 1.0, "above", "busiest disk must exceed"
            ),
            _t(
                "critical_max_busy_ratio",
                0.9,
                "ratio",
                "sanlens default: the hot disks are saturated",
                0.0,
                1.0,
                "above",
            ),
            _t(
                "min_disks",
                3.0,
                "disks",
                "sanlens default: statistics need a few disks",
                2.0,
                10000.0,
                "none",
            ),
        ),
        sustain_s=1800.0,
        exit_s=900.0,
        severity={1: "imbalance with a disk > 50 % busy", 2: "and the busiest disk >= 90 %"},
        fix="volume reallocation start / aggregate reallocation (HDD only).",
    ),
    DiagnosisSpec(
        id="background_operation_impact",
        title="Background operation hurts latency",
        summary=(
            "A RAID reconstruct, resync, parity recompute or volume move is active and latency of the affected "
            "volumes is >= 1.4x its baseline from before the operation."
        ),
        subject="aggregate",
        thresholds=(
            _t(
                "latency_ratio_warning",
                1.4,
                "ratio",
                SRC_CLARIION,
                1.0,
                100.0,
                "above",
                "latency / pre-op baseline",
            ),
            _t(
                "latency_ratio_critical",
                3.0,
                "ratio",
                SRC_CLARIION,
                1.0,
                100.0,
                "above",
                "latency / pre-op baseline",
            ),
            _t(
                "min_latency_seconds",
                0.002,
                "seconds",
                "sanlens default: sub-2 ms latency hurts nobody",
                0.0,
                10.0,
                "above",
            ),
        ),
        sustain_s=300.0,
        exit_s=300.0,
        severity={1: "latency >= 1.4x baseline", 2: "latency >= 3x baseline"},
        fix="Lower the operation's priority, or schedule it off-peak.",
    ),
)

REGISTRY: dict[str, DiagnosisSpec] = {s.id: s for s in _SPECS}
IDS: tuple[str, ...] = tuple(REGISTRY)


# ------------------------------------------------------------- thresholds
Thresholds = Mapping[str, Mapping[str, float]]


def _errors(dc: DiagnoseConfig) -> list[ConfigError]:
    out: list[ConfigError] = []
    base = "diagnose"
    if not (isinstance(dc.sustain_scale, int | float) and 0 <= dc.sustain_scale <= 100):
        out.append(ConfigError("must be between 0 and 100", path=f"{base}.sustain_scale"))
    if not (isinstance(dc.history, int) and 10 <= dc.history <= 100000):
        out.append(ConfigError("must be an integer between 10 and 100000", path=f"{base}.history"))
    cap = dc.backend_iops_capacity
    if cap is not None and not (isinstance(cap, int | float) and math.isfinite(cap) and cap > 0):
        out.append(ConfigError("must be a positive number of IOPS", path=f"{base}.backend_iops_capacity"))
    for did, values in (dc.thresholds or {}).items():
        path = f"{base}.thresholds.{did}"
        spec = REGISTRY.get(did)
        if spec is None:
            out.append(ConfigError(f"unknown diagnosis (known: {', '.join(sorted(REGISTRY))})", path=path))
            continue
        if not isinstance(values, Mapping):
            out.append(ConfigError("expected a mapping of threshold names to numbers", path=path))
            continue
        names = [t.name for t in spec.thresholds] + list(WINDOW_KEYS)
        for name, value in values.items():
            p = f"{path}.{name}"
            if name not in names:
                out.append(ConfigError(f"unknown threshold (allowed: {', '.join(names)})", path=p))
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                out.append(ConfigError(f"expected a number, got {value!r}", path=p))
                continue
            if name in WINDOW_KEYS:
                lo, hi, unit = 0.0, 86400.0, "seconds"
            else:
                t = spec.threshold(name)
                lo, hi, unit = t.min, t.max, t.unit
            if not lo <= value <= hi:
                out.append(ConfigError(f"{value:g} is out of range [{lo:g}, {hi:g}] {unit}", path=p))
        merged = {**spec.defaults(), **{k: v for k, v in values.items() if isinstance(v, int | float)}}
        for lo_name, hi_name in _ORDERED.get(did, ()):
            if merged[lo_name] > merged[hi_name]:
                out.append(
                    ConfigError(f"must not exceed {hi_name} ({merged[hi_name]:g})", path=f"{path}.{lo_name}")
                )
    return out


_ORDERED: dict[str, tuple[tuple[str, str], ...]] = {
    "latency_slo": tuple(
        (f"{c}_warning_seconds", f"{c}_critical_seconds") for c in ("data", "log", "tempdb")
    ),
    "lun_iops_ceiling": (
        ("warning_fraction", "critical_fraction"),
        ("ceiling_pre_9_9_1_iops", "ceiling_iops"),
    ),
    "volume_iops_ceiling": (
        ("warning_fraction", "critical_fraction"),
        ("ceiling_pre_9_9_1_iops", "ceiling_iops"),
    ),
    "cpu_domain_serial_bottleneck": (("kahuna_warning_ratio", "serial_critical_ratio"),),
    "disk_busy_imbalance": (("min_max_busy_ratio", "critical_max_busy_ratio"),),
    "background_operation_impact": (("latency_ratio_warning", "latency_ratio_critical"),),
    "host_queue_limited": (("min_latency_ratio", "critical_latency_ratio"),),
}


def check(cfg: Config | DiagnoseConfig) -> list[str]:
    """Every problem of the diagnose section, as ``path: message`` strings (empty when valid)."""
    dc = cfg.diagnose if isinstance(cfg, Config) else cfg
    return [f"{e.path}: {e.message}" for e in _errors(dc)]


def validate_config(cfg: Config | DiagnoseConfig) -> None:
    """Raise ConfigError for the first bad setting (the message counts the others)."""
    dc = cfg.diagnose if isinstance(cfg, Config) else cfg
    errs = _errors(dc)
    if errs:
        first = errs[0]
        more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
        raise ConfigError(first.message + more, path=first.path)


def resolve(dc: DiagnoseConfig) -> dict[str, dict[str, float]]:
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


def windows(dc: DiagnoseConfig) -> dict[str, tuple[float, float]]:
    """(sustain, exit) seconds per id, after overrides and ``sustain_scale``."""
    out = {}
    for did, spec in REGISTRY.items():
        over = (dc.thresholds or {}).get(did, {})
        sustain = float(over.get("sustain_seconds", spec.sustain_s))
        exit_ = float(over.get("exit_seconds", spec.exit_s))
        out[did] = (sustain * dc.sustain_scale, exit_ * dc.sustain_scale)
    return out
