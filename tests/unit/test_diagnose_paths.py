"""The SAN path diagnoses: paths, LUN state and space, FC ports, failed disks, degraded aggregates."""

from __future__ import annotations

from tests.builders import DISK_KEY, LUN_PATH, T0, lun, mapped, now_state, ontap, vol

from sanlens.model import AggregateInfo, DiskStats, FcPortStats, HostView

LUN_KEY = f"c1/s1/{LUN_PATH.lstrip('/')}"


def host(**kw: object) -> HostView:
    return HostView("sql01", T0, 15.0, (mapped(**kw),))


def test_fewer_active_paths_than_configured_pages() -> None:
    assert now_state("host_path_loss", DISK_KEY, host(observed_paths=1, configured_paths=2)) == 2
    assert now_state("host_path_loss", DISK_KEY, host(observed_paths=2, configured_paths=2)) == 0
    assert now_state("host_path_loss", DISK_KEY, host(observed_paths=4, configured_paths=2)) == 0
    # a host that does not report its paths is not judged
    assert now_state("host_path_loss", DISK_KEY, host(observed_paths=None, configured_paths=2)) is None


def test_offline_lun_is_critical_and_a_thin_lun_in_a_full_volume_a_warning() -> None:
    full, roomy = vol(size_bytes=100e9, available_bytes=3e9), vol(size_bytes=100e9, available_bytes=30e9)
    cases = [
        (lun(state="offline", thin=False), roomy, 2),
        (lun(state="space-error", thin=True), full, 2),
        (lun(state="online", thin=True), full, 1),  # 97 % used >= 95 %
        (lun(state="online", thin=False), full, 0),  # space-reserved: ONTAP keeps its blocks
        (lun(state="online", thin=True), roomy, 0),
    ]
    for lu, v, want in cases:
        assert now_state("lun_not_online", LUN_KEY, ontap(0, luns=(lu,), volumes=(v,))) == want, (lu, v)


def test_a_port_that_lost_its_link_is_down_but_an_uncabled_or_disabled_one_is_not() -> None:
    def port(state: str, enabled: bool = True) -> FcPortStats:
        return FcPortStats("c1", "n1", "0d", 32.0, state, enabled=enabled)

    key = "c1/n1/0d"
    assert now_state("fc_port_down", key, ontap(0, fc_ports=(port("link_disconnected"),))) == 2
    assert now_state("fc_port_down", key, ontap(0, fc_ports=(port("offlined_by_system"),))) == 2
    assert now_state("fc_port_down", key, ontap(0, fc_ports=(port("link_not_connected"),))) == 0
    assert now_state("fc_port_down", key, ontap(0, fc_ports=(port("link_disconnected", enabled=False),))) == 0
    assert now_state("fc_port_down", key, ontap(0, fc_ports=(port("online"),))) == 0


def test_broken_disk_is_a_warning() -> None:
    broken = DiskStats("c1", "1.0.9", container="broken", state="broken")
    spare = DiskStats("c1", "1.0.8", container="spare", state="spare")
    assert now_state("disk_failed", "c1/1.0.9", ontap(0, disks=(broken, spare))) == 1
    assert now_state("disk_failed", "c1/1.0.8", ontap(0, disks=(broken, spare))) == 0


def test_degraded_aggregate_fires_only_when_nothing_rebuilds_it() -> None:
    def aggr(**kw: object) -> AggregateInfo:
        return AggregateInfo("c1", "aggr1", node="n1", **kw)  # type: ignore[arg-type]

    key = "c1/aggr1"
    assert (
        now_state(
            "aggregate_degraded", key, ontap(0, aggregates=(aggr(state="online", degraded_raid_groups=1),))
        )
        == 1
    )
    rebuilding = aggr(state="online", degraded_raid_groups=1, reconstructing=True)
    assert now_state("aggregate_degraded", key, ontap(0, aggregates=(rebuilding,))) == 0
    assert now_state("aggregate_degraded", key, ontap(0, aggregates=(aggr(state="offline"),))) == 1
    assert now_state("aggregate_degraded", key, ontap(0, aggregates=(aggr(state="online"),))) == 0


def test_an_offline_lun_explains_the_latency_of_its_host_disk() -> None:
    """Attribution across the new causes: the host disk's latency joins its LUN's incident."""
    from tests.builders import engine, feed, hostview

    e = engine(sustain_scale=0.0)
    # 40 IOPS at 0.5 s keep 20 I/Os outstanding: under Q_eff, so no queue finding competes
    slow = mapped(read_iops=30.0, write_iops=10.0, read_latency_s=0.5, write_latency_s=0.5, idle_ratio=0.1)
    feed(e, 0, 120, 15, lambda t: [ontap(t, luns=(lun(state="offline"),)), hostview(t, slow)])
    inc = e.attribution().incidents
    assert inc[("lun_not_online", LUN_KEY)] == ("lun_not_online:c1/s1/v1", "cause")
    assert inc[("latency_slo", DISK_KEY)] == ("lun_not_online:c1/s1/v1", "symptom")
