"""Running a sweep: every (point, seed) is one unit on the executor; a
point is saved as soon as its last seed finishes, so an interrupted sweep
loses nothing, and its metrics depend only on (scenario, seed), never on the
backend, the worker count or the order in which units finish."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import polars as pl

from ..engine import SeedRun
from ..errors import ScenarioError
from ..executor import ProgressBar, Unit, backend, check_backend, execute, show_progress
from ..scenario import Scenario, load
from .grid import Point, _normalize_grid, build_points
from .store import _frame, _meta, _rows, _SweepDir

# ----------------------------------------------------------------- sweep


@dataclass
class SweepOutcome:
    """What a sweep did: the table, where, how many points ran and were skipped."""

    frame: pl.DataFrame
    out: Path | None
    points: int
    ran: int
    skipped: int


@overload
def sweep(
    scenario: Scenario | str | Path,
    grid: Mapping[str, Any] | None = ...,
    *,
    seeds: int | Iterable[int] | None = ...,
    backend: str = ...,
    out: str | Path | None = ...,
    jobs: int | None = ...,
    address: str | None = ...,
    client: Any | None = ...,
    force: bool = ...,
    report: bool = ...,
    point_reports: bool = ...,
    progress: bool | None = ...,
    outcome: Literal[False] = ...,
    label: str = ...,
) -> pl.DataFrame: ...


@overload
def sweep(
    scenario: Scenario | str | Path,
    grid: Mapping[str, Any] | None = ...,
    *,
    seeds: int | Iterable[int] | None = ...,
    backend: str = ...,
    out: str | Path | None = ...,
    jobs: int | None = ...,
    address: str | None = ...,
    client: Any | None = ...,
    force: bool = ...,
    report: bool = ...,
    point_reports: bool = ...,
    progress: bool | None = ...,
    outcome: Literal[True],
    label: str = ...,
) -> SweepOutcome: ...


def sweep(
    scenario: Scenario | str | Path,
    grid: Mapping[str, Any] | None = None,
    *,
    seeds: int | Iterable[int] | None = None,
    backend: str = "local",
    out: str | Path | None = None,
    jobs: int | None = None,
    address: str | None = None,
    client: Any | None = None,
    force: bool = False,
    report: bool = True,
    point_reports: bool = False,
    progress: bool | None = None,
    outcome: bool = False,
    label: str = "grid",
) -> pl.DataFrame | SweepOutcome:
    """Runs `scenario` (a Scenario, a built-in name or a TOML path) at every
    point of `grid` ({dotted name, "scheme" or "pause": values}) for each of
    `seeds` (a count or a list; default the scenario's), and returns a polars
    DataFrame with one row per point and seed: `point`, each grid key, `seed`
    and every metric; with `outcome=True` a SweepOutcome instead (the table,
    and how many points ran and were skipped: what `cnsim sweep` prints).

    `out`: the sweep directory (one results directory per point, sweep.json,
    sweep.parquet, report.html: the sweep's report when `report`; each point's
    own report and plots only with `point_reports`); rerunning with the same `out` skips finished
    points, and a different sweep there is refused unless `force`. Without
    `out` nothing is kept on disk. `backend`: "local" (`jobs` threads,
    default all cores) or "dask" (`client`, a scheduler `address`, or a
    LocalCluster of `jobs` workers). `label` names the grid in errors
    (`--grid` on the command line)."""
    base = scenario if isinstance(scenario, Scenario) else load(scenario)
    if seeds is not None:
        base = base.replace(seeds=seeds)
    backend = check_backend(backend, jobs, address, client)
    points = build_points(base, grid, label)
    g = _normalize_grid(grid, label)
    _warn_unintended(points)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="cnsim-sweep-") as tmp:
            res = _sweep_in(
                Path(tmp), base, points, g, backend, jobs, address, client, force, False, False, progress
            )
            res.out = None
    else:
        res = _sweep_in(
            Path(out), base, points, g, backend, jobs, address, client, force, report, point_reports, progress
        )
    return res if outcome else res.frame


def _warn_unintended(points: list[Point]) -> None:
    """The legal but almost certainly unintended settings of the points
    (cnsim.trace.unintended, the engine's warnings), each line once, naming
    the points it concerns when not all of them."""
    from ..errors import ScenarioWarning
    from ..trace import unintended

    said: dict[str, list[str]] = {}
    for p in points:
        for line in [*p.scenario.engine_warnings(), *unintended(p.scenario)]:
            said.setdefault(line, []).append(p.id)
    for line, ids in said.items():
        where = (
            ""
            if len(ids) == len(points)
            else f" (point{'s' if len(ids) > 1 else ''} {', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})"
        )
        warnings.warn(f"{line}{where}", ScenarioWarning, stacklevel=3)


def _sweep_in(
    out: Path,
    base: Scenario,
    points: list[Point],
    grid: dict[str, list[Any]],
    backend_name: str,
    jobs: int | None,
    address: str | None,
    client: Any | None,
    force: bool,
    report: bool,
    point_reports: bool,
    progress: bool | None,
) -> SweepOutcome:
    keys = list(grid)
    meta = _meta(base, points, grid)
    sd = _SweepDir(out, meta, force)
    try:
        rows: dict[int, list[dict[str, Any]]] = {}
        todo: list[Point] = []
        for p in points:
            s = sd.finished(p)
            if s is not None:
                rows[p.index] = _rows(p.id, p.values, s)
            else:
                todo.append(p)

        def table() -> pl.DataFrame:
            return _frame(keys, [r for i in sorted(rows) for r in rows[i]])

        if todo:
            try:
                be = backend(backend_name, jobs, address, client, len(todo) * len(base.seeds))
            except ScenarioError:
                if sd.created and not rows:  # leave no trace of a sweep that could not start
                    sd.close()
                    shutil.rmtree(out, ignore_errors=True)
                raise
            _run_points(sd, be, todo, rows, table, point_reports, progress, base)
        frame = table()
        sd.write_parquet(frame)
        if report:
            from ..report import write_sweep_report

            write_sweep_report(out, meta, frame)
        return SweepOutcome(frame, out, len(points), len(todo), len(points) - len(todo))
    finally:
        sd.close()


def _run_points(
    sd: _SweepDir,
    be: Any,
    todo: list[Point],
    rows: dict[int, list[dict[str, Any]]],
    table: Any,
    point_reports: bool,
    progress: bool | None,
    base: Scenario,
) -> None:
    from ..results import trace_identity
    from ..trace import records

    # A point whose scenario records a trace (its [trace] or the grid's
    # trace.* values) writes it into a staging directory of its own, saved
    # with the point as `cnsim run` saves a run's.
    staging: dict[int, Path] = {}
    for p in todo:
        if records(p.scenario):
            staging[p.index] = sd.out / f".tmp-trace-{p.id[:60]}-{os.urandom(4).hex()}"
    units = [
        Unit(
            p.config,
            s,
            p.scenario.duration_ms,
            tag=p,
            trace_dir=str(staging[p.index]) if p.index in staging else None,
            trace_run=trace_identity(p.scenario) if p.index in staging else (),
        )
        for p in todo
        for s in p.scenario.seeds
    ]
    total_ms = sum(u.duration_ms for u in units)
    bar = ProgressBar(
        show_progress(progress),
        f"sweep {base.name} ({be.name})",
        total_ms,
        "points",
        len(rows) + len(todo),
        done=len(rows),
    )
    pending: dict[int, dict[int, SeedRun]] = {p.index: {} for p in todo}

    def finished(unit: Unit, run: SeedRun) -> None:
        p = unit.tag
        got = pending[p.index]
        got[unit.seed] = run
        if len(got) == len(p.scenario.seeds):
            del pending[p.index]
            trace = None
            if p.index in staging:
                from ..trace import TraceFiles

                trace = TraceFiles(staging[p.index], {s: r.trace or {} for s, r in got.items()})
                from ..trace import TraceCapWarning, cap_warnings

                for line in cap_warnings(trace.per_seed or {}):
                    warnings.warn(f"point {p.id}: {line}", TraceCapWarning, stacklevel=2)
            try:
                summary = sd.write_point(p, [got[s] for s in p.scenario.seeds], point_reports, trace)
            finally:
                if p.index in staging:
                    shutil.rmtree(staging.pop(p.index), ignore_errors=True)
            rows[p.index] = _rows(p.id, p.values, summary)
            sd.write_parquet(table())
            bar.count()

    try:
        execute(units, be, bar, finished)
    finally:
        for d in staging.values():  # points that did not finish
            shutil.rmtree(d, ignore_errors=True)
