"""The Dockerfile: hadolint-clean, hardened, and its install steps work.

There is no container engine here, so the image's own RUN steps are replayed on the host:
the build context is what the build stage COPYs, the wheel is built and installed into a
fresh venv exactly as the Dockerfile says, with only the flags that keep it offline added
(no build isolation, no index; runtime dependencies come from the project venv through a
.pth path entry). Then the ENTRYPOINT and the HEALTHCHECK run against that install.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

import pytest
import yaml
from tests.conftest import ROOT, free_port, require_tool

from sanlens.config import Config

DOCKERFILE = ROOT / "Dockerfile"
PORT = 9842


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in text.splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
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
def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for ins in instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if ins[0] == "FROM":
            result.append([])
        result[-1].append(ins)
    return result


def args_of(stage: list[tuple[str, str]], word: str) -> list[str]:
    return [a for w, a in stage if w == word]


def test_hadolint_is_clean() -> None:
    local = Path(sys.executable).parent / "hadolint"
    hadolint = str(local) if local.exists() else require_tool("hadolint")
    p = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0 and not p.stdout.strip(), p.stdout + p.stderr


def test_multi_stage_on_a_pinned_slim_python(stages: list[list[tuple[str, str]]]) -> None:
    assert len(stages) >= 2
    pinned = re.compile(r"^python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?( AS \w+)?$", re.I)
    for stage in stages:
        assert pinned.match(stage[0][1]), stage[0]
    assert any(w == "COPY" and a.startswith("--from=") for w, a in stages[-1])


def test_runtime_stage_is_hardened_and_wired_to_the_exporter(stages: list[list[tuple[str, str]]]) -> None:
    final = stages[-1]
    (user,) = args_of(final, "USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0 and (not gid or int(gid) > 0)
    # the chart runs the same numeric UID
    chart_values = yaml.safe_load((ROOT / "helm" / "sanlens" / "values.yaml").read_text(encoding="utf-8"))
    assert chart_values["securityContext"]["runAsUser"] == int(uid)
    # one port everywhere: the exporter's default, EXPOSE, the chart, the healthcheck
    assert Config().listen == f":{PORT}"
    assert args_of(final, "EXPOSE") == [str(PORT)]
    assert chart_values["containerPort"] == PORT
    assert json.loads(args_of(final, "ENTRYPOINT")[0]) == ["sanlens", "serve"]
    assert json.loads(args_of(final, "CMD")[0]) == ["--config", "/etc/sanlens/config.yaml"]
    (health,) = args_of(final, "HEALTHCHECK")
    exec_form = json.loads(health.split(" CMD ", 1)[1])
    assert exec_form[0] == "python" and f"127.0.0.1:{PORT}/-/healthy" in exec_form[-1]
    pip_installs = [a for w, a in final if w == "RUN" and "pip install" in a]
    assert pip_installs and all("--no-cache-dir" in a for a in pip_installs)
    labels = " ".join(args_of(final, "LABEL"))
    for key in ("title", "description", "version", "licenses", "source"):
        assert f"org.opencontainers.image.{key}=" in labels


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
    copied = [src for w, a in stages[0] if w == "COPY" for src in a.split()[:-1] if not src.startswith("--")]
    assert copied
    for src in copied:
        assert (ROOT / src).exists(), src
        assert not dockerignored(src), f"{src} is COPYed but .dockerignore drops it"
    assert not dockerignored("exporter/sanlens/cli.py")
    for junk in (
        ".venv/bin/python",
        ".tools/bin/helm",
        ".git/HEAD",
        "tests/e2e/test_helm.py",
        "helm/sanlens",
    ):
        assert dockerignored(junk), junk


def offline(cmd: str, subs: dict[str, str]) -> str:
    for old, new in subs.items():
        cmd = cmd.replace(old, new)
    cmd = cmd.replace("pip wheel ", "pip wheel --no-build-isolation ")
    return cmd.replace("pip install ", "pip install --no-index --no-deps ")


@pytest.fixture(scope="module")
def image_venv(stages: list[list[tuple[str, str]]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Replays the build stage and the runtime install RUN steps; returns the venv."""
    tmp = tmp_path_factory.mktemp("image")
    ctx, dist, wheels, venv = tmp / "src", tmp / "dist", tmp / "wheels", tmp / "opt-sanlens"
    ctx.mkdir()
    for w, a in stages[0]:
        if w == "COPY":
            *srcs, _dest = a.split()
            for src in srcs:
                s = ROOT / src
                if s.is_dir():
                    shutil.copytree(s, ctx / src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
                else:
                    shutil.copy(s, ctx / src)
    subs = {"/dist": str(dist), "/tmp/wheels": str(wheels), "/opt/sanlens": str(venv)}
    bindir = Path(sys.executable).parent  # `python` in the steps is the project's interpreter
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    for w, a in stages[0]:
        if w == "RUN":
            subprocess.run(offline(a, subs), shell=True, cwd=ctx, env=env, check=True, timeout=300)
    shutil.copytree(dist, wheels)  # COPY --from=build /dist /tmp/wheels
    for w, a in stages[-1]:
        if w == "RUN":
            subprocess.run(offline(a, subs), shell=True, cwd=tmp, env=env, check=True, timeout=300)
    assert not wheels.exists(), "the install step should remove the wheels"
    # runtime dependencies (prometheus-client, requests, PyYAML) from the project venv, offline
    site = Path(sysconfig.get_paths()["purelib"])
    (purelib,) = venv.glob("lib/python*/site-packages")
    (purelib / "_deps_from_project_venv.pth").write_text(f"{site}\n", encoding="utf-8")
    return venv


def test_wheel_installs_into_a_fresh_venv_and_reports_its_version(image_venv: Path) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    p = subprocess.run(
        [str(image_venv / "bin" / "sanlens"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"sanlens {pyproject['project']['version']}"
    probe = (
        "import sanlens, pathlib; p = pathlib.Path(sanlens.__file__).parent; "
        "print(p); print(len(list((p / 'ontap' / 'tables').glob('*.yaml'))))"
    )
    q = subprocess.run([str(image_venv / "bin" / "python"), "-c", probe], capture_output=True, text=True)
    where, n_tables = q.stdout.split()
    assert Path(where).is_relative_to(image_venv), "sanlens must come from the wheel, not the source tree"
    assert int(n_tables) == len(list((ROOT / "exporter" / "sanlens" / "ontap" / "tables").glob("*.yaml")))
    assert int(n_tables) > 0


def test_every_package_data_glob_ships_files() -> None:
    """A glob that matches nothing is a file the wheel silently lacks."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for package, globs in pyproject["tool"]["setuptools"]["package-data"].items():
        base = ROOT / "exporter" / package.replace(".", "/")
        for pattern in globs:
            assert list(base.glob(pattern)), f"package-data {package}: {pattern} matches nothing"


def test_image_needs_no_simulator_extras(image_venv: Path) -> None:
    """cryptography (the simulator's --tls) is the `sim` extra: the wheel does not require it, and
    the exporter's entry point does not import it."""
    python = str(image_venv / "bin" / "python")
    probe = "import importlib.metadata as m; print(*(m.requires('sanlens') or []), sep='\\n')"
    requires = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout
    crypto = [r for r in requires.splitlines() if r.startswith("cryptography")]
    assert crypto and all('extra == "sim"' in r for r in crypto), requires
    probe = (
        "import sys; import sanlens.cli, sanlens.runtime; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cryptography'))"
    )
    loaded = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_entrypoint_serves_and_the_healthcheck_tells_up_from_down(
    image_venv: Path, stages: list[list[tuple[str, str]]], tmp_path: Path
) -> None:
    final = stages[-1]
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text("log_level: info\n", encoding="utf-8")
    entry = json.loads(args_of(final, "ENTRYPOINT")[0])
    cmd = json.loads(args_of(final, "CMD")[0])
    cmd[cmd.index("--config") + 1] = str(config)
    health = json.loads(args_of(final, "HEALTHCHECK")[0].split(" CMD ", 1)[1])
    health = [h.replace(f":{PORT}/", f":{port}/") for h in health]
    env = {**os.environ, "PATH": f"{image_venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    def healthcheck() -> int:
        return subprocess.run(health, env=env, capture_output=True, timeout=30).returncode

    server = subprocess.Popen(
        [*entry, *cmd, "--listen", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while healthcheck() != 0:
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "healthcheck never passed"
            time.sleep(0.3)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)
    assert healthcheck() != 0  # nothing listening: unhealthy
    assert shlex.join(entry) == "sanlens serve"
