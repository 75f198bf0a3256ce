"""latency_slo: host disk or ONTAP LUN latency above the thresholds of its data class.

The catch-all. Host-only data: every host disk is judged on its own latency.
ONTAP-only data: every LUN is judged on the array's latency, as class ``data``.
Joined: a LUN takes the data class of the host disk it backs; both subjects are
kept, so the gap between them (host vs array) shows in the evidence. The worse
of read and write latency counts, each only when that op runs at least
``min_iops`` per second.
"""

from __future__ import annotations

from typing import get_args

from sanlens.diagnose.base import Context, Observation, Thresholds, lun_subject, ms, of_disk
from sanlens.diagnose.numeric import clamp01, worst_latency
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads, Threshold
from sanlens.diagnose.waterfall import Waterfall, describe, of_host_disk, of_lun
from sanlens.model import DataClass

SRC_LATENCY = (
    "Microsoft SQL Server storage guidance: data files 10 ms good / 20 ms poor, "
    "log files 2 ms good / 5 ms poor"
)
CLASSES: tuple[str, ...] = get_args(DataClass)  # each has its own thresholds


# The latency a host disk is judged on; san_oversubscription quotes the same value.
HOST_LATENCY = Evidence(
    "host_latency_seconds",
    "seconds",
    "the host disk's worse of read and write latency",
    "host latency",
    "duration",
)


def _latency(name: str, default: float, help_: str) -> Threshold:
    return Threshold(name, default, "seconds", SRC_LATENCY, 0.0001, 60.0, "above", help_)


SPEC = DiagnosisSpec(
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
        Threshold(
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
    fix="Fix the cause named above (the incident); with none known, check the other diagnoses on its I/O path.",
    evidence=(
        HOST_LATENCY,
        Evidence(
            "lun_latency_seconds",
            "seconds",
            "the LUN's worse of read and write latency",
            "ONTAP LUN latency",
            "duration",
        ),
        Evidence(
            "warning_threshold_seconds",
            "seconds",
            "warning threshold of the subject's data class",
            "warning threshold",
            "duration",
        ),
        Evidence(
            "critical_threshold_seconds",
            "seconds",
            "critical threshold of the subject's data class",
            "critical threshold",
            "duration",
        ),
        Evidence("host_read_iops", "ops/s", "reads of the host disk"),
        Evidence("host_write_iops", "ops/s", "writes of the host disk"),
        Evidence("lun_read_iops", "ops/s", "reads of the LUN"),
        Evidence("lun_write_iops", "ops/s", "writes of the LUN"),
    ),
    dashboard=Dashboard("sanlens-io-path", ("cluster", "host")),
    ordered=tuple((f"{c}_warning_seconds", f"{c}_critical_seconds") for c in CLASSES),
    pages=True,
    symptom=True,
    reads=Reads(offline=("host", "lun", "volume")),
)
ID = SPEC.id


_OBJECTIVES = {c: (f"{c}_warning_seconds", f"{c}_critical_seconds") for c in CLASSES}
"""Each data class's two threshold names, made once: a class is looked up per subject."""


def class_level(latency: float | None, data_class: str, th: Thresholds) -> tuple[int | None, float, float]:
    """(level, warning, critical) of a latency for a data class, from latency_slo's thresholds."""
    t = th[ID]
    w, c = _OBJECTIVES.get(data_class) or _OBJECTIVES["data"]
    warn, crit = t[w], t[c]
    if latency is None:
        return None, warn, crit
    return (2 if latency >= crit else 1 if latency >= warn else 0), warn, crit


def crossed(level: int, cls: str, warn: float, crit: float) -> str:
    """The objective a latency at ``level`` crossed, named first; the other one only as context."""
    if level >= 2:
        return f"the {cls} critical objective ({ms(crit)}; warning from {ms(warn)})"
    return f"the {cls} warning objective ({ms(warn)}), below its critical one ({ms(crit)})"


def _advice(
    level: int,
    what: str,
    lat: float | None,
    op: str,
    cls: str,
    objectives: tuple[float, float],
    wf: Waterfall | None = None,
) -> str:
    if level == 0:
        return ""
    where = describe(wf) if wf is not None else ""
    return (
        f"{what}: {op} latency {ms(lat)} is above {crossed(level, cls, *objectives)}. "
        + (f"Most of it is {where}. " if where else "")
        + "Check this subject's other diagnoses (qos_throttle, san_oversubscription, host_queue_limited, "
        "indirect_io, cpu_domain_serial_bottleneck, background_operation_impact, disk_busy_imbalance) "
        "for the cause."
    )


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    return [o for part, _reads in PARTS for o in part(ctx, th)]


def evaluate_disks(ctx: Context, th: Thresholds) -> list[Observation]:
    """Every host disk against its data class's objective."""
    out: list[Observation] = []
    min_iops = th[ID]["min_iops"]
    for d in ctx.host_disks():
        lat, op = worst_latency(d.read_iops, d.write_iops, d.read_latency_s, d.write_latency_s, min_iops)
        level, warn, crit = class_level(lat, d.data_class, th)
        if lat is None and d.read_iops is not None:
            level = 0  # the disk is idle: nothing to judge, nothing wrong
        ev = {"host_latency_seconds": lat, "host_read_iops": d.read_iops, "host_write_iops": d.write_iops}
        out.append(
            of_disk(
                ID,
                d,
                level,
                clamp01((lat or 0.0) / crit),
                {**ev, "warning_threshold_seconds": warn, "critical_threshold_seconds": crit},
                _advice(
                    level or 0,
                    f"Host {d.host} disk {d.disk}",
                    lat,
                    op,
                    d.data_class,
                    (warn, crit),
                    of_host_disk(ctx, d) if level else None,
                ),
            )
        )
    return out


def evaluate_luns(ctx: Context, th: Thresholds) -> list[Observation]:
    """Every LUN against the objective of the class of the host disk on it: ONTAP's view and the hosts'
    mapping, not their counters, so a host's poll does not judge 10,000 LUNs again."""
    out: list[Observation] = []
    min_iops = th[ID]["min_iops"]
    for lun in ctx.luns():
        mapped = ctx.mapped_luns.get((lun.cluster, lun.svm, lun.lun))
        cls = mapped.data_class if mapped else "data"
        lat, op = worst_latency(
            lun.read_iops, lun.write_iops, lun.read_latency_s, lun.write_latency_s, min_iops
        )
        level, warn, crit = class_level(lat, cls, th)
        if lat is None and lun.read_iops is not None:
            level = 0
        key, subject = lun_subject(lun)
        out.append(
            Observation(
                ID,
                key,
                subject,
                level,
                clamp01((lat or 0.0) / crit),
                {
                    "lun_latency_seconds": lat,
                    "lun_read_iops": lun.read_iops,
                    "lun_write_iops": lun.write_iops,
                    "warning_threshold_seconds": warn,
                    "critical_threshold_seconds": crit,
                },
                _advice(
                    level,
                    f"LUN {lun.lun} on {lun.cluster}",
                    lat,
                    op,
                    cls,
                    (warn, crit),
                    of_lun(ctx, lun),
                )
                if level
                else "",
            )
        )
    return out


# the parts of evaluate() and what each reads of the Context, in the order their subjects are judged
# (a non-ok subject's advice names the dominant part of its waterfall, which reads both sides)
PARTS = ((evaluate_disks, frozenset({"hosts", "ontap"})), (evaluate_luns, frozenset({"ontap", "mapping"})))
