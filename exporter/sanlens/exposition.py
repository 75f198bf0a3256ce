"""Prometheus exposition: the /metrics page, rendered from the latest snapshots.

Reading immutable snapshots (rather than client-library gauges mutated by
pollers) keeps each scrape consistent, and lets series vanish when their
subject does.
"""

from __future__ import annotations

import math
import platform
import threading
from collections.abc import Iterator

from prometheus_client import generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.core import (
    Metric as PromMetric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from sanlens import __version__
from sanlens.model import Metric, Snapshot
from sanlens.state import State


class _SelfCollector(Collector):
    """sanlens' own health families, rendered per scrape by the client library."""

    def __init__(self, state: State) -> None:
        self.state = state

    def collect(self) -> Iterator[PromMetric]:
        status = self.state.view()[1]
        info = InfoMetricFamily(
            "sanlens_build", "sanlens build information.", labels=["version", "python_version"]
        )
        info.add_metric([__version__, platform.python_version()], {})
        yield info
        up = GaugeMetricFamily(
            "sanlens_target_up", "1 if the last poll of the target succeeded.", labels=["target", "kind"]
        )
        dur = GaugeMetricFamily(
            "sanlens_poll_duration_seconds", "Wall time of the last poll.", labels=["target", "kind"]
        )
        last = GaugeMetricFamily(
            "sanlens_last_poll_timestamp_seconds",
            "Unix time of the last successful poll.",
            labels=["target", "kind"],
        )
        errs = CounterMetricFamily(
            "sanlens_poll_errors", "Failed polls by reason.", labels=["target", "kind", "reason"]
        )
        polls = CounterMetricFamily("sanlens_polls", "Polls attempted.", labels=["target", "kind"])
        interval = GaugeMetricFamily(
            "sanlens_poll_interval_seconds",
            "Configured poll interval of the target.",
            labels=["target", "kind"],
        )
        for st in status.values():
            lv = [st.name, st.kind]
            up.add_metric(lv, 1.0 if st.up else 0.0)
            polls.add_metric(lv, float(st.polls))
            if st.interval is not None:
                interval.add_metric(lv, st.interval)
            if st.last_duration is not None:
                dur.add_metric(lv, st.last_duration)
            if st.last_success is not None:
                last.add_metric(lv, st.last_success)
            for reason, n in sorted(st.errors.items()):
                errs.add_metric([*lv, reason], float(n))
        yield from (up, dur, last, errs, polls, interval)


# ------------------------------------------------------------------ fast text path
def escape_label_value(v: str) -> str:
    """A label value as text format 0.0.4 quotes it."""
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(v: float) -> str:
    """A sample value as text format 0.0.4 writes it (``1.0``, ``NaN``, ``+Inf``), as the client library does."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def render_samples(m: Metric) -> str:
    """The sample lines of one family in text format 0.0.4 (no HELP/TYPE)."""
    names = m.label_names
    esc: dict[str, str] = {}
    lines = []
    for values, v in m.samples:
        parts = []
        for k, x in zip(names, values, strict=True):
            e = esc.get(x)
            if e is None:
                e = esc[x] = escape_label_value(x)
            parts.append(f'{k}="{e}"')
        lines.append(
            f"{m.name}{{{','.join(parts)}}} {format_value(v)}\n" if parts else f"{m.name} {format_value(v)}\n"
        )
    return "".join(lines)


def _header(m: Metric) -> str:
    help_ = m.help.replace("\\", "\\\\").replace("\n", "\\n")
    kind = "gauge" if m.type == "info" else m.type
    return f"# HELP {m.name} {help_}\n# TYPE {m.name} {kind}\n"


class Exposition:
    """/metrics bytes, with each snapshot's sample text rendered once and reused.

    Snapshots are immutable, so their text is cached until the next poll replaces
    them; only the small engine and self-monitoring families are rendered per scrape.
    That keeps a scrape of 100k+ series within a second.
    """

    def __init__(self, state: State) -> None:
        self.state = state
        self._cache: dict[str, tuple[Snapshot, dict[str, tuple[Metric, str]]]] = {}
        self._lock = threading.Lock()
        self._self = CollectorRegistry(auto_describe=False)
        self._self.register(_SelfCollector(state))

    def _snapshot_text(self, name: str, snap: Snapshot) -> dict[str, tuple[Metric, str]]:
        with self._lock:
            hit = self._cache.get(name)
            if hit is not None and hit[0] is snap:
                return hit[1]
        text = {m.name: (m, render_samples(m)) for m in snap.metrics}
        with self._lock:
            self._cache[name] = (snap, text)
            for gone in set(self._cache) - set(self.state.view()[0]):
                del self._cache[gone]
        return text

    def render(self) -> bytes:
        snaps, _ = self.state.view()
        families: dict[str, tuple[Metric, list[str]]] = {}
        for name, snap in snaps.items():
            for fam, (m, text) in self._snapshot_text(name, snap).items():
                families.setdefault(fam, (m, []))[1].append(text)
        if self.state.engine is not None:
            for m in self.state.engine.metrics():
                families.setdefault(m.name, (m, []))[1].append(render_samples(m))
        out = [_header(m) + "".join(parts) for m, parts in families.values()]
        return "".join(out).encode() + generate_latest(self._self)
