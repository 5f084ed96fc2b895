"""Fluid models (schemes.md "Fluid models"): the mean-field trajectories
agree with the packet simulator on the baseline, and the CLI draws both."""

import json

import numpy as np
import polars as pl
import pytest
from cnsim.fluid import compare, fluid_config, run_fluid
from cnsim.scenario import ScenarioError, load


@pytest.fixture(scope="module")
def bcn():
    return compare(load("baseline", scheme="bcn", seeds=[0, 1, 2, 3]))


def test_the_baseline_becomes_four_flows_into_one_10g_bottleneck():
    cfg = fluid_config(load("baseline", scheme="bcn"))
    assert cfg["capacity_bps"] == 10e9 and cfg["buffer_bytes"] == 150_000 and cfg["cp_port"] == "B5->D"
    assert [f["offered_bps"] for f in cfg["flows"]] == [4.9e9] * 4
    assert [f["stop_ps"] == 80 * 10**9 for f in cfg["flows"]] == [False, False, True, True]
    for f in cfg["flows"]:
        # Source -> B_i -> B5: two links (0.5 us + 1.2 us frame) and two bridges (1 us);
        # back: one link and one bridge less, a 64-byte frame, 2 us of processing.
        assert f["forward_delay_ps"] == 2 * (500_000 + 1_200_000) + 2 * 1_000_000
        assert f["feedback_delay_ps"] == 2 * (500_000 + 51_200) + 1_000_000 + 2_000_000


def test_bcn_fluid_and_packet_agree_on_the_baseline(bcn):
    rows = {f: (a, b) for f, a, b in bcn.rows}
    fq, pq = rows["mean CP queue (KB)"]
    assert abs(fq - 24.0) < 1.0 and abs(pq - fq) < 0.2 * fq
    ft, pt = rows["total into D (Gbit/s)"]
    assert abs(ft - 10) < 0.05 and abs(pt - ft) < 0.01 * ft
    per_flow = [b for f, (a, b) in rows.items() if f.startswith("S")]
    assert abs(np.mean(per_flow) - 2.5) < 0.05
    # After S3 and S4 stop at 80 ms both recover S1 and S2 to their offered 4.9 Gbit/s.
    t = bcn.fluid.time_ms
    late = (t >= 90) & (t < 100)
    assert bcn.fluid.sent_gbps["S1"][late].mean() > 4.8
    ts = bcn.packet.timeseries("link_throughput").filter(
        (pl.col("key") == "S1->B1") & (pl.col("time_ms") >= 90) & (pl.col("time_ms") < 100)
    )
    assert ts["value"].mean() > 4.6


def test_bcn_fluid_and_packet_overflow_alike_at_the_start(bcn):
    # The 150 KB buffer fills before feedback acts; both stay full for ~3 ms.
    t = bcn.fluid.time_ms
    full = lambda q: float(np.sum(q[(t >= 5) & (t < 15)] > 140_000) * bcn.fluid.bin_ms)  # noqa: E731
    packet_q = np.mean([v for r in bcn.packet.runs for s, k, v in r.series if s == "queue_bytes"], axis=0)
    assert 1.5 < full(bcn.fluid.queue_bytes) < 5
    assert abs(full(packet_q) - full(bcn.fluid.queue_bytes)) < 1.0


def test_qcn_fluid_and_packet_fill_the_link_around_qeq():
    c = compare(load("baseline", scheme="qcn", seeds=[0, 1]))
    rows = {f: (a, b) for f, a, b in c.rows}
    ft, pt = rows["total into D (Gbit/s)"]
    assert abs(ft - 10) < 0.05 and abs(pt - ft) < 0.02 * ft
    fq, pq = rows["mean CP queue (KB)"]
    for q in (fq, pq):
        assert 0.5 * 26 < q < 2 * 26


def test_fluid_integrates_a_100_ms_run_and_repeats_it_exactly():
    # (Its speed is not a test: a wall-clock bound fails on a busy machine.)
    import cnsim

    sc = cnsim.load("baseline").replace(scheme="qcn")
    r = cnsim.fluid.run_fluid(sc)
    assert len(r.queue_bytes) == 1000 and r.dropped_bytes > 0
    again = cnsim.fluid.run_fluid(sc)
    assert np.array_equal(r.queue_bytes, again.queue_bytes) and r.dropped_bytes == again.dropped_bytes


def test_only_single_bottleneck_scenarios_and_modelled_schemes():
    with pytest.raises(ScenarioError, match="not one bottleneck"):
        fluid_config(load("innocent", pause=False))
    with pytest.raises(ScenarioError, match="no PAUSE"):
        fluid_config(load("innocent"))  # the study runs with PAUSE
    with pytest.raises(ScenarioError, match="three_point"):
        run_fluid(load("baseline", scheme="qcn3pt"))
    with pytest.raises(ScenarioError, match="--step-us"):
        fluid_config(load("baseline"), step_us=0)


@pytest.mark.slow
def test_cli_writes_the_fluid_series_the_comparison_and_the_plot(cli, tmp_path):
    r = cli("fluid", "baseline", "--seeds", "1", "--out", str(tmp_path / "f"), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["scheme"] == "bcn" and s["window_ms"] == [20.0, 80.0]
    for name in ("fluid.parquet", "fluid.png", "fluid.json", "packet/summary.json"):
        assert (tmp_path / "f" / name).exists(), name
    ts = pl.read_parquet(tmp_path / "f" / "fluid.parquet")
    assert set(ts["series"].unique()) == {"queue_bytes", "sent_gbps", "rl_rate_gbps"}
    bad = cli("fluid", "innocent", "--no-pause")
    assert bad.returncode == 2 and "not one bottleneck" in bad.stderr and "Traceback" not in bad.stderr


def test_a_1_ms_loop_makes_bcn_oscillate_in_both_models():
    # 250 us per link: a loop of about 1.5 ms instead of 9 us. The fluid model
    # predicts a limit cycle that empties the queue and loses throughput; the
    # packet simulator does the same.
    base = load("baseline", scheme="bcn", seeds=[0, 1])
    assert run_fluid(base).stability(20, 80)["settled"]
    c = compare(base.replace(**{"defaults.link_delay_us": 250.0}))
    st = c.fluid.stability(20, 80)
    assert not st["settled"] and st["queue_swing_kb"] > 100
    rows = {f: (a, b) for f, a, b in c.rows}
    ft, pt = rows["total into D (Gbit/s)"]
    assert ft < 9.5 and pt < 9.5 and abs(ft - pt) < 0.05 * ft
    t = c.fluid.time_ms
    q = np.mean([v for r in c.packet.runs for s, k, v in r.series if s == "queue_bytes"], axis=0)
    sel = (t >= 20) & (t < 80)
    # The packet queue swings between empty and near full as well.
    assert q[sel].max() > 100_000 and q[sel].min() < 5_000


def _into(c, dst, lo, hi):
    t = c.fluid.time_ms
    sel = (t >= lo) & (t < hi)
    packet = c.packet.timeseries("delivered_throughput").filter(
        (pl.col("key") == dst) & (pl.col("time_ms") >= lo) & (pl.col("time_ms") < hi)
    )
    return float(sum(c.fluid.sent_gbps.values())[sel].mean()), float(packet["value"].mean())


@pytest.mark.slow
def test_the_single_hop_hotspot_is_the_flows_into_the_hot_node():
    sc = load("singlehop_hotspot", scheme="qcn2pt", pause=False, seeds=[0])
    cfg = fluid_config(sc)
    assert cfg["dest"] == "H0" and cfg["cp_port"] == "SW->H0" and len(cfg["flows"]) == 9
    # Each host sends 8.5 Gbit/s uniformly over the 9 others; partitions: 9 x 150 KB.
    assert all(abs(f["offered_bps"] - 8.5e9 / 9) < 1 for f in cfg["flows"])
    assert cfg["buffer_bytes"] == 9 * 150_000
    assert cfg["capacity_changes"] == [[100 * 10**9, 2e9], [500 * 10**9, 10e9]]
    c = compare(sc)
    fluid, packet = _into(c, "H0", 150, 500)
    assert abs(fluid - 2.0) < 0.05 and abs(packet - fluid) < 0.05 * fluid
    t = c.fluid.time_ms
    q = np.mean([v for r in c.packet.runs for s, k, v in r.series if s == "queue_bytes"], axis=0)
    onset = (t >= 100) & (t < 110)
    peak_f, peak_p = c.fluid.queue_bytes[onset].max(), q[onset].max()
    assert peak_f > 400_000 and abs(peak_p - peak_f) < 0.25 * peak_f


@pytest.mark.slow
def test_mean_field_ecm_recovers_at_once_the_packet_ecm_does_not():
    # docs/calibration.md "ECM recovery from the floor": a packet RL rises only
    # when one of its own tagged frames is sampled; the mean field raises all.
    c = compare(
        load("singlehop_hotspot", scheme="ecm", pause=False, seeds=[0]).replace(**{"hotspot.rate_gbps": 0.5})
    )
    fluid, packet = _into(c, "H0", 510, 560)
    assert fluid > 8.3 and packet < 7.5
    with pytest.raises(ScenarioError, match="no PAUSE"):
        fluid_config(load("singlehop_hotspot", pause=True))
    with pytest.raises(ScenarioError, match="--dest"):
        fluid_config(load("baseline"), dest="nosuch")


def test_the_fluid_commands_scheme_list_is_the_engines():
    # Derived from the engine (cli._fluid_schemes), not written by hand: it
    # names exactly the schemes whose fluid model runs.
    from cnsim.cli import _fluid_schemes
    from cnsim.schemes import SCHEMES

    listed = _fluid_schemes().split(", ")
    runs = []
    for scheme in SCHEMES:
        if scheme == "pause":
            continue
        try:
            run_fluid(load("baseline", scheme=scheme).replace(duration_ms=1.0), step_us=1.0)
        except ScenarioError as e:
            assert "fluid model" in str(e), e
            continue
        runs.append(scheme)
    assert listed == runs and "qcn3pt" not in listed and "bcn" in listed
