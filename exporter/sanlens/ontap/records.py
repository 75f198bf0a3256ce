"""Reading ONTAP's decoded REST records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def get_path(rec: Mapping[str, Any], path: str, default: Any = "") -> Any:
    """``a.b.c`` of a decoded record, ``default`` where a level is missing, null or not an object.

    ONTAP leaves out a field that does not apply (a volume never moved has no ``movement``), and a
    hostile or broken answer may put a scalar where an object belongs: both read as ``default``."""
    cur: Any = rec
    for part in path.split("."):
        if type(cur) is not dict and not isinstance(cur, Mapping):  # decoded JSON: dicts (no ABC check)
            return default
        cur = cur.get(part)
    return default if cur is None else cur
