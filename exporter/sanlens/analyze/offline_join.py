"""Host disk -> ONTAP LUN mapping for offline runs, from the same config ``sanlens serve`` reads.

Live, host sources resolve each disk through ``hosts.mapping.resolve`` (a static
``hosts[].disks`` entry, else the LUN serial). Offline the same function runs on
the same config, so a joined diagnosis (host latency against the LUN's latency)
fires exactly as it would live. A static entry without a ``cluster`` belongs to
the cluster the ONTAP captures are analysed as.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sanlens.analyze.host_intervals import Mapper
from sanlens.config.plain import HostDisks, UnnamedHost
from sanlens.hosts.mapping import DiskMapping, resolve
from sanlens.join.directory import LunDirectory

if TYPE_CHECKING:
    from sanlens.config import Config


def analysis_cluster(config: Config | None, requested: str | None, named: set[str] | None = None) -> str:
    """The cluster name ONTAP captures are analysed as: the option, else the config's only cluster,
    else the one cluster the captures name themselves (a prompt line), else ``offline``."""
    if requested:
        return requested
    if config is not None and len(config.ontap) == 1:
        return config.ontap[0].name
    if named and len(named) == 1:
        return next(iter(named))
    return "offline"


def host_mapper(config: Config | None, cluster: str, directory: LunDirectory | None = None) -> Mapper:
    """A mapper for ``HostIntervals.snapshots``: (host, disk, drives) -> DiskMapping, cached per disk."""
    targets: dict[str, HostDisks] = {t.name.upper(): t for t in (config.hosts if config else [])}
    directory = directory or LunDirectory()
    cache: dict[tuple[str, str], DiskMapping] = {}

    def mapper(host: str, disk: str, drives: tuple[str, ...]) -> DiskMapping:
        key = (host.upper(), disk)
        m = cache.get(key)
        if m is None:
            target = targets.get(key[0])
            if target is None:
                # a host the config does not name: its disks map with the defaults
                target = targets[key[0]] = UnnamedHost(host)
            m = resolve(target, directory, disk, drives)
            if m.lun and not m.cluster:
                m = replace(m, cluster=cluster)
            cache[key] = m
        return m

    return mapper


def configured_hosts(config: Config | None) -> set[str]:
    return {t.name.upper() for t in (config.hosts if config else [])}
