"""ONTAP REST client: pagination, error bodies, retries, auth errors, malformed JSON (responses mocks)."""

from __future__ import annotations

import json

import pytest
import requests
import responses

from sanlens.config import AuthConfig, Duration, OntapTarget
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
