"""Data-center scale (issue 11): leaf-spine fabrics, ECMP, traffic patterns,
per-flow counters on request, bounded memory on thousands of hosts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from typing import Any

import cnsim
import polars as pl
import pytest
from cnsim.errors import ScenarioError
from cnsim.scenario import Scenario


def fabric(**topology: Any) -> dict[str, Any]:
    """A small leaf-spine scenario (nocm, 2 ms) with these [topology] keys."""
    topo = {"generator": "leafspine", "leaves": 4, "spines": 2, "hosts_per_leaf": 4, "load": 0.3}
    topo.update(topology)
    return {
        "name": "fabric",
        "duration_ms": 2.0,
        "bin_us": 500.0,
        "seeds": [0],
        "topology": topo,
        "bridge": {"buffer_mode": "per_output", "buffer_bytes": 150_000},
    }


def test_leafspine_reaches_every_host_pair_over_the_expected_hops():
    sc = Scenario(fabric())
    hosts = [f"H{h}" for h in range(16)]
    pairs = [(a, b) for a in hosts for b in hosts if a != b]
    hops = Counter()
    for (a, b), path in zip(pairs, sc.paths(pairs), strict=True):
        same_leaf = int(a[1:]) // 4 == int(b[1:]) // 4
        assert path[0] == a and path[-1] == b
        assert path[1] == f"L{int(a[1:]) // 4}" and path[-2] == f"L{int(b[1:]) // 4}"
        assert len(path) - 1 == (2 if same_leaf else 4), path  # links crossed
        if not same_leaf:
            assert path[2] in ("S0", "S1")
        hops[len(path) - 1] += 1
    assert hops == {2: 16 * 3, 4: 16 * 12}
    assert sc.model.routing == "ecmp"


def test_oversubscription_sets_the_leaf_spine_rate():
    sc = Scenario(fabric(host_gbps=25.0, oversubscription=2.0))
    rate = {(lk.a, lk.b): lk.rate_gbps for lk in sc.model.links}
    assert rate[("H0", "L0")] == 25.0
    assert rate[("L0", "S1")] == pytest.approx(4 * 25.0 / (2 * 2.0))


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ({"spine_gbps": 10.0, "oversubscription": 2.0}, "topology.oversubscription: give spine_gbps or"),
        ({"pattern": "incast", "fan_in": 16}, "topology.fan_in: 16 is not allowed"),
        ({"pattern": "hotspot", "hot_host": "H99"}, "topology.hot_host: 'H99' is not a host"),
        ({"leaves": 0}, "topology.leaves: 0 is not allowed"),
        ({"pattern": "zipf"}, "topology.pattern: 'zipf' is not allowed"),
    ],
)
def test_bad_fabric_parameters_are_named(topology, message):
    with pytest.raises(ScenarioError) as e:
        Scenario(fabric(**topology))
    assert str(e.value).startswith(message), str(e.value)


def test_fattree_routing_needs_a_fat_tree():
    raw = fabric()
    raw["routing"] = "fattree"
    with pytest.raises(ScenarioError, match="routing: 'fattree' needs a"):
        Scenario(raw)


def test_ecmp_spreads_flows_over_the_uplinks_and_never_reorders_a_flow():
    raw = fabric(leaves=4, spines=4, hosts_per_leaf=8, load=0.5)
    raw["duration_ms"] = 5.0
    sc = Scenario(raw)
    res = cnsim.run(sc, progress=False)
    run = res.runs[0]
    assert run.frames["delivered"] > 60_000  # 32 hosts x 5 Gbit/s x 5 ms / 12,000 bit
    assert run.frames["reordered"] == 0
    # Flows per uplink, from the engine's own routes: 192 flows leave each leaf
    # over 4 uplinks, a binomial 48 +- 6 each; a hash keeps within 3 sigma.
    hosts = [f"H{h}" for h in range(32)]
    pairs = [(a, b) for a in hosts for b in hosts if int(a[1:]) // 8 != int(b[1:]) // 8]
    per_uplink = Counter((p[1], p[2]) for p in sc.paths(pairs))
    assert len(per_uplink) == 16 and all(abs(n - 48) < 18 for n in per_uplink.values()), per_uplink
    # Each uplink then carries its flows' share of 3/4 x 8 x 5 Gbit/s: the frames follow the routes.
    up = res.links.filter(pl.col("from").str.starts_with("L") & pl.col("to").str.starts_with("S"))
    for row in up.iter_rows(named=True):
        expect = 30.0 * per_uplink[(row["from"], row["to"])] / 192
        assert row["throughput_gbps_measure"] == pytest.approx(expect, rel=0.12), row


def test_permutation_and_incast_patterns():
    perm = Scenario(fabric(pattern="permutation", pattern_seed=3)).model
    dest = {n.name: n.dest for n in perm.nodes if n.kind == "station"}
    assert all(d != s for s, d in dest.items())
    assert sorted(dest.values()) == sorted(dest)  # every host receives from exactly one
    other = Scenario(fabric(pattern="permutation", pattern_seed=4)).model
    assert dest != {n.name: n.dest for n in other.nodes if n.kind == "station"}

    inc = Scenario(fabric(pattern="incast", fan_in=4)).model
    stations = [n for n in inc.nodes if n.kind == "station"]
    receivers = Counter(n.dest for n in stations if n.load > 0)
    assert set(receivers.values()) == {4} and len(receivers) == 16 // 5
    assert all(next(n for n in stations if n.name == r).load == 0 for r in receivers)


def test_hotspot_pattern_sends_its_fraction_to_the_hot_host():
    raw = fabric(pattern="hotspot", hot_host="H5", hot_fraction=0.3, load=0.05)
    raw["duration_ms"] = 20.0
    res = cnsim.run(Scenario(raw), progress=False)
    flows = res.flows.filter(pl.col("src") != "H5")
    share = flows.filter(pl.col("dst") == "H5")["generated"].sum() / flows["generated"].sum()
    assert share == pytest.approx(0.3 + 0.7 / 15, abs=0.01)


def test_without_per_flow_counters_the_per_station_bytes_carry_the_metrics():
    raw = fabric(pattern="hotspot", hot_host="H5", hot_fraction=0.3)
    raw["hotspot"] = {"node": "H5", "rate_gbps": 10.0, "start_ms": 0.5, "end_ms": 1.5}
    with_flows = cnsim.run(Scenario(raw), progress=False)
    raw["stats"] = {"per_flow": False}
    without = cnsim.run(Scenario(raw), progress=False)
    assert without.flows.height == 0 and with_flows.flows.height > 0
    assert without.runs[0].frames["delivered"] == with_flows.runs[0].frames["delivered"]
    nodes = without.nodes.filter(pl.col("kind") == "station")
    assert nodes["bytes_to_measure"].sum() == nodes["bytes_from_measure"].sum()
    assert nodes["delivered_from"].sum() == without.runs[0].frames["delivered"]
    for m in ("hot_port_throughput", "bottleneck_utilization", "aggregate_throughput"):
        assert without.metric(m)[0] == pytest.approx(with_flows.metric(m)[0], rel=1e-12), m


def test_large_fabrics_keep_per_station_counters_and_no_per_key_series():
    raw = fabric(leaves=20, spines=4, hosts_per_leaf=16, load=0.1)  # 320 hosts: above the per-flow auto limit
    raw["duration_ms"] = 0.2
    raw["stats"] = {"max_series_keys": 100}
    res = cnsim.run(Scenario(raw), progress=False)
    assert res.flows.height == 0
    series = set(res.timeseries()["series"].unique())
    assert "aggregate_throughput" in series
    assert not series & {"delivered_throughput", "link_throughput", "queue_bytes"}


def test_a_4096_host_fat_tree_runs_in_bounded_memory():
    """The scale benchmark's 4096-host fabric (k = 16, n = 3), for 0.3 ms, in a
    process of its own: its peak memory, results included, stays under 2 GB."""
    p = subprocess.run(
        [sys.executable, "-m", "cnsim.benchscale", "4096", "0.3"], capture_output=True, text=True, check=False
    )
    assert p.returncode == 0, p.stderr
    fig = json.loads(p.stdout.strip().splitlines()[-1])
    assert fig["hosts"] == 4096 and fig["frames_delivered"] > 0
    assert fig["peak_rss_mb"] < 2048, fig


def _cnsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cnsim", *args], capture_output=True, text=True, check=False)


def test_bench_scale_cli_prints_the_figures():
    p = _cnsim("bench", "--workload", "scale", "--hosts", "64", "--duration-ms", "0.5", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    (row,) = out["sizes"]
    for key in ("events_per_s", "frames_delivered_per_s", "engine_wall_s", "peak_rss_mb"):
        assert row[key] > 0
    assert out["runs"] == 1 and row["events_per_s_vs_smallest"] == 1.0
    bad_repeat = _cnsim("bench", "--workload", "scale", "--repeat", "0")
    assert bad_repeat.returncode == 2 and "--repeat: 0 is not allowed" in bad_repeat.stderr
    bad = _cnsim("bench", "--workload", "scale", "--hosts", "100")
    assert bad.returncode == 2 and "--hosts: 100 is not allowed" in bad.stderr


def test_bench_repeat_reports_the_fastest_of_its_runs():
    p = _cnsim("bench", "--duration-ms", "20", "--repeat", "3", "--json")
    assert p.returncode == 0, p.stderr
    fig = json.loads(p.stdout)
    assert fig["runs"] == 3 and fig["frames_delivered"] > 0
    # The same deterministic run three times: the figures other than speed are one run's.
    once = json.loads(_cnsim("bench", "--duration-ms", "20", "--json").stdout)
    assert (fig["events"], fig["frames"]) == (once["events"], once["frames"])


def test_bench_scale_runs_the_web_search_leaf_spines():
    p = _cnsim("bench", "--workload", "scale", "--hosts", "128", "--duration-ms", "0.3", "--json")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)["sizes"]
    assert row["fabric"] == "8 x 16 / 4 spines" and row["scheme"] == "dctcp + PAUSE"
    assert row["build_s"] > 0 and row["events_per_frame"] > 1 and row["frames_delivered"] > 0
    mixed = _cnsim("bench", "--workload", "scale", "--hosts", "64,128")
    assert mixed.returncode == 2 and "--hosts: give sizes of one family" in mixed.stderr


def test_a_fabric_of_more_than_65534_link_directions_runs():
    """The port index is 32 bits: 300 leaves of one host each under 120
    spines is 72,600 link directions (the 16-bit index stopped at 65,534),
    and its flows are delivered and conserved."""
    raw = fabric(leaves=300, spines=120, hosts_per_leaf=1, load=0.2)
    raw["duration_ms"] = 0.05
    sc = Scenario(raw)
    assert len(sc.engine_config()["links"]) * 2 > 65534
    res = cnsim.run(sc, progress=False)
    (run,) = res.runs
    assert run.frames["delivered"] > 0


def test_best_of_keeps_each_sizes_fastest_run_and_the_largest_memory():
    from cnsim.benchscale import best_of

    def row(hosts: int, eps: float, mb: float) -> dict:
        return {"hosts": hosts, "events_per_s": eps, "peak_rss_mb": mb, "engine_wall_s": 1 / eps}

    rounds = [[row(64, 10.0, 90), row(1000, 5.0, 130)], [row(64, 12.0, 95), row(1000, 4.0, 120)]]
    small, large = best_of(rounds)
    assert (small["events_per_s"], small["engine_wall_s"], small["peak_rss_mb"]) == (12.0, 1 / 12.0, 95)
    assert (large["events_per_s"], large["engine_wall_s"], large["peak_rss_mb"]) == (5.0, 1 / 5.0, 130)
    assert small["events_per_s_vs_smallest"] == 1.0
    assert large["events_per_s_vs_smallest"] == 5.0 / 12.0


def test_explicit_routes_override_the_routing_function():
    raw = fabric()
    raw["routing"] = "shortest_path"
    assert Scenario(raw).paths([("H0", "H5")]) == [["H0", "L0", "S0", "L1", "H5"]]
    raw["routes"] = [{"bridge": "L0", "dst": "H5", "via": "S1"}]
    assert Scenario(raw).paths([("H0", "H5"), ("H0", "H6")]) == [
        ["H0", "L0", "S1", "L1", "H5"],
        ["H0", "L0", "S0", "L1", "H6"],
    ]
    raw["routes"] = [{"bridge": "L0", "dst": "H5", "via": "L3"}]
    with pytest.raises(ScenarioError, match=r"routes\[0\]: no link from the bridge to 'via'"):
        Scenario(raw).paths([("H0", "H5")])


def test_a_long_step_says_what_it_does_and_a_short_one_nothing():
    """The build of a large fabric is not silent: a Status line appears once
    the step has taken its delay, and never for a step shorter than that."""
    import time

    from cnsim.executor import Status

    with Status(True, "building", after_s=0.05) as long_step:
        time.sleep(0.3)
        assert long_step._live is not None
    assert long_step._ended and not long_step._live.live.is_started
    with Status(True, "building", after_s=5.0) as short_step:
        pass
    time.sleep(0.05)
    assert short_step._live is None
    with Status(False, "building", after_s=0.0) as hidden:
        time.sleep(0.05)
    assert hidden._live is None
