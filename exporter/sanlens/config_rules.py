"""Rules across the keys of one mapping, declared once: checked here, and said as JSON Schema.

A key's own constraints (bounds, patterns, enums) are pydantic's, declared on the field.
What involves two keys (``cert_file`` with ``key_file``, a host's ``source`` and the
``url`` it needs) is a rule in the model's ``RULES``; each rule checks the values and
writes the same condition as JSON Schema, so the chart's values schema refuses what
the exporter refuses without restating it.

Rules run even when other keys of the mapping are wrong, so one run reports every
problem: a rule is skipped only when a key it reads is itself refused.
"""

from __future__ import annotations

import functools
import re
import typing
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any, ClassVar, Self

from pydantic import (
    BaseModel,
    GetJsonSchemaHandler,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError, core_schema

RULE_ERROR = "config_rule"
"""The pydantic error type of a rule's problem; its context holds what the message cites."""
ALIAS_ERROR = "config_alias"
"""The pydantic error type at a repeat of a mapping whose problems are told at its first place."""
ALIASES = "sanlens.aliases"
"""The validation context's key for an ``Aliases`` (the loader passes one)."""


class Aliases:
    """The mappings a YAML file repeats through aliases: each is validated once.

    Like YAML's own composer, which builds one object for an anchor and its aliases, a
    repeated mapping becomes one model object, and its problems are told once, at its
    first place, however many aliases repeat it.
    """

    def __init__(self, ids: set[int]) -> None:
        self.ids = ids  # id() of each mapping an alias repeats
        self.done: dict[tuple[type[BaseModel], int], BaseModel | None] = {}  # None: it has problems


Loc = tuple[str | int, ...]
Problem = tuple[Loc, str, dict[str, Any]]
"""Where (relative to the mapping), the message (``{name}`` filled from the context), the context."""


def _json_type(model: type[BaseModel], key: str) -> str | None:
    """``string`` or ``array``: the JSON type of a key whose value may be null."""
    tp = model.model_fields[key].annotation
    for arg in (tp, *typing.get_args(tp)):
        if arg is str:
            return "string"
        if typing.get_origin(arg) is list:
            return "array"
    return None


def _given(model: type[BaseModel], key: str) -> dict[str, Any]:
    """JSON Schema for "the key holds a value" (not null)."""
    kind = _json_type(model, key)
    return {"required": [key], "properties": {key: {"type": kind} if kind else {"not": {"type": "null"}}}}


def _set(model: type[BaseModel], key: str) -> dict[str, Any]:
    """JSON Schema for "the key holds a value, not an empty one"."""
    value = {"string": {"type": "string", "minLength": 1}, "array": {"type": "array", "minItems": 1}}.get(
        _json_type(model, key) or "", {"not": {"enum": [None, "", []]}}
    )
    return {"required": [key], "properties": {key: value}}


def _codes(keys: tuple[str, ...], last: str) -> str:
    """```a`, `b` or `c```."""
    shown = [f"`{k}`" for k in keys]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} {last} {shown[-1]}"


def fill(message: str, values: Mapping[str, Any]) -> str:
    """``{key}`` replaced by the value, as pydantic fills a custom error's message."""
    for key, value in values.items():
        message = message.replace(f"{{{key}}}", str(value))
    return message


class Rule:
    """One condition over the keys of a mapping."""

    keys: tuple[str, ...] = ()
    """The keys it reads: the rule is skipped while one of them is refused on its own."""

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        raise NotImplementedError

    def json_schema(self, model: type[BaseModel]) -> list[dict[str, Any]]:
        """The same condition as JSON Schema (items of an ``allOf``); empty when it cannot say it."""
        return []

    def describe(self) -> str:
        """The condition in words, for the docs (Markdown)."""
        raise NotImplementedError


@dataclass(frozen=True)
class OnlyOne(Rule):
    """At most one of the keys set (not null, not empty)."""

    keys: tuple[str, ...]

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        given = [k for k in self.keys if values.get(k)]
        return [((given[1],), f"give only one of {', '.join(given)}", {})] if len(given) > 1 else []

    def json_schema(self, model: type[BaseModel]) -> list[dict[str, Any]]:
        return [{"not": {"allOf": [_set(model, a), _set(model, b)]}} for a, b in combinations(self.keys, 2)]

    def describe(self) -> str:
        return f"at most one of {_codes(self.keys, 'and')}"


@dataclass(frozen=True)
class Together(Rule):
    """Both keys given (not null), or neither."""

    keys: tuple[str, ...]

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        a, b = self.keys
        if (values.get(a) is None) == (values.get(b) is None):
            return []
        return [((a if values.get(a) is None else b,), f"{a} and {b} go together", {})]

    def json_schema(self, model: type[BaseModel]) -> list[dict[str, Any]]:
        a, b = self.keys
        return [
            {"if": _given(model, a), "then": _given(model, b)},
            {"if": _given(model, b), "then": _given(model, a)},
        ]

    def describe(self) -> str:
        return f"{_codes(self.keys, 'and')} together, or neither"


@dataclass(frozen=True)
class ExactlyOne(Rule):
    """Exactly one of the keys given (not null); the problem is the mapping's."""

    keys: tuple[str, ...]

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        if sum(values.get(k) is not None for k in self.keys) == 1:
            return []
        return [((), f"give exactly one of {' or '.join(self.keys)}", {})]

    def json_schema(self, model: type[BaseModel]) -> list[dict[str, Any]]:
        return [{"oneOf": [_given(model, k) for k in self.keys]}]

    def describe(self) -> str:
        return f"exactly one of {_codes(self.keys, 'or')}"


@dataclass(frozen=True)
class Needs(Rule):
    """``key`` set (not null, not empty) whenever one of ``by`` is; told at the first of ``by`` set."""

    key: str
    by: tuple[str, ...]
    message: str

    @property
    def keys(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.key, *self.by)

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        given = [k for k in self.by if values.get(k)]
        return [((given[0],), self.message, {})] if given and not values.get(self.key) else []

    def json_schema(self, model: type[BaseModel]) -> list[dict[str, Any]]:
        return [{"if": _set(model, k), "then": _set(model, self.key)} for k in self.by]

    def describe(self) -> str:
        return f"`{self.key}` is set when {_codes(self.by, 'or')} is"


@dataclass(frozen=True)
class Required(Rule):
    """``key`` set (not null, not empty); told at ``at``, the message filled from the values."""

    key: str
    message: str
    at: str

    @property
    def keys(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.key, self.at)

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        return [] if values.get(self.key) else [((self.at,), fill(self.message, values), {})]

    def json_schema(self, model: type[BaseModel]) -> list[dict[str, Any]]:
        return [_set(model, self.key)]

    def describe(self) -> str:
        return f"`{self.key}` is set (not empty)"


@dataclass(frozen=True)
class Matches(Rule):
    """A set ``key`` matches ``pattern`` (the whole value); ``explain`` says why not, never echoing it."""

    key: str
    pattern: str
    explain: Callable[[str], str | None]
    what: str  # what the pattern accepts, in words

    @property
    def keys(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.key,)

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        value = values.get(self.key)
        if not value or _compiled(self.pattern).fullmatch(value):
            return []
        return [((self.key,), self.explain(value) or "is not valid", {})]

    def json_schema(self, model: type[BaseModel]) -> list[dict[str, Any]]:
        return [{"properties": {self.key: {"pattern": self.pattern}}}]

    def describe(self) -> str:
        return f"`{self.key}` is {self.what}"


@dataclass(frozen=True)
class When(Rule):
    """``then`` applies while ``key`` is one of ``values`` (its default counts when it is absent)."""

    key: str
    values: tuple[str, ...]
    then: tuple[Rule, ...]

    @property
    def keys(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.key, *(k for rule in self.then for k in rule.keys))

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        if values.get(self.key) not in self.values:
            return []
        return [problem for rule in self.then for problem in rule.problems(values)]

    def json_schema(self, model: type[BaseModel]) -> list[dict[str, Any]]:
        condition: dict[str, Any] = {"properties": {self.key: {"enum": list(self.values)}}}
        if model.model_fields[self.key].default not in self.values:  # absent means the default
            condition["required"] = [self.key]
        then = [part for rule in self.then for part in rule.json_schema(model)]
        return [{"if": condition, "then": then[0] if len(then) == 1 else {"allOf": then}}]

    def describe(self) -> str:
        values = " or ".join(f"`{self.key}: {v}`" for v in self.values)
        return f"with {values}: " + "; ".join(rule.describe() for rule in self.then)


@dataclass(frozen=True)
class Cite:
    """Another place a message names: the loader adds its line (``hosts[7], line 9``)."""

    loc: Loc

    def __str__(self) -> str:
        return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in self.loc).lstrip(".")


@dataclass(frozen=True)
class UniqueNames(Rule):
    """The ``name`` of every entry of the lists is used once across all of them.

    It reads each entry whose name is a string, even when the entry has other problems,
    so a repeated name is told in the same run. JSON Schema cannot say this.
    """

    lists: tuple[str, ...]
    label: str

    def problems(self, values: Mapping[str, Any]) -> list[Problem]:
        first: dict[str, Loc] = {}
        repeats: dict[str, list[Loc]] = {}
        for key in self.lists:
            items = values.get(key)
            if not isinstance(items, list):
                continue
            for i, item in enumerate(items):
                name = item.get("name") if isinstance(item, dict) else getattr(item, "name", None)
                if not isinstance(name, str):
                    continue
                if name in first:
                    repeats.setdefault(name, []).append((key, i))
                else:
                    first[name] = (key, i)
        message = (
            "target name {name} is used {count} times (first at {first}); names must be unique: "
            f"they are the {self.label}"
        )
        return [
            (
                (*places[0], "name"),
                message,
                {"name": repr(_short(name)), "count": len(places) + 1, "first": Cite(first[name])},
            )
            for name, places in repeats.items()
        ]

    def describe(self) -> str:
        return f"every `name` is used once across {_codes(self.lists, 'and')}: they are the {self.label}"


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@functools.cache
def _rule_keys(model: type[RuledModel]) -> tuple[tuple[Rule, frozenset[str]], ...]:
    return tuple((rule, frozenset(rule.keys)) for rule in model.RULES)


@functools.cache
def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    return {
        name: info.get_default(call_default_factory=True)
        for name, info in model.model_fields.items()
        if not info.is_required()
    }


def _error(loc: Loc, message: str, context: dict[str, Any], data: Any) -> InitErrorDetails:
    shown = {k: str(v) for k, v in context.items()}
    return InitErrorDetails(
        type=PydanticCustomError(RULE_ERROR, message, {**shown, "template": message, "cite": context}),
        loc=loc,
        input=data,
    )


_KNOWN_ERRORS = frozenset(typing.get_args(core_schema.ErrorType))


def _again(e: ValidationError) -> list[InitErrorDetails]:
    """The errors of ``e``, to raise again beside a rule's."""
    out: list[InitErrorDetails] = []
    for err in e.errors(include_url=False):
        kind, ctx = err["type"], err.get("ctx")
        if kind == ALIAS_ERROR:  # the loader's marker only: the first place tells the problems
            continue
        if kind in _KNOWN_ERRORS:
            detail = InitErrorDetails(type=kind, loc=err["loc"], input=err["input"])
            if ctx:
                detail["ctx"] = ctx
        else:
            detail = InitErrorDetails(
                type=PydanticCustomError(kind, ctx.get("template", err["msg"]) if ctx else err["msg"], ctx),
                loc=err["loc"],
                input=err["input"],
            )
        out.append(detail)
    return out


class RuledModel(BaseModel):
    """A model whose ``RULES`` are checked with its fields and written into its JSON Schema."""

    RULES: ClassVar[tuple[Rule, ...]] = ()

    @model_validator(mode="wrap")
    @classmethod
    def _check_rules(cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo) -> Self:
        aliases = info.context.get(ALIASES) if isinstance(info.context, dict) else None
        if aliases is None or id(data) not in aliases.ids:
            return cls._validated(data, handler)
        key = (cls, id(data))
        if key in aliases.done:
            earlier = aliases.done[key]
            if earlier is None:
                raise PydanticCustomError(
                    ALIAS_ERROR, "repeats a mapping whose problems are told at its first place"
                )
            return typing.cast(Self, earlier)
        aliases.done[key] = None
        obj = cls._validated(data, handler)
        aliases.done[key] = obj
        return obj

    @classmethod
    def _validated(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        try:
            obj = handler(data)
        except ValidationError as e:
            if not isinstance(data, dict):
                raise
            refused: set[str] = set()
            if any(keys for _, keys in _rule_keys(cls)):  # which keys are refused, when a rule reads keys
                refused = {str(err["loc"][0]) for err in e.errors(include_url=False) if err["loc"]}
            found = cls._problems(ChainMap(data, _defaults(cls)), refused, data)
            if not found:
                raise
            raise ValidationError.from_exception_data(
                e.title, [*_again(e), *found], hide_input=True
            ) from None
        values = obj.__dict__
        broken = [problem for rule in cls.RULES for problem in rule.problems(values)]
        if broken:
            raise ValidationError.from_exception_data(
                cls.__name__,
                [_error(loc, message, context, data) for loc, message, context in broken],
                hide_input=True,  # the input may hold a password
            )
        return obj

    @classmethod
    def _problems(cls, values: Mapping[str, Any], refused: set[str], data: Any) -> list[InitErrorDetails]:
        return [
            _error(loc, message, context, data)
            for rule, keys in _rule_keys(cls)
            if refused.isdisjoint(keys)
            for loc, message, context in rule.problems(values)
        ]

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        target = handler.resolve_ref_schema(out)
        rules = [part for rule in cls.RULES for part in rule.json_schema(cls)]
        if rules:
            target["allOf"] = rules
        return out
