"""The boundary with the Rust engine: one replication in, its typed tables
out. The engine returns raw counters only (frames, bytes and paused
picoseconds per window, flow, link direction and node; the binned series);
`cnsim.metrics` derives everything else from them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from . import _core
from .errors import ScenarioError

#: Chunks per run: how often a replication reports its simulated time.
#: A run advances in steps of about this many wall seconds (a Ctrl-C, or a
#: cancelled sweep, is seen between steps), starting with 1/FIRST_STEPS of it.
CHUNK_S = 0.2
FIRST_STEPS = 1000


class SeedRun:
    """What one replication recorded.

    - `seed`, `bin_ps`, `end_ps`, `n_bins`;
    - `frames`: run-wide counters (generated, delivered, dropped_cp,
      dropped_rp, dropped_rl, dropped_nic, deferred, in_flight, delay_sum_ps,
      delay_max_ps, reordered (frames delivered after a later frame of their
      flow; counted with per-flow counters only), note_bytes_measure);
    - `engine`: events and engine wall time;
    - `tables`: polars DataFrames `windows`, `flows`, `links`, `nodes` of
      raw counters (bytes per window in `bytes_<window>` columns);
    - `series`: (series, key, float64 values per bin)."""

    def __init__(
        self,
        seed: int,
        header: dict[str, Any],
        tables: dict[str, pl.DataFrame],
        series: list[tuple[str, str, np.ndarray]],
    ) -> None:
        self.seed = seed
        self.bin_ps: int = header["bin_ps"]
        self.end_ps: int = header["end_ps"]
        self.n_bins: int = header["n_bins"]
        self.frames: dict[str, Any] = dict(header["frames"])
        self.engine: dict[str, Any] = dict(header["engine"])
        self.tables = tables
        self.series = series
        #: What a traced run wrote (events file, rows, cap, captures), or None.
        self.trace: dict[str, Any] | None = None

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

    def window(self, name: str) -> dict[str, Any] | None:
        """The row of window `name` (start_ps, end_ps, counts), if it exists."""
        w = self.tables["windows"].filter(pl.col("name") == name)
        return w.row(0, named=True) if len(w) else None

    @property
    def window_names(self) -> list[str]:
        return self.tables["windows"]["name"].to_list()


def _column(value: Any) -> Any:
    if isinstance(value, tuple):
        dtype, buf = value
        return np.frombuffer(buf, dtype=dtype)
    return value


def tables_from_engine(raw: dict[str, dict[str, Any]]) -> dict[str, pl.DataFrame]:
    """The engine's columnar tables as polars DataFrames (u64, f64, bool, str)."""
    return {name: pl.DataFrame({c: _column(v) for c, v in cols.items()}) for name, cols in raw.items()}


def run_seed(
    config_json: str,
    seed: int,
    advance: Callable[[float], None] | None = None,
    trace_dir: str | None = None,
) -> SeedRun:
    """Runs one replication in steps of about CHUNK_S wall seconds;
    `advance(ms)` is called with the simulated time each step covered (and
    may raise to stop the run: a stop is seen within one step). The steps'
    boundaries never change the results: the engine's state does not depend
    on where `run_until` stops (tests/python/test_engine_runs.py).
    `trace_dir`: where the config's event trace and captures are written
    (cnsim.trace); without it none is recorded."""
    try:
        sim = _core.Simulation(config_json, seed, trace_dir)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    dur = sim.duration_ps
    step = max(dur // FIRST_STEPS, 1)
    t = 0
    while True:
        t0 = time.perf_counter()
        prev, t = t, min(t + step, dur)
        done = sim.run_until(t)
        if advance is not None:
            advance((t - prev) / 1e9)
        if done or t >= dur:
            break
        took = max(time.perf_counter() - t0, 1e-6)
        step = max(1, int(step * min(4.0, max(0.25, CHUNK_S / took))))
    raw = sim.results()
    series = [(s, k, np.frombuffer(b, dtype="<f8")) for (s, k, b) in sim.series()]
    run = SeedRun(seed, raw, tables_from_engine(raw["tables"]), series)
    if trace_dir is not None:
        import json

        summary = sim.trace_summary()
        run.trace = json.loads(summary) if summary is not None else None
    return run
