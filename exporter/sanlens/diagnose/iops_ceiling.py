"""What lun_iops_ceiling and volume_iops_ceiling share: version ceilings, thresholds and the judgement.

NetApp's LUN/volume count study: a single LUN and a single volume each top out
near an IOPS ceiling that ONTAP 9.9.1 raised. The version comes from the
cluster's ``OntapView.version``; unknown means the newer ceiling, to avoid false
alarms. Both diagnoses judge IOPS / ceiling against the same warning and
critical fractions; only the subject, the ceilings and the advice differ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

from sanlens.diagnose.numeric import clamp01
from sanlens.diagnose.spec import SRC_LUN_STUDY, Threshold
from sanlens.model import OntapVersion

ORDERED = (("warning_fraction", "critical_fraction"), ("ceiling_pre_9_9_1_iops", "ceiling_iops"))
SEVERITY = {1: "IOPS >= 80 % of the ceiling", 2: "IOPS >= the ceiling"}


def thresholds(pre: float, post: float, most: float) -> tuple[Threshold, ...]:
    """The ceilings before and from ONTAP 9.9.1 (valid up to ``most``) and the fractions that fire."""
    return (
        Threshold("ceiling_pre_9_9_1_iops", pre, "ops/s", SRC_LUN_STUDY, 1000.0, most, "none"),
        Threshold("ceiling_iops", post, "ops/s", SRC_LUN_STUDY, 1000.0, most, "none"),
        Threshold("warning_fraction", 0.8, "ratio", SRC_LUN_STUDY, 0.1, 2.0, "above", "IOPS / ceiling"),
        Threshold("critical_fraction", 1.0, "ratio", SRC_LUN_STUDY, 0.1, 2.0, "above", "IOPS / ceiling"),
    )


def older(version: OntapVersion | None) -> bool:
    """A known ONTAP release before 9.9.1 (the lower ceiling; an upgrade raises it)."""
    return version is not None and not version.at_least(9, 9, 1)


def ceiling(version: OntapVersion | None, t: Mapping[str, float]) -> float:
    """The version ceiling of ``t``: ``ceiling_pre_9_9_1_iops`` before 9.9.1, else ``ceiling_iops``."""
    return t["ceiling_pre_9_9_1_iops"] if older(version) else t["ceiling_iops"]


def release_words(version: OntapVersion | None) -> str:
    """The release a ceiling belongs to, as the advice says it."""
    return f"ONTAP {version}" if version else "an ONTAP of unknown version"


class Judgement(NamedTuple):
    """A tuple, not a frozen dataclass: one is made per LUN and volume at every evaluation."""

    level: int | None
    score: float
    ceiling: float
    fraction: float | None
    spread: int  # subjects that keep each one 10 % under the warning fraction


def judge(
    iops: float | None, version: OntapVersion | None, t: Mapping[str, float], escalate: bool = False
) -> Judgement:
    """IOPS against the version ceiling; ``escalate`` makes a warning critical (write-heavy volumes)."""
    cap = ceiling(version, t)
    if iops is None:
        return Judgement(None, 0.0, cap, None, 0)
    frac = iops / cap
    level = 2 if frac >= t["critical_fraction"] else 1 if frac >= t["warning_fraction"] else 0
    if level == 1 and escalate:
        level = 2
    spread = math.ceil(iops / (t["warning_fraction"] * cap * 0.9)) if level else 0
    return Judgement(level, clamp01(frac), cap, frac, spread)
