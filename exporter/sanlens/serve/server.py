"""The exporter's HTTP server: connections, TLS, the HTTP/1.1 protocol; the endpoints are
``sanlens.serve.routes``.

One asyncio event loop serves every connection, so an idle keep-alive connection or a
client that trickles its request costs a socket and a coroutine, never a thread; h11
(the HTTP/1.1 state machine httpx and uvicorn build on) does the protocol: keep-alive,
pipelining rules, header size limits. Work that can take a while (bcrypt, JSON, the
plain-text body) runs in a small bounded thread pool. A /metrics response is the
exposition's cached body, so a scrape copies bytes and never renders.

Connections are bounded, and a new one is never refused while an idle one can make room
(``sanlens.serve.connections``), so a flood of silent or slow sockets cannot lock Prometheus or a
health probe out; silent ones are closed after ``FIRST_BYTE_TIMEOUT`` anyway.

With a web config (``sanlens.serve.web_security``) every endpoint is served over TLS and/or behind
basic auth, as the Prometheus exporter-toolkit does: the health endpoints too. The TLS
settings are read per connection, so rotated certificates apply without a restart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import logging
import socket
import ssl
import threading
from http import HTTPStatus
from typing import Any

import h11

from sanlens import __version__
from sanlens.join.directory import LunDirectory
from sanlens.serve.connections import (
    ANSWERING,
    CLOSING,
    FRESH,
    IDLE,
    READING,
    Connection,
    ConnectionTable,
    drain,
    fd_cap,
    peek,
    peer_address,
    quiet_exceptions,
)
from sanlens.serve.exposition import Exposition
from sanlens.serve.routes import (
    MAX_HEAD_BYTES,
    MAX_REQUEST_BODY,
    Response,
    Routes,
    plain,
    request_line_too_long,
    unacceptable,
)
from sanlens.serve.web_security import ActiveWeb, WebSecurity
from sanlens.store import Engine, State

log = logging.getLogger(__name__)

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
"""A client that does not read its response (or a piece of a streamed one) within this loses the
connection."""
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

# What Go's servers answer when plain HTTP reaches a TLS port: clearer than a reset.
PLAIN_HTTP_ON_TLS = (
    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"Client sent an HTTP request to an HTTPS server.\n"
)
_TLS_HANDSHAKE_RECORD = b"\x16"


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


class ExporterServer:
    """The exporter's HTTP server: an event loop in one thread, a renderer in another.

    ``web`` adds TLS and basic auth. The socket is bound here, so a taken port fails at
    construction with an ``OSError``, before any poller starts.
    """

    def __init__(
        self,
        state: State,
        listen: str,
        web: WebSecurity | None = None,
        *,
        engine: Engine | None = None,
        directory: LunDirectory | None = None,
    ) -> None:
        self.state = state
        self.web = web
        self.sock = _bind(listen)
        self.exposition = Exposition(state, engine=engine, directory=directory, release_series=True)
        self.pool = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="http-work")
        self.routes = Routes(state, self.exposition, engine, self.pool)
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
        loop.set_exception_handler(quiet_exceptions)
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
            first = await asyncio.wait_for(peek(loop, conn), min(HANDSHAKE_TIMEOUT, FIRST_BYTE_TIMEOUT))
            if not first:
                return None
            record.enter(READING)
            if first != _TLS_HANDSHAKE_RECORD:
                with contextlib.suppress(OSError, TimeoutError):
                    await asyncio.wait_for(loop.sock_sendall(conn, PLAIN_HTTP_ON_TLS), WRITE_TIMEOUT)
                    conn.shutdown(socket.SHUT_WR)
                    # read what the client sent, so closing does not reset the answer away
                    await asyncio.wait_for(drain(loop, conn), 1.0)
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
                    if status == 431 and request_line_too_long(h.trailing_data[0]):
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
                                writer, h, plain(408, "request timeout\n"), head_only=False, close=True
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
                    refused = unacceptable(event)
                    if refused is not None:
                        await self._send(writer, h, refused, head_only=False, close=True)
                        await _linger(reader, writer, record)
                        return
                elif isinstance(event, h11.Data):
                    body_bytes += len(event.data)
                    if body_bytes > MAX_REQUEST_BODY:
                        await self._send(
                            writer, h, plain(413, "request too large\n"), head_only=False, close=True
                        )
                        await _linger(reader, writer, record)
                        return
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    return
            assert request is not None
            record.enter(ANSWERING)
            response = await self.routes.respond(request, active)
            await self._send(writer, h, response, head_only=request.method == b"HEAD", close=False)
            record.served += 1
            if h.our_state is h11.MUST_CLOSE or h.their_state is h11.MUST_CLOSE:
                return
            h.start_next_cycle()

    async def _send(
        self, writer: asyncio.StreamWriter, h: h11.Connection, r: Response, *, head_only: bool, close: bool
    ) -> None:
        headers = [
            ("Server", f"sanlens/{__version__}"),
            ("Content-Type", r.ctype),
            ("Content-Length", str(r.length)),
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
        if not head_only and r.stream is None and r.body:
            writer.write(h.send(h11.Data(data=r.body)) or b"")
        elif not head_only and r.stream is not None:
            # a plain /metrics answer, piece by piece as it is inflated: each waits for the last to drain
            for piece in r.stream:
                writer.write(h.send(h11.Data(data=piece)) or b"")
                if writer.transport.get_write_buffer_size():
                    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)
        writer.write(h.send(h11.EndOfMessage()) or b"")
        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)


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
