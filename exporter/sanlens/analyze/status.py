"""Each input's status: read or failed, which diagnoses it let the engine judge, what was skipped and why.

"No diagnosis fired" is only true of subjects that were judged. A log with only
``PhysicalDisk(_Total)``, a capture whose rows were all skipped or a file that
failed to parse judged nothing, and the report must say so rather than look
healthy. Judged subjects come from the engine itself (``Engine.subject_states``,
collected over the run): host disks are attributed to the PerfMon log of their
host, ONTAP subjects to the captures of the counter tables the diagnosis reads.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sanlens.analyze.analysis import Analysis
from sanlens.analyze.diagnoses import Findings
from sanlens.analyze.linux_inputs import LinuxInput
from sanlens.analyze.ontap_inputs import OntapInput
from sanlens.analyze.perfmon_summary import LogSummary
from sanlens.analyze.qos_breakdown import QOS_KINDS, is_qos_input, only_qos
from sanlens.analyze.windows import HOST, feeds
from sanlens.diagnose.registry import IDS, MODULES, REGISTRY

# What the host side of a diagnosis reads, as PerfMon counters (HostDiskStats fields).
HOST_NEEDS: dict[str, dict[str, str]] = {
    "latency_slo": {
        "read_latency_s": "Avg. Disk sec/Read",
        "read_iops": "Disk Reads/sec",
    },
    "san_oversubscription": {
        "read_latency_s": "Avg. Disk sec/Read",
        "read_iops": "Disk Reads/sec",
        "idle_ratio": "% Idle Time",
    },
    "host_queue_limited": {
        "read_iops": "Disk Reads/sec",
        "read_latency_s": "Avg. Disk sec/Read",
        "queue_length": "Current Disk Queue Length",
    },
    "lun_iops_ceiling": {"read_iops": "Disk Reads/sec"},
}


def _reads(mod: Any) -> frozenset[str]:
    """The kinds of input (``ontap``, ``hosts``, ...) a diagnosis module's parts read."""
    parts = getattr(mod, "PARTS", None)
    if parts:
        return frozenset().union(*(reads for _part, reads in parts))
    return frozenset(getattr(mod, "READS", {"ontap", "hosts"}))


# Diagnoses of the array's own state (a LUN offline, a broken disk, ...): they read ONTAP's
# inventory, which ``sanlens serve`` polls (REST) and no capture of ``sanlens analyze`` carries.
ARRAY_STATE: frozenset[str] = frozenset(
    m.SPEC.id for m in MODULES if "hosts" not in _reads(m) and not m.SPEC.reads.offline
)


def array_state_reason(did: str) -> str:
    """Why a diagnosis of the array's own state was not judged on a host's (or any) capture."""
    return (
        f"judges each {REGISTRY[did].subject}'s state in the array's inventory (ONTAP REST, polled by "
        "`sanlens serve`), which neither a host log nor a counter capture carries"
    )


def _capture_advice(reader: str, dids: list[str], objects: set[str] | None = None) -> str:
    """The command that captures long enough for these diagnoses to be judged with their own (live)
    sustain windows: offline a window is at most half the span of the capture."""
    longest = max((REGISTRY[d].sustain_s for d in dids), default=0.0)
    minutes = math.ceil(2 * longest / 60)
    reports = math.ceil((minutes + 2) / 10) * 10  # a report a minute, to spare
    if reader == "linux-iostat":  # its first report (since boot) is left out
        cmd = f"`iostat -dxt 60 {reports}`"
    elif reader == "linux-sar":
        cmd = f"`sar -dp 60 {reports}`"
    elif reader == "perfmon":
        cmd = f'`typeperf "\\PhysicalDisk(*)\\*" -si 15 -sc {reports * 4} -f CSV -o disks.csv`'
    elif reader == "ontap-sysstat":
        cmd = f"`sysstat -c {reports} -M 60`"
    elif reader == "ontap-counter-rows":
        cmd = f"the table's rows (GET .../counter/tables/TABLE/rows) once a minute, {reports} times"
    else:
        obj = min(objects or {"lun"})
        cmd = f"`statistics show -object {obj} -raw` once a minute, {reports} times"
    if reader in ("ontap-statistics", "ontap-counter-rows"):
        cmd += " (rates are the change between two captures: N captures make N-1 intervals)"
    return (
        f"capture {minutes} minutes or more, e.g. {cmd} ({reports} minutes): these diagnoses hold for up "
        f"to {longest / 60:g} minutes live, and offline for at most half the capture"
    )


def intervals_needed(f: Findings | None, dids: list[str], step: float | None) -> int:
    """The fewest intervals of ``step`` seconds in which any of ``dids`` can sustain a finding.

    A level must hold from one judged interval until the diagnosis' sustain window has passed
    (the windows the run used: :mod:`sanlens.analyze.windows`), so never fewer than two."""
    best: int | None = None
    for did in dids:
        sustain = f.windows[did][0] if f is not None and did in f.windows else REGISTRY[did].sustain_s
        n = 1 + max(1, math.ceil(sustain / step - 1e-9)) if step else 2
        best = n if best is None else min(best, n)
    return best or 2


def _too_short(
    st: dict[str, Any], intervals: int, step: float | None, f: Findings | None, advice: str
) -> str:
    """An input judged over too few intervals to sustain any finding: ``intervals_needed`` in its
    status, and what its note says (with what to capture instead); '' otherwise."""
    dids = st["evaluated"]
    need = intervals_needed(f, dids, step)
    if not dids or intervals >= need:
        return ""
    st["intervals_needed"] = need
    return (
        f"too short to sustain a finding: {intervals} interval{'s' * (intervals != 1)}, and a finding "
        f"must hold for at least {need} (its sustain window), so none could fire here, whatever the "
        f"data showed; {advice}"
    )


def _host_judged(f: Findings, hosts: set[str]) -> set[str]:
    out = set()
    for did, keys in f.judged.items():
        if any(k.split("/disk ", 1)[0].upper() in hosts for k in keys if "/disk " in k):
            out.add(did)
    return out


def _perfmon(s: LogSummary, f: Findings | None) -> dict[str, Any]:
    iv = s.intervals
    hosts = {c[0].upper() for c in iv.columns} if iv else set()
    st: dict[str, Any] = {"reader": s.engine}
    if iv is not None and iv.steps:
        st["analysis_intervals"] = iv.steps
        st["analysis_interval_seconds"] = round(iv.width, 3) if iv.rows_per_step() > 1.0 else None
        st["rows_per_interval"] = round(iv.rows_per_step(), 2)
    skipped = list(s.warnings)
    if not iv:
        disks = [c.column for c in s.columns if c.column.object.lower() in ("physicaldisk", "logicaldisk")]
        if disks and all(c.instance.lower() == "_total" for c in disks):
            objs = sorted({c.object for c in disks}, key=str.lower)
            why = (
                f"only {' and '.join(o + '(_Total)' for o in objs)}: the diagnoses judge each disk, "
                "which needs per-disk (or per-volume) instances"
            )
        elif s.unknown_disk_counters:
            why = (
                f"{len(s.unknown_disk_counters)} disk counter(s) not recognised (a localized log?), "
                f"e.g. {s.unknown_disk_counters[0]}"
            )
        elif disks:
            why = "no PhysicalDisk or LogicalDisk instance that can be judged (see the lines below)"
        else:
            why = (
                "no PhysicalDisk or LogicalDisk counters: the diagnoses read Avg. Disk sec/Read, "
                "Disk Reads/sec, % Idle Time, ..."
            )
        skipped.append(why)
    elif s.unknown_disk_counters:
        skipped.append(
            f"{len(s.unknown_disk_counters)} disk counter(s) not used, e.g. {s.unknown_disk_counters[0]}"
        )
    skipped += s.disks.notes
    judged = _host_judged(f, hosts) if f is not None else set()
    have = {c[3] for c in iv.columns} if iv else set()
    not_eval: dict[str, str] = {}
    for did in IDS:
        kinds = feeds(did)
        if did in judged or (kinds is not None and HOST not in kinds):
            continue
        need = HOST_NEEDS.get(did, {})
        missing = [name for fld, name in need.items() if fld not in have]
        if did in ARRAY_STATE:
            not_eval[did] = array_state_reason(did)
        elif not iv:
            not_eval[did] = "no per-disk counters"
        elif missing:
            not_eval[did] = "needs " + ", ".join(missing)
        elif did == "lun_iops_ceiling":
            not_eval[did] = "needs the disks mapped to ONTAP LUNs (--config hosts[].disks)"
        else:
            not_eval[did] = "no disk had the I/O this diagnosis judges"
    st["evaluated"] = sorted(judged, key=IDS.index)
    st["not_evaluated"] = not_eval
    st["skipped"] = skipped
    steps = iv.steps if iv else 0
    step = (
        (s.end - s.start) / (steps - 1) if steps > 1 and s.start is not None and s.end is not None else None
    )
    short = _too_short(st, steps, step, f, _capture_advice("perfmon", st["evaluated"]))
    if note := "; ".join(x for x in (_disks_note(s, f), short) if x):
        st["note"] = note
    return st


def _disks_note(s: LogSummary, f: Findings | None) -> str:
    """Which disks a log was judged on, where LogicalDisk counters make it a question: its volumes
    (no per-disk PhysicalDisk counters), or its PhysicalDisks with the volumes on them not again."""
    parts = []
    for host, hd in s.disks.hosts.items():
        name = _host_name(s, host)
        who = f"{name}: " if len(s.disks.hosts) > 1 else ""
        verb = "judged" if f is not None and _host_judged(f, {name.upper()}) else "read"
        n = len(hd.disks)
        if hd.object == "LogicalDisk":
            any_physical = any(
                c.column.object.lower() == "physicaldisk" and c.column.host.upper() == host for c in s.columns
            )
            parts.append(
                f"{who}{verb} {n} LogicalDisk volume{'s' * (n != 1)} "
                f"(no {'per-disk ' * any_physical}PhysicalDisk counters in the log): {', '.join(hd.disks)}"
            )
        elif hd.covered:
            parts.append(
                f"{who}{verb} {n} PhysicalDisk{'s' * (n != 1)}; LogicalDisk {', '.join(hd.covered)} "
                f"on {'them' if n != 1 else 'it'} not judged again"
            )
    return "; ".join(parts)


def _host_name(s: LogSummary, host: str) -> str:
    """A host as the log spells it; the file's name for columns that name none."""
    if not host:
        return Path(s.path).stem
    return next((c.column.host for c in s.columns if c.column.host.upper() == host), host)


def _linux(li: LinuxInput, warnings: list[str], f: Findings | None) -> dict[str, Any]:
    """A Linux capture's status: the host diagnoses judged on its disks, and why the others were not."""
    st: dict[str, Any] = {"reader": li.kind, "analysis_intervals": li.steps}
    judged = _host_judged(f, {li.host.upper()}) if f is not None else set()
    not_eval: dict[str, str] = {}
    for did in IDS:
        kinds = feeds(did)
        if did in judged or (kinds is not None and HOST not in kinds):
            continue
        if did in ARRAY_STATE:
            not_eval[did] = array_state_reason(did)
        elif did == "host_path_loss":
            not_eval[did] = "iostat and sar report no path states (node_exporter's dmmultipath does)"
        elif not li.disks():
            not_eval[did] = "no whole-disk devices in the capture"
        else:
            not_eval[did] = "no disk had the I/O this diagnosis judges"
    st["evaluated"] = sorted(judged, key=IDS.index)
    st["not_evaluated"] = not_eval
    st["skipped"] = list(warnings)
    notes = []
    if li.placed:
        notes.append(
            "the capture carries no time (iostat without -t): its last report is placed at the file's "
            "modification time, reports --interval apart"
        )
    step = li.step if li.steps > 1 else None
    if short := _too_short(st, li.steps, step, f, _capture_advice(li.kind, st["evaluated"])):
        notes.append(short)
    if notes:
        st["note"] = "; ".join(notes)
    return st


def _ontap(i: OntapInput, warnings: list[str], f: Findings | None) -> dict[str, Any]:
    st: dict[str, Any] = {}
    if i.kind == "ontap-counter-schema":
        st["evaluated"] = []
        st["not_evaluated"] = {}
        st["skipped"] = []
        st["note"] = f"types the {i.schema[0] if i.schema else ''} rows of the other inputs"
        return st
    if only_qos(i):
        return _qos(i, warnings, f)
    judged = set()
    not_eval: dict[str, str] = {}
    prefix = (f.cluster if f else "offline") + "/"
    cooked = f is not None and any(str(i.path) in s.inputs for s in f.series)
    if not cooked:  # views without a single cooked value: whatever "ok" the engine saw, nothing was judged
        st["evaluated"] = []
        st["not_evaluated"] = {}
        st["skipped"] = [*warnings, _uncooked(i, warnings)]
        return st
    for did in IDS:
        kinds = feeds(did)
        keys = f.judged.get(did, set()) if f else set()
        if (kinds is not None and not (kinds & i.objects)) or (kinds is None and not keys):
            continue  # a diagnosis this kind of capture does not feed (or, unknown here, did not)
        if any(k.startswith(prefix) and "/disk " not in k for k in keys):
            judged.add(did)
        else:
            not_eval[did] = "its counters were not in the captures, or every row was skipped"
    st["evaluated"] = sorted(judged, key=IDS.index)
    st["not_evaluated"] = not_eval
    st["skipped"] = list(warnings)
    notes = []
    if i.start is None:
        notes.append("the capture carries no time: its last sample is placed at the file's modification time")
    if judged and f is not None:
        # the intervals judged of this capture's counters: the most samples of a series cooked from it
        n = max((x.samples for x in f.series if str(i.path) in x.inputs), default=0)
        advice = _capture_advice(i.kind, st["evaluated"], i.objects)
        span = (i.end - i.start) if i.start is not None and i.end is not None else 0.0
        step = span / (i.samples - 1) if i.samples > 1 and span > 0 else None
        if short := _too_short(st, n, step, f, advice):
            notes.append(short)
    if notes:
        st["note"] = "; ".join(notes)
    if is_qos_input(i):
        extra = _qos(i, [], f)
        st["evaluated"] = sorted(set(st["evaluated"]) | set(extra["evaluated"]), key=IDS.index)
        st["note"] = "; ".join(x for x in (st.get("note"), extra["note"]) if x)
    return st


def _uncooked(i: OntapInput, warnings: list[str]) -> str:
    """Why no counter could be cooked from an ONTAP capture: it holds a single sample, and counters
    are cooked from the change between two; or its rows were skipped (the warnings say why).

    The rows another capture's sample skipped are counted in the run's warnings, which only one
    input carries: a one-sample capture without them may still have been paired, and says so."""
    if i.kind == "ontap-sysstat" or i.samples > 1 or any("row(s) skipped" in w for w in warnings):
        return "no counter could be cooked from this capture: every row was skipped"
    objects = ", ".join(sorted(i.objects)) or "its object"
    return (
        f"no counter could be cooked from this capture: it holds one sample of {objects}, and rates and "
        "averages need two captures (each counter's change between them): capture it again a minute or "
        "more later and pass both (when another capture of it was passed, every row was skipped: see "
        "the warnings)"
    )


def reads_qos(did: str) -> bool:
    """Whether a registered diagnosis declares a QoS table or timeline among what it reads."""
    reads = REGISTRY[did].reads
    return bool(set(reads.tables) & QOS_KINDS or set(reads.offline) & QOS_KINDS)


def _qos(i: OntapInput, warnings: list[str], f: Findings | None) -> dict[str, Any]:
    """A QoS capture's status: the diagnoses that read QoS workloads and judged some, and what
    the report's breakdown section shows of it."""
    path = str(i.path)
    judged: set[str] = set()
    not_eval: dict[str, str] = {}
    prefix = (f.cluster if f else "offline") + "/"
    shown = [b for b in f.qos.workloads.values() if path in b.inputs] if f else []
    for did in (d for d in IDS if reads_qos(d)):
        keys = f.judged.get(did, set()) if f else set()
        if any(k.startswith(prefix) and "/disk " not in k for k in keys):
            judged.add(did)
        else:
            not_eval[did] = "no workload in the captures had what it judges (a breakdown with latency)"
    intervals = i.samples if i.kind == "ontap-qos-latency" else max(i.samples - 1, 0)
    parts = [
        f"QoS latency breakdown of {len(shown)} workload(s) over {intervals} interval(s), "
        "in 'Where the time goes inside ONTAP'"
    ]
    if not any(reads_qos(d) for d in IDS):
        parts.append("no registered diagnosis reads QoS workloads")
    parts += f.qos.notes.get(path, []) if f else []
    if i.start is None:
        parts.append(
            "the capture carries no time: its last interval is placed at the file's modification time"
        )
    return {
        "evaluated": sorted(judged, key=IDS.index),
        "not_evaluated": not_eval,
        "skipped": list(warnings),
        "note": "; ".join(parts),
    }


def input_status(result: Analysis, findings: Findings | None) -> dict[str, Any]:
    """The ``status`` object of one input (see docs/analyze.md)."""
    d = result.detail
    if isinstance(d, LogSummary):
        st = _perfmon(d, findings)
    elif isinstance(d, OntapInput):
        st = _ontap(d, result.warnings, findings)
    elif isinstance(d, LinuxInput):
        st = _linux(d, result.warnings, findings)
    else:
        st = {"evaluated": [], "not_evaluated": {}, "skipped": []}
    st["errors"] = list(result.errors)
    if st["errors"]:
        st["state"] = "error"
    elif d is not None and isinstance(d, OntapInput) and d.kind == "ontap-counter-schema":
        st["state"] = "read"
    else:
        st["state"] = "judged" if st["evaluated"] else "nothing judged"
    return st
