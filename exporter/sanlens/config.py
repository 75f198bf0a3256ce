"""YAML config: typed dataclasses, validated with key paths and line numbers.

The loader walks PyYAML's node tree (not plain dicts) so every error can point
at the exact line, and it gathers every problem before it raises, so one run of
``sanlens check-config`` lists them all. Adding a setting is adding a dataclass
field; a bound it needs goes in the checks below (and, when JSON Schema can say
it, in helm/build.py's restatement for the chart).

What ``check_config`` accepts, ``sanlens serve`` runs: the checks cover what
would fail at start-up or in every poll (a zero interval, an unbindable listen
address, a URL without a host, unreadable password files), not only the types.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import errno
import functools
import gc
import logging
import math
import os
import re
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from sanlens.errors import ConfigError, ConfigErrors

log = logging.getLogger(__name__)

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

MAX_POLL_INTERVAL = 86400.0
MAX_TIMEOUT = 3600.0
MAX_SCHEMA_REFRESH = 30 * 86400.0

_KEYS_HINT = "the keys and their ranges are in docs/configuration.md"
_ENCODING_HINT = "save the file as UTF-8 (UTF-16 with a byte-order mark is read too)"
_FILES_HINT = "serve reads these files at start; `sanlens check-config --skip-files` checks the config alone"
_YAML_HINT = "check the YAML at that line: indent with spaces, quote values that hold ': ', ' #', '*' or '&'"
_SHAPE_HINT = (
    "the config is a mapping a few levels deep (docs/configuration.md); anchors and aliases only repeat it"
)

SECRET_KEYS = frozenset({"password"})
"""Keys whose values are never shown, not even their type."""


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


# ------------------------------------------------------------------ addresses
# Written for both Python's re and the chart's JSON Schema (Go RE2): ASCII classes only,
# no look-arounds, no inline flags. helm/build.py copies these patterns verbatim. Here they
# are applied with fullmatch: Python's $ would also match before a final newline, Go's not.
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


# ------------------------------------------------------------------ text
class _DecodeError(Exception):
    """Text that cannot be decoded: the reason and, when known, the line; never the bytes."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def _decode(data: bytes) -> str:
    """UTF-8 (a BOM allowed), or UTF-16/32 with a BOM."""
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                raise _DecodeError(f"not valid {codec.upper().removesuffix('-SIG')} text") from None
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise _DecodeError("a NUL byte: UTF-16 without a byte-order mark? Save the file as UTF-8", line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise _DecodeError("not UTF-8 text; save the file as UTF-8", line) from None


class _TooLarge(Exception):
    """A file past its size cap."""


def _read_capped(path: str | Path, cap: int) -> bytes:
    """At most ``cap`` bytes, _TooLarge past that (a device or a runaway file is not read to the end).

    OSError when the file cannot be read, a path holding a NUL character included.
    """
    if "\x00" in str(path):
        raise OSError(errno.EINVAL, "the path holds a NUL character")
    with open(path, "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        raise _TooLarge(f"larger than {cap // 1024} KiB")
    return data


def _shown(path: str) -> str:
    """A path for a message: as written, or quoted when it holds control characters."""
    return path if path.isprintable() else repr(path)


# ------------------------------------------------------------------ model
@dataclass
class TLSConfig:
    ca_file: str | None = None
    insecure_skip_verify: bool = False


@dataclass
class AuthConfig:
    """Basic auth (password from file or env) or a client certificate.

    An inline ``password`` is accepted with a warning, for labs only. Any characters are
    allowed: Basic auth sends Latin-1 when the pair fits it, else UTF-8 (RFC 7617).
    """

    username: str | None = None
    password_file: str | None = None
    password_env: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    cert_file: str | None = None
    key_file: str | None = None

    def resolve_password(self) -> str | None:
        """The password now; ConfigError names the file or variable, never its content."""
        if self.password_file:
            shown = _shown(self.password_file)
            try:
                text = _decode(_read_capped(self.password_file, MAX_SECRET_BYTES))
            except OSError as e:
                raise ConfigError(f"cannot read password_file {shown}: {e.strerror}") from None
            except (_DecodeError, _TooLarge) as e:
                raise ConfigError(f"password_file {shown}: {e}") from None
            return text.rstrip("\r\n")
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


# Duration bounds, seconds: (lowest, whether the lowest itself is allowed, highest). A poll
# loop needs a positive interval (0 spins), a socket a positive timeout (0 is refused by
# urllib3), and every wait must fit the platform's timeout (a huge one overflows).
DURATION_BOUNDS: dict[tuple[type, str], tuple[float, bool, float]] = {
    (OntapTarget, "poll_interval"): (1.0, True, MAX_POLL_INTERVAL),
    (OntapTarget, "connect_timeout"): (0.0, False, MAX_TIMEOUT),
    (OntapTarget, "read_timeout"): (0.0, False, MAX_TIMEOUT),
    (OntapTarget, "schema_refresh"): (0.0, True, MAX_SCHEMA_REFRESH),
    (HostTarget, "poll_interval"): (1.0, True, MAX_POLL_INTERVAL),
    (HostTarget, "timeout"): (0.0, False, MAX_TIMEOUT),
}


# ------------------------------------------------------------------ loader
_BAD: Any = object()  # a value that failed conversion (its problem is already recorded)
_MERGE = "tag:yaml.org,2002:merge"
_NULL = "tag:yaml.org,2002:null"
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _kind(node: yaml.Node) -> str:
    """What a node is, never its value (it may be a secret)."""
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return "a scalar"


def _value_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return f"a YAML {type(value).__name__}"


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """A large config makes millions of objects and no cycles; collecting meanwhile is quadratic."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _yaml_problem(e: yaml.YAMLError, text: str, file: str) -> ConfigError:
    err = _yaml_message(e, text, file)
    err.hint = _YAML_HINT
    return err


def _yaml_message(e: yaml.YAMLError, text: str, file: str) -> ConfigError:
    """A YAML syntax error with its line; quoted fragments are dropped (they may be a secret's characters)."""
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, e.position) + 1 if isinstance(e.position, int) else None
        return ConfigError("invalid YAML: a control character YAML does not allow", line=line, file=file)
    mark = getattr(e, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    index = getattr(mark, "index", None)
    if isinstance(index, int) and 0 <= index < len(text) and text[index] == "\t":
        return ConfigError("invalid YAML: a tab; indent with spaces", line=line, file=file)
    problem = str(getattr(e, "problem", None) or "not valid YAML")
    context = getattr(e, "context", None)
    if context and not str(context).startswith("while"):
        problem = f"{context}, {problem}"
    problem = re.sub(r"\s*(?:'[^']*'|\"[^\"]*\")", "", problem)
    return ConfigError(f"invalid YAML: {problem}", line=line, file=file)


def _scan(text: str, file: str) -> None:
    """Refuse, from the event stream, what would exhaust the composer or the walk.

    libyaml's composer recurses in C (a few thousand nested brackets crash the process),
    and aliases of aliases expand exponentially; events are flat, so both are measured
    here before any node is built: nesting depth, and the value count with every alias
    expanded (an anchor's size is known when its node ends). Recursive and undefined
    aliases are refused here too, without naming the alias.

    Some libyaml releases refuse deep nesting themselves, in their scanner, before the
    parser has emitted the events this scan counts, and in their own words. When libyaml
    refuses a document, the pure-Python parser (no nesting limit, no recursion) scans it
    again, so a document over sanlens's own limits is described by sanlens's message
    whichever library release noticed first; any other refusal keeps libyaml's account.
    """
    try:
        _scan_with(_SafeLoader, text, file)
    except yaml.YAMLError as e:
        refusal = _yaml_problem(e, text, file)
        if _SafeLoader is not yaml.SafeLoader:
            with contextlib.suppress(yaml.YAMLError):
                _scan_with(yaml.SafeLoader, text, file)
        raise refusal from None


def _scan_with(loader_class: Any, text: str, file: str) -> None:
    loader = loader_class(text)

    def refuse(message: str, ev: Any) -> ConfigError:
        return ConfigError(message, line=ev.start_mark.line + 1, file=file, hint=_SHAPE_HINT)

    try:
        starts: list[tuple[int, str | None]] = []  # open collections: count at start, anchor
        sizes: dict[str, int] = {}
        count = 0
        get = loader.get_event
        while loader.check_event():
            ev = get()
            kind = type(ev)
            if kind is ScalarEvent:
                count += 1
                if ev.anchor is not None:
                    sizes[ev.anchor] = 1
                continue
            if kind is MappingStartEvent or kind is SequenceStartEvent:
                if len(starts) >= MAX_DEPTH:
                    raise refuse(f"nested more than {MAX_DEPTH} levels deep", ev)
                starts.append((count, ev.anchor))
                count += 1
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                begin, anchor = starts.pop()
                if anchor is not None:
                    sizes[anchor] = count - begin
            elif kind is AliasEvent:
                if any(anchor == ev.anchor for _, anchor in starts):
                    raise refuse("an alias refers to a mapping or list it is inside", ev)
                if ev.anchor not in sizes:
                    raise refuse("an alias (*name) with no anchor (&name) before it", ev)
                count += sizes[ev.anchor]
                if count > MAX_VALUES:
                    raise refuse(f"more than {MAX_VALUES:,} values once aliases are expanded", ev)
        if count > MAX_VALUES:
            raise ConfigError(f"more than {MAX_VALUES:,} values", file=file, hint=_SHAPE_HINT)
    finally:
        loader.dispose()


@dataclass
class _Where:
    path: str
    line: int


class _Walk:
    """One pass over the node tree: builds the dataclasses and records every problem on the way."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[ConfigError] = []
        self.omitted = 0
        self.lines: dict[str, int] = {}  # key path -> line, for problems found after the walk
        self.where: dict[int, _Where] = {}  # id(built object) -> its path and line
        self.items: dict[int, list[str]] = {}  # id(built list) -> the path of each item kept
        self.built: dict[tuple[int, Any], Any] = {}  # an aliased mapping is built (and checked) once
        self.constructor = SafeConstructor()

    # -------------------------------------------------------------- problems
    def problem(self, message: str, path: str = "", line: int | None = None) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(ConfigError(message, path=path, line=line, file=self.file))
        else:
            self.omitted += 1

    def line_of(self, path: str) -> int | None:
        """The line of ``path``, or of its nearest parent the walk saw."""
        while path:
            if path in self.lines:
                return self.lines[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return None

    def raise_if_any(self, hint: str = _KEYS_HINT) -> None:
        if self.problems or self.omitted:
            ordered = sorted(self.problems, key=lambda p: p.line if p.line is not None else 1 << 62)
            raise ConfigErrors(ordered, self.omitted, hint=hint)

    def fail(self, node: yaml.Node, path: str, message: str) -> Any:
        self.problem(message, path, node.start_mark.line + 1)
        return _BAD

    # -------------------------------------------------------------- walk
    def pairs(self, node: yaml.MappingNode, path: str) -> list[tuple[yaml.Node, yaml.Node]]:
        """The mapping's key/value nodes, YAML merge keys (``<<: *base``) expanded; explicit keys win."""
        if not any(k.tag == _MERGE for k, _ in node.value):
            return node.value
        explicit: list[tuple[yaml.Node, yaml.Node]] = []
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        for k, v in node.value:
            if k.tag != _MERGE:
                explicit.append((k, v))
                continue
            for src in v.value if isinstance(v, yaml.SequenceNode) else [v]:
                if isinstance(src, yaml.MappingNode):
                    merged += self.pairs(src, path)
                else:
                    self.problem("a merge key (<<) takes a mapping or a list of mappings", path, _line(k))
        own = {k.value for k, _ in explicit if isinstance(k, yaml.ScalarNode)}
        inherited: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
        for k, v in merged:  # in ``<<: [*a, *b]`` the earlier mapping wins
            if isinstance(k, yaml.ScalarNode) and k.value not in own:
                inherited.setdefault(k.value, (k, v))
        return [*inherited.values(), *explicit]

    def keys(self, node: yaml.MappingNode, path: str) -> Iterator[tuple[str, str, yaml.Node]]:
        """(key, key path, value node) per entry; a non-scalar or repeated key is a problem."""
        seen: set[str] = set()
        lines = self.lines
        for k, v in self.pairs(node, path):
            if not isinstance(k, yaml.ScalarNode):
                self.problem("keys must be strings", path, _line(k))
                continue
            key = str(k.value)
            sub = f"{path}.{key}" if path else key
            if key in seen:
                self.problem("duplicate key", sub, _line(k))
                continue
            seen.add(key)
            lines[sub] = k.start_mark.line + 1
            yield key, sub, v

    def build(self, node: yaml.MappingNode, cls: Any, path: str) -> Any:
        """The dataclass ``cls`` from a mapping, its checks run; _BAD when a required key is missing or bad."""
        shape = _shape(cls)
        kwargs: dict[str, Any] = {}
        bad: set[str] = set()
        for key, sub, v in self.keys(node, path):
            convert = shape.converters.get(key)
            if convert is None:
                self.problem(shape.unknown, sub, self.lines[sub])
                continue
            value = convert(self, v, sub)
            if value is _BAD:
                bad.add(key)
            else:
                kwargs[key] = value
        line = node.start_mark.line + 1
        complete = True
        for name in shape.required:
            if name not in kwargs:
                complete = False
                if name not in bad:
                    self.problem("required key is missing", f"{path}.{name}" if path else name, line)
                bad.add(name)
                kwargs[name] = None  # a placeholder: its checks are skipped, the object is dropped
        obj = cls(**kwargs)
        self.where[id(obj)] = _Where(path, line)
        if shape.check is not None:

            def fail(message: str, key: str = "") -> None:
                sub = (f"{path}.{key}" if path else key) if key else path
                self.problem(message, sub, self.lines.get(sub, line) if key else line)

            ok = _all_ok if not bad else lambda *keys: bad.isdisjoint(keys)
            shape.check(self, obj, ok, fail, path)
        return obj if complete else _BAD


# ------------------------------------------------------------------ converters
# One converter per type, made once: the type dispatch does not run for each of a
# large config's million values.
_Convert = Callable[[_Walk, yaml.Node, str], Any]
_STR = "tag:yaml.org,2002:str"


class _Invalid(Exception):
    """A scalar of the wrong kind; the message names the kind, never the value."""


def _all_ok(*keys: str) -> bool:
    """Every key converted: no check needs skipping (the common case, without a closure)."""
    return True


@functools.cache
def _converter(tp: Any, secret: bool = False) -> _Convert:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = _converter(next(a for a in args if a is not type(None)), secret)

        def optional(walk: _Walk, node: yaml.Node, path: str) -> Any:
            if node.tag == _NULL and isinstance(node, yaml.ScalarNode):
                return None
            return inner(walk, node, path)

        return optional
    if dataclasses.is_dataclass(tp):

        def mapping(walk: _Walk, node: yaml.Node, path: str) -> Any:
            if not isinstance(node, yaml.MappingNode):
                return walk.fail(node, path, f"expected a mapping, got {_kind(node)}")
            # An alias is the same node: like YAML's own constructor, build one object for it,
            # so 100,000 aliases of one host cost one build (its problems are told once).
            key = (id(node), tp)
            if key not in walk.built:
                walk.built[key] = walk.build(node, tp, path)
            return walk.built[key]

        return mapping
    if origin is list:
        item = _converter(args[0])

        def sequence(walk: _Walk, node: yaml.Node, path: str) -> Any:
            if not isinstance(node, yaml.SequenceNode):
                return walk.fail(node, path, f"expected a list, got {_kind(node)}")
            out: list[Any] = []
            kept: list[str] = []
            lines = walk.lines
            for i, child in enumerate(node.value):
                sub = f"{path}[{i}]"
                lines[sub] = child.start_mark.line + 1
                value = item(walk, child, sub)
                if value is not _BAD:
                    out.append(value)
                    kept.append(sub)
            walk.items[id(out)] = kept
            return out

        return sequence
    if origin is dict:
        member = _converter(args[1])

        def entries(walk: _Walk, node: yaml.Node, path: str) -> Any:
            if not isinstance(node, yaml.MappingNode):
                return walk.fail(node, path, f"expected a mapping, got {_kind(node)}")
            out = {}
            for key, sub, v in walk.keys(node, path):
                value = member(walk, v, sub)
                if value is not _BAD:
                    out[key] = value
            return out

        return entries
    check = _scalar_check(tp)
    expected = _type_name(tp)

    def scalar(walk: _Walk, node: yaml.Node, path: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return walk.fail(node, path, f"expected {expected}, got {_kind(node)}")
        if node.tag == _STR:
            value: Any = node.value
        else:
            try:
                value = walk.constructor.construct_object(node)
            except Exception:  # a constructor raises what its parser raises: ValueError, TypeError...
                unreadable = "a value its YAML tag cannot read, or a tag sanlens does not read"
                return walk.fail(node, path, "expected a string" if secret else unreadable)
            if secret and not isinstance(value, str):
                return walk.fail(node, path, "expected a string (quote it)")
        try:
            return check(value)
        except _Invalid as e:
            return walk.fail(node, path, str(e))

    return scalar


def _scalar_check(tp: Any) -> Callable[[Any], Any]:
    """The value as ``tp``, or _Invalid."""
    if typing.get_origin(tp) is Literal:
        choices = typing.get_args(tp)
        message = f"must be one of {', '.join(repr(a) for a in choices)}"

        def literal(value: Any) -> Any:
            if value not in choices:
                raise _Invalid(message)
            return value

        return literal
    if tp is Duration:

        def duration(value: Any) -> Duration:
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise _Invalid("expected a duration such as 60s or 5m")
            try:
                return parse_duration(str(value))
            except ValueError:
                raise _Invalid(
                    "expected a duration such as 500ms, 60s, 5m or 1h (a plain number is seconds)"
                ) from None

        return duration
    if tp is bool:

        def boolean(value: Any) -> bool:
            if not isinstance(value, bool):
                raise _Invalid(f"expected true or false, got {_value_kind(value)}")
            return value

        return boolean
    if tp is int:

        def integer(value: Any) -> int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise _Invalid(f"expected an integer, got {_value_kind(value)}")
            return value

        return integer
    if tp is float:

        def number(value: Any) -> float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _Invalid(f"expected a number, got {_value_kind(value)}")
            try:
                out = float(value)
            except OverflowError:
                raise _Invalid("number too large") from None
            if not math.isfinite(out):
                raise _Invalid("expected a finite number")
            return out

        return number
    if tp is str:

        def string(value: Any) -> str:
            if not isinstance(value, str):
                quote = " (quote it)" if value is not None else ""
                raise _Invalid(f"expected a string, got {_value_kind(value)}{quote}")
            return value

        return string
    raise TypeError(f"unsupported config type {tp!r}")  # pragma: no cover - programming error


def _type_name(tp: Any) -> str:
    if tp is Duration:
        return "a duration"
    if typing.get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(
        tp, getattr(tp, "__name__", str(tp))
    )


@dataclass(frozen=True)
class _Shape:
    """What building one dataclass needs, worked out once per class."""

    converters: dict[str, _Convert]
    required: tuple[str, ...]
    unknown: str
    check: Callable[..., None] | None


@functools.cache
def _shape(cls: type) -> _Shape:
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    return _Shape(
        converters={f.name: _converter(hints[f.name], f.name in SECRET_KEYS) for f in fields},
        required=tuple(
            f.name
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ),
        unknown=f"unknown key (allowed: {', '.join(sorted(f.name for f in fields))})",
        check=_CHECKS.get(cls),
    )


# ------------------------------------------------------------------ checks
_Ok = Callable[..., bool]
_Fail = Callable[..., None]


def _check_durations(obj: Any, ok: _Ok, fail: _Fail) -> None:
    for (cls, key), (lo, lo_allowed, hi) in DURATION_BOUNDS.items():
        if type(obj) is not cls or not ok(key):
            continue
        value = float(getattr(obj, key))
        if lo_allowed and not lo <= value <= hi:
            fail(f"must be from {format_seconds(lo)} to {format_seconds(hi)}", key)
        elif not lo_allowed and not lo < value <= hi:
            fail(f"must be more than {format_seconds(lo)} and at most {format_seconds(hi)}", key)


def _check_name(obj: OntapTarget | HostTarget, ok: _Ok, fail: _Fail, label: str) -> None:
    if ok("name") and not obj.name.strip():
        fail(f"must not be empty: it is the {label} label", "name")


def _check_auth(walk: _Walk, a: AuthConfig, ok: _Ok, fail: _Fail, path: str) -> None:
    sources = [s for s in ("password_file", "password_env", "password") if getattr(a, s)]
    if len(sources) > 1:
        fail(f"give only one of {', '.join(sources)}", sources[1])
    if (a.cert_file is None) != (a.key_file is None):
        fail("cert_file and key_file go together", "cert_file" if a.cert_file is None else "key_file")
    if sources and not a.username and ok("username"):
        fail("a password needs a username", sources[0])
    if a.password:
        log.warning("config %s: inline password; prefer password_file or password_env", path or "auth")


def _check_tls(walk: _Walk, t: TLSConfig, ok: _Ok, fail: _Fail, path: str) -> None:
    if t.insecure_skip_verify:
        log.warning("config %s: insecure_skip_verify is true; TLS certificates are NOT verified", path)


def _check_ontap(walk: _Walk, t: OntapTarget, ok: _Ok, fail: _Fail, path: str) -> None:
    _check_name(t, ok, fail, "cluster")
    if ok("url") and (why := url_problem(t.url)):
        fail(why, "url")
    if ok("tables"):
        known = counter_tables()
        unknown = [x for x in t.tables if x not in known]
        if unknown:
            fail(f"unknown table(s) {unknown}; known: {', '.join(known)}", "tables")
    _check_durations(t, ok, fail)
    if ok("min_ops_for_latency") and t.min_ops_for_latency < 0:
        fail("must be 0 or more", "min_ops_for_latency")
    if ok("max_records") and not 1 <= t.max_records <= 10000:
        fail("must be between 1 and 10000", "max_records")


def _check_host(walk: _Walk, h: HostTarget, ok: _Ok, fail: _Fail, path: str) -> None:
    _check_name(h, ok, fail, "host")
    if ok("source", "url"):
        if h.source in ("windows_exporter", "winrm") and not h.url:
            fail(f"source {h.source} needs a url", "source")
        elif (
            h.url is not None
            and h.source != "perfmon"
            and (why := url_problem(h.url, scheme_optional=h.source == "winrm"))
        ):
            fail(why, "url")
    if ok("source", "files") and h.source == "perfmon" and not h.files:
        fail("source perfmon needs files", "source")
    _check_durations(h, ok, fail)
    for key in ("queue_depth", "paths"):
        if ok(key) and getattr(h, key) < 1:
            fail("must be 1 or more (Q_eff = queue_depth x paths)", key)


def _check_disk(walk: _Walk, d: HostDiskMapping, ok: _Ok, fail: _Fail, path: str) -> None:
    if ok("disk", "drive") and (d.disk is None) == (d.drive is None):
        fail("give exactly one of disk or drive")
    for key in ("queue_depth", "paths"):
        value = getattr(d, key)
        if ok(key) and value is not None and value < 1:
            fail("must be 1 or more (Q_eff = queue_depth x paths)", key)


def _check_config(walk: _Walk, cfg: Config, ok: _Ok, fail: _Fail, path: str) -> None:
    if ok("listen") and (why := listen_problem(cfg.listen)):
        fail(why, "listen")
    # target names are the cluster and host labels: unique across both lists, in one pass
    first: dict[str, str] = {}
    repeats: dict[str, list[str]] = {}
    entries: list[tuple[OntapTarget | HostTarget, str]] = [
        *zip(cfg.ontap, walk.items.get(id(cfg.ontap), []), strict=False),
        *zip(cfg.hosts, walk.items.get(id(cfg.hosts), []), strict=False),
    ]
    for target, where in entries:
        if target.name in first:
            repeats.setdefault(target.name, []).append(where)
        else:
            first[target.name] = where
    for name, places in repeats.items():
        shown = name if len(name) <= 60 else name[:57] + "..."
        origin = first[name]
        walk.problem(
            f"target name {shown!r} is used {len(places) + 1} times (first at {origin}, line "
            f"{walk.line_of(origin)}); names must be unique: they are the cluster and host labels",
            f"{places[0]}.name",
            walk.line_of(f"{places[0]}.name"),
        )


_CHECKS: dict[type, Callable[..., None]] = {
    AuthConfig: _check_auth,
    TLSConfig: _check_tls,
    OntapTarget: _check_ontap,
    HostTarget: _check_host,
    HostDiskMapping: _check_disk,
    Config: _check_config,
}


# ------------------------------------------------------------------ files a config names
def _file_problem(path: str, directory_ok: bool = False) -> str | None:
    try:
        if "\x00" in path:
            raise OSError(errno.EINVAL, "the path holds a NUL character")
        if directory_ok and os.path.isdir(path):
            os.listdir(path)
            return None
        with open(path, "rb"):
            return None
    except OSError as e:
        return f"cannot read {_shown(path)}: {e.strerror}"


def _check_files(walk: _Walk, cfg: Config) -> None:
    """What the exporter reads at start-up or on every poll: password files and variables, certificates."""
    targets: list[OntapTarget | HostTarget] = [*cfg.ontap, *cfg.hosts]
    for target in targets:
        base = walk.where[id(target)].path
        auth, tls = target.auth, target.tls
        checks: list[tuple[str, str | None]] = []
        if auth.password_file or auth.password_env:
            try:
                auth.resolve_password()
            except ConfigError as e:
                checks.append(
                    ("auth.password_file" if auth.password_file else "auth.password_env", e.message)
                )
        for key in ("cert_file", "key_file"):
            if getattr(auth, key):
                checks.append((f"auth.{key}", _file_problem(getattr(auth, key))))
        if tls.ca_file and not tls.insecure_skip_verify:
            checks.append(("tls.ca_file", _file_problem(tls.ca_file, directory_ok=True)))
        for key, why in checks:
            if why:
                walk.problem(why, f"{base}.{key}", walk.line_of(f"{base}.{key}"))


# ------------------------------------------------------------------ entry points
def _walk_text(text: str, file: str) -> tuple[Config, _Walk]:
    """The config and every problem the walk found; raises only when there is nothing to walk."""
    if len(text) > MAX_CONFIG_BYTES:
        raise _too_large(file)
    walk = _Walk(file)
    with _gc_paused():
        _scan(text, file)
        try:
            node = yaml.compose(text, Loader=_SafeLoader)
        except yaml.YAMLError as e:
            raise _yaml_problem(e, text, file) from None
        if node is None:
            return Config(), walk
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(
                "the top level must be a mapping", line=_line(node), file=file, hint=_SHAPE_HINT
            )
        cfg = walk.build(node, Config, "")
    assert isinstance(cfg, Config)
    return cfg, walk


def _too_large(file: str) -> ConfigError:
    return ConfigError(
        f"larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB",
        file=file,
        hint="is this the config file? 100,000 hosts take about 5 MB",
    )


def _read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        data = _read_capped(p, MAX_CONFIG_BYTES)
    except OSError as e:
        raise ConfigError(
            f"cannot read: {e.strerror}", file=str(p), hint="check the path and its permissions"
        ) from None
    except _TooLarge:
        raise _too_large(str(p)) from None
    try:
        return _decode(data)
    except _DecodeError as e:
        raise ConfigError(e.reason, line=e.line, file=str(p), hint=_ENCODING_HINT) from None


def load_config_text(text: str, file: str = "<config>") -> Config:
    """The config in ``text``; ConfigErrors lists every problem of the file itself."""
    cfg, walk = _walk_text(text, file)
    walk.raise_if_any()
    return cfg


def load_config(path: str | Path) -> Config:
    """The config file at ``path`` (UTF-8, or UTF-16/32 with a byte-order mark)."""
    return load_config_text(_read_text(path), str(path))


def check_config(path: str | Path, *, files: bool = True) -> Config:
    """The config at ``path`` as ``sanlens serve`` would run it, or ConfigErrors with every problem.

    Beyond the file itself: the diagnosis registry's ranges and, unless ``files`` is
    false, the password files and variables and the certificate files it names.
    """
    from sanlens.diagnose.registry import check as check_diagnose  # the registry imports this module

    cfg, walk = _walk_text(_read_text(path), str(path))
    for text in check_diagnose(cfg):
        key, _, message = text.partition(": ")
        walk.problem(message, key, walk.line_of(key))
    before = len(walk.problems) + walk.omitted
    if files:
        _check_files(walk, cfg)
    if len(walk.problems) + walk.omitted > before:
        walk.raise_if_any(_FILES_HINT)
    walk.raise_if_any()
    return cfg
