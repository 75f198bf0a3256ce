"""Host sources' credentials and TLS: rotated password files, one retry at most, CA settings per request."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from tests.k8s_secret import SecretVolume

from sanlens.config import AuthConfig, Duration, HostTarget, TLSConfig
from sanlens.errors import SourceError
from sanlens.hosts.windows_exporter import WindowsExporterSource

URL = "https://win01.example:9182"
PAGE = '# TYPE windows_physical_disk_reads_total counter\nwindows_physical_disk_reads_total{disk="1"} 3\n'


def exporter(vol: SecretVolume, **kw: Any) -> WindowsExporterSource:
    t = HostTarget(name="sql01", url=URL, auth=AuthConfig(username="mon", password_file=vol.path), **kw)
    return WindowsExporterSource(t)


def _sent(call: Any) -> str:
    return base64.b64decode(call.request.headers["Authorization"].split()[1]).decode().split(":", 1)[1]


def _host_accepting(accepted: list[str], on_request: Any = None) -> None:
    def answer(req: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        sent = base64.b64decode(str(req.headers["Authorization"]).split()[1]).decode().split(":", 1)[1]
        if on_request is not None:
            on_request(sent)
        return (200, {}, PAGE) if sent == accepted[0] else (401, {}, "Unauthorized")

    responses.add_callback(
        responses.GET, re.compile(r"https://win01\.example:9182/metrics.*"), callback=answer
    )


# ------------------------------------------------------------------ windows_exporter basic auth
@responses.activate
def test_windows_exporter_follows_a_rotated_secret_without_restart(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "s", "old-pw")
    accepted = ["old-pw"]
    _host_accepting(accepted)
    src = exporter(vol)
    src.poll()
    accepted[0] = "new-pw"
    with pytest.raises(SourceError) as e:
        src.poll()
    assert e.value.reason == "auth" and "pw" not in str(e.value)
    vol.rotate("new-pw")
    src.poll()
    assert [_sent(c) for c in responses.calls] == ["old-pw", "old-pw", "new-pw"]


@responses.activate
def test_windows_exporter_retries_a_401_once_when_the_secret_changed_in_flight(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "s", "old-pw")
    accepted = ["new-pw"]

    def rotate(sent: str) -> None:
        if sent == "old-pw":
            vol.rotate("new-pw")

    _host_accepting(accepted, rotate)
    exporter(vol).poll()
    assert [_sent(c) for c in responses.calls] == ["old-pw", "new-pw"]


@responses.activate
def test_windows_exporter_never_retries_an_unchanged_or_twice_changed_secret(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "s", "wrong-0")
    _host_accepting(["right"], lambda sent: vol.rotate(f"wrong-{len(responses.calls) + 1}"))
    src = exporter(vol, poll_interval=Duration(15))
    with pytest.raises(SourceError):
        src.poll()
    assert len(responses.calls) == 2  # changed in flight: one retry, itself refused
    with pytest.raises(SourceError):
        src.poll()
    assert len(responses.calls) == 3  # within the interval: no second retry


@pytest.mark.parametrize(
    ("tls", "expected"),
    [
        (TLSConfig(ca_file="/etc/sanlens/ca.pem"), "/etc/sanlens/ca.pem"),
        (TLSConfig(insecure_skip_verify=True), False),
    ],
)
def test_windows_exporter_passes_tls_settings_with_each_request(
    tls: TLSConfig, expected: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/env-bundle.pem")
    src = WindowsExporterSource(HostTarget(name="sql01", url=URL, tls=tls))
    sent: dict[str, object] = {}

    def send(request: requests.PreparedRequest, **kw: object) -> requests.Response:
        sent.update(kw)
        r = requests.Response()
        r.status_code, r._content = 200, PAGE.encode()
        return r

    monkeypatch.setattr(src.session, "send", send)
    src.poll()
    assert sent["verify"] == expected


# ------------------------------------------------------------------ WinRM (the sanlens[winrm] extra)


class FakeWinRMSession:
    """Stands for ``winrm.Session``: refuses any password but ``accepted[0]`` like NTLM does."""

    accepted: list[str] = []
    made: list[str] = []
    calls: list[str] = []
    on_call: Any = None

    def __init__(self, target: str, auth: tuple[str, str], **kwargs: Any) -> None:
        self.password = auth[1]
        FakeWinRMSession.made.append(auth[1])

    def run_ps(self, script: str) -> Any:
        FakeWinRMSession.calls.append(self.password)
        if FakeWinRMSession.on_call is not None:
            FakeWinRMSession.on_call(self.password)
        import winrm

        if self.password != FakeWinRMSession.accepted[0]:
            raise winrm.exceptions.InvalidCredentialsError(
                "the specified credentials were rejected by the server"
            )
        return winrm.Response((b"{}", b"", 0))


@pytest.fixture
def fake_winrm(monkeypatch: pytest.MonkeyPatch) -> type[FakeWinRMSession]:
    winrm = pytest.importorskip("winrm")
    monkeypatch.setattr(winrm, "Session", FakeWinRMSession)
    FakeWinRMSession.accepted, FakeWinRMSession.made, FakeWinRMSession.calls = [""], [], []
    FakeWinRMSession.on_call = None
    return FakeWinRMSession


def winrm_transport(vol: SecretVolume, **kw: Any) -> Any:
    from sanlens.hosts.winrm import PyWinRMTransport

    auth = AuthConfig(username="CORP\\mon", password_file=vol.path)
    return PyWinRMTransport(
        HostTarget(name="sql01", source="winrm", url="https://sql01:5986/wsman", auth=auth, **kw)
    )


def test_winrm_refused_credentials_are_an_auth_error(
    tmp_path: Path, fake_winrm: type[FakeWinRMSession]
) -> None:
    fake_winrm.accepted[0] = "other"
    t = winrm_transport(SecretVolume(tmp_path / "s", "s3cret-pw"))
    with pytest.raises(SourceError) as e:
        t.run_ps("Get-Date")
    assert e.value.reason == "auth" and "s3cret" not in str(e.value)
    assert fake_winrm.calls == ["s3cret-pw"]  # unchanged file: not retried


def test_winrm_builds_a_new_session_when_the_secret_rotates(
    tmp_path: Path, fake_winrm: type[FakeWinRMSession]
) -> None:
    vol = SecretVolume(tmp_path / "s", "old-pw")
    fake_winrm.accepted[0] = "old-pw"
    t = winrm_transport(vol)
    t.run_ps("Get-Date")
    vol.rotate("new-pw")
    fake_winrm.accepted[0] = "new-pw"
    t.run_ps("Get-Date")
    assert fake_winrm.made == ["old-pw", "new-pw"] and fake_winrm.calls == ["old-pw", "new-pw"]


def test_winrm_retries_once_when_the_secret_changed_in_flight(
    tmp_path: Path, fake_winrm: type[FakeWinRMSession]
) -> None:
    vol = SecretVolume(tmp_path / "s", "old-pw")
    fake_winrm.accepted[0] = "new-pw"
    fake_winrm.on_call = lambda pw: vol.rotate("new-pw") if pw == "old-pw" else None
    winrm_transport(vol).run_ps("Get-Date")
    assert fake_winrm.calls == ["old-pw", "new-pw"]


@pytest.mark.parametrize(
    ("tls", "expected"),
    [
        (TLSConfig(ca_file="/etc/sanlens/ca.pem"), "/etc/sanlens/ca.pem"),
        (TLSConfig(insecure_skip_verify=True), False),
    ],
)
def test_winrm_tls_settings_win_over_the_environment_bundle(
    tls: TLSConfig, expected: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/env-bundle.pem")
    monkeypatch.setenv("CURL_CA_BUNDLE", "/nonexistent/curl-bundle.pem")
    pytest.importorskip("winrm")
    t = winrm_transport(SecretVolume(tmp_path / "s", "pw"), tls=tls)
    session = t._session.protocol.transport.build_session()
    assert session.verify == expected
