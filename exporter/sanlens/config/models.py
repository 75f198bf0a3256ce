"""The config model: every key, default, bound and help text, declared once.

The exporter validates a config file against these pydantic models (``sanlens.config.load``
reads the YAML and locates each problem by line and key path); the chart's values schema
(``helm/build.py``) and the key reference of docs/configuration.md (``docs/build.py``) are
generated from them. Adding a setting is adding a field here: its type, default, bounds and
``description``. What the models accept, ``sanlens serve`` runs: the constraints cover what
would fail at start-up or in every poll, not only the types. Objects built in code are held
to the same models.
"""

from __future__ import annotations

import functools
import os
import typing
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

from sanlens.config.files import DecodeError, TooLarge, decode, read_capped, shown
from sanlens.config.plain import DIAGNOSE_DEFAULTS, HOST_DEFAULTS
from sanlens.config.rules import ExactlyOne, Loc, Needs, OnlyOne, Ruled, Together, UniqueNames, rule_errors
from sanlens.config.types import (
    LISTEN_PATTERN,
    NAME_PATTERN,
    URL_PATTERN,
    WINRM_URL_PATTERN,
    Duration,
    Explain,
    NeededBy,
    listen_problem,
    ontap_url_problem,
    url_problem,
    winrm_url_problem,
)
from sanlens.errors import ConfigError
from sanlens.model import DataClass

MAX_CONFIG_BYTES = 32 * 1024 * 1024  # refused before parsing (10,000 hosts take about 0.5 MB)
MAX_SECRET_BYTES = 64 * 1024  # a password file's cap: a password is a line, not a device
MAX_DEPTH = 32  # deepest nesting of lists and mappings; the model needs 6
MAX_VALUES = 2_000_000  # YAML values once aliases expand: a few lines of aliases cannot take all memory
MAX_PROBLEMS = 100  # problems kept for one report; the rest are counted
# A poll loop needs a positive interval (0 spins), a socket a positive timeout (0 is refused
# by urllib3), and every wait must fit the platform's timeout (a huge one overflows).
MAX_POLL_INTERVAL = 86400.0
MAX_TIMEOUT = 3600.0
MAX_SCHEMA_REFRESH = 30 * 86400.0
MIB = 1024 * 1024
SECRET_KEYS = frozenset({"password"})  # keys whose values are never shown, not even their type


def counter_tables() -> list[str]:
    """The REST counter tables the catalogue describes (all polled by default)."""
    from sanlens.ontap.catalogue import catalogue

    return [name for name, t in catalogue().items() if t.rest]


def _known_tables(tables: list[str]) -> list[str]:
    if unknown := [t for t in tables if t not in (known := counter_tables())]:
        message = f"unknown table(s) {unknown}; known: {', '.join(known)}"
        raise PydanticCustomError("unknown_table", message.replace("{", "{{").replace("}", "}}"))
    return tables


def _tables_schema(schema: dict[str, Any]) -> None:
    schema.update(items={"type": "string", "enum": counter_tables()}, default=counter_tables())


_POSITIVE_QUEUE = Explain("must be 1 or more (Q_eff = queue_depth x paths)")
Interval = Annotated[Duration, Field(ge=1, le=MAX_POLL_INTERVAL)]
Timeout = Annotated[Duration, Field(gt=0, le=MAX_TIMEOUT)]
Text = str | None
_NAME = Field(pattern=NAME_PATTERN)
Url = Annotated[str, Field(pattern=URL_PATTERN), Explain(ontap_url_problem)]


class _Model(BaseModel):
    """Strict types (a quoted ``'32'`` is not 32, a quoted ``'true'`` is not true); unknown keys refused.

    Inputs never appear in a ValidationError's text: a value may be a password.
    """

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        hide_input_in_errors=True,
        regex_engine="rust-regex",
        defer_build=True,
    )


class TLSConfig(_Model):
    """How the server's certificate is verified."""

    model_config = ConfigDict(frozen=True)  # a value: the targets that set none share one

    ca_file: Text = Field(
        default=None,
        description="CA bundle (a PEM file or a directory) that verifies the server; default: "
        "REQUESTS_CA_BUNDLE, else certifi's.",
    )
    insecure_skip_verify: bool = Field(
        default=False, description="Do not verify the certificate (logs a warning)."
    )


class AuthConfig(Ruled, _Model):
    """Basic auth (a password from a file or the environment) or a client certificate.

    An inline ``password`` is accepted with a warning, for labs only. Any characters are
    allowed: Basic auth sends Latin-1 when the pair fits it, else UTF-8 (RFC 7617).
    """

    model_config = ConfigDict(frozen=True)  # a value: the targets that set none share one
    RULES = (
        OnlyOne(("password_file", "password_env", "password")),
        Together(("cert_file", "key_file")),
        Needs("username", ("password_file", "password_env", "password"), "a password needs a username"),
    )

    username: Text = Field(default=None, description="User for Basic auth (DOMAIN\\user for WinRM).")
    password_file: Text = Field(
        default=None, description="File holding the password; read again when it changes (a rotated Secret)."
    )
    password_env: Text = Field(
        default=None, description="Environment variable holding the password; read at start."
    )
    password: Text = Field(
        default=None, repr=False, description="The password inline: for labs only, logs a warning."
    )
    cert_file: Text = Field(
        default=None, description="Client certificate (PEM), with key_file, instead of a password."
    )
    key_file: Text = Field(default=None, description="The private key of cert_file (PEM).")

    def resolve_password(self) -> str | None:
        """The password now; ConfigError names the file or variable, never its content."""
        if self.password_file:
            where = shown(self.password_file)
            try:
                text = decode(read_capped(self.password_file, MAX_SECRET_BYTES))
            except OSError as e:
                raise ConfigError(f"cannot read password_file {where}: {e.strerror}") from None
            except (DecodeError, TooLarge) as e:
                raise ConfigError(f"password_file {where}: {e}") from None
            return text.rstrip("\r\n")
        if self.password_env:
            value = os.environ.get(self.password_env)
            if value is None:
                raise ConfigError(f"environment variable {self.password_env} is not set")
            return value
        return self.password


@functools.cache
def no_auth() -> AuthConfig:
    """The auth of every target that sets none: frozen, so one object serves them all (made on first
    use, so a command that reads no config never builds the models' validators)."""
    return AuthConfig()


@functools.cache
def default_tls() -> TLSConfig:
    """The tls of every target that sets none, one shared object like ``no_auth``."""
    return TLSConfig()


class OntapTarget(_Model):
    """One ONTAP cluster, polled over its REST API."""

    name: Annotated[str, _NAME, Explain("must not be empty: it is the cluster label")] = Field(
        description="The cluster's name: its `cluster` label, unique across targets."
    )
    url: Url = Field(
        description="Cluster management URL: https://host[:port][/path] (http:// for the simulator)."
    )
    auth: AuthConfig = Field(default_factory=no_auth, description="Credentials of a read-only account.")
    tls: TLSConfig = Field(
        default_factory=default_tls, description="Verification of the cluster's certificate."
    )
    poll_interval: Interval = Field(default=Duration(60), description="How often the counters are read.")
    connect_timeout: Timeout = Field(default=Duration(5), description="Connect timeout of each request.")
    read_timeout: Timeout = Field(
        default=Duration(30), description="Wait for each response; restarts with every byte received."
    )
    tables: Annotated[list[str], AfterValidator(_known_tables)] = Field(
        default_factory=counter_tables,
        json_schema_extra=_tables_schema,
        description="Counter tables to poll (default: every table of the catalogue, docs/ontap.md).",
    )
    source: Literal["rest", "prometheus"] = Field(
        default="rest",
        description="`rest`: poll the cluster's REST API; `prometheus`: read the series NetApp Harvest "
        "already exports for it from a Prometheus-compatible query API at `url` (no second poller).",
    )
    harvest_cluster: Text = Field(
        default=None, description="source prometheus: the `cluster` label Harvest gives it (default: name)."
    )
    selector: Text = Field(
        default=None,
        description='source prometheus: extra label matchers for every query, e.g. `datacenter="dc1"`.',
    )
    harvest_data_interval: Interval = Field(
        default=Duration(60),
        description="source prometheus: Harvest's performance schedule (`data`); fcp_queue_full counts one of its polls.",
    )
    collection: Literal["auto", "tables", "statistics"] = Field(
        default="auto",
        description="Where performance comes from: `tables` (the REST counter tables), `statistics` (the "
        "objects' `statistics` fields, as on ASA r2), or `auto` (tables where the cluster serves them).",
    )
    skip_incomplete_aggregation: bool = Field(
        default=True, description="Apply each table's partial-aggregation policy (false: keep every row)."
    )
    qos_interval: Annotated[Duration | None, Field(ge=0, le=MAX_POLL_INTERVAL)] = Field(default=None, description=(
        "How often ONTAP's QoS tables (`schedule: qos`), workloads and policies are read, on a thread of their "
        "own (default: 3 x poll_interval; 0 or poll_interval: every poll); the latest are kept between."))  # fmt: skip
    min_ops_for_latency: float = Field(
        default=1.0, ge=0, description="Fewer operations than this in an interval: no latency for it."
    )
    max_records: int = Field(default=1000, ge=1, le=10000, description="Page size of every paged request.")
    max_response_bytes: int = Field(
        default=256 * MIB,
        ge=1 * MIB,
        le=4096 * MIB,
        description="Largest answer read, in bytes (after decompression): a larger one fails the poll "
        "(reason `too_large`) instead of taking the exporter's memory. A 1000-row page of 10,000 LUNs "
        "is a few MB.",
    )
    schema_refresh: Annotated[Duration, Field(ge=0, le=MAX_SCHEMA_REFRESH)] = Field(
        default=Duration(86400), description="How often the counter schemas are read again."
    )


class HostDiskMapping(Ruled, _Model):
    """One host disk: its ONTAP LUN, when not found by serial, and its own queue settings."""

    RULES = (ExactlyOne(("disk", "drive")),)

    disk: Text = Field(
        default=None,
        description='Windows: PhysicalDisk number, e.g. "1" (or drive); Linux: the multipath map name, WWID or dm-N.',
    )
    drive: Text = Field(
        default=None,
        description='Drive letter, e.g. "E:", or a mount point path (a PerfMon LogicalDisk volume); or disk.',
    )
    cluster: Text = Field(
        default=None,
        description="The LUN's cluster; without lun, which cluster's copy the disk's LUN serial joins "
        "when two present it (SnapMirror active sync, SVM DR).",
    )
    svm: Text = Field(default=None, description="The LUN's SVM.")
    lun: Text = Field(default=None, description="LUN path, e.g. /vol/sql_data/lun0.")
    data_class: DataClass | None = Field(default=None, description="The host's data_class, for this disk.")
    queue_depth: Annotated[int | None, Field(ge=1), _POSITIVE_QUEUE] = Field(
        default=None, description="The host's queue_depth, for this disk."
    )
    paths: Annotated[int | None, Field(ge=1), _POSITIVE_QUEUE] = Field(
        default=None, description="The host's paths, for this disk."
    )


HostSource = Literal["windows_exporter", "winrm", "perfmon", "node_exporter", "prometheus"]


class HostTarget(_Model):
    """One host: Windows by windows_exporter, WinRM or PerfMon logs; Linux by node_exporter.

    The keys every source shares; each source is its own model (below). ``HostTarget(...)``
    in code builds the model of the ``source`` given, as the config file does.
    """

    name: Annotated[str, _NAME, Explain("must not be empty: it is the host label")] = Field(
        description="The host's name: its `host` label, unique across targets."
    )
    source: HostSource = Field(
        default="windows_exporter",
        description="Where the disk counters come from: windows_exporter, winrm (the sanlens[winrm] extra), "
        "perfmon (log files), node_exporter (a Linux host, disks joined by multipath WWID) or prometheus (the "
        "`exporter`'s series a Prometheus-compatible query API at `url` already holds: no second scrape).",
    )
    url: Text = Field(default=None, description="perfmon: not used.")
    auth: AuthConfig = Field(default_factory=no_auth, description="Credentials (Basic auth or WinRM).")
    tls: TLSConfig = Field(default_factory=default_tls, description="Verification of the host's certificate.")
    poll_interval: Interval = Field(default=Duration(15), description="How often the host is polled.")
    timeout: Timeout = Field(default=Duration(10), description="Timeout of each request.")
    max_response_bytes: int = Field(
        default=64 * MIB,
        ge=64 * 1024,
        le=1024 * MIB,
        description="Largest answer read, in bytes (after decompression): a larger one fails the poll "
        "(reason `too_large`) instead of taking the exporter's memory.",
    )
    max_series: int = Field(
        default=200_000,
        ge=100,
        le=10_000_000,
        description="Most samples on one exporter page (windows_exporter, node_exporter); a page with "
        "more fails the poll (reason `too_large`) before it is parsed.",
    )
    queue_depth: Annotated[int, Field(ge=1), _POSITIVE_QUEUE] = Field(
        default=HOST_DEFAULTS.queue_depth,
        description="Per-LUN HBA queue depth; Q_eff = queue_depth x paths. On Linux a depth the host reports "
        "through the textfile collector wins, and a disk entry wins over both.",
    )
    paths: Annotated[int, Field(ge=1), _POSITIVE_QUEUE] = Field(
        default=HOST_DEFAULTS.paths, description="Active paths per LUN."
    )
    data_class: DataClass = Field(
        default=HOST_DEFAULTS.data_class, description="Which latency thresholds apply to the host's disks."
    )
    disks: list[HostDiskMapping] = Field(
        default_factory=list,
        description="Static mapping and per-disk overrides; by default disks map by LUN serial.",
    )
    if TYPE_CHECKING:  # the keys of one source, for code that takes any host
        exporter: Literal["windows_exporter", "node_exporter"] = Field(default=...)
        selector: str = Field(default=...)
        files: list[str] = Field(default=...)

    def __new__(cls, *args: Any, **data: Any) -> Self:
        source = data.get("source", "windows_exporter")
        return cast(
            Self, super().__new__(HOST_MODELS.get(source, cls) if cls is HostTarget and data else cls)
        )


_PROMETHEUS_URL = "source prometheus needs the url of a Prometheus query API"
_FILES = "source perfmon needs files"
_EXPORTER = "source prometheus needs exporter: windows_exporter or node_exporter"


def _url(what: str, source: str, needed: str = "", winrm: bool = False) -> Any:
    """A host's required url; its absence is told at ``source``."""
    pattern, explain = (WINRM_URL_PATTERN, winrm_url_problem) if winrm else (URL_PATTERN, url_problem)
    needed = needed or f"source {source} needs a url"
    return Annotated[str, Field(pattern=pattern, description=what), Explain(explain), NeededBy(needed)]


class WindowsExporterHost(HostTarget):
    """`source: windows_exporter` (the default): a Windows host's windows_exporter."""

    source: Literal["windows_exporter"] = "windows_exporter"
    url: _url("The http(s) /metrics URL.", "windows_exporter")  # type: ignore[valid-type]


_LINUX_DRIVE = (
    "a Linux host has no drive letters: name the disk by its multipath map name, WWID or dm-N "
    "in disk (drive is a Windows volume)"
)


def _no_drives(host: HostTarget) -> None:
    """A Linux host's disks are named by map, WWID or dm-N: a ``drive`` there would never match."""
    drives: list[tuple[Loc, str]] = [
        (("disks", i, "drive"), _LINUX_DRIVE) for i, d in enumerate(host.disks) if d.drive
    ]
    if drives:
        raise rule_errors(type(host).__name__, drives)


class NodeExporterHost(HostTarget):
    """`source: node_exporter`: a Linux host's node_exporter, its disks joined by multipath WWID."""

    source: Literal["node_exporter"]
    url: _url("The http(s) /metrics URL.", "node_exporter")  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _linux_disks(self) -> Self:
        _no_drives(self)
        return self


class WinrmHost(HostTarget):
    """`source: winrm`: a Windows host's counters over WinRM (the sanlens[winrm] extra)."""

    source: Literal["winrm"]
    url: _url("The endpoint: a URL or a bare host[:port].", "winrm", winrm=True)  # type: ignore[valid-type]


class PerfmonHost(HostTarget):
    """`source: perfmon`: PerfMon log files of a Windows host."""

    source: Literal["perfmon"]
    files: Annotated[list[str], Field(min_length=1), Explain(_FILES), NeededBy(_FILES)] = Field(
        description="perfmon source: CSV/TSV logs"
    )


class PrometheusHost(HostTarget):
    """`source: prometheus`: the host's series a Prometheus-compatible query API already holds."""

    source: Literal["prometheus"]
    exporter: Annotated[Literal["windows_exporter", "node_exporter"], NeededBy(_EXPORTER)] = Field(
        description="Which exporter's series the host has."
    )
    selector: Annotated[
        str,
        Field(
            min_length=1, description='Label matchers naming this host\'s series, e.g. `instance="db1:9182"`.'
        ),
        Explain("must not be empty: it names the host's series"),
        NeededBy('source prometheus needs a selector naming this host\'s series, e.g. instance="db1:9182"'),
    ]
    url: _url("The query API's base URL.", "", _PROMETHEUS_URL)  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _linux_disks(self) -> Self:
        if self.exporter == "node_exporter":
            _no_drives(self)
        return self


HOST_MODELS: dict[str, type[HostTarget]] = {
    typing.get_args(m.model_fields["source"].annotation)[0]: m
    for m in (WindowsExporterHost, WinrmHost, PerfmonHost, NodeExporterHost, PrometheusHost)
}


def _source_of(value: Any) -> str:
    """The host model a mapping is: its ``source``, the default when absent; a non-mapping is told as one."""
    if isinstance(value, dict):
        source = value.get("source", "windows_exporter")
        return source if isinstance(source, str) else ""
    return str(getattr(value, "source", "windows_exporter"))


_TAGGED: Any = typing.Union[tuple(Annotated[m, Tag(s)] for s, m in HOST_MODELS.items())]  # noqa: UP007
AnyHost = Annotated[
    _TAGGED,
    Discriminator(
        _source_of,
        custom_error_type="host_source",
        custom_error_message="must be one of " + ", ".join(repr(s) for s in HOST_MODELS),
    ),
]
"""A host entry: the model of its ``source``."""


class DiagnoseConfig(_Model):
    """Engine timing and per-diagnosis threshold overrides (their ranges are the registry's)."""

    sustain_scale: float = Field(
        default=DIAGNOSE_DEFAULTS.sustain_scale,
        ge=0,
        le=100,
        description="Multiplies every sustain and exit window (the demo uses 0.05).",
    )
    history: int = Field(
        default=DIAGNOSE_DEFAULTS.history, ge=10, le=100000, description="Cooked windows kept per subject."
    )
    # checked by the registry's model of them (sanlens.diagnose.registry.thresholds_model) in check-config
    thresholds: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Threshold and window overrides per diagnosis id (sanlens check-config also checks "
        "their order): docs/diagnoses.md#thresholds.",
    )
    backend_iops_capacity: Annotated[float | None, Explain("must be a positive number of IOPS")] = Field(
        default=DIAGNOSE_DEFAULTS.backend_iops_capacity,
        gt=0,
        description="IOPS the backend can serve, for the host-only san_oversubscription (without it a "
        "host-only finding stays a warning).",
    )
    waterfall_top_n: int = Field(
        default=DIAGNOSE_DEFAULTS.waterfall_top_n,
        ge=0,
        le=1000,
        description="Slowest QoS workloads whose latency components are exposed while ok (a non-ok "
        "subject's always are): the dashboard's top N.",
    )


class Config(Ruled, _Model):
    """The exporter config; sanlens check-config validates it fully."""

    RULES: ClassVar = (UniqueNames(("ontap", "hosts"), "cluster and host labels"),)

    listen: Annotated[str, Field(pattern=LISTEN_PATTERN), Explain(listen_problem)] = Field(
        default=":9842",
        description="Address of /metrics: host:port or :port (every interface); port 0 picks a free one.",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(default="info", description="Log level.")
    ontap: list[OntapTarget] = Field(default_factory=list, description="One entry per cluster.")
    if TYPE_CHECKING:  # what code passes: any host model
        hosts: list[HostTarget] = Field(default_factory=list)
    else:
        hosts: list[AnyHost] = Field(default_factory=list, description="One entry per host.")
    diagnose: DiagnoseConfig = Field(default_factory=DiagnoseConfig, description="The diagnosis engine.")
