"""The scenarios where ONTAP itself adds the latency on purpose or by path: a QoS ceiling that holds
a workload down (``qos-throttle``), and I/O that reaches its LUN through the partner node
(``indirect-io``). In both the LUN's latency (SCSI layer) holds the extra time and the volume's
(WAFL) does not.
"""

from __future__ import annotations

from sanlens_sim.builder import Builder
from sanlens_sim.scenario_base import (
    MODERN,
    QUIET_DOMAINS,
    Knobs,
    balanced,
    builder_for,
    healthy_host,
    volumes_named,
)
from sanlens_sim.world import QosPolicy

# qos-throttle: sql-cap holds sql_data at 97 % of 2,000 IOPS; each op waits 24 ms for the ceiling
# on top of 0.7/0.9 ms of work (about 25 ms at the LUN); the host adds 0.3 ms of transport.
THROTTLE_CEILING = 2000.0
THROTTLE_OPS = 0.97 * THROTTLE_CEILING
THROTTLE_LAT_MS = (0.7, 0.9)
THROTTLE_DELAY_US = 24000.0
QOS_MIN_US = 40.0  # the floor of esx-lun on the same node takes this from each of sql_data's ops
TRANSPORT_MS = 0.3

# indirect-io: 90 % of app_data's ops arrive through the partner node's LIFs and cross the
# cluster interconnect, 0.5 ms each (0.45 ms per op), on 0.6/0.8 ms of work.
REMOTE_SHARE = 0.9
INTERCONNECT_US = 500.0
INDIRECT_OPS = 3000.0
INDIRECT_LAT_MS = (0.6, 0.8)


def qos_throttle(k: Knobs, phase: int) -> Builder:
    """sql_data (4 LUNs: 2 for Windows sql01, 2 for Linux ora01) capped by sql-cap, 2,000 IOPS
    not shared: ops at the ceiling, about 25 ms at the LUN of which 24 ms QoS Max, the array idle.
    Beside it every other kind of policy, none near its ceiling: a LUN's own fixed ceiling and
    floor (esx-lun), a ceiling shared by two volumes (reports-shared) and an adaptive one."""
    b = builder_for(k, MODERN)
    n1, n2 = b.node(QUIET_DOMAINS), b.node(QUIET_DOMAINS)
    a1 = b.aggregate(n1, [(12, 0.08)])
    sql = b.volume(a1, "sql_data", THROTTLE_OPS, read_share=0.7, lat_ms=THROTTLE_LAT_MS, luns=4)
    b.qos_policy(QosPolicy("sql-cap", max_iops=THROTTLE_CEILING), sql)
    luns = b.luns_of(sql)
    for lun in luns:
        b.delay(lun, THROTTLE_DELAY_US, QOS_MIN_US)
    win, lin = b.host("sql01"), b.linux_host("ora01")
    for i, lun in enumerate(luns):
        r_ms = lun.io.read_lat_us / 1000 + TRANSPORT_MS
        w_ms = lun.io.write_lat_us / 1000 + TRANSPORT_MS
        queue = lun.io.total_ops * (0.7 * r_ms + 0.3 * w_ms) / 1000  # Little's law: the demand waiting
        if i < 2:
            b.host_disk(win, lun, (r_ms, w_ms), idle=0.01, queue=queue)
        else:
            b.linux_disk(lin, lun, (r_ms, w_ms), idle=0.01, queue=queue)
    esx = b.volume(a1, "esx_ds", 1200.0, lat_ms=(0.5, 0.7), luns=2)
    b.qos_policy(QosPolicy("esx-lun", max_iops=5000.0, min_iops=300.0), b.luns_of(esx)[0])
    reports = [b.volume(a1, f"reports{i + 1}", 1500.0, lat_ms=(0.6, 0.8)) for i in range(2)]
    b.qos_policy(QosPolicy("reports-shared", shared=True, max_iops=10000.0, max_mbps=400.0), *reports)
    balanced(b, n2, "n02a", ops=1500.0)
    adaptive = QosPolicy(
        "extreme-adaptive",
        kind="adaptive",
        expected_iops_tb=6144.0,
        peak_iops_tb=12288.0,
        absolute_min_iops=1000.0,
    )
    b.qos_policy(adaptive, volumes_named(b, "n02a")[0])
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
    b.spare(n1)
    b.spare(n2)
    return b


def indirect_io(k: Knobs, phase: int) -> Builder:
    """app_data on node 1 reached by app01 (Linux) and app02 (Windows) only through node 2's LIFs:
    every path Active/Non-optimized, 90 % of the LUNs' ops remote, about 0.45 ms of interconnect in
    a latency of about 1.1 ms, well below every threshold."""
    b = builder_for(k, MODERN)
    n1, n2 = b.node(), b.node()
    a1 = b.aggregate(n1, [(12, 0.20)])
    app = b.volume(a1, "app_data", INDIRECT_OPS, read_share=0.7, lat_ms=INDIRECT_LAT_MS, luns=2)
    lin, win = b.linux_host("app01"), b.host("app02")
    for i, lun in enumerate(b.luns_of(app)):
        b.indirect(lun, n2, REMOTE_SHARE, INTERCONNECT_US)
        r_ms, w_ms = lun.io.read_lat_us / 1000 + TRANSPORT_MS, lun.io.write_lat_us / 1000 + TRANSPORT_MS
        queue = lun.io.total_ops * (0.7 * r_ms + 0.3 * w_ms) / 1000
        if i == 0:
            b.linux_disk(lin, lun, (r_ms, w_ms), idle=0.5, queue=queue, paths=2, optimized_paths=0)
        else:
            b.host_disk(win, lun, (r_ms, w_ms), idle=0.5, queue=queue, paths=2, optimized_paths=0)
    balanced(b, n1, "n01a", ops=1500.0, vols=2)
    balanced(b, n2, "n02a", ops=1500.0)
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
    b.spare(n1)
    b.spare(n2)
    return b
