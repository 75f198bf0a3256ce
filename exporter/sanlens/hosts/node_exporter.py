"""Linux hosts through node_exporter: diskstats and dm-multipath series joined to ONTAP LUNs by WWID.

No agent: node_exporter's own collectors give everything but the queue depth.

- ``diskstats`` (label ``device`` = ``sda``, ``dm-3``): the counters of
  ``hosts/catalogue.py``'s ``NODE_EXPORTER`` table; ``node_disk_info`` (udev: ``serial``
  is SCSI_IDENT_SERIAL, the 12-character ONTAP serial where sg3_utils' rules run, else
  ID_SERIAL_SHORT, the NAA hex; ``wwn`` is ID_WWN, cut to 16 hex digits, so never a key);
  ``node_disk_device_mapper_info`` (``uuid`` = ``mpath-<WWID>`` for a multipath map).
- ``dmmultipath`` (1.12.0+, on by default; the same names from a textfile on older
  releases): ``node_dmmultipath_device_info{device,sysfs_name,uuid}`` names each map
  (``device`` = the dm name, ``sysfs_name`` = the dm-N that diskstats calls ``device``),
  ``node_dmmultipath_path_state{device,path,state}`` each path device's SCSI state
  (``running``; NVMe ``live``; anything else is failed, as the collector counts it).
- sanlens's textfile convention (docs/hosts-linux.md), optional:
  ``sanlens_linux_disk_queue_depth{device="sdc"}`` (``/sys/block/sdc/device/queue_depth``)
  and ``sanlens_linux_disk_access_state{device="sdc",state="active/optimized"}``.

A disk is the multipath map the application uses, named by its dm name (``mpatha``, or
the WWID itself with ``user_friendly_names no``): stable across reboots where dm-N is not.
Its WWID, ``3600a0980`` + the hex of the LUN serial, is the join key. Its path devices
are cooked too. Without the dmmultipath collector a map's paths are the SCSI devices whose
udev identity carries its WWID: present ones count as active, so only a path the kernel
removed (dev_loss_tmo) shows as lost. Whole disks outside any map are local unless their
identity is an ONTAP LUN (a LUN without multipath: one path).
"""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from prometheus_client.parser import text_string_to_metric_families

from sanlens.config import HostTarget
from sanlens.errors import SourceError
from sanlens.hosts.catalogue import NODE_EXPORTER
from sanlens.hosts.cooking import DiskReading, PathReading
from sanlens.hosts.sources import HttpScrapeSource, safe_url
from sanlens.join import LunDirectory, normalize_wwid, ontap_wwid, serial_from_wwid

log = logging.getLogger(__name__)

COLLECTORS = ("diskstats", "dmmultipath", "textfile")
_FIELDS = NODE_EXPORTER.fields()
DISK_INFO = "node_disk_info"
DM_INFO = "node_disk_device_mapper_info"
MP_INFO = "node_dmmultipath_device_info"
MP_PATH_STATE = "node_dmmultipath_path_state"
MP_PATHS_ACTIVE = "node_dmmultipath_device_paths_active"
MP_PATHS_FAILED = "node_dmmultipath_device_paths_failed"
QUEUE_DEPTH = "sanlens_linux_disk_queue_depth"
ACCESS_STATE = "sanlens_linux_disk_access_state"
ACTIVE_STATES = frozenset({"running", "live"})  # node_exporter's isPathActive
OPTIMIZED = "active/optimized"
# ID_MODEL of an ONTAP LUN as udev spells it (spaces become underscores)
ONTAP_MODELS = frozenset({"lun c-mode", "lun_c-mode"})
_NOT_DISKS = re.compile(r"^(sr|loop|z?ram|fd|md)\d+$|^(mmcblk\d+p|nvme\d+n\d+p|x?[shv]d[a-z]+)\d+$")
_REFUSED = re.compile(r"(?:missing|disabled) collector: (\w+)")


class NodeScrapeError(ValueError):
    pass


@dataclass
class MultipathMap:
    name: str  # dm name: mpatha, or the WWID itself
    sysfs: str  # dm-N
    wwid: str
    states: dict[str, str] = field(default_factory=dict)  # path device -> SCSI/NVMe state
    active: int | None = None  # the collector's own counts, when it gave no path states
    failed: int | None = None


@dataclass
class NodeScrape:
    """What one node_exporter page says about block devices."""

    # device -> DiskReading counter field -> value (Any: handed on as keyword arguments)
    stats: dict[str, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))
    info: dict[str, dict[str, str]] = field(default_factory=dict)  # node_disk_info labels by device
    dm: dict[str, tuple[str, str]] = field(default_factory=dict)  # dm-N -> (dm name, uuid)
    maps: dict[str, MultipathMap] = field(default_factory=dict)  # from the dmmultipath collector
    queue_depth: dict[str, int] = field(default_factory=dict)  # path device -> queue depth
    access: dict[str, str] = field(default_factory=dict)  # path device -> ALUA access state


def _usable(name: str, labels: dict[str, str], value: float) -> float:
    try:
        v = float(value)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v) or abs(v) > 1e300:
        raise NodeScrapeError(f"{name}{{device={labels.get('device', '')!r}}}: not a usable number")
    return v


def parse_page(text: str) -> NodeScrape:
    """The block-device series of one page; every other family is ignored. Names are matched
    exactly (NetApp Harvest exports ``node_disk_busy``: a prefix would take it for diskstats)."""
    out = NodeScrape()
    try:
        families = list(text_string_to_metric_families(text.lstrip("\ufeff")))
    except (ValueError, TypeError, IndexError, OverflowError) as e:
        raise NodeScrapeError(f"not Prometheus text format: {e}") from None
    mp_counts: dict[str, dict[str, float]] = defaultdict(dict)
    for fam in families:
        for s in fam.samples:
            name, labels = s.name, s.labels
            fld = _FIELDS.get(name)
            if fld is not None:
                dev = labels.get("device", "").strip()
                if dev:
                    out.stats[dev][fld] = _usable(name, labels, s.value)
            elif name == DISK_INFO:
                dev = labels.get("device", "").strip()
                if dev:
                    out.info[dev] = dict(labels)
            elif name == DM_INFO:
                dev = labels.get("device", "").strip()
                if dev:
                    out.dm[dev] = (labels.get("name", "").strip(), labels.get("uuid", "").strip())
            elif name == MP_INFO:
                mp = labels.get("device", "").strip()
                if mp:
                    m = out.maps.setdefault(mp, MultipathMap(mp, "", ""))
                    m.sysfs = labels.get("sysfs_name", "").strip()
                    m.wwid = normalize_wwid(labels.get("uuid", ""))
            elif name == MP_PATH_STATE:
                mp, path = labels.get("device", "").strip(), labels.get("path", "").strip()
                if mp and path and _usable(name, labels, s.value) >= 1:
                    out.maps.setdefault(mp, MultipathMap(mp, "", "")).states[path] = (
                        labels.get("state", "").strip().lower()
                    )
            elif name in (MP_PATHS_ACTIVE, MP_PATHS_FAILED):
                mp = labels.get("device", "").strip()
                if mp:
                    mp_counts[mp][name] = _usable(name, labels, s.value)
            elif name == QUEUE_DEPTH:
                dev = labels.get("device", "").strip()
                depth = _usable(name, labels, s.value)
                if dev and depth >= 1:
                    out.queue_depth[dev] = int(depth)
            elif name == ACCESS_STATE:
                dev = labels.get("device", "").strip()
                if dev and _usable(name, labels, s.value) >= 1:
                    out.access[dev] = labels.get("state", "").strip().lower()
    for mp, counts in mp_counts.items():
        found = out.maps.get(mp)
        if found is not None:
            a, f = counts.get(MP_PATHS_ACTIVE), counts.get(MP_PATHS_FAILED)
            found.active = None if a is None else max(int(a), 0)
            found.failed = None if f is None else max(int(f), 0)
    return out


def device_wwid(info: dict[str, str]) -> str:
    """The WWID of an ONTAP LUN from a SCSI device's udev identity; '' when it is none.

    ``serial`` is the 12-character LUN serial (sg3_utils' SCSI_IDENT_SERIAL; only taken as
    one when the model is ONTAP's LUN) or the NAA designator (ID_SERIAL_SHORT ``600a0980…``)."""
    serial = info.get("serial", "").strip()
    if not serial:
        return ""
    wwid = normalize_wwid(serial)
    if serial_from_wwid(wwid):
        return wwid
    if info.get("model", "").strip().lower() in ONTAP_MODELS and len(serial) == 12:
        return ontap_wwid(serial)
    return ""


def _maps(scrape: NodeScrape) -> list[MultipathMap]:
    """The multipath maps: from the dmmultipath collector, else from the device-mapper UUIDs."""
    if scrape.maps:
        out = []
        for m in scrape.maps.values():
            if not m.sysfs:  # only path states (a partial textfile): find the map by its name
                m.sysfs = next((dev for dev, (nm, _u) in scrape.dm.items() if nm == m.name), "")
            if not m.wwid:
                m.wwid = normalize_wwid(scrape.dm.get(m.sysfs, ("", ""))[1])
            out.append(m)
        return out
    return [
        MultipathMap(name, dev, normalize_wwid(uuid))
        for dev, (name, uuid) in scrape.dm.items()
        if uuid.lower().startswith("mpath-") and name
    ]


def _usable_paths(paths: dict[str, str]) -> list[str]:
    """Path devices that carry I/O: SCSI running or NVMe live; a state not reported counts as usable."""
    return [p for p, st in paths.items() if not st or st in ACTIVE_STATES]


def readings(scrape: NodeScrape) -> list[DiskReading]:
    """One DiskReading per multipath map (with its path devices) and per whole disk outside any map."""
    out: list[DiskReading] = []
    taken: set[str] = set()
    maps = _maps(scrape)
    by_wwid: dict[str, list[str]] = defaultdict(list)  # fallback: path devices by their udev WWID
    if not scrape.maps:
        for dev, info in scrape.info.items():
            w = device_wwid(info)
            if w and not dev.startswith("dm-"):
                by_wwid[w].append(dev)
    for m in maps:
        # the collector's path states; without it, the SCSI devices whose udev identity is the map's
        paths = dict(m.states) if scrape.maps else dict.fromkeys(sorted(by_wwid.get(m.wwid, [])), "")
        taken.update(paths)
        taken.add(m.sysfs)
        if paths:
            known = len(paths)
            active = len(_usable_paths(paths))
        elif m.active is not None:
            active, known = m.active, m.active + (m.failed or 0)
        else:
            active = known = 0
        optimized: int | None = None
        if any(p in scrape.access for p in paths):
            optimized = sum(1 for p in _usable_paths(paths) if scrape.access.get(p) == OPTIMIZED)
        depths = [scrape.queue_depth[p] for p in _usable_paths(paths) if p in scrape.queue_depth]
        path_readings = tuple(
            PathReading(p, st, scrape.access.get(p, ""), **_path_counters(scrape.stats.get(p, {})))
            for p, st in sorted(paths.items(), key=lambda x: (len(x[0]), x[0]))
        )
        serial = serial_from_wwid(m.wwid)
        out.append(
            DiskReading(
                disk=m.name,
                serial=serial or m.wwid,
                paths=active if known else None,
                optimized_paths=optimized,
                wwid=m.wwid,
                aliases=(m.sysfs,) if m.sysfs else (),
                platform="linux",
                known_paths=known or None,
                queue_depth=min(depths) if depths else None,
                path_readings=path_readings,
                **scrape.stats.get(m.sysfs, {}),
            )
        )
    for dev in sorted(scrape.stats, key=lambda x: (len(x), x)):
        if dev in taken or dev.startswith("dm-") or _NOT_DISKS.match(dev):
            continue
        info = scrape.info.get(dev, {})
        wwid = device_wwid(info)
        ident = info.get("serial", "").strip() or info.get("wwn", "").strip()
        out.append(
            DiskReading(
                disk=dev,
                serial=serial_from_wwid(wwid) if wwid else ident,
                paths=1 if wwid else None,
                wwid=wwid,
                platform="linux",
                local=not wwid,
                known_paths=1 if wwid else None,
                queue_depth=scrape.queue_depth.get(dev),
                **scrape.stats[dev],
            )
        )
    return out


_PATH_FIELDS = frozenset(PathReading.__dataclass_fields__) - {"path", "state", "access_state"}


def _path_counters(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k in _PATH_FIELDS}


def parse_node_exporter(text: str) -> list[DiskReading]:
    """Disk readings of one node_exporter page; NodeScrapeError when it is not Prometheus text."""
    return readings(parse_page(text))


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


class NodeExporterSource(HttpScrapeSource):
    """``source: node_exporter``: a Linux host's node_exporter, filtered to the collectors read here.

    node_exporter answers 400 to a ``collect[]`` naming a collector it lacks (dmmultipath before
    1.12.0) or has disabled; that collector is then dropped from the request and the scrape
    repeated, once per collector.
    """

    kind = "node_exporter"
    moduli = NODE_EXPORTER.moduli()

    def __init__(self, target: HostTarget, directory: LunDirectory) -> None:
        assert target.url, "config validation guarantees a url"
        self.base_url = target.url
        self.collectors = list(COLLECTORS)
        super().__init__(target, directory, node_scrape_url(target.url, self.collectors))

    def scrape(self) -> tuple[float, str]:
        while True:
            resp = self.fetch(self.url)
            ts = self.clock()
            if resp.status_code == 400:
                refused = _REFUSED.search(resp.text[:2000])
                if refused and refused.group(1) in self.collectors:
                    log.info(
                        "host %s: node_exporter has no %s collector; scraping without it",
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
        return readings(scrape)
