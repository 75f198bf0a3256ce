"""PromQL fragments the dashboards share, so every panel filters, rates and divides the same way."""

from __future__ import annotations

RI = "$__rate_interval"
RW = ', op=~"read|write"'  # ONTAP LUN latency counts reads and writes only; "other" ops would dilute it
WRITES = ', op="write"'
NOT_IDLE = ', domain!="idle"'


def sel(*names: str, or_blank: bool = False) -> str:
    """Matchers on dashboard variables of the same name; ``or_blank`` also keeps series without the label."""
    if or_blank:
        return ", ".join(f'{n}=~"${n}|"' for n in names)
    return ", ".join(f'{n}=~"${n}"' for n in names)


def rate(metric: str, matchers: str) -> str:
    return f"rate({metric}{{{matchers}}}[{RI}])"


def srate(by: str, metric: str, matchers: str) -> str:
    """sum by (...) (rate(...)): per-subject rates with the op or other labels folded away."""
    return f"sum by ({by}) ({rate(metric, matchers)})"


def per_op(by: str, prefix: str, matchers: str, ops: str = "", *, min_iops: float) -> str:
    """Average latency per op: Σ latency / Σ ops of one counter family (``ops`` narrows the divisor),
    only where at least ``min_iops`` ops ran: an idle subject's one slow op draws no spike."""
    return (
        f"{srate(by, prefix + '_latency_seconds_total', matchers)} / "
        f"({srate(by, prefix + '_ops_total', matchers + ops)} >= {min_iops:g})"
    )


def mbps(by: str, prefix: str, matchers: str) -> str:
    """Throughput (bytes per second, read and write together) of one counter family."""
    return srate(by, prefix + "_bytes_total", matchers)


HOST_DISK_INFO = "sanlens_host_disk_info"
HOST_LUN = "cluster, svm, volume, lun"


def host_lun(expr: str, info_matchers: str, labels: str = HOST_LUN) -> str:
    """A host-disk expression (labels ``host, disk[, op]``; parenthesise a compound one) for the disks
    whose LUN matches ``info_matchers``, with the LUN's ``labels`` joined from sanlens_host_disk_info:
    the counters carry no LUN identity, so a mapping change never breaks their rate(). The info side
    comes first (group_right), so a rate stays last, where the min-ops guard can be seen."""
    return (
        f"group by (host, disk, {labels}) ({HOST_DISK_INFO}{{{info_matchers}}}) "
        f"* on (host, disk) group_right ({labels}) {expr}"
    )


def host_srate(by: str, metric: str, matchers: str, info_matchers: str) -> str:
    """sum by (...) of a host-disk counter's rate, over the disks whose LUN matches ``info_matchers``."""
    return f"sum by ({by}) ({host_lun(rate(metric, matchers), info_matchers)})"


def host_per_op(by: str, matchers: str, info_matchers: str, *, min_iops: float) -> str:
    """Host-disk latency per op (Σ latency / Σ ops) by LUN labels too, only where ``min_iops`` ops ran."""
    lat = host_srate(by, "sanlens_host_disk_latency_seconds_total", matchers, info_matchers)
    ops = host_srate(by, "sanlens_host_disk_ops_total", matchers, info_matchers)
    return f"{lat} / ({ops} >= {min_iops:g})"


def host_q_eff(matchers: str) -> str:
    """Q_eff per host disk: queue depth x the paths that carry I/O (ALUA Active/Optimized where the host
    reports path states, else the active paths)."""
    paths = f"(sanlens_host_disk_optimized_paths{{{matchers}}} or sanlens_host_disk_paths{{{matchers}}})"
    return f"sanlens_host_disk_queue_depth{{{matchers}}} * {paths}"


def top(expr: str) -> str:
    """At most the worst ``$topn`` series of ``expr``: a panel over many subjects stays readable."""
    return f"topk($topn, {expr})"


def evidence(by: str, diagnosis: str, name: str, matchers: str) -> str:
    """A value the diagnosis engine computed (sanlens_diagnosis_evidence), so a panel shows its very number.
    ``diagnosis`` '' takes it from whichever diagnosis gives it; ``name`` may be an alternation (a|b)."""
    which = f'diagnosis="{diagnosis}", ' if diagnosis else ""
    op = "=~" if "|" in name else "="
    return f'max by ({by}) (sanlens_diagnosis_evidence{{{which}evidence{op}"{name}", {matchers}}})'


# ONTAP releases before 9.9.1, as sanlens_ontap_cluster_info's version label spells them (9.8.0, 9.9.0).
BEFORE_9_9_1 = r"(0|1|2|3|4|5|6|7|8|9\\.(0|1|2|3|4|5|6|7|8)|9\\.9\\.0)(\\..*)?"


def version_ceiling(diagnosis: str, matchers: str) -> str:
    """Per cluster, the IOPS ceiling of its ONTAP version, from the exporter's live thresholds: it holds
    for every subject, ok or not (the diagnosis's own evidence exists only while a finding is)."""
    info = 'max by (cluster) (sanlens_ontap_cluster_info{%s, version%s"%s"})'
    pre = info % (matchers, "=~", BEFORE_9_9_1)
    new = info % (matchers, "!~", BEFORE_9_9_1)
    return (
        f"({pre} * on () group_left () {configured(diagnosis, 'ceiling_pre_9_9_1_iops')}) or "
        f"({new} * on () group_left () {configured(diagnosis, 'ceiling_iops')})"
    )


def configured(diagnosis: str, name: str) -> str:
    """The exporter's live threshold (sanlens_diagnosis_threshold): a site's override, not the default."""
    return f'max(sanlens_diagnosis_threshold{{diagnosis="{diagnosis}", threshold="{name}"}})'


def times_configured(expr: str, diagnosis: str, name: str) -> str:
    """expr scaled by a live threshold (a fraction of a ceiling or of a queue)."""
    return f"{expr} * on () group_left () {configured(diagnosis, name)}"


# ------------------------------------------------------------------ NetApp Harvest's series
# Clusters read through Harvest (source: prometheus) have Harvest's cooked gauges instead of sanlens's
# counters: rates per second, latencies in microseconds per op.
HARVEST_US = 1e-6
LUN_LATENCY_PAIRS = (("lun_avg_read_latency", "lun_read_ops"), ("lun_avg_write_latency", "lun_write_ops"))


def harvest_sum(by: str, matchers: str, *families: str) -> str:
    """Σ of Harvest gauges that share one label set (the reads and writes of one subject)."""
    return f"sum by ({by}) ({' + '.join(f'{f}{{{matchers}}}' for f in families)})"


def harvest_latency(by: str, matchers: str, pairs: tuple[tuple[str, str], ...], *, min_iops: float) -> str:
    """Latency per op in seconds: Harvest's per-op averages weighted by their ops, only where ``min_iops``
    ops ran (an idle subject's one slow op draws no spike)."""
    num = " + ".join(f"{lat}{{{matchers}}} * {ops}{{{matchers}}}" for lat, ops in pairs)
    ops = harvest_sum(by, matchers, *(o for _, o in pairs))
    return f"sum by ({by}) ({num}) / ({ops} >= {min_iops:g}) * {HARVEST_US:g}"
