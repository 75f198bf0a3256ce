"""The one rule for showing a URL: never with its user info, never with its query.

A target URL may carry ``user:password@`` (accepted, with a warning, as requests honours it) and
a query may carry a token; every message, log line and label that names a target goes through
``safe_url``. ``redact`` is the net under it: text made elsewhere (an exception from requests or
urllib3 quotes the URL it was given) loses the user info of every URL in it.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

# scheme://userinfo@ : up to the authority's last @, as urlsplit reads it (a / ? # or space ends it)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s'\"<>]*@")


def safe_url(url: str) -> str:
    """``scheme://host[:port]/path``: the URL without user info, query or fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # an unparsable URL: its authority is the part most likely to hold a secret
        return redact(url.split("?", 1)[0].split("#", 1)[0])
    if ":" in host:
        host = f"[{host}]"
    if port:
        host += f":{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def has_password(url: str) -> bool:
    """Whether ``url`` carries a password in its user info (``user:password@host``)."""
    try:
        return urlsplit(url).password is not None
    except ValueError:
        return "@" in url.split("://", 1)[-1].split("/", 1)[0]


def redact(text: str) -> str:
    """``text`` with the user info of every URL in it removed."""
    if "@" not in text:  # nearly always: no copy
        return text
    return _USERINFO.sub(r"\g<scheme>", text)


class RedactingFilter(logging.Filter):
    """A handler filter that takes the user info out of every URL in a record's message and traceback:
    the net for text sanlens did not word itself (a library's exception quoting its URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format: the handler reports it, as without this filter
            return True
        clean = redact(message)
        if clean is not message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
