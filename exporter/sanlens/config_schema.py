"""The config model (sanlens.config) as one self-contained JSON Schema, draft 7.

What pydantic writes, made fit for the chart's values schema and the docs: references
inlined (the chart nests it under ``config``), no generated titles, a null-able key as
``"type": [..., "null"]``, bounds in JSON Schema's words (pydantic names a custom type's
``ge`` as it is), integral defaults as integers.
"""

from __future__ import annotations

from typing import Any

from sanlens.config import Config
from sanlens.diagnose.registry import REGISTRY, WINDOW_HELP, WINDOW_RANGE

_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "if", "then", "else")


def config_json_schema() -> dict[str, Any]:
    """The whole config file's schema."""
    raw = Config.model_json_schema(mode="validation")
    defs = raw.pop("$defs", {})
    _thresholds_schema(defs["DiagnoseConfig"]["properties"]["thresholds"])
    return _clean(raw, defs)


def _thresholds_schema(schema: dict[str, Any]) -> None:
    """``diagnose.thresholds``: per diagnosis id, its thresholds and windows with the registry's ranges."""
    lo, hi = WINDOW_RANGE
    ids: dict[str, Any] = {}
    for did, spec in REGISTRY.items():
        names: dict[str, Any] = {}
        for t in spec.thresholds:
            help_ = f"{t.help.rstrip('.')} ({t.unit})" if t.help else t.unit
            names[t.name] = {
                "default": t.default,
                "description": help_,
                "maximum": t.max,
                "minimum": t.min,
                "type": "number",
            }
        for key, help_ in WINDOW_HELP.items():
            names[key] = {"description": help_, "maximum": hi, "minimum": lo, "type": "number"}
        ids[did] = {"additionalProperties": False, "properties": names, "type": "object"}
    schema.clear()
    schema.update(  # keys in pydantic's order (sorted), the properties in the registry's
        additionalProperties=False,
        description="Threshold and window overrides per diagnosis id (sanlens check-config also checks "
        "their order): docs/diagnoses.md#thresholds.",
        properties=ids,
        type="object",
    )


def _clean(schema: Any, defs: dict[str, Any]) -> Any:
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        # the key's own description wins over the model's docstring
        schema = {**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in schema.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key == "properties":
            out[key] = {name: _clean(v, defs) for name, v in value.items()}
        elif key in _SCHEMA_LISTS:
            out[key] = [_clean(v, defs) for v in value]
        elif key in _SCHEMA_VALUES:
            out[key] = _clean(value, defs)
        elif key == "description":
            out[key] = " ".join(value.split("\n\n", 1)[0].split()).replace("``", "`")
        elif key not in _BOUNDS:
            out[key] = value
    # a field's bound wins over its type's (a duration is 0 or more; a poll interval, 1 or more)
    out.update({_BOUNDS[key]: value for key, value in schema.items() if key in _BOUNDS})
    _nullable(out)
    if "default" in out:
        if out["default"] is None:
            del out["default"]
        elif isinstance(out["default"], float) and out["default"].is_integer():
            out["default"] = int(out["default"])
    return out


def _nullable(schema: dict[str, Any]) -> None:
    """``anyOf: [X, {type: null}]`` -> X with ``null`` among its types (or in its enum)."""
    branches = schema.get("anyOf")
    if not branches or len(branches) != 2 or {"type": "null"} not in branches:
        return
    (inner,) = [b for b in branches if b != {"type": "null"}]
    if "type" not in inner:
        return
    del schema["anyOf"]
    kinds = inner["type"] if isinstance(inner["type"], list) else [inner["type"]]
    merged = {**inner, "type": [*kinds, "null"]}
    if "enum" in merged:
        merged["enum"] = [*merged["enum"], None]
    schema.update({k: v for k, v in merged.items() if k not in schema})
