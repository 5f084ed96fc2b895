"""End-to-end behaviour through the Python API and the CLI: offered load,
determinism, the baseline with and without PAUSE, the results layout."""

import json

import cnsim
import polars as pl
import pytest
from cnsim.scenario import load
from cnsim.scenario.resolve import pause_headroom_bytes


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


def test_baseline_nocm_fills_the_downlink_and_drops_at_the_cp():
    res = cnsim.run(load("baseline", scheme="nocm", seeds=[0, 1]), progress=False)
    assert min(res.metric("link_utilization")) >= 0.99
    assert min(res.metric("dropped_cp")) > 0
    assert max(res.metric("dropped_rp")) == 0
    # 4 x 4.9 = 19.6 Gbit/s offered; each source's own uplink carries its load.
    links = res.links()
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
    links = res.links()
    for i in range(1, 5):
        row = links.filter((pl.col("name") == f"B{i}->B5") & (pl.col("seed") == 0))
        assert row["paused_ever"][0] and row["time_paused_pct"][0] > 0


def test_baseline_pause_with_published_thresholds_counts_every_drop():
    res = cnsim.run(load("baseline", scheme="pause", seeds=[0]), progress=False)
    nodes = res.nodes()
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
