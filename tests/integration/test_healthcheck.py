"""`sanlens healthcheck` against the real server: plain HTTP, TLS, basic auth, client certificates.

The server is the exporter's own (ExporterServer behind a WebSecurity, as `sanlens serve` runs
it, and `sanlens serve` itself for the environment variables both read); the check runs as
the image's HEALTHCHECK and the chart's exec probes run it: a `sanlens healthcheck` process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import pytest
from tests.conftest import free_port
from tests.pki import PKI, make_pki

from sanlens.config import Config
from sanlens.serve.healthcheck import DEFAULT_LISTEN, target
from sanlens.serve.server import ExporterServer
from sanlens.serve.web_security import WebSecurity
from sanlens.store import State

PASSWORD = "probe-password-never-printed"
SERVER_NAME = "sanlens.monitoring.svc"


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("pki"), server_name=SERVER_NAME)


@pytest.fixture(scope="module")
def hashed() -> str:
    return bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture
def password_file(tmp_path: Path) -> Path:
    p = tmp_path / "password"
    p.write_text(PASSWORD + "\n", encoding="utf-8")
    return p


def healthcheck(*args: str, env: dict[str, str] | None = None) -> Run:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SANLENS_")}
    p = subprocess.run(
        [sys.executable, "-m", "sanlens", "healthcheck", *args],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert PASSWORD not in p.stdout + p.stderr
    return Run(p.returncode, p.stdout, p.stderr)


Serve = Callable[..., tuple[ExporterServer, Path]]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """serve(web config text or None, state) -> (the started server, its web config file)."""
    servers: list[ExporterServer] = []

    def start(text: str | None = None, state: State | None = None) -> tuple[ExporterServer, Path]:
        path = tmp_path / f"web-{len(servers)}.yml"
        web = None
        if text is not None:
            path.write_text(text, encoding="utf-8")
            web = WebSecurity(path)
        srv = ExporterServer(state or State(), "127.0.0.1:0", web=web)
        srv.start()
        servers.append(srv)
        return srv, path

    yield start
    for srv in servers:
        srv.stop()


def tls_config(pki: PKI, extra: str = "") -> str:
    return f"tls_server_config:\n  cert_file: {pki.server.cert}\n  key_file: {pki.server.key}\n{extra}"


def listen(srv: ExporterServer) -> str:
    return f"127.0.0.1:{srv.port}"


# ------------------------------------------------------------------ where the server is


def test_wildcard_listen_addresses_are_checked_on_loopback() -> None:
    assert Config().listen == DEFAULT_LISTEN
    assert target(":9842") == target("0.0.0.0:9842") == target("127.0.0.1:9842")
    assert target(":9842").host == "127.0.0.1" and target(":9842").loopback
    assert target("[::]:9842").host == "::1" and target("[::]:9842").loopback
    assert target("[::]:9842").authority == "[::1]:9842"
    assert target("localhost:1").loopback
    assert not target("10.1.2.3:9842").loopback
    assert not target("sanlens.example.com:9842").loopback


# ------------------------------------------------------------------ plain HTTP


def test_plain_http_up_and_down(serve: Serve) -> None:
    srv, _ = serve()
    address = listen(srv)
    r = healthcheck("--listen", address)
    assert r.code == 0, r.text
    assert r.out.startswith(f"ok: http://{address}/-/healthy: up: 200")
    srv.stop()
    r = healthcheck("--listen", address)
    assert r.code == 1
    assert "connection refused" in r.err


def test_readiness_path_reports_the_first_poll_pending(serve: Serve) -> None:
    state = State()
    state.register("cluster-a", "ontap")
    srv, _ = serve(state=state)
    r = healthcheck("--listen", listen(srv), "--path", "/-/ready")
    assert r.code == 1 and "503" in r.err and "first poll pending" in r.err
    assert healthcheck("--listen", listen(srv)).code == 0  # alive all the same


def test_an_unanswering_server_fails_within_the_timeout(tmp_path: Path) -> None:
    """A socket that accepts but never answers (a wedged event loop): what tcpSocket probes miss."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
        started = time.monotonic()
        r = healthcheck("--listen", f"127.0.0.1:{port}", "--timeout", "1")
        assert r.code == 1 and "no answer within 1 s" in r.err
        assert time.monotonic() - started < 10


# ------------------------------------------------------------------ TLS and basic auth


def test_tls_with_basic_auth_without_credentials_is_alive(pki: PKI, hashed: str, serve: Serve) -> None:
    srv, web = serve(tls_config(pki, f"basic_auth_users:\n  probe: '{hashed}'\n"))
    r = healthcheck("--listen", listen(srv), "--web.config.file", str(web))
    assert r.code == 0, r.text
    assert r.out.startswith(f"ok: https://127.0.0.1:{srv.port}/-/healthy: up: 401, basic auth required")


def test_tls_with_basic_auth_and_credentials_sees_the_endpoint(
    pki: PKI, hashed: str, serve: Serve, password_file: Path, tmp_path: Path
) -> None:
    state = State()
    state.register("cluster-a", "ontap")
    srv, web = serve(tls_config(pki, f"basic_auth_users:\n  probe: '{hashed}'\n"), state)
    creds = ("--username", "probe", "--password-file", str(password_file))
    base = ("--listen", listen(srv), "--web.config.file", str(web))
    assert healthcheck(*base, *creds).out.endswith("/-/healthy: up: 200\n")
    r = healthcheck(*base, *creds, "--path", "/-/ready")
    assert r.code == 1 and "503" in r.err  # with credentials, readiness is seen for real
    wrong = tmp_path / "wrong"
    wrong.write_text("nope\n", encoding="utf-8")
    r = healthcheck(*base, "--username", "probe", "--password-file", str(wrong))
    assert r.code == 1 and "refused the credentials of 'probe'" in r.err
    # the same from the environment, as the image's HEALTHCHECK takes them
    env = {"SANLENS_HEALTHCHECK_USERNAME": "probe", "SANLENS_HEALTHCHECK_PASSWORD_FILE": str(password_file)}
    assert healthcheck(*base, env=env).out.endswith("up: 200\n")


def test_plain_http_to_a_tls_port_says_to_give_the_web_config(pki: PKI, serve: Serve) -> None:
    srv, _ = serve(tls_config(pki))
    r = healthcheck("--listen", listen(srv))
    assert r.code == 1
    assert "the server speaks TLS" in r.err and "SANLENS_WEB_CONFIG_FILE" in r.err


def test_a_server_with_another_certificate_fails_verification(pki: PKI, serve: Serve, tmp_path: Path) -> None:
    srv, _ = serve(tls_config(pki))
    other = make_pki(tmp_path / "other", server_name=SERVER_NAME)
    impostor = tmp_path / "other-web.yml"
    impostor.write_text(tls_config(other), encoding="utf-8")
    r = healthcheck("--listen", listen(srv), "--web.config.file", str(impostor))
    assert r.code == 1
    assert "does not verify against" in r.err and str(other.server.cert) in r.err


def test_a_server_name_is_checked_when_given(pki: PKI, serve: Serve) -> None:
    srv, web = serve(tls_config(pki))
    base = ("--listen", listen(srv), "--web.config.file", str(web))
    assert healthcheck(*base, "--tls.server-name", SERVER_NAME).code == 0
    r = healthcheck(*base, "--tls.server-name", "elsewhere.example.com")
    assert r.code == 1 and "elsewhere.example.com" in r.err


def test_inline_certificate_and_relative_paths_are_read_as_the_server_reads_them(
    pki: PKI, serve: Serve, tmp_path: Path
) -> None:
    cert = Path(pki.server.cert).read_text(encoding="utf-8")
    indented = "\n".join("    " + line for line in cert.splitlines())
    srv, web = serve(f"tls_server_config:\n  cert: |\n{indented}\n  key_file: {pki.server.key}\n")
    assert healthcheck("--listen", listen(srv), "--web.config.file", str(web)).code == 0


# ------------------------------------------------------------------ client certificates


def mtls(pki: PKI, version: str = "min_version: TLS13") -> str:
    return tls_config(
        pki,
        f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki.ca}\n  {version}\n",
    )


def test_required_client_certificate_without_one_is_alive_after_a_tls13_handshake(
    pki: PKI, serve: Serve
) -> None:
    srv, web = serve(mtls(pki))
    r = healthcheck("--listen", listen(srv), "--web.config.file", str(web))
    assert r.code == 0, r.text
    assert "refused the connection without a client certificate" in r.out


def test_client_certificate_and_credentials_see_the_endpoint(
    pki: PKI, hashed: str, serve: Serve, password_file: Path
) -> None:
    srv, web = serve(mtls(pki) + f"basic_auth_users:\n  probe: '{hashed}'\n")
    base = ("--listen", listen(srv), "--web.config.file", str(web))
    cert = ("--tls.cert-file", str(pki.client.cert), "--tls.key-file", str(pki.client.key))
    creds = ("--username", "probe", "--password-file", str(password_file))
    assert healthcheck(*base, *cert, *creds).out.endswith("up: 200\n")
    # a certificate the server refuses is a failure, not a shrug
    stranger = ("--tls.cert-file", str(pki.stranger.cert), "--tls.key-file", str(pki.stranger.key))
    assert healthcheck(*base, *stranger, *creds).code == 1


def test_tls12_only_with_client_certificates_needs_one(pki: PKI, serve: Serve) -> None:
    srv, web = serve(mtls(pki, "max_version: TLS12"))
    r = healthcheck("--listen", listen(srv), "--web.config.file", str(web))
    assert r.code == 1
    assert "--tls.cert-file" in r.err


# ------------------------------------------------------------------ bad input exits 1, not 2


def test_unreadable_inputs_exit_1_with_one_line(tmp_path: Path) -> None:
    r = healthcheck("--web.config.file", str(tmp_path / "absent.yml"))
    assert r.code == 1 and r.err.startswith("error: healthcheck: cannot read the web config")
    bad = tmp_path / "bad.yml"
    bad.write_text("tls_server_config: {cert_file: x.crt}\n", encoding="utf-8")
    r = healthcheck("--web.config.file", str(bad))
    assert r.code == 1 and "key_file" in r.err
    r = healthcheck(env={"SANLENS_LISTEN": "nonsense"})
    assert r.code == 1 and "SANLENS_LISTEN 'nonsense'" in r.err
    r = healthcheck("--username", "probe")
    assert r.code == 1 and "go together" in r.err


# ------------------------------------------------------------------ `sanlens serve` reads the same variables


def test_serve_and_healthcheck_share_the_environment(pki: PKI, hashed: str, tmp_path: Path) -> None:
    port = free_port()
    web = tmp_path / "web.yml"
    web.write_text(tls_config(pki, f"basic_auth_users:\n  probe: '{hashed}'\n"), encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text("log_level: info\n", encoding="utf-8")
    env = {"SANLENS_LISTEN": f"127.0.0.1:{port}", "SANLENS_WEB_CONFIG_FILE": str(web)}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SANLENS_")}
    server = subprocess.Popen(
        [sys.executable, "-m", "sanlens", "serve", "--config", str(config)],
        env={**clean, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while (r := healthcheck(env=env)).code != 0:
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, r.text
            time.sleep(0.3)
        assert "https://" in r.out and "401" in r.out
        # the flags win over the environment
        assert healthcheck("--listen", f"127.0.0.1:{free_port()}", env=env).code == 1
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=20)
    assert f"listening on 127.0.0.1:{port}" in out
    assert f"web config {web}: TLS" in out


def test_serve_refuses_a_bad_listen_variable(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("log_level: info\n", encoding="utf-8")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SANLENS_")}
    p = subprocess.run(
        [sys.executable, "-m", "sanlens", "serve", "--config", str(config)],
        env={**clean, "SANLENS_LISTEN": "no-port"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2
    # the config has nothing to poll (a warning); the bad variable is the error that stops serve
    errors = [line for line in p.stderr.splitlines() if line.startswith("error: ")]
    assert errors and errors[0].startswith("error: SANLENS_LISTEN='no-port'"), p.stderr
    assert "Traceback" not in p.stderr
