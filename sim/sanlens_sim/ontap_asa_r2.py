"""The fake ONTAP collections of an ASA r2 system: storage units and storage availability zones.

Storage units are every LUN and namespace of the world under one collection; each HA pair's
shared disks make one availability zone.
"""

from __future__ import annotations

from dataclasses import dataclass

from sanlens_sim.estate import Estate
from sanlens_sim.ontap_api import Json, node_uuid, svm_uuid
from sanlens_sim.ontap_collections import LUN_STATS, keyperf
from sanlens_sim.ontap_namespaces import host_maps, lun_location
from sanlens_sim.world import Lun, World, stable_uuid


@dataclass(frozen=True)
class Zone:
    """An ASA r2 storage availability zone: the shared disks of one HA pair."""

    name: str
    uuid: str
    nodes: tuple[str, ...]


def zones(w: World) -> list[Zone]:
    """One availability zone per HA pair (nodes 1-2, 3-4, ...)."""
    names = [n.name for n in w.nodes]
    out = []
    for i in range(0, len(names), 2):
        name = f"storage_availability_zone_{i // 2}"
        out.append(Zone(name, stable_uuid(w.cluster, "zone", name), tuple(names[i : i + 2])))
    return out


def zone_of(w: World, node: str) -> Zone | None:
    return next((z for z in zones(w) if node in z.nodes), None)


_USABLE = {"ssd": 960197124096, "sas": 1200000000000, "fsas": 1200000000000}


def availability_zone_records(w: World, page: list[Zone]) -> list[Json]:
    out = []
    for z in page:
        size = sum(_USABLE.get(d.type, 0) for d in w.disks if d.node in z.nodes and d.state != "broken")
        used = int(sum(v.size_bytes * v.used_ratio for v in w.volumes if v.node in z.nodes))
        out.append(
            {
                "uuid": z.uuid,
                "name": z.name,
                "nodes": [{"name": n, "uuid": node_uuid(w, n)} for n in z.nodes],
                "space": {
                    "size": size,
                    "available": max(0, size - used),
                    "physical_used": used,
                    "physical_used_percent": round(100 * used / size) if size else 0,
                },
                "_links": {"self": {"href": f"/api/storage/availability-zones/{z.uuid}"}},
            }
        )
    return out


def storage_unit_records(estate: Estate, w: World, page: list[Lun], t: float, with_stats: bool) -> list[Json]:
    """``/api/storage/storage-units``: every LUN and namespace, ``type`` lun or namespace."""
    maps = host_maps(w)
    out = []
    for x in page:
        zone = zone_of(w, x.node)
        loc = lun_location(w, x)
        if zone is not None:
            loc["storage_availability_zone"] = {"name": zone.name, "uuid": zone.uuid}
        size = 536870912000
        rec: Json = {
            "uuid": x.uuid,
            "name": x.path,
            "type": "namespace" if x.is_namespace else "lun",
            "svm": {"name": x.svm, "uuid": svm_uuid(w, x.svm)},
            "location": loc,
            "os_type": x.os_type,
            "class": "regular",  # not a protocol endpoint or vVol
            "serial_number": x.serial,
            "status": {"state": x.state},
            "anti_ransomware": {"state": "disabled"},
            "maps": [
                {"host_group": {"name": h, "uuid": stable_uuid(w.cluster, "host_group", x.svm, h)}}
                for h in maps.get(x.key, [])
            ],
            "space": {"size": size, "used": size // 4, "physical_used": size // 8, "efficiency_ratio": 2.0},
        }
        if with_stats:
            rec["statistics"] = keyperf(estate, "lun", x.key, t, LUN_STATS)
        rec["_links"] = {"self": {"href": f"/api/storage/storage-units/{x.uuid}"}}
        out.append(rec)
    return out
