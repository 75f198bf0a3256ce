"""The base classes of host sources; each source is a module of its own, named in ``hosts/registry.py``.

Each poll reduces the host to ``DiskReading``s, states what each disk joins its ONTAP LUN
by (serial, WWID, a static entry) and lets ``HostCooker`` build the snapshot; the join
stage (``sanlens.join.stage``) resolves those keys against the ONTAP inventory.
``HttpScrapeSource`` is the HTTP part the exporters' ``/metrics`` share
(``hosts/windows_exporter.py``, ``hosts/node_exporter.py``, ``hosts/prometheus_source.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import requests

from sanlens.config import HostTarget
from sanlens.errors import SourceError
from sanlens.freshness import ReceiveClock
from sanlens.hosts.cooking import DiskReading, HostCooker, Moduli
from sanlens.hosts.mapping import DiskMapping, disk_mapping
from sanlens.model import DiskIdentity, HostDiskStats, Snapshot
from sanlens.upstream.abortable import REDIRECT_STATUS, AbortableAdapter, ResponseTooLarge, follow
from sanlens.upstream.credentials import AuthRetry, Secret, SecretBasicAuth
from sanlens.upstream.tls import Trust
from sanlens.urls import safe_url


class HostSource:
    """Common part: each disk's settings and join keys, and cooking. Subclasses implement ``read()``."""

    kind = "host"
    moduli: Moduli | None = None  # the source's counter widths (hosts/catalogue.py); None: Windows'

    def __init__(self, target: HostTarget) -> None:
        self.target = target
        self.name = target.name
        self.interval = float(target.poll_interval)
        self.cooker = HostCooker(target.name, self.moduli)
        # Unix seconds whose differences (windows_exporter gives no sample time of its own: the rate
        # intervals) an NTP step cannot distort; injectable for tests
        self.clock: Callable[[], float] = ReceiveClock()

    def read(self) -> tuple[float, list[DiskReading], dict[str, HostDiskStats] | None, float | None]:
        """(timestamp, readings, rates or None to derive them, interval or None for wall clock)."""
        raise NotImplementedError

    def poll(self) -> Snapshot:
        ts, readings, rates, interval = self.read()
        return self.cook(ts, readings, rates, interval)

    def cook(
        self,
        ts: float,
        readings: list[DiskReading],
        rates: dict[str, HostDiskStats] | None,
        interval: float | None,
    ) -> Snapshot:
        """The snapshot of one poll, with each disk's join keys for the join stage."""
        found = self.mappings(readings)
        snap = self.cooker.cook(ts, readings, {d: m for d, (m, _) in found.items()}, rates, interval)
        return replace(snap, disk_identities=tuple(key for _, key in found.values()))

    def mappings(self, readings: list[DiskReading]) -> dict[str, tuple[DiskMapping, DiskIdentity]]:
        """Each disk's settings and join keys: serial or WWID, or the config's static entry."""
        return {
            r.disk: disk_mapping(
                self.target,
                r.disk,
                r.drives,
                r.serial,
                r.paths,
                wwid=r.wwid,
                aliases=r.aliases,
                known_paths=r.known_paths,
                observed_queue_depth=r.queue_depth,
            )
            for r in readings
        }

    def close(self) -> None:
        pass


class HttpScrapeSource(HostSource):
    """A host exporter's ``/metrics`` over HTTP(S): basic auth or a client certificate, a private CA,
    a password file re-read when it changes, and a request the poller can cut at its deadline.
    Subclasses give the URL and ``parse()`` the text."""

    def __init__(self, target: HostTarget, url: str) -> None:
        super().__init__(target)
        self.url = url
        self.session = requests.Session()
        self.adapter = AbortableAdapter(max_retries=0)
        self.session.mount("http://", self.adapter)
        self.session.mount("https://", self.adapter)
        self.session.headers["Accept"] = "text/plain"
        auth = target.auth
        self.secret: Secret | None = None
        if auth.username:
            self.secret = Secret(auth, f"host {target.name}")
            self.session.auth = SecretBasicAuth(auth.username, self.secret)
        if auth.cert_file and auth.key_file:
            self.session.cert = (auth.cert_file, auth.key_file)
        self.auth_retry = AuthRetry(self.secret, spacing=self.interval)
        self.trust = Trust(target.tls)
        # also on each request: the environment may override the session's
        self.session.verify = self.trust.verify

    def fetch(self, url: str) -> requests.Response:
        """GET ``url``; transport failures and refused credentials as SourceError, any other status returned.

        The body is read here, at most ``max_response_bytes`` of it (``too_large`` past that),
        and is the returned response's ``content``. Redirects are followed only on the origin
        of ``url``: the credentials go nowhere else.
        """
        where = safe_url(url)
        start = url
        reauthed = False
        hops = 0
        self.adapter.resume()
        while True:
            self.adapter.check()
            self.auth_retry.before_request()
            try:
                resp = self.session.get(
                    url,
                    timeout=float(self.target.timeout),
                    verify=self.trust.verify,
                    stream=True,  # read_body bounds it
                    allow_redirects=False,  # follow() decides
                )
            except requests.Timeout:
                raise SourceError(f"{where}: timed out", reason="timeout") from None
            except requests.exceptions.SSLError as e:
                raise SourceError(f"{where}: {self.trust.explain(e)}", reason="tls") from None
            except requests.RequestException as e:
                self.adapter.check()
                raise SourceError(f"{where}: {type(e).__name__}", reason="connection") from None
            except OSError as e:  # requests: a CA bundle, client certificate or key path that does not exist
                raise SourceError(f"{where}: {self.trust.explain(e)}", reason="tls") from None
            if resp.status_code in REDIRECT_STATUS:
                url = follow(resp, start, where, hops)
                hops += 1
                continue
            if resp.status_code == 401 and not reauthed and self.auth_retry.after_refusal():
                resp.close()
                reauthed = True  # the password file changed since this request was sent: once more
                continue
            break
        if resp.status_code in (401, 403):
            resp.close()
            raise SourceError(f"{where}: HTTP {resp.status_code} (check auth)", reason="auth")
        body = self.adapter.read_body(resp, int(self.target.max_response_bytes), where)
        resp._content = bytes(body)  # what .content, .text and .json() read
        return resp

    def scrape(self) -> tuple[float, str]:
        """(receive time, page text) of one scrape of ``self.url``."""
        resp = self.fetch(self.url)
        ts = self.clock()
        if resp.status_code != 200:
            raise SourceError(f"{safe_url(self.url)}: HTTP {resp.status_code}", reason="http")
        return ts, resp.text

    def check_series(self, text: str) -> None:
        """Refuse a page with more samples than ``max_series`` before it is parsed (``too_large``).

        Counted as lines that are not comments: a cheap upper bound, a few C-speed passes.
        """
        limit = int(self.target.max_series)
        lines = text.count("\n") + (not text.endswith("\n"))
        samples = lines - text.count("\n#") - text.startswith("#")
        if samples > limit:
            raise ResponseTooLarge(
                f"{safe_url(self.url)}: page of about {samples} series exceeds max_series ({limit})"
            )

    def parse(self, text: str) -> list[DiskReading]:
        raise NotImplementedError

    def read(self) -> tuple[float, list[DiskReading], dict[str, HostDiskStats] | None, float | None]:
        ts, text = self.scrape()
        self.check_series(text)
        return ts, self.parse(text), None, None

    def abort(self) -> None:
        """Cut the request of a poll abandoned at its deadline (see sanlens.upstream.abortable)."""
        self.adapter.abort()

    def close(self) -> None:
        self.session.close()
