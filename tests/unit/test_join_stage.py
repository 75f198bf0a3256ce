"""The join stage between a poll's result and the store: ONTAP snapshots feed the directory, host
snapshots come back joined, whatever order the polls land in; the pipeline runs join, store, engine."""

from __future__ import annotations

from typing import Any

from tests.builders import T0, lun

from sanlens.config import HostDiskMapping, HostTarget
from sanlens.hosts.cooking import DiskReading, HostCooker
from sanlens.hosts.mapping import disk_mapping
from sanlens.join.directory import LunDirectory
from sanlens.join.stage import INFO, JoinStage
from sanlens.model import HostView, LunIdentity, OntapView, Snapshot
from sanlens.runtime.pipeline import Pipeline
from sanlens.store import State

SERIAL = "80010ABC1234"
PATH = "/vol/v1/lun0"
IDENT = LunIdentity("c1", "s1", "v1", PATH, SERIAL, "n1")


def ontap(luns: tuple[LunIdentity, ...] = (IDENT,), cluster: str = "c1") -> Snapshot:
    return Snapshot(cluster, "ontap", T0, view=OntapView(cluster, T0, 60.0), lun_identities=luns)


def host(target: HostTarget, *readings: DiskReading) -> Snapshot:
    """One host poll as a source returns it: cooked unjoined, with each disk's join keys."""
    found = {r.disk: disk_mapping(target, r.disk, r.drives, r.serial, r.paths, wwid=r.wwid) for r in readings}
    snap = HostCooker(target.name).cook(T0, list(readings), {d: m for d, (m, _) in found.items()})
    return Snapshot(
        snap.target,
        snap.kind,
        snap.timestamp,
        snap.metrics,
        snap.view,
        disk_identities=tuple(k for _, k in found.values()),
    )


def info(snap: Snapshot) -> dict[str, dict[str, str]]:
    (m,) = [m for m in snap.metrics if m.name == INFO]
    return {
        dict(zip(m.label_names, v, strict=True))["disk"]: dict(zip(m.label_names, v, strict=True))
        for v, _ in m.samples
    }


def disk_of(snap: Snapshot, name: str) -> Any:
    assert isinstance(snap.view, HostView)
    return {d.disk: d for d in snap.view.disks}[name]


TARGET = HostTarget(name="sql01", url="http://sql01:9182/metrics")


def test_a_host_poll_before_the_first_ontap_poll_joins_once_the_ontap_poll_arrives() -> None:
    join = JoinStage()
    first = join.apply(host(TARGET, DiskReading("1", serial=SERIAL)))
    assert not disk_of(first, "1").mapped and info(first)["1"]["mapping"] == "none"
    join.apply(ontap())
    again = join.apply(host(TARGET, DiskReading("1", serial=SERIAL)))
    d = disk_of(again, "1")
    assert (d.cluster, d.svm, d.volume, d.lun, d.lun_serial) == ("c1", "s1", "v1", PATH, SERIAL)
    labels = info(again)["1"]
    assert (labels["mapping"], labels["cluster"], labels["lun"], labels["volume"]) == (
        "serial",
        "c1",
        PATH,
        "v1",
    )


def test_a_static_entry_takes_the_inventory_volume_and_serial_once_known() -> None:
    target = HostTarget(
        name="sql01",
        url="http://sql01:9182/metrics",
        disks=[HostDiskMapping(disk="2", cluster="c1", svm="s1", lun=PATH)],
    )
    join = JoinStage()
    alone = join.apply(host(target, DiskReading("2")))
    assert info(alone)["2"]["mapping"] == "static" and disk_of(alone, "2").lun_serial == ""
    join.apply(ontap(luns=(LunIdentity("c1", "s1", "vol_one", PATH, SERIAL),)))
    known = join.apply(host(target, DiskReading("2")))
    assert (disk_of(known, "2").volume, disk_of(known, "2").lun_serial) == ("vol_one", SERIAL)
    assert info(known)["2"]["lun_serial"] == SERIAL


def test_an_unchanged_join_returns_the_snapshot_itself_and_forget_drops_a_cluster() -> None:
    join = JoinStage()
    snap = host(TARGET, DiskReading("1", serial="NOTONTAP0000"))
    assert join.apply(snap) is snap
    join.apply(ontap())
    assert len(join.directory) == 1
    join.forget("c1")
    assert len(join.directory) == 0


def test_an_ontap_poll_feeds_which_copy_serves_io() -> None:
    d = LunDirectory()
    join = JoinStage(d)
    for cluster, iops in (("a", 0.0), ("b", 500.0)):
        copy = lun(
            cluster=cluster, serial=SERIAL, read_iops=iops, write_iops=0.0, other_iops=0.0, state="online"
        )
        ident = LunIdentity(cluster, copy.svm, copy.volume, copy.lun, SERIAL, state="online")
        view = OntapView(cluster, T0, 60.0, luns=(copy,))
        join.apply(Snapshot(cluster, "ontap", T0, view=view, lun_identities=(ident,)))
    got = d.by_serial(SERIAL)
    assert got is not None and got.cluster == "b" and join.ambiguous() == []


class _Engine:
    deferred = False

    def __init__(self) -> None:
        self.seen: list[Snapshot] = []

    def update(self, snapshot: Snapshot) -> None:
        self.seen.append(snapshot)

    def findings(self) -> list[dict[str, object]]:
        return []

    def metrics(self) -> tuple[()]:
        return ()


def test_the_pipeline_joins_then_stores_then_hands_the_stored_snapshot_to_the_engine() -> None:
    state, engine, join = State(), _Engine(), JoinStage()
    pipeline = Pipeline(state, join, engine)
    pipeline.record_success(ontap(), 0.1)
    stored = pipeline.record_success(host(TARGET, DiskReading("1", serial=SERIAL)), 0.1)
    assert disk_of(stored, "1").mapped and stored.received is not None
    assert state.view()[0]["sql01"] is stored and engine.seen[-1] is stored
    assert len(join.directory) == 1
