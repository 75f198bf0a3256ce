"""What every category of the hostile-input probe shares: results, the tree under test, a bounded child."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
GOOD = DATA / "perfmon" / "relog_sql01.csv"
LUN = DATA / "ontap" / "lun-statistics-show-raw-samples.txt"
IOSTAT = DATA / "linux" / "marslo-ibook-rhel7-iostat-x.txt"
SYSSTAT = DATA / "ontap" / "sysstat-M.txt"
MIB = 1024 * 1024
PASSWORD_ENV = "SANLENS_PROBE_PASSWORD"
AUTH_PASSWORD = "Probe-Auth-Secret-5e1c07"
URL_PASSWORD = "Probe-Url-Secret-a4f2d9"
CATEGORIES = ("analyze", "upstream", "http")


# ------------------------------------------------------------------ results
@dataclass
class Case:
    category: str
    name: str
    outcome: str  # ok | wrong | hang
    detail: str = ""
    traceback: bool = False
    rss_mb: float = 0.0
    seconds: float = 0.0


@dataclass
class Category:
    name: str
    cases: list[Case] = field(default_factory=list)
    tracebacks: int = 0
    peak_rss_mb: float = 0.0
    seconds: float = 0.0
    note: str = ""

    def count(self, outcome: str) -> int:
        return sum(1 for c in self.cases if c.outcome == outcome)


def crashed(text: str) -> int:
    """Unhandled exceptions in a process's output: tracebacks and the CLI's ``unexpected`` line."""
    return sum(1 for line in text.splitlines() if "Traceback (most recent call last)" in line) + len(
        re.findall(r"^error: unexpected ", text, re.M)
    )


@dataclass
class Tree:
    """The checkout whose code is probed: its exporter/ on PYTHONPATH, this interpreter."""

    path: Path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SANLENS_")}
        env["PYTHONPATH"] = str(self.path / "exporter")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env[PASSWORD_ENV] = AUTH_PASSWORD
        return env

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "sanlens", *args]

    def check(self) -> str:
        """Where ``import sanlens`` lands with this environment (must be inside the tree)."""
        out = subprocess.run(
            [sys.executable, "-c", "import sanlens; print(sanlens.__file__)"],
            env=self.env(), capture_output=True, text=True, timeout=60, cwd=tempfile.gettempdir(),
        )  # fmt: skip
        where = out.stdout.strip()
        if out.returncode != 0 or not Path(where).resolve().is_relative_to(self.path.resolve()):
            raise SystemExit(
                f"hostile_probe: sanlens does not import from {self.path}: {where or out.stderr}"
            )
        return where


def proc_kb(pid: int, key: str) -> float:
    try:
        m = re.search(rf"^{key}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return 0.0
    return float(m[1]) if m else 0.0


# ------------------------------------------------------------------ a child, bounded
@dataclass
class Run:
    rc: int | None  # None: killed (timeout or RSS cap)
    out: str
    err: str
    rss_mb: float
    seconds: float
    killed: str = ""


def run_bounded(argv: list[str], env: dict[str, str], cwd: Path, timeout: float, rss_cap_mb: float) -> Run:
    """Runs ``argv`` to its end or its kill (``timeout`` s, or RSS over the cap); its peak RSS via wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True
        )
        killed = ""
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                killed = f"no end within {timeout:g} s"
            elif proc_kb(proc.pid, "VmRSS") / 1024 > rss_cap_mb:
                killed = f"RSS over {rss_cap_mb:g} MB"
            if killed:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        seconds = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return Run(
            None if killed else proc.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            usage.ru_maxrss / 1024,
            seconds,
            killed,
        )
