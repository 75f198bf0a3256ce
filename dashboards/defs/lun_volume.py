"""sanlens / LUNs and volumes: how close each LUN and volume is to its ONTAP version's IOPS ceiling."""

from __future__ import annotations

from dataclasses import dataclass

from mixin.config import MixinConfig

from ..lib import Json
from ..lib.dashboard import Layout, TopVar, Var, chained, dashboard
from ..lib.panels import DASHED, fixed, instant, panel, series, target
from ..lib.promql import RW, WRITES, mbps, per_op, sel, srate, times_configured, version_ceiling
from ..lib.thresholds import bands, data_latency, kilo, ms, pct

NAME = "lun-volume"


@dataclass(frozen=True)
class Kind:
    """LUNs and volumes get the same four panels; this is all that differs between them."""

    title: str  # "LUN", "Volume"
    keys: str  # the labels that name one subject
    filters: str  # the dashboard variables its panels filter on
    diagnosis: str
    ceiling: str  # the evidence that carries the version ceiling
    ops: str = ""  # narrows the latency divisor (LUNs: reads and writes only)

    @property
    def low(self) -> str:
        return self.title.lower()

    @property
    def legend(self) -> str:
        return f"{{{{{self.keys.rsplit(', ', 1)[-1]}}}}}"


KINDS = (
    Kind("LUN", "cluster, svm, volume, lun", "cluster, svm, lun", "lun_iops_ceiling", "lun_ceiling_iops", RW),
    Kind(
        "Volume",
        "cluster, svm, volume",
        "cluster, svm, volume",
        "volume_iops_ceiling",
        "volume_ceiling_iops",
        RW,
    ),
)


def subject(cfg: MixinConfig, lay: Layout, k: Kind) -> None:
    def th(name: str, diagnosis: str = k.diagnosis) -> float:
        return cfg.threshold(diagnosis, name)

    matchers = sel(*k.filters.split(", "))
    metric = f"sanlens_ontap_{k.low}"
    iops = srate(k.keys, f"{metric}_ops_total", matchers)
    ceiling = version_ceiling(k.diagnosis, sel("cluster"))
    warn = pct(th("warning_fraction"))
    lay.row(f"{k.title}s")
    lay.add(
        panel(
            "timeseries",
            f"{k.title} IOPS vs version ceiling",
            f"{k.title} IOPS against {warn} of the ONTAP-version ceiling ({kilo(th('ceiling_pre_9_9_1_iops'))} "
            f"before 9.9.1, {kilo(th('ceiling_iops'))} from 9.9.1) that {k.diagnosis} uses; the configured "
            "warning fraction scales the dashed line.",
            target(iops, k.legend),
            target(
                times_configured(f"({ceiling})", k.diagnosis, "warning_fraction"),
                f"{warn} of ceiling {{{{cluster}}}}",
            ),
            unit="iops",
            min_=0,
            overrides=[series(f"^{warn} of ceiling.*", DASHED, fixed("orange"))],
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "bargauge",
            f"{k.title} IOPS as a share of its ceiling",
            f"Now: {k.low} IOPS / version ceiling. Orange from {warn} (warning), red from "
            f"{pct(th('critical_fraction'))} (critical) of {k.diagnosis}.",
            instant(f"{iops} / on (cluster) group_left () ({ceiling})", k.legend),
            unit="percentunit",
            thresholds=bands(cfg, k.diagnosis, "warning_fraction", "critical_fraction"),
            min_=0,
            max_=1,
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            f"{k.title} latency",
            f"ONTAP {k.low} latency per op (Σ latency / Σ ops, only where at least {cfg.latency_min_iops:g} "
            "ops/s ran). Dashed: "
            f"{ms(th('data_warning_seconds', 'latency_slo'))} warning and "
            f"{ms(th('data_critical_seconds', 'latency_slo'))} critical (data class).",
            target(
                per_op(k.keys + ", op", metric, matchers, k.ops, min_iops=cfg.latency_min_iops),
                k.legend + " {{op}}",
            ),
            unit="s",
            thresholds=data_latency(cfg),
            min_=0,
        ),
        12,
        8,
    )
    share = "volume_iops_ceiling", "write_share"
    lay.add(
        panel(
            "timeseries",
            f"{k.title} write share",
            f"Writes / all ops per {k.low}. From {pct(cfg.threshold(*share))} write share, volume_iops_ceiling "
            "recommends a second volume for the workload.",
            target(f"{srate(k.keys, f'{metric}_ops_total', matchers + WRITES)} / {iops}", k.legend),
            unit="percentunit",
            thresholds=bands(cfg, *share),
            min_=0,
            max_=1,
        ),
        12,
        8,
    )

    lay.add(
        panel(
            "timeseries",
            f"{k.title} throughput",
            f"Bytes per second per {k.low}, reads and writes together.",
            target(mbps(k.keys, metric, matchers), k.legend),
            unit="Bps",
            min_=0,
        ),
        24,
        7,
    )


# The worst first: the highest latency (min-ops guarded) or, where none is computed, the most IOPS.
RANK = (
    "max by ({name}) ({rule}:sanlens_ontap_{kind}_latency_seconds:mean5m{{{sel}}}) "
    "or max by ({name}) ({rule}:sanlens_ontap_{kind}_ops:rate5m{{{sel}}}) * 0"
)


def build(cfg: MixinConfig) -> Json:
    lay = Layout()
    for k in KINDS:
        subject(cfg, lay, k)
    return dashboard(
        cfg,
        NAME,
        "sanlens / LUNs and volumes",
        "How close each LUN and volume is to the per-object IOPS ceiling of its ONTAP version, with its latency, "
        "write share and throughput: the worst $topn volumes and LUNs.",
        chained(
            Var("svm", "SVM", "sanlens_ontap_volume_info"),
            TopVar(
                "volume",
                "Volume (worst latency)",
                RANK.format(name="volume", rule="volume", kind="volume", sel="{sel}"),
            ),
            TopVar(
                "lun",
                "LUN (worst latency)",
                RANK.format(name="lun", rule="lun", kind="lun", sel="{sel}"),
                uses=("cluster", "svm"),  # the worst LUNs of the SVM, not only of the worst volumes
            ),
            top_n=cfg.top_n,
        ),
        lay,
    )
