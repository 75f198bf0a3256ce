"""The HTTP server's table of open connections, and who makes room when it is full.

A new connection is never refused while an open one can go at no loss: the one that costs
least is closed, lowest phase first (an answered error still lingering, then one that has
sent nothing yet, then an idle keep-alive one, then one whose request is still trickling in),
oldest first within a phase. A connection whose request is being answered is never closed.
So silent or slow sockets cannot lock Prometheus or a health probe out. One address may hold
only so many: at that bound, only its own connections make room for it.

Also here: the socket-level helpers the event loop uses on a connection before HTTP starts.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
import ssl
import sys
import time
from typing import Any

log = logging.getLogger(__name__)

# What a connection is doing, which orders who makes room when the table is full: lowest first.
CLOSING = -1  # answered an error, reading what the client still sends: nothing to lose
FRESH = 0  # no request yet
IDLE = 1  # between two requests on a keep-alive connection: the client reconnects
READING = 2  # a request (or a TLS handshake) is arriving: only slow clients stay here
ANSWERING = 3  # a request is being answered: never closed to make room


class Connection:
    """One open connection in the table: who, since when, doing what."""

    __slots__ = ("gone", "peer", "phase", "served", "since", "sock", "started", "task")

    def __init__(self, peer: str, sock: socket.socket) -> None:
        self.peer, self.sock, self.since = peer, sock, time.monotonic()
        self.phase = FRESH
        self.served = 0
        self.started = False  # the task has run: it closes the socket itself
        self.gone = False  # out of the table (closed to make room, or ended)
        self.task: asyncio.Task[None] | None = None

    def enter(self, phase: int) -> None:
        self.phase, self.since = phase, time.monotonic()


class ConnectionTable:
    """Open connections in the order they were accepted, and how many each address holds."""

    def __init__(self) -> None:
        self._open: dict[Connection, None] = {}
        self._per_peer: collections.Counter[str] = collections.Counter()
        self.evicted = 0
        """Connections closed to make room for a new one."""

    def __len__(self) -> int:
        return len(self._open)

    def add(self, c: Connection, task: asyncio.Task[None]) -> None:
        """Holds ``c`` while ``task`` serves it; the task's end takes it out."""
        c.task = task
        self._open[c] = None
        self._per_peer[c.peer] += 1
        task.add_done_callback(lambda _: self._forget(c))

    def make_room(self, peer: str | None, limit: int, per_peer: int) -> bool:
        """Closes connections until a new one from ``peer`` fits: False when none can go."""
        if peer is not None and self._per_peer[peer] >= per_peer:
            victim = self._victim(peer)
            if victim is None:
                return False
            self._evict(victim)
        while len(self._open) >= limit:
            victim = self._victim(None)
            if victim is None:
                return False
            self._evict(victim)
        return True

    def _victim(self, peer: str | None) -> Connection | None:
        """The connection whose closing costs least, of ``peer`` if given."""
        best: Connection | None = None
        for c in self._open:  # oldest first, so a tie goes to the oldest
            if c.phase == ANSWERING or (peer is not None and c.peer != peer):
                continue
            if c.phase in (FRESH, IDLE) and has_spoken(c.sock):
                c.enter(READING)  # its request is in the socket, not yet read by the loop
            if best is None or (c.phase, c.since) < (best.phase, best.since):
                best = c
                if c.phase <= FRESH:  # a silent one: the oldest, as the table is in accept order
                    break
        return best

    def _evict(self, c: Connection) -> None:
        self._forget(c)
        self.evicted += 1
        if not c.started:  # never ran, so its coroutine will not close the socket
            c.sock.close()
        if c.task is not None:
            c.task.cancel()  # its ``finally`` closes the streams

    def _forget(self, c: Connection) -> None:
        if c.gone:
            return
        c.gone = True
        self._open.pop(c, None)
        self._per_peer[c.peer] -= 1
        if self._per_peer[c.peer] <= 0:
            del self._per_peer[c.peer]


def has_spoken(sock: socket.socket) -> bool:
    """Whether the client has sent bytes the event loop has not read yet (the socket is non-blocking)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except OSError:  # nothing waiting (BlockingIOError), or closed or reset: silent either way
        return False


def peer_address(peer: Any) -> str:
    return str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)


def fd_cap() -> int:
    """Half the process's file descriptor limit: connections must leave the pollers theirs."""
    try:
        import resource
    except ImportError:  # not on a POSIX system: MAX_CONNECTIONS alone bounds them
        return sys.maxsize
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return sys.maxsize if soft == resource.RLIM_INFINITY else max(soft // 2, 16)


async def peek(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> bytes:
    """The connection's first byte, left in the socket for the TLS layer to read."""
    while True:
        try:
            return conn.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(conn.fileno(), _wake, ready)
            try:
                await ready
            finally:
                loop.remove_reader(conn.fileno())


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def drain(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
    """Read and drop what the client still sends until it closes."""
    while await loop.sock_recv(conn, 4096):
        pass


def quiet_exceptions(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Clients that vanish mid-handshake or mid-response are routine: a debug line, no traceback."""
    exc = context.get("exception")
    if isinstance(exc, OSError | ssl.SSLError | TimeoutError):
        log.debug("connection: %s", exc)
        return
    loop.default_exception_handler(context)
