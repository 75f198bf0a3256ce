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
from collections.abc import Iterator

import requests

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
