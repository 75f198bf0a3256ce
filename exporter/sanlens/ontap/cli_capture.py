"""Reading ONTAP CLI text captures: decoding, lines, numbers and times.

Text is decoded strictly: UTF-8 (BOM optional) or UTF-16 with a BOM (what
Windows tools write); ``\\n``, ``\\r\\n`` and a lone ``\\r`` all end a line. Bytes
that do not decode are a ``CaptureError`` at FILE:LINE, never replacement
characters that would then parse as data.
"""

from __future__ import annotations

import codecs
import contextlib
import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

_NUM = re.compile(r"^(-?\d+(?:\.\d+)?)(us|ms|s|%|b|kb|KB|MB|GB)?$")
_EOL = re.compile(r"\r\n|\r|\n")
CHUNK = 1 << 16
MAX_LINE = 1 << 20
_ENCODING_NAMES = {"utf-8": "UTF-8", "utf-16-le": "UTF-16", "utf-16-be": "UTF-16"}


def parse_cli_time(text: str) -> float | None:
    """``6/11/2025 18:51:00`` (the cluster's local time; read as UTC) -> epoch seconds."""
    for fmt in ("%m/%d/%Y %H:%M:%S", "%m/%d/%y %H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return dt.datetime.strptime(text.strip(), fmt).replace(tzinfo=dt.UTC).timestamp()
        except ValueError:
            continue
    return None


def number(text: str) -> float | None:
    """A CLI value as a number (a unit suffix such as ``us`` or ``%`` is dropped), or None."""
    m = _NUM.match(text.strip())
    return float(m[1]) if m else None


def _encoding(head: bytes) -> tuple[str, int]:
    """The codec and BOM length a capture's first bytes announce; UTF-8 without a BOM."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", 3
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", 2
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", 2
    return "utf-8", 0


def text_head(head: bytes) -> str:
    """The first bytes of a capture as text, for sniffing its kind (UTF-16 included)."""
    enc, skip = _encoding(head)
    return head[skip:].decode(enc, "replace")


def lines(p: Path, stream: BinaryIO | None = None) -> Iterator[tuple[int, str]]:
    """(number, line) of a text capture, decoded strictly in bounded memory.

    Lines are split by hand rather than by ``open(newline=None)`` so that an
    undecodable byte is reported at its own line, not at the start of the 8 KiB
    chunk the text layer happened to be decoding. ``stream``, when given, is read
    from where it stands and never seeked (it may be a pipe); the caller closes it.
    """
    # here, not above: sniffing a capture's kind (text_head) must not load the counter cooking
    from sanlens.ontap.cooking import CaptureError

    with open(p, "rb") if stream is None else contextlib.nullcontext(stream) as f:
        first = f.read(CHUNK)
        enc, pos = _encoding(first)
        decoder = codecs.getincrementaldecoder(enc)("strict")
        n, buf = 0, ""
        pending: bytes | None = first[pos:]
        while True:
            if pending is not None:
                chunk, pending = pending, None
                if not chunk and first:  # the file was only a byte-order mark
                    chunk = f.read(CHUNK)
            else:
                chunk = f.read(CHUNK)
            pos += len(chunk)
            try:
                buf += decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as e:
                good = e.object[: e.start].decode(enc, "replace")
                line = n + 1 + len(_EOL.findall(buf + good))
                offset = pos - len(e.object) + e.start
                raise CaptureError(
                    f"not {_ENCODING_NAMES[enc]} text: byte 0x{e.object[e.start]:02x} at offset {offset} "
                    "does not decode (ONTAP text is UTF-8, or UTF-16 with a byte-order mark)",
                    p,
                    line,
                ) from None
            if chunk:
                hold = buf.endswith("\r")  # its "\n" may open the next chunk
                parts = _EOL.split(buf[:-1] if hold else buf)
                buf = parts.pop() + ("\r" if hold else "")
            else:
                parts = _EOL.split(buf)
                if not parts[-1]:
                    parts.pop()
            for part in parts:
                n += 1
                if "\x00" in part:
                    raise CaptureError(
                        "NUL bytes in the text: UTF-16 without a byte-order mark? Save it as UTF-8", p, n
                    )
                yield n, part
            if not chunk:
                return
            if len(buf) > MAX_LINE:
                raise CaptureError(f"a line longer than {MAX_LINE} characters: not a text capture", p, n + 1)
