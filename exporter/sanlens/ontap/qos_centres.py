"""ONTAP's QoS service and delay centres, and the latency component each one is part of.

The ``qos_detail`` and ``qos_detail_volume`` counter tables (ZAPI ``workload_detail`` and
``workload_detail_volume``) report, per workload and node, each *centre* an operation visits:
its ``visits`` (per second) and average ``service_time`` and ``wait_time`` per visit, and
``in_latency_path``. ``qos statistics volume latency show`` prints the same time grouped into
columns. Which centre feeds which column is not published as a table; this mapping reads it
from two public sources:

- the column descriptions of the CLI reference (``qos statistics volume latency show``:
  Network is the N-Blade, the protocol front end, renamed ``N-Blade`` in the newest releases;
  Data the D-Blade, renamed ``D-Blade``; Cluster the interconnect between nodes; QoS Max and
  QoS Min the policy group's ceiling and floor; NVRAM the NVRAM transfer; Cloud the object
  store; FlexCache; SM Sync SnapMirror Synchronous);
- the centre names NetApp Harvest's ``workload_detail`` templates mapped to resources before
  they were removed (``CPU_nblade`` frontend, ``CPU_dblade`` backend, ``DELAY_CENTER_*``).

A centre outside the mapping is kept as ``other`` so the parts still add up to the
workload's latency; a centre that reports ``in_latency_path`` 0 (background CPU, idle) adds
nothing to an operation's latency and is left out.
"""

from __future__ import annotations

OTHER = "other"
# the counter tables (statistics show -object names and their REST tables) that carry a workload's
# centres, and those that carry its totals
DETAIL_TABLES = frozenset({"workload_detail", "workload_detail_volume", "qos_detail", "qos_detail_volume"})
WORKLOAD_TABLES = frozenset({"workload", "workload_volume", "qos", "qos_volume"})
# centre name as ONTAP reports it -> component (a name of sanlens.qos.QOS_COMPONENTS)
CENTRES: dict[str, str] = {
    "CPU_nblade": "network",
    "DELAY_CENTER_NETWORK": "network",
    "DELAY_CENTER_CLUSTER_INTERCONNECT": "cluster",
    "CPU_dblade": "data",
    "DELAY_CENTER_WAFL_SUSP_OTHER": "data",
    "DELAY_CENTER_WAFL_SUSP_CP": "data",
    "DELAY_CENTER_WAFL_ADM_CTRL": "data",
    "DELAY_CENTER_DISK_IO": "disk",
    "DELAY_CENTER_QOS_LIMIT": "qos_max",
    "DELAY_CENTER_QOS_MIN_THROUGHPUT": "qos_min",
    "DELAY_CENTER_NVLOG_TRANSFER": "nvram",
    "DELAY_CENTER_CLOUD_IO": "cloud",
    "DELAY_CENTER_FLEXCACHE_RAL": "flexcache",
    "DELAY_CENTER_FLEXCACHE_SPINHI": "flexcache",
    "DELAY_CENTER_SYNC_REPL": "sm_sync",
}
# Per-aggregate disk centres carry the aggregate's name (DISK_SSD_aggr1, DISK_HDD_aggr2).
_PREFIXES = (("DISK_", "disk"),)


def component(centre: str) -> str:
    """The latency component ``centre`` is part of; ``other`` when the mapping does not know it."""
    hit = CENTRES.get(centre)
    if hit is not None:
        return hit
    for prefix, comp in _PREFIXES:
        if centre.startswith(prefix):
            return comp
    return OTHER


def split_instance(instance: str, centre: str = "") -> tuple[str, str, str]:
    """``node1:sql_data-wid1234.CPU_dblade`` -> (node, workload, centre).

    A ``qos_detail*`` row id is the node, the workload and the centre; the centre comes from the
    row's ``resource_name``/``resource.name`` property when it has one (a workload name may hold
    dots), else from after the last dot."""
    node, sep, rest = instance.partition(":")
    if not sep:
        node, rest = "", instance
    if centre and rest.endswith("." + centre):
        return node, rest[: -len(centre) - 1], centre
    workload, dot, tail = rest.rpartition(".")
    if not dot:
        return node, rest, centre
    return node, workload, centre or tail


def shares(times: dict[str, float]) -> dict[str, float]:
    """Each component's share of the time a workload's operations spent in the latency path.

    ``times`` is seconds per second spent in each component (visits x (service + wait) per
    visit, all from one response). Shares of one response are consistent with each other; the
    caller applies them to the workload's own latency (one table's own sample), never dividing a
    centre's time by operations counted in another request at another moment."""
    total = sum(v for v in times.values() if v > 0)
    if total <= 0:
        return {}
    return {k: v / total for k, v in times.items() if v > 0}
