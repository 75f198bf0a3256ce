"""What the engine found over the whole capture, not only at its last interval.

Live, ``/diagnoses`` shows what is wrong now. A capture is history: a disk that was
critical for an hour in the middle of the log matters even if it recovered. After
every update the recorder folds the engine's current findings into one record per
(diagnosis, subject) - first ``since``, last time seen active, worst severity with
its evidence - and notes every subject each diagnosis judged (ok ones included), so
the report can tell "judged, healthy" from "could not be judged".

A finding ends, in the report, at the last interval its condition held: the last
time its subject was judged at the finding's level or above. The engine keeps a
finding up for its exit window after that (hysteresis, so a flapping signal is one
finding, not many); that window decides *that* it ended, not *when*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import IDS
from sanlens.diagnose.track import Track
from sanlens.model import iso_utc


@dataclass
class Episode:
    finding: dict[str, Any]  # the engine's finding at its worst
    since: str | None
    until: float  # the last interval its condition held (judged at its level or above)
    active_at_end: bool = False


@dataclass
class Recorder:
    episodes: dict[tuple[str, str], Episode] = field(default_factory=dict)
    judged: dict[str, set[str]] = field(default_factory=lambda: {d: set() for d in IDS})
    updates: int = 0
    screened: int = 0  # updates a screen showed calm, stored without judging
    _noted: dict[str, list[str]] = field(default_factory=dict, repr=False)  # last list noted, by diagnosis

    def observe(self, engine: Engine, now: float) -> None:
        self.updates += 1
        judged = engine.judged()
        for did, subjects in self.judged.items():
            subjects.update(judged.get(did, ()))
        tracks = _tracks(engine)
        for f in engine.findings():
            key = (str(f["id"]), _subject_key(f))
            held = _held(tracks.get(key), int(f.get("state", 0)), now)
            ep = self.episodes.get(key)
            if ep is None:
                self.episodes[key] = Episode(f, f.get("since"), now if held is None else held)
                continue
            if int(f.get("state", 0)) > int(ep.finding.get("state", 0)) or (
                f.get("state") == ep.finding.get("state") and f.get("score", 0) > ep.finding.get("score", 0)
            ):
                ep.finding = f
            if held is not None:
                ep.until = max(ep.until, held)
            if ep.since is None:
                ep.since = f.get("since")

    def note(self, judged: dict[str, list[str]], update: bool = True) -> None:
        """Subjects a screen saw judged ok: of an update it alone judged (every subject ok, nothing
        pending), or, ``update`` False, of the disks it kept out of the engine's view."""
        if update:
            self.updates += 1
            self.screened += 1
        last = self._noted
        for did, subjects in judged.items():
            if last.get(did) is not subjects:  # a screen shares one list among equal intervals
                self.judged[did].update(subjects)
                last[did] = subjects

    def finish(self, engine: Engine) -> list[dict[str, Any]]:
        """Every finding of the run, worst first, each with ``since``, ``until`` and ``active_at_end``."""
        active = {(str(f["id"]), _subject_key(f)) for f in engine.findings()}
        out = []
        for key, ep in self.episodes.items():
            f = dict(ep.finding)
            f["since"] = ep.since
            f["until"] = iso_utc(ep.until)
            f["active_at_end"] = key in active
            out.append(f)
        out.sort(
            key=lambda f: (-int(f.get("state", 0)), -float(f.get("score", 0)), f["id"], str(f["subject"]))
        )
        return out


def _subject_key(f: dict[str, Any]) -> str:
    subj = f.get("subject") or {}
    return "/".join(f"{k}={v}" for k, v in sorted(subj.items())) if isinstance(subj, dict) else str(subj)


def _tracks(engine: Engine) -> dict[tuple[str, str], Track]:
    """The state machines of the engine's findings (its active tracks), keyed as findings are here;
    none from an engine that keeps no tracks (its findings then hold while they are reported)."""
    tracks = getattr(engine, "active_tracks", None)  # a test's stand-in engine may keep none
    active: tuple[Track, ...] = tracks() if callable(tracks) else ()
    return {(t.id, _subject_key({"subject": {k: v for k, v in t.labels.items() if v}})): t for t in active}


def _held(track: Track | None, state: int, now: float) -> float | None:
    """When a finding's condition last held, as of ``now``: the time its subject was last judged at the
    finding's level or above (its ``state``); None while the engine holds it up on its exit window only.
    Without its track (not expected) the finding counts as holding ``now``."""
    if track is None:
        return now
    return min(now, track.last_seen) if track.level >= state else None
