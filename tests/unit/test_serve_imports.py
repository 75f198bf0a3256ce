"""What a command imports, and what it does when an optional part is not installed.

`sanlens serve` never loads what only `analyze` needs (numpy, pyarrow, tqdm: the `analyze` extra,
~40 MB of resident memory a long-running exporter would pay for nothing) nor the simulator (a
distribution of its own, sim/). Where those are not installed at all, as in the image or after a
plain `pip install sanlens`, serve runs, and `analyze`, `demo` and `simulate` exit 2 with one
error line that names the install command, not a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import ROOT

PROBE = """
import sys
from sanlens.cli import build_parser
import sanlens.runtime.exporter, sanlens.serve.server, sanlens.serve.exposition, sanlens.diagnose.engine
import sanlens.ontap.collector, sanlens.hosts.registry, sanlens.hosts.prometheus_source
build_parser(["serve", "--config", "sanlens.yaml"])
print(",".join(sorted(m for m in ("numpy", "pyarrow", "tqdm", "sanlens.analyze", "sanlens_sim") if m in sys.modules)) or "none")
"""

# the optional parts made unimportable, as where they are not installed
WITHOUT = "import sys\nfor m in {modules!r}: sys.modules[m] = None\n"
ANALYZE_EXTRA = ("numpy", "pyarrow", "tqdm")


def _run(code: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter, with the project's sources and nothing else on its path."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=check,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "exporter"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def test_serve_imports_neither_the_analyze_extra_nor_the_simulator() -> None:
    out = _run(PROBE).stdout
    assert out.strip() == "none", out


@pytest.mark.parametrize("argv", [["check-config", "x.yaml"], ["plan", "--help"], ["healthcheck"]])
def test_other_commands_do_not_import_the_simulator(argv: list[str]) -> None:
    probe = PROBE.replace('["serve", "--config", "sanlens.yaml"]', repr(argv))
    assert "sanlens_sim" not in _run(probe).stdout


def test_analyze_does_import_them() -> None:
    """The probe can see an import: the same check on the analyze side finds numpy (tqdm waits for a bar)."""
    probe = PROBE.replace('["serve", "--config", "sanlens.yaml"]', '["analyze", "x.csv"]') + (
        "\nimport sanlens.analyze.perfmon_arrow\n"
        'print(",".join(m for m in ("numpy", "pyarrow") if m in sys.modules))'
    )
    out = _run(probe).stdout
    assert out.split() == ["numpy,sanlens.analyze", "numpy,pyarrow"], out


def test_the_demo_does_import_the_simulator() -> None:
    probe = PROBE.replace('["serve", "--config", "sanlens.yaml"]', '["demo"]')
    assert _run(probe).stdout.strip() == "sanlens_sim"


def _main_without(modules: tuple[str, ...], *argv: str) -> subprocess.CompletedProcess[str]:
    code = WITHOUT.format(modules=modules) + "from sanlens.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return _run(code, *argv, check=False)


@pytest.mark.parametrize(
    "argv", [["analyze", "x.csv"], ["analyze", "--help"], ["analyze", "--format", "json", "x.csv"]]
)
@pytest.mark.parametrize("missing", [ANALYZE_EXTRA, ("tqdm",)])
def test_analyze_without_its_extra_names_it(argv: list[str], missing: tuple[str, ...]) -> None:
    """Also tqdm alone, which a short log's run never imports: its absence is still told first."""
    p = _main_without(missing, *argv)
    assert p.returncode == 2, p.stderr
    first, *rest = p.stderr.splitlines()
    assert first.startswith("error: sanlens analyze needs ") and first.endswith(
        "pip install '.[analyze]' from a sanlens checkout (docs/capture.md)"
    )
    assert [line for line in rest if not line.startswith("hint: ")] == [], p.stderr  # no traceback


@pytest.mark.parametrize("argv", [["demo"], ["demo", "--help"], ["simulate", "--scenario", "healthy"]])
def test_demo_and_simulate_without_the_simulator_say_how_to_install_it(argv: list[str]) -> None:
    p = _main_without(("sanlens_sim",), *argv)
    assert p.returncode == 2, p.stderr
    first, hint = p.stderr.splitlines()
    assert first.startswith(f"error: sanlens {argv[0]} needs the simulator") and "pip install" in first
    assert first.endswith("./sim from a sanlens checkout (make venv does)")
    assert hint.startswith("hint: ")


def test_serve_and_check_config_run_without_either() -> None:
    p = _main_without((*ANALYZE_EXTRA, "sanlens_sim"), "check-config", "--skip-files", "/nonexistent.yaml")
    assert p.returncode == 2 and p.stderr.startswith("error: /nonexistent.yaml: cannot read"), p.stderr
    p = _main_without((*ANALYZE_EXTRA, "sanlens_sim"), "serve", "--help")
    assert p.returncode == 0 and "--web.config.file" in p.stdout, p.stderr


def test_analyze_without_a_config_needs_no_pydantic(tmp_path: Path) -> None:
    """A log analysed with no ``--config`` runs with pydantic unimportable (its import and the models'
    build were a fifth of a 5 MB log's second), and finds what a run with pydantic at hand finds."""
    log = str(ROOT / "tests" / "data" / "perfmon" / "relog_sql01.csv")
    bare, full = tmp_path / "bare.json", tmp_path / "full.json"
    p = _main_without(
        ("pydantic", "pydantic_core"), "analyze", log, "--format", "json", "-o", str(bare), "--quiet"
    )
    assert p.returncode == 0, p.stderr
    q = _run(
        "import sys\nfrom sanlens.cli import main\nrc = main(sys.argv[1:])\n"
        "assert 'pydantic' in sys.modules\nsys.exit(rc)\n",
        "analyze", log, "--format", "json", "-o", str(full), "--quiet", "--config", str(_config(tmp_path)),
        check=False,
    )  # fmt: skip
    assert q.returncode == 0, q.stderr
    found = json.loads(bare.read_text())
    assert [d["id"] for d in found["diagnoses"]] == ["latency_slo"]
    assert found == json.loads(full.read_text())


def _config(tmp_path: Path) -> Path:
    """A config that changes nothing an analysis reads: its diagnose section, set to the defaults."""
    path = tmp_path / "sanlens.yaml"
    path.write_text("diagnose:\n  history: 240\n  sustain_scale: 1\n")
    return path
