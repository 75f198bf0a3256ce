"""The value types of the config: durations and addresses, each a pattern and the words for a refusal.

The patterns are written for Python's re, the chart's JSON Schema (Go RE2) and pydantic's
Rust regex alike: ASCII classes only, no look-arounds, no inline flags. Python applies them
with fullmatch: its $ would also match before a final newline, Go's and Rust's do not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic is imported by the models that use these types, not by their readers
    from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import CoreSchema

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
_ORDER = ("d", "h", "m", "s", "ms")
# one number with an optional unit (60, 1.5h, 500ms), or whole numbers of units from the largest
# down, as Prometheus writes them (1m30s, 1h30m, 2d12h)
_COMPOUND = "|".join(
    rf"\d+{unit}" + "".join(rf"(?:\d+{smaller})?" for smaller in _ORDER[i + 1 :])
    for i, unit in enumerate(_ORDER)
)
DURATION_PATTERN = rf"^\s*(?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d)?|{_COMPOUND})\s*$"
"""A duration as YAML may write it: 60, 60s, 5m, 1h, 1d, 500ms or 1m30s (also the chart's pattern)."""
_DURATION = re.compile(DURATION_PATTERN)
_SINGLE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*")
_PART = re.compile(r"(\d+)(ms|s|m|h|d)")


def parse_duration(text: str) -> Duration:
    if not _DURATION.fullmatch(text):
        raise ValueError(f"not a duration: {text!r} (use e.g. 15s, 5m, 1h or 1m30s)")
    if m := _SINGLE.fullmatch(text):
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        seconds = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(text))
    if not math.isfinite(seconds):
        raise ValueError("duration too large")
    return Duration(seconds)


def format_seconds(seconds: float) -> str:
    """``86400`` -> ``24h``: a bound in a message, in the units a config would use."""
    for unit, size in (("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds * 1000:g}ms" if 0 < seconds < 1 else f"{seconds:g}s"


def _duration(value: Any) -> Duration:
    from pydantic_core import PydanticCustomError

    if isinstance(value, Duration):
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise PydanticCustomError("duration_type", "expected a duration such as 60s, 5m or 1m30s")
    try:
        return parse_duration(str(value))
    except (ValueError, OverflowError):
        raise PydanticCustomError(
            "duration_parsing",
            "expected a duration such as 500ms, 60s, 5m, 1h or 1m30s (a plain number is seconds)",
        ) from None


class Duration(float):
    """Seconds; YAML may say 60, 60s, 5m, 1h, 500ms or 1m30s."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(_duration)

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # a string is checked for its syntax only; the bounds of a field hold for plain seconds
        return {"type": ["string", "number"], "pattern": DURATION_PATTERN, "minimum": 0}


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"(?:{_OCTET}\.){{3}}{_OCTET}"
# a DNS name whose last label is not all digits (so 256.1.1.1 is neither an address nor a name)
_HOSTNAME = r"(?:[A-Za-z0-9_-]+\.)*[A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*\.?"
_IPV6 = r"\[[0-9A-Fa-f:.]+\]"
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
_REST = r"(?:[/?#][^\x00-\x20\x7f]*)?"

URL_PATTERN = rf"^https?://(?:[^\x00-\x20\x7f/?#@]+@)?(?:{_IPV4}|{_HOSTNAME}|{_IPV6})(?::{_PORT})?{_REST}$"
"""An http(s) URL with a host, an optional port 1-65535, no spaces or control characters."""
WINRM_URL_PATTERN = rf"^(?:https?://)?(?:{_IPV4}|{_HOSTNAME}|{_IPV6})(?::{_PORT})?{_REST}$"
"""A WinRM endpoint: a URL or, as pywinrm allows, a bare host[:port]."""
LISTEN_PATTERN = rf"^(?:{_IPV4}|{_HOSTNAME})?:(?:0|{_PORT})$"
"""``host:port`` or ``:port`` (all interfaces); port 0 picks a free port."""
NAME_PATTERN = r"\S"
"""A target name: not empty, not blank (it is a label value)."""
PATTERN_HELP = {
    URL_PATTERN: "`http(s)://host[:port][/path]`, port 1 to 65535",
    WINRM_URL_PATTERN: "a URL or a bare `host[:port]`",
    LISTEN_PATTERN: "`host:port` or `:port`: an IPv4 address or a host name, port 0 to 65535",
    NAME_PATTERN: "not blank",
}
"""What each pattern accepts, in words (the docs' reference)."""

_URL, _WINRM_URL, _LISTEN = re.compile(URL_PATTERN), re.compile(WINRM_URL_PATTERN), re.compile(LISTEN_PATTERN)
_HOST = re.compile(rf"^(?:{_IPV4}|{_HOSTNAME})$")


def _port_problem(port: str, lowest: int) -> str | None:
    if (
        port.isascii()
        and port.isdigit()
        and len(port) <= 5
        and port == str(int(port))
        and lowest <= int(port) <= 65535
    ):
        return None
    return f"the port must be a number from {lowest} to 65535"


def host_problem(host: str) -> str | None:
    """Why ``host`` is not an IPv4 address, a host name or an [IPv6] address (None when it is)."""
    if not host:
        return "has no host name"
    if host.startswith("["):
        return None if re.fullmatch(_IPV6, host) else "the host is not a valid [IPv6] address"
    return None if _HOST.fullmatch(host) else "the host is not a valid IPv4 address or host name"


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
HOST_SCHEMES = "http:// or https://"
ONTAP_SCHEMES = "https:// (a cluster) or http:// (a Prometheus query API, the simulator)"


def url_problem(url: str, scheme_optional: bool = False, schemes: str = HOST_SCHEMES) -> str | None:
    """Why ``url`` is not a URL the exporter can poll (None when it is); never echoes the URL.

    ``schemes`` says which schemes fit the source: a host's exporter is often plain http://, an
    ONTAP cluster's REST API https://.
    """
    if (_WINRM_URL if scheme_optional else _URL).fullmatch(url):
        return None
    if re.search(r"[\x00-\x20\x7f]", url):
        return "must not contain spaces or control characters"
    rest = url
    if url.startswith(("http://", "https://")):
        rest = url.split("://", 1)[1]
    elif _SCHEME.match(url):
        return f"the scheme must be {schemes}"
    elif not scheme_optional:
        return f"needs a scheme: {schemes}"
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in authority:
        if scheme_optional:
            return "put the user name in auth.username, not in the url"
        authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        end = authority.find("]") + 1
        host, after = (authority[:end], authority[end:]) if end else (authority, "")
        if not end or (after and not after.startswith(":")):
            return "the host is not a valid [IPv6] address"
        sep, port = after[:1], after[1:]
    else:
        host, sep, port = authority.partition(":")
    return host_problem(host) or (_port_problem(port, 1) if sep else None) or "is not a valid URL"


def ontap_url_problem(url: str) -> str | None:
    """Why ``url`` is not an ONTAP cluster's REST API URL (None when it is)."""
    return url_problem(url, schemes=ONTAP_SCHEMES)


def winrm_url_problem(url: str) -> str | None:
    """Why ``url`` is not a WinRM endpoint (a URL, or a bare host[:port] as pywinrm takes)."""
    return url_problem(url, scheme_optional=True)


def listen_problem(listen: str) -> str | None:
    """Why ``listen`` cannot be bound (None when it can be tried); the address is not echoed."""
    if _LISTEN.fullmatch(listen):
        return None
    host, sep, port = listen.rpartition(":")
    if not sep:
        return "expected host:port or :port, e.g. :9842 or 127.0.0.1:9842"
    if ":" in host or host.startswith("["):
        return "IPv6 addresses are not supported: use an IPv4 address, a host name or :port"
    return (_port_problem(port, 0) or (host_problem(host) if host else None)) or "expected host:port or :port"


@dataclass(frozen=True)
class Explain:
    """Why a field's constraint refuses a value, in sanlens's words: a text, or a function of the value.

    Placed in the field's ``Annotated`` metadata beside the constraint it explains, for the
    loader to say instead of the generic wording of a range or a pattern. A function never
    echoes the value (a URL's user info may hold a password).
    """

    why: str | Callable[[Any], str | None]

    def message(self, value: Any) -> str | None:
        if isinstance(self.why, str):
            return self.why
        return self.why(value) if isinstance(value, str) else None


@dataclass(frozen=True)
class NeededBy:
    """A key one ``source`` requires: its absence is told at ``source``, in these words."""

    message: str
