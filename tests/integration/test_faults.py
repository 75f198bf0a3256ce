"""Every simulator fault against the real exporter, polled over loopback and scraped over HTTP.

One ONTAP target and one windows_exporter host, each on its own simulator process (the
same ``healthy`` world, so the host's disks still join the cluster's LUNs), polled every
second by a ``sanlens.runtime.exporter.Exporter`` in this process. A fault is switched on in the
simulator that serves the targets it concerns and switched off as soon as each of them
has failed once; then:

- ``/metrics`` and ``/diagnoses`` answered within 1 s the whole time (scraped every 100 ms);
- ``sanlens_poll_errors_total`` grew with the reason the fault must give, and no other;
- ``sanlens_target_up`` went to 0, and the first poll after the fault cleared began within
  2 poll intervals;
- no finding (the healthy world has none) and no snapshot rate that is negative or absurd;
- the exporter's threads and open file descriptors came back to their count before the fault;
- the password (distinctive, from ``password_env``) appears in no log record, no page.

The ONTAP poller's deadline is raised to cover its client's retries (see
:func:`cover_client_retries`), so each fault's error carries its own reason. The trickling
server, which only the deadline can end, and the credential rotation stand a
:class:`faults_harness.FaultProxy` between the exporter and the simulators.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from faults_harness import (
    FaultProxy,
    Page,
    SimProcess,
    Watcher,
    basic_token,
    resource_counts,
    thread_names,
    view_anomalies,
    wait_for,
)
from sanlens.config.load import load_config_text
from sanlens.hosts.cooking import DiskReading, HostCooker
from sanlens.model import Snapshot
from sanlens.runtime.exporter import Exporter
from sanlens.runtime.poller import ABORT_GRACE_S
from sanlens.source import MIN_POLL_DEADLINE_S

POLL_S = 1.0  # every target's poll interval
TIMEOUT_S = 0.8  # connect and read timeouts; the simulator's healthy answers take a few ms
TRICKLE_TIMEOUT_S = 2.0  # above the trickle's 1 s between bytes: a read timeout alone never fires
LATENCY_MS = 2000  # beyond TIMEOUT_S
OBSERVE_S = 0.25  # how late a page can show a change: the watcher's period plus scheduling
RECOVERY_S = 2 * POLL_S  # the first poll after a fault clears begins within this
QOS_EVERY_POLLS = 3  # the default qos_interval: QoS tables are read every third poll
STUCK_RECOVERY_S = max(RECOVERY_S, MIN_POLL_DEADLINE_S) + ABORT_GRACE_S  # the stuck poll's deadline
FAULT_WAIT_S = 30.0  # every target fails within this once its fault is on
TRICKLE_WAIT_S = 15.0  # a poll against a trickling server ends within this (a deadline, not a read timeout)
THREADS_SLACK = 2
FDS_SLACK = 4
SETTLE_S = 5.0  # for threads and sockets of a fault to go away

USERNAME = "sanlens-fault-monitor"
PASSWORD = "Sanlens-Fault-Secret-7f3a9c2e"
PASSWORD_ENV = "SANLENS_FAULT_TEST_PASSWORD"
ROTATED = "Sanlens-Rotated-Secret-41d8b06e"
HOST = "sql01"


# ------------------------------------------------------------------ simulators (one per module)
@dataclass
class Sims:
    ontap: SimProcess
    host: SimProcess


@pytest.fixture(scope="module")
def sims(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sims]:
    logs = tmp_path_factory.mktemp("fault-sims")
    ontap = SimProcess(logs, name="ontap-sim").start()
    try:
        host = SimProcess(logs, name="host-sim").start()
    except BaseException:
        ontap.stop()
        raise
    try:
        yield Sims(ontap, host)
    finally:
        ontap.stop()
        host.stop()


@pytest.fixture
def healthy_sims(sims: Sims) -> Sims:
    """The module's simulators, running and without faults (a failed test may have left either off)."""
    for sim in (sims.ontap, sims.host):
        if sim.proc is None or sim.proc.poll() is not None:
            sim.start()
        sim.clear_faults()
    return sims


# ------------------------------------------------------------------ the exporter under test
def exporter_yaml(
    ontap_url: str, host_url: str, auth: dict[str, str], timeout: float = TIMEOUT_S
) -> dict[str, Any]:
    return {
        "listen": "127.0.0.1:0",
        "log_level": "debug",
        "ontap": [
            {
                "name": "faulty",
                "url": ontap_url,
                "poll_interval": f"{POLL_S}s",
                "connect_timeout": f"{TIMEOUT_S}s",
                "read_timeout": f"{timeout}s",
                "auth": dict(auth),
            }
        ],
        "hosts": [
            {
                "name": HOST,
                "source": "windows_exporter",
                "url": host_url,
                "poll_interval": f"{POLL_S}s",
                "timeout": f"{timeout}s",
                "auth": dict(auth),
            }
        ],
        "diagnose": {"sustain_scale": 0.01},
    }


@dataclass
class Env:
    exporter: Exporter
    watcher: Watcher
    caplog: pytest.LogCaptureFixture
    secrets: list[str]
    targets: tuple[str, ...] = ("faulty", HOST)
    baseline: tuple[int, int] = (0, 0)
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def wait_healthy(self, polls: int = 2) -> Page:
        """Every target up with ``polls`` successful polls at least (rates need two)."""

        def ok() -> Page | None:
            page = self.watcher.next_page()
            fine = all(page.up.get(t) == 1 and page.polls.get(t, 0) >= polls for t in self.targets)
            return page if fine else None

        return wait_for(ok, 30, "every target up", interval=0)

    def mark_baseline(self) -> None:
        self.watcher.next_page()
        self.baseline = resource_counts()

    def assert_clean(self) -> None:
        """Threads and fds back to the baseline; nothing the watcher or the log must never show."""
        threads0, fds0 = self.baseline

        def settled() -> bool:
            threads, fds = resource_counts()
            return threads <= threads0 + THREADS_SLACK and fds <= fds0 + FDS_SLACK

        try:
            wait_for(settled, SETTLE_S, "threads and fds to settle", interval=0.1)
        except AssertionError:
            threads, fds = resource_counts()
            raise AssertionError(
                f"threads {threads0} -> {threads}, open fds {fds0} -> {fds} after the fault "
                f"(bound +{THREADS_SLACK}/+{FDS_SLACK}); threads: {thread_names()}"
            ) from None
        problems = self.watcher.problems()
        assert not problems, "\n".join(problems)
        text = self.caplog.text
        leaked = [i for i, s in enumerate(self.secrets) if s in text]
        assert not leaked, "a secret appears in the log output"
        crashes = [
            r.getMessage()
            for r in self.caplog.records
            if r.name.startswith("sanlens") and r.levelno >= logging.ERROR
        ]
        assert not crashes, f"errors logged: {crashes[:5]}"
        page = self.watcher.next_page()
        internal = {t: v for (t, r), v in page.errors.items() if r == "internal"}
        assert not internal, f"polls crashed: {internal}"


def cover_client_retries(exporter: Exporter) -> None:
    """Let each ONTAP poll run through its client's retries before the poll deadline abandons it.

    With 1 s polls the deadline is its 2 s floor, shorter than the client's retries and their
    backoff (up to 3.5 s), so a poll would end as ``deadline`` rather than as what failed. At
    production intervals (deadline 0.8 x 60 s) the retries fit; so they do here, for the reasons
    to be the faults' own. The trickle test keeps the deadline as it is.
    """
    for poller in exporter.pollers:
        client = getattr(poller.source, "client", None)
        if client is None:
            continue
        attempts = client.retries + 1
        budget = attempts * sum(client.timeout) + client.backoff * (2**client.retries - 1) + 1.0
        poller.min_deadline = max(poller.min_deadline, budget)


def start_env(
    cfg_doc: dict[str, Any], caplog: pytest.LogCaptureFixture, secrets: list[str], full_retries: bool = True
) -> Env:
    caplog.set_level(logging.DEBUG)
    cfg = load_config_text(yaml.safe_dump(cfg_doc, sort_keys=False), "faults.yaml")
    exporter = Exporter(cfg)
    if full_retries:
        cover_client_retries(exporter)
    exporter.start()
    watcher = Watcher(f"http://127.0.0.1:{exporter.port}", secrets, lambda: exporter.state.view()[0])
    watcher.start()
    env = Env(exporter, watcher, caplog, secrets)
    try:
        env.wait_healthy()
        env.mark_baseline()
    except BaseException:
        stop_env(env)
        raise
    return env


def stop_env(env: Env) -> None:
    for fn in reversed(env.cleanups):
        fn()
    env.watcher.stop()
    env.exporter.stop()


def all_secrets(*passwords: str) -> list[str]:
    return [s for p in passwords for s in (p, basic_token(USERNAME, p))]


@pytest.fixture
def env(
    healthy_sims: Sims, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Env]:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    auth = {"username": USERNAME, "password_env": PASSWORD_ENV}
    doc = exporter_yaml(healthy_sims.ontap.url, f"{healthy_sims.host.url}/windows/{HOST}/metrics", auth)
    e = start_env(doc, caplog, all_secrets(PASSWORD))
    try:
        yield e
    finally:
        stop_env(e)


# ------------------------------------------------------------------ one fault cycle
@dataclass
class Fault:
    """A fault on some targets: how to switch it on and off, and the reasons their errors must give."""

    name: str
    on: Callable[[], None]
    off: Callable[[], None]
    reasons: dict[str, frozenset[str]]  # target -> the reasons its errors may give (one at least)
    required: frozenset[str] = frozenset()  # reasons each target's errors must include
    # the first poll after the fault clears begins within this; a poll stuck on an answer that
    # never ends can only be cut at its deadline, so such a fault allows the deadline instead
    recovery_s: float = RECOVERY_S


@dataclass
class Cycle:
    failed_after: dict[str, float] = field(default_factory=dict)  # target -> seconds from fault on
    recovery: dict[str, float] = field(default_factory=dict)  # target -> seconds from off to the next poll
    reasons: dict[str, dict[str, float]] = field(default_factory=dict)  # target -> reason -> new errors


def knobs_fault(sim: SimProcess, reasons: dict[str, frozenset[str]], **knobs: Any) -> Fault:
    return Fault(
        f"{sim.name} {knobs}",
        lambda: sim.set_faults(**knobs),
        lambda: sim.set_faults(**{k: type(v)() for k, v in knobs.items()}),
        reasons,
    )


def run_cycle(env: Env, faults: list[Fault], fail_within: float = FAULT_WAIT_S) -> Cycle:
    """Switch every fault on; each off once all its targets failed; until every target polled again."""
    w = env.watcher
    start = w.next_page()
    result = Cycle()
    t_on = time.monotonic()
    for f in faults:
        f.on()
    off_at: dict[str, float] = {}  # target -> when its fault went off
    pending = list(faults)
    targets = {t for f in faults for t in f.reasons}

    def new_errors(page: Page, target: str) -> dict[str, float]:
        before = start.errors_of(target)
        return {r: v - before.get(r, 0) for r, v in page.errors_of(target).items() if v > before.get(r, 0)}

    while len(result.recovery) < len(targets):
        page = w.next_page()
        now = time.monotonic()
        for f in list(pending):
            for t in f.reasons:
                if t not in result.failed_after and new_errors(page, t) and page.up.get(t) == 0:
                    result.failed_after[t] = page.at - t_on
            if all(t in result.failed_after for t in f.reasons):
                f.off()
                pending.remove(f)
                off = time.monotonic()
                off_at.update({t: off for t in f.reasons})
        for t, off in off_at.items():
            if t not in result.recovery and page.at > off and page.up.get(t) == 1:
                result.recovery[t] = max(page.at - page.duration.get(t, 0.0) - off, 0.0)
        if pending and now - t_on > fail_within:
            for f in pending:
                f.off()
            down = {t: (page.up.get(t), new_errors(page, t)) for t in targets}
            raise AssertionError(
                f"not every target failed within {fail_within:.0f} s of {[f.name for f in pending]}: "
                f"(up, new errors) = {down}"
            )
        if not pending and now - max(off_at.values()) > 10 * POLL_S:
            missing = sorted(targets - set(result.recovery))
            raise AssertionError(f"{missing} did not poll successfully within 10 s of the fault clearing")
    end = w.next_page()
    result.reasons = {t: new_errors(end, t) for t in targets}
    return result


def assert_cycle(cycle: Cycle, faults: list[Fault]) -> None:
    for f in faults:
        for t, allowed in f.reasons.items():
            got = set(cycle.reasons[t])
            assert got and got <= allowed and f.required <= got, (
                f"{t}: sanlens_poll_errors_total grew for {got}, want {set(allowed)}"
                + (f" including {set(f.required)}" if f.required else "")
            )
    limit = max(f.recovery_s for f in faults)
    slow = {t: round(s, 2) for t, s in cycle.recovery.items() if s > limit + OBSERVE_S}
    assert not slow, f"first poll after the fault cleared began later than {limit:g} s: {slow}"


def fault_test(env: Env, faults: list[Fault], fail_within: float = FAULT_WAIT_S) -> Cycle:
    cycle = run_cycle(env, faults, fail_within)
    print(f"{[f.name for f in faults]}: {cycle}")  # shown with the failure, or with -s
    assert_cycle(cycle, faults)
    env.assert_clean()
    return cycle


# ------------------------------------------------------------------ the faults
ONTAP = "faulty"


def test_latency_beyond_the_timeout_is_a_timeout(env: Env, healthy_sims: Sims) -> None:
    fault_test(
        env,
        [
            knobs_fault(healthy_sims.ontap, {ONTAP: frozenset({"timeout"})}, latency_ms=LATENCY_MS),
            knobs_fault(healthy_sims.host, {HOST: frozenset({"timeout"})}, latency_ms=LATENCY_MS),
        ],
    )


def test_5xx_answers_are_api_and_http_errors(env: Env, healthy_sims: Sims) -> None:
    fault_test(
        env,
        [
            knobs_fault(healthy_sims.ontap, {ONTAP: frozenset({"api"})}, error_rate_5xx=1.0),
            knobs_fault(healthy_sims.host, {HOST: frozenset({"http"})}, error_rate_5xx=1.0),
        ],
    )


def test_401_is_an_auth_error(env: Env, healthy_sims: Sims) -> None:
    fault_test(
        env,
        [
            knobs_fault(healthy_sims.ontap, {ONTAP: frozenset({"auth"})}, status_401=True),
            knobs_fault(healthy_sims.host, {HOST: frozenset({"auth"})}, status_401=True),
        ],
    )


def test_connection_resets_are_connection_errors(env: Env, healthy_sims: Sims) -> None:
    fault_test(
        env,
        [
            knobs_fault(healthy_sims.ontap, {ONTAP: frozenset({"connection"})}, reset_rate=1.0),
            knobs_fault(healthy_sims.host, {HOST: frozenset({"connection"})}, reset_rate=1.0),
        ],
    )


def test_malformed_json_is_malformed(env: Env, healthy_sims: Sims) -> None:
    fault_test(
        env, [knobs_fault(healthy_sims.ontap, {ONTAP: frozenset({"malformed"})}, malformed_json_rate=1.0)]
    )


def test_pagination_loop_is_detected(env: Env, healthy_sims: Sims) -> None:
    fault_test(
        env, [knobs_fault(healthy_sims.ontap, {ONTAP: frozenset({"pagination_loop"})}, pagination_loop=True)]
    )


def _polls_after(env: Env, n: int) -> Page:
    """The first page on which every target has polled ``n`` more times, every page between up."""
    first = env.watcher.next_page()

    def done() -> Page | None:
        page = env.watcher.next_page()
        down = [t for t in env.targets if page.up.get(t) != 1]
        assert not down, f"{down} went down"
        return page if all(page.polls[t] >= first.polls[t] + n for t in env.targets) else None

    return wait_for(done, 15 * n * POLL_S, f"{n} more polls of every target", interval=0)


def test_counter_reset_gives_no_negative_or_absurd_rate_and_no_finding(env: Env, healthy_sims: Sims) -> None:
    before = env.watcher.next_page()
    healthy_sims.ontap.set_faults(counter_reset=True)
    healthy_sims.host.set_faults(counter_reset=True)
    after = _polls_after(env, 3)
    assert after.errors == before.errors, "a counter reset made polls fail"
    env.assert_clean()


def test_partial_aggregation_keeps_the_target_up_and_shows_the_rows(env: Env, healthy_sims: Sims) -> None:
    before = env.watcher.next_page()
    assert before.partial_rows == 0
    healthy_sims.ontap.set_faults(partial_aggregation=True)

    def partial() -> Page | None:
        page = env.watcher.next_page()
        assert page.up.get(ONTAP) == 1, "partial aggregation took the cluster down"
        return page if page.partial_rows > 0 else None

    wait_for(partial, 10 * POLL_S, "sanlens_ontap_partial_aggregation_rows > 0", interval=0)
    _polls_after(env, 2)  # rows skipped or kept by policy, for a while
    healthy_sims.ontap.set_faults(partial_aggregation=False)
    done_at_off = env.watcher.next_page().polls[ONTAP]  # polls finished by then (one may be under way)

    def whole() -> Page | None:
        page = env.watcher.next_page()
        return page if page.partial_rows == 0 else None

    page = wait_for(whole, 10 * POLL_S, "partial rows back to 0", interval=0)
    # counted in polls, not seconds (a loaded machine stretches a poll, not the promise): the poll under
    # way when the fault cleared may still be partial, and so may the QoS tables' last read, which stands
    # until the next QoS read (due QOS_EVERY_POLLS after it) is folded in by the poll after that one
    assert page.polls[ONTAP] <= done_at_off + 1 + QOS_EVERY_POLLS + 1, (page.polls[ONTAP], done_at_off)
    assert page.errors == before.errors, "partial aggregation made polls fail"
    env.assert_clean()


def test_a_missing_counter_table_costs_only_that_table(env: Env, healthy_sims: Sims) -> None:
    """One table answering ONTAP's 404 "Table is not found": the cluster stays up and polls on."""
    before = env.watcher.next_page()
    assert not before.tables_missing
    healthy_sims.ontap.set_faults(missing_table="fcp")

    def missing() -> Page | None:
        page = env.watcher.next_page()
        assert page.up.get(ONTAP) == 1, "a missing counter table took the cluster down"
        return page if page.tables_missing else None

    page = wait_for(missing, 10 * POLL_S, "sanlens_ontap_counter_table_missing", interval=0)
    assert page.tables_missing == {"fcp"}
    _polls_after(env, 2)
    healthy_sims.ontap.set_faults(missing_table="")

    def back() -> Page | None:
        page = env.watcher.next_page()
        return page if not page.tables_missing else None

    page = wait_for(back, 10 * POLL_S, "the table back", interval=0)
    assert page.errors == before.errors, "a missing counter table made polls fail"
    env.assert_clean()


def test_simulator_killed_and_restarted_on_the_same_port(env: Env, healthy_sims: Sims) -> None:
    ontap, host = healthy_sims.ontap, healthy_sims.host
    fault_test(
        env,
        [
            Fault("ontap simulator killed", ontap.kill, ontap.restart, {ONTAP: frozenset({"connection"})}),
            Fault("host simulator killed", host.kill, host.restart, {HOST: frozenset({"connection"})}),
        ],
    )
    _polls_after(env, 2)  # the restarted simulators' counters start again: no finding from that either
    env.assert_clean()


def test_host_counters_restarting_from_a_nonzero_value_give_no_absurd_rate() -> None:
    """The restarted simulator's case in two readings: a host disk's counters fall back to earlier values."""
    cooker = HostCooker(HOST)

    def reading(reads: float) -> DiskReading:
        return DiskReading(disk="1", reads=reads, read_bytes=reads * 8192, read_latency_s=reads * 1e-3)

    cooker.cook(100.0, [reading(5_000_000)], {})
    cooker.cook(101.0, [reading(5_000_200)], {})  # 200 IOPS
    snap = cooker.cook(102.0, [reading(4_000_000)], {})  # counters now from another, younger, source
    assert not view_anomalies(snap.view), view_anomalies(snap.view)


def test_a_restarted_host_whose_latency_counter_reads_as_growth_gives_no_rate() -> None:
    """After a restart the 32-bit latency numerator may come back above its last (wrapped) value;
    the bytes counter, which never wraps, falling back shows the whole disk was reset."""
    cooker = HostCooker(HOST)

    def reading(reads: float, read_bytes: float, latency_s: float) -> DiskReading:
        return DiskReading(disk="1", reads=reads, read_bytes=read_bytes, read_latency_s=latency_s)

    cooker.cook(100.0, [reading(5_000_000, 4e10, 10.0)], {})  # the latency numerator just wrapped
    before = cooker.cook(101.0, [reading(5_000_200, 4e10 + 1.6e6, 10.4)], {})
    assert before.view.disks[0].read_latency_s == pytest.approx(0.4 / 200)
    # restarted: ops and bytes fall back, the latency numerator is back before its wrap (+409 s)
    snap = cooker.cook(102.0, [reading(4_000_000, 3e10, 419.4)], {})
    disk = snap.view.disks[0]
    assert disk.read_iops is None and disk.read_latency_s is None, disk
    assert not view_anomalies(snap.view), view_anomalies(snap.view)
    # the exposed counters hold still over the reset, then count on from the new raw values
    after = cooker.cook(103.0, [reading(4_000_100, 3e10 + 8e5, 419.5)], {})
    assert after.view.disks[0].read_iops == pytest.approx(100.0)
    assert after.view.disks[0].read_latency_s == pytest.approx(0.1 / 100)


def test_a_restarted_host_whose_counters_all_come_back_higher_gives_no_rate() -> None:
    """A counter that restarts elsewhere than zero can come back above its last value: a change
    no disk makes in the interval (here 2 billion ops and 16 TB in a second) is a restart, and
    a restart is host-wide: the disk whose own jump looks plausible gives no rate either."""
    cooker = HostCooker(HOST)

    def readings(ops0: float, ops1: float) -> list[DiskReading]:
        return [
            DiskReading(disk=str(n), reads=ops, read_bytes=ops * 8192) for n, ops in enumerate((ops0, ops1))
        ]

    cooker.cook(100.0, readings(1_000_000, 1_000_000), {})
    cooker.cook(101.0, readings(1_000_100, 1_000_100), {})
    snap = cooker.cook(102.0, readings(2_001_000_000, 1_001_000), {})
    assert [d.read_iops for d in snap.view.disks] == [None, None]
    assert not view_anomalies(snap.view), view_anomalies(snap.view)
    after = cooker.cook(103.0, readings(2_001_000_050, 1_001_050), {})
    assert [d.read_iops for d in after.view.disks] == [pytest.approx(50.0), pytest.approx(50.0)]

    def exposed_reads(snapshot: Snapshot) -> dict[str, float]:
        ops = next(m for m in snapshot.metrics if m.name == "sanlens_host_disk_ops_total")
        names = ops.label_names
        return {
            dict(zip(names, lv, strict=True))["disk"]: v
            for lv, v in ops.samples
            if dict(zip(names, lv, strict=True)).get("op") == "read"
        }

    # the exposed counters hold still over the restart and count on after it: monotonic for PromQL
    assert exposed_reads(snap) == {"0": 1_000_100, "1": 1_000_100}
    assert exposed_reads(after) == {"0": 1_000_150, "1": 1_000_150}


# ------------------------------------------------------------------ behind the fault proxy
@dataclass
class Proxied:
    env: Env
    ontap: FaultProxy
    host: FaultProxy


def start_proxied(
    sims: Sims,
    caplog: pytest.LogCaptureFixture,
    auth: dict[str, str],
    secrets: list[str],
    timeout: float,
    full_retries: bool,
) -> Proxied:
    ontap = FaultProxy(sims.ontap.url).start()
    host = FaultProxy(sims.host.url).start()
    if auth.get("password_file"):
        password = Path(auth["password_file"]).read_text(encoding="utf-8").strip()
        ontap.require(USERNAME, password)
        host.require(USERNAME, password)
    doc = exporter_yaml(ontap.url, f"{host.url}/windows/{HOST}/metrics", auth, timeout=timeout)
    try:
        env = start_env(doc, caplog, secrets, full_retries)
    except BaseException:
        ontap.stop()
        host.stop()
        raise
    env.cleanups += [ontap.stop, host.stop]  # first: a poll stuck on a trickle ends when its proxy stops
    return Proxied(env, ontap, host)


# the poll is abandoned at its deadline; until the abandoned one returns, the next are skipped
TRICKLE_REASONS = frozenset({"deadline", "busy"})


def _set_mode(proxy: FaultProxy, mode: str) -> Callable[[], None]:
    def set_it() -> None:
        proxy.mode = mode

    return set_it


def test_trickling_server_ends_the_poll_at_its_deadline(
    healthy_sims: Sims, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    auth = {"username": USERNAME, "password_env": PASSWORD_ENV}
    p = start_proxied(healthy_sims, caplog, auth, all_secrets(PASSWORD), TRICKLE_TIMEOUT_S, False)
    try:
        fault_test(
            p.env,
            [
                Fault("ontap trickle", _set_mode(p.ontap, "trickle"), _set_mode(p.ontap, "pass"),
                      {ONTAP: TRICKLE_REASONS}, frozenset({"deadline"})),
                Fault("host trickle", _set_mode(p.host, "trickle"), _set_mode(p.host, "pass"),
                      {HOST: TRICKLE_REASONS}, frozenset({"deadline"})),
            ],
            fail_within=TRICKLE_WAIT_S,
        )  # fmt: skip
        assert p.ontap.trickling == 0 and p.host.trickling == 0, "a trickling connection is still open"
    finally:
        stop_env(p.env)


def test_connection_stuck_mid_answer_does_not_hold_the_target(
    healthy_sims: Sims, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the trickle test, but the answers being trickled never finish; new connections are answered."""
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    auth = {"username": USERNAME, "password_env": PASSWORD_ENV}
    p = start_proxied(healthy_sims, caplog, auth, all_secrets(PASSWORD), TRICKLE_TIMEOUT_S, False)
    p.ontap.finish_trickles = p.host.finish_trickles = False
    try:
        fault_test(
            p.env,
            [
                Fault("ontap stuck", _set_mode(p.ontap, "trickle"), _set_mode(p.ontap, "pass"),
                      {ONTAP: TRICKLE_REASONS}, frozenset({"deadline"}), STUCK_RECOVERY_S),
                Fault("host stuck", _set_mode(p.host, "trickle"), _set_mode(p.host, "pass"),
                      {HOST: TRICKLE_REASONS}, frozenset({"deadline"}), STUCK_RECOVERY_S),
            ],
            fail_within=TRICKLE_WAIT_S,
        )  # fmt: skip
        # the exporter closed its end when it cut the poll; the proxy sees the hang-up at once
        wait_for(
            lambda: p.ontap.trickling == 0 and p.host.trickling == 0, 3.0, "every stuck connection closed"
        )
    finally:
        stop_env(p.env)


def test_rotated_password_file_is_used_within_two_polls(
    healthy_sims: Sims, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    auth = {"username": USERNAME, "password_file": str(secret)}
    p = start_proxied(healthy_sims, caplog, auth, all_secrets(PASSWORD, ROTATED), TIMEOUT_S, True)
    try:
        w = p.env.watcher
        start = w.next_page()
        # the cluster's password changes and the secret store writes the new one (atomically)
        p.ontap.require(USERNAME, ROTATED)
        p.host.require(USERNAME, ROTATED)
        tmp = tmp_path / "password.new"
        tmp.write_text(ROTATED + "\n", encoding="utf-8")
        os.replace(tmp, secret)
        rotated_at, off = time.time(), time.monotonic()

        def polled_with_the_new_password() -> Page | None:
            page = w.next_page()
            fresh = all(
                page.up.get(t) == 1 and page.last_success.get(t, 0) - page.duration.get(t, 0) >= rotated_at
                for t in p.env.targets
            )
            return page if fresh else None

        page = wait_for(polled_with_the_new_password, 10 * POLL_S, "a poll with the new password", interval=0)
        began = max(page.last_success[t] - page.duration[t] for t in p.env.targets) - rotated_at
        assert page.at - off <= 10 * POLL_S
        assert began <= RECOVERY_S + OBSERVE_S, f"first poll with the new password began {began:.2f} s after"
        for t in p.env.targets:
            grew = {r for r, v in page.errors_of(t).items() if v > start.errors_of(t).get(r, 0)}
            assert grew <= {"auth"}, f"{t}: errors {grew} while the password rotated"
        p.env.assert_clean()
    finally:
        stop_env(p.env)
