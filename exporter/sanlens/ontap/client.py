"""ONTAP REST client: one bounded session per cluster, pagination, typed errors, safe retries.

Retries are for GETs only, on connection errors, 429 and 5xx, with exponential
backoff and full jitter: a flapping cluster must not be hammered. A retry never
outlives its poll: a backoff (or a ``Retry-After``, capped) that would end past the
poll's deadline gives up at once with the last error, so a 503 is counted as ``api``
with its status rather than as ``deadline``, and an abort wakes a waiting retry. A 403, and a
401 with an unchanged password, are never retried here; the poller's own backoff
paces the next attempt, so a wrong password cannot become a retry storm (or lock
the account). A 401 right after the ``password_file`` changed is retried once with
the new password (``sanlens.upstream.credentials``), at most once per poll interval.

Every answer is streamed and bounded by ``max_response_bytes`` (``too_large``); a
redirect is followed only within the cluster's own origin; records that are not JSON
objects, and a ``_links`` that is not one, are ``malformed``.

TLS settings go with every request (``sanlens.upstream.tls``), so a CA bundle named in
the environment cannot replace ``tls.ca_file`` or ``insecure_skip_verify``.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol, TypeVar, cast
from urllib.parse import urljoin

import orjson
import requests

from sanlens import __version__
from sanlens.config import OntapTarget
from sanlens.errors import SourceError
from sanlens.model import OntapVersion
from sanlens.ontap.client_errors import (
    OntapAuthError,
    OntapError,
    OntapMalformed,
    OntapNotFound,
    OntapPaginationLoop,
)
from sanlens.source import poll_budget
from sanlens.upstream.abortable import REDIRECT_STATUS, AbortableAdapter, PollAborted, follow
from sanlens.upstream.credentials import AuthRetry, Secret, SecretBasicAuth
from sanlens.upstream.tls import Trust

log = logging.getLogger(__name__)

POOL_SIZE = 4
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
RETRY_AFTER_MAX_S = 10.0
"""Longest ``Retry-After`` honoured between two attempts: a server asking for more gets the
poll's error now, and the next poll (one interval on) asks again."""
RETRY_HEADROOM = 0.1
"""Share of the poll's time budget (at most 1 s) a retry must leave before the deadline to be
worth sending: one that would be cut there only turns the server's error into ``deadline``."""
MAX_ERROR_BODY = 64 * 1024
"""An error answer's body is read this far for its message; a longer one is not parsed."""


def _error_from(
    resp: requests.Response, body: bytes, path: str, check: str = "the username and password"
) -> OntapError:
    message, code = resp.reason or "error", ""
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, Mapping) and isinstance(doc.get("error"), Mapping):
        err = doc["error"]
        message = str(err.get("message") or message)
        code = "" if err.get("code") is None else str(err.get("code"))  # ONTAP sends str or int
    if resp.status_code in (401, 403):
        what = "authentication failed" if resp.status_code == 401 else "permission denied"
        return OntapAuthError(resp.status_code, f"{what} (check {check}): {message}", code, path)
    if resp.status_code == 404:
        return OntapNotFound(404, message, code, path)
    return OntapError(resp.status_code, message, code, path)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date); None if unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None
    seconds = when.timestamp() - (time.time() if now is None else now)
    return max(seconds, 0.0) if math.isfinite(seconds) else None


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
        self.max_bytes = int(target.max_response_bytes)
        self.headroom = 0.0  # seconds a retry must leave before the poll's deadline (see resume)
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

    def resume(self, deadline: float | None = None) -> None:
        """A new poll: requests are sent again, and no retry waits past ``deadline`` (monotonic).

        By default that is the deadline the poller gives a poll of this target's interval
        (``sanlens.runtime.poller``), counted from now: the poll calls this as it starts.
        """
        budget = poll_budget(float(self.target.poll_interval))
        if deadline is None:
            deadline = time.monotonic() + budget
        else:
            budget = max(deadline - time.monotonic(), 0.0)
        self.headroom = min(budget * RETRY_HEADROOM, 1.0)
        self.adapter.resume(deadline)

    # ------------------------------------------------------------------ requests
    def get(self, path: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """GET one document; retries transient failures, raises typed errors."""
        return _json(self.body(path, params), path)

    def body(self, path: str, params: Mapping[str, Any] | None = None) -> bytearray:
        """GET one answer's bytes, bounded; retries transient failures, raises typed errors."""
        url = urljoin(self.base, path.lstrip("/"))
        shown = path.split("?", 1)[0]
        attempt = 0
        hops = 0
        reauthed = False
        while True:
            self.adapter.check()
            self.auth_retry.before_request()
            try:
                resp = self.session.get(
                    url,
                    params=params,
                    timeout=self.timeout,
                    verify=self.trust.verify,
                    stream=True,  # read_body bounds it
                    allow_redirects=False,  # follow() decides
                )
            except requests.exceptions.SSLError as e:
                raise SourceError(f"{shown}: {self.trust.explain(e)}", reason="tls") from None
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as e:
                self.adapter.check()  # cut on purpose: no retry
                reason = "timeout" if isinstance(e, requests.exceptions.Timeout) else "connection"
                failed = SourceError(f"{shown}: {reason} after {attempt + 1} attempts", reason=reason)
                self._before_retry(attempt, None, failed)
                attempt += 1
                continue
            except requests.exceptions.RequestException as e:  # e.g. an unusable URL or header
                self.adapter.check()
                raise SourceError(f"{shown}: {type(e).__name__}", reason="connection") from None
            except OSError as e:  # requests: a CA bundle, client certificate or key path that does not exist
                raise SourceError(f"{shown}: {self.trust.explain(e)}", reason="tls") from None
            if resp.status_code in REDIRECT_STATUS:
                url, params = follow(resp, self.base, shown, hops), None  # the Location carries the query
                hops += 1
                continue
            if resp.status_code == 401 and not reauthed and self.auth_retry.after_refusal():
                resp.close()
                reauthed = True  # the password file changed since this request was sent: once more
                continue
            if resp.status_code in RETRY_STATUS:
                error = self._error(resp, shown)
                self._before_retry(attempt, resp.headers.get("Retry-After"), error)
                attempt += 1
                continue
            if resp.status_code >= 400:
                raise self._error(resp, shown)
            return self.adapter.read_body(resp, self.max_bytes, shown)

    def _error(self, resp: requests.Response, shown: str) -> OntapError:
        """The typed error of a failed answer, its message from a bounded read of the body."""
        try:
            body = bytes(self.adapter.read_body(resp, MAX_ERROR_BODY, shown))
        except PollAborted:
            raise
        except SourceError:  # too long or cut: the status says enough
            body = b""
        return _error_from(resp, body, shown, self._check)

    def _before_retry(self, attempt: int, retry_after_header: str | None, error: SourceError) -> None:
        """Wait out the backoff before attempt ``attempt + 1``, or raise ``error`` when there is none.

        No retries left, or a wait that would leave no time before the poll's deadline: the
        last error is the poll's. An abort (the deadline passed, the exporter stops) ends the
        wait at once.
        """
        if attempt >= self.retries:
            raise error
        delay = random.uniform(0, self.backoff * (2**attempt))  # full jitter
        asked = retry_after(retry_after_header)
        if asked is not None:
            delay = max(delay, min(asked, RETRY_AFTER_MAX_S))
        left = self.adapter.left()
        if left is not None and delay + self.headroom >= left:
            log.debug("%s: no retry, %.1fs to the poll's deadline: %s", self.target.name, left, error)
            raise error
        self.adapter.pause(delay)

    def records(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every record of a collection, following ``_links.next``; a repeating next link is an error."""
        for page in self.pages(path, params):
            yield from page

    def pages(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[list[dict[str, Any]]]:
        """The records of a collection page by page, so a caller can convert and drop each page.

        At 10,000 LUNs a counter table's decoded JSON is ~10x the rows made from it; holding
        one page at a time instead of the whole table keeps a poll's peak memory down.
        """
        # _untyped reads no page: every page is its records
        yield from cast("Iterator[list[dict[str, Any]]]", self.typed_pages(path, params, _untyped))

    def typed_pages(
        self, path: str, params: Mapping[str, Any] | None, typed: Callable[[bytearray], P | None]
    ) -> Iterator[P | list[dict[str, Any]]]:
        """Each page as ``typed`` reads it, or as its records (dicts) where ``typed`` gives None."""
        query: dict[str, Any] | None = {"max_records": self.target.max_records, **(params or {})}
        seen: set[str] = set()
        next_path: str = path
        while True:
            body = self.body(next_path, query)
            page = typed(body)
            if page is not None:
                del body
                href = page.next_href()
                yield page
                del page
            else:
                doc = _json(body, next_path)
                del body
                recs = doc.get("records")
                if not isinstance(recs, list):
                    raise OntapMalformed(f"{path}: response has no 'records' list")
                for i, rec in enumerate(recs):
                    if not isinstance(rec, dict):
                        raise OntapMalformed(f"{path}: records[{i}] is {_kind(rec)}, not an object")
                href = _next_href(doc, path)
                del doc
                yield recs
                del recs
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


class Paged(Protocol):
    """A page read by a typed reader: where the collection goes on."""

    def next_href(self) -> str | None: ...


P = TypeVar("P", bound=Paged)


def _untyped(body: bytearray) -> Paged | None:
    return None


def _json(body: bytes | bytearray, path: str) -> dict[str, Any]:
    """An answer's JSON object; anything else is ``malformed``."""
    shown = path.split("?", 1)[0]
    try:
        doc = orjson.loads(body)  # 10k-row counter pages: ~4x the stdlib decoder
    except orjson.JSONDecodeError:
        raise OntapMalformed(f"{shown}: response is not valid JSON") from None
    if not isinstance(doc, dict):
        raise OntapMalformed(f"{shown}: expected a JSON object, got {type(doc).__name__}")
    return doc


def _kind(value: object) -> str:
    """A JSON value's type as a message names it."""
    return "null" if value is None else type(value).__name__


def _next_href(doc: Mapping[str, Any], path: str) -> str | None:
    """``_links.next.href`` of a page, None on the last one; a link of the wrong shape is malformed."""
    links = doc.get("_links")
    if links is None:
        return None
    if not isinstance(links, Mapping):
        raise OntapMalformed(f"{path}: '_links' is {_kind(links)}, not an object")
    nxt = links.get("next")
    if nxt is None:
        return None
    if not isinstance(nxt, Mapping):
        raise OntapMalformed(f"{path}: '_links.next' is {_kind(nxt)}, not an object")
    href = nxt.get("href")
    if href is None or href == "":
        return None
    if not isinstance(href, str):
        raise OntapMalformed(f"{path}: '_links.next.href' is {_kind(href)}, not a string")
    return href
