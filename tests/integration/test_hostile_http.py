"""`sanlens serve`'s HTTP server against hostile clients, over raw loopback sockets.

Floods of silent or trickling connections, oversized and malformed heads, odd versions and
expectations: every case is answered with the right status (never a reset), and a scrape and
the health probe are answered while the flood is still held open. The server's bounds are
module constants, shrunk here so a flood takes tens of connections and timeouts take a second.
"""

from __future__ import annotations

import http.client
import random
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.pki import make_pki

from sanlens.model import MetricBuilder, Snapshot
from sanlens.serve import server as server_mod
from sanlens.serve.server import ExporterServer
from sanlens.serve.web_security import WebSecurity
from sanlens.store import State

Serve = Callable[..., ExporterServer]


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    """serve(web, CONSTANT=value, ...) -> a started server on loopback, with those module constants."""
    servers: list[ExporterServer] = []

    def start(web: WebSecurity | None = None, **constants: float) -> ExporterServer:
        for name, value in constants.items():
            assert hasattr(server_mod, name), name
            monkeypatch.setattr(server_mod, name, value)
        state = State()
        state.register("h1", "host", 5.0)
        b = MetricBuilder()
        b.add("sanlens_test_ops_total", "counter", "Test ops.", {"target": "h1"}, 1.0)
        state.record_success(Snapshot("h1", "host", 1000.0, b.build()), 0.1)
        srv = ExporterServer(state, "127.0.0.1:0", web=web)
        srv.start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def connect(srv: ExporterServer, source: str | None = None) -> socket.socket:
    return socket.create_connection(
        ("127.0.0.1", srv.port), timeout=5, source_address=(source, 0) if source else None
    )


def exchange(srv: ExporterServer, data: bytes, timeout: float = 5.0) -> bytes:
    """Sends ``data`` on a new connection and reads until the server closes it."""
    with connect(srv) as s:
        s.settimeout(timeout)
        s.sendall(data)
        return read_to_close(s)


def read_to_close(s: socket.socket) -> bytes:
    got = b""
    while chunk := s.recv(65536):
        got += chunk
    return got


def read_head(s: socket.socket) -> bytes:
    """A response's head, or what came before the server closed (a request it took may keep alive)."""
    got = b""
    while b"\r\n\r\n" not in got and (chunk := s.recv(65536)):
        got += chunk
    return got


def get(srv: ExporterServer, path: str) -> tuple[int, float]:
    """A request as Prometheus makes it: the status and how long it took."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        return resp.status, time.monotonic() - t0
    finally:
        conn.close()


def closed_by_server(s: socket.socket, wait: float = 0.0) -> bool:
    """Whether the server has closed ``s`` (EOF or reset), waiting at most ``wait`` seconds."""
    s.settimeout(wait or 0.01)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def wait_until(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer[9:12])


# ------------------------------------------------------------ floods


def test_a_silent_connection_is_closed_after_the_first_byte_timeout_a_served_one_may_idle(
    serve: Serve,
) -> None:
    srv = serve(FIRST_BYTE_TIMEOUT=1.0)
    keep = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    try:
        keep.request("GET", "/-/healthy")
        assert keep.getresponse().read() == b"OK\n"
        silent = connect(srv)
        t0 = time.monotonic()
        assert closed_by_server(silent, wait=4.0), "a silent connection outlived the first-byte timeout"
        assert 0.8 < time.monotonic() - t0 < 3.0
        silent.close()
        # a connection that has been answered idles on under the long keep-alive timeout
        before = srv.connections
        keep.request("GET", "/-/healthy")
        assert keep.getresponse().read() == b"OK\n"
        assert srv.connections == before, "the keep-alive connection was closed with the silent one"
    finally:
        keep.close()


def test_a_flood_of_silent_connections_never_locks_out_a_scrape_or_the_health_probe(serve: Serve) -> None:
    bound, flood = 60, 200
    srv = serve(MAX_CONNECTIONS=bound, MAX_PER_PEER=1000, FIRST_BYTE_TIMEOUT=30.0)
    scraper = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)  # Prometheus's kept connection
    silent: list[socket.socket] = []
    try:
        scraper.request("GET", "/metrics")
        assert scraper.getresponse().read()
        silent = [connect(srv) for _ in range(flood)]
        # the server has taken them all in: the oldest made room for the newest
        wait_until(lambda: getattr(srv, "evicted", 0) >= flood + 1 - bound, 5.0)
        for path in ("/-/healthy", "/metrics", "/-/ready"):
            status, took = get(srv, path)
            assert status == 200 and took < 1.0, f"{path}: {status} after {took:.2f} s"
        scraper.request("GET", "/metrics")  # its idle keep-alive connection was spared
        resp = scraper.getresponse()
        assert resp.status == 200 and b"sanlens_test_ops_total" in resp.read()
        # the flood is held: its oldest were closed, its newest are still open
        assert closed_by_server(silent[0], wait=1.0)
        assert not closed_by_server(silent[-1])
        still_open = sum(not closed_by_server(s) for s in silent)
        assert bound - 5 <= still_open < bound, still_open
    finally:
        scraper.close()
        for s in silent:
            s.close()


def test_one_address_flooding_makes_room_among_its_own_connections(serve: Serve) -> None:
    try:
        probe = socket.create_connection(("127.0.0.1", 9), timeout=1, source_address=("127.0.0.2", 0))
        probe.close()
    except ConnectionRefusedError:
        pass  # the address can be used as a source: the port is simply closed
    except OSError as e:
        pytest.skip(f"127.0.0.2 is not a usable source address here: {e}")
    srv = serve(MAX_CONNECTIONS=60, MAX_PER_PEER=20, FIRST_BYTE_TIMEOUT=30.0)
    neighbours = [connect(srv, "127.0.0.3") for _ in range(5)]
    flood = [connect(srv, "127.0.0.2") for _ in range(100)]
    try:
        assert wait_until(lambda: closed_by_server(flood[79]), 5.0)
        assert not any(closed_by_server(s) for s in neighbours), "another address's connections were closed"
        assert sum(not closed_by_server(s) for s in flood) == 20
        with connect(srv, "127.0.0.2") as s:  # the flooding address itself is still served
            s.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert status_of(read_to_close(s)) == 200
    finally:
        for s in neighbours + flood:
            s.close()


def test_a_flood_of_trickling_heads_is_made_room_for_and_still_answered_408(serve: Serve) -> None:
    srv = serve(MAX_CONNECTIONS=30, MAX_PER_PEER=1000, REQUEST_TIMEOUT=1.0)
    slow: list[socket.socket] = []
    try:
        for _ in range(60):
            s = connect(srv)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # a head that never ends
            slow.append(s)
        status, took = get(srv, "/-/healthy")
        assert status == 200 and took < 1.0, f"{status} after {took:.2f} s"
        newest = slow[-1]
        newest.settimeout(3.0)
        t0 = time.monotonic()
        answer = newest.recv(4096)
        assert status_of(answer) == 408 and time.monotonic() - t0 < 2.0
    finally:
        for s in slow:
            s.close()


def test_over_tls_a_silent_flood_is_made_room_for_and_a_large_head_is_answered(
    serve: Serve, tmp_path: Path
) -> None:
    pki = make_pki(tmp_path / "pki")
    config = tmp_path / "web-config.yml"
    config.write_text(f"tls_server_config:\n  cert_file: {pki.server.cert}\n  key_file: {pki.server.key}\n")
    srv = serve(WebSecurity(config), MAX_CONNECTIONS=30, MAX_PER_PEER=1000, FIRST_BYTE_TIMEOUT=30.0)
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    silent = [connect(srv) for _ in range(60)]
    try:
        wait_until(lambda: getattr(srv, "evicted", 0) >= 60 - 30, 5.0)
        t0 = time.monotonic()
        conn = http.client.HTTPSConnection("localhost", srv.port, context=ctx, timeout=5)
        conn.request("GET", "/-/healthy")
        assert conn.getresponse().read() == b"OK\n" and time.monotonic() - t0 < 1.0
        conn.close()
        with ctx.wrap_socket(connect(srv), server_hostname="localhost") as tls:  # no half-close in TLS
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n")
            assert status_of(tls.recv(4096)) == 431
    finally:
        for s in silent:
            s.close()


# ------------------------------------------------------------ oversized and odd requests


def test_a_one_megabyte_header_is_answered_431_not_reset(serve: Serve) -> None:
    srv = serve()
    answer = exchange(srv, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n")
    assert status_of(answer) == 431
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(5000))  # many small headers add up the same
    assert status_of(exchange(srv, b"GET / HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")) == 431
    assert get(srv, "/-/healthy")[0] == 200


@pytest.mark.parametrize("length", [10_000, 1_000_000])
def test_a_long_url_is_answered_414_not_reset(serve: Serve, length: int) -> None:
    srv = serve()
    target = b"/metrics?q=" + b"a" * length
    assert status_of(exchange(srv, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")) == 414
    assert get(srv, "/-/healthy")[0] == 200


@pytest.mark.parametrize(
    ("version", "status"),
    [(b"9.9", 505), (b"2.0", 505), (b"0.9", 505), (b"1.0", 200), (b"1.1", 200), (b"1.2", 200)],
)
def test_only_http_1_is_served(serve: Serve, version: bytes, status: int) -> None:
    srv = serve()
    answer = exchange(srv, b"GET /-/healthy HTTP/" + version + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status_of(answer) == status


def test_expect_100_continue_is_answered_before_the_body(serve: Serve) -> None:
    srv = serve()
    for method, final in ((b"GET", 200), (b"POST", 405)):
        with connect(srv) as s:
            s.settimeout(2.0)  # no hang: a client that waits for its 100 gets it
            s.sendall(method + b" /-/healthy HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n")
            s.sendall(b"Content-Length: 5\r\nConnection: close\r\n\r\n")
            interim = s.recv(4096)
            assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
            s.sendall(b"hello")
            assert status_of(read_to_close(s)) == final


def test_expect_with_a_body_too_large_or_an_unknown_expectation_is_refused_at_once(serve: Serve) -> None:
    srv = serve()
    big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10000000\r\n\r\n"
    assert status_of(exchange(srv, big, timeout=2.0)) == 413
    odd = b"GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\nx"
    assert status_of(exchange(srv, odd, timeout=2.0)) == 417


# ------------------------------------------------------------ fuzz

MALFORMED = [
    b"\x00\x01\x02\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost x\r\n\r\n",  # a header without a colon
    b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\n folded: continuation\r\n\r\n",
    b"GET / HTTP/1.1\r\nHo\x00st: x\r\n\r\n",
    b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX: \x7f\x00\r\n\r\n",
    b"G\tET / HTTP/1.1\r\n\r\n",
    b"\r\n" * 100 + b"GET / HTTP/1.1\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,  # a TLS hello on the plain port
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",  # HTTP/2 with prior knowledge
]


def test_fuzzed_requests_are_answered_or_closed_in_time_and_the_server_keeps_serving(serve: Serve) -> None:
    """Malformed and random heads, all at once: each gets an answer or a close, never a hang or a reset."""
    srv = serve(FIRST_BYTE_TIMEOUT=1.0, REQUEST_TIMEOUT=1.0, LINGER_TIMEOUT=0.5)
    rng = random.Random(20240611)
    cases = list(MALFORMED)
    for _ in range(40):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        cases.append(
            rng.choice([b"", b"GET / HTTP/1.1\r\n", b"GET /"]) + junk + rng.choice([b"", b"\r\n\r\n"])
        )
    for _ in range(5):  # heads too large: answered, and what follows is read, not reset away
        cases.append(b"GET /" + bytes(rng.randrange(33, 127) for _ in range(rng.randrange(20_000, 200_000))))
    socks = [connect(srv) for _ in cases]
    try:
        for s, data in zip(socks, cases, strict=True):
            s.sendall(data)
        t0 = time.monotonic()
        for s, data in zip(socks, cases, strict=True):
            s.settimeout(max(4.0 - (time.monotonic() - t0), 0.1))
            answer = read_head(s)  # a hang raises TimeoutError, a reset ConnectionResetError
            if answer:
                status = status_of(answer)
                assert 400 <= status < 600 or status == 200, (data[:80], answer[:80])
        assert time.monotonic() - t0 < 4.0
    finally:
        for s in socks:
            s.close()
    assert get(srv, "/-/healthy")[0] == 200
