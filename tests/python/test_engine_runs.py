"""Runs through the engine: the Bernoulli source, reproducibility, frame
conservation, and the baseline with and without PAUSE (scenarios.md 1),
including a lossless PAUSE configuration whose headroom is computed here."""

from __future__ import annotations

import io
from typing import Any

import cnsim
import numpy as np
import polars as pl
import pytest
from cnsim.scenario import builtin_names, load

pytest.importorskip("cnsim._core")


def one_hop(p: float, duration_ms: float) -> dict[str, Any]:
    """One station with load p into a sink through one bridge with an infinite buffer."""
    return {
        "name": "one_hop",
        "duration_ms": duration_ms,
        "bridge": {"buffer_mode": "infinite"},
        "nodes": [
            {"name": "S", "kind": "station", "load": p, "dest": "D"},
            {"name": "D", "kind": "station"},
            {"name": "B", "kind": "bridge"},
        ],
        "links": [{"a": "S", "b": "B"}, {"a": "B", "b": "D"}],
    }


def test_bernoulli_mean_offered_load_is_p():
    p, duration_ms = 0.3, 200.0
    res = cnsim.run(cnsim.Scenario(one_hop(p, duration_ms)), seeds=3, progress=False)
    slots = duration_ms * 1e-3 / (1500 * 8 / 10e9)  # one 1500 B frame time at 10 Gbit/s = 1.2 us
    generated = [r.frames["generated"] for r in res.runs]
    for g in generated:
        assert abs(g / slots - p) / p < 0.01, (g, p * slots)
    assert abs(np.mean(generated) / slots - p) / p < 0.005
    # No loss with an infinite buffer below line rate: what is offered arrives.
    for thr in res.metric("aggregate_throughput"):
        assert abs(thr - p * 10.0) / (p * 10.0) < 0.01
    assert max(res.metric("dropped_cp")) == 0 and max(res.metric("dropped_rp")) == 0
    assert len(set(generated)) == 3  # seeds differ


def test_same_seed_same_results_different_seed_different_results():
    sc = load("baseline", scheme="nocm", pause=True).replace(duration_ms=20.0)
    a, b, c = (cnsim.run(sc, seeds=[s], progress=False).runs[0] for s in (7, 7, 8))
    assert a.frames == b.frames and a.engine["events"] == b.engine["events"]
    assert all(a.tables[t].equals(b.tables[t]) for t in a.tables)
    assert [(s, k, v.tobytes()) for s, k, v in a.series] == [(s, k, v.tobytes()) for s, k, v in b.series]
    assert a.frames != c.frames
    qa = dict(((s, k), v) for s, k, v in a.series)[("queue_bytes", "B5->D")]
    qc = dict(((s, k), v) for s, k, v in c.series)[("queue_bytes", "B5->D")]
    assert not np.array_equal(qa, qc)


@pytest.mark.parametrize("name,scheme", [("baseline", "bcn"), ("flows_incast", "dcqcn")])
def test_where_a_step_ends_never_changes_a_result(name, scheme):
    """The engine runs in wall-time steps (`run_for`, a look at Python every
    ~0.1 s): steps cut between any two events, even at one instant, leave
    every counter and series as one uninterrupted run has them."""
    from cnsim import _core

    sc = load(name, scheme=scheme, pause=True)
    if not name.startswith("flows"):
        sc = sc.replace(duration_ms=10.0)
    cfg = sc.engine_config_checked()
    whole = _core.Simulation(cfg, 3)
    whole.run()
    steps = _core.Simulation(cfg, 3)
    n = 0
    while not steps.run_for(0.0):  # a deadline already passed: one batch of events a step
        n += 1
    assert n > 3, "the run was cut in several steps"
    a, b = steps.results(), whole.results()
    assert a.pop("engine")["events"] == b.pop("engine")["events"]
    assert a == b
    assert steps.series_buffer() == whole.series_buffer()


def test_an_engine_error_names_its_parameter_as_a_path():
    from cnsim import _core

    cfg = load("baseline").engine_config_checked()
    bad = {**cfg, "pause": {**cfg["pause"], "xoff_bytes": "many"}}
    with pytest.raises(_core.EngineConfigError) as e:
        _core.Simulation(bad, 0)
    assert e.value.path == "pause.xoff_bytes" and e.value.message
    with pytest.raises(ValueError, match="^pause.xoff_bytes: "):
        _core.check_config(bad)


def test_results_do_not_depend_on_jobs_or_seed_order():
    sc = load("baseline", scheme="nocm").replace(duration_ms=15.0)
    one = cnsim.run(sc, seeds=[0, 1, 2], jobs=1, progress=False)
    two = cnsim.run(sc, seeds=[2, 0, 1], jobs=2, progress=False)
    assert one.seeds == two.seeds == [0, 1, 2]
    assert one.summary.equals(two.summary)
    assert one.timeseries().equals(two.timeseries())


@pytest.mark.parametrize("name", builtin_names())
@pytest.mark.parametrize("pause", [False, True])
def test_the_node_table_adds_up_to_the_run_totals(name, pause):
    sc = load(name, scheme="nocm", pause=pause, seeds=[0])
    sc = sc.replace(duration_ms=min(sc.duration_ms, 30.0))
    r = cnsim.run(sc, progress=False).runs[0]
    nodes = r.tables["nodes"]
    for k in ("dropped_cp", "dropped_rp", "dropped_rl", "dropped_nic", "deferred", "generated", "delivered"):
        assert nodes[k].sum() == r.frames[k], k
    assert (nodes["dropped_rp"] == nodes["dropped_rl"] + nodes["dropped_nic"]).all()
    # The measure window's counts never exceed the run's.
    w = r.tables["windows"].row(0, named=True)
    assert w["generated"] <= r.frames["generated"] and w["delivered"] <= r.frames["delivered"]


def downlink_gbps(res: cnsim.Results, window: str = "utilization") -> list[float]:
    links = res.links().filter(pl.col("name") == "B5->D").sort("seed")
    return links[f"throughput_gbps_{window}"].to_list()


def series_mean(res: cnsim.Results, series: str, key: str, t0: float, t1: float) -> list[float]:
    ts = res.timeseries(series)
    out = []
    for seed in res.seeds:
        v = ts.filter(
            (pl.col("seed") == seed)
            & (pl.col("key") == key)
            & (pl.col("time_ms") >= t0)
            & (pl.col("time_ms") < t1)
        )["value"]
        out.append(float(v.mean()))
    return out


@pytest.fixture(scope="module")
def baseline_nocm() -> cnsim.Results:
    return cnsim.run(load("baseline", scheme="nocm"), seeds=3, jobs=2, progress=False)


def test_baseline_nocm_fills_the_downlink_and_drops_at_the_cp(baseline_nocm):
    res = baseline_nocm
    assert all(x >= 0.99 * 10.0 for x in downlink_gbps(res))  # 10-80 ms
    assert min(res.metric("link_utilization")) >= 0.99
    assert all(x >= 0.99 * 10.0 for x in series_mean(res, "link_throughput", "B5->D", 10.0, 80.0))
    assert min(res.metric("dropped_cp")) > 0
    assert max(res.metric("dropped_rp")) == 0
    assert res.metric("time_paused_pct") == [None, None, None]
    # The published expectation: drops at the CP start right after the 5 ms start.
    drops = res.timeseries("queue_bytes_max").filter((pl.col("seed") == 0) & (pl.col("time_ms") < 5.0))
    assert drops["value"].max() == 0


def test_baseline_pause_with_the_published_thresholds(baseline_nocm):
    res = cnsim.run(load("baseline", scheme="nocm", pause=True), seeds=3, jobs=2, progress=False)
    links = res.links()
    for i in range(1, 5):
        for name in (f"S{i}->B{i}", f"B{i}->B5"):
            row = links.filter(pl.col("name") == name)
            assert row["paused_ever"].all() and (row["time_paused_pct"] > 0).all(), name
    assert (links.filter(pl.col("name") == "B5->D")["time_paused_pct"] == 0).all()  # the sink never pauses
    assert min(res.metric("time_paused_pct")) > 0 and min(res.metric("pause_frames")) > 0
    assert all(x >= 0.99 * 10.0 for x in downlink_gbps(res))
    # Whatever the drops are, they are counted: the totals are the per-node sums.
    nodes = res.nodes()
    for seed, cp, rp in zip(res.seeds, res.metric("dropped_cp"), res.metric("dropped_rp"), strict=True):
        per = nodes.filter(pl.col("seed") == seed)
        assert per["dropped_cp"].sum() == cp and per["dropped_rp"].sum() == rp
        assert per.filter(pl.col("kind") == "station")["dropped_cp"].sum() == 0
    # PAUSE moves the loss from the CP back to the sources, whose generators
    # defer while their NICs are full (station.nic_full = "defer"): nothing
    # is dropped there; with "drop" the NICs drop instead.
    assert sum(res.metric("dropped_cp")) < sum(baseline_nocm.metric("dropped_cp")) / 100
    assert max(res.metric("dropped_rp")) == 0 and min(res.metric("frames_deferred")) > 0
    drop = cnsim.run(
        load("baseline", scheme="nocm", pause=True).replace(**{"station.nic_full": "drop"}),
        seeds=1,
        jobs=1,
        progress=False,
    )
    assert drop.metric("dropped_nic")[0] > 0 and drop.metric("frames_deferred")[0] == 0
    assert drop.metric("frames_delivered")[0] == res.metric("frames_delivered")[0]


def headroom_bytes(
    rate_gbps: float, delay_us: float, latency_us: float, frame: int, pause_frame: int
) -> float:
    """What can still reach a queue through one ingress port after the bridge
    decides to pause it: the frame the PAUSE may wait behind on the reverse
    link, the PAUSE frame's own serialisation, the bytes on the wire during
    2 x the link delay, the upstream bridge's latency pipeline at line rate,
    and one more frame for the refresh / frame granularity."""
    bytes_per_us = rate_gbps * 1e3 / 8
    return (
        frame  # frame in transmission
        + 2 * delay_us * bytes_per_us  # on the wire, both ways
        + pause_frame  # the PAUSE frame's serialisation
        + latency_us * bytes_per_us  # upstream latency pipeline
        + frame  # one more frame
    )


@pytest.mark.parametrize("delay_us", [0.5, 5.0])
def test_baseline_pause_is_lossless_with_enough_headroom(delay_us):
    base = load("baseline", scheme="nocm", pause=True, seeds=3, **{"defaults.link_delay_us": delay_us})
    m = base.model
    feeding_ports = 4  # B5's queue to D is fed by B1..B4
    per_port = headroom_bytes(
        m.defaults.link_rate_gbps,
        delay_us,
        m.bridge.latency_us,
        m.defaults.frame_bytes,
        m.defaults.control_frame_bytes,
    )
    xoff = int(m.bridge.buffer_bytes - feeding_ports * per_port)
    assert 0 < xoff < m.pause.xoff_bytes
    lossless = cnsim.run(
        base.replace(**{"pause.xoff_bytes": xoff, "pause.xon_bytes": xoff - 10_000}), jobs=2, progress=False
    )
    assert lossless.metric("dropped_cp") == [0, 0, 0]
    assert all(x >= 0.99 * 10.0 for x in downlink_gbps(lossless))
    assert min(lossless.metric("time_paused_pct")) > 0
    # The sources defer while paused: nothing is lost anywhere.
    assert lossless.metric("dropped_rp") == [0, 0, 0] and min(lossless.metric("frames_deferred")) > 0
    if delay_us >= 5.0:
        # The published thresholds (10 KB above XOFF) are not enough on long links.
        published = cnsim.run(base, jobs=2, progress=False)
        assert min(published.metric("dropped_cp")) > 0


def test_progress_bar_counts_simulated_ms_of_all_seeds(monkeypatch):
    import rich.console
    from rich.console import Console

    buf = io.StringIO()
    monkeypatch.setattr(
        rich.console, "Console", lambda **_: Console(file=buf, force_terminal=True, width=150)
    )
    sc = load("baseline", scheme="nocm").replace(duration_ms=10.0)
    cnsim.run(sc, seeds=2, jobs=2, progress=True)
    text = buf.getvalue()
    assert "20/20 simulated ms" in text and "2/2 seeds" in text


def test_a_run_pickles_whole():
    """A SeedRun crosses processes (Dask workers) with every typed column
    and series intact."""
    import pickle

    res = cnsim.run(load("baseline").replace(duration_ms=5.0, seeds=[0]), progress=False)
    r = res.runs[0]
    back = pickle.loads(pickle.dumps(r))
    assert all(r.table(n).equals(back.table(n)) for n in r.columns)
    assert back.table("links")["frames"].format == "Q"
    assert back.series_buffer() == r.series_buffer()
    assert back.tables["nodes"].equals(r.tables["nodes"])
