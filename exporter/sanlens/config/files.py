"""Reading the files a config is, or names: capped in size, decoded, never echoed.

Shared by the loaders (the config and web config files) and by ``AuthConfig.resolve_password``
(password files, read at start and again when they rotate). A problem names the file and,
when known, the line; never the bytes, which may be a secret's.
"""

from __future__ import annotations

import codecs
import errno
import os

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


class DecodeError(Exception):
    """Text that cannot be decoded: the reason and, when known, the line; never the bytes."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.line = reason, line


class TooLarge(Exception):
    """A file past its size cap."""


def decode(data: bytes) -> str:
    """UTF-8 (a BOM allowed), or UTF-16/32 with a BOM, as Notepad and PowerShell write them."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                raise DecodeError(f"not valid {codec.upper().removesuffix('-SIG')} text") from None
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise DecodeError("a NUL byte: UTF-16 without a byte-order mark? Save the file as UTF-8", line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(
            "not UTF-8 text; save the file as UTF-8", data.count(b"\n", 0, e.start) + 1
        ) from None


def read_capped(path: str | os.PathLike[str], cap: int) -> bytes:
    """At most ``cap`` bytes, TooLarge past that (a device or a runaway file is not read to the end).

    OSError when the file cannot be read, a path holding a NUL character included.
    """
    if "\x00" in str(path):
        raise OSError(errno.EINVAL, "the path holds a NUL character")
    with open(path, "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        raise TooLarge(f"larger than {cap // 1024} KiB")
    return data


def shown(path: str) -> str:
    """A path for a message: as written, or quoted when it holds control characters."""
    return path if path.isprintable() else repr(path)
