"""The host-array join when one LUN serial is presented by two clusters (SnapMirror active sync
keeps the primary and secondary copies under one serial and UUID; so does an identity-preserving
SVM DR): the choice is decided by facts, never by which cluster published last, and is reported
when nothing decides it."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from tests.builders import T0, lun, snap

from sanlens.config import HostDiskMapping, HostTarget
from sanlens.hosts.mapping import resolve
from sanlens.join.directory import LunDirectory, LunIdentity, normalize_serial
from sanlens.model import OntapView
from sanlens.serve.exposition import Exposition
from sanlens.store import State

SERIAL = "80010ABC"
PATH = "/vol/v1/lun0"


def identity(cluster: str, state: str = "online") -> LunIdentity:
    return LunIdentity(cluster, "s1", "v1", PATH, SERIAL, "n1", state)


def directory(order: tuple[str, ...] = ("siteA", "siteB")) -> LunDirectory:
    d = LunDirectory()
    for c in order:
        d.publish(c, [identity(c)])
    return d


def serving(d: LunDirectory, cluster: str, iops: float, state: str = "online", t: float = 0.0) -> None:
    """The cluster's latest poll: the LUN's ops (0 for the copy no host sends I/O to) and state."""
    copy = lun(cluster=cluster, read_iops=iops, write_iops=0.0, other_iops=0.0, state=state)
    d.observe(snap(OntapView(cluster, T0 + t, 60.0, luns=(copy,))))


def test_the_join_does_not_depend_on_which_cluster_published_last() -> None:
    a = directory(("siteA", "siteB"))
    b = directory(("siteB", "siteA"))
    b.publish("siteB", [identity("siteB")])  # siteB published again, last
    assert a.by_serial(SERIAL) == b.by_serial(SERIAL)


def test_the_copy_serving_io_wins() -> None:
    d = directory()
    serving(d, "siteA", 0.0)  # asymmetric active sync: the secondary's paths are non-optimized, idle
    serving(d, "siteB", 4000.0)
    got = d.by_serial(SERIAL)
    assert got is not None and got.cluster == "siteB"
    assert d.ambiguous() == []


def test_the_online_copy_wins_over_one_that_is_not() -> None:
    d = LunDirectory()
    d.publish("siteA", [identity("siteA", state="offline")])
    d.publish("siteB", [identity("siteB")])
    got = d.by_serial(SERIAL)
    assert got is not None and got.cluster == "siteB" and d.ambiguous() == []


def test_the_cluster_the_config_names_wins() -> None:
    d = directory()
    serving(d, "siteA", 4000.0)
    got = d.by_serial(SERIAL, "siteB")
    assert got is not None and got.cluster == "siteB"
    target = HostTarget(
        name="sql01", url="http://sql01:9182/metrics", disks=[HostDiskMapping(disk="1", cluster="siteB")]
    )
    m = resolve(target, d, "1", (), SERIAL)
    assert (m.mapping, m.cluster, m.lun) == ("serial", "siteB", PATH)


def test_both_copies_serving_is_reported_and_never_flips_silently() -> None:
    """Symmetric active sync: both sites serve I/O. The choice stays put as the ops move around."""
    d = directory()
    serving(d, "siteA", 3000.0)
    serving(d, "siteB", 1000.0)
    first = d.by_serial(SERIAL)
    assert first is not None and first.cluster == "siteA"  # the busier copy, at first
    serving(d, "siteA", 1000.0, t=60)
    serving(d, "siteB", 3000.0, t=60)
    again = d.by_serial(SERIAL)
    assert again is not None and again.cluster == "siteA"
    (amb,) = d.ambiguous()
    assert (amb.serial, amb.chosen, amb.clusters) == (SERIAL, "siteA", ("siteA", "siteB"))
    # and the exporter says so on /metrics
    st = State()
    text = Exposition(st, directory=d).text().decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    (s,) = fams["sanlens_lun_join_ambiguous"].samples
    assert s.labels == {"serial": SERIAL, "cluster": "siteA", "candidates": "siteA,siteB"} and s.value == 1
    # once one copy stops serving, the other decides it, and the ambiguity is gone
    serving(d, "siteA", 0.0, t=120)
    decided = d.by_serial(SERIAL)
    assert decided is not None and decided.cluster == "siteB" and d.ambiguous() == []


def test_a_choice_is_forgotten_once_its_serial_is_no_longer_shared() -> None:
    """Serials shared by two clusters come and go (a relationship set up, then broken): the
    directory keeps a choice only for the serials shared now, so a long-running exporter does not
    collect one per serial it has ever seen shared."""
    d = LunDirectory()
    for i in range(50):
        serial = f"8001{i:04X}"
        for cluster in ("siteA", "siteB"):
            d.publish(cluster, [LunIdentity(cluster, "s1", "v1", PATH, serial, "n1", "online")])
        got = d.by_serial(serial)
        assert got is not None and got.serial == serial
    assert list(d._chosen) == [normalize_serial(f"8001{49:04X}")]
