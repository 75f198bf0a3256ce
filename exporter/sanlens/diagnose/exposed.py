"""What the diagnosis engine exposes: the /diagnoses findings and the diagnosis metric families.

The engine judges; this turns its tracks, attribution, thresholds and background-operation
progress into the finding dicts and the series ``metrics`` returns, built once per evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sanlens.diagnose.attribution import Attribution
from sanlens.diagnose.base import LABELS
from sanlens.diagnose.registry import REGISTRY, SEVERITY
from sanlens.diagnose.track import Track
from sanlens.diagnose.waterfall import Waterfall
from sanlens.model import Metric, MetricBuilder, iso_utc

DIAG_LABELS = ("diagnosis", "subject", *LABELS)
OP_LABELS = ("cluster", "aggregate", "svm", "volume", "raid_group", "operation")
# Where a finding's subject is now (not its identity: a volume move changes it): an info series.
LOCATION_LABELS = ("diagnosis", "subject", "node", "aggregate")
COMPONENT_LABELS = ("subject", "cluster", "svm", "volume", "lun", "host", "disk", "component")


def finding(t: Track, att: Attribution, wf: Waterfall | None = None) -> dict[str, Any]:
    """A non-ok subject in the /diagnoses JSON shape, with its incident, causes and waterfall."""
    spec = REGISTRY[t.id]
    incident, role = att.incidents.get((t.id, t.key), ("", ""))
    return {
        "id": t.id,
        "title": spec.title,
        "subject": {k: v for k, v in t.labels.items() if v},
        "state": t.state,
        "severity": SEVERITY[t.state],
        "score": round(t.score, 3),
        "since": iso_utc(t.since),
        "evidence": {k: round(v, 9) for k, v in sorted(t.evidence.items())},
        "location": dict(t.location),  # where the subject is now: node, aggregate (not identity)
        "recommendation": t.recommendation or spec.fix,
        "runbook": spec.runbook,
        # the root cause it belongs to, and for a symptom the causes on its I/O path (primary first)
        "incident": incident,
        "role": role,
        "causes": [{"id": cid, "subject": key} for cid, key in att.causes.get((t.id, t.key), [])],
        # where the subject's latency goes, from the host's queue to ONTAP's components
        "waterfall": wf.as_dict() if wf is not None else None,
    }


def add_attribution(b: MetricBuilder, active: list[Track], att: Attribution) -> None:
    """The incident of every non-ok finding and the causes of every explained symptom.

    Relation series, not labels on ``sanlens_diagnosis_state``: a symptom's cause comes and
    goes while the symptom lasts, and a label change would restart its alert's ``for:``."""
    for t in active:
        inc = att.incidents.get((t.id, t.key))
        if inc is None:
            continue
        b.add(
            "sanlens_diagnosis_incident",
            "gauge",
            "The incident (root cause) a non-ok finding belongs to; role cause or symptom.",
            {"diagnosis": t.id, "subject": t.key, "incident": inc[0], "role": inc[1]},
            1,
        )
    for t in active:
        for cause_id, cause_key in att.causes.get((t.id, t.key), []):
            b.add(
                "sanlens_diagnosis_cause",
                "gauge",
                "A cause finding on the I/O path of a symptom finding (1 while both are seen).",
                {
                    "diagnosis": t.id,
                    "subject": t.key,
                    "cause_diagnosis": cause_id,
                    "cause_subject": cause_key,
                },
                1,
            )


def build_metrics(
    counts: Mapping[str, list[int]],
    active: list[Track],
    att: Attribution,
    th: Mapping[str, Mapping[str, float]],
    windows: Mapping[str, tuple[float, float]],
    progress: Iterable[tuple[dict[str, str], float | None, float | None]],
    waterfalls: Iterable[tuple[str, Mapping[str, str], Waterfall]] = (),
) -> tuple[Metric, ...]:
    """Series for non-ok subjects only, plus a per-diagnosis count of subjects by state.

    A healthy subject costs no series, so cardinality follows problems, not the estate;
    an alert's ``for:`` still holds because a subject's series exist for as long as its
    state is non-ok."""
    b = MetricBuilder()
    for did, per_state in counts.items():
        for state, n in enumerate(per_state):
            b.add(
                "sanlens_diagnosis_subjects",
                "gauge",
                "Subjects the diagnosis evaluated, by state (ok, warning, critical).",
                {"diagnosis": did, "state": SEVERITY[state]},
                n,
            )
    for t in active:
        lv = {"diagnosis": t.id, "subject": t.key, **{k: t.labels.get(k, "") for k in LABELS}}
        b.add(
            "sanlens_diagnosis_state",
            "gauge",
            "Diagnosis state of the subject: 0 ok, 1 warning, 2 critical.",
            lv,
            t.state,
        )
        b.add("sanlens_diagnosis_score", "gauge", "How strongly the signature matches, 0..1.", lv, t.score)
        if t.state > 0 and t.since is not None:
            b.add(
                "sanlens_diagnosis_since_timestamp_seconds",
                "gauge",
                "Unix time the current non-ok state began.",
                lv,
                t.since,
            )
        for name, value in sorted(t.evidence.items()):
            b.add(
                "sanlens_diagnosis_evidence",
                "gauge",
                "Evidence behind a diagnosis; the unit is in the evidence name.",
                {**lv, "evidence": name},
                value,
            )
        if t.location:
            b.add(
                "sanlens_diagnosis_location_info",
                "info",
                "Where a non-ok finding's subject is now (a LUN's node); not part of its identity, "
                "so a volume move does not restart an alert.",
                {
                    "diagnosis": t.id,
                    "subject": t.key,
                    **{k: t.location.get(k, "") for k in LOCATION_LABELS[2:]},
                },
                1,
            )
    add_attribution(b, active, att)
    for key, subject, wf in waterfalls:
        base = {"subject": key, **{k: subject.get(k, "") for k in COMPONENT_LABELS[1:-1]}}
        for part, secs in wf.parts.items():
            b.add(
                "sanlens_latency_component_seconds",
                "gauge",
                "Where a subject's latency goes per operation: host queue, transport, then ONTAP's "
                "components; only for subjects that are not ok or among the slowest workloads.",
                {**base, "component": part},
                secs,
            )
    for did, values in th.items():
        sustain, exit_ = windows[did]
        for name, value in [
            *sorted(values.items()),
            ("sustain_seconds", sustain),
            ("exit_seconds", exit_),
        ]:
            b.add(
                "sanlens_diagnosis_threshold",
                "gauge",
                "Configured diagnosis thresholds and (scaled) windows.",
                {"diagnosis": did, "threshold": name},
                value,
            )
    for lv, percent, eta in progress:
        labels = {k: lv.get(k, "") for k in OP_LABELS}
        if percent is not None:
            b.add(
                "sanlens_background_operation_done_ratio",
                "gauge",
                "Progress of an active RAID operation or volume move, 0..1.",
                labels,
                percent / 100.0,
            )
        if eta is not None:
            b.add(
                "sanlens_background_operation_eta_seconds",
                "gauge",
                "Time left for an active background operation, from its observed progress rate.",
                labels,
                eta,
            )
    return b.build()
