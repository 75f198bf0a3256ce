"""The exporter's HTTP server behind a web config: real TLS and basic auth on loopback.

A CA, a server and a client certificate are made per module (tests/pki.py); bcrypt hashes
are made here with ``bcrypt.hashpw``. Every endpoint is protected, health included, as the
Prometheus exporter-toolkit does.
"""

from __future__ import annotations

import base64
import http.client
import logging
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import pytest
from tests.conftest import free_port
from tests.pki import PKI, make_pki, reissue_server

from sanlens.serve.server import ExporterServer
from sanlens.serve.web_security import WebSecurity
from sanlens.store import State

ENDPOINTS = ("/metrics", "/diagnoses", "/-/healthy", "/-/ready", "/")
PASSWORD = "correct horse battery staple"
# serve(web config text, **WebSecurity keyword arguments) -> a started server
Serve = Callable[..., ExporterServer]


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def hashed() -> str:
    return bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """serve(web_config_text, **WebSecurity kwargs) -> the started ExporterServer."""
    servers: list[ExporterServer] = []

    def start(text: str, **kwargs: float) -> ExporterServer:
        path = tmp_path / "web-config.yml"
        path.write_text(text, encoding="utf-8")
        srv = ExporterServer(State(), "127.0.0.1:0", web=WebSecurity(path, **kwargs))
        srv.start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def client_context(
    pki: PKI,
    cert: tuple[Path, Path] | None = None,
    max_version: ssl.TLSVersion | None = None,
    ca: Path | None = None,
) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca or pki.ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    if max_version is not None:
        ctx.maximum_version = max_version
    return ctx


def get(
    port: int,
    path: str = "/metrics",
    ctx: ssl.SSLContext | None = None,
    auth: tuple[str, str] | None = None,
    host: str = "localhost",
) -> Reply:
    headers = {}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    conn: http.client.HTTPConnection
    if ctx is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    else:
        conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        return Reply(r.status, r.headers, r.read())
    finally:
        conn.close()


def tls_config(pki: PKI, extra: str = "") -> str:
    return f"tls_server_config:\n  cert_file: {pki.server.cert}\n  key_file: {pki.server.key}\n{extra}"


# ------------------------------------------------------------------ TLS


def test_https_with_the_ca_serves_every_endpoint(serve: Serve, pki: PKI) -> None:
    srv = serve(tls_config(pki))
    assert srv.scheme == "https"
    ctx = client_context(pki)
    for path in ENDPOINTS:
        r = get(srv.port, path, ctx)
        assert r.status == 200, (path, r.status)  # /-/ready too: a State without targets is ready
    assert b"sanlens_build_info" in get(srv.port, "/metrics", ctx).body
    # the name in the certificate: 127.0.0.1 is in it too
    assert get(srv.port, "/-/healthy", ctx, host="127.0.0.1").status == 200


def test_plain_http_on_the_tls_port_is_refused(serve: Serve, pki: PKI) -> None:
    srv = serve(tls_config(pki))
    r = get(srv.port, "/metrics")
    assert r.status == 400
    assert b"HTTP request to an HTTPS server" in r.body
    assert b"sanlens_" not in r.body
    # and the server still serves TLS afterwards
    assert get(srv.port, "/-/healthy", client_context(pki)).status == 200


def test_a_client_without_the_ca_does_not_trust_the_server(serve: Serve, pki: PKI) -> None:
    srv = serve(tls_config(pki))
    with pytest.raises(ssl.SSLCertVerificationError):
        get(srv.port, "/-/healthy", client_context(pki, ca=pki.other_ca))


def test_min_version_tls13_refuses_a_tls12_only_client(serve: Serve, pki: PKI) -> None:
    srv = serve(tls_config(pki, "  min_version: TLS13\n"))
    with pytest.raises(ssl.SSLError):
        get(srv.port, "/-/healthy", client_context(pki, max_version=ssl.TLSVersion.TLSv1_2))
    assert get(srv.port, "/-/healthy", client_context(pki)).status == 200


def test_max_version_tls12_is_what_the_server_negotiates(serve: Serve, pki: PKI) -> None:
    srv = serve(tls_config(pki, "  max_version: TLS12\n"))
    with (
        socket.create_connection(("127.0.0.1", srv.port), timeout=10) as raw,
        client_context(pki).wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        assert tls.version() == "TLSv1.2"


# ------------------------------------------------------------------ client certificates


def _refused(port: int, ctx: ssl.SSLContext) -> None:
    """The handshake (or, in TLS 1.3, the first read after it) fails."""
    with pytest.raises((ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)):
        get(port, "/-/healthy", ctx)


def test_required_client_certificate(serve: Serve, pki: PKI) -> None:
    srv = serve(
        tls_config(pki, f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki.ca}\n")
    )
    _refused(srv.port, client_context(pki))
    _refused(srv.port, client_context(pki, max_version=ssl.TLSVersion.TLSv1_2))
    _refused(srv.port, client_context(pki, cert=(pki.stranger.cert, pki.stranger.key)))
    ctx = client_context(pki, cert=(pki.client.cert, pki.client.key))
    for path in ("/metrics", "/-/healthy"):
        assert get(srv.port, path, ctx).status == 200


def test_client_certificate_if_given_is_verified(serve: Serve, pki: PKI) -> None:
    srv = serve(tls_config(pki, f"  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: {pki.ca}\n"))
    assert get(srv.port, "/-/healthy", client_context(pki)).status == 200
    assert (
        get(srv.port, "/-/healthy", client_context(pki, cert=(pki.client.cert, pki.client.key))).status == 200
    )
    _refused(srv.port, client_context(pki, cert=(pki.stranger.cert, pki.stranger.key)))


@pytest.mark.parametrize(
    ("sans", "admitted"),
    [
        (["prometheus.monitoring.svc"], True),
        (["spiffe://test/prometheus"], True),
        (["grafana.monitoring.svc", "10.0.0.1"], False),
    ],
)
def test_client_allowed_sans(serve: Serve, pki: PKI, sans: list[str], admitted: bool) -> None:
    listed = "".join(f"    - {s}\n" for s in sans)
    srv = serve(
        tls_config(
            pki,
            f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki.ca}\n"
            f"  client_allowed_sans:\n{listed}",
        )
    )
    ctx = client_context(pki, cert=(pki.client.cert, pki.client.key))
    if admitted:
        assert get(srv.port, "/metrics", ctx).status == 200
    else:
        _refused(srv.port, ctx)


# ------------------------------------------------------------------ basic auth


@pytest.mark.parametrize("tls", [True, False], ids=["https", "http"])
def test_basic_auth_guards_every_endpoint(serve: Serve, pki: PKI, hashed: str, tls: bool) -> None:
    users = f"basic_auth_users:\n  prometheus: {hashed}\n"
    srv = serve(tls_config(pki, users) if tls else users)
    ctx = client_context(pki) if tls else None
    for path in ENDPOINTS:
        for auth in (None, ("prometheus", "wrong"), ("nobody", PASSWORD), ("Prometheus", PASSWORD)):
            r = get(srv.port, path, ctx, auth=auth)
            assert r.status == 401, (path, auth, r.status)
            assert r.headers["WWW-Authenticate"].startswith("Basic ")
            assert b"sanlens_" not in r.body
        r = get(srv.port, path, ctx, auth=("prometheus", PASSWORD))
        assert r.status == 200, (path, r.status)
        assert "WWW-Authenticate" not in r.headers


def test_basic_auth_rejects_malformed_authorization_headers(serve: Serve, hashed: str) -> None:
    srv = serve(f"basic_auth_users:\n  prometheus: {hashed}\n")
    token = base64.b64encode(f"prometheus:{PASSWORD}".encode()).decode()
    for header in (f"Bearer {token}", "Basic !!!", "Basic " + base64.b64encode(b"prometheus").decode()):
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        conn.request("GET", "/metrics", headers={"Authorization": header})
        assert conn.getresponse().status == 401, header
        conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request("GET", "/metrics", headers={"Authorization": f"basic {token}"})  # the scheme is case-blind
    assert conn.getresponse().status == 200
    conn.close()


def test_successful_checks_are_cached_and_failures_are_not(serve: Serve, pki: PKI, hashed: str) -> None:
    srv = serve(tls_config(pki, f"basic_auth_users:\n  prometheus: {hashed}\n"))
    ctx = client_context(pki)
    auth = srv.web.current().auth
    assert auth is not None
    before = auth.bcrypt_checks
    for _ in range(5):
        assert get(srv.port, "/metrics", ctx, auth=("prometheus", PASSWORD)).status == 200
    assert auth.bcrypt_checks - before == 1  # one bcrypt for five scrapes
    for _ in range(3):
        assert get(srv.port, "/metrics", ctx, auth=("prometheus", "wrong")).status == 401
    assert auth.bcrypt_checks - before == 4  # every wrong password pays bcrypt
    assert get(srv.port, "/metrics", ctx, auth=("prometheus", PASSWORD)).status == 200
    assert auth.bcrypt_checks - before == 4  # and does not evict the good entry


def test_basic_auth_and_client_certificates_together(serve: Serve, pki: PKI, hashed: str) -> None:
    srv = serve(
        tls_config(
            pki,
            f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki.ca}\n"
            f"basic_auth_users:\n  prometheus: {hashed}\n",
        )
    )
    ctx = client_context(pki, cert=(pki.client.cert, pki.client.key))
    assert get(srv.port, "/metrics", ctx).status == 401
    assert get(srv.port, "/metrics", ctx, auth=("prometheus", PASSWORD)).status == 200


# ------------------------------------------------------------------ http_server_config, rate_limit


def test_configured_headers_are_on_every_response(serve: Serve, hashed: str) -> None:
    srv = serve(
        "http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n"
        "    Content-Security-Policy: default-src 'none'\n"
        f"basic_auth_users:\n  prometheus: {hashed}\n"
    )
    for auth in (None, ("prometheus", PASSWORD)):
        r = get(srv.port, "/metrics", auth=auth)
        assert r.headers["X-Frame-Options"] == "deny"
        assert r.headers["Content-Security-Policy"] == "default-src 'none'"


def test_rate_limit_answers_429_past_the_burst(serve: Serve) -> None:
    srv = serve("rate_limit:\n  interval: 1h\n  burst: 2\n")
    assert [get(srv.port, "/-/healthy").status for _ in range(3)] == [200, 200, 429]


# ------------------------------------------------------------------ reloads


def test_a_rotated_certificate_is_served_from_the_next_connection(
    serve: Serve, pki: PKI, tmp_path: Path
) -> None:
    # a copy, so the module's PKI stays as it is for the other tests
    own = make_pki(tmp_path / "own")
    srv = serve(tls_config(own), check_interval=0)
    assert get(srv.port, "/-/healthy", client_context(own)).status == 200
    time.sleep(0.01)  # a distinct mtime on coarse filesystems
    reissue_server(own, tmp_path / "own", "localhost")
    rotated_ca = tmp_path / "own" / "rotated-ca.crt"
    assert get(srv.port, "/-/healthy", client_context(own, ca=rotated_ca)).status == 200
    with pytest.raises(ssl.SSLCertVerificationError):
        get(srv.port, "/-/healthy", client_context(own))


def test_a_broken_edit_keeps_the_last_good_config(
    serve: Serve, hashed: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    srv = serve(f"basic_auth_users:\n  prometheus: {hashed}\n", check_interval=0)
    (tmp_path / "web-config.yml").write_text("basic_auth_users:\n  prometheus: plaintext\n", encoding="utf-8")
    with caplog.at_level(logging.ERROR, logger="sanlens.serve.web_security"):
        assert get(srv.port, "/metrics").status == 401  # still guarded
    assert "basic_auth_users.prometheus: not a bcrypt hash" in caplog.text
    assert "plaintext" not in caplog.text
    assert get(srv.port, "/metrics", auth=("prometheus", PASSWORD)).status == 200
    # a good edit takes over: a new user and password
    other = bcrypt.hashpw(b"other", bcrypt.gensalt(rounds=4)).decode()
    (tmp_path / "web-config.yml").write_text(f"basic_auth_users:\n  grafana: {other}\n", encoding="utf-8")
    assert get(srv.port, "/metrics", auth=("grafana", "other")).status == 200
    assert get(srv.port, "/metrics", auth=("prometheus", PASSWORD)).status == 401


def test_secure_is_refused_once_the_server_runs(tmp_path: Path) -> None:
    srv = ExporterServer(State(), "127.0.0.1:0")
    (tmp_path / "empty.yml").write_text("", encoding="utf-8")
    web = WebSecurity(tmp_path / "empty.yml")
    srv.secure(web)  # before start: fine
    srv.start()
    try:
        assert srv.scheme == "http"
        with pytest.raises(RuntimeError):
            srv.secure(web)
    finally:
        srv.stop()


# ------------------------------------------------------------------ sanlens serve --web.config.file


def test_sanlens_serve_with_a_web_config_file(pki: PKI, hashed: str, tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(f"listen: 127.0.0.1:{port}\n", encoding="utf-8")
    web = tmp_path / "web-config.yml"
    web.write_text(tls_config(pki, f"basic_auth_users:\n  prometheus: {hashed}\n"), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sanlens", "serve", "--config", str(config), "--web.config.file", str(web)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        ctx = client_context(pki)
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else b""
            try:
                r = get(port, "/-/ready", ctx, auth=("prometheus", PASSWORD))
                break
            except OSError:
                assert time.monotonic() < deadline, "sanlens serve never answered"
                time.sleep(0.2)
        assert r.status == 200
        assert get(port, "/-/ready", ctx).status == 401
        assert get(port, "/-/ready").status == 400  # plain HTTP
    finally:
        proc.terminate()
        out = proc.communicate(timeout=20)[0].decode()
    assert "TLS, basic auth for 1 user(s)" in out
    assert hashed not in out


def test_sanlens_serve_refuses_a_bad_web_config_file_before_listening(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(f"listen: 127.0.0.1:{port}\n", encoding="utf-8")
    web = tmp_path / "web-config.yml"
    web.write_text("tls_server_config:\n  certfile: tls.crt\n", encoding="utf-8")
    p = subprocess.run(
        [sys.executable, "-m", "sanlens", "serve", "--config", str(config), "--web.config.file", str(web)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{web}:2: tls_server_config.certfile: unknown key" in p.stderr
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
