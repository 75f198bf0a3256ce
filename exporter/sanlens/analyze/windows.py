"""Sustain and exit windows for an offline run, from the real time each diagnosis has data for.

Live, a finding must hold for its sustain window (5-10 min). A capture may be
shorter than that, so offline each diagnosis gets ``min(its window, half the
span of the shortest input that feeds it)``, but never less than one real
interval of that data: a finding always needs two intervals, and a single poll
never "sustains" anything. Windows are per diagnosis, from the inputs that feed
it, so adding a long LUN capture cannot stretch the window of a CPU-domain
diagnosis judged on a short ``sysstat -M``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sanlens.diagnose.registry import REGISTRY

# Any positive window makes a finding wait for a second interval (a single one spans 0 s).
MIN_WINDOW_S = 0.001
HOST = "host"  # the source kind of PerfMon logs; ONTAP sources are named by counter table
# diagnosis -> the source kinds its subjects are judged from (each spec's ``reads.offline``)
FEEDS: dict[str, frozenset[str]] = {
    did: frozenset(spec.reads.offline) for did, spec in REGISTRY.items() if spec.reads.offline
}


@dataclass(frozen=True, slots=True)
class Source:
    """One timeline of data: a PerfMon host, or one ONTAP counter table."""

    kind: str
    start: float
    end: float
    step: float | None  # seconds between two judged intervals

    @property
    def span(self) -> float:
        return max(self.end - self.start, 0.0)


def feeds(diagnosis: str) -> frozenset[str] | None:
    """Source kinds a diagnosis reads (None: unknown, every source)."""
    return FEEDS.get(diagnosis)


def offline_windows(sources: list[Source]) -> dict[str, tuple[float, float]]:
    """(sustain, exit) seconds per diagnosis for this set of inputs."""
    out: dict[str, tuple[float, float]] = {}
    for did, spec in REGISTRY.items():
        kinds = feeds(did)
        fed = [s for s in sources if kinds is None or s.kind in kinds]
        if not fed:
            out[did] = (spec.sustain_s, spec.exit_s)
            continue
        half = min(s.span for s in fed) / 2.0
        steps = [s.step for s in fed if s.step]
        floor = min(steps) if steps else 0.0
        fit = max(half, floor, MIN_WINDOW_S)
        out[did] = (min(spec.sustain_s, fit), min(spec.exit_s, fit))
    return out
