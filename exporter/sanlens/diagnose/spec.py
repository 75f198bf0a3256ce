"""What a diagnosis declares beside its ``evaluate``: the spec every consumer reads.

The engine, ``/diagnoses``, config validation, the alert rules, the dashboards and
the runbooks all key off a ``DiagnosisSpec``, so a diagnosis is one module: its
``SPEC`` and its ``evaluate``. Thresholds carry their unit, source, validation
range and direction (for hysteresis); evidence carries its unit and how an alert
quotes it, so a renamed evidence key is caught by the tests, not by a pager.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Direction = Literal["above", "below", "none"]
# How an alert renders an evidence value (Prometheus humanize functions, see rules/build.py).
Format = Literal[
    "duration", "percent", "number", "iops", "multiple"
]  # multiple: a ratio of like things, 296x

# Hysteresis: a finding leaves only once its values are past 0.9 x the threshold.
HYSTERESIS = 0.9
SEVERITY = {0: "ok", 1: "warning", 2: "critical"}

# Sources quoted by more than one diagnosis.
SRC_LUN_STUDY = "NetApp LUN/volume count study: per-LUN and per-volume IOPS ceilings before/after ONTAP 9.9.1"
SRC_WAFFINITY = "ONTAP Waffinity/Kahuna domain analysis with sysstat -M (Kahuna is serial: one core at most)"


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
class Evidence:
    """One evidence value ``evaluate`` may return, exposed as ``sanlens_diagnosis_evidence{evidence=name}``.

    ``quote`` is the text an alert description puts before the value (empty: not
    quoted), ``fmt`` how it renders the value.
    """

    name: str  # the unit is in the name (_seconds, _ratio, _iops, ...) or it is a count
    unit: str
    help: str
    quote: str = ""
    fmt: Format = "number"


@dataclass(frozen=True, slots=True)
class Dashboard:
    """The Grafana dashboard that shows a diagnosis, and the subject labels passed as its variables."""

    uid: str
    variables: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Reads:
    """What a diagnosis reads, declared once: ``/diagnoses/inputs`` (which missing input starves
    which diagnosis) and ``sanlens analyze`` (which timelines set its windows) derive from it."""

    # REST counter tables whose absence (or a missing counter) starves its judgement or its evidence
    tables: tuple[str, ...] = ()
    # REST collections whose refusal starves it
    endpoints: tuple[str, ...] = ()
    # the timelines ``sanlens analyze`` judges it from: "host" (a host's disk counters), counter
    # tables, "sysstat" (``sysstat -M``), "processor"; empty: every input
    offline: tuple[str, ...] = ()


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
    evidence: tuple[Evidence, ...]
    dashboard: Dashboard
    # (lower, upper) threshold pairs a configuration must keep in order, e.g. warning <= critical
    ordered: tuple[tuple[str, str], ...] = ()
    # Severity policy: whether the critical state pages (someone must act now). A diagnosis that
    # does not page alerts as a warning only (a ticket), whatever its state.
    pages: bool = False
    # A symptom is explained by the cause findings on its I/O path (sanlens.diagnose.attribution)
    # and joins their incident; a cause is a finding in its own right.
    symptom: bool = False
    # The labels that make findings of this diagnosis one incident (one root cause), e.g. every
    # disk of a host behind one over-subscribed front end; empty: each subject is its own incident.
    incident_by: tuple[str, ...] = ()
    reads: Reads = Reads()

    def __post_init__(self) -> None:
        names = [t.name for t in self.thresholds]
        evidence = [e.name for e in self.evidence]
        for what, seq in (("threshold", names), ("evidence", evidence)):
            if len(set(seq)) != len(seq):
                raise ValueError(f"{self.id}: duplicate {what} names in {seq}")
        for pair in self.ordered:
            if not set(pair) <= set(names):
                raise ValueError(f"{self.id}: ordered pair {pair} names an unknown threshold")
        if not set(self.severity) <= {1, 2}:
            raise ValueError(f"{self.id}: severity states are 1 (warning) and 2 (critical)")
        if self.pages and 2 not in self.severity:
            raise ValueError(f"{self.id}: a paging diagnosis needs a critical state")

    @property
    def alert_severities(self) -> dict[int, str]:
        """Alert severity by the state it fires from: critical only where the diagnosis pages."""
        if self.pages:
            return {s: SEVERITY[s] for s in sorted(self.severity)}
        return {min(self.severity): "warning"}

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

    def evidence_names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.evidence)

    def quoted(self) -> tuple[Evidence, ...]:
        """The evidence an alert description quotes, in the order it quotes them."""
        return tuple(e for e in self.evidence if e.quote)


def alert_name(diagnosis_id: str) -> str:
    """``san_oversubscription`` -> ``SanlensSanOversubscription``."""
    return "Sanlens" + "".join(p.capitalize() for p in diagnosis_id.split("_"))
