"""What a scrape of a large page costs in memory: the page is never copied whole per scrape.

At 10,000 LUNs the plain page is 20 MB. A client that does not accept gzip (curl, a Prometheus with
``enable_compression: false``) gets it inflated a piece at a time as its connection takes it, so
neither the exposition nor the transport holds a copy of the whole page. The figures come from
tracemalloc, which sees every bytes object and the transport's buffer: the traced peak while a
slow client reads stays a small fraction of the page (it was three times the page).
"""

from __future__ import annotations

import gzip
import socket
import time
import tracemalloc
from collections.abc import Iterator

import pytest

from sanlens.model import MetricBuilder, Snapshot
from sanlens.serve import exposition as exposition_mod
from sanlens.serve.server import ExporterServer
from sanlens.store import State

pytestmark = pytest.mark.integration

SERIES = 80_000


@pytest.fixture(scope="module")
def server() -> Iterator[ExporterServer]:
    state = State()
    state.register("c1", "ontap", 60.0)
    b = MetricBuilder()
    for i in range(SERIES):
        labels = {
            "cluster": "c1",
            "svm": f"svm{i % 7}",
            "volume": f"vol{i // 8}",
            "lun": f"/vol/vol{i // 8}/lun{i}",
        }
        b.add("sanlens_test_lun_ops_total", "counter", "Test ops.", labels, float(i) * 1.5)
    state.record_success(Snapshot("c1", "ontap", 1000.0, b.build()), 0.1)
    srv = ExporterServer(state, "127.0.0.1:0")
    # a network slower than loopback: the kernel takes little of an answer at once (an accepted
    # socket inherits the listening socket's buffer size), so the transport holds the rest
    srv.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * 1024)
    srv.start()
    yield srv
    srv.stop()


def slow_get(srv: ExporterServer, accept_gzip: bool, keep: bool = True) -> tuple[bytes, bytes, int]:
    """GET /metrics, read 64 KB at a time with pauses, so the server writes faster than this reads:
    the head, the body (when kept: a read that is traced keeps none) and the body's length."""
    head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    head += b"Accept-Encoding: gzip\r\n\r\n" if accept_gzip else b"\r\n"
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        s.sendall(head)
        got, size = bytearray(), 0
        while chunk := s.recv(64 * 1024):
            if keep or b"\r\n\r\n" not in got:
                got += chunk
            size += len(chunk)
            time.sleep(0.002)
    response_head, _, body = bytes(got).partition(b"\r\n\r\n")
    return response_head, body, size - len(response_head) - 4


def length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    raise AssertionError(head)


def test_a_plain_scrape_gets_the_gzip_pages_text_byte_for_byte(server: ExporterServer) -> None:
    head, plain, _ = slow_get(server, accept_gzip=False)
    assert head.startswith(b"HTTP/1.1 200") and length(head) == len(plain)
    _, zipped, _ = slow_get(server, accept_gzip=True)
    text = gzip.decompress(zipped)  # inflated by the standard library, in one go
    page, tail = plain.split(b"# HELP process_", 1)
    assert len(page) > 4_000_000 and text.split(b"# HELP process_", 1)[0] == page
    assert page == server.exposition.body().plain() and tail.startswith(b"virtual_memory_bytes ")


def traced_peak(srv: ExporterServer, accept_gzip: bool) -> tuple[int, int]:
    """The traced peak while a slow client reads /metrics, and the body's length."""
    slow_get(srv, accept_gzip)  # the gzip answer is made once per second: made here, outside the trace
    tracemalloc.start()
    try:
        head, _, size = slow_get(srv, accept_gzip, keep=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert length(head) == size
    return peak, size


def test_a_plain_scrape_is_inflated_piece_by_piece_as_the_client_reads(server: ExporterServer) -> None:
    page = len(server.exposition.body().plain())
    peak, size = traced_peak(server, accept_gzip=False)
    assert size > page
    assert peak < page / 8, f"{peak / 1e6:.1f} MB traced beside a {page / 1e6:.1f} MB page"


def test_a_head_request_gets_the_plain_pages_length_and_no_body(
    server: ExporterServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exposition_mod, "PROCESS_TTL_S", 1e9)  # one process_* tail for both reads
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = bytearray()
        while chunk := s.recv(65536):
            got += chunk
    head, _, body = bytes(got).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and body == b""
    assert length(head) == len(server.exposition.render())
