"""The fake ONTAP inventory collections of the cluster and its storage (cluster, nodes, LUNs,
volumes, aggregates, plexes, disks, SVMs), and the keyperf ``statistics`` every collection shares.

LUN and volume records carry keyperf ``statistics`` and nodes their processor utilization, from
:mod:`sanlens_sim.estate` at the instant of the request. The network collections are in
:mod:`sanlens_sim.ontap_network`, NVMe namespaces in :mod:`sanlens_sim.ontap_namespaces`, and ASA
r2's storage units and availability zones in :mod:`sanlens_sim.ontap_asa_r2`.
"""

from __future__ import annotations

from sanlens.model import iso_utc
from sanlens_sim.estate import UPTIME_S, Estate
from sanlens_sim.ontap_api import Json, node_uuid, not_found, svm_uuid, version_full
from sanlens_sim.world import Aggregate, Disk, Lun, Node, Volume, World, stable_uuid


def keyperf(estate: Estate, kind: str, key: str, t: float, names: tuple[str, ...]) -> Json:
    """``statistics`` in the keyperf shape: iops_raw, latency_raw (µs), throughput_raw (bytes)."""
    cs = estate.counters[kind]
    idx = cs.index.get(key)
    vals = cs.row(idx, t) if idx is not None else [0.0] * len(cs.names)

    def v(n: str) -> int:
        j = cs.col.get(n)
        return int(vals[j]) if j is not None else 0

    r, w, o, rl, wl, ol, rb, wb = (v(n) for n in names)
    return {
        "timestamp": iso_utc(t),
        "status": "ok",
        "latency_raw": {"other": ol, "total": rl + wl + ol, "read": rl, "write": wl},
        "iops_raw": {"read": r, "write": w, "other": o, "total": r + w + o},
        "throughput_raw": {"read": rb, "write": wb, "other": 0, "total": rb + wb},
    }


LUN_SIZE = 536870912000  # every simulated LUN: 500 GiB

LUN_STATS = (
    "read_ops",
    "write_ops",
    "other_ops",
    "average_read_latency",
    "average_write_latency",
    "average_other_latency",
    "read_data",
    "write_data",
)
VOL_STATS = (
    "total_read_ops",
    "total_write_ops",
    "total_other_ops",
    "read_latency",
    "write_latency",
    "other_latency",
    "bytes_read",
    "bytes_written",
)


# statistics.nfs_ops_raw of a volume no NFS client uses
NFS_OPS_IDLE: Json = {
    op: {"count": 0, "total_time": 0} for op in ("access", "getattr", "lookup", "read", "setattr", "write")
}


def volume_space(v: Volume) -> Json:
    """A volume's ``space``: size, available and used bytes (the CLI's ``volume show`` agrees)."""
    return {
        "size": int(v.size_bytes),
        "available": int(v.size_bytes * (1.0 - v.used_ratio)),
        "used": int(v.size_bytes * v.used_ratio),
    }


def disk_usable_size(d: Disk) -> int:
    return 960197124096 if d.type == "ssd" else 1200000000000


def disk_rest_uid(d: Disk) -> str:
    """A disk's ``uid`` as ``/api/storage/disks`` and ``storage disk show`` both give it."""
    return d.uid.replace("-", "").upper()[:32]


def aggregate_space(w: World, a: Aggregate) -> Json:
    """An aggregate's sizes in bytes: ``size`` the usable size of its data disks, ``used`` the space
    its volumes use (thin provisioned, so their used bytes), ``volume_count`` its volumes."""
    size = sum(disk_usable_size(d) for d in a.disks if d.position == "data")
    vols = [v for v in w.volumes if v.aggregate == a.name]
    used = min(size, sum(volume_space(v)["used"] for v in vols))
    return {"size": size, "used": used, "available": size - used, "volume_count": len(vols)}


def storage_cluster_record(w: World) -> Json:
    """``/api/storage/cluster``: the cluster's block storage, the sum of its aggregates' spaces."""
    spaces = [aggregate_space(w, a) for a in w.aggregates]
    size = sum(x["size"] for x in spaces)
    used = sum(x["used"] for x in spaces)
    return {"block_storage": {"size": size, "available": size - used, "used": used}}


def node_location(w: World) -> str:
    return f"{w.cluster} lab"


def cluster_record(w: World) -> Json:
    g, m, n = w.version
    return {
        "name": w.cluster,
        "uuid": w.uuid,
        "version": {"full": version_full(w), "generation": g, "major": m, "minor": n},
        # an ASA r2 system says both (clients tell the personality by them)
        "san_optimized": w.asa_r2,
        "disaggregated": w.asa_r2,
        "_links": {"self": {"href": "/api/cluster"}},
    }


def node_records(estate: Estate, w: World, page: list[Node], t: float) -> list[Json]:
    cs = estate.counters["node"]
    out = []
    for n in page:
        vals = cs.row(cs.index[n.name], t)
        # the nodes' statistics report the average over the processors (processor_utilization)
        busy = vals[cs.col["average_processor_busy_percent"]]
        elapsed = vals[cs.col["cpu_elapsed_time"]]
        out.append(
            {
                "uuid": n.uuid,
                "name": n.name,
                "model": n.model,
                "serial_number": n.serial,
                "system_id": n.serial[-10:],
                "state": "up",
                "location": node_location(w),
                "controller": {
                    "cpu": {
                        "count": n.cpus,
                        "processor": "Intel(R) Xeon(R) Silver 4210 CPU @ 2.20GHz",
                        "firmware_release": "12.9",
                    },
                    "failed_fan": {
                        "count": 0,
                        "message": {"message": "There are no failed fans.", "code": "111411207"},
                    },
                    "failed_power_supply": {
                        "count": 0,
                        "message": {"message": "There are no failed power supplies.", "code": "111411208"},
                    },
                    "over_temperature": "normal",
                },
                "service_processor": {"firmware_version": "3.11", "state": "online"},
                "version": cluster_record(w)["version"],
                "uptime": int(UPTIME_S + t - estate.started),
                "ha": {
                    "enabled": len(w.nodes) > 1,
                    "partners": [
                        {"name": p.name, "uuid": p.uuid}
                        for p in w.nodes
                        if p.name != n.name and w.nodes.index(p) // 2 == w.nodes.index(n) // 2
                    ],
                },
                "statistics": {
                    "timestamp": iso_utc(t),
                    "status": "ok",
                    "processor_utilization_raw": int(busy),
                    "processor_utilization_base": int(elapsed),
                },
                "metric": {
                    "timestamp": iso_utc(t),
                    "duration": "PT15S",
                    "status": "ok",
                    "processor_utilization": round(100.0 * n.cpu_busy),
                },
                "_links": {"self": {"href": f"/api/cluster/nodes/{n.uuid}"}},
            }
        )
    return out


def lun_records(estate: Estate, w: World, page: list[Lun], t: float, with_stats: bool) -> list[Json]:
    out = []
    for x in page:
        rec: Json = {
            "uuid": x.uuid,
            "svm": {"name": x.svm, "uuid": svm_uuid(w, x.svm)},
            "name": x.path,
            "location": {
                "logical_unit": x.path.rsplit("/", 1)[-1],
                "node": {"name": x.node, "uuid": node_uuid(w, x.node)},
                "volume": {"name": x.volume, "uuid": stable_uuid(w.cluster, "vol", x.svm, x.volume)},
            },
            "os_type": x.os_type,
            "serial_number": x.serial,
            "status": {"state": x.state, "container_state": "online", "mapped": True, "read_only": False},
            "space": {"size": LUN_SIZE, "guarantee": {"requested": not x.thin, "reserved": not x.thin}},
        }
        if with_stats:
            rec["statistics"] = keyperf(estate, "lun", x.key, t, LUN_STATS)
        rec["_links"] = {"self": {"href": f"/api/storage/luns/{x.uuid}"}}
        out.append(rec)
    return out


def volume_records(
    estate: Estate, w: World, page: list[Volume], t: float, with_stats: bool, with_nfs: bool = False
) -> list[Json]:
    """``with_nfs`` adds ``statistics.nfs_ops_raw`` (all zero: the simulated volumes serve SAN only);
    the simulator adds it only when a request names it, so ``fields=statistics`` keeps the shape
    of the real capture."""
    aggr_uuid = {a.name: a.uuid for a in w.aggregates}
    out = []
    for v in page:
        rec: Json = {
            "uuid": v.uuid,
            "name": v.name,
            # ASA r2 hides its aggregates: a volume names none
            "aggregates": [] if w.asa_r2 else [{"name": v.aggregate, "uuid": aggr_uuid.get(v.aggregate, "")}],
            "svm": {"name": v.svm, "uuid": svm_uuid(w, v.svm)},
            "style": "flexvol",
            "type": "rw",
            "state": "online",
            "is_constituent": False,
            "is_object_store": False,
            "clone": {"is_flexclone": False},
            "snapmirror": {"is_protected": False, "destinations": {"is_ontap": False, "is_cloud": False}},
            "anti_ransomware": {"state": "disabled"},
            "space": volume_space(v),
        }
        if v.moving:
            dest, pct = v.moving
            rec["movement"] = {
                "state": "replicating",
                "percent_complete": int(pct),
                "destination_aggregate": {"name": dest, "uuid": aggr_uuid.get(dest, "")},
            }
        if with_stats:
            rec["statistics"] = keyperf(estate, "volume", f"{v.svm}:{v.name}", t, VOL_STATS)
            if with_nfs:
                rec["statistics"]["nfs_ops_raw"] = dict(NFS_OPS_IDLE)
        rec["_links"] = {"self": {"href": f"/api/storage/volumes/{v.uuid}"}}
        out.append(rec)
    return out


_DISK_CLASS = {"ssd": "solid_state", "sas": "performance", "fsas": "capacity"}


def aggregate_records(w: World, page: list[Aggregate]) -> list[Json]:
    return [_aggregate_record(w, a) for a in page]


def _aggregate_record(w: World, a: Aggregate) -> Json:
    sp = aggregate_space(w, a)
    size, used, avail = sp["size"], sp["used"], sp["available"]
    saved = used // 2  # deduplication and compaction: logical use is 1.5 times the physical
    files = 31_000 + 10_000 * sp["volume_count"]
    node = {"name": a.node, "uuid": node_uuid(w, a.node)}

    def pct(x: int) -> int:
        return round(100 * x / size) if size else 0

    return {
        "uuid": a.uuid,
        "name": a.name,
        "node": node,
        "home_node": node,
        "state": a.state,
        "volume_count": sp["volume_count"],
        "data_encryption": {"software_encryption_enabled": False, "drive_protection_enabled": False},
        "block_storage": {
            "primary": {
                "disk_count": len(a.disks),
                "disk_type": a.disk_type,
                "disk_class": _DISK_CLASS.get(a.disk_type, "performance"),
                "raid_type": a.raid_type,
                "raid_size": max(len(rg.disks) for rg in a.raid_groups),
            },
            "hybrid_cache": {"enabled": False, "disk_count": 0, "size": 0},
            "plexes": [{"name": "plex0"}],
            "mirror": {"enabled": False, "state": "unmirrored"},
        },
        "inode_attributes": {
            "files_total": files,
            "files_used": files // 3,
            "files_private_used": 512,
            "file_private_capacity": files,
            "file_public_capacity": files,
            "max_files_available": files,
            "max_files_possible": 2 * files,
            "max_files_used": files // 3,
            "used_percent": 33,
        },
        "snapshot": {"files_total": 0, "files_used": 0, "max_files_available": 0, "max_files_used": 0},
        "space": {
            "block_storage": {
                "size": size,
                "available": avail,
                "used": used,
                "physical_used": used,
                "physical_used_percent": pct(used),
                "data_compacted_count": saved // 4,
                "data_compaction_space_saved": saved // 4,
                "data_compaction_space_saved_percent": pct(saved // 4),
                "inactive_user_data": 0,
                "inactive_user_data_percent": 0,
                "volume_deduplication_shared_count": saved // 2,
                "volume_deduplication_space_saved": saved // 2,
                "volume_deduplication_space_saved_percent": pct(saved // 2),
            },
            "cloud_storage": {"used": 0},
            "efficiency": {"logical_used": used + saved, "savings": saved, "ratio": 1.5},
            "efficiency_without_snapshots": {"logical_used": used + saved, "savings": saved, "ratio": 1.5},
            "efficiency_without_snapshots_flexclones": {
                "logical_used": used + saved,
                "savings": saved,
                "ratio": 1.5,
            },
            "footprint": used,
            "footprint_percent": pct(used),
            "snapshot": {"available": 0, "reserve_percent": 0, "total": 0, "used": 0, "used_percent": 0},
        },
        "_links": {"self": {"href": f"/api/storage/aggregates/{a.uuid}"}},
    }


def plex_records(estate: Estate, w: World, aggr_uuid: str, t: float) -> list[Json]:
    for a in w.aggregates:
        if a.uuid == aggr_uuid:
            break
    else:
        raise not_found(aggr_uuid)
    groups = []
    for rg in a.raid_groups:
        pct = estate.reconstruct_percent(rg.reconstruct, t) if rg.reconstruct else 0.0
        active = rg.reconstruct is not None and pct < 100.0
        groups.append(
            {
                "name": rg.name,
                "cache_tier": False,
                "degraded": active or rg.degraded,
                "recomputing_parity": {"active": False, "percent": 0},
                "reconstruct": {"active": active, "percent": int(pct) if active else 0},
                "disks": [
                    {
                        "disk": {"name": d.name},
                        "position": d.position,
                        "state": "reconstructing" if active and d.state == "reconstructing" else "normal",
                        "type": d.type,
                        "usable_size": 960197124096 if d.type == "ssd" else 1200000000000,
                    }
                    for d in rg.disks
                ],
            }
        )
    return [
        {
            "aggregate": {"name": a.name, "uuid": a.uuid},
            "name": "plex0",
            "online": True,
            "state": "normal",
            "pool": "pool0",
            "resync": {"active": False, "percent": 0},
            "raid_groups": groups,
            "_links": {"self": {"href": f"/api/storage/aggregates/{a.uuid}/plexes/plex0"}},
        }
    ]


def disk_records(
    w: World, page: list[Disk], estate: Estate | None = None, t: float | None = None
) -> list[Json]:
    """With the ``estate`` and the instant ``t``, the records carry ``stats`` (average latency in
    milliseconds from the disk's current rates, power-on hours)."""
    aggr_uuid = {a.name: a.uuid for a in w.aggregates}
    out = []
    for d in page:
        rec: Json = {
            "name": d.name,
            "uid": disk_rest_uid(d),
            "serial_number": d.uid.replace("-", "")[:8].upper(),
            "model": "X357_S163A3T8ATE" if d.type == "ssd" else "X425_HCBFE1T2A10",
            "vendor": "NETAPP",
            "type": d.type,
            "class": _DISK_CLASS.get(d.type, "performance"),
            "rpm": d.rpm,
            # ASA r2 shares every disk between the nodes of its availability zone
            "container_type": "shared" if w.asa_r2 and d.container_type != "broken" else d.container_type,
            "node": {"name": d.node, "uuid": node_uuid(w, d.node)},
            "home_node": {"name": d.node, "uuid": node_uuid(w, d.node)},
            "state": "spare" if d.container_type == "spare" and not w.asa_r2 else d.state,
            "shelf": {"uid": stable_uuid(w.cluster, "shelf", d.node)[:16]},
            "bay": _bay(d.name),
            "pool": "pool0",
            "usable_size": disk_usable_size(d),
            "bytes_per_sector": 512,
            "sector_count": disk_usable_size(d) // 512,
        }
        if d.state == "broken":
            rec["outage"] = {"persistent": True, "reason": {"message": "Disk failed.", "code": "721081"}}
        if estate is not None and t is not None:
            rec["stats"] = _disk_stats(estate, d, t)
        if d.aggregate and not w.asa_r2:
            rec["aggregates"] = [{"name": d.aggregate, "uuid": aggr_uuid.get(d.aggregate, "")}]
        rec["_links"] = {"self": {"href": f"/api/storage/disks/{d.name}"}}
        out.append(rec)
    return out


def _disk_stats(estate: Estate, d: Disk, t: float) -> Json:
    cs = estate.counters["disk"]
    latency_ms = 0.0
    if d.name in cs.index:
        ops = cs.rate(d.name, "user_read_count", t) + cs.rate(d.name, "user_write_count", t)
        us = cs.rate(d.name, "user_read_latency", t) + cs.rate(d.name, "user_write_latency", t)
        latency_ms = us / ops / 1000.0 if ops else 0.0
    return {
        "average_latency": round(latency_ms, 3),
        "power_on_hours": int((UPTIME_S + t - estate.started) // 3600),
    }


def _bay(name: str) -> int:
    tail = name.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def svm_records(w: World, page: list[str]) -> list[Json]:
    return [
        {
            "uuid": svm_uuid(w, s),
            "name": s,
            "state": "running",
            "_links": {"self": {"href": f"/api/svm/svms/{svm_uuid(w, s)}"}},
        }
        for s in page
    ]
