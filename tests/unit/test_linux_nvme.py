"""NVMe-oF namespaces on Linux through node_exporter: the identifier, the paths, the counters and the join.

Pages are written here the way node_exporter prints them: diskstats' ``node_disk_*`` and
``node_disk_info`` (whose ``wwn`` is udev's ID_WWN, the kernel's ``/sys/block/nvmeXnY/wwid``), the nvme
collector's ``node_nvme_info`` and the nvmesubsystem collector's families. Expected rates are computed
in the test from the numbers on the pages.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.joining import joined

from sanlens.config import HostDiskMapping, HostTarget
from sanlens.hosts.mapping import resolve
from sanlens.hosts.node_exporter import NodeExporterSource, parse_node_exporter, parse_page, readings
from sanlens.join.directory import LunDirectory, LunIdentity, namespace_wwid, normalize_wwid
from sanlens.model import HostDiskStats, HostView

UUID = "72b887b1-5fb6-47b8-be0b-33326e2542e2"
NSID = "uuid." + UUID  # what the kernel's wwid_show prints for a namespace with a UUID
SUBSYS_SERIAL = "81CZ5BQuUNfGAAAAAAAB"
MS32 = 2**32 / 1000.0
NS = LunIdentity("c1", "svm_nvme", "ora_data", "/vol/ora_data/ns0", "", "c1-01", "online", "namespace", UUID)


def _info(dev: str, model: str = "", serial: str = "", wwn: str = "", minor: int = 0) -> str:
    return (
        f'node_disk_info{{device="{dev}",major="259",minor="{minor}",model="{model}",path="",'
        f'revision="",rotational="0",serial="{serial}",wwn="{wwn}"}} 1'
    )


def page(devices: dict[str, dict[str, float]], extra: str = "", local: bool = True) -> str:
    """diskstats for ``devices`` (name -> reads, writes, rtime, wtime, io, weighted, now) with the
    namespace nvme0n1's udev identity, hidden path devices' empty one and a local drive nvme1n1."""
    fams = {
        "node_disk_reads_completed_total": ("counter", "reads"),
        "node_disk_writes_completed_total": ("counter", "writes"),
        "node_disk_read_time_seconds_total": ("counter", "rtime"),
        "node_disk_write_time_seconds_total": ("counter", "wtime"),
        "node_disk_io_time_seconds_total": ("counter", "io"),
        "node_disk_io_time_weighted_seconds_total": ("counter", "weighted"),
        "node_disk_io_now": ("gauge", "now"),
    }
    lines = []
    for name, (typ, key) in fams.items():
        lines.append(f"# TYPE {name} {typ}")
        lines += [f'{name}{{device="{d}"}} {v.get(key, 0.0)!r}' for d, v in devices.items()]
    lines.append("# TYPE node_disk_info gauge")
    for i, d in enumerate(devices):
        if d == "nvme0n1":
            lines.append(_info(d, "NetApp ONTAP Controller", SUBSYS_SERIAL, NSID, i))
        elif d == "nvme1n1" and local:
            lines.append(_info(d, "Samsung SSD 980 PRO 1TB", "S5GXNF0R123456", "eui.002538b111b22c33", i))
        else:
            lines.append(_info(d, minor=i))
    return "\n".join(lines) + "\n" + extra


def nvme_info(states: dict[str, str]) -> str:
    rows = [
        f'node_nvme_info{{cntlid="{0x41 + i}",device="{c}",firmware_revision="FFFFFFFF",'
        f'model="NetApp ONTAP Controller",serial="{SUBSYS_SERIAL}",state="{st}"}} 1'
        for i, (c, st) in enumerate(states.items())
    ]
    return "# TYPE node_nvme_info gauge\n" + "\n".join(rows) + "\n"


def subsystem(states: dict[str, str], namespaces: tuple[str, ...] = ("nvme0n1",)) -> str:
    every = ("connecting", "dead", "deleting", "live", "new", "resetting", "unknown")
    rows = ["# TYPE node_nvmesubsystem_namespace_info gauge"]
    rows += [
        f'node_nvmesubsystem_namespace_info{{device="{d}",subsystem="nvme-subsys0"}} 1' for d in namespaces
    ]
    rows.append("# TYPE node_nvmesubsystem_path_state gauge")
    rows += [
        f'node_nvmesubsystem_path_state{{controller="{c}",state="{s}",subsystem="nvme-subsys0",'
        f'transport="tcp"}} {1 if s == st else 0}'
        for c, st in states.items()
        for s in every
    ]
    return "\n".join(rows) + "\n"


HEAD = {"reads": 1000.0, "writes": 500.0, "rtime": 0.5, "wtime": 0.4, "io": 10.0, "weighted": 0.9, "now": 3.0}
PATH = {
    "reads": 500.0,
    "writes": 250.0,
    "rtime": 0.24,
    "wtime": 0.19,
    "io": 6.0,
    "weighted": 0.43,
    "now": 1.0,
}
LOCAL = {"reads": 70.0, "writes": 30.0, "rtime": 0.01, "wtime": 0.01, "io": 0.5, "weighted": 0.02}


def _ns_page(head: dict[str, float] = HEAD, extra: str = "") -> str:
    devs = {"nvme0n1": head, "nvme0c0n1": PATH, "nvme0c1n1": PATH, "nvme1n1": LOCAL}
    return page(devs, extra)


def by_disk(text: str) -> dict[str, Any]:
    return {r.disk: r for r in parse_node_exporter(text)}


# -- the identifier


def test_the_namespace_identifier_is_the_kernels_uuid_form_in_lower_case() -> None:
    assert namespace_wwid(UUID.upper()) == NSID
    assert namespace_wwid("not-a-uuid") == namespace_wwid("") == ""
    assert normalize_wwid("UUID." + UUID.upper()) == NSID
    assert normalize_wwid("mpath-uuid." + UUID) == NSID  # a dm-multipath map over NVMe devices


def test_the_directory_finds_a_namespace_by_the_identifier_a_host_reports() -> None:
    lun = LunIdentity("c1", "svm1", "v", "/vol/v/lun0", "81CYr]Qlis4q", kind="lun", uuid=UUID)
    d = LunDirectory()
    d.publish("c1", [NS, lun])
    assert d.by_wwid(NSID) == NS and d.by_wwid("UUID." + UUID.upper()) == NS
    assert d.by_wwid("eui.002538b111b22c33") is None
    assert d.by_wwid("3600a098038314359725d516c69733471") == lun  # the SCSI join is untouched
    assert d.by_path("c1", "svm_nvme", "/vol/ora_data/ns0") == NS
    assert len(d) == 2


def test_a_namespace_on_two_clusters_joins_the_copy_the_config_names_or_the_one_online() -> None:
    other = LunIdentity(
        "c2", "svm_nvme", "ora_data", "/vol/ora_data/ns0", "", "", "offline", "namespace", UUID
    )
    d = LunDirectory()
    d.publish("c1", [NS])
    d.publish("c2", [other])
    assert d.by_wwid(NSID, "c2") == other
    assert d.by_wwid(NSID) == NS and not d.ambiguous()


# -- paths, identity and locality


def test_an_ontap_namespace_is_one_disk_with_its_hidden_path_devices_and_their_controllers_states() -> None:
    rs = by_disk(_ns_page(extra=nvme_info({"nvme0": "live", "nvme1": "connecting"})))
    ns = rs["nvme0n1"]
    assert (ns.wwid, ns.serial, ns.local, ns.platform) == (NSID, "", False, "linux")
    assert (ns.paths, ns.known_paths) == (1, 2)
    assert [(p.path, p.state) for p in ns.path_readings] == [
        ("nvme0c0n1", "live"),
        ("nvme0c1n1", "connecting"),
    ]
    assert ns.reads == HEAD["reads"] and ns.busy_s == HEAD["io"]  # the head counts the I/O itself
    assert "nvme0c0n1" not in rs and "nvme0c1n1" not in rs  # paths are no disks of their own


def test_a_local_nvme_drive_stays_local_and_unjoined() -> None:
    d = LunDirectory()
    d.publish("c1", [NS])
    local = by_disk(_ns_page())["nvme1n1"]
    assert local.local and local.wwid == "eui.002538b111b22c33" and local.serial == "S5GXNF0R123456"
    m = resolve(HostTarget(name="ora01", url="http://ora01:9100"), d, local.disk, wwid=local.wwid)
    assert m.mapping == "none" and not m.lun


def test_without_udev_data_a_namespace_has_no_identity_and_is_local() -> None:
    text = page({"nvme0c0n1": PATH, "nvme0n1": HEAD}).replace(f'wwn="{NSID}"', 'wwn=""')
    text = text.replace("NetApp ONTAP Controller", "")
    assert by_disk(text)["nvme0n1"].local


def test_the_nvmesubsystem_collector_lists_every_controller_even_one_without_a_path_device() -> None:
    extra = subsystem({"nvme0": "live", "nvme1": "live", "nvme4": "resetting"})
    ns = by_disk(_ns_page(extra=extra))["nvme0n1"]
    assert [(p.path, p.state) for p in ns.path_readings] == [
        ("nvme4", "resetting"),
        ("nvme0c0n1", "live"),
        ("nvme0c1n1", "live"),
    ]
    assert (ns.paths, ns.known_paths) == (2, 3)
    scrape = parse_page(_ns_page(extra=extra))
    assert scrape.nvme_subsys == {"nvme0n1": "nvme-subsys0"}


def test_without_the_nvme_collectors_present_path_devices_count_as_active() -> None:
    ns = by_disk(_ns_page())["nvme0n1"]
    assert (ns.paths, ns.known_paths) == (2, 2) and {p.state for p in ns.path_readings} == {""}


def test_a_namespace_without_multipath_has_no_path_count_and_takes_the_configs() -> None:
    ns = by_disk(page({"nvme0n1": HEAD}))["nvme0n1"]
    assert ns.paths is None and ns.known_paths is None and not ns.local


# -- counters


def test_when_the_kernel_counts_io_only_on_the_paths_the_namespace_sums_them() -> None:
    idle_head = {"reads": 0.0, "writes": 0.0, "rtime": 0.0, "wtime": 0.0, "io": 0.0, "weighted": 0.0}
    p1 = dict(PATH, rtime=MS32 - 0.1)  # one path's 32-bit read time is about to wrap
    scrape = parse_page(page({"nvme0n1": idle_head, "nvme0c0n1": p1, "nvme0c1n1": PATH}))
    (ns,) = [r for r in readings(scrape) if r.disk == "nvme0n1"]
    assert ns.reads == 1000.0 and ns.writes == 500.0 and ns.queue_length == 2.0
    assert ns.read_time_s == pytest.approx((MS32 - 0.1 + 0.24) % MS32)  # wraps as one 32-bit counter
    assert ns.queue_time_s == pytest.approx(0.86)
    assert ns.busy_s is None  # the union of two paths' busy time is not their sum


class _Resp:
    def __init__(self, text: str) -> None:
        self.status_code, self.text = 200, text


def _poll_twice(pages: list[str], directory: LunDirectory, target: HostTarget | None = None) -> HostDiskStats:
    src = joined(NodeExporterSource(target or HostTarget(name="ora01", url="http://ora01:9100")), directory)
    it = iter(pages)

    def fetch(url: str) -> Any:
        return _Resp(next(it))

    src.fetch = fetch
    times = iter([1000.0, 1060.0])
    src.clock = lambda: next(times)
    src.poll()
    snap = src.poll()
    src.close()
    assert isinstance(snap.view, HostView)
    (disk,) = [d for d in snap.view.disks if isinstance(d, HostDiskStats) and d.disk == "nvme0n1"]
    return disk


def test_the_namespace_joins_by_uuid_and_its_rates_follow_the_hand_arithmetic() -> None:
    d = LunDirectory()
    d.publish("c1", [NS])
    after = dict(HEAD, reads=1600.0, writes=800.0, rtime=0.8, wtime=0.64, io=40.0, weighted=4.5, now=5.0)
    states = nvme_info({"nvme0": "live", "nvme1": "live"})
    disk = _poll_twice([_ns_page(extra=states), _ns_page(after, states)], d)
    assert (disk.cluster, disk.svm, disk.lun, disk.volume) == (
        "c1",
        "svm_nvme",
        "/vol/ora_data/ns0",
        "ora_data",
    )
    # 600 reads and 300 writes in 60 s; 0.3 s of read time over 600 reads, 0.24 s over 300 writes
    assert disk.read_iops == pytest.approx(10.0) and disk.write_iops == pytest.approx(5.0)
    assert disk.read_latency_s == pytest.approx(0.0005) and disk.write_latency_s == pytest.approx(0.0008)
    # 30 s of busy time as counted, but only 0.54 s of requests in flight bound it
    assert disk.reported_busy_ratio == pytest.approx(30.0 / 60.0)
    assert disk.idle_ratio == pytest.approx(1.0 - 0.54 / 60.0)
    assert disk.outstanding_io == pytest.approx(0.54 / 60.0)  # reads and writes, not field 11's 3.6 s
    assert (disk.observed_paths, disk.configured_paths) == (2, 2)


def test_a_disks_entry_may_name_a_namespace_by_its_identifier() -> None:
    d = LunDirectory()
    entry = HostDiskMapping(disk=NSID.upper(), queue_depth=64)
    target = HostTarget(name="ora01", url="http://ora01:9100", disks=[entry])
    m = resolve(target, d, "nvme0n1", wwid=NSID)
    assert m.queue_depth == 64 and m.mapping == "none"  # the entry applies; no namespace published yet
