"""The `sanlens analyze` HTML report in a real browser: headless chromium over the DevTools protocol.

Loads a report of known inputs, then asserts what only a browser can tell: no
console error or exception, every chart laid out with a non-zero size, the title
naming the host, the cluster and the time range, the findings grouped by incident
(the cause above the symptom it explains), evidence under readable names, and the
host-vs-LUN latency chart drawing the LUN's line clear of the axis floor although it
is 300 times lower than the host's. A screenshot is kept beside the test's temporary files.
"""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.conftest import pinned_copy, require_tool, skip_or_fail

from perfmon_logs import disk_columns, write_log
from sanlens.cli import main

DATA = Path(__file__).parents[1] / "data" / "ontap"
T0 = 1_740_909_600.0  # 2025-03-02 10:00:00 UTC, the LUN capture's first sample


class DevTools:
    """A minimal DevTools-protocol client: commands by id, events kept for inspection."""

    def __init__(self, url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        n = next(self.ids)
        self.ws.send(json.dumps({"id": n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == n:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))
            self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise AssertionError(f"no {method} within {timeout} s")
            self.events.append(json.loads(self.ws.recv()))

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return r["result"].get("value")


def _report(tmp_path: Path) -> Path:
    rows = [(T0 + 15.0 * i, [500.0, 100.0, 0.2, 0.2, 90.0, 2.0]) for i in range(9)]
    log = write_log(tmp_path / "sql01.csv", disk_columns("SQL01", "1 E:"), rows)
    cfg = tmp_path / "sanlens.yaml"
    cfg.write_text(
        "hosts:\n  - name: SQL01\n    source: perfmon\n    files: [sql01.csv]\n"
        "    disks:\n      - disk: '1'\n        svm: svm1\n        lun: /vol/sqldata/lun0\n"
    )
    out = tmp_path / "report.html"
    # sysstat -M text carries no time: a copy ends at 10:04:00, after the LUN capture (10:00 .. 10:02)
    sysstat = pinned_copy(DATA / "sysstat-M.txt", tmp_path / "in", T0 + 240)
    files = [str(log), str(DATA / "lun-statistics-show-raw-samples.txt"), str(sysstat)]
    argv = [
        "analyze",
        *files,
        "--interval",
        "1",
        "--config",
        str(cfg),
        "--format",
        "html",
        "-o",
        str(out),
        "-q",
    ]
    assert main(argv) == 0
    return out


def _devtools_url(proc: subprocess.Popen[bytes], profile: Path) -> str:
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
            raise AssertionError(f"chromium did not start its DevTools endpoint: {err}")
        time.sleep(0.1)
    port = port_file.read_text().split()[0]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
        pages = [t for t in json.load(r) if t.get("type") == "page"]
    return str(pages[0]["webSocketDebuggerUrl"])


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    chromium = require_tool("chromium")
    try:
        import websocket  # noqa: F401
    except ImportError:
        skip_or_fail("websocket-client is not installed (the dev extra pulls it in)")
    report = _report(tmp_path)
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "--window-size=1280,2000",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        dev = DevTools(_devtools_url(proc, profile))
        for domain in ("Page", "Runtime", "Log"):
            dev.call(f"{domain}.enable")
        dev.call("Page.navigate", url=report.as_uri())
        dev.wait_for("Page.loadEventFired")
        charts = dev.evaluate(
            "[...document.querySelectorAll('svg')].map(s => {const r = s.getBoundingClientRect();"
            " return [r.width, r.height, s.querySelectorAll('polyline,circle').length]})"
        )
        found = dev.evaluate(
            "[...document.querySelectorAll('#diagnoses ~ section.incident .diag')].map(d => [d.dataset.diagnosis,"
            " d.classList.contains('sev-critical') ? 'critical' : 'warning', d.dataset.role,"
            " d.closest('section').id])"
        )
        first_h2 = dev.evaluate("document.querySelector('h2').id")
        heading = dev.evaluate(
            "[document.title, document.querySelector('h1').innerText,"
            " document.querySelector('.range').innerText]"
        )
        labels = dev.evaluate(
            "[...document.querySelectorAll('#diagnoses ~ section table.ev th')].map(t => t.innerText)"
        )
        ratio = dev.evaluate(
            "[...document.querySelectorAll('#diagnoses ~ section table.ev tr')]"
            ".map(r => r.innerText).find(t => t.startsWith('host / array latency'))"
        )
        # the key chart: host (solid) and LUN (dashed) latency; where each line sits in the plot
        lines = dev.evaluate(
            "(() => { const h = [...document.querySelectorAll('#incident-1 .chart h4')]"
            ".find(e => e.innerText.startsWith('latency vs LUN')); const svg = h.parentElement.querySelector('svg');"
            " const axis = svg.querySelector('line').getBoundingClientRect();"
            " return {floor: axis.bottom, axis: svg.innerHTML.includes('ms, log scale'),"
            " lines: [...svg.querySelectorAll('polyline')].map(p => [p.getAttribute('stroke-dasharray') !== null,"
            " p.getBoundingClientRect().top, p.getBoundingClientRect().bottom])}; })()"
        )
        text = dev.evaluate("document.body.innerText")
        shot = dev.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        png = base64.b64decode(shot["data"])
        (tmp_path / "report.png").write_bytes(png)
        errors = [
            e
            for e in dev.events
            if e.get("method") == "Runtime.exceptionThrown"
            or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error")
            or (e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error")
        ]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert errors == []
    assert len(charts) >= 8
    assert all(w > 0 and h > 0 and lines > 0 for w, h, lines in charts), charts
    assert first_h2 == "diagnoses"  # findings come first
    title, h1, span = heading
    assert "SQL01" in h1 and "cluster" in h1 and "SQL01" in title
    assert "2025-03-02 10:00:00" in span and "UTC" in span
    # one incident per cause, the cause first, the symptom it explains under it in the same incident
    assert found[0] == ["san_oversubscription", "critical", "cause", "incident-1"]
    assert ["latency_slo", "critical", "symptom", "incident-1"] in found
    assert ["cpu_domain_serial_bottleneck", "critical", "cause", "incident-2"] in found
    # evidence under readable names, a multiple as one
    assert labels and "host latency" in labels
    assert not [x for x in labels if "_" in x], labels
    assert ratio and "\u00d7" in ratio and "%" not in ratio.split("\t")[1], ratio
    assert "score" not in text and "1e-12" not in text
    # the LUN's line (0.5 ms under the host's 200 ms) stands clear of the floor on the log axis
    assert lines["axis"]
    host = [top for dashed, top, _bottom in lines["lines"] if not dashed]
    lun = [bottom for dashed, _top, bottom in lines["lines"] if dashed]
    assert host and lun
    assert all(lines["floor"] - b > 15 for b in lun), lines
    assert all(b - min(host) > 30 for b in lun), lines
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
