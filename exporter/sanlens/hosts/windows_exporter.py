"""Windows hosts through windows_exporter: the ``physical_disk`` collector's ``/metrics`` (parsed in
``hosts/exporter_scrape.py``)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from sanlens.config import HostTarget
from sanlens.errors import SourceError
from sanlens.hosts.cooking import DiskReading
from sanlens.hosts.exporter_scrape import COLLECTORS, ScrapeParseError, parse_scrape
from sanlens.hosts.sources import HttpScrapeSource
from sanlens.urls import safe_url


def scrape_url(url: str) -> str:
    """``http://h:9182`` → ``http://h:9182/metrics``, plus the collectors we read."""
    parts = urlsplit(url)
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    query = "&".join(f"collect[]={c}" for c in COLLECTORS)
    if parts.query:
        query = parts.query + "&" + query
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


class WindowsExporterSource(HttpScrapeSource):
    kind = "windows_exporter"

    def __init__(self, target: HostTarget) -> None:
        assert target.url, "config validation guarantees a url"
        super().__init__(target, scrape_url(target.url))

    def parse(self, text: str) -> list[DiskReading]:
        where = safe_url(self.url)
        try:
            readings = parse_scrape(text)
        except ScrapeParseError as e:
            raise SourceError(f"{where}: {e}", reason="parse") from None
        if not readings:
            raise SourceError(
                f"{where}: no windows_physical_disk_* series (is the physical_disk collector on?)",
                reason="parse",
            )
        return readings
