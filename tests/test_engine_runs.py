"""Runs through the engine: the Bernoulli source, reproducibility, frame
conservation, and the baseline with and without PAUSE (scenarios.md 1),
including a lossless PAUSE configuration with the engine's headroom formula;
then end to end through the Python API and the CLI (offered load,
determinism, the results layout)."""

from __future__ import annotations

import io
import json
from typing import Any

import cnsim
import cnsim._core  # noqa: E402,F401  (a broken engine fails the module, never skips it)
import numpy as np
import polars as pl
import pytest
from cnsim.scenario import builtin_names, load
from cnsim.scenario.engine_config import pause_headroom_bytes


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


# The packet model's built-ins (flows_pods is the flow-level model's 6,144-host case:
# tests/test_fidelity.py checks its node table on a small fabric).
@pytest.mark.parametrize("name", [n for n in builtin_names() if n not in ("flows_pods", "hpcc_fattree")])
@pytest.mark.parametrize("pause", [False, True])
def test_the_node_table_adds_up_to_the_run_totals(name, pause):
    sc = load(name, scheme="nocm", pause=pause, seeds=[0])
    sc = sc.replace(duration_ms=min(sc.duration_ms, 30.0))
    r = cnsim.run(sc, progress=False).runs[0]
    nodes = r.tables["nodes"]
    for k in ("dropped_cp", "dropped_rp", "dropped_rl", "dropped_nic", "deferred", "generated", "delivered"):
        assert nodes[k].sum() == r.frames[k], k
    # The measure window's counts never exceed the run's.
    w = r.tables["windows"].row(0, named=True)
    assert w["generated"] <= r.frames["generated"] and w["delivered"] <= r.frames["delivered"]


def downlink_gbps(res: cnsim.Results, window: str = "utilization") -> list[float]:
    links = res.links.filter(pl.col("name") == "B5->D").sort("seed")
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
    links = res.links
    for i in range(1, 5):
        for name in (f"S{i}->B{i}", f"B{i}->B5"):
            row = links.filter(pl.col("name") == name)
            assert row["paused_ever"].all() and (row["time_paused_pct"] > 0).all(), name
    assert (links.filter(pl.col("name") == "B5->D")["time_paused_pct"] == 0).all()  # the sink never pauses
    assert min(res.metric("time_paused_pct")) > 0 and min(res.metric("pause_frames")) > 0
    assert all(x >= 0.99 * 10.0 for x in downlink_gbps(res))
    # Whatever the drops are, they are counted: the totals are the per-node sums.
    nodes = res.nodes
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


@pytest.mark.parametrize("delay_us", [0.5, 5.0])
def test_baseline_pause_is_lossless_with_enough_headroom(delay_us):
    base = load("baseline", scheme="nocm", pause=True, seeds=3, **{"defaults.link_delay_us": delay_us})
    m = base.model
    # B5's queue to D is fed by B1..B4 (the engine's formula, docs/schemes.md).
    xoff = m.bridge.buffer_bytes - pause_headroom_bytes(m, ingress_ports=4)
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


# ---------------------------------------------- end to end through the API and the CLI


def _line(load_p: float, duration_ms: float) -> dict:
    return {
        "name": "line",
        "duration_ms": duration_ms,
        "bridge": {"buffer_mode": "infinite"},
        "nodes": [
            {"name": "S", "kind": "station", "load": load_p, "dest": "D"},
            {"name": "D", "kind": "station"},
            {"name": "B", "kind": "bridge"},
        ],
        "links": [{"a": "S", "b": "B"}, {"a": "B", "b": "D"}],
    }


def test_bernoulli_source_offers_p_within_one_percent_and_seeds_differ():
    p = 0.37
    res = cnsim.run(cnsim.Scenario(_line(p, 500.0), seeds=[0, 1]), progress=False)
    slots = 500e-3 / 1.2e-6
    gen = [r.frames["generated"] for r in res.runs]
    for g in gen:
        assert abs(g / slots - p) / p < 0.01
    assert gen[0] != gen[1]


@pytest.mark.slow
def test_same_seed_gives_byte_identical_results(tmp_path, cli):
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}"
        r = cli(
            "run",
            "baseline",
            "--scheme",
            "bcn",
            "--seed",
            "3",
            "--duration",
            "30",
            "--out",
            str(out),
            "--no-report",
        )
        assert r.returncode == 0, r.stderr
        outs.append(out)
    a, b = ((o / "timeseries.parquet").read_bytes() for o in outs)
    assert a == b
    for name in ("flows.parquet", "links.parquet", "scenario.toml"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
    sa, sb = (json.loads((o / "summary.json").read_text()) for o in outs)
    for s in (sa, sb):
        for k in ("wall_s", "events_per_s", "frames_delivered_per_s"):
            s["engine"].pop(k)
        s.pop("crc32")  # summary.json's own CRC-32 covers the wall-clock figures too
    assert sa == sb
    # A different seed differs.
    r = cli(
        "run",
        "baseline",
        "--scheme",
        "bcn",
        "--seed",
        "4",
        "--duration",
        "30",
        "--out",
        str(tmp_path / "r4"),
        "--no-report",
    )
    assert r.returncode == 0
    assert (tmp_path / "r4" / "timeseries.parquet").read_bytes() != a


def test_results_do_not_depend_on_the_number_of_workers():
    sc = load("baseline", scheme="bcn", seeds=[0, 1, 2]).replace(duration_ms=20.0)
    one = cnsim.run(sc, jobs=1, progress=False)
    two = cnsim.run(sc, jobs=2, progress=False)
    assert one.summary.equals(two.summary)


def test_baseline_nocm_fills_the_downlink_and_each_uplink_carries_its_load():
    res = cnsim.run(load("baseline", scheme="nocm", seeds=[0, 1]), progress=False)
    assert min(res.metric("link_utilization")) >= 0.99
    assert min(res.metric("dropped_cp")) > 0
    assert max(res.metric("dropped_rp")) == 0
    # 4 x 4.9 = 19.6 Gbit/s offered; each source's own uplink carries its load.
    links = res.links
    up = links.filter(pl.col("name") == "S1->B1")["throughput_gbps_utilization"]
    assert all(abs(x - 4.9) < 0.1 for x in up)


def test_baseline_pause_lossless_with_headroom_and_downlink_busy():
    sc = load("baseline", scheme="nocm", pause=True, seeds=[0, 1])
    # B5's queue to D is fed by B1..B4.
    xoff = 150_000 - pause_headroom_bytes(sc.model, ingress_ports=4)
    sc = sc.replace(**{"pause.xoff_bytes": xoff, "pause.xon_bytes": xoff - 10_000})
    res = cnsim.run(sc, progress=False)
    assert max(res.metric("dropped_cp")) == 0
    assert min(res.metric("link_utilization")) >= 0.99
    assert min(res.metric("time_paused_pct")) > 0
    links = res.links
    for i in range(1, 5):
        row = links.filter((pl.col("name") == f"B{i}->B5") & (pl.col("seed") == 0))
        assert row["paused_ever"][0] and row["time_paused_pct"][0] > 0


def test_baseline_pause_with_published_thresholds_counts_every_drop():
    res = cnsim.run(load("baseline", scheme="pause", seeds=[0]), progress=False)
    nodes = res.nodes
    assert nodes["dropped_cp"].sum() == res.metric("dropped_cp")[0]
    assert nodes["dropped_rp"].sum() == res.metric("dropped_rp")[0]
    assert res.metric("time_paused_pct")[0] > 0
    assert res.metric("link_utilization")[0] >= 0.99


@pytest.mark.slow
def test_results_layout(tmp_path, cli):
    out = tmp_path / "res"
    r = cli(
        "run", "baseline", "--scheme", "bcn", "--seeds", "2", "--duration", "40", "--out", str(out), "--json"
    )
    assert r.returncode == 0, r.stderr
    printed = json.loads(r.stdout)
    for f in (
        "scenario.toml",
        "summary.json",
        "flows.parquet",
        "links.parquet",
        "timeseries.parquet",
        "report.html",
    ):
        assert (out / f).is_file(), f
    s = json.loads((out / "summary.json").read_text())
    assert (
        s["scenario"] == "baseline" and s["scheme"] == "bcn" and s["pause"] is False and s["seeds"] == [0, 1]
    )
    assert set(s["engine"]) >= {
        "events",
        "frames",
        "wall_s",
        "events_per_s",
        "frames_delivered_per_s",
        "version",
    }
    for name in ("aggregate_throughput", "dropped_cp", "dropped_rp", "overhead_mbps", "jain", "dev_max"):
        m = s["metrics"][name]
        assert {"mean", "std", "ci_low", "ci_high", "min", "max", "per_seed"} <= set(m)
        assert len(m["per_seed"]) == 2
    assert s["metrics"]["time_paused_pct"]["mean"] is None  # nothing paused: null, not NaN
    assert printed["metrics"] == s["metrics"]
    ts = pl.read_parquet(out / "timeseries.parquet")
    assert ts.columns == ["seed", "time_ms", "series", "key", "value"]
    assert {"aggregate_throughput", "flow_throughput", "queue_bytes", "rl_rate", "rlq_bytes"} <= set(
        ts["series"].unique()
    )
    html = (out / "report.html").read_text()
    import re

    imgs = re.findall(r'src="([^"]+)"', html)
    assert {"throughput.png", "queue.png", "rl_rate.png", "fairness.png"} <= set(imgs)
    assert all((out / i).is_file() for i in imgs)
    # The saved scenario re-runs.
    again = load(out / "scenario.toml")
    assert again.scheme == "bcn" and again.duration_ms == 40


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "nosuch"], "unknown scenario 'nosuch'"),
        (["run", "baseline", "--set", "nosuch.key=1"], "unknown parameter 'nosuch'"),
        (
            ["run", "baseline", "--set", "defaults.link_rate_gbps=-10"],
            "defaults.link_rate_gbps: -10 is not allowed",
        ),
        (["run", "baseline", "--set", "nodes.S1.load=-0.2"], "nodes.S1.load: -0.2 is not allowed"),
        (["run", "baseline", "--scheme", "nosuch"], "'nosuch' is not a known scheme"),
        (["run", "baseline", "--seeds", "0"], "--seeds: 0 is not allowed"),
        (["run", "baseline", "--duration", "-5"], "--duration: -5.0 is not allowed"),
        (["run", "baseline", "--jobs", "0"], "--jobs: 0 is not allowed"),
        (["validate", "--only", "nosuch"], "--only: 'nosuch' is not a study"),
        (["run", "baseline", "--bogus-option"], "No such option"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(cli, args, needle):
    r = cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert needle in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert "panicked" not in r.stderr


def test_malformed_toml_exits_2(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\nduration_ms = [1, \n")
    r = cli("run", str(bad))
    assert r.returncode == 2
    assert "malformed TOML" in r.stderr and "Traceback" not in r.stderr
    missing = cli("run", str(tmp_path / "missing.toml"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_list_show_and_bench(cli):
    r = cli("list")
    assert r.returncode == 0 and "baseline" in r.stdout and "qcn3pt" in r.stdout
    r = cli("show", "baseline")
    assert r.returncode == 0
    import tomllib

    shown = tomllib.loads(r.stdout)
    assert shown["bcn"]["qeq_pages"] == 375 and shown["pause"]["xoff_bytes"] == 140_000
    r = cli("bench", "--json", "--duration-ms", "50")
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)
    assert {
        "frames",
        "frames_delivered",
        "frames_delivered_per_s",
        "events",
        "events_per_s",
        "wall_s",
        "sim_speed",
    } <= set(b)
    # 50 ms of 4 x 4.9 Gbit/s: about 81,700 frames generated, half of them delivered.
    assert 80_000 < b["frames"] < 83_500 and 41_000 < b["frames_delivered"] < 42_000


def test_a_run_pickles_whole():
    """A SeedRun crosses processes (Dask workers) with every typed column
    and series intact."""
    import pickle

    res = cnsim.run(load("baseline").replace(duration_ms=5.0, seeds=[0]), progress=False)
    r = res.runs[0]
    back = pickle.loads(pickle.dumps(r))
    for n in r.columns:
        a, b = r.table(n), back.table(n)
        assert a.columns == b.columns and all(list(a[c]) == list(b[c]) for c in a.columns), n
    assert back.table("links")["frames"].format == "Q"
    assert back.series_buffer() == r.series_buffer()
    assert back.tables["nodes"].equals(r.tables["nodes"])
