"""The web config file: the exporter-toolkit format, checked key by key; basic auth; rate limit."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import bcrypt
import pytest
from tests.pki import PKI, make_pki

from sanlens.config.web import RateLimitFile, WebConfigError, _go_duration, parse_web_config
from sanlens.serve.web_security import (
    BasicAuth,
    TokenBucket,
    WebSecurity,
    load_web_config,
    parse_basic_authorization,
    tls_context,
)

HASH = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("pki"))


def refused(text: str, file: str = "web.yml") -> WebConfigError:
    with pytest.raises(WebConfigError) as e:
        parse_web_config(text, file)
    return e.value


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# ------------------------------------------------------------------ the file


def test_an_empty_file_means_plain_http_without_auth() -> None:
    for text in ("", "---\n", "# nothing\n", "tls_server_config: {}\n", "tls_server_config:\n"):
        cfg = parse_web_config(text)
        assert cfg.tls is None and not cfg.users and not cfg.headers and cfg.rate_limit is None, text


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        ("tls_config: {}\n", "tls_config", 1),
        ("tls_server_config:\n  cert_file: a\n  cert_fiel: b\n", "tls_server_config.cert_fiel", 3),
        ("http_server_config:\n  http3: true\n", "http_server_config.http3", 2),
        ("http_server_config:\n  headers:\n    Server: x\n", "http_server_config.headers.Server", 3),
        ("rate_limit:\n  every: 1s\n", "rate_limit.every", 2),
    ],
)
def test_unknown_keys_are_errors_with_their_path_and_line(text: str, path: str, line: int) -> None:
    e = refused(text)
    assert e.path == path and e.line == line and e.file == "web.yml"
    assert "unknown key (allowed:" in str(e)
    assert str(e).startswith(f"web.yml:{line}: {path}: unknown key")


@pytest.mark.parametrize(
    ("text", "path", "complaint"),
    [
        ("- a\n", "", "expected a mapping"),
        ("basic_auth_users: [a]\n", "basic_auth_users", "expected a mapping"),
        ("basic_auth_users:\n  alice: hunter2\n", "basic_auth_users.alice", "not a bcrypt hash"),
        ("basic_auth_users:\n  alice: 12\n", "basic_auth_users.alice", "expected a string"),
        ("tls_server_config:\n  cert_file: a\n", "tls_server_config", "missing one of key or key_file"),
        ("tls_server_config:\n  key_file: a\n", "tls_server_config", "missing one of cert or cert_file"),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Maybe\n",
            "tls_server_config.client_auth_type",
            "must be one of NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAnyClientCert\n",
            "tls_server_config.client_auth_type",
            "without verifying it",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: ca\n",
            "tls_server_config.client_auth_type",
            "client CA is set but client_auth_type is NoClientCert",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
            "tls_server_config.client_ca_file",
            "needs client_ca_file",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: VerifyClientCertIfGiven\n"
            "  client_ca_file: ca\n  client_allowed_sans: [x]\n",
            "tls_server_config.client_allowed_sans",
            "needs client_auth_type RequireAndVerifyClientCert",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS1.3\n",
            "tls_server_config.min_version",
            "must be one of TLS10, TLS11, TLS12, TLS13",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  max_version: TLS12\n",
            "tls_server_config.min_version",
            "is above max_version",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_AES_128_GCM_SHA256, RC4]\n",
            "tls_server_config.cipher_suites[1]",
            "unknown cipher suite 'RC4'",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  curve_preferences: [X25519]\n",
            "tls_server_config.curve_preferences",
            "not supported by sanlens",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  cert: PEM\n  key_file: b\n",
            "tls_server_config.cert",
            "give cert_file or cert, not both",
        ),
        (
            "http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
            "http_server_config.headers.X-Frame-Options",
            "must be one of deny, sameorigin",
        ),
        ("http_server_config:\n  http2: yes please\n", "http_server_config.http2", "expected true or false"),
        ("rate_limit:\n  interval: soon\n  burst: 1\n", "rate_limit.interval", "expected a duration"),
        ("rate_limit:\n  interval: 1s\n", "rate_limit.burst", "must be at least 1"),
        ("basic_auth_users:\n  a: x\n  a: y\n", "basic_auth_users.a", "duplicate key"),
    ],
)
def test_bad_values_are_errors_with_their_path(text: str, path: str, complaint: str) -> None:
    e = refused(text)
    assert e.path == path, str(e)
    assert complaint in str(e), str(e)


def test_a_bcrypt_hash_never_appears_in_an_error() -> None:
    e = refused(f"basic_auth_users:\n  alice: {HASH}x\n")
    assert HASH not in str(e)


def test_invalid_yaml_names_the_line() -> None:
    e = refused("basic_auth_users:\n  a: [\n")
    assert "invalid YAML" in str(e) and e.line is not None


def test_the_toolkit_example_parses(pki: PKI, tmp_path: Path) -> None:
    """A file as the exporter-toolkit documents it, relative paths resolved against its folder."""
    (tmp_path / "certs").mkdir()
    for src, name in ((pki.server.cert, "tls.crt"), (pki.server.key, "tls.key"), (pki.ca, "ca.crt")):
        (tmp_path / "certs" / name).write_bytes(src.read_bytes())
    web = tmp_path / "web-config.yml"
    web.write_text(
        f"""
tls_server_config:
  cert_file: certs/tls.crt
  key_file: certs/tls.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: certs/ca.crt
  client_allowed_sans: [prometheus.monitoring.svc]
  min_version: TLS13
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256]
  prefer_server_cipher_suites: false
  curve_preferences: []
http_server_config:
  http2: true
  headers:
    X-Content-Type-Options: nosniff
    Strict-Transport-Security: ""
basic_auth_users:
  prometheus: {HASH}
rate_limit:
  interval: 1m30s
  burst: 10
""",
        encoding="utf-8",
    )
    cfg = load_web_config(web)
    assert cfg.tls is not None
    assert cfg.tls.cert_file == tmp_path / "certs" / "tls.crt"
    assert cfg.tls.client_ca_file == tmp_path / "certs" / "ca.crt"
    assert cfg.tls.min_version is ssl.TLSVersion.TLSv1_3
    assert cfg.tls.ciphers == ("ECDHE-ECDSA-AES128-GCM-SHA256",)
    assert cfg.headers == {"X-Content-Type-Options": "nosniff"}  # a blank header is unset
    assert cfg.users == {"prometheus": HASH.encode()}
    assert cfg.rate_limit == RateLimitFile.model_validate({"interval": "1m30s", "burst": 10})
    assert set(cfg.files()) == {tmp_path / "certs" / n for n in ("tls.crt", "tls.key", "ca.crt")}
    ctx = tls_context(cfg.tls)
    assert ctx.verify_mode is ssl.CERT_REQUIRED and ctx.minimum_version is ssl.TLSVersion.TLSv1_3


def test_inline_pem_loads_like_files(pki: PKI) -> None:
    cert = pki.server.cert.read_text(encoding="utf-8")
    key = pki.server.key.read_text(encoding="utf-8")
    ca = pki.ca.read_text(encoding="utf-8")

    def block(text: str) -> str:
        return "|\n" + "".join(f"    {line}\n" for line in text.splitlines())

    cfg = parse_web_config(
        "tls_server_config:\n"
        f"  cert: {block(cert)}  key: {block(key)}  client_ca: {block(ca)}"
        "  client_auth_type: RequireAndVerifyClientCert\n"
    )
    assert cfg.tls is not None and cfg.files() == ()
    assert "key" not in repr(cfg.tls).replace("key_file", "")  # the inline key stays out of reprs
    assert tls_context(cfg.tls).verify_mode is ssl.CERT_REQUIRED


def test_unreadable_certificates_fail_at_load_with_the_key_path(pki: PKI, tmp_path: Path) -> None:
    web = tmp_path / "web.yml"
    web.write_text("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n", encoding="utf-8")
    with pytest.raises(WebConfigError, match=r"tls_server_config.cert_file: cannot load"):
        load_web_config(web)
    web.write_text(
        f"tls_server_config:\n  cert_file: {pki.server.cert}\n  key_file: {pki.client.key}\n",
        encoding="utf-8",
    )
    with pytest.raises(
        WebConfigError, match=r"tls_server_config.cert_file: cannot load .*key values mismatch"
    ):
        load_web_config(web)
    web.write_text(
        f"tls_server_config:\n  cert_file: {pki.server.cert}\n  key_file: {pki.server.key}\n"
        f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {tmp_path}/none.crt\n",
        encoding="utf-8",
    )
    with pytest.raises(WebConfigError, match=r"tls_server_config.client_ca_file: cannot load the client CA"):
        load_web_config(web)
    with pytest.raises(WebConfigError, match="cannot read"):
        load_web_config(tmp_path / "absent.yml")


def test_a_bad_file_stops_the_server_before_it_listens(tmp_path: Path) -> None:
    web = tmp_path / "web.yml"
    web.write_text("basic_auth_users:\n  a: plaintext\n", encoding="utf-8")
    with pytest.raises(WebConfigError):
        WebSecurity(web)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("1s", 1.0), ("250ms", 0.25), ("1m30s", 90.0), ("1.5h", 5400.0), ("1s", 1.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert _go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1", "s", "1x", "1s 2s", "-1s"])
def test_not_go_durations(text: str) -> None:
    assert _go_duration(text) is None


# ------------------------------------------------------------------ basic auth


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (basic("alice", "pw"), ("alice", b"pw")),
        (basic("alice", "p:w"), ("alice", b"p:w")),  # the first colon splits
        (basic("alice", ""), ("alice", b"")),
        ("BASIC " + base64.b64encode(b"a:b").decode(), ("a", b"b")),
        (None, None),
        ("", None),
        ("Bearer abc", None),
        ("Basic", None),
        ("Basic not*base64", None),
        ("Basic " + base64.b64encode(b"no-colon").decode(), None),
        ("Basic " + base64.b64encode(b"\xff:x").decode(), None),
    ],
)
def test_parse_basic_authorization(header: str | None, expected: tuple[str, bytes] | None) -> None:
    assert parse_basic_authorization(header) == expected


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_success_is_cached_for_the_ttl_then_checked_again() -> None:
    clock = Clock()
    auth = BasicAuth({"alice": HASH.encode()}, ttl=60, clock=clock)
    assert auth.check(basic("alice", "pw")) and auth.bcrypt_checks == 1
    clock.now += 59
    assert auth.check(basic("alice", "pw")) and auth.bcrypt_checks == 1
    clock.now += 2
    assert auth.check(basic("alice", "pw")) and auth.bcrypt_checks == 2


def test_the_cache_never_admits_another_password_or_user() -> None:
    auth = BasicAuth({"alice": HASH.encode(), "bob": HASH.encode()})
    assert auth.check(basic("alice", "pw"))
    assert not auth.check(basic("alice", "pw2"))
    assert not auth.check(basic("alice", "p"))
    assert not auth.check(basic("carol", "pw"))
    assert not auth.check(basic("Alice", "pw"))
    assert auth.check(basic("bob", "pw"))


def test_unknown_users_pay_bcrypt_too() -> None:
    """Same work for a missing user as for a wrong password: timing does not list the users."""
    auth = BasicAuth({"alice": HASH.encode()})
    assert not auth.check(basic("mallory", "pw"))
    assert not auth.check(basic("mallory", "pw"))
    assert auth.bcrypt_checks == 2


def test_overlong_passwords_are_refused_not_raised() -> None:
    auth = BasicAuth({"alice": HASH.encode()})
    assert not auth.check(basic("alice", "x" * 100))


def test_toolkit_style_2y_hashes_are_accepted() -> None:
    """htpasswd -B writes $2y$; bcrypt reads it as $2b$."""
    y = "$2y$" + HASH[4:]
    cfg = parse_web_config(f"basic_auth_users:\n  alice: '{y}'\n")
    assert BasicAuth(cfg.users).check(basic("alice", "pw"))


def test_token_bucket() -> None:
    clock = Clock()
    bucket = TokenBucket(RateLimitFile.model_validate({"interval": "10s", "burst": 2}), clock=clock)
    assert [bucket.allow() for _ in range(3)] == [True, True, False]
    clock.now += 10
    assert [bucket.allow() for _ in range(2)] == [True, False]
    clock.now += 1000
    assert [bucket.allow() for _ in range(3)] == [True, True, False]  # never more than the burst


def test_reload_checks_are_throttled(tmp_path: Path) -> None:
    clock = Clock()
    web = tmp_path / "web.yml"
    web.write_text("", encoding="utf-8")
    sec = WebSecurity(web, check_interval=5, clock=clock)
    assert sec.current().auth is None
    web.write_text(f"basic_auth_users:\n  alice: {HASH}\n", encoding="utf-8")
    clock.now += 1
    assert sec.current().auth is None  # not looked at yet
    clock.now += 5
    assert sec.current().auth is not None
    auth = sec.current().auth
    web.write_text(f"basic_auth_users:\n  alice: {HASH}\n# touched\n", encoding="utf-8")
    clock.now += 5
    assert sec.current().auth is auth  # same users: the cache survives the reload
