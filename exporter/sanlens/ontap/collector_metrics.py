"""The ONTAP source's exposition: one poll's inventory, gaps and raw counters as metric families.

Raw cumulative counters are exposed as ONTAP reports them, scaled to SI units (PromQL
computes rates); the inventory's info series carry the identities dashboards join on.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sanlens.model import Metric, MetricBuilder
from sanlens.ontap.cooking import keeps_partial
from sanlens.ontap.row_block import RowBlock

if TYPE_CHECKING:  # the source renders itself here
    from sanlens.ontap.collector import OntapSource

CLUSTER_INFO_HELP = "ONTAP cluster, version, personality (unified or asa-r2) and collection path (tables, statistics or harvest)."
MALFORMED_HELP = (
    "Records of the last poll skipped as garbage, by table and problem: no id, no counters, an id repeated "
    "(the first record wins), or for Harvest a sample that is not a named series with a number."
)


def render(src: OntapSource, rows: Mapping[str, RowBlock]) -> tuple[Metric, ...]:
    """The poll's families: the inventory's info series, what the cluster lacks, and every counter."""
    b = MetricBuilder()
    c = src.name
    inv = src.inventory
    v = src.version
    b.add(
        "sanlens_ontap_cluster_info",
        "gauge",
        CLUSTER_INFO_HELP,
        {
            "cluster": c,
            "version": str(v or ""),
            "personality": src.caps.personality,
            "collection": "statistics" if src._fallback else "tables",
        },
        1,
    )
    for node, n in inv.nodes.items():
        b.add("sanlens_ontap_node_info", "gauge", "ONTAP node inventory.",
              {"cluster": c, "node": node, "model": n["model"], "serial": n["serial"]}, 1)  # fmt: skip
    _info(b, "sanlens_ontap_lun_info", "ONTAP LUN inventory; serial joins host disks.",
          ("cluster", "svm", "volume", "lun", "serial", "os_type", "node"),
          [(c, x["svm"], x["volume"], x["lun"], x["serial"], x["os_type"], x["node"]) for x in inv.luns])  # fmt: skip
    aggr_node = {a: i["node"] for a, i in inv.aggregates.items()}
    _info(b, "sanlens_ontap_volume_info", "ONTAP volume inventory.",
          ("cluster", "svm", "volume", "aggregate", "node", "style"),
          [(c, svm, vol, i["aggregate"], aggr_node.get(i["aggregate"], ""), i["style"])
           for (svm, vol), i in inv.volumes.items()])  # fmt: skip
    for (svm, vol), i in inv.volumes.items():
        if i["move_state"] and i["move_percent"] is not None:
            b.add("sanlens_ontap_volume_move_done_ratio", "gauge", "Volume move progress, 0..1 (only while moving).",
                  {"cluster": c, "svm": svm, "volume": vol, "state": i["move_state"]}, float(i["move_percent"]) / 100.0)  # fmt: skip
    for a, i in inv.aggregates.items():
        b.add("sanlens_ontap_aggregate_info", "gauge", "ONTAP aggregate inventory.",
              {"cluster": c, "aggregate": a, "node": i["node"], "disk_type": i["disk_type"]}, 1)  # fmt: skip
        if i["disk_count"] is not None:
            b.add("sanlens_ontap_aggregate_disks", "gauge", "Disks in the aggregate.",
                  {"cluster": c, "aggregate": a}, float(i["disk_count"]))  # fmt: skip
    for op in inv.raid_ops:
        b.add("sanlens_ontap_raid_operation_done_ratio", "gauge", "RAID background operation progress, 0..1 (only while active).",
              {"cluster": c, "aggregate": op.aggregate, "raid_group": op.raid_group, "operation": op.operation},
              float(op.percent or 0) / 100.0)  # fmt: skip
    group, position = inv.disk_raid_group, inv.disk_position
    _info(b, "sanlens_ontap_disk_info", "ONTAP disk inventory.",
          ("cluster", "node", "disk", "aggregate", "raid_group", "raid_position", "type", "rpm", "container", "state"),
          [(c, i["node"], d, i["aggregate"], group.get(d, ""), position.get(d, ""), i["type"], i["rpm"],
            i["container"], i["state"]) for d, i in inv.disks.items()])  # fmt: skip
    order = {t: i for i, t in enumerate(src.target.tables)}
    for table, lacking in sorted(src.missing.items(), key=lambda kv: order.get(kv[0], len(order))):
        for counter in lacking:
            b.add("sanlens_ontap_counter_missing", "gauge",
                  "A counter sanlens uses that the cluster's counter schema lacks (1 while missing).",
                  {"cluster": c, "table": table, "counter": counter}, 1)  # fmt: skip
    for table in sorted(src.tables_missing, key=lambda t: order.get(t, len(order))):
        b.add("sanlens_ontap_counter_table_missing", "gauge",
              "A counter table sanlens is configured to read that the cluster answers 404 for (1 while missing).",
              {"cluster": c, "table": table}, 1)  # fmt: skip
    for table, n_partial in sorted(src.partial.items(), key=lambda kv: order.get(kv[0], len(order))):
        b.add("sanlens_ontap_partial_aggregation_rows", "gauge",
              "Counter rows whose aggregation was incomplete (a node unreachable) in the last poll.",
              {"cluster": c, "table": table, "policy": "keep" if keeps_partial(table) else "skip"},
              float(n_partial))  # fmt: skip
    for table, problems in sorted(src.malformed.items(), key=lambda kv: order.get(kv[0], len(order))):
        for problem, count in sorted(problems.items()):
            b.add("sanlens_ontap_malformed_records", "gauge", MALFORMED_HELP,
                  {"cluster": c, "table": table, "problem": problem}, float(count))  # fmt: skip
    for x in inv.namespaces:
        b.add("sanlens_ontap_namespace_info", "gauge", "ONTAP NVMe namespace inventory; uuid joins host namespaces.",
              {"cluster": c, "svm": x["svm"], "volume": x["volume"], "namespace": x["lun"], "uuid": x["uuid"],
               "os_type": x["os_type"], "node": x["node"], "state": x["state"]}, 1)  # fmt: skip
    for (svm, lif), i in sorted(inv.ip_lifs.items()):
        b.add("sanlens_ontap_ip_lif_info", "gauge", "iSCSI and NVMe/TCP data LIFs and the Ethernet port each sits on.",
              {"cluster": c, "node": i["node"], "svm": svm, "lif": lif, "port": i["port"],
               "protocol": i["protocol"], "state": i["state"]}, 1)  # fmt: skip
    for (node, port), p in sorted(inv.eth_ports.items()):
        if p["speed_gbps"]:
            b.add("sanlens_ontap_ethernet_port_data_rate_bytes_per_second", "gauge",
                  "Ethernet port's data rate under SAN LIFs: 125 MB/s per Gbit/s of its speed.",
                  {"cluster": c, "node": node, "port": port}, p["speed_gbps"] * 1.25e8)  # fmt: skip
    for node, zone in sorted(inv.zones.items()):
        b.add("sanlens_ontap_availability_zone_info", "gauge",
              "ASA r2 storage availability zone of each node (ASA r2 has no aggregates).",
              {"cluster": c, "zone": zone, "node": node}, 1)  # fmt: skip
    for endpoint, reason in sorted(src.caps.missing.items()):
        b.add("sanlens_ontap_endpoint_missing", "gauge",
              "A REST endpoint the cluster refuses (1 while refused): absent on its release or platform, or outside the role.",
              {"cluster": c, "endpoint": endpoint, "reason": reason}, 1)  # fmt: skip
    for (node, port), p in inv.fc_ports.items():
        b.add("sanlens_ontap_fc_port_info", "gauge", "FC target port inventory and state.",
              {"cluster": c, "node": node, "port": port, "state": p["state"]}, 1)  # fmt: skip
        if p["speed_gbps"]:
            b.add("sanlens_ontap_fc_port_data_rate_bytes_per_second", "gauge",
                  "FC port's nominal data rate: 100 MB/s per Gbit/s of negotiated speed (fabric.connected_speed).",
                  {"cluster": c, "node": node, "port": port}, p["speed_gbps"] * 1e8)  # fmt: skip
    # a row with incomplete aggregation is a sum over the constituents that answered: exporting it
    # would show Prometheus a counter that dropped (a reset, and a rate() spike on the drop and on the
    # recovery). Its series are left out for the poll: a gap, not a wrong value.
    partial = src._partial_ids
    node_label = next((lab for lab in src.specs["system:node"].labels if lab.name == "node"), None)
    nodes = rows.get("system:node")
    procs = nodes.counters.get("num_processors") if nodes is not None else None
    procs_from_table = {
        node_label.value(r.properties, r.instance)
        for r, n in zip(nodes.refs(), procs, strict=True)
        if n is not None and r.instance not in partial.get("system:node", ())
    } if node_label and nodes is not None and procs is not None else set()  # fmt: skip
    for node, n in inv.nodes.items():
        if node not in procs_from_table and n["processors"] is not None:
            b.add("sanlens_ontap_node_processors", "gauge", "Processors in the node.",
                  {"cluster": c, "node": node}, float(n["processors"]))  # fmt: skip
    _qos(b, src)
    for table, trows in rows.items():
        tdef = src.specs[table]
        if not tdef.metrics:  # read for the diagnoses only (qos_detail*: far too many rows to export)
            continue
        # each counter appends to its family's columns directly: no call per sample
        plan = [
            (name, *b.column(fam, mtype, help_, lnames, by is not None), by, scale)
            for name, fam, mtype, help_, lnames, by, scale in src.emit_plan(table)
        ]
        exported = tdef.export_labels
        skip = partial.get(table, frozenset())
        at = [i for i, inst in enumerate(trows.instances) if inst not in skip] if skip else range(len(trows))
        # each row's label values, once for all its counters
        ids = trows.instances
        row_keys = list(
            zip([c] * len(ids), *(lab.column(trows.properties, ids) for lab in exported), strict=True)
        )
        # a ``by`` label's keys, made once per value: the families split by it (ops, latency and
        # bytes by op=read) share one tuple per row, kept with the page until the next poll
        by_keys: dict[str, list[tuple[str, ...]]] = {}
        for name, keys, values, by, scale in plan:
            col = trows.counters.get(name)
            if col is None:
                continue
            if not skip:
                try:
                    scalars = array("d", col)  # every row holds one number: the whole column at once
                except (TypeError, OverflowError):
                    pass  # a row lacks it, or holds an array counter: row by row
                else:
                    if by is None:
                        keys.extend(row_keys)
                    else:
                        keyed = by_keys.get(by)
                        if keyed is None:
                            keyed = by_keys[by] = [(*key, by) for key in row_keys]
                        keys.extend(keyed)
                    values.extend(scalars if scale == 1 else array("d", [x * scale for x in scalars]))
                    continue
            for k in at:
                cv = col[k]
                if cv is None:
                    continue
                if type(cv) is list:
                    for label, val in zip(trows.labels_of(name, k, len(cv)), cv, strict=True):
                        keys.append((*row_keys[k], label))
                        values.append(val * scale)
                else:
                    keys.append((*row_keys[k], by) if by is not None else row_keys[k])
                    values.append(cv * scale)
    return b.build()


# a policy's limits, exported as gauges: (family, QosPolicy field, help)
_POLICY_LIMITS = (
    ("sanlens_ontap_qos_policy_max_ops_per_second", "max_iops",
     "Fixed QoS policy's ceiling, ops/s (for each workload, or their sum when shared)."),
    ("sanlens_ontap_qos_policy_max_bytes_per_second", "max_bytes_s",
     "Fixed QoS policy's throughput ceiling, bytes/s (ONTAP's MB/s are MiB/s)."),
    ("sanlens_ontap_qos_policy_min_ops_per_second", "min_iops", "Fixed QoS policy's floor, ops/s."),
    ("sanlens_ontap_qos_policy_peak_ops_per_second_per_terabyte", "peak_iops_per_tb",
     "Adaptive QoS policy's ceiling per TB of each workload's allocated or used space (peak_iops)."),
    ("sanlens_ontap_qos_policy_expected_ops_per_second_per_terabyte", "expected_iops_per_tb",
     "Adaptive QoS policy's floor per TB of each workload's allocated space (expected_iops)."),
    ("sanlens_ontap_qos_policy_absolute_min_ops_per_second", "absolute_min_iops",
     "Adaptive QoS policy's least ceiling, whatever the workload's size (absolute_min_iops)."),
)  # fmt: skip


def _info(
    b: MetricBuilder, name: str, help_: str, names: tuple[str, ...], keys: list[tuple[str, ...]]
) -> None:
    """An info family (every value 1) from its label tuples: tens of thousands of rows at scale, so
    no mapping per row."""
    if keys:  # a family with no row is no family
        into, values = b.column(name, "gauge", help_, names)
        into += keys
        values.extend(array("d", [1.0]) * len(keys))


def _qos(b: MetricBuilder, src: OntapSource) -> None:
    """The QoS workloads' identities and the policies' limits, from the last QoS poll (the workloads'
    ops and latency are the ``qos`` table's counters; where their latency goes is not exported)."""
    c = src.name
    _info(b, "sanlens_ontap_qos_workload_info",
          "ONTAP QoS workload: the volume or LUN it is, and its policy ('' : none).",
          ("cluster", "svm", "workload", "volume", "lun", "policy"),
          [(c, w.svm, w.workload, w.volume, w.lun, w.policy) for w in src.qos.workloads])  # fmt: skip
    for p in src.qos.policies:
        key = {"cluster": c, "svm": p.svm, "policy": p.name}
        b.add("sanlens_ontap_qos_policy_info", "gauge",
              "ONTAP QoS policy group: fixed or adaptive, and whether its workloads share one ceiling.",
              {**key, "kind": p.kind, "shared": "true" if p.shared else "false"}, 1)  # fmt: skip
        for fam, attr, help_ in _POLICY_LIMITS:
            v = getattr(p, attr)
            if v is not None:
                b.add(fam, "gauge", help_, key, float(v))
