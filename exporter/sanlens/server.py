"""HTTP endpoints: /metrics, /diagnoses, /-/healthy, /-/ready.

One asyncio event loop serves every connection, so an idle keep-alive connection or a
client that trickles its request costs a socket and a coroutine, never a thread; h11
(the HTTP/1.1 state machine httpx and uvicorn build on) does the protocol: keep-alive,
pipelining rules, header size limits. Work that can take a while (bcrypt, JSON, the
plain-text body) runs in a small bounded thread pool. A /metrics response is the
exposition's cached body, so a scrape copies bytes and never renders.

Connections are bounded, and a new one is never refused while an idle one can make room
(``sanlens.connections``), so a flood of silent or slow sockets cannot lock Prometheus or a
health probe out; silent ones are closed after ``FIRST_BYTE_TIMEOUT`` anyway.

With a web config (``sanlens.web_config``) every endpoint is served over TLS and/or behind
basic auth, as the Prometheus exporter-toolkit does: the health endpoints too. The TLS
settings are read per connection, so rotated certificates apply without a restart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import json
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import h11

from sanlens import __version__
from sanlens.connections import (
    ANSWERING,
    CLOSING,
    FRESH,
    IDLE,
    READING,
    Connection,
    ConnectionTable,
    fd_cap,
    peer_address,
)
from sanlens.exposition import Exposition
from sanlens.state import State
from sanlens.web_config import ActiveWeb, WebSecurity

log = logging.getLogger(__name__)

INDEX = """<html><head><title>sanlens</title></head><body><h1>sanlens {version}</h1>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/diagnoses">/diagnoses</a></li>
<li><a href="/diagnoses/inputs">/diagnoses/inputs</a></li>
<li><a href="/-/healthy">/-/healthy</a></li><li><a href="/-/ready">/-/ready</a></li></ul></body></html>"""

HANDSHAKE_TIMEOUT = 10.0
"""A TLS handshake that takes longer than this is dropped, so half-open sockets do not pile up."""
FIRST_BYTE_TIMEOUT = 10.0
"""A new connection must start its first request within this: clients send theirs at once,
and a socket that stays silent would otherwise hold a slot for the whole ``IDLE_TIMEOUT``."""
REQUEST_TIMEOUT = 10.0
"""A request's line and headers must arrive within this, however slowly they trickle."""
IDLE_TIMEOUT = 120.0
"""A keep-alive connection idle this long after a response is closed: longer than any sane
scrape interval, so Prometheus reuses its connection (Go's client keeps idle ones for 90 s)."""
WRITE_TIMEOUT = 30.0
"""A client that does not read its response within this loses the connection."""
LINGER_TIMEOUT = 2.0
"""After an error answer, what the client still sends is read and dropped for up to this
before closing: closing with unread bytes resets the connection, and the reset can destroy
the answer before the client reads it."""
MAX_CONNECTIONS = 512
"""Open connections at most, and at most half the process's file descriptor limit, so the
pollers always find one. An exporter's clients hold a few each (Prometheus, a proxy, probes);
at the bound the least useful idle connection is closed to make room (see the module doc)
and a new one is refused only when every open one is answering a request."""
MAX_PER_PEER = 128
"""Open connections from one address at most: at its bound a peer's own idle connections make
room, so one host flooding the port never closes another host's keep-alive connections."""
BACKLOG = 1024
"""Listen backlog: a burst of connections waits in the kernel instead of being refused."""
WORKERS = 4
"""Threads for the work done off the event loop; more would only contend for the GIL."""
MAX_HEAD_BYTES = 16 * 1024
"""A request's line and headers together at most; beyond, 431 (Go's and nginx's limits are larger
but an exporter's clients send a few hundred bytes)."""
MAX_REQUEST_LINE = 8 * 1024
"""A request line (method, target, version) at most; beyond, 414 (nginx's default buffer)."""
_MAX_REQUEST_BODY = 64 * 1024

# What Go's servers answer when plain HTTP reaches a TLS port: clearer than a reset.
PLAIN_HTTP_ON_TLS = (
    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"Client sent an HTTP request to an HTTPS server.\n"
)
_TLS_HANDSHAKE_RECORD = b"\x16"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The text format the body is written in (what Prometheus asks for first)."""


def parse_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    return (host or "0.0.0.0"), int(port)


def _bind(listen: str) -> socket.socket:
    host, port = parse_listen(listen)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=BACKLOG)
    sock.setblocking(False)
    return sock


class _Response:
    __slots__ = ("body", "ctype", "headers", "status")

    def __init__(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.ctype, self.headers = status, body, ctype, headers or {}


def _text(status: int, text: str, headers: dict[str, str] | None = None) -> _Response:
    return _Response(status, text.encode(), "text/plain; charset=utf-8", headers)


class ExporterServer:
    """The exporter's HTTP server: an event loop in one thread, a renderer in another.

    ``web`` adds TLS and basic auth. The socket is bound here, so a taken port fails at
    construction with an ``OSError``, before any poller starts.
    """

    def __init__(self, state: State, listen: str, web: WebSecurity | None = None) -> None:
        self.state = state
        self.web = web
        self.sock = _bind(listen)
        self.exposition = Exposition(state, release_series=True)
        self.pool = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="http-work")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=self._run, name="http", daemon=True)
        self.renderer = threading.Thread(target=self._render_loop, name="render", daemon=True)
        self._stop = threading.Event()
        self._closed = threading.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.table = ConnectionTable()
        self.connections = 0

    @property
    def evicted(self) -> int:
        """Connections closed to make room for a new one."""
        return self.table.evicted

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    @property
    def scheme(self) -> str:
        return "https" if self.web is not None and self.web.tls else "http"

    def secure(self, web: WebSecurity) -> None:
        """Serves every endpoint with the web config; only before ``start``, so no request is ever served without it."""
        if self.thread.is_alive():
            raise RuntimeError("the web config must be set before the server starts")
        self.web = web

    def start(self) -> None:
        self.exposition.refresh()  # a body exists before the first scrape can arrive
        self.renderer.start()
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        loop = self.loop
        if loop is not None and self.thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._shutdown)
            self._closed.wait(2.0)
        with contextlib.suppress(OSError):
            self.sock.close()
        self.pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------ rendering
    def _render_loop(self) -> None:
        """Rebuilds the body after every change, so scrapes find it ready and polls never wait."""
        seen = -1
        while not self._stop.is_set():
            try:
                self.state.expire()  # a target failing for too long: its data series go
            except Exception:
                log.exception("expiring stale targets failed")
            generation = self.state.wait_for_change(seen, 0.5)
            if generation == seen:
                continue
            try:
                self.exposition.refresh()
                seen = generation
            except Exception:  # the previous body keeps being served
                log.exception("rendering /metrics failed")
                self._stop.wait(1.0)

    # ------------------------------------------------------------ the event loop
    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        loop.set_exception_handler(_quiet_exceptions)
        try:
            loop.run_until_complete(self._accept())
        finally:
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                loop.run_until_complete(asyncio.gather(*self._tasks, return_exceptions=True))
            loop.close()
            self._closed.set()

    def _shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._accepting is not None:
            self._accepting.cancel()

    _accepting: asyncio.Task[Any] | None = None

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        self._accepting = asyncio.current_task()
        if self._stop.is_set():
            return
        cap = fd_cap()
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                try:
                    conn, peer = await loop.sock_accept(self.sock)
                except OSError as e:  # EMFILE and the like: back off, keep serving the open ones
                    log.warning("accept failed: %s", e)
                    if e.errno in (errno.EMFILE, errno.ENFILE):
                        self.table.make_room(
                            None, len(self.table), MAX_PER_PEER
                        )  # one descriptor for the next
                    await asyncio.sleep(0.1)
                    continue
                record = Connection(peer_address(peer), conn)
                if not self.table.make_room(record.peer, min(MAX_CONNECTIONS, cap), MAX_PER_PEER):
                    log.debug("refused %s: every connection is answering a request", peer)
                    conn.close()
                    continue
                task = loop.create_task(self._connection(conn, peer, record))
                self.table.add(record, task)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                # let the new connection read what it was sent before more are accepted (an
                # accept that finds one waiting does not yield), so a burst cannot push it out
                await asyncio.sleep(0)

    async def _connection(self, conn: socket.socket, peer: Any, record: Connection) -> None:
        record.started = True
        conn.setblocking(False)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        active = self.web.current() if self.web is not None else None
        writer: asyncio.StreamWriter | None = None
        self.connections += 1
        try:
            streams = await self._open(conn, peer, active, record)
            if streams is None:
                return
            reader, writer = streams
            await self._serve(reader, writer, active, record)
        except (OSError, EOFError, TimeoutError, ssl.SSLError, h11.ProtocolError) as e:
            log.debug("connection from %s: %s", peer, e)
        finally:
            if writer is not None:
                writer.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(writer.wait_closed(), 1.0)
            else:
                conn.close()

    async def _open(
        self, conn: socket.socket, peer: Any, active: ActiveWeb | None, record: Connection
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The connection's streams, after the TLS handshake when the web config asks for TLS."""
        loop = asyncio.get_running_loop()
        context = active.context if active is not None else None
        if context is not None:
            first = await asyncio.wait_for(_peek(loop, conn), min(HANDSHAKE_TIMEOUT, FIRST_BYTE_TIMEOUT))
            if not first:
                return None
            record.enter(READING)
            if first != _TLS_HANDSHAKE_RECORD:
                with contextlib.suppress(OSError, TimeoutError):
                    await asyncio.wait_for(loop.sock_sendall(conn, PLAIN_HTTP_ON_TLS), WRITE_TIMEOUT)
                    conn.shutdown(socket.SHUT_WR)
                    # read what the client sent, so closing does not reset the answer away
                    await asyncio.wait_for(_drain(loop, conn), 1.0)
                return None
        reader = asyncio.StreamReader(limit=MAX_HEAD_BYTES, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        try:
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol,
                conn,
                ssl=context,
                ssl_handshake_timeout=HANDSHAKE_TIMEOUT if context else None,
            )
        except (OSError, ssl.SSLError) as e:  # no client certificate, an old TLS version...
            log.debug("TLS handshake with %s failed: %s", peer, e)
            return None
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        tls = active.config.tls if context is not None and active is not None else None
        if tls is not None and not tls.allows(transport.get_extra_info("peercert")):
            log.debug("client certificate of %s has none of client_allowed_sans", peer)
            writer.close()
            return None
        return reader, writer

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        active: ActiveWeb | None,
        record: Connection,
    ) -> None:
        """Requests on one connection, for as long as the client keeps it alive."""
        h = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        loop = asyncio.get_running_loop()
        while True:
            # a new connection must speak soon; between requests it may idle; once a request
            # starts, its head has a deadline
            record.enter(IDLE if record.served else FRESH)
            deadline = loop.time() + (IDLE_TIMEOUT if record.served else FIRST_BYTE_TIMEOUT)
            started = False
            request: h11.Request | None = None
            body_bytes = 0
            while True:
                try:
                    event = h.next_event()
                except h11.RemoteProtocolError as e:  # not HTTP, or a head too large
                    status = e.error_status_hint
                    if status == 431 and _request_line_too_long(h.trailing_data[0]):
                        status = 414
                    await _answer_and_close(writer, status)
                    await _linger(reader, writer, record)
                    return
                if event is h11.NEED_DATA:
                    if h.they_are_waiting_for_100_continue:  # the client waits for this before its body
                        writer.write(
                            h.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))
                            or b""
                        )
                        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)
                    try:
                        data = await asyncio.wait_for(reader.read(65536), max(deadline - loop.time(), 0.0))
                    except TimeoutError:
                        if started:  # a head that trickles in: answered, then dropped
                            await self._send(
                                writer, h, _text(408, "request timeout\n"), head_only=False, close=True
                            )
                            await _linger(reader, writer, record)
                        return
                    if data and not started:
                        started, deadline = True, loop.time() + REQUEST_TIMEOUT
                        record.enter(READING)
                    h.receive_data(data)
                    continue
                if isinstance(event, h11.Request):
                    request = event
                    started = True
                    refused = _unacceptable(event)
                    if refused is not None:
                        await self._send(writer, h, refused, head_only=False, close=True)
                        await _linger(reader, writer, record)
                        return
                elif isinstance(event, h11.Data):
                    body_bytes += len(event.data)
                    if body_bytes > _MAX_REQUEST_BODY:
                        await self._send(
                            writer, h, _text(413, "request too large\n"), head_only=False, close=True
                        )
                        await _linger(reader, writer, record)
                        return
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    return
            assert request is not None
            record.enter(ANSWERING)
            response = await self._respond(request, active)
            await self._send(writer, h, response, head_only=request.method == b"HEAD", close=False)
            record.served += 1
            if h.our_state is h11.MUST_CLOSE or h.their_state is h11.MUST_CLOSE:
                return
            h.start_next_cycle()

    async def _send(
        self, writer: asyncio.StreamWriter, h: h11.Connection, r: _Response, *, head_only: bool, close: bool
    ) -> None:
        headers = [
            ("Server", f"sanlens/{__version__}"),
            ("Content-Type", r.ctype),
            ("Content-Length", str(len(r.body))),
            *r.headers.items(),
        ]
        if close:
            headers.append(("Connection", "close"))
        try:
            data = h.send(h11.Response(status_code=r.status, headers=headers)) or b""
        except h11.LocalProtocolError:  # e.g. the request was unusable: answer plainly and close
            await _answer_and_close(writer, r.status)
            return
        writer.write(data)
        if not head_only and r.body:
            writer.write(h.send(h11.Data(data=r.body)) or b"")
        writer.write(h.send(h11.EndOfMessage()) or b"")
        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)

    # ------------------------------------------------------------ the endpoints
    async def _respond(self, request: h11.Request, active: ActiveWeb | None) -> _Response:
        extra = dict(active.config.headers) if active is not None else {}
        refused = await self._refused(request, active)
        if refused is not None:
            refused.headers = {**extra, **refused.headers}
            return refused
        if request.method not in (b"GET", b"HEAD"):
            r = _text(405, "method not allowed\n", {"Allow": "GET, HEAD"})
        else:
            r = await self._route(request)
        r.headers = {**extra, **r.headers}
        return r

    async def _refused(self, request: h11.Request, active: ActiveWeb | None) -> _Response | None:
        """The web config's rate limit and basic auth: a response when refused, else None."""
        if active is None:
            return None
        if active.limiter is not None and not active.limiter.allow():
            return _text(429, "Too Many Requests\n")
        if active.auth is not None:
            authorization = _header(request, b"authorization")
            ok = await self._work(active.auth.check, authorization)  # bcrypt: off the event loop
            if not ok:
                return _text(
                    401, "Unauthorized\n", {"WWW-Authenticate": 'Basic realm="sanlens", charset="UTF-8"'}
                )
        return None

    async def _route(self, request: h11.Request) -> _Response:
        path = request.target.split(b"?", 1)[0]
        if path == b"/metrics":
            if "gzip" in (_header(request, b"accept-encoding") or ""):
                body = self.exposition.gzip()  # bytes joined: cheaper than a hop to a worker thread
                headers = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
                return _Response(200, body, METRICS_CONTENT_TYPE, headers)
            return _Response(
                200,
                await self._work(self.exposition.render),
                METRICS_CONTENT_TYPE,
                {"Vary": "Accept-Encoding"},
            )
        if path == b"/diagnoses":
            return _Response(200, await self._work(self._diagnoses), "application/json")
        if path == b"/diagnoses/inputs":
            return _Response(200, await self._work(self._inputs), "application/json")
        if path == b"/-/healthy":
            return _Response(200, b"OK\n", "text/plain")
        if path == b"/-/ready":
            if self.state.ready():
                return _Response(200, b"ready\n", "text/plain")
            return _Response(503, b"not ready: first poll pending\n", "text/plain")
        if path == b"/":
            return _Response(200, INDEX.format(version=__version__).encode(), "text/html")
        return _Response(404, b"not found\n", "text/plain")

    def _inputs(self) -> bytes:
        """Per target, what its last poll could not read and which diagnoses that starves."""
        snaps, _ = self.state.snapshots_with_stamps()
        doc = {name: {"kind": s.kind, **(s.inputs or {})} for name, s in sorted(snaps.items())}
        return json.dumps(doc, indent=1).encode()

    def _diagnoses(self) -> bytes:
        engine = self.state.engine
        findings = engine.findings() if engine is not None else []
        return json.dumps(findings, indent=1).encode()

    async def _work(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)


async def _answer_and_close(writer: asyncio.StreamWriter, status: int) -> None:
    """A bare status line, for when h11 can no longer frame a response on this connection."""
    st = HTTPStatus(status)
    writer.write(
        f"HTTP/1.1 {st.value} {st.phrase}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
    )
    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record: Connection) -> None:
    """After an error answer: no more to send, and what the client still sends is dropped
    until it closes or ``LINGER_TIMEOUT``, so closing does not reset the answer away."""
    record.enter(CLOSING)
    if writer.can_write_eof():  # TLS cannot half-close; its close_notify comes with the close
        writer.write_eof()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LINGER_TIMEOUT
    with contextlib.suppress(TimeoutError):
        while (left := deadline - loop.time()) > 0:
            if not await asyncio.wait_for(reader.read(65536), left):
                return


def _unacceptable(request: h11.Request) -> _Response | None:
    """The answer to a request that must not be served (then the connection closes), else None."""
    if not request.http_version.startswith(b"1."):  # HTTP/1.x with x > 1 is read as HTTP/1.1
        return _text(505, "HTTP version not supported\n")
    line = len(request.method) + len(request.target) + 10
    if line > MAX_REQUEST_LINE:
        return _text(414, "URI too long\n")
    # h11 bounds a head still arriving; one that arrived whole in a single read is measured here
    if line + sum(len(k) + len(v) + 4 for k, v in request.headers) > MAX_HEAD_BYTES:
        return _text(431, "request header fields too large\n")
    expect = _header(request, b"expect")
    if expect is not None and expect.lower() != "100-continue":
        return _text(417, "expectation failed\n")
    length = _header(request, b"content-length")
    if length is not None and int(length) > _MAX_REQUEST_BODY:  # said up front: no need to read it
        return _text(413, "request too large\n")
    return None


def _request_line_too_long(buffered: bytes) -> bool:
    """Whether a head refused as too large is refused for its request line (414, not 431)."""
    end = buffered.lstrip(b"\r\n").find(b"\n")
    return end < 0 or end > MAX_REQUEST_LINE


def _header(request: h11.Request, name: bytes) -> str | None:
    for key, value in request.headers:
        if key == name:
            return value.decode("latin-1")
    return None


async def _peek(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> bytes:
    """The connection's first byte, left in the socket for the TLS layer to read."""
    while True:
        try:
            return conn.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(conn.fileno(), _resolve, ready)
            try:
                await ready
            finally:
                loop.remove_reader(conn.fileno())


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _drain(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
    while await loop.sock_recv(conn, 4096):
        pass


def _quiet_exceptions(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Clients that vanish mid-handshake or mid-response are routine: a debug line, no traceback."""
    exc = context.get("exception")
    if isinstance(exc, OSError | ssl.SSLError | TimeoutError):
        log.debug("connection: %s", exc)
        return
    loop.default_exception_handler(context)
