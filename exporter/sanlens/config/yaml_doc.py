"""A YAML file as plain data and the line of every key and item, read with the guards a hostile file needs.

PyYAML composes the node graph (libyaml's composer when built with it; an alias is its
anchor's node, so composing costs the text's size, not the expansion's). One walk over the
nodes builds lists, dicts and scalars and a map from key path to line, refusing as it goes
nesting deeper than MAX_DEPTH and aliases that expand past MAX_VALUES values or into
themselves; duplicate and non-string keys are problems of the document. An alias is its
anchor's object, and its path is mapped to the anchor's, so its problems are told once, at
the anchor's lines. Merge keys (``<<: *base``) merge; explicit keys win.
"""

from __future__ import annotations

import contextlib
import re
import types
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import CollectionEndEvent, CollectionStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode

from sanlens.config import models
from sanlens.config.rules import Loc
from sanlens.errors import ConfigError

_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it
_STR, _NULL, _MERGE = "tag:yaml.org,2002:str", "tag:yaml.org,2002:null", "tag:yaml.org,2002:merge"
_CONSTRUCTOR = SafeConstructor()
_WORDS = {  # the composer's refusals in sanlens's words
    "found undefined alias": "an alias (*name) with no anchor (&name) before it",
    "found duplicate anchor; first occurrence, second occurrence": "an anchor (&name) defined twice",
}
YAML_HINT = "check the YAML at that line: indent with spaces, quote values that hold ': ', ' #', '*' or '&'"
SHAPE_HINT = (
    "the config is a mapping a few levels deep (docs/configuration.md); anchors and aliases only repeat it"
)


class Unreadable:
    """A scalar its YAML tag cannot construct: refused by any field, told without its text."""

    def __repr__(self) -> str:
        return "<unreadable>"


UNREADABLE = Unreadable()


@dataclass
class Document:
    data: Any
    lines: dict[Loc, int]  # key path -> the line of the key, or of the list item
    aliases: dict[Loc, Loc] = field(default_factory=dict)  # the path of an alias -> its anchor's path
    problems: list[tuple[Loc, int, str]] = field(default_factory=list)  # duplicate keys and the like

    def locate(self, loc: Loc) -> tuple[int | None, Loc]:
        """The line of ``loc`` (or of its nearest part written in the file), and the path it is written at."""
        for _ in range(100):
            for n in range(len(loc), 0, -1):
                if loc[:n] in self.aliases:
                    loc = self.aliases[loc[:n]] + loc[n:]
                    break
            else:
                break
        for n in range(len(loc), -1, -1):
            if loc[:n] in self.lines:
                return self.lines[loc[:n]], loc
        return None, loc


def _scalar(node: ScalarNode) -> Any:
    if node.tag in (_STR, _MERGE):
        return node.value
    constructor = None if node.tag == _NULL else SafeConstructor.yaml_constructors.get(node.tag)
    if constructor is None:
        return None if node.tag == _NULL else UNREADABLE
    try:  # a constructor raises what its parser raises: ValueError, TypeError...
        value = constructor(_CONSTRUCTOR, node)
    except Exception:
        return UNREADABLE
    return UNREADABLE if isinstance(value, types.GeneratorType) else value


class _Walk:
    """The plain data of a node graph, each node built once (an alias is its anchor's object), guarded."""

    def __init__(self, doc: Document, file: str) -> None:
        self.doc, self.file, self.count = doc, file, 0
        self.built: dict[int, tuple[Any, Loc, int]] = {}  # node -> its value, path, values it holds
        self.open: set[int] = set()  # the collections being built

    def refuse(self, message: str, node: Node) -> ConfigError:
        return ConfigError(message, line=node.start_mark.line + 1, file=self.file, hint=SHAPE_HINT)

    def value(self, node: Node, path: Loc, depth: int = 0) -> Any:
        if (seen := self.built.get(id(node))) is not None:
            if id(node) in self.open:
                raise self.refuse("an alias refers to a mapping or list it is inside", node)
            self.count += seen[2]
            if self.count > models.MAX_VALUES:
                raise self.refuse(f"more than {models.MAX_VALUES:,} values once aliases are expanded", node)
            self.doc.aliases[path] = seen[1]
            return seen[0]
        start = self.count
        self.count += 1
        out: Any
        if isinstance(node, ScalarNode):
            out = _scalar(node)
        else:
            if depth >= models.MAX_DEPTH:
                raise self.refuse(f"nested more than {models.MAX_DEPTH} levels deep", node)
            out = {} if isinstance(node, MappingNode) else []
            self.built[id(node)] = (out, path, 0)
            self.open.add(id(node))
            if isinstance(node, MappingNode):
                self.mapping(node, path, out, depth + 1)
            else:
                for i, item in enumerate(node.value):
                    self.doc.lines[(*path, i)] = item.start_mark.line + 1
                    out.append(self.value(item, (*path, i), depth + 1))
            self.open.discard(id(node))
        self.built[id(node)] = (out, path, self.count - start)
        return out

    def mapping(self, node: MappingNode, path: Loc, items: dict[str, Any], depth: int) -> None:
        merges: list[tuple[Loc, int]] = []
        self.count += len(node.value)
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, ScalarNode):
                self.doc.problems.append((path, line, "keys must be strings"))
                continue
            key = key_node.value
            if key_node.tag == _MERGE:
                merges.append(((*path, f"<<{len(merges)}"), line))
                key = merges[-1][0][-1]
            elif key in items:
                self.doc.problems.append(((*path, key), line, "duplicate key"))
                continue
            self.doc.lines[(*path, key)] = line
            items[key] = self.value(value_node, (*path, key), depth)
        for where, line in merges:
            value = items.pop(str(where[-1]))
            many = isinstance(value, list)
            for source, at in [(v, (*where, i)) for i, v in enumerate(value)] if many else [(value, where)]:
                if not isinstance(source, dict):  # the keys not given, from the first mapping that has them
                    self.doc.problems.append(
                        (path, line, "a merge key (<<) takes a mapping or a list of mappings")
                    )
                    continue
                for key, item in source.items():
                    if key not in items:
                        items[key] = item
                        self.doc.aliases[(*path, key)] = (*at, key)


def _too_deep(text: str, file: str) -> ConfigError | None:
    """Where the pure-Python parser (no nesting limit, no recursion) finds nesting over MAX_DEPTH, if it does."""
    depth = 0
    with contextlib.suppress(yaml.YAMLError):
        for ev in yaml.parse(text, Loader=yaml.SafeLoader):
            depth += isinstance(ev, CollectionStartEvent) - isinstance(ev, CollectionEndEvent)
            if depth > models.MAX_DEPTH and ev.start_mark is not None:
                message = f"nested more than {models.MAX_DEPTH} levels deep"
                return ConfigError(message, line=ev.start_mark.line + 1, file=file, hint=SHAPE_HINT)
    return None


def _yaml_problem(e: yaml.YAMLError, text: str, file: str) -> ConfigError:
    """A YAML syntax error with its line; quoted fragments are dropped (they may be a secret's characters)."""
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, e.position) + 1 if isinstance(e.position, int) else None
        return ConfigError(
            "invalid YAML: a control character YAML does not allow", line=line, file=file, hint=YAML_HINT
        )
    mark = getattr(e, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    index = getattr(mark, "index", None)
    if isinstance(index, int) and 0 <= index < len(text) and text[index] == "\t":
        return ConfigError("invalid YAML: a tab; indent with spaces", line=line, file=file, hint=YAML_HINT)
    problem = str(getattr(e, "problem", None) or "not valid YAML")
    context = getattr(e, "context", None)
    if context and not str(context).startswith("while"):
        problem = f"{context}, {problem}"
    problem = re.sub(r"\s*(?:'[^']*'|\"[^\"]*\")", "", problem)
    problem = _WORDS.get(problem, problem)
    return ConfigError(f"invalid YAML: {problem}", line=line, file=file, hint=YAML_HINT)


def read_document(text: str, file: str) -> Document | None:
    """The document in ``text``, None when there is none; its refusals in sanlens's words.

    The library composes the node graph: libyaml refuses deep nesting itself, in its own
    words (the pure-Python composer runs out of recursion), so when the library refuses,
    the pure-Python parser reads the events again and a document over sanlens's limits is
    told in sanlens's words whichever noticed first; any other refusal keeps the library's.
    """
    try:
        loader = _SafeLoader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except (yaml.YAMLError, RecursionError) as e:
        refusal = _too_deep(text, file)
        if refusal is None and isinstance(e, yaml.YAMLError):
            refusal = _yaml_problem(e, text, file)
        raise (
            refusal or ConfigError("invalid YAML: nested too deeply", file=file, hint=SHAPE_HINT)
        ) from None
    if root is None:
        return None
    doc = Document(None, {(): root.start_mark.line + 1})
    doc.data = _Walk(doc, file).value(root, ())
    return doc
