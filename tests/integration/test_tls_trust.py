"""TLS against real servers on loopback: the configured trust wins over REQUESTS_CA_BUNDLE, failures say why.

The simulator's certificate is self-signed (a CA for itself), so its cert file is
the ``ca_file`` that verifies it; the other CAs here are made with ``cryptography``.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sanlens.config import AuthConfig, Config, DiagnoseConfig, Duration, HostTarget, OntapTarget, TLSConfig
from sanlens.errors import SourceError
from sanlens.hosts.windows_exporter import WindowsExporterSource
from sanlens.ontap.client import OntapClient
from sanlens.runtime.exporter import Exporter
from sanlens_sim.server import Simulator

x509 = pytest.importorskip(
    "cryptography.x509", reason="cryptography (a dependency of sanlens-sim) makes the certificates"
)
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID  # noqa: E402

import pki  # noqa: E402

ENV_BUNDLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def make_ca(folder: Path, cn: str) -> tuple[Path, x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA certificate (written as PEM) and its key."""
    cert, key = pki.new_ca(cn)
    return pki.write_cert(cert, folder / f"{cn.replace(' ', '-')}.pem"), cert, key


def make_leaf(
    folder: Path, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, dns: str
) -> tuple[Path, Path]:
    """A server certificate for ``dns`` only (not 127.0.0.1), signed by ``ca``."""
    cert, key = pki.leaf((ca, ca_key), dns, [x509.DNSName(dns)], ExtendedKeyUsageOID.SERVER_AUTH)
    return pki.write_cert(cert, folder / "leaf.pem"), pki.write_key(key, folder / "leaf.key")


class _Version(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"version": {"generation": 9, "major": 14, "minor": 1}}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def sim() -> Iterator[Simulator]:
    s = Simulator(scenario="healthy", tls=True).start()
    yield s
    s.stop()


@pytest.fixture
def other_ca(tmp_path: Path) -> Path:
    """A valid CA bundle that did not sign the simulator's certificate."""
    return make_ca(tmp_path, "unrelated ca")[0]


@pytest.fixture
def env_bundle(other_ca: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ENV_BUNDLES:
        monkeypatch.setenv(var, str(other_ca))
    return other_ca


def ontap(url: str, tls: TLSConfig, **kw: object) -> OntapClient:
    return OntapClient(OntapTarget(name="c1", url=url, tls=tls, **kw), retries=0)  # type: ignore[arg-type]


def windows(sim: Simulator, tls: TLSConfig) -> WindowsExporterSource:
    host = sim.hosts[0]
    return WindowsExporterSource(HostTarget(name=host, url=f"{sim.url}/windows/{host}/metrics", tls=tls))


# ------------------------------------------------------------------ the configured trust wins
def test_ca_file_wins_over_a_ca_bundle_named_in_the_environment(sim: Simulator, env_bundle: Path) -> None:
    assert sim.cert_file is not None
    tls = TLSConfig(ca_file=str(sim.cert_file))
    assert ontap(sim.url, tls).version().generation == 9
    assert windows(sim, tls).poll().view is not None


def test_insecure_skip_verify_holds_with_a_ca_bundle_named_in_the_environment(
    sim: Simulator, env_bundle: Path
) -> None:
    tls = TLSConfig(insecure_skip_verify=True)
    assert ontap(sim.url, tls).version().generation == 9
    assert windows(sim, tls).poll().view is not None


def test_without_ca_file_the_environment_bundle_is_used_and_named(sim: Simulator, env_bundle: Path) -> None:
    with pytest.raises(SourceError) as e:
        ontap(sim.url, TLSConfig()).version()
    assert e.value.reason == "tls"
    assert f"(CA bundle: REQUESTS_CA_BUNDLE {env_bundle})" in str(e.value)


# ------------------------------------------------------------------ failures say which bundle and why
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ENV_BUNDLES:
        monkeypatch.delenv(var, raising=False)


def test_an_untrusted_self_signed_certificate_names_the_default_bundle(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_env(monkeypatch)
    with pytest.raises(SourceError) as e:
        ontap(sim.url, TLSConfig()).version()
    msg = str(e.value)
    assert e.value.reason == "tls" and "\n" not in msg
    assert "/api/cluster: certificate verify failed: self" in msg and "signed certificate" in msg
    assert "(CA bundle: the default bundle (certifi) " in msg and msg.endswith("cacert.pem)")


def test_a_ca_file_that_did_not_sign_the_certificate_is_named(
    sim: Simulator, other_ca: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_env(monkeypatch)
    with pytest.raises(SourceError) as e:
        windows(sim, TLSConfig(ca_file=str(other_ca))).poll()
    assert e.value.reason == "tls"
    assert "certificate verify failed: self" in str(e.value)
    assert str(e.value).endswith(f"(CA bundle: ca_file {other_ca})")


def test_a_hostname_mismatch_is_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_env(monkeypatch)
    ca_path, ca, ca_key = make_ca(tmp_path, "test ca")
    cert, key = make_leaf(tmp_path, ca, ca_key, "cluster9.example")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Version)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        for host in ("localhost", "127.0.0.1"):
            with pytest.raises(SourceError) as e:
                ontap(f"https://{host}:{port}", TLSConfig(ca_file=str(ca_path))).version()
            assert e.value.reason == "tls"
            # sanlens's frame around OpenSSL's reason, which names the host it was asked for (the
            # reason's wording is OpenSSL's and changes between its releases: only its gist is held)
            msg = str(e.value)
            assert msg.startswith("/api/cluster: certificate verify failed: ")
            assert msg.endswith(f" (CA bundle: ca_file {ca_path})")
            assert "mismatch" in msg and host in msg, msg
    finally:
        server.shutdown()
        server.server_close()


def test_a_missing_ca_file_is_a_tls_error_naming_the_file(sim: Simulator, tmp_path: Path) -> None:
    absent = tmp_path / "absent-ca.pem"
    for source in (
        lambda: ontap(sim.url, TLSConfig(ca_file=str(absent))).version(),
        lambda: windows(sim, TLSConfig(ca_file=str(absent))).poll(),
    ):
        with pytest.raises(SourceError) as e:
            source()
        assert e.value.reason == "tls"
        assert f"invalid path: {absent} (CA bundle: ca_file {absent})" in str(e.value)


def test_the_poll_error_keeps_its_reason_and_logs_one_line_without_secrets(
    sim: Simulator, other_ca: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pw = tmp_path / "pw"
    pw.write_text("s3cret-Pa55\n")
    cfg = Config(
        listen="127.0.0.1:0",
        ontap=[
            OntapTarget(
                name="c1",
                url=sim.url,
                auth=AuthConfig(username="admin", password_file=str(pw)),
                tls=TLSConfig(ca_file=str(other_ca)),
                poll_interval=Duration(1.0),
            )
        ],
        diagnose=DiagnoseConfig(sustain_scale=0.01),
    )
    exp = Exporter(cfg)
    with caplog.at_level(logging.WARNING, logger="sanlens.runtime.poller"):
        exp.start()
        try:
            deadline, page = time.monotonic() + 20, ""
            while time.monotonic() < deadline and 'reason="tls"' not in page:
                time.sleep(0.2)
                with urllib.request.urlopen(f"http://127.0.0.1:{exp.port}/metrics", timeout=5) as r:
                    page = r.read().decode()
        finally:
            exp.stop()
    assert any(
        line.startswith("sanlens_poll_errors_total{") and 'reason="tls"' in line for line in page.splitlines()
    )
    [record] = [r for r in caplog.records if "failed (tls)" in r.getMessage()][:1]
    line = record.getMessage()
    assert record.exc_info is None and "\n" not in line
    assert "certificate verify failed" in line and f"(CA bundle: ca_file {other_ca})" in line
    assert "s3cret" not in caplog.text and "s3cret" not in page


# ------------------------------------------------------------------ one context per trust decision
class _Loads:
    """Counts the CA loads of every SSLContext (the system store, a CA file or directory)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.default = self.files = 0
        real_default, real_files = ssl.SSLContext.load_default_certs, ssl.SSLContext.load_verify_locations

        def default(ctx: ssl.SSLContext, *a: object, **k: object) -> None:
            self.default += 1
            real_default(ctx, *a, **k)  # type: ignore[arg-type]

        def files(ctx: ssl.SSLContext, *a: object, **k: object) -> None:
            self.files += 1
            real_files(ctx, *a, **k)  # type: ignore[arg-type]

        monkeypatch.setattr(ssl.SSLContext, "load_default_certs", default)
        monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", files)


@pytest.mark.parametrize("trust", ["insecure_skip_verify", "ca_file"])
def test_new_connections_reuse_one_context_instead_of_loading_cas_each_time(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch, trust: str
) -> None:
    """A cluster that closes idle connections between polls makes every poll open new ones; each
    must not load the system CAs or the CA file again (~45 ms of CPU for the system store)."""
    _no_env(monkeypatch)
    assert sim.cert_file is not None
    tls = (
        TLSConfig(insecure_skip_verify=True)
        if trust == "insecure_skip_verify"
        else TLSConfig(ca_file=str(sim.cert_file))
    )
    client = ontap(sim.url, tls)
    loads = _Loads(monkeypatch)
    for _ in range(3):
        assert client.version().generation == 9
        client.adapter.poolmanager.clear()  # the idle connections closed: the next request reconnects
    assert loads.default == 0, "no system CA store loaded for a connection"
    assert loads.files == (1 if trust == "ca_file" else 0), "the CA file loaded once, for the shared context"
    assert len(client.adapter._contexts) == 1


def test_a_shared_context_still_refuses_a_certificate_its_ca_file_did_not_sign(
    sim: Simulator, other_ca: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_env(monkeypatch)
    client = ontap(sim.url, TLSConfig(ca_file=str(other_ca)))
    for _ in range(2):
        with pytest.raises(SourceError) as e:
            client.version()
        assert e.value.reason == "tls"
        assert "certificate verify failed" in str(e.value)


def test_a_ca_file_replaced_on_disk_is_trusted_from_the_next_request(
    sim: Simulator, other_ca: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared context follows the file: rotating the CA file takes effect without a restart."""
    _no_env(monkeypatch)
    assert sim.cert_file is not None
    ca = tmp_path / "ca.pem"
    ca.write_bytes(sim.cert_file.read_bytes())
    client = ontap(sim.url, TLSConfig(ca_file=str(ca)))
    assert client.version().generation == 9
    ca.write_bytes(other_ca.read_bytes() + b"\n")  # another CA (a different size, whatever the mtime)
    with pytest.raises(SourceError) as e:
        client.version()
    assert "certificate verify failed" in str(e.value)
    ca.write_bytes(sim.cert_file.read_bytes())
    assert client.version().generation == 9
    assert len(client.adapter._contexts) == 1, "the replaced file's context is dropped"
