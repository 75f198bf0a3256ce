"""The windows_exporter source against the in-process simulator: disks join the simulated LUNs by serial."""

from __future__ import annotations

import time

import pytest
import requests
from tests.joining import joined

from sanlens.config import Duration, HostTarget
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory, LunIdentity, volume_from_path


def _directory(sim_url: str, cluster: str) -> LunDirectory:
    r = requests.get(
        f"{sim_url}/api/storage/luns", params={"fields": "name,svm,location,serial_number"}, timeout=10
    )
    r.raise_for_status()
    luns = [
        LunIdentity(
            cluster,
            rec["svm"]["name"],
            ((rec.get("location") or {}).get("volume") or {}).get("name") or volume_from_path(rec["name"]),
            rec["name"],
            rec.get("serial_number", ""),
        )
        for rec in r.json()["records"]
    ]
    d = LunDirectory()
    d.publish(cluster, luns)
    return d


def test_windows_exporter_source_against_simulator() -> None:
    server = pytest.importorskip("sanlens_sim.server", reason="the simulator has not landed yet")
    sim = server.Simulator(scenario="healthy", port=0)
    sim.start()
    try:
        assert sim.hosts
        directory = _directory(sim.url, sim.cluster_name)
        assert len(directory) > 0
        host = sim.hosts[0]
        src = joined(
            make_host_source(
                HostTarget(name=host, url=f"{sim.url}/windows/{host}/metrics", poll_interval=Duration(1)),
            ),
            directory,
        )
        first = src.poll()
        time.sleep(1.2)
        second = src.poll()
        assert first.view is not None and second.view is not None
        disks = second.view.disks
        assert disks
        mapped = [d for d in disks if d.mapped]
        assert mapped, "no simulated host disk joined an ONTAP LUN by serial"
        for d in mapped:
            ident = directory.by_serial(d.lun_serial)
            assert ident is not None and (d.cluster, d.svm, d.lun) == (ident.cluster, ident.svm, ident.lun)
            assert d.read_iops is not None and d.read_iops >= 0
            assert d.idle_ratio is not None and 0.0 <= d.idle_ratio <= 1.0
        names = {m.name for m in second.metrics}
        assert {
            "sanlens_host_disk_info",
            "sanlens_host_disk_ops_total",
            "sanlens_host_disk_queue_length",
        } <= names
        src.close()
    finally:
        sim.stop()


# --------------------------------------------------------------------------- deep queues
# The deep-queue scenario's disks, as Little's law states them: N = X x R reads outstanding.
DEEP = {"1": (1600.0, 0.010), "2": (3200.0, 0.020), "3": (5000.0, 0.040)}  # disk -> (reads/s, s per read)
T0 = 1_700_000_000.0
MOD32_S = 2**32 * 1e-7  # the uint32 Avg. Disk sec/Read numerator, in seconds at 100 ns ticks


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class _SimWinRM:
    """A WinRM transport that gets the PowerShell's JSON from the simulator instead of running it."""

    def __init__(self, url: str) -> None:
        self.url = url

    def run_ps(self, script: str) -> str:
        assert "PercentDiskReadTime" in script and "DSM_QueryLBPolicy_V2" in script
        r = requests.get(self.url, timeout=10)
        r.raise_for_status()
        return r.text


def _deep_sim(clock: _Clock) -> object:
    server = pytest.importorskip("sanlens_sim.server", reason="the simulator has not landed yet")
    return server.Simulator(scenario="deep-queue", port=0, clock=clock)


def _sources(sim: object, clock: _Clock) -> dict[str, object]:
    from sanlens.hosts.winrm import WinRMSource

    url = sim.url  # type: ignore[attr-defined]
    directory = _directory(url, sim.cluster_name)  # type: ignore[attr-defined]
    exporter = joined(
        make_host_source(HostTarget(name="sql01", url=f"{url}/windows/sql01/metrics")), directory
    )
    exporter.clock = clock  # type: ignore[attr-defined]
    winrm = joined(
        WinRMSource(
            HostTarget(name="sql01", source="winrm", url="https://sql01:5986/wsman"),
            transport=_SimWinRM(f"{url}/windows/sql01/winrm"),
        ),
        directory,
    )
    return {"windows_exporter": exporter, "winrm": winrm}


@pytest.mark.parametrize("poll_s", [15.0, 60.0])
def test_latency_is_exact_at_any_queue_depth(poll_s: float) -> None:
    """16, 64 and 200 reads outstanding: the uint32 numerator wraps up to 28 times a poll, the
    latency read from the 64-bit queue integral stays within 1 % of X x R arithmetic, from
    windows_exporter and from WinRM, and the exposed counter gives the same in PromQL terms."""
    clock = _Clock(T0)
    sim = _deep_sim(clock)
    sim.start()  # type: ignore[attr-defined]
    try:
        sources = _sources(sim, clock)
        clock.t = T0 + 100.0
        first = {k: s.poll() for k, s in sources.items()}  # type: ignore[attr-defined]
        clock.t += poll_s
        second = {k: s.poll() for k, s in sources.items()}  # type: ignore[attr-defined]
        for kind, snap in second.items():
            assert snap.view is not None
            disks = {d.disk: d for d in snap.view.disks}
            for disk, (reads_s, r) in DEEP.items():
                n = reads_s * r  # outstanding reads by Little's law
                assert n in (16.0, 64.0, 200.0)
                d = disks[disk]
                assert d.read_iops == pytest.approx(reads_s, rel=0.01), (kind, disk)
                assert d.read_latency_s == pytest.approx(r, rel=0.01), (kind, disk, n, poll_s)
                # the exposed counters: Δlatency / Δops, as rate(latency)/rate(ops) computes it
                lat0 = _sample(
                    first[kind], "sanlens_host_disk_latency_seconds_total", ("sql01", disk, "read")
                )
                lat1 = _sample(snap, "sanlens_host_disk_latency_seconds_total", ("sql01", disk, "read"))
                ops0 = _sample(first[kind], "sanlens_host_disk_ops_total", ("sql01", disk, "read"))
                ops1 = _sample(snap, "sanlens_host_disk_ops_total", ("sql01", disk, "read"))
                assert (lat1 - lat0) / (ops1 - ops0) == pytest.approx(r, rel=0.01), (kind, disk)
                assert d.optimized_paths == 2 and d.paths == 4, (kind, disk)  # ALUA: 2 optimized + 2 not
    finally:
        sim.stop()  # type: ignore[attr-defined]


def _sample(snap: object, name: str, labels: tuple[str, ...]) -> float:
    [m] = [m for m in snap.metrics if m.name == name]  # type: ignore[attr-defined]
    return dict(m.samples)[labels]


def test_simulated_numerator_wraps_modulo_2_32_beside_the_integral() -> None:
    """What the simulator serves is what a real host serves: the Avg. Disk sec/Read numerator is
    uint32 ticks (its Δ over a poll is the true Σ latency modulo 2^32 ticks) and the integral is not."""
    clock = _Clock(T0)
    sim = _deep_sim(clock)
    sim.start()  # type: ignore[attr-defined]
    try:
        url = f"{sim.url}/windows/sql01"  # type: ignore[attr-defined]

        def scrape() -> dict[tuple[str, str], float]:
            text = requests.get(f"{url}/metrics", timeout=10).text
            out = {}
            for line in text.splitlines():
                if line.startswith("windows_physical_disk_read"):
                    name, _, value = line.rpartition(" ")
                    fam, _, lab = name.partition("{")
                    out[(fam, lab.split('"')[1])] = float(value)
            return out

        def winrm() -> dict[str, dict[str, int]]:
            doc = requests.get(f"{url}/winrm", timeout=10).json()
            return {row["Name"].split()[0]: row for row in doc["physical"]}

        clock.t = T0 + 100.0
        a, wa = scrape(), winrm()
        clock.t += 15.0
        b, wb = scrape(), winrm()
        for disk, (reads_s, r) in DEEP.items():
            true_sum = reads_s * 15.0 * r  # Σ read latency over the poll, seconds
            num = ("windows_physical_disk_read_latency_seconds_total", disk)
            integral = ("windows_physical_disk_read_seconds_total", disk)
            assert 0 <= b[num] < MOD32_S
            assert (b[num] - a[num]) % MOD32_S == pytest.approx(true_sum % MOD32_S, abs=1e-3)
            assert b[integral] - a[integral] == pytest.approx(true_sum, rel=1e-6)
            ticks = wb[disk]["AvgDiskSecPerRead"] - wa[disk]["AvgDiskSecPerRead"]
            assert 0 <= wb[disk]["AvgDiskSecPerRead"] < 2**32
            assert ticks % 2**32 == pytest.approx(round(true_sum * 1e7) % 2**32, abs=10)
            dint = wb[disk]["PercentDiskReadTime"] - wa[disk]["PercentDiskReadTime"]
            assert dint * 1e-7 == pytest.approx(true_sum, rel=1e-6)
        assert ("windows_physical_disk_read_latency_seconds_total", "3") in a
    finally:
        sim.stop()  # type: ignore[attr-defined]


def test_local_disk_maps_to_no_lun() -> None:
    clock = _Clock(T0)
    sim = _deep_sim(clock)
    sim.start()  # type: ignore[attr-defined]
    try:
        for src in _sources(sim, clock).values():
            snap = src.poll()  # type: ignore[attr-defined]
            [info] = [m for m in snap.metrics if m.name == "sanlens_host_disk_info"]
            rows = {
                dict(zip(info.label_names, v, strict=True))["disk"]: dict(
                    zip(info.label_names, v, strict=True)
                )
                for v, _ in info.samples
            }
            assert rows["0"]["mapping"] == "none" and rows["0"]["lun"] == ""
            assert {rows[d]["mapping"] for d in DEEP} == {"serial"}
    finally:
        sim.stop()  # type: ignore[attr-defined]
