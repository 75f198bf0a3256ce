"""Which diagnoses a cluster's missing inputs starve, said per target instead of left silent.

A counter table a release lacks, an endpoint a role or a platform refuses, the statistics
path (no CPU domains, no disk busy) or an ASA r2 system (no aggregates) each leave some
diagnoses without data. ``status`` turns what the collector met into one document per
cluster, served at ``/diagnoses/inputs``: what is missing, and which diagnoses are not
evaluated (or evaluated without some evidence) because of it. Which diagnoses a missing table,
endpoint, Harvest family or label starves is derived from what each diagnosis declares it reads
(``Reads``) and from the catalogue; what the statistics path, ASA r2 and Harvest never carry is
said per diagnosis below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sanlens.diagnose.registry import REGISTRY
from sanlens.diagnose.spec import Reads
from sanlens.ontap.catalogue import catalogue

# REST collections polled beyond the counter tables: each refusal is reported, starving or not
ENDPOINTS = (
    "/api/storage/aggregates",
    "/api/storage/aggregates/{uuid}/plexes",
    "/api/storage/disks",
    "/api/storage/namespaces",
    "/api/network/fc/ports",
    "/api/network/ip/interfaces",
    "/api/network/ethernet/ports",
    "/api/storage/availability-zones",
    "/api/storage/qos/policies",
    "/api/storage/qos/workloads",
)


def _fed_by(name: str, declared: Callable[[Reads], tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(did for did, spec in REGISTRY.items() if name in declared(spec.reads))


# counter table -> the diagnoses that read it (whole judgement, or part of their evidence)
TABLE_FEEDS: dict[str, tuple[str, ...]] = {
    name: _fed_by(name, lambda r: r.tables) for name, t in catalogue().items() if t.rest
}
# REST endpoint -> the diagnoses that need what it returns
ENDPOINT_FEEDS: dict[str, tuple[str, ...]] = {e: _fed_by(e, lambda r: r.endpoints) for e in ENDPOINTS}
# what no statistics field carries, and what an ASA r2 system does not have
STATISTICS_LACK: dict[str, str] = {
    "cpu_domain_serial_bottleneck": "the statistics fields carry no CPU domains (counter table system:node)",
    "disk_busy_imbalance": "the statistics fields carry no disk busy (counter table disk:constituent)",
    "volume_affinity_concentration": "the statistics fields carry no CPU domains to weigh a hot volume against",
    "qos_throttle": "the statistics path reads no QoS workloads, policies or latency breakdown",
    "indirect_io": "the statistics fields carry no remote operations and no latency breakdown",
}
ASA_R2_LACK: dict[str, str] = {
    "disk_busy_imbalance": "ASA r2 has no aggregates",
    "aggregate_degraded": "ASA r2 has no aggregates",
    "volume_affinity_concentration": "ASA r2 has no aggregates",
    "background_operation_impact": "ASA r2 has no aggregates: only volume moves are judged",
}

# what sanlens does not read from NetApp Harvest's series (source: prometheus)
HARVEST_LACK: dict[str, str] = {
    "background_operation_impact": "RAID reconstruct and volume-move progress are not read from Harvest's series",
    "aggregate_degraded": "aggregate and RAID group state are not read from Harvest's series (aggr_new_status, "
    "aggr_labels state)",
    "fc_port_down": "Harvest's fcp series carry no port state",
    "disk_busy_imbalance": "Harvest's raid_disk_busy carries no RAID position: parity disks count as data",
    "cpu_domain_serial_bottleneck": "Harvest exports no processor count: serial occupancy is Kahuna's busy "
    "alone, without WAFL_Ex / (N_cpu - 1)",
    "volume_affinity_concentration": "Harvest exports no processor count: CPU pressure is Kahuna's busy alone, "
    "without WAFL_Ex per core",
    "lun_not_online": "Harvest's lun_labels carry no space reservation: only the LUN state is judged, not thin "
    "LUNs in nearly full volumes",
    "qos_throttle": "Harvest's series carry no latency breakdown (its workload_detail templates were removed): "
    "judged by ops against the ceiling alone, so never critical, and QoS Max and QoS Min are not quoted",
    "indirect_io": "Harvest's series carry no latency breakdown: judged by the LUN's remote operations alone",
}
# no fcp_*, iscsi_lif_* or nvme_lif_* series: Harvest reads an ASA r2 system with KeyPerf alone
NO_FRONT_END = (
    "no FC port or iSCSI / NVMe LIF performance in Harvest's series (on ASA r2 Harvest reads KeyPerf "
    "alone): no front-end evidence, the host side decides alone"
)
# why a group of tables (the catalogue's ``harvest.group``) none of whose series arrive starves
GROUP_ABSENT: dict[str, str] = {"front_end": NO_FRONT_END}
# why an info family's ``required`` label missing from every series starves, by (family, label)
LABEL_ABSENT: dict[tuple[str, str], str] = {
    ("lun_labels", "serial_hex"): "lun_labels carry no serial_hex (NetApp Harvest before 26.02): host disks "
    "cannot be joined to their LUNs, so the array's side of this diagnosis is missing",
}


def _reads(did: str) -> set[str]:
    r = REGISTRY[did].reads
    return {*r.tables, *r.offline}


# Harvest exports a family only for objects that exist (an FC-only cluster has no LIF series), so a
# group of tables that stand in for one another is missing only when none of them gave a row, and
# starves the diagnoses that read every table of the group (the whole front end).
GROUP_FEEDS: dict[str, tuple[str, ...]] = {
    g: tuple(did for did in REGISTRY if members <= _reads(did))
    for g in sorted({t.harvest.group for t in catalogue().values() if t.harvest and t.harvest.group})
    for members in [{t.table for t in catalogue().values() if t.harvest and t.harvest.group == g}]
}
# a label the host join needs starves the diagnoses that join host disks to that table's rows
LABEL_FEEDS: dict[tuple[str, str], tuple[str, ...]] = {
    (i.name, label): tuple(did for did in REGISTRY if {"host", t.table} <= _reads(did))
    for t in catalogue().values()
    for i in (t.harvest.info if t.harvest else ())
    for label in i.required
}


def status(
    personality: str,
    collection: str,
    tables_missing: Iterable[str],
    counters_missing: Mapping[str, Iterable[str]],
    endpoints_missing: Mapping[str, str],
) -> dict[str, Any]:
    """One cluster's inputs: what is missing and, per diagnosis, why it is starved."""
    starved: dict[str, list[str]] = {}

    def add(ids: Iterable[str], why: str) -> None:
        for did in ids:
            starved.setdefault(did, []).append(why)

    for table in sorted(tables_missing):
        add(TABLE_FEEDS.get(table, ()), f"counter table {table} is missing")
    for table, counters in sorted(counters_missing.items()):
        names = sorted(counters)
        if names:
            add(TABLE_FEEDS.get(table, ()), f"counter table {table} lacks {', '.join(names)}")
    for endpoint, reason in sorted(endpoints_missing.items()):
        add(ENDPOINT_FEEDS.get(endpoint, ()), f"{endpoint} is refused ({reason})")
    if collection == "statistics":
        for did, why in STATISTICS_LACK.items():
            add((did,), why)
    if personality == "asa-r2":
        for did, why in ASA_R2_LACK.items():
            add((did,), why)
    return {
        "personality": personality,
        "collection": collection,
        "tables_missing": sorted(tables_missing),
        "counters_missing": {t: sorted(c) for t, c in sorted(counters_missing.items()) if c},
        "endpoints_missing": dict(sorted(endpoints_missing.items())),
        "starved": {did: sorted(set(why)) for did, why in sorted(starved.items())},
    }


def harvest_status(
    labels_missing: Mapping[str, Iterable[str]] | None = None, groups_absent: Iterable[str] = ()
) -> dict[str, Any]:
    """The inputs of a cluster read from Harvest's series through a Prometheus query API.

    ``labels_missing``: family -> labels the page lacks that sanlens reads (an older Harvest);
    ``groups_absent``: the table groups (``front_end``) none of whose tables gave a row."""
    starved = {did: [why] for did, why in HARVEST_LACK.items()}
    missing = {f: sorted(ls) for f, ls in sorted((labels_missing or {}).items()) if ls}
    for family, labels in missing.items():
        for label in labels:
            why = LABEL_ABSENT.get((family, label), f"{family} carry no {label}")
            for did in LABEL_FEEDS.get((family, label), ()):
                starved.setdefault(did, []).append(why)
    for group in groups_absent:
        for did in GROUP_FEEDS.get(group, ()):
            starved.setdefault(did, []).append(GROUP_ABSENT.get(group, f"no {group} series"))
    return {
        "personality": "",
        "collection": "prometheus",
        "tables_missing": [],
        "counters_missing": {},
        "endpoints_missing": {},
        "labels_missing": missing,
        "starved": {did: sorted(why) for did, why in sorted(starved.items())},
    }
