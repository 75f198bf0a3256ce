"""Shared test helpers.

Tests that need an external tool or the shared captures skip with a reason
locally, but FAIL under CI=true so CI can never pass by skipping.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
TOOLS_BIN = ROOT / ".tools" / "bin"
IN_CI = os.environ.get("CI", "").lower() == "true"


KINDS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test by the folder it lives in, so `-m unit` (make test-unit) selects the fast ones."""
    for item in items:
        kind = next((k for k in KINDS if f"/tests/{k}/" in str(item.path)), None)
        if kind is not None:
            item.add_marker(getattr(pytest.mark, kind))


def skip_or_fail(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


def require_tool(name: str) -> str:
    """Absolute path of an external tool (PATH, then .tools/bin), or skip/fail."""
    found = shutil.which(name) or shutil.which(name, path=str(TOOLS_BIN))
    if not found:
        skip_or_fail(f"{name} not installed (run `make test` to install it)")
    assert found
    return found


def fixture_path(rel: str) -> Path:
    """A real capture from ../shared/fixtures, or skip/fail when that folder is absent."""
    p = FIXTURES / rel
    if not p.exists():
        skip_or_fail(f"shared fixture {p} is absent")
    return p


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fixtures_dir() -> Path:
    if not FIXTURES.exists():
        skip_or_fail(f"{FIXTURES} is absent")
    return FIXTURES
