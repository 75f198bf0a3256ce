"""The web config file (`sanlens serve --web.config.file`): TLS and basic auth for every endpoint.

The format is the Prometheus exporter-toolkit's (docs/securing.md), so one file and one habit
serve sanlens and the Go exporters beside it. The file is read by the config loader into the
pydantic models below, so its problems are located like the config's and the chart's schema
is their JSON Schema; relative paths are resolved against the file's folder as they are read.
Serving it (TLS contexts, basic auth, the rate limit, reloads) is ``sanlens.serve.web_security``.
"""

from __future__ import annotations

import ipaddress
import re
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from sanlens.config.load import Report, parse
from sanlens.config.rules import rule_errors
from sanlens.config.types import Explain
from sanlens.errors import ConfigError, ConfigErrors

TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
VERIFIED_CLIENT_AUTH = ("NoClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert")
# These ask for a certificate without verifying it, which OpenSSL through Python's ssl cannot do.
UNVERIFIED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
# Go's cipher suite names (crypto/tls CipherSuites()) -> OpenSSL's. The TLS 1.3 suites are
# not configurable, in Go as in OpenSSL through Python: they are accepted and left alone.
CIPHER_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
}
TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
# http_server_config.headers: the headers that may be set, and their allowed values (None: any).
HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}
BCRYPT_HASH = re.compile(r"^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$")
# A Go duration (time.ParseDuration) as rate_limit.interval takes it; also the chart schema's pattern.
GO_DURATION_PATTERN = r"^(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+)$"
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class WebConfigError(ConfigError):
    """A web config problem, located by file, key path and line like a config error."""


class WebConfigErrors(ConfigErrors, WebConfigError):
    """Every problem of one web config file."""


def _go_duration(text: str) -> float | None:
    """Seconds in a Go duration (1m30s, 250ms, 0), or None when it is not one."""
    if not re.fullmatch(GO_DURATION_PATTERN, text):
        return None
    return sum(float(n) * _GO_UNITS[u] for n, u in re.findall(r"([\d.]+)(\D+)", text))


def _choice(values: Mapping[str, Any] | tuple[str, ...], default: str | None = None) -> Any:
    """A string among ``values``, refused in the toolkit's words; a mapping's value is what it reads as.

    With a ``default``, an absent or empty key reads as the default's value.
    """
    choices = tuple(values)
    as_value: Any = values.get if isinstance(values, Mapping) else lambda v: v

    def check(value: Any) -> Any:
        if _string(value) and value not in choices:
            raise PydanticCustomError("web_choice", f"must be one of {', '.join(choices)}")
        return as_value(value or default) if value or default else None

    return Annotated[
        Any, PlainValidator(check), WithJsonSchema({"enum": list(choices)}), Field(validate_default=True)
    ]


def _string(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise PydanticCustomError("string_type", "expected a string")
    return value


def _beside(value: Any, info: ValidationInfo) -> Path | None:
    """A file the web config names, relative to the web config's folder (the ``base`` of the context)."""
    return Path((info.context or {}).get("base", "")) / value if _string(value) else None


def _seconds(value: Any) -> float:
    if (seconds := _go_duration(str(_string(value)).strip())) is None:
        raise PydanticCustomError("web_value", "expected a duration such as 100ms, 1s or 1m30s")
    return seconds


def _bcrypt(value: str) -> str:
    if not BCRYPT_HASH.match(value.strip()):
        raise PydanticCustomError(
            "web_value",
            "not a bcrypt hash ($2y$10$ and 53 characters, e.g. from htpasswd -nBC 10 \"\" | tr -d ':\\n')",
        )
    return value


Text = str | None
Texts = list[str] | None
FilePath = Annotated[
    Path | None, PlainValidator(_beside), WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]})
]
Seconds = Annotated[
    float, PlainValidator(_seconds), WithJsonSchema({"type": "string", "pattern": GO_DURATION_PATTERN})
]
BcryptHash = Annotated[
    str, AfterValidator(_bcrypt), WithJsonSchema({"type": "string", "pattern": BCRYPT_HASH.pattern})
]


class _Web(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, hide_input_in_errors=True)


class TLSFile(_Web):
    """``tls_server_config``: the server certificate, the client certificate policy, versions."""

    cert_file: FilePath = Field(None, description="Server certificate (PEM), e.g. /etc/sanlens/tls/tls.crt.")
    key_file: FilePath = Field(None, description="Its private key (PEM), e.g. /etc/sanlens/tls/tls.key.")
    cert: Text = Field(None, repr=False, description="The certificate inline, instead of cert_file.")
    key: Text = Field(None, repr=False, description="The key inline, instead of key_file.")
    client_auth_type: _choice(VERIFIED_CLIENT_AUTH + UNVERIFIED_CLIENT_AUTH) = Field(  # type: ignore[valid-type]
        None, description="Client certificates: RequireAndVerifyClientCert for mutual TLS."
    )
    client_ca_file: FilePath = Field(None, description="CA that signs the client certificates.")
    client_ca: Text = Field(None, description="That CA inline, instead of client_ca_file.")
    client_allowed_sans: Texts = Field(
        None, description="Client certificate SANs admitted (DNS, IP, e-mail, URI)."
    )
    min_version: _choice(TLS_VERSIONS, "TLS12") = None  # type: ignore[valid-type]
    max_version: _choice(TLS_VERSIONS, "TLS13") = None  # type: ignore[valid-type]
    cipher_suites: Texts = Field(None, description="TLS 1.2 suites by their Go names.")
    prefer_server_cipher_suites: bool | None = Field(None, json_schema_extra={"default": True})
    curve_preferences: Annotated[
        Texts,
        Field(max_length=0, description="Not supported by sanlens."),
        Explain(
            "not supported by sanlens (Python's ssl module takes no curve list): remove it to "
            "use OpenSSL's default groups"
        ),
    ] = None

    @model_validator(mode="after")
    def _policy(self) -> Self:
        """The checks across keys, in the toolkit's words; the first that fails is told."""
        if not self.enabled:
            return self
        auth = self.client_auth_type or "NoClientCert"
        has_ca = bool(self.client_ca_file or self.client_ca)
        checks: list[tuple[tuple[str | int, ...], str, bool]] = [
            ((n,), f"give {n}_file or {n}, not both", bool(getattr(self, f"{n}_file") and getattr(self, n)))
            for n in ("cert", "key", "client_ca")
        ]
        checks += [
            ((), "missing one of cert or cert_file", not (self.cert_file or self.cert)),
            ((), "missing one of key or key_file", not (self.key_file or self.key)),
            (("client_auth_type",), f"{auth} asks for a certificate without verifying it, which sanlens does "
             "not do: use RequireAndVerifyClientCert with client_ca_file", auth in UNVERIFIED_CLIENT_AUTH),
            (("client_auth_type",), "a client CA is set but client_auth_type is NoClientCert: set "
             "RequireAndVerifyClientCert", has_ca and auth == "NoClientCert"),
            (("client_ca_file",), f"{auth} needs client_ca_file (the CA that signs client certificates)",
             auth != "NoClientCert" and not has_ca),
            (("client_allowed_sans",), "client_allowed_sans needs client_auth_type RequireAndVerifyClientCert",
             bool(self.client_allowed_sans) and auth != "RequireAndVerifyClientCert"),
            (("min_version",), "is above max_version", self.min_version > self.max_version),
        ]  # fmt: skip
        checks += [
            (("cipher_suites", i), f"unknown cipher suite {name!r} (Go's names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)",
             name not in CIPHER_SUITES and name not in TLS13_SUITES)
            for i, name in enumerate(self.cipher_suites or ())
        ]  # fmt: skip
        for loc, message, broken in checks:
            if broken:
                raise rule_errors("web config", [(loc, message)])
        return self

    @property
    def enabled(self) -> bool:
        """As in the exporter-toolkit: no certificate, key or client policy set, plain HTTP."""
        keys = (self.cert_file, self.key_file, self.cert, self.key, self.client_ca_file, self.client_ca)
        return any(keys) or bool(self.client_auth_type)

    @property
    def ciphers(self) -> tuple[str, ...]:
        """The TLS 1.2 suites by OpenSSL's names."""
        return tuple(dict.fromkeys(CIPHER_SUITES[n] for n in self.cipher_suites or () if n in CIPHER_SUITES))

    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.cert_file, self.key_file, self.client_ca_file) if p is not None)

    def allows(self, peer: Mapping[str, Any] | None) -> bool:
        """Whether a verified client certificate carries one of ``client_allowed_sans``."""
        if not self.client_allowed_sans:
            return True
        allowed = {_canonical_san(s) for s in self.client_allowed_sans}
        return any(_canonical_san(v) in allowed for _k, v in (peer or {}).get("subjectAltName", ()))


def _canonical_san(value: str) -> str:
    """IP addresses compared as addresses (Python spells IPv6 SANs in full, Go compressed)."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return value


Headers = create_model(  # type: ignore[call-overload]
    "Headers",
    __base__=_Web,
    **{name: (_choice(values) if values else Text, None) for name, values in HEADERS.items()},
)


class HTTPFile(_Web):
    http2: bool | None = Field(None, description="Accepted; sanlens serves HTTP/1.1.")
    headers: Headers | None = None  # type: ignore[valid-type]


class RateLimitFile(_Web):  # a token bucket: one token per interval (read as seconds), burst at most
    interval: Seconds | None = None
    burst: Annotated[int | None, Field(ge=0), Explain("expected a whole number >= 0")] = None

    @model_validator(mode="after")
    def _burst(self) -> Self:
        if self.interval and (self.burst or 0) < 1:
            raise rule_errors("web config", [(("burst",), "must be at least 1 when interval is set")])
        return self


class WebFile(_Web):
    """The web config file (Prometheus exporter-toolkit format) the chart puts in its Secret."""

    tls_server_config: TLSFile | None = None
    http_server_config: HTTPFile | None = None
    basic_auth_users: dict[str, BcryptHash] | None = Field(
        None, description="User -> bcrypt hash (htpasswd -nBC 10 \"\" | tr -d ':\\n')."
    )
    rate_limit: RateLimitFile | None = None

    @property
    def tls(self) -> TLSFile | None:
        """The TLS settings, None for plain HTTP."""
        t = self.tls_server_config
        return t if t is not None and t.enabled else None

    @property
    def users(self) -> dict[str, bytes]:
        """User -> bcrypt hash; empty: no authentication."""
        return {user: h.encode() for user, h in (self.basic_auth_users or {}).items()}

    @property
    def headers(self) -> dict[str, str]:
        """The headers added to every response (a blank one is unset)."""
        headers: Any = self.http_server_config.headers if self.http_server_config else None
        return {k: v for k, v in (headers.model_dump() if headers else {}).items() if v}

    def files(self) -> tuple[Path, ...]:
        return self.tls.files() if self.tls else ()


def parse_web_config(text: str, file: str = "<web config>") -> WebFile:
    """The file's model from its YAML; unknown keys, bad types and bad values fail with their key path."""
    try:
        doc = parse(text, file)
    except ConfigError as e:
        raise WebConfigError(e.message, e.path, e.line, e.file, e.hint) from None
    data = {} if doc is None or doc.data is None else doc.data
    if not isinstance(data, dict):
        raise WebConfigError("expected a mapping", line=1, file=file)
    report = Report(doc, file)
    try:
        web = WebFile.model_validate(data, context={"base": Path(file).parent})
    except ValidationError as e:
        report.add_errors(WebFile, e)
    report.raise_if_any(hint="", error=WebConfigErrors)
    return web
