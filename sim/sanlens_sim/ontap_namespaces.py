"""The fake ONTAP NVMe namespaces, ``/api/storage/namespaces``, and who each LUN is mapped to.

A namespace is a ``Lun`` of the world that is one; its subsystem, like a LUN's igroup or an
ASA r2 host group, is named after the host that uses it.
"""

from __future__ import annotations

from sanlens_sim.estate import Estate
from sanlens_sim.ontap_api import Json, node_uuid, svm_uuid
from sanlens_sim.ontap_collections import LUN_STATS, keyperf
from sanlens_sim.world import Lun, World, stable_uuid


def host_maps(w: World) -> dict[str, list[str]]:
    """LUN key -> the hosts that use it (each host's igroup, host group or NVMe subsystem is named
    after the host)."""
    out: dict[str, list[str]] = {}
    for h in w.hosts:
        for d in h.disks:
            if d.lun_key:
                out.setdefault(d.lun_key, []).append(h.name)
    return out


def lun_location(w: World, x: Lun) -> Json:
    return {
        "node": {"name": x.node, "uuid": node_uuid(w, x.node)},
        "volume": {"name": x.volume, "uuid": stable_uuid(w.cluster, "vol", x.svm, x.volume)},
    }


def namespace_records(estate: Estate, w: World, page: list[Lun], t: float, with_stats: bool) -> list[Json]:
    """``/api/storage/namespaces``: NVMe namespaces only (a LUN is never one)."""
    maps = host_maps(w)
    nsid = {x.key: i + 1 for i, x in enumerate(w.namespaces)}
    out = []
    for x in page:
        hosts = maps.get(x.key, [])
        rec: Json = {
            "uuid": x.uuid,
            "svm": {"name": x.svm, "uuid": svm_uuid(w, x.svm)},
            "name": x.path,
            "location": {"namespace": x.name, **lun_location(w, x)},
            "os_type": x.os_type,
            "status": {
                "state": x.state,
                "container_state": "online",
                "mapped": bool(hosts),
                "read_only": False,
            },
            "space": {"size": 536870912000, "used": 0, "block_size": 4096},
        }
        if hosts:
            sub = hosts[0]
            rec["subsystem_map"] = {
                "nsid": f"{nsid[x.key]:08x}h",  # 8 zero-filled hex digits and "h", as ONTAP writes it
                "subsystem": {"name": sub, "uuid": stable_uuid(w.cluster, "subsystem", x.svm, sub)},
            }
        if with_stats:
            rec["statistics"] = keyperf(estate, "lun", x.key, t, LUN_STATS)
        rec["_links"] = {"self": {"href": f"/api/storage/namespaces/{x.uuid}"}}
        out.append(rec)
    return out
