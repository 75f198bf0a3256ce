"""Typed errors. Messages never include credentials."""

from __future__ import annotations


class SanlensError(Exception):
    """Base class for errors sanlens reports to the user."""


class ConfigError(SanlensError):
    """A config problem, located by key path and line so the user can fix it fast."""

    def __init__(self, message: str, path: str = "", line: int | None = None, file: str = "") -> None:
        self.path = path
        self.line = line
        self.file = file
        self.message = message
        where = file or "config"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {path + ': ' if path else ''}{message}")


class SourceError(SanlensError):
    """A poll failed; ``reason`` becomes the ``reason`` label of sanlens_poll_errors_total."""

    reason = "error"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        if reason:
            self.reason = reason
