"""`sanlens serve` does not carry what only `analyze` needs: numpy and pyarrow stay unimported.

Both are dependencies of the package (analyze's batches and Arrow's CSV reader), but a
long-running exporter would pay their import time and ~40 MB of resident memory for nothing.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

PROBE = """
import sys
from sanlens.cli import build_parser
import sanlens.runtime, sanlens.server, sanlens.exposition, sanlens.diagnose.engine
import sanlens.ontap.collector, sanlens.hosts.registry, sanlens.hosts.prometheus_source
build_parser(["serve", "--config", "sanlens.yaml"])
print(",".join(sorted(m for m in ("numpy", "pyarrow", "sanlens.analyze") if m in sys.modules)) or "none")
"""


def _run(code: str) -> str:
    """What a fresh interpreter prints, with the project's sources and nothing else on its path."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "exporter"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    ).stdout


def test_serve_imports_neither_numpy_nor_pyarrow() -> None:
    out = _run(PROBE)
    assert out.strip() == "none", out


def test_analyze_does_import_them() -> None:
    """The probe can see an import: the same check on the analyze side finds both."""
    probe = PROBE.replace('["serve", "--config", "sanlens.yaml"]', '["analyze", "x.csv"]') + (
        "\nimport sanlens.analyze.perfmon_arrow\n"
        'print(",".join(m for m in ("numpy", "pyarrow") if m in sys.modules))'
    )
    out = _run(probe)
    assert out.split() == ["numpy,sanlens.analyze", "numpy,pyarrow"], out
