"""QoS workloads and policies, and where a workload's latency goes inside ONTAP.

Every source that reads them (the counter tables, Harvest's series, ``qos statistics ... latency
show`` text) fills these; the diagnoses and the waterfall read them. Seconds throughout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# ONTAP's latency components, in the order `qos statistics volume latency show` prints its columns
# (Network/N-Blade, Cluster, Data/D-Blade, Disk, QoS Max, QoS Min, NVRAM, Cloud, FlexCache,
# SM Sync, VA, AVSCAN); "other" holds what no column names, so the parts add up to the latency.
QOS_COMPONENTS = (
    "network",
    "cluster",
    "data",
    "disk",
    "qos_max",
    "qos_min",
    "nvram",
    "cloud",
    "flexcache",
    "sm_sync",
    "va",
    "avscan",
    "other",
)


@dataclass(frozen=True, slots=True)
class QosPolicy:
    """One QoS policy group (``/api/storage/qos/policies``): a fixed or an adaptive ceiling and floor.

    A fixed policy's ceiling is shared by all its workloads when ``shared``, else each workload
    has it. An adaptive policy's ceiling scales with each workload's size (peak IOPS per TB of
    allocated or used space)."""

    cluster: str
    svm: str
    name: str
    kind: Literal["fixed", "adaptive"] = "fixed"
    shared: bool = False
    max_iops: float | None = None  # fixed ceiling, ops/s (None: no IOPS ceiling)
    max_bytes_s: float | None = None  # fixed ceiling, bytes/s
    min_iops: float | None = None  # fixed floor
    peak_iops_per_tb: float | None = None  # adaptive ceiling per TB
    expected_iops_per_tb: float | None = None  # adaptive floor per TB
    absolute_min_iops: float | None = None
    peak_allocation: str = ""  # adaptive: allocated_space | used_space
    workloads: int | None = None  # object_count


@dataclass(frozen=True, slots=True)
class QosWorkload:
    """One QoS workload (a volume's, or the LUN, file or qtree a policy is set on) and where its
    latency goes inside ONTAP.

    ``components`` holds, per :data:`QOS_COMPONENTS` name, the seconds that component adds to
    an average operation; they add up to ``latency_s``. Empty when no breakdown was read."""

    cluster: str
    svm: str
    workload: str  # ONTAP's workload name, e.g. sql_data-wid1234
    volume: str = ""
    lun: str = ""  # LUN path when the workload is a LUN's
    file: str = ""
    qtree: str = ""
    policy: str = ""  # QoS policy group ('' : none; autovol workloads have none)
    wid: str = ""
    iops: float | None = None
    read_iops: float | None = None
    write_iops: float | None = None
    latency_s: float | None = None
    read_latency_s: float | None = None
    write_latency_s: float | None = None
    components: Mapping[str, float] = field(default_factory=dict)
    size_bytes: float | None = None  # the workload's allocated size, for an adaptive ceiling
    used_bytes: float | None = None

    @property
    def dominant(self) -> tuple[str, float] | None:
        """The component that adds the most to an operation, with its seconds; None without a breakdown."""
        if not self.components:
            return None
        name = max(self.components, key=lambda k: self.components[k])
        return name, self.components[name]
