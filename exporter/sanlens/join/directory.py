"""The host ↔ array join: which ONTAP LUN backs which host disk.

The join stage (``sanlens.join.stage``) publishes here the LUN and NVMe namespace inventory
each ONTAP poll returns, and looks the disks of each host poll up by LUN serial (Windows reports it as the disk's serial), by SCSI WWID (Linux:
``3600a0980`` + the hex of the serial, exact where serials differ only in letter case), by
the NVMe namespace identifier Linux reports (``uuid.`` + the namespace UUID), or by
(cluster, svm, LUN path) for static mappings.
Keeping it in one place means both views agree on a LUN's identity.

One serial can name a LUN on two clusters: SnapMirror active sync presents the primary
and secondary copies as one LUN with the same serial and UUID, and an identity-preserving
SVM DR keeps them on the destination. The join is then decided explicitly, never by which
cluster published last: a ``cluster`` the host's config names for the disk; else the one
copy that is online and serving I/O (ops in its cluster's last poll); else the one copy
online. Anything else is ambiguous: the choice already made stays (so a host disk never
flips between clusters unseen), and it is logged and listed by ``ambiguous`` (exposed as
``sanlens_lun_join_ambiguous``).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sanlens.model import DiskIdentity, LunIdentity, OntapView, Snapshot

__all__ = ["Ambiguity", "JoinedDisk", "LunDirectory", "LunIdentity", "join_disk"]

log = logging.getLogger(__name__)

ONLINE = "online"


@dataclass(frozen=True, slots=True)
class Ambiguity:
    """A serial on several clusters that nothing tells apart, and the copy host disks join."""

    serial: str
    clusters: tuple[str, ...]
    chosen: str


class LunDirectory:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_cluster: dict[str, list[LunIdentity]] = {}
        self._by_serial: dict[str, tuple[LunIdentity, ...]] = {}
        self._by_wwid: dict[str, tuple[LunIdentity, ...]] = {}
        self._by_nsid: dict[str, tuple[LunIdentity, ...]] = {}  # namespace identifier -> namespaces
        self._by_path: dict[tuple[str, str, str], LunIdentity] = {}
        # (cluster, svm, lun) -> (ops/s, state) from each cluster's latest poll
        self._io: dict[str, dict[tuple[str, str], tuple[float | None, str]]] = {}
        self._chosen: dict[str, str] = {}  # serial -> cluster of an ambiguous serial's chosen copy
        self._ambiguous: dict[str, Ambiguity] = {}

    def publish(self, cluster: str, luns: list[LunIdentity]) -> None:
        """Replace the LUNs of one cluster (called after each inventory poll)."""
        with self._lock:
            if luns:
                self._by_cluster[cluster] = list(luns)
            else:
                self._by_cluster.pop(cluster, None)
                self._io.pop(cluster, None)
            by_serial: dict[str, list[LunIdentity]] = {}
            by_wwid: dict[str, list[LunIdentity]] = {}
            by_nsid: dict[str, list[LunIdentity]] = {}
            by_path: dict[tuple[str, str, str], LunIdentity] = {}
            for name in sorted(self._by_cluster):  # order never depends on who published last
                for lun in self._by_cluster[name]:
                    if lun.serial:
                        by_serial.setdefault(normalize_serial(lun.serial), []).append(lun)
                        wwid = ontap_wwid(lun.serial)
                        if wwid:
                            by_wwid.setdefault(wwid, []).append(lun)
                    nsid = namespace_wwid(lun.uuid) if lun.kind == "namespace" else ""
                    if nsid:
                        by_nsid.setdefault(nsid, []).append(lun)
                    by_path[(lun.cluster, lun.svm, lun.lun)] = lun
            self._by_serial = {k: tuple(v) for k, v in by_serial.items()}
            self._by_wwid = {k: tuple(v) for k, v in by_wwid.items()}
            self._by_nsid = {k: tuple(v) for k, v in by_nsid.items()}
            self._by_path = by_path
            # a serial no longer presented twice needs no choice: forget it (and its report)
            shared = {**self._by_serial, **self._by_nsid}
            for serial in [s for s in self._chosen if len(shared.get(s, ())) < 2]:
                del self._chosen[serial]
            for serial in [s for s in self._ambiguous if len(shared.get(s, ())) < 2]:
                del self._ambiguous[serial]

    def observe(self, snapshot: Snapshot) -> None:
        """Note which LUNs of a cluster served I/O in its latest poll."""
        view = snapshot.view
        if not isinstance(view, OntapView):
            return
        io: dict[tuple[str, str], tuple[float | None, str]] = {}
        for lun in view.luns:
            parts = [x for x in (lun.read_iops, lun.write_iops, lun.other_iops) if x is not None]
            io[(lun.svm, lun.lun)] = (sum(parts) if parts else None, lun.state)
        with self._lock:
            self._io[view.cluster] = io

    def by_serial(self, serial: str, cluster: str | None = None) -> LunIdentity | None:
        """The LUN a host disk with this serial joins; ``cluster``: the one the config names."""
        key = normalize_serial(serial)
        candidates = self._by_serial.get(key, ())
        if cluster:
            return next((c for c in candidates if c.cluster == cluster), None)
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        with self._lock:
            return self._choose(key, candidates)

    def by_wwid(self, wwid: str, cluster: str | None = None) -> LunIdentity | None:
        """The LUN or namespace a Linux disk with this identifier joins.

        A SCSI WWID matches exactly on the serial's hex form: serials are case-sensitive and
        hold characters such as ``? $ ] /``; the WWID spells each byte in hex, so this key never
        folds case nor needs escaping. An NVMe identifier (``uuid.<uuid>``, the kernel's
        ``/sys/block/nvmeXnY/wwid``) matches a namespace's UUID."""
        key = normalize_wwid(wwid)
        nvme = key.startswith(NVME_ID_PREFIXES)
        candidates = self._by_nsid.get(key, ()) if nvme else self._by_wwid.get(key, ())
        if cluster:
            return next((c for c in candidates if c.cluster == cluster), None)
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        with self._lock:
            return self._choose(key if nvme else normalize_serial(candidates[0].serial), candidates)

    def _ops_state(self, lun: LunIdentity) -> tuple[float, str]:
        ops, state = self._io.get(lun.cluster, {}).get((lun.svm, lun.lun), (None, ""))
        return (ops or 0.0), (state or lun.state)

    def _choose(self, serial: str, candidates: tuple[LunIdentity, ...]) -> LunIdentity:
        """Under the lock: one copy of a serial that several clusters present."""
        facts = {c.cluster: self._ops_state(c) for c in candidates}
        online = [c for c in candidates if facts[c.cluster][1] == ONLINE]
        serving = [c for c in online if facts[c.cluster][0] > 0]
        for decided in (serving, online):
            if len(decided) == 1:
                self._settle(serial, decided[0].cluster, None)
                return decided[0]
        pool = serving or online or list(candidates)
        previous = self._chosen.get(serial)
        pick = next((c for c in pool if c.cluster == previous), None)
        if pick is None:  # the busiest copy, then the first cluster by name: the same on every run
            pick = min(pool, key=lambda c: (-facts[c.cluster][0], c.cluster))
        self._settle(serial, pick.cluster, tuple(c.cluster for c in candidates))
        return pick

    def _settle(self, serial: str, cluster: str, ambiguous_among: tuple[str, ...] | None) -> None:
        previous = self._chosen.get(serial)
        self._chosen[serial] = cluster
        if ambiguous_among is None:
            if self._ambiguous.pop(serial, None) is not None or (previous and previous != cluster):
                log.info(
                    "LUN serial %s: host disks join its copy on %s (online and serving I/O)", serial, cluster
                )
            return
        was = self._ambiguous.get(serial)
        self._ambiguous[serial] = Ambiguity(serial, ambiguous_among, cluster)
        if was is None or was.chosen != cluster:
            log.warning(
                "LUN serial %s is presented by clusters %s and nothing tells which copy the hosts use "
                "(both or neither online and serving I/O); host disks join %s. Name the cluster in the "
                "host's disks: entry to decide.",
                serial,
                ", ".join(ambiguous_among),
                cluster,
            )

    def ambiguous(self) -> list[Ambiguity]:
        """Serials whose copy was chosen without a deciding fact, as of the last lookups."""
        with self._lock:
            return sorted(self._ambiguous.values(), key=lambda a: a.serial)

    def by_path(self, cluster: str, svm: str, lun: str) -> LunIdentity | None:
        return self._by_path.get((cluster, svm, lun))

    def __len__(self) -> int:
        return len(self._by_serial) + len(self._by_nsid)


@dataclass(frozen=True, slots=True)
class JoinedDisk:
    """The ONTAP LUN a host disk joins, as ``sanlens_host_disk_info`` and ``HostDiskStats`` carry it."""

    lun_serial: str = ""
    cluster: str = ""
    svm: str = ""
    volume: str = ""
    lun: str = ""
    mapping: str = "none"  # serial | static | none


def join_disk(directory: LunDirectory | None, key: DiskIdentity) -> JoinedDisk:
    """Where ``key`` joins; precedence: a static entry's LUN, then WWID (Linux) or serial, then none.

    ``directory`` None: what the host and its config alone say (a static entry's LUN path,
    without the inventory's volume and serial).
    """
    if key.static:
        ident = directory.by_path(key.cluster, key.svm, key.lun) if directory and key.cluster else None
        return JoinedDisk(
            key.serial or (ident.serial if ident else ""),
            key.cluster,
            key.svm,
            ident.volume if ident and ident.volume else volume_from_path(key.lun),
            key.lun,
            "static",
        )
    if directory is not None and (key.serial or key.wwid):
        hint = key.cluster or None  # a disks: entry that names only a cluster decides a shared serial
        ident = directory.by_wwid(key.wwid, hint) if key.wwid else directory.by_serial(key.serial, hint)
        if ident is not None:
            return JoinedDisk(
                key.serial or ident.serial,
                ident.cluster,
                ident.svm,
                ident.volume or volume_from_path(ident.lun),
                ident.lun,
                "serial",
            )
    return JoinedDisk(key.serial)


# NAA IEEE Registered Extended designator of an ONTAP LUN: NAA type 6, NetApp's OUI 00a098 and
# a 0 nibble, then the 12 ASCII bytes of the LUN serial. Linux prefixes the designator type "3"
# (SCSI page 0x83, NAA) to make the WWID multipath and udev's ID_SERIAL use.
NETAPP_NAA_PREFIX = "600a0980"
WWID_NAA_TYPE = "3"
_HEX = frozenset("0123456789abcdef")


def ontap_wwid(serial: str) -> str:
    """The Linux WWID of an ONTAP LUN: ``3600a0980`` + the hex of its 12-character serial; '' when the
    serial is not printable ASCII."""
    if not serial or not serial.isascii() or not serial.isprintable():
        return ""
    return WWID_NAA_TYPE + NETAPP_NAA_PREFIX + serial.encode("ascii").hex()


# What Linux's NVMe driver prints in /sys/block/nvmeXnY/wwid, in its order of preference: the
# namespace UUID, the NGUID, the EUI-64, else a string made of the controller's vendor, serial,
# model and the namespace ID (drivers/nvme/host/core.c, wwid_show). ONTAP namespaces report their
# UUID, so theirs is ``uuid.`` + the UUID ONTAP's REST API gives for the namespace.
NVME_ID_PREFIXES = ("uuid.", "eui.", "nvme.")


def namespace_wwid(uuid: str) -> str:
    """The Linux identifier of an NVMe namespace with this UUID: ``uuid.`` + the UUID in lower case;
    '' when ``uuid`` is not one."""
    u = uuid.strip().lower()
    parts = u.split("-")
    if [len(x) for x in parts] != [8, 4, 4, 4, 12] or not set(u.replace("-", "")) <= _HEX:
        return ""
    return "uuid." + u


def normalize_wwid(text: str) -> str:
    """A WWID as udev, multipath or node_exporter spell it, in one form: lower-case hex with the
    NAA type prefix. ``mpath-3600a…`` (a dm UUID), ``0x600a…`` and ``600a…`` (udev's ID_WWN and
    ID_SERIAL_SHORT) all become ``3600a…``; an NVMe identifier (``uuid.…``, ``eui.…``) comes back
    in lower case; anything else comes back stripped."""
    s = text.strip().lower()
    s = s.removeprefix("mpath-").removeprefix("naa.").removeprefix("0x")
    if s and set(s) <= _HEX and s.startswith("6") and len(s) == 32:
        s = WWID_NAA_TYPE + s
    return s


def serial_from_wwid(wwid: str) -> str:
    """The ONTAP LUN serial a NetApp WWID carries; '' for any other WWID (a local disk, another array)."""
    w = normalize_wwid(wwid)
    head = WWID_NAA_TYPE + NETAPP_NAA_PREFIX
    body = w[len(head) :]
    if not w.startswith(head) or len(body) % 2 or not body or not set(body) <= _HEX:
        return ""
    try:
        serial = bytes.fromhex(body).decode("ascii")
    except UnicodeDecodeError:
        return ""
    return serial if serial.isprintable() else ""


def normalize_serial(serial: str) -> str:
    """Windows may report the serial padded or with trailing spaces; ONTAP's is 12 printable chars."""
    return serial.strip().upper()


def volume_from_path(path: str) -> str:
    """``/vol/<volume>/...`` → ``<volume>``; used only when the inventory has no volume."""
    parts = path.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "vol" else ""
