"""`sanlens healthcheck`: does the `sanlens serve` of this container answer? Exit 0 yes, 1 no.

The container image's HEALTHCHECK and the chart's exec probes run it. It finds the server
the way serve is told where to listen and how to secure itself: ``--listen`` (else
``$SANLENS_LISTEN``, else ``:9842``) and ``--web.config.file`` (else
``$SANLENS_WEB_CONFIG_FILE``), which `sanlens serve` reads too, so one setting serves both.
A wildcard listen address (``:9842``, ``0.0.0.0``, ``[::]``) is checked on loopback.

With ``tls_server_config`` it speaks TLS, verifying the server against the certificate the
web config names, the one the server presents: on loopback that certificate is pinned (its
names are the service's, not 127.0.0.1's); elsewhere the name is checked too
(``--tls.server-name``, else the host). Verification is never turned off.

A server that refuses an unauthenticated client the way sanlens does (401 with its
``Basic realm="sanlens"``, a TLS alert demanding a client certificate, 429 from the rate
limit) has accepted the connection, completed the handshake and parsed the request: it is
alive, which is what a liveness check asks, and the bcrypt hashes of the web config cannot
give a password anyway. Such an answer exits 0 and says what was left unseen; give a probe
user (``--username`` and ``--password-file``) and a client certificate (``--tls.cert-file``,
``--tls.key-file``) to see the endpoint's own answer, e.g. ``--path /-/ready``'s 503 before the
first poll. Credentials given and refused exit 1. Nothing secret is printed.

Exit codes: 0 up, 1 down or the check could not run (Docker's HEALTHCHECK reserves 2).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import ipaddress
import os
import socket
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sanlens import cliargs
from sanlens.errors import ConfigError

if TYPE_CHECKING:  # the web config module loads bcrypt: only when a web config is given
    from sanlens.config.web import TLSFile as TLSServerConfig

ENV_USERNAME = "SANLENS_HEALTHCHECK_USERNAME"
ENV_PASSWORD_FILE = "SANLENS_HEALTHCHECK_PASSWORD_FILE"
ENV_CERT_FILE = "SANLENS_HEALTHCHECK_CERT_FILE"
ENV_KEY_FILE = "SANLENS_HEALTHCHECK_KEY_FILE"
DEFAULT_LISTEN = ":9842"  # the config's default listen address
DEFAULT_TIMEOUT = 4.0  # under the 5 s of the image's HEALTHCHECK and the chart's probes
REALM = 'realm="sanlens"'
PLAIN_HTTP_ON_TLS = b"Client sent an HTTP request to an HTTPS server"


class CheckError(Exception):
    """The check could not be made (bad arguments, unreadable files): exit 1 with this message."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    loopback: bool

    @property
    def authority(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Outcome:
    up: bool
    message: str
    hint: str = ""


def target(listen: str) -> Target:
    """Where to connect for a server listening on ``listen`` (host:port or :port)."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    return Target(host, int(port), loopback)


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise CheckError(f"cannot read the {what} {path}: {e.strerror or e}") from None


def _tls_context(tls: TLSServerConfig, where: Target, args: argparse.Namespace) -> tuple[ssl.SSLContext, str]:
    """A client context trusting the server's own certificate, and the name to send and check."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and check_hostname
    ctx.minimum_version = tls.min_version
    ctx.maximum_version = tls.max_version
    pem = tls.cert if tls.cert is not None else _read(str(tls.cert_file), "certificate").decode("latin-1")
    try:
        ctx.load_verify_locations(cadata=pem)
    except (ssl.SSLError, ValueError) as e:
        raise CheckError(f"the server certificate {tls.cert_file or '(inline)'} does not load: {e}") from None
    # the leaf itself (and any chain in the file) is a trust anchor: the certificate is pinned
    ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    if where.loopback and not args.tls_server_name:
        ctx.check_hostname = False  # our own server: the pinned certificate, not a name, identifies it
    if args.tls_cert_file or args.tls_key_file:
        if not (args.tls_cert_file and args.tls_key_file):
            raise CheckError("--tls.cert-file and --tls.key-file go together")
        try:
            ctx.load_cert_chain(args.tls_cert_file, args.tls_key_file)
        except (OSError, ssl.SSLError) as e:
            raise CheckError(f"cannot load the client certificate {args.tls_cert_file}: {e}") from None
    return ctx, args.tls_server_name or where.host


def _authorization(args: argparse.Namespace) -> str | None:
    if not args.username and not args.password_file:
        return None
    if not (args.username and args.password_file):
        raise CheckError("--username and --password-file go together")
    password = _read(args.password_file, "password file").rstrip(b"\r\n")
    return "Basic " + base64.b64encode(args.username.encode() + b":" + password).decode("ascii")


def check(args: argparse.Namespace) -> Outcome:
    """One GET of ``args.path``, judged as described in the module docstring."""
    listen = args.listen or os.environ.get(cliargs.ENV_LISTEN) or DEFAULT_LISTEN
    try:
        cliargs.listen_address(listen)
    except argparse.ArgumentTypeError as e:
        source = (
            "--listen"
            if args.listen
            else cliargs.ENV_LISTEN
            if os.environ.get(cliargs.ENV_LISTEN)
            else "listen"
        )
        raise CheckError(f"{source} {listen!r}: {e}") from None
    where = target(listen)
    web_file = args.web_config_file or os.environ.get(cliargs.ENV_WEB_CONFIG_FILE) or ""
    tls: TLSServerConfig | None = None
    users = False
    if web_file:
        from sanlens.config.web import parse_web_config

        text = _read(web_file, "web config").decode("utf-8", errors="replace")
        cfg = parse_web_config(text, web_file)
        tls, users = cfg.tls, bool(cfg.users)
    authorization = _authorization(args)
    context, server_name = _tls_context(tls, where, args) if tls is not None else (None, where.host)
    scheme = "https" if context else "http"
    url = f"{scheme}://{where.authority}{args.path}"
    # With required client certificates and none to give, the server's refusal comes after a
    # TLS 1.3 handshake it completed (its certificate verified): proof enough that it is alive.
    # A TLS 1.2 server aborts inside the handshake, which no client can tell from a failure.
    refused_without_cert = bool(
        tls is not None and tls.client_auth_type == "RequireAndVerifyClientCert" and not args.tls_cert_file
    )
    try:
        raw = socket.create_connection((where.host, where.port), timeout=args.timeout)
    except ConnectionRefusedError:
        return Outcome(False, f"{url}: connection refused: nothing listens on {where.authority}")
    except TimeoutError:
        return Outcome(False, f"{url}: no connection within {args.timeout:g} s")
    except OSError as e:
        return Outcome(False, f"{url}: cannot connect: {e.strerror or e}")
    conn = http.client.HTTPConnection(where.host, where.port, timeout=args.timeout)
    conn.sock = raw
    try:
        if context is not None:
            try:
                conn.sock = context.wrap_socket(raw, server_hostname=server_name)
            except ssl.SSLCertVerificationError as e:
                pinned = (
                    tls.cert_file if tls is not None and tls.cert_file else "the web config's certificate"
                )
                return Outcome(
                    False,
                    f"{url}: the server's certificate does not verify against {pinned}: {e.verify_message}",
                    "is another process on this port, or was the certificate just replaced? (retried next time)",
                )
            except (OSError, ssl.SSLError) as e:  # SSLError is an OSError; TimeoutError too
                reason = getattr(e, "reason", None) or e.strerror or type(e).__name__
                hint = ""
                if refused_without_cert:
                    hint = "the server requires a client certificate: give --tls.cert-file and --tls.key-file"
                return Outcome(False, f"{url}: TLS handshake failed: {reason}", hint)
        handshake_done = context is not None and conn.sock.version() == "TLSv1.3"  # type: ignore[attr-defined]
        headers = {"Host": where.authority, "User-Agent": "sanlens-healthcheck", "Connection": "close"}
        if authorization:
            headers["Authorization"] = authorization
        try:
            conn.request("GET", args.path, headers=headers)
            response = conn.getresponse()
            status = response.status
            body = response.read(512)
            challenge = response.getheader("WWW-Authenticate") or ""
        except TimeoutError:
            return Outcome(False, f"{url}: no answer within {args.timeout:g} s")
        except (OSError, http.client.HTTPException) as e:
            if refused_without_cert and handshake_done:
                return Outcome(
                    True,
                    f"{url}: up: the server completed the TLS handshake as its own certificate and "
                    "refused the connection without a client certificate (give --tls.cert-file and "
                    "--tls.key-file to see the endpoint itself)",
                )
            return Outcome(False, f"{url}: {type(e).__name__}: {e}")
    finally:
        conn.close()

    if status == 200:
        return Outcome(True, f"{url}: up: 200")
    if status == 401 and REALM in challenge:
        if authorization:
            return Outcome(False, f"{url}: 401: the server refused the credentials of {args.username!r}")
        return Outcome(
            True,
            f"{url}: up: 401, basic auth required (give --username and --password-file to see the "
            "endpoint itself)",
        )
    if status == 429:
        return Outcome(True, f"{url}: up: 429, rate limited by the web config")
    if status == 400 and PLAIN_HTTP_ON_TLS in body:
        return Outcome(
            False,
            f"{url}: the server speaks TLS",
            f"give the server's web config: --web.config.file or {cliargs.ENV_WEB_CONFIG_FILE}",
        )
    first = body.decode("utf-8", errors="replace").strip().splitlines()
    detail = f": {first[0][:120]}" if first else ""
    if status == 401 and not users:
        detail += " (the web config given has no basic_auth_users: is it the server's?)"
    return Outcome(False, f"{url}: {status}{detail}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = __doc__.split("\n\n", 1)[0].replace("`", "") if __doc__ else None  # plain text
    p.add_argument(
        "--listen",
        default=None,
        help=f"the server's listen address, host:port or :port (default ${cliargs.ENV_LISTEN}, else {DEFAULT_LISTEN})",
    )
    p.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        default=None,
        help=f"the server's web config: TLS and basic auth (default ${cliargs.ENV_WEB_CONFIG_FILE})",
    )
    p.add_argument("--path", default="/-/healthy", help="the endpoint to ask (default /-/healthy)")
    p.add_argument(
        "--timeout",
        type=cliargs.positive_seconds,
        default=DEFAULT_TIMEOUT,
        help=f"seconds to wait for the connection and for the answer (default {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--username",
        default=os.environ.get(ENV_USERNAME) or None,
        help=f"a basic auth user of the web config (default ${ENV_USERNAME})",
    )
    p.add_argument(
        "--password-file",
        metavar="FILE",
        default=os.environ.get(ENV_PASSWORD_FILE) or None,
        help=f"a file holding that user's password (default ${ENV_PASSWORD_FILE})",
    )
    p.add_argument(
        "--tls.cert-file",
        dest="tls_cert_file",
        metavar="FILE",
        default=os.environ.get(ENV_CERT_FILE) or None,
        help=f"a client certificate, for client_auth_type RequireAndVerifyClientCert (default ${ENV_CERT_FILE})",
    )
    p.add_argument(
        "--tls.key-file",
        dest="tls_key_file",
        metavar="FILE",
        default=os.environ.get(ENV_KEY_FILE) or None,
        help=f"its key (default ${ENV_KEY_FILE})",
    )
    p.add_argument(
        "--tls.server-name",
        dest="tls_server_name",
        metavar="NAME",
        default=None,
        help="check this name on the certificate (default: none on loopback, where the certificate "
        "itself is pinned; the host elsewhere)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        outcome = check(args)
    except (CheckError, ConfigError) as e:
        print(f"error: healthcheck: {e}", file=sys.stderr)
        hint = getattr(e, "hint", "")
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return 1
    if outcome.up:
        print(f"ok: {outcome.message}")
        return 0
    print(f"error: {outcome.message}", file=sys.stderr)
    if outcome.hint:
        print(f"hint: {outcome.hint}", file=sys.stderr)
    return 1
