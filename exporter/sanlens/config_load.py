"""Reading a config file into the model (sanlens.config), every problem located by line and key path.

The guards that are not schema come first: size and encoding of the file. The YAML is
then read once, as PyYAML's event stream, into plain lists, dicts and scalars, with the
line of every key and list item kept beside each container (no node tree: at 100,000
hosts it was half the memory); nesting depth, alias expansion and duplicate keys are
checked on the same pass. The plain data is validated by ``Config.model_validate``, and
each pydantic error becomes a sanlens problem: its ``loc`` gives the key path and, through
the kept lines, the line; its message is sanlens's own words for the error type (and the
field's ``Explain``), never pydantic's, and never the value, which may be a secret.

Like YAML's own composer, an alias is its anchor's object: 100,000 aliases of one host
are one mapping, validated once, its problems told once, at the anchor's line.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import os
import re
import types
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from sanlens import config as model
from sanlens.config_files import DecodeError, TooLarge, decode, read_capped, shown
from sanlens.config_rules import ALIAS_ERROR, ALIASES, RULE_ERROR, Aliases, Cite, Loc, fill
from sanlens.diagnose.registry import check as check_diagnose
from sanlens.errors import ConfigError, ConfigErrors
from sanlens.urls import has_password

log = logging.getLogger("sanlens.config")

_KEYS_HINT = "the keys and their ranges are in docs/configuration.md"
_ENCODING_HINT = "save the file as UTF-8 (UTF-16 with a byte-order mark is read too)"
_FILES_HINT = "serve reads these files at start; `sanlens check-config --skip-files` checks the config alone"
_YAML_HINT = "check the YAML at that line: indent with spaces, quote values that hold ': ', ' #', '*' or '&'"
_SHAPE_HINT = (
    "the config is a mapping a few levels deep (docs/configuration.md); anchors and aliases only repeat it"
)
_UNREADABLE = "a value its YAML tag cannot read, or a tag sanlens does not read"

_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it
_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_CONSTRUCTORS = SafeConstructor.yaml_constructors


def path_of(loc: Loc) -> str:
    """``('hosts', 3, 'url')`` -> ``hosts[3].url``."""
    return str(Cite(loc))


# ------------------------------------------------------------------ YAML errors
def _yaml_problem(e: yaml.YAMLError, text: str, file: str) -> ConfigError:
    err = _yaml_message(e, text, file)
    err.hint = _YAML_HINT
    return err


def _yaml_message(e: yaml.YAMLError, text: str, file: str) -> ConfigError:
    """A YAML syntax error with its line; quoted fragments are dropped (they may be a secret's characters)."""
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, e.position) + 1 if isinstance(e.position, int) else None
        return ConfigError("invalid YAML: a control character YAML does not allow", line=line, file=file)
    mark = getattr(e, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    index = getattr(mark, "index", None)
    if isinstance(index, int) and 0 <= index < len(text) and text[index] == "\t":
        return ConfigError("invalid YAML: a tab; indent with spaces", line=line, file=file)
    problem = str(getattr(e, "problem", None) or "not valid YAML")
    context = getattr(e, "context", None)
    if context and not str(context).startswith("while"):
        problem = f"{context}, {problem}"
    problem = re.sub(r"\s*(?:'[^']*'|\"[^\"]*\")", "", problem)
    return ConfigError(f"invalid YAML: {problem}", line=line, file=file)


# ------------------------------------------------------------------ YAML events -> plain data
class _Unreadable:
    """A scalar its YAML tag cannot construct: refused by any field, told without its text."""

    def __repr__(self) -> str:
        return "<unreadable>"


UNREADABLE = _Unreadable()

Lines = dict[int, tuple[int, Any]]
"""id(container) -> (its line, the line of each key (a dict) or item (a list))."""


class _Frame:
    """A mapping or list whose end event has not come yet."""

    __slots__ = ("anchor", "begin", "items", "key", "key_line", "line", "lines", "loc", "mapping", "merges")

    def __init__(self, loc: Loc, line: int, anchor: str | None, begin: int, mapping: bool):
        self.loc = loc
        self.line = line
        self.anchor = anchor
        self.begin = begin  # the value count at its start (for alias expansion)
        self.mapping = mapping
        self.items: Any = {} if mapping else []  # a mapping's dict, or a list's items
        self.lines: Any = {} if mapping else []  # the line of each key, or of each item
        self.key: Any = None  # a mapping's pending key (None: the next value is a key)
        self.key_line = 0
        self.merges: list[tuple[Any, int]] | None = None


_NO_KEY: Any = object()  # a key that is not a string: its value is read and dropped
_MERGE_KEY: Any = object()


@dataclass
class _Document:
    """What a config file holds, as plain data, and where each part of it is."""

    data: Any
    line: int  # where the data starts
    lines: Lines
    problems: list[tuple[Loc, int, str]]  # problems of the YAML itself: duplicate keys and the like
    keep: list[Any]  # values read and dropped, kept alive so no container id is reused
    aliased: set[int]  # id() of each mapping an alias repeats


def _resolvers(loader: Any) -> tuple[dict[str, list[tuple[str, Any]]], list[tuple[str, Any]]]:
    """The loader's implicit tag resolvers by first character, and those for any other, as ``resolve`` has them."""
    table = loader.yaml_implicit_resolvers
    wildcard = list(table.get(None, []))
    return {first: [*found, *wildcard] for first, found in table.items() if first is not None}, wildcard


def _read(text: str, file: str, loader_class: Any) -> _Document | None:
    """The document in ``text`` as plain data; None when there is none.

    Refuses, as it reads, what would exhaust memory or the parser: nesting deeper than
    MAX_DEPTH, aliases that expand past MAX_VALUES or into themselves, undefined aliases
    (without naming them). The count of values expands every alias by its anchor's size,
    known when the anchor's value ends. A plain scalar's tag is resolved as PyYAML's
    ``resolve`` does (by its first character), without a call per scalar.
    """
    loader = loader_class(text)
    if loader.yaml_path_resolvers:  # pragma: no cover - SafeLoader has none
        raise TypeError("path resolvers are not supported")
    resolvers, other = _resolvers(loader)
    max_depth, max_values = model.MAX_DEPTH, model.MAX_VALUES

    def refuse(message: str, ev: Any) -> ConfigError:
        return ConfigError(message, line=ev.start_mark.line + 1, file=file, hint=_SHAPE_HINT)

    stack: list[_Frame] = []
    anchors: dict[str, tuple[Any, int, int, str | None]] = {}  # value, line, values, text of a scalar
    lines: Lines = {}
    problems: list[tuple[Loc, int, str]] = []
    keep: list[Any] = []
    root: Any = None
    root_line = 1
    documents = 0
    count = 0
    top: _Frame | None = None
    aliased: set[int] = set()

    def done(value: Any, line: int, raw: str | None, merge: bool = False) -> None:
        """A value is complete: it goes into the open container (as a key or a value), or is the root."""
        nonlocal root, root_line
        if top is None:
            root, root_line = value, line
        elif not top.mapping:
            top.items.append(value)
            top.lines.append(line)
        elif top.key is None:  # a mapping's key
            if raw is None:
                problems.append((top.loc, line, "keys must be strings"))
                top.key = _NO_KEY
            else:
                top.key = _MERGE_KEY if merge else raw
            top.key_line = line
        else:  # a mapping's value
            key, top.key = top.key, None
            if key is _NO_KEY:
                keep.append(value)
            elif key is _MERGE_KEY:
                if top.merges is None:
                    top.merges = []
                top.merges.append((value, top.key_line))
            elif key in top.items:
                problems.append(((*top.loc, key), top.key_line, "duplicate key"))
                keep.append(value)
            else:
                top.items[key] = value
                top.lines[key] = top.key_line

    try:
        get = loader.get_event
        while loader.check_event():
            ev = get()
            kind = type(ev)
            if kind is ScalarEvent:
                count += 1
                raw = ev.value
                tag = ev.tag
                if tag is None or tag == "!":
                    tag = _STR
                    if ev.implicit[0]:
                        for resolved, pattern in resolvers.get(raw[:1], other):
                            if pattern.match(raw):
                                tag = resolved
                                break
                if tag == _STR:
                    value: Any = raw
                elif tag == _NULL:
                    value = None
                else:
                    value = _construct(tag, raw)
                line = ev.start_mark.line + 1
                if ev.anchor is not None:
                    anchors[ev.anchor] = (value, line, 1, raw)
                if top is not None and top.mapping:  # the usual cases inline: a key, a new key's value
                    key = top.key
                    if key is None:
                        top.key, top.key_line = (_MERGE_KEY if tag == _MERGE else raw), line
                        continue
                    if key.__class__ is str and key not in top.items:
                        top.items[key] = value
                        top.lines[key] = top.key_line
                        top.key = None
                        continue
                done(value, line, raw, tag == _MERGE)
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                if len(stack) >= max_depth:
                    raise refuse(f"nested more than {max_depth} levels deep", ev)
                if top is None:
                    loc: Loc = ()
                elif not top.mapping:
                    loc = (*top.loc, len(top.items))
                elif isinstance(top.key, str):
                    loc = (*top.loc, top.key)
                else:
                    loc = top.loc
                top = _Frame(loc, ev.start_mark.line + 1, ev.anchor, count, kind is MappingStartEvent)
                stack.append(top)
                count += 1
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                frame = stack.pop()
                top = stack[-1] if stack else None
                if frame.merges:
                    value = _merged(frame, lines, problems)
                else:
                    value = frame.items
                    lines[id(value)] = (frame.line, frame.lines)
                if frame.anchor is not None:
                    anchors[frame.anchor] = (value, frame.line, count - frame.begin, None)
                done(value, frame.line, None)
            elif kind is AliasEvent:
                if any(f.anchor == ev.anchor for f in stack):
                    raise refuse("an alias refers to a mapping or list it is inside", ev)
                if ev.anchor not in anchors:
                    raise refuse("an alias (*name) with no anchor (&name) before it", ev)
                value, line, size, raw = anchors[ev.anchor]
                if value.__class__ is dict:
                    aliased.add(id(value))
                count += size
                if count > max_values:
                    raise refuse(f"more than {max_values:,} values once aliases are expanded", ev)
                done(value, line, raw)
            elif kind is DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise yaml.composer.ComposerError(
                        "expected a single document in the stream",
                        None,
                        "but found another document",
                        ev.start_mark,
                    )
        if count > max_values:
            raise ConfigError(f"more than {max_values:,} values", file=file, hint=_SHAPE_HINT)
    finally:
        loader.dispose()
    if not documents:
        return None
    return _Document(root, root_line, lines, problems, keep, aliased)


def _construct(tag: str, raw: str) -> Any:
    """A scalar of a YAML tag other than str and null; UNREADABLE when the tag cannot read it."""
    constructor = _CONSTRUCTORS.get(tag)
    if constructor is None:
        return UNREADABLE
    try:  # a constructor raises what its parser raises: ValueError, TypeError...
        value = constructor(_CONSTRUCTOR, yaml.ScalarNode(tag, raw))
    except Exception:
        return UNREADABLE
    return UNREADABLE if isinstance(value, types.GeneratorType) else value


_CONSTRUCTOR = SafeConstructor()


def _merged(frame: _Frame, lines: Lines, problems: list[tuple[Loc, int, str]]) -> dict[str, Any]:
    """The mapping of ``frame`` with its YAML merge keys (``<<: *base``) expanded; explicit keys win.

    A merged key keeps its line in the mapping it comes from.
    """
    own: dict[str, Any] = frame.items
    inherited: dict[str, Any] = {}
    inherited_lines: dict[str, int] = {}
    for value, line in frame.merges or ():  # in ``<<: [*a, *b]`` the earlier mapping wins
        for source in value if isinstance(value, list) else [value]:
            if not isinstance(source, dict):
                problems.append((frame.loc, line, "a merge key (<<) takes a mapping or a list of mappings"))
                continue
            source_lines = lines[id(source)][1]
            for key, item in source.items():
                if key not in own and key not in inherited:
                    inherited[key] = item
                    inherited_lines[key] = source_lines[key]
    merged = {**inherited, **own}
    lines[id(merged)] = (frame.line, {**inherited_lines, **frame.lines})
    return merged


def _read_guarded(text: str, file: str) -> _Document | None:
    """``_read``, its refusals in sanlens's words whichever YAML library refuses first.

    Some libyaml releases refuse deep nesting themselves, in their scanner, before the
    parser has emitted the events the guards count, and in their own words. When libyaml
    refuses a document, the pure-Python parser (no nesting limit, no recursion) reads it
    again, so a document over sanlens's own limits is described by sanlens's message
    whichever library release noticed first; any other refusal keeps libyaml's account.
    """
    try:
        return _read(text, file, _SafeLoader)
    except yaml.YAMLError as e:
        refusal = _yaml_problem(e, text, file)
        if _SafeLoader is not yaml.SafeLoader:
            with contextlib.suppress(yaml.YAMLError):
                _read(text, file, yaml.SafeLoader)
        raise refusal from None


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """A large config makes millions of objects and no cycles; collecting meanwhile is quadratic."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# ------------------------------------------------------------------ problems, located
class _Report:
    """Every problem of one config: located, told once per place, in line order, capped."""

    def __init__(self, doc: _Document | None, file: str) -> None:
        self.doc = doc
        self.file = file
        self.found: list[tuple[int | None, tuple[Any, ...], Loc, Any]] = []  # line, once-key, loc, message
        self.seen: set[tuple[Any, ...]] = set()

    def locate(self, loc: Loc) -> tuple[int | None, tuple[Any, ...]]:
        """The line of ``loc`` (or of its nearest part written in the file), and what identifies the place.

        The place is the deepest mapping or list reached and the steps left from it, so the
        aliases of one anchor are one place, and two equal scalars are never confused.
        """
        if self.doc is None:
            return None, loc
        node, lines = self.doc.data, self.doc.lines
        entry = lines.get(id(node))
        line = entry[0] if entry else None
        for i, step in enumerate(loc):
            entry = lines.get(id(node)) if isinstance(node, dict | list) else None
            if entry is None:
                return line, (id(node), *loc[i:])
            present = (
                step in node if isinstance(node, dict) else isinstance(step, int) and 0 <= step < len(node)
            )
            if not present:
                return line, (id(node), *loc[i:])
            line, child = entry[1][step], node[step]
            if not isinstance(child, dict | list):
                return line, (id(node), *loc[i:])
            node = child
        return line, (id(node),)

    def add(self, loc: Loc, message: Any, line: int | None = None, once: Any = None) -> None:
        """A problem at ``loc``; ``message`` is text, or a pydantic error worded when reported."""
        where, place = self.locate(loc)
        key = (place, once if once is not None else message)
        if key in self.seen:
            return
        self.seen.add(key)
        self.found.append((line if line is not None else where, key, loc, message))

    def __len__(self) -> int:
        return len(self.found)

    def raise_if_any(self, hint: str = _KEYS_HINT) -> None:
        if not self.found:
            return
        ordered = sorted(self.found, key=lambda p: p[0] if p[0] is not None else 1 << 62)
        cap = model.MAX_PROBLEMS
        problems = [
            ConfigError(self.word(message, loc), path_of(loc), line, self.file)
            for line, _, loc, message in ordered[:cap]
        ]
        raise ConfigErrors(problems, max(len(ordered) - cap, 0), hint=hint)

    def word(self, message: Any, loc: Loc) -> str:
        if isinstance(message, str):
            return message
        return _message(message, loc, self)

    def cited(self, loc: Loc) -> str:
        line, _ = self.locate(loc)
        return f"{path_of(loc)}, line {line}" if line is not None else path_of(loc)


# ------------------------------------------------------------------ pydantic errors, in sanlens's words
_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}
_RANGES = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_CONSTRAINTS = _RANGES | {"string_pattern_mismatch", "too_short", "too_long"}


def _kind(value: Any) -> str:
    """What a value is, never the value (it may be a secret)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a YAML {type(value).__name__}"


@dataclass
class _Field:
    """The model field an error's ``loc`` ends in (or inside), for the words of its refusal."""

    owner: type[BaseModel] | None  # the model whose key the loc names last
    info: FieldInfo | None  # None for a key the model does not have
    type: Any  # the type at the loc itself (an item's, inside a list)
    inside: bool  # the loc goes past the field, into its items


def _unwrap(tp: Any) -> Any:
    """``X | None`` -> X."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(inner) == 1:
            return inner[0]
    return tp


def _field_at(loc: Loc) -> _Field:
    owner: type[BaseModel] | None = None
    current: type[BaseModel] | None = model.Config
    info: FieldInfo | None = None
    tp: Any = model.Config
    inside = False
    for step in loc:
        if current is not None and isinstance(step, str):
            owner, info = current, current.model_fields.get(step)
            if info is None:
                return _Field(owner, None, None, False)
            tp, inside = info.annotation, False
        else:
            args = typing.get_args(tp)
            tp, inside = (args[-1] if args else None), True
        tp = _unwrap(tp)
        current = tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None
    return _Field(owner, info, tp, inside)


def _bounds(info: FieldInfo) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in info.metadata:
        for name in ("ge", "gt", "le", "lt"):
            value = getattr(item, name, None)
            if value is not None:
                out[name] = value
    return out


def _range(bounds: dict[str, float], duration: bool) -> str | None:
    """``must be from 1s to 24h``: the whole range, whichever end was crossed."""
    show = model.format_seconds if duration else (lambda v: f"{v:g}")
    lo = ("ge", bounds["ge"]) if "ge" in bounds else ("gt", bounds["gt"]) if "gt" in bounds else None
    hi = ("le", bounds["le"]) if "le" in bounds else ("lt", bounds["lt"]) if "lt" in bounds else None
    if lo and hi:
        if lo[0] == "ge" and hi[0] == "le":
            return (
                f"must be from {show(lo[1])} to {show(hi[1])}"
                if duration
                else (f"must be between {show(lo[1])} and {show(hi[1])}")
            )
        low = f"{show(lo[1])} or more" if lo[0] == "ge" else f"more than {show(lo[1])}"
        high = f"at most {show(hi[1])}" if hi[0] == "le" else f"less than {show(hi[1])}"
        return f"must be {low} and {high}"
    if lo:
        return f"must be {show(lo[1])} or more" if lo[0] == "ge" else f"must be more than {show(lo[1])}"
    if hi:
        return f"must be at most {show(hi[1])}" if hi[0] == "le" else f"must be less than {show(hi[1])}"
    return None


def _message(err: Any, loc: Loc, report: _Report) -> str:
    """One pydantic error in sanlens's words; the input is described by its kind, never shown."""
    kind: str = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    key = next((s for s in reversed(loc) if isinstance(s, str)), "")
    secret = key in model.SECRET_KEYS
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        owner = _field_at(loc).owner
        allowed = sorted(owner.model_fields) if owner is not None else []
        return f"unknown key (allowed: {', '.join(allowed)})"
    if kind == RULE_ERROR:
        cited = {k: report.cited(v.loc) if isinstance(v, Cite) else v for k, v in ctx.get("cite", {}).items()}
        return fill(ctx.get("template", ""), cited)
    if value is UNREADABLE:
        return "expected a string" if secret else _UNREADABLE
    scalar = value is not None and not isinstance(value, dict | list)
    if secret:
        return "expected a string (quote it)" if scalar else "expected a string"
    field = _field_at(loc)
    if kind in _CONSTRAINTS and field.info is not None and not field.inside:
        for item in field.info.metadata:
            if isinstance(item, model.Explain) and (why := item.message(value)):
                return why
        if kind in _RANGES and (words := _range(_bounds(field.info), field.type is model.Duration)):
            return words
    if kind in _RANGES:
        bound = next(iter(ctx.values()), "")
        return {
            "greater_than": f"must be more than {bound}",
            "greater_than_equal": f"must be {bound} or more",
            "less_than": f"must be less than {bound}",
            "less_than_equal": f"must be at most {bound}",
        }[kind]
    if kind == "literal_error":
        choices = typing.get_args(field.type) if typing.get_origin(field.type) is Literal else ()
        return (
            f"must be one of {', '.join(repr(c) for c in choices)}"
            if choices
            else "is not one of the choices"
        )
    if kind == "finite_number":
        return "expected a finite number"
    if kind == "float_type" and isinstance(value, int) and not isinstance(value, bool):
        return "number too large"
    if kind in _EXPECTED:
        quote = " (quote it)" if kind == "string_type" and scalar else ""
        return f"expected {_EXPECTED[kind]}, got {_kind(value)}{quote}"
    if kind == "string_pattern_mismatch":
        return "is not valid"
    if kind == "duration_type":
        return f"expected a duration such as 60s or 5m, got {_kind(value)}"
    if kind.startswith(("duration_", "unknown_")):  # the model's own refusals, in its words
        return str(err["msg"])
    return f"is not valid ({kind.replace('_', ' ')})"


# ------------------------------------------------------------------ validation
def _validate(doc: _Document | None, file: str) -> tuple[model.Config | None, _Report]:
    """The config, or None and a report of every problem the file itself has."""
    report = _Report(doc, file)
    if doc is None:
        return model.Config(), report
    if not isinstance(doc.data, dict):
        raise ConfigError("the top level must be a mapping", line=doc.line, file=file, hint=_SHAPE_HINT)
    for loc, line, message in doc.problems:
        report.add(loc, message, line)
    try:
        cfg = model.Config.model_validate(doc.data, context={ALIASES: Aliases(doc.aliased)})
    except ValidationError as e:
        for err in e.errors(include_url=False):
            if err["type"] != ALIAS_ERROR:
                report.add(err["loc"], err, once=(err["type"], err["msg"]))
        return None, report
    if report:
        return None, report
    _warn(cfg)
    return cfg, report


Credentials = tuple[Loc, model.AuthConfig, model.TLSConfig]


def _parts(data: dict[str, Any]) -> tuple[model.DiagnoseConfig | None, list[Credentials]]:
    """Of a config that does not validate, the parts that do: its diagnose section, each target's credentials.

    So check-config reports the registry's and the files' problems in the same run as the others.
    """

    def valid(cls: type[BaseModel], value: Any) -> Any:
        try:
            return cls.model_validate({} if value is None else value)
        except ValidationError:
            return None

    section = data.get("diagnose")
    diagnose = valid(model.DiagnoseConfig, section)
    if diagnose is None and isinstance(section, dict):  # the registry reads the thresholds alone
        diagnose = valid(model.DiagnoseConfig, {"thresholds": section.get("thresholds", {})})
    out: list[Credentials] = []
    for name in ("ontap", "hosts"):
        items = data.get(name)
        for i, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, dict):
                auth, tls = valid(model.AuthConfig, item.get("auth")), valid(model.TLSConfig, item.get("tls"))
                if auth is not None and tls is not None:
                    out.append(((name, i), auth, tls))
    return diagnose, out


def _warn(cfg: model.Config) -> None:
    """What is accepted but unsafe, logged once for however many targets do it."""
    inline: list[str] = []
    in_url: list[str] = []
    unverified: list[str] = []
    groups: tuple[tuple[str, Sequence[model.OntapTarget | model.HostTarget]], ...] = (
        ("ontap", cfg.ontap),
        ("hosts", cfg.hosts),
    )
    for name, targets in groups:
        for i, target in enumerate(targets):
            if target.auth.password:
                inline.append(f"{name}[{i}].auth")
            if target.url and has_password(target.url):
                in_url.append(f"{name}[{i}].url")
            if target.tls.insecure_skip_verify:
                unverified.append(f"{name}[{i}].tls")
    for where, warning in (
        (inline, "inline password; prefer password_file or password_env"),
        (in_url, "password in the url; prefer auth.username with password_file or password_env"),
        (unverified, "insecure_skip_verify is true; TLS certificates are NOT verified"),
    ):
        if where:
            more = f" (and {len(where) - 1} more)" if len(where) > 1 else ""
            log.warning("config %s%s: %s", where[0], more, warning)


def _text(text: str, file: str) -> tuple[model.Config | None, _Report]:
    if len(text) > model.MAX_CONFIG_BYTES:
        raise _too_large(file)
    with _gc_paused():
        return _validate(_read_guarded(text, file), file)


def _too_large(file: str) -> ConfigError:
    return ConfigError(
        f"larger than {model.MAX_CONFIG_BYTES // (1024 * 1024)} MiB",
        file=file,
        hint="is this the config file? 100,000 hosts take about 5 MB",
    )


def _read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        data = read_capped(p, model.MAX_CONFIG_BYTES)
    except OSError as e:
        raise ConfigError(
            f"cannot read: {e.strerror}", file=str(p), hint="check the path and its permissions"
        ) from None
    except TooLarge:
        raise _too_large(str(p)) from None
    try:
        return decode(data)
    except DecodeError as e:
        raise ConfigError(e.reason, line=e.line, file=str(p), hint=_ENCODING_HINT) from None


# ------------------------------------------------------------------ files a config names
def _file_problem(path: str, directory_ok: bool = False) -> str | None:
    try:
        if "\x00" in path:
            raise OSError(errno.EINVAL, "the path holds a NUL character")
        if directory_ok and os.path.isdir(path):
            os.listdir(path)
            return None
        with open(path, "rb"):
            return None
    except OSError as e:
        return f"cannot read {shown(path)}: {e.strerror}"


def _check_files(report: _Report, targets: list[Credentials]) -> None:
    """What the exporter reads at start-up or on every poll: password files and variables, certificates."""
    for base, auth, tls in targets:
        checks: list[tuple[str, str | None]] = []
        if auth.password_file or auth.password_env:
            try:
                auth.resolve_password()
            except ConfigError as e:
                key = "password_file" if auth.password_file else "password_env"
                checks.append((f"auth.{key}", e.message))
        for key in ("cert_file", "key_file"):
            file = getattr(auth, key)
            if file:
                checks.append((f"auth.{key}", _file_problem(file)))
        if tls.ca_file and not tls.insecure_skip_verify:
            checks.append(("tls.ca_file", _file_problem(tls.ca_file, directory_ok=True)))
        for where, why in checks:
            if why:
                report.add((*base, *where.split(".")), why)


# ------------------------------------------------------------------ entry points (sanlens.config's)
def load_config_text(text: str, file: str = "<config>") -> model.Config:
    """The config in ``text``; ConfigErrors lists every problem of the file itself."""
    cfg, report = _text(text, file)
    report.raise_if_any()
    assert cfg is not None
    return cfg


def load_config(path: str | Path) -> model.Config:
    """The config file at ``path`` (UTF-8, or UTF-16/32 with a byte-order mark)."""
    return load_config_text(_read_text(path), str(path))


def check_config(path: str | Path, *, files: bool = True) -> model.Config:
    """The config at ``path`` as ``sanlens serve`` would run it, or ConfigErrors with every problem.

    Beyond the file itself: the diagnosis registry's ranges and, unless ``files`` is
    false, the password files and variables and the certificate files it names.
    """

    cfg, report = _text(_read_text(path), str(path))
    if cfg is not None:
        diagnose: model.DiagnoseConfig | None = cfg.diagnose
        targets: list[Credentials] = [(("ontap", i), t.auth, t.tls) for i, t in enumerate(cfg.ontap)]
        targets += [(("hosts", i), h.auth, h.tls) for i, h in enumerate(cfg.hosts)]
    else:
        assert report.doc is not None and isinstance(report.doc.data, dict)
        diagnose, targets = _parts(report.doc.data)
    for text in check_diagnose(diagnose) if diagnose is not None else ():
        key, _, message = text.partition(": ")
        report.add(tuple(key.split(".")), message)
    before = len(report)
    if files:
        _check_files(report, targets)
    if len(report) > before:
        report.raise_if_any(_FILES_HINT)
    report.raise_if_any()
    assert cfg is not None
    return cfg
