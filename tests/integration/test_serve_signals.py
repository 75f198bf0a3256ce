"""`sanlens serve` as a real process: SIGHUP reloads the config file, SIGTERM and SIGINT stop it fast."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from conftest import free_port
from sanlens_sim.server import Simulator
from slow_http import TrickleServer

STOP_S = 2.0  # SIGTERM to exit, whatever the pollers are doing


class Serve:
    """One `sanlens serve --config FILE` process, its log in a file."""

    def __init__(self, tmp: Path, cfg: dict[str, Any]) -> None:
        self.config, self.log = tmp / "sanlens.yaml", tmp / "serve.log"
        self.port = int(cfg["listen"].rsplit(":", 1)[1])
        self.write(cfg)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sanlens", "serve", "--config", str(self.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    def write(self, cfg: dict[str, Any] | str) -> None:
        text = cfg if isinstance(cfg, str) else yaml.safe_dump(cfg)
        tmp = self.config.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(self.config)

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()

    def up(self) -> dict[str, float]:
        """sanlens_target_up per target, {} while the server does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return {}
        return {
            s.labels["target"]: s.value
            for fam in text_string_to_metric_families(text)
            if fam.name == "sanlens_target_up"
            for s in fam.samples
        }

    def polls(self, target: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
            text = r.read().decode()
        for fam in text_string_to_metric_families(text):
            if fam.name == "sanlens_polls":
                for s in fam.samples:
                    if s.labels["target"] == target:
                        return s.value
        return 0.0

    def wait(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        until = time.monotonic() + timeout
        while not check():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"sanlens exited {self.proc.returncode}:\n" + "\n".join(self.lines()[-20:])
                )
            if time.monotonic() > until:
                raise AssertionError(f"timed out waiting for {what}:\n" + "\n".join(self.lines()[-20:]))
            time.sleep(0.1)

    def stop_with(self, sig: signal.Signals) -> float:
        """Seconds from ``sig`` to the exit."""
        t = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"sanlens did not exit within 10 s of {sig.name}") from None
        return time.monotonic() - t

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def sim() -> Iterator[Simulator]:
    s = Simulator(scenario="healthy", port=0).start()
    yield s
    s.stop()


@pytest.fixture
def hung() -> Iterator[TrickleServer]:
    """A windows_exporter that never finishes its answer: a poll of it is always in flight."""
    s = TrickleServer(b"#" * 100_000, delay=1.0).start()
    yield s
    s.stop()


def host(sim: Simulator, i: int) -> dict[str, Any]:
    h = sim.hosts[i]
    return {"name": h, "url": f"{sim.url}/windows/{h}/metrics", "poll_interval": "1s"}


def test_sighup_reloads_the_config_and_sigterm_stops_within_two_seconds(
    tmp_path: Path, sim: Simulator, hung: TrickleServer
) -> None:
    h0, h1 = sim.hosts[0], sim.hosts[1]
    stuck = {"name": "stuck", "url": f"{hung.url}/metrics", "poll_interval": "1s"}
    cfg: dict[str, Any] = {"listen": f"127.0.0.1:{free_port()}", "hosts": [host(sim, 0), stuck]}
    serve = Serve(tmp_path, cfg)
    try:
        serve.wait(lambda: serve.up().get(h0) == 1.0, 15, f"{h0} polled")

        # a valid new config replaces the targets: h0 leaves, h1 arrives, the server stays
        serve.write({**cfg, "hosts": [host(sim, 1), stuck]})
        serve.proc.send_signal(signal.SIGHUP)
        serve.wait(lambda: serve.up().get(h1) == 1.0 and h0 not in serve.up(), 10, f"{h1} in, {h0} out")
        assert any("config reloaded" in line for line in serve.lines())

        # an invalid one keeps the running config, and says why in one line
        serve.write("hosts:\n  - name: h2\n    poll_interval: fast\n")
        serve.proc.send_signal(signal.SIGHUP)
        serve.wait(lambda: any("reload failed" in line for line in serve.lines()), 5, "the refusal")
        refused = [line for line in serve.lines() if "reload failed" in line]
        assert len(refused) == 1 and "poll_interval" in refused[0], refused
        n = serve.polls(h1)
        serve.wait(lambda: serve.polls(h1) > n, 5, f"{h1} still polled")
        assert set(serve.up()) == {h1, "stuck"}

        assert hung.open == 1  # a poll of the stuck host is in flight as the signal arrives
        took = serve.stop_with(signal.SIGTERM)
        assert serve.proc.returncode == 0, serve.lines()[-20:]
        assert took < STOP_S, f"exit took {took:.2f}s"
    finally:
        serve.kill()


def test_sigint_stops_within_two_seconds(tmp_path: Path, sim: Simulator, hung: TrickleServer) -> None:
    stuck = {"name": "stuck", "url": f"{hung.url}/metrics", "poll_interval": "1s"}
    serve = Serve(tmp_path, {"listen": f"127.0.0.1:{free_port()}", "hosts": [host(sim, 0), stuck]})
    try:
        serve.wait(lambda: serve.up().get(sim.hosts[0]) == 1.0, 15, "the first poll")
        took = serve.stop_with(signal.SIGINT)
        assert serve.proc.returncode == 0, serve.lines()[-20:]
        assert took < STOP_S, f"exit took {took:.2f}s"
    finally:
        serve.kill()
