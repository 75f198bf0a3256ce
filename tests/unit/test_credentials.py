"""Secrets that follow their file (Kubernetes symlink swaps, in-place edits), and the one-retry rule."""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path

import pytest
from tests.k8s_secret import SecretVolume

from sanlens.config import AuthConfig
from sanlens.errors import ConfigError
from sanlens.upstream.credentials import AuthRetry, Secret, basic_header


def secret(path: str) -> Secret:
    return Secret(AuthConfig(username="mon", password_file=path), "c1")


def test_a_kubernetes_secret_swap_is_seen_by_path(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    vol = SecretVolume(tmp_path / "secrets", "old-Pa55")
    s = secret(vol.path)
    assert s.value == "old-Pa55" and not s.refresh()
    vol.rotate("new-Pa55")  # same size: the swap is seen by the file's identity, not its length
    with caplog.at_level(logging.INFO, logger="sanlens.upstream.credentials"):
        assert s.refresh()
    assert s.value == "new-Pa55" and s.rotations == 1
    assert not s.refresh()  # nothing changed since
    assert "changed" in caplog.text and "Pa55" not in caplog.text


def test_an_in_place_edit_is_seen_and_a_touch_is_not_a_rotation(tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("one\n")
    s = secret(str(pw))
    pw.write_text("three\n")
    assert s.refresh() and s.value == "three"
    os.utime(pw, ns=(1, 1))  # the stamp changes, the password does not
    assert not s.refresh() and s.rotations == 1


def test_a_forced_refresh_reads_even_when_the_stamp_is_unchanged(tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("aaaa\n")
    st = pw.stat()
    s = secret(str(pw))
    pw.write_text("bbbb\n")
    os.utime(pw, ns=(st.st_atime_ns, st.st_mtime_ns))  # same inode, size and mtime: only a read tells
    assert not s.refresh()
    assert s.refresh(force=True) and s.value == "bbbb"


def test_an_unreadable_file_keeps_the_last_password(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pw = tmp_path / "pw"
    pw.write_text("kept-Pa55\n")
    s = secret(str(pw))
    pw.unlink()
    with caplog.at_level(logging.WARNING, logger="sanlens.upstream.credentials"):
        assert not s.refresh()
        assert not s.refresh()
    assert s.value == "kept-Pa55"
    assert caplog.text.count("cannot be read") == 1 and "kept-Pa55" not in caplog.text


def test_the_start_is_strict_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        secret(str(tmp_path / "absent"))


def test_password_env_is_read_once_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANLENS_TEST_PW", "first")
    s = Secret(AuthConfig(username="mon", password_env="SANLENS_TEST_PW"), "c1")
    monkeypatch.setenv("SANLENS_TEST_PW", "second")
    assert not s.rotates
    assert not s.refresh(force=True) and s.value == "first"
    assert not AuthRetry(s, spacing=60).after_refusal()


def test_repr_never_shows_the_password(tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("s3cret-Pa55\n")
    assert "s3cret" not in repr(secret(str(pw)))


def test_a_refusal_is_retried_only_when_the_file_changed_and_once_per_interval(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "secrets", "v1")
    now = [1000.0]
    retry = AuthRetry(secret(vol.path), spacing=60.0, clock=lambda: now[0])
    assert not retry.after_refusal()  # unchanged: no retry
    vol.rotate("v2")
    assert retry.after_refusal()  # changed: one retry
    vol.rotate("v3")
    now[0] += 59.0
    assert not retry.after_refusal()  # changed again, but within the same poll interval
    now[0] += 2.0
    assert retry.after_refusal()


def test_basic_header_matches_requests_and_speaks_utf8_when_latin1_cannot() -> None:
    assert basic_header("mon", "pä55") == "Basic " + base64.b64encode("mon:pä55".encode("latin-1")).decode()
    assert basic_header("mon", "пароль") == "Basic " + base64.b64encode("mon:пароль".encode()).decode()
