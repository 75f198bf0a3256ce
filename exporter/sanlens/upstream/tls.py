"""TLS verification as the config says, on every request, and TLS failures told in one line.

requests lets ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` replace a Session's
``verify`` (``Session.merge_environment_settings`` only keeps a per-request
value), so ``tls.ca_file`` and ``insecure_skip_verify`` are passed with each
request. With neither set, ``verify=True`` keeps requests' default: the
environment's bundle if one is named, else certifi's.
"""

from __future__ import annotations

import os
import re
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.ssl_ import create_urllib3_context

from sanlens.config import TLSConfig

_ENV_BUNDLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


class Trust:
    """The ``verify`` value of one target and the words for what it trusts."""

    def __init__(self, tls: TLSConfig) -> None:
        self.ca_file = tls.ca_file
        self.insecure = tls.insecure_skip_verify
        self.verify: bool | str = False if self.insecure else (self.ca_file or True)

    def bundle(self) -> str:
        """Which CA bundle a request checks the server against, as requests resolves it."""
        if self.insecure:
            return "none (insecure_skip_verify)"
        if self.ca_file:
            return f"ca_file {self.ca_file}"
        for var in _ENV_BUNDLES:
            if os.environ.get(var):
                return f"{var} {os.environ[var]}"
        return f"the default bundle (certifi) {requests.utils.DEFAULT_CA_BUNDLE_PATH}"

    def explain(self, exc: BaseException) -> str:
        """``why (CA bundle: which)``: one line, for the poll error and the log."""
        return f"{tls_reason(exc)} (CA bundle: {self.bundle()})"


class ContextReuseAdapter(HTTPAdapter):
    """One SSLContext per trust decision, built once and handed to every new connection.

    Left to requests and urllib3, a connection opened with ``verify=False`` or with a CA file
    gets a fresh context, loading the system CAs (~45 ms of CPU) or the CA file each time; a
    cluster that closes idle keep-alive connections between polls makes that a cost of every
    poll. Only requests' own default (``verify=True``, certifi) already shares one context."""

    def __init__(self, **kwargs: Any) -> None:
        # False, or (CA file or directory, its mtime_ns, its size): a CA file replaced on disk gets
        # a new context (and so a new pool) at the next request, as a per-connection load did
        self._contexts: dict[bool | tuple[str, int, int], ssl.SSLContext] = {}
        self._contexts_lock = threading.Lock()
        super().__init__(**kwargs)

    def _context(self, verify: bool | str) -> ssl.SSLContext | None:
        """The shared context of ``verify`` (False or a CA path); None when the path cannot be read,
        which requests then reports in its own words."""
        key: bool | tuple[str, int, int] = False
        if verify is not False:
            try:
                st = os.stat(str(verify))
            except OSError:
                return None
            key = (str(verify), st.st_mtime_ns, st.st_size)
        with self._contexts_lock:
            ctx = self._contexts.get(key)
            if ctx is None:
                if verify is False:
                    ctx = create_urllib3_context(cert_reqs=ssl.CERT_NONE)
                else:
                    ctx = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
                    if os.path.isdir(str(verify)):
                        ctx.load_verify_locations(capath=str(verify))
                    else:
                        ctx.load_verify_locations(cafile=str(verify))
                    # the same path's earlier contents are not trusted any more
                    for old in [k for k in self._contexts if isinstance(k, tuple) and k[0] == str(verify)]:
                        del self._contexts[old]
                self._contexts[key] = ctx
            return ctx

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: bool | str, cert: Any = None
    ) -> Any:
        host, pool = super().build_connection_pool_key_attributes(request, verify, cert)
        shared: dict[str, Any] = dict(pool)
        if host.get("scheme") == "https" and "ssl_context" not in shared and verify is not True:
            ctx = self._context(verify)
            if ctx is not None:
                shared.pop("ca_certs", None)
                shared.pop("ca_cert_dir", None)
                shared["ssl_context"] = ctx
        return host, shared

    def cert_verify(self, conn: Any, url: str, verify: bool | str, cert: Any) -> None:
        super().cert_verify(conn, url, verify, cert)
        if isinstance(verify, str) and conn.conn_kw.get("ssl_context") is not None:
            conn.ca_certs = conn.ca_cert_dir = None  # in the shared context already


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and what it wraps: requests and urllib3 nest the ssl error in args and ``reason``."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo.extend(
            x
            for x in (getattr(e, "reason", None), e.__cause__, e.__context__, *e.args)
            if isinstance(x, BaseException)
        )


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def tls_reason(exc: BaseException) -> str:
    """Why a TLS connection failed: the certificate check's own words when there are some."""
    errors = list(_chain(exc))
    for e in errors:
        if isinstance(e, ssl.SSLCertVerificationError):
            why = e.verify_message or e.reason or "certificate rejected"
            return _one_line(f"certificate verify failed: {why}").rstrip(".")
    for e in errors:
        if isinstance(e, ssl.SSLError):
            return _one_line(f"TLS error: {e.reason or e.strerror or type(e).__name__}")
    for e in errors:
        if isinstance(e, OSError) and str(e).startswith("Could not find"):
            return _one_line(str(e))  # requests: a CA bundle, certificate or key path that does not exist
    return _one_line(f"TLS error: {type(exc).__name__}")
