"""Where each QoS workload's time goes inside ONTAP, over the capture: the report's intervals and
the ``QosWorkload``s the diagnose engine judges.

Two kinds of capture feed it:

- ``qos statistics ... latency show`` text: one interval per iteration, each workload row its
  latency and the components ONTAP printed (the ``-total-`` row is kept apart, as a summary);
- ``statistics show -raw`` captures of ``workload_detail[_volume]`` (with ``workload[_volume]``
  for the latency): one interval per pair of consecutive samples
  (:mod:`sanlens.ontap.workload_detail_text`).

The report keeps each printed column as ONTAP named it; the engine gets
:data:`sanlens.qos.QOS_COMPONENTS` names. The older releases' single ``QoS`` column becomes
``other`` there, not ``qos_max``: their command reference describes it as the latency "in the
QoS subsystem (QoS)" (ONTAP 9.6 ``qos statistics workload latency show``), where later releases
say "for QoS Policy Group Ceiling (QoS Max)" and "... Floor (QoS Min)"; floors already existed,
so the one column may hold either a ceiling's or a floor's delay and no diagnosis may read it as
the ceiling's. The report still names it, as ``QoS``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sanlens.analyze.ontap_inputs import OntapInput
from sanlens.analyze.ontap_series import QOS_TABLES, samples_again
from sanlens.ontap.qos_centres import DETAIL_TABLES, WORKLOAD_TABLES
from sanlens.qos import QOS_COMPONENTS, QosWorkload

if TYPE_CHECKING:  # the QoS text parsers load when a capture of theirs is read
    from sanlens.ontap.cooking import Sample
    from sanlens.ontap.workload_detail_text import WorkloadTimes

# every name a diagnosis may declare for a QoS timeline (Reads.offline / Reads.tables)
QOS_KINDS = QOS_TABLES
TEXT_KIND = "ontap-qos-latency"
TOTAL = "-total-"
OTHER = "other"
FROM_TEXT = "qos statistics latency show"
FROM_DETAIL = "workload_detail"
FROM_SHARES = "workload_detail (shares)"  # no latency to apply the shares to
MAX_INTERVALS = 400  # per workload, kept for the report (every other one dropped when full)


@dataclass(slots=True)
class Interval:
    """One interval of one workload: ``parts`` are seconds per operation by printed column, or
    shares of the time in ONTAP (adding up to 1) when ``latency_s`` is None."""

    t: float
    iteration: int
    latency_s: float | None
    parts: dict[str, float]
    iops: float | None = None
    placed: bool = False  # the capture carries no time: placed from the file's modification time
    input: str = ""  # the capture it was read from


@dataclass
class Breakdown:
    """One workload (or policy group, or the ``-total-`` row of one capture) over the capture."""

    workload: str
    svm: str
    source: str  # FROM_TEXT or FROM_DETAIL
    volume: str = ""
    wid: str = ""
    policy: str = ""
    inputs: list[str] = field(default_factory=list)
    intervals: list[Interval] = field(default_factory=list)
    seen: int = 0  # intervals read; more than kept when a long capture was thinned
    stride: int = 1

    def add(self, iv: Interval, path: str) -> None:
        if path not in self.inputs:
            self.inputs.append(path)
        if self.seen % self.stride == 0:
            self.intervals.append(iv)
            if len(self.intervals) >= MAX_INTERVALS:
                self.intervals = self.intervals[::2]
                self.stride *= 2
        self.seen += 1

    @property
    def shares_only(self) -> bool:
        return all(iv.latency_s is None for iv in self.intervals)


def components(parts: dict[str, float]) -> dict[str, float]:
    """Printed columns as QOS_COMPONENTS names: anything the model does not name (the older
    single ``QoS`` column, a column of a newer release, the residual) adds to ``other``."""
    out: dict[str, float] = {}
    for key, v in parts.items():
        name = key if key in QOS_COMPONENTS else OTHER
        out[name] = out.get(name, 0.0) + v
    return out


@dataclass
class QosBreakdowns:
    """Everything the QoS inputs of one run gave: the report's breakdowns and the engine's views."""

    workloads: dict[tuple[str, str, str], Breakdown] = field(default_factory=dict)
    totals: dict[str, Breakdown] = field(default_factory=dict)  # input path -> its -total- row
    engine: dict[float, dict[tuple[str, str], QosWorkload]] = field(default_factory=dict)
    intervals: dict[float, float | None] = field(default_factory=dict)  # time -> seconds it spans
    notes: dict[str, list[str]] = field(default_factory=dict)  # input path -> status notes
    warnings: dict[str, list[str]] = field(default_factory=dict)

    def breakdown(self, source: str, svm: str, workload: str) -> Breakdown:
        key = (source, svm, workload)
        b = self.workloads.get(key)
        if b is None:
            from sanlens.ontap.workload_detail_text import volume_of

            b = self.workloads[key] = Breakdown(workload, svm, source)
            b.volume, b.wid = volume_of(workload)
        return b

    def judge(self, t: float, dt: float | None, w: QosWorkload) -> None:
        self.engine.setdefault(t, {})[(w.svm, w.workload)] = w
        if self.intervals.get(t) is None:
            self.intervals[t] = dt

    def note(self, path: str, text: str) -> None:
        self.notes.setdefault(path, []).append(text)

    def timeline(self) -> Iterator[tuple[float, float | None, tuple[QosWorkload, ...]]]:
        """(time, seconds the interval spans, its workloads) in time order, for the engine."""
        for t in sorted(self.engine):
            yield t, self.intervals.get(t), tuple(self.engine[t].values())


def is_qos_input(i: OntapInput) -> bool:
    """A capture some of whose objects are QoS objects (read here, not by the counter cooker)."""
    return i.kind == TEXT_KIND or bool(i.objects & QOS_TABLES)


def only_qos(i: OntapInput) -> bool:
    return i.kind == TEXT_KIND or (bool(i.objects) and i.objects <= QOS_TABLES)


def build(
    inputs: list[OntapInput], interval: float | None, anchors: dict[str, float], cluster: str
) -> QosBreakdowns:
    """Read the QoS inputs again, in time order, into breakdowns and engine workloads."""
    out = QosBreakdowns()
    qos = [i for i in inputs if is_qos_input(i)]

    def start(i: OntapInput) -> tuple[float, int]:
        return (i.start if i.start is not None else anchors.get(i.kind, 0.0), i.order)

    placed: dict[str, int] = {}  # kind -> samples placed so far (captures without time)
    text = sorted((i for i in qos if i.kind == TEXT_KIND), key=start)
    for inp in text:
        for n, sample in enumerate(samples_again(inp)):
            t = _time(sample, inp, placed, interval, anchors)
            _text_sample(out, inp, sample, (n, t), interval, cluster)
    detail = sorted((i for i in qos if i.kind != TEXT_KIND), key=start)
    if detail:
        _detail(out, detail, interval, anchors, placed, cluster)
    return out


def _time(
    sample: Sample, inp: OntapInput, placed: dict[str, int], interval: float | None, anchors: dict[str, float]
) -> float:
    """The sample's own time, else its place after the kind's anchor, ``--interval`` (or 60 s) apart."""
    idx = placed.get(inp.kind, 0)
    placed[inp.kind] = idx + 1
    if sample.timestamp is not None:
        return sample.timestamp
    return anchors.get(inp.kind, 0.0) + idx * (interval or 60.0)


def _text_sample(
    out: QosBreakdowns,
    inp: OntapInput,
    sample: Sample,
    when: tuple[int, float],
    interval: float | None,
    cluster: str,
) -> None:
    """One iteration of a text capture: ``when`` is its (iteration, time)."""
    from sanlens.ontap.qos_latency_text import TABLE as TEXT_TABLE

    path = str(inp.path)
    iteration, t = when
    for row in sample.rows:
        if row.table != TEXT_TABLE:
            continue
        lat = row.counters.get("latency")
        if not isinstance(lat, float | int) or not math.isfinite(lat):
            continue
        parts = {
            k: float(v) for k, v in row.counters.items() if k != "latency" and isinstance(v, float | int)
        }
        svm = row.properties.get("svm", "")
        iv = Interval(t, iteration, float(lat), parts, placed=sample.timestamp is None, input=path)
        if row.instance == TOTAL:
            total = out.totals.get(path)
            if total is None:
                total = out.totals[path] = Breakdown(TOTAL, svm, FROM_TEXT)
            total.add(iv, path)
            continue
        b = out.breakdown(FROM_TEXT, svm, row.instance)
        policy = row.properties.get("policy_group", "")
        b.policy = policy
        b.wid = row.properties.get("workload_id", b.wid)
        b.add(iv, path)
        out.judge(
            t,
            interval,
            QosWorkload(
                cluster,
                svm,
                row.instance,
                volume=b.volume,
                policy=policy,
                wid=b.wid,
                latency_s=float(lat),
                components=components(parts),
            ),
        )


def _detail(
    out: QosBreakdowns,
    inputs: list[OntapInput],
    interval: float | None,
    anchors: dict[str, float],
    placed: dict[str, int],
    cluster: str,
) -> None:
    """Cook the QoS objects' samples of every capture in order; pair each workload's centre times
    with its latency from the same interval (the same sample, or another capture's within half an
    interval)."""
    from sanlens.ontap.workload_detail_text import DetailCooker

    cooker = DetailCooker()
    times: list[tuple[float, float | None, str, WorkloadTimes, bool]] = []
    latencies: dict[tuple[str, str], list[tuple[float, WorkloadTimes]]] = {}
    prev_t: float | None = None
    for inp in inputs:
        for sample in samples_again(inp):
            rows = [r for r in sample.rows if r.table in DETAIL_TABLES | WORKLOAD_TABLES]
            if not rows:
                continue
            t = _time(sample, inp, placed, interval, anchors)
            dt = t - prev_t if prev_t is not None and t > prev_t else interval
            prev_t = t
            found, lat = cooker.feed(rows, dt)
            times += [(t, dt, str(inp.path), w, sample.timestamp is None) for w in found]
            for w in lat:
                latencies.setdefault((w.svm, w.workload), []).append((t, w))
    for why, n in cooker.skipped.items():
        out.warnings.setdefault(str(inputs[0].path), []).append(f"{n} QoS row(s) skipped: {why}")
    shares_only = 0
    for t, dt, path, w, untimed in times:
        match = _nearest(latencies.get((w.svm, w.workload)) or latencies.get(("", w.workload)) or [], t, dt)
        if match is not None:
            w.latency_s, w.iops = match.latency_s, match.iops
        per_op = w.seconds_per_op()
        if per_op:
            b = out.breakdown(FROM_DETAIL, w.svm, w.workload)
            b.add(Interval(t, b.seen, w.latency_s, per_op, w.iops, untimed, path), path)
            out.judge(
                t,
                dt,
                QosWorkload(
                    cluster,
                    w.svm,
                    w.workload,
                    volume=b.volume,
                    wid=b.wid,
                    iops=w.iops,
                    latency_s=w.latency_s,
                    components=components(per_op),
                ),
            )
        elif w.shares():
            shares_only += 1
            b = out.breakdown(FROM_SHARES, w.svm, w.workload)
            b.add(Interval(t, b.seen, None, w.shares(), w.iops, untimed, path), path)
    for inp in inputs:
        if inp.objects & DETAIL_TABLES and not any(str(inp.path) in b.inputs for b in out.workloads.values()):
            out.note(
                str(inp.path), "no QoS workload spent time in the latency path between two of its samples"
            )
    if shares_only:
        out.note(
            str(inputs[0].path),
            f"{shares_only} workload interval(s) without a workload_volume (or workload) latency in the "
            "captures: their breakdown is shown as shares of the time in ONTAP, not seconds, and not judged",
        )


def _nearest(found: list[tuple[float, WorkloadTimes]], t: float, dt: float | None) -> WorkloadTimes | None:
    """The latency interval nearest ``t``, when within half an interval (at least a second)."""
    best = min(found, key=lambda x: abs(x[0] - t), default=None)
    if best is None or abs(best[0] - t) > max((dt or 0.0) / 2.0, 1.0):
        return None
    return best[1] if best[1].latency_s is not None else None
