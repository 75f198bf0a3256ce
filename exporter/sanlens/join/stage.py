"""The join stage: what the runtime runs between a poll's result and the store.

Sources never read each other's state. An ONTAP snapshot brings its cluster's LUN and
namespace identities (published to the ``LunDirectory``) and its LUNs' I/O (which copy of a
serial two clusters present serves); a host snapshot brings each disk's join keys, resolved
here to the LUN they name, on its ``HostDiskStats`` and on ``sanlens_host_disk_info``: the
only places a disk's LUN appears (counters carry ``host, disk`` alone). Whatever order polls
land in, a host's first poll after its cluster's is joined.
"""

from __future__ import annotations

import dataclasses
import logging
import threading

from sanlens.join.directory import Ambiguity, JoinedDisk, LunDirectory, join_disk
from sanlens.model import HostDiskStats, HostView, LunIdentity, Metric, Snapshot

log = logging.getLogger(__name__)

INFO = "sanlens_host_disk_info"
_JOINED = ("lun_serial", "cluster", "svm", "volume", "lun", "mapping")


class JoinStage:
    """The host ↔ array join as a pipeline stage; thread-safe (every poller's worker calls it)."""

    def __init__(self, directory: LunDirectory | None = None) -> None:
        self.directory = directory if directory is not None else LunDirectory()
        self._lock = threading.Lock()
        self._published: dict[str, tuple[LunIdentity, ...]] = {}  # cluster -> identities last published

    def apply(self, snap: Snapshot) -> Snapshot:
        """``snap`` as it is stored: an ONTAP one updates the directory, a host one comes back joined."""
        if snap.kind == "ontap":
            self._array(snap)
            return snap
        if snap.disk_identities:
            return self._host(snap)
        return snap

    def forget(self, cluster: str) -> None:
        """A cluster left the config: its LUNs join no host disk any more."""
        with self._lock:
            self._published.pop(cluster, None)
            self.directory.publish(cluster, [])

    def ambiguous(self) -> list[Ambiguity]:
        return self.directory.ambiguous()

    def _array(self, snap: Snapshot) -> None:
        luns = snap.lun_identities
        if luns is not None:
            with self._lock:  # a source returns the same tuple until its inventory changes
                if self._published.get(snap.target) is not luns:
                    self.directory.publish(snap.target, list(luns))
                    self._published[snap.target] = luns
        self.directory.observe(snap)

    def _host(self, snap: Snapshot) -> Snapshot:
        changed: dict[str, JoinedDisk] = {}
        for key in snap.disk_identities:
            found = join_disk(self.directory, key)
            if found != join_disk(None, key):  # the source cooked what the host alone says
                changed[key.disk] = found
        if not changed:
            return snap
        view = snap.view
        if isinstance(view, HostView):
            view = dataclasses.replace(
                view, disks=tuple(_joined_stats(d, changed.get(d.disk)) for d in view.disks)
            )
        metrics = tuple(_joined_info(m, changed) if m.name == INFO else m for m in snap.metrics)
        return dataclasses.replace(snap, view=view, metrics=metrics)


def _joined_stats(d: HostDiskStats, j: JoinedDisk | None) -> HostDiskStats:
    if j is None:
        return d
    return dataclasses.replace(
        d, lun_serial=j.lun_serial, cluster=j.cluster, svm=j.svm, volume=j.volume, lun=j.lun
    )


def _joined_info(m: Metric, changed: dict[str, JoinedDisk]) -> Metric:
    """The info family with the joined disks' LUN labels."""
    names = m.label_names
    if "disk" not in names:
        return m
    at = names.index("disk")
    slots = [(names.index(f), f) for f in _JOINED if f in names]
    keys = []
    for values in m.keys:
        j = changed.get(values[at])
        if j is not None:
            row = list(values)
            for i, f in slots:
                row[i] = str(getattr(j, f))
            values = tuple(row)
        keys.append(values)
    return m.with_keys(keys)
