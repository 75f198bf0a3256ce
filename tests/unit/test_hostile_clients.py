"""The HTTP clients against hostile answers (``responses`` mocks): bounded reads, redirects kept on
the target's origin, records and links of the wrong type, retries that never outlive the poll."""

from __future__ import annotations

import email.utils
import sys
import threading
import time
import types
from typing import Any

import pytest
import requests
import responses

from sanlens.config import AuthConfig, Duration, HostTarget, OntapTarget
from sanlens.errors import SourceError
from sanlens.hosts.registry import make_host_source
from sanlens.ontap.client import RETRY_AFTER_MAX_S, OntapClient, OntapError, retry_after
from sanlens.upstream.abortable import MAX_REDIRECTS, PollAborted

BASE = "https://cluster1.example"
HOST_URL = "http://win01.example:9182"
MIB = 1024 * 1024
PASSWORD = "Hostile-Client-Secret-5e1f"
VERSION = {"name": "c1", "version": {"generation": 9, "major": 14, "minor": 1, "full": "9.14.1"}}


def client(retries: int = 0, backoff: float = 0.0, **kw: Any) -> OntapClient:
    auth = AuthConfig(username="monitor", password=PASSWORD)
    return OntapClient(OntapTarget(name="c1", url=BASE, auth=auth, **kw), retries=retries, backoff=backoff)


def host(**kw: Any) -> Any:
    auth = AuthConfig(username="monitor", password=PASSWORD)
    return make_host_source(HostTarget(name="win01", url=HOST_URL, auth=auth, **kw))


def reason_of(fn: Any) -> SourceError:
    with pytest.raises(SourceError) as e:
        fn()
    return e.value


# ------------------------------------------------------------------ bounded answers
@responses.activate
def test_an_ontap_answer_above_max_response_bytes_is_too_large_and_names_the_bound() -> None:
    body = b'{"records": [' + b" " * (2 * MIB) + b"]}"
    responses.get(f"{BASE}/api/storage/luns", body=body, content_type="application/json")
    e = reason_of(lambda: list(client(max_response_bytes=MIB).records("/api/storage/luns")))
    assert e.reason == "too_large"
    assert f"max_response_bytes ({MIB})" in str(e)


@responses.activate
def test_an_answer_within_the_bound_is_read() -> None:
    responses.get(f"{BASE}/api/cluster", json=VERSION)
    assert client(max_response_bytes=MIB).version().full == "9.14.1"


@responses.activate
def test_a_huge_error_body_still_gives_the_status() -> None:
    responses.get(f"{BASE}/api/cluster", body=b"x" * (3 * MIB), status=500)
    e = reason_of(lambda: client(max_response_bytes=MIB).get("/api/cluster"))
    assert isinstance(e, OntapError) and e.reason == "api" and e.status == 500


def test_the_bounds_are_config_keys_with_sane_defaults() -> None:
    assert OntapTarget(name="c1", url=BASE).max_response_bytes == 256 * MIB
    h = HostTarget(name="h", url=HOST_URL)
    assert (h.max_response_bytes, h.max_series) == (64 * MIB, 200_000)


@responses.activate
def test_a_host_page_above_max_response_bytes_is_too_large() -> None:
    responses.get(f"{HOST_URL}/metrics", body=b"# x\n" * (MIB // 2), content_type="text/plain")
    e = reason_of(lambda: host(max_response_bytes=MIB).poll())
    assert e.reason == "too_large" and "max_response_bytes" in str(e)


@responses.activate
def test_a_host_page_above_max_series_is_too_large_before_it_is_parsed() -> None:
    page = "".join(f'windows_physical_disk_reads_total{{disk="{i} X:"}} 1\n' for i in range(1_000))
    responses.get(f"{HOST_URL}/metrics", body="# HELP x y\n" + page, content_type="text/plain")
    e = reason_of(lambda: host(max_series=500).poll())
    assert e.reason == "too_large" and "max_series (500)" in str(e)


def test_winrm_output_above_max_response_bytes_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    big = b"x" * (2 * MIB)

    class Session:
        def __init__(self, *a: Any, **kw: Any) -> None:
            pass

        def run_ps(self, script: str) -> Any:
            return types.SimpleNamespace(status_code=0, std_out=big, std_err=b"")

    winrm = types.ModuleType("winrm")
    winrm.Session = Session  # type: ignore[attr-defined]
    exceptions = types.ModuleType("winrm.exceptions")
    exceptions.AuthenticationError = type("AuthenticationError", (Exception,), {})  # type: ignore[attr-defined]
    winrm.exceptions = exceptions  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "winrm", winrm)
    monkeypatch.setitem(sys.modules, "winrm.exceptions", exceptions)
    from sanlens.hosts.winrm import PyWinRMTransport

    target = HostTarget(
        name="h", source="winrm", url="https://h:5986/wsman", max_response_bytes=MIB,
        auth=AuthConfig(username="u", password=PASSWORD),
    )  # fmt: skip
    e = reason_of(lambda: PyWinRMTransport(target).run_ps("x"))
    assert e.reason == "too_large"


# ------------------------------------------------------------------ redirects
@responses.activate
def test_a_redirect_loop_is_malformed_not_a_crash() -> None:
    responses.get(f"{BASE}/api/cluster", status=302, headers={"Location": "/api/cluster"})
    e = reason_of(lambda: client().get("/api/cluster"))
    assert e.reason == "malformed" and "redirect" in str(e)
    assert len(responses.calls) == MAX_REDIRECTS + 1


@responses.activate
def test_a_redirect_to_a_file_url_is_malformed() -> None:
    responses.get(f"{BASE}/api/cluster", status=301, headers={"Location": "file:///etc/passwd"})
    e = reason_of(lambda: client().get("/api/cluster"))
    assert e.reason == "malformed" and "file:" in str(e)


@responses.activate
@pytest.mark.parametrize(
    "elsewhere",
    [
        "https://evil.example/api/cluster",
        "http://cluster1.example/api/cluster",
        "https://cluster1.example:8443/x",
    ],
)
def test_a_redirect_to_another_origin_is_refused_and_no_credential_leaves(elsewhere: str) -> None:
    responses.get(f"{BASE}/api/cluster", status=307, headers={"Location": elsewhere})
    responses.get(elsewhere, json={})
    e = reason_of(lambda: client().get("/api/cluster"))
    assert e.reason == "redirect" and "another origin" in str(e)
    assert [str(c.request.url).split("?")[0] for c in responses.calls] == [f"{BASE}/api/cluster"]


@responses.activate
def test_a_redirect_on_the_same_origin_is_followed() -> None:
    responses.get(f"{BASE}/api/cluster", status=308, headers={"Location": "/api/v2/cluster"})
    responses.get(f"{BASE}/api/v2/cluster", json=VERSION)
    assert client().version().full == "9.14.1"


@responses.activate
def test_a_host_redirect_to_another_origin_is_refused() -> None:
    responses.get(f"{HOST_URL}/metrics", status=302, headers={"Location": "http://evil.example/metrics"})
    responses.get("http://evil.example/metrics", body="")
    e = reason_of(lambda: host().poll())
    assert e.reason == "redirect"
    assert len(responses.calls) == 1


# ------------------------------------------------------------------ wrong shapes
@responses.activate
@pytest.mark.parametrize(
    "doc",
    [
        {"records": [None, 5, "x"]},
        {"records": [{"name": "a"}], "_links": "x"},
        {"records": [{"name": "a"}], "_links": {"next": "x"}},
        {"records": [{"name": "a"}], "_links": {"next": {"href": 5}}},
    ],
)
def test_records_and_links_of_the_wrong_type_are_malformed(doc: dict[str, Any]) -> None:
    responses.get(f"{BASE}/api/storage/luns", json=doc)
    e = reason_of(lambda: list(client().records("/api/storage/luns")))
    assert e.reason == "malformed"


# ------------------------------------------------------------------ retries within the poll's deadline
@responses.activate
def test_retry_after_beyond_the_deadline_gives_the_status_at_once() -> None:
    responses.get(f"{BASE}/api/cluster", status=503, headers={"Retry-After": "99999"})
    c = client(retries=3)
    c.resume(time.monotonic() + 5.0)
    started = time.monotonic()
    e = reason_of(lambda: c.get("/api/cluster"))
    assert time.monotonic() - started < 1.0
    assert isinstance(e, OntapError) and e.reason == "api" and e.status == 503
    assert len(responses.calls) == 1


@responses.activate
def test_backoff_that_would_pass_the_deadline_gives_the_last_error_not_deadline() -> None:
    responses.get(f"{BASE}/api/cluster", status=500)
    c = client(retries=3, backoff=30.0)
    c.resume(time.monotonic() + 2.0)
    started = time.monotonic()
    e = reason_of(lambda: c.get("/api/cluster"))
    assert time.monotonic() - started < 2.0
    assert isinstance(e, OntapError) and e.reason == "api" and e.status == 500


@responses.activate
def test_retry_after_is_capped_without_a_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    responses.get(f"{BASE}/api/cluster", status=429, headers={"Retry-After": "99999"})
    responses.get(f"{BASE}/api/cluster", json=VERSION)
    c = client(retries=1)
    waits: list[float] = []
    monkeypatch.setattr(c.adapter, "pause", waits.append)
    assert c.version().full == "9.14.1"
    assert waits == [RETRY_AFTER_MAX_S]


def test_retry_after_reads_seconds_and_dates_and_ignores_garbage() -> None:
    now = 1_700_000_000.0
    assert retry_after("7") == 7.0
    assert retry_after(email.utils.formatdate(now + 30, usegmt=True), now) == pytest.approx(30.0)
    assert retry_after(email.utils.formatdate(now - 30, usegmt=True), now) == 0.0
    for junk in ("", None, "-1", "1e9", "soon", "Mon, 99 Foo 2024 99:99:99 GMT"):
        assert retry_after(junk) is None


def test_an_abort_wakes_a_retry_waiting_out_its_backoff() -> None:
    c = client()
    c.resume(time.monotonic() + 3600)
    caught: list[BaseException] = []

    def wait() -> None:
        try:
            c.adapter.pause(60.0)
        except BaseException as e:
            caught.append(e)

    t = threading.Thread(target=wait)
    started = time.monotonic()
    t.start()
    time.sleep(0.1)
    c.abort()
    t.join(5)
    assert not t.is_alive() and time.monotonic() - started < 2.0
    assert len(caught) == 1 and isinstance(caught[0], PollAborted)
    c.resume()
    c.adapter.pause(0.0)  # a new poll waits again


@responses.activate
def test_a_connection_error_retry_that_would_pass_the_deadline_is_the_error() -> None:
    responses.get(f"{BASE}/api/cluster", body=requests.exceptions.ConnectionError("refused"))
    c = client(retries=3, backoff=30.0, poll_interval=Duration(1))
    c.resume()  # the deadline the poller gives a 1 s interval: its 2 s floor
    started = time.monotonic()
    e = reason_of(lambda: c.get("/api/cluster"))
    assert time.monotonic() - started < 2.0
    assert e.reason == "connection"
