"""ONTAP's CLI pass-through, ``/api/private/cli/<command>``: the ``show`` commands of ``lun``,
``volume`` (and its ``efficiency stat``, ``footprint``, ``snapshot autodelete``), ``storage
aggregate`` (``aggr``; and ``show-space``), ``storage disk`` (``disk``), ``system node``
(``node``), ``network interface`` (every SAN LIF, FC ones included, as the CLI lists them) and
``network port`` (the Ethernet ports; ``ifgrp``: none in the simulated estate), and ``qos
policy-group``, ``qos adaptive-policy-group`` and ``qos workload`` (:mod:`sanlens_sim.ontap_qos`).

Records are flat: the command's key fields (always returned) plus the ``fields`` asked for, under
the CLI's field names with ``-`` written ``_``; a field whose value is ``-`` on the CLI (one that does
not apply to the object) is left out of its record. ``fields`` names a field the command does not
have: 400, unless ``ignore_unknown_fields=true``. Other query parameters filter the records
(:mod:`sanlens_sim.ontap_query`); ``max_records`` pages with ``_links.next`` carrying ``start.<key>``
for each key field; ``return_records=false`` answers the count alone.

The rows of each command are those of :mod:`sanlens_sim.ontap_cli_storage` and
:mod:`sanlens_sim.ontap_cli_system`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sanlens_sim import ontap_query
from sanlens_sim.estate import Estate
from sanlens_sim.ontap_api import ApiError, Json, asa_r2_refusal, href, max_records
from sanlens_sim.ontap_cli_storage import (
    LUN_FIELDS,
    VOLUME_FIELDS,
    aggr_rows,
    aggr_space_rows,
    autodelete_rows,
    disk_rows,
    efficiency_stat_rows,
    footprint_rows,
    lun_rows,
    volume_rows,
)
from sanlens_sim.ontap_cli_system import interface_rows, node_rows, port_rows
from sanlens_sim.ontap_qos import (
    ADAPTIVE_FIELDS,
    POLICY_GROUP_FIELDS,
    WORKLOAD_FIELDS,
    adaptive_policy_group_rows,
    policy_group_rows,
    workload_rows,
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
    "qos/policy-group": Command(("policy_group",), (*POLICY_GROUP_FIELDS, "vserver"), policy_group_rows),
    "qos/adaptive-policy-group": Command(
        ("policy_group",), (*ADAPTIVE_FIELDS, "vserver"), adaptive_policy_group_rows
    ),
    "qos/workload": Command(("workload",), (*WORKLOAD_FIELDS, "vserver"), workload_rows),
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
