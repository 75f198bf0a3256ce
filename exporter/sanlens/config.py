"""YAML config: typed dataclasses, validated with key paths and line numbers.

The loader walks PyYAML's node tree (not plain dicts) so every error can point
at the exact line. Adding a setting is adding a dataclass field.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from sanlens.errors import ConfigError

log = logging.getLogger(__name__)


def counter_tables() -> list[str]:
    """The REST counter tables the catalogue describes (all polled by default)."""
    from sanlens.ontap.catalogue import catalogue

    return [name for name, t in catalogue().items() if t.rest]


class Duration(float):
    """Seconds; YAML may say 60, 60s, 5m, 1h or 500ms."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> Duration:
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 15s, 5m, 1h)")
    return Duration(float(m.group(1)) * _UNITS[m.group(2)])


@dataclass
class TLSConfig:
    ca_file: str | None = None
    insecure_skip_verify: bool = False


@dataclass
class AuthConfig:
    """Basic auth (password from file or env) or a client certificate.

    An inline ``password`` is accepted with a warning, for labs only.
    """

    username: str | None = None
    password_file: str | None = None
    password_env: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    cert_file: str | None = None
    key_file: str | None = None

    def resolve_password(self) -> str | None:
        if self.password_file:
            try:
                return Path(self.password_file).read_text(encoding="utf-8").rstrip("\r\n")
            except OSError as e:
                raise ConfigError(f"cannot read password_file {self.password_file}: {e.strerror}") from None
        if self.password_env:
            value = os.environ.get(self.password_env)
            if value is None:
                raise ConfigError(f"environment variable {self.password_env} is not set")
            return value
        return self.password

    def __repr__(self) -> str:  # never show a secret, even by accident
        return f"AuthConfig(username={self.username!r}, password_file={self.password_file!r}, ...)"


@dataclass
class OntapTarget:
    name: str
    url: str
    auth: AuthConfig = field(default_factory=AuthConfig)
    tls: TLSConfig = field(default_factory=TLSConfig)
    poll_interval: Duration = Duration(60)
    connect_timeout: Duration = Duration(5)
    read_timeout: Duration = Duration(30)
    tables: list[str] = field(default_factory=counter_tables)
    skip_incomplete_aggregation: bool = True
    min_ops_for_latency: float = 1.0
    max_records: int = 1000
    schema_refresh: Duration = Duration(86400)


@dataclass
class HostDiskMapping:
    """Static mapping of a host disk to an ONTAP LUN, and per-disk overrides."""

    disk: str | None = None  # PhysicalDisk number, e.g. "1"
    drive: str | None = None  # or a drive letter, e.g. "E:"
    cluster: str | None = None
    svm: str | None = None
    lun: str | None = None  # LUN path, e.g. /vol/sql_data/lun0
    data_class: Literal["data", "log", "tempdb"] | None = None
    queue_depth: int | None = None
    paths: int | None = None


@dataclass
class HostTarget:
    name: str
    source: Literal["windows_exporter", "winrm", "perfmon"] = "windows_exporter"
    url: str | None = None  # windows_exporter /metrics URL, or WinRM endpoint
    auth: AuthConfig = field(default_factory=AuthConfig)
    tls: TLSConfig = field(default_factory=TLSConfig)
    poll_interval: Duration = Duration(15)
    timeout: Duration = Duration(10)
    queue_depth: int = 32
    paths: int = 1
    data_class: Literal["data", "log", "tempdb"] = "data"
    disks: list[HostDiskMapping] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # perfmon source: CSV/TSV logs


@dataclass
class DiagnoseConfig:
    """Engine timing and per-diagnosis threshold overrides (validated by the registry)."""

    sustain_scale: float = 1.0  # multiplies every sustain window; the demo uses short windows
    history: int = 240  # cooked windows kept per subject
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    backend_iops_capacity: float | None = None  # host-only san_oversubscription


@dataclass
class Config:
    listen: str = ":9842"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    ontap: list[OntapTarget] = field(default_factory=list)
    hosts: list[HostTarget] = field(default_factory=list)
    diagnose: DiagnoseConfig = field(default_factory=DiagnoseConfig)


# ------------------------------------------------------------------ loader
def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if tp is Duration:
        return "duration"
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (list,):
        return "list"
    if origin in (dict,):
        return "mapping"
    if dataclasses.is_dataclass(tp):
        return "mapping"
    return getattr(tp, "__name__", str(tp))


def _convert(node: yaml.Node, tp: Any, path: str, file: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)

    def fail(msg: str) -> ConfigError:
        return ConfigError(msg, path=path, line=_line(node), file=file)

    if origin in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return None
        return _convert(node, non_none[0], path, file)
    if dataclasses.is_dataclass(tp):
        if not isinstance(node, yaml.MappingNode):
            raise fail(f"expected a mapping, got {_kind(node)}")
        return _build_dataclass(node, tp, path, file)
    if origin is list:
        if not isinstance(node, yaml.SequenceNode):
            raise fail(f"expected a list, got {_kind(node)}")
        return [_convert(item, args[0], f"{path}[{i}]", file) for i, item in enumerate(node.value)]
    if origin is dict:
        if not isinstance(node, yaml.MappingNode):
            raise fail(f"expected a mapping, got {_kind(node)}")
        out = {}
        for k, v in node.value:
            key = _scalar(k)
            out[key] = _convert(v, args[1], f"{path}.{key}", file)
        return out
    if not isinstance(node, yaml.ScalarNode):
        raise fail(f"expected {_type_name(tp)}, got {_kind(node)}")
    value = yaml.safe_load(yaml.serialize(node))
    if origin is Literal:
        if value not in args:
            raise fail(f"must be one of {', '.join(repr(a) for a in args)}, got {value!r}")
        return value
    if tp is Duration:
        if isinstance(value, bool):
            raise fail("expected a duration such as 60s or 5m")
        try:
            return parse_duration(str(value))
        except ValueError as e:
            raise fail(str(e)) from None
    if tp is bool:
        if not isinstance(value, bool):
            raise fail(f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(f"expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(f"expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if value is None or isinstance(value, list | dict):
            raise fail("expected a string")
        if not isinstance(value, str):
            raise fail(f"expected a string, got {type(value).__name__} {value!r} (quote it)")
        return value
    raise fail(f"unsupported type {tp!r}")  # pragma: no cover - programming error


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"{node.value!r}"


def _scalar(node: yaml.Node) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError("keys must be strings", line=_line(node))
    return str(node.value)


def _build_dataclass(node: yaml.MappingNode, cls: Any, path: str, file: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for k, v in node.value:
        key = _scalar(k)
        sub = f"{path}.{key}" if path else key
        if key not in fields:
            raise ConfigError(
                f"unknown key (allowed: {', '.join(sorted(fields))})", path=sub, line=_line(k), file=file
            )
        if key in kwargs:
            raise ConfigError("duplicate key", path=sub, line=_line(k), file=file)
        kwargs[key] = _convert(v, hints[key], sub, file)
    for name, f in fields.items():
        if (
            name not in kwargs
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ):
            raise ConfigError(
                "required key is missing",
                path=f"{path}.{name}" if path else name,
                line=_line(node),
                file=file,
            )
    obj = cls(**kwargs)
    _validate(obj, node, path, file)
    return obj


def _validate(obj: Any, node: yaml.MappingNode, path: str, file: str) -> None:
    def fail(msg: str, key: str = "") -> ConfigError:
        line = _line(node)
        for k, _v in node.value:
            if k.value == key:
                line = _line(k)
        return ConfigError(msg, path=f"{path}.{key}" if key else path, line=line, file=file)

    if isinstance(obj, AuthConfig):
        sources = [s for s in ("password_file", "password_env", "password") if getattr(obj, s)]
        if len(sources) > 1:
            raise fail(f"give only one of {', '.join(sources)}", sources[1])
        if (obj.cert_file is None) != (obj.key_file is None):
            raise fail(
                "cert_file and key_file go together", "cert_file" if obj.cert_file is None else "key_file"
            )
        if sources and not obj.username:
            raise fail("a password needs a username", sources[0])
        if obj.password:
            log.warning("config %s: inline password; prefer password_file or password_env", path or "auth")
    elif isinstance(obj, TLSConfig):
        if obj.insecure_skip_verify:
            log.warning("config %s: insecure_skip_verify is true; TLS certificates are NOT verified", path)
    elif isinstance(obj, OntapTarget):
        if not re.match(r"^https?://", obj.url):
            raise fail("must start with https:// (or http:// for the simulator)", "url")
        known = counter_tables()
        unknown = [t for t in obj.tables if t not in known]
        if unknown:
            raise fail(f"unknown table(s) {unknown}; known: {', '.join(known)}", "tables")
        if obj.poll_interval < 1:
            raise fail("must be at least 1s", "poll_interval")
        if not 1 <= obj.max_records <= 10000:
            raise fail("must be between 1 and 10000", "max_records")
    elif isinstance(obj, HostTarget):
        if obj.source in ("windows_exporter", "winrm") and not obj.url:
            raise fail(f"source {obj.source} needs a url", "source")
        if obj.source == "perfmon" and not obj.files:
            raise fail("source perfmon needs files", "source")
        if obj.queue_depth < 1 or obj.paths < 1:
            raise fail(
                "queue_depth and paths must be >= 1", "queue_depth" if obj.queue_depth < 1 else "paths"
            )
    elif isinstance(obj, HostDiskMapping):
        if (obj.disk is None) == (obj.drive is None):
            raise fail("give exactly one of disk or drive")
    elif isinstance(obj, Config):
        names = [t.name for t in obj.ontap] + [h.name for h in obj.hosts]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise fail(f"target names must be unique: {sorted(dup)}")
        if not re.match(r"^[^:]*:\d+$", obj.listen):
            raise fail("expected host:port or :port", "listen")


def load_config_text(text: str, file: str = "<config>") -> Config:
    try:
        node = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"invalid YAML: {getattr(e, 'problem', e)}", line=line, file=file) from None
    if node is None:
        return Config()
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError("the top level must be a mapping", line=_line(node), file=file)
    cfg = _build_dataclass(node, Config, "", file)
    assert isinstance(cfg, Config)
    return cfg


def load_config(path: str | Path) -> Config:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror}", file=str(p)) from None
    return load_config_text(text, str(p))
