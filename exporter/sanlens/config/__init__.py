"""The exporter's config: the models (``models``), the YAML loader (``load``), the web config (``web``).

Flags and environment variables are one small layer of the command line (``sanlens.cli``:
argparse, each flag's default read from its ``SANLENS_*`` variable); the config file is the
only other source of settings, so pydantic-settings would add a dependency for nothing.
"""

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

__all__ = [
    "DURATION_PATTERN", "PATTERN_HELP", "AuthConfig", "Config", "DiagnoseConfig", "Duration", "HostDiskMapping",
    "HostTarget", "OntapTarget", "TLSConfig", "counter_tables", "format_seconds", "host_problem",
    "listen_problem", "parse_duration", "url_problem",
]  # fmt: skip
