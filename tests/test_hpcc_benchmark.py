"""The HPCC paper's benchmark (issue 43): hpcc_fattree, the settings by port
rate it needs, the schemes as the HPCC project's run script sets them, and
that project's slowdown (cnsim.validate_hpcc; docs/hpcc-benchmark.md)."""

from __future__ import annotations

from pathlib import Path

import cnsim
import polars as pl
import pytest
from cnsim import run
from cnsim.scenario import load
from cnsim.validate import ON_REQUEST, STUDIES
from cnsim.validate_hpcc import SCHEMES, ends, project_slowdowns, scenario


def test_the_fabric_is_the_projects_fat_txt() -> None:
    """fat.txt: 320 hosts at 100 Gbit/s, 20 ToR + 20 aggregation + 16 core
    switches, 160 fabric links at 400 Gbit/s, every link 1 us."""
    cfg = load("hpcc_fattree").engine_config()
    stations = [s for s in cfg["stations"]]
    bridges = [b for b in cfg["bridges"]]
    assert len(stations) == 320
    assert len(bridges) == 56
    rates = sorted(link["rate_bps"] for link in cfg["links"])
    assert rates.count(100_000_000_000) == 320 and rates.count(400_000_000_000) == 160
    assert {link["delay_ps"] for link in cfg["links"]} == {1_000_000}
    assert {b["buffer_bytes"] for b in bridges} == {32 * 1024 * 1024}


def _one_flow(scheme: str, size: int, **sets: object):  # noqa: ANN202
    """One flow alone, H0 -> H319 (6 hops), under `scheme` as the study sets it."""
    sc = scenario(scheme, "websearch", 0.3, 1.0).replace(
        **sets,
        **{
            "workload.kind": "incast",
            "workload.fan_in": 1,
            "workload.receiver": "H319",
            "workload.hosts": ["H0", "H319"],
            "workload.size_bytes": size,
            "workload.end_ms": None,
        },
        duration_ms=5.0,
    )
    return run(sc, jobs=1, progress=False)


@pytest.mark.parametrize("size", [500, 1000, 100_000])
def test_a_flow_alone_has_the_projects_slowdown_of_about_one(size: int) -> None:
    """The project's standalone FCT (its base RTT plus the bytes with headers
    at the bottleneck) is what a lone flow takes to its last ACK, within what
    the project leaves out (the ACK's own serialisation, store and forward of
    the last frame)."""
    res = _one_flow("dcqcn", size)
    sd = project_slowdowns(res.flows)
    assert len(sd) == 1
    (got_size, slowdown) = sd[0]
    assert got_size == size
    assert 1.0 <= slowdown < 1.05, slowdown


def test_the_groups_are_fct_analysis_pys() -> None:
    """100 groups of 1% of the flows by size; percentiles a[int(n p)]."""
    flows = [(i, float(i % 10 + 1)) for i in range(1000)]  # 10 flows a group
    e = ends(flows)
    # Every group holds slowdowns 1..10: p50 is a[5] = 6, p95 a[9] = 10.
    assert e[("short", 50)] == 6.0 and e[("short", 95)] == 10.0
    assert e[("long", 50)] == 6.0 and e[("long", 95)] == 10.0


def test_ecn_thresholds_follow_the_port_rate() -> None:
    """bridge.ecn_ref_gbps = 100: a 400 Gbit/s port marks from 4 x the
    thresholds; without it, every port marks at the thresholds as written."""
    sc = load("hpcc_fattree")
    cfg = sc.engine_config()
    assert {b["red_ref_bps"] for b in cfg["bridges"]} == {100e9}
    plain = sc.replace(**{"bridge.ecn_ref_gbps": None}).engine_config()
    assert all("red_ref_bps" not in b for b in plain["bridges"])


def test_the_pfc_alpha_follows_the_port_rate() -> None:
    cfg = load("hpcc_fattree").engine_config()
    assert {b["mmu"]["alpha_ref_bps"] for b in cfg["bridges"]} == {100e9}


def test_a_rate_reference_without_a_profile_is_refused(tmp_path, refused) -> None:  # noqa: ANN001
    """ecn_ref_gbps scales the bridge's RED profile: alone it is refused, naming it."""
    f = tmp_path / "no_profile.toml"
    text = (Path(cnsim.__file__).parent / "scenarios" / "hpcc_fattree.toml").read_text()
    f.write_text(
        "\n".join(ln for ln in text.splitlines() if not ln.startswith(("ecn_kmin_bytes", "ecn_kmax_bytes")))
    )
    lines = refused(tmp_path, f)
    assert len(lines) == 1 and "ecn_ref_gbps" in lines[0], lines


@pytest.mark.filterwarnings("ignore:bridge T0. ecn_kmin_bytes")
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_every_scheme_of_the_study_runs_the_fabric_and_loses_nothing(scheme: str) -> None:
    """A tenth of a millisecond of web-search arrivals at 50% load, each
    scheme as the run script sets it: every flow finishes, PFC loses no
    frame, every frame is accounted for (the run checks conservation)."""
    sc = scenario(scheme, "websearch", 0.5, 0.1)
    res = run(sc, jobs=1, progress=False)
    f = res.flows
    assert len(f) > 100
    assert f["fct_acked_us"].null_count() == 0
    assert res.metric("buffer_drops_priority_3")[0] == 0
    assert res.metric("frames")[0] == res.metric("frames_delivered")[0]


def test_dcqcn_as_the_nic_runs_it_is_not_the_papers() -> None:
    """rp_model = nic changes DCQCN's reaction (alpha every 1 us, cuts every
    4 us, no byte counter): the same arrivals finish at other times."""
    nic = run(scenario("dcqcn", "websearch", 0.5, 0.1), jobs=1, progress=False).flows
    paper = run(
        scenario("dcqcn", "websearch", 0.5, 0.1).replace(
            **{"dcqcn.rp_model": "paper", "dcqcn.timer_us": 55.0}
        ),
        jobs=1,
        progress=False,
    ).flows
    assert nic["size_bytes"].to_list() == paper["size_bytes"].to_list()
    assert nic["fct_acked_us"].to_list() != paper["fct_acked_us"].to_list()


def test_a_window_following_the_rate_is_not_a_fixed_one() -> None:
    """DCQCN+w with the window scaled by the rate (VAR_WIN) runs otherwise
    than with a fixed BDP window once a 16-to-1 incast has cut the rates."""

    def fct(**sets: object) -> list[float]:
        sc = scenario("dcqcn", "websearch", 0.5, 1.0).replace(
            **sets,
            **{
                "workload.kind": "incast",
                "workload.fan_in": 16,
                "workload.receiver": "H0",
                "workload.hosts": [f"H{i}" for i in range(0, 320, 19)][:17],
                "workload.size_bytes": 1_000_000,
                "workload.end_ms": None,
            },
            duration_ms=20.0,
        )
        res = run(sc, jobs=1, progress=False)
        assert res.metric("frames")[0] == res.metric("frames_delivered")[0]
        return res.flows["fct_acked_us"].to_list()

    fixed = fct(**{"dcqcn.window": True})
    follows = fct(**{"dcqcn.window": True, "dcqcn.window_follows_rate": True})
    assert len(fixed) == len(follows) == 16
    assert fixed != follows


def test_the_study_runs_only_when_named() -> None:
    assert "hpcc_paper" in STUDIES and "hpcc_paper" in ON_REQUEST


def test_flow_sizes_are_payload() -> None:
    """The study reads size_bytes as the flow's payload (the CDF's sizes),
    with headers on top: a 2,500 B flow is three frames."""
    res = _one_flow("dcqcn", 2_500)
    f: pl.DataFrame = res.flows
    assert f["size_bytes"][0] == 2_500
    assert res.metric("frames")[0] == 3
