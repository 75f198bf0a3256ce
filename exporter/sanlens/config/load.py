"""Reading a config file into the model, every problem located by file, line and key path.

The guards that are not schema come first: the file's size and encoding, then the YAML's
shape (``sanlens.config.yaml_doc``). The plain data is validated by ``model_validate``, and
each pydantic error becomes a sanlens problem: its ``loc`` is the key path, which gives the
line; its message is sanlens's own words for the error type (and the field's ``Explain``),
never pydantic's, and never the value, which may be a secret.
"""

from __future__ import annotations

import errno
import gc
import logging
import os
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import core_schema

from sanlens.config import models
from sanlens.config.files import DecodeError, TooLarge, decode, read_capped, shown
from sanlens.config.rules import RAW_CHECKED, Loc, path_of
from sanlens.config.types import Duration, Explain, NeededBy, format_seconds
from sanlens.config.yaml_doc import SHAPE_HINT, UNREADABLE, Document, read_document
from sanlens.diagnose.registry import check as check_diagnose
from sanlens.errors import ConfigError, ConfigErrors, SanlensError
from sanlens.urls import has_password

log = logging.getLogger("sanlens.config")

_KEYS_HINT = "the keys and their ranges are in docs/configuration.md"
_FILES_HINT = "serve reads these files at start; `sanlens check-config --skip-files` checks the config alone"
# what a type error's kind (its first word) expected
_EXPECTED = {"string": "a string", "int": "an integer", "float": "a number", "bool": "true or false",
             "list": "a list", "dict": "a mapping", "model": "a mapping"}  # fmt: skip
_RANGES = {"greater_than": "more than {}", "greater_than_equal": "{} or more", "less_than": "less than {}",
           "less_than_equal": "at most {}"}  # fmt: skip
_CONSTRAINTS = {*_RANGES, "string_pattern_mismatch", "too_short", "too_long"}
_PYDANTIC_ERRORS = frozenset(typing.get_args(core_schema.ErrorType))
_WARNINGS = {
    "auth": "inline password; prefer password_file or password_env",
    "url": "password in the url; prefer auth.username with password_file or password_env",
    "tls": "insecure_skip_verify is true; TLS certificates are NOT verified",
}
_NO_CREDENTIALS = (
    "no credentials: an ONTAP cluster answers 401 to every poll without them; give auth.username "
    "with password_file or password_env, or auth.cert_file and key_file"
)
_NO_PASSWORD = (
    "a username without a password: an ONTAP cluster answers 401 to every poll; give "
    "password_file or password_env (or cert_file and key_file)"
)
_LOOPBACK = " (accepted on a loopback address, where the simulator needs none)"
_NOTHING = "no ontap targets and no hosts: nothing to poll (serve exposes only its own metrics)"
Warn = Callable[[str], None]


def _kind(value: Any) -> str:
    """What a value is, never the value (it may be a secret)."""
    kinds = ((type(None), "null"), (bool, "a boolean"), (int | float, "a number"), (str, "a string"),
             (dict, "a mapping"), (list, "a list"))  # fmt: skip
    return next((name for kind, name in kinds if isinstance(value, kind)), f"a YAML {type(value).__name__}")


def _field_at(root: type[BaseModel], loc: Loc) -> tuple[type[BaseModel] | None, FieldInfo | None, Any, bool]:
    """The model whose key ``loc`` names last, that key's field, the type at ``loc``, whether ``loc`` is inside it."""
    owner: type[BaseModel] | None = None
    current: type[BaseModel] | None = root
    info: FieldInfo | None = None
    tp: Any = Any
    inside = False
    for step in loc:
        if current is None and isinstance(step, str) and step in models.HOST_MODELS:
            current = models.HOST_MODELS[step]  # a tagged union's member
            continue
        if current is not None and isinstance(step, str):
            owner, info = current, current.model_fields.get(step)
            if info is None:
                return owner, None, None, False
            tp, inside = info.annotation, False
        else:
            args = typing.get_args(tp)
            tp, inside = (args[-1] if args else None), True
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            inner = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = inner[0] if len(inner) == 1 else tp
        current = tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None
    return owner, info, tp, inside


def _range(info: FieldInfo, duration: bool) -> str | None:
    """``must be from 1s to 24h``: the whole range, whichever end was crossed."""
    b = {
        k: v
        for m in info.metadata
        for k in ("ge", "gt", "le", "lt")
        if (v := getattr(m, k, None)) is not None
    }
    show = format_seconds if duration else (lambda v: f"{v:g}")
    if "ge" in b and "le" in b:
        lo, hi = show(b["ge"]), show(b["le"])
        return f"must be from {lo} to {hi}" if duration else f"must be between {lo} and {hi}"
    low = f"{show(b['ge'])} or more" if "ge" in b else f"more than {show(b['gt'])}" if "gt" in b else ""
    high = f"at most {show(b['le'])}" if "le" in b else f"less than {show(b['lt'])}" if "lt" in b else ""
    return f"must be {' and '.join(w for w in (low, high) if w)}" if low or high else None


def word(root: type[BaseModel], err: Any) -> tuple[Loc, str]:
    """Where one pydantic error is and what it says, in sanlens's words; the input by its kind, never shown."""
    kind, raw = err["type"], err["loc"]
    loc: Loc = tuple(
        s for i, s in enumerate(raw) if not (i and isinstance(raw[i - 1], int) and s in models.HOST_MODELS)
    )
    owner, info, tp, inside = _field_at(root, raw)
    needed = [m.message for m in (info.metadata if info else []) if isinstance(m, NeededBy)]
    if kind == "missing" and needed:
        return (*loc[:-1], "source"), needed[0]
    if kind == "host_source":
        return (*loc, "source"), str(err["msg"])
    if kind == "extra_forbidden":
        return loc, f"unknown key (allowed: {', '.join(sorted(owner.model_fields) if owner else [])})"
    key = next((s for s in reversed(loc) if isinstance(s, str)), "")
    return loc, _says(err, key, None if inside else info, tp)


def _says(err: Any, key: str, info: FieldInfo | None, tp: Any) -> str:
    """One error's words; ``info`` is the field's when the error is the field's own, not an item's."""
    kind, value = err["type"], err.get("input")
    if kind == "missing":
        return "required key is missing"
    if kind not in _PYDANTIC_ERRORS:  # a rule's or a validator's own words
        return str(err["msg"])
    scalar = value is not None and not isinstance(value, dict | list)
    if key in models.SECRET_KEYS:
        return "expected a string (quote it)" if scalar and value is not UNREADABLE else "expected a string"
    if value is UNREADABLE:
        return "a value its YAML tag cannot read, or a tag sanlens does not read"
    if kind in _CONSTRAINTS and info is not None:
        explained = (why for m in info.metadata if isinstance(m, Explain) and (why := m.message(value)))
        if why := next(explained, None) or (_range(info, tp is Duration) if kind in _RANGES else None):
            return why
    if kind in _RANGES:
        return "must be " + _RANGES[kind].format(next(iter((err.get("ctx") or {}).values()), ""))
    if kind == "literal_error":
        choices = typing.get_args(tp) if typing.get_origin(tp) is Literal else ()
        return f"must be one of {', '.join(map(repr, choices))}" if choices else "is not one of the choices"
    if kind == "finite_number":
        return "expected a finite number"
    if kind == "float_type" and isinstance(value, int) and not isinstance(value, bool):
        return "number too large"
    typed = kind.endswith(("_type", "_parsing")) or kind == "int_from_float"
    if typed and (expected := _EXPECTED.get(kind.split("_")[0])):
        return f"expected {expected}, got {_kind(value)}{' (quote it)' if kind == 'string_type' and scalar else ''}"
    return "is not valid" if kind == "string_pattern_mismatch" else f"is not valid ({kind.replace('_', ' ')})"


class Report:
    """Every problem of one file: located, told once per place, in line order, capped."""

    def __init__(self, doc: Document | None, file: str) -> None:
        self.doc, self.file = doc, file
        self.found: list[tuple[int | None, Loc, str]] = []
        self.warnings: list[ConfigError] = []  # accepted but unsafe or idle: told, never fatal
        self.seen: set[tuple[Loc, str]] = set()
        for loc, line, message in doc.problems if doc else ():
            self.add(loc, message, line)

    def locate(self, loc: Loc) -> tuple[int | None, Loc]:
        return self.doc.locate(loc) if self.doc is not None else (None, loc)

    def add(self, loc: Loc, message: str, line: int | None = None) -> None:
        where, place = self.locate(loc)
        if (place, message) not in self.seen:
            self.seen.add((place, message))
            self.found.append((line if line is not None else where, loc, message))

    def add_errors(self, root: type[BaseModel], e: ValidationError) -> None:
        for err in e.errors(include_url=False):
            self.add(*word(root, err))

    def warn(self, loc: Loc, message: str) -> None:
        line = self.locate(loc)[0]
        self.warnings.append(ConfigError(message, path_of(loc), line, self.file))

    def tell_warnings(self, warn: Warn | None = None) -> int:
        """Each warning once, located as an error is (``file:line: path: message``); how many."""
        for w in self.warnings:
            (warn or print_warning)(w.located())
        told, self.warnings = len(self.warnings), []
        return told

    def cited(self, loc: Loc) -> str:
        line = self.locate(loc)[0]
        return f"{path_of(loc)}, line {line}" if line is not None else path_of(loc)

    def __len__(self) -> int:
        return len(self.found)

    def raise_if_any(self, hint: str = _KEYS_HINT, error: type[ConfigErrors] = ConfigErrors) -> None:
        if self.found:
            ordered = sorted(self.found, key=lambda p: p[0] if p[0] is not None else 1 << 62)
            cap = models.MAX_PROBLEMS
            problems = [ConfigError(m, path_of(loc), line, self.file) for line, loc, m in ordered[:cap]]
            raise error(problems, max(len(ordered) - cap, 0), hint=hint)


def _too_large(file: str) -> ConfigError:
    hint = "is this the config file? 10,000 hosts take about 0.5 MB"
    return ConfigError(f"larger than {models.MAX_CONFIG_BYTES // (1024 * 1024)} MiB", file=file, hint=hint)


def read_text(path: str | os.PathLike[str]) -> str:
    """The text of a config file, capped at MAX_CONFIG_BYTES and decoded; ConfigError names the file."""
    try:
        return decode(read_capped(path, models.MAX_CONFIG_BYTES))
    except OSError as e:
        hint = "check the path and its permissions"
        raise ConfigError(f"cannot read: {e.strerror}", file=str(path), hint=hint) from None
    except TooLarge:
        raise _too_large(str(path)) from None
    except DecodeError as e:
        hint = "save the file as UTF-8 (UTF-16 with a byte-order mark is read too)"
        raise ConfigError(e.reason, line=e.line, file=str(path), hint=hint) from None


def parse(text: str, file: str) -> Document | None:
    """The YAML document of ``text``; a large config makes many objects and no cycles, so the GC waits."""
    if len(text) > models.MAX_CONFIG_BYTES:
        raise _too_large(file)
    was = gc.isenabled()
    gc.disable()
    try:
        return read_document(text, file)
    finally:
        if was:
            gc.enable()


def _validate(text: str, file: str) -> tuple[models.Config | None, Report]:
    """The config, or None and a report of every problem the file itself has."""
    doc = parse(text, file)
    report = Report(doc, file)
    data = {} if doc is None or doc.data is None else doc.data
    if not isinstance(data, dict):
        line = 1 if doc is None else doc.lines[()]
        raise ConfigError("the top level must be a mapping", line=line, file=file, hint=SHAPE_HINT)
    unique = models.Config.RULES[0]
    for loc, name, count, first in unique.repeats(data):
        report.add(loc, unique.message(name, count, report.cited(first)))
    try:
        cfg = models.Config.model_validate(data, context={RAW_CHECKED: True})
    except ValidationError as e:
        report.add_errors(models.Config, e)
        return None, report
    if report:
        return None, report
    _check_targets(cfg, report)
    if report:
        return None, report
    return cfg, report


def _is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def _check_targets(cfg: models.Config, report: Report) -> None:
    """What the models accept but serve would run badly: a cluster without credentials is an error
    (every poll is refused); an inline or URL password, an unverified certificate and a config
    with nothing to poll are warnings, the first place of each kind told with how many more."""
    if not cfg.ontap and not cfg.hosts:
        report.warn((), _NOTHING)
    for i, t in enumerate(cfg.ontap):
        auth = t.auth
        if t.source != "rest" or auth.cert_file or has_password(t.url):
            continue
        if not (auth.password or auth.password_file or auth.password_env):
            loc: Loc = ("ontap", i, "auth", "username") if auth.username else ("ontap", i, "auth")
            message = _NO_PASSWORD if auth.username else _NO_CREDENTIALS
            if _is_loopback(t.url):
                report.warn(loc, message + _LOOPBACK)
            else:
                report.add(loc, message)
    found: dict[str, list[Loc]] = {kind: [] for kind in _WARNINGS}
    for name in ("ontap", "hosts"):
        for i, t in enumerate(getattr(cfg, name)):
            hits = (t.auth.password, t.url and has_password(t.url), t.tls.insecure_skip_verify)
            keys = (("auth", "password"), ("url",), ("tls", "insecure_skip_verify"))
            for kind, hit, key in zip(_WARNINGS, hits, keys, strict=True):
                if hit:
                    found[kind].append((name, i, *key))
    for kind, places in found.items():
        if places:
            more = f" (and {len(places) - 1} more)" if len(places) > 1 else ""
            report.warn(places[0], _WARNINGS[kind] + more)


def print_warning(text: str) -> None:
    """A config warning: to the log once logging is set up (serve), else to stderr as ``warning: ...``."""
    if log.hasHandlers():
        log.warning("%s", text)
    else:
        print(f"warning: {text}", file=sys.stderr)


def problem_lines(e: ConfigError) -> list[str]:
    """How every command tells a config's problems: one ``error:`` line, several indented below it."""
    problems = e.problems
    omitted = getattr(e, "omitted", 0)
    if len(problems) == 1 and not omitted:
        return [f"error: {problems[0].located()}"]
    lines = [f"error: {e.file or 'config'}: {len(problems) + omitted} problems"]
    lines += [f"  {p.located()}" for p in problems]
    if omitted:
        lines.append(f"  ... and {omitted} more")
    return lines


def print_config_error(e: SanlensError, command: str) -> int:
    """Print a failure to load a config as ``sanlens check-config`` does (problems, then a hint); the exit code."""
    if isinstance(e, ConfigError):
        lines = problem_lines(e)
        hint = e.hint or f"see 'sanlens {command} --help'"
    else:
        first, *rest = str(e).splitlines() or [type(e).__name__]
        lines = [f"error: {first}", *(f"  {line}" for line in rest)]
        hint = e.hint or f"see 'sanlens {command} --help'"
    for line in [*lines, f"hint: {hint}"]:
        print(line, file=sys.stderr)
    return e.exit_code


Credentials = tuple[Loc, models.AuthConfig, models.TLSConfig]
_CREDENTIALS = ((models.AuthConfig, "auth"), (models.TLSConfig, "tls"))


def _parts(data: dict[str, Any]) -> tuple[models.DiagnoseConfig | None, list[Credentials]]:
    """Of a config that does not validate, the parts that do: its diagnose section, each target's credentials.

    So check-config reports the registry's and the files' problems in the same run as the others.
    """

    def valid(cls: type[BaseModel], value: Any) -> Any:
        try:
            return cls.model_validate({} if value is None else value)
        except ValidationError:
            return None

    section = data.get("diagnose")
    diagnose = valid(models.DiagnoseConfig, section)
    if diagnose is None and isinstance(section, dict):  # the registry reads the thresholds alone
        diagnose = valid(models.DiagnoseConfig, {"thresholds": section.get("thresholds", {})})
    out: list[Credentials] = []
    for name in ("ontap", "hosts"):
        items = data.get(name)
        for i, item in enumerate(items if isinstance(items, list) else []):
            auth, tls = (
                (valid(m, item.get(k)) for m, k in _CREDENTIALS) if isinstance(item, dict) else (None, None)
            )
            if auth is not None and tls is not None:
                out.append(((name, i), auth, tls))
    return diagnose, out


def _file_problem(path: str, directory_ok: bool = False) -> str | None:
    try:
        if "\x00" in path:
            raise OSError(errno.EINVAL, "the path holds a NUL character")
        if directory_ok and os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").close()
    except OSError as e:
        return f"cannot read {shown(path)}: {e.strerror}"
    return None


def _check_files(report: Report, targets: list[Credentials]) -> None:
    """What the exporter reads at start-up or on every poll: password files and variables, certificates."""
    for base, auth, tls in targets:
        if auth.password_file or auth.password_env:
            try:
                auth.resolve_password()
            except ConfigError as e:
                report.add(
                    (*base, "auth", "password_file" if auth.password_file else "password_env"), e.message
                )
        for key in ("cert_file", "key_file"):
            if getattr(auth, key) and (why := _file_problem(getattr(auth, key))):
                report.add((*base, "auth", key), why)
        if tls.ca_file and not tls.insecure_skip_verify and (why := _file_problem(tls.ca_file, True)):
            report.add((*base, "tls", "ca_file"), why)


def load_config_text(text: str, file: str = "<config>", warn: Warn | None = None) -> models.Config:
    """The config in ``text``; ConfigErrors lists every problem of the file itself.

    Warnings go to ``warn`` (default ``print_warning``), each as ``file:line: path: message``.
    """
    cfg, report = _validate(text, file)
    report.tell_warnings(warn)
    report.raise_if_any()
    assert cfg is not None
    return cfg


def load_config(path: str | Path) -> models.Config:
    """The config file at ``path`` (UTF-8, or UTF-16/32 with a byte-order mark)."""
    return load_config_text(read_text(path), str(path))


def check_config(path: str | Path, *, files: bool = True, warn: Warn | None = None) -> models.Config:
    """The config at ``path`` as ``sanlens serve`` would run it, or ConfigErrors with every problem.

    Beyond the file itself: the diagnosis registry's ranges and, unless ``files`` is
    false, the password files and variables and the certificate files it names. Warnings
    go to ``warn`` (default ``print_warning``), each as ``file:line: path: message``.
    """
    cfg, report = _validate(read_text(path), str(path))
    report.tell_warnings(warn)
    if cfg is not None:
        diagnose: models.DiagnoseConfig | None = cfg.diagnose
        targets: list[Credentials] = [
            ((name, i), t.auth, t.tls)
            for name in ("ontap", "hosts")
            for i, t in enumerate(getattr(cfg, name))
        ]
    else:
        diagnose, targets = _parts(
            report.doc.data if report.doc and isinstance(report.doc.data, dict) else {}
        )
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
