"""The diagnosis engine: history, sustain windows, hysteresis, and the exposed findings.

Sources call ``update`` from their own threads; each call stores the view,
re-runs every diagnosis (pure functions of the views, history and thresholds)
and turns their per-subject levels into states:

- a level must hold for the sustain window before the state rises to it;
- a state falls only after its level, judged against thresholds moved 10 %
  towards ok (0.9 x), has stayed lower for the exit window.

Time is the exporter's receive clock (``Snapshot.received``, sanlens.freshness) when
snapshots carry it, as in ``sanlens serve``: a source's own clock (a Windows host minutes
ahead, an NTP step) never makes another source look stale. Offline (``sanlens analyze``,
tests) snapshots carry no receive time and the views' own timestamps are replayed.

A subject missing from one evaluation (a row skipped on a counter reset or a partial
aggregation, a LUN between two inventories) keeps its state and its series, so an alert's
``for:`` is not restarted, until it has been missing longer than its source's staleness
bound. A source that stays silent that long, or leaves the config (``forget``), takes its
view and its subjects' findings with it at once, as /metrics drops its series.
``findings`` and ``metrics`` return results built at the last update; a scrape never
computes anything.
"""

from __future__ import annotations

import copy
import logging
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sanlens.config.plain import DIAGNOSE_DEFAULTS, DiagnoseSection
from sanlens.diagnose import background_operation_impact, waterfall
from sanlens.diagnose.attribution import Attribution, Seen, attribute, resolve_path
from sanlens.diagnose.base import Context, Observation, quieted
from sanlens.diagnose.exposed import build_metrics, finding
from sanlens.diagnose.history import History
from sanlens.diagnose.numeric import num
from sanlens.diagnose.registry import MODULES, REGISTRY, relax, resolve, windows
from sanlens.diagnose.track import Judged, Track, source_of
from sanlens.freshness import stale_after
from sanlens.model import HostView, Metric, OntapView, Snapshot

if TYPE_CHECKING:
    from sanlens.config import Config

# every kind of input a diagnosis may read of the Context (a module's READS names a subset); "mapping"
# is the hosts' Context.mapped_luns alone
ALL_INPUTS = frozenset({"ontap", "hosts", "history", "mapping"})

log = logging.getLogger(__name__)


class Engine:
    """Implements sanlens.store.Engine; see the module docstring."""

    def __init__(
        self,
        cfg: DiagnoseSection | None = None,
        *,
        deferred: bool = False,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """``deferred``: ``update`` only stores views; ``evaluate_pending`` judges them.
        ``clock``: the receive clock the snapshots are stamped with; with it, time moves on (and
        silent sources go stale) even while no snapshot arrives."""
        self._lock = threading.RLock()
        self.deferred = deferred
        self.clock = clock
        self._inbox: deque[Snapshot] = deque()
        cfg = cfg or DIAGNOSE_DEFAULTS
        self._configure(cfg)
        self._history = History(cfg.history)
        self._ontap: dict[str, OntapView] = {}
        self._hosts: dict[str, HostView] = {}
        self._received: dict[str, tuple[float, float | None]] = {}  # source -> (time, interval)
        self._tracks: dict[tuple[str, str], Track] = {}
        self._now = -math.inf
        self._findings: list[dict[str, Any]] = []
        self._active: list[Track] = []
        self._counts: dict[str, list[int]] = {}
        self._evaluated: dict[str, dict[str, int]] = {}
        self._progress: list[tuple[dict[str, str], float | None, float | None]] = []
        self._waterfalls: list[waterfall.Exposed] = []
        self._attribution = Attribution()
        self._metrics: tuple[Metric, ...] | None = None

    def _configure(self, cfg: DiagnoseSection) -> None:
        self._memo: dict[tuple[str, int, str], tuple[tuple[Any, ...], list[Observation]]] = {}
        self._memo_used: set[tuple[str, int, str]] = set()  # the memo entries the last evaluation read
        self._judged: dict[tuple[str, int], Judged] = {}  # (diagnosis, part) -> its last observations
        self._cfg = cfg
        self._th = resolve(cfg)  # raises ConfigError on a bad override
        self._relaxed = relax(self._th)
        self._windows = windows(cfg)

    def set_config(self, cfg: Config) -> None:
        with self._lock:
            self._configure(cfg.diagnose)
            self._metrics = None

    # ------------------------------------------------------------ feeding
    def update(self, snapshot: Snapshot) -> None:
        """Take a poll's view; a deferred engine only queues it, so a poller never waits here."""
        if not isinstance(snapshot.view, OntapView | HostView):
            return
        self._inbox.append(snapshot)  # atomic: no lock, whatever the engine is doing
        if not self.deferred:
            self.evaluate_pending()

    def evaluate_pending(self) -> bool:
        """Judge the views taken since the last evaluation; False when there were none (and,
        with a clock, no source went stale and no missing subject outlived its hold).

        A deferred engine (``sanlens serve``) is judged from its own thread at a steady pace,
        so several host polls between two evaluations cost one evaluation, not one each."""
        with self._lock:
            if self.clock is not None:
                self._now = max(self._now, self.clock())
            if not self._inbox and not self._expiring():
                return False
            while self._inbox:
                self._store(self._inbox.popleft())
            self._judge()
            return True

    def settled(self) -> bool:
        """Whether judging could only confirm what is known: no ONTAP view, no subject pending or
        up, nothing queued. ``analyze`` then only stores a host view it has screened as calm."""
        with self._lock:
            return not self._tracks and not self._ontap and not self._inbox

    def tracked(self) -> frozenset[str]:
        """The subjects of every track (pending, up or on its exit window), by key."""
        with self._lock:
            return frozenset(key for _did, key in self._tracks)

    def absorb(self, snapshot: Snapshot) -> None:
        """Store a view without judging it: for a settled engine and a view whose every disk is
        ok or unjudged (``sanlens.analyze.host_screen``), judging would change nothing but which
        subjects were judged, which the caller keeps."""
        with self._lock:
            self._store(snapshot)

    def due(self) -> bool:
        """Whether time alone has made something change (see ``evaluate_pending``): lets a paced
        judge drop a stale source's findings when /metrics drops its series, not a minute later."""
        if self.clock is None:
            return False
        with self._lock:
            self._now = max(self._now, self.clock())
            return self._expiring()

    def forget(self, source: str) -> None:
        """A target left the config: its view, history and findings go now, not when stale."""
        with self._lock:
            self._inbox = deque(s for s in self._inbox if s.target != source)
            if self._drop_source(source):
                self._judge()

    def _store(self, snapshot: Snapshot) -> None:
        view = snapshot.view
        if isinstance(view, OntapView):
            name = view.cluster
            self._ontap[name] = view
            self._history.add_ontap(view)
        elif isinstance(view, HostView):
            name = view.host
            self._hosts[name] = view
            self._history.add_host(view)
        else:
            return
        # the receive time when the exporter stamped one; offline, the view's own time
        ts = num(snapshot.received)
        ts = num(view.timestamp) if ts is None else ts
        ts = num(snapshot.timestamp) if ts is None else ts
        if ts is None:
            return
        self._received[name] = (ts, num(view.interval_s))
        self._now = max(self._now, ts)

    def _judge(self) -> None:
        if not math.isfinite(self._now):
            return
        self._drop_stale()
        self._evaluate()

    def _stale_sources(self) -> list[str]:
        return [n for n, (ts, iv) in self._received.items() if self._now - ts > stale_after(iv)]

    def _hold(self, source: str) -> float:
        """How long a subject of ``source`` may be missing before it is dropped."""
        seen = self._received.get(source)
        return stale_after(seen[1] if seen is not None else None)

    def _expiring(self) -> bool:
        """Whether time alone changes something: a source went stale, a missing subject expired."""
        if self._stale_sources():
            return True
        return any(self._now - t.last_seen > self._hold(source_of(t.labels)) for t in self._tracks.values())

    def _drop_source(self, name: str) -> bool:
        """Forget a source's view, history and subjects; whether it had any."""
        known = name in self._received or name in self._ontap or name in self._hosts
        self._received.pop(name, None)
        self._ontap.pop(name, None)
        self._hosts.pop(name, None)
        self._history.forget(name)
        gone = [k for k, t in self._tracks.items() if source_of(t.labels) == name]
        for k in gone:
            del self._tracks[k]
        return known or bool(gone)

    def _drop_stale(self) -> None:
        for name in self._stale_sources():
            self._drop_source(name)

    def _inputs(self, ctx: Context) -> dict[str, tuple[Any, ...]]:
        """What each kind of Context input is now, by identity: a new poll is a new view object.
        The views themselves are kept with it, so no id is reused while a memo holds it.
        ``mapping`` is the hosts' LUN mapping alone (which LUN each disk is, and its data class):
        it changes far less often than the hosts' counters."""
        return {
            "ontap": tuple((n, id(v), v) for n, v in self._ontap.items()),
            "hosts": tuple((n, id(v), v) for n, v in self._hosts.items()),
            "history": (self._history.generation,),
            "mapping": tuple((k, d.data_class) for k, d in ctx.mapped_luns.items()),
        }

    def _observe(
        self, mod: Any, ctx: Context, th: Any, which: str, inputs: dict[str, tuple[Any, ...]]
    ) -> tuple[list[Observation], ...]:
        """A diagnosis's observations, part by part, judged again only for the parts whose inputs
        changed: at 10,000 LUNs the LUN and volume ceilings cost more than every host-side diagnosis
        together, and a host's poll changes none of their ONTAP inputs. Observations are pure
        functions of the views, the history and the thresholds (the engine's clock steps the tracks,
        not the diagnoses). A part judged again is a new list; an unchanged one is the same list."""
        parts = getattr(mod, "PARTS", None) or ((mod.evaluate, getattr(mod, "READS", ALL_INPUTS)),)
        out: list[list[Observation]] = []
        for i, (part, reads) in enumerate(parts):
            key = (mod.SPEC.id, i, which)
            stamp = tuple(inputs[r] for r in sorted(reads))
            hit = self._memo.get(key)
            if hit is not None and hit[0] == stamp:
                out.append(hit[1])
                continue
            obs = part(ctx, th)
            self._memo[key] = (stamp, obs)
            out.append(obs)
        self._memo_used.update((mod.SPEC.id, i, which) for i in range(len(parts)))
        return tuple(out)

    def _quiet(self, key: tuple[str, int], part: list[Observation]) -> Judged | None:
        """The summary of a diagnosis part's observations when they are the very list it gave last
        time (not judged again), so its ok subjects need not be walked one by one; None otherwise."""
        last = self._judged.get(key)
        if last is None or last.part is not part:
            self._judged[key] = Judged(part)
            return None
        if not last.summarized:
            last.summarize()
        return last

    @staticmethod
    def _bulk(
        part: list[Observation],
        tracks: Iterable[Track],
        done: set[str],
        reused: list[dict[str, int]],
        ev: dict[str, int],
        cnt: list[int],
    ) -> list[Observation] | None:
        """A part judged afresh, its ok subjects without a track taken as a whole: counted, stated
        ok and marked judged, in the observations' order. Returns the observations left to step
        (not ok, unjudgeable or tracked), or None when a subject repeats or was judged by an
        earlier part (the first observation wins: they go one by one)."""
        keys = [o.key for o in part]
        fresh = set(keys)
        if (
            len(fresh) != len(keys)
            or not fresh.isdisjoint(done)
            or any(not fresh.isdisjoint(d) for d in reused)
        ):
            return None
        keep = {t.key for t in tracks}
        loud = (
            [o for o in part if o.level != 0 or o.key in keep] if keep else [o for o in part if o.level != 0]
        )
        ev.update(dict.fromkeys(keys, 0))  # every subject in order; the loud ones' states follow
        cnt[0] += len(keys) - len(loud)
        done |= fresh
        return loud

    def _keep_out_evidence(self, did: str, parts: list[list[Observation]]) -> None:
        """The memo keeps a part's ok observations of subjects with no track as subject and level:
        while the part is reused, that is all the engine reads of them (a track starts only from a
        level above ok, which a reused part cannot give). A subject that has a track keeps its
        observation whole."""
        keep = {k for d, k in self._tracks if d == did}
        for part in parts:
            for i, o in enumerate(part):
                if o.level == 0 and o.evidence and o.key not in keep:
                    part[i] = quieted(o)

    def _evaluate(self) -> None:
        now = self._now
        ctx = Context(now, self._ontap, self._hosts, self._history, self._cfg.backend_iops_capacity)
        inputs = self._inputs(ctx)
        self._memo_used = set()
        seen: set[tuple[str, str]] = set()
        counts = {mod.SPEC.id: [0, 0, 0] for mod in MODULES}
        evaluated: dict[str, dict[str, int]] = {mod.SPEC.id: {} for mod in MODULES}
        by_id: dict[str, list[Track]] = {}
        for t in self._tracks.values():
            by_id.setdefault(t.id, []).append(t)
        for mod in MODULES:
            did = mod.SPEC.id
            try:
                parts = self._observe(mod, ctx, self._th, "strict", inputs)
                # relaxed thresholds only hold a state up: judge with them only when one is up
                held = any(t.state > 0 for t in by_id.get(did, ()))
                relaxed = (
                    {
                        o.key: o.level
                        for part in self._observe(mod, ctx, self._relaxed, "relaxed", inputs)
                        for o in part
                    }
                    if held
                    else {}
                )
            except Exception:  # one broken diagnosis must not blind the others
                log.exception("diagnosis %s failed", did)
                seen.update(k for k in self._tracks if k[0] == did)
                for k, t in self._tracks.items():
                    if k[0] == did:
                        counts[did][t.state] += 1
                        evaluated[did][k[1]] = t.state
                continue
            sustain, exit_ = self._windows[did]
            ev = evaluated[did]
            cnt = counts[did]
            done: set[str] = set()  # this diagnosis's subjects judged so far: the first observation wins
            reused: list[dict[str, int]] = []  # subjects of the parts taken whole, below
            fresh: list[list[Observation]] = []  # the parts judged for the first time
            for i, part in enumerate(parts):
                todo: Iterable[Observation] = part
                judged = self._quiet((did, i), part)
                if judged is None:
                    fresh.append(part)
                if judged is not None and not any(judged.template.keys() & d for d in (done, *reused)):
                    # the same observations as last time: the ok subjects without a track stay ok and
                    # untracked (a count and a state); only the others step their tracks
                    first = judged.first
                    ev.update(judged.template)
                    tracked = [first[t.key] for t in by_id.get(did, ()) if t.key in judged.quiet]
                    cnt[0] += len(judged.quiet) - len(tracked)
                    todo = judged.loud + tracked
                    reused.append(judged.template)
                elif (loud := self._bulk(part, by_id.get(did, ()), done, reused, ev, cnt)) is not None:
                    todo = loud
                for o in todo:
                    sk = o.key
                    if todo is part and (sk in done or any(sk in d for d in reused)):
                        continue
                    done.add(sk)
                    k = (did, sk)
                    seen.add(k)
                    tr = self._tracks.get(k)
                    if tr is None:
                        if not o.level:  # ok (or unjudgeable) with nothing pending: no track to keep
                            if o.level is not None:
                                cnt[0] += 1
                                ev[sk] = 0
                            else:
                                ev.pop(sk, None)
                            continue
                        tr = self._tracks[k] = Track(did, sk, o.labels)
                    tr.step(now, o.level, relaxed.get(sk, o.level), sustain, exit_)
                    tr.last_seen = now
                    if o.level is not None:
                        tr.observe(o)
                    cnt[tr.state] += 1
                    ev[sk] = tr.state
                    if tr.idle:
                        del self._tracks[k]
            if fresh:
                self._keep_out_evidence(did, fresh)
        for k, tr in list(self._tracks.items()):
            if k in seen:
                continue
            if now - tr.last_seen > self._hold(source_of(tr.labels)):
                del self._tracks[k]  # missing for longer than its source may be silent: gone
                continue
            # missing from this evaluation only: its state (and series) holds, its windows wait
            counts[tr.id][tr.state] += 1
            evaluated[tr.id][tr.key] = tr.state
        # a memo not used now (relaxed thresholds no longer needed) must not keep old views alive
        for key in [k for k in self._memo if k not in self._memo_used]:
            del self._memo[key]
        self._progress = background_operation_impact.progress_samples(ctx)
        self._attribution = attribute(
            (Seen(t.id, t.key, t.labels, t.state, t.level, t.score) for t in self._tracks.values()),
            REGISTRY,
            ctx,
        )
        self._counts = counts
        self._evaluated = evaluated
        tracks = sorted(self._tracks.values(), key=lambda t: (-t.state, -t.score, t.id, t.key))
        self._active = [t for t in tracks if t.state > 0]
        for t in self._active:
            path = resolve_path(t.labels, ctx)
            where = {k: path[k] for k in ("node", "aggregate") if path[k] and not t.labels.get(k)}
            if (t.id, t.key) in seen:  # a missing subject keeps where it was last seen
                t.location = where
        self._waterfalls = waterfall.exposed(ctx, self._active, self._cfg.waterfall_top_n)
        wf_of = {key: wf for key, _, wf in self._waterfalls}
        self._findings = [finding(t, self._attribution, wf_of.get(t.key)) for t in self._active]
        self._metrics = None

    # ------------------------------------------------------------ reading
    def active_tracks(self) -> tuple[Track, ...]:
        """The state machines behind the current findings: their last judged level and time, which the
        offline report uses to end a finding where its condition last held, not where its exit window ends."""
        return tuple(self._active)

    def findings(self) -> list[dict[str, Any]]:
        """Current non-ok findings in the /diagnoses JSON shape, worst first.

        Each evaluation builds new findings and never touches them again, so a reader gets them
        without a deep copy (``analyze`` reads them after each of thousands of evaluations): the
        list and each finding are the reader's own; the values inside are shared, read them only."""
        return [dict(f) for f in self._findings]

    def metrics(self) -> tuple[Metric, ...]:
        """The engine's families, built on first read after an update (``analyze`` feeds many
        updates and reads once; a server renders once per poll, not per scrape)."""
        with self._lock:
            if self._metrics is None:
                self._metrics = build_metrics(
                    self._counts,
                    self._active,
                    self._attribution,
                    self._th,
                    self._windows,
                    self._progress,
                    self._waterfalls,
                )
            return self._metrics

    def judged(self) -> Mapping[str, Mapping[str, int]]:
        """Every diagnosis's judged subjects and their states at the last evaluation, read-only and
        uncopied (each evaluation builds a new one): what ``subject_states`` gives, for all at once."""
        return MappingProxyType(self._evaluated)

    def subject_states(self, diagnosis: str) -> dict[str, int]:
        """State of every subject the diagnosis judged at the last update, ok ones included
        (they have no series, so this is how ``analyze`` and tests tell ok from unjudged)."""
        with self._lock:
            return dict(self._evaluated.get(diagnosis, {}))

    def attribution(self) -> Attribution:
        """Causes of each symptom and the incident of each finding, as of the last update."""
        with self._lock:
            return copy.deepcopy(self._attribution)

    def thresholds(self) -> dict[str, dict[str, float]]:
        return copy.deepcopy(self._th)
