"""Typed errors. Messages never include credentials.

``sanlens`` exits with the error's ``exit_code``: 2 when the user's input is wrong
(arguments, the config file), 1 when a correct request failed while running (a port
already taken, a host name that does not resolve). ``hint`` is the next step, one line.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence


class SanlensError(Exception):
    """Base class for errors sanlens reports to the user."""

    exit_code = 2
    hint = ""


class UsageError(SanlensError):
    """A command-line argument is wrong: exit 2, with the command's ``--help`` as the hint."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class RunError(SanlensError):
    """The request was valid but failed while running (e.g. the listen port is taken): exit 1."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class ConfigError(SanlensError):
    """A config problem, located by key path and line so the user can fix it fast."""

    def __init__(
        self, message: str, path: str = "", line: int | None = None, file: str = "", hint: str = ""
    ) -> None:
        self.path = path
        self.line = line
        self.file = file
        self.message = message
        self.hint = hint
        super().__init__(self.located())

    def located(self) -> str:
        """``file:line: path: message``."""
        where = self.file or "config"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.path + ': ' if self.path else ''}{self.message}"

    @property
    def problems(self) -> list[ConfigError]:
        """Every problem this error stands for (itself, unless it gathers several)."""
        return [self]


class ConfigErrors(ConfigError):
    """Every problem found in one config, reported at once; path and line are the first one's.

    ``omitted`` counts problems found past the reporting cap (they are not kept).
    """

    def __init__(self, problems: Sequence[ConfigError], omitted: int = 0, hint: str = "") -> None:
        if not problems:
            raise ValueError("ConfigErrors needs at least one problem")
        self._problems = list(problems)
        self.omitted = omitted
        first = self._problems[0]
        super().__init__(first.message, first.path, first.line, first.file, hint)
        if len(self._problems) > 1 or omitted:
            lines = [p.located() for p in self._problems]
            if omitted:
                lines.append(f"... and {omitted} more problem(s)")
            self.args = ("\n".join(lines),)

    @property
    def problems(self) -> list[ConfigError]:
        return list(self._problems)

    @property
    def count(self) -> int:
        return len(self._problems) + self.omitted


class SourceError(SanlensError):
    """A poll failed; ``reason`` becomes the ``reason`` label of sanlens_poll_errors_total."""

    reason = "error"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        if reason:
            self.reason = reason


def listen_error(exc: OSError, address: str) -> SanlensError:
    """A failed bind of ``address``, told in one line with the next step (exit 1)."""
    hints = {
        errno.EADDRINUSE: "another process holds that port: stop it, or choose another port",
        errno.EACCES: "ports below 1024 need privileges: choose a port above 1024",
        errno.EADDRNOTAVAIL: "that address is not on this machine: use one of its addresses, or :PORT for all",
    }
    if isinstance(exc, socket.gaierror):
        hint = "the host name does not resolve here: use an IP address, or :PORT for all interfaces"
    else:
        hint = hints.get(exc.errno or 0, "check the address and that nothing else listens there")
    return RunError(f"cannot listen on {address}: {exc.strerror or type(exc).__name__}", hint)


def is_bind_error(exc: OSError) -> bool:
    """An OSError from a socket (bind, name lookup), not from a file: files name themselves."""
    return exc.filename is None
