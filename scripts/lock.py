#!/usr/bin/env python3
"""Writes the hashed lock files in requirements/ from pyproject.toml, with `uv pip compile`.

    requirements/runtime.txt  pyproject.toml [project] dependencies: the image and every venv
    requirements/build.txt    requirements/build.in: the build backend and the SBOM tool (image build stage)
    requirements/dev.txt      every extra of pyproject.toml + build.in + tools.in, constrained to the two above

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
INPUTS = ("pyproject.toml", f"{REQ}/build.in", f"{REQ}/tools.in")


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
            ("pyproject.toml", f"{REQ}/build.in", f"{REQ}/tools.in"),
            (
                *(f"--extra={e}" for e in extras),
                f"--constraints={REQ}/runtime.txt",
                f"--constraints={REQ}/build.txt",
            ),
        ),
    ]


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
    for lock in locks(root):
        subprocess.run([uv, *command(lock)], cwd=root, env=env, check=True, timeout=600)


def check(uv: str) -> int:
    """Compile from scratch in a temporary copy of the inputs; 0 when every lock file is identical."""
    exclude_newer = read_exclude_newer()
    with tempfile.TemporaryDirectory(prefix="sanlens-lock-") as tmp:
        work = Path(tmp)
        (work / REQ).mkdir()
        for rel in (*INPUTS, f"{REQ}/EXCLUDE_NEWER"):
            shutil.copy(ROOT / rel, work / rel)
        compile_all(work, uv, exclude_newer)
        stale = []
        for lock in locks():
            want = (work / lock.output).read_text(encoding="utf-8")
            have_path = ROOT / lock.output
            have = have_path.read_text(encoding="utf-8") if have_path.exists() else ""
            if want != have:
                stale.append(lock.output)
                diff = difflib.unified_diff(
                    have.splitlines(), want.splitlines(), lock.output, "regenerated", lineterm="", n=1
                )
                print("\n".join(list(diff)[:60]), file=sys.stderr)
    if stale:
        print(
            f"lock: {', '.join(stale)} differ from what pyproject.toml and EXCLUDE_NEWER={exclude_newer} "
            "give: run `make lock` and commit",
            file=sys.stderr,
        )
        return 1
    print(f"lock: requirements/*.txt are current (EXCLUDE_NEWER={exclude_newer})")
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
    print(f"lock: wrote {', '.join(lock.output for lock in locks())} (EXCLUDE_NEWER={exclude_newer})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
