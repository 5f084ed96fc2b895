"""The results' files and series are declared once, in the engine
(crates/cnsim-core/src/outputs.rs, declarations.json's `outputs`): every
Parquet file a run saves has exactly its declared columns, in order, with
their declared types (a table without rows too), and every series it
records is declared with its unit."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import cnsim
import polars as pl
import pytest
from cnsim.declarations import output_columns, outputs

_TYPES = {"str": pl.String, "u64": pl.UInt64, "i64": pl.Int64, "f64": pl.Float64, "bool": pl.Boolean}


def _matches(pattern: str, column: str) -> bool:
    return (
        re.fullmatch(
            re.sub(r"<\w+>", ".+", re.escape(pattern).replace(r"\<", "<").replace(r"\>", ">")), column
        )
        is not None
    )


def _check(path: Path, declared: str) -> None:
    """`path`'s columns are `declared`'s, in order (a pattern column one or
    more times in its place), each of its declared type."""
    schema = pl.read_parquet_schema(path)
    cols = list(schema.items())
    i = 0
    for pattern, dtype in output_columns(declared):
        n = 0
        while i < len(cols) and _matches(pattern, cols[i][0]) and ("<" in pattern or n == 0):
            name, got = cols[i]
            assert got == _TYPES[dtype], f"{path.name}: {name} is {got}, declared {dtype}"
            i, n = i + 1, n + 1
        assert n or "<" in pattern, f"{path.name}: no column {pattern} (columns: {list(schema)})"
    assert i == len(cols), f"{path.name}: undeclared columns {[c for c, _ in cols[i:]]}"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, changes in (
            ("baseline", {"duration_ms": 3.0, "seeds": [0, 1]}),
            ("flows_incast", {"seeds": [0]}),
        ):
            sc = cnsim.load(name).replace(**changes)
            out[name] = cnsim.run(sc, progress=False).save(tmp_path_factory.mktemp(name) / "r", report=False)
    return out


FILES = {
    "baseline": ["flows", "queues", "links", "nodes", "windows", "runs", "timeseries"],
    "flows_incast": ["flows_transport", "pairs", "queues", "links", "nodes", "windows", "runs", "timeseries"],
}


@pytest.mark.parametrize("scenario, declared", [(s, d) for s, ds in FILES.items() for d in ds])
def test_every_saved_file_has_its_declared_columns(saved, scenario, declared):
    file = next(f["file"] for f in outputs()["files"] if f["name"] == declared)
    _check(saved[scenario] / file, declared)


def test_a_file_without_rows_keeps_its_declared_columns(tmp_path):
    """No traced port: queues.parquet has no rows, and its declared columns."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = cnsim.load("baseline", seeds=[0]).replace(duration_ms=1.0, **{"trace.ports": []})
        out = cnsim.run(sc, progress=False).save(tmp_path / "r", report=False)
    assert pl.read_parquet(out / "queues.parquet").height == 0
    _check(out / "queues.parquet", "queues")


def test_every_recorded_series_is_declared_with_its_unit(saved):
    declared = {s["name"]: s["unit"] for s in outputs()["series"]}
    for out in saved.values():
        names = set(pl.read_parquet(out / "timeseries.parquet")["series"].unique())
        assert names and names <= set(declared), names - set(declared)
    res = cnsim.open_results(saved["baseline"])
    assert res.to_xarray()["aggregate_throughput"].attrs["units"] == declared["aggregate_throughput"]


def test_a_planted_column_is_found(saved, tmp_path):
    """The check can fail: a file with a column its declaration lacks."""
    df = pl.read_parquet(saved["baseline"] / "nodes.parquet").with_columns(extra=pl.lit(1.0))
    df.write_parquet(tmp_path / "nodes.parquet")
    with pytest.raises(AssertionError, match="undeclared columns"):
        _check(tmp_path / "nodes.parquet", "nodes")
