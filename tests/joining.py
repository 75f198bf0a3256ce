"""Sources polled through the join stage, as the runtime's pipeline polls them (no tests here).

A source returns its snapshot unjoined: an ONTAP one with its LUN identities, a host one with
each disk's join keys. Tests that poll sources by hand and read joined host disks wrap them here.
"""

from __future__ import annotations

from typing import Any

from sanlens.join.directory import LunDirectory
from sanlens.join.stage import JoinStage
from sanlens.model import Snapshot


class Joined:
    """``source`` whose every poll goes through ``join`` (the source's other attributes pass through)."""

    def __init__(self, source: Any, join: JoinStage) -> None:
        self.__dict__["source"], self.__dict__["join"] = source, join

    def poll(self) -> Snapshot:
        return self.join.apply(self.source.poll())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.source, name, value)


def joined(source: Any, directory: LunDirectory) -> Any:
    """``source`` polled through a join stage over ``directory``."""
    return Joined(source, JoinStage(directory))
