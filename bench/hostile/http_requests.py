"""The probe's http category: raw requests and connection floods against `sanlens serve`'s listener."""

from __future__ import annotations

import argparse
import random
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hostile.common import Case, Category, Tree, crashed
from hostile.upstreams import Exporter
from soak import free_port


# ------------------------------------------------------------------ http: raw requests
def connect(port: int, source: str | None = None, timeout: float = 5.0) -> socket.socket:
    return socket.create_connection(
        ("127.0.0.1", port), timeout=timeout, source_address=(source, 0) if source else None
    )


def status_of(answer: bytes) -> int | None:
    m = re.match(rb"HTTP/\d\.\d (\d{3})", answer)
    return int(m[1]) if m else None


def exchange(port: int, data: bytes, timeout: float) -> tuple[str, bytes]:
    """Sends ``data`` on a new connection; (answer|closed|reset|timeout, what came back)."""
    got = b""
    reset = False
    deadline = time.monotonic() + timeout
    try:
        s = connect(port)
    except OSError as e:
        return "reset", repr(e).encode()
    with s:
        try:
            s.sendall(data)
        except TimeoutError:
            pass  # the server stopped reading: an answer may still come
        except OSError:
            reset = True  # an answer may still be there to read
        try:
            while b"\r\n\r\n" not in got:
                s.settimeout(max(deadline - time.monotonic(), 0.01))
                chunk = s.recv(65536)
                if not chunk:
                    return ("answer" if got else ("reset" if reset else "closed")), got
                got += chunk
        except TimeoutError:
            return ("answer" if got else "timeout"), got
        except OSError:
            return ("answer" if status_of(got) else "reset"), got
    return "answer", got


def healthy(
    port: int, path: str = "/-/healthy", source: str | None = None, timeout: float = 5.0
) -> tuple[str, float]:
    """One GET as a probe makes it, on a new connection: ('200'|'reset'|'timeout'|..., seconds)."""
    t0 = time.monotonic()
    try:
        with connect(port, source, timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            got = b""
            while chunk := s.recv(65536):
                got += chunk
        st = status_of(got)
        return (str(st) if st else "closed"), time.monotonic() - t0
    except TimeoutError:
        return "timeout", time.monotonic() - t0
    except OSError as e:
        return type(e).__name__, time.monotonic() - t0


MALFORMED = [
    b"\x00\x01\x02\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost x\r\n\r\n",
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
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
]


def raw_cases(quick: bool) -> list[tuple[str, bytes, frozenset[int] | None]]:
    """(name, bytes, statuses promised; None: any answer 200 or 4xx/5xx, or a close, never a reset)."""
    close = b"Connection: close\r\n"
    cases: list[tuple[str, bytes, frozenset[int] | None]] = [
        ("url-10-kb", b"GET /metrics?q=" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", frozenset({414})),
        (
            "url-1-mb",
            b"GET /metrics?q=" + b"a" * 1_000_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            frozenset({414}),
        ),
        (
            "header-1-mb",
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n",
            frozenset({431}),
        ),
        (
            "5000-headers",
            b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\n",
            frozenset({431}),
        ),
    ]
    for version, st in (("9.9", 505), ("2.0", 505), ("0.9", 505), ("1.0", 200), ("1.1", 200), ("1.2", 200)):
        head = b"GET /-/healthy HTTP/" + version.encode() + b"\r\nHost: x\r\n" + close + b"\r\n"
        cases.append((f"http-{version}", head, frozenset({st})))
    cases += [
        (
            "expect-100-body-too-large",
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10000000\r\n\r\n",
            frozenset({413}),
        ),
        (
            "expect-teapot",
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\nx",
            frozenset({417}),
        ),
    ]
    if quick:
        return cases
    cases += [(f"malformed-{i:02d}", data, None) for i, data in enumerate(MALFORMED)]
    rng = random.Random(20240611)
    for i in range(20):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        data = rng.choice([b"", b"GET / HTTP/1.1\r\n", b"GET /"]) + junk + rng.choice([b"", b"\r\n\r\n"])
        cases.append((f"random-{i:02d}", data, None))
    for i in range(3):
        big = bytes(rng.randrange(33, 127) for _ in range(rng.randrange(20_000, 200_000)))
        cases.append((f"large-head-{i}", b"GET /" + big, None))
    return cases


def judge_raw(name: str, kind: str, got: bytes, expect: frozenset[int] | None) -> Case:
    st = status_of(got) if kind == "answer" else None
    if kind == "timeout":
        return Case("http", name, "hang", "no answer and no close")
    if kind == "reset":
        return Case(
            "http", name, "wrong", "connection reset" + (f", promised {sorted(expect)}" if expect else "")
        )
    if expect is None:
        if kind == "closed" or (st is not None and (st == 200 or 400 <= st < 600)):
            return Case("http", name, "ok")
        return Case("http", name, "wrong", f"answered {got[:40]!r}")
    if st in expect:
        return Case("http", name, "ok")
    return Case("http", name, "wrong", f"{st or kind}, promised {'/'.join(map(str, sorted(expect)))}")


def expect_continue(port: int, method: bytes, final: int) -> Case:
    """A client that waits for ``100 Continue`` before its body gets it, then the final answer."""
    name = f"expect-100-continue-{method.decode().lower()}"
    try:
        with connect(port, timeout=3.0) as s:
            s.sendall(method + b" /-/healthy HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n")
            s.sendall(b"Content-Length: 5\r\nConnection: close\r\n\r\n")
            interim = s.recv(4096)
            if status_of(interim) != 100:
                return Case(
                    "http", name, "wrong", f"first answer {interim[:30]!r}, promised 100 then {final}"
                )
            s.sendall(b"hello")
            got = interim.partition(b"\r\n\r\n")[2]
            while b"\r\n\r\n" not in got and (chunk := s.recv(4096)):
                got += chunk
    except TimeoutError:
        return Case("http", name, "hang", "no 100 Continue within 3 s: a client waiting for it hangs")
    except OSError as e:
        return Case("http", name, "wrong", f"{type(e).__name__}")
    st = status_of(got)
    return Case(
        "http", name, "ok" if st == final else "wrong", "" if st == final else f"{st}, promised {final}"
    )


def closed_by_server(s: socket.socket, wait: float = 0.0) -> bool:
    s.settimeout(wait or 0.01)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def open_many(port: int, n: int, source: str | None = None, head: bytes = b"") -> list[socket.socket]:
    socks = []
    for _ in range(n):
        try:
            s = connect(port, source, timeout=2.0)
            if head:
                s.sendall(head)
            socks.append(s)
        except OSError:
            break  # the listener's queue is full: the flood is as large as it gets
    return socks


def at_once(name: str, port: int, path: str, within: float, limit: float, source: str | None = None) -> Case:
    """``path`` answered 200 within ``within`` s at the first try; else retried each second to ``limit``."""
    t0 = time.monotonic()
    result, took = healthy(port, path, source)
    if result == "200" and took <= within:
        return Case("http", name, "ok", f"{took * 1000:.0f} ms")
    first = f"first try: {result} after {took:.1f} s"
    while time.monotonic() - t0 < limit:
        time.sleep(1.0)
        result, _ = healthy(port, path, source)
        if result == "200":
            return Case("http", name, "wrong", f"{first}; answered after {time.monotonic() - t0:.0f} s")
    return Case(
        "http",
        name,
        "hang" if result == "timeout" else "wrong",
        f"{first}; not answered within {limit:.0f} s",
    )


def probe_http(tree: Tree, args: argparse.Namespace, work: Path) -> Category:
    cat = Category("http")
    port = free_port()
    config = {
        "listen": f"127.0.0.1:{port}",
        "log_level": "info",
        "hosts": [{"name": "probe-host", "url": "http://127.0.0.1:9/metrics"}],
    }
    exporter = Exporter(tree, config, work, "serve-http", args.rss_cap_mb)
    first_byte_s, request_s = 10.0, 10.0  # the server's defaults: a silent connection, a head that never ends
    try:
        if not exporter.wait_ready(lambda: healthy(port)[0] == "200", 60):
            cat.note = f"the exporter never answered (exit {exporter.proc.poll()}); see {exporter.log_path}"
            return cat
        # raw requests, all at once, beside one silent connection that must be closed in time
        silent = connect(port)
        opened = time.monotonic()
        cases = raw_cases(args.quick)
        with ThreadPoolExecutor(max_workers=len(cases) + 2) as pool:
            futures = [pool.submit(exchange, port, data, request_s + 5.0) for _, data, _ in cases]
            continues = [
                pool.submit(expect_continue, port, b"GET", 200),
                pool.submit(expect_continue, port, b"POST", 405),
            ]
            for (name, _, expect), fut in zip(cases, futures, strict=True):
                kind, got = fut.result()
                cat.cases.append(judge_raw(name, kind, got, expect))
            cat.cases += [f.result() for f in continues]
        closed = closed_by_server(silent, wait=max(first_byte_s + 4.0 - (time.monotonic() - opened), 0.01))
        silent.close()
        cat.cases.append(
            Case("http", "silent-connection-closed-after-first-byte-timeout", "ok" if closed else "wrong",
                 "" if closed else f"still open after {time.monotonic() - opened:.0f} s")
        )  # fmt: skip

        # 1,030 silent connections held open: the probe and a scrape still answered at once
        flood = open_many(port, 1030)
        time.sleep(1.0)
        cat.cases.append(at_once(f"silent-flood-{len(flood)}:/-/healthy", port, "/-/healthy", 1.0, 15.0))
        cat.cases.append(at_once(f"silent-flood-{len(flood)}:/metrics", port, "/metrics", 1.0, 5.0))
        for s in flood:
            s.close()
        time.sleep(1.0)

        # heads that never end: the probe answered at once, the newest head answered 408 in time
        trickle = open_many(port, 300 if args.quick else 600, head=b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        cat.cases.append(at_once(f"trickling-heads-{len(trickle)}:/-/healthy", port, "/-/healthy", 1.0, 5.0))
        if trickle:
            newest = trickle[-1]
            newest.settimeout(request_s + 4.0)
            t0 = time.monotonic()
            try:
                got = newest.recv(4096)
                kind = "answer" if got else "closed"
            except TimeoutError:
                kind, got = "timeout", b""
            except OSError:
                kind, got = "reset", b""
            case = judge_raw(
                f"trickling-heads-{len(trickle)}:newest-answered-408", kind, got, frozenset({408})
            )
            case.detail += f" after {time.monotonic() - t0:.1f} s" if case.outcome == "ok" else ""
            cat.cases.append(case)
        for s in trickle:
            s.close()
        time.sleep(1.0)

        # one address flooding: another address's connections are kept, the flooder still served
        if not args.quick:
            try:
                connect(port, "127.0.0.3").close()
                neighbours = open_many(port, 5, "127.0.0.3")
                flooders = open_many(port, 300, "127.0.0.2")
                time.sleep(1.0)
                lost = len(neighbours) - sum(not closed_by_server(s) for s in neighbours)
                why = f"{lost} of another address's connections closed" if lost else ""
                cat.cases.append(
                    Case("http", "one-address-flood:others-kept", "wrong" if lost else "ok", why)
                )
                cat.cases.append(
                    at_once("one-address-flood:flooder-served", port, "/-/healthy", 1.0, 5.0, "127.0.0.2")
                )
                for s in neighbours + flooders:
                    s.close()
            except OSError as e:
                cat.note = f"one-address flood skipped: {e}"
        result, _ = healthy(port)
        cat.cases.append(
            Case("http", "still-serving-after-all", "ok" if result == "200" else "wrong", result)
        )
        if exporter.killed:
            cat.note = exporter.killed
    finally:
        exporter.stop()
        cat.peak_rss_mb = exporter.peak_rss_mb
        cat.tracebacks = crashed(exporter.log())
    return cat
