"""A rotated Kubernetes Secret takes effect without a restart, against the simulator over loopback.

The simulator answers any password; here its handler is given one password to
accept (``ACCEPTED``), as a real cluster would, and counts what it refuses.
"""

from __future__ import annotations

import base64
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.k8s_secret import SecretVolume

from sanlens.config import AuthConfig, Config, DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.errors import SourceError
from sanlens.hosts.windows_exporter import WindowsExporterSource
from sanlens.ontap.client import POOL_SIZE
from sanlens.ontap.collector import OntapSource
from sanlens.runtime.exporter import Exporter
from sanlens_sim import server as sim_server
from sanlens_sim.ontap_api import ApiError

ACCEPTED = ["old-Pa55"]
SEEN: list[str] = []


class PasswordHandler(sim_server.Handler):
    """The simulator's handler, refusing every password but ``ACCEPTED[0]``."""

    def _apply_faults(self) -> None:
        header = self.headers.get("Authorization", "")
        sent = base64.b64decode(header.split()[1]).decode().split(":", 1)[1] if header else ""
        SEEN.append(sent)
        if sent != ACCEPTED[0]:
            raise ApiError(401, "User is not authorized.", "6")
        super()._apply_faults()


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[sim_server.Simulator]:
    monkeypatch.setattr(sim_server, "Handler", PasswordHandler)
    ACCEPTED[:] = ["old-Pa55"]
    SEEN.clear()
    s = sim_server.Simulator(scenario="healthy").start()
    yield s
    s.stop()


def test_ontap_source_follows_a_kubernetes_secret_rotation_without_restart(
    sim: sim_server.Simulator, tmp_path: Path
) -> None:
    vol = SecretVolume(tmp_path / "secrets", "old-Pa55")
    auth = AuthConfig(username="sanlens", password_file=vol.path)
    src = OntapSource(OntapTarget(name="c1", url=sim.url, auth=auth, tables=["lun"]))
    try:
        assert src.poll().view is not None
        ACCEPTED[0] = "new-Pa55"  # the cluster's password changes; the Secret follows a little later
        SEEN.clear()
        with pytest.raises(SourceError) as e:
            src.poll()
        assert e.value.reason == "auth" and "Pa55" not in str(e.value)
        # the unchanged password is not retried: one try per request in flight (tables are
        # fetched side by side), never more than the connection pool holds
        assert set(SEEN) == {"old-Pa55"} and 1 <= len(SEEN) <= POOL_SIZE
        vol.rotate("new-Pa55")
        SEEN.clear()
        assert src.poll().view is not None
        assert set(SEEN) == {"new-Pa55"}
    finally:
        src.close()


def test_the_401_fault_with_an_unchanged_secret_is_one_request_per_poll(
    sim: sim_server.Simulator, tmp_path: Path
) -> None:
    vol = SecretVolume(tmp_path / "secrets", "old-Pa55")
    sim.set_faults(status_401=True)
    auth = AuthConfig(username="sanlens", password_file=vol.path)
    src = OntapSource(OntapTarget(name="c1", url=sim.url, auth=auth))
    host = sim.hosts[0]
    win = WindowsExporterSource(HostTarget(name=host, url=f"{sim.url}/windows/{host}/metrics", auth=auth))
    try:
        for _ in range(3):
            for source in (src, win):
                with pytest.raises(SourceError) as e:
                    source.poll()
                assert e.value.reason == "auth"
        assert len(SEEN) == 6
    finally:
        src.close()
        win.close()


def _up(port: int) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("sanlens_target_up{") and 'target="c1"' in line:
                return float(line.rsplit(" ", 1)[1])
    return None


def test_the_exporter_recovers_from_a_rotation_while_running(
    sim: sim_server.Simulator, tmp_path: Path
) -> None:
    vol = SecretVolume(tmp_path / "secrets", "stale-Pa55")
    auth = AuthConfig(username="sanlens", password_file=vol.path)
    target = OntapTarget(name="c1", url=sim.url, auth=auth, tables=["lun"], poll_interval=Duration(1))
    exp = Exporter(Config(listen="127.0.0.1:0", ontap=[target], diagnose=DiagnoseConfig(sustain_scale=0.01)))
    exp.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _up(exp.port) != 0.0:
            time.sleep(0.2)
        assert _up(exp.port) == 0.0  # polled and refused
        vol.rotate("old-Pa55")
        while time.monotonic() < deadline and _up(exp.port) != 1.0:
            time.sleep(0.2)
        assert _up(exp.port) == 1.0, "the rotated Secret was not picked up without a restart"
    finally:
        exp.stop()
