#!/usr/bin/env python3
"""Writes the hashed lock files in requirements/ from pyproject.toml, with `uv pip compile`.

    requirements/runtime.txt  pyproject.toml [project] dependencies: the image and every venv
    requirements/build.txt    requirements/build.in: the build backend and the SBOM tool (image build stage)
    requirements/dev.txt      every extra of pyproject.toml + build.in + tools.in + sim.in, constrained
                              to the two above
    requirements/sim.in       written first, from sim/pyproject.toml: the simulator's dependencies but
                              the product (both are this repository's, installed editable by `make venv`:
                              pip --require-hashes refuses a local project as a pinned requirement)

Each is a pip requirements file with every version pinned and the sha256 of every file of that
version (all platforms: `--universal`, Python >= 3.11), so `pip install --require-hashes -r`
installs them with plain pip and nothing else. The resolution sees only what PyPI had at the
timestamp in requirements/EXCLUDE_NEWER (passed as UV_EXCLUDE_NEWER, so the header keeps the
command Renovate can re-run), and starts from scratch (--upgrade), so the same inputs give the
same bytes on any machine. To take newer versions, move the timestamp:

    .venv/bin/python scripts/lock.py                       # make lock: rewrite the lock files
    .venv/bin/python scripts/lock.py --exclude-newer now   # make lock-upgrade: newest versions as of now
    .venv/bin/python scripts/lock.py --check               # compile into a temporary tree, compare bytes
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQ = "requirements"
EXCLUDE_NEWER_FILE = ROOT / REQ / "EXCLUDE_NEWER"
PYTHON = "3.11"  # the oldest Python of requires-python: a universal lock covers it and every newer one
SIM_PYPROJECT = "sim/pyproject.toml"
SIM_IN = f"{REQ}/sim.in"
INPUTS = ("pyproject.toml", SIM_PYPROJECT, f"{REQ}/build.in", f"{REQ}/tools.in")


@dataclass(frozen=True)
class Lock:
    output: str
    sources: tuple[str, ...]
    options: tuple[str, ...] = ()


def locks(root: Path = ROOT) -> list[Lock]:
    """The lock files in the order they are compiled (dev.txt is constrained to the two before it)."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    extras = sorted(pyproject["project"].get("optional-dependencies", {}))
    return [
        Lock(f"{REQ}/runtime.txt", ("pyproject.toml",)),
        Lock(f"{REQ}/build.txt", (f"{REQ}/build.in",)),
        Lock(
            f"{REQ}/dev.txt",
            ("pyproject.toml", f"{REQ}/build.in", f"{REQ}/tools.in", SIM_IN),
            (
                *(f"--extra={e}" for e in extras),
                f"--constraints={REQ}/runtime.txt",
                f"--constraints={REQ}/build.txt",
            ),
        ),
    ]


def _name(requirement: str) -> str:
    """The normalized project name a PEP 508 requirement starts with."""
    m = re.match(r"\s*([A-Za-z0-9._-]+)", requirement)
    if m is None:
        raise ValueError(f"not a requirement: {requirement!r}")
    return re.sub(r"[-_.]+", "-", m.group(1)).lower()


def sim_in(root: Path = ROOT) -> str:
    """requirements/sim.in: the dependencies of sim/pyproject.toml less the product, which is local."""
    product = _name(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"])
    sim = tomllib.loads((root / SIM_PYPROJECT).read_text(encoding="utf-8"))["project"]
    reqs = [r for r in sim.get("dependencies", []) if _name(r) != product]
    return (
        f"# Written by scripts/lock.py from {SIM_PYPROJECT}: the simulator's dependencies, less the\n"
        "# product (a local project like the simulator, installed editable by `make venv`).\n"
        + "".join(f"{r}\n" for r in reqs)
    )


def command(lock: Lock) -> list[str]:
    """The arguments after `uv`; `--upgrade` and `--quiet` are left out of the file's header by uv."""
    return [
        "pip",
        "compile",
        "--quiet",
        "--upgrade",
        "--generate-hashes",
        "--universal",
        f"--python-version={PYTHON}",
        *lock.options,
        f"--output-file={lock.output}",
        *lock.sources,
    ]


def read_exclude_newer(root: Path = ROOT) -> str:
    value = (root / REQ / "EXCLUDE_NEWER").read_text(encoding="utf-8").strip()
    parse_timestamp(value)
    return value


def parse_timestamp(value: str, now: dt.datetime | None = None) -> dt.datetime:
    """An RFC 3339 UTC timestamp such as 2026-11-24T00:00:00Z, not after ``now``.

    A cut-off in the future would let a later resolution see releases this one did not.
    """
    when = dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    if when > (now or dt.datetime.now(dt.UTC)):
        raise ValueError(f"EXCLUDE_NEWER {value} is in the future")
    return when


def find_uv() -> str:
    local = Path(sys.executable).parent / "uv"
    found = str(local) if local.is_file() else shutil.which("uv")
    if not found:
        sys.exit("lock: uv not found: run `make venv` (requirements/tools.in pins it)")
    return found


def compile_all(root: Path, uv: str, exclude_newer: str) -> None:
    env = {
        **os.environ,
        "UV_EXCLUDE_NEWER": exclude_newer,
        "UV_NO_CONFIG": "1",  # no uv.toml of the user's or the machine's changes the resolution
        "UV_PYTHON_DOWNLOADS": "never",
    }
    for name in ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_CONSTRAINT"):
        env.pop(name, None)
    (root / SIM_IN).write_text(sim_in(root), encoding="utf-8")
    for lock in locks(root):
        subprocess.run([uv, *command(lock)], cwd=root, env=env, check=True, timeout=600)


def check(uv: str) -> int:
    """Compile from scratch in a temporary copy of the inputs; 0 when every lock file is identical."""
    exclude_newer = read_exclude_newer()
    with tempfile.TemporaryDirectory(prefix="sanlens-lock-") as tmp:
        work = Path(tmp)
        for rel in (*INPUTS, f"{REQ}/EXCLUDE_NEWER"):
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / rel, work / rel)
        compile_all(work, uv, exclude_newer)
        stale = []
        for output in (SIM_IN, *(lock.output for lock in locks())):
            want = (work / output).read_text(encoding="utf-8")
            have_path = ROOT / output
            have = have_path.read_text(encoding="utf-8") if have_path.exists() else ""
            if want != have:
                stale.append(output)
                diff = difflib.unified_diff(
                    have.splitlines(), want.splitlines(), output, "regenerated", lineterm="", n=1
                )
                print("\n".join(list(diff)[:60]), file=sys.stderr)
    if stale:
        print(
            f"lock: {', '.join(stale)} differ from what the pyproject.toml files and "
            f"EXCLUDE_NEWER={exclude_newer} "
            "give: run `make lock` and commit",
            file=sys.stderr,
        )
        return 1
    print(f"lock: requirements/*.txt and sim.in are current (EXCLUDE_NEWER={exclude_newer})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="compare instead of writing")
    p.add_argument(
        "--exclude-newer",
        metavar="TIMESTAMP",
        help="store a new timestamp (YYYY-MM-DDTHH:MM:SSZ, or `now`) in requirements/EXCLUDE_NEWER first",
    )
    p.add_argument("--uv", default=None, help="the uv binary (default: the venv's, then PATH)")
    args = p.parse_args(argv)
    uv = args.uv or find_uv()
    if args.check:
        return check(uv)
    if args.exclude_newer:
        value = args.exclude_newer
        if value == "now":
            value = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        parse_timestamp(value)
        EXCLUDE_NEWER_FILE.write_text(value + "\n", encoding="utf-8")
    exclude_newer = read_exclude_newer()
    compile_all(ROOT, uv, exclude_newer)
    print(
        f"lock: wrote {', '.join([SIM_IN, *(lock.output for lock in locks())])} (EXCLUDE_NEWER={exclude_newer})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
