"""The exporter's config: the models (``models``), the YAML loader (``load``), the web config (``web``).

Flags and environment variables are one small layer of the command line (``sanlens.cli``:
argparse, each flag's default read from its ``SANLENS_*`` variable); the config file is the
only other source of settings, so pydantic-settings would add a dependency for nothing.

The models are imported on first use of one of their names (``sanlens.config.Config``), so a
command that needs none of them, such as ``analyze`` without ``--config``, never imports pydantic.
"""

from typing import TYPE_CHECKING, Any

from sanlens.config.plain import DiagnoseSection, DiagnoseSettings, HostDisks, UnnamedHost
from sanlens.config.types import (
    DURATION_PATTERN,
    PATTERN_HELP,
    Duration,
    format_seconds,
    host_problem,
    listen_problem,
    parse_duration,
    url_problem,
)

if TYPE_CHECKING:
    from sanlens.config.models import (
        AuthConfig,
        Config,
        DiagnoseConfig,
        HostDiskMapping,
        HostTarget,
        OntapTarget,
        TLSConfig,
        counter_tables,
    )

__all__ = [
    "DURATION_PATTERN", "PATTERN_HELP", "AuthConfig", "Config", "DiagnoseConfig", "DiagnoseSection",
    "DiagnoseSettings", "Duration", "HostDiskMapping", "HostDisks", "HostTarget", "OntapTarget", "TLSConfig",
    "UnnamedHost", "counter_tables", "format_seconds", "host_problem", "listen_problem", "parse_duration",
    "url_problem",
]  # fmt: skip

_MODELS = frozenset(
    {"AuthConfig", "Config", "DiagnoseConfig", "HostDiskMapping", "HostTarget", "OntapTarget", "TLSConfig",
     "counter_tables"}
)  # fmt: skip


def __getattr__(name: str) -> Any:
    """The models' names, imported from ``sanlens.config.models`` when first asked for."""
    if name in _MODELS:
        from sanlens.config import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
