"""`sanlens plan`: the white paper's worked examples and the LUN sizing arithmetic.

Expected values are recomputed here from the published figures, never read
back from the code under test.
"""

from __future__ import annotations

import json
import math

import pytest

from sanlens.cli import main
from sanlens.model import ontap_version_option
from sanlens.plan.luns import plan_luns
from sanlens.plan.operations import load_profile, plan_duration


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["plan", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------- white paper examples
def test_expansion_100_to_200gb_asap_matches_white_paper(capsys: pytest.CaptureFixture[str]) -> None:
    # 100 GB copied at 170 MB/s, then the added 100 GB initialised at 12 MB/s.
    expected_s = 100 * 1024 / 170 + 100 * 1024 / 12
    out = run_json(capsys, "migrate", "--size-gb", "100", "--target-size-gb", "200", "--priority", "asap")
    assert out["seconds"] == pytest.approx(expected_s, rel=1e-9)
    assert out["hours"] == pytest.approx(2.53, abs=0.015)  # the paper says ≈ 2.53 h
    assert [p["phase"] for p in out["phases"]] == ["migrate", "expansion"]


def test_sata_raid6_500gb_asap_rebuild_matches_white_paper(capsys: pytest.CaptureFixture[str]) -> None:
    # ASAP band 73-83 MB/s -> midpoint 78; SATA takes 1.33x as long; RAID 6 rebuilds both parities (x2).
    expected_s = 500 * 1024 / ((73 + 83) / 2) * 1.33 * 2
    out = run_json(
        capsys, "rebuild", "--size-gb", "500", "--priority", "asap", "--raid", "r6", "--disk-type", "sata"
    )
    assert out["seconds"] == pytest.approx(expected_s, rel=1e-9)
    assert out["hours"] == pytest.approx(4.84, rel=0.01)  # the paper says ≈ 4.84 h
    lo, hi = out["range_seconds"]
    assert lo == pytest.approx(500 * 1024 / 83 * 1.33 * 2) and hi == pytest.approx(500 * 1024 / 73 * 1.33 * 2)


@pytest.mark.parametrize(
    ("priority", "rate"), [("low", 0.9), ("medium", 1.6), ("high", 3.4), ("asap", 170.0)]
)
def test_migrate_rates_by_priority(priority: str, rate: float) -> None:
    plan = plan_duration("migrate", 10, priority)
    assert plan.seconds == pytest.approx(10 * 1024 / rate)


@pytest.mark.parametrize(("priority", "rate"), [("low", 2.0), ("medium", 6.1), ("high", 12.2)])
def test_rebuild_rates_and_fc10k_factor(priority: str, rate: float) -> None:
    assert plan_duration("rebuild", 300, priority, raid="r5", disk_type="fc15k").seconds == pytest.approx(
        300 * 1024 / rate
    )
    assert plan_duration("rebuild", 300, priority, raid="r5", disk_type="fc10k").seconds == pytest.approx(
        300 * 1024 / rate * 1.54
    )


def test_asap_slows_oltp_more_than_low_finishes_faster() -> None:
    times = [plan_duration("rebuild", 100, p).seconds for p in ("low", "medium", "high", "asap")]
    assert times == sorted(times, reverse=True)


def test_profile_override_file_merges_one_key(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("rebuild:\n  rate_mb_s:\n    high: 20\n")
    out = run_json(capsys, "rebuild", "--size-gb", "40", "--priority", "high", "--profile", str(f))
    assert out["seconds"] == pytest.approx(40 * 1024 / 20)
    # other keys keep their defaults
    prof = load_profile(f)
    assert prof["rebuild"]["rate_mb_s"]["low"] == 2.0 and prof["migrate"]["rate_mb_s"]["asap"] == 170.0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("rebuild:\n  rate_mb_s:\n    high: -1\n", "rebuild.rate_mb_s.high"),
        ("rebuild:\n  rate_mb_s:\n    high: fast\n", "rebuild.rate_mb_s.high"),
        ("- a list\n", "mapping"),
        ("rebuild: [\n", "not valid YAML"),
    ],
)
def test_bad_profile_is_a_clear_error(tmp_path, capsys, content: str, needle: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(content)
    assert main(["plan", "rebuild", "--size-gb", "1", "--priority", "high", "--profile", str(f)]) == 2
    assert needle in capsys.readouterr().err


# ------------------------------------------------------------------ plan luns
def test_luns_pre_991_ceiling_dominates(capsys: pytest.CaptureFixture[str]) -> None:
    x, s_ms, q, p = 60_000, 1.0, 32, 2
    out = run_json(
        capsys, "luns", "--iops", str(x), "--write-ratio", "0.2", "--ontap-version", "9.8",
        "--latency-ms", str(s_ms), "--queue-depth", str(q), "--paths", str(p),
    )  # fmt: skip
    n = x * s_ms / 1000  # Little's law: 60 outstanding
    by_queue = math.ceil(n / (0.75 * q * p))  # 60 / 48 -> 2
    by_ceiling = math.ceil(x / (0.8 * 35_000))  # 60000 / 28000 -> 3
    steps = {st["name"]: st["value"] for st in out["steps"]}
    assert steps["outstanding_io"] == pytest.approx(n)
    assert steps["q_eff"] == q * p
    assert steps["luns_by_queue"] == by_queue == 2
    assert steps["luns_by_ceiling"] == by_ceiling == 3
    assert out["result"]["luns"] == 3
    assert out["result"]["volumes"] == 1  # 20 % writes, 60K < 0.8 x 115K
    assert any("9.9.1" in n for n in out["notes"])


def test_luns_post_991_queue_dominates_and_write_heavy_gets_two_volumes(capsys) -> None:
    x, s_ms, q = 60_000, 4.0, 32
    out = run_json(
        capsys, "luns", "--iops", str(x), "--write-ratio", "35%", "--ontap-version", "9.12.1",
        "--latency-ms", str(s_ms), "--queue-depth", str(q),
    )  # fmt: skip
    by_queue = math.ceil(x * s_ms / 1000 / (0.75 * q))  # 240 / 24 = 10
    assert out["result"]["luns"] == by_queue == 10
    # ceil(10/8) = 2 volumes by LUN count; writes >= 30 % also ask for 2
    assert out["result"]["volumes"] == 2 and out["result"]["luns_per_volume"] == 5


def test_luns_volume_ceiling() -> None:
    plan = plan_luns(500_000, 0.1, ontap_version_option("9.10.1"), latency_ms=0.5, queue_depth=64, paths=4)
    assert plan.volumes == math.ceil(500_000 / (0.8 * 240_000))  # 3
    assert plan.luns == max(
        math.ceil(500_000 * 0.0005 / (0.75 * 64 * 4)), math.ceil(500_000 / 80_000), plan.volumes
    )


def test_port_check_over_2048(capsys: pytest.CaptureFixture[str]) -> None:
    hosts, q = 8, 64
    out = run_json(
        capsys, "luns", "--iops", "100000", "--write-ratio", "0.1", "--ontap-version", "9.8",
        "--queue-depth", str(q), "--hosts", str(hosts),
    )  # fmt: skip
    luns = out["result"]["luns"]  # ceil(100000/28000) = 4
    assert luns == 4
    pc = out["port_check"]
    assert pc["worst_case_per_port"] == hosts * luns * q == 2048 and pc["ok"] is True
    out = run_json(
        capsys, "luns", "--iops", "100000", "--write-ratio", "0.1", "--ontap-version", "9.8",
        "--queue-depth", str(q), "--hosts", str(hosts + 1),
    )  # fmt: skip
    pc = out["port_check"]
    assert pc["ok"] is False and pc["max_queue_depth_for_limit"] == 2048 // ((hosts + 1) * 4)


def test_luns_text_shows_reasoning(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "luns", "--iops", "30000", "--write-ratio", "0.3", "--ontap-version", "9.8"]) == 0
    text = capsys.readouterr().out
    assert "Little's law" in text and "2048" in text and "Answer:" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["luns", "--iops", "-1", "--write-ratio", "0.3", "--ontap-version", "9.8"],
        ["luns", "--iops", "1000", "--write-ratio", "1.5", "--ontap-version", "9.8"],
        ["luns", "--iops", "1000", "--write-ratio", "x", "--ontap-version", "9.8"],
        ["luns", "--iops", "1000", "--write-ratio", "0.3", "--ontap-version", "nine"],
        ["luns", "--iops", "1000", "--write-ratio", "0.3", "--ontap-version", "9.8", "--paths", "0"],
        ["rebuild", "--size-gb", "0", "--priority", "asap"],
        ["migrate", "--size-gb", "10", "--priority", "asap", "--target-size-gb", "5"],
    ],
)
def test_bad_input_exits_2_with_message(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(["plan", *argv]) == 2
    assert "error:" in capsys.readouterr().err


def test_bad_choice_is_argparse_exit_2() -> None:
    with pytest.raises(SystemExit) as e:
        main(["plan", "rebuild", "--size-gb", "1", "--priority", "urgent"])
    assert e.value.code == 2


# ------------------------------------------------------------------ whose rates, and ONTAP's words
def test_every_duration_answer_says_the_rates_are_a_clariions_and_what_ontap_has(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_json(capsys, "rebuild", "--size-gb", "100", "--priority", "high")
    first, ontap = out["notes"]
    assert "EMC CLARiiON" in first and "not ONTAP's" in first
    assert "RAID-DP (double parity)" in ontap and "RAID-TEC (triple parity)" in ontap
    assert (
        "storage raid-options modify -node <node> -name raid.reconstruct.perf_impact -value low|medium|high"
        in ontap
    )
    assert main(["plan", "migrate", "--size-gb", "10", "--priority", "low"]) == 0
    text = capsys.readouterr().out
    assert "Note: These rates are an EMC CLARiiON's" in text and "lun move start" in text


def test_ontap_raid_types_need_a_profile_with_their_rates(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "rebuild", "--size-gb", "100", "--priority", "high", "--raid", "raid-dp"]) == 2
    err = capsys.readouterr().err
    assert "no rate for ONTAP's RAID-DP" in err and "--profile" in err
    f = tmp_path / "ontap.yaml"
    f.write_text(
        "profile: ontap-measured\nrebuild:\n  rate_mb_s: {high: 100}\n  raid_factor: {raid-dp: 1.0, raid-tec: 1.5}\n"
    )
    out = run_json(
        capsys, "rebuild", "--size-gb", "100", "--priority", "high", "--raid", "raid-tec", "--profile", str(f)
    )
    assert out["seconds"] == pytest.approx(100 * 1024 / 100 * 1.5)
    assert out["notes"] == []  # a profile of its own: no claim about the CLARiiON's figures


@pytest.mark.parametrize(
    ("iops", "write_ratio", "latency_ms", "queue_depth", "paths", "hosts"),
    [(60_000, 0.35, 1.0, 32, 2, 2), (60_000, 0.2, 1.0, 32, 2, 1), (200_000, 0.1, 0.5, 64, 4, 1),
     (30_000, 0.3, 1.0, 32, 1, 1)],
)  # fmt: skip
def test_the_pre_991_note_gives_the_answer_991_gives(
    iops: float, write_ratio: float, latency_ms: float, queue_depth: int, paths: int, hosts: int
) -> None:
    args = (iops, write_ratio)
    kw = {"latency_ms": latency_ms, "queue_depth": queue_depth, "paths": paths, "hosts": hosts}
    old = plan_luns(*args, ontap_version_option("9.8"), **kw)  # type: ignore[arg-type]
    later = plan_luns(*args, ontap_version_option("9.12.1"), **kw)  # type: ignore[arg-type]
    notes = [n for n in old.notes if "9.9.1" in n]
    if (later.luns, later.volumes) == (old.luns, old.volumes):
        assert notes == []
    else:
        (note,) = notes
        assert f"this plan answers {later.luns} LUN(s) on {later.volumes} volume(s)" in note
