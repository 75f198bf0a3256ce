"""ONTAP REST client: pagination, error bodies, retries, auth errors, malformed JSON (responses mocks)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
import responses
from tests.k8s_secret import SecretVolume

from sanlens.config import AuthConfig, Duration, OntapTarget, TLSConfig
from sanlens.errors import SourceError
from sanlens.ontap.client import (
    OntapAuthError,
    OntapClient,
    OntapError,
    OntapMalformed,
    OntapNotFound,
    OntapPaginationLoop,
)

BASE = "https://cluster1.example"


def client(**kw: object) -> OntapClient:
    t = OntapTarget(name="c1", url=BASE, max_records=2, **kw)  # type: ignore[arg-type]
    c = OntapClient(t, retries=2, backoff=0.0)
    return c


@responses.activate
def test_pagination_follows_next_links_and_sends_hal_accept() -> None:
    responses.get(
        f"{BASE}/api/storage/luns",
        json={
            "records": [{"name": "a"}, {"name": "b"}],
            "_links": {"next": {"href": "/api/storage/luns?start=2"}},
        },
        match=[responses.matchers.query_param_matcher({"max_records": "2", "fields": "name"})],
    )
    responses.get(
        f"{BASE}/api/storage/luns",
        json={"records": [{"name": "c"}], "_links": {}},
        match=[responses.matchers.query_param_matcher({"start": "2"})],
    )
    names = [r["name"] for r in client().records("/api/storage/luns", {"fields": "name"})]
    assert names == ["a", "b", "c"]
    assert all(c.request.headers["Accept"] == "application/hal+json" for c in responses.calls)


@responses.activate
def test_repeating_next_link_is_an_error_not_a_loop() -> None:
    page = {"records": [{"name": "x"}], "_links": {"next": {"href": "/api/storage/luns?start=1"}}}
    responses.get(f"{BASE}/api/storage/luns", json=page)
    with pytest.raises(OntapPaginationLoop) as e:
        list(client().records("/api/storage/luns"))
    assert e.value.reason == "pagination_loop"
    assert len(responses.calls) == 2  # the first page, then the repeat that is detected


@pytest.mark.parametrize("code", ["4", 4])
@responses.activate
def test_error_body_maps_to_typed_error_with_string_or_int_code(code: object) -> None:
    responses.get(f"{BASE}/api/cluster/counter/tables/nope", status=400,
                  json={"error": {"message": "Table \"nope\" not found", "code": code}})  # fmt: skip
    with pytest.raises(OntapError) as e:
        client().get("/api/cluster/counter/tables/nope")
    assert e.value.status == 400
    assert e.value.code == "4"
    assert 'Table "nope" not found' in str(e.value)


@responses.activate
def test_404_is_not_found() -> None:
    responses.get(f"{BASE}/api/cluster/counter/tables/lun", status=404,
                  json={"error": {"message": "API not found", "code": "3"}})  # fmt: skip
    with pytest.raises(OntapNotFound):
        client().get("/api/cluster/counter/tables/lun")


@responses.activate
def test_retries_5xx_and_429_then_succeeds() -> None:
    url = f"{BASE}/api/cluster"
    responses.get(url, status=503)
    responses.get(url, status=429, headers={"Retry-After": "0"})
    responses.get(url, json={"version": {"generation": 9, "major": 12, "minor": 1, "full": "9.12.1"}})
    v = client().version()
    assert (v.generation, v.major, v.minor) == (9, 12, 1)
    assert len(responses.calls) == 3


@responses.activate
def test_retries_are_bounded() -> None:
    responses.get(f"{BASE}/api/cluster", status=500, json={"error": {"message": "boom", "code": 1}})
    with pytest.raises(OntapError) as e:
        client().get("/api/cluster")
    assert e.value.status == 500
    assert len(responses.calls) == 3  # 1 + retries=2


@responses.activate
def test_connection_errors_are_retried_then_reported() -> None:
    responses.get(f"{BASE}/api/cluster", body=requests.exceptions.ConnectionError("reset by peer"))
    with pytest.raises(SourceError) as e:
        client().get("/api/cluster")
    assert e.value.reason == "connection"
    assert len(responses.calls) == 3


@pytest.mark.parametrize("status", [401, 403])
@responses.activate
def test_auth_errors_are_clear_never_retried_and_never_show_the_password(status: int, tmp_path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("s3cret-Pa55\n")
    responses.get(
        f"{BASE}/api/cluster", status=status, json={"error": {"message": "not authorized", "code": "6"}}
    )
    c = client(auth=AuthConfig(username="admin", password_file=str(pw)))
    with pytest.raises(OntapAuthError) as e:
        c.get("/api/cluster")
    assert e.value.reason == "auth"
    assert len(responses.calls) == 1
    assert "s3cret" not in str(e.value) and "s3cret" not in repr(e.value)
    assert responses.calls[0].request.headers["Authorization"].startswith("Basic ")


@responses.activate
def test_malformed_json_is_typed() -> None:
    responses.get(f"{BASE}/api/storage/volumes", body="{not json", content_type="application/json")
    with pytest.raises(OntapMalformed) as e:
        list(client().records("/api/storage/volumes"))
    assert e.value.reason == "malformed"


@responses.activate
def test_records_without_a_records_list_is_malformed() -> None:
    responses.get(f"{BASE}/api/storage/volumes", body=json.dumps({"num_records": 0}))
    with pytest.raises(OntapMalformed):
        list(client().records("/api/storage/volumes"))


def test_tls_verification_is_on_by_default_and_timeouts_apply() -> None:
    c = OntapClient(OntapTarget(name="c1", url=BASE, connect_timeout=Duration(3), read_timeout=Duration(7)))
    assert c.session.verify is True
    assert c.timeout == (3.0, 7.0)
    adapter = c.session.get_adapter(BASE)
    assert adapter._pool_maxsize <= 4  # type: ignore[attr-defined]


# ------------------------------------------------------------------ password rotation
VERSION = {"version": {"generation": 9, "major": 14, "minor": 1, "full": "9.14.1"}}
REFUSED = {"error": {"message": "not authorized", "code": "6"}}


def _password(call: responses.Call) -> str:
    return base64.b64decode(call.request.headers["Authorization"].split()[1]).decode().split(":", 1)[1]


def _cluster_accepting(password: list[str], on_request: Callable[[str], None] | None = None) -> None:
    """/api/cluster answers 200 to ``password[0]`` and 401 to anything else."""

    def answer(req: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        sent = base64.b64decode(str(req.headers["Authorization"]).split()[1]).decode().split(":", 1)[1]
        if on_request is not None:
            on_request(sent)
        if sent == password[0]:
            return 200, {}, json.dumps(VERSION)
        return 401, {}, json.dumps(REFUSED)

    responses.add_callback(responses.GET, f"{BASE}/api/cluster", callback=answer)


@responses.activate
def test_a_rotated_password_file_is_used_on_the_next_request_without_restart(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "secrets", "old-Pa55")
    accepted = ["old-Pa55"]
    _cluster_accepting(accepted)
    c = client(auth=AuthConfig(username="mon", password_file=vol.path))
    c.version()
    accepted[0] = "new-Pa55"  # the cluster's password changes, then the Secret follows
    with pytest.raises(OntapAuthError):
        c.version()
    vol.rotate("new-Pa55")
    assert c.version().minor == 1
    assert [_password(x) for x in responses.calls] == ["old-Pa55", "old-Pa55", "new-Pa55"]


@responses.activate
def test_a_401_after_a_rotation_mid_request_is_retried_once_with_the_new_password(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "secrets", "old-Pa55")
    accepted = ["old-Pa55"]

    def rotate_while_in_flight(sent: str) -> None:
        if sent == "old-Pa55" and accepted[0] == "new-Pa55":
            vol.rotate("new-Pa55")  # lands after the pre-request check, before the 401 comes back

    _cluster_accepting(accepted, rotate_while_in_flight)
    c = client(auth=AuthConfig(username="mon", password_file=vol.path))
    c.version()
    accepted[0] = "new-Pa55"
    assert c.version().minor == 1
    assert [_password(x) for x in responses.calls] == ["old-Pa55", "old-Pa55", "new-Pa55"]


@responses.activate
def test_a_wrong_password_is_tried_once_per_poll_never_in_a_storm(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "secrets", "wrong-1")
    accepted = ["right"]
    _cluster_accepting(accepted, lambda sent: vol.rotate(f"wrong-{len(responses.calls) + 2}"))
    c = client(auth=AuthConfig(username="mon", password_file=vol.path), poll_interval=Duration(60))
    with pytest.raises(OntapAuthError):
        c.version()
    # the file changed on every request, yet one retry only (the retry is refused too)
    assert len(responses.calls) == 2
    with pytest.raises(OntapAuthError):
        c.version()  # the next request within the poll interval: the new file is used, no retry
    assert len(responses.calls) == 3


@responses.activate
def test_a_401_with_an_unchanged_password_file_is_not_retried(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "secrets", "same")
    _cluster_accepting(["other"])
    c = client(auth=AuthConfig(username="mon", password_file=vol.path))
    for _ in range(3):
        with pytest.raises(OntapAuthError):
            c.version()
    assert len(responses.calls) == 3


@responses.activate
def test_password_env_is_read_at_start_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANLENS_C1_PASSWORD", "at-start")
    _cluster_accepting(["at-start"])
    c = client(auth=AuthConfig(username="mon", password_env="SANLENS_C1_PASSWORD"))
    monkeypatch.setenv("SANLENS_C1_PASSWORD", "later")
    c.version()
    assert _password(responses.calls[0]) == "at-start"
    accepted = ["later"]
    responses.reset()
    _cluster_accepting(accepted)
    with pytest.raises(OntapAuthError, match="check the username and password_env"):
        c.version()  # the environment cannot rotate: no retry, and the message says where to look
    assert [_password(x) for x in responses.calls] == ["at-start"]


# ------------------------------------------------------------------ TLS settings per request
@pytest.mark.parametrize(
    ("tls", "expected"),
    [
        (TLSConfig(ca_file="/etc/sanlens/ca.pem"), "/etc/sanlens/ca.pem"),
        (TLSConfig(insecure_skip_verify=True), False),
    ],
)
def test_tls_settings_go_with_every_request_so_the_environment_cannot_replace_them(
    tls: TLSConfig, expected: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/env-bundle.pem")
    monkeypatch.setenv("CURL_CA_BUNDLE", "/nonexistent/curl-bundle.pem")
    c = OntapClient(OntapTarget(name="c1", url=BASE, tls=tls), retries=0)
    sent: dict[str, object] = {}

    def send(request: requests.PreparedRequest, **kw: object) -> requests.Response:
        sent.update(kw)
        r = requests.Response()
        r.status_code, r._content = 200, json.dumps(VERSION).encode()
        return r

    monkeypatch.setattr(c.session, "send", send)
    c.version()
    assert sent["verify"] == expected
