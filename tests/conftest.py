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
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
TOOLS_BIN = ROOT / ".tools" / "bin"
IN_CI = os.environ.get("CI", "").lower() == "true"


KINDS = ("unit", "integration", "e2e")

# Property tests draw the same examples on every run and machine: the examples derive from each
# test's source, no example database carries failures from one run to the next, and neither a
# deadline nor the too-slow health check makes a loaded machine fail a test. A failure prints
# the blob that reproduces it (@reproduce_failure). SANLENS_FUZZ=random explores new examples.
_PROPERTY_TESTS = {
    "deadline": None,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow],
}
settings.register_profile("sanlens", derandomize=True, **_PROPERTY_TESTS)
settings.register_profile("sanlens-random", derandomize=False, **_PROPERTY_TESTS)
settings.load_profile("sanlens-random" if os.environ.get("SANLENS_FUZZ") == "random" else "sanlens")


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


def pinned_copy(src: Path, into: Path, mtime: float) -> Path:
    """A copy of the capture ``src`` under its own name in the folder ``into``, modified at ``mtime``.

    `sanlens analyze` places a capture that prints no time of its own (``sysstat -M`` text,
    ``iostat`` without ``-t``, counter-table rows JSON) so that its last sample is at the file's
    modification time, which a clone sets to the moment of checkout. A test analyzes such a
    capture through a copy whose time is part of the commit.
    """
    into.mkdir(parents=True, exist_ok=True)
    dst = into / src.name
    shutil.copyfile(src, dst)
    os.utime(dst, (mtime, mtime))
    return dst


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fixtures_dir() -> Path:
    if not FIXTURES.exists():
        skip_or_fail(f"{FIXTURES} is absent")
    return FIXTURES
