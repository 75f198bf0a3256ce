"""Rules across the keys of one mapping: each checks the values and says itself as JSON Schema and in words.

A key's own constraints (bounds, patterns, enums) are pydantic's, on the field, and what one
host source needs is its own model (``sanlens.config.models``). What is left involves two
keys of one mapping (``cert_file`` with ``key_file``) or entries of two lists (unique names).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any, ClassVar, Protocol, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    GetJsonSchemaHandler,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError

RAW_CHECKED = "sanlens.raw_checked"
"""Validation context key: the loader checked the rules that read raw data (it locates them better)."""
Loc = tuple[str | int, ...]


def _given(key: str) -> dict[str, Any]:
    return {"required": [key], "properties": {key: {"type": "string"}}}


def _set(key: str) -> dict[str, Any]:
    return {"required": [key], "properties": {key: {"type": "string", "minLength": 1}}}


def _codes(keys: tuple[str, ...], last: str) -> str:
    shown = [f"`{k}`" for k in keys]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} {last} {shown[-1]}"


class Rule(Protocol):
    """One condition over the keys of a mapping: its problems, its JSON Schema, its words in the docs."""

    raw: bool = False  # checked by the loader on the raw data instead

    def problems(self, values: Mapping[str, Any]) -> list[tuple[Loc, str]]: ...

    def json_schema(self) -> list[dict[str, Any]]:
        return []

    def describe(self) -> str: ...


@dataclass(frozen=True)
class OnlyOne(Rule):
    keys: tuple[str, ...]

    def problems(self, values: Mapping[str, Any]) -> list[tuple[Loc, str]]:
        given = [k for k in self.keys if values.get(k)]
        return [((given[1],), f"give only one of {', '.join(given)}")] if len(given) > 1 else []

    def json_schema(self) -> list[dict[str, Any]]:
        return [{"not": {"allOf": [_set(a), _set(b)]}} for a, b in combinations(self.keys, 2)]

    def describe(self) -> str:
        return f"at most one of {_codes(self.keys, 'and')}"


@dataclass(frozen=True)
class Together(Rule):
    keys: tuple[str, str]

    def problems(self, values: Mapping[str, Any]) -> list[tuple[Loc, str]]:
        a, b = self.keys
        if (values.get(a) is None) == (values.get(b) is None):
            return []
        return [((a if values.get(a) is None else b,), f"{a} and {b} go together")]

    def json_schema(self) -> list[dict[str, Any]]:
        a, b = self.keys
        return [{"if": _given(a), "then": _given(b)}, {"if": _given(b), "then": _given(a)}]

    def describe(self) -> str:
        return f"{_codes(self.keys, 'and')} together, or neither"


@dataclass(frozen=True)
class ExactlyOne(Rule):
    keys: tuple[str, ...]

    def problems(self, values: Mapping[str, Any]) -> list[tuple[Loc, str]]:
        if sum(values.get(k) is not None for k in self.keys) == 1:
            return []
        return [((), f"give exactly one of {' or '.join(self.keys)}")]

    def json_schema(self) -> list[dict[str, Any]]:
        return [{"oneOf": [_given(k) for k in self.keys]}]

    def describe(self) -> str:
        return f"exactly one of {_codes(self.keys, 'or')}"


@dataclass(frozen=True)
class Needs(Rule):
    """``key`` set whenever one of ``by`` is; told at the first of ``by`` set."""

    key: str
    by: tuple[str, ...]
    message: str

    def problems(self, values: Mapping[str, Any]) -> list[tuple[Loc, str]]:
        given = [k for k in self.by if values.get(k)]
        return [((given[0],), self.message)] if given and not values.get(self.key) else []

    def json_schema(self) -> list[dict[str, Any]]:
        return [{"if": _set(k), "then": _set(self.key)} for k in self.by]

    def describe(self) -> str:
        return f"`{self.key}` is set when {_codes(self.by, 'or')} is"


@dataclass(frozen=True)
class UniqueNames(Rule):
    """The ``name`` of every entry of the lists is used once across all of them (JSON Schema cannot say it).

    It reads raw entries too, so the loader tells a repeated name beside the entries' other problems.
    """

    lists: tuple[str, ...]
    label: str
    raw = True

    def repeats(self, values: Mapping[str, Any]) -> list[tuple[Loc, str, int, Loc]]:
        """(where the name is first repeated, the name, how often it is used, where it is first)."""
        first: dict[str, Loc] = {}
        again: dict[str, list[Loc]] = {}
        for key in self.lists:
            items = values.get(key)
            for i, item in enumerate(items if isinstance(items, list) else []):
                name = item.get("name") if isinstance(item, dict) else getattr(item, "name", None)
                if not isinstance(name, str):
                    continue
                if name in first:
                    again.setdefault(name, []).append((key, i))
                else:
                    first[name] = (key, i)
        return [((*places[0], "name"), name, len(places) + 1, first[name]) for name, places in again.items()]

    def message(self, name: str, count: int, first: str) -> str:
        shown = name if len(name) <= 60 else name[:57] + "..."
        return (
            f"target name {shown!r} is used {count} times (first at {first}); names must be unique: "
            f"they are the {self.label}"
        )

    def problems(self, values: Mapping[str, Any]) -> list[tuple[Loc, str]]:
        return [(loc, self.message(n, c, path_of(f))) for loc, n, c, f in self.repeats(values)]

    def describe(self) -> str:
        return f"every `name` is used once across {_codes(self.lists, 'and')}: they are the {self.label}"


def rule_errors(title: str, problems: list[tuple[Loc, str]]) -> ValidationError:
    """A ValidationError of rules across keys, each at its key (a model validator's own error is at the model)."""
    errors = [
        InitErrorDetails(type=PydanticCustomError("rule", m), loc=loc, input=None) for loc, m in problems
    ]
    return ValidationError.from_exception_data(title, errors, hide_input=True)


def path_of(loc: Loc) -> str:
    """``('hosts', 3, 'url')`` -> ``hosts[3].url``."""
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in loc).lstrip(".")


class Ruled(BaseModel):
    """A model whose ``RULES`` are checked once its fields are valid and written into its JSON Schema."""

    model_config = ConfigDict(defer_build=True)  # built with its first subclass that validates
    RULES: ClassVar[tuple[Rule, ...]] = ()

    @model_validator(mode="after")
    def _check_rules(self, info: ValidationInfo) -> Self:
        raw = isinstance(info.context, dict) and info.context.get(RAW_CHECKED)
        if broken := [
            p for rule in self.RULES if not (raw and rule.raw) for p in rule.problems(self.__dict__)
        ]:
            raise rule_errors(type(self).__name__, broken)
        return self

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        rules = [part for rule in cls.RULES for part in rule.json_schema()]
        if rules:
            handler.resolve_ref_schema(out)["allOf"] = rules
        return out
