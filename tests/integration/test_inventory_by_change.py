"""Between full inventory reads, a poll reads only what changed: the volumes moving and the
aggregates with a sign of a RAID change. At every step the inventory it holds must equal what
a full read gives at the same instant, and the requests it makes must be the few it promises."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sanlens.config import Duration, OntapTarget
from sanlens.ontap.collector import OntapSource
from sanlens.ontap.inventory import Inventory, fetch_dynamic, fetch_static
from sanlens_sim.server import Simulator
from sim_client import Clock, running

REBUILD_AFTER_S = 100.0
REBUILD_RATE = 1.0  # percent a second: the reconstruct runs from 100 s to 200 s


def _dynamic(inv: Inventory) -> dict[str, Any]:
    """What a poll reads into the inventory every poll (RAID and move state, the volumes' places)."""
    return {
        "volumes": {
            k: {f: v[f] for f in ("aggregate", "move_state", "move_percent")} for k, v in inv.volumes.items()
        },
        "raid_ops": sorted(inv.raid_ops, key=repr),
        "disk_raid_group": inv.disk_raid_group,
        "disk_position": inv.disk_position,
        "degraded": inv.degraded_raid_groups,
        "aggregates": inv.aggregates,
    }


def _full(src: OntapSource) -> dict[str, Any]:
    """A fresh full read of the same cluster, now."""
    inv = Inventory()
    fetch_static(src.client, inv, src.caps)
    fetch_dynamic(src.client, inv, src.name, with_stats=False, caps=src.caps)
    return _dynamic(inv)


@contextmanager
def polling(s: Simulator, **target: Any) -> Iterator[tuple[OntapSource, list[tuple[str, dict[str, Any]]]]]:
    src = OntapSource(OntapTarget(name="c1", url=s.url, **({"tables": ["lun"]} | target)))
    asked: list[tuple[str, dict[str, Any]]] = []
    body = src.client.body  # every request, paged or not, reads its answer here

    def logged(path: str, params: Any = None) -> Any:
        asked.append((path, dict(params or {})))
        return body(path, params)

    src.client.body = logged  # type: ignore[method-assign]
    try:
        yield src, asked
    finally:
        src.close()


def _poll(src: OntapSource, asked: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    asked.clear()
    src.poll()
    return list(asked)


def _plex_reads(asked: list[tuple[str, dict[str, Any]]]) -> int:
    return sum(1 for p, _ in asked if p.endswith("/plexes"))


def _volume_asks(asked: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [q for p, q in asked if p == "/api/storage/volumes"]


def _advance(clock: Clock, seconds: float) -> None:
    clock.t += seconds


def test_a_rebuild_is_seen_as_it_starts_progresses_and_ends_with_one_aggregate_read() -> None:
    with (
        running("rebuild-during-oltp", rebuild_after_s=REBUILD_AFTER_S, rebuild_rate_pct_s=REBUILD_RATE) as (
            s,
            clock,
        ),
        polling(s) as (src, asked),
    ):
        first = _poll(src, asked)
        aggregates = len(src.inventory.aggregates)
        assert aggregates >= 2 and _plex_reads(first) == aggregates  # a full read: every aggregate
        assert _dynamic(src.inventory) == _full(src)

        _advance(clock, 30)
        quiet = _poll(src, asked)
        assert _plex_reads(quiet) == 0, "no sign of change: no plexes read"
        assert [q.get("movement.state") for q in _volume_asks(quiet)] == ['!"-"'], "only the moving volumes"
        assert _dynamic(src.inventory) == _full(src)

        _advance(clock, REBUILD_AFTER_S - 30 + 40)  # 40 % into the reconstruct
        during = _poll(src, asked)
        ops = [op for op in src.inventory.raid_ops if op.operation == "reconstruct"]
        assert [(op.aggregate, op.percent) for op in ops] == [("aggr_oltp", 40.0)]
        assert _plex_reads(during) == 1, "only the aggregate with a reconstructing disk"
        assert src.inventory.degraded_raid_groups == {"aggr_oltp": 1}
        assert _dynamic(src.inventory) == _full(src)

        _advance(clock, 30)  # 70 %: the aggregate is read again while its reconstruct runs
        _poll(src, asked)
        assert [op.percent for op in src.inventory.raid_ops] == [70.0]
        assert _dynamic(src.inventory) == _full(src)

        _advance(clock, 60)  # past the end: the reconstruct is gone at the next poll, not minutes later
        after = _poll(src, asked)
        assert src.inventory.raid_ops == [] and src.inventory.degraded_raid_groups == {}
        assert _plex_reads(after) == 1
        assert _dynamic(src.inventory) == _full(src)

        _advance(clock, 30)
        assert _plex_reads(_poll(src, asked)) == 0


def test_a_volume_move_is_followed_to_its_new_aggregate() -> None:
    with running("healthy") as (s, clock), polling(s) as (src, asked):
        _poll(src, asked)
        world = s.estate.world()
        vol = world.volumes[0]
        dest = next(a.name for a in world.aggregates if a.name != vol.aggregate)
        vol.moving = (dest, 35.0)
        _advance(clock, 30)
        moving = _poll(src, asked)
        key = (vol.svm, vol.name)
        assert src.inventory.volumes[key]["move_state"] == "replicating"
        assert src.inventory.volumes[key]["move_percent"] == 35
        asks = _volume_asks(moving)
        assert len(asks) == 1 and "uuid" not in asks[0], "one filtered request while the move runs"
        assert _dynamic(src.inventory) == _full(src)

        vol.moving, vol.aggregate = None, dest  # cut over: the volume lives on its new aggregate
        _advance(clock, 30)
        ended = _poll(src, asked)
        assert [q.get("uuid") for q in _volume_asks(ended)] == [None, vol.uuid], (
            "the moved volume asked by uuid"
        )
        assert src.inventory.volumes[key]["aggregate"] == dest
        assert src.inventory.volumes[key]["move_state"] == ""
        assert _dynamic(src.inventory) == _full(src)

        _advance(clock, 30)
        assert len(_volume_asks(_poll(src, asked))) == 1


def test_qos_workloads_are_read_again_only_when_due_or_a_row_names_one_they_lack() -> None:
    """Policies (a ceiling an engineer edits) every QoS read; workloads (one per volume and LUN) on
    the full inventory's schedule, or at once when a QoS row names a workload the inventory lacks."""
    with (
        running("qos-throttle") as (s, clock),
        polling(s, tables=["lun", "qos", "qos_volume"], qos_interval=Duration(0)) as (src, asked),
    ):

        def qos_read() -> list[str]:
            asked.clear()
            src.poll()
            src.qos_reader.wait(30)
            _advance(clock, 30)
            return [p for p, _ in asked if p.startswith("/api/storage/qos/")]

        first = qos_read()
        assert "/api/storage/qos/workloads" in first and "/api/storage/qos/policies" in first
        held = dict(src.inventory.qos_workloads)
        assert any(w["policy"] == "sql-cap" for w in held.values())

        again = qos_read()
        assert again.count("/api/storage/qos/policies") == 1
        assert "/api/storage/qos/workloads" not in again, "the workloads held are complete: not read again"

        capped = next(u for u, w in held.items() if w["policy"] == "sql-cap")
        del src.inventory.qos_workloads[capped]  # an inventory older than the capped workload
        assert "/api/storage/qos/workloads" in qos_read()
        assert src.inventory.qos_workloads == held


def test_the_statistics_path_reads_every_volume_for_its_counters_and_the_plexes_by_change() -> None:
    with running("healthy") as (s, clock), polling(s, collection="statistics") as (src, asked):
        _poll(src, asked)
        _advance(clock, 30)
        second = _poll(src, asked)
        asks = _volume_asks(second)
        assert len(asks) == 1 and "statistics" in asks[0]["fields"] and "movement.state" not in asks[0]
        assert _plex_reads(second) == 0
        assert _dynamic(src.inventory) == _full(src)


def test_values_many_records_repeat_are_one_string_object_and_read_as_the_records_say() -> None:
    """An inventory is kept until the next full read: the SVM, volume, node and state its LUNs,
    volumes, disks and QoS workloads repeat are one object each, and equal to the answer's."""
    with (
        running("qos-throttle") as (s, _clock),
        polling(s, tables=["lun", "qos"], qos_interval=Duration(0)) as (src, _asked),
    ):
        src.poll()
        src.qos_reader.wait(30)
        inv = src.inventory
        raw = list(src.client.records("/api/storage/luns", {"fields": "name,svm.name,location,status.state"}))
        assert [(x["lun"], x["svm"], x["volume"], x["node"], x["state"]) for x in inv.luns] == [
            (r["name"], r["svm"]["name"], r["location"]["volume"]["name"], r["location"]["node"]["name"],
             r["status"]["state"])
            for r in raw
        ]  # fmt: skip
        workloads = list(inv.qos_workloads.values())
        for records, fields in (
            (inv.luns, ("svm", "volume", "node", "state", "os_type")),
            (list(inv.disks.values()), ("node", "state", "type", "aggregate")),
            (workloads, ("svm", "policy", "class", "volume")),
        ):
            assert len(records) > 1
            for f in fields:
                values = [x[f] for x in records]
                assert len({id(v) for v in values}) == len(set(values)), f
        names = {vol for _svm, vol in inv.volumes} | {x["volume"] for x in inv.luns}
        assert len(
            {id(v) for v in (*(vol for _s, vol in inv.volumes), *(x["volume"] for x in inv.luns))}
        ) == len(names), "a LUN's volume is the volume's own name object"
