"""Host-side advice in the host's own terms: Windows MPIO and mpclaim, or Linux dm-multipath and sysfs.

The diagnoses judge a Linux disk exactly as a Windows one; only what the operator is
told to look at and change differs, so those phrases live here, chosen by the disk's
``platform``.
"""

from __future__ import annotations

from sanlens.model import HostDiskStats

# busy time as counted above the bounded figure by more than this is worth saying (rounding aside)
BOUNDED_BY = 0.005


def counted_busy(d: HostDiskStats) -> float | None:
    """Linux busy time as the kernel counted it, where the requests in flight bounded it lower; else None.

    Kernels from 5.0 until "block: support to account io_ticks precisely" (6.10, 6.1.93) charge a whole
    jiffy at each I/O start, so short I/Os at low depth read busy (hosts/busy_time.py)."""
    busy, idle = d.reported_busy_ratio, d.idle_ratio
    if busy is None or idle is None or busy - (1.0 - idle) <= BOUNDED_BY:
        return None
    return busy


def busy_note(d: HostDiskStats) -> str:
    """The sentence that says busy time was bounded, or ''."""
    busy = counted_busy(d)
    if busy is None or d.idle_ratio is None:
        return ""
    kernel = f"kernel {d.kernel}: " if d.kernel else ""
    return (
        f" Busy time as counted {100.0 * busy:.0f} %, bounded by the requests in flight to "
        f"{100.0 * (1.0 - d.idle_ratio):.0f} % ({kernel}kernels from 5.0 until the 2024 io_ticks fix "
        "count a jiffy per I/O start)."
    )


def _failed_paths(d: HostDiskStats) -> str:
    bad = [f"{p.path} ({p.state})" for p in d.path_stats if not p.active]
    return ", ".join(bad)


def path_check(d: HostDiskStats) -> str:
    """Where to look for a lost path."""
    if d.platform == "linux":
        bad = _failed_paths(d)
        where = f" (not running: {bad})" if bad else ""
        return (
            f"check `multipath -ll {d.disk}` (a lost path shows `failed faulty`), each path device's "
            f"/sys/block/<sdX>/device/state{where}, the HBA ports (/sys/class/fc_host/host*/port_state), "
            "cables, switch ports and zoning"
        )
    return "check `mpclaim -s -d`, the HBA ports, cables, switch ports and zoning"


def queue_depth_fix(d: HostDiskStats) -> str:
    """How to give the LUN a deeper host queue."""
    if d.platform == "linux":
        return (
            "raise the per-LUN queue depth: /sys/block/<sdX>/device/queue_depth on each path now, and for "
            "good the HBA driver's option (lpfc_lun_queue_depth for Emulex lpfc, ql2xmaxqdepth for QLogic "
            "qla2xxx, in /etc/modprobe.d), with the multipath device's queue/nr_requests at least queue "
            "depth x paths"
        )
    return "raise the HBA queue depth"


def fabric_checks(d: HostDiskStats) -> str:
    """What to check between the host and the array's front end."""
    if d.platform == "linux":
        return (
            "check fan-in (7:1 to 12:1 host-to-target ports), zoning, that `multipath -ll` shows every "
            "path active, and the HBA queue depth (lpfc_lun_queue_depth, ql2xmaxqdepth)"
        )
    return "check fan-in (7:1 to 12:1 host-to-target ports), zoning and the HBA queue depth"


def spread_how(d: HostDiskStats) -> str:
    """How a host spreads one workload over several LUNs."""
    if d.platform == "linux":
        return " (for instance an LVM volume striped over them: lvcreate -i <LUNs>)"
    return ""
