"""The diagnoses of `sanlens analyze`: every input's views, in time order, through the diagnose engine.

ONTAP captures become ``OntapView``s (:mod:`sanlens.analyze.ontap_series`);
PerfMon logs ``HostView``s from the analysis intervals their single read pass
folded (:mod:`sanlens.analyze.host_intervals`), Linux iostat/sar captures one per
report (:mod:`sanlens.analyze.linux_inputs`), each disk mapped to its LUN as
``serve`` would map it. Both streams merge by time into one engine run whose
windows come from the real time each diagnosis has data for
(:mod:`sanlens.analyze.windows`); the recorder keeps every finding of the run.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sanlens.analyze.analysis import Analysis
from sanlens.analyze.charts import Points
from sanlens.analyze.episodes import Recorder
from sanlens.analyze.evidence_format import label, parse_time, rows, span_text, subject_text
from sanlens.analyze.evidence_format import value as evidence_value
from sanlens.analyze.host_intervals import DiskColumn, Step
from sanlens.analyze.host_screen import calm, steps_screen
from sanlens.analyze.incidents import Group, incidents
from sanlens.analyze.linux_inputs import LinuxInput
from sanlens.analyze.offline_join import host_mapper
from sanlens.analyze.ontap_inputs import OntapInput
from sanlens.analyze.ontap_series import OntapCooker, SeriesStats
from sanlens.analyze.perfmon_summary import LogSummary
from sanlens.analyze.qos_breakdown import QOS_KINDS, QosBreakdowns
from sanlens.analyze.qos_breakdown import build as build_qos
from sanlens.analyze.qos_views import with_qos
from sanlens.analyze.waterfall_report import text_line as waterfall_text
from sanlens.analyze.windows import HOST, Source, offline_windows
from sanlens.config.plain import DIAGNOSE_DEFAULTS, DiagnoseSection, DiagnoseSettings
from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import resolve
from sanlens.hosts.mapping import DiskMapping
from sanlens.model import HostView, OntapVersion, Snapshot

if TYPE_CHECKING:
    from sanlens.config import Config

Tick = Callable[[int], None]


@dataclass
class Findings:
    diagnoses: list[dict[str, Any]]
    warnings: list[str]
    series: list[SeriesStats] = field(default_factory=list)  # cooked ONTAP series, with chart points
    judged: dict[str, set[str]] = field(default_factory=dict)  # diagnosis -> subjects it judged
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)
    cluster: str = "offline"
    host_points: dict[DiskColumn, Points] = field(default_factory=dict)
    mappings: dict[tuple[str, str], DiskMapping] = field(default_factory=dict)  # (host, disk)
    updates: int = 0
    screened: int = 0  # of those updates, the calm host intervals stored without judging
    qos: QosBreakdowns = field(default_factory=QosBreakdowns)  # where each workload's time goes
    inputs_judged: int | None = None  # inputs whose status is "judged", once statuses are known

    @property
    def evaluated_any(self) -> bool:
        """Whether anything at all was judged (the inputs' statuses decide once they are known)."""
        if self.inputs_judged is not None:
            return self.inputs_judged > 0
        return any(self.judged.values())


def merged(*streams: Iterable[Snapshot | Step]) -> Iterator[Snapshot | Step]:
    return heapq.merge(*streams, key=lambda s: s.timestamp)


# ------------------------------------------------------------------ time
def _anchors(ontap: list[OntapInput], interval: float | None) -> dict[str, float]:
    """Captures without time are placed so that their last sample is the file's modification time."""
    out: dict[str, float] = {}
    for kind in {i.kind for i in ontap if i.start is None and i.kind != "ontap-counter-schema"}:
        group = [i for i in ontap if i.kind == kind and i.start is None]
        newest = max(i.mtime for i in group)
        out[kind] = newest - (sum(i.samples for i in group) - 1) * (interval or 60.0)
    return out


def sources(
    perfmon: list[LogSummary],
    ontap: list[OntapInput],
    interval: float | None,
    anchors: dict[str, float],
    linux: list[LinuxInput] | None = None,
) -> list[Source]:
    """Every timeline in the inputs: each PerfMon log or Linux capture, and each ONTAP counter table."""
    out: list[Source] = []
    for s in perfmon:
        iv = s.intervals
        if iv is None or not iv.steps or s.start is None or s.end is None:
            continue
        step = (s.end - s.start) / (iv.steps - 1) if iv.steps > 1 else None
        out.append(Source(HOST, s.start, s.end, step))
    for li in linux or []:
        if li.start is not None and li.end is not None:
            out.append(Source(HOST, li.start, li.end, li.step))
    tables: dict[str, list[OntapInput]] = {}
    for i in ontap:
        if i.kind == "ontap-counter-schema":
            continue
        for obj in i.objects:
            tables.setdefault(obj, []).append(i)
    for obj, group in tables.items():
        n = sum(i.samples for i in group)
        if all(i.start is not None and i.end is not None for i in group):
            start = min(float(i.start) for i in group if i.start is not None)
            end = max(float(i.end) for i in group if i.end is not None)
        else:
            start = anchors.get(group[0].kind, 0.0)
            end = start + (n - 1) * (interval or 60.0)
        step = (end - start) / (n - 1) if n > 1 and end > start else interval
        # a QoS timeline stands for every name a diagnosis may declare for one (ZAPI or REST)
        for kind in sorted(QOS_KINDS) if obj in QOS_KINDS else [obj]:
            out.append(Source(kind, start, end, step))
    return out


# -------------------------------------------------------------------- driver
def engine_config(config: Config | None, windows: dict[str, tuple[float, float]]) -> DiagnoseSettings:
    """The config's diagnose section (thresholds, capacity), with the offline windows where it sets none."""
    base: DiagnoseSection = config.diagnose if config is not None else DIAGNOSE_DEFAULTS
    thresholds: dict[str, dict[str, float]] = {k: dict(v) for k, v in (base.thresholds or {}).items()}
    for did, (sustain, exit_) in windows.items():
        th = thresholds.setdefault(did, {})
        th.setdefault("sustain_seconds", sustain)
        th.setdefault("exit_seconds", exit_)
    return DiagnoseSettings(
        sustain_scale=1.0,
        history=base.history,
        thresholds=thresholds,
        backend_iops_capacity=base.backend_iops_capacity,
    )


@np.errstate(over="ignore", invalid="ignore", divide="ignore")
def finish(
    results: list[Analysis],
    interval: float | None,
    cluster: str,
    version: OntapVersion | None,
    config: Config | None = None,
    tick: Tick | None = None,
    screen: bool = True,
) -> Findings:
    """Cook the ONTAP inputs into series (attached to their inputs) and diagnose every input.

    ``screen``: with no cluster in the inputs, a calm host interval is screened, not judged
    (:mod:`sanlens.analyze.host_screen`); False judges every interval, which gives the same findings.

    Values near the float maximum overflow in the arithmetic: the results are then
    infinite (written as null or ``overflow``), never numpy warnings on stderr.
    """
    ontap_results = [r for r in results if isinstance(r.detail, OntapInput)]
    ontap: list[OntapInput] = [r.detail for r in results if isinstance(r.detail, OntapInput)]
    logs: list[LogSummary] = [r.detail for r in results if isinstance(r.detail, LogSummary)]
    linux: list[LinuxInput] = []
    for r in results:
        if isinstance(r.detail, LinuxInput):
            r.detail.place(interval)  # captures without times: --interval apart
            r.input.update(r.detail.input_json())
            linux.append(r.detail)
    anchors = _anchors(ontap, interval)
    windows = offline_windows(sources(logs, ontap, interval, anchors, linux))
    cooker = OntapCooker(ontap, interval, cluster, version, anchors)
    qos = build_qos(ontap, interval, anchors, cluster)
    mapper = host_mapper(config, cluster)
    diagnose_cfg = engine_config(config, windows)
    screened = screen and not ontap
    th = resolve(diagnose_cfg) if screened else {}  # the thresholds the engine judges with
    capacity = diagnose_cfg.backend_iops_capacity
    host_screen = steps_screen(th, capacity) if screened else None
    streams: list[Iterable[Snapshot | Step]] = [
        with_qos(cooker.snapshots(), qos.timeline(), cluster, version)
    ]
    streams += [s.intervals.views(mapper, host_screen) for s in logs if s.intervals]
    streams += [li.snapshots(mapper) for li in linux]
    engine = Engine(diagnose_cfg)
    rec = Recorder()
    unread: dict[str, Step] = {}  # each host's latest calm interval, stored only when a judgement reads it
    for item in merged(*streams):
        if isinstance(item, Step):
            seen = item.screened
            if seen is not None and seen.calm and engine.settled():
                unread[item.host] = item
                rec.note(seen.ok)
                if tick is not None:
                    tick(1)
                continue
            unread.pop(item.host, None)  # its newer view replaces it
            if seen is None:
                snap = item.build()
            else:
                # the disks a screen saw surely ok and no track follows change nothing when judged:
                # the view holds the others, and the recorder the subjects judged ok
                snap = item.build(seen.raised | engine.tracked())
                rec.note(seen.ok, update=False)
            quiet = None
        else:
            snap = item
            quiet = (
                calm(snap.view, th, capacity)
                if screened and isinstance(snap.view, HostView) and engine.settled()
                else None
            )
        if quiet is not None:
            engine.absorb(snap)
            rec.note(quiet)
        else:
            for step in unread.values():  # the other hosts' views as they are now, for this judgement
                engine.absorb(step.build())
            unread.clear()
            engine.update(snap)
            rec.observe(engine, snap.timestamp)
        if tick is not None:
            tick(1)
    for step in unread.values():
        engine.absorb(step.build())
    found = rec.finish(engine)
    warnings: list[str] = []
    by_path = {str(inp.path): r for r, inp in zip(ontap_results, ontap, strict=True)}
    for st in cooker.series.values():  # each series under the input it was first cooked from
        if ontap_results:
            by_path.get(st.inputs[0], ontap_results[0]).series.append(st.as_json())
    if ontap_results:
        ontap_results[0].warnings.extend(cooker.warnings)
    for path, notes in qos.warnings.items():
        by_path[path].warnings.extend(notes)
    out = Findings(found, warnings, list(cooker.series.values()), rec.judged, windows, cluster)
    out.updates = rec.updates
    out.screened = rec.screened
    out.qos = qos
    for s in logs:
        if s.intervals:
            out.host_points.update(s.intervals.chart_points())
            for host, disk, drives, _f in s.intervals.columns:
                out.mappings[(host, disk)] = mapper(host, disk, drives)
    for li in linux:
        out.host_points.update(li.chart_points())
        for disk in li.disks():
            out.mappings[(li.host, disk)] = mapper(li.host, disk, ())
    return out


def expected_updates(results: list[Analysis]) -> int:
    """Engine updates a run will make (for progress): host intervals per host, plus ONTAP samples."""
    n = 0
    for r in results:
        d = r.detail
        if isinstance(d, LogSummary) and d.intervals:
            n += d.intervals.steps * max(len({c[0] for c in d.intervals.columns}), 1)
        elif isinstance(d, LinuxInput):
            n += d.steps
        elif isinstance(d, OntapInput):
            n += d.samples
    return n


MAX_TEXT_SUBJECTS = 20  # subjects listed per diagnosis of an incident in text; JSON has them all


def render_findings_text(f: Findings, out: Any, too_short: bool = False) -> None:
    """The findings grouped by incident (cause, then the symptoms it explains), evidence in human units.
    ``too_short``: every input judged was too short to sustain a finding, so none could have fired."""
    if not f.diagnoses and not f.evaluated_any:
        out.write("Diagnoses: nothing could be evaluated (see each input's status above).\n\n")
        return
    incs = incidents(f.diagnoses)
    drives = {(h, d): tuple(dr) for h, d, dr, _field in f.host_points if dr}
    out.write(f"Diagnoses: {len(incs)} incident(s), {len(f.diagnoses)} finding(s)\n")
    if not f.diagnoses and too_short:
        out.write(
            "  none could fire: every input judged was too short to sustain a finding (see its status).\n"
        )
    elif not f.diagnoses:
        out.write("  none fired on the subjects that could be judged.\n")
    for k, inc in enumerate(incs, 1):
        lead = inc.lead
        out.write(f"\n  {k}. [{inc.severity}] {lead.title}  ({lead.id})\n")
        for g in inc.groups:
            _group_text(g, out, g is lead, drives)
    out.write("\n")


def _subject(d: dict[str, Any], drives: dict[tuple[str, str], tuple[str, ...]]) -> str:
    subj = d.get("subject") or {}
    if not isinstance(subj, dict):
        return str(subj)
    return subject_text(subj, drives.get((subj.get("host", ""), subj.get("disk", "")), ()))


def _group_text(g: Group, out: Any, lead: bool, drives: dict[tuple[str, str], tuple[str, ...]]) -> None:
    d = g.worst
    n = len(g.findings)
    indent = "      " if lead else "        "
    if not lead:
        out.write(f"     symptom: [{g.severity}] {g.title}  ({g.id})\n")
    else:
        out.write(f"     {g.role}: [{g.severity}]{f' on {n} subjects' if n > 1 else ''}\n")
    span = span_text(parse_time(d.get("since")), parse_time(d.get("until")))
    still = " (still active at the end)" if d.get("active_at_end") else ""
    out.write(f"{indent}{'worst: ' if n > 1 else ''}{_subject(d, drives)}  {span}{still}\n")
    table = rows(g.id, d.get("evidence") or {})
    if table:
        width = max(len(r.label) for r in table)
        for r in table:
            out.write(f"{indent}  {r.label:<{width}}  {r.value}\n")
    if lead:
        out.write(waterfall_text(d.get("waterfall")))
    if d.get("recommendation"):
        out.write(f"{indent}fix: {d['recommendation']}\n")
    if n > 1:
        keys = g.key_evidence()
        for other in g.findings[1:MAX_TEXT_SUBJECTS]:
            ev = other.get("evidence") or {}
            vals = ", ".join(
                f"{label(key)} {evidence_value(g.id, key, ev.get(key))}" for key in keys if key in ev
            )
            out.write(f"{indent}also: [{other.get('severity')}] {_subject(other, drives)}  {vals}\n")
        if n > MAX_TEXT_SUBJECTS:
            out.write(f"{indent}... and {n - MAX_TEXT_SUBJECTS} more (see --format json)\n")
