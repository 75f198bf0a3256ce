"""The web config file (`sanlens serve --web.config.file`): TLS and basic auth for every endpoint.

The format is the Prometheus exporter-toolkit's (docs/securing.md),
so one file and one habit serve sanlens and the Go exporters beside it. As there, every
endpoint is protected (the health endpoints too), relative paths are relative to the file,
and the file and the certificates it names are re-read when they change, so a rotated
certificate is served from the next connection on. A broken edit is logged and the last
good config stays in force: a typo never turns authentication off.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bcrypt
import yaml

from sanlens.errors import ConfigError

log = logging.getLogger(__name__)

# A successful (user, password) check is remembered this long, so a scrape every few
# seconds pays bcrypt (~60 ms at cost 10) once a minute instead of on every request.
AUTH_CACHE_SECONDS = 60.0
# How often a connection may trigger a look at the files' modification times.
RELOAD_CHECK_SECONDS = 1.0

TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
# client_auth_type -> verify mode. RequestClientCert and RequireAnyClientCert ask for a
# certificate without verifying it, which OpenSSL through Python's ssl module cannot do.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
UNVERIFIED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
# Go's cipher suite names (crypto/tls CipherSuites()) -> OpenSSL's. The TLS 1.3 suites are
# not configurable, in Go as in OpenSSL through Python: they are accepted and left alone.
CIPHER_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
}
TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
# http_server_config.headers: the headers that may be set, and their allowed values (None: any).
HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}
BCRYPT_HASH = re.compile(r"^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$")
# A Go duration (time.ParseDuration) as rate_limit.interval takes it; also the chart schema's pattern.
GO_DURATION_PATTERN = r"^(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+)$"
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

# The keys of the format, each one read by parse_web_config (helm/build.py builds the chart's schema from them).
TLS_KEYS = (
    "cert_file",
    "key_file",
    "cert",
    "key",
    "client_auth_type",
    "client_ca_file",
    "client_ca",
    "client_allowed_sans",
    "min_version",
    "max_version",
    "cipher_suites",
    "prefer_server_cipher_suites",
    "curve_preferences",
)
TOP_KEYS = ("tls_server_config", "http_server_config", "basic_auth_users", "rate_limit")


class WebConfigError(ConfigError):
    """A web config problem, located by file, key path and line like a config error."""


# ------------------------------------------------------------------ the file's model


@dataclass(frozen=True)
class TLSServerConfig:
    """``tls_server_config``: the server certificate, the client certificate policy, versions."""

    cert_file: Path | None = None
    key_file: Path | None = None
    cert: str | None = field(default=None, repr=False)
    key: str | None = field(default=None, repr=False)
    client_auth_type: str = "NoClientCert"
    client_ca_file: Path | None = None
    client_ca: str | None = None
    client_allowed_sans: tuple[str, ...] = ()
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3
    ciphers: tuple[str, ...] = ()  # OpenSSL names
    prefer_server_cipher_suites: bool = True

    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.cert_file, self.key_file, self.client_ca_file) if p is not None)

    def context(self, file: str = "") -> ssl.SSLContext:
        """The server-side SSLContext, every file read now; a bad file is a WebConfigError."""

        def fail(msg: str, key: str) -> WebConfigError:
            return WebConfigError(msg, path=f"tls_server_config.{key}", file=file)

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = self.min_version
        ctx.maximum_version = self.max_version
        if self.prefer_server_cipher_suites:
            ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
        if self.ciphers:
            try:
                ctx.set_ciphers(":".join(self.ciphers))
            except ssl.SSLError as e:
                raise fail(
                    f"OpenSSL accepts none of these suites: {e.reason or e}", "cipher_suites"
                ) from None
        try:
            with _pem_files(self) as (cert_path, key_path):
                ctx.load_cert_chain(cert_path, key_path)
        except OSError as e:  # ssl.SSLError is an OSError
            where = "cert_file" if self.cert_file else "cert"
            named = ", ".join(str(p) for p in (self.cert_file, self.key_file) if p is not None)
            raise fail(
                f"cannot load the certificate and key{f' ({named})' if named else ''}: {_reason(e)}", where
            ) from None
        if self.client_ca_file is not None or self.client_ca is not None:
            key = "client_ca_file" if self.client_ca_file is not None else "client_ca"
            try:
                ctx.load_verify_locations(
                    cafile=str(self.client_ca_file) if self.client_ca_file else None, cadata=self.client_ca
                )
            except OSError as e:
                named = f" ({self.client_ca_file})" if self.client_ca_file else ""
                raise fail(f"cannot load the client CA{named}: {_reason(e)}", key) from None
        ctx.verify_mode = CLIENT_AUTH[self.client_auth_type]
        return ctx

    def allows(self, peer: Mapping[str, Any] | None) -> bool:
        """Whether a verified client certificate carries one of ``client_allowed_sans``."""
        if not self.client_allowed_sans:
            return True
        allowed = {_canonical_san(s) for s in self.client_allowed_sans}
        return any(_canonical_san(v) in allowed for _k, v in (peer or {}).get("subjectAltName", ()))


@dataclass(frozen=True)
class RateLimit:
    """``rate_limit``: a token bucket, one token per ``interval`` seconds, ``burst`` at most."""

    interval: float
    burst: int


@dataclass(frozen=True)
class WebConfig:
    """One reading of the web config file. Empty: plain HTTP with no authentication."""

    file: str = ""
    tls: TLSServerConfig | None = None
    users: Mapping[str, bytes] = field(default_factory=dict, repr=False)  # user -> bcrypt hash
    headers: Mapping[str, str] = field(default_factory=dict)
    http2: bool = True  # accepted for compatibility; sanlens serves HTTP/1.1, which Prometheus scrapes
    rate_limit: RateLimit | None = None

    def files(self) -> tuple[Path, ...]:
        return self.tls.files() if self.tls else ()


# ------------------------------------------------------------------ parsing


def load_web_config(path: str | os.PathLike[str]) -> WebConfig:
    """Reads and checks the file, including that its certificates and keys load."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise WebConfigError(f"cannot read: {e.strerror}", file=str(p)) from None
    cfg = parse_web_config(text, str(p))
    if cfg.tls is not None:
        cfg.tls.context(str(p))
    return cfg


def parse_web_config(text: str, file: str = "<web config>") -> WebConfig:
    """The file's model from its YAML; unknown keys, bad types and bad values fail with their key path."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise WebConfigError(
            f"invalid YAML: {getattr(e, 'problem', e)}",
            line=mark.line + 1 if mark is not None else None,
            file=file,
        ) from None
    if node is None or _is_null(node):
        return WebConfig(file=file)
    reader = _Reader(file, Path(file).parent)
    top = reader.mapping(node, "", TOP_KEYS)
    tls = reader.tls(top["tls_server_config"]) if "tls_server_config" in top else None
    users: dict[str, bytes] = {}
    if "basic_auth_users" in top:
        for user, (knode, vnode) in reader.pairs(top["basic_auth_users"], "basic_auth_users").items():
            hashed = reader.string(vnode, f"basic_auth_users.{user}")
            if not BCRYPT_HASH.match(hashed):
                raise reader.fail(
                    "not a bcrypt hash ($2y$10$ and 53 characters, e.g. from htpasswd -nBC 10 \"\" | tr -d ':\\n')",
                    f"basic_auth_users.{user}",
                    knode,
                )
            users[user] = hashed.encode()
    headers: dict[str, str] = {}
    http2 = True
    if "http_server_config" in top:
        http = reader.mapping(top["http_server_config"], "http_server_config", ("http2", "headers"))
        if "http2" in http:
            http2 = reader.boolean(http["http2"], "http_server_config.http2")
        if "headers" in http:
            allowed = tuple(HEADERS)
            for name, (knode, vnode) in reader.pairs(
                http["headers"], "http_server_config.headers", allowed
            ).items():
                value = reader.string(vnode, f"http_server_config.headers.{name}")
                choices = HEADERS[name]
                if choices and value not in choices:
                    raise reader.fail(
                        f"must be one of {', '.join(choices)}", f"http_server_config.headers.{name}", knode
                    )
                if value:
                    headers[name] = value
    rate_limit = None
    if "rate_limit" in top:
        rl = reader.mapping(top["rate_limit"], "rate_limit", ("interval", "burst"))
        interval = reader.duration(rl["interval"], "rate_limit.interval") if "interval" in rl else 0.0
        burst = reader.integer(rl["burst"], "rate_limit.burst") if "burst" in rl else 0
        if interval > 0:
            if burst < 1:
                raise reader.fail(
                    "must be at least 1 when interval is set", "rate_limit.burst", rl.get("burst")
                )
            rate_limit = RateLimit(interval, burst)
    return WebConfig(file=file, tls=tls, users=users, headers=headers, http2=http2, rate_limit=rate_limit)


class _Reader:
    """Walks YAML nodes so each error names its key path and line."""

    def __init__(self, file: str, base: Path) -> None:
        self.file = file
        self.base = base

    def fail(self, msg: str, path: str, node: Any = None) -> WebConfigError:
        line = node.start_mark.line + 1 if isinstance(node, yaml.Node) else None
        return WebConfigError(msg, path=path, line=line, file=self.file)

    def pairs(
        self, node: yaml.Node, path: str, allowed: tuple[str, ...] | None = None
    ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """Key -> (key node, value node) of a mapping; keys outside ``allowed`` are errors."""
        if _is_null(node):
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise self.fail("expected a mapping", path, node)
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode) or _is_null(k):
                raise self.fail("keys must be strings", path, k)
            key = str(k.value)
            sub = f"{path}.{key}" if path else key
            if allowed is not None and key not in allowed:
                raise self.fail(f"unknown key (allowed: {', '.join(sorted(allowed))})", sub, k)
            if key in out:
                raise self.fail("duplicate key", sub, k)
            out[key] = (k, v)
        return out

    def mapping(self, node: yaml.Node, path: str, allowed: tuple[str, ...]) -> dict[str, yaml.Node]:
        return {k: v for k, (_kn, v) in self.pairs(node, path, allowed).items()}

    def _scalar(self, node: yaml.Node, path: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail("expected a single value", path, node)
        return yaml.safe_load(yaml.serialize(node))

    def string(self, node: yaml.Node, path: str) -> str:
        value = self._scalar(node, path)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(f"expected a string, got {type(value).__name__} (quote it)", path, node)
        return value

    def boolean(self, node: yaml.Node, path: str) -> bool:
        value = self._scalar(node, path)
        if not isinstance(value, bool):
            raise self.fail("expected true or false", path, node)
        return value

    def integer(self, node: yaml.Node, path: str) -> int:
        value = self._scalar(node, path)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail("expected a whole number >= 0", path, node)
        return value

    def duration(self, node: yaml.Node, path: str) -> float:
        text = self.string(node, path).strip()
        seconds = _go_duration(text)
        if seconds is None:
            raise self.fail("expected a duration such as 100ms, 1s or 1m30s", path, node)
        return seconds

    def strings(self, node: yaml.Node, path: str) -> tuple[str, ...]:
        if _is_null(node):
            return ()
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail("expected a list", path, node)
        return tuple(self.string(item, f"{path}[{i}]") for i, item in enumerate(node.value))

    def file_path(self, node: yaml.Node, path: str) -> Path | None:
        text = self.string(node, path)
        return (self.base / text) if text else None

    def tls(self, node: yaml.Node) -> TLSServerConfig | None:
        path = "tls_server_config"
        m = self.mapping(node, path, TLS_KEYS)

        def sub(key: str) -> str:
            return f"{path}.{key}"

        def key_node(key: str) -> Any:
            return m.get(key, node)

        if "curve_preferences" in m and self.strings(m["curve_preferences"], sub("curve_preferences")):
            raise self.fail(
                "not supported by sanlens (Python's ssl module takes no curve list): remove it to "
                "use OpenSSL's default groups",
                sub("curve_preferences"),
                m["curve_preferences"],
            )
        files: dict[str, Path | None] = {
            k: self.file_path(m[k], sub(k)) for k in ("cert_file", "key_file", "client_ca_file") if k in m
        }
        inline: dict[str, str | None] = {
            k: self.string(m[k], sub(k)) or None for k in ("cert", "key", "client_ca") if k in m
        }
        auth = self.string(m["client_auth_type"], sub("client_auth_type")) if "client_auth_type" in m else ""
        enabled = any(files.values()) or any(inline.values()) or bool(auth)
        if not enabled:
            return None  # as in the exporter-toolkit: no TLS key set, plain HTTP
        for name, alt in (("cert_file", "cert"), ("key_file", "key"), ("client_ca_file", "client_ca")):
            if files.get(name) and inline.get(alt):
                raise self.fail(f"give {name} or {alt}, not both", sub(alt), key_node(alt))
        if not (files.get("cert_file") or inline.get("cert")):
            raise self.fail("missing one of cert or cert_file", path, node)
        if not (files.get("key_file") or inline.get("key")):
            raise self.fail("missing one of key or key_file", path, node)
        auth = auth or "NoClientCert"
        if auth in UNVERIFIED_CLIENT_AUTH:
            raise self.fail(
                f"{auth} asks for a certificate without verifying it, which sanlens does not do: "
                "use RequireAndVerifyClientCert with client_ca_file",
                sub("client_auth_type"),
                key_node("client_auth_type"),
            )
        if auth not in CLIENT_AUTH:
            raise self.fail(
                f"must be one of {', '.join(CLIENT_AUTH)}",
                sub("client_auth_type"),
                key_node("client_auth_type"),
            )
        has_ca = bool(files.get("client_ca_file") or inline.get("client_ca"))
        if has_ca and auth == "NoClientCert":
            raise self.fail(
                "a client CA is set but client_auth_type is NoClientCert: set RequireAndVerifyClientCert",
                sub("client_auth_type"),
                key_node("client_auth_type"),
            )
        if auth != "NoClientCert" and not has_ca:
            raise self.fail(
                f"{auth} needs client_ca_file (the CA that signs client certificates)",
                sub("client_ca_file"),
                key_node("client_auth_type"),
            )
        sans = (
            self.strings(m["client_allowed_sans"], sub("client_allowed_sans"))
            if "client_allowed_sans" in m
            else ()
        )
        if sans and auth != "RequireAndVerifyClientCert":
            raise self.fail(
                "client_allowed_sans needs client_auth_type RequireAndVerifyClientCert",
                sub("client_allowed_sans"),
                m["client_allowed_sans"],
            )
        versions = {}
        for k, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
            name = self.string(m[k], sub(k)) if k in m else default
            if name not in TLS_VERSIONS:
                raise self.fail(f"must be one of {', '.join(TLS_VERSIONS)}", sub(k), key_node(k))
            versions[k] = TLS_VERSIONS[name]
        if versions["min_version"] > versions["max_version"]:
            raise self.fail("is above max_version", sub("min_version"), key_node("min_version"))
        ciphers: list[str] = []
        if "cipher_suites" in m:
            for i, name in enumerate(self.strings(m["cipher_suites"], sub("cipher_suites"))):
                if name in CIPHER_SUITES:
                    ciphers.append(CIPHER_SUITES[name])
                elif name not in TLS13_SUITES:
                    raise self.fail(
                        f"unknown cipher suite {name!r} (Go's names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)",
                        f"{sub('cipher_suites')}[{i}]",
                        m["cipher_suites"],
                    )
        prefer = True
        if "prefer_server_cipher_suites" in m:
            prefer = self.boolean(m["prefer_server_cipher_suites"], sub("prefer_server_cipher_suites"))
        return TLSServerConfig(
            cert_file=files.get("cert_file"),
            key_file=files.get("key_file"),
            cert=inline.get("cert"),
            key=inline.get("key"),
            client_auth_type=auth,
            client_ca_file=files.get("client_ca_file"),
            client_ca=inline.get("client_ca"),
            client_allowed_sans=sans,
            min_version=versions["min_version"],
            max_version=versions["max_version"],
            ciphers=tuple(dict.fromkeys(ciphers)),
            prefer_server_cipher_suites=prefer,
        )


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _go_duration(text: str) -> float | None:
    """Seconds in a Go duration (1m30s, 250ms, 0), or None when it is not one."""
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _GO_DURATION.finditer(text):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return total if pos == len(text) and pos else None


def _reason(e: OSError) -> str:
    """OpenSSL's reason in words (KEY_VALUES_MISMATCH -> key values mismatch), or the OS error and file."""
    if isinstance(e, ssl.SSLError):
        return str(e.reason).replace("_", " ").lower() if e.reason else str(e)
    return f"{e.strerror or e}" + (f" ({e.filename})" if e.filename else "")


def _canonical_san(value: str) -> str:
    """IP addresses compared as addresses (Python spells IPv6 SANs in full, Go compressed)."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return value


@contextmanager
def _pem_files(tls: TLSServerConfig) -> Iterator[tuple[str, str]]:
    """Paths of the certificate and key; inline PEM goes to a private temporary directory for the load."""
    if tls.cert is None and tls.key is None:
        yield str(tls.cert_file), str(tls.key_file)
        return
    with tempfile.TemporaryDirectory(prefix="sanlens-tls-") as tmp:
        paths = []
        for name, text, given in (("cert.pem", tls.cert, tls.cert_file), ("key.pem", tls.key, tls.key_file)):
            if text is None:
                paths.append(str(given))
                continue
            p = Path(tmp) / name
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            paths.append(str(p))
        yield paths[0], paths[1]


# ------------------------------------------------------------------ basic auth and rate limit


class BasicAuth:
    """Checks `Authorization: Basic` against bcrypt hashes.

    bcrypt is slow on purpose, so a success is cached for ``ttl`` seconds as an HMAC of
    (user, hash, password) under a per-process key, compared in constant time; failures
    are never cached. Unknown users are checked against a dummy hash of the same cost so
    timing does not tell which users exist, and one check runs at a time so a flood of
    wrong passwords costs one core, not all of them.
    """

    def __init__(
        self,
        users: Mapping[str, bytes],
        ttl: float = AUTH_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.users = dict(users)
        self.ttl = ttl
        self.clock = clock
        rounds = max((int(h.split(b"$")[2]) for h in self.users.values()), default=10)
        self._dummy = bcrypt.hashpw(secrets.token_bytes(16), bcrypt.gensalt(rounds=rounds))
        self._key = secrets.token_bytes(32)
        self._cache: dict[str, tuple[bytes, float]] = {}
        self._cache_lock = threading.Lock()
        self._bcrypt_lock = threading.Lock()
        self.bcrypt_checks = 0  # how many times bcrypt ran; the tests read it

    def check(self, authorization: str | None) -> bool:
        creds = parse_basic_authorization(authorization)
        if creds is None:
            return False
        user, password = creds
        hashed = self.users.get(user)
        digest = hmac.new(
            self._key, b"\0".join((user.encode(), hashed or self._dummy, password)), hashlib.sha256
        ).digest()
        now = self.clock()
        with self._cache_lock:
            cached = self._cache.get(user)
        if (
            hashed is not None
            and cached is not None
            and cached[1] > now
            and hmac.compare_digest(cached[0], digest)
        ):
            return True
        with self._bcrypt_lock:
            self.bcrypt_checks += 1
            try:
                ok = bcrypt.checkpw(password, hashed or self._dummy)
            except ValueError:  # longer than bcrypt's 72 bytes, or a hash it cannot read
                ok = False
        if not ok or hashed is None:
            return False
        with self._cache_lock:
            self._cache[user] = (digest, now + self.ttl)
        return True


def parse_basic_authorization(header: str | None) -> tuple[str, bytes] | None:
    """(user, password) from an `Authorization: Basic` header, or None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        raw = base64.b64decode(token.strip(), validate=True)
        user_b, sep, password = raw.partition(b":")
        user = user_b.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


class TokenBucket:
    """``rate_limit`` of the web config: one request per interval, bursts up to ``burst``."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self._tokens = float(limit.burst)
        self._at = clock()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        with self._lock:
            now = self.clock()
            self._tokens = min(self.limit.burst, self._tokens + (now - self._at) / self.limit.interval)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            return False


# ------------------------------------------------------------------ the config in force


@dataclass(frozen=True)
class ActiveWeb:
    """What the server applies to a connection: one consistent reading of the file."""

    config: WebConfig
    context: ssl.SSLContext | None
    auth: BasicAuth | None
    limiter: TokenBucket | None


class WebSecurity:
    """The web config file in force, re-read when it or a file it names changes.

    The first load happens in the constructor, so a bad file stops `sanlens serve` before it
    listens. Later loads that fail are logged and leave the previous config in force.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        check_interval: float = RELOAD_CHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.check_interval = check_interval
        self.clock = clock
        self._lock = threading.Lock()
        self._active = self._build(load_web_config(self.path), None)
        self._stamp = self._stamps((self.path, *self._active.config.files()))
        self._next_check = clock() + check_interval

    @property
    def tls(self) -> bool:
        return self.current().context is not None

    def current(self) -> ActiveWeb:
        with self._lock:
            now = self.clock()
            if now < self._next_check:
                return self._active
            self._next_check = now + self.check_interval
            paths = (self.path, *self._active.config.files())
            stamp = self._stamps(paths)
            if stamp == self._stamp:
                return self._active
            try:
                cfg = load_web_config(self.path)
                active = self._build(cfg, self._active)
            except ConfigError as e:
                log.error("%s; still serving with the previous web config", e)
                self._stamp = stamp  # log once per change, not once per connection
                return self._active
            self._active = active
            self._stamp = self._stamps((self.path, *cfg.files()))
            log.info("web config %s reloaded", self.path)
            return active

    @staticmethod
    def _stamps(paths: tuple[Path, ...]) -> tuple[tuple[int, int, int] | None, ...]:
        out: list[tuple[int, int, int] | None] = []
        for p in paths:
            try:
                st = p.stat()  # follows the symlinks a Kubernetes Secret volume swaps
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)

    @staticmethod
    def _build(cfg: WebConfig, previous: ActiveWeb | None) -> ActiveWeb:
        context = cfg.tls.context(cfg.file) if cfg.tls else None
        auth = None
        if cfg.users:
            same = previous is not None and previous.auth is not None and previous.auth.users == cfg.users
            auth = previous.auth if same and previous is not None else BasicAuth(cfg.users)
        limiter = None
        if cfg.rate_limit is not None:
            kept = previous.limiter if previous is not None else None
            limiter = (
                kept if kept is not None and kept.limit == cfg.rate_limit else TokenBucket(cfg.rate_limit)
            )
        return ActiveWeb(cfg, context, auth, limiter)
