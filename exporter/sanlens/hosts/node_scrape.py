"""node_exporter's page read into disk readings: diskstats, dm-multipath and NVMe series, each disk
with the WWID or namespace UUID that joins it to its ONTAP LUN or namespace.

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
- ``nvme`` (on by default): ``node_nvme_info{device,state,...}``, each NVMe controller's state
  (``live``, ``connecting``, ``resetting``, ``deleting``, ``dead``); ``nvmesubsystem`` (1.12.0+, off
  by default): ``node_nvmesubsystem_namespace_info{subsystem,device}`` and
  ``node_nvmesubsystem_path_state{subsystem,controller,transport,state}`` (1 on the current state).
- ``uname``: ``node_uname_info{release,machine}``, the kernel that counts: its ``machine`` gives the
  width of the diskstats counts (``unsigned long``: 32 bits on i686, armv7l, ...), its release
  is named where busy time had to be bounded (``hosts/busy_time.py``).
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

An NVMe namespace under native NVMe multipath is one block device, ``nvme<S>n<N>`` (S the
subsystem's instance); each controller C (a path) adds a hidden device ``nvme<S>c<C>n<N>`` that
``/proc/diskstats`` lists too. The namespace's ``node_disk_info{wwn}`` is udev's ID_WWN, the kernel's
``wwid``: ``uuid.<namespace UUID>`` for an ONTAP namespace, the join key. Its paths are the
controllers of its subsystem (nvmesubsystem collector), else its hidden devices with their
controllers' states (nvme collector). Kernels that count I/O only on the hidden devices leave the
namespace's own counters at zero: its counters are then the sum of its paths'. NVMe drives whose
model is not ONTAP's are local.
"""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from sanlens.hosts.catalogue import NODE_EXPORTER, linux_word_bits
from sanlens.hosts.cooking import DiskReading, PathReading
from sanlens.hosts.exporter_scrape import Sample, text_samples
from sanlens.hosts.linux_devices import NVME_NS, NVME_PATH
from sanlens.join.directory import NVME_ID_PREFIXES, normalize_wwid, ontap_wwid, serial_from_wwid

log = logging.getLogger(__name__)

_FIELDS = NODE_EXPORTER.fields()
DISK_INFO = "node_disk_info"
DM_INFO = "node_disk_device_mapper_info"
MP_INFO = "node_dmmultipath_device_info"
MP_PATH_STATE = "node_dmmultipath_path_state"
MP_PATHS_ACTIVE = "node_dmmultipath_device_paths_active"
MP_PATHS_FAILED = "node_dmmultipath_device_paths_failed"
QUEUE_DEPTH = "sanlens_linux_disk_queue_depth"
ACCESS_STATE = "sanlens_linux_disk_access_state"
NVME_INFO = "node_nvme_info"
NVME_SUBSYS_NS = "node_nvmesubsystem_namespace_info"
NVME_SUBSYS_PATH_STATE = "node_nvmesubsystem_path_state"
UNAME = "node_uname_info"
ONTAP_NVME_MODEL = "netapp ontap controller"  # the Identify Controller model of ONTAP's NVMe controllers
ACTIVE_STATES = frozenset({"running", "live"})  # node_exporter's isPathActive
OPTIMIZED = "active/optimized"
# ID_MODEL of an ONTAP LUN as udev spells it (spaces become underscores)
ONTAP_MODELS = frozenset({"lun c-mode", "lun_c-mode"})
# every family read here: what a Prometheus-backed host asks its query API for
FAMILIES = (*_FIELDS, DISK_INFO, DM_INFO, MP_INFO, MP_PATH_STATE, MP_PATHS_ACTIVE, MP_PATHS_FAILED, QUEUE_DEPTH,
            ACCESS_STATE, NVME_INFO, NVME_SUBSYS_NS, NVME_SUBSYS_PATH_STATE, UNAME)  # fmt: skip
_NOT_DISKS = re.compile(r"^(sr|loop|z?ram|fd|md)\d+$|^(mmcblk\d+p|nvme\d+n\d+p|x?[shv]d[a-z]+)\d+$")


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
    nvme_state: dict[str, str] = field(default_factory=dict)  # NVMe controller (nvme3) -> its state
    nvme_subsys: dict[str, str] = field(default_factory=dict)  # namespace device -> its subsystem
    # subsystem (nvme-subsys0) -> controller -> state, from the nvmesubsystem collector
    nvme_paths: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    kernel: str = ""  # node_uname_info's release (``5.15.0-91-generic``); '' without the uname collector
    machine: str = ""  # and its machine (``x86_64``, ``armv7l``)

    @property
    def word_bits(self) -> Literal[32, 64]:
        """The kernel's ``unsigned long``: the width of the diskstats counts and sectors."""
        return linux_word_bits(self.machine)


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
    try:
        samples = text_samples(text)
    except (ValueError, TypeError, IndexError, OverflowError) as e:
        raise NodeScrapeError(f"not Prometheus text format: {e}") from None
    return scrape_of(samples)


def scrape_of(samples: Iterable[Sample]) -> NodeScrape:
    """The block-device series of one scrape's samples (a page, or the same series read back from
    Prometheus)."""
    out = NodeScrape()
    mp_counts: dict[str, dict[str, float]] = defaultdict(dict)
    for name, labels, value in samples:
        fld = _FIELDS.get(name)
        if fld is not None:
            dev = labels.get("device", "").strip()
            if dev:
                out.stats[dev][fld] = _usable(name, labels, value)
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
            if mp and path and _usable(name, labels, value) >= 1:
                out.maps.setdefault(mp, MultipathMap(mp, "", "")).states[path] = (
                    labels.get("state", "").strip().lower()
                )
        elif name in (MP_PATHS_ACTIVE, MP_PATHS_FAILED):
            mp = labels.get("device", "").strip()
            if mp:
                mp_counts[mp][name] = _usable(name, labels, value)
        elif name == QUEUE_DEPTH:
            dev = labels.get("device", "").strip()
            depth = _usable(name, labels, value)
            if dev and depth >= 1:
                out.queue_depth[dev] = int(depth)
        elif name == ACCESS_STATE:
            dev = labels.get("device", "").strip()
            if dev and _usable(name, labels, value) >= 1:
                out.access[dev] = labels.get("state", "").strip().lower()
        elif name == UNAME:
            out.kernel = labels.get("release", "").strip()
            out.machine = labels.get("machine", "").strip()
        elif name == NVME_INFO:
            ctrl = labels.get("device", "").strip()
            if ctrl:
                out.nvme_state[ctrl] = labels.get("state", "").strip().lower()
        elif name == NVME_SUBSYS_NS:
            dev, sub = labels.get("device", "").strip(), labels.get("subsystem", "").strip()
            if dev and sub:
                out.nvme_subsys[dev] = sub
        elif name == NVME_SUBSYS_PATH_STATE:
            sub, ctrl = labels.get("subsystem", "").strip(), labels.get("controller", "").strip()
            if sub and ctrl:
                current = _usable(name, labels, value) >= 1
                if current or ctrl not in out.nvme_paths[sub]:
                    out.nvme_paths[sub][ctrl] = labels.get("state", "").strip().lower() if current else ""
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
    one when the model is ONTAP's LUN) or the NAA designator (ID_SERIAL_SHORT ``600a0980…``).
    An NVMe device's is its ``wwn`` (udev's ID_WWN is the kernel's wwid: ``uuid.…``, ``eui.…``)."""
    wwn = normalize_wwid(info.get("wwn", ""))
    if wwn.startswith(NVME_ID_PREFIXES):
        return wwn
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
        if dev not in taken and NVME_NS.match(dev):
            ns = namespace_reading(scrape, dev)
            taken.update(p.path for p in ns.path_readings)
            out.append(ns)
    for dev in sorted(scrape.stats, key=lambda x: (len(x), x)):
        if dev in taken or dev.startswith("dm-") or _NOT_DISKS.match(dev) or NVME_NS.match(dev):
            continue
        if NVME_PATH.match(dev):  # a path of a namespace whose own device is not listed
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
_IO_FIELDS = ("reads", "writes")
_SUMMED = frozenset(_FIELDS.values()) - {"busy_s"}  # a union of busy times is no sum


def _nvme_paths(scrape: NodeScrape, dev: str) -> dict[str, str]:
    """Path name -> state of the namespace ``dev``: every controller of its subsystem where the
    nvmesubsystem collector runs, else the hidden path devices ``/proc/diskstats`` lists with their
    controllers' states (nvme collector; '' when not exported). A path is named by its hidden device,
    or by its controller when the kernel lists no device for it."""
    head = NVME_NS.match(dev)
    assert head is not None
    hidden = {
        f"nvme{m[2]}": p
        for p in scrape.stats
        if (m := NVME_PATH.match(p)) is not None and (m[1], m[3]) == (head[1], head[2])
    }
    subsystem = scrape.nvme_subsys.get(dev) or (f"nvme-subsys{head[1]}" if hidden else "")
    controllers = scrape.nvme_paths.get(subsystem, {}) if subsystem else {}
    if controllers:
        return {hidden.get(c, c): st for c, st in controllers.items()}
    return {p: scrape.nvme_state.get(c, "") for c, p in hidden.items()}


def _summed(scrape: NodeScrape, devices: list[str]) -> dict[str, Any]:
    """The counters of several devices as one: sums, the 32-bit ones modulo their wrap (so the sum
    wraps as one such counter does); busy time is left out."""
    moduli = NODE_EXPORTER.moduli(scrape.word_bits)
    out: dict[str, Any] = {}
    for fld in sorted(_SUMMED):
        values = [scrape.stats[d][fld] for d in devices if fld in scrape.stats.get(d, {})]
        if values:
            mod = moduli.get(fld)
            out[fld] = math.fsum(values) % mod if mod else math.fsum(values)
    return out


def namespace_reading(scrape: NodeScrape, dev: str) -> DiskReading:
    """An NVMe namespace block device (``nvme0n1``) with its paths; local unless ONTAP's or unknown."""
    info = scrape.info.get(dev, {})
    ident = device_wwid(info) if info.get("wwn", "").strip().lower().startswith(NVME_ID_PREFIXES) else ""
    model = " ".join(info.get("model", "").replace("_", " ").split()).lower()
    ontap = model == ONTAP_NVME_MODEL
    paths = _nvme_paths(scrape, dev)
    counters: dict[str, Any] = dict(scrape.stats.get(dev, {}))
    listed = [p for p in paths if p in scrape.stats]
    if listed and not any(counters.get(f) for f in _IO_FIELDS):
        summed = _summed(scrape, listed)
        if any(summed.get(f) for f in _IO_FIELDS):  # the kernel counts I/O on the paths only
            counters = {k: v for k, v in counters.items() if k not in _SUMMED} | summed
            counters.pop("busy_s", None)
    known = len(paths)
    return DiskReading(
        disk=dev,
        serial="" if ontap or not model else info.get("serial", "").strip(),
        paths=len(_usable_paths(paths)) if known else None,
        wwid=ident,
        platform="linux",
        local=not ident or (bool(model) and not ontap),
        known_paths=known or None,
        path_readings=tuple(
            PathReading(p, st, "", **_path_counters(scrape.stats.get(p, {})))
            for p, st in sorted(paths.items(), key=lambda x: (len(x[0]), x[0]))
        ),
        **counters,
    )


def _path_counters(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k in _PATH_FIELDS}


def parse_node_exporter(text: str) -> list[DiskReading]:
    """Disk readings of one node_exporter page; NodeScrapeError when it is not Prometheus text."""
    return readings(parse_page(text))
