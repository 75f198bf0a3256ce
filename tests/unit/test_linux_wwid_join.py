"""Linux disks join ONTAP LUNs by WWID: 3 + 600a0980 + the hex of the serial, exact where serials are not."""

from __future__ import annotations

import pytest

from sanlens.config import HostDiskMapping, HostTarget
from sanlens.hosts.mapping import resolve
from sanlens.join.directory import LunDirectory, LunIdentity, normalize_wwid, ontap_wwid, serial_from_wwid

# `multipath -ll` on a host with ONTAP LUNs: "3600a098038314359725d516c69733471 dm-22 NETAPP,LUN C-Mode"
WWID = "3600a098038314359725d516c69733471"


def _hex_of(serial: str) -> str:
    return "".join(f"{ord(c):02x}" for c in serial)


@pytest.mark.parametrize("serial", ["81CYr]Qlis4q", "wOj7N$QPt5OO", "80ZS2?ICnQbl", "D4/kG-x_8+aq"])
def test_the_wwid_spells_each_serial_byte_in_hex_after_netapps_naa_prefix(serial: str) -> None:
    w = ontap_wwid(serial)
    assert w == "3" + "600a0980" + _hex_of(serial) and len(w) == 33
    assert serial_from_wwid(w) == serial


def test_the_multipath_wwid_of_the_field_capture_is_an_ontap_lun() -> None:
    serial = bytes.fromhex(WWID[len("3600a0980") :]).decode()
    assert len(serial) == 12 and serial_from_wwid(WWID) == serial


@pytest.mark.parametrize(
    "spelling",
    [WWID, WWID.upper(), "mpath-" + WWID, WWID[1:], "0x" + WWID[1:], "naa." + WWID[1:]],
)
def test_every_spelling_of_the_wwid_normalizes_to_one_key(spelling: str) -> None:
    assert normalize_wwid(spelling) == WWID


def test_udevs_16_digit_wwn_and_other_arrays_are_no_ontap_serial() -> None:
    assert serial_from_wwid("0x600a098038314359") == ""  # ID_WWN: the designator cut to 16 digits
    assert serial_from_wwid("3600508b1001c1234567890abcdef1234") == ""  # another vendor's NAA
    assert serial_from_wwid("36" + "0" * 31) == ""


def _directory(*luns: LunIdentity) -> LunDirectory:
    d = LunDirectory()
    for cluster in sorted({x.cluster for x in luns}):
        d.publish(cluster, [x for x in luns if x.cluster == cluster])
    return d


def test_serials_that_differ_only_in_case_join_their_own_lun_by_wwid() -> None:
    a = LunIdentity("c1", "svm1", "v1", "/vol/v1/lun0", "abcDEF123456")
    b = LunIdentity("c1", "svm1", "v1", "/vol/v1/lun1", "ABCdef123456")
    d = _directory(a, b)
    assert d.by_wwid(ontap_wwid(a.serial)) == a
    assert d.by_wwid(ontap_wwid(b.serial)) == b
    assert d.by_wwid("mpath-" + ontap_wwid(b.serial).upper()) == b


def test_a_serial_on_two_clusters_joins_the_copy_the_disk_entry_names() -> None:
    a = LunIdentity("c1", "svm1", "v1", "/vol/v1/lun0", "81CYr]Qlis4q", state="online")
    b = LunIdentity("c2", "svm1", "v1", "/vol/v1/lun0", "81CYr]Qlis4q", state="online")
    d = _directory(a, b)
    assert d.by_wwid(WWID, "c2") == b
    assert d.by_wwid(WWID) in (a, b)
    assert [x.clusters for x in d.ambiguous()] == [("c1", "c2")]  # nothing decides it: listed


def _target(*disks: HostDiskMapping, **kw: object) -> HostTarget:
    return HostTarget(name="ora01", url="http://ora01:9100", disks=list(disks), **kw)  # type: ignore[arg-type]


def test_resolve_joins_by_wwid_without_configuration() -> None:
    lun = LunIdentity("c1", "svm1", "oradata", "/vol/oradata/lun0", "81CYr]Qlis4q")
    m = resolve(_target(), _directory(lun), "mpatha", wwid=WWID, aliases=("dm-22",))
    assert (m.mapping, m.cluster, m.svm, m.lun, m.lun_serial) == (
        "serial",
        "c1",
        "svm1",
        "/vol/oradata/lun0",
        "81CYr]Qlis4q",
    )


@pytest.mark.parametrize("name", ["mpatha", "dm-22", WWID, "mpath-" + WWID.upper(), WWID[1:]])
def test_a_static_entry_names_a_linux_disk_by_map_name_dm_or_wwid(name: str) -> None:
    entry = HostDiskMapping(disk=name, cluster="c9", svm="svmX", lun="/vol/x/lun3", queue_depth=128)
    m = resolve(_target(entry), LunDirectory(), "mpatha", wwid=WWID, aliases=("dm-22",))
    assert (m.mapping, m.cluster, m.lun, m.queue_depth) == ("static", "c9", "/vol/x/lun3", 128)


def test_paths_listed_by_the_host_raise_what_the_disk_should_have() -> None:
    m = resolve(_target(paths=1), LunDirectory(), "mpatha", observed_paths=1, known_paths=2)
    assert (m.observed_paths, m.configured_paths) == (1, 2)
    m = resolve(_target(paths=4), LunDirectory(), "mpatha", observed_paths=2, known_paths=2)
    assert m.configured_paths == 4


def test_queue_depth_precedence_disk_entry_then_host_report_then_host_config() -> None:
    entry = HostDiskMapping(disk="mpatha", queue_depth=256)
    assert (
        resolve(_target(queue_depth=16), LunDirectory(), "mpatha", observed_queue_depth=64).queue_depth == 64
    )
    assert resolve(_target(queue_depth=16), LunDirectory(), "mpatha").queue_depth == 16
    m = resolve(_target(entry, queue_depth=16), LunDirectory(), "mpatha", observed_queue_depth=64)
    assert m.queue_depth == 256
