"""`sanlens analyze` starts no BLAS worker threads: its array work has no matrix products."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

_THREADS = "import sanlens.analyze, numpy, os; print(len(os.listdir('/proc/self/task')))"


def _threads(env: dict[str, str]) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _THREADS], env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through Linux's /proc")
def test_analyze_runs_numpy_on_one_thread_unless_the_user_chose_more() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _threads(env) == 1
    if (os.cpu_count() or 1) > 1:  # the user's own setting wins
        assert _threads({**env, "OPENBLAS_NUM_THREADS": "2"}) == 2
