"""The container image, built for real from the Dockerfile with buildah, and run.

No registry and no Docker engine: scripts/image.sh builds with buildah (vfs storage and chroot
isolation under .tools/containers) FROM a local Debian bookworm + CPython 3.11 base, the same
Debian release and Python minor version as the Dockerfile's digest-pinned
python:3.11-slim-bookworm; pip inside the build reaches PyPI. The image is then run with
`buildah run` as its own USER: the version, the SBOM, the installed packages against the
lock, the labels, and its HEALTHCHECK against `sanlens serve` in plain HTTP and behind TLS,
client certificates and basic auth. About a minute, plus a minute for the base the first time.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bcrypt
import pytest
from packaging.utils import canonicalize_name
from tests.conftest import ROOT, free_port, require_tool
from tests.locks import REQUIREMENTS, pins_for
from tests.pki import PKI, make_pki

SCRIPT = ROOT / "scripts" / "image.sh"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
# what the lock's markers are evaluated against: the image's interpreter
IMAGE_ENV = {
    "python_version": "3.11",
    "python_full_version": "3.11.2",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "platform_machine": os.uname().machine,
}


def buildah(*args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(SCRIPT), "buildah", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and p.returncode != 0:
        pytest.fail(f"buildah {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


@dataclass
class Image:
    tag: str
    container: str
    config: dict[str, Any]  # the Docker image config: Labels, User, Healthcheck, Env...

    def run(
        self, script: str, *, env: dict[str, str] | None = None, mount: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """A shell script in a container of the image, as the image's USER."""
        args = ["run"]
        for k, v in (env or {}).items():
            args += ["--env", f"{k}={v}"]
        if mount is not None:
            args += ["--volume", f"{mount}:/work:ro"]
        return buildah(*args, self.container, "--", "sh", "-c", script, check=False, timeout=120)


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    require_tool("buildah")
    tag = f"localhost/sanlens:e2e-{uuid.uuid4().hex[:8]}"
    p = subprocess.run(
        [str(SCRIPT), "build", "--local-base", "--tag", tag],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    if p.returncode != 0:
        pytest.fail(
            f"scripts/image.sh build failed ({p.returncode}):\n{p.stderr[-6000:]}\n{p.stdout[-6000:]}"
        )
    info = json.loads(buildah("inspect", "--type", "image", tag).stdout)
    container = buildah("from", "--quiet", tag).stdout.strip()
    try:
        yield Image(tag, container, info["Docker"]["config"])
    finally:
        buildah("rm", container, check=False)
        buildah("rmi", "--force", tag, check=False)


def test_sanlens_version_is_the_projects(image: Image) -> None:
    p = image.run("sanlens --version")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"sanlens {VERSION}"


def test_runs_as_the_non_root_user(image: Image) -> None:
    assert image.config["User"] == "65532:65532"
    p = image.run("id -u; id -g")
    assert p.stdout.split() == ["65532", "65532"], p.stderr


def test_labels_carry_the_build_arguments(image: Image) -> None:
    labels = image.config["Labels"]
    assert labels["org.opencontainers.image.version"] == VERSION
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert labels["org.opencontainers.image.revision"] == (head.stdout.strip() or "unknown")
    created = labels["org.opencontainers.image.created"]
    assert created == "1970-01-01T00:00:00Z" or (len(created) == 20 and created.endswith("Z")), created
    assert labels["org.opencontainers.image.base.name"] == "localhost/sanlens-base:bookworm"
    assert labels["io.github.sanlens.sbom"] == "/opt/sanlens/sbom.cdx.json"


def locked() -> dict[str, str]:
    return pins_for(REQUIREMENTS / "runtime.txt", IMAGE_ENV)


def test_installed_packages_are_exactly_the_locked_ones(image: Image) -> None:
    probe = (
        "import json, importlib.metadata as m; "
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    p = image.run(f"python -c {shlex.quote(probe)}")
    assert p.returncode == 0, p.stderr
    installed = {canonicalize_name(k): v for k, v in json.loads(p.stdout).items()}
    assert installed == {**locked(), "sanlens": VERSION}  # no pip, no setuptools, nothing else
    # serve's dependencies only: neither the analyze extra nor the simulator (docs/container.md)
    assert not {"numpy", "pyarrow", "tqdm", "sanlens-sim", "cryptography"} & installed.keys()


def test_the_image_carries_no_simulator_and_says_what_analyze_and_demo_need(image: Image) -> None:
    """What serve does not run stays out; the commands that need it say how to get it, in one line."""
    probe = "import importlib.util as u; print([m for m in ('sanlens_sim', 'sanlens.sim') if u.find_spec(m)])"
    p = image.run(f"python -c {shlex.quote(probe)}")
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr
    p = image.run("sanlens analyze /tmp/perfmon.csv")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.splitlines()[0].endswith(
        "which is not installed: pip install '.[analyze]' from a sanlens checkout (docs/capture.md)"
    )
    assert "Traceback" not in p.stderr
    p = image.run("sanlens demo")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.startswith("error: sanlens demo needs the simulator (sanlens-sim)"), p.stderr


def test_the_sbom_lists_the_locked_packages(image: Image) -> None:
    p = image.run("cat /opt/sanlens/sbom.cdx.json")
    assert p.returncode == 0, p.stderr
    sbom = json.loads(p.stdout)
    assert sbom["bomFormat"] == "CycloneDX"
    root = sbom["metadata"]["component"]
    assert (root["name"], root["version"]) == ("sanlens", VERSION)
    components = {canonicalize_name(c["name"]): c["version"] for c in sbom["components"]}
    assert components == locked()
    assert all(c["purl"].startswith("pkg:pypi/") for c in sbom["components"])
    assert "serialNumber" not in sbom and "timestamp" not in sbom["metadata"]  # reproducible


def test_the_wheel_ships_its_package_data(image: Image) -> None:
    probe = (
        "import sanlens, pathlib; p = pathlib.Path(sanlens.__file__).parent; "
        "print(p); print(len(list((p / 'ontap' / 'tables').glob('*.yaml'))))"
    )
    p = image.run(f"python -c {shlex.quote(probe)}")
    where, n = p.stdout.split()
    assert where.startswith("/opt/sanlens/lib/")
    assert int(n) == len(list((ROOT / "exporter" / "sanlens" / "ontap" / "tables").glob("*.yaml"))) > 0


def healthcheck_script(image: Image) -> str:
    """Serve with the image's ENTRYPOINT, run its HEALTHCHECK until it passes, stop, run it again."""
    test = image.config["Healthcheck"]["Test"]
    assert test[0] == "CMD"
    check = shlex.join(test[1:])
    serve = shlex.join(image.config["Entrypoint"]) + " --config /work/config.yaml"
    return f"""
{serve} >/tmp/serve.log 2>&1 &
pid=$!
up=1
i=0
while [ $i -lt 80 ]; do
  if {check}; then up=0; break; fi
  i=$((i + 1)); sleep 0.25
done
kill -TERM $pid; wait $pid
echo "--- after stop" >&2
if {check}; then down=1; else down=0; fi
cat /tmp/serve.log >&2
echo "up=$up down=$down"
"""


def readable_dir(tmp_path: Path) -> Path:
    """A folder the image's user can read when it is mounted (pytest's tmp_path is 0700)."""
    work = tmp_path / "work"
    work.mkdir(mode=0o755)
    work.chmod(0o755)
    (work / "config.yaml").write_text("log_level: info\n", encoding="utf-8")
    return work


def test_healthcheck_follows_a_plain_http_server(image: Image, tmp_path: Path) -> None:
    env = {"SANLENS_LISTEN": f"127.0.0.1:{free_port()}"}
    p = image.run(healthcheck_script(image), env=env, mount=readable_dir(tmp_path))
    assert p.stdout.strip().endswith("up=0 down=0"), p.stdout + p.stderr
    assert "/-/healthy: up: 200" in p.stdout
    assert "connection refused" in p.stderr  # after the stop


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("pki"), server_name="sanlens.monitoring.svc")


@pytest.mark.parametrize(
    "client_certs", [False, True], ids=["tls-basic-auth", "tls13-client-certs-basic-auth"]
)
def test_healthcheck_follows_a_server_behind_tls_and_basic_auth(
    image: Image, pki: PKI, tmp_path: Path, client_certs: bool
) -> None:
    """The web config the server reads, through the same variable: no change to the HEALTHCHECK."""
    work = readable_dir(tmp_path)
    for src in (pki.server.cert, pki.server.key, pki.ca):
        (work / Path(src).name).write_bytes(Path(src).read_bytes())
        (work / Path(src).name).chmod(0o644)
    hashed = bcrypt.hashpw(b"scrape-secret", bcrypt.gensalt(rounds=4)).decode()
    mtls = "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  min_version: TLS13\n"
    (work / "web.yml").write_text(
        "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
        + (mtls if client_certs else "")
        + f"basic_auth_users:\n  prometheus: '{hashed}'\n",
        encoding="utf-8",
    )
    env = {"SANLENS_LISTEN": f"127.0.0.1:{free_port()}", "SANLENS_WEB_CONFIG_FILE": "/work/web.yml"}
    p = image.run(healthcheck_script(image), env=env, mount=work)
    assert p.stdout.strip().endswith("up=0 down=0"), p.stdout + p.stderr
    assert "https://127.0.0.1:" in p.stdout
    if client_certs:
        assert "without a client certificate" in p.stdout
    else:
        assert "up: 401, basic auth required" in p.stdout
    assert "scrape-secret" not in p.stdout + p.stderr
