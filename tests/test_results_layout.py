"""Results: the Python API (summary, metric, timeseries, plot) and the
on-disk layout of interface.md / docs/results.md (scenario.toml,
summary.json, parquet files, report.html with its PNGs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cnsim
import cnsim._core  # noqa: E402,F401  (a broken engine fails the module, never skips it)
import polars as pl
import pytest
from cnsim.scenario import load, resolve

SCALAR_METRICS = {
    "aggregate_throughput",
    "dropped_cp",
    "dropped_rp",
    "time_paused_pct",
    "time_paused_pct_all",
    "time_paused_pct_max",
    "pause_frames",
    "overhead_mbps",
    "frames",
    "frames_delivered",
    "link_utilization",
    "dev_max",
    "dev_min",
    "dev_mean",
    "dev_rms",
    "jain",
}


def _strict_json(text: str) -> dict:
    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} in JSON")

    return json.loads(text, parse_constant=no_constants)


@pytest.fixture(scope="module")
def paused(tmp_path_factory) -> tuple[cnsim.Results, Path]:
    sc = load("baseline", scheme="nocm", pause=True).replace(duration_ms=40.0)
    res = cnsim.run(sc, seeds=2, progress=False)
    out = res.save(tmp_path_factory.mktemp("paused") / "out")
    return res, out


def test_api_summary_metric_timeseries_plot(paused):
    res, _ = paused
    s = res.summary
    assert isinstance(s, pl.DataFrame) and s["seed"].to_list() == [0, 1]
    assert SCALAR_METRICS <= set(s.columns)
    assert res.metric("dropped_rp") == s["dropped_rp"].to_list()
    with pytest.raises(KeyError, match="no metric 'nosuch'"):
        res.metric("nosuch")
    q = res.timeseries("queue_bytes", seed=1)
    assert set(q["seed"].unique()) == {1} and set(q["key"].unique()) == {"B5->D"}
    assert q.height == 400  # 40 ms in 100 us bins
    assert q["time_ms"].to_list()[:3] == pytest.approx([0.0, 0.1, 0.2])
    assert q["value"].max() <= 150_000
    fig = res.plot("queue_bytes")
    assert fig.axes and fig.axes[0].lines
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_files_and_summary_schema(paused):
    res, out = paused
    for f in (
        "scenario.toml",
        "summary.json",
        "flows.parquet",
        "links.parquet",
        "nodes.parquet",
        "windows.parquet",
        "runs.parquet",
        "timeseries.parquet",
        "timing.json",
        "report.html",
    ):
        assert (out / f).is_file(), f
        assert (out / f).stat().st_mode & 0o044, f"{f} is not readable by others"
    s = _strict_json((out / "summary.json").read_text())
    assert {"scenario", "scheme", "pause", "seeds", "metrics", "aggregates", "engine"} <= set(s)
    assert (s["scenario"], s["scheme"], s["pause"], s["seeds"]) == ("baseline", "nocm", True, [0, 1])
    assert isinstance(s["aggregates"], dict)
    assert {"events", "frames", "wall_s", "events_per_s", "frames_delivered_per_s", "version"} <= set(
        s["engine"]
    )
    assert s["engine"]["version"] == cnsim._core.version()
    assert SCALAR_METRICS <= set(s["metrics"])
    for name, m in s["metrics"].items():
        assert set(m) == {"mean", "std", "ci_low", "ci_high", "min", "max", "n", "per_seed"}, name
        assert len(m["per_seed"]) == 2
        vals = [v for v in m["per_seed"] if v is not None]
        assert m["n"] == len(vals)
        if vals:
            assert m["min"] == min(vals) and m["max"] == max(vals)
            assert m["min"] <= m["mean"] <= m["max"]
        else:
            assert m["mean"] is None and m["min"] is None and m["max"] is None
        assert m["ci_low"] is None and m["ci_high"] is None  # two seeds: no interval
    assert s["metrics"]["time_paused_pct"]["min"] > 0


def test_parquet_files(paused):
    res, out = paused
    windows = ["measure", "fairness", "utilization"]
    flows = pl.read_parquet(out / "flows.parquet")
    assert flows.height == 2 * 4  # seeds x flows S1..S4 -> D
    assert {"seed", "src", "dst", "generated", "delivered"} | {
        f"throughput_gbps_{w}" for w in windows
    } <= set(flows.columns)
    links = pl.read_parquet(out / "links.parquet")
    assert links.height == 2 * 18  # seeds x link directions
    assert {"seed", "name", "from", "to", "time_paused_pct", "pause_frames", "paused_ever"} <= set(
        links.columns
    )
    nodes = pl.read_parquet(out / "nodes.parquet")
    assert nodes.height == 2 * 10  # seeds x nodes
    for seed in (0, 1):
        per = nodes.filter(pl.col("seed") == seed)
        assert per["dropped_cp"].sum() == res.metric("dropped_cp")[seed]
        assert per["dropped_rp"].sum() == res.metric("dropped_rp")[seed]
    ts = pl.read_parquet(out / "timeseries.parquet")
    assert ts.columns == ["seed", "time_ms", "series", "key", "value"]
    assert ts.schema["seed"] == pl.Int64 and ts.schema["value"] == pl.Float64
    assert ts.height == sum(len(v) for r in res.runs for _, _, v in r.series)
    assert {
        "aggregate_throughput",
        "flow_throughput",
        "link_throughput",
        "queue_bytes",
        "paused_fraction",
    } <= set(ts["series"].unique())
    # Per (seed, series, key): bins in time order, one per 100 us.
    g = ts.group_by(["seed", "series", "key"], maintain_order=True).agg(pl.col("time_ms"))
    assert all(t == sorted(t) and len(t) == 400 for t in g["time_ms"].to_list())


def test_report_html_references_existing_pngs(paused):
    res, out = paused
    html = (out / "report.html").read_text()
    imgs = re.findall(r'<img src="([^"]+)"', html)
    assert {"throughput.png", "queue.png", "paused.png", "fairness.png"} <= set(imgs)
    for img in imgs:
        data = (out / img).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, img
    for name in res.stats:
        assert f"<td>{name}</td>" in html
    assert "xoff_bytes = 140000" in html  # the scenario parameters


def test_saved_scenario_reruns_the_same_config(paused):
    res, out = paused
    again = load(out / "scenario.toml")
    assert resolve(again) == resolve(res.scenario)
    assert again.seeds == [0, 1] and again.pause and again.scheme == "nocm"


def test_nothing_paused_is_null_not_nan(tmp_path):
    res = cnsim.run(load("baseline", scheme="nocm").replace(duration_ms=12.0), seeds=1, progress=False)
    out = res.save(tmp_path / "r")
    s = _strict_json((out / "summary.json").read_text())
    assert s["metrics"]["time_paused_pct"] == {
        "mean": None,
        "std": None,
        "ci_low": None,
        "ci_high": None,
        "min": None,
        "max": None,
        "n": 0,
        "per_seed": [None],
    }
    assert "fairness" not in s["metrics"] and "jain" not in s["metrics"]  # no fairness window in 12 ms
    assert not (out / "paused.png").exists()
    html = (out / "report.html").read_text()
    assert all((out / i).is_file() for i in re.findall(r'<img src="([^"]+)"', html))
