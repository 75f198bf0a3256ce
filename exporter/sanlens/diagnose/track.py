"""The state of one (diagnosis, subject) between evaluations, and a part's reusable summary.

The engine keeps a ``Track`` per subject that is not ok or has a level pending: its sustain and
exit windows, its score, evidence and recommendation. ``Judged`` remembers a diagnosis part's last
observations so an unchanged part's ok subjects cost a count, not a walk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from sanlens.diagnose.base import KEPT_OUT, Observation, compact_numbers
from sanlens.diagnose.numeric import num


def source_of(labels: Mapping[str, str]) -> str:
    """The target a subject's data comes from: its host (host disks), else its cluster."""
    return labels.get("host") or labels.get("cluster") or ""


@dataclass
class Track:
    """The state machine of one (diagnosis, subject), with a bounded history of its levels."""

    id: str
    key: str
    labels: Mapping[str, str]
    state: int = 0
    since: float | None = None
    up_since: dict[int, float | None] = field(default_factory=lambda: {1: None, 2: None})
    down_since: float | None = None
    score: float = 0.0
    evidence: dict[str, float] = field(default_factory=dict)
    recommendation: str = ""
    level: int = 0  # the level the thresholds gave at the last judged evaluation
    last_seen: float = -math.inf  # engine time the subject was last in an evaluation
    location: Mapping[str, str] = field(default_factory=dict)  # node, aggregate now (not identity)

    @property
    def idle(self) -> bool:
        """Ok with nothing pending: the track carries no memory and need not be kept."""
        return self.state == 0 and self.up_since[1] is None and self.up_since[2] is None

    def step(self, now: float, raw: int | None, relaxed: int | None, sustain: float, exit_: float) -> None:
        if raw is None:  # no data to judge: keep the state as it is
            return
        self.level = raw
        for lvl in (1, 2):
            if raw >= lvl:
                start = self.up_since[lvl]
                self.up_since[lvl] = now if start is None else start
            else:
                self.up_since[lvl] = None
        for lvl in (2, 1):
            start = self.up_since[lvl]
            if lvl > self.state and start is not None and now - start >= sustain:
                if self.state == 0:
                    self.since = self.up_since[1] if self.up_since[1] is not None else start
                self.state, self.down_since = lvl, None
                return
        if self.state == 0:
            return
        keep = max(raw, relaxed if relaxed is not None else raw)
        if keep >= self.state:
            self.down_since = None
            return
        if self.down_since is None:
            self.down_since = now
        if now - self.down_since >= exit_:
            self.state, self.down_since = keep, None
            if keep == 0:
                self.since = None
                self.recommendation = ""

    def observe(self, o: Observation) -> None:
        self.labels = o.labels
        if o.evidence is KEPT_OUT:  # an ok observation kept without its evidence: the last stands
            return
        self.score = min(max(float(o.score), 0.0), 1.0) if math.isfinite(o.score) else 0.0
        self.evidence = {k: v for k, raw in o.evidence.items() if (v := num(raw)) is not None}
        if o.recommendation:
            self.recommendation = compact_numbers(o.recommendation)


@dataclass(slots=True)
class Judged:
    """A diagnosis part's observations and, once they are read a second time unchanged, their
    summary: each subject's first observation, in order."""

    part: list[Observation]
    summarized: bool = False
    first: dict[str, Observation] = field(default_factory=dict)
    template: dict[str, int] = field(default_factory=dict)  # every subject in order: ok unless tracked
    quiet: frozenset[str] = frozenset()  # subjects judged ok (level 0)
    loud: list[Observation] = field(default_factory=list)  # the others (not ok, or unjudgeable)

    def summarize(self) -> None:
        first: dict[str, Observation] = {}
        for o in self.part:
            first.setdefault(o.key, o)
        self.first = first
        self.template = dict.fromkeys(first, 0)
        self.quiet = frozenset(k for k, o in first.items() if o.level == 0)
        self.loud = [o for o in first.values() if o.level != 0]
        self.summarized = True
