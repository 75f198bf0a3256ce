"""Serving the web config (`sanlens serve --web.config.file`): TLS, basic auth and the rate limit.

The file's model is ``sanlens.config.web``. As in the exporter-toolkit, every endpoint is
protected (the health endpoints too), and the file and the certificates it names are re-read
when they change, so a rotated certificate is served from the next connection on. A broken
edit is logged and the last good config stays in force: a typo never turns authentication off.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import secrets
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import bcrypt

from sanlens.config.load import read_text
from sanlens.config.web import RateLimitFile, TLSFile, WebConfigError, WebFile, parse_web_config
from sanlens.errors import ConfigError

log = logging.getLogger(__name__)

# A successful (user, password) check is remembered this long, so a scrape every few
# seconds pays bcrypt (~60 ms at cost 10) once a minute instead of on every request.
AUTH_CACHE_SECONDS = 60.0
# How often a connection may trigger a look at the files' modification times.
RELOAD_CHECK_SECONDS = 1.0
# client_auth_type -> verify mode (the unverified types are refused by the model).
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}


def load_web_config(path: str | os.PathLike[str]) -> WebFile:
    """Reads and checks the file, including that its certificates and keys load."""
    try:
        text = read_text(path)
    except ConfigError as e:
        raise WebConfigError(e.message, e.path, e.line, e.file, e.hint) from None
    cfg = parse_web_config(text, str(path))
    if cfg.tls is not None:
        tls_context(cfg.tls, str(path))
    return cfg


def tls_context(tls: TLSFile, file: str = "") -> ssl.SSLContext:
    """The server-side SSLContext, every file read now; a bad file is a WebConfigError."""

    def fail(msg: str, key: str) -> WebConfigError:
        return WebConfigError(msg, path=f"tls_server_config.{key}", file=file)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version, ctx.maximum_version = tls.min_version, tls.max_version
    if tls.prefer_server_cipher_suites is not False:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    if tls.ciphers:
        try:
            ctx.set_ciphers(":".join(tls.ciphers))
        except ssl.SSLError as e:
            raise fail(f"OpenSSL accepts none of these suites: {e.reason or e}", "cipher_suites") from None
    try:
        with _pem_files(tls) as (cert_path, key_path):
            ctx.load_cert_chain(cert_path, key_path)
    except OSError as e:  # ssl.SSLError is an OSError
        named = ", ".join(str(p) for p in (tls.cert_file, tls.key_file) if p is not None)
        raise fail(
            f"cannot load the certificate and key{f' ({named})' if named else ''}: {_reason(e)}",
            "cert_file" if tls.cert_file else "cert",
        ) from None
    if tls.client_ca_file is not None or tls.client_ca is not None:
        try:
            ctx.load_verify_locations(
                cafile=str(tls.client_ca_file) if tls.client_ca_file else None, cadata=tls.client_ca
            )
        except OSError as e:
            named = f" ({tls.client_ca_file})" if tls.client_ca_file else ""
            key = "client_ca_file" if tls.client_ca_file is not None else "client_ca"
            raise fail(f"cannot load the client CA{named}: {_reason(e)}", key) from None
    ctx.verify_mode = CLIENT_AUTH[tls.client_auth_type or "NoClientCert"]
    return ctx


def _reason(e: OSError) -> str:
    """OpenSSL's reason in words (KEY_VALUES_MISMATCH -> key values mismatch), or the OS error and file."""
    if isinstance(e, ssl.SSLError):
        return str(e.reason).replace("_", " ").lower() if e.reason else str(e)
    return f"{e.strerror or e}" + (f" ({e.filename})" if e.filename else "")


@contextmanager
def _pem_files(tls: TLSFile) -> Iterator[tuple[str, str]]:
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

    def __init__(self, limit: RateLimitFile, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.interval, self.burst = limit.interval or 0.0, limit.burst or 0
        self.clock = clock
        self._tokens = float(self.burst)
        self._at = clock()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) / self.interval)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            return False


@dataclass(frozen=True)
class ActiveWeb:
    """What the server applies to a connection: one consistent reading of the file."""

    config: WebFile
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
            stamp = self._stamps((self.path, *self._active.config.files()))
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

    def _build(self, cfg: WebFile, previous: ActiveWeb | None) -> ActiveWeb:
        """The config in force; the users' cache and the bucket's tokens carry over when unchanged."""
        context = tls_context(cfg.tls, str(self.path)) if cfg.tls else None
        users, kept_auth = cfg.users, previous.auth if previous is not None else None
        auth = (
            (kept_auth if kept_auth is not None and kept_auth.users == users else BasicAuth(users))
            if users
            else None
        )
        limit, kept = cfg.rate_limit, previous.limiter if previous is not None else None
        limiter = None
        if limit is not None and limit.interval:
            limiter = kept if kept is not None and kept.limit == limit else TokenBucket(limit)
        return ActiveWeb(cfg, context, auth, limiter)
