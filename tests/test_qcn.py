"""QCN and ECM on the single-hop output-generated hotspot (references.md
section 3): the qualitative findings of the July 2007 comparison."""

from concurrent.futures import ThreadPoolExecutor

import cnsim
import pytest
from cnsim.scenario import load


@pytest.fixture(scope="module")
def singlehop_2g_pause():
    base = load("singlehop_hotspot", seeds=[0]).replace(**{"hotspot.rate_gbps": 2.0})

    def one(scheme):
        return scheme, cnsim.run(base.replace(scheme=scheme, pause=True), jobs=1, progress=False)

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, ["nocm", "qcn2pt", "qcn3pt", "ecm"]))


def test_pause_alone_loses_a_quarter_to_head_of_line_blocking(singlehop_2g_pause):
    r = singlehop_2g_pause["nocm"]
    assert r.metric("aggregate_throughput")[0] < 70
    assert r.metric("time_paused_pct")[0] > 20
    assert r.metric("dropped_cp")[0] == 0


@pytest.mark.parametrize("scheme", ["qcn2pt", "qcn3pt", "ecm"])
def test_congestion_management_restores_the_aggregate(singlehop_2g_pause, scheme):
    r = singlehop_2g_pause[scheme]
    assert r.metric("aggregate_throughput")[0] > 78
    assert r.metric("dropped_cp")[0] == 0
    f = r.runs[0].result["frames"]
    assert f["generated"] == f["delivered"] + f["dropped_cp"] + f["dropped_rp"] + f["in_flight"]


def test_three_point_signalling_costs_orders_of_magnitude_more(singlehop_2g_pause):
    o2 = singlehop_2g_pause["qcn2pt"].metric("overhead_mbps")[0]
    o3 = singlehop_2g_pause["qcn3pt"].metric("overhead_mbps")[0]
    assert o2 > 0 and o3 > 10 * o2
    # RefP = 4% of ~6.8 M delivered frames per second x 64 B ~= 140 Mbit/s.
    assert 100 < o3 < 180


def test_without_pause_nocm_drops_the_hot_excess_and_cm_schemes_few():
    base = load("singlehop_hotspot", seeds=[0], pause=False)
    nocm = cnsim.run(base.replace(scheme="nocm"), progress=False)
    q2 = cnsim.run(base.replace(scheme="qcn2pt"), progress=False)
    # 6.5 Gbit/s of excess for 400 ms = 216,667 frames of 1500 B.
    assert 200_000 < nocm.metric("dropped_cp")[0] < 230_000
    assert nocm.metric("aggregate_throughput")[0] > 81
    assert q2.metric("dropped_cp")[0] < 1000


def test_bench_times_the_single_hop_workload(cli):
    import json

    r = cli(
        "bench", "--workload", "singlehop", "--scheme", "qcn2pt", "--pause", "--duration-ms", "20", "--json"
    )
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)
    assert "singlehop_hotspot, qcn2pt + PAUSE" in b["workload"]
    # 10 hosts x 8.5 Gbit/s for 20 ms: about 141,700 frames of 1500 B.
    assert 138_000 < b["frames"] < 145_000 and b["events"] > b["frames"]
    bad = cli("bench", "--workload", "nosuch")
    assert bad.returncode == 2 and "--workload: 'nosuch' is not allowed" in bad.stderr
