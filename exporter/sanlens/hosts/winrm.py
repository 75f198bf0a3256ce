"""Agentless host source over WinRM (optional extra ``sanlens[winrm]``, pywinrm).

One batched PowerShell call per poll returns, as JSON, the raw PhysicalDisk and
LogicalDisk counters (with Frequency_PerfTime, Timestamp_PerfTime and
Timestamp_Sys100NS), Get-Disk identities, the MPIO path count per LUN serial and,
where the Microsoft DSM reports them, the ALUA state of every path
(DSM_QueryLBPolicy_V2: MPIO_DSM_Path_V2.TargetPortGroup_State). Rates come from
``rawcounters``; the transport sits behind ``Transport`` so it can be tested
without Windows (and against the simulator's ``/windows/<host>/winrm``).

Latency is Δ PercentDiskReadTime (uint64, 100 ns; the read-queue integral) over
Δ reads: exact by Little's law at any queue depth. The uint32 AvgDiskSecPerRead
numerator wraps every 2^32/F/N s at N reads outstanding (429.5/N s at F = 10 MHz)
and is only the fallback when the integral is missing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Protocol

from sanlens.config import HostTarget
from sanlens.errors import SanlensError, SourceError
from sanlens.hosts import rawcounters as rc
from sanlens.hosts.cooking import DiskReading, Unwrapper
from sanlens.hosts.sources import HostSource
from sanlens.join.directory import normalize_serial
from sanlens.model import HostDiskStats
from sanlens.upstream.abortable import ResponseTooLarge
from sanlens.upstream.credentials import AuthRetry, Secret
from sanlens.upstream.tls import Trust
from sanlens.urls import safe_url

_PD_PROPS = (
    "Name,DiskReadsPerSec,DiskWritesPerSec,DiskReadBytesPerSec,DiskWriteBytesPerSec,"
    "AvgDiskSecPerRead,AvgDiskSecPerRead_Base,AvgDiskSecPerWrite,AvgDiskSecPerWrite_Base,"
    "PercentDiskReadTime,PercentDiskReadTime_Base,PercentDiskWriteTime,PercentDiskWriteTime_Base,"
    "PercentIdleTime,PercentIdleTime_Base,CurrentDiskQueueLength,AvgDiskQueueLength,SplitIOPerSec,"
    "Frequency_PerfTime,Timestamp_PerfTime,Timestamp_Sys100NS"
)

SCRIPT = f"""
$ErrorActionPreference = 'Stop'
$pd = @(Get-CimInstance Win32_PerfRawData_PerfDisk_PhysicalDisk | Where-Object Name -ne '_Total' |
        Select-Object {_PD_PROPS})
$ld = @(Get-CimInstance Win32_PerfRawData_PerfDisk_LogicalDisk | Where-Object Name -ne '_Total' |
        Select-Object Name,CurrentDiskQueueLength,Timestamp_Sys100NS)
$all = @(Get-Disk)
$disks = @($all | Select-Object Number,SerialNumber,UniqueId,FriendlyName)
$mpio = @()
try {{
  $mpio = @((Get-CimInstance -Namespace root\\wmi -ClassName MPIO_DISK_INFO -ErrorAction Stop).DriveInfo |
            Select-Object Name,NumberPaths,SerialNumber)
}} catch {{ }}
# ALUA state per path: the DSM's MPIO disk instance is the device path of its Get-Disk entry
$alua = @()
try {{
  foreach ($q in @(Get-CimInstance -Namespace root\\wmi -ClassName DSM_QueryLBPolicy_V2 -ErrorAction Stop)) {{
    $id = ($q.InstanceName -replace '_\\d+$', '' -replace '\\\\', '#').ToLower()
    $d = $all | Where-Object {{ $_.Path -and $_.Path.ToLower().Contains($id) }} | Select-Object -First 1
    if ($null -eq $d) {{ continue }}
    foreach ($p in @($q.LoadBalancePolicy.DSM_Paths)) {{
      $alua += [pscustomobject]@{{ Number = $d.Number; State = $p.TargetPortGroup_State; Failed = $p.FailedPath }}
    }}
  }}
}} catch {{ }}
[pscustomobject]@{{ physical = $pd; logical = $ld; disks = $disks; mpio = $mpio; alua = $alua }} |
  ConvertTo-Json -Depth 4 -Compress
"""


class Transport(Protocol):
    def run_ps(self, script: str) -> str:
        """Run a PowerShell script; return its stdout, or raise SourceError."""
        ...


class PyWinRMTransport:
    """pywinrm session (NTLM by default, or a client certificate); TLS verified unless told otherwise.

    The session holds the password, so a changed ``password_file`` builds a new one
    (checked before each call); a refused password is retried once only when the
    file now holds a different one. TLS needs no per-request care here: given
    ``ca_trust_path`` or ``server_cert_validation='ignore'``, pywinrm sets them on
    its session over ``REQUESTS_CA_BUNDLE`` and sends without merging the environment.
    """

    def __init__(self, target: HostTarget) -> None:
        try:
            import winrm
        except ImportError:
            raise SanlensError(
                f"host {target.name}: source winrm needs pywinrm: pip install 'sanlens[winrm]'"
            ) from None
        assert target.url
        self._winrm = winrm
        self._target = target
        auth = target.auth
        kwargs: dict[str, Any] = {
            "server_cert_validation": "ignore" if target.tls.insecure_skip_verify else "validate",
            "operation_timeout_sec": int(target.timeout),
            "read_timeout_sec": int(target.timeout) + 10,
        }
        if target.tls.ca_file:
            kwargs["ca_trust_path"] = target.tls.ca_file
        if auth.cert_file:
            kwargs.update(transport="certificate", cert_pem=auth.cert_file, cert_key_pem=auth.key_file)
        else:
            kwargs["transport"] = "ntlm"
        self._kwargs = kwargs
        self._where = safe_url(target.url)
        self.trust = Trust(target.tls)
        self.secret = Secret(auth, f"host {target.name}") if not auth.cert_file else None
        self.auth_retry = AuthRetry(self.secret, spacing=float(target.poll_interval))
        self._session = self._new_session()

    def _new_session(self) -> Any:
        password = self.secret.value if self.secret is not None else ""
        assert self._target.url
        return self._winrm.Session(
            self._target.url, auth=(self._target.auth.username or "", password), **self._kwargs
        )

    def run_ps(self, script: str) -> str:
        from requests.exceptions import SSLError
        from winrm.exceptions import AuthenticationError

        reauthed = False
        while True:
            if self.secret is not None and self.secret.refresh():
                self._session = self._new_session()
            try:
                r = self._session.run_ps(script)
            except AuthenticationError as e:
                if not reauthed and self.auth_retry.after_refusal():
                    reauthed = True  # the password file changed since this call: once more, new session
                    self._session = self._new_session()
                    continue
                raise SourceError(f"{self._where}: {type(e).__name__} (check auth)", reason="auth") from None
            except SSLError as e:
                raise SourceError(f"{self._where}: {self.trust.explain(e)}", reason="tls") from None
            except Exception as e:  # pywinrm raises many transport-specific types
                reason = "auth" if "401" in str(e) or "Unauthorized" in type(e).__name__ else "connection"
                raise SourceError(f"{self._where}: {type(e).__name__}", reason=reason) from None
            break
        if r.status_code != 0:
            err = r.std_err.decode("utf-8", "replace").strip().splitlines()
            raise SourceError(
                f"{self._where}: PowerShell failed: {err[0] if err else r.status_code}", reason="remote"
            )
        limit = int(self._target.max_response_bytes)
        if len(r.std_out) > limit:  # pywinrm has read it all; its JSON parse is what is spared
            raise ResponseTooLarge(
                f"{self._where}: PowerShell output of {len(r.std_out)} bytes exceeds max_response_bytes ({limit})"
            )
        return str(r.std_out.decode("utf-8", "replace"))


def _list(v: Any) -> list[dict[str, Any]]:
    if v is None:
        return []
    return [x for x in (v if isinstance(v, list) else [v]) if isinstance(x, dict)]


class WinRMSource(HostSource):
    kind = "winrm"

    def __init__(self, target: HostTarget, transport: Transport | None = None) -> None:
        super().__init__(target)
        self.transport = transport or PyWinRMTransport(target)
        self._prev_raw: dict[str, dict[str, Any]] = {}
        self._ticks = Unwrapper()  # 32-bit PERF_AVERAGE_TIMER numerators, in ticks

    def read(self) -> tuple[float, list[DiskReading], dict[str, HostDiskStats] | None, float | None]:
        out = self.transport.run_ps(SCRIPT)
        try:
            doc = json.loads(out)
            if not isinstance(doc, dict):
                raise ValueError("expected a JSON object")
            physical = _list(doc.get("physical"))
            ids = {str(d.get("Number")): d for d in _list(doc.get("disks"))}
            mpio = {
                normalize_serial(str(m.get("SerialNumber") or "")): int(m.get("NumberPaths") or 0)
                for m in _list(doc.get("mpio"))
            }
            alua = alua_paths(_list(doc.get("alua")))
            readings, rates = [], {}
            ts = None
            interval = None
            for row in physical:
                name = str(row["Name"])
                disk, _, rest = name.partition(" ")
                serial = str(ids.get(disk, {}).get("SerialNumber") or "").strip()
                reading = self._reading(disk, tuple(d for d in rest.split() if d.endswith(":")), serial, row)
                reading = replace_paths(reading, mpio.get(normalize_serial(serial)) or None)
                if disk in alua:
                    active, optimized = alua[disk]
                    reading = replace(reading, paths=active or reading.paths, optimized_paths=optimized)
                readings.append(reading)
                ts = int(row["Timestamp_Sys100NS"]) / 1e7 - 11644473600.0  # FILETIME → Unix epoch
                prev = self._prev_raw.get(disk)
                if prev is not None:
                    rates[disk] = self._rates(disk, prev, row)
                    interval = (int(row["Timestamp_PerfTime"]) - int(prev["Timestamp_PerfTime"])) / int(
                        row["Frequency_PerfTime"]
                    )
                self._prev_raw[disk] = row
        except (ValueError, KeyError, TypeError) as e:
            raise SourceError(f"host {self.name}: unexpected WinRM output: {e}", reason="parse") from None
        if ts is None:
            raise SourceError(
                f"host {self.name}: no PhysicalDisk instances in the WinRM output", reason="parse"
            )
        return ts, readings, rates, interval

    def _reading(self, disk: str, drives: tuple[str, ...], serial: str, r: dict[str, Any]) -> DiskReading:
        f = int(r["Frequency_PerfTime"])
        rlat = self._ticks(disk, "rlat", float(r["AvgDiskSecPerRead"]), float(rc.MOD32))
        wlat = self._ticks(disk, "wlat", float(r["AvgDiskSecPerWrite"]), float(rc.MOD32))
        return DiskReading(
            disk=disk,
            drives=drives,
            serial=serial,
            reads=float(r["DiskReadsPerSec"]),
            writes=float(r["DiskWritesPerSec"]),
            read_bytes=float(r["DiskReadBytesPerSec"]),
            write_bytes=float(r["DiskWriteBytesPerSec"]),
            read_latency_s=rlat / f,
            write_latency_s=wlat / f,
            read_time_s=_integral_s(r, "PercentDiskReadTime"),
            write_time_s=_integral_s(r, "PercentDiskWriteTime"),
            idle_s=float(r["PercentIdleTime"]) * 1e-7,
            split_ios=float(r["SplitIOPerSec"]),
            queue_length=rc.raw(r["CurrentDiskQueueLength"]),
        )

    def _rates(self, disk: str, p: dict[str, Any], c: dict[str, Any]) -> HostDiskStats:
        f, t0, t1 = int(c["Frequency_PerfTime"]), int(p["Timestamp_PerfTime"]), int(c["Timestamp_PerfTime"])
        idle = rc.precision_100ns_timer(
            p["PercentIdleTime"], c["PercentIdleTime"], p["PercentIdleTime_Base"], c["PercentIdleTime_Base"]
        )
        return HostDiskStats(
            host=self.name,
            disk=disk,
            read_iops=rc.counter_counter(p["DiskReadsPerSec"], c["DiskReadsPerSec"], t0, t1, f),
            write_iops=rc.counter_counter(p["DiskWritesPerSec"], c["DiskWritesPerSec"], t0, t1, f),
            read_latency_s=_latency(p, c, "Read", f),
            write_latency_s=_latency(p, c, "Write", f),
            idle_ratio=None if idle is None else idle / 100.0,
            queue_length=rc.raw(c["CurrentDiskQueueLength"]),
            read_bytes_s=rc.counter_counter(
                p["DiskReadBytesPerSec"], c["DiskReadBytesPerSec"], t0, t1, f, wrap32=False
            ),
            write_bytes_s=rc.counter_counter(
                p["DiskWriteBytesPerSec"], c["DiskWriteBytesPerSec"], t0, t1, f, wrap32=False
            ),
            split_iops=rc.counter_counter(p["SplitIOPerSec"], c["SplitIOPerSec"], t0, t1, f),
        )


def replace_paths(r: DiskReading, paths: int | None) -> DiskReading:
    return replace(r, paths=paths) if paths else r


# MPIO_DSM_Path_V2.TargetPortGroup_State, the SPC-4 asymmetric access state
ALUA_ACTIVE_OPTIMIZED, ALUA_ACTIVE_UNOPTIMIZED = 0, 1


def alua_paths(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Disk number -> (active paths, Active/Optimized paths) from the DSM's path states; failed paths
    do not count. Standby, unavailable and transitioning paths carry no I/O."""
    out: dict[str, tuple[int, int]] = {}
    for row in rows:
        disk = str(row.get("Number", "")).strip()
        if not disk or row.get("Failed"):
            continue
        state = int(row.get("State", -1))
        active, optimized = out.get(disk, (0, 0))
        out[disk] = (
            active + (state in (ALUA_ACTIVE_OPTIMIZED, ALUA_ACTIVE_UNOPTIMIZED)),
            optimized + (state == ALUA_ACTIVE_OPTIMIZED),
        )
    return out


def _integral_s(row: dict[str, Any], name: str) -> float | None:
    """A PERF_PRECISION_100NS_TIMER (uint64, 100 ns units) in seconds; None when the row lacks it."""
    v = row.get(name)
    return None if v is None else float(v) * 1e-7


def _latency(p: dict[str, Any], c: dict[str, Any], op: str, freq: int) -> float | None:
    """Mean latency per op: Δ % Disk <op> Time integral / Δ ops (Little's law, 64-bit), else the
    32-bit Avg. Disk sec/<op> numerator taken modulo 2^32."""
    ops = rc.delta32(p[f"AvgDiskSecPer{op}_Base"], c[f"AvgDiskSecPer{op}_Base"])
    n0, n1 = p.get(f"PercentDisk{op}Time"), c.get(f"PercentDisk{op}Time")
    if n0 is not None and n1 is not None:
        d = int(n1) - int(n0)
        return None if ops == 0 or d < 0 else d * 1e-7 / ops
    return rc.average_timer(
        p[f"AvgDiskSecPer{op}"],
        c[f"AvgDiskSecPer{op}"],
        p[f"AvgDiskSecPer{op}_Base"],
        c[f"AvgDiskSecPer{op}_Base"],
        freq,
    )
