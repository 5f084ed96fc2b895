"""The boundary with the Rust engine: one replication in, its columns out.
The engine returns raw counters only (frames, bytes and paused picoseconds
per window, flow, link direction and node; the binned series), each numeric
column one little-endian buffer that Python reads in place (`cnsim.tables`);
`cnsim.metrics` derives everything else from them. Nothing here imports a
dataframe library or numpy: a `cnsim run` needs neither."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import cnsim._core as _core

from .errors import ScenarioError
from .tables import Table

#: Wall seconds the engine runs between two looks at Python (progress, a
#: Ctrl-C, a cancelled sweep): the engine itself returns after this long,
#: whatever its workload, so a stop is seen within about this time.
STEP_S = 0.1


def _engine_error(e: ValueError) -> ScenarioError:
    """A ScenarioError from the engine's ConfigError, keeping the parameter it names."""
    return ScenarioError(str(e), param=getattr(e, "path", None))


class _PolarsTables(Mapping[str, Any]):
    """`SeedRun.tables`: the run's tables as polars DataFrames, built on first use."""

    def __init__(self, run: SeedRun) -> None:
        self._run = run
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._cache:
            self._cache[name] = self._run.table(name).to_polars()
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._run.columns)

    def __len__(self) -> int:
        return len(self._run.columns)


class SeedRun:
    """What one replication recorded.

    - `seed`, `bin_ps`, `end_ps`, `n_bins` (the bins the run reached);
    - `frames`: run-wide counters (generated, delivered, dropped_cp,
      dropped_rl, dropped_nic, deferred, delay_sum_ps, delay_max_ps,
      reordered (frames delivered after a later frame of their flow; counted
      with per-flow counters only), note_bytes_measure; then dropped_rp and
      in_flight, derived when the run ends; and the transport's acks, nacks,
      discarded, timeouts);
    - `engine`: events and engine wall time;
    - `table(name)`: a `cnsim.tables.Table` of raw counters: `windows`,
      `flows`, `links`, `nodes`, `flow_records`, `queue_hist` (bytes per
      window in `bytes_<window>` columns); `tables[name]` the same as a
      polars DataFrame;
    - `series`: [(series, key, float64 values per bin)] as numpy arrays;
      `series_keys()` the (series, key) pairs without numpy;
      `series_buffer()`: (index [(series, key, offset, length)], the values as
      one float64 buffer), as the engine gave them."""

    def __init__(
        self,
        seed: int,
        header: Mapping[str, Any],
        columns: Mapping[str, Any],
        series_index: Sequence[tuple[Any, ...]] = (),
        series_values: Any = b"",
    ) -> None:
        """`columns`: tables by name (`Table`s, or polars DataFrames);
        `series_index`: [(series, key, offset, length)] into the float64
        buffer `series_values`, or [(series, key, values)] with no buffer."""
        columns = {n: t if isinstance(t, Table) else Table.from_polars(t) for n, t in columns.items()}
        if series_index and len(series_index[0]) == 3:
            series_index, series_values = _pack_series(series_index)
        self.seed = seed
        self.bin_ps: int = header["bin_ps"]
        self.end_ps: int = header["end_ps"]
        self.n_bins: int = header["n_bins"]
        self.frames: dict[str, Any] = dict(header["frames"])
        self.engine: dict[str, Any] = dict(header["engine"])
        self.columns = dict(columns)
        self._series_index = [tuple(x) for x in series_index]
        self._series_values = series_values
        self._series: list[tuple[str, str, Any]] | None = None
        self.tables = _PolarsTables(self)
        #: What a traced run wrote (events file, rows, cap, captures), or None.
        self.trace: dict[str, Any] | None = None
        #: What the engine warned of once the run ended (one line each).
        self.warnings: list[str] = []

    def __getstate__(self) -> dict[str, Any]:
        # Without the derived views (polars frames, numpy series): rebuilt on use.
        state = dict(self.__dict__)
        state.pop("tables", None)
        state["_series"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.tables = _PolarsTables(self)

    @classmethod
    def from_engine(cls, sim: Any, seed: int) -> SeedRun:
        """The finished `_core.Simulation`'s output, read in one call."""
        raw, index, values, trace = sim.output()
        tables = {name: Table.from_engine(cols) for name, cols in raw["tables"].items()}
        run = cls(seed, raw, tables, index, values)
        if trace is not None:
            import json

            run.trace = json.loads(trace)
        return run

    def table(self, name: str) -> Table:
        try:
            return self.columns[name]
        except KeyError:
            raise KeyError(f"no table {name!r}; tables: {', '.join(self.columns)}") from None

    @property
    def result(self) -> dict[str, Any]:
        """The run's header as one dict (seed, bin_ps, end_ps, n_bins, frames, engine)."""
        return {
            "seed": self.seed,
            "bin_ps": self.bin_ps,
            "end_ps": self.end_ps,
            "n_bins": self.n_bins,
            "frames": self.frames,
            "engine": self.engine,
        }

    def series_keys(self) -> list[tuple[str, str]]:
        return [(s, k) for s, k, _, _ in self._series_index]

    def series_values(self, series: str, key: str) -> memoryview | None:
        """One series' values (a float64 memoryview, no copy), or None."""
        for s, k, off, n in self._series_index:
            if s == series and k == key:
                return memoryview(self._series_values).cast("B").cast("d")[off : off + n]
        return None

    def series_buffer(self) -> tuple[list[tuple[str, str, int, int]], Any]:
        return self._series_index, self._series_values

    @property
    def series(self) -> list[tuple[str, str, Any]]:
        if self._series is None:
            import numpy as np

            allv = np.frombuffer(self._series_values, dtype="<f8")
            self._series = [(s, k, allv[off : off + n]) for s, k, off, n in self._series_index]
        return self._series

    def window(self, name: str) -> dict[str, Any] | None:
        """The row of window `name` (start_ps, end_ps, counts), if it exists."""
        w = self.table("windows")
        names = list(w["name"])
        return w.row(names.index(name)) if name in names else None

    @property
    def window_names(self) -> list[str]:
        return list(self.table("windows")["name"])


def _pack_series(triples: Sequence[tuple[Any, ...]]) -> tuple[list[tuple[str, str, int, int]], bytes]:
    """[(series, key, values)] as an index into one float64 buffer."""
    import array

    index, buf = [], array.array("d")
    for s, k, v in triples:
        index.append((s, k, len(buf), len(v)))
        buf.extend(float(x) for x in v)
    return index, buf.tobytes()


def run_seed(
    config: Any,
    seed: int,
    advance: Callable[[float], None] | None = None,
    trace_dir: str | None = None,
    trace_run: Sequence[tuple[str, str]] = (),
) -> SeedRun:
    """Runs one replication; `advance(ms)` is called with the simulated time
    each step covered (and may raise to stop the run: a stop is seen within
    one step, at most about STEP_S of wall time). Where the steps end never
    changes the results (tests/test_engine_runs.py).
    `trace_dir`: where the config's event trace and captures are written
    (cnsim.trace); without it none is recorded. `trace_run`: (key, value)
    pairs naming the run, kept in every trace file beside the seed."""
    try:
        sim = _core.Simulation(config, seed, trace_dir, list(trace_run))
    except ValueError as e:
        raise _engine_error(e) from None
    reached = 0
    while True:
        done = sim.run_for(STEP_S)
        now = sim.now_ps
        if advance is not None:
            advance((now - reached) / 1e9)
        reached = now
        if done:
            break
    run = SeedRun.from_engine(sim, seed)
    run.warnings = list(sim.warnings)
    return run
