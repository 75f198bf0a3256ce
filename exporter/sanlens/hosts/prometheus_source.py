"""A host read from the windows_exporter or node_exporter series a Prometheus already scrapes.

A site whose Prometheus scrapes its hosts should not have them scraped twice. This source asks
the query API for the same families the exporter sources read, with one instant query of a
range selector per poll: a range selector returns each sample with the time it was scraped,
which a plain instant query does not, and the rates must divide by the scrapes' interval, not
by ours (a poll that falls between two scrapes would read zero, the next one double). The
counters go through the same parsers, catalogue widths and cooking as a direct scrape, so a
32-bit Windows numerator that wrapped is unwrapped here too, which Prometheus's ``rate()``,
taking the drop for a reset, would not do.

Its ``/metrics`` part is the host-to-LUN join only (``sanlens_host_disk_info`` and the other
info families): the counters are already in Prometheus.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from urllib.parse import urlencode

from sanlens.config import HostTarget
from sanlens.errors import SourceError
from sanlens.hosts import exporter_scrape, node_exporter
from sanlens.hosts.catalogue import NODE_EXPORTER
from sanlens.hosts.cooking import DiskReading
from sanlens.hosts.exporter_scrape import Sample, ScrapeParseError
from sanlens.hosts.sources import HttpScrapeSource
from sanlens.model import Snapshot
from sanlens.urls import safe_url

MIN_WINDOW_S = 60.0  # the range read back: at least one scrape at any common scrape interval
# what sanlens adds to the exporter's series: which LUN each disk is, and its queue and path settings
JOIN_FAMILIES = frozenset(
    f"sanlens_host_disk_{f}"
    for f in (
        "info",
        "multipath_info",
        "path_info",
        "queue_depth",
        "paths",
        "optimized_paths",
        "configured_paths",
    )
)


def query_of(families: Sequence[str], selector: str, window_s: float) -> str:
    """One instant query of every family of one host over the last ``window_s`` seconds."""
    return f'{{__name__=~"{"|".join(families)}", {selector}}}[{math.ceil(window_s)}s]'


def latest(result: list[dict], tolerance_s: float) -> tuple[float, list[Sample]]:
    """(scrape time, samples) of the newest scrape in a matrix: each series' last sample, kept when it
    came from that scrape (a series that vanished keeps an old sample inside the window: not current)."""
    last: list[tuple[float, str, dict[str, str], str]] = []
    for r in result:
        values = r.get("values") or []
        if not values:
            continue
        labels = dict(r.get("metric") or {})
        name = labels.pop("__name__", "")
        try:
            ts, raw = float(values[-1][0]), values[-1][1]
        except (IndexError, TypeError, ValueError):
            continue
        last.append((ts, name, labels, raw))
    if not last:
        return 0.0, []
    newest = max(t for t, *_ in last)
    out: list[Sample] = []
    for ts, name, labels, raw in last:
        if ts < newest - tolerance_s:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        out.append((name, labels, value))
    return newest, out


class PrometheusHostSource(HttpScrapeSource):
    """``source: prometheus``: one host's exporter series from a Prometheus-compatible query API."""

    kind = "prometheus"

    def __init__(self, target: HostTarget) -> None:
        assert target.url and target.selector and target.exporter, "config validation guarantees them"
        self.linux = target.exporter == "node_exporter"
        if self.linux:
            self.moduli = NODE_EXPORTER.moduli()
        families = node_exporter.FAMILIES if self.linux else exporter_scrape.FAMILIES
        super().__init__(target, target.url.rstrip("/") + "/api/v1/query")
        self.window = max(2.0 * self.interval, MIN_WINDOW_S)
        self.query = query_of(families, target.selector, self.window)
        self.queries = 0  # instant queries sent, for the query budget
        self.answered_bytes = 0  # and the bytes the API answered them with
        self._scraped_at: float | None = None  # Prometheus's time of the scrape last cooked
        self._last: Snapshot | None = None

    def samples(self) -> tuple[float, list[Sample]]:
        """(scrape time, samples) of the host's newest scrape that Prometheus holds."""
        url = f"{self.url}?{urlencode({'query': self.query})}"
        resp = self.fetch(url)
        self.queries += 1
        self.answered_bytes += len(resp.content)
        where = safe_url(self.url)
        if resp.status_code != 200:
            raise SourceError(f"{where}: HTTP {resp.status_code}", reason="http")
        try:
            doc = resp.json()
        except ValueError:
            raise SourceError(f"{where}: not a Prometheus query API answer", reason="parse") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            error = doc.get("error", "no status") if isinstance(doc, dict) else "not an object"
            raise SourceError(f"{where}: query failed: {error}", reason="api")
        data = doc.get("data") or {}
        if data.get("resultType") != "matrix":
            raise SourceError(f"{where}: expected a matrix, got {data.get('resultType')!r}", reason="parse")
        return latest(data.get("result") or [], self.interval / 2)

    def poll(self) -> Snapshot:
        scraped, samples = self.samples()
        exporter = self.target.exporter
        if not samples:
            raise SourceError(
                f"{safe_url(self.url)}: no {exporter} disk series match {self.target.selector} in the last "
                f"{math.ceil(self.window)} s (is the host scraped, and the selector right?)",
                reason="stale",
            )
        if self._last is not None and self._scraped_at is not None and scraped <= self._scraped_at:
            return self._last  # no scrape since the last poll: nothing new to cook
        try:
            if self.linux:
                scrape = node_exporter.scrape_of(samples)
                node_exporter.adopt_kernel(self.cooker, scrape)
                readings = node_exporter.readings(scrape) if scrape.stats else []
            else:
                readings = exporter_scrape.disk_readings(samples)
        except (ScrapeParseError, node_exporter.NodeScrapeError) as e:
            raise SourceError(f"{safe_url(self.url)}: {e}", reason="parse") from None
        if not readings:
            raise SourceError(
                f"{safe_url(self.url)}: no {exporter} disk counters match {self.target.selector}",
                reason="parse",
            )
        # the rates divide by Prometheus's scrape interval; the snapshot is stamped when it was received
        interval = None if self._scraped_at is None else scraped - self._scraped_at
        now = self.clock()
        snap = self._cook(now, readings, interval)
        self._scraped_at, self._last = scraped, snap
        return snap

    def _cook(self, ts: float, readings: list[DiskReading], interval: float | None) -> Snapshot:
        snap = self.cook(ts, readings, None, interval)
        return replace(snap, metrics=tuple(m for m in snap.metrics if m.name in JOIN_FAMILIES))
