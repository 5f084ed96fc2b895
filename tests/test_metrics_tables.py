"""The metrics module on hand-made tables: every derived figure from raw
counters, with the values worked out by hand; and the statistics over seeds
with a known Student t quantile."""

from __future__ import annotations

import math

import cnsim
import numpy as np
import polars as pl
import pytest
from cnsim.engine import SeedRun
from cnsim.metrics import bounds, ci_text, describe, flow_table, link_table, per_seed, run_metrics

MS = 1_000_000_000  # ps


def hand_run() -> SeedRun:
    """Two stations S, T sending to D through bridge B over 2 ms; a measure
    window of the whole run and a window `late` over the second ms."""
    header = {
        "bin_ps": MS,
        "end_ps": 2 * MS,
        "n_bins": 2,
        "frames": {
            "generated": 1000,
            "delivered": 900,
            "dropped_cp": 40,
            "dropped_rp": 50,
            "dropped_rl": 30,
            "dropped_nic": 20,
            "deferred": 7,
            "in_flight": 10,
            "delay_sum_ps": 900 * 3_000_000.0,  # 3 us each
            "delay_max_ps": 12_000_000,
            "note_bytes_measure": 64 * 500,
        },
        "engine": {"events": 5000, "wall_s": 0.01},
    }
    u64 = pl.UInt64
    windows = pl.DataFrame(
        {
            "name": ["measure", "late"],
            "start_ps": [0, MS],
            "end_ps": [2 * MS, 2 * MS],
            "generated": [1000, 480],
            "delivered": [900, 450],
            "dropped_cp": [40, 10],
            "dropped_rp": [50, 25],
            "deferred": [7, 3],
            "delivered_bytes": [2_500_000, 1_250_000],
        },
        schema_overrides={c: u64 for c in ("start_ps", "end_ps", "delivered_bytes")},
    )
    flows = pl.DataFrame(
        {
            "src": ["S", "T"],
            "dst": ["D", "D"],
            "generated": [600, 400],
            "delivered": [550, 350],
            "bytes_measure": [1_500_000, 1_000_000],  # 6 and 4 Gbit/s over 2 ms
            "bytes_late": [750_000, 500_000],
        }
    )
    links = pl.DataFrame(
        {
            "name": ["S->B", "B->S", "T->B", "B->T", "B->D", "D->B"],
            "from": ["S", "B", "T", "B", "B", "D"],
            "to": ["B", "S", "B", "T", "D", "B"],
            "rate_bps": [10**10] * 6,
            "frames": [600, 0, 400, 0, 900, 0],
            "can_pause": [True, False, True, False, False, True],
            "paused_ever": [True, False, True, False, False, False],
            "paused_ps": [MS // 2, 0, MS // 4, 0, 0, 0],  # 25% and 12.5% of 2 ms
            "pause_frames": [0, 3, 0, 2, 0, 0],
            "control_frames": [0, 250, 0, 250, 0, 0],
            "bytes_measure": [1_500_000, 0, 1_000_000, 0, 2_500_000, 0],
            "bytes_late": [750_000, 0, 500_000, 0, 1_250_000, 0],
        }
    )
    nodes = pl.DataFrame({"name": ["S", "T", "D", "B"], "kind": ["station"] * 3 + ["bridge"]})
    return SeedRun(0, header, {"windows": windows, "flows": flows, "links": links, "nodes": nodes}, [])


def test_throughput_per_window_from_bytes():
    f = flow_table(hand_run())
    assert list(f["throughput_gbps_measure"]) == [6.0, 4.0]
    assert list(f["throughput_gbps_late"]) == [6.0, 4.0]
    lk = link_table(hand_run())
    assert lk.row(list(lk["name"]).index("B->D"))["throughput_gbps_measure"] == 10.0


def test_time_paused_is_over_links_that_can_pause_and_paused():
    lk = link_table(hand_run())
    assert list(lk["time_paused_pct"]) == [25.0, 0.0, 12.5, 0.0, 0.0, 0.0]
    m = run_metrics(hand_run())
    assert m["time_paused_pct"] == pytest.approx(18.75)  # mean of 25 and 12.5
    assert m["time_paused_pct_all"] == pytest.approx(37.5 / 3)  # D->B can pause, never paused
    assert m["time_paused_pct_max"] == 25.0
    assert m["pause_frames"] == 5


def test_run_wide_metrics_from_counters():
    m = run_metrics(hand_run())
    assert m["aggregate_throughput"] == 10.0  # 2.5 MB over 2 ms
    assert m["overhead_mbps"] == pytest.approx(64 * 500 * 8 / 2e-3 / 1e6)  # 128 Mbit/s
    assert m["frame_delay_mean_us"] == pytest.approx(3.0)
    assert m["frame_delay_max_us"] == 12.0
    assert (m["dropped_cp"], m["dropped_rp"], m["dropped_rl"], m["dropped_nic"]) == (40, 50, 30, 20)
    assert (m["frames"], m["frames_delivered"], m["frames_deferred"]) == (1000, 900, 7)


def test_scenario_metrics_fairness_and_hotspot():
    sc = cnsim.Scenario(
        {
            "duration_ms": 2.0,
            "nodes": [
                {"name": "S", "kind": "station", "load": 0.5, "dest": "D"},
                {"name": "T", "kind": "station", "load": 0.5, "dest": "D"},
                {"name": "D", "kind": "station"},
                {"name": "B", "kind": "bridge"},
            ],
            "links": [{"a": "S", "b": "B"}, {"a": "T", "b": "B"}, {"a": "B", "b": "D"}],
            "windows": {"late": {"start_ms": 1.0, "end_ms": 2.0}},
            "fairness": {"window": "late", "target_gbps": 5.0},
            "utilization": {"link": "B->D", "window": "late"},
        }
    )
    m = per_seed(hand_run(), sc)
    # Rates 6 and 4 around a fair share of 5: deviations 0.2 each.
    assert m["dev_max"] == pytest.approx(0.2) and m["dev_rms"] == pytest.approx(0.2)
    assert m["jain"] == pytest.approx((1.2 + 0.8) ** 2 / (2 * (1.44 + 0.64)))
    assert m["link_utilization"] == 1.0


def test_statistics_over_seeds_with_a_known_t_quantile():
    d = describe([1.0, 2.0, 3.0, 4.0])
    assert d["mean"] == 2.5 and d["n"] == 4 and (d["min"], d["max"]) == (1.0, 4.0)
    assert d["std"] == pytest.approx(math.sqrt(5 / 3))
    # Student t, 3 degrees of freedom, 97.5%: 3.182446305.
    half = 3.182446305 * math.sqrt(5 / 3) / 2
    assert (d["ci_low"], d["ci_high"]) == (pytest.approx(2.5 - half), pytest.approx(2.5 + half))
    assert "ci_half" not in d  # an interval cut by a bound is not symmetric
    # A missing value is left out; one value has no spread.
    one = describe([None, 7.0, float("nan")])
    assert (one["mean"], one["n"], one["std"], one["ci_low"]) == (7.0, 1, None, None)
    assert describe([None])["mean"] is None


def test_confidence_intervals_stay_inside_the_metrics_range():
    # jain 0.968 +- 0.29 once reached 1.26; dev_max 0.267 +- 1.4 went below 0.
    jain = describe([0.99, 0.99, 0.65, 0.99, 0.99], bounds=bounds("jain"))
    t_high = jain["mean"] + 2.776445105 * jain["std"] / math.sqrt(5)
    assert t_high > 1 and jain["ci_high"] == 1.0 and 0 < jain["ci_low"] < jain["mean"]
    dev = describe([0.01, 0.02, 0.9], bounds=bounds("dev_max"))
    assert dev["ci_low"] == 0.0 and dev["ci_high"] > dev["mean"]
    assert bounds("time_paused_pct_max") == (0.0, 100.0) and bounds("dropped_cp") == (0.0, math.inf)
    # Every metric a run produces has a lower bound of 0 (metrics.md: none is negative).
    for name in ("jain", "link_utilization", "dev_rms", "slowdown_p99", "frames"):
        lo, hi = bounds(name)
        assert lo == 0.0 and hi >= 1.0


def test_two_seeds_have_no_interval_and_rounding_noise_is_zero():
    # t(0.975, 1) = 12.7: a two-seed "interval" is no interval.
    two = describe([1.0, 2.0])
    assert two["std"] == pytest.approx(math.sqrt(0.5)) and (two["ci_low"], two["ci_high"]) == (None, None)
    assert ci_text(two) == "n < 3: no CI" and ci_text(describe([5.0])) == "n < 3: no CI"
    # Values that differ in their last bit only: no spread (was 0.99996 +- 3.4e-16).
    x = 0.99996
    near = describe([x, x, math.nextafter(x, 2.0), x, math.nextafter(x, 0.0)], bounds=(0.0, 1.0))
    assert near["std"] == 0.0 and near["ci_low"] == near["ci_high"] == near["mean"]
    assert ci_text(near) == "+- 0"
    same = describe([0.1 + 0.2] * 7)
    assert same["mean"] == 0.1 + 0.2 and same["std"] == 0.0
    assert ci_text(describe([1.0, 2.0, 3.0])) == "[-0.4841, 4.484]"
    assert ci_text(describe([1.0, 2.0, 3.0], bounds=(0.0, math.inf))) == "[0, 4.484]"
    assert ci_text(describe([None, None])) == ""


def test_sums_are_sequential_like_the_engine_was():
    # A dataframe's sum (pairwise) and Python 3.12's sum (compensated) of many
    # floats can differ in the last bit from a loop; the metrics add in row
    # order, as polars' cum_sum does (what they were computed with before).
    from cnsim.tables import seq_sum

    rng = np.random.default_rng(1)
    x = rng.random(1000) * 100
    loop = 0.0
    for v in x:
        loop += float(v)
    assert seq_sum([float(v) for v in x]) == loop
    assert pl.DataFrame({"x": x}).select(pl.col("x").cum_sum().last()).item() == loop
    assert seq_sum([]) == 0.0


def test_percentiles_are_numpys_to_the_last_bit():
    from cnsim.tables import percentile

    rng = np.random.default_rng(2)
    for n in (1, 2, 3, 7, 100, 1001):
        x = [float(v) for v in rng.exponential(3.0, n)]
        for q in (0, 1, 12.5, 50, 95, 99, 99.9, 100):
            assert percentile(x, q) == float(np.percentile(np.array(x), q)), (n, q)
    assert percentile([], 50) is None


def test_slowdown_by_size_counts_finished_flows_only_with_integer_bounds():
    from cnsim.metrics import slowdown_by_size

    fct = pl.DataFrame(
        {
            "size_bytes": [5_000, 8_000, 9_000, 20_000, 50_000_000, 60_000_000],
            "slowdown": [1.0, 3.0, None, 2.0, 10.0, None],  # None: did not finish
        }
    )
    t = slowdown_by_size(fct)
    assert t.schema["lower_bytes"] == pl.Int64 and t.schema["upper_bytes"] == pl.Int64
    assert t["lower_bytes"].to_list() == [0, 10_000, 30_000, 100_000, 1_000_000, 10_000_000]
    assert t["upper_bytes"].to_list() == [10_000, 30_000, 100_000, 1_000_000, 10_000_000, None]
    assert t["flows"].to_list() == [3, 1, 0, 0, 0, 2] and t["finished"].to_list() == [2, 1, 0, 0, 0, 1]
    first = t.row(0, named=True)
    # Linear interpolation between the order statistics of the finished flows (1 and 3).
    assert (first["slowdown_p50"], first["slowdown_p99"]) == (2.0, pytest.approx(1.0 + 0.99 * 2.0))
    assert t.row(2, named=True)["slowdown_p50"] is None
    assert slowdown_by_size(fct, (10_000, None))["finished"].to_list() == [2, 2]


def test_the_95_percent_t_table_is_scipys_to_the_last_bit():
    """The confidence intervals of up to 257 seeds use cnsim.t975 (no scipy
    import on the run path): every entry equals scipy's t.ppf(0.975, df), and
    other levels and degrees of freedom still ask scipy."""
    from cnsim.metrics import t_quantile
    from cnsim.t975 import T975
    from scipy.stats import t as student_t

    assert len(T975) == 256
    for df, q in enumerate(T975, start=1):
        assert q == float(student_t.ppf(0.975, df)), df
        assert t_quantile(0.95, df) == q
    assert t_quantile(0.95, 300) == float(student_t.ppf(0.975, 300))
    assert t_quantile(0.9, 4) == float(student_t.ppf(0.95, 4))
