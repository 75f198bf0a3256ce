"""Which causes on a symptom's I/O path explain it, and the incident every finding belongs to.

One root cause slows everything behind it: a saturated Kahuna domain makes every LUN of its
node breach its latency objective, a rebuild every volume of its aggregate. Paging each of
those is the noise on-call learns to ignore, so after every evaluation the engine asks this
module, for each symptom finding (``DiagnosisSpec.symptom``, i.e. ``latency_slo``), which cause
findings sit on its I/O path:

    host disk -> its LUN -> the LUN's volume -> the volume's aggregate -> the node
    (and that node's FC target ports)

A cause counts from the moment its signature is seen (its level is non-zero), before its
sustain window has passed: the objective's window is shorter than most causes', and a symptom
that outran its cause must still land in the cause's incident, not open one of its own.

Every non-ok finding gets one incident: a cause's is its diagnosis and the labels its spec
groups by (``incident_by``: every disk of one over-subscribed host is one incident); an
explained symptom takes the incident of its primary cause (the worst, paging first, nearest
on the path); a symptom nothing explains is its own incident, and pages on its own.

``by_incident`` and ``incident_order`` lay the /diagnoses findings out by incident: the worst
incident first, each with its causes first and the symptoms they explain under them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sanlens.diagnose.base import Context
from sanlens.diagnose.spec import DiagnosisSpec

Key = tuple[str, str]  # (diagnosis, subject)

# Where a cause sits on a path, nearest the host first: the order breaks ties between causes.
LAYERS = ("host_disk", "lun", "volume", "aggregate", "node", "fc_port")
# The labels that identify a subject at each layer, as a path is resolved.
ANCHORS: dict[str, tuple[str, ...]] = {
    "host_disk": ("host", "disk"),
    "lun": ("cluster", "svm", "lun"),
    "volume": ("cluster", "svm", "volume"),
    "aggregate": ("cluster", "aggregate"),
    "node": ("cluster", "node"),
    "fc_port": ("cluster", "node"),  # a target port serves every LUN its node answers for
}
ROLE_CAUSE = "cause"
ROLE_SYMPTOM = "symptom"


@dataclass(frozen=True, slots=True)
class Seen:
    """A finding the attribution considers: active (state > 0) or with its signature seen now."""

    id: str
    key: str
    labels: Mapping[str, str]
    state: int  # the finding's state; 0 while its sustain window runs
    level: int  # the level the thresholds give now
    score: float


@dataclass
class Attribution:
    causes: dict[Key, list[Key]] = field(default_factory=dict)  # symptom -> causes, primary first
    incidents: dict[Key, tuple[str, str]] = field(default_factory=dict)  # finding -> (incident, role)

    def affected(self, incident: str) -> list[Key]:
        """Every finding of an incident: its causes and the symptoms they explain."""
        return sorted(k for k, (inc, _) in self.incidents.items() if inc == incident)


def layer(labels: Mapping[str, str]) -> str:
    """The layer a cause finding's subject sits at, from the labels it carries."""
    if labels.get("port"):
        return "fc_port"
    if labels.get("host") and labels.get("disk"):
        return "host_disk"
    for name in ("lun", "volume", "aggregate", "node"):
        if labels.get(name):
            return name
    return ""


def incident(spec: DiagnosisSpec, key: str, labels: Mapping[str, str]) -> str:
    """``<diagnosis>:<what it is about>``: the grouping key every alert of one root cause shares."""
    if spec.incident_by:
        scope = "/".join(labels.get(name, "") for name in spec.incident_by if labels.get(name, ""))
        if scope:
            return f"{spec.id}:{scope}"
    return f"{spec.id}:{key}"


def resolve_path(labels: Mapping[str, str], ctx: Context) -> dict[str, str]:
    """A symptom's labels completed with its LUN's node and its volume's aggregate and node."""
    path = {
        k: labels.get(k, "") for k in ("cluster", "svm", "volume", "lun", "aggregate", "node", "host", "disk")
    }
    cluster, svm = path["cluster"], path["svm"]
    if cluster and path["lun"]:
        lun = ctx.lun(cluster, svm, path["lun"])
        if lun is not None:
            path["volume"] = path["volume"] or lun.volume
            path["node"] = path["node"] or lun.node
    if cluster and path["volume"]:
        vol = ctx.volume(cluster, svm, path["volume"])
        if vol is not None:
            path["aggregate"] = path["aggregate"] or vol.aggregate
            path["node"] = path["node"] or vol.node
    return path


def attribute(found: Iterable[Seen], specs: Mapping[str, DiagnosisSpec], ctx: Context) -> Attribution:
    """Causes per symptom and the incident of every active finding (see the module docstring)."""
    items = list(found)
    out = Attribution()
    by_anchor: dict[tuple[str, ...], list[Seen]] = {}
    for c in items:
        if specs[c.id].symptom or (c.level <= 0 and c.state <= 0):
            continue
        lay = layer(c.labels)
        values = tuple(c.labels.get(n, "") for n in ANCHORS.get(lay, ()))
        if values and all(values):
            by_anchor.setdefault((lay, *values), []).append(c)
    for f in items:
        spec = specs[f.id]
        key = (f.id, f.key)
        if not spec.symptom:
            if f.state > 0:
                out.incidents[key] = (incident(spec, f.key, f.labels), ROLE_CAUSE)
            continue
        if f.state <= 0:
            continue
        path = resolve_path(f.labels, ctx)
        found_causes: list[Seen] = []
        for lay in LAYERS:
            anchor = (lay, *(path.get(n, "") for n in ANCHORS[lay]))
            found_causes += by_anchor.get(anchor, [])
        if not found_causes:
            out.incidents[key] = (incident(spec, f.key, f.labels), ROLE_CAUSE)
            continue

        def rank(c: Seen) -> tuple[int, int, int, float, str, str]:
            pages = 1 if specs[c.id].pages else 0
            return (-max(c.state, 0), -pages, LAYERS.index(layer(c.labels)), -c.score, c.id, c.key)

        found_causes.sort(key=rank)
        out.causes[key] = [(c.id, c.key) for c in found_causes]
        primary = found_causes[0]
        out.incidents[key] = (incident(specs[primary.id], primary.key, primary.labels), ROLE_SYMPTOM)
    return out


def by_incident(findings: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """/diagnoses findings (worst first) as incidents, the worst first (by its worst finding).

    Each incident is ``{"incident", "state", "severity", "causes", "symptoms"}``: its cause findings
    (``role`` cause), then the symptoms they explain, each list in the order the findings came. A
    symptom whose cause is still inside its sustain window has no cause finding yet: its incident's
    ``causes`` is empty. A finding with no incident is an incident of its own."""
    groups: dict[str, dict[str, Any]] = {}
    rank: dict[str, tuple[int, float, int]] = {}
    for i, f in enumerate(findings):
        name = str(f.get("incident") or "")
        key = name or f"\0{i}"  # no incident: a group of its own, never merged with another
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"incident": name, "state": 0, "severity": "", "causes": [], "symptoms": []}
        g["symptoms" if f.get("role") == ROLE_SYMPTOM else "causes"].append(f)
        state, score = int(f.get("state") or 0), float(f.get("score") or 0.0)
        if key not in rank or state > g["state"]:
            g["state"], g["severity"] = state, f.get("severity", "")
        worst, best, first = rank.get(key, (state, score, i))
        rank[key] = (max(worst, state), max(best, score), first)
    order = sorted(groups, key=lambda k: (-rank[k][0], -rank[k][1], rank[k][2]))
    return [groups[k] for k in order]


def incident_order(findings: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The findings of ``by_incident`` as one flat list: incident by incident, causes first."""
    return [f for g in by_incident(findings) for f in (*g["causes"], *g["symptoms"])]
