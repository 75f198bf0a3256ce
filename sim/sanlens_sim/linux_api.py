"""A simulated Linux host as node_exporter serves it: ``/linux/<host>/metrics``.

Names, HELP texts, types and label sets follow node_exporter 1.12's diskstats and
dmmultipath collectors (``collector/diskstats_linux.go``, ``diskstats_common.go``,
``dmmultipath_linux.go``; ``collector/fixtures/e2e-output.txt`` for the shape). Families
come sorted by name and labels by key, as the Go client library writes them.

The counters follow the host's kernel (``node_uname_info{release,machine}``, the uname collector):

- busy time (field 10): from 5.0 until "block: support to account io_ticks precisely" (upstream
  99dc422335d8, 6.10; 6.1.93 on the 6.1 branch) ``update_io_ticks`` charges every jiffy in which a
  request starts: at HZ jiffies a second and S starts a second, the expected share of jiffies with
  a start is 1 - e^(-S/HZ), so the counter grows 1 - e^(-S/HZ) x (1 - busy) s/s. Other kernels
  charge the time with a request in flight. The time in flight is never above the mean number in
  flight (Little's law over the time sums).
- field 11: the summed duration of completed requests of every kind (reads, writes, discards).
- counts and sectors are ``unsigned long``: on a 32-bit machine (i686, armv7l, ...) they wrap at 2^32.

Each LUN-backed disk is a dm-multipath map (``mpatha`` on ``dm-2``, uuid ``mpath-`` + the
WWID ``3600a0980`` + the hex of the LUN serial) over SCSI path devices. Widths are the
kernel's: counts and sectors are ``unsigned long``, every time is a 32-bit count of milliseconds
(``%u`` in ``diskstats_show``), so the exposed seconds wrap at 2^32 ms. A failed path
device keeps its last counters and reads ``transport-offline`` (fast_io_fail_tmo
expired, dev_loss_tmo not yet). The host also serves sanlens's textfile families: each
path's queue depth and ALUA access state.

A disk whose LUN is an NVMe namespace is served as native NVMe multipath shows it: the
namespace's block device ``nvme<S>n1`` (major 259, udev's ID_WWN = the kernel's wwid
``uuid.<namespace UUID>``, model ``NetApp ONTAP Controller``, serial the subsystem's) counts the
I/O, as kernels with multipath I/O statistics do; each controller adds a hidden path device
``nvme<S>c<C>n1``, listed by /proc/diskstats but unknown to udev (hidden disks send no uevents), so
its ``node_disk_info`` labels are empty. The nvme collector's ``node_nvme_info`` gives each
controller's state (a lost one is ``connecting``: reconnecting until ctrl_loss_tmo). Its other
families, and the nvmesubsystem collector (off by default), are not served.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from sanlens.hosts.catalogue import linux_word_bits
from sanlens.join.directory import ontap_wwid
from sanlens.serve.exposition import escape_label_value
from sanlens_sim.counters import CounterSet
from sanlens_sim.estate import UPTIME_S, Estate
from sanlens_sim.host_builder import DEFAULT_KERNEL, DEFAULT_MACHINE, LinuxHost
from sanlens_sim.world import Host, HostDisk, Lun, lun_serial

WRAP_MS = 2**32
WRAP_WORD = 2**32  # an unsigned long of a 32-bit kernel
FAILED_STATE = "transport-offline"
NVME_FAILED_STATE = "connecting"  # a fabric controller whose connection is lost, until ctrl_loss_tmo
NVME_MAJOR = "259"  # block extended major: NVMe namespaces and their hidden path devices
ONTAP_NVME_MODEL = "NetApp ONTAP Controller"
ONTAP_NVME_FIRMWARE = "FFFFFFFF"
_SECTOR = 512

# (family, type, HELP, estate counter or None for a gauge, kind: bytes | time | count)
_DISK = (
    ("node_disk_discard_time_seconds_total", "counter", "This is the total number of seconds spent by all discards.", "discard_seconds", "time"),
    ("node_disk_discarded_sectors_total", "counter", "The total number of sectors discarded successfully.", None, "count"),
    ("node_disk_discards_completed_total", "counter", "The total number of discards completed successfully.", "discards", "count"),
    ("node_disk_discards_merged_total", "counter", "The total number of discards merged.", None, "count"),
    ("node_disk_flush_requests_time_seconds_total", "counter", "This is the total number of seconds spent by all flush requests.", None, "time"),
    ("node_disk_flush_requests_total", "counter", "The total number of flush requests completed successfully", None, "count"),
    ("node_disk_io_now", "gauge", "The number of I/Os currently in progress.", None, "count"),
    ("node_disk_io_time_seconds_total", "counter", "Total seconds spent doing I/Os.", "busy", "time"),
    ("node_disk_io_time_weighted_seconds_total", "counter", "The weighted # of seconds spent doing I/Os.", "queue", "time"),
    ("node_disk_read_bytes_total", "counter", "The total number of bytes read successfully.", "read_bytes", "bytes"),
    ("node_disk_read_time_seconds_total", "counter", "The total number of seconds spent by all reads.", "read_seconds", "time"),
    ("node_disk_reads_completed_total", "counter", "The total number of reads completed successfully.", "reads", "count"),
    ("node_disk_reads_merged_total", "counter", "The total number of reads merged.", None, "count"),
    ("node_disk_write_time_seconds_total", "counter", "This is the total number of seconds spent by all writes.", "write_seconds", "time"),
    ("node_disk_writes_completed_total", "counter", "The total number of writes completed successfully.", "writes", "count"),
    ("node_disk_writes_merged_total", "counter", "The number of writes merged.", None, "count"),
    ("node_disk_written_bytes_total", "counter", "The total number of bytes written successfully.", "write_bytes", "bytes"),
)  # fmt: skip


def _labels(**kw: str) -> str:
    return "{" + ",".join(f'{k}="{escape_label_value(v)}"' for k, v in sorted(kw.items())) + "}"


def _exposed(kind: str, value: float, word_bits: int = 64) -> float:
    """A cumulative value as node_exporter shows it: times in 32-bit milliseconds x 0.001, bytes in
    whole sectors, counts whole; counts and sectors in the kernel's word."""
    if kind == "time":
        return (round(value * 1000.0) % WRAP_MS) / 1000.0
    sectors = int(value) // _SECTOR if kind == "bytes" else int(value)
    if word_bits == 32:
        sectors %= WRAP_WORD
    return float(sectors * _SECTOR if kind == "bytes" else sectors)


@dataclass(frozen=True)
class Kernel:
    """What a host's kernel does to its diskstats."""

    release: str = DEFAULT_KERNEL
    machine: str = DEFAULT_MACHINE
    hz: int = 250

    @classmethod
    def of(cls, host: Host) -> Kernel:
        if isinstance(host, LinuxHost):
            return cls(host.kernel, host.machine, host.hz)
        return cls()

    @property
    def version(self) -> tuple[int, int, int]:
        m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", self.release)
        return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else (0, 0, 0)

    @property
    def jiffy_per_start(self) -> bool:
        """Busy time charged a jiffy per request start: 5.0 up to the fix (6.10; 6.1.93 on 6.1)."""
        v = self.version
        return (5, 0, 0) <= v < (6, 10, 0) and not (6, 1, 93) <= v < (6, 2, 0)

    @property
    def word_bits(self) -> int:
        return linux_word_bits(self.machine)


def _busy_rate(rates: dict[str, float], kernel: Kernel, storm: tuple[float, float]) -> float:
    """Busy seconds a second the kernel counts: the time with a request in flight (no more than the
    mean number in flight), or with a jiffy per start the expected share of jiffies charged."""
    rw = rates.get("read_seconds", 0.0) + rates.get("write_seconds", 0.0)
    true = min(1.0, min(rates.get("busy", 0.0), rw) + storm[0] * storm[1])
    if not kernel.jiffy_per_start:
        return true
    starts = rates.get("reads", 0.0) + rates.get("writes", 0.0) + storm[0]
    return 1.0 - math.exp(-starts / kernel.hz) * (1.0 - true)


def _as_kernel(
    cs: CounterSet, key: str, t: float, kernel: Kernel, storm: tuple[float, float], started: float,
    wrap_after_s: float | None,
) -> dict[str, float]:  # fmt: skip
    """A device's cumulative counters as its kernel shows them at ``t``: busy time integrated
    segment by segment of the scenario's rates, discards of a storm, field 11 the sum of every
    kind's time, the write count moved to pass 2^32 ``wrap_after_s`` after ``started``. A live
    scenario switch starts a new counter set from the estate's own busy time: on a kernel that
    charges a jiffy per start, busy time then steps back once."""
    i = cs.index.get(key)
    if i is None:
        return {}
    c = dict(zip(cs.names, cs.row(i, t), strict=True))
    busy = c.get("busy", 0.0)
    segs = cs.segments
    for s, (start, rates) in enumerate(segs):
        if t <= start:
            break
        end = segs[s + 1][0] if s + 1 < len(segs) else t
        dt = min(t, end) - start
        if dt > 0:
            seg = dict(zip(cs.names, rates[i], strict=True))
            busy += (_busy_rate(seg, kernel, storm) - seg.get("busy", 0.0)) * dt
    c["busy"] = busy
    running = t - started + UPTIME_S
    c["discards"] = storm[0] * running
    c["discard_seconds"] = storm[0] * storm[1] * running
    c["queue"] = c.get("read_seconds", 0.0) + c.get("write_seconds", 0.0) + c["discard_seconds"]
    if wrap_after_s is not None:
        at = dict(zip(cs.names, cs.row(i, started + wrap_after_s), strict=True))
        c["writes"] = c.get("writes", 0.0) + WRAP_WORD - at.get("writes", 0.0)
        c["write_bytes"] = c.get("write_bytes", 0.0) + WRAP_WORD * _SECTOR - at.get("write_bytes", 0.0)
    return c


def wwid_of(d: HostDisk) -> str:
    return ontap_wwid(d.serial)


def go_float(v: float) -> str:
    """A sample value as the Go client writes it (strconv 'g', shortest): 0, 9653.88, 5.13708655616e+11."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "0"
    d = Decimal(repr(float(v))).normalize()
    sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    e10 = len(digits) + exp - 1
    if -4 <= e10 < 6:
        return format(d, "f")
    mant = "".join(map(str, digits))
    text = mant[0] + ("." + mant[1:] if len(mant) > 1 else "")
    return f"{'-' if sign else ''}{text}e{'+' if e10 >= 0 else '-'}{abs(e10):02d}"


def _family(lines: list[str], name: str, typ: str, help_: str, rows: Iterable[tuple[str, float]]) -> None:
    rows = list(rows)
    if not rows:
        return
    lines.append(f"# HELP {name} {help_}")
    lines.append(f"# TYPE {name} {typ}")
    lines.extend(f"{name}{labels} {go_float(v)}" for labels, v in rows)


def render(estate: Estate, host: Host, t: float) -> str:
    hd, hp = estate.counters["hostdisk"], estate.counters["hostpath"]
    kernel = Kernel.of(host)
    storms = host.discard_storm if isinstance(host, LinuxHost) else {}
    wrap_after = host.writes_wrap_after_s if isinstance(host, LinuxHost) else None

    def row(cs_key: str, kind: str = "hostdisk") -> dict[str, float]:
        disk = cs_key.split("/")[1]
        storm = storms.get(disk, (0.0, 0.0)) if kind == "hostdisk" else (0.0, 0.0)
        return _as_kernel(
            hd if kind == "hostdisk" else hp, cs_key, t, kernel, storm, estate.started, wrap_after
        )

    # device -> (counters, io_now); the boot disk's LVM root mirrors it, swap stays idle
    devices: dict[str, tuple[dict[str, float], float]] = {}
    info: dict[str, dict[str, str]] = {}
    luns = {x.key: x for x in estate.world(t).luns}
    namespaces = {d.number: ns for d in host.disks if (ns := _namespace(luns.get(d.lun_key)))}
    maps = [d for d in host.disks if d.dm and d.number not in namespaces]
    minors = {"sda": 0}
    controllers: list[tuple[str, str, str, str]] = []  # (nvmeC, subsystem serial, state, cntlid)
    for d in host.disks:
        c = row(f"{host.name}/{d.number}")
        ns = namespaces.get(d.number)
        if ns is not None:
            k = list(namespaces).index(d.number)
            first = sum(len(x.path_devices) for x in host.disks if x.number in list(namespaces)[:k])
            head = f"nvme{k}n1"
            serial = lun_serial("nvme-subsystem", ns.svm, ns.uuid) + "AAAAAAAB"
            devices[head] = (c, round(d.queue))
            minors[head] = len(minors)
            info[head] = {
                "model": ONTAP_NVME_MODEL,
                "path": "",
                "revision": ONTAP_NVME_FIRMWARE,
                "rotational": "0",
                "serial": serial,
                "wwn": "uuid." + ns.uuid,
            }
            for j, p in enumerate(d.path_devices):
                pc = row(f"{host.name}/{d.number}/{p}", "hostpath")
                live = p in d.live_paths
                hidden = f"nvme{k}c{first + j}n1"
                devices[hidden] = (pc, round(d.queue / max(len(d.live_paths), 1)) if live else 0.0)
                minors[hidden] = len(minors)
                state = NVME_FAILED_STATE if p in d.failed else "live"
                controllers.append((f"nvme{first + j}", serial, state, str(0x41 + j)))
            continue
        if not d.dm:
            devices[d.number] = (c, round(d.queue))
            devices["dm-0"] = (c, round(d.queue))
            devices["dm-1"] = ({}, 0.0)
            info[d.number] = {
                "model": "PERC_H730P_Mini",
                "path": "pci-0000:18:00.0-scsi-0:2:0:0",
                "revision": "4.30",
                "rotational": "0",
                "serial": "00" + d.serial.encode().hex()[:30],
                "wwn": "0x6d09466" + d.serial.encode().hex()[:9],
            }
            continue
        devices[d.dm] = (c, round(d.queue))
        wwid = wwid_of(d)
        for k, p in enumerate(d.path_devices):
            pc = row(f"{host.name}/{d.number}/{p}", "hostpath")
            live = p in d.live_paths
            devices[p] = (pc, round(d.queue / max(len(d.live_paths), 1)) if live else 0.0)
            minors[p] = 16 * _sd_index(p)
            info[p] = {
                "model": "LUN_C-Mode",
                "path": f"pci-0000:3b:00.{k % 2}-fc-0x20{k:02x}00a098a1b2c3-lun-{maps.index(d)}",
                "revision": "9800",
                "rotational": "0",
                # with sg3_utils' rules udev has the unit serial; without, ID_SERIAL_SHORT (NAA hex)
                "serial": d.serial if host.dmmultipath else wwid[1:],
                "wwn": "0x" + wwid[1:17],  # ID_WWN: the designator cut to 16 hex digits
            }
    lines: list[str] = []
    dm_names = {
        "dm-0": ("rhel-root", "LVM-" + "a" * 64, "rhel", "root"),
        "dm-1": ("rhel-swap", "LVM-" + "b" * 64, "rhel", "swap"),
    }
    for d in maps:
        dm_names[d.dm] = (d.number, "mpath-" + wwid_of(d), "", "")
    order = sorted(devices)
    families: dict[str, tuple[str, str, list[tuple[str, float]]]] = {}
    for name, typ, help_, counter, kind in _DISK:
        rows = []
        for dev in order:
            c, io_now = devices[dev]
            if name == "node_disk_io_now":
                v = io_now
            else:
                v = _exposed(kind, c.get(counter, 0.0), kernel.word_bits) if counter else 0.0
            rows.append((_labels(device=dev), v))
        families[name] = (typ, help_, rows)
    families["node_disk_device_mapper_info"] = (
        "gauge",
        "Info about disk device mapper.",
        [
            (_labels(device=dev, name=n, uuid=u, vg_name=vg, lv_name=lv, lv_layer=""), 1.0)
            for dev, (n, u, vg, lv) in sorted(dm_names.items())
        ],
    )
    families["node_disk_info"] = (
        "gauge",
        "Info of /sys/block/<block_device>.",
        [
            (
                _labels(
                    device=dev,
                    major="253" if dev.startswith("dm-") else NVME_MAJOR if dev.startswith("nvme") else "8",
                    minor=dev[3:] if dev.startswith("dm-") else str(minors.get(dev, 0)),
                    **(
                        info.get(dev)
                        or {
                            "model": "",
                            "path": "",
                            "revision": "",
                            "rotational": "0",
                            "serial": "",
                            "wwn": "",
                        }
                    ),
                ),
                1.0,
            )
            for dev in order
        ],
    )
    if host.dmmultipath and maps:
        dev_rows = [(d, _labels(device=d.number, sysfs_name=d.dm)) for d in maps]
        families["node_dmmultipath_device_active"] = (
            "gauge",
            "Whether the multipath device-mapper device is active (1) or suspended (0).",
            [(lb, 1.0) for _d, lb in dev_rows],
        )
        families["node_dmmultipath_device_info"] = (
            "gauge",
            "Non-numeric information about a DM-multipath device.",
            [(_labels(device=d.number, sysfs_name=d.dm, uuid="mpath-" + wwid_of(d)), 1.0) for d in maps],
        )
        families["node_dmmultipath_device_paths"] = (
            "gauge",
            "Number of paths for a multipath device.",
            [(lb, float(len(d.path_devices))) for d, lb in dev_rows],
        )
        families["node_dmmultipath_device_paths_active"] = (
            "gauge",
            "Number of paths in active state (SCSI running or NVMe live) for a multipath device.",
            [(lb, float(len(d.path_devices) - len(d.failed))) for d, lb in dev_rows],
        )
        families["node_dmmultipath_device_paths_failed"] = (
            "gauge",
            "Number of paths not in active state for a multipath device.",
            [(lb, float(len(d.failed))) for d, lb in dev_rows],
        )
        families["node_dmmultipath_device_size_bytes"] = (
            "gauge",
            "Size of the multipath device in bytes, read from /sys/block/<dm>/size.",
            [(lb, d.size_bytes) for d, lb in dev_rows],
        )
        families["node_dmmultipath_path_state"] = (
            "gauge",
            "Reports the underlying device state for a multipath path, as read from /sys/block/<dev>/device/state.",
            [
                (_labels(device=d.number, path=p, state=FAILED_STATE if p in d.failed else "running"), 1.0)
                for d in maps
                for p in d.path_devices
            ],
        )
    if controllers:
        families["node_nvme_info"] = (
            "gauge",
            "Non-numeric data from /sys/class/nvme/<device>, value is always 1.",
            [
                (
                    _labels(
                        device=ctrl,
                        firmware_revision=ONTAP_NVME_FIRMWARE,
                        model=ONTAP_NVME_MODEL,
                        serial=serial,
                        state=state,
                        cntlid=cntlid,
                    ),
                    1.0,
                )
                for ctrl, serial, state, cntlid in sorted(controllers, key=lambda x: (len(x[0]), x[0]))
            ],
        )
    families["sanlens_linux_disk_queue_depth"] = (
        "gauge",
        "Queue depth of a SCSI device (/sys/block/<device>/device/queue_depth), sanlens textfile.",
        [(_labels(device=p), float(d.queue_depth)) for d in maps for p in d.path_devices],
    )
    families["sanlens_linux_disk_access_state"] = (
        "gauge",
        "ALUA access state of a SCSI device (/sys/block/<device>/device/access_state), sanlens textfile.",
        [
            (_labels(device=p, state=_access_state(d, k)), 1.0)
            for d in maps
            for k, p in enumerate(d.path_devices)
        ],
    )
    families["node_scrape_collector_success"] = (
        "gauge",
        "node_exporter: Whether a collector succeeded.",
        [
            (_labels(collector=c), 1.0)
            for c in (
                "diskstats",
                *(("dmmultipath",) if host.dmmultipath else ()),
                *(("nvme",) if controllers else ()),
                "textfile",
                "uname",
            )
        ],
    )
    families["node_uname_info"] = (
        "gauge",
        "Labeled system information as provided by the uname system call.",
        [
            (
                _labels(
                    domainname="(none)",
                    machine=kernel.machine,
                    nodename=host.name,
                    release=kernel.release,
                    sysname="Linux",
                    version="#1 SMP PREEMPT_DYNAMIC",
                ),
                1.0,
            )
        ],
    )
    families["node_textfile_scrape_error"] = (
        "gauge",
        "1 if there was an error opening or reading a file, 0 otherwise",
        [("", 0.0)],
    )
    for name in sorted(families):
        typ, help_, rows = families[name]
        _family(lines, name, typ, help_, rows)
    return "\n".join(lines) + "\n"


def _namespace(lun: Lun | None) -> Lun | None:
    """The LUN when it is an NVMe namespace (its hosts see it through NVMe-oF)."""
    return lun if lun is not None and getattr(lun, "protocol", "fcp").startswith("nvme") else None


def _sd_index(name: str) -> int:
    """sda -> 0, sdz -> 25, sdaa -> 26: the order of the kernel's SCSI disk names (minor = 16 x it)."""
    i = 0
    for ch in name[2:]:
        i = i * 26 + (ord(ch) - ord("a") + 1)
    return i - 1


def _access_state(d: HostDisk, k: int) -> str:
    n = len(d.path_devices) if d.optimized_paths is None else d.optimized_paths
    return "active/optimized" if k < n else "active/non-optimized"
