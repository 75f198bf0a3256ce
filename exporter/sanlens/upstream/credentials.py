"""Passwords that follow their file, and Basic auth that always sends the current one.

A Kubernetes Secret volume is updated by swapping a symlink (``..data``) to a new
directory, so the file is found again by its *path* on every check (``os.stat``
follows the links; an open descriptor would keep the old inode). The check is a
stat, a few microseconds, so a source may make it before every request; the file
is read again only when its identity (device, inode, size, mtime) changed, or when
the server has just refused the password.

A password from ``password_env`` (or inline) is read once at start: a process's
environment cannot change from outside, so only ``password_file`` rotates.
"""

from __future__ import annotations

import base64
import logging
import os
import time
from collections.abc import Callable

import requests
from requests.auth import AuthBase

from sanlens.config import AuthConfig
from sanlens.errors import SanlensError

log = logging.getLogger(__name__)

_Stamp = tuple[int, int, int, int] | None


def _stamp(path: str) -> _Stamp:
    try:
        st = os.stat(path)  # follows symlinks: the Secret's current ..data, not the one we opened
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Secret:
    """The password of one target: read at start (errors are fatal), re-read when its file changes.

    ``value`` is never logged, labelled or shown in ``repr``.
    """

    def __init__(self, auth: AuthConfig, where: str) -> None:
        self._auth = auth
        self._where = where
        self.path = auth.password_file
        self._stamp = _stamp(self.path) if self.path else None  # before the read: a change in between is seen
        self.value: str = auth.resolve_password() or ""
        self.rotations = 0

    @property
    def rotates(self) -> bool:
        """True when the password comes from a file that may change under us."""
        return self.path is not None

    def refresh(self, force: bool = False) -> bool:
        """Re-read the file if it changed (always when ``force``); True when the password is now different.

        A file that cannot be read keeps the last good password: a Secret being
        replaced must not turn every poll into an authentication failure.
        """
        if not self.path:
            return False
        stamp = _stamp(self.path)
        if not force and stamp == self._stamp:
            return False
        try:
            value = self._auth.resolve_password() or ""
        except SanlensError:
            if stamp != self._stamp:
                log.warning(
                    "%s: password_file %s cannot be read; keeping the previous password",
                    self._where,
                    self.path,
                )
            self._stamp = stamp
            return False
        self._stamp = stamp
        if value == self.value:
            return False
        self.value = value
        self.rotations += 1
        log.info("%s: password_file %s changed; using the new password", self._where, self.path)
        return True

    def __repr__(self) -> str:
        return f"Secret(path={self.path!r}, rotations={self.rotations})"


def basic_header(username: str, password: str) -> str:
    """``Basic base64(user:password)``; latin-1 as requests does, UTF-8 (RFC 7617) when latin-1 cannot say it."""
    pair = f"{username}:{password}"
    try:
        raw = pair.encode("latin-1")
    except UnicodeEncodeError:
        raw = pair.encode("utf-8")
    return "Basic " + base64.b64encode(raw).decode("ascii")


class SecretBasicAuth(AuthBase):
    """HTTP Basic auth built per request from ``Secret.value``, so a rotation needs no new session."""

    def __init__(self, username: str, secret: Secret) -> None:
        self.username = username
        self.secret = secret

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = basic_header(self.username, self.secret.value)
        return r

    def __repr__(self) -> str:
        return f"SecretBasicAuth(username={self.username!r})"


class AuthRetry:
    """Decides whether a refused password earns one more attempt.

    Only when the secret file now holds a different password than the refused
    request carried, and at most once per ``spacing`` seconds (the poll
    interval), so a wrong password is tried once per poll and never in a storm.
    """

    def __init__(self, secret: Secret | None, spacing: float, clock: Callable[[], float] = time.monotonic):
        self.secret = secret
        self.spacing = spacing
        self.clock = clock
        self._last: float | None = None

    def before_request(self) -> None:
        """The cheap stat before each request: a rotated Secret is used from the next request on."""
        if self.secret is not None:
            self.secret.refresh()

    def after_refusal(self) -> bool:
        """Call on a 401: re-read the secret; True means retry the request once with the new password."""
        if self.secret is None or not self.secret.rotates:
            return False
        now = self.clock()
        if self._last is not None and now - self._last < self.spacing:
            return False
        if not self.secret.refresh(force=True):
            return False
        self._last = now
        return True
