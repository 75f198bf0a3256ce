"""Each aggregate's RAID state from its plexes, re-read where something changed.

A plex answer is one request per aggregate, and at 24 nodes that is ~50 requests a poll for
state that changes a few times a year. Between full refreshes an aggregate's plexes are read
again only when there is a sign of change, found by two small requests: the aggregates'
state and disk count (an expansion adds disks), and the disks not in a steady state (a
failed disk is ``broken``, its replacement ``reconstructing``; a copy to a spare is ``copy``).
An aggregate whose last read showed a RAID operation or a degraded group is read every poll
until it shows none, so its progress and its end are seen when they happen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sanlens.model import BackgroundOp
from sanlens.ontap.capabilities import Capabilities
from sanlens.ontap.records import get_path

if TYPE_CHECKING:
    from sanlens.ontap.client import OntapClient

PLEXES = "/api/storage/aggregates/{uuid}/plexes"
PLEX_FIELDS = "name,raid_groups,resync"
# ONTAP's disk states that mean a RAID group is changing (REST `storage/disks` state enum);
# present, spare and partner are steady, zeroing concerns a spare, not a RAID group
UNSTEADY_DISK_STATES = ("broken", "copy", "maintenance", "pending", "reconstructing", "removed", "unfail")
UNSTEADY_DISK_QUERY = {
    "fields": "name,state,aggregates.name,node.name",
    "state": "|".join(UNSTEADY_DISK_STATES),
}


@dataclass(frozen=True)
class AggregateRaid:
    """What one aggregate's plexes said at their last read, and the aggregate's state then."""

    basis: tuple[str, object]  # (state, disk count) of the aggregate when its plexes were read
    ops: tuple[BackgroundOp, ...] = ()
    raid_group_of: Mapping[str, str] = field(default_factory=dict)  # disk -> /aggr/plex0/rg0
    position_of: Mapping[str, str] = field(default_factory=dict)  # disk -> data, parity, ...
    degraded: int = 0  # RAID groups ONTAP calls degraded

    @property
    def changing(self) -> bool:
        return bool(self.ops) or self.degraded > 0


def _basis(info: Mapping[str, Any]) -> tuple[str, object]:
    return (str(info.get("state", "")), info.get("disk_count"))


def read_aggregate(
    client: OntapClient,
    cluster: str,
    aggr: str,
    info: Mapping[str, Any],
    caps: Capabilities,
    release: str,
) -> AggregateRaid:
    """One aggregate's plexes: RAID groups, their disks' positions, and the RAID operations under way."""
    path = PLEXES.format(uuid=info["uuid"])
    no_plexes: list[dict[str, Any]] = []
    plexes = caps.optional(
        PLEXES, lambda: list(client.records(path, {"fields": PLEX_FIELDS})), no_plexes, release
    )
    ops: list[BackgroundOp] = []
    raid_of: dict[str, str] = {}
    position: dict[str, str] = {}
    degraded = 0
    for plex in plexes:
        pname = str(plex.get("name", "plex0"))
        if get_path(plex, "resync.active", False):
            ops.append(BackgroundOp(cluster, "resync", aggr, raid_group=f"/{aggr}/{pname}",
                                    percent=float(get_path(plex, "resync.percent", 0))))  # fmt: skip
        for rg in plex.get("raid_groups") or []:
            rg_path = f"/{aggr}/{pname}/{rg.get('name', '')}"
            if get_path(rg, "degraded", False) is True:
                degraded += 1
            for d in rg.get("disks") or []:
                raid_of[str(get_path(d, "disk.name"))] = rg_path
                position[str(get_path(d, "disk.name"))] = str(d.get("position") or "")
            for key, op in (("reconstruct", "reconstruct"), ("recomputing_parity", "recompute_parity")):
                if get_path(rg, f"{key}.active", False):
                    ops.append(BackgroundOp(cluster, op, aggr, raid_group=rg_path,  # type: ignore[arg-type]
                                            percent=float(get_path(rg, f"{key}.percent", 0))))  # fmt: skip
    return AggregateRaid(_basis(info), tuple(ops), raid_of, position, degraded)


def to_reread(
    aggregates: Mapping[str, Mapping[str, Any]],
    known: Mapping[str, AggregateRaid],
    unsteady_disks: Iterable[Mapping[str, Any]] | None,
) -> set[str]:
    """The aggregates whose plexes may have changed since their last read.

    ``unsteady_disks`` is None when the disks cannot be asked: then every aggregate is read.
    A disk out of its aggregate (a failed disk often names none) marks every aggregate of its node.
    """
    if unsteady_disks is None:
        return set(aggregates)
    out = {
        a
        for a, info in aggregates.items()
        if a not in known or known[a].changing or known[a].basis != _basis(info)
    }
    for d in unsteady_disks:
        if str(d.get("state", "")) not in UNSTEADY_DISK_STATES:  # a server that ignored the filter
            continue
        named = [str(x.get("name", "")) for x in d.get("aggregates") or [] if isinstance(x, Mapping)]
        hits = {a for a in named if a in aggregates}
        if not hits:
            node = str(get_path(d, "node.name"))
            hits = {a for a, info in aggregates.items() if info.get("node") == node}
        out |= hits
    return out


def refresh(
    read: Callable[[str], AggregateRaid],
    aggregates: Mapping[str, Mapping[str, Any]],
    known: Mapping[str, AggregateRaid],
    which: set[str],
) -> dict[str, AggregateRaid]:
    """The aggregates' RAID state: ``which`` read again, the others as last read; gone ones dropped."""
    return {
        a: read(a) if a in which or a not in known else known[a] for a in aggregates if aggregates[a]["uuid"]
    }
