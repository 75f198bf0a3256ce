"""One input of `sanlens analyze`, opened once and read through that one descriptor.

Readers take their bytes from an ``InputSource``, never from the path again, so a
capture deleted or replaced while it is analysed is still read from what was opened;
one that is emptied or rewritten in place is reported (``check_unchanged``) instead
of mixing two versions. A regular file hands out independent streams (``pread`` at
their own offsets: a second pass neither re-opens nor disturbs the first). A pipe or
FIFO is one stream: its kind is sniffed from the first bytes, which the reader then
reads again from the same buffer. A FIFO that nobody writes to is an error after
``FIFO_WAIT_S`` seconds rather than a hang.
"""

from __future__ import annotations

import io
import os
import select
import shutil
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from sanlens.errors import SanlensError

HEAD_BYTES = 4096
FIFO_WAIT_S = 10.0


class _PreadRaw(io.RawIOBase):
    """A regular file's descriptor read at this stream's own offset (the descriptor stays shared)."""

    def __init__(self, fd: int) -> None:
        self._fd, self._pos = fd, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = os.pread(self._fd, len(b), self._pos)
        n = len(data)
        b[:n] = data
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            self._pos = offset
        elif whence == io.SEEK_CUR:
            self._pos += offset
        else:
            self._pos = os.fstat(self._fd).st_size + offset
        self._pos = max(self._pos, 0)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:  # the descriptor belongs to the InputSource
        super().close()


class _PipeRaw(io.RawIOBase):
    """A pipe's bytes: the sniffed head first, then the rest of the pipe."""

    def __init__(self, fd: int, head: bytes) -> None:
        self._fd, self._head, self._pos = fd, head, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
        else:
            data = os.read(self._fd, len(b))
            n = len(data)
            b[:n] = data
        self._pos += n
        return n

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        super().close()


class InputSource:
    """An input opened once: its name as given, its first bytes, and streams over its content."""

    def __init__(self, name: str, fd: int, st: os.stat_result, head: bytes) -> None:
        self.name = name
        self.path = Path(name)
        self._fd = fd
        self._stat = st
        self.head = head
        self.regular = stat.S_ISREG(st.st_mode)
        self._taken = False

    @classmethod
    def open(cls, path: str | Path, wait: float | None = None) -> InputSource:
        """Open ``path`` without blocking on a FIFO; raise SanlensError naming it when it cannot be read."""
        name = str(path)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise SanlensError(f"{name}: cannot read: {e.strerror}") from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise SanlensError(f"{name}: cannot read: Is a directory")
            if stat.S_ISREG(st.st_mode):
                os.set_blocking(fd, True)
                head = os.pread(fd, HEAD_BYTES, 0)
            else:
                head = _stream_head(fd, name, FIFO_WAIT_S if wait is None else wait)
        except OSError as e:
            os.close(fd)
            raise SanlensError(f"{name}: cannot read: {e.strerror}") from None
        except BaseException:
            os.close(fd)
            raise
        return cls(name, fd, st, head)

    @property
    def size(self) -> int | None:
        """Bytes in a regular file when opened; None for a stream."""
        return self._stat.st_size if self.regular else None

    @property
    def mtime(self) -> float:
        return self._stat.st_mtime if self.regular else os.fstat(self._fd).st_mtime

    def stream(self) -> BinaryIO:
        """A buffered binary stream from the first byte; a pipe gives exactly one."""
        if self.regular:
            return io.BufferedReader(_PreadRaw(self._fd), 1 << 16)
        if self._taken:
            raise SanlensError(f"{self.name}: a pipe can be read only once")
        self._taken = True
        return io.BufferedReader(_PipeRaw(self._fd, self.head), 1 << 16)

    def rereadable(self) -> None:
        """Make a pipe readable again: copy it once to an unnamed temporary file (for two-pass readers)."""
        if self.regular:
            return
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - its descriptor becomes this source's
        with self.stream() as src:
            shutil.copyfileobj(src, spool, 1 << 20)
        spool.flush()
        fd = os.dup(spool.fileno())
        spool.close()
        os.close(self._fd)
        self._fd, self._stat, self.regular = fd, os.fstat(fd), True

    def check_unchanged(self) -> None:
        """Raise SanlensError when a regular file was truncated, grown or rewritten since it was opened."""
        if not self.regular:
            return
        now = os.fstat(self._fd)
        before = self._stat
        if (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            what = (
                f"{before.st_size} -> {now.st_size} bytes"
                if now.st_size != before.st_size
                else "rewritten in place"
            )
            raise SanlensError(
                f"{self.name}: the file changed while it was read ({what}); analyse a copy nobody writes to"
            )

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> InputSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stream_head(fd: int, name: str, wait: float) -> bytes:
    """The first bytes of a pipe, FIFO or device: wait at most ``wait`` s for a writer's first byte."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    if not poller.poll(max(0, int(wait * 1000))):
        raise SanlensError(f"{name}: nothing to read after {wait:g} s: a FIFO or pipe that nobody writes to")
    os.set_blocking(fd, True)
    chunks: list[bytes] = []
    got = 0
    while got < HEAD_BYTES:
        data = os.read(fd, HEAD_BYTES - got)
        if not data:
            break
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def as_source(what: InputSource | str | Path) -> InputSource:
    """``what`` itself, or the file it names opened as a source (readers are also called with paths)."""
    return what if isinstance(what, InputSource) else InputSource.open(what)
