"""The fake ONTAP REST API's conventions: error answers, object ids, ``fields`` projection, paging.

Shapes follow the real captures in ``../shared/fixtures/ontap`` (HAL ``_links``,
``records``/``num_records``). The collections are served by
:mod:`sanlens_sim.ontap_collections`, the counter tables by
:mod:`sanlens_sim.ontap_tables`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from sanlens_sim.world import Disk, World, stable_uuid

DEFAULT_MAX_RECORDS = 10000

Json = dict[str, Any]


class ApiError(Exception):
    """An ONTAP error answer: HTTP status plus ``{"error": {"message", "code"}}``."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code

    def body(self) -> Json:
        return {"error": {"message": self.message, "code": self.code}}


def not_found(what: str) -> ApiError:
    return ApiError(404, f'entry doesn\'t exist: "{what}"', "4")


# What an ASA r2 system answers for the unified personality's endpoints it does not serve (the
# counter tables, aggregates and their plexes): ONTAP's answer for an endpoint it does not have,
# 404 with code 3 ("API not found"). docs/simulator.md says what is checked and what is belief.
ASA_R2_NOT_FOUND = ("API not found", "3")


def asa_r2_refusal() -> ApiError:
    return ApiError(404, ASA_R2_NOT_FOUND[0], ASA_R2_NOT_FOUND[1])


# ------------------------------------------------------------------ ids
def svm_uuid(w: World, svm: str) -> str:
    return stable_uuid(w.cluster, "svm", svm)


def node_uuid(w: World, node: str) -> str:
    return stable_uuid(w.cluster, node)


def disk_uid(d: Disk) -> str:
    h = d.uid.replace("-", "").upper()
    return ":".join(h[i : i + 8] for i in range(0, 32, 8))


def version_full(w: World) -> str:
    g, m, n = w.version
    return f"NetApp Release {g}.{m}.{n}: Tue Jan 10 14:31:20 UTC 2023"


# ------------------------------------------------------------------ fields projection
KEY_FIELDS = ("uuid", "name", "aggregate", "_links")


def parse_fields(raw: str | None) -> list[list[str]] | None:
    """``fields=a,b.c`` → paths; ``*``/``**`` → None (everything)."""
    if raw is None:
        return []
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    if any(p in ("*", "**") for p in parts):
        return None
    return [p.split(".") for p in parts]


def project(rec: Json, paths: list[list[str]] | None) -> Json:
    """Keep the key fields plus the requested paths (ONTAP returns only keys without ``fields``)."""
    if paths is None:
        return rec
    out: Json = {k: rec[k] for k in KEY_FIELDS if k in rec}
    for p in paths:
        _copy(rec, out, p)
    # keep the record's own key order, as ONTAP does
    return {k: out[k] for k in rec if k in out}


def _copy(src: Json, dst: Json, path: list[str]) -> None:
    head = path[0]
    if head not in src:
        return
    v = src[head]
    if len(path) == 1:
        dst[head] = v
    elif isinstance(v, dict):
        sub = dst.get(head)
        if not isinstance(sub, dict) or sub is v:
            sub = {} if sub is None else dict(sub)
            dst[head] = sub
        _copy(v, sub, path[1:])
        dst[head] = {k: sub[k] for k in v if k in sub}
    elif isinstance(v, list):
        cur = dst.get(head)
        items = [dict(x) for x in cur] if isinstance(cur, list) else [{} for _ in v]
        for item, s in zip(items, v, strict=True):
            if isinstance(s, dict):
                _copy(s, item, path[1:])
        dst[head] = items


# ------------------------------------------------------------------ paging
def start_index(ids: Sequence[str], query: dict[str, str], key: str) -> int:
    start = query.get(f"start.{key}")
    if start is None:
        return 0
    try:
        return ids.index(start)
    except ValueError:
        raise ApiError(400, f'Invalid value for "start.{key}": "{start}"', "262179") from None


def item_key(x: Any, key: str) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, dict):
        return str(x.get(key, ""))
    if key == "uuid" and hasattr(x, "uuid"):
        return str(x.uuid)
    return str(getattr(x, "name", getattr(x, "path", "")))


def fields_of(query: dict[str, str], all_default: bool = False) -> list[list[str]] | None:
    if "fields" not in query and all_default:
        return None
    return parse_fields(query.get("fields"))


def max_records(query: dict[str, str]) -> int:
    raw = query.get("max_records")
    if raw is None:
        return DEFAULT_MAX_RECORDS
    try:
        n = int(raw)
    except ValueError:
        raise ApiError(400, f'Invalid value for "max_records": "{raw}"', "262179") from None
    if n < 1:
        raise ApiError(400, f'"max_records" must be at least 1, got {n}', "262179")
    return n


def page(
    items: list[Any],
    ids: list[str],
    key: str,
    build: Callable[[list[Any]], list[Json]],
    paths: list[list[str]] | None,
    raw_path: str,
    query: dict[str, str],
    *,
    loop: bool = False,
) -> Json:
    """One page of a collection: ``max_records`` from ``start.<key>``, with ONTAP's ``next`` link.

    ``loop`` (a fault) makes the ``next`` link point back at this page.
    """
    start = start_index(ids, query, key)
    limit = max_records(query)
    chunk = items[start : start + limit]
    records = [project(r, paths) for r in build(chunk)]
    links: Json = {"self": {"href": href(raw_path, query)}}
    nxt = start + limit
    if loop:
        links["next"] = {"href": href(raw_path, query)}
    elif nxt < len(items):
        q = {k: v for k, v in query.items() if not k.startswith("start.")}
        q[f"start.{key}"] = ids[nxt]
        links["next"] = {"href": href(raw_path, q)}
    return {"records": records, "num_records": len(records), "_links": links}


def href(raw_path: str, query: dict[str, str]) -> str:
    if not query:
        return raw_path
    return raw_path + "?" + urllib.parse.urlencode(query, safe="*,|.")
