"""The metric families sanlens builds in code, declared for docs/metrics.md.

The families fed by counter tables come from the ONTAP counter catalogue; these are
the others (self-monitoring, ONTAP inventory, host disks, diagnoses), held against a
real exporter page by tests/integration/test_docs_metrics.py.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    """A metric family built in code, as the docs describe it."""

    name: str
    type: str  # counter | gauge (info families are gauges with value 1)
    labels: tuple[str, ...]
    unit: str
    source: str
    meaning: str
    conditional: str = ""  # when a scrape may lack the family; empty: always there once polled


TARGET = ("target", "kind")
HOST = ("host", "disk")  # every host-disk counter and gauge; the LUN identity is on the info family only
HOST_INFO = ("host", "disk", "lun_serial", "cluster", "svm", "volume", "lun")
SUBJECT = (
    "diagnosis",
    "subject",
    "cluster",
    "node",
    "svm",
    "volume",
    "lun",
    "aggregate",
    "host",
    "disk",
    "port",
)
OPERATION = ("cluster", "aggregate", "svm", "volume", "raid_group", "operation")

SELF = (
    Family("sanlens_target_up", "gauge", TARGET, "—", "poller", "1 if the last poll of the target succeeded"),
    Family(
        "sanlens_poll_duration_seconds", "gauge", TARGET, "seconds", "poller", "wall time of the last poll"
    ),
    Family(
        "sanlens_last_poll_timestamp_seconds",
        "gauge",
        TARGET,
        "seconds",
        "poller",
        "Unix time of the last successful poll",
        "until the target's first successful poll",
    ),
    Family(
        "sanlens_poll_interval_seconds",
        "gauge",
        TARGET,
        "seconds",
        "config `poll_interval`",
        "configured poll interval of the target; `SanlensStaleData` compares the last poll against it",
    ),
    Family(
        "sanlens_lun_join_ambiguous",
        "gauge",
        ("serial", "cluster", "candidates"),
        "1",
        "host-array join",
        "a LUN serial several clusters present (SnapMirror active sync, identity-preserving SVM DR) with no "
        "fact telling which copy the hosts use (the config names no `cluster`, and both or neither copy is "
        "online and serving I/O); host disks join the copy on `cluster`, and stay on it until a fact decides",
        "only while a serial is ambiguous",
    ),
    Family(
        "sanlens_series_dropped",
        "gauge",
        ("target", "reason"),
        "count",
        "label values of the target's upstream (host disk and volume names, ONTAP object names)",
        "series left out of the current page because a label value is longer than 1024 bytes (UTF-8): "
        "one such value would make a Prometheus with `label_value_length_limit` refuse the whole scrape; "
        '`reason` is `label_value_too_long`; `target` "" counts sanlens\' own findings',
        "only while a series is left out",
    ),
    Family(
        "sanlens_poll_errors_total",
        "counter",
        (*TARGET, "reason"),
        "count",
        "poller",
        "failed polls by reason (`timeout`, `connection`, `tls`, `auth`, `http`, `parse`, `deadline`: abandoned at its deadline, `busy`: skipped while an abandoned one still runs, …)",
        "no series until a poll fails",
    ),
    Family("sanlens_polls_total", "counter", TARGET, "count", "poller", "polls attempted"),
    Family(
        "sanlens_build_info",
        "gauge",
        ("version", "python_version"),
        "—",
        "the running exporter",
        "always 1",
    ),
)

ONTAP_INVENTORY = (
    Family(
        "sanlens_ontap_cluster_info",
        "gauge",
        ("cluster", "version", "personality", "collection"),
        "—",
        "`/api/cluster` version, `san_optimized` and `disaggregated`",
        "always 1; `personality` is `unified` or `asa-r2`, `collection` is `tables` (the counter tables) or "
        "`statistics` (the objects' `statistics` fields)",
    ),
    Family(
        "sanlens_ontap_node_info",
        "gauge",
        ("cluster", "node", "model", "serial"),
        "—",
        "`/api/cluster/nodes`",
        "always 1",
    ),
    Family(
        "sanlens_ontap_lun_info",
        "gauge",
        ("cluster", "svm", "volume", "lun", "serial", "os_type", "node"),
        "—",
        "`/api/storage/luns`",
        "always 1; `serial` joins host disks to their LUN",
    ),
    Family(
        "sanlens_ontap_qos_workload_info",
        "gauge",
        ("cluster", "svm", "workload", "volume", "lun", "policy"),
        "—",
        "`/api/storage/qos/workloads`",
        "always 1; what a QoS workload is (a volume's, or the LUN a policy is set on) and its policy group",
        "on the QoS schedule (`qos_interval`)",
    ),
    Family(
        "sanlens_ontap_qos_policy_info",
        "gauge",
        ("cluster", "svm", "policy", "kind", "shared"),
        "—",
        "`/api/storage/qos/policies`",
        "always 1; `kind` is `fixed` or `adaptive`, `shared` whether a fixed ceiling is shared by its workloads",
        "only where QoS policies exist",
    ),
    *(
        Family(
            f"sanlens_ontap_qos_policy_{name}",
            "gauge",
            ("cluster", "svm", "policy"),
            unit,
            f"`/api/storage/qos/policies` `{source}`",
            what,
            "only where the policy sets it",
        )
        for name, unit, source, what in (
            ("max_ops_per_second", "ops/s", "fixed.max_throughput_iops", "a fixed ceiling"),
            ("min_ops_per_second", "ops/s", "fixed.min_throughput_iops", "a fixed floor"),
            ("max_bytes_per_second", "bytes/s", "fixed.max_throughput_mbps", "a fixed throughput ceiling"),
            (
                "absolute_min_ops_per_second",
                "ops/s",
                "adaptive.absolute_min_iops",
                "an adaptive policy's floor",
            ),
            (
                "peak_ops_per_second_per_terabyte",
                "ops/s per TB",
                "adaptive.peak_iops",
                "an adaptive ceiling per TB",
            ),
            (
                "expected_ops_per_second_per_terabyte",
                "ops/s per TB",
                "adaptive.expected_iops",
                "an adaptive floor per TB",
            ),
        )
    ),
    Family(
        "sanlens_ontap_volume_info",
        "gauge",
        ("cluster", "svm", "volume", "aggregate", "node", "style"),
        "—",
        "`/api/storage/volumes`",
        "always 1",
    ),
    Family(
        "sanlens_ontap_volume_move_done_ratio",
        "gauge",
        ("cluster", "svm", "volume", "state"),
        "ratio",
        "volume `movement.percent_complete`",
        "volume move progress, 0..1",
        "only while a volume moves",
    ),
    Family(
        "sanlens_ontap_aggregate_info",
        "gauge",
        ("cluster", "aggregate", "node", "disk_type"),
        "—",
        "`/api/storage/aggregates`",
        "always 1",
    ),
    Family(
        "sanlens_ontap_aggregate_disks",
        "gauge",
        ("cluster", "aggregate"),
        "count",
        "`block_storage.primary.disk_count`",
        "disks in the aggregate",
    ),
    Family(
        "sanlens_ontap_raid_operation_done_ratio",
        "gauge",
        ("cluster", "aggregate", "raid_group", "operation"),
        "ratio",
        "aggregate plexes: RAID group `reconstruct` / `recomputing_parity`, plex resync",
        "RAID background operation progress, 0..1; `operation` is `reconstruct`, `resync` or `recompute_parity`",
        "only while a RAID operation runs",
    ),
    Family(
        "sanlens_ontap_disk_info",
        "gauge",
        (
            "cluster",
            "node",
            "disk",
            "aggregate",
            "raid_group",
            "raid_position",
            "type",
            "rpm",
            "container",
            "state",
        ),
        "—",
        "`/api/storage/disks` + plex RAID groups (`raid_position`: `data`, `parity`, `dparity`, `tparity`)",
        "always 1",
    ),
    Family(
        "sanlens_ontap_fc_port_info",
        "gauge",
        ("cluster", "node", "port", "state"),
        "—",
        "`/api/network/fc/ports`",
        "always 1; FC target port inventory and state",
    ),
    Family(
        "sanlens_ontap_fc_port_data_rate_bytes_per_second",
        "gauge",
        ("cluster", "node", "port"),
        "bytes/s",
        "`/api/network/fc/ports` `fabric.connected_speed` (Gbit/s) x 100 MB/s",
        "the port's nominal data rate (8G ≈ 800 MB/s, 16G ≈ 1,600 MB/s, 32G ≈ 3,200 MB/s)",
        "only for ports with a negotiated speed",
    ),
    Family(
        "sanlens_ontap_namespace_info",
        "gauge",
        ("cluster", "svm", "volume", "namespace", "uuid", "os_type", "node", "state"),
        "—",
        "`/api/storage/namespaces`",
        "always 1; NVMe namespace inventory, `uuid` joins the host's namespace (Linux `uuid.<uuid>`)",
        "only on clusters with NVMe namespaces",
    ),
    Family(
        "sanlens_ontap_ip_lif_info",
        "gauge",
        ("cluster", "node", "svm", "lif", "port", "protocol", "state"),
        "—",
        "`/api/network/ip/interfaces` (`services` `data_iscsi`, `data_nvme_tcp`)",
        "always 1; an iSCSI or NVMe/TCP data LIF and the Ethernet port it sits on now",
        "only on clusters with iSCSI or NVMe/TCP LIFs",
    ),
    Family(
        "sanlens_ontap_ethernet_port_data_rate_bytes_per_second",
        "gauge",
        ("cluster", "node", "port"),
        "bytes/s",
        "`/api/network/ethernet/ports` `speed` (Mbit/s) x 125 kB/s",
        "the data rate of an Ethernet port under iSCSI or NVMe/TCP LIFs (25 GbE = 3,125 MB/s)",
        "only for ports under SAN LIFs with a known speed",
    ),
    Family(
        "sanlens_ontap_availability_zone_info",
        "gauge",
        ("cluster", "zone", "node"),
        "—",
        "`/api/storage/availability-zones` `nodes`",
        "always 1; the ASA r2 storage availability zone of each node (ASA r2 has no aggregates)",
        "only on ASA r2 systems",
    ),
    Family(
        "sanlens_ontap_endpoint_missing",
        "gauge",
        ("cluster", "endpoint", "reason"),
        "—",
        "the cluster's answers (404, 403 or 400)",
        "1 for a REST endpoint the cluster refuses: `not_found` (its release or platform lacks it), `forbidden` "
        "(outside the role) or `refused`; the rest of the poll goes on (also logged once per release)",
        "only while an endpoint is refused",
    ),
    Family(
        "sanlens_ontap_counter_missing",
        "gauge",
        ("cluster", "table", "counter"),
        "—",
        "the cluster's `counter_schemas`",
        "1 for a counter the catalogue wants that this cluster's schema lacks "
        "(also logged once per table and version)",
        "only while a counter is missing",
    ),
    Family(
        "sanlens_ontap_partial_aggregation_rows",
        "gauge",
        ("cluster", "table", "policy"),
        "count",
        "counter rows with `aggregation.complete: false`",
        "rows whose aggregation was incomplete (a node unreachable) in the last poll; their counter "
        "series are left out of the page for that poll (a partial sum is never a counter sample); "
        "`policy` is what the diagnoses do with them: the table's `keep` or `skip`",
    ),
    Family(
        "sanlens_ontap_malformed_records",
        "gauge",
        ("cluster", "table", "problem"),
        "count",
        "counter-table records; for `collection: harvest`, the query API's samples (`table` harvest)",
        "records of the last poll skipped as garbage: `no_id`, `no_counters`, `duplicate_id` (the first "
        "record of an id is kept), or for Harvest `unreadable` (not a named series with a number) and "
        "`duplicate` (the first series wins); a poll whose records are all garbage fails as `malformed`",
        "only while records are skipped",
    ),
    Family(
        "sanlens_ontap_counter_table_missing",
        "gauge",
        ("cluster", "table"),
        "—",
        "`/api/cluster/counter/tables/{table}` answering 404",
        "1 for a configured counter table this cluster does not serve (a release or hardware without "
        "it); the rest of the poll goes on, and it is logged once per table and version",
        "only while a table is missing",
    ),
)

HOSTS = (
    Family(
        "sanlens_host_disk_info",
        "gauge",
        (*HOST_INFO, "drives", "data_class", "mapping"),
        "—",
        "host source + LUN mapping",
        "always 1: the disk, the ONTAP LUN it maps to (empty when unmapped), its drive letters and how it "
        "was mapped (`serial`, `static`, `none`: a local disk). Join it on `(host, disk)`",
    ),
    Family(
        "sanlens_host_disk_ops_total",
        "counter",
        (*HOST, "op"),
        "count",
        "PhysicalDisk Disk Reads/sec, Disk Writes/sec (uint32 PERF_COUNTER_COUNTER: counted mod 2^32); "
        "Linux `node_disk_reads_completed_total`, `writes_`, `discards_`, `flush_requests_total` (64-bit)",
        "operations completed; `op` is `read` or `write` (and `discard`, `flush` on Linux)",
    ),
    Family(
        "sanlens_host_disk_latency_seconds_total",
        "counter",
        (*HOST, "op"),
        "seconds",
        "PhysicalDisk % Disk Read/Write Time (uint64 PERF_PRECISION_100NS_TIMER, x 1e-7); else the "
        "Avg. Disk sec/Read, sec/Write numerator (uint32 PERF_AVERAGE_TIMER, mod 2^32); Linux "
        "`node_disk_read_time_seconds_total` etc. (32-bit ms, mod 2^32 ms)",
        "Σ latency = the queue-length integral (Little's law); `rate(latency) / rate(ops)` = Avg. Disk sec/op",
    ),
    Family(
        "sanlens_host_disk_bytes_total",
        "counter",
        (*HOST, "op"),
        "bytes",
        "PhysicalDisk Disk Read/Write Bytes/sec (uint64 PERF_COUNTER_BULK_COUNT); Linux "
        "`node_disk_read_bytes_total`, `written_bytes_total`",
        "bytes transferred",
    ),
    Family(
        "sanlens_host_disk_idle_seconds_total",
        "counter",
        HOST,
        "seconds",
        "PhysicalDisk % Idle Time (uint64 PERF_PRECISION_100NS_TIMER, x 1e-7)",
        "`rate()` = idle ratio 0..1 (% Idle Time / 100)",
        "Windows hosts; Linux counts busy time instead",
    ),
    Family(
        "sanlens_host_disk_split_ios_total",
        "counter",
        HOST,
        "count",
        "PhysicalDisk Split IO/Sec (uint32 PERF_COUNTER_COUNTER)",
        "split I/Os",
        "Windows hosts",
    ),
    Family(
        "sanlens_host_disk_queue_length",
        "gauge",
        HOST,
        "count",
        "PhysicalDisk Current Disk Queue Length (uint32 PERF_COUNTER_RAWCOUNT); Linux `node_disk_io_now`",
        "requests outstanding at poll time",
    ),
    Family(
        "sanlens_host_disk_queue_depth",
        "gauge",
        HOST,
        "count",
        "config `queue_depth` (disk entry, else the Linux textfile `sanlens_linux_disk_queue_depth`, else host)",
        "per-LUN HBA queue depth",
    ),
    Family(
        "sanlens_host_disk_paths",
        "gauge",
        HOST,
        "count",
        "MPIO (textfile script, WinRM), dm-multipath (node_exporter's dmmultipath path states), else config "
        "`paths`",
        "active paths (Active/Optimized + Active/Unoptimized where the host reports states)",
    ),
    Family(
        "sanlens_host_disk_optimized_paths",
        "gauge",
        HOST,
        "count",
        "MPIO path states (textfile `state` label, WinRM DSM_QueryLBPolicy_V2)",
        "ALUA Active/Optimized paths, the ones that carry I/O; Q_eff = queue_depth x optimized paths",
        "only for disks whose host reports ALUA path states",
    ),
    Family(
        "sanlens_host_disk_configured_paths",
        "gauge",
        HOST,
        "count",
        "config `paths` (disk entry, else host); on Linux at least the path devices the map lists",
        "paths the disk should have; fewer active is `host_path_loss`",
    ),
    Family(
        "sanlens_host_disk_busy_seconds_total",
        "counter",
        HOST,
        "seconds",
        "Linux `node_disk_io_time_seconds_total` (io_ticks, 32-bit ms, mod 2^32 ms)",
        "busy time as the kernel counts it (iostat's %util); kernels from 5.0 until the 2024 io_ticks fix "
        "charge a whole jiffy per I/O start, so sanlens's idle ratio bounds it by the requests in flight",
        "Linux hosts (node_exporter)",
    ),
    Family(
        "sanlens_host_disk_queue_seconds_total",
        "counter",
        HOST,
        "seconds",
        "Linux `node_disk_io_time_weighted_seconds_total` (32-bit ms, mod 2^32 ms)",
        "since 5.0 the summed durations of completed requests of every kind, discards and flushes "
        "included (iostat's aqu-sz); not read as reads and writes in flight, which come from their own "
        "time sums",
        "Linux hosts (node_exporter)",
    ),
    Family(
        "sanlens_host_disk_multipath_info",
        "gauge",
        ("host", "disk", "device", "wwid"),
        "—",
        "`node_dmmultipath_device_info` or `node_disk_device_mapper_info` (uuid `mpath-<WWID>`)",
        "always 1: a Linux disk's kernel device (`dm-N`) and SCSI WWID, the key of the LUN join "
        "(`3600a0980` + the hex of the LUN serial)",
        "Linux disks with a WWID",
    ),
    Family(
        "sanlens_host_disk_path_info",
        "gauge",
        ("host", "disk", "path", "state", "access_state"),
        "—",
        "`node_dmmultipath_path_state` (/sys/block/<path>/device/state); textfile "
        "`sanlens_linux_disk_access_state`",
        "always 1: a path device of the disk, its device state (`running`; `transport-offline`, "
        "`offline`, `blocked`: failed) and ALUA access state where exported",
        "Linux multipath disks",
    ),
    Family(
        "sanlens_host_disk_path_ops_total",
        "counter",
        ("host", "disk", "path", "op"),
        "count",
        "`node_disk_reads_completed_total`, `writes_completed_total` of the path device",
        "operations completed through the path; `op` is `read` or `write`",
        "Linux multipath disks",
    ),
    Family(
        "sanlens_host_disk_path_latency_seconds_total",
        "counter",
        ("host", "disk", "path", "op"),
        "seconds",
        "`node_disk_read_time_seconds_total`, `write_time_seconds_total` of the path device (32-bit ms)",
        "Σ latency of the path's operations; `rate(latency) / rate(ops)` = its seconds per op",
        "Linux multipath disks",
    ),
    Family(
        "sanlens_host_disk_path_bytes_total",
        "counter",
        ("host", "disk", "path", "op"),
        "bytes",
        "`node_disk_read_bytes_total`, `written_bytes_total` of the path device",
        "bytes through the path",
        "Linux multipath disks",
    ),
    Family(
        "sanlens_host_disk_path_busy_seconds_total",
        "counter",
        ("host", "disk", "path"),
        "seconds",
        "`node_disk_io_time_seconds_total` of the path device (32-bit ms)",
        "busy time of the path device as the kernel counts it (bounded as the disk's is)",
        "Linux multipath disks",
    ),
)

DIAGNOSES = (
    Family(
        "sanlens_diagnosis_state",
        "gauge",
        SUBJECT,
        "—",
        "diagnosis engine",
        "1 warning, 2 critical; present for as long as the subject is non-ok (so `for:` clauses work), "
        "absent for a healthy subject",
        "only while the state is above 0",
    ),
    Family(
        "sanlens_diagnosis_subjects",
        "gauge",
        ("diagnosis", "state"),
        "count",
        "diagnosis engine",
        "subjects the diagnosis judged at its last run, by `state` (`ok`, `warning`, `critical`)",
    ),
    Family(
        "sanlens_diagnosis_incident",
        "gauge",
        ("diagnosis", "subject", "incident", "role"),
        "1",
        "diagnosis engine (attribution)",
        "the incident (root cause) a non-ok finding belongs to: a cause's own, or for an explained symptom "
        '(`role="symptom"`) its primary cause\'s; alerts group and inhibit by it',
        "only while the state is above 0",
    ),
    Family(
        "sanlens_diagnosis_cause",
        "gauge",
        ("diagnosis", "subject", "cause_diagnosis", "cause_subject"),
        "1",
        "diagnosis engine (attribution)",
        "a cause finding on the I/O path of a symptom finding (host disk -> LUN -> volume -> aggregate -> "
        "node, FC ports); the cause may still be inside its sustain window",
        "only while the symptom's state is above 0",
    ),
    Family(
        "sanlens_latency_component_seconds",
        "gauge",
        ("subject", "cluster", "svm", "volume", "lun", "host", "disk", "component"),
        "seconds",
        "diagnosis engine (the waterfall)",
        "where a subject's latency goes per operation: `host_queue`, `transport`, then ONTAP's components "
        "(`network`, `cluster`, `data`, `disk`, `qos_max`, `qos_min`, `nvram`, ...), or `array` without a breakdown",
        "only for non-ok subjects and the 10 slowest QoS workloads",
    ),
    Family(
        "sanlens_diagnosis_location_info",
        "gauge",
        ("diagnosis", "subject", "node", "aggregate"),
        "1",
        "diagnosis engine",
        "where a non-ok finding's subject is now (a LUN's or a host disk's node and aggregate): not on the "
        "finding's own series, whose labels are its identity, so a volume move never restarts an alert's `for:`",
        "only while the state is above 0 and the subject's place is known",
    ),
    Family(
        "sanlens_diagnosis_score",
        "gauge",
        SUBJECT,
        "ratio",
        "diagnosis engine",
        "how strongly the signature matches, 0..1",
        "only while the state is above 0",
    ),
    Family(
        "sanlens_diagnosis_since_timestamp_seconds",
        "gauge",
        SUBJECT,
        "seconds",
        "diagnosis engine",
        "Unix time the current non-ok state began",
        "only while the state is above 0",
    ),
    Family(
        "sanlens_diagnosis_evidence",
        "gauge",
        (*SUBJECT, "evidence"),
        "in the name",
        "diagnosis engine",
        "the evidence behind a finding, one series per value; the unit is in the `evidence` name "
        "(e.g. `host_read_latency_seconds`, `host_idle_ratio`)",
        "only while the state is above 0",
    ),
    Family(
        "sanlens_diagnosis_threshold",
        "gauge",
        ("diagnosis", "threshold"),
        "in the name",
        "diagnosis registry + config `diagnose.thresholds`",
        "the configured thresholds, and `sustain_seconds` / `exit_seconds` after `sustain_scale`",
    ),
    Family(
        "sanlens_background_operation_done_ratio",
        "gauge",
        OPERATION,
        "ratio",
        "RAID operations and volume moves",
        "progress of an active RAID operation or volume move",
        "only while one runs",
    ),
    Family(
        "sanlens_background_operation_eta_seconds",
        "gauge",
        OPERATION,
        "seconds",
        "RAID operations and volume moves",
        "time left, from the observed progress rate",
        "only while one runs, from its second observation",
    ),
)

FAMILIES: tuple[Family, ...] = SELF + ONTAP_INVENTORY + HOSTS + DIAGNOSES

# What the catalogue's help text does not say about a counter-table family.
CATALOGUE_NOTES: dict[str, str] = {
    "sanlens_ontap_node_processors": "without `num_processors`, `controller.cpu.count` of `/api/cluster/nodes`",
    "sanlens_ontap_node_cpu_busy_seconds_total": "ONTAP counts it in µs",
    "sanlens_ontap_node_domain_busy_seconds_total": "÷ elapsed = share of ONE core; the domains of a node sum to N_cpu",
    "sanlens_ontap_node_disk_bytes_total": "the raw values count bytes, whatever the schema's `kb_per_sec` says "
    "(see [ONTAP collection](ontap.md#cooking-and-units))",
    "sanlens_ontap_wafl_cp_total": "`cp_count` is an array by trigger",
}

# The order tables appear in; tables not listed follow in catalogue order.
TABLE_ORDER = ("system:node", "lun", "volume", "disk:constituent", "fcp_lif", "fcp", "wafl")
