"""A model as one self-contained JSON Schema, draft 7: the chart's values schema and the docs read it.

What pydantic writes, made fit for the chart (which nests it under ``config``): references
inlined, no generated titles, a null-able key as ``"type": [..., "null"]``, bounds in JSON
Schema's words (pydantic names a custom type's ``ge`` as it is), integral defaults as
integers; ``diagnose.thresholds`` is the registry's generated model of them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sanlens.config.models import Config, DiagnoseConfig
from sanlens.diagnose.registry import thresholds_model

_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
_LISTS = ("allOf", "anyOf", "oneOf")
_VALUES = ("items", "additionalProperties", "not", "if", "then", "else")


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(mode="validation")
    defs = raw.pop("$defs", {})
    return _clean(raw, defs)


def config_json_schema() -> dict[str, Any]:
    """The whole config file's schema."""
    schema = json_schema(Config)
    thresholds = schema["properties"]["diagnose"]["properties"]["thresholds"]
    generated = json_schema(thresholds_model())
    thresholds.clear()
    thresholds.update(
        sorted({**generated, "description": DiagnoseConfig.model_fields["thresholds"].description}.items())
    )
    return schema


def _clean(schema: Any, defs: dict[str, Any]) -> Any:
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        # the key's own description wins over the model's docstring
        schema = {**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in schema.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: _clean(v, defs) for name, v in value.items()}
        elif key in _LISTS:
            out[key] = [_clean(v, defs) for v in value]
        elif key in _VALUES:
            out[key] = _clean(value, defs)
        elif key == "description":
            out[key] = " ".join(value.split("\n\n", 1)[0].split()).replace("``", "`")
        elif key not in _BOUNDS and key not in ("title", "discriminator"):
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
