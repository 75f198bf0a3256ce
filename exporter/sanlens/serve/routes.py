"""The exporter's endpoints: /metrics, /diagnoses (``?group=incident``), /diagnoses/inputs, /-/healthy,
/-/ready.

What each request is answered with, once ``sanlens.serve.server`` has read it off its connection:
the web config's rate limit and basic auth first, then the route. Slow work (bcrypt, JSON) runs in
the server's small thread pool, never on the event loop; the plain-text body is inflated a piece
at a time as the connection takes it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import h11

from sanlens import __version__
from sanlens.diagnose.attribution import by_incident, incident_order
from sanlens.serve.exposition import Exposition
from sanlens.serve.web_security import ActiveWeb
from sanlens.store import Engine, State

INDEX = """<html><head><title>sanlens</title></head><body><h1>sanlens {version}</h1>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/diagnoses">/diagnoses</a></li>
<li><a href="/diagnoses/inputs">/diagnoses/inputs</a></li>
<li><a href="/-/healthy">/-/healthy</a></li><li><a href="/-/ready">/-/ready</a></li></ul></body></html>"""

MAX_HEAD_BYTES = 16 * 1024
"""A request's line and headers together at most; beyond, 431 (Go's and nginx's limits are larger
but an exporter's clients send a few hundred bytes)."""
MAX_REQUEST_LINE = 8 * 1024
"""A request line (method, target, version) at most; beyond, 414 (nginx's default buffer)."""
MAX_REQUEST_BODY = 64 * 1024
"""A request body at most (no endpoint reads one); beyond, 413."""
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The text format the body is written in (what Prometheus asks for first)."""


class Response:
    """An answer: its body whole, or ``length`` bytes in pieces made as they are written (``stream``,
    given as the length and the pieces)."""

    __slots__ = ("body", "ctype", "headers", "length", "status", "stream")

    def __init__(
        self,
        status: int,
        body: bytes,
        ctype: str,
        headers: dict[str, str] | None = None,
        stream: tuple[int, Iterator[bytes]] | None = None,
    ) -> None:
        self.status, self.body, self.ctype, self.headers = status, body, ctype, headers or {}
        self.length = len(body) if stream is None else stream[0]
        self.stream: Iterator[bytes] | None = None if stream is None else stream[1]


def plain(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    return Response(status, text.encode(), "text/plain; charset=utf-8", headers)


class Routes:
    """Answers requests from the state, the exposition's body and the engine's findings."""

    def __init__(
        self,
        state: State,
        exposition: Exposition,
        engine: Engine | None,
        pool: concurrent.futures.ThreadPoolExecutor,
    ) -> None:
        self.state, self.exposition, self.engine, self.pool = state, exposition, engine, pool

    async def respond(self, request: h11.Request, active: ActiveWeb | None) -> Response:
        extra = dict(active.config.headers) if active is not None else {}
        refused = await self._refused(request, active)
        if refused is not None:
            refused.headers = {**extra, **refused.headers}
            return refused
        if request.method not in (b"GET", b"HEAD"):
            r = plain(405, "method not allowed\n", {"Allow": "GET, HEAD"})
        else:
            r = await self._route(request)
        r.headers = {**extra, **r.headers}
        return r

    async def _refused(self, request: h11.Request, active: ActiveWeb | None) -> Response | None:
        """The web config's rate limit and basic auth: a response when refused, else None."""
        if active is None:
            return None
        if active.limiter is not None and not active.limiter.allow():
            return plain(429, "Too Many Requests\n")
        if active.auth is not None:
            authorization = header(request, b"authorization")
            ok = await self._work(active.auth.check, authorization)  # bcrypt: off the event loop
            if not ok:
                return plain(
                    401, "Unauthorized\n", {"WWW-Authenticate": 'Basic realm="sanlens", charset="UTF-8"'}
                )
        return None

    async def _route(self, request: h11.Request) -> Response:
        path = request.target.split(b"?", 1)[0]
        if path == b"/metrics":
            if "gzip" in (header(request, b"accept-encoding") or ""):
                body = self.exposition.gzip()  # bytes joined: cheaper than a hop to a worker thread
                headers = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
                return Response(200, body, METRICS_CONTENT_TYPE, headers)
            # inflated piece by piece as it is written (Exposition.plain): never whole in memory
            return Response(
                200, b"", METRICS_CONTENT_TYPE, {"Vary": "Accept-Encoding"}, self.exposition.plain()
            )
        if path == b"/diagnoses":
            group = query(request).get("group", "")
            if group not in ("", "incident"):
                return plain(400, "unknown group: /diagnoses takes group=incident or no group\n")
            return Response(200, await self._work(self._diagnoses, group), "application/json")
        if path == b"/diagnoses/inputs":
            return Response(200, await self._work(self._inputs), "application/json")
        if path == b"/-/healthy":
            return Response(200, b"OK\n", "text/plain")
        if path == b"/-/ready":
            if self.state.ready():
                return Response(200, b"ready\n", "text/plain")
            return Response(503, b"not ready: first poll pending\n", "text/plain")
        if path == b"/":
            return Response(200, INDEX.format(version=__version__).encode(), "text/html")
        return Response(404, b"not found\n", "text/plain")

    def _inputs(self) -> bytes:
        """Per target, what its last poll could not read and which diagnoses that starves."""
        snaps, _ = self.state.snapshots_with_stamps()
        doc = {name: {"kind": s.kind, **(s.inputs or {})} for name, s in sorted(snaps.items())}
        return json.dumps(doc, indent=1).encode()

    def _diagnoses(self, group: str = "") -> bytes:
        """The non-ok findings, incident by incident (the worst first), each incident's causes before
        the symptoms they explain: one flat list, or with ``group=incident`` one object per incident."""
        engine = self.engine
        findings = engine.findings() if engine is not None else []
        doc = by_incident(findings) if group == "incident" else incident_order(findings)
        return json.dumps(doc, indent=1).encode()

    async def _work(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)


def unacceptable(request: h11.Request) -> Response | None:
    """The answer to a request that must not be served (then the connection closes), else None."""
    if not request.http_version.startswith(b"1."):  # HTTP/1.x with x > 1 is read as HTTP/1.1
        return plain(505, "HTTP version not supported\n")
    line = len(request.method) + len(request.target) + 10
    if line > MAX_REQUEST_LINE:
        return plain(414, "URI too long\n")
    # h11 bounds a head still arriving; one that arrived whole in a single read is measured here
    if line + sum(len(k) + len(v) + 4 for k, v in request.headers) > MAX_HEAD_BYTES:
        return plain(431, "request header fields too large\n")
    expect = header(request, b"expect")
    if expect is not None and expect.lower() != "100-continue":
        return plain(417, "expectation failed\n")
    length = header(request, b"content-length")
    if length is not None and int(length) > MAX_REQUEST_BODY:  # said up front: no need to read it
        return plain(413, "request too large\n")
    return None


def request_line_too_long(buffered: bytes) -> bool:
    """Whether a head refused as too large is refused for its request line (414, not 431)."""
    end = buffered.lstrip(b"\r\n").find(b"\n")
    return end < 0 or end > MAX_REQUEST_LINE


def query(request: h11.Request) -> dict[str, str]:
    """The request target's query parameters, the last value of each."""
    _, _, q = request.target.partition(b"?")
    return {k: v[-1] for k, v in urllib.parse.parse_qs(q.decode("latin-1")).items()}


def header(request: h11.Request, name: bytes) -> str | None:
    for key, value in request.headers:
        if key == name:
            return value.decode("latin-1")
    return None
