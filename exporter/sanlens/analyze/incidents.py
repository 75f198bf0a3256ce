"""Findings grouped as ``serve`` groups them: one incident per root cause, its symptoms under it.

Each finding carries ``incident`` (the cause's diagnosis and scope), ``role`` (``cause`` or
``symptom``) and ``causes``. The reports show an incident as its cause first, then the symptoms
it explains; a diagnosis that fired on many subjects of one incident (every disk of one
over-subscribed host) is one group with a table of its subjects, worst first. Incidents come
worst first: severity, then those with a cause, then the most subjects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sanlens.analyze.evidence_format import natural_key
from sanlens.diagnose.registry import REGISTRY

MAX_KEY_EVIDENCE = 3  # evidence columns of a subjects table


def who(d: Mapping[str, Any]) -> str:
    subj = d.get("subject") or {}
    return "/".join(str(v) for v in subj.values() if v) if isinstance(subj, dict) else str(subj)


def _worst_first(d: Mapping[str, Any]) -> tuple[Any, ...]:
    return (-int(d.get("state") or 0), -float(d.get("score") or 0.0), natural_key(who(d)))


@dataclass
class Group:
    """One diagnosis within an incident, over one or more subjects (worst first)."""

    id: str
    role: str
    findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def state(self) -> int:
        return max((int(d.get("state") or 0) for d in self.findings), default=0)

    @property
    def severity(self) -> str:
        return {2: "critical", 1: "warning"}.get(self.state, "ok")

    @property
    def worst(self) -> dict[str, Any]:
        return self.findings[0]

    @property
    def title(self) -> str:
        return str(self.worst.get("title") or self.id)

    def key_evidence(self) -> list[str]:
        """The evidence keys a subjects table shows: those an alert quotes, else the first declared."""
        present = {k for d in self.findings for k in d.get("evidence") or {}}
        spec = REGISTRY.get(self.id)
        if spec is None:
            return sorted(present)[:MAX_KEY_EVIDENCE]
        quoted = [e.name for e in spec.quoted() if e.name in present]
        rest = [e.name for e in spec.evidence if e.name in present and e.name not in quoted]
        return (quoted + rest)[:MAX_KEY_EVIDENCE]


@dataclass
class Incident:
    key: str
    causes: list[Group] = field(default_factory=list)
    symptoms: list[Group] = field(default_factory=list)

    @property
    def groups(self) -> list[Group]:
        return self.causes + self.symptoms

    @property
    def lead(self) -> Group:
        return (self.causes or self.symptoms)[0]

    @property
    def state(self) -> int:
        return max(g.state for g in self.groups)

    @property
    def severity(self) -> str:
        return {2: "critical", 1: "warning"}.get(self.state, "ok")

    @property
    def findings(self) -> list[dict[str, Any]]:
        return [d for g in self.groups for d in g.findings]


def incidents(diagnoses: Iterable[Mapping[str, Any]]) -> list[Incident]:
    """The findings grouped by incident; a finding without one is an incident of its own."""
    by: dict[str, Incident] = {}
    for d in diagnoses:
        did = str(d.get("id"))
        key = str(d.get("incident") or f"{did}:{who(d)}")
        role = "symptom" if d.get("role") == "symptom" else "cause"
        inc = by.setdefault(key, Incident(key))
        groups = inc.causes if role == "cause" else inc.symptoms
        group = next((g for g in groups if g.id == did), None)
        if group is None:
            group = Group(did, role)
            groups.append(group)
        group.findings.append(dict(d))
    for inc in by.values():
        for g in inc.groups:
            g.findings.sort(key=_worst_first)
        inc.causes.sort(key=lambda g: (-g.state, g.id))
        inc.symptoms.sort(key=lambda g: (-g.state, g.id))
    return sorted(
        by.values(),
        key=lambda i: (-i.state, 0 if i.causes else 1, -len(i.findings), natural_key(i.key)),
    )


def subjects(findings: Sequence[Mapping[str, Any]]) -> int:
    return len({who(d) for d in findings})
