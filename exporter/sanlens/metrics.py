"""Prometheus exposition: a custom collector over the latest snapshots.

A custom collector (rather than client-library gauges mutated by pollers) keeps
each scrape a consistent read of immutable snapshots, and lets series vanish
when their subject does.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Iterator

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
from sanlens.model import Metric
from sanlens.state import State


def _family(m: Metric) -> PromMetric:
    if m.type == "counter":
        base = m.name[:-6] if m.name.endswith("_total") else m.name
        fam: PromMetric = CounterMetricFamily(base, m.help, labels=m.label_names)
    elif m.type == "info":
        base = m.name[:-5] if m.name.endswith("_info") else m.name
        fam = GaugeMetricFamily(base + "_info", m.help, labels=m.label_names)
    else:
        fam = GaugeMetricFamily(m.name, m.help, labels=m.label_names)
    for values, v in m.samples:
        fam.add_metric(list(values), v)  # type: ignore[attr-defined]
    return fam


def merge(metrics: Iterable[Metric]) -> list[Metric]:
    """Merge families of the same name from several targets (same type and labels by construction)."""
    out: dict[str, Metric] = {}
    for m in metrics:
        prev = out.get(m.name)
        if prev is None:
            out[m.name] = m
        elif prev.label_names == m.label_names:
            out[m.name] = Metric(m.name, m.type, m.help, m.label_names, prev.samples + m.samples)
        else:
            raise ValueError(f"metric {m.name} has inconsistent labels across targets")
    return list(out.values())


class SanlensCollector(Collector):
    def __init__(self, state: State) -> None:
        self.state = state

    def collect(self) -> Iterator[PromMetric]:
        snaps, status = self.state.view()
        all_metrics: list[Metric] = []
        for snap in snaps.values():
            all_metrics.extend(snap.metrics)
        if self.state.engine is not None:
            all_metrics.extend(self.state.engine.metrics())
        for m in merge(all_metrics):
            yield _family(m)
        yield from self._self_metrics(status)

    def _self_metrics(self, status: dict) -> Iterator[PromMetric]:
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
            if getattr(st, "interval", None) is not None:
                interval.add_metric(lv, float(st.interval))
            if st.last_duration is not None:
                dur.add_metric(lv, st.last_duration)
            if st.last_success is not None:
                last.add_metric(lv, st.last_success)
            for reason, n in sorted(st.errors.items()):
                errs.add_metric([*lv, reason], float(n))
        yield from (up, dur, last, errs, polls, interval)


def make_registry(state: State) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SanlensCollector(state))
    return reg
