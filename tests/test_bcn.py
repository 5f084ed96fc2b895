"""BCN and its variants on the baseline and calibration studies
(references.md sections 1 and 2)."""

import cnsim
import numpy as np
import pytest
from cnsim.metrics import fairness
from cnsim.scenario import load


def test_fairness_metrics_on_hand_computed_rates():
    f = fairness([2.0, 3.0, 2.5, 2.5], 2.5)
    assert f["dev_max"] == pytest.approx(0.2)
    assert f["dev_min"] == pytest.approx(0.0)
    assert f["dev_mean"] == pytest.approx(0.1)
    assert f["dev_rms"] == pytest.approx(np.sqrt((0.25 + 0.25) / 4) / 2.5)
    assert f["jain"] == pytest.approx(100 / (4 * 25.5))
    assert fairness([2.5] * 4, 2.5)["jain"] == pytest.approx(1.0)


@pytest.fixture(scope="module")
def baseline_bcn():
    return cnsim.run(load("baseline", scheme="bcn"), progress=False)  # 25 seeds


def test_baseline_bcn_matches_the_published_fairness(baseline_bcn):
    m = baseline_bcn.stats
    assert len(m["jain"]["per_seed"]) == 25
    assert abs(m["jain"]["mean"] - 0.977) <= 0.02
    assert abs(m["dev_max"]["mean"] - 0.216) <= 0.5 * 0.216
    assert abs(m["dev_rms"]["mean"] - 0.144) <= 0.5 * 0.144


def test_baseline_bcn_keeps_the_downlink_full_and_recovers_after_two_sources_stop(baseline_bcn):
    assert min(baseline_bcn.metric("link_utilization")) >= 0.99
    ts = baseline_bcn.timeseries("flow_throughput")
    for seed in baseline_bcn.seeds:
        for flow in ("S1->D", "S2->D"):
            v = ts.filter((ts["seed"] == seed) & (ts["key"] == flow) & (ts["time_ms"] >= 95.0))["value"]
            assert v.mean() > 4.0, (seed, flow, v.mean())
        gone = ts.filter((ts["seed"] == seed) & (ts["key"] == "S3->D") & (ts["time_ms"] >= 82.0))["value"]
        assert gone.max() == 0.0


def test_rate_limiters_converge_to_the_fair_share(baseline_bcn):
    rl = baseline_bcn.timeseries("rl_rate")
    window = rl.filter((rl["time_ms"] >= 20.0) & (rl["time_ms"] < 80.0))
    import polars as pl

    per_rl = window.group_by(["seed", "key"]).agg(pl.col("value").mean().alias("rate"))
    assert per_rl.height == 25 * 4
    assert abs(per_rl["rate"].mean() - 2.5) < 0.1
    # The RLs carry the flows: signalling stays small against 10 Gbit/s.
    assert max(baseline_bcn.metric("overhead_mbps")) < 10


def test_calibration_totals_within_two_percent():
    res = cnsim.run(load("calibration", scheme="bcn", seeds=[0]), progress=False)
    r = res.runs[0]
    w = r.window("measure")
    assert (w["start_ps"], w["end_ps"]) == (5 * 10**9, 95 * 10**9)
    assert abs(w["generated"] - 149_674) / 149_674 < 0.02
    assert abs(w["delivered"] - 74_202) / 74_202 < 0.02
    assert abs(r.frames["dropped_rp"] - 75_031) / 75_031 < 0.02
    assert r.frames["dropped_cp"] == 0


@pytest.mark.parametrize("scheme", ["bcn00", "bcnmax", "ecm"])
def test_variants_share_the_bottleneck_and_conserve_frames(scheme):
    res = cnsim.run(load("baseline", scheme=scheme, seeds=[0, 1]), progress=False)
    assert min(res.metric("link_utilization")) >= 0.97
    # The four flows share the 10 Gbit/s downlink (no fairness figure is published for these).
    flows = res.flows
    for seed in (0, 1):
        total = flows.filter(flows["seed"] == seed)["throughput_gbps_fairness"].sum()
        assert abs(total - 10.0) < 0.2


def test_bcn00_stops_sources_and_drifts_back(tmp_path):
    # A small Qsc makes BCN(0,0) messages frequent; the RLs restart at Rmin and drift.
    sc = load("baseline", scheme="bcn00", seeds=[0]).replace(**{"bcn.qsc_bytes": 30_000.0})
    res = cnsim.run(sc, progress=False)
    rates = res.timeseries("rl_rate")
    assert rates["value"].min() <= 1.0 + 1e-9  # someone was held at Rmin = 1 Gbit/s or below
    assert res.metric("link_utilization")[0] > 0.9


@pytest.mark.slow
def test_validate_reports_both_studies_within_tolerance(cli):
    import json

    for study in ("baseline", "calibration"):
        r = cli("validate", "--only", study, "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        rows = json.loads(r.stdout)["rows"]
        assert rows and {row["study"] for row in rows} == {study}
        assert all(row["within"] for row in rows)
    r = cli("validate", "--only", "calibration")
    assert r.returncode == 0 and "calibration" in r.stdout and "baseline" not in r.stdout


def test_cp_detection_is_switchable_per_bridge():
    sc = load("baseline", scheme="bcn", seeds=[0]).replace(duration_ms=30.0)
    on = cnsim.run(sc, progress=False)
    assert on.metric("overhead_mbps")[0] > 0
    assert on.timeseries("rl_rate").height > 0
    off = cnsim.run(sc.replace(**{"nodes.B5.cp": False}), progress=False)
    assert off.metric("overhead_mbps")[0] == 0
    assert off.timeseries("rl_rate").height == 0
    assert off.metric("dropped_cp")[0] > on.metric("dropped_cp")[0]
