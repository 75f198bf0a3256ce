"""A loopback HTTP server that trickles its answer, one byte per ``delay`` seconds.

Per-request read timeouts restart with every byte, so such a server holds a client for as
long as it likes; the tests use it to prove that the pollers' overall deadline holds.
"""

from __future__ import annotations

import socket
import threading


class TrickleServer:
    """Answers every request with ``body``: its first ``slow`` bytes one per ``delay`` seconds.

    ``slow=None`` trickles the whole body. Counts connections open at once (``max_open``).
    """

    def __init__(self, body: bytes, slow: int | None = None, delay: float = 1.0) -> None:
        self.body, self.delay = body, delay
        self.slow = len(body) if slow is None else slow
        self.requests = 0
        self.completed = 0  # answers sent in full
        self.open = 0
        self.max_open = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)  # so the accept loop sees stop()
        self._thread = threading.Thread(target=self._accept, name="trickle", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def start(self) -> TrickleServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        self._thread.join(timeout=2)
        self._sock.close()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with self._lock:
            self.requests += 1
            self.open += 1
            self.max_open = max(self.max_open, self.open)
        try:
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                    f"Content-Length: {len(self.body)}\r\nConnection: close\r\n\r\n"
                )
                conn.sendall(head.encode())
                for i in range(self.slow):
                    if self._closing.wait(self.delay):
                        return
                    conn.sendall(self.body[i : i + 1])
                conn.sendall(self.body[self.slow :])
                with self._lock:
                    self.completed += 1
        except OSError:
            return
        finally:
            with self._lock:
                self.open -= 1
