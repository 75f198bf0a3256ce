"""The config model: every key, default, bound and help text, declared once.

The exporter validates a config file against these pydantic models
(``sanlens.config_load`` reads the YAML and locates each problem by line and key
path); the chart's values schema (``helm/build.py``) and the key reference of
docs/configuration.md (``docs/build.py``) are generated from them. Adding a setting
is adding a field here: its type, default, bounds and ``description``.

What the models accept, ``sanlens serve`` runs: the constraints cover what would fail
at start-up or in every poll (a zero interval, a URL without a host, an unbindable
listen address), not only the types. Objects built in code are held to the same
model. Rules across keys are the ``RULES`` of a model (``sanlens.config_rules``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from sanlens.config_files import DecodeError, TooLarge, decode, read_capped, shown
from sanlens.config_rules import (
    ExactlyOne,
    Matches,
    Needs,
    OnlyOne,
    Required,
    Rule,
    RuledModel,
    Together,
    UniqueNames,
    When,
)
from sanlens.errors import ConfigError

MAX_CONFIG_BYTES = 32 * 1024 * 1024
"""A config file larger than this is refused before parsing (100,000 hosts take about 5 MB)."""
MAX_SECRET_BYTES = 64 * 1024
"""A password file larger than this is refused (a password is a line, not a device)."""
MAX_DEPTH = 32
"""Deepest nesting of lists and mappings; the model needs 6. Deeper YAML would exhaust the parser's stack."""
MAX_VALUES = 2_000_000
"""Most YAML values after expanding aliases, so a few lines of nested aliases cannot take all memory."""
MAX_PROBLEMS = 100
"""Problems kept for one report; the rest are counted."""

# A poll loop needs a positive interval (0 spins), a socket a positive timeout (0 is refused
# by urllib3), and every wait must fit the platform's timeout (a huge one overflows).
MAX_POLL_INTERVAL = 86400.0
MAX_TIMEOUT = 3600.0
MAX_SCHEMA_REFRESH = 30 * 86400.0
MIB = 1024 * 1024

SECRET_KEYS = frozenset({"password"})
"""Keys whose values are never shown, not even their type."""


def counter_tables() -> list[str]:
    """The REST counter tables the catalogue describes (all polled by default)."""
    from sanlens.ontap.catalogue import catalogue

    return [name for name, t in catalogue().items() if t.rest]


# ------------------------------------------------------------------ durations
DURATION_PATTERN = r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$"
"""A duration as YAML may write it: 60, 60s, 5m, 1h or 500ms (also the chart's pattern)."""
_DURATION = re.compile(DURATION_PATTERN)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> Duration:
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 15s, 5m, 1h)")
    seconds = float(m.group(1)) * _UNITS[m.group(2)]
    if not math.isfinite(seconds):
        raise ValueError("duration too large")
    return Duration(seconds)


def format_seconds(seconds: float) -> str:
    """``86400`` -> ``24h``: a bound in a message, in the units a config would use."""
    for unit, size in (("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds * 1000:g}ms" if 0 < seconds < 1 else f"{seconds:g}s"


def _duration(value: Any) -> Duration:
    if isinstance(value, Duration):
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise PydanticCustomError("duration_type", "expected a duration such as 60s or 5m")
    try:
        return parse_duration(str(value))
    except (ValueError, OverflowError):
        raise PydanticCustomError(
            "duration_parsing", "expected a duration such as 500ms, 60s, 5m or 1h (a plain number is seconds)"
        ) from None


class Duration(float):
    """Seconds; YAML may say 60, 60s, 5m, 1h or 500ms."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(_duration)

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # a string is checked for its syntax only; the bounds of a field hold for plain seconds
        return {"type": ["string", "number"], "pattern": DURATION_PATTERN, "minimum": 0}


# ------------------------------------------------------------------ addresses
# Written for both Python's re and the chart's JSON Schema (Go RE2), and run by pydantic's
# Rust regex: ASCII classes only, no look-arounds, no inline flags. Python applies them with
# fullmatch: its $ would also match before a final newline, Go's and Rust's do not.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"(?:{_OCTET}\.){{3}}{_OCTET}"
# a DNS name whose last label is not all digits (so 256.1.1.1 is neither an address nor a name)
_HOSTNAME = r"(?:[A-Za-z0-9_-]+\.)*[A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*\.?"
_IPV6 = r"\[[0-9A-Fa-f:.]+\]"
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
_REST = r"(?:[/?#][^\x00-\x20\x7f]*)?"

URL_PATTERN = rf"^https?://(?:[^\x00-\x20\x7f/?#@]+@)?(?:{_IPV4}|{_HOSTNAME}|{_IPV6})(?::{_PORT})?{_REST}$"
"""An http(s) URL with a host, an optional port 1-65535, no spaces or control characters."""
WINRM_URL_PATTERN = rf"^(?:https?://)?(?:{_IPV4}|{_HOSTNAME}|{_IPV6})(?::{_PORT})?{_REST}$"
"""A WinRM endpoint: a URL or, as pywinrm allows, a bare host[:port]."""
LISTEN_PATTERN = rf"^(?:{_IPV4}|{_HOSTNAME})?:(?:0|{_PORT})$"
"""``host:port`` or ``:port`` (all interfaces); port 0 picks a free port."""
NAME_PATTERN = r"\S"
"""A target name: not empty, not blank (it is a label value)."""
PATTERN_HELP = {
    URL_PATTERN: "`http(s)://host[:port][/path]`, port 1 to 65535",
    WINRM_URL_PATTERN: "a URL or a bare `host[:port]`",
    LISTEN_PATTERN: "`host:port` or `:port`: an IPv4 address or a host name, port 0 to 65535",
    NAME_PATTERN: "not blank",
}
"""What each pattern accepts, in words (the docs' reference)."""

_URL = re.compile(URL_PATTERN)
_WINRM_URL = re.compile(WINRM_URL_PATTERN)
_LISTEN = re.compile(LISTEN_PATTERN)
_HOST = re.compile(rf"^(?:{_IPV4}|{_HOSTNAME})$")


def _port_problem(port: str, lowest: int) -> str | None:
    if (
        not port.isascii()
        or not port.isdigit()
        or len(port) > 5  # and int() refuses thousands of digits
        or not lowest <= int(port) <= 65535
        or port != str(int(port))
    ):
        return f"the port must be a number from {lowest} to 65535"
    return None


def host_problem(host: str) -> str | None:
    """Why ``host`` is not an IPv4 address, a host name or an [IPv6] address (None when it is)."""
    if not host:
        return "has no host name"
    if host.startswith("["):
        return None if re.fullmatch(_IPV6, host) else "the host is not a valid [IPv6] address"
    if not _HOST.fullmatch(host):
        return "the host is not a valid IPv4 address or host name"
    return None


def url_problem(url: str, scheme_optional: bool = False) -> str | None:
    """Why ``url`` is not a URL the exporter can poll (None when it is); never echoes the URL."""
    if (_WINRM_URL if scheme_optional else _URL).fullmatch(url):
        return None
    if re.search(r"[\x00-\x20\x7f]", url):
        return "must not contain spaces or control characters"
    rest = url
    if url.startswith(("http://", "https://")):
        rest = url.split("://", 1)[1]
    elif not scheme_optional:
        return "must start with https:// (or http:// for the simulator)"
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in authority:
        if scheme_optional:
            return "put the user name in auth.username, not in the url"
        authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        end = authority.find("]") + 1
        host, after = (authority[:end], authority[end:]) if end else (authority, "")
        if not end or (after and not after.startswith(":")):
            return "the host is not a valid [IPv6] address"
        sep, port = after[:1], after[1:]
    else:
        host, sep, port = authority.partition(":")
    return host_problem(host) or (_port_problem(port, 1) if sep else None) or "is not a valid URL"


def winrm_url_problem(url: str) -> str | None:
    """Why ``url`` is not a WinRM endpoint (a URL, or a bare host[:port] as pywinrm takes)."""
    return url_problem(url, scheme_optional=True)


def listen_problem(listen: str) -> str | None:
    """Why ``listen`` cannot be bound (None when it can be tried); the address is not echoed."""
    if _LISTEN.fullmatch(listen):
        return None
    host, sep, port = listen.rpartition(":")
    if not sep:
        return "expected host:port or :port, e.g. :9842 or 127.0.0.1:9842"
    if ":" in host or host.startswith("["):
        return "IPv6 addresses are not supported: use an IPv4 address, a host name or :port"
    return (_port_problem(port, 0) or (host_problem(host) if host else None)) or "expected host:port or :port"


# ------------------------------------------------------------------ refusals in sanlens's words
@dataclass(frozen=True)
class Explain:
    """Why a field's constraint refuses a value, in sanlens's words: a text, or a function of the value.

    Placed in the field's ``Annotated`` metadata, beside the constraint it explains; the
    loader uses it instead of the generic wording of a range or a pattern. A function
    never echoes the value (it may hold a password, as a URL's user info can).
    """

    why: str | Callable[[Any], str | None]

    def message(self, value: Any) -> str | None:
        if isinstance(self.why, str):
            return self.why
        return self.why(value) if isinstance(value, str) else None


def _known_tables(tables: list[str]) -> list[str]:
    known = counter_tables()
    unknown = [t for t in tables if t not in known]
    if unknown:
        raise PydanticCustomError(
            "unknown_table",
            "unknown table(s) {unknown}; known: {known}",
            {"unknown": str(unknown), "known": ", ".join(known)},
        )
    return tables


def _tables_schema(schema: dict[str, Any]) -> None:
    """The catalogue's tables, as the enum and default of ``tables``."""
    schema["items"] = {"type": "string", "enum": counter_tables()}
    schema["default"] = counter_tables()


_POSITIVE_QUEUE = Explain("must be 1 or more (Q_eff = queue_depth x paths)")

Interval = Annotated[Duration, Field(ge=1, le=MAX_POLL_INTERVAL)]
Timeout = Annotated[Duration, Field(gt=0, le=MAX_TIMEOUT)]
Text = str | None


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
    )


# ------------------------------------------------------------------ model
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


class AuthConfig(RuledModel, _Model):
    """Basic auth (a password from a file or the environment) or a client certificate.

    An inline ``password`` is accepted with a warning, for labs only. Any characters are
    allowed: Basic auth sends Latin-1 when the pair fits it, else UTF-8 (RFC 7617).
    """

    model_config = ConfigDict(frozen=True)  # a value: the targets that set none share one

    RULES: ClassVar[tuple[Rule, ...]] = (
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


# The auth and tls of every target that sets none: frozen, so one object serves them all
# (100,000 hosts need no 200,000 empty settings).
NO_AUTH = AuthConfig()
DEFAULT_TLS = TLSConfig()


class OntapTarget(_Model):
    """One ONTAP cluster, polled over its REST API."""

    name: Annotated[
        str,
        Field(
            pattern=NAME_PATTERN,
            description="The cluster's name: its `cluster` label, unique across targets.",
        ),
        Explain("must not be empty: it is the cluster label"),
    ]
    url: Annotated[
        str,
        Field(
            pattern=URL_PATTERN,
            description="Cluster management URL: https://host[:port][/path] (http:// for the simulator).",
        ),
        Explain(url_problem),
    ]
    auth: AuthConfig = Field(
        default_factory=lambda: NO_AUTH, description="Credentials of a read-only account."
    )
    tls: TLSConfig = Field(
        default_factory=lambda: DEFAULT_TLS, description="Verification of the cluster's certificate."
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


class HostDiskMapping(RuledModel, _Model):
    """One host disk: its ONTAP LUN, when not found by serial, and its own queue settings."""

    RULES: ClassVar[tuple[Rule, ...]] = (ExactlyOne(("disk", "drive")),)

    disk: Text = Field(
        default=None,
        description='Windows: PhysicalDisk number, e.g. "1" (or drive); Linux: the multipath map name, WWID or dm-N.',
    )
    drive: Text = Field(default=None, description='Drive letter, e.g. "E:" (or disk).')
    cluster: Text = Field(
        default=None,
        description="The LUN's cluster; without lun, which cluster's copy the disk's LUN serial joins "
        "when two present it (SnapMirror active sync, SVM DR).",
    )
    svm: Text = Field(default=None, description="The LUN's SVM.")
    lun: Text = Field(default=None, description="LUN path, e.g. /vol/sql_data/lun0.")
    data_class: Literal["data", "log", "tempdb"] | None = Field(
        default=None, description="The host's data_class, for this disk."
    )
    queue_depth: Annotated[int | None, Field(ge=1), _POSITIVE_QUEUE] = Field(
        default=None, description="The host's queue_depth, for this disk."
    )
    paths: Annotated[int | None, Field(ge=1), _POSITIVE_QUEUE] = Field(
        default=None, description="The host's paths, for this disk."
    )


class HostTarget(RuledModel, _Model):
    """One host: Windows by windows_exporter, WinRM or PerfMon logs; Linux by node_exporter."""

    RULES: ClassVar[tuple[Rule, ...]] = (
        When("source", ("perfmon",), (Required("files", "source perfmon needs files", at="source"),)),
        When(
            "source",
            ("windows_exporter", "winrm", "node_exporter"),
            (Required("url", "source {source} needs a url", at="source"),),
        ),
        When(
            "source",
            ("windows_exporter", "node_exporter", "prometheus"),
            (Matches("url", URL_PATTERN, url_problem, "an http(s) URL"),),
        ),
        When(
            "source",
            ("prometheus",),
            (
                Required("url", "source prometheus needs the url of a Prometheus query API", at="source"),
                Required(
                    "exporter",
                    "source prometheus needs exporter: windows_exporter or node_exporter",
                    at="source",
                ),
                Required(
                    "selector",
                    'source prometheus needs a selector naming this host\'s series, e.g. instance="db1:9182"',
                    at="source",
                ),
            ),
        ),
        When(
            "source",
            ("winrm",),
            (Matches("url", WINRM_URL_PATTERN, winrm_url_problem, "a URL or a bare host[:port]"),),
        ),
    )

    name: Annotated[
        str,
        Field(pattern=NAME_PATTERN, description="The host's name: its `host` label, unique across targets."),
        Explain("must not be empty: it is the host label"),
    ]
    source: Literal["windows_exporter", "winrm", "perfmon", "node_exporter", "prometheus"] = Field(
        default="windows_exporter",
        description="Where the disk counters come from: windows_exporter, winrm (the sanlens[winrm] extra), "
        "perfmon (log files), node_exporter (a Linux host, disks joined by multipath WWID) or prometheus (the "
        "`exporter`'s series a Prometheus-compatible query API at `url` already holds: no second scrape).",
    )
    exporter: Literal["windows_exporter", "node_exporter"] | None = Field(
        default=None, description="source prometheus: which exporter's series the host has."
    )
    selector: Text = Field(
        default=None,
        description='source prometheus: label matchers naming this host\'s series, e.g. `instance="db1:9182"`.',
    )
    url: Text = Field(
        default=None,
        description="windows_exporter and node_exporter: the http(s) /metrics URL; prometheus: the query API's "
        "base URL; winrm: the endpoint, a URL or a bare host[:port]; perfmon: not used.",
    )
    auth: AuthConfig = Field(
        default_factory=lambda: NO_AUTH, description="Credentials (Basic auth or WinRM)."
    )
    tls: TLSConfig = Field(
        default_factory=lambda: DEFAULT_TLS, description="Verification of the host's certificate."
    )
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
        default=32,
        description="Per-LUN HBA queue depth; Q_eff = queue_depth x paths. On Linux a depth the host reports "
        "through the textfile collector wins, and a disk entry wins over both.",
    )
    paths: Annotated[int, Field(ge=1), _POSITIVE_QUEUE] = Field(
        default=1, description="Active paths per LUN."
    )
    data_class: Literal["data", "log", "tempdb"] = Field(
        default="data", description="Which latency thresholds apply to the host's disks."
    )
    disks: list[HostDiskMapping] = Field(
        default_factory=list,
        description="Static mapping and per-disk overrides; by default disks map by LUN serial.",
    )
    files: list[str] = Field(default_factory=list, description="perfmon source: CSV/TSV logs")


class DiagnoseConfig(_Model):
    """Engine timing and per-diagnosis threshold overrides (their ranges are the registry's)."""

    sustain_scale: float = Field(
        default=1.0,
        ge=0,
        le=100,
        description="Multiplies every sustain and exit window (the demo uses 0.05).",
    )
    history: int = Field(default=240, ge=10, le=100000, description="Cooked windows kept per subject.")
    # described per diagnosis from the registry's specs (sanlens.config_schema), checked by it on load
    thresholds: dict[str, dict[str, float]] = Field(default_factory=dict)
    backend_iops_capacity: Annotated[float | None, Explain("must be a positive number of IOPS")] = Field(
        default=None,
        gt=0,
        description="IOPS the backend can serve, for the host-only san_oversubscription (without it a "
        "host-only finding stays a warning).",
    )


class Config(RuledModel, _Model):
    """The exporter config; sanlens check-config validates it fully."""

    RULES: ClassVar[tuple[Rule, ...]] = (UniqueNames(("ontap", "hosts"), "cluster and host labels"),)

    listen: Annotated[
        str,
        Field(
            pattern=LISTEN_PATTERN,
            description="Address of /metrics: host:port or :port (every interface); port 0 picks a free one.",
        ),
        Explain(listen_problem),
    ] = ":9842"
    log_level: Literal["debug", "info", "warning", "error"] = Field(default="info", description="Log level.")
    ontap: list[OntapTarget] = Field(default_factory=list, description="One entry per cluster.")
    hosts: list[HostTarget] = Field(default_factory=list, description="One entry per Windows host.")
    diagnose: DiagnoseConfig = Field(default_factory=DiagnoseConfig, description="The diagnosis engine.")
