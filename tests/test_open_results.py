"""A saved run reopens as the same Results (cnsim.open_results): the same
metrics to the last bit, the same tables, a readable repr and notebook HTML,
and pandas / xarray views of it. A sweep directory reopens as SweepResults."""

from __future__ import annotations

import json
import sys

import cnsim
import polars as pl
import pytest
from polars.testing import assert_frame_equal


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    sc = cnsim.load("singlehop_hotspot", scheme="qcn2pt", pause=True, seeds=[0, 1]).replace(
        duration_ms=12.0, **{"hotspot.start_ms": 2.0, "hotspot.end_ms": 10.0}
    )
    res = cnsim.run(sc, progress=False)
    out = res.save(tmp_path_factory.mktemp("run") / "r", report=False)
    return res, out


def test_reopened_results_equal_the_run(saved):
    res, out = saved
    back = cnsim.open_results(out)
    assert isinstance(back, cnsim.Results)
    assert back.seeds == res.seeds == [0, 1]
    assert json.dumps(back.stats, sort_keys=True) == json.dumps(res.stats, sort_keys=True)
    saved_summary = json.loads((out / "summary.json").read_text())
    assert saved_summary.pop("crc32") is not None  # summary.json's own CRC-32 (cnsim.check)
    assert back.summary_dict() == saved_summary
    for table in ("summary", "flows", "links", "nodes", "windows", "timeseries"):
        assert_frame_equal(back.to_polars(table), res.to_polars(table))


def test_repr_and_html_name_the_run_and_its_intervals(saved):
    res, _ = saved
    text = repr(res)
    assert text.startswith("<cnsim.Results singlehop_hotspot / qcn2pt + PAUSE / 2 seed(s)>")
    assert "aggregate_throughput" in text and "(n < 3: no CI)" in text  # two seeds: no interval
    html = res._repr_html_()
    assert "<details" in html and "aggregate_throughput" in html and "95%" in html


def test_pandas_and_xarray_views(saved):
    res, _ = saved
    df = res.to_pandas("flows")
    assert list(df.columns) == res.to_polars("flows").columns and len(df) == len(res.flows)
    import xarray as xr  # the dev extra: missing, the test fails

    ds = res.to_xarray()
    assert isinstance(ds, xr.Dataset)
    q = ds["queue_bytes"]
    assert q.dims == ("seed", "queue_bytes_key", "time_ms") and q.attrs["units"] == "bytes"
    ts = res.timeseries().filter(pl.col("series") == "queue_bytes")
    first = ts.row(0, named=True)
    assert (
        q.sel(seed=first["seed"], queue_bytes_key=first["key"], time_ms=first["time_ms"]).item()
        == first["value"]
    )


def test_a_table_name_is_checked(saved):
    res, _ = saved
    with pytest.raises(ValueError, match="table: 'flow' is not allowed; expected one of summary, flows"):
        res.to_polars("flow")


def test_what_is_not_a_results_directory_is_named(tmp_path, saved):
    with pytest.raises(cnsim.ScenarioError, match="not a results directory"):
        cnsim.open_results(tmp_path)
    _, out = saved
    damaged = tmp_path / "d"
    damaged.mkdir()
    for f in out.iterdir():
        if f.name != "runs.parquet":
            (damaged / f.name).write_bytes(f.read_bytes())
    with pytest.raises(cnsim.ScenarioError, match="runs.parquet is missing"):
        cnsim.open_results(damaged)


def test_importing_the_cli_loads_no_heavy_library():
    # `cnsim --help` stays fast because nothing heavy is imported up front.
    import subprocess

    code = (
        "import sys, cnsim.cli; "
        "print(sorted(m for m in ('polars', 'numpy', 'matplotlib', 'scipy', 'pyarrow', 'pandas') if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


HEAVY = ("polars", "numpy", "matplotlib", "scipy", "pyarrow", "pandas", "dask", "distributed", "pydantic")


@pytest.mark.parametrize("scenario", ["flows_incast", "baseline"])
def test_a_run_without_report_imports_no_dataframe_library_numpy_or_scipy(scenario, tmp_path):
    """`cnsim run --no-report` (three seeds: the confidence intervals too, a
    flow run: the flow metrics) reads the engine's columns and writes its
    Parquet through the engine: none of the heavy libraries is imported
    (issue 30: they cost more start-up than the simulation), nor pydantic
    (scenarios are read by cnsim.parameters)."""
    import subprocess

    out = tmp_path / "out"
    code = (
        "import runpy, sys, atexit, json\n"
        "heavy = " + repr(HEAVY) + "\n"
        "atexit.register(lambda: print(json.dumps(sorted(m for m in heavy if m in sys.modules)), file=sys.stderr))\n"
        f"sys.argv = ['cnsim', 'run', '{scenario}', '--seeds', '3', '--duration', '25', '--no-report', "
        f"'--jobs', '1', '--out', r'{out}']\n"
        "runpy.run_module('cnsim', run_name='__main__')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert (out / "summary.json").is_file() and (out / "timeseries.parquet").is_file()
    assert r.stderr.strip().splitlines()[-1] == "[]", r.stderr


def test_metrics_is_a_table_and_the_tables_are_attributes(saved):
    res, _ = saved
    m = res.metrics
    assert isinstance(m, pl.DataFrame)
    assert m.columns == ["metric", "mean", "ci_low", "ci_high", "n", "std", "min", "max"]
    row = m.filter(pl.col("metric") == "aggregate_throughput").row(0, named=True)
    s = res.stats["aggregate_throughput"]
    assert (row["mean"], row["n"], row["min"]) == (s["mean"], s["n"], s["min"]) and row["n"] == 2
    assert m["metric"].to_list() == list(res.stats)
    # Tables are attributes, as res.summary always was; what takes arguments is a method.
    for name in ("summary", "metrics", "flows", "pairs", "links", "nodes", "windows", "queues"):
        assert isinstance(getattr(res, name), pl.DataFrame), name
    assert res.to_polars("links").equals(res.links) and callable(res.timeseries)
