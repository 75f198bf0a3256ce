"""HTTP connections a poller can cut from another thread.

A read timeout restarts with every byte, so a server that trickles an answer (or stops
half-way and keeps the connection open) would hold an abandoned poll's thread and socket
for as long as it likes. ``AbortableAdapter`` remembers the sockets its pools open;
``abort`` shuts them down, so a stuck read ends at once with a connection error, and
until ``resume`` no request of the abandoned poll is sent or retried.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from sanlens.errors import SourceError
from sanlens.trust import ContextReuseAdapter


class PollAborted(SourceError):
    """The poll was abandoned (its deadline passed, or the exporter stops): no more requests."""

    def __init__(self) -> None:
        super().__init__("poll abandoned: its connections were closed", reason="deadline")


class AbortableAdapter(ContextReuseAdapter):
    def __init__(self, **kwargs: Any) -> None:
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._lock = threading.Lock()
        self.aborted = False
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

    def abort(self) -> None:
        """Cut every connection, in use or idle; requests fail until ``resume``."""
        self.aborted = True
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def resume(self) -> None:
        """A new poll: requests are sent again (on fresh connections where the old ones were cut)."""
        self.aborted = False
