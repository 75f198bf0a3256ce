"""`sanlens --help` and each command's: a description, help for every argument, plain text."""

from __future__ import annotations

import argparse

import pytest

from sanlens.cli import build_parser

# the commands whose parsers this package builds, and the plan's kinds
COMMANDS = ["serve", "demo", "check-config", "analyze", "plan"]


def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def parser_of(*path: str) -> argparse.ArgumentParser:
    p = build_parser([path[0]])
    for name in path:
        p = subparsers(p)[name]
    return p


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_a_description(command: str) -> None:
    assert (parser_of(command).description or "").strip(), command


@pytest.mark.parametrize(
    "path", [(c,) for c in ("serve", "demo", "check-config")] + [("plan", k) for k in ("luns", "rebuild", "migrate", "bind")]
)  # fmt: skip
def test_every_argument_has_help(path: tuple[str, ...]) -> None:
    p = parser_of(*path)
    bare = [a.dest for a in p._actions if not a.help and not isinstance(a, argparse._SubParsersAction)]
    assert not bare, f"{' '.join(path)}: {bare}"


@pytest.mark.parametrize("path", [(), *[(c,) for c in COMMANDS], ("plan", "rebuild")])
def test_help_is_plain_text(path: tuple[str, ...]) -> None:
    p = build_parser([path[0]] if path else ["serve"])
    for name in path:
        p = subparsers(p)[name]
    text = p.format_help()
    assert "``" not in text and ":class:" not in text and ".. " not in text


def test_positionals_and_log_level_say_what_they_are() -> None:
    text = parser_of("check-config").format_help()
    assert "the YAML config file to check" in text
    for command in ("serve", "demo"):
        (level,) = [a for a in parser_of(command)._actions if a.dest == "log_level"]
        assert level.help and "log level" in level.help
    top = build_parser(["serve"]).format_help()
    assert "Windows and Linux hosts" in top and "'sanlens COMMAND --help'" in top
