"""ONTAP's CLI pass-through, ``/api/private/cli/<command>``: the ``show`` commands of ``lun``,
``volume`` (and its ``efficiency stat``, ``footprint``, ``snapshot autodelete``), ``storage
aggregate`` (``aggr``; and ``show-space``), ``storage disk`` (``disk``), ``system node``
(``node``), ``network interface`` (every SAN LIF, FC ones included, as the CLI lists them) and
``network port`` (the Ethernet ports; ``ifgrp``: none in the simulated estate).

Records are flat: the command's key fields (always returned) plus the ``fields`` asked for, under
the CLI's field names with ``-`` written ``_``; a field whose value is ``-`` on the CLI (one that does
not apply to the object) is left out of its record. ``fields`` names a field the command does not
have: 400, unless ``ignore_unknown_fields=true``. Other query parameters filter the records
(:mod:`sanlens_sim.ontap_query`); ``max_records`` pages with ``_links.next`` carrying ``start.<key>``
for each key field; ``return_records=false`` answers the count alone.

Values come from the same world as the REST collections: a LUN's ``serial`` is its REST
``serial_number`` and ``serial_hex`` that serial's ASCII in lower-case hex (the NAA identifier's
tail a host sees); volume, aggregate and disk spaces are those of
:func:`sanlens_sim.ontap_collections.volume_space` and :func:`~.aggregate_space`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sanlens_sim import ontap_query
from sanlens_sim.estate import UPTIME_S, Estate
from sanlens_sim.ontap_api import ApiError, Json, asa_r2_refusal, href, max_records
from sanlens_sim.ontap_collections import (
    LUN_SIZE,
    aggregate_space,
    disk_rest_uid,
    disk_usable_size,
    ethernet_port_records,
    ethernet_ports,
    fc_lif_wwpn,
    ip_address,
    node_location,
    volume_space,
)
from sanlens_sim.world import World

CLI_PREFIX = "/api/private/cli/"

Rows = Callable[[Estate, World, float], list[Json]]


@dataclass(frozen=True)
class Command:
    """One CLI ``show`` command: its key fields, its other fields in the order it lists them, and
    its rows (every field that applies, keys first)."""

    keys: tuple[str, ...]
    fields: tuple[str, ...]
    rows: Rows

    @property
    def known(self) -> frozenset[str]:
        return frozenset(self.keys) | frozenset(self.fields)


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


# ------------------------------------------------------------------ system node show
MAX_AGGR_SIZE = 800 * 2**40
MAX_VOL_SIZE = 300 * 2**40
MAX_NODE_VOLUMES = 1000


def node_rows(estate: Estate, w: World, t: float) -> list[Json]:
    cs = estate.counters["node"]
    out = []
    for n in w.nodes:
        busy = cs.value(n.name, "cpu_busy", t) if n.name in cs.index else 0.0
        out.append(
            {
                "node": n.name,
                "location": node_location(w),
                "model": n.model,
                "serialnumber": n.serial,
                "uuid": n.uuid,
                "uptime": int(UPTIME_S + t - estate.started),
                "health": True,
                "eligibility": True,
                "vendor": "NetApp",
                "max_aggr_size": MAX_AGGR_SIZE,
                "max_vol_size": MAX_VOL_SIZE,
                "max_node_vvols": MAX_NODE_VOLUMES,
                "cpu_busy_time": int(busy / 1e6),  # seconds
            }
        )
    return out


# ------------------------------------------------------------------ network interface / port show
# the CLI's data-protocol values of the simulated LIFs' protocols (a list field: one each here)
DATA_PROTOCOL = {"fcp": "fcp", "nvme_fc": "fc-nvme", "iscsi": "iscsi", "nvme_tcp": "nvme-tcp"}


def interface_rows(estate: Estate, w: World, t: float) -> list[Json]:
    out: list[Json] = []
    for x in w.lifs:
        up = x.port_state != "down" if x.ethernet else x.port_state == "online"
        row: Json = {
            "vserver": x.svm,
            "lif": x.name,
            "role": "data",
            "data_protocol": [DATA_PROTOCOL[x.protocol]],
            "address": ip_address(w, x) if x.ethernet else fc_lif_wwpn(w, x),
            "home_node": x.node,
            "home_port": x.port,
            "curr_node": x.node,
            "curr_port": x.port,
            "status_admin": "up",
            "status_oper": "up" if up else "down",
            "is_home": True,
        }
        if x.ethernet:
            row["netmask"] = "255.255.255.0"
        out.append(row)
    return out


def port_rows(estate: Estate, w: World, t: float) -> list[Json]:
    """The Ethernet ports of the REST collection, in the CLI's fields (speed in Mbit/s as text)."""
    return [
        {
            "node": r["node"]["name"],
            "port": r["name"],
            "link": r["state"],
            "mtu": r["mtu"],
            "ipspace": r["broadcast_domain"]["ipspace"]["name"],
            "broadcast_domain": r["broadcast_domain"]["name"],
            "type": r["type"],
            "role": "data",
            "duplex_admin": "auto",
            "duplex_oper": "full",
            "flowcontrol_admin": "none",
            "speed_admin": "auto",
            "speed_oper": str(int(r["speed"])),
            "health_status": "healthy",
        }
        for r in ethernet_port_records(w, ethernet_ports(w))
    ]


COMMANDS: dict[str, Command] = {
    "lun": Command(("vserver", "path"), LUN_FIELDS, lun_rows),
    "volume": Command(("vserver", "volume"), VOLUME_FIELDS, volume_rows),
    "volume/efficiency/stat": Command(
        ("vserver", "volume", "path"), ("num_compress_attempts", "num_compress_fail"), efficiency_stat_rows
    ),
    "volume/footprint": Command(
        ("vserver", "volume"),
        (
            "aggregate",
            "volume_blocks_footprint_bin0",
            "volume_blocks_footprint_bin0_percent",
            "volume_blocks_footprint_bin1",
            "volume_blocks_footprint_bin1_percent",
            "volume_guarantee_footprint",
            "flexvol_metadata_footprint",
            "delayed_free_footprint",
            "total_metadata_footprint",
            "total_footprint",
        ),
        footprint_rows,
    ),
    "volume/snapshot/autodelete": Command(
        ("vserver", "volume"), ("enabled", "commitment", "trigger"), autodelete_rows
    ),
    "storage/aggregate": Command(
        ("aggregate",),
        (
            "uuid",
            "node",
            "root",
            "state",
            "raidtype",
            "diskcount",
            "size",
            "usedsize",
            "availsize",
            "percent_used",
            "volcount",
        ),
        aggr_rows,
    ),
    "storage/aggregate/show-space": Command(
        ("aggregate_name", "bin_num"),
        (
            "tier_name",
            "aggregate_size",
            "volume_footprints",
            "physical_used",
            "physical_used_percent",
            "object_store_logical_used",
            "object_store_physical_used",
        ),
        aggr_space_rows,
    ),
    "storage/disk": Command(
        ("disk",),
        (
            "uid",
            "type",
            "owner",
            "home",
            "container_type",
            "aggregate",
            "model",
            "vendor",
            "serial_number",
            "usable_size",
            "path_count",
            "disk_io_kbps_total",
            "sectors_read",
            "sectors_written",
        ),
        disk_rows,
    ),
    "system/node": Command(
        ("node",),
        (
            "location",
            "model",
            "serialnumber",
            "uuid",
            "uptime",
            "health",
            "eligibility",
            "vendor",
            "max_aggr_size",
            "max_vol_size",
            "max_node_vvols",
            "cpu_busy_time",
        ),
        node_rows,
    ),
    "network/interface": Command(
        ("vserver", "lif"),
        (
            "role",
            "data_protocol",
            "address",
            "netmask",
            "home_node",
            "home_port",
            "curr_node",
            "curr_port",
            "status_admin",
            "status_oper",
            "is_home",
        ),
        interface_rows,
    ),
    "network/port": Command(
        ("node", "port"),
        (
            "link",
            "mtu",
            "ipspace",
            "broadcast_domain",
            "type",
            "role",
            "duplex_admin",
            "duplex_oper",
            "flowcontrol_admin",
            "speed_admin",
            "speed_oper",
            "health_status",
        ),
        port_rows,
    ),
    "network/port/ifgrp": Command(
        ("node", "ifgrp"),
        ("distr_func", "mode", "mac", "activeports", "ports", "up_ports", "down_ports"),
        lambda estate, w, t: [],
    ),
}

# The CLI's short forms of the same commands.
ALIASES = {
    "aggr": "storage/aggregate",
    "aggr/show-space": "storage/aggregate/show-space",
    "disk": "storage/disk",
    "node": "system/node",
}

# What an ASA r2 system keeps to itself here as on REST: its aggregates.
ASA_R2_HIDDEN = frozenset({"storage/aggregate", "storage/aggregate/show-space"})


def command(name: str) -> Command | None:
    return COMMANDS.get(ALIASES.get(name, name))


def _unknown(name: str) -> ApiError:
    return ApiError(400, f'Unexpected argument "{name}".', "262179")


def _wanted(cmd: Command, query: Mapping[str, str]) -> list[str]:
    raw = query.get("fields")
    if raw is None:
        return []
    names = [p.strip() for p in raw.split(",") if p.strip()]
    if any(n in ("*", "**") for n in names):
        return list(cmd.fields)
    lenient = ontap_query.flag(query, "ignore_unknown_fields", False)
    for n in names:
        if n not in cmd.known and not lenient:
            raise _unknown(n)
    asked = set(names)
    return [f for f in cmd.fields if f in asked]


def answer(estate: Estate, w: World, t: float, path: str, raw_path: str, query: Mapping[str, str]) -> Json:
    """The answer to ``GET /api/private/cli/<command>``; 404 for a command not simulated."""
    name = path[len(CLI_PREFIX) :].strip("/")
    cmd = command(name)
    if cmd is None:
        raise ApiError(404, f"API not found: {path}", "3")
    if w.asa_r2 and ALIASES.get(name, name) in ASA_R2_HIDDEN:
        raise asa_r2_refusal()
    wanted = _wanted(cmd, query)
    conds = ontap_query.filters(query)
    for f in conds:
        if f not in cmd.known:
            raise _unknown(f)
    rows = [r for r in cmd.rows(estate, w, t) if ontap_query.match_all(r, conds)]
    if not ontap_query.flag(query, "return_records", True):
        return {"num_records": len(rows)}
    start = _start(cmd, rows, query)
    limit = max_records(dict(query))
    chunk = rows[start : start + limit]
    show = (*cmd.keys, *wanted)
    records = [{k: r[k] for k in show if k in r} for r in chunk]
    out: Json = {"records": records, "num_records": len(records)}
    nxt = start + limit
    if nxt < len(rows):
        q = {k: v for k, v in query.items() if not k.startswith("start.")}
        for k in cmd.keys:
            q[f"start.{k}"] = ontap_query.text(rows[nxt][k])
        out["_links"] = {"next": {"href": href(raw_path, q)}}
    return out


def _start(cmd: Command, rows: list[Json], query: Mapping[str, str]) -> int:
    given = {k: query[f"start.{k}"] for k in cmd.keys if f"start.{k}" in query}
    if not given:
        return 0
    for i, r in enumerate(rows):
        if all(ontap_query.text(r[k]) == v for k, v in given.items()):
            return i
    k, v = next(iter(given.items()))
    raise ApiError(400, f'Invalid value for "start.{k}": "{v}"', "262179")
