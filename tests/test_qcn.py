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


@pytest.mark.slow
def test_pause_alone_loses_a_quarter_to_head_of_line_blocking(singlehop_2g_pause):
    r = singlehop_2g_pause["nocm"]
    assert r.metric("aggregate_throughput")[0] < 70
    assert r.metric("time_paused_pct")[0] > 20
    assert r.metric("dropped_cp")[0] == 0


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["qcn2pt", "qcn3pt", "ecm"])
def test_congestion_management_restores_the_aggregate(singlehop_2g_pause, scheme):
    r = singlehop_2g_pause[scheme]
    assert r.metric("aggregate_throughput")[0] > 78
    assert r.metric("dropped_cp")[0] == 0


@pytest.mark.slow
def test_three_point_signalling_costs_orders_of_magnitude_more(singlehop_2g_pause):
    o2 = singlehop_2g_pause["qcn2pt"].metric("overhead_mbps")[0]
    o3 = singlehop_2g_pause["qcn3pt"].metric("overhead_mbps")[0]
    assert o2 > 0 and o3 > 10 * o2
    # RefP = 4% of ~6.8 M delivered frames per second x 64 B ~= 140 Mbit/s.
    assert 100 < o3 < 180


@pytest.mark.slow
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


@pytest.fixture(scope="module")
def singlehop_0g_no_pause():
    base = load("singlehop_hotspot", seeds=[0], pause=False).replace(**{"hotspot.rate_gbps": 0.0})
    runs = {
        "qcn2pt": base.replace(scheme="qcn2pt"),
        "ecm": base.replace(scheme="ecm"),
        "ecm literal rule": base.replace(scheme="ecm", **{"ecm.notify_below_qeq": True}),
    }

    def one(item):
        name, sc = item
        res = cnsim.run(sc, jobs=1, progress=False)
        return name, {k: v["mean"] for k, v in res.stats.items()}

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, runs.items()))


@pytest.mark.slow
def test_the_5_mbit_floor_gives_the_stopped_hotspot_drops_within_a_factor_of_3(singlehop_0g_no_pause):
    # Published (references.md 3, 0 Gbit/s, no PAUSE): QCN-2pt 3,509 drops, ECM
    # 3,143. The RLs sit at their floor for 400 ms and the full hot queue drops
    # what they send: 9 x 5 Mbit/s x 0.4 s / 12,000 bit = 1,500 drops.
    for scheme, published in (("qcn2pt", 3_509), ("ecm", 3_143)):
        drops = singlehop_0g_no_pause[scheme]["dropped_cp"]
        assert abs(drops - 1_500) < 300, (scheme, drops)
        assert published / 3 <= drops <= published * 3


def test_the_floor_lets_the_fat_tree_hotspot_be_controlled():
    # 63 sources at the floor must fit the 0.5 Gbit/s hot port, or no scheme
    # can keep PAUSE rare there (docs/calibration.md): 63 x R_min < 500 Mbit/s.
    from cnsim.schemes import TABLES

    for name in ("bcn", "ecm", "qcn", "qcn2pt", "qcn3pt"):
        assert 63 * TABLES[name]().min_rate_mbps < 500, name


@pytest.mark.slow
def test_the_published_27_mbit_ecm_overhead_needs_cnms_below_qeq(singlehop_0g_no_pause):
    # Every port is a CP; a cold port's queue stays below Qeq, so it only
    # notifies under the literal rule that lets the derivative alone send
    # negative feedback. That rule gives the published 27.18 Mbit/s of the
    # 0 Gbit/s row; cnsim's reading (no feedback at or below Qeq) gives the
    # hot port's few Mbit/s, like the other 22 published rows.
    default = singlehop_0g_no_pause["ecm"]["overhead_mbps"]
    literal = singlehop_0g_no_pause["ecm literal rule"]["overhead_mbps"]
    assert default < 27.18 / 3
    assert 27.18 / 1.5 < literal < 27.18 * 1.5


def test_validate_names_the_known_disagreement_of_a_figure_out_of_tolerance(monkeypatch):
    from cnsim import validate as V

    def fake(jobs, progress):
        out = {}
        for key, (agg, hot, paused, dropped, overhead) in V.SINGLEHOP.items():
            out[key] = {
                "aggregate_throughput": agg,
                "hot_port_throughput": hot,
                "time_paused_pct": paused,
                "dropped_cp": dropped,
                "overhead_mbps": overhead,
            }
        out[(0.0, "qcn2pt", True)]["aggregate_throughput"] = 54.6
        out[(2.0, "qcn2pt", True)]["hot_port_throughput"] = 2.0
        return out

    monkeypatch.setattr(V, "singlehop_results", fake)
    rows = V.singlehop(None, False)
    bad = {(r.study, r.figure): r.known for r in rows if not r.ok}
    assert bad.pop(("singlehop 0G qcn2pt +pause", "aggregate (Gbit/s)")) == "cold-traffic bound"
    # An unexplained miss is reported as such, and so is the ordering it breaks.
    assert bad.pop(("singlehop 2G qcn2pt +pause", "hot port (Gbit/s)")) == ""
    # 54.6 also breaks the published ordering (QCN-3pt 51.53 >= QCN-2pt), unexplained.
    assert bad == {("singlehop 0G +pause", "aggregate: ECM >= QCN-3pt >= QCN-2pt"): ""}
    assert all(r.known == "" for r in rows if r.ok)


@pytest.mark.slow
def test_mark_front_gets_three_point_feedback_past_the_hot_queue():
    # The published QCN-3pt drops only 37 frames at 2 Gbit/s without PAUSE. A
    # mark riding the sampled arriving frame waits out the hot queue (up to
    # 1.35 MB / 2 Gbit/s = 5.4 ms) while the partitions overflow; a mark put
    # on the next frame to leave does not wait (docs/calibration.md section 4).
    base = load("singlehop_hotspot", seeds=[0], scheme="qcn3pt", pause=False)
    front = cnsim.run(base, progress=False).metric("dropped_cp")[0]
    arrival = cnsim.run(base.replace(**{"qcn3pt.mark_at": "enqueue"}), progress=False).metric("dropped_cp")[0]
    assert front < 500 and arrival > 4 * front, (front, arrival)


@pytest.mark.slow
@pytest.mark.parametrize(
    "scheme, paused_below",
    [
        ("qcn2pt", 10),
        # A whole simulated second of the 64-host tree each (95-100 s of
        # engine): in `cnsim validate --only fattree` with the same
        # figures, and here with `-m sweep`; CI keeps the QCN-2pt case.
        pytest.param("ecm", 10, marks=pytest.mark.sweep),
        pytest.param("qcn3pt", 15, marks=pytest.mark.sweep),
    ],
)
def test_the_fat_tree_hotspot_under_pause_is_controlled_by_every_2007_scheme(scheme, paused_below):
    # 0.5 Gbit/s hotspot with PAUSE (scenarios.md 7): the tree saturates at
    # the onset (PAUSE alone: 38% of the time paused, 343 Gbit/s); each scheme
    # must throttle the 63 hot flows, remote ones included, and let it drain.
    # QCN-3pt, whose feedback rides the hot link, drains it later. One test
    # per scheme, so that the test workers share them.
    base = load("fattree_hotspot", seeds=[0], pause=True).replace(**{"hotspot.rate_gbps": 0.5})
    r = cnsim.run(base.replace(scheme=scheme), jobs=1, progress=False)
    paused, agg = r.metric("time_paused_pct")[0], r.metric("aggregate_throughput")[0]
    assert paused < paused_below, (scheme, paused, agg)
    assert agg > 450, (scheme, paused, agg)


def test_validate_fattree_checks_single_digits_and_the_aggregate_share(monkeypatch):
    from cnsim import validate as V

    def fake(jobs, progress):
        out = {}
        for scheme in V.FATTREE_SCHEMES:
            out[(scheme, 2.0)] = {"time_paused_pct": 1.0, "aggregate_throughput": 530.0}
            out[(scheme, 0.5)] = {"time_paused_pct": 6.0, "aggregate_throughput": 500.0}
        out[("qcn3pt", 0.5)] = {"time_paused_pct": 11.0, "aggregate_throughput": 480.0}
        out[("ecm", 0.5)] = {"time_paused_pct": None, "aggregate_throughput": 470.0}  # never paused
        return out

    monkeypatch.setattr(V, "fattree_results", fake)
    rows = {(r.study, r.figure): r for r in V.fattree_study(None, False)}
    assert len(rows) == 6
    q3 = rows[("fattree 0.5G qcn3pt +pause", "time paused (%)")]
    assert not q3.ok and q3.known == "marks ride the hot link"
    assert rows[("fattree 0.5G qcn3pt +pause", "aggregate / 2 Gbit/s case")].ok  # 480 / 530 = 0.906
    assert rows[("fattree 0.5G ecm +pause", "time paused (%)")].ok
    share = rows[("fattree 0.5G ecm +pause", "aggregate / 2 Gbit/s case")]
    assert not share.ok and share.known == ""  # 470 / 530 = 0.887: out, and unexplained
    assert rows[("fattree 0.5G qcn2pt +pause", "time paused (%)")].ok
