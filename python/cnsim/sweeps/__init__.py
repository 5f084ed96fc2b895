"""Parameter sweeps (interface.md, docs/sweeps.md): the cartesian product of
a grid of parameter values times the seeds, one results directory per grid
point, written atomically as soon as the point finishes, and `sweep.parquet`
with one row per point and seed.

- `grid`: parsing the grid and building its validated points;
- `store`: the sweep directory (atomic point directories, resume, lock,
  reading back);
- `run`: running the points' seeds on the executor (local threads or Dask;
  the local backend never imports Dask).
"""

from __future__ import annotations

from .grid import RUN_CHOICES, Point, build_points, parse_grid
from .run import SweepOutcome, sweep
from .store import (
    POINT_JSON,
    SWEEP_JSON,
    SWEEP_PARQUET,
    SweepResults,
    damaged_points,
    load_sweep,
    read_meta,
    sweep_frame,
)

__all__ = [
    "RUN_CHOICES",
    "POINT_JSON",
    "SWEEP_JSON",
    "SWEEP_PARQUET",
    "Point",
    "SweepOutcome",
    "SweepResults",
    "build_points",
    "damaged_points",
    "load_sweep",
    "parse_grid",
    "read_meta",
    "sweep",
    "sweep_frame",
]
