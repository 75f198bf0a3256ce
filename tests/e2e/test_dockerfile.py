"""The Dockerfile, read: hadolint-clean, one pinned base, installs from the hashed lock, hardened.

These need no container engine and run everywhere; tests/e2e/test_image_build.py builds the
image for real with buildah and runs it.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from tests.conftest import ROOT, require_tool

from sanlens.config import Config

DOCKERFILE = ROOT / "Dockerfile"
PORT = 9842


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or (not buf and not line.strip()):
            continue
        buf += line.rstrip()
        if buf.endswith("\\"):
            buf = buf[:-1] + " "
            continue
        word, _, rest = buf.strip().partition(" ")
        out.append((word.upper(), re.sub(r"\s+", " ", rest.strip())))
        buf = ""
    return out


@pytest.fixture(scope="module")
def preamble() -> list[tuple[str, str]]:
    """The instructions before the first FROM (the global ARGs)."""
    ins = instructions(DOCKERFILE.read_text(encoding="utf-8"))
    return ins[: next(i for i, (w, _) in enumerate(ins) if w == "FROM")]


@pytest.fixture(scope="module")
def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for ins in instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if ins[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(ins)
    return result


def args_of(stage: list[tuple[str, str]], word: str) -> list[str]:
    return [a for w, a in stage if w == word]


def test_hadolint_is_clean() -> None:
    local = Path(sys.executable).parent / "hadolint"
    hadolint = str(local) if local.exists() else require_tool("hadolint")
    p = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0 and not p.stdout.strip(), p.stdout + p.stderr


def test_one_base_pinned_by_digest_named_once(
    preamble: list[tuple[str, str]], stages: list[list[tuple[str, str]]]
) -> None:
    """Every FROM is ${BASE_IMAGE}; its default is a slim bookworm CPython 3.11 pinned by digest."""
    (base,) = [a for w, a in preamble if w == "ARG" and a.startswith("BASE_IMAGE=")]
    ref = base.split("=", 1)[1]
    assert re.match(r"^python:3\.11(\.\d+)?-slim-bookworm@sha256:[0-9a-f]{64}$", ref), ref
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert len(re.findall(r"sha256:[0-9a-f]{64}", text)) == 1, "the digest is written once"
    assert len(stages) >= 2
    for stage in stages:
        assert re.match(r"^\$\{BASE_IMAGE\}( AS \w+)?$", stage[0][1]), stage[0]
    assert any(w == "COPY" and a.startswith("--from=") for w, a in stages[-1])


def test_dependencies_come_from_the_lock_with_hashes(stages: list[list[tuple[str, str]]]) -> None:
    """Every pip install of requirements is --require-hashes from a lock file; the wheel goes in --no-deps."""
    runs = " && ".join(a for stage in stages for w, a in stage if w == "RUN")
    installs = [c.strip() for c in runs.split("&&") if re.search(r"\bpip\b.*\binstall\b", c)]
    assert installs
    locks = []
    for cmd in installs:
        assert "--no-cache-dir" in cmd, cmd
        if " -r " in cmd:
            assert "--require-hashes" in cmd and "--only-binary=:all:" in cmd, cmd
            locks += re.findall(r" -r (\S+)", cmd)
        else:
            assert "--no-deps" in cmd and re.search(r"/dist/sanlens-\*\.whl$", cmd), cmd
    assert sorted(locks) == ["requirements/build.txt", "requirements/runtime.txt"]
    for lock in locks:
        assert (ROOT / lock).is_file(), lock
    # the wheel is built by the locked backend, without fetching a build environment
    (wheel,) = [c for c in runs.split("&&") if "pip wheel" in c]
    assert "--no-build-isolation" in wheel and "--no-deps" in wheel
    assert not re.search(r"pip install[^&]*--upgrade", runs)
    # the runtime venv has no pip of its own
    assert "python -m venv --without-pip /opt/sanlens" in runs


def test_the_image_carries_its_sbom_and_says_where(stages: list[list[tuple[str, str]]]) -> None:
    build, final = stages[0], stages[-1]
    runs = " ".join(args_of(build, "RUN"))
    assert "cyclonedx-py environment" in runs and "--output-reproducible" in runs
    assert "--output-file /opt/sanlens/sbom.cdx.json" in runs
    assert 'io.github.sanlens.sbom="/opt/sanlens/sbom.cdx.json"' in " ".join(args_of(final, "LABEL"))
    assert args_of(final, "COPY") == ["--from=build /opt/sanlens /opt/sanlens"]


def test_labels_come_from_build_arguments(stages: list[list[tuple[str, str]]]) -> None:
    final = stages[-1]
    labels = " ".join(args_of(final, "LABEL"))
    declared = {a.split("=", 1)[0] for a in args_of(final, "ARG")}
    for key, arg in (("version", "VERSION"), ("revision", "REVISION"), ("created", "CREATED")):
        assert f'org.opencontainers.image.{key}="${{{arg}}}"' in labels
        assert arg in declared
    assert 'org.opencontainers.image.base.name="${BASE_IMAGE}"' in labels
    for key in ("title", "description", "licenses", "source"):
        assert f"org.opencontainers.image.{key}=" in labels
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["version"] not in labels  # not hard-coded


def test_runtime_stage_is_hardened_and_wired_to_the_exporter(stages: list[list[tuple[str, str]]]) -> None:
    final = stages[-1]
    (user,) = args_of(final, "USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0 and (not gid or int(gid) > 0)
    # the chart runs the same numeric UID
    chart_values = yaml.safe_load((ROOT / "helm" / "sanlens" / "values.yaml").read_text(encoding="utf-8"))
    assert chart_values["securityContext"]["runAsUser"] == int(uid)
    # one port everywhere: the exporter's default, EXPOSE, the chart
    assert Config().listen == f":{PORT}"
    assert args_of(final, "EXPOSE") == [str(PORT)]
    assert chart_values["containerPort"] == PORT
    assert json.loads(args_of(final, "ENTRYPOINT")[0]) == ["sanlens", "serve"]
    assert json.loads(args_of(final, "CMD")[0]) == ["--config", "/etc/sanlens/config.yaml"]
    (health,) = args_of(final, "HEALTHCHECK")
    assert json.loads(health.split(" CMD ", 1)[1]) == ["sanlens", "healthcheck"]
    assert not args_of(final, "RUN"), "the runtime stage only copies the venv the build stage made"


def dockerignored(path: str) -> bool:
    """Docker's rule: the last matching pattern wins; '!' re-includes."""
    ignored = False
    for raw in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        pat = raw.strip()
        if not pat or pat.startswith("#"):
            continue
        negate = pat.startswith("!")
        pat = pat.lstrip("!").rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, pat.replace("**/", "")) for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerignore_sends_only_what_the_build_copies(stages: list[list[tuple[str, str]]]) -> None:
    copied = [
        src
        for stage in stages
        for w, a in stage
        if w == "COPY" and not a.startswith("--from=")
        for src in a.split()[:-1]
    ]
    assert "requirements/runtime.txt" in copied
    for src in copied:
        assert (ROOT / src).exists(), src
        assert not dockerignored(src), f"{src} is COPYed but .dockerignore drops it"
    assert not dockerignored("exporter/sanlens/cli.py")
    for junk in (
        ".venv/bin/python",
        ".tools/bin/helm",
        ".tools/containers/storage",
        ".git/HEAD",
        "tests/e2e/test_helm.py",
        "helm/sanlens",
        "requirements/dev.txt",
        "requirements/sim.in",
        "sim/sanlens_sim/server.py",  # the simulator is a distribution of its own, not the image's
    ):
        assert dockerignored(junk), junk


def test_every_package_data_glob_ships_files() -> None:
    """A glob that matches nothing is a file the wheel silently lacks."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for package, globs in pyproject["tool"]["setuptools"]["package-data"].items():
        base = ROOT / "exporter" / package.replace(".", "/")
        for pattern in globs:
            assert list(base.glob(pattern)), f"package-data {package}: {pattern} matches nothing"
