"""The key reference of docs/configuration.md, generated from the config model.

One table per mapping of the config file (keys, types, defaults, what is allowed, what
each key is), then the rules across its keys, all read from the pydantic models of
``exporter/sanlens/config/``: their JSON Schema (``sanlens.config.schema``, the same
the chart's values schema is made of) and their ``RULES``. The rest of the page is
written by hand; ``docs/build.py`` replaces only the block between the markers.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from pydantic import BaseModel

from sanlens.config import DURATION_PATTERN, PATTERN_HELP, Config, format_seconds
from sanlens.config.rules import Ruled
from sanlens.config.schema import config_json_schema

BEGIN = (
    "<!-- generated:config-keys by docs/build.py from the config model (exporter/sanlens/config/);"
    " edit the model, then run `.venv/bin/python docs/build.py` -->"
)
END = "<!-- /generated:config-keys -->"


def _models_of(annotation: Any) -> tuple[list[type[BaseModel]], bool]:
    """The models a field holds (each member of a union of them), and whether as a list."""
    listed = typing.get_origin(annotation) is list
    inner = typing.get_args(annotation)[0] if listed else annotation
    if typing.get_origin(inner) is typing.Annotated:
        inner = typing.get_args(inner)[0]
    members = [
        typing.get_args(m)[0] if typing.get_origin(m) is typing.Annotated else m
        for m in typing.get_args(inner)
    ]
    found = [m for m in members or [inner] if isinstance(m, type) and issubclass(m, BaseModel)]
    return found, listed


def _source(model: type[BaseModel]) -> str:
    return str(typing.get_args(model.model_fields["source"].annotation)[0])


def _types(prop: dict[str, Any]) -> list[str]:
    kinds = prop.get("type", [])
    return [k for k in (kinds if isinstance(kinds, list) else [kinds]) if k != "null"]


def _type(prop: dict[str, Any]) -> str:
    if prop.get("pattern") == DURATION_PATTERN:
        return "duration"
    kinds = _types(prop)
    if kinds == ["array"]:
        items = prop.get("items", {})
        return "list of mappings" if _types(items) == ["object"] else f"list of {_type(items)}s"
    if kinds == ["object"]:
        return "mapping"
    return kinds[0] if kinds else "string"


def _number(value: float, duration: bool) -> str:
    if duration:
        return format_seconds(value)
    return f"{value:,}" if float(value).is_integer() else f"{value:g}"


def _value(value: Any, duration: bool) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"`{_number(value, duration)}`"
    if isinstance(value, list):
        return f"`[{', '.join(str(v) for v in value)}]`"
    if isinstance(value, dict):
        return "`{}`" if not value else f"`{value}`"
    return f"`{value}`"


def _allowed(prop: dict[str, Any]) -> str:
    duration = prop.get("pattern") == DURATION_PATTERN
    parts: list[str] = [f"`{prop['const']}`"] if "const" in prop else []
    if "enum" in prop:
        parts.append(", ".join(f"`{v}`" for v in prop["enum"] if v is not None))
    if "enum" in prop.get("items", {}):
        parts.append("any of " + ", ".join(f"`{v}`" for v in prop["items"]["enum"]))
    low = ("or more", prop["minimum"]) if "minimum" in prop else None
    if "exclusiveMinimum" in prop and (low is None or prop["exclusiveMinimum"] >= low[1]):
        low = ("exclusive", prop["exclusiveMinimum"])
    high = prop.get("maximum")
    if low and high is not None:
        if low[0] == "exclusive":
            parts.append(f"more than {_number(low[1], duration)}, at most {_number(high, duration)}")
        else:
            parts.append(f"{_number(low[1], duration)} to {_number(high, duration)}")
    elif low:
        parts.append(
            f"more than {_number(low[1], duration)}"
            if low[0] == "exclusive"
            else f"{_number(low[1], duration)} or more"
        )
    elif high is not None:
        parts.append(f"at most {_number(high, duration)}")
    if "pattern" in prop and not duration:  # the page says what a duration is
        parts.append(PATTERN_HELP.get(prop["pattern"], "a pattern"))
    return "; ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(model: type[BaseModel], schema: dict[str, Any], anchors: dict[type[BaseModel], str]) -> list[str]:
    required = set(schema.get("required", []))
    lines = ["| key | type | default | allowed | what it is |", "|---|---|---|---|---|"]
    for name, prop in schema["properties"].items():
        duration = prop.get("pattern") == DURATION_PATTERN
        if name in required:
            default = "required"
        elif "default" in prop:
            default = _value(prop["default"], duration)
        else:
            default = ""
        kind = _type(prop)
        subs, _ = _models_of(model.model_fields[name].annotation)
        if subs:
            kind = (
                f"[{kind}](#{anchors[subs[0]]})"
                if len(subs) == 1
                else "list of mappings, by `source`: "
                + ", ".join(f"[{_source(sub)}](#{anchors[sub]})" for sub in subs)
            )
        allowed = _allowed(prop)
        if name == "thresholds":  # the registry's: every diagnosis id, its thresholds and windows
            allowed = "per diagnosis id: its thresholds, `sustain_seconds`, `exit_seconds`"
        lines.append(
            f"| `{name}` | {kind} | {default} | {_cell(allowed)} | {_cell(prop.get('description', ''))} |"
        )
    rules = model.RULES if issubclass(model, Ruled) else ()
    if rules:
        lines += ["", "Rules across these keys:", ""]
        lines += [f"- {rule.describe()}" for rule in rules]
    return lines


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: code marks and punctuation dropped, spaces to dashes."""
    text = heading.replace("`", "").lower()
    return "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")


def _sections() -> list[tuple[list[str], type[BaseModel], dict[str, Any]]]:
    """(the key paths it is at, model, its schema), in the order of the file, each model once."""
    out: dict[type[BaseModel], tuple[list[str], type[BaseModel], dict[str, Any]]] = {}

    def walk(path: str, model: type[BaseModel], schema: dict[str, Any], label: str = "") -> None:
        if model in out:
            if path not in out[model][0]:
                out[model][0].append(path)
            return
        out[model] = ([label or path], model, schema)
        for name, prop in schema["properties"].items():
            subs, listed = _models_of(model.model_fields[name].annotation)
            where = f"{path}.{name}" if path else name
            where = f"{where}[]" if listed else where
            inner = prop["items"] if listed else prop
            for i, sub in enumerate(subs):
                if len(subs) == 1:
                    walk(where, sub, inner)
                else:  # a union by source: one section per member
                    walk(where, sub, inner["oneOf"][i], f"{where} with source: {_source(sub)}")

    walk("", Config, config_json_schema())
    return list(out.values())


def render() -> list[str]:
    """The generated block, markers included."""
    sections = _sections()
    titles = {
        model: ", ".join(f"`{p}`" for p in paths) if paths != [""] else "The top level"
        for paths, model, _ in sections
    }
    anchors = {model: _slug(title) for model, title in titles.items()}
    lines = [BEGIN]
    for _, model, schema in sections:
        lines += ["", f"### {titles[model]}", ""]
        doc = (inspect.getdoc(model) or "").split("\n\n", 1)[0]
        if doc:
            lines += [" ".join(doc.split()).replace("``", "`"), ""]
        lines += _table(model, schema, anchors)
    return [*lines, "", END]


def splice(page: str) -> str:
    """``page`` with its generated block replaced by a fresh one."""
    head, begin, rest = page.partition(BEGIN)
    if not begin:
        raise ValueError("docs/configuration.md has no generated:config-keys block")
    _, end, tail = rest.partition(END)
    if not end:
        raise ValueError("docs/configuration.md: the generated:config-keys block is not closed")
    return head + "\n".join(render()) + tail
