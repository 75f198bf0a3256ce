"""Linux hosts through node_exporter (``source: node_exporter``): its page, scraped over HTTP(S)
and read by ``hosts/node_scrape.py`` into disk readings that join ONTAP LUNs by WWID and ONTAP
NVMe namespaces by UUID. No agent: node_exporter's own collectors give everything but the
queue depth, which sanlens's textfile convention adds (docs/hosts-linux.md). The ``uname``
collector names the kernel: a 32-bit one keeps the diskstats counts in 32 bits, so its counters
wrap where a 64-bit kernel's would have restarted.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from sanlens.config import HostTarget
from sanlens.errors import SourceError
from sanlens.hosts.catalogue import NODE_EXPORTER
from sanlens.hosts.cooking import DiskReading, HostCooker
from sanlens.hosts.node_scrape import (
    FAMILIES,
    NodeScrape,
    NodeScrapeError,
    device_wwid,
    namespace_reading,
    parse_node_exporter,
    parse_page,
    readings,
    scrape_of,
)
from sanlens.hosts.sources import HttpScrapeSource
from sanlens.urls import safe_url

__all__ = [
    "COLLECTORS",
    "FAMILIES",
    "NodeExporterSource",
    "NodeScrape",
    "NodeScrapeError",
    "adopt_kernel",
    "device_wwid",
    "namespace_reading",
    "node_scrape_url",
    "parse_node_exporter",
    "parse_page",
    "readings",
    "scrape_of",
]

log = logging.getLogger(__name__)

COLLECTORS = ("diskstats", "dmmultipath", "nvme", "nvmesubsystem", "textfile", "uname")
_REFUSED = re.compile(r"(?:missing|disabled) collector: (\w+)")


def node_scrape_url(url: str, collectors: tuple[str, ...] | list[str] = COLLECTORS) -> str:
    """``http://h:9100`` → ``http://h:9100/metrics?collect[]=diskstats&…``; a URL that already names
    collectors keeps its own."""
    parts = urlsplit(url)
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    query = parts.query
    if not any(k == "collect[]" for k, _ in parse_qsl(query)) and collectors:
        ours = "&".join(f"collect[]={c}" for c in collectors)
        query = f"{query}&{ours}" if query else ours
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


def adopt_kernel(cooker: HostCooker, scrape: NodeScrape) -> None:
    """Cook this host's counters at its kernel's wrap points (32-bit counts on a 32-bit machine) and
    name its kernel where busy time is bounded. A page without ``node_uname_info`` keeps the last."""
    if scrape.machine or scrape.kernel:
        cooker.moduli = NODE_EXPORTER.moduli(scrape.word_bits)
        cooker.kernel = scrape.kernel


class NodeExporterSource(HttpScrapeSource):
    """``source: node_exporter``: a Linux host's node_exporter, filtered to the collectors read here.

    node_exporter answers 400 to a ``collect[]`` naming a collector it lacks (dmmultipath and
    nvmesubsystem before 1.12.0) or has disabled (nvmesubsystem, unless ``--collector.nvmesubsystem``);
    that collector is then dropped from the request and the scrape repeated, once per collector.
    """

    kind = "node_exporter"
    moduli = NODE_EXPORTER.moduli()

    def __init__(self, target: HostTarget) -> None:
        assert target.url, "config validation guarantees a url"
        self.base_url = target.url
        self.collectors = list(COLLECTORS)
        super().__init__(target, node_scrape_url(target.url, self.collectors))

    def scrape(self) -> tuple[float, str]:
        while True:
            resp = self.fetch(self.url)
            ts = self.clock()
            if resp.status_code == 400:
                refused = _REFUSED.search(resp.text[:2000])
                if refused and refused.group(1) in self.collectors:
                    log.info(
                        "host %s: node_exporter lacks or has disabled its %s collector; scraping without it",
                        self.name,
                        refused.group(1),
                    )
                    self.collectors.remove(refused.group(1))
                    self.url = node_scrape_url(self.base_url, self.collectors)
                    continue
            if resp.status_code != 200:
                raise SourceError(f"{safe_url(self.url)}: HTTP {resp.status_code}", reason="http")
            return ts, resp.text

    def parse(self, text: str) -> list[DiskReading]:
        where = safe_url(self.url)
        try:
            scrape = parse_page(text)
        except NodeScrapeError as e:
            raise SourceError(f"{where}: {e}", reason="parse") from None
        if not scrape.stats:
            raise SourceError(
                f"{where}: no node_disk_* series (is the diskstats collector on?)", reason="parse"
            )
        adopt_kernel(self.cooker, scrape)
        return readings(scrape)
