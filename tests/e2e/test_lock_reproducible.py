"""Regenerating the locks from pyproject.toml and requirements/EXCLUDE_NEWER gives the same bytes.

`scripts/lock.py --check` resolves from scratch in a temporary copy of the inputs with the
venv's pinned uv, against PyPI as it was at EXCLUDE_NEWER (a few seconds); tests/unit/test_lock.py
checks the same files offline against pyproject.toml.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, skip_or_fail
from tests.locks import REQUIREMENTS, pins_for


def uv() -> str:
    local = Path(sys.executable).parent / "uv"
    if not local.is_file():
        skip_or_fail("uv is not in the venv (requirements/tools.in; run `make venv`)")
    return str(local)


def test_the_venv_runs_the_locked_uv() -> None:
    out = subprocess.run([uv(), "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.split()[:2] == ["uv", pins_for(REQUIREMENTS / "dev.txt")["uv"]]


def test_regenerating_the_locks_gives_the_same_bytes() -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lock.py"), "--check", "--uv", uv()],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
