"""The config sections a run without a config file needs, as plain values: no pydantic to import.

``sanlens analyze`` of one log with no ``--config`` judges with the default diagnose section
and maps every host's disks by their defaults. Importing pydantic and building its models cost
about a fifth of a second, a fifth of the time a 5 MB log may take, so those runs use these
frozen dataclasses instead. The defaults are declared here once; the config models
(``sanlens.config.models``) take their defaults from here, and the code that reads a section
takes either kind through the protocols below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sanlens.config.models import HostDiskMapping
    from sanlens.model import DataClass


class DiagnoseSection(Protocol):
    """What the engine reads of ``diagnose``: a ``DiagnoseConfig`` or a ``DiagnoseSettings``."""

    @property
    def sustain_scale(self) -> float: ...
    @property
    def history(self) -> int: ...
    @property
    def thresholds(self) -> Mapping[str, Mapping[str, float]]: ...
    @property
    def backend_iops_capacity(self) -> float | None: ...
    @property
    def waterfall_top_n(self) -> int: ...


@dataclass(frozen=True)
class DiagnoseSettings:
    """The ``diagnose`` section as plain values; ``DiagnoseSettings()`` is the default section."""

    sustain_scale: float = 1.0
    history: int = 240
    thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    backend_iops_capacity: float | None = None
    waterfall_top_n: int = 10


DIAGNOSE_DEFAULTS = DiagnoseSettings()


class HostDisks(Protocol):
    """What mapping a host's disks reads of its entry: a ``HostTarget`` or an ``UnnamedHost``."""

    @property
    def name(self) -> str: ...
    @property
    def queue_depth(self) -> int: ...
    @property
    def paths(self) -> int: ...
    @property
    def data_class(self) -> DataClass: ...
    @property
    def disks(self) -> Sequence[HostDiskMapping]: ...


@dataclass(frozen=True)
class UnnamedHost:
    """A host the config does not name (or no config at all): its disks map with the defaults."""

    name: str
    queue_depth: int = 32
    paths: int = 1
    data_class: DataClass = "data"
    disks: Sequence[HostDiskMapping] = ()


HOST_DEFAULTS = UnnamedHost("")
