"""The host sources by the name ``source:`` gives them in the config.

Only the runtime picks a source by name, so only it imports every source; a new source is
its module (a ``HostSource`` whose ``kind`` is its name and whose ``read`` gives the disks with
the keys they join by), its class here and its model in the config (``sanlens.config.models``).
"""

from __future__ import annotations

from sanlens.config import HostTarget
from sanlens.errors import SanlensError
from sanlens.hosts.node_exporter import NodeExporterSource
from sanlens.hosts.perfmon_source import PerfmonSource
from sanlens.hosts.prometheus_source import PrometheusHostSource
from sanlens.hosts.sources import HostSource
from sanlens.hosts.windows_exporter import WindowsExporterSource
from sanlens.hosts.winrm import WinRMSource
from sanlens.source import Source

SOURCES: dict[str, type[HostSource]] = {
    cls.kind: cls
    for cls in (
        WindowsExporterSource,
        WinRMSource,  # its client is the extra sanlens[winrm], imported when one is made
        PerfmonSource,
        NodeExporterSource,
        PrometheusHostSource,
    )
}
"""Each source under its ``kind``, the name ``source:`` gives it (the config's host models have
the same names: a test holds them equal)."""


def make_host_source(target: HostTarget) -> Source:
    """The source for ``target.source``: windows_exporter, winrm (extra sanlens[winrm]), perfmon,
    node_exporter (Linux) or prometheus."""
    cls = SOURCES.get(target.source)
    if cls is None:
        raise SanlensError(f"host {target.name}: unknown source {target.source!r}")
    return cls(target)
