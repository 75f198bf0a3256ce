"""Fuzzing the config loader: any text gives a Config or a ConfigError that says where.

``load_config_text`` with the diagnosis registry's ``validate_config``, and ``check_config``
on a file (what ``sanlens check-config`` and ``serve`` run, password and certificate files
included), either accept the text or raise ``ConfigError`` with the file and a line, or a key
path, for every problem; never another exception. Inputs: the documented examples
(README, docs/configuration.md) mutated as data (values swapped for other types, extreme
numbers, YAML tags, keys dropped, renamed or added) and as text (YAML syntax: tags, anchors
and aliases, flow and complex keys, documents, tabs, BOMs, NULs; lines dropped, swapped,
duplicated, re-indented), and random text. 200 examples a test, the same on every run
(``SANLENS_FUZZ=random`` explores new ones).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sanlens.config import Config
from sanlens.config.load import check_config, load_config_text
from sanlens.diagnose.registry import validate_config
from sanlens.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
FILE = "fuzz.yaml"

FUZZ = settings(
    max_examples=int(os.environ.get("SANLENS_FUZZ_EXAMPLES", "200")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def documented_examples() -> list[str]:
    """Every ``yaml`` block of README.md and docs/configuration.md that is a sanlens config."""
    out = []
    for doc in ("README.md", "docs/configuration.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
            if re.search(r"^(ontap|hosts|listen|diagnose):", block, re.M):
                out.append(block)
    assert out, "no config example in the docs"
    return out


SEEDS = [
    *documented_examples(),
    "diagnose:\n  thresholds:\n    latency_slo: {data_warning_s: 0.02, sustain_seconds: 300}\n"
    "    san_oversubscription: {}\n  sustain_scale: 0.05\n  history: 240\n  backend_iops_capacity: 50000\n",
]

# YAML that means something to the loader: tags, anchors, aliases, merge keys, odd scalars.
SCALARS: list[Any] = [
    None, True, False, 0, -1, 1, 10**400, -(10**30), 0.5, float("inf"), float("-inf"), float("nan"),
    "", " ", "60s", "500ms", "1h", "-5s", "1e309s", "nan", "5 m", "9" * 40 + "h", "https://", "http://x",
    ":9842", "0.0.0.0:99999999999999999999", "127.0.0.1:-1", "lun", "system:node", "E:", "data", "winrm",
    "perfmon", "\x00", "\ufeff", "é", "\t", "null", "~", "yes", "0x1F", "0o17", "1_000", "2001-12-14",
]  # fmt: skip
TOKENS = [
    "!!python/object:os.system ", "!!python/name:os.system ", "!!int x", "!!float y", "!!binary zz",
    "!!timestamp 2001-12-14", "!!set {a, b}", "!!omap [a: 1]", "!!str ", "!!map ", "!!seq ", "!custom ",
    "!<tag:yaml.org,2002:int> x", "&a ", "*a", "*nowhere", "<<: *a", "&r [*r]", "? [a, b]\n: 1", "? {a: 1}",
    "{", "}", "[", "]", ",", ": ", "- ", "---\n", "...\n", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "#", "|",
    ">", "'", '"', "\\", "\t", "\r", "\n", "\x00", "\ufeff", "\x85", "\u2028", "  ", "@", "`", "%",
    "[" * 60, "{a: " * 40, "- " * 60,
]  # fmt: skip

Tree = Any


def _paths(tree: Tree, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(tree, dict):
        for k, v in tree.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _paths(v, (*prefix, i))
    return out


def _get(tree: Tree, path: tuple[Any, ...]) -> Tree:
    for k in path:
        tree = tree[k]
    return tree


VALUES = st.recursive(
    st.sampled_from(SCALARS) | st.text(max_size=10) | st.integers() | st.floats(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def data_mutation(draw: st.DrawFn, tree: Tree) -> Tree:
    """One value replaced, or one key dropped, renamed or added, somewhere in the tree."""
    path = draw(st.sampled_from(_paths(tree)))
    if not path:
        return draw(VALUES) if draw(st.integers(0, 9)) == 0 else tree
    parent, key = _get(tree, path[:-1]), path[-1]
    op = draw(st.sampled_from(["replace", "replace", "drop", "rename", "add"]))
    if op == "replace":
        parent[key] = draw(VALUES)
    elif op == "drop":
        del parent[key]
    elif op == "rename" and isinstance(parent, dict):
        parent[draw(st.sampled_from([*map(str, SCALARS), "name", "url", "auth", "tables", "x"]))] = (
            parent.pop(key)
        )
    elif op == "add" and isinstance(parent, dict):
        parent[draw(st.text(max_size=8))] = draw(VALUES)
    return tree


@st.composite
def text_mutation(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines(keepends=True) or [""]
    op = draw(st.sampled_from(["insert", "insert", "insert", "drop", "swap", "dup", "indent", "cut"]))
    if op == "insert":
        i = draw(st.integers(0, len(text)))
        return text[:i] + draw(st.sampled_from(TOKENS) | st.text(max_size=4)) + text[i:]
    if op == "cut":
        return text[: draw(st.integers(0, len(text)))]
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    if op == "drop":
        del lines[i]
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "dup":
        lines.insert(i, lines[i])
    else:
        lines[i] = " " * draw(st.integers(0, 6)) + lines[i].lstrip(" ")
    return "".join(lines)


@st.composite
def config_texts(draw: st.DrawFn) -> str:
    seed = draw(st.sampled_from(SEEDS))
    if draw(st.booleans()):
        tree = yaml.safe_load(seed)
        for _ in range(draw(st.integers(1, 4))):
            tree = draw(data_mutation(tree))
        seed = yaml.safe_dump(tree, sort_keys=False, allow_unicode=draw(st.booleans()))
    for _ in range(draw(st.integers(0 if seed else 1, 4))):
        seed = draw(text_mutation(seed))
    return seed


def assert_located(e: ConfigError, file: str = FILE) -> None:
    """The file and a line, or a key path (for each problem, when the error gathers several)."""
    for p in getattr(e, "problems", [e]):
        assert (p.file == file and p.line is not None) or p.path, f"no line or key path: {p}"


def load_and_validate(text: str) -> Config | None:
    """What the loader and the diagnosis registry make of the text."""
    try:
        cfg = load_config_text(text, FILE)
        validate_config(cfg.diagnose)
    except ConfigError as e:
        assert_located(e)
        return None
    return cfg


def check_file(path: Path, text: str) -> Config | None:
    """What ``sanlens check-config`` and ``serve`` make of it as a file: password and certificate files too."""
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        return check_config(path, files=True)
    except ConfigError as e:
        assert_located(e, str(path))
        return None


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-config")


@FUZZ
@given(text=config_texts())
def test_mutated_examples_load_or_raise_a_located_config_error(scratch: Path, text: str) -> None:
    cfg = load_and_validate(text)
    if cfg is not None:
        assert isinstance(cfg, Config)
    check_file(scratch / "sanlens.yaml", text)


@FUZZ
@given(text=st.text(max_size=200))
def test_random_text_loads_or_raises_a_located_config_error(scratch: Path, text: str) -> None:
    load_and_validate(text)
    check_file(scratch / "sanlens.yaml", text)


# ------------------------------------------------------------------ what the fuzzing found


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("listen: !!int x\n", id="int-tag"),
        pytest.param("diagnose: {sustain_scale: !!float y}\n", id="float-tag"),
        pytest.param("listen: !!timestamp 2001-13-45\n", id="timestamp-tag"),
        pytest.param("listen: !!timestamp 2001-12-14240\n", id="timestamp-tag-malformed"),
    ],
)
def test_scalar_whose_tag_cannot_construct_it_is_a_located_config_error(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_config_text(text, FILE)
    assert_located(e.value)


def test_integer_of_five_thousand_digits_is_a_located_config_error() -> None:
    with pytest.raises(ConfigError) as e:
        load_config_text("diagnose:\n  history: " + "1" * 5000 + "\n", FILE)
    assert_located(e.value)


def test_file_path_with_a_nul_byte_is_a_located_config_error(tmp_path: Path) -> None:
    path = tmp_path / "sanlens.yaml"
    path.write_text('ontap:\n- name: a\n  url: http://x\n  tls: {ca_file: "\\0"}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        check_config(path, files=True)
    assert_located(e.value, str(path))
