"""What a host disk joins its ONTAP LUN by: LUN serial or WWID, else a static config entry.

Windows reports the LUN serial as the disk's ``SerialNumber`` (Get-Disk), which is
ONTAP's ``serial_number``; Linux reports the SCSI WWID of the multipath map
(``3600a0980`` + the serial's hex), or an NVMe namespace's ``uuid.<namespace UUID>``.
These joins need no configuration. Static entries (a Windows disk number or drive
letter, a Linux multipath map name, dm-N, NVMe device, WWID or namespace identifier →
cluster/svm/LUN path) cover hosts where the identity is not visible, and
carry per-disk overrides (data class, queue depth, paths). A host source states the keys
(``disk_mapping``); the join stage looks them up in the ONTAP inventory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from sanlens.config.plain import HOST_DEFAULTS, HostDisks
from sanlens.join.directory import JoinedDisk, LunDirectory, join_disk, normalize_wwid
from sanlens.model import DataClass, DiskIdentity

if TYPE_CHECKING:
    from sanlens.config import HostDiskMapping

MappingKind = Literal["serial", "static", "none"]


@dataclass(frozen=True, slots=True)
class DiskMapping:
    lun_serial: str = ""
    cluster: str = ""
    svm: str = ""
    volume: str = ""
    lun: str = ""
    mapping: MappingKind = "none"
    data_class: DataClass = HOST_DEFAULTS.data_class
    queue_depth: int = HOST_DEFAULTS.queue_depth
    # for Q_eff: the configured paths of the disk, else what the host reports
    paths: int = HOST_DEFAULTS.paths
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
    target: HostDisks, disk: str, drives: Iterable[str], aliases: Iterable[str] = (), wwid: str = ""
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


def disk_mapping(
    target: HostDisks,
    disk: str,
    drives: Iterable[str] = (),
    serial: str = "",
    observed_paths: int | None = None,
    *,
    wwid: str = "",
    aliases: Iterable[str] = (),
    known_paths: int | None = None,
    observed_queue_depth: int | None = None,
) -> tuple[DiskMapping, DiskIdentity]:
    """What the host and its config say of one disk: its settings, and the keys it joins by.

    The mapping's LUN fields are what the config alone gives (a static entry's LUN); the join
    stage fills in the rest from the ONTAP inventory (``sanlens.join.directory.join_disk``).
    ``known_paths``: the paths the host lists for the disk, failed ones included (Linux keeps a
    failed path device until dev_loss_tmo removes it): the disk should have at least those.
    ``observed_queue_depth``: the per-LUN queue depth the host reports; a disk entry's wins.
    """
    entry = _static_entry(target, disk, drives, aliases, wwid)
    data_class = (entry.data_class if entry else None) or target.data_class
    queue_depth = (entry.queue_depth if entry else None) or observed_queue_depth or target.queue_depth
    paths = (entry.paths if entry else None) or observed_paths or target.paths
    configured = max((entry.paths if entry else None) or target.paths, known_paths or 0)
    static = entry is not None and bool(entry.lun and entry.svm)
    key = DiskIdentity(
        disk,
        serial.strip(),
        wwid,
        (entry.cluster or "") if entry is not None else "",
        (entry.svm or "") if static and entry is not None else "",
        (entry.lun or "") if static and entry is not None else "",
    )
    base = DiskMapping(
        data_class=data_class,
        queue_depth=queue_depth,
        paths=paths,
        observed_paths=observed_paths,
        configured_paths=configured,
    )
    return joined(base, join_disk(None, key)), key


def joined(m: DiskMapping, j: JoinedDisk) -> DiskMapping:
    """``m`` with the LUN a join found."""
    return replace(
        m,
        lun_serial=j.lun_serial,
        cluster=j.cluster,
        svm=j.svm,
        volume=j.volume,
        lun=j.lun,
        mapping=cast(MappingKind, j.mapping),
    )


def resolve(target: HostDisks, directory: LunDirectory, disk: str, *args: Any, **kwargs: Any) -> DiskMapping:
    """Map one disk against ``directory`` at once (the offline join; live, the join stage does it).

    The arguments after ``directory`` are ``disk_mapping``'s.
    """
    m, key = disk_mapping(target, disk, *args, **kwargs)
    return joined(m, join_disk(directory, key))
