"""Results of a set of replications: per-seed metrics, statistics over
seeds (mean, standard deviation, 95% confidence interval), the per-flow,
per-link, per-node and per-window tables, the time series, and the on-disk
layout of docs/results.md, which `cnsim.saved.read_results` (`cnsim.open_results`) reads back into the same type."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .declarations import output_file, series_unit
from .engine import SeedRun
from .errors import ScenarioError
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
from .runid import RUN_SEEDS, RUN_SHA256, crc32, sha256
from .scenario import Scenario
from .tables import Table, write_parquet

#: Engine fields that depend on the machine, not on (scenario, seed).
WALL_CLOCK_FIELDS = ("wall_s", "build_s", "events_per_s", "frames_delivered_per_s", "sim_speed")

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
        from ._version import engine_version

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
            "version": engine_version(),
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
        """The scenario has transport flows (a `[workload]`, or `[[jobs]]`)."""
        m = self.scenario.model
        return m.workload is not None or bool(m.jobs)

    @property
    def collectives(self) -> Any:
        """Per seed and collective of the run's `[[jobs]]` (collectives.parquet):
        completion time, algbw, busbw, the ratio to the ideal, the slowest
        rank and step, the most senders at one receiver; empty without jobs."""
        return self._polars(self._seed_tables(lambda r: r.columns.get("collectives")))

    @property
    def iterations(self) -> Any:
        """Per seed, job and iteration: the step time (iterations.parquet)."""
        return self._polars(self._seed_tables(lambda r: r.columns.get("iterations")))

    @property
    def collective_ranks(self) -> Any:
        """Per seed, collective and rank: its host, when it began and when it
        was done (collective_ranks.parquet; the report's per-rank timeline)."""
        return self._polars(self._seed_tables(lambda r: r.columns.get("collective_ranks")))

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

    def events(
        self,
        seed: int | list[int] | None = None,
        *,
        kinds: str | list[str] | None = None,
        nodes: str | list[str] | None = None,
        ports: str | list[str] | None = None,
        flows: str | list[str] | None = None,
        time_ms: tuple[float | None, float | None] | None = None,
        columns: list[str] | None = None,
    ) -> Any:
        """The event trace (`[trace] events`, docs/looking-at-frames.md): one
        row per event, sorted by seed and time, as a polars DataFrame; empty
        when none was recorded. Read filtered, only the rows and columns
        asked for: `seed` (one or a list), `kinds` (event kinds), `nodes`,
        `ports` (FROM->TO), `flows` (SRC|DST), `time_ms=(t0, t1)` ([t0, t1)
        in ms, None for an open end), `columns` (seed and time_ps are always
        kept). A read that will probably not fit in the memory left warns
        first (cnsim.trace.TraceMemoryWarning); `scan_events` is the lazy
        frame, for any other query."""
        filters = self._event_filters(seed, kinds, nodes, ports, flows, time_ms, columns)
        if self.trace is not None:
            return self.trace.events(seed, **filters)
        import polars as pl

        return pl.DataFrame()

    def scan_events(
        self,
        seed: int | list[int] | None = None,
        *,
        kinds: str | list[str] | None = None,
        nodes: str | list[str] | None = None,
        ports: str | list[str] | None = None,
        flows: str | list[str] | None = None,
        time_ms: tuple[float | None, float | None] | None = None,
        columns: list[str] | None = None,
    ) -> Any:
        """The event trace as a polars LazyFrame (rows in the order the engine
        recorded them, each seed's after the previous seed's), with the
        filters of `events` pushed down into the Parquet scan; nothing is
        read until it is collected (`.collect()`, or `.sink_parquet(...)` for
        a result larger than memory). An empty LazyFrame when none was recorded."""
        filters = self._event_filters(seed, kinds, nodes, ports, flows, time_ms, columns)
        lf = self.trace.scan_events(seed, **filters) if self.trace is not None else None
        if lf is None:
            import polars as pl

            return pl.LazyFrame()
        return lf

    def _event_filters(
        self, seed: Any, kinds: Any, nodes: Any, ports: Any, flows: Any, time_ms: Any, columns: Any
    ) -> dict[str, Any]:
        """The filters of `events` / `scan_events`, checked (a ScenarioError
        naming the argument: never a silently empty frame for a typo)."""
        from .trace import _names, _time_window, event_kinds

        self._check_seed("events", seed, many=True)
        out: dict[str, Any] = {}
        if kinds is not None:
            out["kinds"] = _names("kinds", kinds, event_kinds())
        for what, v in (("nodes", nodes), ("ports", ports), ("flows", flows)):
            if v is not None:
                out[what] = _names(what, v)
        if time_ms is not None:
            _time_window(time_ms)
            out["time_ms"] = tuple(time_ms)
        if columns is not None:
            cols = [columns] if isinstance(columns, str) else columns
            if not isinstance(cols, list | tuple) or not all(isinstance(c, str) for c in cols):
                raise ScenarioError(
                    f"events: columns={columns!r} is not allowed; expected a list of column names"
                )
            lf = self.trace.scan_events() if self.trace is not None else None
            if lf is not None:
                known = list(lf.collect_schema())
                bad = [c for c in cols if c not in known]
                if bad:
                    raise ScenarioError(
                        f"events: columns: {bad[0]!r} is not allowed; allowed: {', '.join(known)}"
                    )
            out["columns"] = list(dict.fromkeys(cols))
        return out

    def _check_seed(self, what: str, seed: Any, many: bool = False) -> None:
        """`seed`: None, one of this run's seeds, or (`many`) a list of them."""
        items = seed if many and isinstance(seed, list | tuple) else [seed]
        if seed is None:
            return
        for s in items:
            if isinstance(s, bool) or not isinstance(s, int):
                raise ScenarioError(
                    f"{what}: seed {s!r} is not allowed; expected one of this run's seeds "
                    f"({_seed_list(self.seeds)}){' or a list of them' if many else ''}"
                )
            if s not in self._seed_set():
                raise ScenarioError(
                    f"{what}: seed {s} is not one of this run's seeds ({_seed_list(self.seeds)})"
                )

    def _seed_set(self) -> set[int]:
        if getattr(self, "_seeds_cache", None) is None or len(self._seeds_cache) != len(self.runs):
            self._seeds_cache = set(self.seeds)
        return self._seeds_cache

    def pcap_files(self, seed: int | None = None) -> list[Path]:
        """The packet captures (`[trace] pcap`): one pcapng file per port and
        seed, as the run listed them (summary.json's trace.pcap)."""
        self._check_seed("pcap_files", seed)
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
                attrs={"units": series_unit(name)},
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
        for d in self.deadlocks():
            lines.append(f"  deadlock, seed {d['seed']}, at {d['at_ms']:.6g} ms: {d['cycle']}")
        return "\n".join(lines)

    def deadlocks(self) -> list[dict[str, Any]]:
        """Per seed whose run deadlocked (PFC's deadlock detector): the seed,
        when the first cycle of paused ports was found (ms), the cycle
        (`priority P: A->B, B->C, ...`) and how many distinct cycles."""
        return [
            {
                "seed": r.seed,
                "at_ms": r.frames["deadlock_at_ps"] / 1e9,
                "cycle": r.frames["deadlock_cycle"],
                "count": r.frames["deadlocks"],
            }
            for r in self.runs
            if r.frames.get("deadlocks")
        ]

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
            **({"deadlocks": deadlocks} if (deadlocks := self.deadlocks()) else {}),
            **({"trace": trace} if (trace := self._trace_summary()) else {}),
            **({"files": self._files} if getattr(self, "_files", None) else {}),
        }

    def _trace_summary(self) -> dict[str, Any] | None:
        if self.trace is None:
            return None
        return self.trace.summary() or None

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

        rows: dict[str, int] = {}

        def parquet(declared: str, parts: list[tuple[int, Table]]) -> None:
            """File `declared` (outputs.rs: its name and columns) from per-seed tables."""
            write_parquet(
                out / output_file(declared),
                [t for _, t in parts],
                seed_column=[s for s, _ in parts],
                metadata=meta,
                declared=declared,
            )
            rows[output_file(declared)] = sum(len(t) for _, t in parts)

        # The time series are the largest file: the engine encodes them with the GIL
        # released, in a thread, while this one writes the others.
        series = _Background(
            _core.write_timeseries,
            str(out / "timeseries.parquet"),
            [(r.seed, r.bin_ps, *r.series_buffer()) for r in self.runs],
            meta,
        )
        try:
            parquet("flows_transport" if self.transport else "flows", self._flows())
            if self.transport:
                parquet("pairs", self._pairs())
            parquet("queues", self._queues())
            parquet("links", self._links())
            parquet("nodes", self._nodes())
            parquet("windows", self._windows())
            if self.scenario.model.jobs:
                parquet("collectives", self._seed_tables(lambda r: r.columns.get("collectives")))
                parquet("iterations", self._seed_tables(lambda r: r.columns.get("iterations")))
                parquet("collective_ranks", self._seed_tables(lambda r: r.columns.get("collective_ranks")))
            write_parquet(out / output_file("runs"), [_runs_table(self.runs)], metadata=meta, declared="runs")
            rows[output_file("runs")] = len(self.runs)
            rows["timeseries.parquet"] = sum(n for r in self.runs for *_, n in r.series_buffer()[0])
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
                out / output_file("transient"),
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
                declared="transient",
            )
            rows["transient.parquet"] = n
        if report:
            from .report import write_report

            write_report(self, out)
        files = {
            name: {"rows": n, "bytes": (out / name).stat().st_size, "crc32": crc32(out / name)}
            for name, n in sorted(rows.items())
        }
        if self.trace is not None:
            self.trace.write(out, self.seeds, self.identity())
            files.update(self.trace.manifest(out))
        # summary.json lists every data file with its rows and bytes (cnsim.check).
        self._files = files
        # Last: a directory with summary.json has every other file.
        from .check import sealed_summary

        atomic_write(out / "summary.json", sealed_summary(self.summary_dict()))
        return out


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
    "acked_ps",
    "ideal_fct_ps",
    "retransmitted",
    "timeouts",
    "hops",
)


def _seed_list(seeds: list[int]) -> str:
    """A run's seeds for a message: all of a few, the ends of many."""
    if len(seeds) > 6:
        return f"{seeds[0]}, {seeds[1]}, ..., {seeds[-1]}: {len(seeds):,} seeds"
    return ", ".join(map(str, seeds))


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
