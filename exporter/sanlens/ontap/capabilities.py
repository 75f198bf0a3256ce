"""What one cluster serves: its personality, and the endpoints it refuses.

ONTAP answers differently by release, platform and the account's role: an ASA r2 system
(``san_optimized`` and ``disaggregated``) has no aggregates and no counter tables, an older
release lacks an endpoint or a field, a least-privilege role may not cover a newer endpoint.
Each refusal costs only what needs it: the endpoint's part of the poll is empty, the rest
goes on, and the refusal is logged once per release and exported
(``sanlens_ontap_endpoint_missing``) until the endpoint answers again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from sanlens.ontap.client_errors import OntapAuthError, OntapError

if TYPE_CHECKING:
    from sanlens.ontap.client import OntapClient

log = logging.getLogger(__name__)

T = TypeVar("T")

UNIFIED = "unified"
ASA_R2 = "asa-r2"
# what a refusal says about the endpoint: absent on this release or platform, outside the role, or a
# field or parameter the release does not know (ONTAP answers 400 for those)
_REASON = {404: "not_found", 403: "forbidden", 400: "refused"}


def personality(client: OntapClient) -> str:
    """``asa-r2`` for a SAN-optimized disaggregated cluster, else ``unified``.

    Releases before the fields existed refuse them (HTTP 400): those are unified systems."""
    try:
        doc = client.get("/api/cluster", {"fields": "san_optimized,disaggregated"})
    except OntapError as e:
        if e.status not in (400, 404):
            raise
        return UNIFIED
    return ASA_R2 if doc.get("san_optimized") is True and doc.get("disaggregated") is True else UNIFIED


@dataclass
class Capabilities:
    """The refusals of one cluster, as the last poll met them."""

    cluster: str
    personality: str = UNIFIED
    missing: dict[str, str] = field(default_factory=dict)  # endpoint -> reason, until it answers again
    _logged: set[tuple[str, str, str]] = field(default_factory=set)

    def optional(self, endpoint: str, fetch: Callable[[], T], default: T, release: str = "") -> T:
        """``fetch()``, or ``default`` when the cluster refuses ``endpoint`` (logged once per release)."""
        try:
            out = fetch()
        except OntapError as e:
            reason = None if isinstance(e, OntapAuthError) and e.status == 401 else _REASON.get(e.status)
            if reason is None:
                raise
            self.refused(endpoint, reason, str(e), release)
            return default
        self.missing.pop(endpoint, None)
        return out

    def refused(self, endpoint: str, reason: str, detail: str, release: str = "") -> None:
        self.missing[endpoint] = reason
        key = (endpoint, reason, release)
        if key not in self._logged:
            self._logged.add(key)
            log.warning(
                "%s: ONTAP %s refuses %s (%s: %s); only what needs it stays empty",
                self.cluster, release or "?", endpoint, reason, detail,
            )  # fmt: skip
