"""Harvest's series -> the OntapView the diagnoses read, by the catalogue's declarations.

Harvest exports cooked gauges, not counters: rates per second, averages in ONTAP's unit
(microseconds per op, percent) and deltas as the count of its own last poll. Which family feeds
which view field, its scale and its row key are the table's ``harvest`` declarations, read by one
builder (``harvest_rows``); what only labels say (a LUN's path and serial, a disk's RAID group, the
port a LIF sits on, an Ethernet port's link speed, a QoS workload's identity and its policy's
ceiling) is the small code per kind of row below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sanlens.model import (
    DiskStats,
    EthPortStats,
    FcPortStats,
    LifStats,
    LunStats,
    NodeStats,
    OntapVersion,
    OntapView,
    VolumeStats,
)
from sanlens.ontap.catalogue import TableDef, catalogue
from sanlens.ontap.harvest_series import Sample, Samples
from sanlens.ontap.views import measured
from sanlens.qos import QosPolicy, QosWorkload

ARRAY_LABEL = "metric"  # the label Harvest names an array counter's element by (node_cpu_domain_busy)
BIT_PER_GBIT = 1e9  # nic_labels' speed: Harvest's Nic plugin rewrites nic_common's `10000M` in bit/s
_SPEED = re.compile(r"(\d+(?:\.\d+)?)")


@dataclass(frozen=True, slots=True)
class HarvestRow:
    """One view row read from Harvest: its key, the labels of its series and of its info families,
    and its fields in the view's units."""

    key: dict[str, str]
    series: dict[str, str]  # the labels of its gauge series ({} when only an info family names it)
    info: dict[str, str] | None  # its info families' labels; None when none names it
    fields: dict[str, Any]


def harvest_rows(t: TableDef, s: Samples, polls: float = 1.0) -> list[HarvestRow]:
    """A table's rows from one query's samples, sorted by key. A field fed by several families is their
    sum, an array counter's a dict by element; a delta, a count of one Harvest poll, is scaled by the
    ``polls`` of Harvest's schedule in one interval of ours; an average over no operations is None
    (Harvest exports it as 0, where the counter tables' cooking leaves it unset)."""
    h = t.harvest
    if h is None:
        return []

    def key_of(lv: Mapping[str, str]) -> tuple[str, ...]:
        return tuple(lv.get(k, "") for k in h.key)

    keys = {key_of(lv) for f in h.rows for lv, _ in s.get(f, ())}
    labels: dict[str, dict[tuple[str, ...], dict[str, str]]] = {}  # family -> key -> its series' labels
    exported: dict[str, dict[tuple[str, ...], Any]] = {}  # counter -> key -> value (array: by element)
    for c in t.harvest_counters:
        fam: dict[tuple[str, ...], Any] = {}
        for lv, v in s.get(c.harvest, ()):
            k = key_of(lv)
            labels.setdefault(c.harvest, {})[k] = lv
            if c.array:
                fam.setdefault(k, {})[lv.get(ARRAY_LABEL, "")] = v
            else:
                fam[k] = v
        exported[c.name] = fam
    # a row's series labels: its row families' first, in their order
    order = [
        labels[f] for f in dict.fromkeys((*h.rows, *(c.harvest for c in t.harvest_counters))) if f in labels
    ]
    joins = [
        (i.join, {tuple(lv.get(j, "") for j in i.join): lv for lv, _ in s.get(i.name, ())})
        for i in h.info
        if i.join
    ]
    out = []
    for k in sorted(keys):
        kd = dict(zip(h.key, k, strict=True))
        fields: dict[str, Any] = {}
        for c in t.harvest_counters:
            got = exported[c.name].get(k)
            if got is None:
                continue
            scale = c.harvest_factor * (polls if c.spec.type == "delta" else 1.0)
            if c.array:
                fields.setdefault(c.view, {}).update({e: x * scale for e, x in got.items()})
            else:
                fields[c.view] = fields.get(c.view, 0.0) + got * scale
        for c in t.harvest_counters:
            base = t.counters.get(c.spec.base) if c.spec.type == "average" else None
            if base is not None and exported.get(base.name, {}).get(k) == 0:
                fields[c.view] = None
        info: dict[str, str] | None = None
        for join, by in joins:
            joined = by.get(tuple(kd[j] for j in join))
            if joined is not None:
                info = {**(info or {}), **joined}
        series = next((fam[k] for fam in order if k in fam), {})
        out.append(HarvestRow(key=kd, series=series, info=info, fields=fields))
    return out


def lun_path(labels: Mapping[str, str]) -> str:
    """Harvest splits a LUN's path into volume, qtree and lun: put it back (/vol/<volume>[/<qtree>]/<lun>)."""
    parts = [labels.get("volume", ""), labels.get("qtree", ""), labels.get("lun", "")]
    return "/vol/" + "/".join(p for p in parts if p)


def serial_of(serial_hex: str) -> str:
    """Harvest's ``serial_hex`` back to ONTAP's 12-character serial (the hex of its ASCII bytes)."""
    try:
        return bytes.fromhex(serial_hex).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return ""


def speed_gbps(text: str, per_gbps: float = 1.0) -> float | None:
    """A link speed label in Gbit/s (FC's ``speed`` is Gbit/s, Ethernet's ``op_speed`` Mbit/s: ``per_gbps``
    1000, ``nic_labels``' ``speed`` bit/s: 1e9); None when it gives no positive speed."""
    m = _SPEED.search(text)
    return float(m.group(1)) / per_gbps if m and float(m.group(1)) > 0 else None


def port_speeds(samples: list[Sample], label: str, per_gbps: float = 1.0) -> dict[tuple[str, str], float]:
    """(node, port) -> link speed in Gbit/s from a speed label; ports that give none are left out."""
    out: dict[tuple[str, str], float] = {}
    for lv, _ in samples:
        speed = speed_gbps(lv.get(label, ""), per_gbps)
        if speed is not None:
            out[(lv.get("node", ""), lv.get("port", ""))] = speed
    return out


@dataclass(frozen=True, slots=True)
class _Ctx:
    cluster: str
    fc_speeds: dict[tuple[str, str], float]  # FC ports' speeds: an NVMe/FC LIF's is its port's
    eth_speeds: dict[tuple[str, str], float]  # Ethernet ports' speeds: an IP LIF's is its port's


def _lun(ctx: _Ctx, t: TableDef, r: HarvestRow) -> LunStats:
    if t.table == "namespace":
        lv = r.info or {}
        return LunStats(
            cluster=ctx.cluster,
            svm=r.key["svm"],
            volume=r.key["volume"] or lv.get("volume", ""),
            lun=r.key["path"],
            node=lv.get("node", ""),
            state=lv.get("state", ""),
            kind="namespace",
            **measured(LunStats, r.fields),
        )
    lv = r.info if r.info is not None else r.key
    return LunStats(
        cluster=ctx.cluster,
        svm=r.key["svm"],
        volume=r.key["volume"],
        lun=lun_path(lv),
        serial=serial_of(lv.get("serial_hex", "")),
        node=lv.get("node", ""),
        state=lv.get("state", ""),
        **measured(LunStats, r.fields),
    )


def _volume(ctx: _Ctx, t: TableDef, r: HarvestRow) -> VolumeStats:
    lv = r.info if r.info is not None else r.series
    return VolumeStats(
        cluster=ctx.cluster,
        svm=r.key["svm"],
        volume=r.key["volume"],
        aggregate=lv.get("aggr", ""),
        node=lv.get("node", ""),
        style=lv.get("style", ""),
        **measured(VolumeStats, r.fields),
    )


def _node(ctx: _Ctx, t: TableDef, r: HarvestRow) -> NodeStats:
    return NodeStats(
        cluster=ctx.cluster,
        node=r.key["node"],
        model=(r.info or {}).get("model", ""),
        **measured(NodeStats, r.fields),
    )


def _disk(ctx: _Ctx, t: TableDef, r: HarvestRow) -> DiskStats:
    """A disk of ``disk_labels`` (its container, whether ONTAP failed it) with, for the disks in RAID
    groups, the aggregate and RAID group (/aggr/plex/rg, as ONTAP's plexes name it) its busy rides on."""
    lv, meta = r.series, r.info or {}
    aggr = lv.get("aggr", "")
    return DiskStats(
        cluster=ctx.cluster,
        disk=r.key["disk"],
        aggregate=aggr,
        node=lv.get("node", "") or meta.get("node", ""),
        raid_group=f"/{aggr}/{lv.get('plex', '')}/{lv.get('raid', '')}" if lv else "",
        container=meta.get("container_type", ""),
        state="broken" if meta.get("failed") == "true" else "",
        **measured(DiskStats, r.fields),
    )


def _fc_port(ctx: _Ctx, t: TableDef, r: HarvestRow) -> FcPortStats:
    node, port = r.key["node"], r.key["port"]
    return FcPortStats(
        cluster=ctx.cluster,
        node=node,
        port=port,
        speed_gbps=ctx.fc_speeds.get((node, port)),
        **measured(FcPortStats, r.fields),
    )


def _lif(ctx: _Ctx, t: TableDef, r: HarvestRow) -> LifStats:
    """An iSCSI or NVMe-oF LIF with the port it sits on and that port's speed: an IP LIF's port from the
    LIF inventory (its info labels), its speed the Ethernet port's; an NVMe LIF no IP LIF names is
    NVMe/FC, on the FC port its series name."""
    ip = r.info
    svm, lif, node = r.key["svm"], r.key["lif"], r.key["node"]
    port = r.key.get("port", r.series.get("port", ""))  # an iSCSI LIF's series name no port
    protocol = "iscsi" if t.table == "iscsi_lif" else "nvme_tcp" if ip is not None else "nvme_fc"
    # nvmf_lif's port_id, as the REST collector reads it: the port after the node's name
    where = ip.get("port", "") if ip is not None else port.rsplit(":", 1)[-1]
    node = node or (ip.get("node", "") if ip is not None else "")
    return LifStats(
        cluster=ctx.cluster,
        node=node,
        svm=svm,
        lif=lif,
        protocol=protocol,
        port=where,
        speed_gbps=(ctx.eth_speeds if ip is not None else ctx.fc_speeds).get((node, where)),
        state=ip.get("status", "") if ip is not None else "",
        **measured(LifStats, r.fields),
    )


def _eth_port(ctx: _Ctx, t: TableDef, r: HarvestRow) -> EthPortStats:
    """A physical Ethernet port's own bytes (every LIF, VLAN and protocol on it), its speed from
    ``nic_labels`` or else the port inventory's (``net_port_status``)."""
    node, port = r.key["node"], r.key["nic"]
    speed = speed_gbps((r.info or {}).get("speed", ""), BIT_PER_GBIT)
    return EthPortStats(
        cluster=ctx.cluster,
        node=node,
        port=port,
        speed_gbps=speed or ctx.eth_speeds.get((node, port)),
        **measured(EthPortStats, r.fields),
    )


_MAKERS: dict[str, Callable[[_Ctx, TableDef, HarvestRow], Any]] = {
    "luns": _lun,
    "volumes": _volume,
    "nodes": _node,
    "disks": _disk,
    "fc_ports": _fc_port,
    "lifs": _lif,
    "eth_ports": _eth_port,
}


MIB = 1024.0 * 1024.0  # a throughput ceiling's MB/s are binary, as ONTAP's sizes


def _positive(text: str) -> float | None:
    """A ceiling or floor from a label: Harvest leaves one that is not set empty (ONTAP's INF or 0)."""
    try:
        v = float(text)
    except ValueError:
        return None
    return v if v > 0 else None


def _count(text: str) -> int | None:
    v = _positive(text)
    return int(v) if v is not None else (0 if text.strip() == "0" else None)


def qos_policies(cluster: str, s: Samples) -> tuple[QosPolicy, ...]:
    """The policy groups from Harvest's ``qos_policy_fixed_labels`` and ``qos_policy_adaptive_labels``.

    Harvest reads them from the private CLI and turns ONTAP's throughput text into numbers: a fixed
    policy's ``<min>-<max>`` into IOPS and MB/s, an adaptive one's per-GB figures into per TB; the
    allocation keeps the CLI's spelling (``used-space``), REST's is ``used_space``."""
    out = []
    for lv, _ in s.get("qos_policy_fixed_labels", ()):
        mbps = _positive(lv.get("max_throughput_mbps", ""))
        out.append(
            QosPolicy(
                cluster=cluster,
                svm=lv.get("svm", ""),
                name=lv.get("name", ""),
                kind="fixed",
                shared=lv.get("capacity_shared") == "true",
                max_iops=_positive(lv.get("max_throughput_iops", "")),
                max_bytes_s=mbps * MIB if mbps is not None else None,
                min_iops=_positive(lv.get("min_throughput_iops", "")),
                workloads=_count(lv.get("object_count", "")),
            )
        )
    for lv, _ in s.get("qos_policy_adaptive_labels", ()):
        out.append(
            QosPolicy(
                cluster=cluster,
                svm=lv.get("svm", ""),
                name=lv.get("name", ""),
                kind="adaptive",
                peak_iops_per_tb=_positive(lv.get("peak_iops", "")),
                expected_iops_per_tb=_positive(lv.get("expected_iops", "")),
                absolute_min_iops=_positive(lv.get("absolute_min_iops", "")),
                peak_allocation=lv.get("peak_iops_allocation", "").replace("-", "_"),
                workloads=_count(lv.get("object_count", "")),
            )
        )
    return tuple(sorted(out, key=lambda p: (p.svm, p.name)))


def qos_workloads(cluster: str, rows: list[HarvestRow], s: Samples) -> tuple[QosWorkload, ...]:
    """The workloads on ``qos_*`` (RestPerf Workload and WorkloadVolume), their identity from the
    labels Harvest copies from ``/api/storage/qos/workloads``; a volume's workload with its volume's
    size and used space (``volume_size`` less ``volume_size_available``), for an adaptive ceiling.

    No latency components: Harvest's series carry no breakdown by ONTAP's latency centres."""
    size = {(lv.get("svm", ""), lv.get("volume", "")): v for lv, v in s.get("volume_size", ())}
    free = {(lv.get("svm", ""), lv.get("volume", "")): v for lv, v in s.get("volume_size_available", ())}
    out = []
    for r in rows:
        lv = r.series
        volume, lun, file, qtree = (lv.get(k, "") for k in ("volume", "lun", "file", "qtree"))
        whole = volume and not (lun or file or qtree)
        total, avail = (
            (size.get((r.key["svm"], volume)), free.get((r.key["svm"], volume))) if whole else (None, None)
        )
        out.append(
            QosWorkload(
                cluster=cluster,
                svm=r.key["svm"],
                workload=r.key["workload"],
                volume=volume,
                lun=lun,
                file=file,
                qtree=qtree,
                policy=lv.get("policy_group", ""),
                wid=lv.get("wid", ""),
                size_bytes=total,
                used_bytes=total - avail if total is not None and avail is not None else None,
                **measured(QosWorkload, r.fields),
            )
        )
    return tuple(out)


def _version(samples: list[Sample]) -> OntapVersion | None:
    """The ONTAP release from a ``version`` label (``9.12.1`` inside NetApp's text)."""
    for lv, _ in samples:
        m = re.search(r"(\d+)\.(\d+)\.(\d+)", lv.get("version", ""))
        if m:
            return OntapVersion(int(m.group(1)), int(m.group(2)), int(m.group(3)), lv.get("version", ""))
    return None


def harvest_view(
    cluster: str, ts: float, interval: float, answers: Mapping[str, Samples], polls: float
) -> tuple[OntapView, dict[str, list[HarvestRow]]]:
    """The view of one poll's answers (query name -> samples) and each table's rows.

    ``polls``: Harvest's data polls in one interval of ours, for the deltas."""
    tables = [t for t in catalogue().values() if t.harvest is not None and t.view]
    rows = {t.table: harvest_rows(t, answers.get(t.harvest.query, {}), polls) for t in tables}  # type: ignore[union-attr]
    infos = [(i, answers.get(t.harvest.query, {})) for t in tables for i in t.harvest.info]  # type: ignore[union-attr]
    unjoined = [x for i, s in infos if not i.join for x in s.get(i.name, ())]
    fc: dict[tuple[str, str], float] = {}
    for t in tables:
        if t.view == "fc_ports":
            for r in rows[t.table]:
                speed = speed_gbps(r.series.get("speed", ""))
                if speed is not None:
                    fc[(r.key["node"], r.key["port"])] = speed
    ctx = _Ctx(cluster, fc, port_speeds(unjoined, "op_speed", per_gbps=1000.0))
    views: dict[str, list[Any]] = {v: [] for v in _MAKERS}
    for t in tables:
        if t.view in _MAKERS:
            views[t.view].extend(_MAKERS[t.view](ctx, t, r) for r in rows[t.table])
    version = _version([x for i, s in infos if "version" in i.by for x in s.get(i.name, ())])
    kinds: dict[str, Any] = {k: tuple(v) for k, v in views.items()}
    for t in tables:
        if t.view == "qos_workloads":
            s = answers.get(t.harvest.query, {})  # type: ignore[union-attr]
            kinds["qos_workloads"] = qos_workloads(cluster, rows[t.table], s)
            kinds["qos_policies"] = qos_policies(cluster, s)
    view = OntapView(cluster=cluster, timestamp=ts, interval_s=interval, version=version, **kinds)
    return view, rows
