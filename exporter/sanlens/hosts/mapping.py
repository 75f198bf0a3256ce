"""Which ONTAP LUN backs a host disk: by LUN serial or WWID, else by a static config entry.

Windows reports the LUN serial as the disk's ``SerialNumber`` (Get-Disk), which is
ONTAP's ``serial_number``; Linux reports the SCSI WWID of the multipath map
(``3600a0980`` + the serial's hex), or an NVMe namespace's ``uuid.<namespace UUID>``.
These joins need no configuration. Static entries (a Windows disk number or drive
letter, a Linux multipath map name, dm-N, NVMe device, WWID or namespace identifier →
cluster/svm/LUN path) cover hosts where the identity is not visible, and
carry per-disk overrides (data class, queue depth, paths).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from sanlens.config import HostDiskMapping, HostTarget
from sanlens.join import LunDirectory, normalize_wwid, volume_from_path

MappingKind = Literal["serial", "static", "none"]


@dataclass(frozen=True, slots=True)
class DiskMapping:
    lun_serial: str = ""
    cluster: str = ""
    svm: str = ""
    volume: str = ""
    lun: str = ""
    mapping: MappingKind = "none"
    data_class: Literal["data", "log", "tempdb"] = "data"
    queue_depth: int = 32
    paths: int = 1  # for Q_eff: the configured paths of the disk, else what the host reports
    observed_paths: int | None = None  # MPIO paths the host reports now
    configured_paths: int = 1  # the paths the config says the disk should have

    def stats_fields(self) -> dict[str, Any]:
        """What a HostDiskStats takes from its disk's mapping: the LUN it joins and the queue settings."""
        return {
            "lun_serial": self.lun_serial,
            "cluster": self.cluster,
            "svm": self.svm,
            "volume": self.volume,
            "lun": self.lun,
            "data_class": self.data_class,
            "queue_depth": self.queue_depth,
            "paths": self.paths,
        }


def normalize_drive(drive: str) -> str:
    """``e``, ``E:``, ``e:\\`` → ``E:``; mount-point paths are kept (upper-cased)."""
    d = drive.strip().rstrip("\\").upper()
    return d + ":" if len(d) == 1 and d.isalpha() else d


def _static_entry(
    target: HostTarget, disk: str, drives: Iterable[str], aliases: Iterable[str] = (), wwid: str = ""
) -> HostDiskMapping | None:
    wanted = {normalize_drive(d) for d in drives}
    names = {disk, *aliases}
    key = normalize_wwid(wwid) if wwid else ""
    for entry in target.disks:
        if entry.disk is not None and (
            entry.disk.strip() in names or (key and normalize_wwid(entry.disk) == key)
        ):
            return entry
        if entry.drive is not None and normalize_drive(entry.drive) in wanted:
            return entry
    return None


def resolve(
    target: HostTarget,
    directory: LunDirectory,
    disk: str,
    drives: Iterable[str] = (),
    serial: str = "",
    observed_paths: int | None = None,
    *,
    wwid: str = "",
    aliases: Iterable[str] = (),
    known_paths: int | None = None,
    observed_queue_depth: int | None = None,
) -> DiskMapping:
    """Map one disk; precedence: static LUN entry, then WWID (Linux) or serial, then unmapped.

    ``known_paths``: the paths the host lists for the disk, failed ones included (Linux keeps a
    failed path device until dev_loss_tmo removes it): the disk should have at least those.
    ``observed_queue_depth``: the per-LUN queue depth the host reports; a disk entry's wins.
    """
    entry = _static_entry(target, disk, drives, aliases, wwid)
    data_class = (entry.data_class if entry else None) or target.data_class
    queue_depth = (entry.queue_depth if entry else None) or observed_queue_depth or target.queue_depth
    paths = (entry.paths if entry else None) or observed_paths or target.paths
    configured = max((entry.paths if entry else None) or target.paths, known_paths or 0)
    serial = serial.strip()
    base = DiskMapping(
        serial,
        data_class=data_class,
        queue_depth=queue_depth,
        paths=paths,
        observed_paths=observed_paths,
        configured_paths=configured,
    )
    if entry is not None and entry.lun and entry.svm:
        cluster = entry.cluster or ""
        ident = directory.by_path(cluster, entry.svm, entry.lun) if cluster else None
        return DiskMapping(
            serial or (ident.serial if ident else ""),
            cluster,
            entry.svm,
            ident.volume if ident and ident.volume else volume_from_path(entry.lun),
            entry.lun,
            "static",
            data_class,
            queue_depth,
            paths,
            observed_paths,
            configured,
        )
    if serial or wwid:
        # a disks: entry that names only a cluster decides which copy a shared serial joins
        hint = entry.cluster if entry is not None else None
        ident = directory.by_wwid(wwid, hint) if wwid else directory.by_serial(serial, hint)
        if ident is not None:
            return DiskMapping(
                serial or ident.serial,
                ident.cluster,
                ident.svm,
                ident.volume or volume_from_path(ident.lun),
                ident.lun,
                "serial",
                data_class,
                queue_depth,
                paths,
                observed_paths,
                configured,
            )
    return base
