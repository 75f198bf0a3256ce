"""ONTAP REST client: one bounded session per cluster, pagination, typed errors, safe retries.

Retries are for GETs only, on connection errors, 429 and 5xx, with exponential
backoff and full jitter: a flapping cluster must not be hammered. A 403, and a
401 with an unchanged password, are never retried here; the poller's own backoff
paces the next attempt, so a wrong password cannot become a retry storm (or lock
the account). A 401 right after the ``password_file`` changed is retried once with
the new password (``sanlens.credentials``), at most once per poll interval.

TLS settings go with every request (``sanlens.trust``), so a CA bundle named in
the environment cannot replace ``tls.ca_file`` or ``insecure_skip_verify``.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urljoin

import orjson
import requests

from sanlens import __version__
from sanlens.abortable import AbortableAdapter
from sanlens.config import OntapTarget
from sanlens.credentials import AuthRetry, Secret, SecretBasicAuth
from sanlens.errors import SourceError
from sanlens.model import OntapVersion
from sanlens.trust import Trust

log = logging.getLogger(__name__)

POOL_SIZE = 4
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class OntapError(SourceError):
    """An ONTAP error body ``{"error": {"message", "code"}}`` or an unexpected HTTP status."""

    reason = "api"

    def __init__(self, status: int, message: str, code: str = "", path: str = "") -> None:
        self.status = status
        self.code = code
        self.path = path
        detail = f"HTTP {status}" + (f" code {code}" if code else "")
        super().__init__(f"{path}: {detail}: {message}" if path else f"{detail}: {message}")


class OntapNotFound(OntapError):
    reason = "not_found"


class OntapAuthError(OntapError):
    reason = "auth"


class OntapMalformed(SourceError):
    reason = "malformed"


class OntapPaginationLoop(SourceError):
    reason = "pagination_loop"


def _error_from(resp: requests.Response, path: str, check: str = "the username and password") -> OntapError:
    message, code = resp.reason or "error", ""
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        err = body["error"]
        message = str(err.get("message") or message)
        code = "" if err.get("code") is None else str(err.get("code"))  # ONTAP sends str or int
    if resp.status_code in (401, 403):
        what = "authentication failed" if resp.status_code == 401 else "permission denied"
        return OntapAuthError(resp.status_code, f"{what} (check {check}): {message}", code, path)
    if resp.status_code == 404:
        return OntapNotFound(404, message, code, path)
    return OntapError(resp.status_code, message, code, path)


def _what_to_check(target: OntapTarget) -> str:
    """Where the credential of a refused request came from, for the error message (never its value)."""
    auth = target.auth
    if auth.cert_file:
        return "the client certificate and its role"
    for key in ("password_file", "password_env", "password"):
        if getattr(auth, key):
            return f"the username and {key}"
    return "the username and password"


class OntapClient:
    def __init__(self, target: OntapTarget, retries: int = 3, backoff: float = 0.5) -> None:
        self.target = target
        self.base = target.url.rstrip("/") + "/"
        self.retries = retries
        self.backoff = backoff
        self.timeout = (float(target.connect_timeout), float(target.read_timeout))
        s = requests.Session()
        self.adapter = adapter = AbortableAdapter(pool_connections=1, pool_maxsize=POOL_SIZE, max_retries=0)
        s.mount("https://", adapter)
        s.mount("http://", adapter)
        s.headers.update({"Accept": "application/hal+json", "User-Agent": f"sanlens/{__version__}"})
        auth = target.auth
        self.secret: Secret | None = None
        if auth.cert_file:
            s.cert = (auth.cert_file, auth.key_file) if auth.key_file else auth.cert_file
        elif auth.username:
            self.secret = Secret(auth, target.name)
            s.auth = SecretBasicAuth(auth.username, self.secret)
        self.auth_retry = AuthRetry(self.secret, spacing=float(target.poll_interval))
        self._check = _what_to_check(target)
        self.trust = Trust(target.tls)
        if self.trust.insecure:
            log.warning("%s: TLS certificate verification is disabled (insecure_skip_verify)", target.name)
            import urllib3

            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        s.verify = self.trust.verify  # also on each request: the environment may override the session's
        self.session = s

    def close(self) -> None:
        self.session.close()

    def abort(self) -> None:
        """Cut every request in flight and refuse new ones until ``resume`` (an abandoned poll)."""
        self.adapter.abort()

    def resume(self) -> None:
        self.adapter.resume()

    # ------------------------------------------------------------------ requests
    def get(self, path: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """GET one document; retries transient failures, raises typed errors."""
        url = urljoin(self.base, path.lstrip("/"))
        shown = path.split("?", 1)[0]
        attempt = 0
        reauthed = False
        while True:
            self.adapter.check()
            self.auth_retry.before_request()
            try:
                resp = self.session.get(url, params=params, timeout=self.timeout, verify=self.trust.verify)
            except requests.exceptions.SSLError as e:
                raise SourceError(f"{shown}: {self.trust.explain(e)}", reason="tls") from None
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as e:
                self.adapter.check()  # cut on purpose: no retry
                if attempt >= self.retries:
                    reason = "timeout" if isinstance(e, requests.exceptions.Timeout) else "connection"
                    raise SourceError(
                        f"{shown}: {reason} after {attempt + 1} attempts", reason=reason
                    ) from None
                self._sleep(attempt, None)
                attempt += 1
                continue
            except requests.exceptions.RequestException:
                self.adapter.check()
                raise
            except OSError as e:  # requests: a CA bundle, client certificate or key path that does not exist
                raise SourceError(f"{shown}: {self.trust.explain(e)}", reason="tls") from None
            if resp.status_code == 401 and not reauthed and self.auth_retry.after_refusal():
                reauthed = True  # the password file changed since this request was sent: once more
                continue
            if resp.status_code in RETRY_STATUS and attempt < self.retries:
                self._sleep(attempt, resp.headers.get("Retry-After"))
                attempt += 1
                continue
            if resp.status_code >= 400:
                raise _error_from(resp, shown, self._check)
            try:
                doc = orjson.loads(resp.content)  # 10k-row counter pages: ~4x the stdlib decoder
            except orjson.JSONDecodeError:
                raise OntapMalformed(f"{shown}: response is not valid JSON") from None
            if not isinstance(doc, dict):
                raise OntapMalformed(f"{shown}: expected a JSON object, got {type(doc).__name__}")
            return doc

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = random.uniform(0, self.backoff * (2**attempt))  # full jitter
        if retry_after and retry_after.isdigit():
            delay = max(delay, min(float(retry_after), 30.0))
        time.sleep(delay)

    def records(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every record of a collection, following ``_links.next``; a repeating next link is an error."""
        for page in self.pages(path, params):
            yield from page

    def pages(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[list[dict[str, Any]]]:
        """The records of a collection page by page, so a caller can convert and drop each page.

        At 10,000 LUNs a counter table's decoded JSON is ~10x the rows made from it; holding
        one page at a time instead of the whole table keeps a poll's peak memory down.
        """
        query: dict[str, Any] | None = {"max_records": self.target.max_records, **(params or {})}
        seen: set[str] = set()
        next_path: str = path
        while True:
            doc = self.get(next_path, query)
            recs = doc.get("records")
            if not isinstance(recs, list):
                raise OntapMalformed(f"{path}: response has no 'records' list")
            yield recs
            del recs
            href = ((doc.get("_links") or {}).get("next") or {}).get("href")
            if not href:
                return
            if href in seen:
                raise OntapPaginationLoop(f"{path}: the next link repeats ({len(seen)} pages read)")
            seen.add(href)
            next_path, query = href, None  # the next link carries the whole query

    def version(self) -> OntapVersion:
        doc = self.get("/api/cluster", {"fields": "name,uuid,version"})
        v = doc.get("version")
        if not isinstance(v, Mapping):
            raise OntapMalformed("/api/cluster: no version object")
        try:
            return OntapVersion(
                int(v["generation"]), int(v["major"]), int(v["minor"]), str(v.get("full", ""))
            )
        except (KeyError, TypeError, ValueError):
            raise OntapMalformed("/api/cluster: version lacks generation/major/minor") from None
