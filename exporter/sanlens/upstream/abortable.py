"""HTTP connections a poller can cut from another thread.

A read timeout restarts with every byte, so a server that trickles an answer (or stops
half-way and keeps the connection open) would hold an abandoned poll's thread and socket
for as long as it likes. ``AbortableAdapter`` remembers the sockets its pools open;
``abort`` shuts them down, so a stuck read ends at once with a connection error, and
until ``resume`` no request of the abandoned poll is sent or retried; a retry waiting out
its backoff wakes at once.

The same module bounds what a poll reads: ``read_body`` streams an answer and stops at a
byte limit, so a server cannot make the exporter hold an answer of any size, and
``follow`` allows only redirects that stay on the target's origin, so credentials are
never sent to another host.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import weakref
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ReadTimeoutError

from sanlens.errors import SourceError
from sanlens.upstream.tls import ContextReuseAdapter
from sanlens.urls import safe_url


class PollAborted(SourceError):
    """The poll was abandoned (its deadline passed, or the exporter stops): no more requests."""

    def __init__(self) -> None:
        super().__init__("poll abandoned: its connections were closed", reason="deadline")


READ_CHUNK = 64 * 1024
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
"""Same-origin redirects followed per request (a path moved, a trailing slash); more is a loop."""
_DEFAULT_PORTS = {"http": 80, "https": 443}


class ResponseTooLarge(SourceError):
    """An answer larger than the target's ``max_response_bytes`` (or a page above ``max_series``)."""

    reason = "too_large"


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port made explicit: what a redirect may not change."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def follow(resp: requests.Response, start: str, where: str, hops: int) -> str:
    """Where the redirect ``resp`` points, if it stays on the origin of ``start``; else SourceError.

    A redirect elsewhere is refused, not followed: the request carries the target's
    credentials, and another server's answer must not pass for the target's.
    """
    status = resp.status_code
    location = resp.headers.get("Location")
    resp.close()
    if not location:
        raise SourceError(f"{where}: HTTP {status} redirect without a Location", reason="malformed")
    if hops >= MAX_REDIRECTS:
        raise SourceError(
            f"{where}: more than {MAX_REDIRECTS} redirects (a redirect loop?)", reason="malformed"
        )
    to = urljoin(resp.url or start, location)
    scheme = urlsplit(to).scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise SourceError(
            f"{where}: HTTP {status} redirect to a {scheme or 'relative'}: URL", reason="malformed"
        )
    if origin(to) != origin(start):
        raise SourceError(
            f"{where}: HTTP {status} redirect to {safe_url(to)}, another origin: not followed "
            "(credentials go to the configured URL only; configure the URL the server names)",
            reason="redirect",
        )
    return to


class AbortableAdapter(ContextReuseAdapter):
    def __init__(self, **kwargs: Any) -> None:
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._lock = threading.Lock()
        self.aborted = False
        self._woken = threading.Event()  # set by abort: a retry's backoff ends at once
        self.deadline: float | None = None  # time.monotonic() by which the current poll must end
        super().__init__(**kwargs)

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        track = self._track

        class Conn(HTTPConnection):
            def connect(self) -> None:
                super().connect()
                track(self.sock)

        class TLSConn(HTTPSConnection):
            def connect(self) -> None:
                super().connect()
                track(self.sock)

        class Pool(HTTPConnectionPool):
            ConnectionCls = Conn

        class TLSPool(HTTPSConnectionPool):
            ConnectionCls = TLSConn

        self.poolmanager.pool_classes_by_scheme = {"http": Pool, "https": TLSPool}

    def _track(self, sock: socket.socket | None) -> None:
        if sock is not None:
            with self._lock:
                self._sockets.add(sock)

    def check(self) -> None:
        """Raise PollAborted once the poll was abandoned (before a request, before a retry)."""
        if self.aborted:
            raise PollAborted()

    def left(self) -> float | None:
        """Seconds until the current poll's deadline (None: no deadline known)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def pause(self, seconds: float) -> None:
        """Sleep ``seconds`` (a retry's backoff); an abort ends it at once with PollAborted."""
        self._woken.wait(max(seconds, 0.0))
        self.check()

    def read_body(self, resp: requests.Response, limit: int, where: str) -> bytearray:
        """The body of ``resp``, decompressed, at most ``limit`` bytes; the response is closed after.

        A declared Content-Length above the limit fails before a byte is read; an answer
        without one is read in chunks and cut when it passes the limit. Transport faults
        while reading are SourceErrors (a cut poll's, PollAborted).
        """
        declared = resp.headers.get("Content-Length", "").strip()
        buf = bytearray()
        try:
            if declared.isdigit() and int(declared) > limit:
                raise ResponseTooLarge(
                    f"{where}: answer of {int(declared)} bytes exceeds max_response_bytes ({limit})"
                )
            chunks = (
                resp.iter_content(READ_CHUNK) if resp.raw is not None else [resp.content]
            )  # one made in memory
            for chunk in chunks:
                buf += chunk
                if len(buf) > limit:
                    raise ResponseTooLarge(f"{where}: answer exceeds max_response_bytes ({limit}): cut")
        except requests.exceptions.ContentDecodingError:
            self.check()
            raise SourceError(
                f"{where}: the answer does not decode (Content-Encoding)", reason="malformed"
            ) from None
        except requests.exceptions.ChunkedEncodingError:
            self.check()
            raise SourceError(
                f"{where}: the answer ended early (shorter than its Content-Length, or a broken chunk)",
                reason="connection",
            ) from None
        except requests.exceptions.RequestException as e:
            self.check()
            timed_out = isinstance(e, requests.exceptions.Timeout) or any(
                isinstance(a, ReadTimeoutError) for a in e.args
            )
            reason = "timeout" if timed_out else "connection"
            raise SourceError(f"{where}: {reason} while reading the answer", reason=reason) from None
        finally:
            if resp.raw is not None:
                resp.close()  # read to the end: the connection goes back to the pool; cut short: closed
        return buf

    def abort(self) -> None:
        """Cut every connection, in use or idle; requests fail until ``resume``."""
        self.aborted = True
        self._woken.set()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def resume(self, deadline: float | None = None) -> None:
        """A new poll, to end by ``deadline`` (monotonic; None: none known): requests are sent again
        (on fresh connections where the old ones were cut)."""
        self.aborted = False
        self._woken.clear()
        self.deadline = deadline
