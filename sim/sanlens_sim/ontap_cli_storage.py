"""The rows of ONTAP's CLI ``show`` commands for storage objects: ``lun``, ``volume`` (and its
``efficiency stat``, ``footprint``, ``snapshot autodelete``), ``storage aggregate`` (and
``show-space``) and ``storage disk``; :mod:`sanlens_sim.ontap_cli` answers them.

Values come from the same world as the REST collections: a LUN's ``serial`` is its REST
``serial_number`` and ``serial_hex`` that serial's ASCII in lower-case hex (the NAA identifier's
tail a host sees); volume, aggregate and disk spaces are those of
:func:`sanlens_sim.ontap_collections.volume_space` and :func:`~.aggregate_space`.
"""

from __future__ import annotations

from sanlens_sim.estate import Estate
from sanlens_sim.ontap_api import Json
from sanlens_sim.ontap_collections import (
    LUN_SIZE,
    aggregate_space,
    disk_rest_uid,
    disk_usable_size,
    volume_space,
)
from sanlens_sim.world import World


def serial_hex(serial: str) -> str:
    """A LUN serial as ``lun show -fields serial-hex`` writes it: its ASCII bytes in lower-case hex."""
    return serial.encode("ascii").hex()


# ------------------------------------------------------------------ lun show
LUN_FIELDS = (
    "volume",
    "qtree",
    "lun",
    "size",
    "size_used",
    "ostype",
    "space_reserve",
    "serial",
    "serial_hex",
    "state",
    "mapped",
    "uuid",
    "node",
    "class",
)


def lun_rows(estate: Estate, w: World, t: float) -> list[Json]:
    used = {(v.svm, v.name): v.used_ratio for v in w.volumes}
    return [
        {
            "vserver": x.svm,
            "path": x.path,
            "volume": x.volume,
            "qtree": "",
            "lun": x.name,
            "size": LUN_SIZE,
            "size_used": int(LUN_SIZE * used.get((x.svm, x.volume), 0.0)),
            "ostype": x.os_type,
            "space_reserve": "disabled" if x.thin else "enabled",
            "serial": x.serial,
            "serial_hex": serial_hex(x.serial),
            "state": x.state,
            "mapped": "mapped",
            "uuid": x.uuid,
            "node": x.node,
            "class": "regular",
        }
        for x in w.plain_luns
    ]


# ------------------------------------------------------------------ volume show and friends
VOLUME_FIELDS = (
    "aggr_list",
    "nodes",
    "instance_uuid",
    "state",
    "type",
    "volume_style_extended",
    "is_constituent",
    "vsroot",
    "junction_path",
    "clone_volume",
    "clone_parent_name",
    "clone_parent_vserver",
    "is_encrypted",
    "is_sis_volume",
    "is_space_enforcement_logical",
    "is_space_reporting_logical",
    "snaplock_type",
    "snapshot_policy",
    "space_mgmt_try_first",
    "tags",
    "tiering_policy",
    "tiering_minimum_cooling_days",
    "autosize_mode",
    "autosize_grow_threshold_percent",
    "autosize_shrink_threshold_percent",
    "max_autosize",
    "min_autosize",
    "size",
    "total",
    "filesystem_size",
    "available",
    "expected_available",
    "used",
    "percent_used",
    "physical_used",
    "physical_used_percent",
    "virtual_used",
    "virtual_used_percent",
    "logical_used",
    "logical_available",
    "logical_used_by_afs",
    "logical_used_by_snapshots",
    "logical_used_percent",
    "files",
    "files_used",
    "overwrite_reserve",
    "overwrite_reserve_used",
    "percent_snapshot_space",
    "snapshot_reserve_size",
    "snapshot_reserve_available",
    "snapshot_space_used",
    "size_used_by_snapshots",
    "size_available_for_snapshots",
    "snapshot_count",
    "performance_tier_inactive_user_data",
    "performance_tier_inactive_user_data_percent",
    "sis_space_saved",
    "sis_space_saved_percent",
    "dedupe_space_saved",
    "dedupe_space_saved_percent",
    "compression_space_saved",
    "compression_space_saved_percent",
)


def _pct(part: float, whole: float) -> int:
    return round(100.0 * part / whole) if whole else 0


def volume_rows(estate: Estate, w: World, t: float) -> list[Json]:
    luns: dict[tuple[str, str], int] = {}
    for x in w.luns:
        luns[(x.svm, x.volume)] = luns.get((x.svm, x.volume), 0) + 1
    out = []
    for v in w.volumes:
        sp = volume_space(v)
        size, used, avail = sp["size"], sp["used"], sp["available"]
        dedupe, compress = used // 4, used // 8  # what efficiency saved, on top of what is used
        saved = dedupe + compress
        logical = used + saved
        out.append(
            {
                "vserver": v.svm,
                "volume": v.name,
                "aggr_list": [] if w.asa_r2 else [v.aggregate],
                "nodes": [v.node],
                "instance_uuid": v.uuid,
                "state": "online",
                "type": "RW",
                "volume_style_extended": "flexvol",
                "is_constituent": False,
                "vsroot": False,
                "clone_volume": False,
                "is_encrypted": False,
                "is_sis_volume": True,
                "is_space_enforcement_logical": False,
                "is_space_reporting_logical": False,
                "snaplock_type": "non-snaplock",
                "snapshot_policy": "none",
                "space_mgmt_try_first": "volume_grow",
                "tiering_policy": "none",
                "autosize_mode": "off",
                "autosize_grow_threshold_percent": 85,
                "autosize_shrink_threshold_percent": 50,
                "max_autosize": size + size // 5,
                "min_autosize": size,
                "size": size,
                "total": size,
                "filesystem_size": size,
                "available": avail,
                "expected_available": avail,
                "used": used,
                "percent_used": _pct(used, size),
                "physical_used": used,
                "physical_used_percent": _pct(used, size),
                "virtual_used": used,
                "virtual_used_percent": _pct(used, size),
                "logical_used": logical,
                "logical_available": avail,
                "logical_used_by_afs": logical,
                "logical_used_by_snapshots": 0,
                "logical_used_percent": _pct(logical, size),
                "files": min(size // 32768, 2**31 - 1),
                "files_used": 96 + luns.get((v.svm, v.name), 0),
                "overwrite_reserve": 0,
                "overwrite_reserve_used": 0,
                "percent_snapshot_space": 0,
                "snapshot_reserve_size": 0,
                "snapshot_reserve_available": 0,
                "snapshot_space_used": 0,
                "size_used_by_snapshots": 0,
                "size_available_for_snapshots": avail,
                "snapshot_count": 0,
                "performance_tier_inactive_user_data": 0,
                "performance_tier_inactive_user_data_percent": 0,
                "sis_space_saved": saved,
                "sis_space_saved_percent": _pct(saved, logical),
                "dedupe_space_saved": dedupe,
                "dedupe_space_saved_percent": _pct(dedupe, logical),
                "compression_space_saved": compress,
                "compression_space_saved_percent": _pct(compress, logical),
            }
        )
    return out


def efficiency_stat_rows(estate: Estate, w: World, t: float) -> list[Json]:
    return [
        {
            "vserver": v.svm,
            "volume": v.name,
            "path": f"/vol/{v.name}",
            "num_compress_attempts": volume_space(v)["used"] // 32768,
            "num_compress_fail": 0,
        }
        for v in w.volumes
    ]


def footprint_rows(estate: Estate, w: World, t: float) -> list[Json]:
    aggr_size = {a.name: aggregate_space(w, a)["size"] for a in w.aggregates}
    out = []
    for v in w.volumes:
        used = volume_space(v)["used"]
        meta = used // 200
        delayed = used // 1000
        size = aggr_size.get(v.aggregate, 0)
        out.append(
            {
                "vserver": v.svm,
                "volume": v.name,
                "aggregate": v.aggregate,
                "volume_blocks_footprint_bin0": used,
                "volume_blocks_footprint_bin0_percent": _pct(used, size),
                "volume_blocks_footprint_bin1": 0,
                "volume_blocks_footprint_bin1_percent": 0,
                "volume_guarantee_footprint": 0,  # thin provisioned: space guarantee none
                "flexvol_metadata_footprint": meta,
                "delayed_free_footprint": delayed,
                "total_metadata_footprint": meta + delayed,
                "total_footprint": used + meta + delayed,
            }
        )
    return out


def autodelete_rows(estate: Estate, w: World, t: float) -> list[Json]:
    return [
        {"vserver": v.svm, "volume": v.name, "enabled": False, "commitment": "try", "trigger": "volume"}
        for v in w.volumes
    ]


# ------------------------------------------------------------------ storage aggregate show[-space]
def aggr_rows(estate: Estate, w: World, t: float) -> list[Json]:
    """The data aggregates of ``/api/storage/aggregates`` (root aggregates are not simulated)."""
    out = []
    for a in w.aggregates:
        sp = aggregate_space(w, a)
        out.append(
            {
                "aggregate": a.name,
                "uuid": a.uuid,
                "node": a.node,
                "root": False,
                "state": a.state,
                "raidtype": a.raid_type,
                "diskcount": len(a.disks),
                "size": sp["size"],
                "usedsize": sp["used"],
                "availsize": sp["available"],
                "percent_used": _pct(sp["used"], sp["size"]),
                "volcount": sp["volume_count"],
            }
        )
    return out


def aggr_space_rows(estate: Estate, w: World, t: float) -> list[Json]:
    """One performance-tier row per aggregate; without a FabricPool object store its
    ``object_store_*`` fields do not apply."""
    out = []
    for a in w.aggregates:
        sp = aggregate_space(w, a)
        out.append(
            {
                "aggregate_name": a.name,
                "bin_num": 0,
                "tier_name": "Performance Tier",
                "aggregate_size": sp["size"],
                "volume_footprints": sp["used"],
                "physical_used": sp["used"],
                "physical_used_percent": _pct(sp["used"], sp["size"]),
            }
        )
    return out


# ------------------------------------------------------------------ storage disk show
def disk_rows(estate: Estate, w: World, t: float) -> list[Json]:
    cs = estate.counters["disk"]
    out = []
    for d in w.disks:
        row: Json = {
            "disk": d.name,
            "uid": disk_rest_uid(d),
            "type": d.type.upper(),
            "owner": d.node,
            "home": d.node,
            "container_type": "shared" if w.asa_r2 and d.container_type != "broken" else d.container_type,
            "model": "X357_S163A3T8ATE" if d.type == "ssd" else "X425_HCBFE1T2A10",
            "vendor": "NETAPP",
            "serial_number": d.uid.replace("-", "")[:8].upper(),
            "usable_size": disk_usable_size(d),
            "path_count": 2,
        }
        if d.aggregate and not w.asa_r2:
            row["aggregate"] = d.aggregate
        if d.name in cs.index:
            # ONTAP counts 4 KiB blocks (8 sectors of 512 bytes)
            row["sectors_read"] = int(cs.value(d.name, "user_read_block_count", t)) * 8
            row["sectors_written"] = int(cs.value(d.name, "user_write_block_count", t)) * 8
            row["disk_io_kbps_total"] = int(cs.rate(d.name, "total_data", t) / 1024)
        else:  # a spare: no I/O
            row.update(sectors_read=0, sectors_written=0, disk_io_kbps_total=0)
        out.append(row)
    return out
