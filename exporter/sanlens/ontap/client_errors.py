"""What an ONTAP REST call can fail with, apart from the client that raises it.

Modules that only catch these (the inventory, the capability probe, the RAID reader) import them
from here, so ``sanlens analyze`` of an ONTAP capture does not import the HTTP stack with them.
"""

from __future__ import annotations

from sanlens.errors import SourceError


class OntapError(SourceError):
    """An ONTAP error body ``{"error": {"message", "code"}}`` or an unexpected HTTP status."""

    reason = "api"

    def __init__(self, status: int, message: str, code: str = "", path: str = "") -> None:
        self.status = status
        self.code = code
        self.path = path
        detail = f"HTTP {status}" + (f" code {code}" if code else "")
        super().__init__(f"{path}: {detail}: {message}" if path else f"{detail}: {message}")


class OntapNotFound(OntapError):
    reason = "not_found"


class OntapAuthError(OntapError):
    reason = "auth"


class OntapMalformed(SourceError):
    reason = "malformed"


class OntapPaginationLoop(SourceError):
    reason = "pagination_loop"
