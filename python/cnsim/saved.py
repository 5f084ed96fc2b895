"""Reading a run's results directory back (`cnsim.open_results`, `cnsim
report`): checked first, file by file against its summary.json
(cnsim.check), then each Parquet table converted once and cut at its seeds'
boundaries into the SeedRuns the Results is rebuilt from. Above
cnsim.results (whose Results it builds) and below cnsim.sweeps and
cnsim.reopen (which read their points and directories through it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .engine import SeedRun
from .errors import ScenarioError
from .results import _RUN_FIELDS, FLOW_RECORD_COLUMNS, TIMING_JSON, Results
from .tables import Table

#: Columns each Parquet file must have to be read back.
_NEED = {
    "runs": ("seed", *_RUN_FIELDS),
    "windows": ("seed",),
    "flows": ("seed",),
    "pairs": ("seed",),
    "links": ("seed",),
    "nodes": ("seed",),
    "queues": ("seed", "port", "lower_bytes", "time_ps"),
    "timeseries": ("seed", "series", "key", "value"),
}


def _saved_runs(out: Path, transport: bool) -> list[SeedRun]:
    """The SeedRuns of a results directory, rebuilt from its Parquet files
    (checked beforehand: cnsim.check). Each table is converted once and cut
    at its seeds' boundaries (its rows are written seed by seed), so
    reopening takes time in proportion to the rows, whatever the seeds."""
    import numpy as np
    import polars as pl

    def read(name: str) -> Any:
        return _read_parquet(out / f"{name}.parquet", _NEED.get(name, ()))

    runs_t = read("runs")
    tables = {n: read(n) for n in ("windows", "flows", "links", "nodes")}
    if (out / "queues.parquet").exists():
        q = read("queues")
        if len(q):
            tables["queue_hist"] = q.select("seed", "port", "lower_bytes", "time_ps")
    if transport:
        # A run with transport flows: flows.parquet holds the flow records.
        records = tables["flows"]
        missing = [c for c in FLOW_RECORD_COLUMNS if c not in records.columns]
        if missing:
            raise ScenarioError(
                f"{out / 'flows.parquet'}: has no column {missing[0]}, so it holds no flow records "
                "(the scenario has a [workload]); the results directory is damaged"
            )
        tables["flows"] = read("pairs")
        tables["flow_records"] = records.select(["seed", *FLOW_RECORD_COLUMNS])
    for name in ("collectives", "iterations", "collective_ranks"):
        if (out / f"{name}.parquet").is_file():  # collective jobs
            tables[name] = read(name)
    ts = read("timeseries")
    walls = _wall_times(out, runs_t)
    # flows and links were saved with their derived columns: keep the raw counters.
    derived = ("throughput_gbps_", "time_paused_pct")

    def spans(seed_col: Any) -> dict[int, tuple[int, int]]:
        """Where each seed's rows are: {seed: (start, stop)}."""
        seeds = seed_col.to_numpy()
        if not len(seeds):
            return {}
        cut = np.flatnonzero(np.diff(seeds)) + 1
        starts, stops = np.r_[0, cut], np.r_[cut, len(seeds)]
        return {int(seeds[a]): (int(a), int(b)) for a, b in zip(starts, stops, strict=True)}

    split = {}
    for name, t in tables.items():
        if not t["seed"].is_sorted():
            t = t.sort("seed", maintain_order=True)
        cols = [c for c in t.columns if c != "seed" and not c.startswith(derived)]
        split[name] = (spans(t["seed"]), Table.from_polars(t.select(cols)))
    if not ts["seed"].is_sorted():
        ts = ts.sort("seed", maintain_order=True)
    ts_spans = spans(ts["seed"])
    values = ts["value"].to_numpy().astype("<f8")
    # The series of each seed: runs of rows of one (series, key), as the engine wrote them.
    first = ts.select(
        (
            (pl.col("seed") != pl.col("seed").shift())
            | (pl.col("series") != pl.col("series").shift())
            | (pl.col("key") != pl.col("key").shift())
        ).fill_null(True)
    ).to_series()
    starts = np.flatnonzero(first.to_numpy())
    stops = np.r_[starts[1:], len(values)].astype(np.int64)
    names = ts["series"].gather(starts).to_list() if len(starts) else []
    keys = ts["key"].gather(starts).to_list() if len(starts) else []
    group_seeds = ts["seed"].gather(starts).to_list() if len(starts) else []
    index_of: dict[int, list[tuple[str, str, int, int]]] = {}
    for s_, n_, k_, a, b in zip(group_seeds, names, keys, starts.tolist(), stops.tolist(), strict=True):
        base = ts_spans[s_][0]
        index_of.setdefault(s_, []).append((n_, k_, a - base, b - a))
    runs = []
    for row in runs_t.iter_rows(named=True):
        seed = row["seed"]
        header = {
            **{k: row[k] for k in _RUN_FIELDS},
            "frames": {k[7:]: v for k, v in row.items() if k.startswith("frames.")},
            "engine": {k[7:]: v for k, v in row.items() if k.startswith("engine.")},
        }
        header["engine"].setdefault("wall_s", walls.get(seed, 0.0))
        per = {}
        for name, (where, table) in split.items():
            a, b = where.get(seed, (0, 0))
            per[name] = table.slice(a, b)
        a, b = ts_spans.get(seed, (0, 0))
        runs.append(SeedRun(seed, header, per, index_of.get(seed, []), values[a:b].tobytes()))
    return runs


def _wall_times(out: Path, runs_t: Any) -> dict[int, float]:
    """Each seed's engine wall time from timing.json (checked: cnsim.check);
    {} without it (directories written before it existed keep engine.wall_s
    in runs.parquet)."""
    path = out / TIMING_JSON
    if not path.is_file():
        return {}
    try:
        t = json.loads(path.read_text())
        walls = t["wall_s"]
        seeds = runs_t["seed"].to_list()
        return {s: float(w or 0.0) for s, w in zip(seeds, walls, strict=True)}
    except (OSError, ValueError, RecursionError, KeyError, TypeError) as e:
        raise ScenarioError(f"{path}: cannot be read ({e}); the results directory is damaged") from None


def _read_parquet(path: Path, need: tuple[str, ...] = ()) -> Any:
    """A Parquet file of a results directory (checked to be of its run
    beforehand: cnsim.check), with the columns `need`."""
    import polars as pl

    try:
        df = pl.read_parquet(path)
    except FileNotFoundError:
        raise ScenarioError(
            f"{path.parent}: {path.name} is missing; not a complete results directory"
        ) from None
    except Exception as e:  # a damaged file: name it
        raise ScenarioError(
            f"{path}: cannot be read ({type(e).__name__}); the results directory is damaged"
        ) from None
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ScenarioError(f"{path}: has no column {missing[0]}; the results directory is damaged")
    return df


def read_results(path: str | Path) -> Results:
    """A run's results directory (written by `Results.save` or `cnsim run
    --out`) read back as the Results it was (`cnsim.open_results` also
    opens sweep directories). The directory is checked first, file by file
    against summary.json (`cnsim check`, cnsim.check): a file of another
    run, a damaged, missing or unlisted one is refused naming it."""
    from .check import checked

    out = Path(path)
    saved = checked(out).summary
    assert saved is not None
    return read_checked(out, saved)


def read_checked(out: Path, saved: dict[str, Any]) -> Results:
    """The Results of results directory `out`, already checked (cnsim.check),
    whose summary.json is `saved`."""
    from .scenario import load

    scenario = load(out / "scenario.toml")
    runs = _saved_runs(out, scenario.model.workload is not None)
    scenario = scenario.replace(seeds=saved.get("seeds_requested") or saved.get("seeds") or scenario.seeds)
    res = Results(scenario, runs)
    if saved.get("scenario_sha256") is not None:
        res._scenario_sha256 = saved["scenario_sha256"]
    if saved.get("files"):
        res._files = saved["files"]
    from .trace import EVENTS_FILE, PCAP_DIR, TraceFiles

    if saved.get("trace") or (out / EVENTS_FILE).is_file() or (out / PCAP_DIR).is_dir():
        res.trace = TraceFiles(out, None, saved=saved)
    return res
