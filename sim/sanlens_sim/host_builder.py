"""The hosts of a simulated estate and their disks on its LUNs, for :class:`~sanlens_sim.builder.Builder`.

A Windows host numbers its disks (PhysicalDisk ``1``, drive ``D:``), a Linux host puts a
dm-multipath map over SCSI path devices or an NVMe namespace under native multipath; every
such disk carries its LUN's ops and I/O sizes with the host's own latency, idle and queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sanlens_sim.world import Host, HostDisk, Lun, lun_serial

# A kernel that accounts busy time precisely (RHEL 10's 6.12), on a 64-bit machine.
DEFAULT_KERNEL = "6.12.0-55.9.1.el10_0.x86_64"
DEFAULT_MACHINE = "x86_64"


@dataclass
class LinuxHost(Host):
    """A Linux host: the kernel whose diskstats semantics its node_exporter page follows.

    ``discard_storm``: disk (``mpatha``) -> (discards per second, seconds each), an fstrim on a
    thin LUN, counted on the map's (or namespace's) own device. ``writes_wrap_after_s``: each device's write count (and written sectors) passes 2^32
    that many seconds after the scenario starts, as on a long-running host; an ``unsigned long``
    of a 32-bit machine wraps there.
    """

    kernel: str = DEFAULT_KERNEL
    machine: str = DEFAULT_MACHINE
    hz: int = 250  # CONFIG_HZ: Ubuntu's and Debian's (RHEL's is 1000)
    discard_storm: dict[str, tuple[float, float]] = field(default_factory=dict)
    writes_wrap_after_s: float | None = None


def _sd_name(i: int) -> str:
    """The kernel's name of the i-th SCSI disk (0 -> sda, 25 -> sdz, 26 -> sdaa)."""
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(ord("a") + r) + letters
    return "sd" + letters


class HostBuilder:
    """The host half of the builder: the hosts added so far and the disks each sees."""

    hosts: list[Host]

    def host(self, name: str) -> Host:
        h = Host(name)
        # disk 0: the local boot disk, not a LUN
        h.disks.append(
            HostDisk(
                "0",
                "C:",
                lun_serial("local", name),
                "Local NVMe SSD",
                20.0,
                30.0,
                0.0004,
                0.0006,
                0.97,
                0.0,
                paths=1,
            )
        )
        self.hosts.append(h)
        return h

    def host_disk(
        self,
        host: Host,
        lun: Lun,
        lat_ms: tuple[float, float],
        idle: float,
        queue: float,
        paths: int = 2,
        ops_scale: float = 1.0,
        optimized_paths: int | None = None,
    ) -> HostDisk:
        """A host disk backed by ``lun``: same ops (x ``ops_scale``), host-side latency."""
        n = len(host.disks)
        return _lun_disk(
            host, str(n), f"{chr(ord('D') + n)}:", lun, lat_ms, idle, queue,
            paths=paths, optimized_paths=optimized_paths, ops_scale=ops_scale,
        )  # fmt: skip

    def linux_host(
        self,
        name: str,
        dmmultipath: bool = True,
        kernel: str = DEFAULT_KERNEL,
        machine: str = DEFAULT_MACHINE,
        **options: Any,
    ) -> LinuxHost:
        """A Linux host with node_exporter; ``sda`` is its local boot disk, not a LUN. ``options``:
        :class:`LinuxHost`'s others (``discard_storm``, ``writes_wrap_after_s``, ``hz``)."""
        h = LinuxHost(name, os="linux", dmmultipath=dmmultipath, kernel=kernel, machine=machine, **options)
        h.disks.append(
            HostDisk(
                "sda",
                "",
                lun_serial("local", name),
                "PERC H730P",
                15.0,
                40.0,
                0.0003,
                0.0005,
                0.97,
                0.0,
                paths=1,
            )
        )
        self.hosts.append(h)
        return h

    def linux_disk(
        self,
        host: Host,
        lun: Lun,
        lat_ms: tuple[float, float],
        idle: float,
        queue: float,
        paths: int = 2,
        failed: int = 0,
        optimized_paths: int | None = None,
    ) -> HostDisk:
        """A dm-multipath map on ``lun`` (named mpatha, mpathb, ...) over ``paths`` SCSI path devices,
        the last ``failed`` of them lost; the same ops as the LUN, host-side latency."""
        maps = [d for d in host.disks if d.dm]
        taken = sum(len(d.path_devices) for d in host.disks) + 1  # sda is the boot disk
        devices = tuple(_sd_name(taken + i) for i in range(paths))
        return _lun_disk(
            host, f"mpath{chr(ord('a') + len(maps))}", "", lun, lat_ms, idle, queue,
            paths=paths, optimized_paths=optimized_paths,
            dm=f"dm-{len(maps) + 2}",  # dm-0 and dm-1: the boot disk's LVM root and swap
            path_devices=devices,
            lost=devices[len(devices) - failed :] if failed else (),
            failed=devices[len(devices) - failed :] if failed else (),
        )  # fmt: skip

    def linux_nvme_disk(
        self,
        host: Host,
        namespace: Lun,
        lat_ms: tuple[float, float],
        idle: float,
        queue: float,
        paths: int = 2,
        failed: int = 0,
    ) -> HostDisk:
        """An NVMe namespace under native NVMe multipath: the block device ``nvme<S>n1`` (a subsystem
        of its own here) over ``paths`` controllers, each a hidden path device ``nvme<S>c<C>n1``
        (controller numbers run across the host), the last ``failed`` of them lost."""
        nvme = [d for d in host.disks if d.number.startswith("nvme")]
        first = sum(len(d.path_devices) for d in nvme)
        devices = tuple(f"nvme{len(nvme)}c{first + i}n1" for i in range(paths))
        lost = devices[len(devices) - failed :] if failed else ()
        return _lun_disk(
            host, f"nvme{len(nvme)}n1", "", namespace, lat_ms, idle, queue,
            paths=paths, optimized_paths=None, path_devices=devices, lost=lost, failed=lost,
        )  # fmt: skip


def _lun_disk(
    host: Host,
    name: str,
    drive: str,
    lun: Lun,
    lat_ms: tuple[float, float],
    idle: float,
    queue: float,
    *,
    paths: int,
    optimized_paths: int | None,
    ops_scale: float = 1.0,
    **extra: Any,
) -> HostDisk:
    """A host disk on ``lun``, whichever OS names it: the LUN's ops and I/O sizes, host-side latency."""
    d = HostDisk(
        name,
        drive,
        lun.serial,
        "NETAPP LUN C-Mode",
        lun.io.read_ops * ops_scale,
        lun.io.write_ops * ops_scale,
        lat_ms[0] / 1000.0,
        lat_ms[1] / 1000.0,
        idle,
        queue,
        paths=paths,
        optimized_paths=optimized_paths,
        read_io_bytes=lun.io.read_bytes / lun.io.read_ops if lun.io.read_ops else 8192.0,
        write_io_bytes=lun.io.write_bytes / lun.io.write_ops if lun.io.write_ops else 8192.0,
        lun_key=lun.key,
        **extra,
    )
    host.disks.append(d)
    return d
