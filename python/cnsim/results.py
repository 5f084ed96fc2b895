"""Results of a set of replications: per-seed metrics, statistics over
seeds (mean, standard deviation, 95% confidence interval), the per-flow,
per-link, per-node and per-window tables, the time series, and the on-disk
layout of docs/results.md, which `read_results` (`cnsim.open_results`) reads back into the same type."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .engine import SeedRun
from .errors import ScenarioError, ScenarioWarning
from .metrics import (
    SIZE_BUCKETS,
    ci_text,
    fct_table,
    fdiv,
    flow_table,
    link_table,
    per_seed,
    slowdown_by_size,
    summarize,
)
from .outdir import atomic_write
from .runid import RUN_SEEDS, RUN_SHA256, mismatch, sha256
from .scenario import Scenario
from .tables import Table, write_parquet

#: Engine fields that depend on the machine, not on (scenario, seed).
WALL_CLOCK_FIELDS = ("wall_s", "events_per_s", "frames_delivered_per_s", "sim_speed")

#: The engine's wall time per seed (the one file that differs between two runs).
TIMING_JSON = "timing.json"

#: Tables a Results has, by name (`Results.to_polars(name)`).
TABLES = ("summary", "flows", "pairs", "links", "nodes", "windows", "queues", "timeseries")


class _Background:
    """`fn(*args)` in a thread started now; `result()` waits for it and
    raises what it raised. For engine calls that release the GIL."""

    def __init__(self, fn: Any, *args: Any) -> None:
        import threading

        self._box: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._thread.start()

    def _run(self, fn: Any, args: tuple[Any, ...]) -> None:
        try:
            self._box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to result()
            self._box["error"] = e

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> Any:
        self._thread.join()
        if "error" in self._box:
            raise self._box["error"]
        return self._box.get("value")


def trace_identity(scenario: Scenario) -> tuple[tuple[str, str], ...]:
    """The identity (Results.identity) a run of every seed of `scenario`
    writes into its trace files while it runs: the scenario.toml's SHA-256
    and the seeds asked for."""
    return ((RUN_SHA256, _sha256(scenario.to_toml())), (RUN_SEEDS, json.dumps(sorted(scenario.seeds))))


class Results:
    """What `cnsim.run` returns, and what `cnsim.open_results` reads back."""

    def __init__(self, scenario: Scenario, runs: list[SeedRun]) -> None:
        self.scenario = scenario
        self.runs = runs
        self.per_seed = [per_seed(r, scenario) for r in runs]
        #: {metric: {mean, std, ci_low, ci_high, min, max, n, per_seed}} (summary.json's `metrics`).
        self.stats: dict[str, dict[str, Any]] = summarize(self.per_seed)
        #: The run's event trace and captures (cnsim.trace), if it recorded any.
        self.trace: Any = None

    # ------------------------------------------------------------ metrics
    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.runs]

    @property
    def complete(self) -> bool:
        """Whether every seed of the scenario ran (false after an interrupt:
        the finished seeds only)."""
        return sorted(self.seeds) == sorted(self.scenario.seeds)

    @property
    def summary(self) -> Any:
        """One row per seed, one column per scalar metric (a polars DataFrame)."""
        import polars as pl

        rows = [{"seed": r.seed, **m} for r, m in zip(self.runs, self.per_seed, strict=True)]
        return pl.DataFrame(rows, infer_schema_length=None)

    @property
    def metrics(self) -> Any:
        """One row per scalar metric: `metric`, its `mean` over seeds, the 95%
        confidence interval `ci_low` / `ci_high` (null below 3 seeds; inside
        the metric's range), `n` (seeds with a value), `std`, `min`, `max`
        (results.md). The same figures as a dict: `stats`."""
        import polars as pl

        rows = [
            {"metric": k, **{f: v[f] for f in ("mean", "ci_low", "ci_high", "n", "std", "min", "max")}}
            for k, v in self.stats.items()
        ]
        schema = {"metric": pl.Utf8, "n": pl.Int64} | {
            f: pl.Float64 for f in ("mean", "ci_low", "ci_high", "std", "min", "max")
        }
        return pl.DataFrame(rows, schema=schema).select(
            "metric", "mean", "ci_low", "ci_high", "n", "std", "min", "max"
        )

    def metric(self, name: str) -> list[Any]:
        """Per-seed values of metric `name`."""
        if name not in self.stats:
            raise KeyError(f"no metric '{name}'; metrics: {', '.join(self.stats)}")
        return list(self.stats[name]["per_seed"])

    def engine(self) -> dict[str, Any]:
        """Engine figures summed over seeds (wall time is the sum of the runs)."""
        import cnsim._core as _core

        ev = sum(r.engine["events"] for r in self.runs)
        wall = sum(r.engine["wall_s"] for r in self.runs)
        frames = sum(r.frames["generated"] for r in self.runs)
        delivered = sum(r.frames["delivered"] for r in self.runs)
        return {
            "events": ev,
            "frames": frames,
            "frames_delivered": delivered,
            "wall_s": wall,
            "events_per_s": ev / wall if wall > 0 else None,
            "frames_delivered_per_s": delivered / wall if wall > 0 else None,
            "version": _core.version(),
        }

    def transient(self) -> dict[str, Any] | None:
        """Transient duration over the replications (metrics.md), with its rc(l) curve."""
        if not hasattr(self, "_transient"):
            from .metrics import transient

            self._transient = transient(self)
        return self._transient

    def aggregates(self) -> dict[str, Any]:
        """Metrics computed across seeds (null where they do not exist)."""
        out: dict[str, Any] = {}
        tr = self.transient()
        if self.scenario.model.transient is not None:
            for k in (
                "transient_ms",
                "transient_rtts",
                "transient_rep_median_ms",
                "transient_rep_q1_ms",
                "transient_rep_q3_ms",
                "transient_rep_min_ms",
                "transient_rep_max_ms",
                "settling_ms",
                "settling_rtts",
            ):
                out[k] = tr[k] if tr else None
            out["transient_rtt_ms"] = self.scenario.model.transient.rtt_ms
        return _clean(out)

    # ------------------------------------------------------------- tables
    def _seed_tables(self, make: Any) -> list[tuple[int, Table]]:
        """(seed, make(run)) for every run that has the table."""
        return [(r.seed, t) for r in self.runs if (t := make(r)) is not None]

    @staticmethod
    def _polars(parts: list[tuple[int, Table]]) -> Any:
        """Per-seed tables as one polars DataFrame with a first column `seed`."""
        import numpy as np
        import polars as pl

        if not parts:
            return pl.DataFrame()
        # One seed column for the whole concatenation: no lazy query per seed.
        frame = pl.concat([t.to_polars() for _, t in parts], how="diagonal_relaxed")
        seeds = np.repeat(np.array([s for s, _ in parts], dtype=np.int64), [len(t) for _, t in parts])
        return frame.insert_column(0, pl.Series("seed", seeds, dtype=pl.Int64))

    @property
    def transport(self) -> bool:
        """The scenario has transport flows (a `[workload]`)."""
        return self.scenario.model.workload is not None

    def _flows(self) -> list[tuple[int, Table]]:
        return self._seed_tables(fct_table if self.transport else flow_table)

    def _pairs(self) -> list[tuple[int, Table]]:
        return self._seed_tables(flow_table)

    def _queues(self) -> list[tuple[int, Table]]:
        out = []
        for r in self.runs:
            t = r.columns.get("queue_hist")
            if t is None:
                continue
            ports, times = t["port"], t["time_ps"]
            total: dict[str, int] = {}
            for p, x in zip(ports, times, strict=True):
                total[p] = total.get(p, 0) + x
            fraction = [fdiv(float(x), float(total[p])) for p, x in zip(ports, times, strict=True)]
            cdf, acc = [], {}
            for p, f in zip(ports, fraction, strict=True):
                acc[p] = acc.get(p, 0.0) + f
                cdf.append(acc[p])
            out.append(
                (
                    r.seed,
                    t.select(["port", "lower_bytes", "time_ps"]).with_columns(fraction=fraction, cdf=cdf),
                )
            )
        return out

    def _links(self) -> list[tuple[int, Table]]:
        return self._seed_tables(link_table)

    def _nodes(self) -> list[tuple[int, Table]]:
        return self._seed_tables(lambda r: r.table("nodes"))

    def _windows(self) -> list[tuple[int, Table]]:
        return self._seed_tables(lambda r: r.table("windows"))

    @property
    def flows(self) -> Any:
        """Per seed and flow. With transport flows (a `[workload]`): one row
        per flow, its size, start, finish, FCT, ideal FCT and slowdown
        (`metrics.fct_table`). Otherwise per (src, dst) pair: frames
        generated / delivered, bytes and throughput per window."""
        return self._polars(self._flows())

    @property
    def pairs(self) -> Any:
        """Per seed and (src, dst) pair: frames generated / delivered, bytes
        and throughput per window (with transport flows, flows.parquet has
        the flows and pairs.parquet these counters)."""
        return self._polars(self._pairs())

    @property
    def queues(self) -> Any:
        """Per seed and traced port: the queue-length distribution over the
        measure window, one row per bucket of `frame_bytes`: `lower_bytes`,
        `time_ps` spent there, `fraction` of the window and `cdf` (the
        fraction of time with a queue below the bucket's upper end)."""
        return self._polars(self._queues())

    def slowdown_by_size(self, buckets: tuple[int | None, ...] = SIZE_BUCKETS) -> Any:
        """Slowdown p50 / p95 / p99 per flow-size bucket (upper bounds in
        bytes, None: unbounded), over every seed's flows that finished inside
        the run: `flows` started and `finished` per bucket say how many
        were left out (`metrics.slowdown_by_size`). Empty without transport
        flows."""
        import polars as pl

        if not self.transport:
            return pl.DataFrame()
        return slowdown_by_size(self.flows, buckets)

    @property
    def links(self) -> Any:
        """Per seed and link direction: bytes and throughput per window, PAUSE, notifications."""
        return self._polars(self._links())

    @property
    def nodes(self) -> Any:
        """Per seed and node: frames generated, delivered, dropped (CP, RLQ, NIC), deferred, notifications."""
        return self._polars(self._nodes())

    @property
    def windows(self) -> Any:
        """Per seed and window: its bounds and frame counts inside it."""
        return self._polars(self._windows())

    def timeseries(self, series: str | None = None, seed: int | None = None) -> Any:
        """Long format: seed, time_ms, series, key, value (bins' start times)."""
        import numpy as np
        import polars as pl

        frames = []
        for r in self.runs:
            if seed is not None and r.seed != seed:
                continue
            bin_ms = r.bin_ps / 1e9
            index, values = r.series_buffer()
            allv = np.frombuffer(values, dtype="<f8")
            sel = [(s, k, off, n) for s, k, off, n in index if series is None or s == series]
            if not sel:
                continue
            lengths = np.array([n for *_, n in sel], dtype=np.int64)
            names = pl.Series([s for s, *_ in sel], dtype=pl.Categorical)
            keys = pl.Series([k for _, k, *_ in sel], dtype=pl.Categorical)
            pos = np.concatenate([np.arange(n, dtype=np.float64) for *_, n in sel])
            vals = np.concatenate([allv[off : off + n] for *_, off, n in sel])
            rep = np.repeat(np.arange(len(sel)), lengths)
            frames.append(
                pl.DataFrame(
                    {
                        "seed": np.full(len(vals), r.seed, dtype=np.int64),
                        "time_ms": pos * bin_ms,
                        "series": names.gather(rep).cast(pl.Utf8),
                        "key": keys.gather(rep).cast(pl.Utf8),
                        "value": vals,
                    }
                )
            )
        if not frames:
            return pl.DataFrame(
                schema={
                    "seed": pl.Int64,
                    "time_ms": pl.Float64,
                    "series": pl.Utf8,
                    "key": pl.Utf8,
                    "value": pl.Float64,
                }
            )
        return pl.concat(frames)

    def events(self, seed: int | None = None) -> Any:
        """The event trace (`[trace] events`, docs/looking-at-frames.md): one
        row per event, sorted by seed and time, as a polars DataFrame; empty
        when none was recorded."""
        if self.trace is not None:
            return self.trace.events(seed)
        import polars as pl

        return pl.DataFrame()

    def pcap_files(self, seed: int | None = None) -> list[Path]:
        """The packet captures (`[trace] pcap`): one pcapng file per port and seed."""
        return self.trace.pcap_files(seed) if self.trace is not None else []

    def to_polars(self, table: str = "summary") -> Any:
        """One of the tables as a polars DataFrame: summary (one row per
        seed), flows, pairs, links, nodes, windows, queues or timeseries."""
        if table not in TABLES:
            raise ValueError(f"table: {table!r} is not allowed; expected one of {', '.join(TABLES)}")
        return self.timeseries() if table == "timeseries" else getattr(self, table)

    def to_pandas(self, table: str = "summary") -> Any:
        """The same as a pandas DataFrame (through pyarrow). Needs pandas and
        pyarrow (`pip install 'cnsim[pandas]'`)."""
        try:
            import pandas  # noqa: F401
            import pyarrow  # noqa: F401
        except ImportError:
            raise ImportError("to_pandas needs pandas and pyarrow: pip install 'cnsim[pandas]'") from None
        return self.to_polars(table).to_pandas()

    def to_xarray(self) -> Any:
        """The time series as an xarray Dataset: one variable per series, with
        dimensions (seed, key, time_ms); units in each variable's attributes.
        Needs xarray (`pip install cnsim[xarray]`)."""
        import numpy as np

        try:
            import xarray as xr
        except ImportError:
            raise ImportError("Results.to_xarray needs xarray: pip install 'cnsim[xarray]'") from None
        ts = self.timeseries()
        out = {}
        for (name,), part in ts.partition_by("series", as_dict=True, maintain_order=True).items():
            keys = part["key"].unique(maintain_order=True).to_list()
            times = np.unique(part["time_ms"].to_numpy())
            cube = np.full((len(self.seeds), len(keys), len(times)), np.nan)
            si = {s: i for i, s in enumerate(self.seeds)}
            ki = {k: i for i, k in enumerate(keys)}
            ti = np.searchsorted(times, part["time_ms"].to_numpy())
            cube[
                [si[s] for s in part["seed"].to_list()],
                [ki[k] for k in part["key"].to_list()],
                ti,
            ] = part["value"].to_numpy()
            key_dim = f"{name}_key"  # each series has its own keys (links, flows, ports, RLs)
            out[name] = xr.DataArray(
                cube,
                dims=("seed", key_dim, "time_ms"),
                coords={"seed": self.seeds, key_dim: keys, "time_ms": times},
                attrs={"units": _SERIES_UNITS.get(name, "")},
            )
        return xr.Dataset(out, attrs={"scenario": self.scenario.name, "scheme": self.scenario.scheme})

    def plot(self, name: str) -> Any:
        """A matplotlib Figure of series `name` (first seed)."""
        from .report.figures import series_figure

        known = sorted({s for r in self.runs for s, _, _ in r.series})
        if name not in known:
            raise ScenarioError(f"plot: no series {name!r} in these results; series: {', '.join(known)}")

        return series_figure(self, name)

    # ------------------------------------------------------------ display
    def _title(self) -> str:
        sc = self.scenario
        return f"{sc.name} / {sc.scheme}{' + PAUSE' if sc.pause else ''} / {len(self.runs)} seed(s)"

    def __repr__(self) -> str:
        lines = [f"<cnsim.Results {self._title()}>"]
        width = max((len(k) for k in self.stats), default=0)
        for k, v in self.stats.items():
            if v["mean"] is None:
                continue
            ci = ci_text(v)
            ci = f"  {ci} (95% CI)" if ci.startswith(("[", "+")) else f"  ({ci})" if ci else ""
            lines.append(f"  {k:<{width}}  {v['mean']:.6g}{ci}")
        agg = {k: v for k, v in self.aggregates().items() if v is not None}
        if agg:
            lines.append("  across seeds: " + ", ".join(f"{k} = {v:.6g}" for k, v in agg.items()))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from .report.html import results_html

        return results_html(self)

    # --------------------------------------------------------------- disk
    def summary_dict(self) -> dict[str, Any]:
        sc = self.scenario
        extra: dict[str, Any] = {} if self.complete else {"seeds_requested": list(sc.seeds)}
        return {
            "scenario": sc.name,
            "scenario_sha256": self.scenario_sha256,
            "scheme": sc.scheme,
            "pause": sc.pause,
            "fidelity": sc.model.fidelity,
            "seeds": self.seeds,
            "complete": self.complete,
            **extra,
            "metrics": _clean(self.stats),
            "aggregates": self.aggregates(),
            "frames": {
                k: sum(r.frames[k] for r in self.runs)
                for k in (
                    "generated",
                    "delivered",
                    "dropped_cp",
                    "dropped_rp",
                    "dropped_rl",
                    "dropped_nic",
                    "deferred",
                    "in_flight",
                )
            },
            "engine": _clean(self.engine()),
            **({"trace": self.trace.summary()} if self.trace is not None and self.trace.per_seed else {}),
        }

    @property
    def scenario_sha256(self) -> str:
        """SHA-256 of the scenario.toml these results are saved with (for
        results read back: of the file they were read from)."""
        if getattr(self, "_scenario_sha256", None) is None:
            self._scenario_sha256 = _sha256(self.scenario.to_toml())
        return self._scenario_sha256

    def identity(self) -> dict[str, str]:
        """What run wrote a file: the scenario's SHA-256 and the seeds, as
        every Parquet file of a results directory carries them in its footer
        (and summary.json and timing.json as fields)."""
        return {RUN_SHA256: self.scenario_sha256, RUN_SEEDS: json.dumps(self.seeds)}

    def save(self, out: str | Path, *, report: bool = True, force: bool = False) -> Path:
        """Writes the results layout of docs/results.md into directory `out`:
        into a temporary sibling first, renamed into place at the end, so
        `out` is complete or absent. An existing results directory is
        replaced whole only with `force`; a directory holding anything else
        is refused (cnsim.outdir)."""
        from .outdir import RunDir

        rd = RunDir(out, force=force, label="out")
        return rd.save(lambda tmp: self.write(tmp, report=report))

    def write(
        self, out: str | Path, *, report: bool = True, while_writing: Callable[[], None] | None = None
    ) -> Path:
        """Writes the results files into the existing, empty directory `out`
        (no checks, not atomic: `save` is). `while_writing()`: called once
        in this thread while the engine encodes the time series (`cnsim run`
        renders its summary there)."""
        import cnsim._core as _core

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        toml = self.scenario.to_toml()
        self._scenario_sha256 = _sha256(toml)
        atomic_write(out / "scenario.toml", toml)
        meta = list(self.identity().items())

        def parquet(
            name: str, parts: list[tuple[int, Table]], schema: tuple[tuple[str, str], ...] = ()
        ) -> None:
            write_parquet(
                out / name,
                [t for _, t in parts],
                seed_column=[s for s, _ in parts],
                metadata=meta,
                schema=schema,
            )

        # The time series are the largest file: the engine encodes them with the GIL
        # released, in a thread, while this one writes the others.
        series = _Background(
            _core.write_timeseries,
            str(out / "timeseries.parquet"),
            [(r.seed, r.bin_ps, *r.series_buffer()) for r in self.runs],
            meta,
        )
        try:
            parquet("flows.parquet", self._flows())
            if self.transport:
                parquet("pairs.parquet", self._pairs())
            parquet("queues.parquet", self._queues(), QUEUE_COLUMNS)
            parquet("links.parquet", self._links())
            parquet("nodes.parquet", self._nodes())
            parquet("windows.parquet", self._windows())
            write_parquet(out / "runs.parquet", [_runs_table(self.runs)], metadata=meta)
            if while_writing is not None:
                while_writing()
        finally:
            series.wait()  # never a writer left behind in a directory about to be removed
        series.result()
        # Wall-clock figures depend on the machine: beside the Parquet files, which
        # depend only on (scenario, seeds) and are byte-identical across runs.
        timing = {
            "scenario_sha256": self.scenario_sha256,
            "seeds": self.seeds,
            "wall_s": [r.engine.get("wall_s") for r in self.runs],
        }
        atomic_write(out / TIMING_JSON, json.dumps(_clean(timing), indent=2) + "\n")
        tr = self.transient()
        if tr is not None:
            n = len(tr["rc"])
            write_parquet(
                out / "transient.parquet",
                [
                    Table(
                        {
                            "deleted_bins": list(range(n)),
                            "time_ms": [float(i) * tr["bin_ms"] for i in range(n)],
                            "rc": [float(x) for x in tr["rc"]],
                            "mean_aggregate_gbps": [float(x) for x in tr["mean_series"]],
                            "smoothed_aggregate_gbps": [float(x) for x in tr["smoothed_series"]],
                        }
                    )
                ],
                metadata=meta,
            )
        if report:
            from .report import write_report

            write_report(self, out)
        if self.trace is not None:
            self.trace.write(out, self.seeds, self.identity())
        # Last: a directory with summary.json has every other file.
        atomic_write(out / "summary.json", json.dumps(self.summary_dict(), indent=2) + "\n")
        return out


_SERIES_UNITS = {
    "aggregate_throughput": "Gbit/s",
    "delivered_throughput": "Gbit/s",
    "flow_throughput": "Gbit/s",
    "link_throughput": "Gbit/s",
    "queue_bytes": "bytes",
    "queue_bytes_max": "bytes",
    "rl_rate": "Gbit/s",
    "rlq_bytes": "bytes",
    "rl_window_bytes": "bytes",
    "paused_fraction": "fraction of the bin",
}

#: queues.parquet's columns (after `seed`), written even when no port is traced.
QUEUE_COLUMNS = (
    ("port", "str"),
    ("lower_bytes", "<u8"),
    ("time_ps", "<u8"),
    ("fraction", "f64"),
    ("cdf", "f64"),
)

#: Run-wide counters kept per seed in runs.parquet.
_RUN_FIELDS = ("bin_ps", "end_ps", "n_bins")


def _runs_table(runs: list[SeedRun]) -> Table:
    """One row per seed: its header counters (frames, engine), for open_results."""
    cols: dict[str, list[Any]] = {"seed": [r.seed for r in runs]}
    for k in _RUN_FIELDS:
        cols[k] = [getattr(r, k) for r in runs]
    for part in ("frames", "engine"):
        for k in getattr(runs[0], part) if runs else ():
            if part == "engine" and k in WALL_CLOCK_FIELDS:
                continue  # timing.json: the Parquet files depend only on (scenario, seeds)
            cols[f"{part}.{k}"] = [getattr(r, part).get(k) for r in runs]
    return Table(cols)


#: The engine's columns of a flow record (flows.parquet adds derived ones).
FLOW_RECORD_COLUMNS = (
    "src",
    "dst",
    "size_bytes",
    "start_ps",
    "finish_ps",
    "ideal_fct_ps",
    "retransmitted",
    "timeouts",
    "hops",
)


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


def _saved_runs(out: Path, transport: bool, ident: dict[str, str] | None) -> list[SeedRun]:
    """The SeedRuns of a results directory, rebuilt from its Parquet files
    (each checked to be of the run `ident` names, when given)."""
    import numpy as np
    import polars as pl

    def read(name: str) -> Any:
        return _read_parquet(out / f"{name}.parquet", ident, _NEED.get(name, ()))

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
    if (out / "transient.parquet").exists():
        read("transient")  # checked: it is rebuilt from the series, not read
    ts = read("timeseries")
    walls = _wall_times(out, ident, runs_t)
    # flows and links were saved with their derived columns: keep the raw counters.
    derived = ("throughput_gbps_", "time_paused_pct")
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
        for name, t in tables.items():
            part = t.filter(pl.col("seed") == seed).drop("seed")
            per[name] = Table.from_polars(part.select([c for c in part.columns if not c.startswith(derived)]))
        part = ts.filter(pl.col("seed") == seed)
        index, chunks, off = [], [], 0
        for g in part.partition_by(["series", "key"], maintain_order=True):
            v = g["value"].to_numpy().astype("<f8")
            index.append((g["series"][0], g["key"][0], off, len(v)))
            chunks.append(v)
            off += len(v)
        values = np.concatenate(chunks).tobytes() if chunks else b""
        runs.append(SeedRun(seed, header, per, index, values))
    return runs


def _wall_times(out: Path, ident: dict[str, str] | None, runs_t: Any) -> dict[int, float]:
    """Each seed's engine wall time from timing.json (checked to be of the
    same run); {} without it (directories written before it existed keep
    engine.wall_s in runs.parquet)."""
    path = out / TIMING_JSON
    if not path.is_file():
        return {}
    try:
        t = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as e:
        raise ScenarioError(f"{path}: cannot be read ({e}); the results directory is damaged") from None
    seeds = runs_t["seed"].to_list()
    if (
        not isinstance(t, dict)
        or not isinstance(t.get("wall_s"), list)
        or len(t["wall_s"]) != len(seeds)
        or not all(x is None or isinstance(x, int | float) for x in t["wall_s"])
    ):
        raise ScenarioError(f"{path}: not a wall time per seed; the results directory is damaged")
    if ident is not None and (
        t.get("scenario_sha256") != ident[RUN_SHA256] or json.dumps(t.get("seeds")) != ident[RUN_SEEDS]
    ):
        raise ScenarioError(
            f"{path}: from another run (scenario SHA-256 or seeds differ from summary.json's); "
            "the results directory is mixed"
        )
    return {s: float(w or 0.0) for s, w in zip(seeds, t["wall_s"], strict=True)}


def _read_parquet(path: Path, ident: dict[str, str] | None = None, need: tuple[str, ...] = ()) -> Any:
    """A Parquet file of a results directory, checked: present, readable,
    with the columns `need`, and (with `ident`) written by that run."""
    import polars as pl

    try:
        df = pl.read_parquet(path)
        kv = pl.read_parquet_metadata(path) if ident is not None else {}
    except FileNotFoundError:
        raise ScenarioError(
            f"{path.parent}: {path.name} is missing; not a complete results directory"
        ) from None
    except Exception as e:  # a damaged file: name it
        raise ScenarioError(
            f"{path}: cannot be read ({type(e).__name__}); the results directory is damaged"
        ) from None
    if ident is not None:
        why = mismatch(path, {k: kv.get(k) for k in ident}, ident)
        if why is not None:
            raise ScenarioError(why)
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ScenarioError(f"{path}: has no column {missing[0]}; the results directory is damaged")
    return df


def read_results(path: str | Path) -> Results:
    """A run's results directory (written by `Results.save` or `cnsim run
    --out`) read back as the Results it was (`cnsim.open_results` also
    opens sweep directories). Every file is checked to be of the run that
    summary.json describes (its scenario's SHA-256 and seeds): a file of
    another run, or a damaged one, is refused naming it."""
    out = Path(path)
    if not (out / "summary.json").is_file() or not (out / "scenario.toml").is_file():
        raise ScenarioError(f"{out}: not a results directory (no summary.json and scenario.toml)")
    from .scenario import load

    summary = out / "summary.json"
    try:
        saved = json.loads(summary.read_text())
        toml = (out / "scenario.toml").read_bytes()
    except (OSError, ValueError, RecursionError) as e:
        raise ScenarioError(f"{summary}: cannot be read ({e}); the results directory is damaged") from None
    if not isinstance(saved, dict):
        raise ScenarioError(
            f"{summary}: not a cnsim summary (a JSON object); the results directory is damaged"
        )
    for key in ("seeds", "seeds_requested"):
        v = saved.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise ScenarioError(
                f"{summary}: '{key}' is not a list of seeds; the results directory is damaged"
            )
    sha = saved.get("scenario_sha256")
    ident: dict[str, str] | None = None
    if sha is None:
        warnings.warn(
            f"{out}: written by an older cnsim (summary.json has no scenario_sha256): its files "
            "cannot be checked to be of one run",
            ScenarioWarning,
            stacklevel=2,
        )
    elif _sha256(toml) != sha:
        raise ScenarioError(
            f"{out / 'scenario.toml'}: not the scenario these results were run with (its SHA-256 is not "
            "summary.json's scenario_sha256); the results directory is mixed"
        )
    else:
        ident = {RUN_SHA256: sha, RUN_SEEDS: json.dumps(saved.get("seeds"))}
    scenario = load(out / "scenario.toml")
    runs = _saved_runs(out, scenario.model.workload is not None, ident)
    if ident is not None and [r.seed for r in runs] != saved.get("seeds"):
        raise ScenarioError(
            f"{out / 'runs.parquet'}: seeds {[r.seed for r in runs]} are not summary.json's "
            f"{saved.get('seeds')}; the results directory is damaged"
        )
    scenario = scenario.replace(seeds=saved.get("seeds_requested") or saved.get("seeds") or scenario.seeds)
    res = Results(scenario, runs)
    if sha is not None:
        res._scenario_sha256 = sha
    if (out / "events.parquet").is_file() or (out / "pcap").is_dir():
        from .trace import TraceFiles, check_identity

        if ident is not None:
            check_identity(out, ident)
        res.trace = TraceFiles(out, None)
    return res


_sha256 = sha256


def _clean(x: Any) -> Any:
    """JSON-safe: NaN and infinities become null."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
