"""The host ↔ array join: which ONTAP LUN backs which host disk.

ONTAP collectors publish their LUN inventory here; host sources look disks up by
LUN serial (automatic) or by (cluster, svm, LUN path) for static mappings.
Keeping it in one place means both views agree on a LUN's identity.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LunIdentity:
    cluster: str
    svm: str
    volume: str
    lun: str  # path, e.g. /vol/sql_data/lun0
    serial: str = ""
    node: str = ""


class LunDirectory:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_cluster: dict[str, list[LunIdentity]] = {}
        self._by_serial: dict[str, LunIdentity] = {}
        self._by_path: dict[tuple[str, str, str], LunIdentity] = {}

    def publish(self, cluster: str, luns: list[LunIdentity]) -> None:
        """Replace the LUNs of one cluster (called after each inventory poll)."""
        with self._lock:
            self._by_cluster[cluster] = list(luns)
            by_serial: dict[str, LunIdentity] = {}
            by_path: dict[tuple[str, str, str], LunIdentity] = {}
            for items in self._by_cluster.values():
                for lun in items:
                    if lun.serial:
                        by_serial[normalize_serial(lun.serial)] = lun
                    by_path[(lun.cluster, lun.svm, lun.lun)] = lun
            self._by_serial, self._by_path = by_serial, by_path

    def by_serial(self, serial: str) -> LunIdentity | None:
        return self._by_serial.get(normalize_serial(serial))

    def by_path(self, cluster: str, svm: str, lun: str) -> LunIdentity | None:
        return self._by_path.get((cluster, svm, lun))

    def __len__(self) -> int:
        return len(self._by_serial)


def normalize_serial(serial: str) -> str:
    """Windows may report the serial padded or with trailing spaces; ONTAP's is 12 printable chars."""
    return serial.strip().upper()


def volume_from_path(path: str) -> str:
    """``/vol/<volume>/...`` → ``<volume>``; used only when the inventory has no volume."""
    parts = path.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "vol" else ""
